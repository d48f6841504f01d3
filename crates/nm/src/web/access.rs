//! Who may read a container's logs, as Hadoop's NodeManager decides it
//! (`ContainerLogsUtils.checkAccess` through `ApplicationACLsManager`).
//!
//! The caller is the `user.name` query parameter, else Hadoop's static web
//! user (`hadoop.http.staticuser.user`, `dr.who`), as the ResourceManager's
//! web server decides it; a request naming no user is refused (401) when
//! `hadoop.http.authentication.simple.anonymous.allowed` is false. With
//! `yarn.acl.enable` on, the caller reads an application's logs only when it
//! owns the application, is in `yarn.admin.acl` (with the NodeManager's own
//! user added, as Hadoop's `AdminACLsManager` does), or is in the
//! application's `VIEW_APP` ACL from its launch context; an application
//! without one allows nobody else (Hadoop's `yarn.app.acl.default`, `" "`).
//! ACL lists and groups are [`spindle_common::acl`]'s, shared with the
//! ResourceManager.

use std::time::Duration;

use spindle_common::acl::{admin_acl, Acl, GroupCache};
use spindle_common::conf::keys::HADOOP_SECURITY_GROUPS_CACHE_SECS;
use spindle_common::{ConfError, Configuration};

use crate::containers::{AppReport, VIEW_APP};

/// `yarn.acl.enable`.
pub const ACL_ENABLE_KEY: &str = "yarn.acl.enable";
/// `yarn.admin.acl`.
pub const ADMIN_ACL_KEY: &str = "yarn.admin.acl";
/// `hadoop.http.staticuser.user`.
pub const STATIC_USER_KEY: &str = "hadoop.http.staticuser.user";
/// Hadoop's default static web user.
pub const DEFAULT_STATIC_USER: &str = "dr.who";
/// `hadoop.http.authentication.simple.anonymous.allowed`.
pub const ANONYMOUS_ALLOWED_KEY: &str = "hadoop.http.authentication.simple.anonymous.allowed";

/// The web access settings of the NodeManager.
#[derive(Debug, Clone, PartialEq)]
pub struct WebAccess {
    /// `yarn.acl.enable` (default false).
    pub acl_enabled: bool,
    /// `yarn.admin.acl` as configured (default `*`).
    pub admin_acl: Option<String>,
    /// `hadoop.http.staticuser.user` (default `dr.who`).
    pub static_user: String,
    /// `hadoop.http.authentication.simple.anonymous.allowed` (default true).
    pub anonymous_allowed: bool,
    /// `hadoop.security.groups.cache.secs`.
    pub groups_ttl: Duration,
    /// `hadoop.user.group.static.mapping.overrides`.
    pub group_overrides: std::collections::HashMap<String, Vec<String>>,
}

impl WebAccess {
    pub fn from_conf(conf: &Configuration) -> Result<WebAccess, ConfError> {
        Ok(WebAccess {
            acl_enabled: conf.get_bool(ACL_ENABLE_KEY)?,
            admin_acl: conf.get(ADMIN_ACL_KEY),
            static_user: conf
                .get_trimmed(STATIC_USER_KEY)
                .filter(|u| !u.is_empty())
                .unwrap_or_else(|| DEFAULT_STATIC_USER.to_string()),
            anonymous_allowed: conf
                .get_trimmed(ANONYMOUS_ALLOWED_KEY)
                .is_none_or(|v| !v.eq_ignore_ascii_case("false")),
            groups_ttl: Duration::from_secs(
                conf.get_i64(HADOOP_SECURITY_GROUPS_CACHE_SECS)?.max(0) as u64,
            ),
            group_overrides: spindle_common::acl::static_group_overrides(
                &conf
                    .get(spindle_common::conf::keys::HADOOP_USER_GROUP_STATIC_MAPPING_OVERRIDES)
                    .unwrap_or_default(),
            )
            .map_err(|why| {
                conf.invalid_value(
                    spindle_common::conf::keys::HADOOP_USER_GROUP_STATIC_MAPPING_OVERRIDES,
                    &why,
                )
            })?,
        })
    }
}

/// Why a caller may not read an application's logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denial {
    /// The request names no user and anonymous requests are disallowed.
    Anonymous,
    /// The `user.name` given cannot be a user name.
    BadUser(String),
    /// Hadoop's refusal: `User [<user>] is not authorized to view the logs
    /// for application <app>`.
    NotAuthorized(String),
}

impl Denial {
    pub fn message(&self) -> &str {
        match self {
            Denial::Anonymous => "Authentication required: anonymous requests are disallowed",
            Denial::BadUser(m) | Denial::NotAuthorized(m) => m,
        }
    }
}

/// The log access checks of one NodeManager.
#[derive(Debug)]
pub struct LogAccess {
    settings: WebAccess,
    admin: Acl,
    groups: GroupCache,
}

impl LogAccess {
    /// The checks of a NodeManager running as `daemon_user`.
    pub fn new(settings: &WebAccess, daemon_user: &str) -> LogAccess {
        let daemon = Some(daemon_user).filter(|u| !u.is_empty());
        LogAccess {
            admin: admin_acl(settings.admin_acl.as_deref(), daemon),
            groups: GroupCache::new(settings.groups_ttl)
                .with_overrides(settings.group_overrides.clone()),
            settings: settings.clone(),
        }
    }

    /// The user a request asks as: its `user.name` (absent or blank: the
    /// static web user, unless anonymous requests are disallowed).
    pub fn caller(&self, user_name: Option<&str>) -> Result<String, Denial> {
        match user_name.map(str::trim).filter(|u| !u.is_empty()) {
            Some(user) if user.chars().any(char::is_control) => Err(Denial::BadUser(
                "Invalid user.name: it contains control characters".to_string(),
            )),
            Some(user) => Ok(user.to_string()),
            None if self.settings.anonymous_allowed => Ok(self.settings.static_user.clone()),
            None => Err(Denial::Anonymous),
        }
    }

    /// Whether `user` may view `app`'s logs (`VIEW_APP`).
    pub async fn check_view(&self, user: &str, app: &AppReport) -> Result<(), Denial> {
        if !self.settings.acl_enabled || user == app.user {
            return Ok(());
        }
        let view = Acl::parse(app.acl(VIEW_APP).unwrap_or(" "));
        let groups = if self.admin.allows_everyone() || view.allows_everyone() {
            Vec::new()
        } else {
            self.groups.groups(user).await
        };
        if may_view(&self.admin, &view, user, &groups, &app.user) {
            return Ok(());
        }
        Err(Denial::NotAuthorized(format!(
            "User [{user}] is not authorized to view the logs for application {}",
            app.id
        )))
    }
}

/// The `user.name` of a raw query string, percent-decoded (`+` is a
/// space). A bad escape or bytes that are not UTF-8 are an error, never
/// replaced: the name must be the one the caller sent.
pub fn user_in_query(query: Option<&str>) -> Result<Option<String>, Denial> {
    let Some(query) = query else {
        return Ok(None);
    };
    for pair in query.split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if key == "user.name" {
            return decode(value).map(Some);
        }
    }
    Ok(None)
}

fn decode(text: &str) -> Result<String, Denial> {
    spindle_web::query::decode_component(text)
        .map_err(|_| Denial::BadUser("Invalid user.name: bad percent-encoding or not UTF-8".into()))
}

/// `ApplicationACLsManager.checkAccess` for `VIEW_APP` with ACLs on: an
/// admin, the owner, or a user (or group member) of the application's ACL.
pub fn may_view(admin: &Acl, view: &Acl, user: &str, groups: &[String], owner: &str) -> bool {
    admin.allows(user, groups) || user == owner || view.allows(user, groups)
}

#[cfg(test)]
mod tests {
    use super::*;
    use spindle_common::ApplicationId;

    fn settings(pairs: &[(&str, &str)]) -> WebAccess {
        let mut c = Configuration::with_defaults();
        for (k, v) in pairs {
            c.set(k, *v);
        }
        WebAccess::from_conf(&c).expect("valid")
    }

    fn app(acls: &[(&str, &str)]) -> AppReport {
        AppReport {
            id: ApplicationId::new(1, 2),
            user: "alice".into(),
            finishing: false,
            containers: Vec::new(),
            acls: acls
                .iter()
                .map(|(a, l)| (a.to_string(), l.to_string()))
                .collect(),
        }
    }

    #[test]
    fn defaults_are_hadoop_s() {
        let s = settings(&[]);
        assert!(!s.acl_enabled);
        assert_eq!(s.static_user, "dr.who");
        assert!(s.anonymous_allowed);
        let access = LogAccess::new(&s, "yarn");
        assert_eq!(access.caller(None).as_deref(), Ok("dr.who"));
        assert_eq!(access.caller(Some("  ")).as_deref(), Ok("dr.who"));
        assert_eq!(access.caller(Some("bob")).as_deref(), Ok("bob"));
        assert!(matches!(
            access.caller(Some("bo\nb")),
            Err(Denial::BadUser(_))
        ));
        let closed = LogAccess::new(&settings(&[(ANONYMOUS_ALLOWED_KEY, "false")]), "yarn");
        assert_eq!(closed.caller(None), Err(Denial::Anonymous));
        assert_eq!(closed.caller(Some("bob")).as_deref(), Ok("bob"));
    }

    #[test]
    fn user_name_is_decoded_strictly() {
        let ok: &[(Option<&str>, Option<&str>)] = &[
            (None, None),
            (Some("size=1"), None),
            (Some("size=1&user.name=bob"), Some("bob")),
            (Some("user.name=a%20b+c"), Some("a b c")),
            (Some("user.name="), Some("")),
            (Some("user.name=%C3%A9"), Some("\u{e9}")),
        ];
        for (q, want) in ok {
            assert_eq!(
                user_in_query(*q).expect("decodes").as_deref(),
                *want,
                "{q:?}"
            );
        }
        for q in [
            "user.name=%ff%fe",
            "user.name=%zz",
            "user.name=%4",
            "user.name=%C3%28",
        ] {
            assert!(
                matches!(user_in_query(Some(q)), Err(Denial::BadUser(_))),
                "{q}"
            );
        }
    }

    #[test]
    fn the_view_decision() {
        let admin = Acl::parse("root ops");
        let view = Acl::parse("bob viewers");
        assert!(may_view(&admin, &view, "alice", &[], "alice"));
        assert!(may_view(&admin, &view, "root", &[], "alice"));
        assert!(may_view(&admin, &view, "x", &["ops".into()], "alice"));
        assert!(may_view(&admin, &view, "bob", &[], "alice"));
        assert!(may_view(&admin, &view, "y", &["viewers".into()], "alice"));
        assert!(!may_view(
            &admin,
            &view,
            "mallory",
            &["users".into()],
            "alice"
        ));
        assert!(!may_view(&admin, &Acl::parse(" "), "bob", &[], "alice"));
    }

    #[tokio::test]
    async fn acls_off_let_everyone_read_and_on_only_the_allowed() {
        let off = LogAccess::new(&settings(&[(ADMIN_ACL_KEY, " ")]), "yarn");
        assert_eq!(off.check_view("mallory", &app(&[])).await, Ok(()));

        let on = LogAccess::new(
            &settings(&[(ACL_ENABLE_KEY, "true"), (ADMIN_ACL_KEY, "admin1")]),
            "nm-daemon-user",
        );
        let a = app(&[("VIEW_APP", "viewer1"), ("MODIFY_APP", "modder")]);
        for ok in ["alice", "admin1", "nm-daemon-user", "viewer1"] {
            assert_eq!(on.check_view(ok, &a).await, Ok(()), "{ok}");
        }
        for no in ["modder", "no-such-user-spindle", "dr.who"] {
            assert_eq!(
                on.check_view(no, &a).await,
                Err(Denial::NotAuthorized(format!(
                    "User [{no}] is not authorized to view the logs for application \
                     application_1_0002"
                ))),
                "{no}"
            );
        }
        // Without a VIEW_APP ACL only the owner and admins read.
        assert!(on.check_view("viewer1", &app(&[])).await.is_err());
        let everyone = app(&[("VIEW_APP", "*")]);
        assert_eq!(on.check_view("anyone", &everyone).await, Ok(()));
    }
}
