//! Hadoop access control lists (`yarn.admin.acl`) and the group lookup they need.
//!
//! Format: `users groups`, each a comma list, separated by one space. `*` allows
//! everyone; a blank value allows nobody.

use std::collections::BTreeSet;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acl {
    all: bool,
    users: BTreeSet<String>,
    groups: BTreeSet<String>,
}

impl Acl {
    pub fn parse(spec: &str) -> Acl {
        let spec = spec.trim_start_matches(['\n', '\r']);
        if spec.trim() == "*" {
            return Acl {
                all: true,
                users: BTreeSet::new(),
                groups: BTreeSet::new(),
            };
        }
        let mut parts = spec.splitn(2, ' ');
        let list = |s: Option<&str>| -> BTreeSet<String> {
            s.unwrap_or("")
                .split(',')
                .map(str::trim)
                .filter(|x| !x.is_empty())
                .map(str::to_string)
                .collect()
        };
        let users = list(parts.next());
        let groups = list(parts.next());
        Acl {
            all: false,
            users,
            groups,
        }
    }

    /// Whether the user may pass, given the groups it belongs to.
    pub fn allows(&self, user: &str, groups: &[String]) -> bool {
        self.all || self.users.contains(user) || groups.iter().any(|g| self.groups.contains(g))
    }

    /// True when the ACL lets everyone through (no group lookup needed).
    pub fn allows_everyone(&self) -> bool {
        self.all
    }
}

/// The user's groups as the OS knows them (Hadoop's shell-based mapping runs `id`).
/// An unknown user has no groups.
pub async fn groups_for_user(user: &str) -> Vec<String> {
    if user.is_empty() || user.starts_with('-') {
        return Vec::new();
    }
    let out = tokio::process::Command::new("id")
        .arg("-Gn")
        .arg("--")
        .arg(user)
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(std::time::Duration::from_secs(5), out).await {
        Ok(Ok(o)) if o.status.success() => String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_forms() {
        assert!(Acl::parse("*").allows("anyone", &[]));
        let acl = Acl::parse("alice,bob admins");
        assert!(acl.allows("alice", &[]));
        assert!(!acl.allows("carol", &[]));
        assert!(acl.allows("carol", &["admins".into()]));
        let nobody = Acl::parse(" ");
        assert!(!nobody.allows("root", &["root".into()]));
        let groups_only = Acl::parse(" ops");
        assert!(groups_only.allows("x", &["ops".into()]));
        assert!(!groups_only.allows("ops", &[]));
    }

    #[tokio::test]
    async fn root_has_groups_and_ghosts_none() {
        let root = groups_for_user("root").await;
        assert!(root.contains(&"root".to_string()), "{root:?}");
        assert!(groups_for_user("no-such-user-spindle").await.is_empty());
        assert!(groups_for_user("-x").await.is_empty());
    }
}
