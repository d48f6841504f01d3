#!/usr/bin/env bash
# The project's test command: installs the real Hadoop client (idempotent), builds the
# spindle binary the integration tests start, then runs every unit and integration test
# of the workspace. Extra arguments go to `cargo test` before the `--`.
#
#   integration/run-tests.sh                # everything
#   integration/run-tests.sh -p spindle-rm  # one crate (the client install still runs)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

step() { printf '\n==> run-tests: %s\n' "$*"; }

step "installing the Hadoop 3.3.4 client (integration/setup-clients.sh)"
jar_dir="$(bash integration/setup-clients.sh)"
printf 'Hadoop client jars: %s\n' "$jar_dir"

step "building the spindle binary (cargo build -p spindle)"
cargo build -p spindle

# Two test threads: each integration test starts JVMs (about a second of CPU each) and
# spindle daemons, and the machines this runs on have two cores.
if [ $# -eq 0 ]; then
    set -- --workspace
fi
step "running the tests (cargo test $* --no-fail-fast -- --test-threads=2)"
cargo test "$@" --no-fail-fast -- --test-threads=2

# The criterion benchmarks are not run here (they are measurements), but they must
# keep compiling: build them in the test profile, which is quick.
step "compiling the benchmarks (cargo test $* --benches --no-run)"
cargo test "$@" --benches --no-run
step "all tests passed"
