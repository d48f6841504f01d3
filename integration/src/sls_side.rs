//! SLS inputs side by side: `spindle sim` and Hadoop 3.3.4's own ResourceManager with its
//! CapacityScheduler, driven in real time by `integration/bin/sls-driver` (our SLS-style
//! driver, `integration/java/SlsDriver.java`), on the same trace, node file and queues.
//!
//! [`run_spindle_sim`] and [`run_sls_driver`] run one side each and read what it reports into
//! a [`SideSummary`]; [`render_table`] prints both with the differences. Queue shares are
//! computed the same way on both sides: at every one-second sample where any leaf queue holds
//! memory, each leaf's part of the memory the leaves hold, averaged over those samples
//! ([`mean_queue_shares`] reads `spindle sim`'s `timeseries.csv`; the driver writes the same
//! means itself). [`scale_sls_trace`] shortens a trace's clock (for a real-time run that has
//! to fit in a test).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use serde_json::Value;

use crate::clients::integration_dir;
use crate::process::run_with_timeout;

/// What one side reports, in `spindle sim --json`'s terms.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SideSummary {
    /// Wall time of the run (for `spindle sim`, the whole process; for the driver, from
    /// the nodes' registration to the last job's end, without the JVM's start).
    pub wall_s: f64,
    pub sim_time_s: f64,
    pub allocations: u64,
    pub apps_submitted: u64,
    pub apps_completed: u64,
    pub tasks_completed: u64,
    pub turnaround_s_mean: f64,
    pub turnaround_s_p50: f64,
    pub turnaround_s_p95: f64,
    pub makespan_s: f64,
    /// Leaf queue (without `root.`) → mean share of the memory the leaves hold.
    pub queue_shares: BTreeMap<String, f64>,
    /// Allocate call latency (driver only: around ApplicationMasterService.allocate).
    pub allocate_ms_p50: Option<f64>,
    pub allocate_ms_p99: Option<f64>,
}

impl SideSummary {
    pub fn allocations_per_s(&self) -> f64 {
        if self.wall_s > 0.0 {
            self.allocations as f64 / self.wall_s
        } else {
            0.0
        }
    }
}

fn num(v: &Value, key: &str) -> anyhow::Result<f64> {
    v.get(key)
        .and_then(Value::as_f64)
        .ok_or_else(|| anyhow!("the summary has no number '{key}': {v}"))
}

fn count(v: &Value, key: &str) -> anyhow::Result<u64> {
    v.get(key)
        .and_then(Value::as_u64)
        .ok_or_else(|| anyhow!("the summary has no count '{key}': {v}"))
}

fn leaf_name(q: &str) -> String {
    q.strip_prefix("root.").unwrap_or(q).to_string()
}

/// The mean share of each leaf queue in `spindle sim`'s `timeseries.csv` (columns
/// `queue_used_mb:<leaf>`), over the samples where the leaves hold any memory.
pub fn mean_queue_shares(csv: &str) -> anyhow::Result<BTreeMap<String, f64>> {
    let mut lines = csv.lines();
    let header = lines
        .next()
        .ok_or_else(|| anyhow!("the time series is empty"))?;
    let cols: Vec<(usize, String)> = header
        .split(',')
        .enumerate()
        .filter_map(|(i, h)| h.strip_prefix("queue_used_mb:").map(|q| (i, leaf_name(q))))
        .collect();
    if cols.is_empty() {
        bail!("the time series has no queue_used_mb columns: {header}");
    }
    let mut sums = vec![0.0; cols.len()];
    let mut samples = 0u64;
    for (n, line) in lines.enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(',').collect();
        let mut used = Vec::with_capacity(cols.len());
        for (i, q) in &cols {
            let f = fields
                .get(*i)
                .ok_or_else(|| anyhow!("row {}: no column for {q}", n + 2))?;
            let mb: f64 = f
                .trim()
                .parse()
                .map_err(|_| anyhow!("row {}: '{f}' is not a number ({q})", n + 2))?;
            used.push(mb);
        }
        let total: f64 = used.iter().sum();
        if total <= 0.0 {
            continue;
        }
        samples += 1;
        for (s, u) in sums.iter_mut().zip(&used) {
            *s += u / total;
        }
    }
    Ok(cols
        .into_iter()
        .zip(sums)
        .map(|((_, q), s)| (q, if samples > 0 { s / samples as f64 } else { 0.0 }))
        .collect())
}

/// Reads `spindle sim --json`'s summary and its `timeseries.csv`.
pub fn spindle_side(
    summary_json: &str,
    timeseries_csv: &str,
    wall_s: f64,
) -> anyhow::Result<SideSummary> {
    let v: Value = serde_json::from_str(summary_json.trim()).context("spindle sim's summary")?;
    Ok(SideSummary {
        wall_s,
        sim_time_s: num(&v, "sim_time_s")?,
        allocations: count(&v, "allocations")?,
        apps_submitted: count(&v, "apps_submitted")?,
        apps_completed: count(&v, "apps_completed")?,
        tasks_completed: count(&v, "tasks_completed")?,
        turnaround_s_mean: num(&v, "turnaround_s_mean")?,
        turnaround_s_p50: num(&v, "turnaround_s_p50")?,
        turnaround_s_p95: num(&v, "turnaround_s_p95")?,
        makespan_s: num(&v, "makespan_s")?,
        queue_shares: mean_queue_shares(timeseries_csv)?,
        allocate_ms_p50: None,
        allocate_ms_p99: None,
    })
}

/// Reads the driver's `summary.json`.
pub fn driver_side(summary_json: &str) -> anyhow::Result<SideSummary> {
    let v: Value = serde_json::from_str(summary_json.trim()).context("the driver's summary")?;
    let shares = v
        .get("queue_mean_share")
        .and_then(Value::as_object)
        .ok_or_else(|| anyhow!("the driver's summary has no queue_mean_share: {v}"))?
        .iter()
        .map(|(q, s)| {
            s.as_f64()
                .map(|s| (leaf_name(q), s))
                .ok_or_else(|| anyhow!("share of {q} is not a number"))
        })
        .collect::<anyhow::Result<BTreeMap<_, _>>>()?;
    Ok(SideSummary {
        wall_s: num(&v, "wall_time_s")?,
        sim_time_s: num(&v, "sim_time_s")?,
        allocations: count(&v, "allocations")?,
        apps_submitted: count(&v, "apps_submitted")?,
        apps_completed: count(&v, "apps_completed")?,
        tasks_completed: count(&v, "tasks_completed")?,
        turnaround_s_mean: num(&v, "turnaround_s_mean")?,
        turnaround_s_p50: num(&v, "turnaround_s_p50")?,
        turnaround_s_p95: num(&v, "turnaround_s_p95")?,
        makespan_s: num(&v, "makespan_s")?,
        queue_shares: shares,
        allocate_ms_p50: Some(num(&v, "allocate_ms_p50")?),
        allocate_ms_p99: Some(num(&v, "allocate_ms_p99")?),
    })
}

/// The two sides in one table: Hadoop (the driver), Spindle (`spindle sim`), and how they
/// differ (ratio for times and rates, difference in points for shares).
pub fn render_table(hadoop: &SideSummary, spindle: &SideSummary) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| | Hadoop 3.3.4 RM (SLS-style driver) | spindle sim | difference |"
    );
    let _ = writeln!(out, "|---|---|---|---|");
    let mut row = |name: &str, h: String, s: String, d: String| {
        let _ = writeln!(out, "| {name} | {h} | {s} | {d} |");
    };
    let speedup = if spindle.wall_s > 0.0 {
        hadoop.wall_s / spindle.wall_s
    } else {
        f64::INFINITY
    };
    row(
        "wall time (s)",
        format!("{:.2}", hadoop.wall_s),
        format!("{:.2}", spindle.wall_s),
        format!("speedup {speedup:.1}x"),
    );
    row(
        "simulated time (s)",
        format!("{:.1}", hadoop.sim_time_s),
        format!("{:.1}", spindle.sim_time_s),
        format!("{:+.1}", spindle.sim_time_s - hadoop.sim_time_s),
    );
    row(
        "allocations",
        hadoop.allocations.to_string(),
        spindle.allocations.to_string(),
        format!(
            "{:+}",
            spindle.allocations as i64 - hadoop.allocations as i64
        ),
    );
    row(
        "allocations/s (wall)",
        format!("{:.1}", hadoop.allocations_per_s()),
        format!("{:.1}", spindle.allocations_per_s()),
        String::new(),
    );
    row(
        "apps completed / submitted",
        format!("{} / {}", hadoop.apps_completed, hadoop.apps_submitted),
        format!("{} / {}", spindle.apps_completed, spindle.apps_submitted),
        String::new(),
    );
    row(
        "tasks completed",
        hadoop.tasks_completed.to_string(),
        spindle.tasks_completed.to_string(),
        String::new(),
    );
    for (name, h, s) in [
        (
            "turnaround mean (s)",
            hadoop.turnaround_s_mean,
            spindle.turnaround_s_mean,
        ),
        (
            "turnaround p50 (s)",
            hadoop.turnaround_s_p50,
            spindle.turnaround_s_p50,
        ),
        (
            "turnaround p95 (s)",
            hadoop.turnaround_s_p95,
            spindle.turnaround_s_p95,
        ),
        ("makespan (s)", hadoop.makespan_s, spindle.makespan_s),
    ] {
        row(
            name,
            format!("{h:.1}"),
            format!("{s:.1}"),
            format!("{:+.1}", s - h),
        );
    }
    let queues: std::collections::BTreeSet<&String> = hadoop
        .queue_shares
        .keys()
        .chain(spindle.queue_shares.keys())
        .collect();
    for q in queues {
        let h = hadoop.queue_shares.get(q).copied().unwrap_or(0.0) * 100.0;
        let s = spindle.queue_shares.get(q).copied().unwrap_or(0.0) * 100.0;
        row(
            &format!("mean share of {q} (%)"),
            format!("{h:.1}"),
            format!("{s:.1}"),
            format!("{:+.1} points", s - h),
        );
    }
    if let (Some(p50), Some(p99)) = (hadoop.allocate_ms_p50, hadoop.allocate_ms_p99) {
        row(
            "allocate p50 / p99 (ms)",
            format!("{p50:.2} / {p99:.2}"),
            "n/a (no RPC)".into(),
            String::new(),
        );
    }
    out
}

/// Keys of an SLS trace that hold times, in milliseconds.
const TIME_KEYS: [&str; 6] = [
    "job.start.ms",
    "job.end.ms",
    "container.start.ms",
    "container.end.ms",
    "container.duration.ms",
    "duration.ms",
];

fn scale_times(obj: &mut serde_json::Map<String, Value>, divisor: u64) -> anyhow::Result<()> {
    for key in TIME_KEYS {
        if let Some(v) = obj.get_mut(key) {
            let ms = match v {
                Value::Number(n) => n.as_u64(),
                Value::String(s) => s.trim().parse::<u64>().ok(),
                _ => None,
            }
            .ok_or_else(|| anyhow!("'{key}' is not a whole number of milliseconds: {v}"))?;
            *v = Value::from(ms / divisor);
        }
    }
    Ok(())
}

/// The SLS trace with every time (`job.start.ms`, `container.*.ms`, `duration.ms`, …) divided
/// by `divisor`: the same jobs and tasks on a shorter clock.
pub fn scale_sls_trace(text: &str, divisor: u64) -> anyhow::Result<String> {
    if divisor == 0 {
        bail!("the divisor must be positive");
    }
    let mut out = String::new();
    for obj in serde_json::Deserializer::from_str(text).into_iter::<Value>() {
        let mut obj = obj.context("the trace is not a stream of JSON objects")?;
        let map = obj
            .as_object_mut()
            .ok_or_else(|| anyhow!("the trace holds something other than objects"))?;
        scale_times(map, divisor)?;
        if let Some(Value::Array(tasks)) = map.get_mut("job.tasks") {
            for t in tasks {
                if let Some(t) = t.as_object_mut() {
                    scale_times(t, divisor)?;
                }
            }
        }
        out.push_str(&serde_json::to_string_pretty(&obj)?);
        out.push('\n');
    }
    Ok(out)
}

/// `integration/bin/sls-driver`.
pub fn driver_launcher() -> PathBuf {
    integration_dir().join("bin").join("sls-driver")
}

/// `integration/bench/sls_gen.py`.
pub fn generator() -> PathBuf {
    integration_dir().join("bench").join("sls_gen.py")
}

/// Runs `spindle sim WORKLOAD --json --out OUT` with `binary`.
pub fn run_spindle_sim(binary: &Path, workload: &Path, out: &Path) -> anyhow::Result<SideSummary> {
    let mut cmd = Command::new(binary);
    cmd.arg("sim")
        .arg(workload)
        .args(["--json", "--progress", "never", "--out"])
        .arg(out);
    let started = Instant::now();
    let res = run_with_timeout(cmd, Duration::from_secs(3600))?;
    let wall = started.elapsed().as_secs_f64();
    if !res.success() {
        bail!("spindle sim failed: {res}");
    }
    let csv = std::fs::read_to_string(out.join("timeseries.csv"))
        .with_context(|| format!("{}/timeseries.csv", out.display()))?;
    spindle_side(&res.stdout, &csv, wall)
}

/// Runs the SLS-style driver on Hadoop's RM; returns its summary and `jobruntime.csv`.
pub fn run_sls_driver(
    trace: &Path,
    nodes: &Path,
    capacity_scheduler: &Path,
    out: &Path,
    timeout: Duration,
) -> anyhow::Result<(SideSummary, String)> {
    let mut cmd = Command::new(driver_launcher());
    cmd.arg(trace)
        .arg(nodes)
        .arg(capacity_scheduler)
        .arg(out)
        .args(["--timeout-s", &timeout.as_secs().to_string()]);
    let res = run_with_timeout(cmd, timeout + Duration::from_secs(120))?;
    if !res.success() {
        bail!("the SLS driver failed: {res}");
    }
    let summary = std::fs::read_to_string(out.join("summary.json"))
        .with_context(|| format!("{}/summary.json", out.display()))?;
    let jobs = std::fs::read_to_string(out.join("jobruntime.csv"))
        .with_context(|| format!("{}/jobruntime.csv", out.display()))?;
    Ok((driver_side(&summary)?, jobs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_average_over_samples_where_queues_hold_memory() {
        let csv = "time_s,used_mb,queue_used_mb:root.a,queue_used_mb:root.b\n\
                   0.000,0,0,0\n\
                   1.000,4096,3072,1024\n\
                   2.000,2048,1024,1024\n";
        let shares = mean_queue_shares(csv).expect("shares");
        assert_eq!(shares.len(), 2);
        assert!((shares["a"] - 0.625).abs() < 1e-9, "{shares:?}");
        assert!((shares["b"] - 0.375).abs() < 1e-9, "{shares:?}");
    }

    #[test]
    fn shares_refuse_a_series_without_queues_or_with_bad_numbers() {
        assert!(mean_queue_shares("time_s,used_mb\n0,0\n").is_err());
        assert!(mean_queue_shares("time_s,queue_used_mb:root.a\n0,x\n").is_err());
        assert!(mean_queue_shares("").is_err());
    }

    #[test]
    fn trace_times_shrink_and_everything_else_stays() {
        let trace = r#"{"job.start.ms": 1000, "job.queue.name": "q", "job.tasks": [
            {"container.start.ms": "4000", "container.end.ms": 8000, "container.host": "/r/h"}]}
            {"job.start.ms": 9, "job.tasks": [{"duration.ms": 40}]}"#;
        let scaled = scale_sls_trace(trace, 4).expect("scaled");
        let objs: Vec<Value> = serde_json::Deserializer::from_str(&scaled)
            .into_iter::<Value>()
            .collect::<Result<_, _>>()
            .expect("JSON objects");
        assert_eq!(objs.len(), 2);
        assert_eq!(objs[0]["job.start.ms"], 250);
        assert_eq!(objs[0]["job.queue.name"], "q");
        assert_eq!(objs[0]["job.tasks"][0]["container.start.ms"], 1000);
        assert_eq!(objs[0]["job.tasks"][0]["container.end.ms"], 2000);
        assert_eq!(objs[0]["job.tasks"][0]["container.host"], "/r/h");
        assert_eq!(objs[1]["job.start.ms"], 2);
        assert_eq!(objs[1]["job.tasks"][0]["duration.ms"], 10);
        assert!(scale_sls_trace(trace, 0).is_err());
        assert!(scale_sls_trace(r#"{"job.start.ms": "soon"}"#, 2).is_err());
        assert!(scale_sls_trace("[1]", 2).is_err());
    }

    #[test]
    fn summaries_read_and_table_shows_the_differences() {
        let driver = r#"{"wall_time_s":40.0,"sim_time_s":39.5,"allocations":80,"apps_submitted":2,
            "apps_completed":2,"tasks_completed":78,"turnaround_s_mean":10.0,"turnaround_s_p50":9.0,
            "turnaround_s_p95":12.0,"makespan_s":39.0,"allocate_ms_p50":1.5,"allocate_ms_p99":9.0,
            "queue_mean_share":{"a":0.7,"b":0.3}}"#;
        let h = driver_side(driver).expect("driver summary");
        assert_eq!(h.allocate_ms_p99, Some(9.0));
        assert!((h.allocations_per_s() - 2.0).abs() < 1e-9);
        let spindle = r#"{"sim_time_s":38.0,"allocations":80,"apps_submitted":2,"apps_completed":2,
            "tasks_completed":78,"turnaround_s_mean":9.0,"turnaround_s_p50":8.0,"turnaround_s_p95":11.0,
            "makespan_s":37.0}"#;
        let csv = "time_s,queue_used_mb:root.a,queue_used_mb:root.b\n1,3,1\n";
        let s = spindle_side(spindle, csv, 0.5).expect("spindle summary");
        assert_eq!(s.queue_shares["a"], 0.75);
        let table = render_table(&h, &s);
        assert!(
            table.contains("| wall time (s) | 40.00 | 0.50 | speedup 80.0x |"),
            "{table}"
        );
        assert!(
            table.contains("| mean share of a (%) | 70.0 | 75.0 | +5.0 points |"),
            "{table}"
        );
        assert!(
            table.contains("| allocate p50 / p99 (ms) | 1.50 / 9.00 |"),
            "{table}"
        );
        assert!(driver_side("{}").is_err());
        assert!(spindle_side("{}", csv, 1.0).is_err());
    }
}
