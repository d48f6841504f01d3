//! Conversions between wire messages and the RM's domain types.
//!
//! Missing optional fields get Hadoop's defaults; fields Java dereferences without a
//! null check (application state, final status, …) are always set on the way out.

use hadoop_protos::yarn as pb;
use spindle_common::ids::{ApplicationAttemptId, ApplicationId, ContainerId, NodeId};
use spindle_common::proto::{self, ProtoError};
use spindle_common::resource::Resource;
use spindle_ipc::RpcError;

use crate::apps::{App, AppState, FinalStatus};
use crate::attempts::{Attempt, AttemptState};
use crate::nodes::{Health, Node, NodeState};

// Ids and resources are converted by `spindle_common::proto`; the functions
// below only decide which Java exception a bad or missing one raises.
pub use spindle_common::proto::{
    app_id_to_pb, attempt_id_to_pb, container_id_to_pb, node_id_to_pb, resource_to_pb,
};

/// An id the client sent that cannot be read, as Java's IllegalArgumentException.
fn illegal_argument(what: &str, e: ProtoError) -> RpcError {
    RpcError::new(
        spindle_ipc::class::ILLEGAL_ARGUMENT,
        format!("invalid {what}: {e}"),
    )
}

pub fn app_id_from_pb(p: Option<&pb::ApplicationIdProto>) -> Result<ApplicationId, RpcError> {
    p.map(proto::app_id_from_pb).ok_or_else(|| {
        RpcError::new(
            spindle_ipc::class::ILLEGAL_ARGUMENT,
            "the request names no application id",
        )
    })
}

pub fn attempt_id_from_pb(
    p: Option<&pb::ApplicationAttemptIdProto>,
) -> Result<ApplicationAttemptId, RpcError> {
    let p = p.ok_or_else(|| {
        RpcError::new(
            spindle_ipc::class::ILLEGAL_ARGUMENT,
            "the request names no application attempt id",
        )
    })?;
    proto::attempt_id_from_pb(p).map_err(|e| illegal_argument("application attempt id", e))
}

pub fn container_id_from_pb(p: &pb::ContainerIdProto) -> Result<ContainerId, RpcError> {
    proto::container_id_from_pb(p).map_err(|e| illegal_argument("container id", e))
}

pub fn node_id_from_pb(p: Option<&pb::NodeIdProto>) -> Result<NodeId, RpcError> {
    let p = p.ok_or_else(|| RpcError::yarn("the request names no node id"))?;
    proto::node_id_from_pb(p).map_err(|e| RpcError::yarn(format!("invalid node id: {e}")))
}

/// The resource types Spindle schedules (memory and vcores), as Hadoop describes them.
pub fn resource_types() -> Vec<pb::ResourceTypeInfoProto> {
    proto::resource_types_to_pb()
}

/// A resource the request may leave out: absent means none.
pub fn resource_from_pb(p: Option<&pb::ResourceProto>) -> Resource {
    p.map(proto::resource_from_pb).unwrap_or_default()
}

pub fn node_state_to_pb(s: NodeState) -> pb::NodeStateProto {
    match s {
        NodeState::New => pb::NodeStateProto::NsNew,
        NodeState::Running => pb::NodeStateProto::NsRunning,
        NodeState::Unhealthy => pb::NodeStateProto::NsUnhealthy,
        NodeState::Decommissioned => pb::NodeStateProto::NsDecommissioned,
        NodeState::Lost => pb::NodeStateProto::NsLost,
        NodeState::Rebooted => pb::NodeStateProto::NsRebooted,
        NodeState::Decommissioning => pb::NodeStateProto::NsDecommissioning,
        NodeState::Shutdown => pb::NodeStateProto::NsShutdown,
    }
}

pub fn node_state_from_pb(v: i32) -> Option<NodeState> {
    Some(match pb::NodeStateProto::try_from(v).ok()? {
        pb::NodeStateProto::NsNew => NodeState::New,
        pb::NodeStateProto::NsRunning => NodeState::Running,
        pb::NodeStateProto::NsUnhealthy => NodeState::Unhealthy,
        pb::NodeStateProto::NsDecommissioned => NodeState::Decommissioned,
        pb::NodeStateProto::NsLost => NodeState::Lost,
        pb::NodeStateProto::NsRebooted => NodeState::Rebooted,
        pb::NodeStateProto::NsDecommissioning => NodeState::Decommissioning,
        pb::NodeStateProto::NsShutdown => NodeState::Shutdown,
    })
}

pub fn health_from_pb(p: Option<&pb::NodeHealthStatusProto>) -> Health {
    match p {
        None => Health {
            healthy: true,
            report: String::new(),
            last_report_ms: 0,
        },
        Some(h) => Health {
            healthy: h.is_node_healthy.unwrap_or(true),
            report: h.health_report.clone().unwrap_or_default(),
            last_report_ms: h.last_health_report_time.unwrap_or(0),
        },
    }
}

pub fn node_report(n: &Node) -> pb::NodeReportProto {
    pb::NodeReportProto {
        node_id: Some(node_id_to_pb(&n.id)),
        // Hadoop reports no HTTP address for nodes that left the cluster.
        http_address: Some(if n.state.is_active() {
            n.http_address()
        } else {
            String::new()
        }),
        rack_name: Some(n.rack.clone()),
        used: Some(resource_to_pb(n.used)),
        capability: Some(resource_to_pb(n.capability)),
        num_containers: Some(n.num_containers),
        node_state: Some(node_state_to_pb(n.state) as i32),
        health_report: Some(n.health.report.clone()),
        last_health_report_time: Some(n.health.last_report_ms),
        node_labels: Vec::new(),
        containers_utilization: None,
        node_utilization: None,
        decommissioning_timeout: None,
        node_update_type: None,
        node_attributes: Vec::new(),
    }
}

pub fn app_state_to_pb(s: AppState) -> pb::YarnApplicationStateProto {
    match s {
        AppState::New => pb::YarnApplicationStateProto::New,
        AppState::NewSaving => pb::YarnApplicationStateProto::NewSaving,
        AppState::Submitted => pb::YarnApplicationStateProto::Submitted,
        AppState::Accepted => pb::YarnApplicationStateProto::Accepted,
        AppState::Running => pb::YarnApplicationStateProto::Running,
        AppState::Finished => pb::YarnApplicationStateProto::Finished,
        AppState::Failed => pb::YarnApplicationStateProto::Failed,
        AppState::Killed => pb::YarnApplicationStateProto::Killed,
    }
}

pub fn app_state_from_pb(v: i32) -> Option<AppState> {
    Some(match pb::YarnApplicationStateProto::try_from(v).ok()? {
        pb::YarnApplicationStateProto::New => AppState::New,
        pb::YarnApplicationStateProto::NewSaving => AppState::NewSaving,
        pb::YarnApplicationStateProto::Submitted => AppState::Submitted,
        pb::YarnApplicationStateProto::Accepted => AppState::Accepted,
        pb::YarnApplicationStateProto::Running => AppState::Running,
        pb::YarnApplicationStateProto::Finished => AppState::Finished,
        pb::YarnApplicationStateProto::Failed => AppState::Failed,
        pb::YarnApplicationStateProto::Killed => AppState::Killed,
    })
}

pub fn final_status_to_pb(s: FinalStatus) -> pb::FinalApplicationStatusProto {
    match s {
        FinalStatus::Undefined => pb::FinalApplicationStatusProto::AppUndefined,
        FinalStatus::Succeeded => pb::FinalApplicationStatusProto::AppSucceeded,
        FinalStatus::Failed => pb::FinalApplicationStatusProto::AppFailed,
        FinalStatus::Killed => pb::FinalApplicationStatusProto::AppKilled,
        FinalStatus::Ended => pb::FinalApplicationStatusProto::AppEnded,
    }
}

/// An application report with every field Java clients dereference set.
/// `cluster_total` is the cluster's capability, for the usage percentages.
/// What the application currently holds, for its report.
#[derive(Debug, Clone, Copy, Default)]
pub struct AppUsage {
    pub containers: i32,
    pub used: Resource,
}

pub fn app_report(
    a: &App,
    cluster_total: Resource,
    usage: AppUsage,
    attempt: Option<ApplicationAttemptId>,
) -> pb::ApplicationReportProto {
    let pct = |used: i64, total: i64| {
        if total > 0 {
            used as f32 * 100.0 / total as f32
        } else {
            0.0
        }
    };
    let usage = pb::ApplicationResourceUsageReportProto {
        num_used_containers: Some(usage.containers),
        num_reserved_containers: Some(0),
        used_resources: Some(resource_to_pb(usage.used)),
        reserved_resources: Some(resource_to_pb(Resource::default())),
        needed_resources: Some(resource_to_pb(Resource::default())),
        memory_seconds: Some(0),
        vcore_seconds: Some(0),
        queue_usage_percentage: Some(0.0),
        cluster_usage_percentage: Some(pct(usage.used.memory_mb, cluster_total.memory_mb)),
        preempted_memory_seconds: Some(0),
        preempted_vcore_seconds: Some(0),
        application_resource_usage_map: Vec::new(),
        application_preempted_resource_usage_map: Vec::new(),
    };
    let tracking = if a.tracking_url.is_empty() {
        "N/A".to_string()
    } else {
        a.tracking_url.clone()
    };
    pb::ApplicationReportProto {
        application_id: Some(app_id_to_pb(&a.id)),
        user: Some(a.user.clone()),
        queue: Some(a.queue.clone()),
        name: Some(a.name.clone()),
        host: Some(a.am_host.clone()),
        rpc_port: Some(a.am_rpc_port),
        client_to_am_token: None,
        yarn_application_state: Some(app_state_to_pb(a.state) as i32),
        tracking_url: Some(tracking.clone()),
        diagnostics: Some(a.diagnostics.clone()),
        start_time: Some(a.start_ms as i64),
        finish_time: Some(a.finish_ms as i64),
        final_application_status: Some(final_status_to_pb(a.final_status) as i32),
        app_resource_usage: Some(usage),
        original_tracking_url: Some(tracking),
        current_application_attempt_id: attempt.as_ref().map(attempt_id_to_pb),
        progress: Some(a.progress),
        application_type: Some(a.app_type.clone()),
        am_rm_token: None,
        application_tags: a.tags.iter().cloned().collect(),
        log_aggregation_status: None,
        unmanaged_application: Some(a.unmanaged_am),
        priority: Some(pb::PriorityProto {
            priority: Some(a.priority),
        }),
        app_node_label_expression: None,
        am_node_label_expression: None,
        app_timeouts: Vec::new(),
        launch_time: Some(a.launch_ms as i64),
        submit_time: Some(a.submit_ms as i64),
        rm_cluster_id: None,
    }
}

pub fn attempt_state_to_pb(s: AttemptState) -> pb::YarnApplicationAttemptStateProto {
    use pb::YarnApplicationAttemptStateProto as P;
    match s {
        AttemptState::Scheduled => P::AppAttemptScheduled,
        AttemptState::Allocated => P::AppAttemptAllocated,
        AttemptState::Launched => P::AppAttemptLaunched,
        AttemptState::Running => P::AppAttemptRunning,
        AttemptState::Finishing => P::AppAttemptFinishing,
        AttemptState::Finished => P::AppAttemptFinished,
        AttemptState::Failed => P::AppAttemptFailed,
        AttemptState::Killed => P::AppAttemptKilled,
    }
}

pub fn attempt_report<R>(a: &Attempt<R>) -> pb::ApplicationAttemptReportProto {
    pb::ApplicationAttemptReportProto {
        application_attempt_id: Some(attempt_id_to_pb(&a.id)),
        host: Some(a.host.clone()),
        rpc_port: Some(a.rpc_port),
        tracking_url: Some(a.tracking_url.clone()),
        diagnostics: Some(a.diagnostics.clone()),
        yarn_application_attempt_state: Some(attempt_state_to_pb(a.state) as i32),
        am_container_id: a.am_container.as_ref().map(container_id_to_pb),
        original_tracking_url: Some(a.original_tracking_url.clone()),
        start_time: Some(a.start_ms as i64),
        finish_time: Some(a.finish_ms as i64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_or_bad_ids_raise_the_java_exceptions_clients_expect() {
        let err = app_id_from_pb(None).expect_err("no id");
        assert_eq!(err.class_name, spindle_ipc::class::ILLEGAL_ARGUMENT);

        let no_app = pb::ApplicationAttemptIdProto {
            application_id: None,
            attempt_id: Some(1),
        };
        let err = attempt_id_from_pb(Some(&no_app)).expect_err("no application");
        assert_eq!(err.class_name, spindle_ipc::class::ILLEGAL_ARGUMENT);
        assert_eq!(
            err.message,
            "invalid application attempt id: ApplicationAttemptIdProto.application_id is missing"
        );

        let err = container_id_from_pb(&pb::ContainerIdProto::default()).expect_err("empty");
        assert_eq!(err.class_name, spindle_ipc::class::ILLEGAL_ARGUMENT);

        let bad_port = pb::NodeIdProto {
            host: Some("h".into()),
            port: Some(70_000),
        };
        let err = node_id_from_pb(Some(&bad_port)).expect_err("port");
        assert_eq!(err.class_name, spindle_ipc::class::YARN);
        assert!(err.message.contains("NodeIdProto.port"), "{}", err.message);
    }

    #[test]
    fn ids_and_resources_round_trip() {
        let attempt = ApplicationAttemptId::new(ApplicationId::new(1_700_000_000_000, 3), 1);
        let c = ContainerId::with_epoch(attempt, 1, 5);
        assert_eq!(container_id_from_pb(&container_id_to_pb(&c)), Ok(c));
        assert_eq!(
            attempt_id_from_pb(Some(&attempt_id_to_pb(&attempt))),
            Ok(attempt)
        );
        let node = NodeId::new("n1", 45454);
        assert_eq!(node_id_from_pb(Some(&node_id_to_pb(&node))), Ok(node));
        let r = Resource::new(8192, 8);
        assert_eq!(resource_from_pb(Some(&resource_to_pb(r))), r);
        assert_eq!(resource_from_pb(None), Resource::default());
        assert_eq!(resource_types().len(), 2);
    }
}
