//! What a run produces: a summary (JSON), a time series (CSV) and two
//! hand-written SVG charts. Every number is derived from the simulated
//! run only, so the same seed gives the same bytes.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use spindle_common::markup::escape;

use crate::error::SimError;

/// Containers placed at each locality level.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LocalityCounts {
    pub node_local: u64,
    pub rack_local: u64,
    pub off_switch: u64,
}

/// The run's figures. Field order is the JSON order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub workload: String,
    pub seed: u64,
    pub scheduler: String,
    pub placement: String,
    pub heartbeat_mode: String,
    pub chaos: bool,
    /// Simulated time at which the run stopped.
    pub sim_time_s: f64,
    pub events: u64,
    /// Inputs and passes fed to the scheduler core.
    pub scheduler_steps: u64,
    pub allocations: u64,
    pub apps_submitted: usize,
    pub apps_completed: usize,
    pub apps_failed: usize,
    pub apps_unfinished: usize,
    pub am_attempts_failed: u64,
    pub tasks_completed: u64,
    /// Task containers that ended before their work was done (node lost,
    /// application attempt failed) and were run again.
    pub tasks_lost: u64,
    /// Node-hours paid for: from a node's provisioning request (time 0
    /// for the initial nodes) to its removal or the end of the run.
    pub node_hours: f64,
    pub nodes_min: usize,
    pub nodes_max: usize,
    /// Nodes added by the autoscaler.
    pub nodes_added: u64,
    /// Nodes removed by the autoscaler.
    pub nodes_removed: u64,
    /// Time-weighted memory in use over memory of registered nodes.
    pub utilization_mean: f64,
    /// The same for vcores.
    pub utilization_vcores_mean: f64,
    /// Memory in use over memory of all paid-for nodes (provisioning
    /// included).
    pub utilization_paid_mean: f64,
    /// Turnaround (arrival to finish) of the batch applications that
    /// completed; services are left out.
    pub turnaround_s_mean: f64,
    pub turnaround_s_p50: f64,
    pub turnaround_s_p95: f64,
    pub turnaround_s_max: f64,
    /// From the first arrival to the last finish of a batch application.
    pub makespan_s: f64,
    /// Batch applications completed per hour of makespan.
    pub throughput_apps_per_hour: f64,
    /// Over samples with the cluster at least 90% used and at least two
    /// leaf queues waiting: how far below its share (the configured
    /// shares renormalised over the queues holding or wanting resources)
    /// the worst-off waiting queue's usage was; the largest and the mean.
    pub queue_share_error_max: f64,
    pub queue_share_error_mean: f64,
    pub queue_share_samples: u64,
    pub locality: LocalityCounts,
    /// The most containers alive at once, and the nodes then holding none.
    pub peak_containers: usize,
    pub empty_nodes_at_peak: usize,
    pub peak_time_s: f64,
    /// Containers per node at that moment, non-empty nodes only, largest
    /// first (clusters of at most 200 nodes).
    pub peak_node_containers: Vec<usize>,
}

/// One row of the time series.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplePoint {
    pub time_ms: u64,
    pub live_nodes: usize,
    pub provisioning_nodes: usize,
    pub empty_nodes: usize,
    pub capacity_mb: i64,
    pub used_mb: i64,
    pub capacity_vcores: i64,
    pub used_vcores: i64,
    pub running_containers: usize,
    pub waiting_requests: usize,
    pub running_apps: usize,
    /// Memory in use per leaf queue, aligned with [`SimReport::queues`].
    pub queue_used_mb: Vec<i64>,
}

impl SamplePoint {
    pub fn utilization(&self) -> f64 {
        if self.capacity_mb > 0 {
            self.used_mb as f64 / self.capacity_mb as f64
        } else {
            0.0
        }
    }
}

/// Everything a run produced.
#[derive(Debug, Clone)]
pub struct SimReport {
    pub summary: Summary,
    /// Leaf queue paths, the per-queue columns of the series.
    pub queues: Vec<String>,
    pub series: Vec<SamplePoint>,
    /// Wall-clock time the run took (not part of any rendered output).
    pub wall_time: Duration,
}

fn num(v: f64) -> f64 {
    if v.is_finite() {
        (v * 1e6).round() / 1e6
    } else {
        0.0
    }
}

impl Summary {
    /// Rounds every float to 6 decimals, so outputs read cleanly and
    /// compare exactly.
    pub(crate) fn rounded(mut self) -> Summary {
        for f in [
            &mut self.sim_time_s,
            &mut self.node_hours,
            &mut self.utilization_mean,
            &mut self.utilization_vcores_mean,
            &mut self.utilization_paid_mean,
            &mut self.turnaround_s_mean,
            &mut self.turnaround_s_p50,
            &mut self.turnaround_s_p95,
            &mut self.turnaround_s_max,
            &mut self.makespan_s,
            &mut self.throughput_apps_per_hour,
            &mut self.queue_share_error_max,
            &mut self.queue_share_error_mean,
            &mut self.peak_time_s,
        ] {
            *f = num(*f);
        }
        self
    }
}

impl SimReport {
    /// The summary as one JSON object on one line, newline-terminated.
    pub fn summary_json(&self) -> String {
        let mut s = serde_json::to_string(&self.summary).unwrap_or_else(|e| {
            // Serializing plain numbers and strings cannot fail; say so
            // loudly if it ever does.
            format!("{{\"error\":\"summary serialization failed: {e}\"}}")
        });
        s.push('\n');
        s
    }

    /// The summary as indented JSON.
    pub fn summary_json_pretty(&self) -> String {
        let mut s = serde_json::to_string_pretty(&self.summary)
            .unwrap_or_else(|e| format!("{{\"error\":\"summary serialization failed: {e}\"}}"));
        s.push('\n');
        s
    }

    /// A few lines for people.
    pub fn summary_text(&self) -> String {
        let s = &self.summary;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "workload {} (seed {}): {} scheduler, {} placement, {} heartbeats{}",
            s.workload,
            s.seed,
            s.scheduler,
            s.placement,
            s.heartbeat_mode,
            if s.chaos { ", chaos" } else { "" }
        );
        let _ = writeln!(
            out,
            "simulated {:.1} h in {:.2} s wall ({} events, {} scheduler steps)",
            s.sim_time_s / 3600.0,
            self.wall_time.as_secs_f64(),
            s.events,
            s.scheduler_steps
        );
        let _ = writeln!(
            out,
            "apps: {} submitted, {} completed, {} failed, {} unfinished; {} allocations; {} AM attempts failed",
            s.apps_submitted,
            s.apps_completed,
            s.apps_failed,
            s.apps_unfinished,
            s.allocations,
            s.am_attempts_failed
        );
        let _ = writeln!(
            out,
            "node-hours {:.2} (nodes {}..{}, +{} / -{} by the autoscaler); utilization {:.1}% (paid {:.1}%)",
            s.node_hours,
            s.nodes_min,
            s.nodes_max,
            s.nodes_added,
            s.nodes_removed,
            s.utilization_mean * 100.0,
            s.utilization_paid_mean * 100.0
        );
        let _ = writeln!(
            out,
            "turnaround p50 {:.1} s, p95 {:.1} s, mean {:.1} s; throughput {:.2} apps/h over {:.1} h",
            s.turnaround_s_p50,
            s.turnaround_s_p95,
            s.turnaround_s_mean,
            s.throughput_apps_per_hour,
            s.makespan_s / 3600.0
        );
        let _ = writeln!(
            out,
            "locality: {} node-local, {} rack-local, {} off-switch; queue share error max {:.3} (mean {:.3} over {} samples)",
            s.locality.node_local,
            s.locality.rack_local,
            s.locality.off_switch,
            s.queue_share_error_max,
            s.queue_share_error_mean,
            s.queue_share_samples
        );
        let _ = writeln!(
            out,
            "peak {} containers at {:.1} s with {} empty nodes{}",
            s.peak_containers,
            s.peak_time_s,
            s.empty_nodes_at_peak,
            if s.peak_node_containers.is_empty() {
                String::new()
            } else {
                format!(
                    " (per node: {})",
                    s.peak_node_containers
                        .iter()
                        .map(usize::to_string)
                        .collect::<Vec<_>>()
                        .join("/")
                )
            }
        );
        out
    }

    /// The time series, one row per sample.
    pub fn timeseries_csv(&self) -> String {
        let mut out = String::from(
            "time_s,live_nodes,provisioning_nodes,empty_nodes,capacity_mb,used_mb,capacity_vcores,used_vcores,utilization,running_containers,waiting_requests,running_apps",
        );
        for q in &self.queues {
            let _ = write!(out, ",queue_used_mb:{q}");
        }
        out.push('\n');
        for p in &self.series {
            let _ = write!(
                out,
                "{:.3},{},{},{},{},{},{},{},{:.6},{},{},{}",
                p.time_ms as f64 / 1000.0,
                p.live_nodes,
                p.provisioning_nodes,
                p.empty_nodes,
                p.capacity_mb,
                p.used_mb,
                p.capacity_vcores,
                p.used_vcores,
                p.utilization(),
                p.running_containers,
                p.waiting_requests,
                p.running_apps
            );
            for v in &p.queue_used_mb {
                let _ = write!(out, ",{v}");
            }
            out.push('\n');
        }
        out
    }

    /// Utilization and node count over time.
    pub fn utilization_svg(&self) -> String {
        let util: Vec<(f64, f64)> = self
            .series
            .iter()
            .map(|p| (p.time_ms as f64 / 1000.0, p.utilization() * 100.0))
            .collect();
        let nodes: Vec<(f64, f64)> = self
            .series
            .iter()
            .map(|p| {
                (
                    p.time_ms as f64 / 1000.0,
                    (p.live_nodes + p.provisioning_nodes) as f64,
                )
            })
            .collect();
        let max_nodes = nodes.iter().map(|p| p.1).fold(1.0, f64::max);
        let mut c = Chart::new(
            &format!(
                "{}: utilization and nodes ({} placement)",
                self.summary.workload, self.summary.placement
            ),
            self.span_s(),
            100.0,
            "memory used (%)",
        );
        c.right_axis(max_nodes, "nodes (incl. provisioning)");
        c.line(&util, 100.0, "#1f77b4", "utilization (%)");
        c.line(&nodes, max_nodes, "#ff7f0e", "nodes");
        c.finish()
    }

    /// Memory in use per leaf queue, stacked.
    pub fn queues_svg(&self) -> String {
        let max_gb = self
            .series
            .iter()
            .map(|p| p.capacity_mb.max(p.used_mb) as f64 / 1024.0)
            .fold(1.0, f64::max);
        let mut c = Chart::new(
            &format!("{}: memory in use per queue", self.summary.workload),
            self.span_s(),
            max_gb,
            "memory (GB)",
        );
        let mut base = vec![0.0f64; self.series.len()];
        for (qi, q) in self.queues.iter().enumerate() {
            let top: Vec<f64> = self
                .series
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    base[i] + p.queue_used_mb.get(qi).copied().unwrap_or(0) as f64 / 1024.0
                })
                .collect();
            let times: Vec<f64> = self
                .series
                .iter()
                .map(|p| p.time_ms as f64 / 1000.0)
                .collect();
            c.band(&times, &base, &top, PALETTE[qi % PALETTE.len()], q);
            base = top;
        }
        let cap: Vec<(f64, f64)> = self
            .series
            .iter()
            .map(|p| (p.time_ms as f64 / 1000.0, p.capacity_mb as f64 / 1024.0))
            .collect();
        c.line(&cap, max_gb, "#333333", "capacity");
        c.finish()
    }

    fn span_s(&self) -> f64 {
        self.series
            .last()
            .map_or(1.0, |p| (p.time_ms as f64 / 1000.0).max(1.0))
    }

    /// Writes `summary.json`, `timeseries.csv`, `utilization.svg` and
    /// `queues.svg` into `dir` (created if missing); returns the paths.
    pub fn write_outputs(&self, dir: &Path) -> Result<Vec<PathBuf>, SimError> {
        std::fs::create_dir_all(dir).map_err(|source| SimError::Write {
            path: dir.to_path_buf(),
            source,
        })?;
        let files = [
            ("summary.json", self.summary_json_pretty()),
            ("timeseries.csv", self.timeseries_csv()),
            ("utilization.svg", self.utilization_svg()),
            ("queues.svg", self.queues_svg()),
        ];
        let mut out = Vec::new();
        for (name, body) in files {
            let path = dir.join(name);
            std::fs::write(&path, body).map_err(|source| SimError::Write {
                path: path.clone(),
                source,
            })?;
            out.push(path);
        }
        Ok(out)
    }
}

const PALETTE: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];

/// A minimal SVG line/area chart with a time axis.
struct Chart {
    out: String,
    legend: Vec<(String, String)>,
    span_s: f64,
    left_max: f64,
}

const W: f64 = 900.0;
const H: f64 = 380.0;
const ML: f64 = 70.0;
const MR: f64 = 70.0;
const MT: f64 = 40.0;
const MB: f64 = 70.0;

impl Chart {
    fn new(title: &str, span_s: f64, left_max: f64, left_label: &str) -> Chart {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" font-family=\"sans-serif\" font-size=\"12\">"
        );
        let _ = writeln!(out, "<rect width=\"{W}\" height=\"{H}\" fill=\"white\"/>");
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">{}</text>",
            W / 2.0,
            escape(title)
        );
        let mut c = Chart {
            out,
            legend: Vec::new(),
            span_s: span_s.max(1.0),
            left_max: if left_max > 0.0 { left_max } else { 1.0 },
        };
        c.axes(left_label);
        c
    }

    fn x(&self, t: f64) -> f64 {
        ML + (W - ML - MR) * (t / self.span_s).clamp(0.0, 1.0)
    }

    fn y(&self, v: f64, max: f64) -> f64 {
        let max = if max > 0.0 { max } else { 1.0 };
        H - MB - (H - MT - MB) * (v / max).clamp(0.0, 1.0)
    }

    fn axes(&mut self, left_label: &str) {
        let (x0, x1, y0, y1) = (ML, W - MR, H - MB, MT);
        let _ = writeln!(
            self.out,
            "<path d=\"M{x0},{y1} L{x0},{y0} L{x1},{y0}\" fill=\"none\" stroke=\"#000\"/>"
        );
        // Time ticks in sensible units.
        let (unit, unit_s) = if self.span_s >= 3.0 * 3600.0 {
            ("h", 3600.0)
        } else if self.span_s >= 180.0 {
            ("min", 60.0)
        } else {
            ("s", 1.0)
        };
        let step = nice_step(self.span_s / unit_s / 8.0) * unit_s;
        let mut t = 0.0;
        while t <= self.span_s + 1e-9 {
            let x = self.x(t);
            let _ = writeln!(
                self.out,
                "<line x1=\"{x:.1}\" y1=\"{y0}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#000\"/><text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                y0 + 5.0,
                y0 + 18.0,
                trim_num(t / unit_s)
            );
            t += step;
        }
        let _ = writeln!(
            self.out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">time ({unit})</text>",
            (x0 + x1) / 2.0,
            y0 + 34.0
        );
        let vstep = nice_step(self.left_max / 5.0);
        let mut v = 0.0;
        while v <= self.left_max + 1e-9 {
            let y = self.y(v, self.left_max);
            let _ = writeln!(
                self.out,
                "<line x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{x1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                x0,
                x0 - 6.0,
                y + 4.0,
                trim_num(v)
            );
            v += vstep;
        }
        let _ = writeln!(
            self.out,
            "<text transform=\"translate(18,{}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
            (y0 + y1) / 2.0,
            escape(left_label)
        );
    }

    fn right_axis(&mut self, max: f64, label: &str) {
        let x1 = W - MR;
        let _ = writeln!(
            self.out,
            "<line x1=\"{x1}\" y1=\"{MT}\" x2=\"{x1}\" y2=\"{}\" stroke=\"#000\"/>",
            H - MB
        );
        let step = nice_step(max / 5.0);
        let mut v = 0.0;
        while v <= max + 1e-9 {
            let y = self.y(v, max);
            let _ = writeln!(
                self.out,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"start\">{}</text>",
                x1 + 6.0,
                y + 4.0,
                trim_num(v)
            );
            v += step;
        }
        let _ = writeln!(
            self.out,
            "<text transform=\"translate({},{}) rotate(90)\" text-anchor=\"middle\">{}</text>",
            W - 18.0,
            (MT + H - MB) / 2.0,
            escape(label)
        );
    }

    fn line(&mut self, points: &[(f64, f64)], max: f64, color: &str, label: &str) {
        if points.is_empty() {
            return;
        }
        let mut d = String::new();
        for (i, (t, v)) in points.iter().enumerate() {
            let _ = write!(
                d,
                "{}{:.1},{:.1}",
                if i == 0 { "M" } else { " L" },
                self.x(*t),
                self.y(*v, max)
            );
        }
        let _ = writeln!(
            self.out,
            "<path d=\"{d}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"1.5\"/>"
        );
        self.legend.push((color.to_string(), label.to_string()));
    }

    fn band(&mut self, times: &[f64], low: &[f64], high: &[f64], color: &str, label: &str) {
        if times.is_empty() {
            return;
        }
        let max = self.left_max;
        let mut d = String::new();
        for (i, (t, v)) in times.iter().zip(high).enumerate() {
            let _ = write!(
                d,
                "{}{:.1},{:.1}",
                if i == 0 { "M" } else { " L" },
                self.x(*t),
                self.y(*v, max)
            );
        }
        for (t, v) in times.iter().zip(low).rev() {
            let _ = write!(d, " L{:.1},{:.1}", self.x(*t), self.y(*v, max));
        }
        let _ = writeln!(
            self.out,
            "<path d=\"{d} Z\" fill=\"{color}\" fill-opacity=\"0.85\" stroke=\"none\"/>"
        );
        self.legend.push((color.to_string(), label.to_string()));
    }

    fn finish(mut self) -> String {
        let mut x = ML;
        let y = H - 18.0;
        for (color, label) in std::mem::take(&mut self.legend) {
            let _ = writeln!(
                self.out,
                "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"12\" height=\"12\" fill=\"{color}\"/><text x=\"{:.1}\" y=\"{y:.1}\">{}</text>",
                y - 10.0,
                x + 16.0,
                escape(&label)
            );
            x += 28.0 + 7.0 * label.chars().count() as f64;
        }
        self.out.push_str("</svg>\n");
        self.out
    }
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    if raw.is_nan() || raw <= 0.0 || raw.is_infinite() {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * p >= raw {
            return m * p;
        }
    }
    10.0 * p
}

fn trim_num(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{}", v.round() as i64)
    } else {
        format!("{v:.1}")
    }
}

/// Percentile by nearest rank over sorted values (`p` in 0..=100).
pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The union of queue names over samples, in order (used by the engine).
pub(crate) fn queue_columns(names: impl IntoIterator<Item = String>) -> Vec<String> {
    names
        .into_iter()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 10.0);
        assert_eq!(percentile(&v, 95.0), 19.0);
        assert_eq!(percentile(&v, 100.0), 20.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
        assert_eq!(percentile(&[3.0], 95.0), 3.0);
    }

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(0.7), 1.0);
        assert_eq!(nice_step(1.3), 2.0);
        assert_eq!(nice_step(3.0), 5.0);
        assert_eq!(nice_step(7.0), 10.0);
        assert_eq!(nice_step(120.0), 200.0);
        assert_eq!(nice_step(0.0), 1.0);
    }

    #[test]
    fn svg_is_well_formed_enough_and_escapes_names() {
        let mut c = Chart::new("a<b", 10.0, 100.0, "x & y");
        c.line(&[(0.0, 1.0), (10.0, 50.0)], 100.0, "#000", "l");
        c.band(&[0.0, 10.0], &[0.0, 0.0], &[5.0, 6.0], "#111", "q\"1");
        let s = c.finish();
        assert!(s.starts_with("<svg"));
        assert!(s.ends_with("</svg>\n"));
        assert!(s.contains("a&lt;b") && s.contains("x &amp; y") && s.contains("q&quot;1"));
    }
}
