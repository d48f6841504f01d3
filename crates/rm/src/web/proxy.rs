//! `/proxy/<appId>/<rest>?<query>`: Hadoop's `WebAppProxyServlet` in the
//! RM. Spark (and MapReduce) install Hadoop's `AmIpFilter` in their AM web
//! UI, which sends every browser that is not the proxy to
//! `http://<proxy>/proxy/<appId>/...`; the proxy fetches the page from the
//! AM (from the proxy host's address, which the filter accepts) and hands
//! it back.
//!
//! What a request gets, as Hadoop's `methodAction`:
//!
//! | case | answer |
//! |---|---|
//! | a method other than GET, HEAD, PUT | 405 (`HttpServlet`'s default) |
//! | no application id, or one that does not parse | 404 page "... appears to be formatted incorrectly." (Hadoop 3.3 answers a 500 for an id that does not parse) |
//! | `/proxy/redirect/<appId>/...` (the AM filter's redirect) from this machine | 302 to `/cluster/failure/<appId>`: the AM sent the proxy back to itself |
//! | an application the RM does not know | 404 page "Application <id> could not be found in RM or history server" |
//! | no AM URL yet (not registered; or it finished without a final URL) | 302 to the RM's application page `/cluster/app/<appId>` |
//! | Kerberos on, a first visit by another user than the owner | the warning page ("WARNING: The following page may not be safe!") with a `checked_<appId>` cookie |
//! | FINISHED, FAILED or KILLED | 302 to the URL the AM gave at unregister (or the RM's page for a failed or killed attempt) + rest + query |
//! | running | the AM's page: GET (HEAD as GET) or PUT forwarded to the AM's URL + rest + query, `PASS_THROUGH_HEADERS` copied, `Cookie: proxy-user=<user>`, redirects of a GET followed (Hadoop's HTTP client does), the AM's status and headers (not the hop-by-hop ones) and body streamed back |
//! | the AM cannot be reached | 502 page (Hadoop: a 500 from the servlet's IOException) |
//! | the AM does not answer within `yarn.resourcemanager.proxy.connection.timeout` | 504 page |
//! | more than `spindle.web-proxy.max-concurrent-requests` (default 64) requests being proxied | 503 page |
//!
//! The caller is the pseudo-authentication user (`user.name`), else
//! `hadoop.http.staticuser.user` (`dr.who`), as on Hadoop's web apps.
//! Hadoop's proxy checks no application ACL (it reads the report as the
//! RM), and neither does this one. With `yarn.web-proxy.address` naming
//! another address than the RM's web app, the RM does not serve `/proxy/`:
//! the separate proxy server does (`spindle proxyserver`, Hadoop's
//! `WebAppProxyServer`), with this same code over an [`AppSource`] that
//! asks the RM for application reports.

use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::{Extension, Router};
use http_body::{Frame, SizeHint};
use hyper_util::rt::TokioIo;
use spindle_common::ids::ApplicationId;
use spindle_common::markup::escape;
use spindle_common::Configuration;
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tracing::{debug, info, warn};

use super::WebContext;
use crate::model::apps::AppState;
use crate::model::tracking::UNAVAILABLE;
use crate::runtime::context::RmContext;

/// The request headers Hadoop's proxy passes to the AM.
pub const PASS_THROUGH_HEADERS: [&str; 9] = [
    "User-Agent",
    "Accept",
    "Accept-Encoding",
    "Accept-Language",
    "Accept-Charset",
    "Content-Type",
    "Origin",
    "Access-Control-Request-Method",
    "Access-Control-Request-Headers",
];

/// The cookie naming the proxied user, read by the AM's `AmIpFilter`.
pub const PROXY_USER_COOKIE_NAME: &str = "proxy-user";

/// The query parameter of the warning page's link.
pub const PROXY_APPROVAL_PARAM: &str = "proxyapproved";

/// Hadoop's HTTP client's default bound on redirects it follows.
const MAX_REDIRECTS: usize = 50;

const MAX_CONCURRENT_KEY: &str = "spindle.web-proxy.max-concurrent-requests";
const DEFAULT_MAX_CONCURRENT: usize = 64;
const TIMEOUT_ENABLED_KEY: &str = "yarn.resourcemanager.proxy.timeout.enabled";
const TIMEOUT_KEY: &str = "yarn.resourcemanager.proxy.connection.timeout";
const DEFAULT_TIMEOUT_MS: u64 = 60_000;

/// Headers of one connection, never forwarded.
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
];

/// What the proxy needs to know about an application, from wherever it
/// learns it: the RM's state in the RM, `getApplicationReport` in the
/// separate proxy server (`spindle proxyserver`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyApp {
    /// The owner (the warning page names it).
    pub user: String,
    /// The report's `originalTrackingUrl`: the AM's own URL while it runs,
    /// the final one once it ended; `N/A` or empty when there is none.
    pub original_tracking_url: String,
    /// FINISHED, FAILED or KILLED: the proxy redirects instead of fetching.
    pub ended: bool,
}

/// A boxed future of a lookup.
pub type Lookup<'a> = Pin<Box<dyn Future<Output = Result<Option<ProxyApp>, String>> + Send + 'a>>;

/// Where the proxy learns about applications. `Ok(None)`: the application
/// is not known; `Err`: it cannot be told now (the message is shown).
pub trait AppSource: Send + Sync + 'static {
    fn app(&self, id: ApplicationId) -> Lookup<'_>;
}

/// The RM's own source: the state's `proxy_target` query.
struct RmSource {
    rm: Arc<RmContext>,
}

impl AppSource for RmSource {
    fn app(&self, id: ApplicationId) -> Lookup<'_> {
        Box::pin(async move {
            let found = self
                .rm
                .core
                .query(move |s| s.proxy_target(&id))
                .await
                .map_err(|e| e.to_string())?;
            Ok(found.map(|app| ProxyApp {
                original_tracking_url: app.am_tracking.as_ref().map_or_else(
                    || UNAVAILABLE.to_string(),
                    |am| self.rm.web.urls(&id, app.unmanaged, am).original,
                ),
                ended: matches!(
                    app.state,
                    AppState::Finished | AppState::Failed | AppState::Killed
                ),
                user: app.user,
            }))
        })
    }
}

/// One web proxy: Hadoop's `WebAppProxyServlet` over an [`AppSource`].
#[derive(Clone)]
pub struct WebProxy {
    source: Arc<dyn AppSource>,
    conf: Arc<Configuration>,
    /// `http://host:port` of the RM's web app (its application pages).
    rm_web: String,
    /// The host the proxy sends requests to AMs from.
    proxy_host: String,
    limits: Arc<ProxyLimits>,
}

impl WebProxy {
    /// A proxy learning about applications from `source`, sending browsers
    /// to the RM's pages at `rm_web` (`http://host:port`) and connecting to
    /// AMs from `proxy_host`.
    pub fn new(
        source: Arc<dyn AppSource>,
        conf: Arc<Configuration>,
        rm_web: impl Into<String>,
        proxy_host: impl Into<String>,
    ) -> WebProxy {
        WebProxy {
            source,
            conf,
            rm_web: rm_web.into(),
            proxy_host: proxy_host.into(),
            limits: Arc::new(ProxyLimits::default()),
        }
    }

    /// `/proxy`, `/proxy/` and `/proxy/...`, served by this proxy.
    pub fn router(self) -> Router {
        Router::new()
            .route("/proxy", any(serve))
            .route("/proxy/", any(serve))
            .route("/proxy/{*rest}", any(serve))
            .with_state(self)
    }
}

async fn serve(State(proxy): State<WebProxy>, req: Request) -> Response {
    proxy.handle(req).await
}

/// The RM's `/proxy/` routes (answered only when the RM is the proxy).
pub fn routes() -> Router<WebContext> {
    let limits = Arc::new(ProxyLimits::default());
    Router::new()
        .route("/proxy", any(rm_proxy))
        .route("/proxy/", any(rm_proxy))
        .route("/proxy/{*rest}", any(rm_proxy))
        .layer(Extension(limits))
}

/// How many requests are being proxied at most (one proxy's).
#[derive(Default)]
struct ProxyLimits {
    permits: OnceLock<Arc<Semaphore>>,
}

impl ProxyLimits {
    fn semaphore(&self, conf: &Configuration) -> Arc<Semaphore> {
        self.permits
            .get_or_init(|| {
                let n = conf
                    .get_trimmed(MAX_CONCURRENT_KEY)
                    .and_then(|v| v.parse::<usize>().ok())
                    .filter(|n| *n > 0)
                    .unwrap_or(DEFAULT_MAX_CONCURRENT);
                Arc::new(Semaphore::new(n))
            })
            .clone()
    }
}

/// Hadoop's `yarn.resourcemanager.proxy.timeout.enabled` and
/// `...proxy.connection.timeout`: connecting, waiting for the answer and
/// each wait for more of the body (`None`: no bound, as Hadoop with the
/// timeout turned off).
pub fn timeout(conf: &Configuration) -> Option<Duration> {
    let enabled = conf
        .get_trimmed(TIMEOUT_ENABLED_KEY)
        .map(|v| !v.eq_ignore_ascii_case("false"))
        .unwrap_or(true);
    let ms = conf
        .get_trimmed(TIMEOUT_KEY)
        .and_then(|v| v.parse::<i64>().ok())
        .map_or(DEFAULT_TIMEOUT_MS, |ms| ms.max(0) as u64);
    (enabled && ms > 0).then(|| Duration::from_millis(ms))
}

async fn rm_proxy(
    State(web): State<WebContext>,
    Extension(limits): Extension<Arc<ProxyLimits>>,
    req: Request,
) -> Response {
    let rm = web.rm().clone();
    if !rm.web.rm_serves_proxy {
        return StatusCode::NOT_FOUND.into_response();
    }
    let proxy = WebProxy {
        rm_web: rm.web.rm_web.clone(),
        proxy_host: rm.web.proxy_host().to_string(),
        source: Arc::new(RmSource { rm }),
        conf: web.conf.clone(),
        limits,
    };
    proxy.handle(req).await
}

impl WebProxy {
    /// Answers one request under `/proxy`.
    pub async fn handle(&self, req: Request) -> Response {
        let method = req.method().clone();
        if method != Method::GET && method != Method::HEAD && method != Method::PUT {
            let mut resp = page(
                StatusCode::METHOD_NOT_ALLOWED,
                &format!("HTTP method {method} is not supported by this URL"),
            );
            resp.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD, PUT"));
            return resp;
        }
        let peer = req
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|c| c.0.ip());
        let path = req.uri().path().to_string();
        let query = req.uri().query().map(str::to_string);
        let Some(target) = parse_path(&path) else {
            return not_found("Your path appears to be formatted incorrectly.");
        };
        let Ok(id) = target.app.parse::<ApplicationId>() else {
            warn!(app = %target.app, "web proxy: an application id that does not parse");
            return not_found(&format!(
                "{} appears to be formatted incorrectly.",
                target.app
            ));
        };
        if target.redirected && peer.is_some_and(is_local_address) {
            warn!(
                app = %id,
                "the AM's web app redirected the web proxy's request back to the web proxy; \
                 check the network configuration and yarn.web-proxy.address"
            );
            return redirect(&format!("{}/cluster/failure/{}", self.rm_web, target.app));
        }

        let conf = &self.conf;
        let security = conf
            .get_trimmed("hadoop.security.authentication")
            .is_some_and(|a| a.eq_ignore_ascii_case("kerberos"));
        let remote_user = remote_user(query.as_deref(), conf);
        let mut user_approved = query_param(query.as_deref(), PROXY_APPROVAL_PARAM)
            .is_some_and(|v| v.eq_ignore_ascii_case("true"));
        let mut user_was_warned = false;
        if security {
            if let Some(v) = cookie(req.headers(), &check_cookie_name(&id)) {
                user_was_warned = true;
                user_approved = user_approved || v.eq_ignore_ascii_case("true");
            }
        }
        let check_user = security && (!user_was_warned || !user_approved);

        let app = match self.source.app(id).await {
            Ok(Some(app)) => app,
            Ok(None) => {
                warn!(user = %remote_user, app = %id, "web proxy: the application was not found");
                return not_found(&format!(
                    "Application {} could not be found in RM or history server",
                    target.app
                ));
            }
            Err(e) => return page(StatusCode::SERVICE_UNAVAILABLE, &e),
        };
        let original = app.original_tracking_url;
        if original.trim().is_empty() || original == UNAVAILABLE {
            debug!(app = %id, "no tracking URL: redirecting to the RM's application page");
            return redirect(&format!("{}/cluster/app/{id}", self.rm_web));
        }
        let tracking = if original.contains("://") {
            original
        } else {
            format!("http://{original}")
        };
        if check_user && app.user != remote_user {
            info!(
                user = %remote_user, app = %id, owner = %app.user,
                "asking whether the user wants to connect to the AM web UI of another user"
            );
            let link = path_and_query(&id, target.rest, query.as_deref(), true);
            return warn_user_page(&link, &app.user, &id);
        }
        let to_fetch = build_tracking_url(&tracking, query.as_deref(), target.rest);
        info!(
            user = %remote_user, url = %to_fetch, app = %id, owner = %app.user,
            "web proxy: accessing the AM web UI"
        );
        if app.ended {
            return redirect(&to_fetch);
        }
        let approved_cookie = (user_was_warned && user_approved).then(|| check_cookie(&id, true));
        let forward = Forward {
            method,
            headers: req.headers().clone(),
            body: req.into_body(),
            user: remote_user,
            set_cookie: approved_cookie,
        };
        proxy_link(&self.proxy_host, conf, &self.limits, &to_fetch, forward).await
    }
}

/// The parts of `/proxy[/redirect]/<appId>[/<rest>]`.
#[derive(Debug, PartialEq, Eq)]
struct ProxyPath<'a> {
    app: &'a str,
    rest: &'a str,
    redirected: bool,
}

fn parse_path(path: &str) -> Option<ProxyPath<'_>> {
    let info = path.strip_prefix("/proxy")?;
    if info.is_empty() {
        return None;
    }
    let (info, redirected) = match info.strip_prefix("/redirect") {
        Some(after) => (after, true),
        None => (info, false),
    };
    let mut parts = info.splitn(3, '/');
    let _leading = parts.next()?;
    let app = parts.next()?;
    Some(ProxyPath {
        app,
        rest: parts.next().unwrap_or(""),
        redirected,
    })
}

/// Whether `ip` is an address of this machine (Hadoop's
/// `NetUtils.getLocalInetAddress`): one a socket can be bound to.
fn is_local_address(ip: IpAddr) -> bool {
    ip.is_loopback() || std::net::UdpSocket::bind(SocketAddr::new(ip, 0)).is_ok()
}

/// The caller as Hadoop's web apps see it without Kerberos: the `user.name`
/// of pseudo authentication, else the static web user.
fn remote_user(query: Option<&str>, conf: &Configuration) -> String {
    query_param(query, "user.name")
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| {
            conf.get_trimmed("hadoop.http.staticuser.user")
                .filter(|u| !u.is_empty())
                .unwrap_or_else(|| "dr.who".to_string())
        })
}

/// The first value of query parameter `name`, percent-decoded.
fn query_param(query: Option<&str>, name: &str) -> Option<String> {
    query?.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (percent_decode(k) == name).then(|| percent_decode(v))
    })
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Java's `URLEncoder.encode` (form encoding).
fn form_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'-' | b'*' | b'_' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            b => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|c| {
            let (k, v) = c.trim().split_once('=')?;
            (k.trim() == name).then(|| v.trim().trim_matches('"').to_string())
        })
}

fn check_cookie_name(id: &ApplicationId) -> String {
    format!("checked_{id}")
}

/// The cookie remembering that the user saw (`false`) or approved (`true`)
/// the warning page, for two hours, on the application's proxy path.
fn check_cookie(id: &ApplicationId, approved: bool) -> String {
    format!(
        "{}={approved}; Path=/proxy/{id}; Max-Age=7200; HttpOnly",
        check_cookie_name(id)
    )
}

/// `ProxyUriUtils.getPathAndQuery`: the proxy path of `rest` with the
/// query, and the approval when `approved`.
fn path_and_query(id: &ApplicationId, rest: &str, query: Option<&str>, approved: bool) -> String {
    let mut out = format!("/proxy/{id}");
    if !rest.is_empty() {
        out.push('/');
        out.push_str(rest.trim_start_matches('/'));
    }
    let mut first = true;
    if let Some(q) = query.filter(|q| !q.is_empty()) {
        out.push('?');
        out.push_str(q.trim_start_matches('?'));
        first = false;
    }
    if approved {
        out.push(if first { '?' } else { '&' });
        out.push_str(PROXY_APPROVAL_PARAM);
        out.push_str("=true");
    }
    out
}

/// The tracking URL with the request's path and query appended (Hadoop's
/// `buildTrackingUrl`: the query parameters join the URL's own, the rest
/// of the path is one more path segment).
fn build_tracking_url(base: &str, query: Option<&str>, rest: &str) -> String {
    let (base, fragment) = match base.split_once('#') {
        Some((b, f)) => (b, Some(f)),
        None => (base, None),
    };
    let (base, base_query) = match base.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (base, None),
    };
    let mut url = base.to_string();
    if !rest.is_empty() {
        match (url.ends_with('/'), rest.starts_with('/')) {
            (false, false) => url.push('/'),
            (true, true) => {
                url.pop();
            }
            _ => {}
        }
        url.push_str(rest);
    }
    let queries: Vec<&str> = [base_query, query]
        .into_iter()
        .flatten()
        .filter(|q| !q.is_empty())
        .collect();
    if !queries.is_empty() {
        url.push('?');
        url.push_str(&queries.join("&"));
    }
    if let Some(f) = fragment {
        url.push('#');
        url.push_str(f);
    }
    url
}

fn html(status: StatusCode, body: String) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=UTF-8"),
        )],
        body,
    )
        .into_response()
}

/// A page with one heading, as `ProxyUtils.notFound` writes them.
fn page(status: StatusCode, message: &str) -> Response {
    html(
        status,
        format!(
            "<html>\n  <h1>\n    {}\n  </h1>\n</html>\n",
            escape(message)
        ),
    )
}

fn not_found(message: &str) -> Response {
    page(StatusCode::NOT_FOUND, message)
}

/// `ProxyUtils.sendRedirect`: a 302 with a "Moved" page.
fn redirect(target: &str) -> Response {
    let Ok(location) = HeaderValue::from_str(target) else {
        return page(
            StatusCode::BAD_GATEWAY,
            "The application's tracking URL is not a valid URL",
        );
    };
    let link = escape(target);
    let mut resp = html(
        StatusCode::FOUND,
        format!(
            "<html>\n  <head>\n    <title>\n      Moved\n    </title>\n  </head>\n  <body>\n    \
             <h1>\n      Moved\n    </h1>\n    <div>\n      Content has moved\n      \
             <a href=\"{link}\">here</a>\n    </div>\n  </body>\n</html>\n"
        ),
    );
    resp.headers_mut().insert(header::LOCATION, location);
    resp
}

fn warn_user_page(link: &str, owner: &str, id: &ApplicationId) -> Response {
    let mut resp = html(
        StatusCode::OK,
        format!(
            "<html>\n  <h1>\n    WARNING: The following page may not be safe!\n  </h1>\n  <h3>\n    \
             click <a href=\"{}\">here</a> to continue to an Application Master web interface \
             owned by {}\n  </h3>\n</html>\n",
            escape(link),
            escape(owner)
        ),
    );
    if let Ok(v) = HeaderValue::from_str(&check_cookie(id, false)) {
        resp.headers_mut().append(header::SET_COOKIE, v);
    }
    resp
}

/// The request to pass on.
struct Forward {
    method: Method,
    headers: HeaderMap,
    body: Body,
    user: String,
    /// A `Set-Cookie` value for the answer (the approval).
    set_cookie: Option<String>,
}

/// Why the AM's page could not be fetched.
#[derive(Debug)]
enum FetchError {
    /// Connecting or waiting for the answer took longer than the bound.
    Timeout(String),
    /// Anything else: refused, unresolvable, a broken answer.
    Failed(String),
}

impl FetchError {
    fn into_response(self) -> Response {
        match self {
            FetchError::Timeout(m) => page(StatusCode::GATEWAY_TIMEOUT, &m),
            FetchError::Failed(m) => page(StatusCode::BAD_GATEWAY, &m),
        }
    }
}

/// `proxyLink`: fetches `url` from the AM and streams its answer back.
async fn proxy_link(
    proxy_host: &str,
    conf: &Configuration,
    limits: &ProxyLimits,
    url: &str,
    forward: Forward,
) -> Response {
    let Ok(permit) = limits.semaphore(conf).try_acquire_owned() else {
        return page(
            StatusCode::SERVICE_UNAVAILABLE,
            "Too many requests are being proxied; try again later",
        );
    };
    let bound = timeout(conf);
    let local = local_address(proxy_host).await;
    let mut headers = HeaderMap::new();
    for name in PASS_THROUGH_HEADERS {
        if let Some(v) = forward.headers.get(name) {
            if let Ok(n) = HeaderName::from_bytes(name.as_bytes()) {
                headers.insert(n, v.clone());
            }
        }
    }
    if !forward.user.is_empty() {
        let value = format!("{PROXY_USER_COOKIE_NAME}={}", form_encode(&forward.user));
        if let Ok(v) = HeaderValue::from_str(&value) {
            headers.insert(header::COOKIE, v);
        }
    }
    // HEAD is a GET whose body the server leaves out, as Hadoop's servlet.
    let (method, follow) = if forward.method == Method::PUT {
        (Method::PUT, false)
    } else {
        (Method::GET, true)
    };
    let Ok(mut uri) = url.parse::<Uri>() else {
        return page(
            StatusCode::BAD_GATEWAY,
            &format!("The tracking URL {url} is not a valid URL"),
        );
    };
    let mut body = Some(forward.body);
    let mut hops = 0;
    let answer = loop {
        let sent = fetch(
            &uri,
            method.clone(),
            &headers,
            body.take().unwrap_or_default(),
            local,
            bound,
        )
        .await;
        let resp = match sent {
            Ok(r) => r,
            Err(e) => {
                warn!(url = %uri, error = ?e, "web proxy: the AM's web UI cannot be fetched");
                return e.into_response();
            }
        };
        let next = (follow && resp.status().is_redirection() && hops < MAX_REDIRECTS)
            .then(|| resp.headers().get(header::LOCATION))
            .flatten()
            .and_then(|l| l.to_str().ok())
            .and_then(|l| resolve_location(&uri, l))
            .filter(|u| u.scheme_str().is_none_or(|s| s == "http"));
        match next {
            Some(next) => {
                debug!(from = %uri, to = %next, "web proxy: following the AM's redirect");
                uri = next;
                hops += 1;
            }
            None => break resp,
        }
    };
    let (parts, incoming) = answer.into_parts();
    let mut resp = Response::new(Body::new(Streamed {
        inner: incoming,
        idle: bound,
        deadline: None,
        _permit: permit,
    }));
    *resp.status_mut() = parts.status;
    for (name, value) in &parts.headers {
        if !HOP_BY_HOP.contains(&name.as_str()) {
            resp.headers_mut().append(name.clone(), value.clone());
        }
    }
    if let Some(c) = forward
        .set_cookie
        .and_then(|c| HeaderValue::from_str(&c).ok())
    {
        resp.headers_mut().append(header::SET_COOKIE, c);
    }
    resp
}

/// The address of the proxy host to send requests from (`None` when it
/// does not resolve).
async fn local_address(proxy_host: &str) -> Option<IpAddr> {
    let found = tokio::net::lookup_host((proxy_host, 0)).await.ok()?;
    let addrs: Vec<IpAddr> = found.map(|a| a.ip()).collect();
    addrs
        .iter()
        .find(|ip| ip.is_ipv4())
        .or_else(|| addrs.first())
        .copied()
}

/// One request to the AM, answered with its head (the body streams later).
async fn fetch(
    uri: &Uri,
    method: Method,
    headers: &HeaderMap,
    body: Body,
    local: Option<IpAddr>,
    bound: Option<Duration>,
) -> Result<hyper::Response<hyper::body::Incoming>, FetchError> {
    if uri.scheme_str().is_some_and(|s| s != "http") {
        return Err(FetchError::Failed(format!(
            "The web proxy cannot fetch {uri}: only http tracking URLs are proxied"
        )));
    }
    let Some(authority) = uri.authority().cloned() else {
        return Err(FetchError::Failed(format!(
            "The tracking URL {uri} names no host"
        )));
    };
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let port = authority.port_u16().unwrap_or(80);
    let stream = within(bound, &format!("connecting to {authority}"), async {
        connect(&host, port, local)
            .await
            .map_err(|e| FetchError::Failed(format!("Cannot connect to {authority}: {e}")))
    })
    .await?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| FetchError::Failed(format!("{authority}: {e}")))?;
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            debug!(error = %e, "web proxy: the connection to the AM ended");
        }
    });
    let path = uri
        .path_and_query()
        .map_or_else(|| "/".to_string(), |p| p.as_str().to_string());
    let mut request = hyper::Request::new(body);
    *request.method_mut() = method;
    *request.uri_mut() = path
        .parse()
        .map_err(|_| FetchError::Failed(format!("The tracking URL {uri} is not valid")))?;
    *request.headers_mut() = headers.clone();
    if let Ok(h) = HeaderValue::from_str(authority.as_str()) {
        request.headers_mut().insert(header::HOST, h);
    }
    within(bound, &format!("waiting for {uri}"), async {
        sender
            .send_request(request)
            .await
            .map_err(|e| FetchError::Failed(format!("{uri}: {e}")))
    })
    .await
}

async fn within<T>(
    bound: Option<Duration>,
    what: &str,
    f: impl Future<Output = Result<T, FetchError>>,
) -> Result<T, FetchError> {
    match bound {
        None => f.await,
        Some(d) => tokio::time::timeout(d, f).await.unwrap_or_else(|_| {
            Err(FetchError::Timeout(format!(
                "Timed out after {} ms {what}",
                d.as_millis()
            )))
        }),
    }
}

/// Connects to `host:port` from `local` (the AM's filter accepts only the
/// proxy host's addresses; an AM on this machine sees a loopback proxy
/// host's address too), or from wherever the system picks when that
/// cannot reach the peer (a loopback source and another machine).
async fn connect(host: &str, port: u16, local: Option<IpAddr>) -> io::Result<TcpStream> {
    let mut last = io::Error::new(io::ErrorKind::NotFound, "no address");
    for addr in tokio::net::lookup_host((host, port)).await? {
        let from = local.filter(|ip| {
            ip.is_ipv4() == addr.is_ipv4() && (!ip.is_loopback() || is_local_address(addr.ip()))
        });
        let attempts = [from, None];
        for from in attempts.iter().take(if from.is_some() { 2 } else { 1 }) {
            let socket = if addr.is_ipv4() {
                TcpSocket::new_v4()?
            } else {
                TcpSocket::new_v6()?
            };
            if let Some(ip) = from {
                if let Err(e) = socket.bind(SocketAddr::new(*ip, 0)) {
                    debug!(%ip, error = %e, "web proxy: cannot send from the proxy host's address");
                    continue;
                }
            }
            match socket.connect(addr).await {
                Ok(s) => return Ok(s),
                Err(e) => last = e,
            }
        }
    }
    Err(last)
}

/// Where a redirect from the page at `base` goes.
fn resolve_location(base: &Uri, location: &str) -> Option<Uri> {
    let location = location.trim();
    let absolute = if location.contains("://") {
        location.to_string()
    } else if let Some(rest) = location.strip_prefix("//") {
        format!("{}://{rest}", base.scheme_str().unwrap_or("http"))
    } else {
        let origin = format!(
            "{}://{}",
            base.scheme_str().unwrap_or("http"),
            base.authority()?
        );
        if location.starts_with('/') {
            format!("{origin}{location}")
        } else {
            let dir = base.path().rsplit_once('/').map_or("", |(d, _)| d);
            format!("{origin}{dir}/{location}")
        }
    };
    absolute.parse().ok()
}

/// The AM's body on its way to the browser: each wait for more is bounded,
/// and the request holds its place among the concurrent ones until done.
struct Streamed {
    inner: hyper::body::Incoming,
    idle: Option<Duration>,
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
    _permit: OwnedSemaphorePermit,
}

impl http_body::Body for Streamed {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                this.deadline = None;
                Poll::Ready(frame.map(|f| f.map_err(Into::into)))
            }
            Poll::Pending => {
                if let Some(idle) = this.idle {
                    let deadline = this
                        .deadline
                        .get_or_insert_with(|| Box::pin(tokio::time::sleep(idle)));
                    if deadline.as_mut().poll(cx).is_ready() {
                        return Poll::Ready(Some(Err(
                            "the AM's web UI stopped sending its page".into()
                        )));
                    }
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app() -> ApplicationId {
        ApplicationId::new(1700000000000, 3)
    }

    #[test]
    fn parses_proxy_paths() {
        assert_eq!(parse_path("/proxy"), None);
        assert_eq!(
            parse_path("/proxy/application_1_0001/jobs/"),
            Some(ProxyPath {
                app: "application_1_0001",
                rest: "jobs/",
                redirected: false
            })
        );
        assert_eq!(
            parse_path("/proxy/application_1_0001"),
            Some(ProxyPath {
                app: "application_1_0001",
                rest: "",
                redirected: false
            })
        );
        assert_eq!(
            parse_path("/proxy/redirect/application_1_0001/a/b"),
            Some(ProxyPath {
                app: "application_1_0001",
                rest: "a/b",
                redirected: true
            })
        );
        assert_eq!(parse_path("/proxy/redirect"), None);
        assert_eq!(
            parse_path("/proxy/"),
            Some(ProxyPath {
                app: "",
                rest: "",
                redirected: false
            })
        );
    }

    #[test]
    fn builds_the_url_to_fetch() {
        assert_eq!(
            build_tracking_url("http://am:4040", None, "jobs/"),
            "http://am:4040/jobs/"
        );
        assert_eq!(
            build_tracking_url("http://am:4040", None, ""),
            "http://am:4040"
        );
        assert_eq!(
            build_tracking_url("http://am:4040/ui/", Some("id=1&x=%20"), "/stage"),
            "http://am:4040/ui/stage?id=1&x=%20"
        );
        assert_eq!(
            build_tracking_url("http://hs:18080/history/app?a=b#top", Some("c=d"), "jobs"),
            "http://hs:18080/history/app/jobs?a=b&c=d#top"
        );
    }

    #[test]
    fn the_warning_link_carries_the_approval() {
        assert_eq!(
            path_and_query(&app(), "jobs/", Some("a=1"), true),
            "/proxy/application_1700000000000_0003/jobs/?a=1&proxyapproved=true"
        );
        assert_eq!(
            path_and_query(&app(), "", None, true),
            "/proxy/application_1700000000000_0003?proxyapproved=true"
        );
    }

    #[test]
    fn query_cookies_and_encoding() {
        assert_eq!(
            query_param(Some("a=1&user.name=bob%20x&b"), "user.name").as_deref(),
            Some("bob x")
        );
        assert_eq!(query_param(Some("b"), "b").as_deref(), Some(""));
        assert_eq!(query_param(None, "b"), None);
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; checked_application_1_0001=true"),
        );
        assert_eq!(
            cookie(&h, "checked_application_1_0001").as_deref(),
            Some("true")
        );
        assert_eq!(form_encode("dr.who"), "dr.who");
        assert_eq!(form_encode("a b/c"), "a+b%2Fc");
    }

    #[test]
    fn resolves_redirects() {
        let base: Uri = "http://am:4040/a/b?x".parse().expect("uri");
        let r = |l| resolve_location(&base, l).map(|u| u.to_string());
        assert_eq!(r("/jobs/").as_deref(), Some("http://am:4040/jobs/"));
        assert_eq!(r("c").as_deref(), Some("http://am:4040/a/c"));
        assert_eq!(r("http://other:1/x").as_deref(), Some("http://other:1/x"));
        assert_eq!(r("//other:2/y").as_deref(), Some("http://other:2/y"));
    }

    #[test]
    fn local_addresses() {
        assert!(is_local_address("127.0.0.1".parse().expect("ip")));
        assert!(!is_local_address("192.0.2.1".parse().expect("ip")));
    }
}
