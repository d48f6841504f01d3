//! Reports turned into the JSON of Hadoop's web DAOs (`webapp/dao/*Info`),
//! with their field names and the values Hadoop gives; the XML form is the
//! same tree (`spindle_web::json_to_xml`).

use serde_json::{json, Map, Value};
use spindle_common::resource::Resource;
use spindle_common::states::AppState;

use crate::cluster::nodes::NodeState;
use crate::reports::{
    AppView, AttemptListing, AttemptReport, AttemptView, ClusterUsage, ContainerReport, NodeReport,
};

/// The fields of `AppInfo` that `deSelects` can leave out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeSelects {
    pub resource_requests: bool,
    pub timeouts: bool,
    pub am_node_label_expression: bool,
    pub app_node_label_expression: bool,
    pub resource_info: bool,
}

/// `ResourceInfo`.
pub fn resource(r: Resource) -> Value {
    json!({"memory": r.memory_mb, "vCores": r.vcores})
}

/// Hadoop's `Times.elapsed(started, finished, true)`.
pub fn elapsed(started: u64, finished: u64, now: u64) -> i64 {
    if finished > 0 && started > 0 {
        return (finished as i64 - started as i64).max(0);
    }
    if started > 0 {
        (now as i64 - started as i64).max(0)
    } else {
        0
    }
}

/// `WebAppUtils.getURLWithScheme`: the URL, with `http://` when it has no scheme.
pub fn with_scheme(url: &str) -> String {
    if url.contains("://") {
        url.to_string()
    } else {
        format!("http://{url}")
    }
}

/// `WebAppUtils.getRunningLogURL`.
pub fn running_log_url(node_http: &str, container: &str, user: &str) -> String {
    format!(
        "{}/node/containerlogs/{container}/{user}",
        with_scheme(node_http)
    )
}

/// `AppInfo`. `cluster_id` is the RM's cluster timestamp; `now` the wall
/// clock (for the elapsed time of a running application).
pub fn app_info(view: &AppView, cluster_id: i64, now: u64, deselects: DeSelects) -> Value {
    let r = &view.report;
    let a = &r.app;
    let not_ready = a.tracking_url.is_empty()
        || matches!(
            a.state,
            AppState::New | AppState::NewSaving | AppState::Submitted | AppState::Accepted
        );
    let tracking_ui = if not_ready {
        "UNASSIGNED"
    } else if a.finish_ms == 0 {
        "ApplicationMaster"
    } else {
        "History"
    };
    let mut o = Map::new();
    o.insert("id".into(), json!(a.id.to_string()));
    o.insert("user".into(), json!(a.user));
    o.insert("name".into(), json!(a.name));
    o.insert("queue".into(), json!(a.queue));
    o.insert("state".into(), json!(a.state.as_str()));
    o.insert("finalStatus".into(), json!(a.final_status.as_str()));
    o.insert("progress".into(), json!(r.progress * 100.0));
    o.insert("trackingUI".into(), json!(tracking_ui));
    if !not_ready {
        o.insert("trackingUrl".into(), json!(with_scheme(&a.tracking_url)));
    }
    o.insert("diagnostics".into(), json!(a.diagnostics));
    o.insert("clusterId".into(), json!(cluster_id));
    o.insert("applicationType".into(), json!(a.app_type));
    let tags: Vec<&str> = a.tags.iter().map(String::as_str).collect();
    o.insert("applicationTags".into(), json!(tags.join(",")));
    o.insert("priority".into(), json!(a.priority));
    let seen = r.viewable;
    let (started, launched, finished, elapsed_ms) = if seen {
        (
            a.start_ms,
            a.launch_ms,
            a.finish_ms,
            elapsed(a.start_ms, a.finish_ms, now),
        )
    } else {
        (0, 0, 0, 0)
    };
    o.insert("startedTime".into(), json!(started));
    o.insert("launchTime".into(), json!(launched));
    o.insert("finishedTime".into(), json!(finished));
    o.insert("elapsedTime".into(), json!(elapsed_ms));
    if let Some(am) = view.am.as_ref().filter(|_| seen) {
        if let Some(http) = &am.node_http_address {
            o.insert(
                "amContainerLogs".into(),
                json!(running_log_url(http, &am.id.to_string(), &a.user)),
            );
            o.insert("amHostHttpAddress".into(), json!(http));
        }
    }
    if seen && a.am_host != "N/A" && !a.am_host.is_empty() && a.am_rpc_port != -1 {
        o.insert(
            "amRPCAddress".into(),
            json!(format!("{}:{}", a.am_host, a.am_rpc_port)),
        );
    }
    if let Some(am) = view.am.as_ref().filter(|_| seen) {
        o.insert("masterNodeId".into(), json!(am.node.to_string()));
    }
    let (used, containers) = if seen && r.used_containers >= 0 {
        (r.used, r.used_containers)
    } else {
        (Resource::default(), 0)
    };
    let cluster_usage = if seen && r.cluster_capability.memory_mb > 0 {
        used.memory_mb as f64 * 100.0 / r.cluster_capability.memory_mb as f64
    } else {
        0.0
    };
    o.insert("allocatedMB".into(), json!(used.memory_mb));
    o.insert("allocatedVCores".into(), json!(used.vcores));
    o.insert("reservedMB".into(), json!(0));
    o.insert("reservedVCores".into(), json!(0));
    o.insert("runningContainers".into(), json!(containers));
    o.insert("memorySeconds".into(), json!(0));
    o.insert("vcoreSeconds".into(), json!(0));
    o.insert("queueUsagePercentage".into(), json!(0.0));
    o.insert("clusterUsagePercentage".into(), json!(cluster_usage as f32));
    o.insert("resourceSecondsMap".into(), resource_seconds());
    o.insert("preemptedResourceMB".into(), json!(0));
    o.insert("preemptedResourceVCores".into(), json!(0));
    o.insert("numNonAMContainerPreempted".into(), json!(0));
    o.insert("numAMContainerPreempted".into(), json!(0));
    o.insert("preemptedMemorySeconds".into(), json!(0));
    o.insert("preemptedVcoreSeconds".into(), json!(0));
    o.insert("preemptedResourceSecondsMap".into(), resource_seconds());
    o.insert("logAggregationStatus".into(), json!("DISABLED"));
    o.insert("unmanagedApplication".into(), json!(a.unmanaged_am));
    if !deselects.am_node_label_expression && !a.unmanaged_am {
        o.insert("amNodeLabelExpression".into(), json!(""));
    }
    if !deselects.timeouts {
        o.insert(
            "timeouts".into(),
            json!({"timeout": [{
                "type": "LIFETIME",
                "expiryTime": "UNLIMITED",
                "remainingTimeInSeconds": -1,
            }]}),
        );
    }
    Value::Object(o)
}

/// `resourceSecondsMap` as Jersey writes a `Map<String, Long>`.
fn resource_seconds() -> Value {
    json!({"entry": [
        {"key": "memory-mb", "value": "0"},
        {"key": "vcores", "value": "0"},
    ]})
}

/// The RM's `AppAttemptInfo` (one entry of `/apps/{id}/appattempts`).
pub fn attempt_info(a: &AttemptView, viewable: bool, user: &str) -> Value {
    let mut o = Map::new();
    o.insert("id".into(), json!(a.report.id.attempt_id));
    o.insert("startTime".into(), json!(a.report.start_ms));
    o.insert("finishedTime".into(), json!(a.report.finish_ms));
    let am = a.am.as_ref().filter(|_| viewable);
    let http = am.and_then(|am| am.node_http_address.clone());
    o.insert(
        "containerId".into(),
        json!(am.map(|am| am.id.to_string()).unwrap_or_default()),
    );
    o.insert(
        "nodeHttpAddress".into(),
        json!(http.clone().unwrap_or_default()),
    );
    o.insert(
        "nodeId".into(),
        json!(am.map(|am| am.node.to_string()).unwrap_or_default()),
    );
    let logs = match (am, &http) {
        (Some(am), Some(http)) => running_log_url(http, &am.id.to_string(), user),
        _ => String::new(),
    };
    o.insert("logsLink".into(), json!(logs));
    o.insert("blacklistedNodes".into(), json!(""));
    if am.is_some() {
        o.insert("nodesBlacklistedBySystem".into(), json!(""));
    }
    o.insert("appAttemptId".into(), json!(a.report.id.to_string()));
    o.insert("exportPorts".into(), json!(""));
    Value::Object(o)
}

/// `{"appAttempts": {"appAttempt": [...]}}`'s inner list.
pub fn attempts_info(listing: &AttemptListing) -> Vec<Value> {
    listing
        .attempts
        .iter()
        .map(|a| attempt_info(a, listing.viewable, &listing.user))
        .collect()
}

/// The common (`server.webapp.dao`) `AppAttemptInfo` of one attempt.
pub fn attempt_report_info(a: &AttemptReport) -> Value {
    let mut o = Map::new();
    o.insert("appAttemptId".into(), json!(a.id.to_string()));
    o.insert("host".into(), json!(a.host));
    o.insert("rpcPort".into(), json!(a.rpc_port));
    o.insert("trackingUrl".into(), json!(a.tracking_url));
    o.insert("originalTrackingUrl".into(), json!(a.original_tracking_url));
    o.insert("diagnosticsInfo".into(), json!(a.diagnostics));
    o.insert("appAttemptState".into(), json!(a.state.as_str()));
    if let Some(c) = a.am_container {
        o.insert("amContainerId".into(), json!(c.to_string()));
    }
    o.insert("startedTime".into(), json!(a.start_ms));
    o.insert("finishedTime".into(), json!(a.finish_ms));
    Value::Object(o)
}

/// The common `ContainerInfo` of an allocated container.
pub fn container_info(c: &ContainerReport, user: &str, now: u64) -> Value {
    let mut o = Map::new();
    o.insert("containerId".into(), json!(c.id.to_string()));
    o.insert("allocatedMB".into(), json!(c.resource.memory_mb));
    o.insert("allocatedVCores".into(), json!(c.resource.vcores));
    o.insert("assignedNodeId".into(), json!(c.node.to_string()));
    o.insert("priority".into(), json!(c.priority));
    o.insert("startedTime".into(), json!(c.created_ms));
    o.insert("finishedTime".into(), json!(0));
    o.insert("elapsedTime".into(), json!(elapsed(c.created_ms, 0, now)));
    o.insert("diagnosticsInfo".into(), json!(""));
    if let Some(http) = &c.node_http_address {
        o.insert(
            "logUrl".into(),
            json!(running_log_url(http, &c.id.to_string(), user)),
        );
    }
    o.insert("containerExitStatus".into(), json!(0));
    o.insert("containerState".into(), json!("RUNNING"));
    if let Some(http) = &c.node_http_address {
        o.insert("nodeHttpAddress".into(), json!(with_scheme(http)));
    }
    o.insert("nodeId".into(), json!(c.node.to_string()));
    o.insert(
        "allocatedResources".into(),
        json!({"entry": [
            {"key": "memory-mb", "value": c.resource.memory_mb.to_string()},
            {"key": "vcores", "value": c.resource.vcores.to_string()},
        ]}),
    );
    Value::Object(o)
}

/// Hadoop's name of a node state.
pub fn node_state_name(s: NodeState) -> &'static str {
    match s {
        NodeState::New => "NEW",
        NodeState::Running => "RUNNING",
        NodeState::Unhealthy => "UNHEALTHY",
        NodeState::Decommissioned => "DECOMMISSIONED",
        NodeState::Lost => "LOST",
        NodeState::Rebooted => "REBOOTED",
        NodeState::Decommissioning => "DECOMMISSIONING",
        NodeState::Shutdown => "SHUTDOWN",
    }
}

/// `NodeInfo`. Lost, decommissioned and rebooted nodes show no HTTP address.
pub fn node_info(n: &NodeReport) -> Value {
    let http = if matches!(
        n.state,
        NodeState::Lost | NodeState::Decommissioned | NodeState::Rebooted
    ) {
        String::new()
    } else {
        n.http_address.clone()
    };
    let avail = n.capability.saturating_sub_non_negative(n.used);
    json!({
        "rack": n.rack,
        "state": node_state_name(n.state),
        "id": n.id.to_string(),
        "nodeHostName": n.id.host,
        "nodeHTTPAddress": http,
        "lastHealthUpdate": n.last_health_report_ms,
        "version": n.version,
        "healthReport": n.health_report,
        "numContainers": n.num_containers,
        "usedMemoryMB": n.used.memory_mb,
        "availMemoryMB": avail.memory_mb,
        "usedVirtualCores": n.used.vcores,
        "availableVirtualCores": avail.vcores,
        "numRunningOpportContainers": 0,
        "usedMemoryOpportGB": 0,
        "usedVirtualCoresOpport": 0,
        "numQueuedContainers": 0,
        "resourceUtilization": {
            "nodePhysicalMemoryMB": 0,
            "nodeVirtualMemoryMB": 0,
            "nodeCPUUsage": 0.0,
            "aggregatedContainersPhysicalMemoryMB": 0,
            "aggregatedContainersVirtualMemoryMB": 0,
            "containersCPUUsage": 0.0,
        },
        "usedResource": resource(n.used),
        "availableResource": resource(avail),
    })
}

/// `ClusterMetricsInfo`; `capacity` tells the capacity scheduler's shape
/// (reserved resources in the total, usage across partitions).
pub fn cluster_metrics(u: &ClusterUsage, capacity: bool) -> Value {
    let avail = u.capability.saturating_sub_non_negative(u.used);
    let n = &u.nodes;
    let total_nodes = n.active
        + n.lost
        + n.decommissioned
        + n.rebooted
        + n.unhealthy
        + n.decommissioning
        + n.shutdown;
    let mut o = json!({
        "appsSubmitted": u.apps_submitted,
        "appsCompleted": u.apps_completed,
        "appsPending": u.apps_pending,
        "appsRunning": u.apps_running,
        "appsFailed": u.apps_failed,
        "appsKilled": u.apps_killed,
        "reservedMB": 0,
        "availableMB": avail.memory_mb,
        "allocatedMB": u.used.memory_mb,
        "reservedVirtualCores": 0,
        "availableVirtualCores": avail.vcores,
        "allocatedVirtualCores": u.used.vcores,
        "containersAllocated": u.containers,
        "containersReserved": 0,
        "containersPending": 0,
        "totalMB": avail.memory_mb + u.used.memory_mb,
        "totalVirtualCores": i64::from(avail.vcores) + i64::from(u.used.vcores),
        "totalNodes": total_nodes,
        "lostNodes": n.lost,
        "unhealthyNodes": n.unhealthy,
        "decommissioningNodes": n.decommissioning,
        "decommissionedNodes": n.decommissioned,
        "rebootedNodes": n.rebooted,
        "activeNodes": n.active,
        "shutdownNodes": n.shutdown,
    });
    if capacity {
        o["totalUsedResourcesAcrossPartition"] = resource(u.used);
        o["totalClusterResourcesAcrossPartition"] = resource(u.capability);
    }
    o
}
