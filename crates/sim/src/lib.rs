//! `spindle sim`: a discrete-event cluster simulator around the real
//! scheduler core.
//!
//! The simulator drives [`spindle_scheduler::Scheduler`] — the same code
//! the ResourceManager runs, not a model of it — with the same
//! [`spindle_scheduler::Input`]s the RM feeds it, on a simulated clock in
//! milliseconds: NodeManagers that heartbeat (with jitter) and report
//! finished containers, ApplicationMasters that ask for containers with
//! locality preferences and run tasks in them (MapReduce-like maps then
//! reduces, Spark-like executors, long-running services), the RM's
//! continuous scheduling passes, an autoscaler that adds nodes when
//! requests wait and removes idle ones, and optionally chaos (lost nodes,
//! crashed AMs, late heartbeats) with the core's invariants checked after
//! every step.
//!
//! Workloads come from a JSON or YAML workload file ([`WorkloadSpec`], described
//! in `docs/sim.md`) or unchanged Hadoop SLS inputs (trace, node file,
//! synthetic-load file). Every run has a seed; the same workload and seed
//! give byte-identical outputs.
//!
//! ```no_run
//! use spindle_sim::{run, SimOptions, WorkloadSource};
//!
//! let report = run(SimOptions::new(WorkloadSource::File("conf/sim/packing-example.json".into())))?;
//! print!("{}", report.summary_json());
//! report.write_outputs(std::path::Path::new("sim-out"))?;
//! # Ok::<(), spindle_sim::SimError>(())
//! ```

mod askbook;
pub mod bench;
pub mod dagsim;
mod engine;
mod error;
mod model;
mod report;
mod rng;
mod sls;
pub mod spec;

use std::fmt::Write as _;

use serde::Serialize;
pub use spindle_scheduler::NodeSelectionKind;

pub use error::SimError;
pub use model::{
    AppKind, ClusterModel, ElasticModel, HeartbeatMode, JobPlan, NodeDef, Pool, TaskLocality,
    TaskPlan, Workload, WorkloadSource,
};
pub use report::{LocalityCounts, SamplePoint, SimReport, Summary};
pub use spec::WorkloadSpec;

/// Seed of runs that give none (and whose workload names none).
pub const DEFAULT_SEED: u64 = 1;

/// Whether to draw a progress bar on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Progress {
    /// Only when stderr is a terminal.
    #[default]
    Auto,
    Always,
    Never,
}

/// Fault injection. While chaos lasts, nodes are lost (and come back),
/// AMs crash and heartbeats are late; the core's invariants are checked
/// after every step. Then a liveness phase runs with no new faults, and
/// every application must finish (succeed, or fail after its attempts)
/// before it ends, or the run fails with its seed.
#[derive(Debug, Clone, PartialEq)]
pub struct ChaosOptions {
    /// Mean rate of node losses over the whole cluster.
    pub node_loss_per_hour: f64,
    /// A lost node registers again this long after.
    pub node_return_after_ms: u64,
    /// Mean rate of ApplicationMaster crashes over all running AMs.
    pub am_crash_per_hour: f64,
    /// Chance that a heartbeat is late...
    pub heartbeat_delay_probability: f64,
    /// ... by up to this much.
    pub heartbeat_delay_max_ms: u64,
    /// When chaos stops; default the later of the last arrival and the
    /// horizon, at least 30 minutes.
    pub until_ms: Option<u64>,
    /// How long the liveness phase may take.
    pub liveness_timeout_ms: u64,
}

impl Default for ChaosOptions {
    fn default() -> Self {
        ChaosOptions {
            node_loss_per_hour: 6.0,
            node_return_after_ms: 120_000,
            am_crash_per_hour: 6.0,
            heartbeat_delay_probability: 0.02,
            heartbeat_delay_max_ms: 10_000,
            until_ms: None,
            liveness_timeout_ms: 12 * 3600 * 1000,
        }
    }
}

/// How to run one simulation.
#[derive(Debug, Clone)]
pub struct SimOptions {
    pub workload: WorkloadSource,
    /// `None`: the workload's `seed`, else [`DEFAULT_SEED`].
    pub seed: Option<u64>,
    /// Overrides the workload's `scheduler.placement`.
    pub placement: Option<NodeSelectionKind>,
    /// Overrides the workload's `cluster.heartbeat_mode`.
    pub heartbeat_mode: Option<HeartbeatMode>,
    /// Overrides the workload's `sample_interval_s`.
    pub sample_interval_ms: Option<u64>,
    pub chaos: Option<ChaosOptions>,
    /// Check the core's invariants (and that the simulator and the core
    /// agree) after every step. Always on with chaos. Costs O(state) per
    /// step: for small clusters.
    pub check_invariants: bool,
    pub progress: Progress,
}

impl SimOptions {
    pub fn new(workload: WorkloadSource) -> SimOptions {
        SimOptions {
            workload,
            seed: None,
            placement: None,
            heartbeat_mode: None,
            sample_interval_ms: None,
            chaos: None,
            check_invariants: false,
            progress: Progress::Auto,
        }
    }
}

/// Loads the workload as `opts` would run it (overrides applied).
pub fn load(opts: &SimOptions) -> Result<(Workload, u64), SimError> {
    // The seed may come from the workload itself; loading twice is cheap
    // and keeps generation tied to the seed actually used.
    let provisional = opts.seed.unwrap_or(DEFAULT_SEED);
    let mut w = opts.workload.load(provisional)?;
    let seed = opts.seed.or(w.seed).unwrap_or(DEFAULT_SEED);
    if seed != provisional {
        w = opts.workload.load(seed)?;
    }
    if let Some(p) = opts.placement {
        w.scheduler.node_selection = p;
    }
    if let Some(m) = opts.heartbeat_mode {
        w.cluster.heartbeat_mode = m;
    }
    if let Some(s) = opts.sample_interval_ms {
        w.sample_interval_ms = s.max(1);
    }
    Ok((w, seed))
}

/// Runs one simulation.
pub fn run(opts: SimOptions) -> Result<SimReport, SimError> {
    let (w, seed) = load(&opts)?;
    run_workload(&w, seed, &opts)
}

/// Runs an already loaded workload with `opts`' run settings (chaos,
/// checks, progress).
pub fn run_workload(w: &Workload, seed: u64, opts: &SimOptions) -> Result<SimReport, SimError> {
    let progress = match opts.progress {
        Progress::Always => true,
        Progress::Never => false,
        Progress::Auto => engine::stderr_is_terminal(),
    };
    let settings = engine::Settings {
        seed,
        check_invariants: opts.check_invariants || opts.chaos.is_some(),
        chaos: opts.chaos.clone(),
        progress,
    };
    engine::Engine::new(w, settings)?.run()
}

/// Runs `opts` with chaos once per seed; stops at the first failing seed
/// (the error names it). Returns the seeds that passed.
pub fn chaos_sweep(
    opts: &SimOptions,
    seeds: impl IntoIterator<Item = u64>,
) -> Result<Vec<u64>, SimError> {
    let mut passed = Vec::new();
    for seed in seeds {
        let mut o = opts.clone();
        o.seed = Some(seed);
        if o.chaos.is_none() {
            o.chaos = Some(ChaosOptions::default());
        }
        run(o)?;
        passed.push(seed);
    }
    Ok(passed)
}

/// Spread against packing on the same workload and seed.
#[derive(Debug, Clone, Serialize)]
pub struct PlacementComparison {
    pub spread: Summary,
    pub packing: Summary,
    /// `1 - packing / spread` node-hours, in percent (positive: packing
    /// saves).
    pub node_hours_saving_pct: f64,
    /// `1 - packing / spread` throughput (completed applications per hour
    /// of makespan), in percent (positive: packing is slower).
    pub throughput_cost_pct: f64,
    /// `packing / spread - 1` mean turnaround, in percent.
    pub turnaround_mean_change_pct: f64,
    /// `packing / spread - 1` p95 turnaround, in percent.
    pub turnaround_p95_change_pct: f64,
}

fn pct(a: f64, b: f64) -> f64 {
    if b != 0.0 {
        ((a / b - 1.0) * 100.0 * 1000.0).round() / 1000.0
    } else {
        0.0
    }
}

impl PlacementComparison {
    /// The comparison as one JSON object.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self)
            .unwrap_or_else(|e| format!("{{\"error\":\"comparison serialization failed: {e}\"}}"));
        s.push('\n');
        s
    }

    /// A small table for people.
    pub fn render_text(&self) -> String {
        let (s, p) = (&self.spread, &self.packing);
        let mut out = String::new();
        let _ = writeln!(out, "{} (seed {}): spread vs packing", s.workload, s.seed);
        let _ = writeln!(out, "{:<28} {:>14} {:>14}", "", "spread", "packing");
        let rows: [(&str, f64, f64); 9] = [
            ("node-hours", s.node_hours, p.node_hours),
            ("utilization (mean)", s.utilization_mean, p.utilization_mean),
            (
                "throughput (apps/h)",
                s.throughput_apps_per_hour,
                p.throughput_apps_per_hour,
            ),
            (
                "turnaround mean (s)",
                s.turnaround_s_mean,
                p.turnaround_s_mean,
            ),
            ("turnaround p50 (s)", s.turnaround_s_p50, p.turnaround_s_p50),
            ("turnaround p95 (s)", s.turnaround_s_p95, p.turnaround_s_p95),
            ("nodes max", s.nodes_max as f64, p.nodes_max as f64),
            ("nodes added", s.nodes_added as f64, p.nodes_added as f64),
            (
                "apps completed",
                s.apps_completed as f64,
                p.apps_completed as f64,
            ),
        ];
        for (name, a, b) in rows {
            let _ = writeln!(out, "{name:<28} {a:>14.3} {b:>14.3}");
        }
        let _ = writeln!(
            out,
            "packing saves {:.1}% node-hours at {:.1}% throughput cost (mean turnaround {:+.1}%, p95 {:+.1}%)",
            self.node_hours_saving_pct,
            self.throughput_cost_pct,
            self.turnaround_mean_change_pct,
            self.turnaround_p95_change_pct
        );
        out
    }
}

/// Runs the workload of `opts` twice, with spread and with packing
/// placement (everything else, seed included, the same), and compares
/// node-hours, throughput and turnaround. The workload's packing settings
/// (threshold, minimum nodes) apply to the packing run.
pub fn compare_placements(opts: &SimOptions) -> Result<PlacementComparison, SimError> {
    Ok(compare_placement_runs(opts)?.comparison)
}

/// A placement comparison with the full reports of its two runs (time
/// series and charts included), so nothing has to run again to write
/// them.
#[derive(Debug, Clone)]
pub struct PlacementRuns {
    pub comparison: PlacementComparison,
    pub spread: SimReport,
    pub packing: SimReport,
}

/// [`compare_placements`], keeping both runs' reports.
pub fn compare_placement_runs(opts: &SimOptions) -> Result<PlacementRuns, SimError> {
    let mut spread_opts = opts.clone();
    spread_opts.placement = Some(NodeSelectionKind::Spread);
    let mut packing_opts = opts.clone();
    packing_opts.placement = Some(NodeSelectionKind::Packing);
    let spread_report = run(spread_opts)?;
    let packing_report = run(packing_opts)?;
    let spread = spread_report.summary.clone();
    let packing = packing_report.summary.clone();
    let comparison = PlacementComparison {
        // `+ 0.0` turns a negated zero into 0.0, so "no change" never prints as "-0.0".
        node_hours_saving_pct: -pct(packing.node_hours, spread.node_hours) + 0.0,
        throughput_cost_pct: -pct(
            packing.throughput_apps_per_hour,
            spread.throughput_apps_per_hour,
        ) + 0.0,
        turnaround_mean_change_pct: pct(packing.turnaround_s_mean, spread.turnaround_s_mean),
        turnaround_p95_change_pct: pct(packing.turnaround_s_p95, spread.turnaround_s_p95),
        spread,
        packing,
    };
    Ok(PlacementRuns {
        comparison,
        spread: spread_report,
        packing: packing_report,
    })
}
