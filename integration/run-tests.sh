#!/usr/bin/env bash
# The project's test command. In order, each phase timed:
#   1. installs the real Hadoop client (integration/setup-clients.sh) and the test runner,
#      cargo-nextest (integration/setup-nextest.sh); both are no-ops once installed;
#   2. clippy on every target with warnings as errors (and so the bans of the crates'
#      clippy.toml files);
#   3. builds every target once, in one cargo invocation: the spindle binary the
#      integration tests start, every test binary, and the criterion benchmarks (compiled,
#      not run: they are measurements);
#   4. runs every unit and integration test with cargo-nextest, two at a time across all
#      test binaries, each in a process of its own (.config/nextest.toml), then the doc
#      tests with `cargo test --doc` (nextest does not run those);
#   5. prints the slowest tests, the test binaries by time, the skipped and the failed
#      tests, the time of each phase, and the closing line
#      `run-tests: N passed, N failed, N skipped` (integration/test-summary.py).
# Extra arguments select what every cargo step covers (e.g. `-p spindle-rm`); without
# any, the whole workspace.
#
#   integration/run-tests.sh                # everything
#   integration/run-tests.sh -p spindle-rm  # one crate (the installs still run)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

step() { printf '\n==> run-tests: %s\n' "$*"; }

# The integration tests skip (with a SKIP line) when the Hadoop clients are missing,
# except under CI, where they fail. This command installs the clients first, so a run of
# it must exercise them: it always runs the tests as CI does.
export CI="${CI:-true}"

# The time of each phase, for the summary; .ci/run passes the time it started
# (SPINDLE_RUN_START, in seconds since the epoch) so that the total counts its set-up too.
run_start="${SPINDLE_RUN_START:-$(date +%s)}"
work="$(mktemp -d "${TMPDIR:-/tmp}/spindle-tests.XXXXXX")"
trap 'rm -rf "$work"' EXIT
phases="$work/phases"
: >"$phases"
phase_name=""
phase_start=0
begin() {
    phase_name="$1"
    phase_start=$(date +%s)
    step "$2"
}
end() { printf '%s\t%s\n' "$phase_name" "$(($(date +%s) - phase_start))" >>"$phases"; }
disk_left() { df -h . | awk 'NR == 2 {print $4 " free of " $2}'; }

begin "set-up: Hadoop clients" "installing the Hadoop 3.3.4 client (integration/setup-clients.sh)"
jar_dir="$(bash integration/setup-clients.sh)"
printf 'Hadoop client jars: %s\n' "$jar_dir"
end

begin "set-up: cargo-nextest" "installing the test runner (integration/setup-nextest.sh)"
bash integration/setup-nextest.sh
end

if [ $# -eq 0 ]; then
    set -- --workspace
fi

begin "clippy" "clippy, warnings as errors (cargo clippy $* --all-targets -- -D warnings)"
cargo clippy "$@" --all-targets -- -D warnings
end

# One build of everything, so that no crate is built twice with different features; the
# benchmarks are built in the test profile, which is quick. With a package selection the
# spindle binary the integration tests start may not be among the targets: build it too.
begin "build" "building every target (cargo test $* --all-targets --no-run)"
status=0
cargo test "$@" --all-targets --no-run || status=$?
if [ "$status" -eq 0 ] && [ "$*" != "--workspace" ]; then
    cargo build -p spindle || status=$?
fi
end
if [ "$status" -ne 0 ]; then
    # A link that fails for want of disk names no cause in cargo's summary: print the room left.
    printf '==> run-tests: the build failed; disk left: %s\n' "$(disk_left)"
    exit "$status"
fi

target_dir="$(cargo metadata --no-deps --format-version 1 |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
junit="$target_dir/nextest/default/junit.xml"
rm -f "$junit"

begin "tests (cargo nextest run)" "running the tests (cargo nextest run $* --no-fail-fast)"
nextest_status=0
cargo nextest run "$@" --no-fail-fast 2>&1 | tee "$work/nextest.log" || nextest_status=$?
end

begin "doc tests (cargo test --doc)" "running the doc tests (cargo test $* --doc -- --test-threads=2)"
doc_status=0
cargo test "$@" --doc -- --test-threads=2 2>&1 | tee "$work/doc.log" || doc_status=$?
end

printf 'total\t%s\n' "$(($(date +%s) - run_start))" >>"$phases"
summary_status=0
python3 integration/test-summary.py \
    --junit "$junit" \
    --nextest-status "$nextest_status" --nextest-log "$work/nextest.log" \
    --doc-status "$doc_status" --doc-log "$work/doc.log" \
    --phases "$phases" --timings-out "$target_dir/test-timings.txt" || summary_status=$?
if [ "$summary_status" -ne 0 ]; then
    printf '==> run-tests: disk after the run: %s\n' "$(disk_left)"
    exit "$summary_status"
fi
