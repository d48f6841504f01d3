//! The operations endpoints of the RM's web server, as Hadoop's
//! `HttpServer2` and `ResourceManager` serve them:
//!
//! - `/jmx` (`JMXJsonServlet`): the metrics2 beans dashboards read,
//!   `Hadoop:service=ResourceManager,name=ClusterMetrics`, one
//!   `...,name=QueueMetrics,q0=root[,q1=..]` per queue, `...,name=RMNMInfo`
//!   (`LiveNodeManagers` as a JSON string), and for the process
//!   `...,name=JvmMetrics` and `java.lang:type=OperatingSystem` with what a
//!   Rust process has (see [`process_beans`]); `qry` and `get` filters;
//! - `/prom` (Hadoop 3.4's `PrometheusMetricsSink`), only when
//!   `hadoop.prometheus.endpoint.enabled` (404 otherwise, as Hadoop);
//! - `/conf` (`ConfServlet`), redacted by `hadoop.security.sensitive-config-keys`;
//! - `/isActive` (`IsActiveServlet`);
//! - [`around`]: a standby RM's answer to everything else, as
//!   `RMWebAppFilter`: a 307 to the active RM's web address (found by
//!   asking the other RMs' `/isActive`), or "There is no active RM right now."
//!
//! Everything comes from named queries of the state (`cluster_metrics`,
//! `queue_info`, `node_reports`); nothing here changes it.
//! - `/logLevel` (`LogLevel.Servlet`): a `tracing` target's level, shown
//!   and set at run time (`spindle_web::log_level`), for administrators
//!   when `hadoop.security.authorization` is on (`HttpServer2.hasAdministratorAccess`).
//!
//! - `/stacks` (`StackServlet`): the OS threads of the process with their
//!   names and states (`spindle_web::stacks`; tokio tasks cannot be listed).
//!
//! Not done: the queue metrics Spindle does not keep
//! (pending and reserved resources, containers allocated, `running_*`
//! buckets) are left out rather than reported as zeros.

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::time::Duration;

use axum::extract::{Query, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};
use spindle_common::markup::escape;
use spindle_web::conf_page::{self, Property, Redactor};
use spindle_web::jmx::{self, Bean};
use spindle_web::prom::{self, Kind, Record};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::WebContext;
use crate::cluster::nodes::NodeState;
use crate::model::access::Caller;
use crate::model::reports::QueueInfo;
use crate::runtime::active::ServiceState;

pub fn routes() -> Router<WebContext> {
    Router::new()
        .route("/jmx", get(jmx_handler))
        .route("/prom", get(prom_handler))
        .route("/conf", get(conf_handler))
        .route("/isActive", get(is_active))
        .route("/logLevel", get(log_level))
        .route("/stacks", get(stacks))
}

/// Hadoop's `StackServlet`: for administrators only when
/// `hadoop.security.instrumentation.requires.admin` (`isInstrumentationAccessAllowed`);
/// the OS threads of the process (see `spindle_web::stacks`).
async fn stacks(State(web): State<WebContext>, Query(q): Params) -> Response {
    let requires_admin = web
        .conf
        .get("hadoop.security.instrumentation.requires.admin")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    if requires_admin {
        if let Err(m) = admin_access(&web, q.get("user.name").map(String::as_str)).await {
            return (StatusCode::FORBIDDEN, m).into_response();
        }
    }
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        spindle_web::stacks::render(),
    )
        .into_response()
}

/// One metrics2 source: its record name, bean name, tags and values.
struct Source {
    record: String,
    bean: String,
    modeler: String,
    tags: Vec<(String, String)>,
    metrics: Vec<(String, Kind, f64)>,
    /// Attributes that are not numbers (`LiveNodeManagers`).
    other: Vec<(String, Value)>,
}

impl Source {
    fn bean(&self) -> Bean {
        let mut b = Bean::new(&self.bean, &self.modeler);
        for (k, v) in &self.tags {
            b = b.attr(&format!("tag.{k}"), v.clone());
        }
        for (k, kind, v) in &self.metrics {
            let value = match kind {
                Kind::Counter => json!(*v as i64),
                Kind::Gauge if v.fract() == 0.0 => json!(*v as i64),
                Kind::Gauge => json!(v),
            };
            b = b.attr(k, value);
        }
        for (k, v) in &self.other {
            b = b.attr(k, v.clone());
        }
        b
    }

    fn record(&self) -> Record {
        Record {
            name: self.record.clone(),
            tags: self.tags.clone(),
            metrics: self.metrics.clone(),
        }
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".to_string())
}

const SERVICE: &str = "Hadoop:service=ResourceManager";

/// Every source: the RM's (when active) and the process's.
async fn sources(web: &WebContext) -> Vec<Source> {
    let host = hostname();
    let core = &web.rm().core;
    let mut out = Vec::new();
    if let Ok(m) = core.query(|s| s.cluster_metrics()).await {
        use Kind::Gauge;
        out.push(Source {
            record: "ClusterMetrics".into(),
            bean: format!("{SERVICE},name=ClusterMetrics"),
            modeler: "ClusterMetrics".into(),
            tags: vec![
                ("ClusterMetrics".into(), "ResourceManager".into()),
                ("Context".into(), "yarn".into()),
                ("Hostname".into(), host.clone()),
            ],
            metrics: vec![
                ("NumActiveNMs".into(), Gauge, f64::from(m.node_managers)),
                (
                    "NumDecommissionedNMs".into(),
                    Gauge,
                    f64::from(m.decommissioned),
                ),
                ("NumLostNMs".into(), Gauge, f64::from(m.lost)),
                ("NumUnhealthyNMs".into(), Gauge, f64::from(m.unhealthy)),
                ("NumRebootedNMs".into(), Gauge, f64::from(m.rebooted)),
                (
                    "NumDecommissioningNMs".into(),
                    Gauge,
                    f64::from(m.decommissioning),
                ),
                ("NumShutdownNMs".into(), Gauge, f64::from(m.shutdown)),
            ],
            other: Vec::new(),
        });
    }
    let anonymous = Caller::new("dr.who", Vec::new());
    if let Ok(Some(root)) = core
        .query(move |s| s.queue_info("root", false, true, true, &anonymous))
        .await
    {
        queue_sources(&root, &host, &mut out);
    }
    let all: BTreeSet<NodeState> = NodeState::ALL.into_iter().collect();
    if let Ok(nodes) = core.query(move |s| s.node_reports(&all)).await {
        // Hadoop's RMNMInfo: the live nodes as a JSON string.
        let live: Vec<Value> = nodes
            .iter()
            .filter(|n| n.state.is_active())
            .map(|n| {
                json!({
                    "HostName": n.id.host.as_str(),
                    "Rack": n.rack,
                    "State": n.state.as_str(),
                    "NodeId": n.id.to_string(),
                    "NodeHTTPAddress": n.http_address,
                    "LastHealthUpdate": n.last_health_report_ms,
                    "HealthReport": n.health_report,
                    "NumContainers": n.num_containers,
                    "UsedMemoryMB": n.used.memory_mb,
                    "AvailableMemoryMB": n.capability.memory_mb - n.used.memory_mb,
                })
            })
            .collect();
        out.push(Source {
            record: "RMNMInfo".into(),
            bean: format!("{SERVICE},name=RMNMInfo"),
            modeler: "org.apache.hadoop.yarn.server.resourcemanager.RMNMInfo".into(),
            tags: Vec::new(),
            metrics: Vec::new(),
            other: vec![(
                "LiveNodeManagers".into(),
                Value::String(Value::Array(live).to_string()),
            )],
        });
    }
    out.extend(process_sources(&host));
    out
}

/// `QueueMetrics,q0=root,q1=a,...`: the bean name's key properties of a
/// queue path.
pub fn queue_bean_keys(path: &str) -> String {
    path.split('.')
        .enumerate()
        .map(|(i, q)| format!("q{i}={q}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn queue_sources(q: &QueueInfo, host: &str, out: &mut Vec<Source>) {
    use Kind::{Counter, Gauge};
    let r = &q.queue;
    let st = &q.statistics;
    let keys = queue_bean_keys(&r.path);
    out.push(Source {
        record: "QueueMetrics".into(),
        bean: format!("{SERVICE},name=QueueMetrics,{keys}"),
        modeler: format!("QueueMetrics,{keys}"),
        tags: vec![
            ("Queue".into(), r.path.clone()),
            ("Context".into(), "yarn".into()),
            ("Hostname".into(), host.to_string()),
        ],
        metrics: vec![
            ("AppsSubmitted".into(), Counter, st.submitted as f64),
            ("AppsRunning".into(), Gauge, st.running as f64),
            ("AppsPending".into(), Gauge, st.pending as f64),
            ("AppsCompleted".into(), Counter, st.completed as f64),
            ("AppsKilled".into(), Counter, st.killed as f64),
            ("AppsFailed".into(), Counter, st.failed as f64),
            ("AllocatedMB".into(), Gauge, r.used.memory_mb as f64),
            ("AllocatedVCores".into(), Gauge, f64::from(r.used.vcores)),
            ("AvailableMB".into(), Gauge, st.available.memory_mb as f64),
            (
                "AvailableVCores".into(),
                Gauge,
                f64::from(st.available.vcores),
            ),
            ("ActiveApplications".into(), Gauge, r.running_apps as f64),
        ],
        other: Vec::new(),
    });
    for c in &q.children {
        queue_sources(c, host, out);
    }
}

/// The process's own: Hadoop's `JvmMetrics` names where a Rust process has
/// the quantity (`MemHeapUsedM` and `MemHeapCommittedM` = resident memory
/// in MB, `ThreadsRunnable` = the process's threads), and
/// `java.lang:type=OperatingSystem`'s `OpenFileDescriptorCount`.
fn process_sources(host: &str) -> Vec<Source> {
    let p = jmx::process_stats();
    let mb = |b: Option<u64>| b.map_or(0.0, |b| (b as f64 / 1_048_576.0 * 100.0).round() / 100.0);
    vec![
        Source {
            record: "JvmMetrics".into(),
            bean: format!("{SERVICE},name=JvmMetrics"),
            modeler: "JvmMetrics".into(),
            tags: vec![
                ("Context".into(), "jvm".into()),
                ("ProcessName".into(), "ResourceManager".into()),
                ("Hostname".into(), host.to_string()),
            ],
            metrics: vec![
                ("MemHeapUsedM".into(), Kind::Gauge, mb(p.rss_bytes)),
                ("MemHeapCommittedM".into(), Kind::Gauge, mb(p.rss_bytes)),
                (
                    "ThreadsRunnable".into(),
                    Kind::Gauge,
                    p.threads.unwrap_or(0) as f64,
                ),
            ],
            other: Vec::new(),
        },
        Source {
            record: "OperatingSystem".into(),
            bean: "java.lang:type=OperatingSystem".into(),
            modeler: "sun.management.OperatingSystemImpl".into(),
            tags: Vec::new(),
            metrics: Vec::new(),
            other: vec![
                (
                    "OpenFileDescriptorCount".into(),
                    json!(p.open_fds.unwrap_or(0)),
                ),
                (
                    "CommittedVirtualMemorySize".into(),
                    json!(p.virtual_bytes.unwrap_or(0)),
                ),
            ],
        },
    ]
}

type Params = Query<HashMap<String, String>>;

async fn jmx_handler(State(web): State<WebContext>, Query(q): Params) -> Response {
    let beans: Vec<Bean> = sources(&web).await.iter().map(Source::bean).collect();
    jmx::respond(
        &beans,
        q.get("qry").map(String::as_str),
        q.get("get").map(String::as_str),
    )
}

fn prometheus_enabled(web: &WebContext) -> bool {
    web.conf
        .get("hadoop.prometheus.endpoint.enabled")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

async fn prom_handler(State(web): State<WebContext>) -> Response {
    if !prometheus_enabled(&web) {
        return StatusCode::NOT_FOUND.into_response();
    }
    let records: Vec<Record> = sources(&web)
        .await
        .iter()
        .filter(|s| !s.metrics.is_empty())
        .map(Source::record)
        .collect();
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        prom::render(&records),
    )
        .into_response()
}

/// The configuration's properties, redacted, sorted by key.
fn properties(web: &WebContext, only: Option<&str>) -> Vec<Property> {
    let redactor = Redactor::new(
        &web.conf
            .get("hadoop.security.sensitive-config-keys")
            .unwrap_or_else(|| conf_page::DEFAULT_SENSITIVE_KEYS.to_string()),
    );
    let mut keys: Vec<&str> = web.conf.keys().collect();
    keys.sort_unstable();
    keys.dedup();
    keys.into_iter()
        .filter(|k| only.is_none_or(|o| o == *k))
        .filter_map(|k| {
            let value = web.conf.get(k)?;
            Some(Property {
                key: k.to_string(),
                value: redactor.redact(k, &value),
                is_final: web.conf.is_final(k),
                resource: web
                    .conf
                    .origin_of(k)
                    .map_or_else(|| "programmatic".to_string(), |o| o.resource().to_string()),
            })
        })
        .collect()
}

async fn conf_handler(
    State(web): State<WebContext>,
    headers: HeaderMap,
    Query(q): Params,
) -> Response {
    conf_page::respond(
        &headers,
        q.get("format").map(String::as_str),
        q.get("name").map(String::as_str),
        |name| properties(&web, name),
    )
}

/// Hadoop's `IsActiveServlet` texts.
pub const ACTIVE: &str = "I am Active!";
pub const NOT_ACTIVE: &str = "I am not Active!";

async fn is_active(State(web): State<WebContext>) -> Response {
    if web.control.service_state() == ServiceState::Active {
        (StatusCode::OK, ACTIVE).into_response()
    } else {
        (StatusCode::METHOD_NOT_ALLOWED, NOT_ACTIVE).into_response()
    }
}

const MARKER: &str = "<!-- OUTPUT -->";

fn html(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response()
}

/// Hadoop's `HttpServer2.hasAdministratorAccess`: everyone while
/// `hadoop.security.authorization` is off; else the `user.name` must be in
/// the admin ACL. `Err` is the 403 message.
async fn admin_access(web: &WebContext, user: Option<&str>) -> Result<(), String> {
    let authorization = web
        .conf
        .get("hadoop.security.authorization")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    if !authorization {
        return Ok(());
    }
    let Some(user) = user.filter(|u| !u.is_empty()) else {
        return Err("Unauthenticated users are not authorized to access this page.".into());
    };
    let acl = web
        .rm()
        .core
        .query(|s| s.admin_acl().clone())
        .await
        .map_err(|_| "the ResourceManager is not active".to_string())?;
    // The user's groups whatever yarn.acl.enable says, as Hadoop's
    // `userHasAdministratorAccess` and the RPC admin check look them up.
    let groups = if acl.allows_everyone() {
        Vec::new()
    } else {
        web.rm().groups.groups(user).await
    };
    if acl.allows(user, &groups) {
        Ok(())
    } else {
        Err(format!("User {user} is unauthorized to access this page."))
    }
}

async fn log_level(State(web): State<WebContext>, Query(q): Params) -> Response {
    if let Err(m) = admin_access(&web, q.get("user.name").map(String::as_str)).await {
        return (StatusCode::FORBIDDEN, m).into_response();
    }
    let mut out = String::from(
        "<!DOCTYPE html><html><head><title>Log Level</title></head><body><h1>Log Level</h1>\n",
    );
    if let Some(name) = q.get("log").map(|n| n.trim()).filter(|n| !n.is_empty()) {
        if !spindle_web::log_level::valid_name(name) {
            return (StatusCode::BAD_REQUEST, format!("Bad log name : {name}")).into_response();
        }
        out.push_str("<br /><hr /><h3>Results</h3>\n");
        out.push_str(&format!(
            "{MARKER}Submitted Log Name: <b>{}</b><br />\n",
            escape(name)
        ));
        out.push_str(&format!("{MARKER}Log Class: <b>tracing</b><br />\n"));
        if let Some(level) = q.get("level").filter(|l| !l.is_empty()) {
            out.push_str(&format!(
                "{MARKER}Submitted Level: <b>{}</b><br />\n",
                escape(level)
            ));
            match spindle_web::log_level::set(name, level) {
                Ok(_) => out.push_str(&format!(
                    "{MARKER}<div class='text-success'>Setting Level to <strong>{}</strong> ...</div><br />\n",
                    escape(level)
                )),
                Err(e) => out.push_str(&format!(
                    "{MARKER}<div class='text-danger'>{}</div><br />\n",
                    escape(&e)
                )),
            }
        }
        let effective = spindle_web::log_level::get(name).unwrap_or_else(|| "unknown".into());
        out.push_str(&format!(
            "{MARKER}Effective Level: <b>{effective}</b><br />\n"
        ));
    }
    out.push_str(
        "<form>Log: <input type='text' size='50' name='log' /> \
         <input type='submit' value='Get Log Level' /></form>\n\
         <form>Log: <input type='text' size='50' name='log' /> Level: \
         <input type='text' name='level' /> <input type='submit' value='Set Log Level' /></form>\n\
         </body></html>\n",
    );
    html(StatusCode::OK, out)
}

/// Whether a standby RM answers `path` itself (Hadoop's
/// `RMWebAppFilter.shouldRedirect` is false): the operations endpoints,
/// `/ws/v1/cluster/info`, `/cluster` and the proxy.
pub fn standby_serves(path: &str) -> bool {
    const OWN: [&str; 8] = [
        "/conf",
        "/stacks",
        "/logLevel",
        "/logs",
        "/jmx",
        "/prom",
        "/isActive",
        "/ws/v1/cluster/info",
    ];
    OWN.contains(&path)
        || path == "/cluster"
        || path.starts_with("/logs/")
        || path.starts_with("/static/")
        || path.starts_with("/proxy/")
}

/// RMWebAppFilter's back-off: `5 * 2^retries` seconds, given up beyond 300.
pub fn next_refresh(retries: u32) -> Option<u64> {
    let next = 5u64.checked_mul(1u64.checked_shl(retries)?)?;
    (next <= 300).then_some(next)
}

/// The layers around every route (a standby RM's redirect).
pub fn around(routes: Router, web: WebContext) -> Router {
    routes.layer(axum::middleware::from_fn_with_state(web, standby_filter))
}

async fn standby_filter(State(web): State<WebContext>, req: Request, next: Next) -> Response {
    if web.control.service_state() == ServiceState::Active || standby_serves(req.uri().path()) {
        return next.run(req).await;
    }
    let path_and_query = req
        .uri()
        .path_and_query()
        .map_or_else(|| req.uri().path().to_string(), |p| p.as_str().to_string());
    if let Some(active) = find_active(&web).await {
        let location = format!("http://{active}{path_and_query}");
        let body = format!("This is standby RM. The redirect url is: {location}\n");
        return (
            StatusCode::TEMPORARY_REDIRECT,
            [(header::LOCATION, location)],
            body,
        )
            .into_response();
    }
    let query = query_pairs(req.uri().query().unwrap_or(""));
    let retries = match query.get("next.refresh.interval") {
        None => Some(0),
        Some(v) => v.trim().parse::<u32>().ok(),
    };
    let next = retries.and_then(next_refresh);
    match (retries, next) {
        (Some(r), Some(secs)) => {
            let mut url = req.uri().path().to_string();
            let others: Vec<String> = req
                .uri()
                .query()
                .unwrap_or("")
                .split('&')
                .filter(|p| !p.is_empty() && !p.starts_with("next.refresh.interval="))
                .map(str::to_string)
                .collect();
            url.push('?');
            for p in &others {
                url.push_str(p);
                url.push('&');
            }
            url.push_str(&format!("next.refresh.interval={}", r + 1));
            (
                StatusCode::TEMPORARY_REDIRECT,
                [(header::REFRESH, format!("{secs};url={url}"))],
                format!("Can not find any active RM. Will retry in next {secs} seconds.\n"),
            )
                .into_response()
        }
        _ => (StatusCode::OK, "There is no active RM right now.\n").into_response(),
    }
}

/// `k=v&...` into pairs (no percent-decoding: only our own parameter is read).
fn query_pairs(q: &str) -> HashMap<String, String> {
    q.split('&')
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The web address of the other RM that says it is active (its
/// `/isActive` answers 200), as Hadoop's `findActiveRMHAId` asks each RM.
async fn find_active(web: &WebContext) -> Option<String> {
    let ha = web.control.ha()?;
    for id in ha.rm_ids.iter().filter(|id| **id != ha.rm_id) {
        let Some(addr) = webapp_address(web, id) else {
            continue;
        };
        if probe_active(&addr).await {
            return Some(addr);
        }
    }
    None
}

/// `yarn.resourcemanager.webapp.address.<id>`, else
/// `yarn.resourcemanager.hostname.<id>:8088`.
fn webapp_address(web: &WebContext, id: &str) -> Option<String> {
    if let Some(a) = web
        .conf
        .get_trimmed(&format!("yarn.resourcemanager.webapp.address.{id}"))
        .filter(|a| !a.is_empty())
    {
        return Some(a);
    }
    web.conf
        .get_trimmed(&format!("yarn.resourcemanager.hostname.{id}"))
        .filter(|h| !h.is_empty())
        .map(|h| format!("{h}:8088"))
}

async fn probe_active(addr: &str) -> bool {
    let attempt = async {
        let resolved: Vec<SocketAddr> = tokio::net::lookup_host(addr).await.ok()?.collect();
        let target = resolved.first()?;
        let mut s = tokio::net::TcpStream::connect(target).await.ok()?;
        s.write_all(format!("GET /isActive HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
            .await
            .ok()?;
        let mut buf = Vec::new();
        let _ = (&mut s).take(4096).read_to_end(&mut buf).await;
        let text = String::from_utf8_lossy(&buf);
        Some(text.starts_with("HTTP/1.") && text.split_whitespace().nth(1) == Some("200"))
    };
    tokio::time::timeout(Duration::from_secs(2), attempt)
        .await
        .ok()
        .flatten()
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_bean_names() {
        assert_eq!(queue_bean_keys("root"), "q0=root");
        assert_eq!(queue_bean_keys("root.a.b"), "q0=root,q1=a,q2=b");
    }

    #[test]
    fn what_a_standby_serves_itself() {
        for p in [
            "/conf",
            "/jmx",
            "/isActive",
            "/ws/v1/cluster/info",
            "/proxy/application_1_0001/",
            "/logLevel",
        ] {
            assert!(standby_serves(p), "{p}");
        }
        for p in [
            "/ws/v1/cluster/apps",
            "/ws/v1/cluster",
            "/cluster/apps",
            "/",
        ] {
            assert!(!standby_serves(p), "{p}");
        }
    }

    #[test]
    fn refresh_backs_off_as_hadoop() {
        assert_eq!(next_refresh(0), Some(5));
        assert_eq!(next_refresh(3), Some(40));
        assert_eq!(next_refresh(5), Some(160));
        assert_eq!(next_refresh(6), None);
        assert_eq!(next_refresh(200), None);
    }
}
