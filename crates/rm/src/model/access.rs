//! Who may do what to an application: Hadoop's access rules, decided here and
//! nowhere else.
//!
//! With `yarn.acl.enable` (off by default, as in Hadoop) a caller may perform an
//! operation that needs VIEW_APP or MODIFY_APP on an application when any of
//! these holds (`ClientRMService.checkAccess`: `ApplicationACLsManager.checkAccess`
//! or `QueueACLsManager.checkAccess` with ADMINISTER_QUEUE):
//!
//! - it is an administrator: in `yarn.admin.acl`, which always holds the RM's
//!   own user (`AdminACLsManager`);
//! - it owns the application;
//! - the application's own ACL for that access type lets it in (the
//!   `application_ACLs` of its AM launch context; an access type the
//!   submission left out lets nobody in, Hadoop's `DEFAULT_YARN_APP_ACL`);
//! - it administers the application's queue: the `acl_administer_queue` of the
//!   leaf or of a queue above it lets it in (unset: everyone at the root, nobody
//!   below, as both Hadoop schedulers default; FIFO's one queue lets everyone
//!   administer it). An application whose queue is gone is open to everyone
//!   under the capacity and FIFO schedulers and to nobody (through this rule)
//!   under the fair scheduler, as their `checkAccess` answer.
//!
//! Submitting needs the queue's submit ACL (or its administer ACL), checked
//! with the same caller. Without `yarn.acl.enable` everything is allowed.
//!
//! What each client method needs, and what a caller without it gets (as
//! Hadoop's `ClientRMService`):
//!
//! | method | access | without it |
//! |---|---|---|
//! | `forceKillApplication`, `updateApplicationPriority`, `signalToContainer`, `failApplicationAttempt`, `moveApplicationAcrossQueues`, `updateApplicationTimeouts` | MODIFY_APP | YarnException wrapping `java.security.AccessControlException: User U cannot perform operation MODIFY_APP on APP` |
//! | `getApplicationReport`, `getApplications` | VIEW_APP | the report with host, RPC port, tracking URLs, diagnostics, attempt, progress, usage and tokens hidden (`createAndGetApplicationReport(user, false)`); `getApplications` with scope VIEWABLE leaves such applications out |
//! | `getApplicationAttempts`, `getContainers`, `getContainerReport` | VIEW_APP | YarnException `User U does not have privilege to see this application APP` |
//! | `getApplicationAttemptReport` | VIEW_APP | YarnException `User U does not have privilege to see this attempt ATTEMPT` |
//! | `getQueueInfo` with applications | VIEW_APP | the application is left out |
//! | `moveApplicationAcrossQueues` | submit (or administer) on the target queue | YarnException wrapping `java.security.AccessControlException: User U cannot submit applications to target queue or the target queue doesn't exist: Q while moving APP` (a missing target too) |
//!
//! The administration protocol checks `yarn.admin.acl` alone, whether or not
//! `yarn.acl.enable` is set, as Hadoop's `AdminService` does.

use crate::acl::Acl;
use crate::model::apps::App;
use crate::model::launch::AppAccess;
use crate::queue_files::QueueFile;

/// Who asks: the user the connection authenticated, and its groups (looked
/// up outside the state; empty when ACLs are off, as nothing needs them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Caller {
    pub user: String,
    pub groups: Vec<String>,
}

impl Caller {
    pub fn new(user: impl Into<String>, groups: Vec<String>) -> Caller {
        Caller {
            user: user.into(),
            groups,
        }
    }

    /// A caller whose groups do not matter (or are not known).
    pub fn user(user: impl Into<String>) -> Caller {
        Caller::new(user, Vec::new())
    }
}

/// The rules in force: whether ACLs are checked at all (`yarn.acl.enable`,
/// read at start-up) and who the administrators are (`yarn.admin.acl`, with
/// the RM's own user; replaced by `refreshAdminAcls`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessControl {
    enabled: bool,
    admins: Acl,
}

impl AccessControl {
    pub fn new(enabled: bool, admins: Acl) -> AccessControl {
        AccessControl { enabled, admins }
    }

    /// `yarn.acl.enable`.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// `yarn.admin.acl` as in force.
    pub fn admins(&self) -> &Acl {
        &self.admins
    }

    pub fn set_admins(&mut self, admins: Acl) {
        self.admins = admins;
    }

    /// Whether `caller` is an administrator (`yarn.admin.acl`).
    pub fn is_admin(&self, caller: &Caller) -> bool {
        self.admins.allows(&caller.user, &caller.groups)
    }

    /// Whether `caller` may perform an operation needing `access` on `app`,
    /// whose queue configuration is `queues`; see the module documentation.
    pub fn may_access(
        &self,
        caller: &Caller,
        access: AppAccess,
        app: &App,
        queues: &QueueFile,
    ) -> bool {
        self.may_access_with(caller, access, app, |queue| {
            queues.may_administer_app(queue, &caller.user, &caller.groups)
        })
    }

    /// [`AccessControl::may_access`] with the queue-administrator rule
    /// answered by `administers` (given the application's queue), asked
    /// last and only when the other rules do not decide: callers checking
    /// many applications remember its answer per queue.
    pub fn may_access_with(
        &self,
        caller: &Caller,
        access: AppAccess,
        app: &App,
        administers: impl FnOnce(&str) -> bool,
    ) -> bool {
        if !self.enabled {
            return true;
        }
        self.is_admin(caller)
            || (!caller.user.is_empty() && caller.user == app.user)
            || app
                .acls
                .get(&access)
                .is_some_and(|acl| acl.allows(&caller.user, &caller.groups))
            || administers(&app.queue)
    }

    /// Whether `caller` may submit to the leaf at `path`.
    pub fn may_submit(&self, caller: &Caller, path: &str, queues: &QueueFile) -> bool {
        !self.enabled || queues.may_submit(path, &caller.user, &caller.groups)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use spindle_common::ids::ApplicationId;
    use spindle_common::resource::Resource;
    use spindle_common::states::{AppState, FinalStatus};

    use super::*;
    use crate::state::test_support::capacity_queues;

    fn app(user: &str, queue: &str, acls: &[(AppAccess, &str)]) -> App {
        App {
            id: ApplicationId::new(1, 1),
            user: user.into(),
            name: "job".into(),
            queue: queue.into(),
            app_type: "YARN".into(),
            tags: BTreeSet::new(),
            priority: 0,
            am_resource: Resource::new(1024, 1),
            max_attempts: 1,
            unmanaged_am: false,
            keep_containers: false,
            acls: acls.iter().map(|(a, s)| (*a, Acl::parse(s))).collect(),
            state: AppState::Accepted,
            final_status: FinalStatus::Undefined,
            diagnostics: String::new(),
            submit_ms: 0,
            start_ms: 0,
            launch_ms: 0,
            finish_ms: 0,
            progress: 0.0,
            am_host: "N/A".into(),
            am_rpc_port: -1,
            tracking_url: String::new(),
            lifetime: None,
        }
    }

    /// root and root.b closed to all, root.a administered by `dave` and the
    /// `ops` group.
    fn locked_queues() -> QueueFile {
        capacity_queues(&[
            ("root.queues", "a,b"),
            ("root.a.capacity", "50"),
            ("root.b.capacity", "50"),
            ("root.acl_submit_applications", " "),
            ("root.acl_administer_queue", " "),
            ("root.a.acl_administer_queue", "dave ops"),
        ])
    }

    fn rules() -> AccessControl {
        AccessControl::new(true, Acl::parse("alice admins"))
    }

    fn may(caller: &Caller, access: AppAccess, app: &App) -> bool {
        rules().may_access(caller, access, app, &locked_queues())
    }

    #[test]
    fn owner_and_administrators_may_do_anything() {
        let a = app("bob", "a", &[]);
        for access in [AppAccess::View, AppAccess::Modify] {
            assert!(may(&Caller::user("bob"), access, &a));
            assert!(may(&Caller::user("alice"), access, &a));
            assert!(may(&Caller::new("zed", vec!["admins".into()]), access, &a));
            assert!(!may(&Caller::user("mallory"), access, &a));
        }
    }

    #[test]
    fn the_application_acls_grant_their_own_access_type_only() {
        let a = app(
            "bob",
            "b",
            &[(AppAccess::View, "victor"), (AppAccess::Modify, " editors")],
        );
        assert!(may(&Caller::user("victor"), AppAccess::View, &a));
        assert!(!may(&Caller::user("victor"), AppAccess::Modify, &a));
        let editor = Caller::new("erin", vec!["editors".into()]);
        assert!(may(&editor, AppAccess::Modify, &a));
        assert!(!may(&editor, AppAccess::View, &a));
        // An access type the submission left out lets nobody in.
        let bare = app("bob", "b", &[]);
        assert!(!may(&Caller::user("victor"), AppAccess::View, &bare));
        // "*" lets everyone in.
        let open = app("bob", "b", &[(AppAccess::View, "*")]);
        assert!(may(&Caller::user("anyone"), AppAccess::View, &open));
    }

    #[test]
    fn queue_administrators_may_view_and_modify_their_queues_applications() {
        let in_a = app("bob", "a", &[]);
        let in_b = app("bob", "b", &[]);
        let dave = Caller::user("dave");
        let ops = Caller::new("olga", vec!["ops".into()]);
        for access in [AppAccess::View, AppAccess::Modify] {
            assert!(may(&dave, access, &in_a));
            assert!(may(&ops, access, &in_a));
            assert!(!may(&dave, access, &in_b));
        }
    }

    #[test]
    fn unset_queue_acls_make_everyone_an_administrator_of_the_root() {
        // Hadoop's default: the root's ACLs are "*" unless set, and they are
        // inherited, so every user administers every queue.
        let open = capacity_queues(&[("root.queues", "a"), ("root.a.capacity", "100")]);
        let a = app("bob", "a", &[]);
        assert!(rules().may_access(&Caller::user("mallory"), AppAccess::Modify, &a, &open));
    }

    #[test]
    fn everything_is_allowed_without_yarn_acl_enable() {
        let off = AccessControl::new(false, Acl::parse(" "));
        let a = app("bob", "b", &[]);
        assert!(off.may_access(
            &Caller::user("mallory"),
            AppAccess::Modify,
            &a,
            &locked_queues()
        ));
        assert!(off.may_submit(&Caller::user("mallory"), "root.b", &locked_queues()));
        assert!(!rules().may_submit(&Caller::user("mallory"), "root.b", &locked_queues()));
    }

    #[test]
    fn an_empty_user_owns_nothing() {
        let a = app("", "b", &[]);
        assert!(!may(&Caller::user(""), AppAccess::Modify, &a));
    }
}
