//! Reports turned into the JSON of Hadoop's web DAOs (`webapp/dao/*Info`),
//! with their field names and the values Hadoop gives; the XML form is the
//! same tree (`spindle_web::json_to_xml`).

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::{json, Map, Value};
use spindle_common::markup;
use spindle_common::resource::Resource;
use spindle_common::states::AppState;

use crate::cluster::nodes::NodeState;
use crate::model::reports::{
    AppView, AttemptListing, AttemptReport, AttemptView, ClusterUsage, ContainerReport, NodeReport,
};
use crate::state::AppListEntry;

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

/// `AppInfo`, typed: Hadoop's field names in Hadoop's order, written
/// straight to JSON (`serde_json::to_writer`) without a `Value` tree. The
/// members a Hadoop DAO leaves null are `None` and left out, as Jersey
/// does. Floats are written as the f64 of the f32 Hadoop holds, as a
/// `Value` built from an f32 writes them.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AppInfo<'a> {
    id: String,
    user: &'a str,
    name: &'a str,
    queue: &'a str,
    state: &'static str,
    final_status: &'static str,
    progress: f64,
    #[serde(rename = "trackingUI")]
    tracking_ui: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    tracking_url: Option<String>,
    diagnostics: &'a str,
    cluster_id: i64,
    application_type: &'a str,
    application_tags: &'a str,
    priority: i32,
    started_time: u64,
    launch_time: u64,
    finished_time: u64,
    elapsed_time: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    am_container_logs: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    am_host_http_address: Option<&'a str>,
    #[serde(rename = "amRPCAddress", skip_serializing_if = "Option::is_none")]
    am_rpc_address: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    master_node_id: Option<String>,
    #[serde(rename = "allocatedMB")]
    allocated_mb: i64,
    #[serde(rename = "allocatedVCores")]
    allocated_vcores: i32,
    #[serde(rename = "reservedMB")]
    reserved_mb: u8,
    #[serde(rename = "reservedVCores")]
    reserved_vcores: u8,
    running_containers: i32,
    memory_seconds: u8,
    vcore_seconds: u8,
    queue_usage_percentage: f64,
    cluster_usage_percentage: f64,
    resource_seconds_map: ResourceSeconds,
    #[serde(rename = "preemptedResourceMB")]
    preempted_resource_mb: u8,
    #[serde(rename = "preemptedResourceVCores")]
    preempted_resource_vcores: u8,
    #[serde(rename = "numNonAMContainerPreempted")]
    num_non_am_container_preempted: u8,
    #[serde(rename = "numAMContainerPreempted")]
    num_am_container_preempted: u8,
    preempted_memory_seconds: u8,
    preempted_vcore_seconds: u8,
    preempted_resource_seconds_map: ResourceSeconds,
    #[serde(skip_serializing_if = "Option::is_none")]
    log_aggregation_status: Option<&'static str>,
    unmanaged_application: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    am_node_label_expression: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timeouts: Option<Timeouts>,
}

/// `resourceSecondsMap` as Jersey writes a `Map<String, Long>` (every
/// figure 0: Spindle does not meter usage over time).
#[derive(Debug, Serialize)]
struct ResourceSeconds {
    entry: [Entry; 2],
}

#[derive(Debug, Serialize)]
struct Entry {
    key: &'static str,
    value: &'static str,
}

const NO_SECONDS: ResourceSeconds = ResourceSeconds {
    entry: [
        Entry {
            key: "memory-mb",
            value: "0",
        },
        Entry {
            key: "vcores",
            value: "0",
        },
    ],
};

/// `AppTimeoutsInfo` with its one LIFETIME timeout (UNLIMITED, -1 until one
/// is set).
#[derive(Debug, Serialize)]
struct Timeouts {
    timeout: [Timeout; 1],
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Timeout {
    #[serde(rename = "type")]
    kind: &'static str,
    expiry_time: String,
    remaining_time_in_seconds: i64,
}

impl<'a> AppInfo<'a> {
    /// The `AppInfo` of an entry whose tracking URL (the one the RM hands
    /// out; empty while there is none) is `tracking_url`. `cluster_id` is
    /// the RM's cluster timestamp; `now` the wall clock (for the elapsed
    /// time of a running application).
    pub fn new(
        e: &'a AppListEntry,
        tracking_url: &str,
        cluster_id: i64,
        now: u64,
        deselects: DeSelects,
    ) -> AppInfo<'a> {
        let not_ready = tracking_url.is_empty()
            || matches!(
                e.state,
                AppState::New | AppState::NewSaving | AppState::Submitted | AppState::Accepted
            );
        let tracking_ui = if not_ready {
            "UNASSIGNED"
        } else if e.finish_ms == 0 {
            "ApplicationMaster"
        } else {
            "History"
        };
        let seen = e.viewable;
        let (started, launched, finished, elapsed_ms) = if seen {
            (
                e.start_ms,
                e.launch_ms,
                e.finish_ms,
                elapsed(e.start_ms, e.finish_ms, now),
            )
        } else {
            (0, 0, 0, 0)
        };
        let am = e.am.as_ref().filter(|_| seen);
        let am_http = am.and_then(|am| am.node_http_address.as_deref());
        let (used, containers) = if seen && e.used_containers >= 0 {
            (e.used, e.used_containers)
        } else {
            (Resource::default(), 0)
        };
        let cluster_usage = if seen && e.cluster_capability.memory_mb > 0 {
            used.memory_mb as f64 * 100.0 / e.cluster_capability.memory_mb as f64
        } else {
            0.0
        };
        AppInfo {
            id: e.id.to_string(),
            user: &e.user,
            name: &e.name,
            queue: &e.queue,
            state: e.state.as_str(),
            final_status: e.final_status.as_str(),
            progress: f64::from(e.progress * 100.0),
            tracking_ui,
            tracking_url: (!not_ready).then(|| with_scheme(tracking_url)),
            diagnostics: &e.diagnostics,
            cluster_id,
            application_type: &e.app_type,
            application_tags: &e.tags,
            priority: e.priority,
            started_time: started,
            launch_time: launched,
            finished_time: finished,
            elapsed_time: elapsed_ms,
            am_container_logs: am
                .zip(am_http)
                .map(|(am, http)| running_log_url(http, &am.id.to_string(), &e.user)),
            am_host_http_address: am_http,
            am_rpc_address: (seen
                && e.am_host != "N/A"
                && !e.am_host.is_empty()
                && e.am_rpc_port != -1)
                .then(|| format!("{}:{}", e.am_host, e.am_rpc_port)),
            master_node_id: am.map(|am| am.node.to_string()),
            allocated_mb: used.memory_mb,
            allocated_vcores: used.vcores,
            reserved_mb: 0,
            reserved_vcores: 0,
            running_containers: containers,
            memory_seconds: 0,
            vcore_seconds: 0,
            queue_usage_percentage: 0.0,
            cluster_usage_percentage: f64::from(cluster_usage as f32),
            resource_seconds_map: NO_SECONDS,
            preempted_resource_mb: 0,
            preempted_resource_vcores: 0,
            num_non_am_container_preempted: 0,
            num_am_container_preempted: 0,
            preempted_memory_seconds: 0,
            preempted_vcore_seconds: 0,
            preempted_resource_seconds_map: NO_SECONDS,
            log_aggregation_status: e.log_aggregation.map(|s| s.as_str()),
            unmanaged_application: e.unmanaged_am,
            am_node_label_expression: (!deselects.am_node_label_expression && !e.unmanaged_am)
                .then_some(""),
            timeouts: (!deselects.timeouts).then_some(Timeouts {
                timeout: [Timeout {
                    kind: "LIFETIME",
                    expiry_time: e.lifetime.map_or_else(
                        || "UNLIMITED".to_string(),
                        |(expiry, _)| crate::iso8601::format(expiry),
                    ),
                    remaining_time_in_seconds: e.lifetime.map_or(-1, |(_, left)| left),
                }],
            }),
        }
    }
}

impl AppInfo<'_> {
    /// The `<app>` element JAXB writes for this DAO: what
    /// `spindle_web::json_to_xml` makes of its JSON (members as elements in
    /// order, absent ones and non-finite floats left out), written
    /// directly.
    pub fn write_xml(&self, out: &mut String) {
        let mut x = Xml(out);
        x.open("app");
        x.text("id", &self.id);
        x.text("user", self.user);
        x.text("name", self.name);
        x.text("queue", self.queue);
        x.text("state", self.state);
        x.text("finalStatus", self.final_status);
        x.float("progress", self.progress);
        x.text("trackingUI", self.tracking_ui);
        if let Some(url) = &self.tracking_url {
            x.text("trackingUrl", url);
        }
        x.text("diagnostics", self.diagnostics);
        x.plain("clusterId", self.cluster_id);
        x.text("applicationType", self.application_type);
        x.text("applicationTags", self.application_tags);
        x.plain("priority", self.priority);
        x.plain("startedTime", self.started_time);
        x.plain("launchTime", self.launch_time);
        x.plain("finishedTime", self.finished_time);
        x.plain("elapsedTime", self.elapsed_time);
        if let Some(logs) = &self.am_container_logs {
            x.text("amContainerLogs", logs);
        }
        if let Some(http) = self.am_host_http_address {
            x.text("amHostHttpAddress", http);
        }
        if let Some(rpc) = &self.am_rpc_address {
            x.text("amRPCAddress", rpc);
        }
        if let Some(node) = &self.master_node_id {
            x.text("masterNodeId", node);
        }
        x.plain("allocatedMB", self.allocated_mb);
        x.plain("allocatedVCores", self.allocated_vcores);
        x.plain("reservedMB", self.reserved_mb);
        x.plain("reservedVCores", self.reserved_vcores);
        x.plain("runningContainers", self.running_containers);
        x.plain("memorySeconds", self.memory_seconds);
        x.plain("vcoreSeconds", self.vcore_seconds);
        x.float("queueUsagePercentage", self.queue_usage_percentage);
        x.float("clusterUsagePercentage", self.cluster_usage_percentage);
        x.seconds("resourceSecondsMap", &self.resource_seconds_map);
        x.plain("preemptedResourceMB", self.preempted_resource_mb);
        x.plain("preemptedResourceVCores", self.preempted_resource_vcores);
        x.plain(
            "numNonAMContainerPreempted",
            self.num_non_am_container_preempted,
        );
        x.plain("numAMContainerPreempted", self.num_am_container_preempted);
        x.plain("preemptedMemorySeconds", self.preempted_memory_seconds);
        x.plain("preemptedVcoreSeconds", self.preempted_vcore_seconds);
        x.seconds(
            "preemptedResourceSecondsMap",
            &self.preempted_resource_seconds_map,
        );
        if let Some(status) = self.log_aggregation_status {
            x.text("logAggregationStatus", status);
        }
        x.plain("unmanagedApplication", self.unmanaged_application);
        if let Some(label) = self.am_node_label_expression {
            x.text("amNodeLabelExpression", label);
        }
        if let Some(timeouts) = &self.timeouts {
            x.open("timeouts");
            for t in &timeouts.timeout {
                x.open("timeout");
                x.text("type", t.kind);
                x.text("expiryTime", &t.expiry_time);
                x.plain("remainingTimeInSeconds", t.remaining_time_in_seconds);
                x.close("timeout");
            }
            x.close("timeouts");
        }
        x.close("app");
    }
}

/// Elements as `spindle_web::json_to_xml` writes them.
struct Xml<'o>(&'o mut String);

impl Xml<'_> {
    fn open(&mut self, name: &str) {
        self.0.push('<');
        self.0.push_str(name);
        self.0.push('>');
    }

    fn close(&mut self, name: &str) {
        self.0.push_str("</");
        self.0.push_str(name);
        self.0.push('>');
    }

    /// A string member, escaped.
    fn text(&mut self, name: &str, value: &str) {
        self.open(name);
        markup::escape_xml_into(self.0, value);
        self.close(name);
    }

    /// An integer or boolean member.
    fn plain(&mut self, name: &str, value: impl std::fmt::Display) {
        self.open(name);
        let _ = write!(self.0, "{value}");
        self.close(name);
    }

    /// A float member as JSON writes it; a non-finite one (null in JSON)
    /// is left out.
    fn float(&mut self, name: &str, value: f64) {
        if let Some(n) = serde_json::Number::from_f64(value) {
            self.plain(name, n);
        }
    }

    fn seconds(&mut self, name: &str, map: &ResourceSeconds) {
        self.open(name);
        for e in &map.entry {
            self.open("entry");
            self.text("key", e.key);
            self.text("value", e.value);
            self.close("entry");
        }
        self.close(name);
    }
}

/// `AppInfo` of a view whose tracking URL is already the one the RM hands
/// out, as a JSON tree (one application's `/apps/{id}`).
pub fn app_info(view: &AppView, cluster_id: i64, now: u64, deselects: DeSelects) -> Value {
    let entry = AppListEntry::of_view(view);
    let info = AppInfo::new(
        &entry,
        &view.report.app.tracking_url,
        cluster_id,
        now,
        deselects,
    );
    serde_json::to_value(&info).unwrap_or(Value::Null)
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
        "state": n.state.as_str(),
        "id": n.id.to_string(),
        "nodeHostName": n.id.host.as_str(),
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
