#!/usr/bin/env python3
"""The closing summary of integration/run-tests.sh.

Reads cargo-nextest's JUnit report (every test's time and output) and the log of the doc
tests (`cargo test --doc`, which nextest does not run), and prints: the slowest tests, the
test binaries by the time their tests took, the tests that skipped (a `SKIP: <reason>` line
in their output: a capability this machine lacks), the failures, the time of each phase,
and one closing line, `run-tests: N passed, N failed, N skipped`.

Counting is honest about what did not finish: a test that crashed or was killed is a
failure in nextest's report; a runner that exited non-zero without naming a failing test
(a test binary that could not be listed, a doc-test binary that crashed) counts as one
failure of its own; a test that printed `SKIP:` is counted as skipped, not passed, even
when it exercised part of what it tests.

    test-summary.py --junit FILE --nextest-status N --nextest-log FILE
                    [--doc-log FILE --doc-status N] [--phases FILE] [--timings-out FILE]
"""

import argparse
import os
import re
import sys
import xml.etree.ElementTree as ET

TOP = 15
ANSI = re.compile(r"\x1b\[[0-9;]*m")
SKIP_LINE = re.compile(r"^SKIP\b:?\s*(.*)$")


def read_text(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return ANSI.sub("", f.read())
    except OSError:
        return None


def junit_tests(path):
    """(binary, test, seconds, outcome, output) for each test case in the report;
    outcome is "passed" or "failed". None when there is no readable report."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    tests = []
    for suite in root.iter("testsuite"):
        binary = suite.get("name", "?")
        for case in suite.iter("testcase"):
            failed = case.find("failure") is not None or case.find("error") is not None
            output = "\n".join(
                (e.text or "") for tag in ("system-out", "system-err") for e in case.iter(tag)
            )
            try:
                seconds = float(case.get("time", "0"))
            except ValueError:
                seconds = 0.0
            tests.append(
                (binary, case.get("name", "?"), seconds, "failed" if failed else "passed", output)
            )
    return tests


def skip_reasons(output):
    reasons = []
    for line in output.splitlines():
        m = SKIP_LINE.match(line.strip())
        if m:
            reasons.append(m.group(1) or "(no reason given)")
    return reasons


def nextest_ignored(log):
    """The "N skipped" of nextest's closing Summary line (#[ignore] tests)."""
    if log is None:
        return 0
    found = 0
    for line in log.splitlines():
        if "Summary [" in line:
            m = re.search(r"(\d+) skipped", line)
            found = int(m.group(1)) if m else 0
    return found


def doc_results(log):
    """Sums of libtest's `test result:` lines: passed, failed, ignored, and the failing
    doc tests' names."""
    passed = failed = ignored = 0
    names = []
    if log is None:
        return passed, failed, ignored, names
    for line in log.splitlines():
        if line.startswith("test result:"):
            for count, word in re.findall(r"(\d+) (passed|failed|ignored)", line):
                if word == "passed":
                    passed += int(count)
                elif word == "failed":
                    failed += int(count)
                else:
                    ignored += int(count)
        m = re.match(r"^test (.+) \.\.\. FAILED$", line)
        if m:
            names.append(m.group(1))
    return passed, failed, ignored, names


def minutes(seconds):
    seconds = int(round(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--junit", required=True)
    ap.add_argument("--nextest-status", type=int, required=True)
    ap.add_argument("--nextest-log")
    ap.add_argument("--doc-log")
    ap.add_argument("--doc-status", type=int)
    ap.add_argument("--phases")
    ap.add_argument("--timings-out")
    a = ap.parse_args()

    out = sys.stdout
    tests = junit_tests(a.junit)
    failures = []  # (what, why)
    skipped = []  # (binary, test, reasons)
    passed = 0
    if tests is None:
        tests = []
        failures.append(
            ("the test run", f"no test report at {a.junit} (nextest exited {a.nextest_status})")
        )
    for binary, name, seconds, outcome, output in tests:
        if outcome == "failed":
            failures.append((f"{binary} {name}", f"failed after {seconds:.1f} s"))
            continue
        reasons = skip_reasons(output)
        if reasons:
            skipped.append((binary, name, reasons))
        else:
            passed += 1
    if a.nextest_status != 0 and not failures:
        failures.append(
            ("the test run", f"nextest exited {a.nextest_status} without naming a failing test")
        )
    ignored = nextest_ignored(read_text(a.nextest_log) if a.nextest_log else None)

    doc_log = read_text(a.doc_log) if a.doc_log else None
    doc_passed, doc_failed, doc_ignored, doc_names = doc_results(doc_log)
    passed += doc_passed
    ignored += doc_ignored
    for name in doc_names:
        failures.append((f"doc test {name}", "failed"))
    if doc_failed > len(doc_names):
        failures.extend(
            [("doc tests", "failed (name not found in the log)")] * (doc_failed - len(doc_names))
        )
    if a.doc_status is not None and a.doc_status != 0 and doc_failed == 0:
        failures.append(
            ("the doc tests", f"cargo test --doc exited {a.doc_status} without naming a failing test")
        )

    # Timings.
    by_time = sorted(tests, key=lambda t: t[2], reverse=True)
    binaries = {}
    for binary, _, seconds, _, _ in tests:
        total, count = binaries.get(binary, (0.0, 0))
        binaries[binary] = (total + seconds, count + 1)
    by_binary = sorted(binaries.items(), key=lambda kv: kv[1][0], reverse=True)
    test_seconds = sum(t[2] for t in tests)

    if a.timings_out:
        try:
            with open(a.timings_out, "w", encoding="utf-8") as f:
                f.write("# every test, slowest first: seconds, outcome, binary, test\n")
                for binary, name, seconds, outcome, _ in by_time:
                    f.write(f"{seconds:9.2f}  {outcome:6}  {binary}  {name}\n")
                f.write("\n# every test binary, by the sum of its tests' times: seconds, tests, binary\n")
                for binary, (seconds, count) in by_binary:
                    f.write(f"{seconds:9.2f}  {count:5}  {binary}\n")
        except OSError as e:
            print(f"(could not write {a.timings_out}: {e})", file=out)

    print(f"\n==> run-tests: the {min(TOP, len(by_time))} slowest tests (of {len(tests)})", file=out)
    print(f"{'seconds':>9}  test", file=out)
    for binary, name, seconds, outcome, _ in by_time[:TOP]:
        mark = "" if outcome == "passed" else f"  [{outcome}]"
        print(f"{seconds:9.1f}  {binary} {name}{mark}", file=out)
    print(
        f"\n==> run-tests: the {min(TOP, len(by_binary))} slowest test binaries "
        f"(of {len(by_binary)}; the sum of their tests' times)",
        file=out,
    )
    print(f"{'seconds':>9}  {'tests':>5}  binary", file=out)
    for binary, (seconds, count) in by_binary[:TOP]:
        print(f"{seconds:9.1f}  {count:5}  {binary}", file=out)
    print(
        f"  all tests: {test_seconds:.0f} s of test time"
        + (f"; every test and binary in {a.timings_out}" if a.timings_out else ""),
        file=out,
    )

    print(f"\n==> run-tests: {len(skipped)} tests skipped for want of a capability (SKIP: lines)", file=out)
    for binary, name, reasons in skipped:
        for reason in reasons:
            print(f"  SKIPPED {binary} {name}: {reason}", file=out)
    print(f"  and {ignored} ignored tests (#[ignore]: benchmarks and figures, run by hand)", file=out)

    if failures:
        print(f"\n==> run-tests: {len(failures)} failed", file=out)
        for what, why in failures:
            print(f"  FAILED {what}: {why}", file=out)

    if a.phases:
        text = read_text(a.phases) or ""
        rows = [line.split("\t") for line in text.splitlines() if "\t" in line]
        if rows:
            print("\n==> run-tests: time per phase", file=out)
            for name, seconds in rows:
                print(f"  {name:<36} {int(seconds):6d} s  ({minutes(int(seconds))})", file=out)

    print(f"\nrun-tests: {passed} passed, {len(failures)} failed, {len(skipped) + ignored} skipped", file=out)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
