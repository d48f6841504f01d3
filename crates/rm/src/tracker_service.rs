//! ResourceTracker: NodeManagers register, heartbeat and leave through it.

use std::sync::Arc;

use hadoop_protos::yarn as pb;
use spindle_ipc::{protocols, CallContext, Service};
use tracing::info;

use crate::convert::{health_from_pb, node_id_from_pb, resource_from_pb};
use crate::nodes::{Heartbeat, HeartbeatReply, NodeAction, RegisterOutcome, Registration};
use crate::RmContext;

fn action_to_pb(a: NodeAction) -> pb::NodeActionProto {
    match a {
        NodeAction::Normal => pb::NodeActionProto::Normal,
        NodeAction::Resync => pb::NodeActionProto::Resync,
        NodeAction::Shutdown => pb::NodeActionProto::Shutdown,
    }
}

fn heartbeat_response(r: HeartbeatReply) -> pb::NodeHeartbeatResponseProto {
    pb::NodeHeartbeatResponseProto {
        response_id: Some(r.response_id),
        node_action: Some(action_to_pb(r.action) as i32),
        next_heart_beat_interval: Some(r.next_interval_ms),
        diagnostics_message: (!r.diagnostics.is_empty()).then_some(r.diagnostics),
        ..Default::default()
    }
}

pub fn service(ctx: Arc<RmContext>) -> Service {
    let c = ctx.clone();
    let s = Service::new(protocols::RESOURCE_TRACKER).method(
        "registerNodeManager",
        move |_call: CallContext, req: pb::RegisterNodeManagerRequestProto| {
            let c = c.clone();
            async move {
                let id = node_id_from_pb(req.node_id.as_ref())?;
                let health = health_from_pb(
                    req.node_status
                        .as_ref()
                        .and_then(|s| s.node_health_status.as_ref()),
                );
                let reg = Registration {
                    id: id.clone(),
                    http_port: req.http_port.unwrap_or(0),
                    capability: resource_from_pb(req.resource.as_ref()),
                    nm_version: req.nm_version.clone().unwrap_or_default(),
                    health,
                };
                let capability = reg.capability;
                let outcome = c
                    .core
                    .with(move |s, now| s.nodes.register(reg, now))
                    .await?;
                let mut resp = pb::RegisterNodeManagerResponseProto {
                    rm_identifier: Some(c.cluster_ts),
                    rm_version: Some(c.rm_version.clone()),
                    ..Default::default()
                };
                match outcome {
                    RegisterOutcome::Accepted => {
                        info!(node = %id, %capability, "NodeManager registered");
                        resp.node_action = Some(pb::NodeActionProto::Normal as i32);
                    }
                    RegisterOutcome::Rejected(msg) => {
                        info!(node = %id, %msg, "NodeManager registration refused");
                        resp.node_action = Some(pb::NodeActionProto::Shutdown as i32);
                        resp.diagnostics_message = Some(msg);
                    }
                }
                Ok(resp)
            }
        },
    );
    let c = ctx.clone();
    let s = s.method(
        "nodeHeartbeat",
        move |_call: CallContext, req: pb::NodeHeartbeatRequestProto| {
            let c = c.clone();
            async move {
                let status = req.node_status.unwrap_or_default();
                let id = node_id_from_pb(status.node_id.as_ref())?;
                let running: Vec<_> = status
                    .containers_statuses
                    .iter()
                    .filter(|s| s.state == Some(pb::ContainerStateProto::CRunning as i32))
                    .collect();
                let hb = Heartbeat {
                    id,
                    response_id: status.response_id.unwrap_or(0),
                    health: health_from_pb(status.node_health_status.as_ref()),
                    num_containers: running.len() as i32,
                    used: running
                        .iter()
                        .map(|s| resource_from_pb(s.capability.as_ref()))
                        .fold(Default::default(), |a, b| a + b),
                };
                let reply = c
                    .core
                    .with(move |s, now| s.nodes.heartbeat(hb, now))
                    .await?;
                Ok(heartbeat_response(reply))
            }
        },
    );
    let c = ctx;
    s.method(
        "unRegisterNodeManager",
        move |_call: CallContext, req: pb::UnRegisterNodeManagerRequestProto| {
            let c = c.clone();
            async move {
                let id = node_id_from_pb(req.node_id.as_ref())?;
                let node = id.clone();
                let known = c.core.with(move |s, _| s.nodes.unregister(&node)).await?;
                if known {
                    info!(node = %id, "NodeManager unregistered; now SHUTDOWN");
                }
                Ok(pb::UnRegisterNodeManagerResponseProto {})
            }
        },
    )
}
