//! Read-only questions about the state, answered with domain reports: what
//! the client protocol's reports, the admin protocol's checks and any other
//! reader of the RM ask. None of them changes anything.

use std::collections::BTreeSet;

use spindle_common::ids::{ApplicationAttemptId, ApplicationId, ContainerId, NodeId};
use spindle_common::resource::Resource;
use spindle_common::security::Token;
use spindle_scheduler::QueueReport;

use super::RmState;
use crate::access::Caller;
use crate::acl::Acl;
use crate::apps::{App, AppFilter, AppScope, AppState};
use crate::attempts::AttemptState;
use crate::cluster::nodes::NodeState;
use crate::launch::AppAccess;
use crate::refusal::Refusal;
use crate::reports::{
    AppReport, AttemptReport, ClusterMetrics, ContainerReport, NodeReport, QueueInfo,
    QueueStatistics,
};

/// Whether the caller administers each queue, remembered while one query
/// checks many applications.
type ViewCache = std::collections::BTreeMap<String, bool>;

impl RmState {
    /// The application's report as `caller` sees it: in full with VIEW_APP,
    /// else with what Hadoop hides blanked (see [`AppReport::viewable`]).
    pub fn app_report(&self, id: &ApplicationId, caller: &Caller) -> Result<AppReport, Refusal> {
        let app = self.apps.get(id).ok_or(Refusal::ApplicationNotFound(*id))?;
        Ok(self.report_of(app, caller, &mut ViewCache::default()))
    }

    /// The applications `filter` selects, in id order, as `caller` sees
    /// them; with scope VIEWABLE only those it may view, with OWN only its own.
    pub fn list_apps(&self, filter: &AppFilter, caller: &Caller) -> Vec<AppReport> {
        let selected = self
            .apps
            .list(filter)
            .into_iter()
            .filter(|a| match filter.scope {
                AppScope::All | AppScope::Viewable => true,
                AppScope::Own => a.user == caller.user,
            });
        let mut cache = ViewCache::default();
        let reports = selected.map(|a| self.report_of(a, caller, &mut cache));
        match filter.scope {
            AppScope::Viewable => reports.filter(|r| r.viewable).collect(),
            AppScope::All | AppScope::Own => reports.collect(),
        }
    }

    /// Every attempt of the application, oldest first; needs VIEW_APP.
    pub fn attempts_of(
        &self,
        app: &ApplicationId,
        caller: &Caller,
    ) -> Result<Vec<AttemptReport>, Refusal> {
        self.viewable_app(app, caller)?;
        let ids = self
            .history
            .get(app)
            .map(|h| h.ids.as_slice())
            .unwrap_or_default();
        Ok(ids
            .iter()
            .filter_map(|a| self.attempts.get(a))
            .map(AttemptReport::of)
            .collect())
    }

    /// One attempt's report; needs VIEW_APP on its application.
    pub fn attempt_report(
        &self,
        id: &ApplicationAttemptId,
        caller: &Caller,
    ) -> Result<AttemptReport, Refusal> {
        match self.viewable_app(&id.app, caller) {
            Err(Refusal::AppViewDenied { user, .. }) => {
                return Err(Refusal::AttemptViewDenied { user, attempt: *id })
            }
            other => other?,
        };
        self.attempts
            .get(id)
            .map(AttemptReport::of)
            .ok_or(Refusal::AttemptNotFound(*id))
    }

    /// The containers the attempt holds; needs VIEW_APP.
    pub fn containers_of(
        &self,
        attempt: &ApplicationAttemptId,
        caller: &Caller,
    ) -> Result<Vec<ContainerReport>, Refusal> {
        self.viewable_app(&attempt.app, caller)?;
        let a = self
            .attempts
            .get(attempt)
            .ok_or(Refusal::AttemptNotFound(*attempt))?;
        Ok(a.live
            .keys()
            .filter_map(|id| self.live_container_report(id).ok())
            .collect())
    }

    /// A container's report while it is allocated; needs VIEW_APP.
    pub fn container_report(
        &self,
        id: &ContainerId,
        caller: &Caller,
    ) -> Result<ContainerReport, Refusal> {
        self.viewable_app(&id.attempt.app, caller)?;
        if !self.attempts.contains_key(&id.attempt) {
            return Err(Refusal::AttemptNotFound(id.attempt));
        }
        self.live_container_report(id)
    }

    /// The application, when it exists and `caller` may view it (the checks
    /// and their order of Hadoop's `verifyUserAccessForRMApp` + `checkAccess`).
    fn viewable_app(&self, id: &ApplicationId, caller: &Caller) -> Result<&App, Refusal> {
        let app = self.apps.get(id).ok_or(Refusal::ApplicationNotFound(*id))?;
        if self
            .access
            .may_access(caller, AppAccess::View, app, &self.queues)
        {
            Ok(app)
        } else {
            Err(Refusal::AppViewDenied {
                user: caller.user.clone(),
                app: *id,
            })
        }
    }

    fn live_container_report(&self, id: &ContainerId) -> Result<ContainerReport, Refusal> {
        let c = self
            .cluster
            .scheduler()
            .container(id)
            .ok_or(Refusal::ContainerNotFound(*id))?;
        let created_ms = self
            .attempts
            .get(&id.attempt)
            .and_then(|a| a.live.get(id))
            .map_or(0, |live| live.allocated_wall_ms);
        Ok(ContainerReport {
            id: *id,
            node_http_address: self.cluster.nodes().get(&c.node).map(|n| n.http_address()),
            node: c.node,
            resource: c.resource,
            priority: c.priority,
            created_ms,
            user: self
                .apps
                .get(&id.app())
                .map(|a| a.user.clone())
                .unwrap_or_default(),
        })
    }

    /// Node counts by state.
    pub fn cluster_metrics(&self) -> ClusterMetrics {
        let nodes = self.cluster.nodes();
        let n = |state| nodes.count(state) as i32;
        ClusterMetrics {
            node_managers: nodes.active().count() as i32,
            decommissioned: n(NodeState::Decommissioned),
            active: n(NodeState::Running),
            lost: n(NodeState::Lost),
            unhealthy: n(NodeState::Unhealthy),
            rebooted: n(NodeState::Rebooted),
            decommissioning: n(NodeState::Decommissioning),
            shutdown: n(NodeState::Shutdown),
        }
    }

    /// Every node in one of `states`, active or not, in node id order.
    pub fn node_reports(&self, states: &BTreeSet<NodeState>) -> Vec<NodeReport> {
        self.cluster
            .nodes()
            .all()
            .filter(|n| states.contains(&n.state))
            .map(NodeReport::of)
            .collect()
    }

    /// Nodes being decommissioned gracefully.
    pub fn decommissioning_nodes(&self) -> Vec<NodeId> {
        self.cluster
            .nodes()
            .active()
            .filter(|n| n.state == NodeState::Decommissioning)
            .map(|n| n.id.clone())
            .collect()
    }

    /// The queue `name` (a path or a unique short name) as `yarn queue
    /// -status` reads it, with its children (and theirs when `recursive`)
    /// and, when asked, its applications that `caller` may view (as Hadoop,
    /// which leaves the others out).
    /// `None` for an unknown queue.
    pub fn queue_info(
        &self,
        name: &str,
        with_apps: bool,
        with_children: bool,
        recursive: bool,
        caller: &Caller,
    ) -> Option<QueueInfo> {
        let q = self.cluster.scheduler().queue(name)?;
        Some(self.queue_info_of(q, with_apps, with_children, recursive, caller))
    }

    /// The names of every queue.
    pub fn queue_names(&self) -> Vec<String> {
        self.cluster
            .scheduler()
            .queues()
            .into_iter()
            .map(|q| q.name)
            .collect()
    }

    /// Every queue with what `caller` may do there (submit, administer), as
    /// `getQueueUserAcls` reports it; Hadoop's schedulers answer from the
    /// queue ACLs whether or not `yarn.acl.enable` is set.
    pub fn queue_user_acls(&self, caller: &Caller) -> Vec<(String, bool, bool)> {
        self.cluster
            .scheduler()
            .queues()
            .into_iter()
            .map(|q| {
                let (submit, administer) =
                    self.queues.user_acls(&q.path, &caller.user, &caller.groups);
                (q.name, submit, administer)
            })
            .collect()
    }

    /// `yarn.admin.acl` as in force.
    pub fn admin_acl(&self) -> &Acl {
        self.access.admins()
    }

    /// Whether `yarn.acl.enable` is set.
    pub fn acl_enabled(&self) -> bool {
        self.access.enabled()
    }

    /// The AMRMToken of `attempt` under the current key.
    pub fn amrm_token(&self, attempt: ApplicationAttemptId) -> Token {
        self.tokens.amrm(attempt)
    }

    /// The application's report as `caller` sees it, with its current
    /// attempt and usage. The owner of an unmanaged application whose
    /// attempt is LAUNCHED (not registered yet) also gets the attempt's
    /// AMRMToken, which is how Hadoop's UnmanagedAMLauncher and
    /// `YarnClient.getAMRMToken` obtain it; nobody else ever sees the token.
    /// A caller without VIEW_APP gets what Hadoop's
    /// `createAndGetApplicationReport(user, false)` gives: no attempt (its
    /// id numbered -1), host, tracking URLs and diagnostics `N/A`, RPC port
    /// -1, progress 0, no token, and the dummy usage report.
    fn report_of(&self, app: &App, caller: &Caller, cache: &mut ViewCache) -> AppReport {
        let viewable = self
            .access
            .may_access_with(caller, AppAccess::View, app, |queue| {
                *cache.entry(queue.to_string()).or_insert_with(|| {
                    self.queues
                        .may_administer_app(queue, &caller.user, &caller.groups)
                })
            });
        if !viewable {
            let mut hidden = app.clone();
            hidden.am_host = "N/A".into();
            hidden.am_rpc_port = -1;
            hidden.tracking_url = "N/A".into();
            hidden.diagnostics = "N/A".into();
            return AppReport {
                app: hidden,
                current_attempt: Some(ApplicationAttemptId::new(app.id, -1)),
                progress: 0.0,
                used_containers: -1,
                used: Resource::new(-1, -1),
                cluster_capability: self.cluster.nodes().cluster_capability(),
                amrm_token: None,
                viewable: false,
            };
        }
        let attempt = self.current_attempt(&app.id);
        let (mut used_containers, mut used) = (0, Default::default());
        if let Some(a) = attempt.filter(|a| !a.state.is_final()) {
            for id in a.live.keys() {
                if let Some(c) = self.cluster.scheduler().container(id) {
                    used_containers += 1;
                    used += c.resource;
                }
            }
        }
        let progress = match attempt {
            Some(a) if !app.state.is_final() => a.progress,
            _ => app.progress,
        };
        let owner = !caller.user.is_empty() && caller.user == app.user;
        let amrm_token = attempt
            .filter(|a| app.unmanaged_am && owner && a.state == AttemptState::Launched)
            .map(|a| self.tokens.amrm(a.id));
        AppReport {
            app: app.clone(),
            current_attempt: attempt.map(|a| a.id),
            progress,
            used_containers,
            used,
            cluster_capability: self.cluster.nodes().cluster_capability(),
            amrm_token,
            viewable: true,
        }
    }

    fn queue_info_of(
        &self,
        q: QueueReport,
        with_apps: bool,
        with_children: bool,
        recursive: bool,
        caller: &Caller,
    ) -> QueueInfo {
        let in_queue = |a: &&App| {
            q.leaf && self.queues.same_leaf(&a.queue, &q.path)
                || !q.leaf
                    && self
                        .queues
                        .tree
                        .resolve_leaf(&a.queue)
                        .is_some_and(|leaf| leaf.starts_with(&format!("{}.", q.path)))
        };
        let apps: Vec<&App> = self.apps.all().filter(in_queue).collect();
        let count = |pred: &dyn Fn(&App) -> bool| apps.iter().filter(|a| pred(a)).count() as i64;
        let statistics = QueueStatistics {
            submitted: apps.len() as i64,
            running: count(&|a| a.state == AppState::Running),
            pending: count(&|a| {
                matches!(
                    a.state,
                    AppState::New | AppState::NewSaving | AppState::Submitted | AppState::Accepted
                )
            }),
            completed: count(&|a| a.state == AppState::Finished),
            killed: count(&|a| a.state == AppState::Killed),
            failed: count(&|a| a.state == AppState::Failed),
            available: q.maximum.saturating_sub_non_negative(q.used),
        };
        let children = if with_children || recursive {
            q.children
                .iter()
                .filter_map(|path| self.cluster.scheduler().queue(path))
                .map(|child| {
                    self.queue_info_of(child, with_apps && recursive, recursive, recursive, caller)
                })
                .collect()
        } else {
            Vec::new()
        };
        let mut cache = ViewCache::default();
        let apps = if with_apps && q.leaf {
            apps.iter()
                .map(|a| self.report_of(a, caller, &mut cache))
                .filter(|r| r.viewable)
                .collect()
        } else {
            Vec::new()
        };
        QueueInfo {
            queue: q,
            statistics,
            children,
            apps,
            scheduler: self.queues.tree.kind,
        }
    }
}
