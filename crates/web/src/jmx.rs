//! Hadoop's `/jmx` (`JMXJsonServlet`): `{"beans": [{"name", "modelerType",
//! attributes...}]}`, filtered by `qry` (a JMX `ObjectName` pattern) or one
//! attribute picked by `get=<bean>::<attribute>`. The daemon supplies its
//! beans; this file knows only their shape and the filters.

use serde_json::{Map, Value};

/// One MBean: its `ObjectName`, its `modelerType` and its attributes.
#[derive(Debug, Clone, PartialEq)]
pub struct Bean {
    pub name: String,
    pub modeler_type: String,
    pub attributes: Map<String, Value>,
}

impl Bean {
    pub fn new(name: impl Into<String>, modeler_type: impl Into<String>) -> Bean {
        Bean {
            name: name.into(),
            modeler_type: modeler_type.into(),
            attributes: Map::new(),
        }
    }

    /// Adds an attribute.
    pub fn attr(mut self, name: &str, value: impl Into<Value>) -> Bean {
        self.attributes.insert(name.to_string(), value.into());
        self
    }

    fn json(&self, only: Option<&str>) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), Value::String(self.name.clone()));
        m.insert(
            "modelerType".into(),
            Value::String(self.modeler_type.clone()),
        );
        for (k, v) in &self.attributes {
            if only.is_none_or(|o| o == k) {
                m.insert(k.clone(), v.clone());
            }
        }
        Value::Object(m)
    }
}

/// A parsed `ObjectName` (pattern): the domain and the key properties;
/// `open` when the property list ends in `*` (other keys allowed).
#[derive(Debug, Clone, PartialEq)]
struct ObjectName {
    domain: String,
    props: Vec<(String, String)>,
    open: bool,
}

fn parse_name(text: &str) -> Result<ObjectName, String> {
    let (domain, rest) = text
        .split_once(':')
        .ok_or_else(|| format!("Key properties cannot be empty: {text}"))?;
    let mut props = Vec::new();
    let mut open = false;
    for part in rest.split(',') {
        if part == "*" {
            open = true;
            continue;
        }
        let (k, v) = part
            .split_once('=')
            .filter(|(k, _)| !k.is_empty())
            .ok_or_else(|| format!("Invalid key property: {part}"))?;
        props.push((k.to_string(), v.to_string()));
    }
    if props.is_empty() && !open {
        return Err(format!("Key properties cannot be empty: {text}"));
    }
    Ok(ObjectName {
        domain: domain.to_string(),
        props,
        open,
    })
}

/// JMX's wildcards: `*` any run of characters, `?` one.
fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

fn matches(pattern: &ObjectName, name: &str) -> bool {
    let Ok(n) = parse_name(name) else {
        return false;
    };
    if !glob(&pattern.domain, &n.domain) {
        return false;
    }
    let all_listed = pattern
        .props
        .iter()
        .all(|(k, v)| n.props.iter().any(|(nk, nv)| nk == k && glob(v, nv)));
    all_listed && (pattern.open || pattern.props.len() == n.props.len())
}

/// Why `/jmx` cannot answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JmxError {
    /// A malformed `qry` or `get` (400).
    BadQuery(String),
    /// `get` names no bean or attribute (404).
    NotFound(String),
}

/// The `/jmx` body for `beans` and the request's `qry` and `get`.
pub fn render(beans: &[Bean], qry: Option<&str>, get: Option<&str>) -> Result<Value, JmxError> {
    if let Some(get) = get.filter(|g| !g.is_empty()) {
        let (bean, attr) = get
            .split_once("::")
            .ok_or_else(|| JmxError::BadQuery(format!("query format is not as expected: {get}")))?;
        let pattern = parse_name(bean).map_err(JmxError::BadQuery)?;
        let found: Vec<Value> = beans
            .iter()
            .filter(|b| matches(&pattern, &b.name) && b.attributes.contains_key(attr))
            .map(|b| b.json(Some(attr)))
            .collect();
        if found.is_empty() {
            return Err(JmxError::NotFound(format!(
                "No attribute {attr} of a bean matching {bean}"
            )));
        }
        return Ok(serde_json::json!({ "beans": found }));
    }
    let pattern =
        parse_name(qry.filter(|q| !q.is_empty()).unwrap_or("*:*")).map_err(JmxError::BadQuery)?;
    let found: Vec<Value> = beans
        .iter()
        .filter(|b| matches(&pattern, &b.name))
        .map(|b| b.json(None))
        .collect();
    Ok(serde_json::json!({ "beans": found }))
}

/// What the process uses, from `/proc/self/status`: resident memory in
/// bytes, peak virtual memory in bytes, threads. `None` where unreadable.
pub fn process_stats() -> ProcessStats {
    let text = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| -> Option<u64> {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
    };
    ProcessStats {
        rss_bytes: field("VmRSS:").map(|kb| kb * 1024),
        virtual_bytes: field("VmSize:").map(|kb| kb * 1024),
        threads: field("Threads:"),
        open_fds: std::fs::read_dir("/proc/self/fd")
            .ok()
            .map(|d| d.count() as u64),
    }
}

/// See [`process_stats`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProcessStats {
    pub rss_bytes: Option<u64>,
    pub virtual_bytes: Option<u64>,
    pub threads: Option<u64>,
    pub open_fds: Option<u64>,
}

/// JSON with the content type Hadoop's JMX and conf servlets send.
pub fn json_response(status: axum::http::StatusCode, body: &Value) -> axum::response::Response {
    use axum::response::IntoResponse;
    (
        status,
        [(
            axum::http::header::CONTENT_TYPE,
            "application/json; charset=utf8",
        )],
        body.to_string(),
    )
        .into_response()
}

/// Hadoop's `JMXJsonServlet` answer for `beans` and the request's `qry` and
/// `get`: the beans, or `{"result":"ERROR","message":…}` with 400 for a
/// malformed query and 404 for an unknown bean or attribute.
pub fn respond(beans: &[Bean], qry: Option<&str>, get: Option<&str>) -> axum::response::Response {
    use axum::http::StatusCode;
    match render(beans, qry, get) {
        Ok(body) => json_response(StatusCode::OK, &body),
        Err(JmxError::BadQuery(m)) => json_response(
            StatusCode::BAD_REQUEST,
            &serde_json::json!({"result": "ERROR", "message": m}),
        ),
        Err(JmxError::NotFound(m)) => json_response(
            StatusCode::NOT_FOUND,
            &serde_json::json!({"result": "ERROR", "message": m}),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn beans() -> Vec<Bean> {
        vec![
            Bean::new(
                "Hadoop:service=ResourceManager,name=ClusterMetrics",
                "ClusterMetrics",
            )
            .attr("NumActiveNMs", 2),
            Bean::new(
                "Hadoop:service=ResourceManager,name=QueueMetrics,q0=root",
                "QueueMetrics,q0=root",
            )
            .attr("AppsRunning", 1),
            Bean::new(
                "Hadoop:service=ResourceManager,name=QueueMetrics,q0=root,q1=default",
                "QueueMetrics,q0=root,q1=default",
            )
            .attr("AppsRunning", 1),
            Bean::new("java.lang:type=Runtime", "sun.management.RuntimeImpl").attr("Uptime", 5),
        ]
    }

    fn names(v: &Value) -> Vec<String> {
        v["beans"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|b| b["name"].as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn qry_filters_as_object_name_patterns() {
        let b = beans();
        assert_eq!(names(&render(&b, None, None).expect("all")).len(), 4);
        assert_eq!(
            names(
                &render(
                    &b,
                    Some("Hadoop:service=ResourceManager,name=ClusterMetrics"),
                    None
                )
                .expect("one")
            ),
            vec!["Hadoop:service=ResourceManager,name=ClusterMetrics"]
        );
        // The property list must match exactly unless it ends in `*`.
        assert_eq!(
            names(
                &render(
                    &b,
                    Some("Hadoop:service=ResourceManager,name=QueueMetrics,q0=root"),
                    None
                )
                .expect("root")
            )
            .len(),
            1
        );
        assert_eq!(
            names(
                &render(
                    &b,
                    Some("Hadoop:service=ResourceManager,name=QueueMetrics,*"),
                    None
                )
                .expect("queues")
            )
            .len(),
            2
        );
        assert_eq!(
            names(&render(&b, Some("Hadoop:*"), None).expect("hadoop")).len(),
            3
        );
        assert_eq!(
            names(&render(&b, Some("java.lang:type=Run*"), None).expect("glob")).len(),
            1
        );
        assert_eq!(
            names(&render(&b, Some("Hadoop:name=Nothing"), None).expect("none")).len(),
            0
        );
        assert!(matches!(
            render(&b, Some("no-colon"), None),
            Err(JmxError::BadQuery(_))
        ));
    }

    #[test]
    fn get_picks_one_attribute() {
        let b = beans();
        let v = render(
            &b,
            None,
            Some("Hadoop:service=ResourceManager,name=ClusterMetrics::NumActiveNMs"),
        )
        .expect("get");
        assert_eq!(v["beans"][0]["NumActiveNMs"], 2);
        assert_eq!(v["beans"][0]["modelerType"], "ClusterMetrics");
        assert!(matches!(
            render(
                &b,
                None,
                Some("Hadoop:service=ResourceManager,name=ClusterMetrics::Nope")
            ),
            Err(JmxError::NotFound(_))
        ));
        assert!(matches!(
            render(&b, None, Some("nocolons")),
            Err(JmxError::BadQuery(_))
        ));
    }

    #[test]
    fn reads_this_process() {
        let s = process_stats();
        assert!(s.rss_bytes.is_some_and(|r| r > 0));
        assert!(s.threads.is_some_and(|t| t >= 1));
    }
}
