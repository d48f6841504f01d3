//! ResourceTracker: NodeManagers register, heartbeat and leave through it.

use std::sync::Arc;

use hadoop_protos::yarn as pb;
use spindle_ipc::{protocols, CallContext, Service};
use tracing::info;

use crate::convert::{
    app_id_to_pb, container_id_from_pb, container_id_to_pb, health_from_pb, node_id_from_pb,
    resource_from_pb,
};
use crate::core::RmState;
use crate::lifecycle::{read, NmContainerStatus, NodeWork};
use crate::nodes::{Heartbeat, HeartbeatReply, NodeAction, RegisterOutcome, Registration};
use crate::RmContext;
use spindle_common::resource::Resource;

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

/// The current container-token and NM-token master keys, as NodeManagers get them.
fn master_keys(s: &RmState) -> (pb::MasterKeyProto, pb::MasterKeyProto) {
    (
        read(&s.secrets.container_token).current_key().to_proto(),
        read(&s.secrets.nm_token).current_key().to_proto(),
    )
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
                // Topology scripts run here, off the core task.
                let rack = c.topology.resolve(std::slice::from_ref(&id.host)).await;
                let reg = Registration {
                    rack: rack.into_iter().next(),
                    id: id.clone(),
                    http_port: req.http_port.unwrap_or(0),
                    capability: resource_from_pb(req.resource.as_ref()),
                    nm_version: req.nm_version.clone().unwrap_or_default(),
                    health,
                };
                let capability = reg.capability;
                let node = id.clone();
                let (outcome, keys) = c
                    .core
                    .with(move |s, now| {
                        let outcome = s.nodes.register(reg, now);
                        if outcome == RegisterOutcome::Accepted {
                            s.node_registered(&node, now);
                        }
                        (outcome, master_keys(s))
                    })
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
                        resp.container_token_master_key = Some(keys.0);
                        resp.nm_token_master_key = Some(keys.1);
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
                let mut statuses = Vec::with_capacity(status.containers_statuses.len());
                let mut running = 0;
                let mut used = Resource::default();
                for st in &status.containers_statuses {
                    let Some(cid) = st
                        .container_id
                        .as_ref()
                        .and_then(|c| container_id_from_pb(c).ok())
                    else {
                        continue;
                    };
                    let state = st
                        .state
                        .and_then(|v| pb::ContainerStateProto::try_from(v).ok());
                    let is_running = state == Some(pb::ContainerStateProto::CRunning);
                    if is_running {
                        running += 1;
                        used += resource_from_pb(st.capability.as_ref());
                    }
                    statuses.push(NmContainerStatus {
                        container: cid,
                        running: is_running,
                        complete: state == Some(pb::ContainerStateProto::CComplete),
                        exit_status: st.exit_status.unwrap_or(-1000),
                        diagnostics: st.diagnostics.clone().unwrap_or_default(),
                    });
                }
                let hb = Heartbeat {
                    id: id.clone(),
                    response_id: status.response_id.unwrap_or(0),
                    health: health_from_pb(status.node_health_status.as_ref()),
                    num_containers: running,
                    used,
                };
                let known_container_key = req
                    .last_known_container_token_master_key
                    .and_then(|k| k.key_id);
                let known_nm_key = req.last_known_nm_token_master_key.and_then(|k| k.key_id);
                let (reply, work, keys) = c
                    .core
                    .with(move |s, now| {
                        let reply = s.nodes.heartbeat(hb, now);
                        s.sync_node(&id, now);
                        let mut work = Default::default();
                        if reply.action == NodeAction::Normal {
                            s.container_statuses(&id, statuses, now);
                            work = s.take_node_work(&id);
                        }
                        (reply, work, master_keys(s))
                    })
                    .await?;
                let normal = reply.action == NodeAction::Normal;
                let mut resp = heartbeat_response(reply);
                if normal {
                    let work: NodeWork = work;
                    resp.containers_to_cleanup = work
                        .cleanup_containers
                        .iter()
                        .map(container_id_to_pb)
                        .collect();
                    resp.applications_to_cleanup =
                        work.cleanup_apps.iter().map(app_id_to_pb).collect();
                    resp.containers_to_be_removed_from_nm =
                        work.acked.iter().map(container_id_to_pb).collect();
                    if known_container_key != keys.0.key_id {
                        resp.container_token_master_key = Some(keys.0);
                    }
                    if known_nm_key != keys.1.key_id {
                        resp.nm_token_master_key = Some(keys.1);
                    }
                }
                Ok(resp)
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
                let known = c
                    .core
                    .with(move |s, now| {
                        let known = s.nodes.unregister(&node);
                        s.sync_node(&node, now);
                        known
                    })
                    .await?;
                if known {
                    info!(node = %id, "NodeManager unregistered; now SHUTDOWN");
                }
                Ok(pb::UnRegisterNodeManagerResponseProto {})
            }
        },
    )
}
