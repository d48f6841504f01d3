//! The RM's HTML pages, on Hadoop's UI paths so that old bookmarks and
//! links keep working:
//!
//! | path | page | file |
//! |---|---|---|
//! | `/`, `/cluster` | the cluster overview | `overview.rs` |
//! | `/cluster/cluster` | about the RM | `overview.rs` |
//! | `/cluster/apps`, `/cluster/apps/<STATE>` | applications | `apps.rs` |
//! | `/cluster/app/<appId>` | one application | `app.rs` |
//! | `/cluster/appattempt/<attemptId>` | one attempt | `app.rs` |
//! | `/cluster/nodes`, `/cluster/nodes/<STATE>` | nodes | `nodes.rs` |
//! | `/cluster/scheduler` | the queue tree | `scheduler.rs` |
//! | `/static/spindle.css` | the stylesheet | `layout.rs` |
//!
//! Server-rendered HTML with one small stylesheet and a few lines of
//! inline script (sorting and filtering the applications table, reloading
//! the page); everything works without script too. Every string a user
//! gave (names, users, queues, diagnostics, URLs) is escaped.
//!
//! The pages read the state only through named queries (`state/queries.rs`,
//! `state/overview.rs`), as the caller named by `user.name` (else the static web user, `dr.who`:
//! see `web::caller`), so what ACLs hide from a caller's RPC reports stays hidden
//! here. A standby RM answers every page with a note saying so.
//!
//! Pages reload themselves every `spindle.webapp.ui.refresh-seconds`
//! (default 30; 0 turns it off); `?refresh=<seconds>` overrides it per
//! request, `?refresh=0` turns it off.

mod app;
mod apps;
pub mod layout;
mod nodes;
mod overview;
mod scheduler;

use std::collections::HashMap;

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use axum::Router;

use super::WebContext;
use crate::model::access::Caller;
use crate::runtime::active::ServiceState;
use crate::runtime::core::CoreStopped;
use crate::state::RmState;
use layout::Frame;
use spindle_common::markup::escape;

/// The configuration key of the pages' reload interval, in seconds.
pub const REFRESH_KEY: &str = "spindle.webapp.ui.refresh-seconds";
/// Its default.
pub const DEFAULT_REFRESH_SECS: u32 = 30;

pub fn routes() -> Router<WebContext> {
    Router::new()
        .route("/", get(overview::overview))
        .route("/cluster", get(overview::overview))
        .route("/cluster/", get(overview::overview))
        .route("/cluster/cluster", get(overview::about))
        .route("/cluster/apps", get(apps::apps))
        .route("/cluster/apps/{state}", get(apps::apps_in_state))
        .route("/cluster/app/{id}", get(app::app))
        .route("/cluster/appattempt/{id}", get(app::attempt))
        .route("/cluster/nodes", get(nodes::nodes))
        .route("/cluster/nodes/{state}", get(nodes::nodes_in_state))
        .route("/cluster/scheduler", get(scheduler::scheduler))
        .route(layout::CSS_PATH, get(layout::stylesheet))
}

/// The query parameters of a page, or a 400 page for a query string that
/// does not decode.
pub(crate) type Params = Result<Query<HashMap<String, String>>, QueryRejection>;

/// A page's one path parameter, or a 400 page for one that does not decode.
pub(crate) type PathArg = Result<Path<String>, PathRejection>;

/// One page request on its way: the frame to render into and the caller.
pub(crate) struct Page {
    pub web: WebContext,
    pub frame: Frame,
    pub params: HashMap<String, String>,
    pub caller: Caller,
}

impl Page {
    /// Reads the frame and the caller, or answers at once: a bad query
    /// string (400) or a standby RM (its note).
    pub async fn begin(web: WebContext, params: Params) -> Result<Page, Response> {
        let state = web.control.service_state();
        let configured = web
            .conf
            .get_trimmed(REFRESH_KEY)
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(DEFAULT_REFRESH_SECS);
        let mut frame = Frame {
            user: None,
            refresh: configured,
            rm_state: state.to_string(),
        };
        let params = match params {
            Ok(Query(p)) => p,
            Err(e) => {
                return Err(error_page(
                    &frame,
                    StatusCode::BAD_REQUEST,
                    "Bad request",
                    &e.body_text(),
                ))
            }
        };
        if let Some(r) = params.get("refresh") {
            match r.trim().parse::<u32>() {
                Ok(secs) => frame.refresh = secs.min(3600),
                Err(_) => {
                    return Err(error_page(
                        &frame,
                        StatusCode::BAD_REQUEST,
                        "Bad request",
                        &format!("refresh must be a number of seconds, not '{r}'"),
                    ))
                }
            }
        }
        frame.user = params
            .get("user.name")
            .map(|u| u.trim().to_string())
            .filter(|u| !u.is_empty());
        if state != ServiceState::Active {
            return Err(standby_page(&web, &frame));
        }
        let caller = crate::web::caller::caller_for(&web, frame.user.as_deref()).await;
        Ok(Page {
            web,
            frame,
            params,
            caller,
        })
    }

    /// Runs the read-only question `f` on the state; a standby (or
    /// stopping) RM answers with its note instead.
    pub async fn query<T, F>(&self, f: F) -> Result<T, Response>
    where
        T: Send + 'static,
        F: FnOnce(&RmState) -> T + Send + 'static,
    {
        self.web.rm().core.query(f).await.map_err(|e| match e {
            CoreStopped::Standby(_) => standby_page(&self.web, &self.frame),
            CoreStopped::ShuttingDown => error_page(
                &self.frame,
                StatusCode::SERVICE_UNAVAILABLE,
                "Unavailable",
                &e.to_string(),
            ),
        })
    }

    /// The path parameter, or a 400 page.
    pub fn path(&self, arg: PathArg) -> Result<String, Box<Response>> {
        match arg {
            Ok(Path(p)) => Ok(p),
            Err(e) => Err(Box::new(error_page(
                &self.frame,
                StatusCode::BAD_REQUEST,
                "Bad request",
                &e.body_text(),
            ))),
        }
    }

    /// A query parameter, trimmed, when given and not empty.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .get(name)
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
    }
}

/// A page with just a message.
pub(crate) fn error_page(
    frame: &Frame,
    status: StatusCode,
    title: &str,
    message: &str,
) -> Response {
    frame.page(
        status,
        "",
        title,
        &format!("<p class=\"note\" id=\"message\">{}</p>", escape(message)),
    )
}

/// What a standby RM shows on every page (as Hadoop's "This is standby RM").
fn standby_page(web: &WebContext, frame: &Frame) -> Response {
    let who = web
        .rm()
        .rm_id
        .as_deref()
        .map(|id| format!("ResourceManager {id}"))
        .unwrap_or_else(|| "This ResourceManager".to_string());
    frame.page(
        StatusCode::OK,
        "",
        "Standby ResourceManager",
        &format!(
            "<p class=\"note\" id=\"standby\">{} is in standby. It serves no applications, nodes \
             or queues: open the active ResourceManager's UI.</p>",
            escape(&who)
        ),
    )
}
