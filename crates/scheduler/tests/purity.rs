//! The purity guard: the scheduler core has no I/O, no clock, no threads
//! and no locks. `Cargo.toml` keeps other crates out (only
//! `spindle-common` and `thiserror`); this test keeps the standard
//! library's impure parts and `spindle-common`'s configuration, security
//! and wire modules out of `src/`, and names every offending `file:line`.
//!
//! What it looks for, in code (comments and string literals are skipped):
//!
//! * paths into `std`/`core`/`alloc` modules that do I/O or talk to the
//!   operating system: `fs`, `net`, `io`, `thread`, `env`, `process`,
//!   `os`; `time` except `Duration` (a plain number); `sync` except `Arc`
//!   (sharing, not locking); also inside grouped imports
//!   (`use std::{fs, collections::BTreeMap}`);
//! * names of clocks, locks, atomics and globals wherever they appear:
//!   `Instant`, `SystemTime`, `UNIX_EPOCH`, `Mutex`, `RwLock`, `Condvar`,
//!   `Barrier`, `OnceLock`, `LazyLock`, `Atomic*`, `thread_local`,
//!   `static mut`;
//! * printing macros (`print!`, `println!`, `eprint!`, `eprintln!`,
//!   `dbg!`): the core reports through its return values;
//! * `spindle_common` paths other than ids, resources and exit statuses
//!   (its `conf` module reads files, `security` holds keys);
//! * dependencies in `Cargo.toml` other than the two allowed.
//!
//! `HashMap`/`HashSet` iteration order is a determinism concern, not a
//! purity one, and is out of scope here (the design rule is that no hash
//! order reaches a decision; the core uses ordered maps throughout).
//!
//! The same list is in `crates/scheduler/clippy.toml` for clippy's
//! `disallowed_*` lints, which see through re-exports and aliases that a
//! text scan cannot; this scan needs no clippy run and also covers
//! grouped imports of whole modules, which clippy does not flag.

use std::path::Path;

#[path = "purity/scan.rs"]
mod scan;

use scan::{dependencies, findings, impure_lines, unexpected_dependencies};

/// What the core may take from `spindle_common`.
const COMMON_ALLOWED: &[&str] = &[
    "ids",
    "resource",
    "exit_status",
    "ApplicationAttemptId",
    "ApplicationId",
    "ContainerId",
    "NodeId",
    "HostName",
    "IdParseError",
    "Resource",
];

const ALLOWED_DEPENDENCIES: &[&str] = &["spindle-common", "thiserror"];

#[test]
fn the_core_has_no_io_clock_thread_or_lock() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (files, report) = impure_lines(root, "crates/scheduler", COMMON_ALLOWED);
    assert!(files.len() > 5, "found only {files:?}");
    assert!(
        report.is_empty(),
        "the scheduler core must stay pure (no I/O, clock, threads or locks):\n{report}"
    );
}

#[test]
fn the_core_depends_on_nothing_else() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let extra = unexpected_dependencies(root, ALLOWED_DEPENDENCIES);
    assert!(
        extra.is_empty(),
        "crates/scheduler/Cargo.toml [dependencies] must stay within {ALLOWED_DEPENDENCIES:?} \
         (a new dependency is a reviewed change): {extra:?}"
    );
}

/// The scanner itself: it finds what it must, with the right line, and
/// leaves comments, strings and the allowed items alone.
#[test]
fn the_scanner_finds_impure_code() {
    let src = r####"//! Talks about std::fs and Mutex in a comment: fine.
use std::collections::BTreeMap;
use std::{fs, collections::BTreeSet};
use std::time::{Duration, Instant};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
fn f() {
    let _ = "std::net::TcpStream and println!(\"x\") in a string";
    let _ = r#"std::process::exit"#;
    let _c = '"';
    let t = std::time::SystemTime::now();
    let m: std::sync::Mutex<u8> = Default::default();
    println!("{t:?}");
    let _ = core::sync::atomic::Ordering::SeqCst;
    let _ = spindle_common::conf::Configuration::empty();
    let _ = spindle_common::ids::NodeId::new("h", 1);
    /* block /* nested */ std::env::var */ let _ = std::env::var("X");
}
static mut COUNTER: u32 = 0;
use spindle_common::{Resource, security::KeyRing};
use std::io;
"####;
    let found: Vec<String> = findings(src, COMMON_ALLOWED)
        .into_iter()
        .map(|(line, reason)| format!("{line}: {reason}"))
        .collect();
    assert_eq!(
        found,
        [
            "3: uses std::fs",
            "4: names Instant",
            "4: uses std::time::Instant",
            "6: names AtomicU64",
            "6: uses std::sync::atomic",
            "11: names SystemTime",
            "11: uses std::time::SystemTime",
            "12: names Mutex",
            "12: uses std::sync::Mutex",
            "13: prints with println!",
            "14: uses core::sync::atomic",
            "15: uses spindle_common::conf",
            "17: uses std::env",
            "19: declares a static mut",
            "20: uses spindle_common::security",
            "21: uses std::io",
        ]
    );
    assert_eq!(
        dependencies("[package]\nname = \"x\"\n[dependencies]\na.workspace = true\nb = \"1\"\n[dev-dependencies]\nc = \"1\"\n"),
        ["a", "b"]
    );
}
