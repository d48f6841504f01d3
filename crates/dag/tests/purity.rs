//! The purity guard of the DAG cores and the session core: no I/O, no
//! clock, no threads, no locks, no atomics, no globals, no printing (the
//! session reports what it noticed as values, and its drivers log them).
//! `Cargo.toml` keeps other crates out (only `thiserror`); this test keeps
//! the standard library's impure parts out of `src/` and names every
//! offending `file:line`. It shares its scanner with the scheduler core's
//! guard (`crates/scheduler/tests/purity.rs`, which describes what is
//! looked for and tests the scanner); `crates/dag/clippy.toml` bans the
//! same items for clippy.

use std::fmt::Write as _;
use std::path::Path;

#[path = "../../scheduler/tests/purity/scan.rs"]
mod scan;

use scan::{dependencies, findings, rust_files};

/// Nothing: the crate does not depend on `spindle-common`.
const COMMON_ALLOWED: &[&str] = &[];

const ALLOWED_DEPENDENCIES: &[&str] = &["thiserror"];

#[test]
#[allow(
    clippy::disallowed_methods,
    reason = "the guard reads the sources it checks (clippy.toml bans file I/O in this crate)"
)]
fn the_cores_have_no_io_clock_thread_or_lock() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    assert!(
        files.iter().any(|f| f.ends_with("session/mod.rs")) && files.len() > 10,
        "found only {files:?}"
    );
    let mut report = String::new();
    for file in &files {
        let src = std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        let shown = file
            .strip_prefix(root)
            .unwrap_or(file)
            .display()
            .to_string();
        for (line, reason) in findings(&src, COMMON_ALLOWED) {
            let _ = writeln!(report, "crates/dag/{shown}:{line}: {reason}");
        }
    }
    assert!(
        report.is_empty(),
        "the DAG cores must stay pure (no I/O, clock, threads or locks):\n{report}"
    );
}

#[test]
#[allow(
    clippy::disallowed_methods,
    reason = "the guard reads the manifest it checks (clippy.toml bans file I/O in this crate)"
)]
fn the_cores_depend_on_nothing_else() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml"))
        .unwrap_or_else(|e| panic!("Cargo.toml: {e}"));
    let deps = dependencies(&manifest);
    assert!(
        deps.iter()
            .all(|d| ALLOWED_DEPENDENCIES.contains(&d.as_str())),
        "crates/dag/Cargo.toml [dependencies] must stay within {ALLOWED_DEPENDENCIES:?} \
         (a new dependency is a reviewed change): {deps:?}"
    );
}
