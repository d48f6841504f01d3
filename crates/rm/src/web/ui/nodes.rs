//! `/cluster/nodes`, `/cluster/nodes/<STATE>`: the NodeManagers.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;

use super::layout::{badge, memory_bar, time, vcores_bar};
use super::{error_page, Page, Params, PathArg};
use crate::cluster::nodes::NodeState;
use crate::web::WebContext;
use spindle_common::markup::escape;

pub async fn nodes(State(web): State<WebContext>, params: Params) -> Response {
    list(web, params, None).await
}

pub async fn nodes_in_state(
    State(web): State<WebContext>,
    state: PathArg,
    params: Params,
) -> Response {
    list(web, params, Some(state)).await
}

async fn list(web: WebContext, params: Params, state: Option<PathArg>) -> Response {
    let page = match Page::begin(web, params).await {
        Ok(p) => p,
        Err(r) => return r,
    };
    let state = match state.map(|a| page.path(a)).transpose() {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let f = &page.frame;
    let states: BTreeSet<NodeState> = match state.as_deref().map(str::trim) {
        None => NodeState::ALL.into_iter().collect(),
        Some(name) => match NodeState::ALL
            .into_iter()
            .find(|s| s.as_str().eq_ignore_ascii_case(name))
        {
            Some(s) => [s].into_iter().collect(),
            None => {
                return error_page(
                    f,
                    StatusCode::BAD_REQUEST,
                    "Bad request",
                    &format!(
                        "Invalid node state '{name}' (expected one of {})",
                        NodeState::ALL.map(NodeState::as_str).join(", ")
                    ),
                )
            }
        },
    };
    let reports = match page.query(move |s| s.node_reports(&states)).await {
        Ok(r) => r,
        Err(r) => return r,
    };
    let mut body = format!(
        "<p class=\"muted\"><span id=\"node-count\">{}</span> nodes</p>\
         <div class=\"table-wrap\"><table id=\"nodes\"><thead><tr><th>Node ID</th><th>Rack</th><th>State</th>\
         <th class=\"hide-sm\">Node address</th><th>Node HTTP address</th><th class=\"hide-sm\">Last health update</th>\
         <th class=\"hide-sm\">Health report</th><th>Containers</th><th>Memory used / total</th>\
         <th>VCores used / total</th></tr></thead><tbody>",
        reports.len()
    );
    for n in &reports {
        let http = if n.http_address.is_empty() {
            "N/A".to_string()
        } else {
            format!("<a href=\"http://{0}/\">{0}</a>", escape(&n.http_address))
        };
        let _ = write!(
            body,
            "<tr data-state=\"{state}\"><td>{id}</td><td>{}</td><td>{}</td><td class=\"hide-sm\">{id}</td><td>{http}</td>\
             <td class=\"hide-sm\">{}</td><td class=\"hide-sm\">{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
            escape(&n.rack),
            badge(n.state.as_str()),
            time(u64::try_from(n.last_health_report_ms).unwrap_or(0)),
            escape(&n.health_report),
            n.num_containers,
            memory_bar(n.used.memory_mb, n.capability.memory_mb),
            vcores_bar(n.used.vcores, n.capability.vcores),
            state = n.state.as_str(),
            id = escape(&n.id.to_string()),
        );
    }
    body.push_str("</tbody></table></div>");
    if reports.is_empty() {
        body.push_str("<p class=\"muted\">No nodes.</p>");
    }
    let title = match state {
        Some(s) => format!("Nodes: {}", s.trim().to_ascii_uppercase()),
        None => "Nodes".to_string(),
    };
    page.frame
        .page(StatusCode::OK, "/cluster/nodes", &title, &body)
}
