//! The purity guard of the DAG cores and the session core: no I/O, no
//! clock, no threads, no locks, no atomics, no globals, no printing (the
//! session reports what it noticed as values, and its drivers log them).
//! `Cargo.toml` keeps other crates out (only `thiserror`); this test keeps
//! the standard library's impure parts out of `src/` and names every
//! offending `file:line`. It shares its scanner with the scheduler core's
//! guard (`crates/scheduler/tests/purity.rs`, which describes what is
//! looked for and tests the scanner); `crates/dag/clippy.toml` bans the
//! same items for clippy.

use std::path::Path;

#[path = "../../scheduler/tests/purity/scan.rs"]
mod scan;

/// Nothing: the crate does not depend on `spindle-common`.
const COMMON_ALLOWED: &[&str] = &[];

const ALLOWED_DEPENDENCIES: &[&str] = &["thiserror"];

#[test]
fn the_cores_have_no_io_clock_thread_or_lock() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (files, report) = scan::impure_lines(root, "crates/dag", COMMON_ALLOWED);
    assert!(
        files.iter().any(|f| f.ends_with("session/mod.rs")) && files.len() > 10,
        "found only {files:?}"
    );
    assert!(
        report.is_empty(),
        "the DAG cores must stay pure (no I/O, clock, threads or locks):\n{report}"
    );
}

#[test]
fn the_cores_depend_on_nothing_else() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let extra = scan::unexpected_dependencies(root, ALLOWED_DEPENDENCIES);
    assert!(
        extra.is_empty(),
        "crates/dag/Cargo.toml [dependencies] must stay within {ALLOWED_DEPENDENCIES:?} \
         (a new dependency is a reviewed change): {extra:?}"
    );
}
