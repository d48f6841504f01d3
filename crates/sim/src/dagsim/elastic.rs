//! `spindle dag sim --experiment elastic`: the Autoscaler and the
//! ContainerScheduler's recycling on a simulated elastic cluster.
//!
//! The seed's task-scheduling experiments run on a fixed cluster; this
//! scenario drives the other two cores. Nodes of a fixed number of worker
//! slots appear a provisioning delay after the cluster needs them and are
//! reclaimed once empty ([`NodeModel`]); the DAG AM's session core makes
//! every decision ([`driver`](super::driver)). Five runs:
//!
//! - `autoscaling`: one group (`All-In-One`) with autoscaling on: a burst
//!   of clients, each submitting DAGs back to back from time 0, then a
//!   quiet period. The autoscaler scales out during the burst and, after
//!   it, scales in node by node down to `mr3.auto.scale.in.min.hosts`.
//! - `recycling none|fifo|fair`: two ContainerGroups of one ContainerKind
//!   (`etl` from time 0, `reports` later), autoscaling off, each group
//!   starting the workers its pending tasks need (at most
//!   `spindle.dag.group.max.workers`), under each
//!   `mr3.container.scheduler.scheme`.
//! - `recycling fifo + autoscaling`: the same with autoscaling on, as the
//!   AM runs both together.
//!
//! The same options give byte-identical reports.

use std::collections::BTreeMap;

use spindle_dag::autoscaler::ScaleOutCause;
use spindle_dag::config::{keys, ContainerSchedulerScheme};
use spindle_dag::session::{keys as session_keys, SessionConfig};

use super::driver::{
    simulate, ClientStart, GroupPlan, NodeModel, ScaleAction, SimClient, SimOutcome, SimSpec,
};
use super::elastic_report::{
    burst_dags, ElasticClientReport, ElasticClusterReport, ElasticGroupResult, ElasticReport,
    ElasticRunReport, ElasticSize, MoveReport, ScaleEventReport, StateChangeReport, TimelinePoint,
    MIN_HOSTS, TASK,
};
use super::engine::Cluster;
use super::workload::{build_query, QueryModel};
use super::{
    calibrate, round4, secs, DagSimError, QueryDef, QueryReport, RunReport, TaskQueueScheme,
    EXPERIMENT_1_QUERIES, EXPERIMENT_2_QUERIES,
};
use crate::rng::Rng;

/// `mr3.check.memory.usage.event.interval.secs` of every run: the
/// autoscaler's sampling, fair rebalancing and the driver's tick.
pub const CHECK_INTERVAL_S: u64 = 5;
/// From asking for a node to the node taking containers.
pub const NODE_PROVISIONING_S: u64 = 45;
/// From a granted container to its worker registering.
pub const WORKER_START_S: u64 = 5;
/// A node without any worker for this long is reclaimed.
pub const EMPTY_NODE_RECLAIM_S: u64 = 30;
/// How long every run goes on after its last DAG.
pub const QUIET_PERIOD_S: u64 = 900;
/// `mr3.container.idle.timeout.ms`: how long an unclaimed stopped worker
/// waits in the reserve.
pub const RESERVE_TIMEOUT_S: u64 = 60;
/// The autoscaling run's background client goes on this long after the
/// burst's last client is done.
pub const BACKGROUND_AFTER_BURST_S: u64 = 600;
/// Its query (experiment 2's query 30), built for half a worker.
const BACKGROUND_QUERY: QueryDef = EXPERIMENT_2_QUERIES[3];
/// The recycling runs' second group starts this long after the first
/// group's last DAG: after an empty node is reclaimed, within the reserve's
/// timeout.
pub const HANDOVER_GAP_S: u64 = 40;

/// What to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElasticOptions {
    /// Seeds the DAG shapes, task times and the clients' query orders.
    pub seed: u64,
    pub size: ElasticSize,
    /// `mr3.taskattempt.queue.scheme` of every run.
    pub task_queue_scheme: TaskQueueScheme,
    /// Check every core's invariants (and the driver's) after every input.
    pub check_invariants: bool,
}

impl ElasticOptions {
    pub fn full() -> ElasticOptions {
        ElasticOptions {
            seed: crate::DEFAULT_SEED,
            size: ElasticSize::full(),
            task_queue_scheme: TaskQueueScheme::Indexed,
            check_invariants: false,
        }
    }

    pub fn short() -> ElasticOptions {
        ElasticOptions {
            size: ElasticSize::short(),
            ..ElasticOptions::full()
        }
    }
}

/// The runs, in report order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RunKind {
    Autoscaling,
    Recycling(ContainerSchedulerScheme),
    RecyclingWithAutoscaling,
}

const RUNS: [RunKind; 5] = [
    RunKind::Autoscaling,
    RunKind::Recycling(ContainerSchedulerScheme::None),
    RunKind::Recycling(ContainerSchedulerScheme::Fifo),
    RunKind::Recycling(ContainerSchedulerScheme::Fair),
    RunKind::RecyclingWithAutoscaling,
];

impl RunKind {
    fn label(self) -> String {
        match self {
            RunKind::Autoscaling => "autoscaling".into(),
            RunKind::Recycling(s) => format!("recycling {}", s.name()),
            RunKind::RecyclingWithAutoscaling => "recycling fifo + autoscaling".into(),
        }
    }

    fn scheme(self) -> ContainerSchedulerScheme {
        match self {
            RunKind::Autoscaling => ContainerSchedulerScheme::None,
            RunKind::Recycling(s) => s,
            RunKind::RecyclingWithAutoscaling => ContainerSchedulerScheme::Fifo,
        }
    }

    fn autoscaling(self) -> bool {
        !matches!(self, RunKind::Recycling(_))
    }
}

/// The keys every run gives the configuration parser.
fn run_keys(size: &ElasticSize, kind: RunKind, opts: &ElasticOptions) -> BTreeMap<String, String> {
    let worker_gb = size.worker().memory_mb / 1024;
    let max_workers = match kind {
        RunKind::Recycling(_) => size.group_max_workers,
        _ => size.max_workers,
    };
    let pairs: [(&str, String); 21] = [
        (
            keys::TASKATTEMPT_QUEUE_SCHEME,
            opts.task_queue_scheme.name().into(),
        ),
        (
            keys::CONTAINER_SCHEDULER_SCHEME,
            kind.scheme().name().into(),
        ),
        (
            keys::CHECK_MEMORY_USAGE_INTERVAL_SECS,
            CHECK_INTERVAL_S.to_string(),
        ),
        (
            keys::CONTAINER_IDLE_TIMEOUT_MS,
            (RESERVE_TIMEOUT_S * 1000).to_string(),
        ),
        (keys::ENABLE_AUTO_SCALING, kind.autoscaling().to_string()),
        (keys::MEMORY_USAGE_CHECK_SCHEME, "average".into()),
        (keys::MEMORY_USAGE_WINDOW_SECS, "60".into()),
        (keys::SCALE_OUT_THRESHOLD_PERCENT, "80".into()),
        (keys::SCALE_IN_THRESHOLD_PERCENT, "50".into()),
        (keys::SCALE_OUT_GRACE_PERIOD_SECS, "90".into()),
        (keys::SCALE_IN_DELAY_AFTER_SCALE_OUT_SECS, "30".into()),
        (keys::SCALE_IN_GRACE_PERIOD_SECS, "60".into()),
        (keys::SCALE_IN_MIN_HOSTS, MIN_HOSTS.to_string()),
        (keys::SCALE_IN_WAIT_DAG_FINISHED, "true".into()),
        (
            keys::SCALE_OUT_NUM_INITIAL_CONTAINERS,
            size.initial_workers.to_string(),
        ),
        (
            keys::SCALE_OUT_NUM_INCREMENT_CONTAINERS,
            size.increment_workers.to_string(),
        ),
        (keys::SCALE_IN_NUM_DECREMENT_HOSTS, "1".into()),
        (
            keys::WORKER_TOTAL_MAX_MEMORY_GB,
            (u64::from(size.max_workers) * worker_gb).to_string(),
        ),
        (
            session_keys::WORKER_MEMORY_MB,
            size.worker().memory_mb.to_string(),
        ),
        (
            session_keys::WORKER_VCORES,
            size.worker().vcores.to_string(),
        ),
        (session_keys::GROUP_MAX_WORKERS, max_workers.to_string()),
    ];
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// `count` of `0..n` in a random order of the client's own stream.
fn client_queries(seed: u64, stream: u64, client: u64, n: usize, count: usize) -> Vec<usize> {
    let mut rng = Rng::stream(seed, &[3, stream, client]);
    let mut o: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = rng.index(i + 1);
        o.swap(i, j);
    }
    o.into_iter().cycle().take(count).collect()
}

/// Runs the elastic scenario: its five runs and the checks on them.
pub fn run_elastic(opts: &ElasticOptions) -> Result<ElasticReport, DagSimError> {
    let size = opts.size;
    let n = size.queries as usize;
    if n == 0 || n > EXPERIMENT_1_QUERIES.len() {
        return Err(DagSimError::Options(format!(
            "the clients draw from 1 to {} of experiment 1's queries; {n} asked",
            EXPERIMENT_1_QUERIES.len()
        )));
    }
    if size.slots_per_worker == 0
        || size.workers_per_node == 0
        || size.reference_workers == 0
        || size.max_workers == 0
    {
        return Err(DagSimError::Options(
            "workers need slots, nodes need workers and the cluster at least one worker".into(),
        ));
    }
    let reference = Cluster {
        workers: size.reference_workers,
        slots_per_worker: size.slots_per_worker,
        slot: TASK,
    };
    let mut queries: Vec<QueryModel> = Vec::with_capacity(n);
    let mut query_reports = Vec::with_capacity(n);
    for (i, def) in EXPERIMENT_1_QUERIES[..n].iter().enumerate() {
        let mut rng = Rng::stream(opts.seed, &[3, i as u64]);
        let mut model = build_query(*def, reference.slots(), TASK, &mut rng);
        let alone = calibrate(
            &mut model,
            reference,
            opts.task_queue_scheme,
            opts.check_invariants,
        )?;
        query_reports.push(QueryReport::of(def.name.to_string(), &model, alone));
        queries.push(model);
    }
    // The background client's query: built for half a worker, so that it
    // stays light even on the smallest cluster.
    let one_worker = Cluster {
        workers: 1,
        slots_per_worker: size.slots_per_worker.div_ceil(2),
        slot: TASK,
    };
    let def = BACKGROUND_QUERY;
    let mut rng = Rng::stream(opts.seed, &[3, 0xBAC6]);
    let mut model = build_query(def, one_worker.slots(), TASK, &mut rng);
    let alone = calibrate(
        &mut model,
        one_worker,
        opts.task_queue_scheme,
        opts.check_invariants,
    )?;
    query_reports.push(QueryReport::of(
        format!(
            "{} (background, for {} slots)",
            def.name,
            one_worker.slots()
        ),
        &model,
        alone,
    ));
    queries.push(model);

    let max_nodes = size.max_workers.div_ceil(size.workers_per_node) * 2 + 2;
    let nodes = NodeModel {
        workers_per_node: size.workers_per_node,
        provision_ms: NODE_PROVISIONING_S * 1000,
        worker_start_ms: WORKER_START_S * 1000,
        reclaim_after_ms: Some(EMPTY_NODE_RECLAIM_S * 1000),
        initial_nodes: 1,
        max_nodes,
    };
    let worker = size.worker();
    let mut runs = Vec::with_capacity(RUNS.len());
    for kind in RUNS {
        let (groups, clients) = match kind {
            RunKind::Autoscaling => {
                let groups = vec![GroupPlan {
                    name: "All-In-One".into(),
                    worker,
                    default: true,
                }];
                let clients = (0..size.burst_clients)
                    .map(|c| SimClient {
                        name: format!("Beeline {}", c + 1),
                        group: 0,
                        start: ClientStart::At { ms: 0 },
                        queries: client_queries(
                            opts.seed,
                            0,
                            u64::from(c),
                            n,
                            burst_dags(&size, c) as usize,
                        ),
                        background_until_ms: None,
                    })
                    .chain(std::iter::once(SimClient {
                        name: "background".into(),
                        group: 0,
                        start: ClientStart::At { ms: 0 },
                        queries: vec![n],
                        background_until_ms: Some(BACKGROUND_AFTER_BURST_S * 1000),
                    }))
                    .collect::<Vec<_>>();
                (groups, clients)
            }
            _ => {
                let groups: Vec<GroupPlan> = ["etl", "reports"]
                    .into_iter()
                    .map(|name| GroupPlan {
                        name: name.into(),
                        worker,
                        default: false,
                    })
                    .collect();
                let mut clients = Vec::new();
                let starts = [
                    ClientStart::At { ms: 0 },
                    ClientStart::AfterGroup {
                        group: 0,
                        delay_ms: HANDOVER_GAP_S * 1000,
                    },
                ];
                for (g, start) in starts.into_iter().enumerate() {
                    for c in 0..size.recycling_clients_per_group {
                        clients.push(SimClient {
                            name: format!("{} {}", groups[g].name, c + 1),
                            group: g,
                            start,
                            queries: client_queries(
                                opts.seed,
                                1 + g as u64,
                                u64::from(c),
                                n,
                                size.recycling_dags_per_client as usize,
                            ),
                            background_until_ms: None,
                        });
                    }
                }
                (groups, clients)
            }
        };
        let keys = run_keys(&size, kind, opts);
        let config = SessionConfig::from_map(&keys).map_err(DagSimError::Options)?;
        let outcome = simulate(&SimSpec {
            queries: &queries,
            groups: &groups,
            clients: &clients,
            nodes,
            config,
            tick_ms: CHECK_INTERVAL_S * 1000,
            quiet_ms: QUIET_PERIOD_S * 1000,
            check_invariants: opts.check_invariants,
        })?;
        runs.push(run_report(
            kind, keys, &groups, &clients, &queries, &outcome, size,
        ));
    }
    let claims = super::elastic_output::claims(&runs, size);
    Ok(ElasticReport {
        scenario: "elastic".into(),
        description: format!(
            "a burst of {} clients x up to {} DAGs, a background client of one small DAG at a \
             time until {} s after the burst, then {} s of quiet, on an autoscaled group; two \
             groups of one kind ({} clients x {} DAGs each, the second starting {} s after the \
             first group's last DAG) under each recycling scheme",
            size.burst_clients,
            size.burst_dags_per_client,
            BACKGROUND_AFTER_BURST_S,
            QUIET_PERIOD_S,
            size.recycling_clients_per_group,
            size.recycling_dags_per_client,
            HANDOVER_GAP_S
        ),
        seed: opts.seed,
        cluster: ElasticClusterReport {
            workers_per_node: size.workers_per_node,
            slots_per_worker: size.slots_per_worker,
            worker_memory_mb: worker.memory_mb,
            worker_vcores: worker.vcores,
            task_memory_mb: TASK.memory_mb,
            task_vcores: TASK.vcores,
            node_provisioning_s: NODE_PROVISIONING_S,
            worker_start_s: WORKER_START_S,
            empty_node_reclaimed_after_s: EMPTY_NODE_RECLAIM_S,
            initial_nodes: nodes.initial_nodes,
            max_nodes,
            reference_workers: size.reference_workers,
            quiet_period_s: QUIET_PERIOD_S,
        },
        min_hosts: MIN_HOSTS,
        queries: query_reports,
        runs,
        claims,
    })
}

fn percent(bp: Option<u64>) -> Option<f64> {
    bp.map(|b| b as f64 / 100.0)
}

fn run_report(
    kind: RunKind,
    keys: BTreeMap<String, String>,
    groups: &[GroupPlan],
    clients: &[SimClient],
    queries: &[QueryModel],
    o: &SimOutcome,
    size: ElasticSize,
) -> ElasticRunReport {
    let name = |g: usize| groups[g].name.clone();
    let mut client_reports = Vec::with_capacity(clients.len());
    let mut per_group: Vec<Vec<(u64, u64)>> = vec![Vec::new(); groups.len()];
    for (plan, runs) in clients.iter().zip(&o.runs) {
        for r in runs {
            per_group[plan.group].push((r.finished_ms - r.submitted_ms, r.finished_ms));
        }
        client_reports.push(ElasticClientReport {
            name: plan.name.clone(),
            group: name(plan.group),
            completion_s: secs(runs.last().map_or(0, |r| r.finished_ms)),
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
    let stats = |v: &[(u64, u64)]| {
        let n = v.len().max(1) as f64;
        (
            round4(secs(v.iter().map(|x| x.0).sum()) / n),
            secs(v.iter().map(|x| x.0).max().unwrap_or(0)),
            secs(v.iter().map(|x| x.1).max().unwrap_or(0)),
        )
    };
    let group_results: Vec<ElasticGroupResult> = per_group
        .iter()
        .enumerate()
        .map(|(g, v)| {
            let (mean, max, last) = stats(v);
            ElasticGroupResult {
                name: name(g),
                dags: v.len() as u32,
                mean_turnaround_s: mean,
                max_turnaround_s: max,
                last_finished_s: last,
            }
        })
        .collect();
    let all: Vec<(u64, u64)> = per_group.concat();
    let (mean, max, _) = stats(&all);
    let c = o.counters;
    let scale_events: Vec<ScaleEventReport> = o
        .scale_events
        .iter()
        .map(|e| {
            let (action, workers, recycled, hosts) = match &e.action {
                ScaleAction::Request {
                    count,
                    cause,
                    recycled,
                } => (
                    match cause {
                        ScaleOutCause::Initial => "initial",
                        ScaleOutCause::Usage => "scale-out",
                    },
                    *count,
                    *recycled,
                    Vec::new(),
                ),
                ScaleAction::Cancel { count } => ("cancel", *count, 0, Vec::new()),
                ScaleAction::Release { hosts, workers } => ("scale-in", *workers, 0, hosts.clone()),
            };
            ScaleEventReport {
                at_s: secs(e.at_ms),
                group: name(e.group),
                action: action.into(),
                workers,
                recycled,
                hosts,
                usage_percent: percent(e.usage_bp),
            }
        })
        .collect();
    let first = |action: &str| {
        scale_events
            .iter()
            .find(|e| e.action == action)
            .map(|e| e.at_s)
    };
    let last_scale_in = scale_events
        .iter()
        .rev()
        .find(|e| e.action == "scale-in")
        .map(|e| e.at_s);
    let slots = f64::from(size.slots_per_worker);
    ElasticRunReport {
        run: kind.label(),
        description: match kind {
            RunKind::Autoscaling => {
                "one autoscaled group: a burst of clients, then quiet".to_string()
            }
            RunKind::Recycling(s) => format!(
                "two groups of one kind, workers on demand, mr3.container.scheduler.scheme = {}",
                s.name()
            ),
            RunKind::RecyclingWithAutoscaling => {
                "two groups of one kind, fifo recycling, each group autoscaled".to_string()
            }
        },
        container_scheduler_scheme: kind.scheme().name().to_string(),
        autoscaling: kind.autoscaling(),
        keys,
        groups: group_results,
        scale_outs: c.scale_outs,
        initial_requests: c.initial_requests,
        scale_ins: c.scale_ins,
        scale_out_cancels: c.scale_out_cancels,
        containers_requested: c.containers_requested,
        requests_cancelled: c.requests_cancelled,
        requests_recycled: c.requests_recycled,
        requests_during_scale_in: o.requests.iter().filter(|r| r.during_scale_in).count() as u32,
        workers_started: c.workers_started,
        workers_exited: c.workers_exited,
        released_by_scale_in: c.released_by_scale_in,
        released_after_waiting: c.released_after_waiting,
        longest_release_wait_s: secs(c.longest_release_wait_ms),
        peak_workers: o.peak_workers,
        final_workers: o.final_workers,
        peak_nodes: o.peak_nodes,
        final_nodes: o.final_nodes,
        nodes_provisioned: c.nodes_provisioned,
        nodes_reclaimed: c.nodes_reclaimed,
        node_seconds: secs(o.node_ms),
        worker_seconds: secs(o.worker_ms),
        slot_utilization: round4(o.busy_ms as f64 / (o.worker_ms.max(1) as f64 * slots)),
        migrations: c.migrations,
        graceful_stops: c.graceful_stops,
        attempts_killed: c.attempts_killed,
        dags: all.len() as u32,
        mean_turnaround_s: mean,
        max_turnaround_s: max,
        last_dag_finished_s: secs(o.last_dag_ms),
        burst_end_s: secs(o.foreground_done_ms),
        end_s: secs(o.end_ms),
        first_scale_out_s: first("scale-out"),
        first_scale_in_s: first("scale-in"),
        last_scale_in_s: last_scale_in,
        core_steps: o.steps,
        scale_events,
        state_changes: o
            .state_changes
            .iter()
            .map(|s| StateChangeReport {
                at_s: secs(s.at_ms),
                group: name(s.group),
                state: s.state.to_string(),
            })
            .collect(),
        moves: o
            .moves
            .iter()
            .map(|m| MoveReport {
                at_s: secs(m.at_ms),
                worker: m.worker.clone(),
                from: m.from.map(name),
                to: name(m.to),
            })
            .collect(),
        clients: client_reports,
        timeline: o
            .samples
            .iter()
            .map(|s| TimelinePoint {
                at_s: secs(s.at_ms),
                nodes: s.nodes,
                workers: s.workers.clone(),
                reserve: s.reserve,
                memory_usage: if s.capacity_mb == 0 {
                    0.0
                } else {
                    s.used_mb as f64 / s.capacity_mb as f64
                },
                states: s.states.clone(),
                window_usage: s
                    .usage_bp
                    .iter()
                    .map(|u| u.map(|b| b as f64 / 10_000.0))
                    .collect(),
            })
            .collect(),
    }
}
