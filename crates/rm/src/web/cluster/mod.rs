//! The read-only REST resources of Hadoop's `RMWebServices` under
//! `/ws/v1/cluster`: cluster info and metrics, the scheduler, applications
//! (with Hadoop's filters), their attempts and containers, their state,
//! priority and queue, nodes and application statistics. JSON or XML as the
//! `Accept` header asks; Hadoop's `RemoteException` bodies on errors.
//!
//! Every answer comes from a named query of the state (`state/queries.rs`),
//! asked as the request's caller (`web::caller`): an application the caller
//! may not view is listed with what the state hides from it.
//!
//! | file | holds |
//! |---|---|
//! | `mod.rs` | the routes; cluster info, metrics, scheduler, nodes, statistics |
//! | `apps.rs` | applications, attempts, containers, state, priority, queue |
//! | `params.rs` | the query parameters, checked with Hadoop's messages |
//! | `dao.rs` | reports as Hadoop's DAOs (`AppInfo`, `NodeInfo`, ...) |
//! | `scheduler.rs` | the three scheduler shapes |
//! | `perf_tests.rs` | `/apps` checked byte for byte against the former `Value`-tree build, and its cost measured |
//!
//! A long list (`/apps`) is the one heavy read: the owner of the state
//! only copies the applications kept into lean entries
//! (`RmState::app_list`), and the body is written off the runtime's
//! worker threads from typed DAOs (`dao::AppInfo`), JSON with serde and
//! XML directly, without a `Value` tree.

mod apps;
pub mod dao;
pub mod params;
pub mod scheduler;

use std::collections::BTreeSet;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::handler::Handler;
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, MethodRouter};
use axum::Router;
use serde_json::{json, Value};
use spindle_common::ids::{ApplicationAttemptId, ApplicationId, ContainerId, NodeId};
use spindle_common::states::AppState;
use spindle_scheduler::SchedulerKind;
use spindle_web::{reply, Format, WebError};

use super::WebContext;
use crate::model::access::Caller;
use crate::model::convert::refusal_to_rpc;
use crate::model::refusal::Refusal;
use crate::runtime::active::ServiceState;
use crate::state::RmState;
use params::Params;

/// Hadoop's version as the REST API reports it (the wire level Spindle speaks).
pub const HADOOP_VERSION: &str = "3.3.4";

pub fn routes() -> Router<WebContext> {
    const C: &str = "/ws/v1/cluster";
    const APP: &str = "/ws/v1/cluster/apps/{appid}";
    const ATTEMPT: &str = "/ws/v1/cluster/apps/{appid}/appattempts/{attemptid}";
    Router::new()
        .route(C, read(info))
        .route("/ws/v1/cluster/", read(info))
        .route(&format!("{C}/info"), read(info))
        .route(&format!("{C}/metrics"), read(metrics))
        .route(&format!("{C}/scheduler"), read(scheduler_resource))
        .route(&format!("{C}/apps"), read(apps::apps))
        .route(APP, read(apps::app))
        .route(&format!("{APP}/appattempts"), read(apps::attempts))
        .route(ATTEMPT, read(apps::attempt))
        .route(&format!("{ATTEMPT}/containers"), read(apps::containers))
        .route(
            &format!("{ATTEMPT}/containers/{{containerid}}"),
            read(apps::container),
        )
        .route(&format!("{APP}/state"), read(apps::app_state))
        .route(&format!("{APP}/priority"), read(apps::app_priority))
        .route(&format!("{APP}/queue"), read(apps::app_queue))
        .route(&format!("{C}/nodes"), read(nodes))
        .route(&format!("{C}/nodes/{{nodeid}}"), read(node))
        .route(&format!("{C}/appstatistics"), read(statistics))
        .route(&format!("{C}/{{*rest}}"), any(unknown))
}

/// A read-only resource: GET (and HEAD), and OPTIONS answered as Jersey
/// does, which is how Hadoop's `AuthenticatedURL` clients (`yarn top`)
/// probe the authentication before they read.
fn read<H, T>(handler: H) -> MethodRouter<WebContext>
where
    H: Handler<T, WebContext>,
    T: 'static,
{
    get(handler).options(options)
}

async fn options() -> Response {
    (StatusCode::OK, [(header::ALLOW, "OPTIONS,GET,HEAD")]).into_response()
}

type Answer = Result<Response, WebError>;

/// The answer, or its error in the representation the request asks for.
fn answer(headers: &HeaderMap, a: Answer) -> Response {
    match a {
        Ok(r) => r,
        Err(e) => e.for_request(headers).into_response(),
    }
}

/// A list DAO (`AppsInfo`, `NodesInfo`, ...): `{root: {item: [...]}}`, and
/// as Jersey writes an empty one, `{root: null}` (an empty element in XML).
pub fn list_reply(headers: &HeaderMap, root: &str, item: &str, items: Vec<Value>) -> Response {
    let format = Format::of(headers);
    ok_body(format, list_body(format, root, item, items))
}

/// The body [`list_reply`] sends.
pub fn list_body(format: Format, root: &str, item: &str, items: Vec<Value>) -> String {
    let body = if items.is_empty() {
        match format {
            Format::Json => json!({ root: null }),
            Format::Xml => json!({ root: {} }),
        }
    } else {
        json!({ root: { item: items } })
    };
    format.render(&body)
}

/// A DAO Hadoop's JSON writes without its root element (`AppState`,
/// `AppPriority`, `AppQueue`): `inner` as JSON, `<root>inner</root>` as XML.
pub fn unwrapped_reply(headers: &HeaderMap, root: &str, inner: Value) -> Response {
    let format = Format::of(headers);
    let body = match format {
        Format::Json => inner,
        Format::Xml => json!({ root: inner }),
    };
    rendered(format, &body)
}

fn rendered(format: Format, body: &Value) -> Response {
    ok_body(format, format.render(body))
}

/// A 200 reply of a body already written in `format`.
fn ok_body(format: Format, body: impl IntoResponse) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, format.content_type())],
        body,
    )
        .into_response()
}

/// Runs a query on the state.
async fn query<T, F>(web: &WebContext, f: F) -> Result<T, WebError>
where
    T: Send + 'static,
    F: FnOnce(&RmState) -> T + Send + 'static,
{
    web.rm()
        .core
        .query(f)
        .await
        .map_err(|_| WebError::unavailable("The ResourceManager is not active"))
}

/// A path parameter, or 400 when it is not valid (e.g. not UTF-8).
fn path_param<T>(p: Result<Path<T>, PathRejection>) -> Result<T, WebError> {
    p.map(|Path(v)| v)
        .map_err(|e| WebError::bad_request(format!("Invalid path: {}", e.body_text())))
}

fn illegal_argument(message: String) -> WebError {
    WebError::new(
        StatusCode::BAD_REQUEST,
        "java.lang.IllegalArgumentException",
        message,
    )
}

/// `WebAppUtils.parseApplicationId`: a malformed id is a 400 whose message
/// is the `IllegalArgumentException` of `ApplicationId.fromString`.
pub fn parse_app_id(s: &str) -> Result<ApplicationId, WebError> {
    if s.is_empty() {
        return Err(WebError::not_found(format!("appId, {s}, is empty or null")));
    }
    if !s.starts_with("application_") {
        return Err(WebError::bad_request(format!(
            "java.lang.IllegalArgumentException: Invalid ApplicationId prefix: {s}. \
             The valid ApplicationId should start with prefix application"
        )));
    }
    s.parse().map_err(|_| {
        WebError::bad_request(format!(
            "java.lang.IllegalArgumentException: Invalid ApplicationId: {s}"
        ))
    })
}

/// `ApplicationAttemptId.fromString`.
pub fn parse_attempt_id(s: &str) -> Result<ApplicationAttemptId, WebError> {
    if !s.starts_with("appattempt_") {
        return Err(illegal_argument(format!(
            "Invalid AppAttemptId prefix: {s}"
        )));
    }
    s.parse()
        .map_err(|_| illegal_argument(format!("Invalid AppAttemptId: {s}")))
}

/// `ContainerId.fromString`.
pub fn parse_container_id(s: &str) -> Result<ContainerId, WebError> {
    if !s.starts_with("container_") {
        return Err(illegal_argument(format!("Invalid ContainerId prefix: {s}")));
    }
    s.parse()
        .map_err(|_| illegal_argument(format!("Invalid ContainerId: {s}")))
}

/// `NodeId.fromString`.
pub fn parse_node_id(s: &str) -> Result<NodeId, WebError> {
    s.parse()
        .map_err(|_| illegal_argument(format!("Invalid NodeId [{s}]. Expected host:port")))
}

/// A refusal of the state as `WebServices.rewrapAndThrowException` shows
/// it: not-found exceptions as 404, a denied view as 403 (Hadoop answers
/// 500 there), anything else as 400.
fn refused(r: Refusal) -> WebError {
    let forbidden = matches!(
        r,
        Refusal::AppViewDenied { .. } | Refusal::AttemptViewDenied { .. }
    );
    let not_found = matches!(
        r,
        Refusal::ApplicationNotFound(_)
            | Refusal::AttemptNotFound(_)
            | Refusal::ContainerNotFound(_)
    );
    let e = refusal_to_rpc(r);
    let message = format!("{}: {}", e.class_name, e.message);
    if forbidden {
        WebError::forbidden(message)
    } else if not_found {
        WebError::not_found(message)
    } else {
        WebError::bad_request(message)
    }
}

// ---------------------------------------------------------------------------

async fn info(State(web): State<WebContext>, headers: HeaderMap) -> Response {
    answer(
        &headers,
        Ok(reply(&headers, &json!({"clusterInfo": cluster_info(&web)}))),
    )
}

/// `ClusterInfo`.
pub fn cluster_info(web: &WebContext) -> Value {
    let rm = web.rm();
    let ts = rm.cluster_ts();
    let ha_state = match web.control.service_state() {
        ServiceState::Active => "ACTIVE",
        ServiceState::Standby => "STANDBY",
    };
    let recovery = web
        .conf
        .get_trimmed("yarn.resourcemanager.recovery.enabled")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let store = if recovery {
        web.conf
            .get_trimmed("yarn.resourcemanager.store.class")
            .unwrap_or_else(|| {
                "org.apache.hadoop.yarn.server.resourcemanager.recovery.FileSystemRMStateStore"
                    .into()
            })
    } else {
        "org.apache.hadoop.yarn.server.resourcemanager.recovery.NullRMStateStore".into()
    };
    let zk = if web.control.ha().is_some() {
        "CONNECTED"
    } else {
        "ResourceManager HA is not enabled."
    };
    let build = format!("{HADOOP_VERSION} from {}", rm.rm_version);
    json!({
        "id": ts,
        "startedOn": ts,
        "state": "STARTED",
        "haState": ha_state,
        "rmStateStoreName": store,
        "resourceManagerVersion": HADOOP_VERSION,
        "resourceManagerBuildVersion": build,
        "resourceManagerVersionBuiltOn": rm.rm_version,
        "hadoopVersion": HADOOP_VERSION,
        "hadoopBuildVersion": build,
        "hadoopVersionBuiltOn": rm.rm_version,
        "haZooKeeperConnectionState": zk,
    })
}

async fn metrics(State(web): State<WebContext>, headers: HeaderMap) -> Response {
    let a = async {
        let usage = query(&web, |s| s.cluster_usage()).await?;
        let capacity = web.rm().scheduler_kind == SchedulerKind::Capacity;
        Ok(reply(
            &headers,
            &json!({"clusterMetrics": dao::cluster_metrics(&usage, capacity)}),
        ))
    };
    answer(&headers, a.await)
}

async fn scheduler_resource(State(web): State<WebContext>, headers: HeaderMap) -> Response {
    let a = async {
        let rm = web.rm();
        let caller = Caller::user(rm.daemon_user.clone().unwrap_or_default());
        let (root, users, usage) = query(&web, move |s| {
            (
                s.queue_info("root", false, true, true, &caller),
                s.queue_users(),
                s.cluster_usage(),
            )
        })
        .await?;
        let root = root.ok_or_else(|| WebError::not_found("The root queue is not known"))?;
        let view = scheduler::SchedulerView {
            kind: rm.scheduler_kind,
            root,
            users,
            cluster: usage.capability,
            used: usage.used,
            nodes: i64::from(usage.nodes.active),
            containers: usage.containers,
            min_allocation: rm.min_allocation,
            max_allocation: rm.max_allocation,
        };
        Ok(reply(
            &headers,
            &json!({"scheduler": scheduler::scheduler_info(&view)}),
        ))
    };
    answer(&headers, a.await)
}

async fn nodes(State(web): State<WebContext>, uri: Uri, headers: HeaderMap) -> Response {
    let a = async {
        let params = Params::of(&uri)?;
        let states = params::node_states(&params)?;
        let list = query(&web, move |s| s.node_reports(&states)).await?;
        Ok(list_reply(
            &headers,
            "nodes",
            "node",
            list.iter().map(dao::node_info).collect(),
        ))
    };
    answer(&headers, a.await)
}

async fn node(
    State(web): State<WebContext>,
    path: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
) -> Response {
    let a = async {
        let raw = path_param(path)?;
        let id = parse_node_id(&raw)?;
        let report = query(&web, move |s| s.node_report(&id))
            .await?
            .ok_or_else(|| WebError::not_found(format!("nodeId, {raw}, is not found")))?;
        Ok(reply(&headers, &json!({"node": dao::node_info(&report)})))
    };
    answer(&headers, a.await)
}

async fn statistics(State(web): State<WebContext>, uri: Uri, headers: HeaderMap) -> Response {
    let a = async {
        let params = Params::of(&uri)?;
        let (states, app_type) = params::statistics_query(&params)?;
        let apps = query(&web, |s| s.app_states_and_types()).await?;
        let items = statistics_items(&states, app_type.as_deref(), &apps);
        Ok(reply(
            &headers,
            &json!({"appStatInfo": {"statItem": items}}),
        ))
    };
    answer(&headers, a.await)
}

/// `StatisticsItemInfo`s: per asked state (in Hadoop's order), the count
/// of applications of the type (`*`: any).
pub fn statistics_items(
    states: &BTreeSet<AppState>,
    app_type: Option<&str>,
    apps: &[(AppState, String)],
) -> Vec<Value> {
    states
        .iter()
        .map(|state| {
            let count = apps
                .iter()
                .filter(|(s, t)| s == state && app_type.is_none_or(|want| t.to_lowercase() == want))
                .count();
            json!({
                "state": state.as_str(),
                "type": app_type.unwrap_or("*"),
                "count": count,
            })
        })
        .collect()
}

async fn unknown(uri: Uri, headers: HeaderMap) -> Response {
    WebError::not_found(format!(
        "java.lang.Exception: The resource {} is not found",
        uri.path()
    ))
    .for_request(&headers)
    .into_response()
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod perf_tests;
