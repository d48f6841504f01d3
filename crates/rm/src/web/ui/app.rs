//! `/cluster/app/<appId>`: one application (report, timeline, attempts
//! with their AM logs, the current attempt's containers, diagnostics);
//! `/cluster/appattempt/<attemptId>`: one attempt and its containers.

use std::fmt::Write as _;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use spindle_common::ids::{ApplicationAttemptId, ApplicationId, ContainerId};

use super::apps::tracking_link;
use super::layout::{badge, elapsed, linkable, progress, resource, time, time_cell, Frame};
use super::{error_page, Page, Params, PathArg};
use crate::model::refusal::Refusal;
use crate::model::reports::{AttemptReport, ContainerReport};
use crate::state::AttemptOverview;
use crate::web::WebContext;
use spindle_common::markup::escape;

pub async fn app(State(web): State<WebContext>, id: PathArg, params: Params) -> Response {
    let page = match Page::begin(web, params).await {
        Ok(p) => p,
        Err(r) => return r,
    };
    let id = match page.path(id) {
        Ok(id) => id,
        Err(r) => return *r,
    };
    let f = &page.frame;
    let Ok(app_id) = id.trim().parse::<ApplicationId>() else {
        return error_page(
            f,
            StatusCode::BAD_REQUEST,
            "Bad request",
            &format!("Invalid application ID: {id}"),
        );
    };
    let caller = page.caller.clone();
    let answer = page
        .query(move |s| {
            let report = s.app_report(&app_id, &caller)?;
            let attempts = s.attempts_with_am_nodes(&app_id, &caller);
            let containers = match (&attempts, report.current_attempt) {
                (Ok(_), Some(current)) => s.containers_of(&current, &caller).unwrap_or_default(),
                _ => Vec::new(),
            };
            Ok::<_, Refusal>((report, attempts, containers))
        })
        .await;
    let (report, attempts, containers) = match answer {
        Ok(Ok(a)) => a,
        Ok(Err(refusal)) => return refused(f, refusal),
        Err(r) => return r,
    };
    let a = &report.app;
    let mut body = String::new();

    // The report.
    let tracking = match tracking_link(&report) {
        Some(url) => format!("<a id=\"tracking-url\" href=\"{0}\">{0}</a>", escape(&url)),
        None => "Unassigned".into(),
    };
    let tags = a.tags.iter().cloned().collect::<Vec<_>>().join(", ");
    let _ = write!(
        body,
        "<div class=\"card\"><dl class=\"kv\" id=\"app-report\">\
         <dt>User</dt><dd id=\"app-user\">{}</dd>\
         <dt>Name</dt><dd id=\"app-name\">{}</dd>\
         <dt>Application type</dt><dd>{}</dd>\
         <dt>Application tags</dt><dd>{}</dd>\
         <dt>Queue</dt><dd>{}</dd>\
         <dt>Priority</dt><dd>{}</dd>\
         <dt>State</dt><dd id=\"app-state\">{}</dd>\
         <dt>Final status</dt><dd id=\"app-final-status\">{}</dd>\
         <dt>Progress</dt><dd>{}</dd>\
         <dt>Tracking URL</dt><dd>{tracking}</dd>\
         <dt>AM host</dt><dd>{}</dd>\
         <dt>Unmanaged AM</dt><dd>{}</dd>\
         <dt>Allocated</dt><dd>{}</dd>\
         <dt>Elapsed</dt><dd>{}</dd></dl></div>",
        escape(&a.user),
        escape(&a.name),
        escape(&a.app_type),
        escape(&tags),
        escape(&a.queue),
        a.priority,
        badge(a.state.as_str()),
        badge(a.final_status.as_str()),
        progress(report.progress),
        escape(&a.am_host),
        a.unmanaged_am,
        if report.used_containers >= 0 {
            format!(
                "{} containers, {}",
                report.used_containers,
                resource(report.used)
            )
        } else {
            "N/A".into()
        },
        elapsed(a.start_ms, a.finish_ms),
    );

    // The timeline.
    body.push_str("<h2>Timeline</h2><ol class=\"timeline\" id=\"timeline\">");
    for (label, ms) in [
        ("Submitted", a.submit_ms),
        ("Started", a.start_ms),
        ("AM launched", a.launch_ms),
        ("Finished", a.finish_ms),
    ] {
        if ms > 0 {
            let _ = write!(body, "<li><b>{label}</b> {}</li>", time(ms));
        }
    }
    body.push_str("</ol>");

    // Diagnostics.
    if !a.diagnostics.is_empty() {
        let _ = write!(
            body,
            "<h2>Diagnostics</h2><pre class=\"diag\" id=\"diagnostics\">{}</pre>",
            escape(&a.diagnostics)
        );
    }

    // Attempts.
    body.push_str("<h2>Attempts</h2>");
    match &attempts {
        Ok(list) => attempts_table(&mut body, f, list, &a.user),
        Err(refusal) => {
            let _ = write!(
                body,
                "<p class=\"note\">{}</p>",
                escape(&message(refusal.clone()))
            );
        }
    }

    // The current attempt's containers.
    if let (Ok(_), Some(current)) = (&attempts, report.current_attempt) {
        let _ = write!(body, "<h2>Containers of {current}</h2>");
        containers_table(&mut body, &containers, &a.user);
    }
    page.frame.page(
        StatusCode::OK,
        "/cluster/apps",
        &format!("Application {app_id}"),
        &body,
    )
}

pub async fn attempt(State(web): State<WebContext>, id: PathArg, params: Params) -> Response {
    let page = match Page::begin(web, params).await {
        Ok(p) => p,
        Err(r) => return r,
    };
    let id = match page.path(id) {
        Ok(id) => id,
        Err(r) => return *r,
    };
    let f = &page.frame;
    let Ok(attempt_id) = id.trim().parse::<ApplicationAttemptId>() else {
        return error_page(
            f,
            StatusCode::BAD_REQUEST,
            "Bad request",
            &format!("Invalid application attempt ID: {id}"),
        );
    };
    let caller = page.caller.clone();
    let answer = page
        .query(move |s| {
            let user = s.app_report(&attempt_id.app, &caller)?.app.user;
            let overview = s
                .attempts_with_am_nodes(&attempt_id.app, &caller)?
                .into_iter()
                .find(|o| o.report.id == attempt_id)
                .ok_or(Refusal::AttemptNotFound(attempt_id))?;
            let containers = if overview.report.state.is_final() {
                Vec::new()
            } else {
                s.containers_of(&attempt_id, &caller)?
            };
            Ok::<_, Refusal>((user, overview, containers))
        })
        .await;
    let (user, overview, containers) = match answer {
        Ok(Ok(a)) => a,
        Ok(Err(refusal)) => return refused(f, refusal),
        Err(r) => return r,
    };
    let mut body = String::new();
    let _ = write!(
        body,
        "<p>Application <a href=\"{}\">{}</a></p>",
        escape(&f.href(&format!("/cluster/app/{}", attempt_id.app))),
        attempt_id.app
    );
    attempts_table(&mut body, f, std::slice::from_ref(&overview), &user);
    if !overview.report.diagnostics.is_empty() {
        let _ = write!(
            body,
            "<h2>Diagnostics</h2><pre class=\"diag\">{}</pre>",
            escape(&overview.report.diagnostics)
        );
    }
    body.push_str("<h2>Containers</h2>");
    containers_table(&mut body, &containers, &user);
    page.frame.page(
        StatusCode::OK,
        "/cluster/apps",
        &format!("Application attempt {attempt_id}"),
        &body,
    )
}

/// A refusal as a page: unknown ids 404, denied views 403.
fn refused(f: &Frame, refusal: Refusal) -> Response {
    let status = match refusal {
        Refusal::ApplicationNotFound(_)
        | Refusal::AttemptNotFound(_)
        | Refusal::ContainerNotFound(_) => StatusCode::NOT_FOUND,
        Refusal::AppViewDenied { .. } | Refusal::AttemptViewDenied { .. } => StatusCode::FORBIDDEN,
        _ => StatusCode::BAD_REQUEST,
    };
    let title = if status == StatusCode::NOT_FOUND {
        "Not found"
    } else if status == StatusCode::FORBIDDEN {
        "Forbidden"
    } else {
        "Bad request"
    };
    error_page(f, status, title, &message(refusal))
}

/// The refusal's message, as its RPC twin words it.
fn message(refusal: Refusal) -> String {
    crate::model::convert::refusal_to_rpc(refusal).message
}

/// The NodeManager's page of a container's logs.
fn logs_url(node_http_address: &str, container: &ContainerId, user: &str) -> String {
    format!(
        "http://{node_http_address}/node/containerlogs/{container}/{}",
        super::layout::query_escape(user)
    )
}

fn attempts_table(out: &mut String, f: &Frame, list: &[AttemptOverview], user: &str) {
    out.push_str(
        "<div class=\"table-wrap\"><table id=\"attempts\"><thead><tr><th>Attempt ID</th><th>State</th>\
         <th>Started</th><th>Finished</th><th>Node</th><th>AM container</th><th>Logs</th>\
         <th>Tracking URL</th></tr></thead><tbody>",
    );
    for o in list {
        let r: &AttemptReport = &o.report;
        let node = match (&o.am_node, &o.am_node_http_address) {
            (Some(_), Some(http)) => format!("<a href=\"http://{0}/\">{0}</a>", escape(http)),
            (Some(n), None) => escape(&n.to_string()),
            _ => "N/A".into(),
        };
        let container = r
            .am_container
            .map(|c| c.to_string())
            .unwrap_or_else(|| "N/A".into());
        let logs = match (r.am_container, &o.am_node_http_address) {
            (Some(c), Some(http)) => format!(
                "<a class=\"logs\" href=\"{}\">Logs</a>",
                escape(&logs_url(http, &c, user))
            ),
            _ => "N/A".into(),
        };
        let tracking = if linkable(&r.tracking_url) {
            format!("<a href=\"{0}\">{0}</a>", escape(&r.tracking_url))
        } else {
            escape(&r.tracking_url)
        };
        let _ = write!(
            out,
            "<tr><td><a href=\"{}\">{}</a></td><td>{}</td>{}{}<td>{node}</td>\
             <td>{}</td><td>{logs}</td><td>{tracking}</td></tr>",
            escape(&f.href(&format!("/cluster/appattempt/{}", r.id))),
            r.id,
            badge(r.state.as_str()),
            time_cell(r.start_ms, ""),
            time_cell(r.finish_ms, ""),
            escape(&container),
        );
    }
    out.push_str("</tbody></table></div>");
    if list.is_empty() {
        out.push_str("<p class=\"muted\">No attempts yet.</p>");
    }
}

fn containers_table(out: &mut String, list: &[ContainerReport], user: &str) {
    if list.is_empty() {
        out.push_str("<p class=\"muted\" id=\"no-containers\">No containers allocated.</p>");
        return;
    }
    out.push_str(
        "<div class=\"table-wrap\"><table id=\"containers\"><thead><tr><th>Container ID</th>\
         <th>Node</th><th>Resource</th><th>Priority</th><th>Allocated</th><th>Logs</th></tr></thead><tbody>",
    );
    for c in list {
        let (node, logs) = match &c.node_http_address {
            Some(http) => (
                format!("<a href=\"http://{0}/\">{0}</a>", escape(http)),
                format!(
                    "<a class=\"logs\" href=\"{}\">Logs</a>",
                    escape(&logs_url(http, &c.id, user))
                ),
            ),
            None => (escape(&c.node.to_string()), "N/A".into()),
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{node}</td><td>{}</td><td class=\"num\">{}</td>{}<td>{logs}</td></tr>",
            c.id,
            resource(c.resource),
            c.priority,
            time_cell(c.created_ms, ""),
        );
    }
    out.push_str("</tbody></table></div>");
}
