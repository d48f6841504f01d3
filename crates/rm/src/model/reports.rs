//! What the RM's read-only queries answer: reports in domain terms, for the
//! protocol handlers (which turn them into Hadoop's report messages) and
//! any other reader of the state.

use spindle_common::ids::{ApplicationAttemptId, ContainerId, NodeId};
use spindle_common::resource::Resource;
use spindle_common::security::Token;
use spindle_common::states::AttemptState;
use spindle_scheduler::{QueueReport, SchedulerKind};

use crate::cluster::nodes::{Node, NodeState};
use crate::log_aggregation::LogAggregationStatus;
use crate::model::apps::{App, AppState};
use crate::model::attempts::Attempt;

/// An application as `getApplicationReport` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct AppReport {
    /// The application's record.
    pub app: App,
    pub current_attempt: Option<ApplicationAttemptId>,
    /// Seconds left of the application's lifetime (`app.lifetime`), as
    /// Hadoop reports them: 0 once it has ended (or the lifetime passed),
    /// -1 without a lifetime.
    pub lifetime_remaining_s: i64,
    /// The current attempt's progress while the application runs, else the
    /// application's (1 once finished).
    pub progress: f32,
    /// Containers the current attempt holds, and their resources.
    pub used_containers: i32,
    pub used: Resource,
    /// Capability of RUNNING nodes (for the usage percentage).
    pub cluster_capability: Resource,
    /// The attempt's AMRMToken: only for the owner of an unmanaged
    /// application whose attempt is LAUNCHED (how Hadoop's
    /// UnmanagedAMLauncher obtains it).
    pub amrm_token: Option<Token>,
    /// Whether the caller has VIEW_APP. When not, the state has already
    /// blanked what Hadoop hides (host, RPC port, tracking URL, diagnostics,
    /// attempt, progress; `used_containers` and `used` are -1) and the usage
    /// report is Hadoop's dummy one (every figure -1).
    pub viewable: bool,
    /// The current attempt's state and the URL its AM gave (what the
    /// tracking URLs are made of, see [`crate::model::tracking`]); `None` without
    /// an attempt or when not viewable.
    pub am_tracking: Option<AmTracking>,
    /// The log aggregation status (see [`crate::log_aggregation`]); as
    /// Hadoop, only with an attempt and VIEW_APP (`None` otherwise).
    pub log_aggregation: Option<LogAggregationStatus>,
}

/// What the web proxy and the REST writes need to know about an
/// application, whoever asks (see `RmState::proxy_target`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyTarget {
    /// The owner (the proxy's warning page names it).
    pub user: String,
    pub state: AppState,
    pub priority: i32,
    pub queue: String,
    pub unmanaged: bool,
    /// The current attempt, if any.
    pub am_tracking: Option<AmTracking>,
}

/// An attempt's state and the web address its ApplicationMaster gave: at
/// registration, updated by allocate, and replaced by the final one at
/// unregistration (empty when the AM gave none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AmTracking {
    pub state: AttemptState,
    pub url: String,
}

/// An attempt as `getApplicationAttemptReport` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptReport {
    pub id: ApplicationAttemptId,
    pub state: AttemptState,
    pub host: String,
    pub rpc_port: i32,
    pub tracking_url: String,
    pub original_tracking_url: String,
    pub diagnostics: String,
    pub am_container: Option<ContainerId>,
    /// Wall clock.
    pub start_ms: u64,
    /// Wall clock; 0 while the attempt runs.
    pub finish_ms: u64,
    /// Whether its application's AM is unmanaged (its tracking URL is then
    /// the AM's own, not the proxy's).
    pub unmanaged: bool,
}

impl AttemptReport {
    pub fn of<R>(a: &Attempt<R>, unmanaged: bool) -> AttemptReport {
        AttemptReport {
            unmanaged,
            id: a.id,
            state: a.state,
            host: a.host.clone(),
            rpc_port: a.rpc_port,
            tracking_url: a.tracking_url.clone(),
            original_tracking_url: a.original_tracking_url.clone(),
            diagnostics: a.diagnostics.clone(),
            am_container: a.am_container,
            start_ms: a.start_ms,
            finish_ms: a.finish_ms,
        }
    }

    /// The attempt's state and its AM's URL.
    pub fn am_tracking(&self) -> AmTracking {
        AmTracking {
            state: self.state,
            url: self.tracking_url.clone(),
        }
    }
}

/// An allocated container as `getContainerReport` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerReport {
    pub id: ContainerId,
    pub node: NodeId,
    pub resource: Resource,
    pub priority: i32,
    /// When it was allocated, wall clock.
    pub created_ms: u64,
    /// The node's HTTP address (`host:port`), while the RM knows the node.
    pub node_http_address: Option<String>,
    /// The application's user (whose logs the node's log link shows).
    pub user: String,
}

/// A node as `getClusterNodes` (and an AM's `updated_nodes`) shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeReport {
    pub id: NodeId,
    /// Empty for nodes that left the cluster, as in Hadoop.
    pub http_address: String,
    pub rack: String,
    pub used: Resource,
    pub capability: Resource,
    pub num_containers: i32,
    pub state: NodeState,
    pub health_report: String,
    /// As the NodeManager reported it.
    pub last_health_report_ms: i64,
    /// The NodeManager's version, as it registered.
    pub version: String,
}

impl NodeReport {
    pub fn of(n: &Node) -> NodeReport {
        NodeReport {
            id: n.id.clone(),
            http_address: if n.state.is_active() {
                n.http_address()
            } else {
                String::new()
            },
            rack: n.rack.clone(),
            used: n.used,
            capability: n.capability,
            num_containers: n.num_containers,
            state: n.state,
            health_report: n.health.report.clone(),
            last_health_report_ms: n.health.last_report_ms,
            version: n.nm_version.clone(),
        }
    }
}

/// Node counts as `getClusterMetrics` shows them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClusterMetrics {
    /// Active nodes, in any active state.
    pub node_managers: i32,
    pub decommissioned: i32,
    /// RUNNING nodes.
    pub active: i32,
    pub lost: i32,
    pub unhealthy: i32,
    pub rebooted: i32,
    pub decommissioning: i32,
    pub shutdown: i32,
}

/// Application counts of a queue's subtree.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueStatistics {
    pub submitted: i64,
    pub running: i64,
    /// Not yet running (NEW to ACCEPTED).
    pub pending: i64,
    pub completed: i64,
    pub killed: i64,
    pub failed: i64,
    /// The queue's maximum less what it uses.
    pub available: Resource,
}

/// A queue as `getQueueInfo` (`yarn queue -status`) shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueInfo {
    /// The scheduler core's view: capacities, usage, state, children.
    pub queue: QueueReport,
    pub statistics: QueueStatistics,
    /// Child queues, when asked for.
    pub children: Vec<QueueInfo>,
    /// The leaf's applications, when asked for.
    pub apps: Vec<AppReport>,
    pub scheduler: SchedulerKind,
}

/// Where an application's AM container runs, for the web's links.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AmContainer {
    pub id: ContainerId,
    pub node: NodeId,
    /// The node's HTTP address, while the RM knows the node.
    pub node_http_address: Option<String>,
}

/// An application as the web shows it: its report and its AM container.
#[derive(Debug, Clone, PartialEq)]
pub struct AppView {
    pub report: AppReport,
    /// The current attempt's AM container; `None` for a caller without
    /// VIEW_APP.
    pub am: Option<AmContainer>,
}

/// An application's attempts as the web lists them (Hadoop's
/// `getAppAttempts` lists them for everyone and hides the AM container from
/// a caller without VIEW_APP).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptListing {
    /// Whether the caller has VIEW_APP.
    pub viewable: bool,
    /// The application's owner.
    pub user: String,
    pub attempts: Vec<AttemptView>,
}

/// One attempt with where its AM container runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptView {
    pub report: AttemptReport,
    pub am: Option<AmContainer>,
}

/// Cluster-wide figures as the web's cluster metrics show them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClusterUsage {
    /// Applications the RM remembers, by where they are.
    pub apps_submitted: i64,
    pub apps_completed: i64,
    pub apps_pending: i64,
    pub apps_running: i64,
    pub apps_failed: i64,
    pub apps_killed: i64,
    /// What the scheduler's nodes offer, and what is allocated of it.
    pub capability: Resource,
    pub used: Resource,
    pub containers: i64,
    pub nodes: ClusterMetrics,
}

/// A user's share of a leaf queue (the capacity scheduler's `users`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueUser {
    pub user: String,
    pub used: Resource,
    /// Held by the user's AM containers.
    pub am_used: Resource,
    /// Applications running, and accepted but not running.
    pub active_apps: i64,
    pub pending_apps: i64,
}

/// The diagnostics Hadoop shows for an application (`RMAppImpl.getDiagnostics`):
/// its own, else its current attempt's, else, while that attempt's AM container
/// is launched and has not registered, Hadoop's `AMState.LAUNCHED` message
/// (`RMAppAttemptImpl`'s `amLaunchDiagnostics`, cleared when the AM registers).
/// The scheduler's messages before the launch (Hadoop's `AMState.ASSIGNED`,
/// `ACTIVATED`, `INACTIVATED`, with queue figures) are not reproduced.
pub fn shown_diagnostics<R>(app: &App, attempt: Option<&Attempt<R>>) -> String {
    if !app.diagnostics.is_empty() {
        return app.diagnostics.clone();
    }
    match attempt {
        Some(a) if !a.diagnostics.is_empty() => a.diagnostics.clone(),
        Some(a) if a.state == AttemptState::Launched => {
            "AM container is launched, waiting for AM container to Register with RM".to_owned()
        }
        _ => String::new(),
    }
}
