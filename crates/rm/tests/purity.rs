//! The purity guard of the RM's state: `state/`, `model/` and `cluster/`
//! take commands and time in and give replies, effects and store
//! operations out. No I/O, no clock, no threads, no locks, no atomics, no
//! globals, no printing, and no network or wire crate: the owner task
//! (`runtime/`) and the protocol handlers (`rpc/`, `web/`) do those. It
//! shares its scanner with the scheduler core's guard
//! (`crates/scheduler/tests/purity.rs`, which describes what is looked for
//! and tests the scanner).
//!
//! One file is let through on the wire-crate rule: `model/convert.rs`, the
//! wire form of the domain types, which the handlers use and the state
//! does not (the state's unit tests' `test_support.rs` reads a launch
//! context from it); the rule that the state does not import it is checked
//! here too.

use std::path::Path;

#[path = "../../scheduler/tests/purity/scan.rs"]
#[allow(
    dead_code,
    reason = "the guard uses the scanner's findings, not its folder walk"
)]
mod scan;

/// What the state may take from `spindle_common`: ids, resources, states,
/// exit statuses, ACLs, token identifiers and keys (pure data and
/// computations), the configuration as a value (the state reads settings
/// handed to it, never a file), wire-free proto helpers for ids, and the
/// escaping of peer text for log lines.
const COMMON_ALLOWED: &[&str] = &[
    "ids",
    "resource",
    "states",
    "exit_status",
    "acl",
    "security",
    "conf",
    "proto",
    "text",
    "ApplicationAttemptId",
    "ApplicationId",
    "ContainerId",
    "NodeId",
    "Resource",
];

/// Crates that talk to the network or the operating system, or carry the
/// wire format.
const WIRE_CRATES: &[&str] = &[
    "hadoop_protos",
    "spindle_ipc",
    "spindle_fs",
    "spindle_web",
    "prost",
    "tokio",
    "nix",
    "libc",
    "dns_lookup",
];

/// The folders of the RM's state, under `crates/rm/src`.
const PURE: &[&str] = &["state", "model", "cluster"];

fn is_test_file(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.ends_with("_tests.rs") || name == "tests.rs" || name == "test_support.rs"
}

/// The source of `path` without its `#[cfg(test)]` module at the end.
fn production_part(src: &str) -> &str {
    src.find("#[cfg(test)]").map_or(src, |i| &src[..i])
}

fn pure_files() -> Vec<std::path::PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    for dir in PURE {
        let mut stack = vec![src.join(dir)];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
                let path = entry.expect("dir entry").path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|x| x == "rs") && !is_test_file(&path) {
                    files.push(path);
                }
            }
        }
    }
    files.sort();
    files
}

/// An IP address as a value (a caller's address, for audit), not a
/// socket: `std::net::IpAddr` and nothing else from `std::net` on the line.
fn is_address_value(line: &str) -> bool {
    line.contains("std::net::IpAddr") && line.matches("std::net::").count() == 1
}

/// The lines of `src` that name a wire or network crate, or (in the
/// state) the domain's wire form.
fn wire_lines(src: &str, in_state: bool) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, text) in src.lines().enumerate() {
        let code = text.split("//").next().unwrap_or("");
        for krate in WIRE_CRATES {
            if code.contains(&format!("{krate}::")) {
                out.push((i + 1, (*krate).to_string()));
            }
        }
        if in_state && code.contains("model::convert") {
            out.push((i + 1, "the wire form (model::convert)".to_string()));
        }
    }
    out
}

#[test]
fn the_state_has_no_io_clock_thread_lock_or_wire() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = pure_files();
    assert!(
        files.iter().any(|f| f.ends_with("state/mod.rs"))
            && files.iter().any(|f| f.ends_with("model/keys.rs"))
            && files.len() > 25,
        "found only {files:?}"
    );
    let mut report = String::new();
    for file in &files {
        let src = std::fs::read_to_string(file).expect("read a source file");
        let src = production_part(&src);
        let shown = file
            .strip_prefix(root)
            .unwrap_or(file)
            .display()
            .to_string();
        let lines: Vec<&str> = src.lines().collect();
        for (line, reason) in scan::findings(src, COMMON_ALLOWED) {
            if is_address_value(lines.get(line - 1).copied().unwrap_or("")) {
                continue;
            }
            report.push_str(&format!("crates/rm/{shown}:{line}: {reason}\n"));
        }
        if file.ends_with("model/convert.rs") {
            continue;
        }
        let in_state = file.starts_with(root.join("src/state"));
        for (line, what) in wire_lines(src, in_state) {
            report.push_str(&format!("crates/rm/{shown}:{line}: uses {what}\n"));
        }
    }
    assert!(
        report.is_empty(),
        "the RM's state must stay pure (no I/O, clock, threads, locks or wire types):\n{report}"
    );
}

/// The guard sees what it must: a lock, a clock, a wire crate and the
/// wire form in a made-up file are each named at their line; a test
/// module and comments are left alone.
#[test]
fn the_guard_finds_a_lock_a_clock_and_a_wire_type() {
    let src = "use std::sync::RwLock;\nfn f() { let _ = std::time::Instant::now(); }\n";
    let lines: Vec<usize> = scan::findings(src, COMMON_ALLOWED)
        .into_iter()
        .map(|(line, _)| line)
        .collect();
    assert!(lines.contains(&1) && lines.contains(&2), "{lines:?}");
    let wire = "use hadoop_protos::yarn as pb;\n// tokio::spawn in a comment\nuse crate::model::convert::x;\n";
    assert_eq!(
        wire_lines(wire, true),
        vec![
            (1, "hadoop_protos".to_string()),
            (3, "the wire form (model::convert)".to_string())
        ]
    );
    assert_eq!(wire_lines(wire, false).len(), 1);
    assert!(is_address_value("    pub from: Option<std::net::IpAddr>,"));
    assert!(!is_address_value("use std::net::{IpAddr, TcpStream};"));
    let with_tests = "fn a() {}\n#[cfg(test)]\nmod tests { use tokio::x; }";
    assert!(!production_part(with_tests).contains("tokio"));
}
