//! Read-only questions about the state, answered with domain reports: what
//! the client protocol's reports, the admin protocol's checks and any other
//! reader of the RM ask. None of them changes anything.

use std::collections::BTreeSet;

use spindle_common::ids::{ApplicationAttemptId, ApplicationId, ContainerId, NodeId};
use spindle_common::security::Token;
use spindle_scheduler::QueueReport;

use super::RmState;
use crate::acl::Acl;
use crate::apps::{App, AppFilter, AppState};
use crate::attempts::AttemptState;
use crate::cluster::nodes::NodeState;
use crate::refusal::Refusal;
use crate::reports::{
    AppReport, AttemptReport, ClusterMetrics, ContainerReport, NodeReport, QueueInfo,
    QueueStatistics,
};

impl RmState {
    /// The application's report as `caller` sees it (see [`AppReport::amrm_token`]).
    pub fn app_report(&self, id: &ApplicationId, caller: &str) -> Result<AppReport, Refusal> {
        let app = self.apps.get(id).ok_or(Refusal::ApplicationNotFound(*id))?;
        Ok(self.report_of(app, Some(caller)))
    }

    /// The applications `filter` selects, in id order, as `caller` sees them.
    pub fn list_apps(&self, filter: &AppFilter, caller: &str) -> Vec<AppReport> {
        self.apps
            .list(filter)
            .into_iter()
            .map(|a| self.report_of(a, Some(caller)))
            .collect()
    }

    /// Every attempt of the application, oldest first.
    pub fn attempts_of(&self, app: &ApplicationId) -> Result<Vec<AttemptReport>, Refusal> {
        self.apps
            .get(app)
            .ok_or(Refusal::ApplicationNotFound(*app))?;
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

    pub fn attempt_report(&self, id: &ApplicationAttemptId) -> Result<AttemptReport, Refusal> {
        self.attempts
            .get(id)
            .map(AttemptReport::of)
            .ok_or(Refusal::AttemptNotFound(*id))
    }

    /// The containers the attempt holds.
    pub fn containers_of(
        &self,
        attempt: &ApplicationAttemptId,
    ) -> Result<Vec<ContainerReport>, Refusal> {
        let a = self
            .attempts
            .get(attempt)
            .ok_or(Refusal::AttemptNotFound(*attempt))?;
        Ok(a.live
            .keys()
            .filter_map(|id| self.container_report(id).ok())
            .collect())
    }

    /// A container's report while it is allocated.
    pub fn container_report(&self, id: &ContainerId) -> Result<ContainerReport, Refusal> {
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
    /// and its applications when asked; `None` for an unknown queue.
    pub fn queue_info(
        &self,
        name: &str,
        with_apps: bool,
        with_children: bool,
        recursive: bool,
    ) -> Option<QueueInfo> {
        let q = self.cluster.scheduler().queue(name)?;
        Some(self.queue_info_of(q, with_apps, with_children, recursive))
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

    /// `yarn.admin.acl` as in force.
    pub fn admin_acl(&self) -> &Acl {
        &self.admin_acl
    }

    /// The AMRMToken of `attempt` under the current key.
    pub fn amrm_token(&self, attempt: ApplicationAttemptId) -> Token {
        self.tokens.amrm(attempt)
    }

    /// The application's report, with its current attempt and usage. The
    /// owner (`caller`) of an unmanaged application whose attempt is
    /// LAUNCHED (not registered yet) also gets the attempt's AMRMToken,
    /// which is how Hadoop's UnmanagedAMLauncher and
    /// `YarnClient.getAMRMToken` obtain it; nobody else ever sees the token.
    fn report_of(&self, app: &App, caller: Option<&str>) -> AppReport {
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
        let owner = caller.is_some_and(|c| !c.is_empty() && c == app.user);
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
        }
    }

    fn queue_info_of(
        &self,
        q: QueueReport,
        with_apps: bool,
        with_children: bool,
        recursive: bool,
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
                    self.queue_info_of(child, with_apps && recursive, recursive, recursive)
                })
                .collect()
        } else {
            Vec::new()
        };
        let apps = if with_apps && q.leaf {
            apps.iter().map(|a| self.report_of(a, None)).collect()
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
