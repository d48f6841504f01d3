//! The frame every UI page shares (head, navigation, self-refresh), the
//! stylesheet, and the small helpers the pages format with: usage bars,
//! times and sizes (text is escaped by `spindle_common::markup`).

use std::fmt::Write as _;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use spindle_common::markup::escape;
use spindle_common::resource::Resource;
use spindle_common::time::UtcTime;

/// Where the stylesheet is served.
pub const CSS_PATH: &str = "/static/spindle.css";

/// The one stylesheet: plain CSS, no fonts or images from elsewhere.
pub const CSS: &str = r#":root{--fg:#1d2330;--muted:#5b6473;--bg:#f5f6f8;--card:#fff;--line:#dde1e7;--accent:#2f6fb5;--ok:#2e8540;--warn:#c77c02;--bad:#c0392b;--bar:#e7ebf0}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:var(--fg);background:var(--bg)}
header.top{background:#243447;color:#fff;display:flex;flex-wrap:wrap;align-items:center;gap:.25rem 1rem;padding:.5rem 1rem}
header.top .brand{font-weight:700;font-size:1.1rem;color:#fff;text-decoration:none;margin-right:.5rem}
header.top nav{display:flex;flex-wrap:wrap;gap:.25rem}
header.top nav a{color:#d6e2f0;text-decoration:none;padding:.25rem .6rem;border-radius:4px}
header.top nav a.on,header.top nav a:hover{background:#3b5273;color:#fff}
header.top .state{margin-left:auto;font-size:.85rem;color:#d6e2f0}
main{padding:1rem;max-width:1400px;margin:0 auto}
h1{font-size:1.35rem;margin:.2rem 0 1rem}
h2{font-size:1.1rem;margin:1.5rem 0 .5rem}
a{color:var(--accent)}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(220px,1fr));gap:.75rem}
.card{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:.75rem 1rem}
.card h2{margin:0 0 .5rem;font-size:1rem}
.card .big{font-size:1.6rem;font-weight:600}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem;margin:0}
dl.kv dt{color:var(--muted)}
dl.kv dd{margin:0;overflow-wrap:anywhere}
.table-wrap{overflow-x:auto;background:var(--card);border:1px solid var(--line);border-radius:6px}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:.35rem .6rem;border-bottom:1px solid var(--line);vertical-align:top}
th{background:#eef1f5;white-space:nowrap}
th a{color:inherit;text-decoration:none}
th.sorted-asc a::after{content:" \25B2"}
th.sorted-desc a::after{content:" \25BC"}
tr:last-child td{border-bottom:0}
td.num{text-align:right;font-variant-numeric:tabular-nums}
td.time{white-space:nowrap}
.bar{position:relative;background:var(--bar);border-radius:3px;height:1.1rem;min-width:6rem;overflow:hidden}
.bar>span{display:block;height:100%;background:var(--accent)}
.bar>span.over{background:var(--warn)}
.bar>i{position:absolute;top:0;bottom:0;width:2px;background:var(--fg);opacity:.6}
.bar>b{position:absolute;inset:0;font-size:.75rem;font-weight:600;line-height:1.1rem;text-align:center;color:var(--fg);text-shadow:0 0 3px #fff,0 0 2px #fff}
.badge{display:inline-block;padding:0 .4rem;border-radius:3px;font-size:.8rem;font-weight:600;background:#e4e8ee}
.badge.RUNNING,.badge.SUCCEEDED{background:#d7f0dc;color:var(--ok)}
.badge.FAILED,.badge.KILLED,.badge.LOST,.badge.UNHEALTHY{background:#f6dcd9;color:var(--bad)}
.badge.ACCEPTED,.badge.SUBMITTED,.badge.NEW,.badge.NEW_SAVING,.badge.DECOMMISSIONING{background:#fbeccc;color:var(--warn)}
form.filters{display:flex;flex-wrap:wrap;gap:.5rem;margin:0 0 .75rem}
form.filters input,form.filters select,form.filters button{font:inherit;padding:.3rem .5rem;border:1px solid var(--line);border-radius:4px;background:#fff}
pre.diag{white-space:pre-wrap;overflow-wrap:anywhere;background:var(--card);border:1px solid var(--line);border-radius:6px;padding:.75rem;margin:0}
ol.timeline{list-style:none;padding:0;margin:0;display:flex;flex-wrap:wrap;gap:.5rem}
ol.timeline li{background:var(--card);border:1px solid var(--line);border-left:4px solid var(--accent);border-radius:4px;padding:.3rem .6rem}
ul.tree{list-style:none;padding-left:1.2rem;margin:0}
ul.tree.root{padding-left:0}
ul.tree li{margin:.4rem 0}
.queue{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:.5rem .75rem}
.queue .qhead{display:flex;flex-wrap:wrap;gap:.25rem 1rem;align-items:baseline}
.queue .qname{font-weight:600}
.muted{color:var(--muted)}
.note{background:#fff8e1;border:1px solid #f0d98c;border-radius:6px;padding:.75rem 1rem}
footer{color:var(--muted);font-size:.8rem;text-align:center;padding:1rem}
@media (max-width:640px){main{padding:.5rem}#apps td:first-child a{word-break:break-all}header.top .state{margin-left:0}th,td{padding:.3rem .4rem}.hide-sm,[data-hide-sm]{display:none}}
"#;

/// Serves the stylesheet, cacheable for an hour.
pub async fn stylesheet() -> Response {
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/css; charset=utf-8"),
            ),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=3600"),
            ),
        ],
        CSS,
    )
        .into_response()
}

/// The navigation entries: (path, label).
const NAV: [(&str, &str); 5] = [
    ("/cluster", "Cluster"),
    ("/cluster/apps", "Applications"),
    ("/cluster/nodes", "Nodes"),
    ("/cluster/scheduler", "Scheduler"),
    ("/cluster/cluster", "About"),
];

/// What every page request carries: who asks (Hadoop's pseudo
/// authentication's `user.name`), and how often the page reloads itself.
#[derive(Debug, Clone, Default)]
pub struct Frame {
    /// `user.name`, kept on every link the page makes.
    pub user: Option<String>,
    /// Seconds between reloads; 0: never.
    pub refresh: u32,
    /// The RM's HA state for the header (`active`, `standby`).
    pub rm_state: String,
}

impl Frame {
    /// `path` with `user.name` (and a non-default `refresh`) carried over;
    /// `path` may already have a query.
    pub fn href(&self, path: &str) -> String {
        let mut out = path.to_string();
        if let Some(user) = &self.user {
            out.push(if out.contains('?') { '&' } else { '?' });
            out.push_str("user.name=");
            out.push_str(&query_escape(user));
        }
        out
    }

    /// The whole page: `title`, the navigation with `nav` marked, `body`.
    pub fn page(&self, status: StatusCode, nav: &str, title: &str, body: &str) -> Response {
        let mut html = String::with_capacity(body.len() + 4096);
        html.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
        html.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
        let _ = write!(
            html,
            "<title>{} · Spindle ResourceManager</title><link rel=\"stylesheet\" href=\"{CSS_PATH}\">",
            escape(title)
        );
        if self.refresh > 0 {
            // Without JS a plain meta refresh; with JS a reload that waits
            // while someone types in a form field.
            let _ = write!(
                html,
                "<noscript><meta http-equiv=\"refresh\" content=\"{0}\"></noscript>\
                 <script>(function(){{var s={0};function tick(){{var a=document.activeElement;\
                 if(a&&(a.tagName==='INPUT'||a.tagName==='SELECT')){{setTimeout(tick,s*1000);return;}}\
                 location.replace(location.href);}}setTimeout(tick,s*1000);}})();</script>",
                self.refresh
            );
        }
        html.push_str("</head><body><header class=\"top\">");
        let _ = write!(
            html,
            "<a class=\"brand\" href=\"{}\">Spindle</a><nav>",
            escape(&self.href("/cluster"))
        );
        for (path, label) in NAV {
            let on = if path == nav { " class=\"on\"" } else { "" };
            let _ = write!(
                html,
                "<a{on} href=\"{}\">{label}</a>",
                escape(&self.href(path))
            );
        }
        let _ = write!(
            html,
            "</nav><span class=\"state\">ResourceManager · <b id=\"rm-state\">{}</b>{}</span></header>",
            escape(&self.rm_state),
            match &self.user {
                Some(u) => format!(" · logged in as <b>{}</b>", escape(u)),
                None => String::new(),
            }
        );
        let _ = write!(html, "<main><h1>{}</h1>{body}</main>", escape(title));
        let _ = write!(
            html,
            "<footer>{}</footer></body></html>",
            if self.refresh > 0 {
                format!(
                    "This page reloads every {} s (<a href=\"?{}refresh=0\">stop</a>).",
                    self.refresh,
                    match &self.user {
                        Some(u) => format!("user.name={}&amp;", escape(&query_escape(u))),
                        None => String::new(),
                    }
                )
            } else {
                "Automatic reload is off.".to_string()
            }
        );
        (
            status,
            [
                (
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/html; charset=utf-8"),
                ),
                (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
            ],
            html,
        )
            .into_response()
    }
}

/// `s` percent-encoded for a query string value.
pub fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// Whether a URL is one a link may point to (http or https), so that a
/// tracking URL of `javascript:` never becomes a link.
pub fn linkable(url: &str) -> bool {
    let lower = url.trim_start().to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with('/')
}

/// A usage bar: `used` of `total`, labelled; `mark` (a fraction of the bar)
/// draws a line, e.g. a queue's guarantee against its maximum.
pub fn bar(used: f64, total: f64, label: &str, mark: Option<f64>) -> String {
    let fraction = if total > 0.0 && used.is_finite() {
        (used / total).max(0.0)
    } else {
        0.0
    };
    let width = (fraction.min(1.0) * 100.0).round();
    let over = mark.is_some_and(|m| fraction > m);
    let mut out = format!(
        "<div class=\"bar\" role=\"img\" aria-label=\"{0}\" title=\"{0}\"><span{1} style=\"width:{width}%\"></span>",
        escape(label),
        if over { " class=\"over\"" } else { "" }
    );
    if let Some(m) = mark.filter(|m| m.is_finite() && *m > 0.0 && *m < 1.0) {
        let _ = write!(out, "<i style=\"left:{:.1}%\"></i>", m * 100.0);
    }
    let _ = write!(out, "<b>{}</b></div>", escape(label));
    out
}

/// `used` of `total` memory as a bar labelled "1.5 GB / 8 GB".
pub fn memory_bar(used: i64, total: i64) -> String {
    bar(
        used as f64,
        total as f64,
        &format!("{} / {}", memory(used), memory(total)),
        None,
    )
}

/// `used` of `total` vcores as a bar.
pub fn vcores_bar(used: i32, total: i32) -> String {
    bar(
        f64::from(used),
        f64::from(total),
        &format!("{used} / {total} vcores"),
        None,
    )
}

/// A resource as "4 GB, 4 vcores".
pub fn resource(r: Resource) -> String {
    format!("{}, {} vcores", memory(r.memory_mb), r.vcores)
}

/// Megabytes as MB, GB or TB.
pub fn memory(mb: i64) -> String {
    if mb < 0 {
        return "N/A".into();
    }
    let gb = mb as f64 / 1024.0;
    if mb < 1024 {
        format!("{mb} MB")
    } else if gb < 1024.0 {
        trim(format!("{gb:.1}")) + " GB"
    } else {
        trim(format!("{:.1}", gb / 1024.0)) + " TB"
    }
}

fn trim(s: String) -> String {
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

/// A wall-clock time in ms as "2026-11-26 07:06:04 UTC"; "N/A" for 0.
pub fn time(ms: u64) -> String {
    if ms == 0 {
        return "N/A".into();
    }
    let t = UtcTime::of_ms(i64::try_from(ms).unwrap_or(i64::MAX));
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
        t.year, t.month, t.day, t.hour, t.minute, t.second
    )
}

/// A table cell with [`time`] (without the zone, which its title gives),
/// carrying the ms for sorting; `attrs` are more attributes of the cell.
pub fn time_cell(ms: u64, attrs: &str) -> String {
    let t = time(ms);
    format!(
        "<td class=\"time\"{attrs} data-sort=\"{ms}\" title=\"{t}\">{}</td>",
        t.trim_end_matches(" UTC")
    )
}

/// The span between two wall-clock times, as "1h 2m 3s"; `end` 0 means
/// "still going" and gives "N/A" (the page reads no clock).
pub fn elapsed(start: u64, end: u64) -> String {
    if start == 0 || end == 0 || end < start {
        return "N/A".into();
    }
    let s = (end - start) / 1000;
    match (s / 3600, s % 3600 / 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, min, sec) => format!("{min}m {sec}s"),
        (h, min, sec) => format!("{h}h {min}m {sec}s"),
    }
}

/// A state as a coloured badge.
pub fn badge(state: &str) -> String {
    let class: String = state
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    format!("<span class=\"badge {class}\">{}</span>", escape(state))
}

/// A progress bar for a fraction in 0..=1.
pub fn progress(p: f32) -> String {
    let p = if p.is_finite() {
        f64::from(p).clamp(0.0, 1.0)
    } else {
        0.0
    };
    bar(p, 1.0, &format!("{:.0}%", p * 100.0), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_times_sizes_and_spans() {
        assert_eq!(time(0), "N/A");
        assert_eq!(time(1_764_140_764_000), "2025-11-26 07:06:04 UTC");
        assert_eq!(time(951_782_400_000), "2000-02-29 00:00:00 UTC");
        assert_eq!(memory(512), "512 MB");
        assert_eq!(memory(8192), "8 GB");
        assert_eq!(memory(1536), "1.5 GB");
        assert_eq!(elapsed(1000, 3_723_000), "1h 2m 2s");
        assert_eq!(elapsed(1000, 0), "N/A");
    }

    #[test]
    fn only_web_urls_are_links() {
        assert!(linkable("http://h:1/proxy/x/"));
        assert!(linkable("/cluster"));
        assert!(!linkable("javascript:alert(1)"));
        assert!(!linkable(" JavaScript:alert(1)"));
        assert!(!linkable("N/A"));
    }

    #[test]
    fn links_keep_the_user() {
        let f = Frame {
            user: Some("a b&c".into()),
            ..Frame::default()
        };
        assert_eq!(f.href("/cluster"), "/cluster?user.name=a%20b%26c");
        assert_eq!(f.href("/x?sort=id"), "/x?sort=id&user.name=a%20b%26c");
    }

    #[test]
    fn bars_clamp_and_mark() {
        let b = bar(3.0, 2.0, "x", Some(0.5));
        assert!(b.contains("width:100%"), "{b}");
        assert!(b.contains("class=\"over\""), "{b}");
        assert!(b.contains("left:50.0%"), "{b}");
        assert!(bar(1.0, 0.0, "y", None).contains("width:0%"));
    }
}
