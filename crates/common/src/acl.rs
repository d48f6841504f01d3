//! Hadoop access control lists (`yarn.admin.acl`, queue and application ACLs) and
//! the group lookup they need, shared by the ResourceManager (admin, queue and
//! application ACLs) and the NodeManager (application ACLs on its log pages).
//!
//! Format: `users groups`, each a comma list, separated by one space. `*` allows
//! everyone; a blank value allows nobody.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

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

    /// The ACL with `user` added (`AccessControlList.addUser`).
    pub fn with_user(mut self, user: &str) -> Acl {
        if !self.all && !user.is_empty() {
            self.users.insert(user.to_string());
        }
        self
    }
}

/// `yarn.admin.acl` as Hadoop's `AdminACLsManager` holds it: the configured
/// list (default `*`) with the ResourceManager's own user added.
pub fn admin_acl(configured: Option<&str>, daemon_user: Option<&str>) -> Acl {
    let acl = Acl::parse(configured.unwrap_or("*"));
    match daemon_user {
        Some(user) => acl.with_user(user),
        None => acl,
    }
}

/// The user the RM runs as, as Hadoop's login user is found under SIMPLE
/// authentication: `HADOOP_USER_NAME`, else the OS user.
pub async fn daemon_user() -> Option<String> {
    if let Some(user) = std::env::var("HADOOP_USER_NAME")
        .ok()
        .map(|u| u.trim().to_string())
        .filter(|u| !u.is_empty())
    {
        return Some(user);
    }
    let out = tokio::process::Command::new("id")
        .arg("-un")
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(Duration::from_secs(5), out).await {
        Ok(Ok(o)) if o.status.success() => {
            Some(String::from_utf8_lossy(&o.stdout).trim().to_string()).filter(|u| !u.is_empty())
        }
        _ => None,
    }
}

/// Users' groups, looked up with [`groups_for_user`] and kept for
/// `hadoop.security.groups.cache.secs`, as Hadoop's `Groups` cache does, so
/// that checking ACLs on every report does not start a process each time.
/// `refreshUserToGroupsMappings` empties it.
#[derive(Debug)]
pub struct GroupCache {
    ttl: Duration,
    entries: Mutex<HashMap<String, (Instant, Vec<String>)>>,
    /// `hadoop.user.group.static.mapping.overrides`: these users' groups
    /// are the listed ones, never looked up.
    overrides: HashMap<String, Vec<String>>,
}

/// `hadoop.user.group.static.mapping.overrides` (Hadoop's default
/// `dr.who=;`): `user=group,group;user=;…`, each user's groups fixed.
pub fn static_group_overrides(value: &str) -> Result<HashMap<String, Vec<String>>, String> {
    let mut map = HashMap::new();
    for entry in value.split(';').map(str::trim).filter(|e| !e.is_empty()) {
        let Some((user, groups)) = entry.split_once('=') else {
            return Err(format!(
                "'{entry}' is not user=group,group (hadoop.user.group.static.mapping.overrides)"
            ));
        };
        let groups = groups
            .split(',')
            .map(str::trim)
            .filter(|g| !g.is_empty())
            .map(str::to_string)
            .collect();
        map.insert(user.trim().to_string(), groups);
    }
    Ok(map)
}

/// Users whose groups the cache keeps at most; past it, it starts afresh
/// (user names come from clients, so the cache must not grow without end).
const GROUP_CACHE_MAX_USERS: usize = 10_000;

impl GroupCache {
    pub fn new(ttl: Duration) -> GroupCache {
        GroupCache {
            ttl,
            entries: Mutex::new(HashMap::new()),
            overrides: HashMap::new(),
        }
    }

    /// The cache with static overrides ([`static_group_overrides`]).
    pub fn with_overrides(mut self, overrides: HashMap<String, Vec<String>>) -> GroupCache {
        self.overrides = overrides;
        self
    }

    /// The groups of `user`: its static override, else from the cache while
    /// fresh, else looked up.
    pub async fn groups(&self, user: &str) -> Vec<String> {
        if let Some(groups) = self.overrides.get(user) {
            return groups.clone();
        }
        let now = Instant::now();
        if let Ok(entries) = self.entries.lock() {
            if let Some((at, groups)) = entries.get(user) {
                if now.duration_since(*at) < self.ttl {
                    return groups.clone();
                }
            }
        }
        let groups = groups_for_user(user).await;
        if let Ok(mut entries) = self.entries.lock() {
            if entries.len() >= GROUP_CACHE_MAX_USERS {
                entries.clear();
            }
            entries.insert(user.to_string(), (now, groups.clone()));
        }
        groups
    }

    /// Forgets every user's groups.
    pub fn clear(&self) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.clear();
        }
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

    #[test]
    fn admin_acl_adds_the_daemon_user() {
        let acl = admin_acl(Some("alice"), Some("yarn"));
        assert!(acl.allows("alice", &[]));
        assert!(acl.allows("yarn", &[]));
        assert!(!acl.allows("mallory", &[]));
        assert!(admin_acl(None, Some("yarn")).allows("anyone", &[]));
        let nobody = admin_acl(Some(" "), None);
        assert!(!nobody.allows("yarn", &[]));
    }

    #[tokio::test]
    async fn static_overrides_fix_a_users_groups() {
        let map = static_group_overrides("dr.who=;root=ops, admins ; bob=").expect("parses");
        let cache = GroupCache::new(Duration::from_secs(300)).with_overrides(map);
        assert_eq!(cache.groups("root").await, vec!["ops", "admins"]);
        assert!(cache.groups("dr.who").await.is_empty());
        assert!(cache.groups("bob").await.is_empty());
        assert!(static_group_overrides("nobody-equals").is_err());
        assert!(static_group_overrides("").expect("empty").is_empty());
    }

    #[tokio::test]
    async fn group_cache_answers_as_the_lookup_does() {
        let cache = GroupCache::new(Duration::from_secs(300));
        let first = cache.groups("root").await;
        assert_eq!(first, groups_for_user("root").await);
        assert_eq!(cache.groups("root").await, first);
        cache.clear();
        assert_eq!(cache.groups("root").await, first);
    }

    #[tokio::test]
    async fn root_has_groups_and_ghosts_none() {
        let root = groups_for_user("root").await;
        assert!(root.contains(&"root".to_string()), "{root:?}");
        assert!(groups_for_user("no-such-user-spindle").await.is_empty());
        assert!(groups_for_user("-x").await.is_empty());
    }
}
