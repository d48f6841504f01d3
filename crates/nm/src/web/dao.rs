//! The JSON bodies of Hadoop's `NMWebServices` (`webapp/dao/NodeInfo`,
//! `AppInfo`, `ContainerInfo`, `ContainerLogsInfo`), built from snapshots of
//! the node's tables. Pure: no I/O, no clock (times come in as arguments).

use serde_json::{json, Value};
use spindle_common::time::UtcTime;

use crate::containers::{AppReport, ContainerPhase, ContainerReport};

/// What `/ws/v1/node/info` reports about the node.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeView {
    /// `host:port`, the NodeId.
    pub node_id: String,
    pub node_host: String,
    pub memory_mb: i64,
    pub vcores: i32,
    pub vmem_pmem_ratio: f64,
    pub pmem_check: bool,
    pub vmem_check: bool,
    pub healthy: bool,
    pub health_report: String,
    pub last_health_ms: i64,
    pub started_ms: i64,
    pub version: String,
}

/// `{"nodeInfo": ...}` (Hadoop 3.3's `NodeInfo`).
pub fn node_info(n: &NodeView) -> Value {
    // Hadoop's ResourceView: the virtual memory allowed to containers is
    // their physical memory times `vmem-pmem-ratio`.
    let vmem_mb = (n.memory_mb as f64 * n.vmem_pmem_ratio) as i64;
    json!({"nodeInfo": {
        "healthReport": n.health_report,
        "totalVmemAllocatedContainersMB": vmem_mb,
        "totalPmemAllocatedContainersMB": n.memory_mb,
        "totalVCoresAllocatedContainers": n.vcores,
        "vmemCheckEnabled": n.vmem_check,
        "pmemCheckEnabled": n.pmem_check,
        "lastNodeUpdateTime": n.last_health_ms,
        "nmStartupTime": n.started_ms,
        "nodeHealthy": n.healthy,
        "nodeManagerVersion": n.version,
        "nodeManagerBuildVersion": n.version,
        "nodeManagerVersionBuiltOn": "",
        "hadoopVersion": n.version,
        "hadoopBuildVersion": n.version,
        "hadoopVersionBuiltOn": "",
        "id": n.node_id,
        "nodeHostName": n.node_host,
    }})
}

/// Hadoop's NodeManager `ApplicationState` names, in order.
pub const APP_STATES: [&str; 6] = [
    "NEW",
    "INITING",
    "RUNNING",
    "FINISHING_CONTAINERS_WAIT",
    "APPLICATION_RESOURCES_CLEANINGUP",
    "FINISHED",
];

/// The NodeManager `ApplicationState` of an application.
pub fn app_state(a: &AppReport) -> &'static str {
    if a.finishing {
        "FINISHING_CONTAINERS_WAIT"
    } else {
        "RUNNING"
    }
}

/// One `AppInfo` (without its root element).
pub fn app_info(a: &AppReport) -> Value {
    json!({
        "id": a.id.to_string(),
        "state": app_state(a),
        "user": a.user,
        "containerids": a.containers.iter().map(ToString::to_string).collect::<Vec<_>>(),
    })
}

/// The NodeManager `ContainerState` of a container.
pub fn container_state(c: &ContainerReport) -> &'static str {
    match c.phase {
        ContainerPhase::Localizing => "LOCALIZING",
        // Localized, its script being written: Hadoop's SCHEDULED.
        ContainerPhase::Launching => "SCHEDULED",
        ContainerPhase::Running => "RUNNING",
        ContainerPhase::Done => "DONE",
    }
}

/// `http://<node http address>/node/containerlogs/<container>/<user>`,
/// the page listing a container's logs (Hadoop's `containerLogsLink`).
pub fn logs_link(http_address: &str, c: &ContainerReport) -> String {
    format!(
        "http://{http_address}/node/containerlogs/{}/{}",
        c.id, c.user
    )
}

/// One `ContainerInfo` (without its root element); `log_files` are the
/// names of the files in its log dirs.
pub fn container_info(
    c: &ContainerReport,
    node_id: &str,
    http_address: &str,
    log_files: &[String],
) -> Value {
    json!({
        "id": c.id.to_string(),
        "state": container_state(c),
        "exitCode": c.exit_status,
        "diagnostics": c.diagnostics,
        "user": c.user,
        "totalMemoryNeededMB": c.resource.memory_mb,
        "totalVCoresNeeded": c.resource.vcores,
        "containerLogsLink": logs_link(http_address, c),
        "nodeId": node_id,
        "containerLogFiles": log_files,
    })
}

/// Whether the container's logs may be read yet (Hadoop's
/// `ContainerLogsUtils.checkState`): the message of the refusal if not.
pub fn logs_readable(c: &ContainerReport) -> Result<(), String> {
    match c.phase {
        ContainerPhase::Localizing | ContainerPhase::Launching => Err(format!(
            "Container is not yet running. Current state is {}",
            container_state(c)
        )),
        ContainerPhase::Running | ContainerPhase::Done => Ok(()),
    }
}

/// Whether Hadoop calls the container running (for the note after a log).
pub fn is_running(c: Option<&ContainerReport>) -> bool {
    c.is_some_and(|c| c.phase == ContainerPhase::Running)
}

/// One log file of a container: name, size, modification time (ms).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFile {
    pub name: String,
    pub size: u64,
    pub modified_ms: i64,
}

/// `{"containerLogsInfo": [...]}`: the node's local logs of a container, as
/// one `ContainerLogsInfo` of type LOCAL.
pub fn container_logs_info(container: &str, node_id: &str, files: &[LogFile]) -> Value {
    let infos: Vec<Value> = files
        .iter()
        .map(|f| {
            json!({
                "fileName": f.name,
                "fileSize": f.size.to_string(),
                "lastModifiedTime": hadoop_time(f.modified_ms),
            })
        })
        .collect();
    json!({"containerLogsInfo": [{
        "containerLogInfo": infos,
        "logAggregationType": "LOCAL",
        "containerId": container,
        "nodeId": node_id,
    }]})
}

/// Hadoop's `Times.format`: `EEE MMM dd HH:mm:ss Z yyyy` (in UTC here), or
/// `N/A` for times not after the epoch.
pub fn hadoop_time(ms: i64) -> String {
    if ms <= 0 {
        return "N/A".to_string();
    }
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let t = UtcTime::of_ms(ms);
    format!(
        "{} {} {:02} {:02}:{:02}:{:02} +0000 {}",
        DAYS[t.weekday as usize],
        MONTHS[t.month as usize - 1],
        t.day,
        t.hour,
        t.minute,
        t.second,
        t.year
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use spindle_common::{exit_status, ContainerId, Resource};

    fn report(phase: ContainerPhase) -> ContainerReport {
        ContainerReport {
            id: "container_1700000000000_0001_01_000002"
                .parse::<ContainerId>()
                .expect("id"),
            user: "alice".into(),
            resource: Resource::new(1024, 2),
            phase,
            exit_status: exit_status::INVALID,
            diagnostics: String::new(),
            pid: None,
            paths: None,
            memory_bytes: None,
        }
    }

    #[test]
    fn times_as_hadoop_formats_them() {
        assert_eq!(hadoop_time(0), "N/A");
        assert_eq!(hadoop_time(1_000), "Thu Jan 01 00:00:01 +0000 1970");
        // 2024-02-29T13:05:09Z, a leap day.
        assert_eq!(
            hadoop_time(1_709_211_909_123),
            "Thu Feb 29 13:05:09 +0000 2024"
        );
    }

    #[test]
    fn container_info_has_hadoop_fields() {
        let c = report(ContainerPhase::Running);
        let v = container_info(&c, "h:1", "h:8042", &["stderr".into()]);
        assert_eq!(v["state"], "RUNNING");
        assert_eq!(v["exitCode"], -1000);
        assert_eq!(v["totalMemoryNeededMB"], 1024);
        assert_eq!(
            v["containerLogsLink"],
            "http://h:8042/node/containerlogs/container_1700000000000_0001_01_000002/alice"
        );
        assert_eq!(v["containerLogFiles"][0], "stderr");
        assert!(logs_readable(&c).is_ok());
        assert_eq!(
            logs_readable(&report(ContainerPhase::Localizing)),
            Err("Container is not yet running. Current state is LOCALIZING".to_string())
        );
    }

    #[test]
    fn logs_info_is_a_local_list() {
        let files = [LogFile {
            name: "stdout".into(),
            size: 12,
            modified_ms: 1_000,
        }];
        let v = container_logs_info("container_1_0001_01_000001", "h:1", &files);
        let info = &v["containerLogsInfo"][0];
        assert_eq!(info["logAggregationType"], "LOCAL");
        assert_eq!(info["containerLogInfo"][0]["fileSize"], "12");
        assert_eq!(info["containerLogInfo"][0]["fileName"], "stdout");
    }
}
