//! The application resources: `/apps` with Hadoop's filters, one
//! application, its attempts and their containers, and its state, priority
//! and queue.

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Uri};
use axum::response::Response;
use serde_json::json;
use spindle_common::ids::ApplicationAttemptId;
use spindle_common::time::wall_ms_u64;
use spindle_scheduler::SchedulerKind;
use spindle_web::{reply, Format, WebError};

use super::dao::{AppInfo, DeSelects};
use super::params::{self, Params};
use super::{
    answer, dao, list_reply, ok_body, parse_app_id, parse_attempt_id, parse_container_id,
    path_param, query, refused, unwrapped_reply,
};
use crate::model::reports::AppView;
use crate::model::tracking::WebAddresses;
use crate::state::AppListEntry;
use crate::web::caller::read_caller;
use crate::web::WebContext;

fn app_not_found(raw: &str) -> WebError {
    WebError::not_found(format!("app with id: {raw} not found"))
}

pub(super) async fn apps(State(web): State<WebContext>, uri: Uri, headers: HeaderMap) -> Response {
    let a = async {
        let params = Params::of(&uri)?;
        let q = params::apps_query(&params)?;
        let caller = read_caller(&web, &uri, &headers).await?;
        // One list at a time, written off the runtime's worker threads.
        let _one_list = web
            .lists
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| WebError::unavailable("the web server is stopping"))?;
        let capacity = web.rm().scheduler_kind == SchedulerKind::Capacity;
        let (filter, queue, final_status) = (q.filter.clone(), q.queue.clone(), q.final_status);
        // On the owner of the state: only the applications kept, copied
        // as lean entries, a part at a time (heartbeats are answered
        // between the parts); everything else happens off it.
        let (known_queue, first) = query(&web, {
            let (filter, caller) = (filter.clone(), caller.clone());
            move |s| {
                // The capacity scheduler refuses an unknown queue (`getQueueInfo`).
                let known = match (&queue, capacity) {
                    (Some(name), true) => {
                        s.queue_info(name, false, false, false, &caller).is_some()
                    }
                    _ => true,
                };
                let first =
                    known.then(|| s.app_list(&filter, final_status, &caller, None, LIST_PART));
                (known, first)
            }
        })
        .await?;
        if !known_queue {
            let name = q.queue.unwrap_or_default();
            return Err(WebError::bad_request(format!("Unknown queue: {name}")));
        }
        let (mut entries, mut next) = first.map_or((Vec::new(), None), |p| (p.entries, p.next));
        while let Some(after) = next {
            let (filter, caller) = (filter.clone(), caller.clone());
            let part = query(&web, move |s| {
                s.app_list(&filter, final_status, &caller, Some(after), LIST_PART)
            })
            .await?;
            entries.extend(part.entries);
            next = part.next;
        }
        let ts = web.rm().cluster_ts();
        let now = wall_ms_u64();
        let format = Format::of(&headers);
        let web = web.clone();
        let body = tokio::task::spawn_blocking(move || {
            apps_body(&entries, &web.rm().web, ts, now, q.deselects, format)
        })
        .await
        .map_err(|e| WebError::unavailable(format!("the application list was not built: {e}")))?
        .map_err(|e| WebError::unavailable(format!("the application list was not built: {e}")))?;
        Ok(ok_body(format, body))
    };
    answer(&headers, a.await)
}

/// The tracking URL the RM hands out for an entry (the proxy's, as in the
/// RPC reports; empty while there is none).
fn entry_tracking_url(e: &AppListEntry, addresses: &WebAddresses) -> String {
    match (&e.am_tracking, e.viewable) {
        (Some(am), true) => {
            let url = addresses.urls(&e.id, e.unmanaged_am, am).tracking;
            if url == crate::model::tracking::UNAVAILABLE {
                String::new()
            } else {
                url
            }
        }
        _ => String::new(),
    }
}

/// Applications listed per query of the state: a part costs its owner
/// one to two milliseconds (release build, 10,000 applications held).
const LIST_PART: usize = 1000;

/// What `spindle_web::json_to_xml` starts a document with.
const XML_DECLARATION: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>"#;

/// The body of `/apps` (`AppsInfo`) for the entries the state gave: JSON
/// written straight from the typed DAOs, or XML as JAXB writes it.
pub(super) fn apps_body(
    entries: &[AppListEntry],
    addresses: &WebAddresses,
    ts: i64,
    now: u64,
    deselects: DeSelects,
    format: Format,
) -> Result<Vec<u8>, serde_json::Error> {
    match format {
        Format::Json => {
            if entries.is_empty() {
                return Ok(br#"{"apps":null}"#.to_vec());
            }
            // About 1.1 kB per application.
            let mut out = Vec::with_capacity(64 + entries.len() * 1152);
            out.extend_from_slice(br#"{"apps":{"app":["#);
            for (i, e) in entries.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                let url = entry_tracking_url(e, addresses);
                serde_json::to_writer(&mut out, &AppInfo::new(e, &url, ts, now, deselects))?;
            }
            out.extend_from_slice(b"]}}");
            Ok(out)
        }
        Format::Xml => {
            let mut out = String::with_capacity(128 + entries.len() * 1792);
            out.push_str(XML_DECLARATION);
            out.push_str("<apps>");
            for e in entries {
                let url = entry_tracking_url(e, addresses);
                AppInfo::new(e, &url, ts, now, deselects).write_xml(&mut out);
            }
            out.push_str("</apps>");
            Ok(out.into_bytes())
        }
    }
}

/// The view with the tracking URL the RM hands out (the proxy's, as in the
/// RPC reports; empty while there is none).
fn tracked(mut view: AppView, addresses: &WebAddresses) -> AppView {
    let urls = addresses.app_urls(&view.report);
    view.report.app.tracking_url = if urls.tracking == crate::model::tracking::UNAVAILABLE {
        String::new()
    } else {
        urls.tracking
    };
    view
}

pub(super) async fn app(
    State(web): State<WebContext>,
    path: Result<Path<String>, PathRejection>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let a = async {
        let raw = path_param(path)?;
        let id = parse_app_id(&raw)?;
        let params = Params::of(&uri)?;
        let deselects = params::deselects(&params)?;
        let caller = read_caller(&web, &uri, &headers).await?;
        let view = query(&web, move |s| s.app_view(&id, &caller).ok())
            .await?
            .ok_or_else(|| app_not_found(&raw))?;
        let view = tracked(view, &web.rm().web);
        let info = dao::app_info(&view, web.rm().cluster_ts(), wall_ms_u64(), deselects);
        Ok(reply(&headers, &json!({ "app": info })))
    };
    answer(&headers, a.await)
}

pub(super) async fn attempts(
    State(web): State<WebContext>,
    path: Result<Path<String>, PathRejection>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let a = async {
        let raw = path_param(path)?;
        let id = parse_app_id(&raw)?;
        let caller = read_caller(&web, &uri, &headers).await?;
        let listing = query(&web, move |s| s.attempt_listing(&id, &caller).ok())
            .await?
            .ok_or_else(|| app_not_found(&raw))?;
        Ok(list_reply(
            &headers,
            "appAttempts",
            "appAttempt",
            dao::attempts_info(&listing),
        ))
    };
    answer(&headers, a.await)
}

/// The ids of `/apps/{appid}/appattempts/{attemptid}`, checked as
/// `WebServices` does (they must belong together).
pub(super) fn attempt_ids(
    raw_app: &str,
    raw_attempt: &str,
) -> Result<ApplicationAttemptId, WebError> {
    let app = parse_app_id(raw_app)?;
    let attempt = parse_attempt_id(raw_attempt)?;
    if attempt.app != app {
        return Err(WebError::not_found("appId and appAttemptId don't match"));
    }
    Ok(attempt)
}

pub(super) async fn attempt(
    State(web): State<WebContext>,
    path: Result<Path<(String, String)>, PathRejection>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let a = async {
        let (raw_app, raw_attempt) = path_param(path)?;
        let id = attempt_ids(&raw_app, &raw_attempt)?;
        let caller = read_caller(&web, &uri, &headers).await?;
        let mut report = query(&web, move |s| s.attempt_report(&id, &caller))
            .await?
            .map_err(refused)?;
        let urls = web.rm().web.attempt_urls(&report);
        report.tracking_url = urls.tracking;
        report.original_tracking_url = urls.original;
        Ok(reply(
            &headers,
            &json!({"appAttempt": dao::attempt_report_info(&report)}),
        ))
    };
    answer(&headers, a.await)
}

pub(super) async fn containers(
    State(web): State<WebContext>,
    path: Result<Path<(String, String)>, PathRejection>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let a = async {
        let (raw_app, raw_attempt) = path_param(path)?;
        let id = attempt_ids(&raw_app, &raw_attempt)?;
        let caller = read_caller(&web, &uri, &headers).await?;
        let (user, list) = query(&web, move |s| {
            let user = s.app_report(&id.app, &caller).map(|r| r.app.user);
            (user, s.containers_of(&id, &caller))
        })
        .await?;
        let list = list.map_err(refused)?;
        let user = user.map_err(refused)?;
        let now = wall_ms_u64();
        let items = list
            .iter()
            .map(|c| dao::container_info(c, &user, now))
            .collect();
        Ok(list_reply(&headers, "containers", "container", items))
    };
    answer(&headers, a.await)
}

pub(super) async fn container(
    State(web): State<WebContext>,
    path: Result<Path<(String, String, String)>, PathRejection>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let a = async {
        let (raw_app, raw_attempt, raw_container) = path_param(path)?;
        let attempt = attempt_ids(&raw_app, &raw_attempt)?;
        let id = parse_container_id(&raw_container)?;
        if id.attempt != attempt {
            return Err(WebError::not_found(
                "appAttemptId and containerId don't match",
            ));
        }
        let caller = read_caller(&web, &uri, &headers).await?;
        let (user, report) = query(&web, move |s| {
            let user = s.app_report(&id.attempt.app, &caller).map(|r| r.app.user);
            (user, s.container_report(&id, &caller))
        })
        .await?;
        let report = report.map_err(refused)?;
        let user = user.map_err(refused)?;
        Ok(reply(
            &headers,
            &json!({"container": dao::container_info(&report, &user, wall_ms_u64())}),
        ))
    };
    answer(&headers, a.await)
}

/// The application of `/apps/{appid}/...` (state, priority, queue), which
/// Hadoop shows whoever asks.
pub(super) async fn app_of(
    web: &WebContext,
    path: Result<Path<String>, PathRejection>,
    uri: &Uri,
    headers: &HeaderMap,
) -> Result<crate::model::apps::App, WebError> {
    let raw = path_param(path)?;
    let id = parse_app_id(&raw)?;
    let caller = read_caller(web, uri, headers).await?;
    query(web, move |s| s.app_report(&id, &caller).ok())
        .await?
        .map(|r| r.app)
        .ok_or_else(|| app_not_found(&raw))
}

pub(super) async fn app_state(
    State(web): State<WebContext>,
    path: Result<Path<String>, PathRejection>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let a = app_of(&web, path, &uri, &headers)
        .await
        .map(|app| unwrapped_reply(&headers, "appstate", json!({"state": app.state.as_str()})));
    answer(&headers, a)
}

pub(super) async fn app_priority(
    State(web): State<WebContext>,
    path: Result<Path<String>, PathRejection>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let a = app_of(&web, path, &uri, &headers).await.map(|app| {
        unwrapped_reply(
            &headers,
            "applicationpriority",
            json!({"priority": app.priority}),
        )
    });
    answer(&headers, a)
}

pub(super) async fn app_queue(
    State(web): State<WebContext>,
    path: Result<Path<String>, PathRejection>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let a = app_of(&web, path, &uri, &headers)
        .await
        .map(|app| unwrapped_reply(&headers, "appqueue", json!({"queue": app.queue})));
    answer(&headers, a)
}
