#!/usr/bin/env bash
# Installs cargo-nextest, the test runner of integration/run-tests.sh, from crates.io:
# `cargo install --locked` of a pinned version into cargo's own bin folder
# (${CARGO_HOME:-~/.cargo}/bin). A no-op when that version is already there. On a clean
# machine the install compiles nextest from source, a few minutes on two cores.
set -euo pipefail

# 0.9.128: the newest release that builds with Rust 1.89, the workspace's floor (README).
NEXTEST_VERSION=0.9.128

say() { printf 'setup-nextest: %s\n' "$*" >&2; }

bin="${CARGO_HOME:-$HOME/.cargo}/bin/cargo-nextest"
if [ -x "$bin" ] && "$bin" nextest --version 2>/dev/null | grep -q "^cargo-nextest $NEXTEST_VERSION\b"; then
    say "cargo-nextest $NEXTEST_VERSION is installed ($bin)"
    exit 0
fi

say "installing cargo-nextest $NEXTEST_VERSION from crates.io (cargo install --locked)"
# Built in a scratch target dir, not the workspace's: its artifacts are of no use after.
scratch="$(mktemp -d "${TMPDIR:-/tmp}/nextest-install.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
start=$SECONDS
# Without the self-update feature (nextest never updates itself here): fewer crates to build.
env -u CARGO_TARGET_DIR -u CARGO_BUILD_TARGET_DIR \
    cargo install --locked --version "=$NEXTEST_VERSION" \
    --no-default-features --features default-no-update \
    --target-dir "$scratch" cargo-nextest >&2
say "installed cargo-nextest $NEXTEST_VERSION in $((SECONDS - start)) s"
