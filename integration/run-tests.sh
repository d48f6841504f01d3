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

# The integration tests skip (with a SKIP line) when the Hadoop clients are missing,
# except under CI, where they fail. This command installs the clients first, so a run of
# it must exercise them: it always runs the tests as CI does.
export CI="${CI:-true}"

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
log="$(mktemp "${TMPDIR:-/tmp}/spindle-tests.XXXXXX")"
trap 'rm -f "$log"' EXIT
status=0
cargo test "$@" --no-fail-fast -- --test-threads=2 2>&1 | tee "$log" || status=$?
# One line for the whole run: the sum of every test binary's "test result:" line.
awk '/^test result:/ {
        for (i = 1; i <= NF; i++) {
            if ($(i) ~ /^passed/) passed += $(i - 1)
            if ($(i) ~ /^failed/) failed += $(i - 1)
            if ($(i) ~ /^ignored/) ignored += $(i - 1)
        }
    }
    END { printf "\n==> run-tests: %d passed, %d failed, %d ignored\n", passed, failed, ignored }' "$log"
if [ "$status" -ne 0 ]; then
    # A link that fails for want of disk names no cause in cargo's summary: print the room left.
    printf '==> run-tests: disk after the run: %s\n' "$(df -h . | awk 'NR == 2 {print $4 " free of " $2}')"
    exit "$status"
fi

# The criterion benchmarks are not run here (they are measurements), but they must
# keep compiling: build them in the test profile, which is quick.
step "compiling the benchmarks (cargo test $* --benches --no-run)"
cargo test "$@" --benches --no-run
step "all tests passed"
