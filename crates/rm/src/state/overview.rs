//! Read-only questions the RM's web UI asks that the protocol reports do
//! not answer: the cluster overview's totals, the attempts of one
//! application with where their AM containers ran, and the users of each
//! queue. Plain reports, no HTML (that is `web/ui`).

use std::collections::BTreeMap;

use spindle_common::ids::{ApplicationId, NodeId};
use spindle_common::resource::Resource;

use super::RmState;
use crate::access::Caller;
use crate::apps::AppState;
use crate::refusal::Refusal;
use crate::reports::{AttemptReport, ClusterMetrics};

/// The cluster at a glance, as the UI's overview shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterOverview {
    /// Nodes by state.
    pub nodes: ClusterMetrics,
    /// Capability of RUNNING nodes.
    pub capability: Resource,
    /// What the scheduler has allocated.
    pub used: Resource,
    /// Containers the scheduler has allocated.
    pub containers: i64,
    /// Applications this RM remembers, by state (every state, in Hadoop's order).
    pub apps_by_state: Vec<(AppState, usize)>,
}

/// An attempt with the node its AM container ran on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptOverview {
    pub report: AttemptReport,
    pub am_node: Option<NodeId>,
    /// The AM node's HTTP address, while the RM knows the node.
    pub am_node_http_address: Option<String>,
}

/// A user with unfinished applications in a leaf queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueUser {
    pub user: String,
    /// Unfinished applications of the user in the queue.
    pub apps: usize,
    /// Of those, RUNNING.
    pub running: usize,
}

impl RmState {
    /// The cluster's nodes, resources and applications at a glance.
    pub fn overview_totals(&self) -> ClusterOverview {
        let nodes = self.cluster.nodes();
        // What the scheduler has allocated (Hadoop's allocatedMB and
        // containersAllocated), not what the NodeManagers last reported.
        let allocated = self.cluster.scheduler().cluster();
        let mut counts: BTreeMap<AppState, usize> = BTreeMap::new();
        for app in self.apps.all() {
            *counts.entry(app.state).or_default() += 1;
        }
        ClusterOverview {
            nodes: self.cluster_metrics(),
            capability: nodes.cluster_capability(),
            used: allocated.used,
            containers: allocated.containers as i64,
            apps_by_state: AppState::ALL
                .into_iter()
                .map(|s| (s, counts.get(&s).copied().unwrap_or(0)))
                .collect(),
        }
    }

    /// Every attempt of the application, oldest first, with where its AM
    /// container ran; needs VIEW_APP, as [`RmState::attempts_of`].
    pub fn attempts_with_am_nodes(
        &self,
        app: &ApplicationId,
        caller: &Caller,
    ) -> Result<Vec<AttemptOverview>, Refusal> {
        let reports = self.attempts_of(app, caller)?;
        Ok(reports
            .into_iter()
            .map(|report| {
                let am_node = self
                    .attempts
                    .get(&report.id)
                    .and_then(|a| a.am_node.clone());
                let am_node_http_address = am_node
                    .as_ref()
                    .and_then(|n| self.cluster.nodes().get(n))
                    .map(|n| n.http_address());
                AttemptOverview {
                    report,
                    am_node,
                    am_node_http_address,
                }
            })
            .collect())
    }

    /// Per leaf queue (full path), the users with unfinished applications
    /// there, by user name (queues placement created on demand included).
    /// Applications whose queue names no leaf (any more) are left out.
    pub fn active_queue_users(&self) -> BTreeMap<String, Vec<QueueUser>> {
        let mut by_queue: BTreeMap<String, BTreeMap<String, QueueUser>> = BTreeMap::new();
        // The leaf each queue name resolves to, asked once per name: the
        // scheduler knows queues placement created on demand too.
        let mut leaves: BTreeMap<&str, Option<String>> = BTreeMap::new();
        for app in self.apps.all().filter(|a| !a.state.is_final()) {
            let leaf = leaves.entry(app.queue.as_str()).or_insert_with(|| {
                match self.cluster.scheduler().queue(&app.queue) {
                    Some(q) if q.leaf => Some(q.path),
                    Some(_) => None,
                    None => self.queues.tree.resolve_leaf(&app.queue),
                }
            });
            let Some(leaf) = leaf.clone() else {
                continue;
            };
            let user = by_queue
                .entry(leaf)
                .or_default()
                .entry(app.user.clone())
                .or_insert_with(|| QueueUser {
                    user: app.user.clone(),
                    apps: 0,
                    running: 0,
                });
            user.apps += 1;
            if app.state == AppState::Running {
                user.running += 1;
            }
        }
        by_queue
            .into_iter()
            .map(|(q, users)| (q, users.into_values().collect()))
            .collect()
    }
}
