//! `spindle bench scheduler`: the scheduler core's decision throughput.
//!
//! Builds a cluster of `nodes` nodes (64 GB, 64 vcores each, racks of 100),
//! `apps` running applications and a queue tree for the policy — FIFO: one
//! queue; capacity and fair: three levels, 4 departments × 5 teams × 5
//! leaves — then asks for `containers` one-gigabyte containers (spread
//! evenly over the applications, on `*`) and runs the core's continuous
//! passes ([`Scheduler::schedule`], at most `max_containers_per_pass`
//! each, as the RM does) until everything is placed. Every container stays
//! running, so the run ends with `containers` live allocations (the memory
//! figure is taken then). A second phase times node heartbeats with
//! nothing left to place (the cost every NodeManager heartbeat pays).
//!
//! What is measured:
//! - `allocations_per_sec`: containers placed / time spent inside
//!   `schedule` calls;
//! - `decision_latency_us_p50/p99`: the duration of one `schedule` call
//!   (one pass, up to 1,000 decisions) — the time other inputs wait behind
//!   the scheduler; `allocation_us_mean` is per container;
//! - `heartbeat_latency_us_p50/p99`: one node heartbeat;
//! - `rss_mb`: the process's resident memory with all containers running
//!   (`VmRSS`), `peak_rss_mb` its high-water mark (`VmHWM`), from
//!   `/proc/self/status` (0 where that file does not exist).
//!
//! Timings are measured here, never asserted anywhere.

use std::time::{Duration, Instant};

use serde::Serialize;
use spindle_common::{ApplicationAttemptId, ApplicationId, NodeId, Resource};
pub use spindle_scheduler::SchedulerKind;
use spindle_scheduler::{
    AppOrdering, Input, LocalityDelay, NodeSelectionKind, NodeUpdate, PackingConfig, QueueConfig,
    QueueShare, QueueTreeConfig, ResourceAsk, Scheduler, SchedulerConfig, ANY,
};

/// Nodes per rack.
const RACK_SIZE: usize = 100;
/// Memory and vcores of every node.
const NODE_MB: i64 = 64 * 1024;
const NODE_VCORES: i32 = 64;
/// Heartbeats timed in the second phase (at most one per node).
const HEARTBEAT_SAMPLES: usize = 10_000;

/// What to benchmark.
#[derive(Debug, Clone)]
pub struct SchedulerBenchOptions {
    pub nodes: usize,
    pub apps: usize,
    pub policy: SchedulerKind,
    pub placement: NodeSelectionKind,
    /// Containers asked for (and left running), over all applications.
    pub containers: usize,
}

/// The figures of one run.
#[derive(Debug, Clone, Serialize)]
pub struct SchedulerBenchReport {
    pub nodes: usize,
    pub apps: usize,
    pub leaf_queues: usize,
    pub policy: String,
    pub placement: String,
    pub containers_asked: usize,
    pub containers_allocated: usize,
    pub passes: usize,
    pub allocations_per_sec: f64,
    pub allocation_us_mean: f64,
    pub decision_latency_us_p50: f64,
    pub decision_latency_us_p99: f64,
    pub decision_latency_us_max: f64,
    pub heartbeat_latency_us_p50: f64,
    pub heartbeat_latency_us_p99: f64,
    pub rss_mb: f64,
    pub peak_rss_mb: f64,
    pub setup_s: f64,
}

impl SchedulerBenchReport {
    /// One JSON object, newline-terminated.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string(self)
            .unwrap_or_else(|e| format!("{{\"error\":\"report serialization failed: {e}\"}}"));
        s.push('\n');
        s
    }

    /// A few lines for people.
    pub fn to_text(&self) -> String {
        format!(
            "scheduler bench: {} nodes, {} apps in {} leaf queue(s), {} policy, {} placement\n\
             placed {} of {} containers in {} passes: {:.0} allocations/s ({:.2} µs each)\n\
             pass latency p50 {:.0} µs, p99 {:.0} µs, max {:.0} µs\n\
             node heartbeat with nothing to place: p50 {:.1} µs, p99 {:.1} µs\n\
             memory with {} containers running: rss {:.0} MB (peak {:.0} MB); setup {:.2} s\n",
            self.nodes,
            self.apps,
            self.leaf_queues,
            self.policy,
            self.placement,
            self.containers_allocated,
            self.containers_asked,
            self.passes,
            self.allocations_per_sec,
            self.allocation_us_mean,
            self.decision_latency_us_p50,
            self.decision_latency_us_p99,
            self.decision_latency_us_max,
            self.heartbeat_latency_us_p50,
            self.heartbeat_latency_us_p99,
            self.containers_allocated,
            self.rss_mb,
            self.peak_rss_mb,
            self.setup_s,
        )
    }
}

/// Why a bench could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("invalid bench setting: {0}")]
    Invalid(String),
    #[error("the scheduler refused its configuration: {0}")]
    Config(#[from] spindle_scheduler::ConfigError),
    #[error("the scheduler refused an input: {0}")]
    Scheduler(#[from] spindle_scheduler::SchedulerError),
}

fn share(policy: SchedulerKind, pct: f64) -> QueueShare {
    match policy {
        SchedulerKind::Fair => QueueShare::Fair {
            weight: 1.0,
            min: None,
            max: None,
        },
        _ => QueueShare::Capacity {
            capacity_pct: pct,
            maximum_pct: 100.0,
        },
    }
}

/// The policy's queue tree and its leaves' paths.
fn queue_tree(policy: SchedulerKind) -> (QueueTreeConfig, Vec<String>) {
    if policy == SchedulerKind::Fifo {
        return (QueueTreeConfig::fifo(), vec!["root.default".to_string()]);
    }
    let mut leaves = Vec::new();
    let departments = (0..4)
        .map(|d| {
            let teams = (0..5)
                .map(|t| {
                    let children = (0..5)
                        .map(|l| {
                            let name = format!("l{d}{t}{l}");
                            leaves.push(format!("root.d{d}.t{d}{t}.{name}"));
                            let mut leaf = QueueConfig::leaf(name, share(policy, 20.0));
                            leaf.user_limit_factor = None;
                            leaf
                        })
                        .collect();
                    QueueConfig::parent(format!("t{d}{t}"), share(policy, 20.0), children)
                })
                .collect();
            QueueConfig::parent(format!("d{d}"), share(policy, 25.0), teams)
        })
        .collect();
    let mut root = QueueConfig::parent("root", share(policy, 100.0), departments);
    if policy == SchedulerKind::Fair {
        // The fair scheduler's default policy, on every queue.
        set_ordering(&mut root, AppOrdering::Fair);
    }
    let config = QueueTreeConfig {
        kind: policy,
        root,
        ..QueueTreeConfig::fifo()
    };
    (config, leaves)
}

fn set_ordering(queue: &mut QueueConfig, ordering: AppOrdering) {
    queue.ordering = ordering;
    for child in &mut queue.children {
        set_ordering(child, ordering);
    }
}

fn attempt(i: usize) -> Result<ApplicationAttemptId, BenchError> {
    let n = i32::try_from(i + 1).map_err(|_| BenchError::Invalid(format!("too many apps: {i}")))?;
    Ok(ApplicationAttemptId::new(ApplicationId::new(1, n), 1))
}

/// Quantile of sorted durations, in microseconds.
fn quantile_us(sorted: &[Duration], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    let us = sorted[i.min(sorted.len() - 1)].as_secs_f64() * 1e6;
    (us * 10.0).round() / 10.0
}

/// `VmRSS` and `VmHWM` of this process in MB (0 when unknown).
pub fn memory_mb() -> (f64, f64) {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return (0.0, 0.0);
    };
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kb| kb.parse::<f64>().ok())
            .map(|kb| (kb / 1024.0 * 10.0).round() / 10.0)
            .unwrap_or(0.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Runs one scheduler benchmark.
pub fn run_scheduler_bench(
    opts: &SchedulerBenchOptions,
) -> Result<SchedulerBenchReport, BenchError> {
    if opts.nodes == 0 || opts.apps == 0 {
        return Err(BenchError::Invalid(
            "--nodes and --apps must be at least 1".into(),
        ));
    }
    let slots = opts.nodes as u64 * (NODE_MB / 1024) as u64;
    if opts.containers as u64 > slots {
        return Err(BenchError::Invalid(format!(
            "{} one-gigabyte containers do not fit on {} nodes of 64 GB ({slots} slots)",
            opts.containers, opts.nodes
        )));
    }
    let (queues, leaves) = queue_tree(opts.policy);
    let locality = match opts.policy {
        SchedulerKind::Fair => LocalityDelay::Fair {
            node_threshold: -1.0,
            rack_threshold: -1.0,
        },
        _ => LocalityDelay::Capacity {
            node_locality_delay: 40,
            rack_locality_additional_delay: -1,
        },
    };
    let config = SchedulerConfig {
        queues,
        node_selection: opts.placement,
        locality,
        packing: PackingConfig {
            high_memory_threshold: 0.8,
            ..PackingConfig::default()
        },
        ..SchedulerConfig::default()
    };
    let per_pass = config.limits.max_containers_per_pass;
    let mut s = Scheduler::new(config)?;
    let mut now = 0u64;

    let setup = Instant::now();
    let nodes: Vec<NodeId> = (0..opts.nodes)
        .map(|i| NodeId::new(format!("node{i:05}.example"), 8041))
        .collect();
    for (i, node) in nodes.iter().enumerate() {
        now += 1;
        s.handle(
            now,
            Input::NodeAdded {
                node: node.clone(),
                rack: format!("/rack{:03}", i / RACK_SIZE),
                capability: Resource::new(NODE_MB, NODE_VCORES),
            },
        )?;
    }
    let size = Resource::new(1024, 1);
    for i in 0..opts.apps {
        now += 1;
        s.handle(
            now,
            Input::AppAdded {
                attempt: attempt(i)?,
                queue: leaves[i % leaves.len()].clone(),
                user: format!("user{}", i % 50),
                priority: 0,
                unmanaged_am: true,
            },
        )?;
    }
    for i in 0..opts.apps {
        // Containers spread evenly: the first `containers % apps` apps ask one more.
        let count = opts.containers / opts.apps + usize::from(i < opts.containers % opts.apps);
        if count == 0 {
            continue;
        }
        let count = i32::try_from(count)
            .map_err(|_| BenchError::Invalid(format!("{count} containers for one app")))?;
        now += 1;
        s.handle(
            now,
            Input::AsksUpdated {
                attempt: attempt(i)?,
                asks: vec![ResourceAsk::new(1, ANY, size, count)],
                releases: vec![],
                blacklist_add: vec![],
                blacklist_remove: vec![],
            },
        )?;
    }
    let setup_s = setup.elapsed().as_secs_f64();

    // Continuous passes until one places nothing.
    let mut latencies = Vec::new();
    let mut busy = Duration::ZERO;
    let mut allocated = 0usize;
    loop {
        now += 1;
        let start = Instant::now();
        let d = s.schedule(now, per_pass)?;
        let took = start.elapsed();
        busy += took;
        if d.allocations.is_empty() {
            // The closing pass that finds nothing left is timed into the
            // throughput, not into the latency of decisions.
            break;
        }
        latencies.push(took);
        allocated += d.allocations.len();
    }
    let (rss_mb, peak_rss_mb) = memory_mb();
    latencies.sort_unstable();

    // Heartbeats with nothing left to place.
    let mut beats = Vec::new();
    for node in nodes.iter().take(HEARTBEAT_SAMPLES) {
        now += 1;
        let start = Instant::now();
        s.handle(
            now,
            Input::NodeUpdated {
                node: node.clone(),
                update: NodeUpdate::heartbeat(),
            },
        )?;
        beats.push(start.elapsed());
    }
    beats.sort_unstable();

    let secs = busy.as_secs_f64().max(1e-9);
    Ok(SchedulerBenchReport {
        nodes: opts.nodes,
        apps: opts.apps,
        leaf_queues: leaves.len(),
        policy: opts.policy.name().to_string(),
        placement: opts.placement.to_string(),
        containers_asked: opts.containers,
        containers_allocated: allocated,
        passes: latencies.len(),
        allocations_per_sec: (allocated as f64 / secs).round(),
        allocation_us_mean: ((secs * 1e6 / allocated.max(1) as f64) * 100.0).round() / 100.0,
        decision_latency_us_p50: quantile_us(&latencies, 0.5),
        decision_latency_us_p99: quantile_us(&latencies, 0.99),
        decision_latency_us_max: quantile_us(&latencies, 1.0),
        heartbeat_latency_us_p50: quantile_us(&beats, 0.5),
        heartbeat_latency_us_p99: quantile_us(&beats, 0.99),
        rss_mb,
        peak_rss_mb,
        setup_s: (setup_s * 1000.0).round() / 1000.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small(policy: SchedulerKind, placement: NodeSelectionKind) -> SchedulerBenchReport {
        let opts = SchedulerBenchOptions {
            nodes: 50,
            apps: 120,
            policy,
            placement,
            containers: 1_500,
        };
        match run_scheduler_bench(&opts) {
            Ok(r) => r,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn every_policy_places_every_container() {
        for policy in [
            SchedulerKind::Fifo,
            SchedulerKind::Capacity,
            SchedulerKind::Fair,
        ] {
            for placement in [NodeSelectionKind::Spread, NodeSelectionKind::Packing] {
                let r = small(policy, placement);
                assert_eq!(r.containers_allocated, 1_500, "{policy:?} {placement:?}");
                assert_eq!(
                    r.leaf_queues,
                    if policy == SchedulerKind::Fifo {
                        1
                    } else {
                        100
                    }
                );
                assert!(r.passes >= 2, "1,500 containers need two passes of 1,000");
                assert!(r.allocations_per_sec > 0.0);
            }
        }
    }

    #[test]
    fn refuses_what_cannot_fit() {
        let opts = SchedulerBenchOptions {
            nodes: 1,
            apps: 1,
            policy: SchedulerKind::Fifo,
            placement: NodeSelectionKind::Spread,
            containers: 65,
        };
        let err = run_scheduler_bench(&opts).expect_err("65 slots asked of 64");
        assert!(err.to_string().contains("do not fit"), "{err}");
    }
}
