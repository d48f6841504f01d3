//! The NodeManager's web server on `yarn.nodemanager.webapp.address`:
//! Hadoop's `NMWebServices` (`/ws/v1/node/...`) and the container log pages
//! (`/node/containerlogs/<container>/<user>[/<file>]`) that `yarn logs` for
//! running applications and Spark's executor log links read.
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | the routes and their handlers |
//! | `dao.rs` | the JSON bodies (pure) |
//! | `logs.rs` | log file names, byte ranges (pure) and reading |
//! | `access.rs` | who may read an application's logs (`yarn.acl.enable`) |
//!
//! Everything comes from the node's own tables through the read-only
//! snapshots of [`ContainerManager`]; nothing here changes them. A log
//! file is served only for a container of an application the node knows
//! (Hadoop's `ContainerLogsUtils`), only from that container's log dirs,
//! and only to a caller the application's ACLs let view it ([`access`]).
//! A refused caller gets Hadoop's message; the REST endpoints answer with
//! Hadoop's status (500: its `YarnException` becomes a server error), the
//! log pages with 403. Not done: aggregated logs, the HTML pages other than
//! the log pages.

pub mod access;
pub mod dao;
pub mod logs;
pub mod ops;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};
use spindle_common::markup::escape;
use spindle_common::time::wall_ms;
use spindle_common::{ApplicationId, ContainerId, NodeId};
use spindle_web::{reply, WebError};
use tokio::sync::watch;
use tracing::info;

use crate::config::{resolve, NmConfig};
use crate::containers::{ContainerManager, ContainerReport};
use crate::disks::NodeHealth;
use crate::error::NmError;
use dao::NodeView;

/// The web server's listener, bound at start before anything reports the
/// node's HTTP port: the RM (registration) and containers (`NM_HTTP_PORT`)
/// get the port actually bound.
#[derive(Debug)]
pub struct WebListener {
    listener: std::net::TcpListener,
    addr: SocketAddr,
    /// `yarn.nodemanager.webapp.address` as configured, for errors.
    shown: String,
}

impl WebListener {
    /// The address bound.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

/// The start's step that binds `yarn.nodemanager.webapp.address`.
pub async fn bind(cfg: &NmConfig) -> Result<WebListener, NmError> {
    let shown = format!("{}:{}", cfg.webapp_bind_host, cfg.http_port);
    let port = u16::try_from(cfg.http_port).unwrap_or(0);
    let addr = resolve(&cfg.webapp_bind_host, port, &shown).await?;
    let listener = std::net::TcpListener::bind(addr).map_err(|source| NmError::Bind {
        addr: shown.clone(),
        source,
    })?;
    let addr = listener.local_addr().map_err(|source| NmError::Bind {
        addr: shown.clone(),
        source,
    })?;
    Ok(WebListener {
        listener,
        addr,
        shown,
    })
}

/// The start's step that serves the node's web pages on `listener`
/// (bound to `cfg.http_port`): Hadoop's `NMWebServices` and the container
/// log pages ([`router`]), and the NM's `/jmx`, `/conf` and `/stacks`
/// ([`ops::router`]).
pub fn serve(
    listener: WebListener,
    cfg: &NmConfig,
    node_id: NodeId,
    containers: &ContainerManager,
    health: watch::Receiver<NodeHealth>,
) -> Result<spindle_web::WebServer, NmError> {
    let routes = router(NmWeb::new(
        cfg,
        node_id,
        containers.clone(),
        health,
        wall_ms(),
    ))
    .merge(ops::router(ops::NmOps::new(
        containers.clone(),
        cfg.resource,
        cfg.node_host.clone(),
        cfg.conf_properties.clone(),
    )));
    // SPNEGO, when on, before everything else the web does.
    let routes = match &cfg.spnego {
        Some(s) => routes.layer(axum::middleware::from_fn_with_state(
            s.0.clone(),
            spindle_web::spnego::authenticate,
        )),
        None => routes,
    };
    let web =
        spindle_web::WebServer::serve(listener.listener, routes, "nm-web").map_err(|source| {
            NmError::Bind {
                addr: listener.shown,
                source,
            }
        })?;
    info!(web = %listener.addr, "NodeManager web server listening (yarn.nodemanager.webapp.address)");
    Ok(web)
}

/// What the handlers share.
#[derive(Clone)]
pub struct NmWeb {
    inner: Arc<Inner>,
}

struct Inner {
    containers: ContainerManager,
    /// `host:port` of this web server, as the RM reports it.
    http_address: String,
    log_dirs: Vec<PathBuf>,
    health: watch::Receiver<NodeHealth>,
    node: NodeView,
    access: access::LogAccess,
}

impl NmWeb {
    /// The web state of a node with id `node_id` whose server is bound to
    /// `cfg.http_port`.
    pub fn new(
        cfg: &NmConfig,
        node_id: NodeId,
        containers: ContainerManager,
        health: watch::Receiver<NodeHealth>,
        started_ms: i64,
    ) -> NmWeb {
        let node = NodeView {
            node_id: node_id.to_string(),
            node_host: node_id.host.to_string(),
            memory_mb: cfg.resource.memory_mb,
            vcores: cfg.resource.vcores,
            vmem_pmem_ratio: cfg.containers.vmem_pmem_ratio,
            pmem_check: cfg.containers.pmem_check_enabled,
            vmem_check: cfg.containers.vmem_check_enabled,
            healthy: true,
            health_report: String::new(),
            last_health_ms: 0,
            started_ms,
            version: cfg.version.clone(),
        };
        NmWeb {
            inner: Arc::new(Inner {
                http_address: format!("{}:{}", node_id.host, cfg.http_port),
                containers,
                log_dirs: cfg.log_dirs.clone(),
                health,
                node,
                access: access::LogAccess::new(&cfg.web_access, &cfg.user),
            }),
        }
    }

    fn node_view(&self) -> NodeView {
        let h = self.inner.health.borrow().clone();
        NodeView {
            healthy: h.healthy,
            health_report: h.report,
            last_health_ms: h.last_report_time_ms,
            ..self.inner.node.clone()
        }
    }

    fn log_dirs(&self, id: &ContainerId) -> Vec<PathBuf> {
        logs::container_log_dirs(&self.inner.log_dirs, id)
    }

    /// The container whose logs are asked for by the caller the raw
    /// `query` names (`user.name`): its id and, while the node tracks it, its report. As
    /// Hadoop: the application must be known here, the caller allowed to
    /// view it, and a tracked container must have started.
    async fn log_target(
        &self,
        id: &str,
        query: Option<&str>,
    ) -> Result<(ContainerId, Option<ContainerReport>), Refused> {
        let user = access::user_in_query(query).map_err(Refused::from)?;
        let caller = self
            .inner
            .access
            .caller(user.as_deref())
            .map_err(Refused::from)?;
        let id: ContainerId = id
            .parse()
            .map_err(|_| Refused::BadId(format!("invalid container id, {id}")))?;
        let Some(app) = self.inner.containers.app_report(&id.app()) else {
            return Err(Refused::NotFound(
                "Unknown container. Container either has not started or has already completed \
                 or doesn't belong to this node at all."
                    .to_string(),
            ));
        };
        self.inner
            .access
            .check_view(&caller, &app)
            .await
            .map_err(Refused::from)?;
        let report = self.inner.containers.report(&id);
        if let Some(r) = &report {
            dao::logs_readable(r).map_err(Refused::NotFound)?;
        }
        Ok((id, report))
    }
}

/// Why a log request is refused.
enum Refused {
    BadId(String),
    BadRequest(String),
    NotFound(String),
    /// No user named while anonymous requests are disallowed.
    Unauthenticated(String),
    /// The caller may not view the application (Hadoop's message).
    NotAuthorized(String),
}

impl From<access::Denial> for Refused {
    fn from(d: access::Denial) -> Refused {
        let message = d.message().to_string();
        match d {
            access::Denial::Anonymous => Refused::Unauthenticated(message),
            access::Denial::BadUser(_) => Refused::BadRequest(message),
            access::Denial::NotAuthorized(_) => Refused::NotAuthorized(message),
        }
    }
}

impl Refused {
    /// The status of the REST endpoints. A refused caller: 500, as Hadoop's
    /// `NMWebServices` answers the `YarnException` of `checkAccess`.
    fn status(&self) -> StatusCode {
        match self {
            Refused::BadId(_) | Refused::BadRequest(_) => StatusCode::BAD_REQUEST,
            Refused::NotFound(_) => StatusCode::NOT_FOUND,
            Refused::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
            Refused::NotAuthorized(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn message(&self) -> &str {
        match self {
            Refused::BadId(m)
            | Refused::BadRequest(m)
            | Refused::NotFound(m)
            | Refused::Unauthenticated(m)
            | Refused::NotAuthorized(m) => m,
        }
    }

    /// As a web service error (`RemoteException` JSON or XML). A refused
    /// caller: Hadoop's `WebApplicationException` wrapping the
    /// `YarnException`.
    fn web_error(self, headers: &HeaderMap) -> Response {
        let e = match self {
            Refused::BadId(m) | Refused::BadRequest(m) => WebError::bad_request(m),
            Refused::NotFound(m) => WebError::not_found(m),
            Refused::Unauthenticated(m) => WebError::unauthorized(m),
            Refused::NotAuthorized(m) => WebError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "javax.ws.rs.WebApplicationException",
                format!("org.apache.hadoop.yarn.exceptions.YarnException: {m}"),
            ),
        };
        e.for_request(headers).into_response()
    }

    /// As the log text endpoints answer: the message as plain text (an
    /// unreadable id: no body, as Hadoop).
    fn text(self) -> Response {
        let body = match &self {
            Refused::BadId(_) => String::new(),
            other => other.message().to_string(),
        };
        (
            self.status(),
            [(header::CONTENT_TYPE, "text/plain;charset=utf-8")],
            body,
        )
            .into_response()
    }

    /// As the log pages answer: a page with the message (a refused
    /// caller: 403).
    fn page(self, title: &str) -> Response {
        let status = match &self {
            Refused::NotAuthorized(_) => StatusCode::FORBIDDEN,
            other => other.status(),
        };
        let msg = match &self {
            Refused::BadId(m) => m.replacen("invalid container id, ", "Invalid containerId ", 1),
            other => other.message().to_string(),
        };
        html_page(status, title, &format!("<h1>{}</h1>", escape(&msg)))
    }
}

/// Every route of the NodeManager's web server.
pub fn router(web: NmWeb) -> Router {
    Router::new()
        .route("/ws/v1/node", get(node_info).options(options))
        .route("/ws/v1/node/", get(node_info).options(options))
        .route("/ws/v1/node/info", get(node_info).options(options))
        .route("/ws/v1/node/apps", get(apps).options(options))
        .route("/ws/v1/node/apps/{appid}", get(app).options(options))
        .route("/ws/v1/node/containers", get(containers).options(options))
        .route(
            "/ws/v1/node/containers/{containerid}",
            get(container).options(options),
        )
        .route(
            "/ws/v1/node/containers/{containerid}/logs",
            get(container_logs).options(options),
        )
        .route(
            "/ws/v1/node/containers/{containerid}/logs/{filename}",
            get(log_file).options(options),
        )
        .route(
            "/ws/v1/node/containerlogs/{containerid}/{filename}",
            get(log_file).options(options),
        )
        .route(
            "/node/containerlogs/{containerid}/{user}",
            get(log_list_page).options(options),
        )
        .route(
            "/node/containerlogs/{containerid}/{user}/",
            get(log_list_page).options(options),
        )
        .route(
            "/node/containerlogs/{containerid}/{user}/{filename}",
            get(log_page).options(options),
        )
        .route(
            "/node/containerlogs/{containerid}/{user}/{filename}/",
            get(log_page).options(options),
        )
        .with_state(web)
}

type Params = Query<HashMap<String, String>>;

/// `OPTIONS` on any resource: 200, as Hadoop's servlets answer it. Hadoop's
/// web service clients (`yarn logs`) authenticate with an `OPTIONS` request
/// first (`KerberosAuthenticator`, falling back to the pseudo one) and
/// give up on anything but 200.
async fn options() -> Response {
    (StatusCode::OK, [(header::ALLOW, "GET, HEAD, OPTIONS")]).into_response()
}

async fn node_info(State(web): State<NmWeb>, headers: HeaderMap) -> Response {
    reply(&headers, &dao::node_info(&web.node_view()))
}

async fn apps(State(web): State<NmWeb>, headers: HeaderMap, Query(q): Params) -> Response {
    let state = q.get("state").filter(|s| !s.is_empty());
    if let Some(s) = state {
        if !dao::APP_STATES.contains(&s.as_str()) {
            return WebError::new(
                StatusCode::BAD_REQUEST,
                "java.lang.IllegalArgumentException",
                format!(
                    "No enum constant org.apache.hadoop.yarn.server.nodemanager.containermanager.\
                     application.ApplicationState.{s}"
                ),
            )
            .for_request(&headers)
            .into_response();
        }
    }
    let user = q.get("user");
    if user.is_some_and(|u| u.is_empty()) {
        return WebError::bad_request("Error: You must specify a non-empty string for the user")
            .for_request(&headers)
            .into_response();
    }
    let apps: Vec<Value> = web
        .inner
        .containers
        .app_reports()
        .iter()
        .filter(|a| state.is_none_or(|s| dao::app_state(a).eq_ignore_ascii_case(s)))
        .filter(|a| user.is_none_or(|u| &a.user == u))
        .map(dao::app_info)
        .collect();
    reply(&headers, &json!({"apps": {"app": apps}}))
}

async fn app(State(web): State<NmWeb>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    let parsed: ApplicationId = match id.parse() {
        Ok(id) => id,
        Err(_) => {
            return WebError::bad_request(format!(
                "java.lang.IllegalArgumentException: Invalid ApplicationId: {id}"
            ))
            .for_request(&headers)
            .into_response()
        }
    };
    match web.inner.containers.app_report(&parsed) {
        Some(a) => reply(&headers, &json!({"app": dao::app_info(&a)})),
        None => WebError::not_found(format!("app with id {id} not found"))
            .for_request(&headers)
            .into_response(),
    }
}

async fn container_json(web: &NmWeb, c: &ContainerReport) -> Value {
    let files: Vec<String> = logs::list(web.log_dirs(&c.id))
        .await
        .into_iter()
        .map(|f| f.name)
        .collect();
    dao::container_info(c, &web.inner.node.node_id, &web.inner.http_address, &files)
}

async fn containers(State(web): State<NmWeb>, headers: HeaderMap) -> Response {
    let mut out = Vec::new();
    for c in web.inner.containers.reports() {
        out.push(container_json(&web, &c).await);
    }
    reply(&headers, &json!({"containers": {"container": out}}))
}

async fn container(
    State(web): State<NmWeb>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let Ok(parsed) = id.parse::<ContainerId>() else {
        return WebError::bad_request(format!("invalid container id, {id}"))
            .for_request(&headers)
            .into_response();
    };
    match web.inner.containers.report(&parsed) {
        Some(c) => reply(
            &headers,
            &json!({"container": container_json(&web, &c).await}),
        ),
        None => WebError::not_found(format!("container with id, {id}, not found"))
            .for_request(&headers)
            .into_response(),
    }
}

async fn container_logs(
    State(web): State<NmWeb>,
    headers: HeaderMap,
    Path(id): Path<String>,
    uri: Uri,
) -> Response {
    let (id, _) = match web.log_target(&id, uri.query()).await {
        Ok(t) => t,
        Err(r) => return r.web_error(&headers),
    };
    let files = logs::list(web.log_dirs(&id)).await;
    let mut resp = reply(
        &headers,
        &dao::container_logs_info(&id.to_string(), &web.inner.node.node_id, &files),
    );
    resp.headers_mut().insert(
        "X-Content-Type-Options",
        HeaderValue::from_static("nosniff"),
    );
    resp
}

/// `.../logs/{file}` and `/containerlogs/{id}/{file}`: the file with
/// Hadoop's header and trailer (`LogToolUtils`), `size` bytes of it.
async fn log_file(
    State(web): State<NmWeb>,
    Path((id, file)): Path<(String, String)>,
    uri: Uri,
    Query(q): Params,
) -> Response {
    match log_file_inner(&web, &id, &file, uri.query(), &q).await {
        Ok(r) => r,
        Err(r) => r.text(),
    }
}

async fn log_file_inner(
    web: &NmWeb,
    id_text: &str,
    file: &str,
    query: Option<&str>,
    q: &HashMap<String, String>,
) -> Result<Response, Refused> {
    let (id, report) = web.log_target(id_text, query).await?;
    logs::check_file_name(file).map_err(Refused::BadRequest)?;
    let size = logs::int_param("size", q.get("size")).map_err(Refused::BadRequest)?;
    let content_type = logs::content_type(q.get("format")).map_err(Refused::BadRequest)?;
    let log = logs::open(web.log_dirs(&id), file.to_string())
        .await
        .ok_or_else(|| Refused::NotFound("Cannot find this log on the local disk.".into()))?;
    let span = logs::size_span(log.len, size);
    let node = &web.inner.node.node_id;
    let prefix = if span.len > 0 {
        let head = format!("Container: {id} on {node}");
        format!(
            "{head}\nLogAggregationType: LOCAL\n{}\nLogType:{file}\nLogLastModifiedTime:{}\n\
             LogLength:{}\nLogContents:\n",
            "=".repeat(head.len()),
            dao::hadoop_time(log.modified_ms),
            log.len
        )
    } else {
        String::new()
    };
    let end = format!("End of LogType:{file}");
    let mut suffix = format!("{end}.");
    if dao::is_running(report.as_ref()) {
        suffix.push_str(&format!(
            "This log file belongs to a running container ({id}) and so may not be complete.\n"
        ));
    } else {
        suffix.push('\n');
    }
    suffix.push_str(&"*".repeat(end.len() + 50));
    suffix.push_str("\n\n");
    let body = logs::stream(log, span, prefix, suffix, false);
    Ok((
        StatusCode::OK,
        [
            (
                header::CONTENT_TYPE,
                format!("{content_type}; charset=utf-8"),
            ),
            (
                header::HeaderName::from_static("x-content-type-options"),
                "nosniff".to_string(),
            ),
        ],
        body,
    )
        .into_response())
}

fn html_page(status: StatusCode, title: &str, body: &str) -> Response {
    let page = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{}</title></head>\
         <body>{body}</body></html>\n",
        escape(title)
    );
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        page,
    )
        .into_response()
}

/// `/node/containerlogs/{id}/{user}`: the container's log files, each a
/// link to its last 4 KiB (Hadoop's `ContainerLogsPage`).
async fn log_list_page(
    State(web): State<NmWeb>,
    Path((id, user)): Path<(String, String)>,
    uri: Uri,
) -> Response {
    let title = format!("Logs for {id}");
    let (cid, _) = match web.log_target(&id, uri.query()).await {
        Ok(t) => t,
        Err(r) => return r.page(&title),
    };
    let files = logs::list(web.log_dirs(&cid)).await;
    if files.is_empty() {
        return html_page(
            StatusCode::OK,
            &title,
            &format!("<h1>No logs available for container {cid}</h1>"),
        );
    }
    let mut body = String::new();
    for f in &files {
        let href = format!(
            "/node/containerlogs/{cid}/{}/{}/?start=-4096",
            percent_segment(&user),
            percent_segment(&f.name)
        );
        body.push_str(&format!(
            "<p><a href=\"{}\">{} : Total file length is {} bytes.</a></p>\n",
            escape(&href),
            escape(&f.name),
            f.size
        ));
    }
    html_page(StatusCode::OK, &title, &body)
}

/// `/node/containerlogs/{id}/{user}/{file}?start=&end=`: a part of one log
/// file in a page (by default its last 4096 bytes, as Spark's links ask).
async fn log_page(
    State(web): State<NmWeb>,
    Path((id, user, file)): Path<(String, String, String)>,
    uri: Uri,
    Query(q): Params,
) -> Response {
    let title = format!("Logs for {id}");
    match log_page_inner(&web, &id, &user, &file, uri.query(), &q).await {
        Ok(r) => r,
        Err(r) => r.page(&title),
    }
}

async fn log_page_inner(
    web: &NmWeb,
    id_text: &str,
    user: &str,
    file: &str,
    query: Option<&str>,
    q: &HashMap<String, String>,
) -> Result<Response, Refused> {
    let (id, _) = web.log_target(id_text, query).await?;
    logs::check_file_name(file).map_err(Refused::BadRequest)?;
    let start = logs::int_param("start", q.get("start")).map_err(Refused::BadRequest)?;
    let end = logs::int_param("end", q.get("end")).map_err(Refused::BadRequest)?;
    let log = logs::open(web.log_dirs(&id), file.to_string())
        .await
        .ok_or_else(|| {
            Refused::NotFound(format!(
                "Exception reading log file. It might be because log file was aggregated : {file}"
            ))
        })?;
    let title = format!("Logs for {id}");
    let span = match logs::page_span(log.len, start, end) {
        Ok(span) => span,
        Err((s, e)) => {
            return Err(Refused::BadRequest(format!(
                "Invalid start and end values. Start: [{s}], end[{e}]"
            )))
        }
    };
    let mut prefix = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{}</title></head><body>",
        escape(&title)
    );
    if span.len < log.len {
        let full = format!(
            "/node/containerlogs/{id}/{}/{}/?start=0",
            percent_segment(user),
            percent_segment(file)
        );
        prefix.push_str(&format!(
            "<p>Showing {} bytes of {file_html}. Click <a href=\"{}\">here</a> for full log</p>",
            span.len,
            escape(&full),
            file_html = escape(file),
        ));
    }
    prefix.push_str("<pre>");
    let suffix = "</pre></body></html>\n".to_string();
    let body = logs::stream(log, span, prefix, suffix, true);
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response())
}

/// `text` as one URL path segment.
fn percent_segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
