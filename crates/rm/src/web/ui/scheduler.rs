//! `/cluster/scheduler`: the queue tree (capacity, fair or FIFO) with each
//! queue's usage against its guarantee and its maximum, its applications
//! and, for leaves, its users.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;

use super::layout::{bar, memory, resource};
use super::overview::scheduler_name;
use super::{Page, Params};
use crate::model::reports::QueueInfo;
use crate::state::QueueUser;
use crate::web::WebContext;
use spindle_common::markup::escape;

pub async fn scheduler(State(web): State<WebContext>, params: Params) -> Response {
    let page = match Page::begin(web, params).await {
        Ok(p) => p,
        Err(r) => return r,
    };
    let caller = page.caller.clone();
    let answer = page
        .query(move |s| {
            (
                s.queue_info("root", false, true, true, &caller),
                s.active_queue_users(),
                s.overview_totals().capability,
            )
        })
        .await;
    let (root, users, cluster) = match answer {
        Ok(a) => a,
        Err(r) => return r,
    };
    let kind = scheduler_name(page.web.rm().scheduler_kind);
    let mut body = format!(
        "<p><b id=\"scheduler-kind\">{kind}</b> · cluster {}</p>\
         <p class=\"muted\">Each queue's memory in use against its guaranteed share and against its maximum.</p>",
        resource(cluster)
    );
    match root {
        Some(root) => {
            body.push_str("<ul class=\"tree root\" id=\"queues\">");
            queue(&mut body, &root, &users);
            body.push_str("</ul>");
        }
        None => body.push_str("<p class=\"note\">The scheduler reports no root queue.</p>"),
    }
    page.frame
        .page(StatusCode::OK, "/cluster/scheduler", "Scheduler", &body)
}

fn percent(f: f64) -> String {
    if f.is_finite() {
        format!("{:.1}%", f * 100.0)
    } else {
        "N/A".into()
    }
}

fn queue(out: &mut String, info: &QueueInfo, users: &BTreeMap<String, Vec<QueueUser>>) {
    let q = &info.queue;
    let st = &info.statistics;
    let used = q.used.memory_mb as f64;
    let _ = write!(
        out,
        "<li><div class=\"queue\" data-queue=\"{path}\"><div class=\"qhead\">\
         <span class=\"qname\">{name}</span><span class=\"muted\">{path}</span>\
         <span class=\"badge {state}\">{state}</span>{kind}</div>\
         <dl class=\"kv\"><dt>Used vs guaranteed</dt><dd>{}</dd><dt>Used vs maximum</dt><dd>{}</dd>\
         <dt>Capacity</dt><dd>{} of parent ({} of cluster); maximum {} of parent ({} of cluster)</dd>\
         <dt>Resources</dt><dd>used {}; guaranteed {}; maximum {}</dd>",
        bar(
            used,
            q.guaranteed.memory_mb as f64,
            &format!("{} / {}", memory(q.used.memory_mb), memory(q.guaranteed.memory_mb)),
            None
        ),
        bar(
            used,
            q.maximum.memory_mb as f64,
            &format!("{} / {}", memory(q.used.memory_mb), memory(q.maximum.memory_mb)),
            (q.maximum.memory_mb > 0)
                .then(|| q.guaranteed.memory_mb as f64 / q.maximum.memory_mb as f64)
        ),
        percent(q.capacity),
        percent(q.absolute_capacity),
        percent(q.maximum_capacity),
        percent(q.absolute_maximum_capacity),
        resource(q.used),
        resource(q.guaranteed),
        resource(q.maximum),
        path = escape(&q.path),
        name = escape(&q.name),
        state = format!("{:?}", q.state).to_ascii_uppercase(),
        kind = if q.leaf {
            "<span class=\"muted\">leaf</span>"
        } else {
            ""
        },
    );
    if let Some(w) = q.weight {
        let _ = write!(out, "<dt>Weight</dt><dd>{w}</dd>");
    }
    if let Some(m) = q.max_running_apps {
        let _ = write!(out, "<dt>Max running apps</dt><dd>{m}</dd>");
    }
    let _ = write!(
        out,
        "<dt>Applications</dt><dd class=\"queue-apps\">{} running, {} pending, {} completed, {} killed, {} failed ({} submitted)</dd>",
        st.running, st.pending, st.completed, st.killed, st.failed, st.submitted
    );
    if q.leaf {
        let list = users.get(&q.path).map(Vec::as_slice).unwrap_or_default();
        let text = if list.is_empty() {
            "none".to_string()
        } else {
            list.iter()
                .map(|u| {
                    format!(
                        "{} ({} apps, {} running)",
                        escape(&u.user),
                        u.apps,
                        u.running
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = write!(
            out,
            "<dt>Active users</dt><dd class=\"queue-users\">{text}</dd>"
        );
    }
    out.push_str("</dl></div>");
    if !info.children.is_empty() {
        out.push_str("<ul class=\"tree\">");
        for child in &info.children {
            queue(out, child, users);
        }
        out.push_str("</ul>");
    }
    out.push_str("</li>");
}
