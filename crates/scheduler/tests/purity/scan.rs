//! The purity scanner shared by the guards of the pure cores
//! (`crates/scheduler/tests/purity.rs`, `crates/dag/tests/purity.rs`):
//! it reads Rust source as tokens and gives the line of everything that
//! does I/O, reads a clock, spawns threads, locks, uses atomics or
//! globals, prints, or takes from `spindle_common` more than a crate
//! allows; and it reads the `[dependencies]` of a manifest. The
//! scheduler's `purity.rs` (next to this directory) says what is looked
//! for and why, and tests the scanner itself.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Standard modules the core may not touch at all.
const FORBIDDEN_MODULES: &[&str] = &["fs", "net", "io", "thread", "env", "process", "os"];

/// Standard modules the core may use only for the listed items.
const PARTLY_ALLOWED: &[(&str, &[&str])] = &[("time", &["Duration"]), ("sync", &["Arc"])];

/// Names that are impure wherever they appear.
const FORBIDDEN_NAMES: &[&str] = &[
    "Instant",
    "SystemTime",
    "UNIX_EPOCH",
    "Mutex",
    "RwLock",
    "Condvar",
    "Barrier",
    "OnceLock",
    "LazyLock",
    "thread_local",
];

const FORBIDDEN_MACROS: &[&str] = &["print", "println", "eprint", "eprintln", "dbg"];

/// A token of Rust source, with its line.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    PathSep,
    Punct(char),
}

/// Splits `src` into identifiers, `::` and single punctuation, dropping
/// comments, string/char literals and whitespace. Good enough for finding
/// paths; it does not need to understand all of Rust.
fn tokens(src: &str) -> Vec<(usize, Tok)> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    let bump_lines = |s: &[char], line: &mut usize| {
        *line += s.iter().filter(|&&c| c == '\n').count();
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            // Block comments nest in Rust.
            let mut depth = 0;
            let start = i;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            bump_lines(&chars[start..i.min(chars.len())], &mut line);
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && raw_string_at(&chars, i) {
            // r"..." or r#"..."#
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            j += 1; // opening quote
            let start = i;
            loop {
                if j >= chars.len() {
                    break;
                }
                if chars[j] == '"' && (0..hashes).all(|k| chars.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            bump_lines(&chars[start..j.min(chars.len())], &mut line);
            i = j;
        } else if c == '"' || (c == 'b' && next == Some('"')) {
            let start = i;
            i += if c == 'b' { 2 } else { 1 };
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            bump_lines(&chars[start..i.min(chars.len())], &mut line);
        } else if c == '\'' {
            // A char literal ('x', '\n', '\'') or a lifetime ('a).
            if next == Some('\\') {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1; // lifetime: the name follows as an identifier
            }
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            out.push((line, Tok::Ident(word)));
        } else if c == ':' && next == Some(':') {
            out.push((line, Tok::PathSep));
            i += 2;
        } else {
            out.push((line, Tok::Punct(c)));
            i += 1;
        }
    }
    out
}

/// Whether `r` at `i` starts a raw string (not an identifier ending in r).
fn raw_string_at(chars: &[char], i: usize) -> bool {
    if i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_') {
        return false;
    }
    let mut j = i + 1;
    while chars.get(j) == Some(&'#') {
        j += 1;
    }
    chars.get(j) == Some(&'"')
}

fn ident(t: Option<&(usize, Tok)>) -> Option<&str> {
    match t {
        Some((_, Tok::Ident(s))) => Some(s),
        _ => None,
    }
}

fn is(t: Option<&(usize, Tok)>, want: &Tok) -> bool {
    t.is_some_and(|(_, tok)| tok == want)
}

/// The first-level items of a `{ ... }` group starting after the `{` at
/// `open`, each with the path below it (`collections::BTreeMap` gives
/// `("collections", ["BTreeMap"])`; nested groups are flattened).
fn group_items(toks: &[(usize, Tok)], open: usize) -> Vec<(usize, String, Vec<String>)> {
    let mut items = Vec::new();
    let mut i = open + 1;
    let mut depth = 1;
    let mut current: Option<(usize, String, Vec<String>)> = None;
    while i < toks.len() && depth > 0 {
        match &toks[i].1 {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                depth -= 1;
            }
            Tok::Punct(',') if depth == 1 => {
                if let Some(item) = current.take() {
                    items.push(item);
                }
            }
            Tok::Ident(name) => match &mut current {
                None if depth == 1 => current = Some((toks[i].0, name.clone(), Vec::new())),
                Some((_, _, below)) => below.push(name.clone()),
                None => {}
            },
            _ => {}
        }
        i += 1;
    }
    if let Some(item) = current {
        items.push(item);
    }
    items
}

/// Everything impure in one file's source, as `(line, reason)`;
/// `common_allowed` lists what may be taken from `spindle_common`.
pub fn findings(src: &str, common_allowed: &[&str]) -> Vec<(usize, String)> {
    let toks = tokens(src);
    let mut out = Vec::new();
    let check_std_item = |line: usize,
                          root: &str,
                          module: &str,
                          below: &[String],
                          out: &mut Vec<(usize, String)>| {
        if FORBIDDEN_MODULES.contains(&module) {
            out.push((line, format!("uses {root}::{module}")));
        } else if let Some((_, allowed)) = PARTLY_ALLOWED.iter().find(|(m, _)| *m == module) {
            match below.first() {
                None => out.push((
                    line,
                    format!(
                        "imports the whole {root}::{module} module (only {} allowed)",
                        allowed.join(", ")
                    ),
                )),
                Some(item) if !allowed.contains(&item.as_str()) => {
                    out.push((line, format!("uses {root}::{module}::{item}")));
                }
                Some(_) => {}
            }
        }
    };
    for (i, (line, tok)) in toks.iter().enumerate() {
        let line = *line;
        let Tok::Ident(word) = tok else {
            continue;
        };
        let path_follows = is(toks.get(i + 1), &Tok::PathSep);
        let after_path_sep = i > 0 && is(toks.get(i - 1), &Tok::PathSep);
        if matches!(word.as_str(), "std" | "core" | "alloc") && path_follows && !after_path_sep {
            if let Some(module) = ident(toks.get(i + 2)) {
                let below: Vec<String> = ident(toks.get(i + 4))
                    .filter(|_| is(toks.get(i + 3), &Tok::PathSep))
                    .map(|s| vec![s.to_string()])
                    .unwrap_or_default();
                let group_below =
                    is(toks.get(i + 3), &Tok::PathSep) && is(toks.get(i + 4), &Tok::Punct('{'));
                if group_below {
                    // use std::time::{Duration, Instant};
                    for (l, item, _) in group_items(&toks, i + 4) {
                        check_std_item(l, word, module, &[item], &mut out);
                    }
                } else {
                    check_std_item(line, word, module, &below, &mut out);
                }
            } else if is(toks.get(i + 2), &Tok::Punct('{')) {
                // use std::{fs, collections::BTreeMap};
                for (l, module, below) in group_items(&toks, i + 2) {
                    check_std_item(l, word, &module, &below, &mut out);
                }
            }
        }
        if word == "spindle_common" && path_follows {
            let mut items = Vec::new();
            if let Some(first) = ident(toks.get(i + 2)) {
                items.push((line, first.to_string()));
            } else if is(toks.get(i + 2), &Tok::Punct('{')) {
                items.extend(
                    group_items(&toks, i + 2)
                        .into_iter()
                        .map(|(l, n, _)| (l, n)),
                );
            }
            for (l, item) in items {
                if !common_allowed.contains(&item.as_str()) {
                    out.push((l, format!("uses spindle_common::{item}")));
                }
            }
        }
        if FORBIDDEN_NAMES.contains(&word.as_str()) || word.starts_with("Atomic") {
            out.push((line, format!("names {word}")));
        }
        if word == "static" && ident(toks.get(i + 1)) == Some("mut") {
            out.push((line, "declares a static mut".to_string()));
        }
        if FORBIDDEN_MACROS.contains(&word.as_str()) && is(toks.get(i + 1), &Tok::Punct('!')) {
            out.push((line, format!("prints with {word}!")));
        }
    }
    out.sort();
    out.dedup();
    out
}

#[allow(
    clippy::disallowed_methods,
    reason = "the guard reads the sources it checks (clippy.toml bans file I/O in this crate)"
)]
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(rd) => rd.filter_map(|e| e.ok().map(|e| e.path())).collect(),
        Err(e) => panic!("cannot list {}: {e}", dir.display()),
    };
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// The `[dependencies]` names of a Cargo.toml (dev-dependencies may be
/// anything: tests and benchmarks are not the core).
pub fn dependencies(manifest: &str) -> Vec<String> {
    let mut in_deps = false;
    let mut out = Vec::new();
    for raw in manifest.lines() {
        let line = raw.trim();
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
            continue;
        }
        if in_deps && !line.is_empty() && !line.starts_with('#') {
            let name = line
                .split(['=', '.'])
                .next()
                .unwrap_or_default()
                .trim()
                .to_string();
            out.push(name);
        }
    }
    out
}

/// Every impure line of the crate at `root` (its `src/`), one report line
/// each naming `<prefix>/<file>:<line>`, and the files read.
#[allow(
    clippy::disallowed_methods,
    reason = "the guard reads the sources it checks (clippy.toml bans file I/O in this crate)"
)]
pub fn impure_lines(root: &Path, prefix: &str, common_allowed: &[&str]) -> (Vec<PathBuf>, String) {
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let mut report = String::new();
    for file in &files {
        let src = std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        let shown = file
            .strip_prefix(root)
            .unwrap_or(file)
            .display()
            .to_string();
        for (line, reason) in findings(&src, common_allowed) {
            let _ = writeln!(report, "{prefix}/{shown}:{line}: {reason}");
        }
    }
    (files, report)
}

/// The `[dependencies]` of the crate at `root` that are not `allowed`.
#[allow(
    clippy::disallowed_methods,
    reason = "the guard reads the manifest it checks (clippy.toml bans file I/O in this crate)"
)]
pub fn unexpected_dependencies(root: &Path, allowed: &[&str]) -> Vec<String> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml"))
        .unwrap_or_else(|e| panic!("Cargo.toml: {e}"));
    dependencies(&manifest)
        .into_iter()
        .filter(|d| !allowed.contains(&d.as_str()))
        .collect()
}
