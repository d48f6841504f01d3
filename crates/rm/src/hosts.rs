//! Include and exclude host lists (`yarn.resourcemanager.nodes.include-path` and
//! `exclude-path`), in Hadoop's plain format: host names separated by white space or
//! new lines, `#` starts a comment.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use spindle_common::conf::Configuration;

/// The current include and exclude sets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostLists {
    pub include: BTreeSet<String>,
    pub exclude: BTreeSet<String>,
}

/// Where the lists come from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostFiles {
    pub include_path: Option<PathBuf>,
    pub exclude_path: Option<PathBuf>,
}

impl HostFiles {
    /// The paths `yarn.resourcemanager.nodes.include-path` and
    /// `exclude-path` name; empty values mean no list.
    pub fn from_conf(conf: &Configuration) -> HostFiles {
        let path = |key: &str| {
            conf.get(key)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
                .map(Into::into)
        };
        HostFiles {
            include_path: path("yarn.resourcemanager.nodes.include-path"),
            exclude_path: path("yarn.resourcemanager.nodes.exclude-path"),
        }
    }

    /// Reads both files. A path that is configured but unreadable is an error that names
    /// it; an empty path means "no list".
    pub fn read(&self) -> Result<HostLists, String> {
        Ok(HostLists {
            include: read_list(self.include_path.as_deref())?,
            exclude: read_list(self.exclude_path.as_deref())?,
        })
    }
}

fn read_list(path: Option<&Path>) -> Result<BTreeSet<String>, String> {
    let Some(path) = path else {
        return Ok(BTreeSet::new());
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read host list {}: {e}", path.display()))?;
    Ok(parse_list(&text))
}

/// Parses the plain host-list format.
pub fn parse_list(text: &str) -> BTreeSet<String> {
    text.lines()
        .map(|line| line.split('#').next().unwrap_or(""))
        .flat_map(str::split_whitespace)
        .map(str::to_string)
        .collect()
}

impl HostLists {
    fn listed(set: &BTreeSet<String>, host: &str, port: i32) -> bool {
        // Asked on every heartbeat: an empty list (the usual case) costs no
        // lookup and no `host:port` string.
        !set.is_empty() && (set.contains(host) || set.contains(&format!("{host}:{port}")))
    }

    /// True when the include list is empty or names the host.
    pub fn is_included(&self, host: &str, port: i32) -> bool {
        self.include.is_empty() || Self::listed(&self.include, host, port)
    }

    /// True when the exclude list names the host (or host:port).
    pub fn is_excluded(&self, host: &str, port: i32) -> bool {
        Self::listed(&self.exclude, host, port)
    }

    /// A node may join the cluster when it is included and not excluded.
    pub fn is_valid(&self, host: &str, port: i32) -> bool {
        self.is_included(host, port) && !self.is_excluded(host, port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_comments_and_whitespace() {
        let set = parse_list("# cluster hosts\nnode1 node2\n\n  node3:8041 # with port\n");
        let v: Vec<_> = set.into_iter().collect();
        assert_eq!(v, ["node1", "node2", "node3:8041"]);
    }

    #[test]
    fn validity() {
        let lists = HostLists {
            include: parse_list("a b"),
            exclude: parse_list("b c:1"),
        };
        assert!(lists.is_valid("a", 1));
        assert!(!lists.is_valid("b", 1), "excluded wins over included");
        assert!(!lists.is_valid("d", 1), "not in a non-empty include list");
        let open = HostLists {
            include: BTreeSet::new(),
            exclude: parse_list("c:1"),
        };
        assert!(open.is_valid("c", 2));
        assert!(!open.is_valid("c", 1));
    }

    #[test]
    fn missing_file_is_an_error_naming_it() {
        let files = HostFiles {
            include_path: Some("/nonexistent/spindle-include".into()),
            exclude_path: None,
        };
        let err = files.read().expect_err("must fail");
        assert!(err.contains("/nonexistent/spindle-include"), "{err}");
    }
}
