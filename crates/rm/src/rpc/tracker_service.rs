//! ResourceTracker: NodeManagers register, heartbeat and leave through it.

use std::sync::Arc;

use hadoop_protos::yarn as pb;
use spindle_common::resource::Resource;
use spindle_common::text::escaped;
use spindle_ipc::methods::resource_tracker::{
    NODE_HEARTBEAT, REGISTER_NODE_MANAGER, UN_REGISTER_NODE_MANAGER,
};
use spindle_ipc::{protocols, CallContext, RpcError, Service};
use tracing::info;

use crate::cluster::nodes::{ContainerStatus, Heartbeat, HeartbeatReply, NodeAction, Registration};
use crate::model::convert::{
    app_id_to_pb, app_log_report_from_pb, container_id_from_pb, container_id_to_pb,
    container_signal_to_pb, health_from_pb, node_id_from_pb, resource_from_pb,
};
use crate::runtime::context::RmContext;
use crate::state::command::{
    HeartbeatAnswer, NodeHeartbeat, NodeRegistration, RegisterNode, UnregisterNode,
};

pub fn service(ctx: Arc<RmContext>) -> Service {
    Service::new(protocols::RESOURCE_TRACKER)
        .with_state(ctx)
        .handle(&REGISTER_NODE_MANAGER, register_node_manager)
        .handle(&NODE_HEARTBEAT, node_heartbeat)
        .handle(&UN_REGISTER_NODE_MANAGER, unregister_node_manager)
        .into()
}

async fn register_node_manager(
    ctx: Arc<RmContext>,
    _call: CallContext,
    req: pb::RegisterNodeManagerRequestProto,
) -> Result<pb::RegisterNodeManagerResponseProto, RpcError> {
    let id = node_id_from_pb(req.node_id.as_ref())?;
    let health = health_from_pb(
        req.node_status
            .as_ref()
            .and_then(|s| s.node_health_status.as_ref()),
    );
    // Topology scripts run here, off the core task.
    let rack = ctx.topology.resolve(&[id.host.to_string()]).await;
    let registration = Registration {
        rack: rack.into_iter().next(),
        id: id.clone(),
        http_port: req.http_port.unwrap_or(0),
        capability: resource_from_pb(req.resource.as_ref()),
        nm_version: req.nm_version.clone().unwrap_or_default(),
        health,
    };
    let capability = registration.capability;
    let containers = req
        .container_statuses
        .iter()
        .filter_map(registered_container_from_pb)
        .collect();
    let running_apps = req
        .running_applications
        .iter()
        .map(spindle_common::proto::app_id_from_pb)
        .collect();
    let log_reports = req
        .log_aggregation_reports_for_apps
        .iter()
        .filter_map(app_log_report_from_pb)
        .collect();
    let outcome = ctx
        .core
        .call(RegisterNode {
            registration,
            containers,
            running_apps,
            log_reports,
        })
        .await?;
    let mut resp = pb::RegisterNodeManagerResponseProto {
        rm_identifier: Some(ctx.cluster_ts()),
        rm_version: Some(ctx.rm_version.clone()),
        ..Default::default()
    };
    match outcome {
        NodeRegistration::Accepted(keys) => {
            info!(node = %escaped(&id.to_string()), %capability, "NodeManager registered");
            resp.node_action = Some(pb::NodeActionProto::Normal as i32);
            resp.container_token_master_key = Some(keys.container_token.to_proto());
            resp.nm_token_master_key = Some(keys.nm_token.to_proto());
        }
        NodeRegistration::Rejected(msg) => {
            info!(node = %escaped(&id.to_string()), msg = %escaped(&msg), "NodeManager registration refused");
            resp.node_action = Some(pb::NodeActionProto::Shutdown as i32);
            resp.diagnostics_message = Some(msg);
        }
    }
    Ok(resp)
}

async fn node_heartbeat(
    ctx: Arc<RmContext>,
    _call: CallContext,
    req: pb::NodeHeartbeatRequestProto,
) -> Result<pb::NodeHeartbeatResponseProto, RpcError> {
    let heartbeat = heartbeat_from_pb(req)?;
    let answer = ctx.core.call(heartbeat).await?;
    Ok(heartbeat_answer_to_pb(answer))
}

async fn unregister_node_manager(
    ctx: Arc<RmContext>,
    _call: CallContext,
    req: pb::UnRegisterNodeManagerRequestProto,
) -> Result<pb::UnRegisterNodeManagerResponseProto, RpcError> {
    let node = node_id_from_pb(req.node_id.as_ref())?;
    let known = ctx.core.call(UnregisterNode { node: node.clone() }).await?;
    if known {
        info!(node = %escaped(&node.to_string()), "NodeManager unregistered; now SHUTDOWN");
    }
    Ok(pb::UnRegisterNodeManagerResponseProto {})
}

// ---- conversions of this protocol ------------------------------------------------

/// A heartbeat in domain terms: the node's status, its containers (those
/// whose ids cannot be read left out), what it runs, its log aggregation
/// reports (unreadable ones left out), and the master keys it has.
fn heartbeat_from_pb(req: pb::NodeHeartbeatRequestProto) -> Result<NodeHeartbeat, RpcError> {
    let status = req.node_status.unwrap_or_default();
    let id = node_id_from_pb(status.node_id.as_ref())?;
    let mut containers = Vec::with_capacity(status.containers_statuses.len());
    let mut running = 0;
    let mut used = Resource::default();
    for st in &status.containers_statuses {
        let Some(container) = st
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
        containers.push(ContainerStatus {
            container,
            running: is_running,
            complete: state == Some(pb::ContainerStateProto::CComplete),
            exit_status: st.exit_status.unwrap_or(-1000),
            diagnostics: st.diagnostics.clone().unwrap_or_default(),
            resource: resource_from_pb(st.capability.as_ref()),
        });
    }
    Ok(NodeHeartbeat {
        heartbeat: Heartbeat {
            id,
            response_id: status.response_id.unwrap_or(0),
            health: health_from_pb(status.node_health_status.as_ref()),
            num_containers: running,
            used,
        },
        containers,
        log_reports: req
            .log_aggregation_reports_for_apps
            .iter()
            .filter_map(app_log_report_from_pb)
            .collect(),
        known_container_token_key: req
            .last_known_container_token_master_key
            .and_then(|k| k.key_id),
        known_nm_token_key: req.last_known_nm_token_master_key.and_then(|k| k.key_id),
    })
}

/// A container a registering node still holds (one whose id cannot be read
/// is left out).
fn registered_container_from_pb(st: &pb::NmContainerStatusProto) -> Option<ContainerStatus> {
    let container = st
        .container_id
        .as_ref()
        .and_then(|c| container_id_from_pb(c).ok())?;
    let state = st
        .container_state
        .and_then(|v| pb::ContainerStateProto::try_from(v).ok());
    Some(ContainerStatus {
        container,
        running: state == Some(pb::ContainerStateProto::CRunning),
        complete: state == Some(pb::ContainerStateProto::CComplete),
        exit_status: st.container_exit_status.unwrap_or(-1000),
        diagnostics: st.diagnostics.clone().unwrap_or_default(),
        resource: resource_from_pb(st.resource.as_ref()),
    })
}

fn action_to_pb(a: NodeAction) -> pb::NodeActionProto {
    match a {
        NodeAction::Normal => pb::NodeActionProto::Normal,
        NodeAction::Resync => pb::NodeActionProto::Resync,
        NodeAction::Shutdown => pb::NodeActionProto::Shutdown,
    }
}

fn heartbeat_answer_to_pb(answer: HeartbeatAnswer) -> pb::NodeHeartbeatResponseProto {
    let HeartbeatAnswer {
        reply,
        work,
        container_token_key,
        nm_token_key,
    } = answer;
    let HeartbeatReply {
        response_id,
        action,
        diagnostics,
        next_interval_ms,
    } = reply;
    let mut resp = pb::NodeHeartbeatResponseProto {
        response_id: Some(response_id),
        node_action: Some(action_to_pb(action) as i32),
        next_heart_beat_interval: Some(next_interval_ms),
        diagnostics_message: (!diagnostics.is_empty()).then_some(diagnostics),
        ..Default::default()
    };
    if action == NodeAction::Normal {
        resp.containers_to_cleanup = work
            .cleanup_containers
            .iter()
            .map(container_id_to_pb)
            .collect();
        resp.applications_to_cleanup = work.cleanup_apps.iter().map(app_id_to_pb).collect();
        resp.containers_to_be_removed_from_nm = work.acked.iter().map(container_id_to_pb).collect();
        resp.containers_to_signal = work
            .signals
            .iter()
            .map(|(c, signal)| container_signal_to_pb(c, *signal))
            .collect();
        resp.resource = work
            .new_capability
            .map(spindle_common::proto::resource_to_pb);
        resp.container_token_master_key = container_token_key.map(|k| k.to_proto());
        resp.nm_token_master_key = nm_token_key.map(|k| k.to_proto());
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::nodes::NodeWork;

    fn answer(work: NodeWork, action: NodeAction) -> HeartbeatAnswer {
        HeartbeatAnswer {
            reply: HeartbeatReply {
                response_id: 3,
                action,
                diagnostics: String::new(),
                next_interval_ms: 1000,
            },
            work,
            container_token_key: None,
            nm_token_key: None,
        }
    }

    /// Resources an admin gave the node travel in the answer's `resource`
    /// field, which Hadoop's NodeManager takes as its own.
    #[test]
    fn an_updated_capability_is_the_answers_resource() {
        let work = NodeWork {
            new_capability: Some(Resource::new(2048, 2)),
            ..NodeWork::default()
        };
        let resp = heartbeat_answer_to_pb(answer(work, NodeAction::Normal));
        let resource = resp.resource.expect("a resource");
        assert_eq!(resource.memory, Some(2048));
        assert_eq!(resource.virtual_cores, Some(2));
        let resp = heartbeat_answer_to_pb(answer(NodeWork::default(), NodeAction::Normal));
        assert_eq!(resp.resource, None);
    }

    /// Queued container signals travel in `containers_to_signal`, in order, with
    /// Hadoop's command numbers.
    #[test]
    fn queued_signals_are_the_answers_containers_to_signal() {
        use spindle_common::ids::{ApplicationAttemptId, ApplicationId, ContainerId};

        use crate::cluster::nodes::ContainerSignal;

        let attempt = ApplicationAttemptId::new(ApplicationId::new(7, 1), 1);
        let (a, b) = (ContainerId::new(attempt, 1), ContainerId::new(attempt, 2));
        let work = NodeWork {
            signals: vec![
                (a, ContainerSignal::OutputThreadDump),
                (b, ContainerSignal::ForcefulShutdown),
                (a, ContainerSignal::GracefulShutdown),
            ],
            ..NodeWork::default()
        };
        let resp = heartbeat_answer_to_pb(answer(work, NodeAction::Normal));
        let got: Vec<(i64, i32)> = resp
            .containers_to_signal
            .iter()
            .map(|r| (r.container_id.id.unwrap_or_default(), r.command))
            .collect();
        assert_eq!(got, vec![(1, 1), (2, 3), (1, 2)]);
    }
}
