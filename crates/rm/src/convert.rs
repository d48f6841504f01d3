//! Conversions between wire messages and the RM's domain types.
//!
//! Missing optional fields get Hadoop's defaults; fields Java dereferences without a
//! null check (application state, final status, …) are always set on the way out.

use hadoop_protos::yarn as pb;
use spindle_common::ids::{ApplicationAttemptId, ApplicationId, ContainerId, NodeId};
use spindle_common::resource::Resource;
use spindle_ipc::RpcError;

use crate::apps::{App, AppState, FinalStatus};
use crate::attempts::{Attempt, AttemptState};
use crate::nodes::{Health, Node, NodeState};

pub fn app_id_to_pb(id: &ApplicationId) -> pb::ApplicationIdProto {
    pb::ApplicationIdProto {
        id: Some(id.id),
        cluster_timestamp: Some(id.cluster_timestamp),
    }
}

pub fn app_id_from_pb(p: Option<&pb::ApplicationIdProto>) -> Result<ApplicationId, RpcError> {
    let p = p.ok_or_else(|| {
        RpcError::new(
            spindle_ipc::class::ILLEGAL_ARGUMENT,
            "the request names no application id",
        )
    })?;
    Ok(ApplicationId::new(
        p.cluster_timestamp.unwrap_or(0),
        p.id.unwrap_or(0),
    ))
}

pub fn attempt_id_to_pb(id: &ApplicationAttemptId) -> pb::ApplicationAttemptIdProto {
    pb::ApplicationAttemptIdProto {
        application_id: Some(app_id_to_pb(&id.app)),
        attempt_id: Some(id.attempt_id),
    }
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
    let app = app_id_from_pb(p.application_id.as_ref())?;
    Ok(ApplicationAttemptId::new(app, p.attempt_id.unwrap_or(0)))
}

/// Java writes only the attempt and the 64-bit id (epoch in the high bits).
pub fn container_id_to_pb(id: &ContainerId) -> pb::ContainerIdProto {
    pb::ContainerIdProto {
        app_id: None,
        app_attempt_id: Some(attempt_id_to_pb(&id.attempt)),
        id: Some(id.id),
    }
}

pub fn container_id_from_pb(p: &pb::ContainerIdProto) -> Result<ContainerId, RpcError> {
    let attempt = attempt_id_from_pb(p.app_attempt_id.as_ref())?;
    Ok(ContainerId::new(attempt, p.id.unwrap_or(0)))
}

pub fn node_id_to_pb(id: &NodeId) -> pb::NodeIdProto {
    pb::NodeIdProto {
        host: Some(id.host.clone()),
        port: Some(id.port),
    }
}

pub fn node_id_from_pb(p: Option<&pb::NodeIdProto>) -> Result<NodeId, RpcError> {
    let p = p.ok_or_else(|| RpcError::yarn("the request names no node id"))?;
    let host = p
        .host
        .clone()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| RpcError::yarn("the node id has no host"))?;
    let port = p.port.unwrap_or(0);
    if !(0..=65535).contains(&port) {
        return Err(RpcError::yarn(format!(
            "the node id port {port} is out of range"
        )));
    }
    Ok(NodeId::new(host, port))
}

/// Hadoop writes memory and vcores both as scalars and in the resource map; readers use
/// the scalars. We write both too.
pub fn resource_to_pb(r: Resource) -> pb::ResourceProto {
    pb::ResourceProto {
        memory: Some(r.memory_mb),
        virtual_cores: Some(r.vcores),
        resource_value_map: vec![
            pb::ResourceInformationProto {
                key: "memory-mb".into(),
                value: Some(r.memory_mb),
                units: Some("Mi".into()),
                r#type: Some(pb::ResourceTypesProto::Countable as i32),
                tags: Vec::new(),
                attributes: Vec::new(),
            },
            pb::ResourceInformationProto {
                key: "vcores".into(),
                value: Some(i64::from(r.vcores)),
                units: Some(String::new()),
                r#type: Some(pb::ResourceTypesProto::Countable as i32),
                tags: Vec::new(),
                attributes: Vec::new(),
            },
        ],
    }
}

/// The resource types Spindle schedules (memory and vcores), as Hadoop describes them.
pub fn resource_types() -> Vec<pb::ResourceTypeInfoProto> {
    vec![
        pb::ResourceTypeInfoProto {
            name: "memory-mb".into(),
            units: Some("Mi".into()),
            r#type: Some(pb::ResourceTypesProto::Countable as i32),
        },
        pb::ResourceTypeInfoProto {
            name: "vcores".into(),
            units: Some(String::new()),
            r#type: Some(pb::ResourceTypesProto::Countable as i32),
        },
    ]
}

pub fn resource_from_pb(p: Option<&pb::ResourceProto>) -> Resource {
    let Some(p) = p else {
        return Resource::default();
    };
    let from_map = |key: &str| {
        p.resource_value_map
            .iter()
            .find(|e| e.key == key)
            .and_then(|e| e.value)
    };
    let memory = p.memory.or_else(|| from_map("memory-mb")).unwrap_or(0);
    let vcores = p
        .virtual_cores
        .or_else(|| from_map("vcores").and_then(|v| i32::try_from(v).ok()))
        .unwrap_or(0);
    Resource::new(memory, vcores)
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
