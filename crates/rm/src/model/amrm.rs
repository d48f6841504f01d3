//! The ApplicationMaster protocol in domain terms: what an AM sends and what
//! the RM answers (registration and allocate), without the wire types.

use spindle_common::ids::{ContainerId, NodeId};
use spindle_common::resource::Resource;
use spindle_common::security::Token;
use spindle_scheduler::ResourceAsk;

use crate::model::attempts::Finished;
use crate::model::reports::NodeReport;

/// A container granted to an AM, with the token its NodeManager will check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllocatedContainer {
    pub id: ContainerId,
    pub node: NodeId,
    pub node_http_address: String,
    pub resource: Resource,
    pub priority: i32,
    pub allocation_request_id: i64,
    pub token: Token,
}

/// An NMToken for one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NmTokenGrant {
    pub node: NodeId,
    pub token: Token,
}

/// The answer to `registerApplicationMaster`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisterReply {
    /// The largest container the AM may ask for.
    pub maximum_capability: Resource,
    /// The queue the application runs in, as its report shows it.
    pub queue: String,
    /// Task containers kept from earlier attempts
    /// (keep-containers-across-application-attempts), with NMTokens for their nodes.
    pub previous_containers: Vec<AllocatedContainer>,
    pub previous_nm_tokens: Vec<NmTokenGrant>,
}

/// An allocate call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AllocateRequest {
    /// The response id of the last answer the AM saw.
    pub response_id: i32,
    pub progress: Option<f32>,
    /// A new tracking URL, if the AM sent a non-empty one.
    pub tracking_url: Option<String>,
    /// Request-table rows with absolute counts.
    pub asks: Vec<ResourceAsk>,
    /// Containers the AM gives back.
    pub releases: Vec<ContainerId>,
    pub blacklist_add: Vec<String>,
    pub blacklist_remove: Vec<String>,
}

/// What every allocate answer tells the AM about the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClusterView {
    /// Capability of RUNNING nodes less what the nodes report in use.
    pub headroom: Resource,
    /// RUNNING nodes.
    pub running_nodes: i32,
}

/// The answer to an allocate call; kept by the attempt for replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllocateReply {
    pub response_id: i32,
    /// The attempt is over: the AM must shut down (Hadoop's `AM_SHUTDOWN`).
    pub shutdown: bool,
    pub allocated: Vec<AllocatedContainer>,
    pub completed: Vec<Finished>,
    /// Nodes that changed since the AM last heard.
    pub updated_nodes: Vec<NodeReport>,
    /// Absent in a shutdown answer.
    pub cluster: Option<ClusterView>,
    /// NMTokens for nodes the attempt has no token for yet.
    pub nm_tokens: Vec<NmTokenGrant>,
    /// A fresh AMRMToken, when the AM authenticated under a rolled key.
    pub amrm_token: Option<Token>,
    /// The application's priority, which Hadoop's RM puts in every allocate
    /// answer (MapReduce's AM reads it unconditionally); absent in a shutdown
    /// answer.
    pub application_priority: Option<i32>,
}

impl AllocateReply {
    /// The answer to an AM whose attempt has ended.
    pub fn shutdown(response_id: i32) -> AllocateReply {
        AllocateReply {
            response_id,
            shutdown: true,
            allocated: Vec::new(),
            completed: Vec::new(),
            updated_nodes: Vec::new(),
            cluster: None,
            nm_tokens: Vec::new(),
            amrm_token: None,
            application_priority: None,
        }
    }
}
