//! `/`, `/cluster`: the cluster at a glance; `/cluster/cluster`: about the RM.

use std::fmt::Write as _;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;

use super::layout::{memory_bar, time, vcores_bar};
use super::{Page, Params};
use crate::cluster::nodes::NodeState;
use crate::web::WebContext;
use spindle_common::markup::escape;

/// The overview: nodes by state, memory and vcores used, applications by
/// state, and the RM itself.
pub async fn overview(State(web): State<WebContext>, params: Params) -> Response {
    let page = match Page::begin(web, params).await {
        Ok(p) => p,
        Err(r) => return r,
    };
    let o = match page
        .query(|s| (s.overview_totals(), s.queue_names().len()))
        .await
    {
        Ok(o) => o,
        Err(r) => return r,
    };
    let (o, queues) = o;
    let rm = page.web.rm();
    let f = &page.frame;
    let mut body = String::from("<div class=\"cards\">");

    let n = &o.nodes;
    let _ = write!(
        body,
        "<section class=\"card\" id=\"nodes-card\"><h2><a href=\"{}\">Nodes</a></h2>\
         <div class=\"big\"><span id=\"active-nodes\">{}</span> active</div><dl class=\"kv\">",
        escape(&f.href("/cluster/nodes")),
        n.active
    );
    for (label, state, count) in [
        (
            "Decommissioning",
            NodeState::Decommissioning,
            n.decommissioning,
        ),
        (
            "Decommissioned",
            NodeState::Decommissioned,
            n.decommissioned,
        ),
        ("Lost", NodeState::Lost, n.lost),
        ("Unhealthy", NodeState::Unhealthy, n.unhealthy),
        ("Rebooted", NodeState::Rebooted, n.rebooted),
        ("Shutdown", NodeState::Shutdown, n.shutdown),
    ] {
        let state = state.as_str();
        let _ = write!(
            body,
            "<dt><a href=\"{}\">{label}</a></dt><dd id=\"nodes-{state}\">{count}</dd>",
            escape(&f.href(&format!("/cluster/nodes/{state}")))
        );
    }
    body.push_str("</dl></section>");

    let _ = write!(
        body,
        "<section class=\"card\" id=\"memory-card\"><h2>Memory</h2>{}\
         <p class=\"muted\">Used <span id=\"memory-used\">{}</span> MB of \
         <span id=\"memory-total\">{}</span> MB</p></section>",
        memory_bar(o.used.memory_mb, o.capability.memory_mb),
        o.used.memory_mb,
        o.capability.memory_mb
    );
    let _ = write!(
        body,
        "<section class=\"card\" id=\"vcores-card\"><h2>VCores</h2>{}\
         <p class=\"muted\">Used <span id=\"vcores-used\">{}</span> of \
         <span id=\"vcores-total\">{}</span>; <span id=\"containers\">{}</span> containers allocated</p></section>",
        vcores_bar(o.used.vcores, o.capability.vcores),
        o.used.vcores,
        o.capability.vcores,
        o.containers
    );

    let total: usize = o.apps_by_state.iter().map(|(_, c)| c).sum();
    let _ = write!(
        body,
        "<section class=\"card\" id=\"apps-card\"><h2><a href=\"{}\">Applications</a></h2>\
         <div class=\"big\"><span id=\"apps-total\">{total}</span></div><dl class=\"kv\">",
        escape(&f.href("/cluster/apps"))
    );
    for (state, count) in &o.apps_by_state {
        let _ = write!(
            body,
            "<dt><a href=\"{}\">{state}</a></dt><dd id=\"apps-{state}\">{count}</dd>",
            escape(&f.href(&format!("/cluster/apps/{state}")))
        );
    }
    body.push_str("</dl></section>");

    let _ = write!(
        body,
        "<section class=\"card\" id=\"rm-card\"><h2>ResourceManager</h2><dl class=\"kv\">\
         <dt>State</dt><dd id=\"rm-ha-state\">{}</dd>\
         <dt>Version</dt><dd>{}</dd>\
         <dt>Started</dt><dd>{}</dd>\
         <dt>Scheduler</dt><dd><a href=\"{}\">{}</a> ({queues} queues)</dd></dl></section>",
        escape(&f.rm_state),
        escape(&rm.rm_version),
        time(u64::try_from(rm.cluster_ts()).unwrap_or(0)),
        escape(&f.href("/cluster/scheduler")),
        scheduler_name(rm.scheduler_kind),
    );
    body.push_str("</div>");
    page.frame
        .page(StatusCode::OK, "/cluster", "Cluster overview", &body)
}

/// `/cluster/cluster`: Hadoop's "About the Cluster".
pub async fn about(State(web): State<WebContext>, params: Params) -> Response {
    let page = match Page::begin(web, params).await {
        Ok(p) => p,
        Err(r) => return r,
    };
    let rm = page.web.rm();
    let ts = rm.cluster_ts();
    let ha = match &rm.rm_id {
        Some(id) => format!("{} (rm-id {})", page.frame.rm_state, id),
        None => format!("{} (HA off)", page.frame.rm_state),
    };
    let body = format!(
        "<div class=\"card\"><dl class=\"kv\" id=\"about\">\
         <dt>Cluster ID</dt><dd>{ts}</dd>\
         <dt>ResourceManager state</dt><dd>STARTED</dd>\
         <dt>ResourceManager HA state</dt><dd>{}</dd>\
         <dt>ResourceManager started on</dt><dd>{}</dd>\
         <dt>ResourceManager version</dt><dd>{}</dd>\
         <dt>Scheduler</dt><dd>{}</dd>\
         <dt>Web address</dt><dd>{}</dd></dl></div>",
        escape(&ha),
        time(u64::try_from(ts).unwrap_or(0)),
        escape(&rm.rm_version),
        scheduler_name(rm.scheduler_kind),
        escape(&page.web.bound.to_string()),
    );
    page.frame.page(
        StatusCode::OK,
        "/cluster/cluster",
        "About the cluster",
        &body,
    )
}

/// Hadoop's name of the scheduler.
pub fn scheduler_name(kind: spindle_scheduler::SchedulerKind) -> &'static str {
    match kind {
        spindle_scheduler::SchedulerKind::Fifo => "FIFO Scheduler",
        spindle_scheduler::SchedulerKind::Capacity => "Capacity Scheduler",
        spindle_scheduler::SchedulerKind::Fair => "Fair Scheduler",
    }
}
