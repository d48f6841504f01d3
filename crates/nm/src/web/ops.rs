//! The NodeManager's operations endpoints, as Hadoop's `HttpServer2`
//! serves them on the NM's web app (the NM has no `/isActive`):
//!
//! - `/jmx` (`JMXJsonServlet`): `Hadoop:service=NodeManager,name=NodeManagerMetrics`
//!   with the gauges Hadoop's `NodeManagerMetrics` has that the node's
//!   container snapshots give (containers initing and running, allocated
//!   containers, memory and vcores allocated and available, memory the
//!   containers use), `...,name=JvmMetrics` and `java.lang:type=OperatingSystem`
//!   with the process's figures as the RM's; `qry` and `get` filters;
//! - `/conf` (`ConfServlet`): the configuration the node started with,
//!   redacted by `hadoop.security.sensitive-config-keys`;
//! - `/stacks` (`StackServlet`): the process's OS threads
//!   (`spindle_web::stacks`).
//!
//! Not done: the cumulative counters (`ContainersLaunched`,
//! `...Completed`, `...Failed`, `...Killed`): a snapshot cannot count
//! containers the node no longer tracks, so they are left out rather than
//! reported wrong; the disk and cache gauges; `/logLevel`; `/stacks` under
//! `hadoop.security.instrumentation.requires.admin` with
//! `hadoop.security.authorization` is refused to everyone (the NM has no
//! admin ACL check).

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use spindle_common::{Configuration, Resource};
use spindle_web::conf_page::{self, Property, Redactor};
use spindle_web::jmx::{self, Bean};

use crate::containers::{ContainerManager, ContainerPhase, ContainerReport};

const SERVICE: &str = "Hadoop:service=NodeManager";
const REQUIRES_ADMIN_KEY: &str = "hadoop.security.instrumentation.requires.admin";
const AUTHORIZATION_KEY: &str = "hadoop.security.authorization";

/// What the operations pages read.
#[derive(Clone)]
pub struct NmOps {
    inner: Arc<Inner>,
}

struct Inner {
    containers: ContainerManager,
    /// The node's resource (what containers may have in all).
    resource: Resource,
    host: String,
    properties: Vec<Property>,
}

impl NmOps {
    /// The pages of a node on `host` with `resource`, whose configuration
    /// (redacted, see [`conf_properties`]) is `properties`.
    pub fn new(
        containers: ContainerManager,
        resource: Resource,
        host: impl Into<String>,
        properties: Vec<Property>,
    ) -> NmOps {
        NmOps {
            inner: Arc::new(Inner {
                containers,
                resource,
                host: host.into(),
                properties,
            }),
        }
    }

    fn flag(&self, key: &str) -> bool {
        self.inner
            .properties
            .iter()
            .find(|p| p.key == key)
            .is_some_and(|p| p.value.trim().eq_ignore_ascii_case("true"))
    }
}

/// `/jmx`, `/conf` and `/stacks`.
pub fn router(ops: NmOps) -> Router {
    Router::new()
        .route("/jmx", get(jmx_handler))
        .route("/conf", get(conf_handler))
        .route("/stacks", get(stacks))
        .with_state(ops)
}

/// Every property of `conf`, redacted by
/// `hadoop.security.sensitive-config-keys`, sorted by key.
pub fn conf_properties(conf: &Configuration) -> Vec<Property> {
    let redactor = Redactor::new(
        &conf
            .get("hadoop.security.sensitive-config-keys")
            .unwrap_or_else(|| conf_page::DEFAULT_SENSITIVE_KEYS.to_string()),
    );
    let mut keys: Vec<&str> = conf.keys().collect();
    keys.sort_unstable();
    keys.dedup();
    keys.into_iter()
        .filter_map(|k| {
            let value = conf.get(k)?;
            Some(Property {
                key: k.to_string(),
                value: redactor.redact(k, &value),
                is_final: conf.is_final(k),
                resource: conf
                    .origin_of(k)
                    .map_or_else(|| "programmatic".to_string(), |o| o.resource().to_string()),
            })
        })
        .collect()
}

/// `NodeManagerMetrics`' gauges from the containers the node tracks.
fn node_manager_metrics(node: Resource, host: &str, reports: &[ContainerReport]) -> Bean {
    let live: Vec<&ContainerReport> = reports
        .iter()
        .filter(|c| c.phase != ContainerPhase::Done)
        .collect();
    let initing = live
        .iter()
        .filter(|c| {
            matches!(
                c.phase,
                ContainerPhase::Localizing | ContainerPhase::Launching
            )
        })
        .count();
    let running = live
        .iter()
        .filter(|c| c.phase == ContainerPhase::Running)
        .count();
    let allocated_mb: i64 = live.iter().map(|c| c.resource.memory_mb).sum();
    let allocated_vcores: i64 = live.iter().map(|c| i64::from(c.resource.vcores)).sum();
    let available_mb = (node.memory_mb - allocated_mb).max(0);
    let available_vcores = (i64::from(node.vcores) - allocated_vcores).max(0);
    let (rss, vmem) = live
        .iter()
        .filter_map(|c| c.memory_bytes)
        .fold((0u64, 0u64), |(r, v), (cr, cv)| (r + cr, v + cv));
    let gb_up = |mb: i64| (mb + 1023).div_euclid(1024);
    let gb_down = |bytes: u64| bytes / (1024 * 1024 * 1024);
    Bean::new(
        format!("{SERVICE},name=NodeManagerMetrics"),
        "NodeManagerMetrics",
    )
    .attr("tag.Context", "yarn")
    .attr("tag.Hostname", host)
    .attr("ContainersIniting", initing)
    .attr("ContainersRunning", running)
    .attr("ContainersPaused", 0)
    .attr("ContainersReIniting", 0)
    .attr("AllocatedContainers", live.len())
    .attr("AllocatedGB", gb_up(allocated_mb))
    .attr("AvailableGB", available_mb.div_euclid(1024))
    .attr("AllocatedVCores", allocated_vcores)
    .attr("AvailableVCores", available_vcores)
    .attr("ContainerUsedMemGB", gb_down(rss))
    .attr("ContainerUsedVMemGB", gb_down(vmem))
}

/// The process's figures under Hadoop's `JvmMetrics` names, as the RM's.
fn process_beans(host: &str) -> Vec<Bean> {
    let p = jmx::process_stats();
    let mb = |b: Option<u64>| b.map_or(0.0, |b| (b as f64 / 1_048_576.0 * 100.0).round() / 100.0);
    vec![
        Bean::new(format!("{SERVICE},name=JvmMetrics"), "JvmMetrics")
            .attr("tag.Context", "jvm")
            .attr("tag.ProcessName", "NodeManager")
            .attr("tag.Hostname", host)
            .attr("MemHeapUsedM", mb(p.rss_bytes))
            .attr("MemHeapCommittedM", mb(p.rss_bytes))
            .attr("ThreadsRunnable", p.threads.unwrap_or(0)),
        Bean::new(
            "java.lang:type=OperatingSystem",
            "sun.management.OperatingSystemImpl",
        )
        .attr("OpenFileDescriptorCount", p.open_fds.unwrap_or(0))
        .attr("CommittedVirtualMemorySize", p.virtual_bytes.unwrap_or(0)),
    ]
}

type Params = Query<HashMap<String, String>>;

async fn jmx_handler(State(ops): State<NmOps>, Query(q): Params) -> Response {
    let reports = ops.inner.containers.reports();
    let mut beans = vec![node_manager_metrics(
        ops.inner.resource,
        &ops.inner.host,
        &reports,
    )];
    beans.extend(process_beans(&ops.inner.host));
    jmx::respond(
        &beans,
        q.get("qry").map(String::as_str),
        q.get("get").map(String::as_str),
    )
}

async fn conf_handler(State(ops): State<NmOps>, headers: HeaderMap, Query(q): Params) -> Response {
    conf_page::respond(
        &headers,
        q.get("format").map(String::as_str),
        q.get("name").map(String::as_str),
        |name| {
            ops.inner
                .properties
                .iter()
                .filter(|p| name.is_none_or(|n| n == p.key))
                .cloned()
                .collect()
        },
    )
}

async fn stacks(State(ops): State<NmOps>) -> Response {
    if ops.flag(REQUIRES_ADMIN_KEY) && ops.flag(AUTHORIZATION_KEY) {
        return (
            StatusCode::FORBIDDEN,
            "The NodeManager does not check administrators: /stacks is closed while \
             hadoop.security.instrumentation.requires.admin and \
             hadoop.security.authorization are on.",
        )
            .into_response();
    }
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        spindle_web::stacks::render(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use spindle_common::{ApplicationId, ContainerId};

    fn report(seq: i64, phase: ContainerPhase, mb: i64, vcores: i32) -> ContainerReport {
        let app = ApplicationId::new(1, 1);
        let attempt = spindle_common::ApplicationAttemptId::new(app, 1);
        ContainerReport {
            id: ContainerId::new(attempt, seq),
            user: "u".into(),
            resource: Resource::new(mb, vcores),
            phase,
            exit_status: 0,
            diagnostics: String::new(),
            pid: None,
            paths: None,
            memory_bytes: Some((512 << 20, 2 << 30)),
        }
    }

    #[test]
    fn metrics_from_snapshots_as_hadoop_rounds_them() {
        let reports = vec![
            report(1, ContainerPhase::Running, 1536, 1),
            report(2, ContainerPhase::Localizing, 1024, 2),
            report(3, ContainerPhase::Done, 4096, 4),
        ];
        let b = node_manager_metrics(Resource::new(8192, 8), "h", &reports);
        let a = |k: &str| b.attributes[k].clone();
        assert_eq!(a("ContainersRunning"), json!(1));
        assert_eq!(a("ContainersIniting"), json!(1));
        assert_eq!(a("AllocatedContainers"), json!(2));
        // 2560 MB: ceil for the allocated GB, floor for the available.
        assert_eq!(a("AllocatedGB"), json!(3));
        assert_eq!(a("AvailableGB"), json!(5));
        assert_eq!(a("AllocatedVCores"), json!(3));
        assert_eq!(a("AvailableVCores"), json!(5));
        assert_eq!(a("ContainerUsedVMemGB"), json!(4));
        assert_eq!(a("ContainerUsedMemGB"), json!(1));
        assert!(b.attributes.get("ContainersLaunched").is_none());
    }
}
