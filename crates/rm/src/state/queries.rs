//! Read-only questions about the state, answered with domain reports: what
//! the client protocol's reports, the admin protocol's checks and any other
//! reader of the RM ask. None of them changes anything.

use std::collections::{BTreeMap, BTreeSet};

use spindle_common::ids::{ApplicationAttemptId, ApplicationId, ContainerId, NodeId};
use spindle_common::resource::Resource;
use spindle_common::security::Token;
use spindle_scheduler::QueueReport;

use super::RmState;
use crate::acl::Acl;
use crate::cluster::nodes::NodeState;
use crate::model::access::Caller;
use crate::model::amrm::AllocateReply;
use crate::model::apps::{App, AppFilter, AppScope, AppState};
use crate::model::attempts::{Attempt, AttemptState};
use crate::model::keys::KeyRing;
use crate::model::launch::AppAccess;
use crate::model::refusal::Refusal;
use crate::model::reports::{
    AmContainer, AmTracking, AppReport, AppView, AttemptListing, AttemptReport, AttemptView,
    ClusterMetrics, ClusterUsage, ContainerReport, NodeReport, ProxyTarget, QueueInfo,
    QueueStatistics, QueueUser,
};

/// What one query that reports many applications works out once: whether
/// the caller administers each queue, and the cluster's capability (a sum
/// over every node).
struct ViewCache {
    administers: std::collections::BTreeMap<String, bool>,
    capability: Option<Resource>,
}

impl ViewCache {
    fn new() -> ViewCache {
        ViewCache {
            administers: std::collections::BTreeMap::new(),
            capability: None,
        }
    }
}

impl RmState {
    /// The application's report as `caller` sees it: in full with VIEW_APP,
    /// else with what Hadoop hides blanked (see [`AppReport::viewable`]).
    pub fn app_report(&self, id: &ApplicationId, caller: &Caller) -> Result<AppReport, Refusal> {
        let app = self.apps.get(id).ok_or(Refusal::ApplicationNotFound(*id))?;
        Ok(self.report_of(app, caller, &mut ViewCache::new()))
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
        let mut cache = ViewCache::new();
        let reports = selected.map(|a| self.report_of(a, caller, &mut cache));
        match filter.scope {
            AppScope::Viewable => reports.filter(|r| r.viewable).collect(),
            AppScope::All | AppScope::Own => reports.collect(),
        }
    }

    /// Where the web proxy sends a browser for the application, as Hadoop's
    /// `WebAppProxyServlet` reads it from the report the RM gives itself
    /// (no caller check: Hadoop's proxy makes none either); `None` for an
    /// application the RM does not know.
    pub fn proxy_target(&self, id: &ApplicationId) -> Option<ProxyTarget> {
        let app = self.apps.get(id)?;
        Some(ProxyTarget {
            user: app.user.clone(),
            state: app.state,
            priority: app.priority,
            queue: app.queue.clone(),
            unmanaged: app.unmanaged_am,
            am_tracking: self.current_attempt(id).map(|a| AmTracking {
                state: a.state,
                url: a.tracking_url.clone(),
            }),
        })
    }

    /// Every attempt of the application, oldest first; needs VIEW_APP.
    pub fn attempts_of(
        &self,
        app: &ApplicationId,
        caller: &Caller,
    ) -> Result<Vec<AttemptReport>, Refusal> {
        let unmanaged = self.viewable_app(app, caller)?.unmanaged_am;
        let ids = self
            .history
            .get(app)
            .map(|h| h.ids.as_slice())
            .unwrap_or_default();
        Ok(ids
            .iter()
            .filter_map(|a| self.attempts.get(a))
            .map(|a| AttemptReport::of(a, unmanaged))
            .collect())
    }

    /// One attempt's report; needs VIEW_APP on its application.
    pub fn attempt_report(
        &self,
        id: &ApplicationAttemptId,
        caller: &Caller,
    ) -> Result<AttemptReport, Refusal> {
        let unmanaged = match self.viewable_app(&id.app, caller) {
            Err(Refusal::AppViewDenied { user, .. }) => {
                return Err(Refusal::AttemptViewDenied { user, attempt: *id })
            }
            other => other?.unmanaged_am,
        };
        self.attempts
            .get(id)
            .map(|a| AttemptReport::of(a, unmanaged))
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
    pub(super) fn viewable_app(
        &self,
        id: &ApplicationId,
        caller: &Caller,
    ) -> Result<&App, Refusal> {
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

    /// The token master keys: what the store keeps and the scheduler
    /// port's verifier checks AMRMTokens with.
    pub fn keys(&self) -> &KeyRing {
        self.tokens.keys()
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

    /// What an application's current `attempt` holds, as its reports count
    /// it: the containers the scheduler still has of it and their sum;
    /// nothing once the attempt ended (or without one).
    pub(super) fn attempt_usage(
        &self,
        attempt: Option<&Attempt<AllocateReply>>,
    ) -> (i32, Resource) {
        let (mut containers, mut used) = (0, Resource::default());
        if let Some(a) = attempt.filter(|a| !a.state.is_final()) {
            for id in a.live.keys() {
                if let Some(c) = self.cluster.scheduler().container(id) {
                    containers += 1;
                    used += c.resource;
                }
            }
        }
        (containers, used)
    }

    /// An application's progress as its reports give it (Hadoop's
    /// `RMAppImpl.getProgress`): the current attempt's while the application
    /// runs, the last one recorded once it ended, and 0 without an attempt (an
    /// application rejected at submission), however it ended.
    pub(super) fn report_progress(app: &App, attempt: Option<&Attempt<AllocateReply>>) -> f32 {
        match attempt {
            Some(a) if !app.state.is_final() => a.progress,
            Some(_) => app.progress,
            None => 0.0,
        }
    }

    /// Seconds left of the application's lifetime, as Hadoop's
    /// `RMAppImpl.createAndGetApplicationReport` counts them: -1 without a
    /// lifetime, 0 once the application ended.
    pub(super) fn lifetime_remaining_s(&self, app: &App) -> i64 {
        match app.lifetime {
            None => -1,
            Some(_) if app.state.is_final() => 0,
            Some(l) => (l.expiry_wall_ms.saturating_sub(self.last_wall_ms) / 1000) as i64,
        }
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
                *cache
                    .administers
                    .entry(queue.to_string())
                    .or_insert_with(|| {
                        self.queues
                            .may_administer_app(queue, &caller.user, &caller.groups)
                    })
            });
        let cluster_capability = *cache
            .capability
            .get_or_insert_with(|| self.cluster.nodes().cluster_capability());
        let lifetime_remaining_s = self.lifetime_remaining_s(app);
        if !viewable {
            let mut hidden = app.clone();
            hidden.am_host = "N/A".into();
            hidden.am_rpc_port = -1;
            hidden.tracking_url = "N/A".into();
            hidden.diagnostics = "N/A".into();
            return AppReport {
                app: hidden,
                current_attempt: Some(ApplicationAttemptId::new(app.id, -1)),
                lifetime_remaining_s,
                progress: 0.0,
                used_containers: -1,
                used: Resource::new(-1, -1),
                cluster_capability,
                amrm_token: None,
                viewable: false,
                am_tracking: None,
                log_aggregation: None,
            };
        }
        let attempt = self.current_attempt(&app.id);
        let (used_containers, used) = self.attempt_usage(attempt);
        let progress = Self::report_progress(app, attempt);
        let owner = !caller.user.is_empty() && caller.user == app.user;
        let amrm_token = attempt
            .filter(|a| app.unmanaged_am && owner && a.state == AttemptState::Launched)
            .map(|a| self.tokens.amrm(a.id));
        let log_aggregation = attempt.map(|_| self.log_aggregation_status(&app.id));
        let mut app = app.clone();
        app.diagnostics = crate::model::reports::shown_diagnostics(&app, attempt);
        AppReport {
            app,
            current_attempt: attempt.map(|a| a.id),
            lifetime_remaining_s,
            progress,
            used_containers,
            used,
            cluster_capability,
            amrm_token,
            viewable: true,
            am_tracking: attempt.map(|a| AmTracking {
                state: a.state,
                url: a.tracking_url.clone(),
            }),
            log_aggregation,
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
        // Leaves resolved through the scheduler, so applications in queues
        // placement created on demand count in their parents too.
        let below = format!("{}.", q.path);
        let in_queue = |a: &&App| match self.leaf_of(&a.queue) {
            Some(leaf) if q.leaf => leaf == q.path,
            Some(leaf) => leaf.starts_with(&below),
            None => q.leaf && self.queues.same_leaf(&a.queue, &q.path),
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
        let mut cache = ViewCache::new();
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

/// The questions the web's REST resources ask (Hadoop's `RMWebServices`).
impl RmState {
    /// [`RmState::list_apps`] with where each application's AM container runs.
    pub fn app_views(&self, filter: &AppFilter, caller: &Caller) -> Vec<AppView> {
        self.list_apps(filter, caller)
            .into_iter()
            .map(|report| self.view_of(report))
            .collect()
    }

    /// [`RmState::app_report`] with where its AM container runs.
    pub fn app_view(&self, id: &ApplicationId, caller: &Caller) -> Result<AppView, Refusal> {
        self.app_report(id, caller).map(|r| self.view_of(r))
    }

    fn view_of(&self, report: AppReport) -> AppView {
        let am = if report.viewable {
            self.current_attempt(&report.app.id)
                .and_then(|a| self.am_container_of(a.am_container, a.am_node.as_ref()))
        } else {
            None
        };
        AppView { report, am }
    }

    fn am_container_of(
        &self,
        id: Option<ContainerId>,
        node: Option<&NodeId>,
    ) -> Option<AmContainer> {
        let (id, node) = (id?, node?.clone());
        let node_http_address = self.cluster.nodes().get(&node).map(|n| n.http_address());
        Some(AmContainer {
            id,
            node,
            node_http_address,
        })
    }

    /// Every attempt of the application, oldest first, whoever asks; whether
    /// `caller` may view the application says how much the web shows.
    pub fn attempt_listing(
        &self,
        app: &ApplicationId,
        caller: &Caller,
    ) -> Result<AttemptListing, Refusal> {
        let a = self
            .apps
            .get(app)
            .ok_or(Refusal::ApplicationNotFound(*app))?;
        let viewable = self
            .access
            .may_access(caller, AppAccess::View, a, &self.queues);
        let ids = self
            .history
            .get(app)
            .map(|h| h.ids.as_slice())
            .unwrap_or_default();
        let attempts = ids
            .iter()
            .filter_map(|id| self.attempts.get(id))
            .map(|at| AttemptView {
                report: AttemptReport::of(at, a.unmanaged_am),
                am: self.am_container_of(at.am_container, at.am_node.as_ref()),
            })
            .collect();
        Ok(AttemptListing {
            viewable,
            user: a.user.clone(),
            attempts,
        })
    }

    /// Application counts, the scheduler's totals and node counts.
    pub fn cluster_usage(&self) -> ClusterUsage {
        let mut u = ClusterUsage::default();
        for a in self.apps.all() {
            u.apps_submitted += 1;
            match a.state {
                AppState::New | AppState::NewSaving | AppState::Submitted | AppState::Accepted => {
                    u.apps_pending += 1
                }
                AppState::Running => u.apps_running += 1,
                AppState::Finished => u.apps_completed += 1,
                AppState::Failed => u.apps_failed += 1,
                AppState::Killed => u.apps_killed += 1,
            }
        }
        let c = self.cluster.scheduler().cluster();
        u.capability = c.capability;
        u.used = c.used;
        u.containers = c.containers as i64;
        u.nodes = self.cluster_metrics();
        u
    }

    /// One node, active or not.
    pub fn node_report(&self, id: &NodeId) -> Option<NodeReport> {
        self.cluster.nodes().get(id).map(NodeReport::of)
    }

    /// Of `ids`, the applications this RM knows that have not ended (not
    /// FINISHED, FAILED or KILLED). The log retention keeps these
    /// applications' aggregated log directories (deleting only their old
    /// node files) and deletes the others', as Hadoop's
    /// `AggregatedLogDeletionService` does with the application reports.
    pub fn unfinished_apps(&self, ids: &[ApplicationId]) -> BTreeSet<ApplicationId> {
        ids.iter()
            .filter(|id| self.apps.get(id).is_some_and(|a| !a.state.is_final()))
            .copied()
            .collect()
    }

    /// The state and type of every application (for application statistics).
    pub fn app_states_and_types(&self) -> Vec<(AppState, String)> {
        self.apps
            .all()
            .map(|a| (a.state, a.app_type.clone()))
            .collect()
    }

    /// Per leaf queue (by path), the users with unfinished applications there.
    pub fn queue_users(&self) -> BTreeMap<String, Vec<QueueUser>> {
        let mut by_leaf: BTreeMap<String, BTreeMap<String, QueueUser>> = BTreeMap::new();
        for a in self.apps.all().filter(|a| !a.state.is_final()) {
            let Some(leaf) = self.leaf_of(&a.queue) else {
                continue;
            };
            let u = by_leaf
                .entry(leaf.to_string())
                .or_default()
                .entry(a.user.clone())
                .or_insert_with(|| QueueUser {
                    user: a.user.clone(),
                    ..QueueUser::default()
                });
            if a.state == AppState::Running {
                u.active_apps += 1;
            } else {
                u.pending_apps += 1;
            }
            if let Some(at) = self
                .current_attempt(&a.id)
                .filter(|at| !at.state.is_final())
            {
                for id in at.live.keys() {
                    if let Some(c) = self.cluster.scheduler().container(id) {
                        u.used += c.resource;
                        if at.am_container == Some(*id) {
                            u.am_used += c.resource;
                        }
                    }
                }
            }
        }
        by_leaf
            .into_iter()
            .map(|(leaf, users)| (leaf, users.into_values().collect()))
            .collect()
    }
}
