//! `ResourceTracker`: what a NodeManager calls on the ResourceManager's
//! resource-tracker port.
//!
//! Registering and unregistering are `@Idempotent`; a heartbeat is
//! `@AtMostOnce`: the ResourceManager recognises a repeat by its response
//! id.

use hadoop_protos::yarn as pb;

use super::{Method, Signature};
use crate::protocols::RESOURCE_TRACKER as PROTOCOL;

/// Registers a node with its resources, containers and applications.
pub const REGISTER_NODE_MANAGER: Method<
    pb::RegisterNodeManagerRequestProto,
    pb::RegisterNodeManagerResponseProto,
> = Method::idempotent(PROTOCOL, "registerNodeManager");

/// The node heartbeat: container statuses out, the ResourceManager's orders back.
pub const NODE_HEARTBEAT: Method<pb::NodeHeartbeatRequestProto, pb::NodeHeartbeatResponseProto> =
    Method::at_most_once(PROTOCOL, "nodeHeartbeat");

/// A node leaves the cluster (a NodeManager stopping).
pub const UN_REGISTER_NODE_MANAGER: Method<
    pb::UnRegisterNodeManagerRequestProto,
    pb::UnRegisterNodeManagerResponseProto,
> = Method::idempotent(PROTOCOL, "unRegisterNodeManager");

/// Every method of the protocol, in the order of its `.proto` service.
pub const ALL: &[Signature] = &[
    REGISTER_NODE_MANAGER.signature(),
    NODE_HEARTBEAT.signature(),
    UN_REGISTER_NODE_MANAGER.signature(),
];
