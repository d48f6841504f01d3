//! What every protocol handler shares.

use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, RwLock};

use spindle_common::resource::Resource;
use spindle_common::security::proxy_users::ProxyUsers;
use spindle_scheduler::SchedulerKind;

use crate::acl::{Acl, GroupCache};
use crate::model::access::Caller;
use crate::model::tracking::WebAddresses;
use crate::runtime::core::CoreHandle;
use crate::topology::Topology;

/// The handlers' context: the way to the state, and what they need to
/// convert requests and answers without asking it.
pub struct RmContext {
    /// The way to the current activation's state (standby: none).
    pub core: CoreHandle,
    /// `yarn.resourcemanager.ha.id` with HA.
    pub rm_id: Option<String>,
    /// The admin ACL while no state holds it (standby): read at start-up,
    /// then the one in force when the RM last stepped down.
    pub standby_admin_acl: RwLock<Acl>,
    /// Where refreshes re-read configuration from.
    pub conf_dir: Option<PathBuf>,
    /// The current activation's cluster timestamp (in ids and the NM's
    /// `rm_identifier`); see [`RmContext::cluster_ts`].
    pub cluster_ts: AtomicI64,
    pub rm_version: String,
    pub min_allocation: Resource,
    pub max_allocation: Resource,
    /// Which of Hadoop's schedulers `yarn.resourcemanager.scheduler.class`
    /// chose; `refreshQueues` re-reads that scheduler's queue file.
    pub scheduler_kind: SchedulerKind,
    /// Rack resolution for registering NodeManagers.
    pub topology: Topology,
    /// `yarn.acl.enable`, read at start-up (the state decides with it; the
    /// handlers only need to know whether callers' groups matter).
    pub acl_enabled: bool,
    /// Users' groups, for ACLs.
    pub groups: GroupCache,
    /// The user the RM runs as, always an administrator (see
    /// [`crate::acl::admin_acl`]).
    pub daemon_user: Option<String>,
    /// The most a reply listing applications may carry, encoded (from
    /// `ipc.maximum.response.length`; `None`: no bound).
    pub max_reply_bytes: Option<usize>,
    /// The RM's web app and web proxy addresses, for the tracking URLs
    /// reports carry.
    pub web: WebAddresses,
    /// Who may act for whom (`hadoop.proxyuser.*`), replaced by
    /// `refreshSuperUserGroupsConfiguration`.
    pub proxy_users: RwLock<Arc<ProxyUsers>>,
    /// `hadoop.security.auth_to_local`: principals' short names.
    pub names: Arc<spindle_common::security::auth_to_local::AuthToLocal>,
    /// Whether Kerberos is on (`hadoop.security.authentication=kerberos`):
    /// delegation tokens are then issued only to Kerberos logins.
    pub kerberos: bool,
    /// Service-level authorization's ACLs (`hadoop.security.authorization`
    /// on; `None` off), replaced by `refreshServiceAcls`.
    pub service_policy: RwLock<Option<Arc<spindle_common::security::service_acl::ServicePolicy>>>,
}

impl RmContext {
    /// The service-level ACLs in force, if authorization is on.
    pub fn service_policy(
        &self,
    ) -> Option<Arc<spindle_common::security::service_acl::ServicePolicy>> {
        self.service_policy
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The cluster timestamp of the RM's current (or last) activation.
    pub fn cluster_ts(&self) -> i64 {
        self.cluster_ts.load(Ordering::Relaxed)
    }

    /// The proxy-user rules in force.
    pub fn proxy_users(&self) -> Arc<ProxyUsers> {
        self.proxy_users
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Puts `rules` in force.
    pub fn set_proxy_users(&self, rules: ProxyUsers) {
        *self.proxy_users.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(rules);
    }

    /// The admin ACL for a standby's checks.
    pub fn standby_admin_acl(&self) -> Acl {
        self.standby_admin_acl
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The caller of a client-protocol method, with its groups when ACLs
    /// are checked (looking them up starts a process; without ACLs nothing
    /// needs them).
    pub async fn caller(&self, user: &str) -> Caller {
        let groups = if self.acl_enabled {
            self.groups.groups(user).await
        } else {
            Vec::new()
        };
        Caller::new(user, groups)
    }
}
