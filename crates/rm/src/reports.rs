//! What the RM's read-only queries answer: reports in domain terms, for the
//! protocol handlers (which turn them into Hadoop's report messages) and
//! any other reader of the state.

use spindle_common::ids::{ApplicationAttemptId, ContainerId, NodeId};
use spindle_common::resource::Resource;
use spindle_common::security::Token;
use spindle_common::states::AttemptState;
use spindle_scheduler::{QueueReport, SchedulerKind};

use crate::apps::App;
use crate::attempts::Attempt;
use crate::cluster::nodes::{Node, NodeState};

/// An application as `getApplicationReport` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct AppReport {
    /// The application's record.
    pub app: App,
    pub current_attempt: Option<ApplicationAttemptId>,
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
}

impl AttemptReport {
    pub fn of<R>(a: &Attempt<R>) -> AttemptReport {
        AttemptReport {
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
