//! `/cluster/apps`, `/cluster/apps/<STATE>`: the applications table.
//!
//! Sorted by `?sort=<column>&order=asc|desc` and filtered by `?q=<text>`
//! (any of id, user, name, type, queue, state) and `?state=<STATE>` on the
//! server, so that it works without script; with script, clicking a header
//! sorts and typing in the filter box hides rows at once (and the address
//! follows, so a reload keeps both).

use std::cmp::Ordering;
use std::fmt::Write as _;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use spindle_common::ids::ApplicationId;

use super::layout::{badge, linkable, memory, progress, query_escape, time_cell};
use super::{error_page, Page, Params, PathArg};
use crate::model::apps::{AppFilter, AppState};
use crate::model::reports::AppReport;
use crate::web::WebContext;
use spindle_common::markup::escape;

/// The table's columns: (key for `sort=`, header).
const COLUMNS: [(&str, &str); 15] = [
    ("id", "ID"),
    ("user", "User"),
    ("name", "Name"),
    ("type", "Type"),
    ("queue", "Queue"),
    ("priority", "Priority"),
    ("start", "Started"),
    ("finish", "Finished"),
    ("state", "State"),
    ("final", "Final status"),
    ("containers", "Containers"),
    ("memory", "Memory"),
    ("vcores", "VCores"),
    ("progress", "Progress"),
    ("tracking", "Tracking UI"),
];

pub async fn apps(State(web): State<WebContext>, params: Params) -> Response {
    list(web, params, None).await
}

pub async fn apps_in_state(
    State(web): State<WebContext>,
    state: PathArg,
    params: Params,
) -> Response {
    list(web, params, Some(state)).await
}

/// Columns left out on narrow screens.
const PHONE_HIDDEN: [&str; 7] = [
    "type",
    "priority",
    "finish",
    "final",
    "containers",
    "memory",
    "vcores",
];

async fn list(web: WebContext, params: Params, path_state: Option<PathArg>) -> Response {
    let page = match Page::begin(web, params).await {
        Ok(p) => p,
        Err(r) => return r,
    };
    let path_state = match path_state.map(|a| page.path(a)).transpose() {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let f = &page.frame;
    let wanted = path_state
        .as_deref()
        .or_else(|| page.param("state"))
        .filter(|s| !s.eq_ignore_ascii_case("ALL"));
    let state = match wanted.map(str::parse::<AppState>).transpose() {
        Ok(s) => s,
        Err(e) => return error_page(f, StatusCode::BAD_REQUEST, "Bad request", &e),
    };
    let sort = page.param("sort").unwrap_or("id").to_ascii_lowercase();
    if !COLUMNS.iter().any(|(k, _)| *k == sort) {
        return error_page(
            f,
            StatusCode::BAD_REQUEST,
            "Bad request",
            &format!("sort must be one of {}", COLUMNS.map(|(k, _)| k).join(", ")),
        );
    }
    let descending = match page.param("order") {
        None => sort == "id",
        Some(o) if o.eq_ignore_ascii_case("desc") => true,
        Some(o) if o.eq_ignore_ascii_case("asc") => false,
        Some(o) => {
            return error_page(
                f,
                StatusCode::BAD_REQUEST,
                "Bad request",
                &format!("order must be asc or desc, not '{o}'"),
            )
        }
    };
    let text = page.param("q").unwrap_or_default().to_string();

    let caller = page.caller.clone();
    let filter = AppFilter {
        states: state.into_iter().collect(),
        ..AppFilter::default()
    };
    let mut reports = match page.query(move |s| s.list_apps(&filter, &caller)).await {
        Ok(r) => r,
        Err(r) => return r,
    };
    let needle = text.to_lowercase();
    if !needle.is_empty() {
        reports.retain(|r| search_text(r).contains(&needle));
    }
    reports.sort_by(|a, b| {
        let o = compare(a, b, &sort).then_with(|| a.app.id.cmp(&b.app.id));
        if descending {
            o.reverse()
        } else {
            o
        }
    });

    let mut body = String::new();
    // The filter form: plain GET without script.
    let _ = write!(
        body,
        "<form class=\"filters\" id=\"app-filters\" method=\"get\" action=\"/cluster/apps\">\
         <input type=\"search\" name=\"q\" id=\"app-filter\" placeholder=\"Filter: id, user, name, queue…\" value=\"{}\" aria-label=\"Filter applications\">\
         <select name=\"state\" id=\"app-state\" aria-label=\"State\"><option value=\"ALL\">All states</option>",
        escape(&text)
    );
    for s in AppState::ALL {
        let selected = if Some(s) == state { " selected" } else { "" };
        let _ = write!(body, "<option{selected}>{s}</option>");
    }
    body.push_str("</select>");
    if let Some(u) = &f.user {
        let _ = write!(
            body,
            "<input type=\"hidden\" name=\"user.name\" value=\"{}\">",
            escape(u)
        );
    }
    let _ = write!(
        body,
        "<input type=\"hidden\" name=\"sort\" value=\"{}\"><input type=\"hidden\" name=\"order\" value=\"{}\">\
         <button type=\"submit\">Filter</button></form>",
        escape(&sort),
        if descending { "desc" } else { "asc" }
    );

    let _ = write!(
        body,
        "<p class=\"muted\"><span id=\"app-count\">{}</span> applications</p>\
         <div class=\"table-wrap\"><table id=\"apps\"><thead><tr>",
        reports.len()
    );
    for (key, label) in COLUMNS {
        let (class, next) = if key == sort {
            if descending {
                (" class=\"sorted-desc\"", "asc")
            } else {
                (" class=\"sorted-asc\"", "desc")
            }
        } else {
            ("", "asc")
        };
        let mut href = format!("/cluster/apps?sort={key}&order={next}");
        if let Some(s) = state {
            let _ = write!(href, "&state={s}");
        }
        if !text.is_empty() {
            let _ = write!(href, "&q={}", query_escape(&text));
        }
        let _ = write!(
            body,
            "<th{class}{hide} data-key=\"{key}\"><a href=\"{}\">{label}</a></th>",
            escape(&f.href(&href)),
            hide = if PHONE_HIDDEN.contains(&key) {
                " data-hide-sm"
            } else {
                ""
            }
        );
    }
    body.push_str("</tr></thead><tbody>");
    for r in &reports {
        row(&mut body, r, &page);
    }
    body.push_str("</tbody></table></div>");
    if reports.is_empty() {
        body.push_str("<p class=\"muted\" id=\"no-apps\">No applications.</p>");
    }
    body.push_str(SCRIPT);
    let title = match state {
        Some(s) => format!("Applications: {s}"),
        None => "Applications".to_string(),
    };
    page.frame
        .page(StatusCode::OK, "/cluster/apps", &title, &body)
}

fn row(out: &mut String, r: &AppReport, page: &Page) {
    let a = &r.app;
    let f = &page.frame;
    let id = a.id.to_string();
    let _ = write!(
        out,
        "<tr data-state=\"{}\" data-id=\"{id}\">\
         <td data-sort=\"{}\"><a href=\"{}\">{id}</a></td>\
         <td>{}</td><td class=\"app-name\">{}</td><td data-hide-sm>{}</td><td>{}</td>\
         <td class=\"num\" data-hide-sm data-sort=\"{}\">{}</td>",
        a.state,
        sort_key_of_id(&a.id),
        escape(&f.href(&format!("/cluster/app/{id}"))),
        escape(&a.user),
        escape(&a.name),
        escape(&a.app_type),
        escape(&a.queue),
        a.priority,
        a.priority,
    );
    out.push_str(&time_cell(a.start_ms, ""));
    out.push_str(&time_cell(a.finish_ms, " data-hide-sm"));
    let _ = write!(
        out,
        "<td>{}</td><td data-hide-sm>{}</td>",
        badge(a.state.as_str()),
        badge(a.final_status.as_str())
    );
    if r.used_containers >= 0 {
        let _ = write!(
            out,
            "<td class=\"num\" data-hide-sm data-sort=\"{0}\">{0}</td><td class=\"num\" data-hide-sm data-sort=\"{1}\">{2}</td>\
             <td class=\"num\" data-hide-sm data-sort=\"{3}\">{3}</td>",
            r.used_containers,
            r.used.memory_mb,
            memory(r.used.memory_mb),
            r.used.vcores
        );
    } else {
        out.push_str(
            "<td data-hide-sm data-sort=\"-1\">N/A</td><td data-hide-sm data-sort=\"-1\">N/A</td>\
             <td data-hide-sm data-sort=\"-1\">N/A</td>",
        );
    }
    let _ = write!(
        out,
        "<td data-sort=\"{}\">{}</td>",
        r.progress,
        progress(r.progress)
    );
    out.push_str("<td>");
    match tracking_link(r) {
        Some(url) => {
            let label = if a.state.is_final() {
                "History"
            } else {
                "ApplicationMaster"
            };
            let _ = write!(
                out,
                "<a class=\"tracking\" href=\"{}\">{label}</a>",
                escape(&url)
            );
        }
        None => out.push_str("<span class=\"muted\">Unassigned</span>"),
    }
    out.push_str("</td></tr>");
}

/// Where the application's tracking UI is: its tracking URL when that is
/// the web proxy's (`.../proxy/<appId>/`), else this RM's proxy path; none
/// before an attempt exists or when the caller may not view the application.
pub fn tracking_link(r: &AppReport) -> Option<String> {
    if !r.viewable || r.current_attempt.is_none() {
        return None;
    }
    let proxied = format!("/proxy/{}/", r.app.id);
    let url = r.app.tracking_url.trim();
    if linkable(url) && url.contains(&proxied) {
        Some(url.to_string())
    } else {
        Some(proxied)
    }
}

/// What the filter box matches against, lower-cased.
fn search_text(r: &AppReport) -> String {
    let a = &r.app;
    format!(
        "{} {} {} {} {} {} {}",
        a.id, a.user, a.name, a.app_type, a.queue, a.state, a.final_status
    )
    .to_lowercase()
}

/// Ids sort by cluster timestamp, then number (not as text).
fn sort_key_of_id(id: &ApplicationId) -> String {
    format!("{:020}-{:010}", id.cluster_timestamp, id.id)
}

fn compare(a: &AppReport, b: &AppReport, key: &str) -> Ordering {
    let (x, y) = (&a.app, &b.app);
    let text = |p: &str, q: &str| p.to_lowercase().cmp(&q.to_lowercase());
    match key {
        "user" => text(&x.user, &y.user),
        "name" => text(&x.name, &y.name),
        "type" => text(&x.app_type, &y.app_type),
        "queue" => text(&x.queue, &y.queue),
        "priority" => x.priority.cmp(&y.priority),
        "start" => x.start_ms.cmp(&y.start_ms),
        "finish" => x.finish_ms.cmp(&y.finish_ms),
        "state" => x.state.as_str().cmp(y.state.as_str()),
        "final" => x.final_status.as_str().cmp(y.final_status.as_str()),
        "containers" => a.used_containers.cmp(&b.used_containers),
        "memory" => a.used.memory_mb.cmp(&b.used.memory_mb),
        "vcores" => a.used.vcores.cmp(&b.used.vcores),
        "progress" => a.progress.total_cmp(&b.progress),
        "tracking" => tracking_link(a).cmp(&tracking_link(b)),
        _ => x.id.cmp(&y.id),
    }
}

/// Sorting by a header click and filtering as one types, in the page; the
/// address follows (`history.replaceState`) so a reload keeps both.
const SCRIPT: &str = r#"<script>
(function(){
var table=document.getElementById('apps');if(!table)return;
var body=table.tBodies[0],heads=table.tHead.rows[0].cells,box=document.getElementById('app-filter'),sel=document.getElementById('app-state'),form=document.getElementById('app-filters');
var serverState=sel.value;
function val(row,i){var c=row.cells[i];var s=c.getAttribute('data-sort');return s!==null?s:c.textContent.trim();}
var num=/^-?\d+(\.\d+)?(e-?\d+)?$/;
function cmp(a,b){if(num.test(a)&&num.test(b))return parseFloat(a)-parseFloat(b);a=a.toLowerCase();b=b.toLowerCase();return a<b?-1:a>b?1:0;}
function setParam(k,v){var u=new URL(location.href);if(v===null||v==='')u.searchParams.delete(k);else u.searchParams.set(k,v);history.replaceState(null,'',u);}
Array.prototype.forEach.call(heads,function(th,i){var a=th.querySelector('a');a.addEventListener('click',function(ev){
ev.preventDefault();var desc=th.classList.contains('sorted-asc');
Array.prototype.forEach.call(heads,function(h){h.classList.remove('sorted-asc','sorted-desc');});
th.classList.add(desc?'sorted-desc':'sorted-asc');
var rows=Array.prototype.slice.call(body.rows);rows.sort(function(r1,r2){var c=cmp(val(r1,i),val(r2,i));return desc?-c:c;});
rows.forEach(function(r){body.appendChild(r);});
var key=th.getAttribute('data-key');setParam('sort',key);setParam('order',desc?'desc':'asc');
form.elements['sort'].value=key;form.elements['order'].value=desc?'desc':'asc';});});
function apply(){var q=box.value.trim().toLowerCase(),st=sel.value,shown=0;
Array.prototype.forEach.call(body.rows,function(r){var ok=(!q||r.textContent.toLowerCase().indexOf(q)>=0)&&(st==='ALL'||r.getAttribute('data-state')===st);r.hidden=!ok;if(ok)shown++;});
document.getElementById('app-count').textContent=shown;setParam('q',box.value.trim());}
box.addEventListener('input',apply);
sel.addEventListener('change',function(){if(serverState!=='ALL'||location.pathname!=='/cluster/apps'){form.submit();return;}apply();setParam('state',sel.value==='ALL'?null:sel.value);});
if(box.value)apply();
})();
</script>"#;
