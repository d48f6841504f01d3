//! Prometheus text format as Hadoop's `PrometheusMetricsSink` writes it
//! on `/prom` (`hadoop.prometheus.endpoint.enabled`): one metric per
//! (record, metric) pair, named `prometheusName(record, metric)`, each
//! sample tagged with the record's tags in lower case.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Hadoop's `PrometheusMetricsSink.prometheusName`: record and metric name
/// capitalized and joined, split before capitals as Hadoop's pattern
/// `(?<!(^|[A-Z_]))(?=[A-Z])|(?<!^)(?=[A-Z][a-z])` does, joined with `_`,
/// lower-cased, runs of other characters made `_`.
pub fn metric_name(record: &str, metric: &str) -> String {
    let base: Vec<char> = capitalize(record)
        .chars()
        .chain(capitalize(metric).chars())
        .collect();
    let mut joined = String::new();
    for (i, &c) in base.iter().enumerate() {
        if i > 0 && c.is_ascii_uppercase() {
            let prev = base[i - 1];
            let first = !(prev.is_ascii_uppercase() || prev == '_');
            let second = base.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            if first || second {
                joined.push('_');
            }
        }
        joined.push(c);
    }
    let lower = joined.to_lowercase();
    let mut out = String::with_capacity(lower.len());
    let mut in_run = false;
    for c in lower.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
            in_run = false;
        } else if !in_run {
            out.push('_');
            in_run = true;
        }
    }
    out
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// A metric's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Gauge,
    Counter,
}

/// One metrics record (a JMX bean of metrics2): its name, its tags, its
/// metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub name: String,
    pub tags: Vec<(String, String)>,
    pub metrics: Vec<(String, Kind, f64)>,
}

fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// The text exposition of `records`: one `# TYPE` line per metric name,
/// then its samples.
pub fn render(records: &[Record]) -> String {
    let mut families: BTreeMap<String, (Kind, Vec<String>)> = BTreeMap::new();
    for r in records {
        let labels: Vec<String> = r
            .tags
            .iter()
            .map(|(k, v)| format!("{}=\"{}\"", k.to_lowercase(), escape_label(v)))
            .collect();
        for (m, kind, value) in &r.metrics {
            let name = metric_name(&r.name, m);
            let sample = format!("{name}{{{}}} {}", labels.join(","), number(*value));
            families
                .entry(name)
                .or_insert_with(|| (*kind, Vec::new()))
                .1
                .push(sample);
        }
    }
    let mut out = String::new();
    for (name, (kind, samples)) in families {
        let kind = match kind {
            Kind::Gauge => "gauge",
            Kind::Counter => "counter",
        };
        let _ = writeln!(out, "# TYPE {name} {kind}");
        for s in samples {
            out.push_str(&s);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_as_hadoop_derives_them() {
        assert_eq!(
            metric_name("ClusterMetrics", "NumActiveNMs"),
            "cluster_metrics_num_active_n_ms"
        );
        assert_eq!(
            metric_name("QueueMetrics", "AppsRunning"),
            "queue_metrics_apps_running"
        );
        assert_eq!(
            metric_name("QueueMetrics", "running_0"),
            "queue_metrics_running_0"
        );
        assert_eq!(
            metric_name("JvmMetrics", "MemHeapUsedM"),
            "jvm_metrics_mem_heap_used_m"
        );
        assert_eq!(
            metric_name("RpcActivity", "RpcQueueTimeNumOps"),
            "rpc_activity_rpc_queue_time_num_ops"
        );
        assert_eq!(
            metric_name("ugiMetrics", "LoginSuccessAvgTime"),
            "ugi_metrics_login_success_avg_time"
        );
        assert_eq!(
            metric_name("QueueMetrics", "AMResourceLimitMB"),
            "queue_metrics_am_resource_limit_mb"
        );
    }

    #[test]
    fn renders_families_with_tags() {
        let r = vec![
            Record {
                name: "QueueMetrics".into(),
                tags: vec![
                    ("Queue".into(), "root".into()),
                    ("Context".into(), "yarn".into()),
                ],
                metrics: vec![("AppsRunning".into(), Kind::Gauge, 1.0)],
            },
            Record {
                name: "QueueMetrics".into(),
                tags: vec![
                    ("Queue".into(), "root.default".into()),
                    ("Context".into(), "yarn".into()),
                ],
                metrics: vec![
                    ("AppsRunning".into(), Kind::Gauge, 1.0),
                    ("AppsSubmitted".into(), Kind::Counter, 3.0),
                ],
            },
        ];
        assert_eq!(
            render(&r),
            "# TYPE queue_metrics_apps_running gauge\n\
             queue_metrics_apps_running{queue=\"root\",context=\"yarn\"} 1\n\
             queue_metrics_apps_running{queue=\"root.default\",context=\"yarn\"} 1\n\
             # TYPE queue_metrics_apps_submitted counter\n\
             queue_metrics_apps_submitted{queue=\"root.default\",context=\"yarn\"} 3\n"
        );
    }
}
