//! The configuration catalog (`spindle_common::conf::catalog`) stays true to
//! the code: every Hadoop-style key the workspace's production code reads by
//! name is named by the catalog, and every key the catalog says Spindle
//! reads is read somewhere. A new key without a catalog entry, or an entry
//! whose reader was removed, fails here.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use spindle_common::conf::catalog;

/// Literals that look like keys and are not: a Java class, a job name prefix,
/// the web authentication cookie (`spindle_web::spnego::COOKIE`).
const NOT_KEYS: &[&str] = &["mapreduce.job", "spindle.auxhost.AuxHost", "hadoop.auth"];
const KEY_PREFIXES: &[&str] = &[
    "yarn.",
    "hadoop.",
    "ipc.",
    "fs.",
    "dfs.",
    "mapreduce.",
    "mapred.",
    "net.",
    "spindle.",
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n == "tests") {
                continue;
            }
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs")
            && !p.to_string_lossy().ends_with("tests.rs")
            && !p.ends_with("test_support.rs")
        {
            out.push(p);
        }
    }
}

/// Production code of every crate but the fuzzers: each file up to its
/// `#[cfg(test)]` module.
fn production_sources() -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    for krate in std::fs::read_dir(workspace().join("crates"))
        .expect("crates/")
        .flatten()
    {
        if krate.file_name() == "fuzz" {
            continue;
        }
        rust_files(&krate.path().join("src"), &mut files);
    }
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("read");
            (p, without_tests(&text))
        })
        .collect()
}

/// `text` without its test code: a `#[cfg(test)]` item that is one line
/// (`mod tests;`, `mod test_support;`, with any attributes between) is left
/// out and reading goes on after it; one with a body is the file's test
/// module, and the file ends there.
fn without_tests(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim() != "#[cfg(test)]" {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let item = lines.by_ref().find(|l| !l.trim_start().starts_with("#["));
        match item {
            Some(l) if l.trim_end().ends_with(';') => {}
            _ => break,
        }
    }
    out
}

/// `"…"` literals of `code` that are whole keys (no format braces, not a
/// prefix ending in a dot).
fn key_literals(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in code.lines() {
        let mut parts = line.split('"');
        parts.next();
        while let Some(lit) = parts.next() {
            let _outside = parts.next();
            let is_key = KEY_PREFIXES.iter().any(|p| lit.starts_with(p))
                && lit
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
                && !lit.ends_with('.')
                && !NOT_KEYS.contains(&lit);
            if is_key {
                out.push(lit.to_string());
            }
        }
    }
    out
}

/// The keys of `spindle_common::conf::keys` (its constants) that `code` uses.
fn constants() -> Vec<(String, String)> {
    let keys_rs = std::fs::read_to_string(workspace().join("crates/common/src/conf/keys.rs"))
        .expect("keys.rs");
    let mut out = Vec::new();
    let mut rest = keys_rs.as_str();
    while let Some(i) = rest.find("pub const ") {
        rest = &rest[i + "pub const ".len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        let Some(q) = rest.find('"') else { break };
        let after = &rest[q + 1..];
        let Some(end) = after.find('"') else { break };
        let value = &after[..end];
        if rest[..q].contains("&str") && KEY_PREFIXES.iter().any(|p| value.starts_with(p)) {
            out.push((name, value.to_string()));
        }
        rest = &after[end + 1..];
    }
    out
}

fn uses_constant(code: &str, name: &str) -> bool {
    code.match_indices(name).any(|(i, _)| {
        let before = code[..i].chars().next_back();
        let after = code[i + name.len()..].chars().next();
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        !ident(before) && !ident(after)
    })
}

/// Every key the production code reads by name, with a file that reads it.
fn keys_read() -> Vec<(String, PathBuf)> {
    let constants = constants();
    let mut read = Vec::new();
    for (path, code) in production_sources() {
        // The key names and the catalog itself are what is checked against.
        let catalog_itself = path.ends_with("conf/keys.rs")
            || path.ends_with("conf/refuse.rs")
            || path.parent().is_some_and(|d| d.ends_with("conf/catalog"));
        if catalog_itself {
            continue;
        }
        for k in key_literals(&code) {
            read.push((k, path.clone()));
        }
        for (name, key) in &constants {
            if uses_constant(&code, name) {
                read.push((key.clone(), path.clone()));
            }
        }
    }
    read
}

#[test]
fn every_key_the_code_reads_is_in_the_catalog() {
    let named: Vec<&str> = catalog::named_keys().collect();
    let missing: BTreeSet<String> = keys_read()
        .into_iter()
        .filter(|(k, _)| !named.iter().any(|n| catalog::matches(n, k)))
        .map(|(k, p)| format!("{k} (read in {})", p.display()))
        .collect();
    assert!(
        missing.is_empty(),
        "keys read by the code that crates/common/src/conf/catalog/table.rs does not name:\n{}",
        missing.into_iter().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn every_key_the_catalog_says_is_read_is_read() {
    let read: BTreeSet<String> = keys_read().into_iter().map(|(k, _)| k).collect();
    let stale: Vec<&str> = catalog::read_keys()
        .iter()
        .copied()
        // Read through `${…}` expansion in other keys' defaults only.
        .filter(|k| *k != "hadoop.tmp.dir")
        .filter(|k| !read.contains(*k))
        .collect();
    assert!(
        stale.is_empty(),
        "the catalog lists keys as read that no production code reads: {stale:?}"
    );
}
