//! `spindle dag sim`: the task-scheduling experiments of the MR3 seed,
//! reproduced on the pure DAG cores of `spindle_dag`.
//!
//! One discrete-event driver (`driver`) runs the DAG AM's own session
//! core ([`Session`](spindle_dag::session::Session), which drives the real
//! TaskScheduler, ContainerScheduler and Autoscaler exactly as the AM
//! does) on a simulated cluster and clock, and turns its effects into
//! simulated events: clients submit DAGs one after another, containers
//! are granted by nodes, attempts end after their task's duration. The
//! experiments (`engine`) run it on a fixed pool of ContainerWorkers, one
//! ContainerGroup shared by every client. Task durations come from
//! TPC-DS-like DAGs built from the seed's vertex counts and sequential
//! times (`workload`).
//!
//! - [`Experiment::One`]: 16 clients each submit the same 17 queries
//!   (TPC-DS 25 to 40, with 39a and 39b) in a unique order; schemes
//!   `fifo` and `concurrent` with each vertex priority scheme, all on a
//!   common queue.
//! - [`Experiment::Two`]: 8 clients each submit one query 10 times (the
//!   seed's table of 8 queries); the same schemes plus `individual` queues.
//!
//! Every run is deterministic: the same options give byte-identical JSON.
//! The seed's claims are checked on the results ([`ExperimentReport::claims`]).
//!
//! The seed's experiments run on a fixed cluster. [`run_elastic`] (`spindle
//! dag sim --experiment elastic`) exercises the two other cores: the real
//! [`Autoscaler`](spindle_dag::autoscaler::Autoscaler) and the container
//! scheduler's recycling, on the same driver with a cluster whose nodes
//! appear after a provisioning delay and are reclaimed once empty: a burst
//! of clients then a quiet period on an autoscaled group, and two groups
//! of one kind under each recycling scheme ([`ElasticReport`]).
//!
//! ```no_run
//! use spindle_sim::dagsim::{run_experiment, Experiment, ExperimentOptions};
//!
//! let report = run_experiment(&ExperimentOptions::short(Experiment::One))?;
//! print!("{}", report.tables());
//! for claim in &report.claims {
//!     println!("{}: {}", claim.claim, claim.held);
//! }
//! # Ok::<(), spindle_sim::dagsim::DagSimError>(())
//! ```

mod driver;
mod elastic;
mod elastic_output;
mod elastic_report;
mod engine;
mod output;
mod workload;

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;
pub use spindle_dag::config::TaskQueueScheme;
use spindle_dag::config::{ConfigError, DagPriorityScheme, DagQueueScheme, TaskSchedulerConfig};
use spindle_dag::dag::VertexPriorityScheme;
use spindle_dag::{CoreError, InvariantViolation, Resource};

use crate::rng::Rng;
pub use elastic::{run_elastic, ElasticOptions};
pub use elastic_report::{
    burst_dags, ElasticClientReport, ElasticClusterReport, ElasticGroupResult, ElasticReport,
    ElasticRunReport, ElasticSize, MoveReport, ScaleEventReport, StateChangeReport, TimelinePoint,
};
use engine::{simulate, ClientPlan, Cluster, RunOutcome, RunSpec};
use workload::{build_query, QueryModel};
pub use workload::{QueryDef, EXPERIMENT_1_QUERIES, EXPERIMENT_2_QUERIES};

/// Why an experiment could not run.
#[derive(Debug, thiserror::Error)]
pub enum DagSimError {
    #[error("invalid experiment options: {0}")]
    Options(String),
    #[error("invalid workload: {0}")]
    Workload(String),
    #[error("a DAG core refused an input: {0}")]
    Core(#[from] CoreError),
    #[error("a DAG core's configuration is invalid: {0}")]
    Config(#[from] ConfigError),
    #[error("a DAG core is inconsistent (a bug in spindle-dag): {0}")]
    Invariant(#[from] InvariantViolation),
    #[error("simulation driver: {0}")]
    Driver(String),
    #[error("cannot write {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Which of the seed's experiments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Experiment {
    /// Every client submits the same set of queries, each in its own order.
    One,
    /// Every client submits its own query repeatedly.
    Two,
}

impl Experiment {
    pub fn number(self) -> u8 {
        match self {
            Experiment::One => 1,
            Experiment::Two => 2,
        }
    }

    pub fn from_number(n: u8) -> Result<Experiment, DagSimError> {
        match n {
            1 => Ok(Experiment::One),
            2 => Ok(Experiment::Two),
            _ => Err(DagSimError::Options(format!(
                "experiment {n} does not exist; the seed has experiments 1 and 2"
            ))),
        }
    }
}

impl fmt::Display for Experiment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "experiment {}", self.number())
    }
}

/// How big a run is. [`Size::full`] is the seed's experiment on
/// Spindle's cluster; [`Size::short`] a small form for tests and CI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    /// Clients (Beeline sessions).
    pub clients: u32,
    /// Experiment 1: how many of the 17 queries each client submits (the
    /// first ones of the list, each client in its own order).
    /// Experiment 2: how many times each client submits its query.
    pub dags_per_client: u32,
    /// ContainerWorkers in the fixed pool.
    pub workers: u32,
    /// Tasks one worker runs at once.
    pub slots_per_worker: u32,
}

impl Size {
    /// The seed's experiment: 16 clients x 17 queries, or 8 clients x 10
    /// runs, on 32 workers of 8 slots (256 concurrent tasks).
    pub fn full(experiment: Experiment) -> Size {
        match experiment {
            Experiment::One => Size {
                clients: 16,
                dags_per_client: 17,
                workers: 32,
                slots_per_worker: 8,
            },
            Experiment::Two => Size {
                clients: 8,
                dags_per_client: 10,
                workers: 32,
                slots_per_worker: 8,
            },
        }
    }

    /// A short form that runs in seconds in a debug build: 6 clients x 8
    /// queries, or 8 clients x 2 runs, on a cluster of 4 workers x 4 slots
    /// (the DAGs' task counts scale with the cluster's slots, so they
    /// shrink too).
    pub fn short(experiment: Experiment) -> Size {
        match experiment {
            Experiment::One => Size {
                clients: 6,
                dags_per_client: 8,
                workers: 4,
                slots_per_worker: 4,
            },
            Experiment::Two => Size {
                clients: 8,
                dags_per_client: 2,
                workers: 4,
                slots_per_worker: 4,
            },
        }
    }
}

/// What to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExperimentOptions {
    pub experiment: Experiment,
    /// Seeds the DAG shapes and task times and experiment 1's orders.
    pub seed: u64,
    pub size: Size,
    /// `mr3.taskattempt.queue.scheme` for every run: `indexed` (MR3's
    /// default: input-complete tasks jump ahead) or `basic`.
    pub task_queue_scheme: TaskQueueScheme,
    /// Check every core's invariants (and the driver's) after every step.
    pub check_invariants: bool,
}

impl ExperimentOptions {
    pub fn full(experiment: Experiment) -> ExperimentOptions {
        ExperimentOptions {
            experiment,
            seed: crate::DEFAULT_SEED,
            size: Size::full(experiment),
            task_queue_scheme: TaskQueueScheme::Indexed,
            check_invariants: false,
        }
    }

    pub fn short(experiment: Experiment) -> ExperimentOptions {
        ExperimentOptions {
            size: Size::short(experiment),
            ..ExperimentOptions::full(experiment)
        }
    }
}

/// One combination of the seed's scheduling keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scheme {
    /// The label of the seed's graph.
    pub label: &'static str,
    pub queue: DagQueueScheme,
    pub dag_priority: DagPriorityScheme,
    pub vertex_priority: VertexPriorityScheme,
}

impl Scheme {
    const fn concurrent(label: &'static str, vertex_priority: VertexPriorityScheme) -> Scheme {
        Scheme {
            label,
            queue: DagQueueScheme::Common,
            dag_priority: DagPriorityScheme::Concurrent,
            vertex_priority,
        }
    }

    fn task_config(&self, task_queue_scheme: TaskQueueScheme) -> TaskSchedulerConfig {
        TaskSchedulerConfig {
            queue_scheme: self.queue,
            dag_priority_scheme: self.dag_priority,
            vertex_priority_scheme: self.vertex_priority,
            task_queue_scheme,
            ..TaskSchedulerConfig::default()
        }
    }
}

const FIFO: Scheme = Scheme {
    label: "fifo",
    queue: DagQueueScheme::Common,
    dag_priority: DagPriorityScheme::Fifo,
    vertex_priority: VertexPriorityScheme::Intact,
};
const INDIVIDUAL: Scheme = Scheme {
    label: "individual",
    queue: DagQueueScheme::Individual,
    dag_priority: DagPriorityScheme::Fifo,
    vertex_priority: VertexPriorityScheme::Intact,
};
const CONCURRENT: [Scheme; 5] = [
    Scheme::concurrent("intact", VertexPriorityScheme::Intact),
    Scheme::concurrent("roots", VertexPriorityScheme::Roots),
    Scheme::concurrent("leaves", VertexPriorityScheme::Leaves),
    Scheme::concurrent("postorder", VertexPriorityScheme::Postorder),
    Scheme::concurrent("normalize", VertexPriorityScheme::Normalize),
];

/// The combinations the seed plots. Experiment 1: a common queue with
/// `fifo` (and `intact`), then `concurrent` with each vertex scheme.
/// Experiment 2 (whose observations also discuss `individual` queues):
/// the same plus `individual`.
pub fn schemes(experiment: Experiment) -> Vec<Scheme> {
    let mut out = vec![FIFO];
    if experiment == Experiment::Two {
        out.push(INDIVIDUAL);
    }
    out.extend(CONCURRENT);
    out
}

/// A query as simulated.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueryReport {
    pub name: String,
    pub vertices: u32,
    pub edges: u32,
    /// Map vertices scanning a fact table (the others scan dimensions).
    pub fact_scans: u32,
    pub tasks: u64,
    /// The seed's sequential time.
    pub sequential_s: f64,
    /// The query alone on the simulated cluster after calibration.
    pub simulated_sequential_s: f64,
    /// Sum of all task times.
    pub work_slot_s: f64,
}

impl QueryReport {
    /// What the report says of `model`, named `name`, which ran `alone_ms`
    /// alone on the simulated cluster after calibration: one place for
    /// every experiment's query table.
    fn of(name: String, model: &QueryModel, alone_ms: u64) -> QueryReport {
        QueryReport {
            name,
            vertices: model.spec.vertices.len() as u32,
            edges: model.spec.edges.len() as u32,
            fact_scans: model.fact_scans(),
            tasks: model.total_tasks(),
            sequential_s: model.def.sequential_s,
            simulated_sequential_s: secs(alone_ms),
            work_slot_s: secs(model.work_ms()),
        }
    }
}

/// The fixed cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClusterReport {
    pub workers: u32,
    pub slots_per_worker: u32,
    pub slots: u32,
    pub task_memory_mb: u64,
    pub task_vcores: u32,
}

/// One DAG a client ran.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunReport {
    pub query: String,
    pub submitted_s: f64,
    pub finished_s: f64,
}

/// One client's DAGs under one scheme.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClientReport {
    pub name: String,
    /// When its last DAG finished.
    pub completion_s: f64,
    pub mean_turnaround_s: f64,
    pub first_turnaround_s: f64,
    pub runs: Vec<RunReport>,
}

/// The outcome of one scheme combination.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SchemeResult {
    pub scheme: String,
    pub queue_scheme: String,
    pub dag_priority_scheme: String,
    pub vertex_priority_scheme: String,
    /// When the last client finished.
    pub total_time_s: f64,
    pub throughput_dags_per_hour: f64,
    /// Mean over all DAGs of finish minus submission.
    pub mean_turnaround_s: f64,
    /// Busy slot time over slots x total time.
    pub utilization: f64,
    /// Per client, in client order (the same as `clients[i].completion_s`).
    pub client_completion_s: Vec<f64>,
    pub clients: Vec<ClientReport>,
    /// Inputs handled by the cores.
    pub core_steps: u64,
    /// The queue status line of the tick with the most pending tasks.
    pub busiest_status_line: Option<String>,
}

/// Whether one of the seed's observations held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Claim {
    pub claim: String,
    pub held: bool,
    pub detail: String,
}

/// Everything one experiment produced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExperimentReport {
    pub experiment: u8,
    pub description: String,
    pub seed: u64,
    pub cluster: ClusterReport,
    pub dags_per_client: u32,
    pub queries: Vec<QueryReport>,
    pub results: Vec<SchemeResult>,
    pub claims: Vec<Claim>,
}

impl ExperimentReport {
    /// Pretty JSON, deterministic (byte-identical for the same options).
    pub fn to_json(&self) -> String {
        // Serialising plain data with string keys cannot fail.
        let mut s = serde_json::to_string_pretty(self).unwrap_or_default();
        s.push('\n');
        s
    }

    /// The human tables.
    pub fn tables(&self) -> String {
        output::tables(self)
    }

    /// The per-client progress chart (one panel per scheme).
    pub fn progress_svg(&self) -> String {
        output::progress_svg(self)
    }

    /// Writes `dag-sim-experiment-N.svg` into `dir` (created if missing).
    pub fn write_svg(&self, dir: &Path) -> Result<PathBuf, DagSimError> {
        let io = |source| DagSimError::Io {
            path: dir.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        let path = dir.join(format!("dag-sim-experiment-{}.svg", self.experiment));
        std::fs::write(&path, self.progress_svg()).map_err(|source| DagSimError::Io {
            path: path.clone(),
            source,
        })?;
        Ok(path)
    }

    pub fn result(&self, label: &str) -> Option<&SchemeResult> {
        self.results.iter().find(|r| r.scheme == label)
    }
}

fn secs(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

fn round4(v: f64) -> f64 {
    (v * 10_000.0).round() / 10_000.0
}

/// Runs every scheme combination of the experiment.
pub fn run_experiment(opts: &ExperimentOptions) -> Result<ExperimentReport, DagSimError> {
    let size = opts.size;
    if size.clients == 0 || size.dags_per_client == 0 {
        return Err(DagSimError::Options(
            "clients and DAGs per client must be at least 1".into(),
        ));
    }
    if size.workers == 0 || size.slots_per_worker == 0 {
        return Err(DagSimError::Options(
            "the cluster needs at least one worker with one slot".into(),
        ));
    }
    let cluster = Cluster {
        workers: size.workers,
        slots_per_worker: size.slots_per_worker,
        slot: Resource::new(4096, 1),
    };
    let e = u64::from(opts.experiment.number());
    let (defs, plans, description): (Vec<QueryDef>, Vec<ClientPlan>, String) = match opts.experiment
    {
        Experiment::One => {
            let n = size.dags_per_client as usize;
            if n > EXPERIMENT_1_QUERIES.len() {
                return Err(DagSimError::Options(format!(
                    "experiment 1 has {} queries; {n} per client asked",
                    EXPERIMENT_1_QUERIES.len()
                )));
            }
            let defs = EXPERIMENT_1_QUERIES[..n].to_vec();
            let orders = unique_orders(n, size.clients as usize, opts.seed)?;
            let plans = orders
                .into_iter()
                .enumerate()
                .map(|(i, queries)| ClientPlan {
                    name: format!("Beeline {}", i + 1),
                    queries,
                })
                .collect();
            let description = format!(
                "{} clients each submit the same {n} queries, each client in its own order",
                size.clients
            );
            (defs, plans, description)
        }
        Experiment::Two => {
            let n = size.clients as usize;
            if n > EXPERIMENT_2_QUERIES.len() {
                return Err(DagSimError::Options(format!(
                    "experiment 2 has {} clients; {n} asked",
                    EXPERIMENT_2_QUERIES.len()
                )));
            }
            let defs = EXPERIMENT_2_QUERIES[..n].to_vec();
            let plans = (0..n)
                .map(|i| ClientPlan {
                    name: format!("Beeline {}", i + 1),
                    queries: vec![i; size.dags_per_client as usize],
                })
                .collect();
            let description = format!(
                "{n} clients each submit their own query {} times",
                size.dags_per_client
            );
            (defs, plans, description)
        }
    };

    let mut queries = Vec::with_capacity(defs.len());
    let mut query_reports = Vec::with_capacity(defs.len());
    for (i, def) in defs.iter().enumerate() {
        let mut rng = Rng::stream(opts.seed, &[e, i as u64]);
        let mut model = build_query(*def, cluster.slots(), cluster.slot, &mut rng);
        let alone = calibrate(
            &mut model,
            cluster,
            opts.task_queue_scheme,
            opts.check_invariants,
        )?;
        query_reports.push(QueryReport::of(def.name.to_string(), &model, alone));
        queries.push(model);
    }

    let mut results = Vec::new();
    for scheme in schemes(opts.experiment) {
        let outcome = simulate(&RunSpec {
            queries: &queries,
            clients: &plans,
            cluster,
            task: scheme.task_config(opts.task_queue_scheme),
            check_invariants: opts.check_invariants,
        })?;
        results.push(scheme_result(&scheme, &outcome, &plans, &queries, cluster));
    }
    let claims = output::claims(opts.experiment, &results, &query_reports, size);
    Ok(ExperimentReport {
        experiment: opts.experiment.number(),
        description,
        seed: opts.seed,
        cluster: ClusterReport {
            workers: cluster.workers,
            slots_per_worker: cluster.slots_per_worker,
            slots: cluster.slots(),
            task_memory_mb: cluster.slot.memory_mb,
            task_vcores: cluster.slot.vcores,
        },
        dags_per_client: size.dags_per_client,
        queries: query_reports,
        results,
        claims,
    })
}

/// `clients` distinct random orders of `0..n`.
fn unique_orders(n: usize, clients: usize, seed: u64) -> Result<Vec<Vec<usize>>, DagSimError> {
    let possible = (1..=n as u64).try_fold(1u64, |acc, k| acc.checked_mul(k));
    if possible.is_some_and(|p| p < clients as u64) {
        return Err(DagSimError::Options(format!(
            "{clients} clients cannot each have a unique order of {n} queries"
        )));
    }
    let mut rng = Rng::stream(seed, &[1, 0x00C1_1E57]);
    let mut orders: Vec<Vec<usize>> = Vec::with_capacity(clients);
    while orders.len() < clients {
        let mut o: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = rng.index(i + 1);
            o.swap(i, j);
        }
        if !orders.contains(&o) {
            orders.push(o);
        }
    }
    Ok(orders)
}

/// Runs the query alone and rescales its task times until the run takes
/// the seed's sequential time; returns the final simulated time in ms.
fn calibrate(
    model: &mut QueryModel,
    cluster: Cluster,
    task_queue_scheme: TaskQueueScheme,
    check_invariants: bool,
) -> Result<u64, DagSimError> {
    let target_ms = model.def.sequential_s * 1000.0;
    let mut scale = 1000.0;
    let alone = |model: &QueryModel| -> Result<u64, DagSimError> {
        let clients = [ClientPlan {
            name: "sequential".into(),
            queries: vec![0],
        }];
        let out = simulate(&RunSpec {
            queries: std::slice::from_ref(model),
            clients: &clients,
            cluster,
            task: FIFO.task_config(task_queue_scheme),
            check_invariants,
        })?;
        Ok(out.end_ms.max(1))
    };
    for _ in 0..2 {
        let measured = alone(model)?;
        scale *= target_ms / measured as f64;
        model.apply_scale(scale);
    }
    alone(model)
}

fn scheme_result(
    scheme: &Scheme,
    outcome: &RunOutcome,
    plans: &[ClientPlan],
    queries: &[QueryModel],
    cluster: Cluster,
) -> SchemeResult {
    let mut clients = Vec::with_capacity(plans.len());
    let mut turnaround_sum = 0u64;
    let mut dags = 0u64;
    for (plan, runs) in plans.iter().zip(&outcome.runs) {
        let t: Vec<u64> = runs
            .iter()
            .map(|r| r.finished_ms - r.submitted_ms)
            .collect();
        turnaround_sum += t.iter().sum::<u64>();
        dags += t.len() as u64;
        clients.push(ClientReport {
            name: plan.name.clone(),
            completion_s: secs(runs.last().map_or(0, |r| r.finished_ms)),
            mean_turnaround_s: round4(secs(t.iter().sum::<u64>()) / (t.len().max(1) as f64)),
            first_turnaround_s: secs(t.first().copied().unwrap_or(0)),
            runs: runs
                .iter()
                .map(|r| RunReport {
                    query: queries[r.query].def.name.to_string(),
                    submitted_s: secs(r.submitted_ms),
                    finished_s: secs(r.finished_ms),
                })
                .collect(),
        });
    }
    let total = secs(outcome.end_ms);
    SchemeResult {
        scheme: scheme.label.to_string(),
        queue_scheme: scheme.queue.name().to_string(),
        dag_priority_scheme: scheme.dag_priority.name().to_string(),
        vertex_priority_scheme: scheme.vertex_priority.name().to_string(),
        total_time_s: total,
        throughput_dags_per_hour: round4(dags as f64 * 3600.0 / total.max(0.001)),
        mean_turnaround_s: round4(secs(turnaround_sum) / dags.max(1) as f64),
        utilization: round4(
            outcome.busy_slot_ms as f64
                / (f64::from(cluster.slots()) * (outcome.end_ms.max(1)) as f64),
        ),
        client_completion_s: clients.iter().map(|c| c.completion_s).collect(),
        clients,
        core_steps: outcome.steps,
        busiest_status_line: outcome.busiest_status_line.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_are_unique_permutations() {
        let o = unique_orders(5, 16, 3).expect("120 orders exist");
        assert_eq!(o.len(), 16);
        for (i, a) in o.iter().enumerate() {
            let mut s = a.clone();
            s.sort_unstable();
            assert_eq!(s, vec![0, 1, 2, 3, 4]);
            assert!(o[i + 1..].iter().all(|b| b != a));
        }
        assert!(matches!(
            unique_orders(2, 3, 1),
            Err(DagSimError::Options(_))
        ));
    }

    #[test]
    fn scheme_lists_follow_the_seed() {
        let one: Vec<&str> = schemes(Experiment::One).iter().map(|s| s.label).collect();
        assert_eq!(
            one,
            [
                "fifo",
                "intact",
                "roots",
                "leaves",
                "postorder",
                "normalize"
            ]
        );
        let two = schemes(Experiment::Two);
        assert_eq!(two.len(), 7);
        assert_eq!(two[1].queue, DagQueueScheme::Individual);
        assert!(two[2..]
            .iter()
            .all(|s| s.dag_priority == DagPriorityScheme::Concurrent));
    }

    #[test]
    fn bad_options_are_refused_with_a_reason() {
        let mut o = ExperimentOptions::short(Experiment::Two);
        o.size.clients = 9;
        let e = run_experiment(&o).expect_err("only 8 queries");
        assert!(e.to_string().contains("8 clients"), "{e}");
        assert!(Experiment::from_number(3).is_err());
    }
}
