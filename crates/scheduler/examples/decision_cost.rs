//! What one scheduling decision costs at scale.
//!
//! Builds a cluster of 10,000 nodes (16 GB, 16 vcores each, 100 racks), a
//! three-level capacity tree (4 departments × 5 teams × 5 leaves) holding
//! 1,000 applications, and asks for 100,000 one-gigabyte containers (100
//! per application, on `*`). Then it runs continuous passes
//! ([`Scheduler::schedule`], at most `max_containers_per_pass` each) until
//! everything is placed, and prints allocations per second and the
//! latency of a pass. A second round does the same after every container
//! finished (a warm tree with released resources); a third one sends one
//! heartbeat from every node before the passes, and a fourth does that
//! with asks that name 3 hosts (and their racks) per application, under
//! Hadoop's default capacity delay rule, running a pass after every 100
//! heartbeats as the RM does on its ticks. Under packing, heartbeats place
//! nothing (the passes do), so those rounds measure what they cost then.
//!
//! ```text
//! cargo run --release -p spindle-scheduler --example decision_cost [spread|packing]
//! ```
//!
//! Timings are printed, never asserted.

use std::time::{Duration, Instant};

use spindle_common::{ApplicationAttemptId, ApplicationId, ContainerId, NodeId, Resource};
use spindle_scheduler::{
    ContainerExit, Input, LocalityDelay, NodeSelectionKind, NodeUpdate, PackingConfig, QueueConfig,
    QueueShare, QueueTreeConfig, ResourceAsk, Scheduler, SchedulerConfig, SchedulerKind, ANY,
};

const NODES: usize = 10_000;
const RACKS: usize = 100;
const APPS: usize = 1_000;
const CONTAINERS_PER_APP: i32 = 100;

fn capacity(pct: f64) -> QueueShare {
    QueueShare::Capacity {
        capacity_pct: pct,
        maximum_pct: 100.0,
    }
}

/// root → 4 departments (25%) → 5 teams (20%) → 5 leaves (20%).
fn tree() -> (QueueTreeConfig, Vec<String>) {
    let mut leaves = Vec::new();
    let departments = (0..4)
        .map(|d| {
            let teams = (0..5)
                .map(|t| {
                    let children = (0..5)
                        .map(|l| {
                            let name = format!("l{d}{t}{l}");
                            leaves.push(format!("root.d{d}.t{d}{t}.{name}"));
                            let mut leaf = QueueConfig::leaf(name, capacity(20.0));
                            leaf.user_limit_factor = None;
                            leaf
                        })
                        .collect();
                    QueueConfig::parent(format!("t{d}{t}"), capacity(20.0), children)
                })
                .collect();
            QueueConfig::parent(format!("d{d}"), capacity(25.0), teams)
        })
        .collect();
    let config = QueueTreeConfig {
        kind: SchedulerKind::Capacity,
        root: QueueConfig::parent("root", capacity(100.0), departments),
        ..QueueTreeConfig::fifo()
    };
    (config, leaves)
}

struct Stats {
    allocations: usize,
    calls: usize,
    total: Duration,
    latencies: Vec<Duration>,
}

impl Stats {
    fn new() -> Stats {
        Stats {
            allocations: 0,
            calls: 0,
            total: Duration::ZERO,
            latencies: Vec::new(),
        }
    }

    fn record(&mut self, took: Duration, allocations: usize) {
        self.calls += 1;
        self.total += took;
        self.allocations += allocations;
        self.latencies.push(took);
    }

    fn merge(&mut self, other: Stats) {
        self.allocations += other.allocations;
        self.calls += other.calls;
        self.total += other.total;
        self.latencies.extend(other.latencies);
    }

    fn print(&mut self, what: &str) {
        self.latencies.sort_unstable();
        let at = |q: f64| {
            let i = ((self.latencies.len() as f64 - 1.0) * q).round() as usize;
            self.latencies.get(i).copied().unwrap_or_default()
        };
        let secs = self.total.as_secs_f64();
        println!(
            "{what}: {} allocations in {} calls, {:.3} s: {:.0} allocations/s, {:.2} µs/allocation",
            self.allocations,
            self.calls,
            secs,
            self.allocations as f64 / secs.max(1e-9),
            secs * 1e6 / (self.allocations.max(1) as f64),
        );
        println!(
            "  per call: p50 {:?}, p90 {:?}, p99 {:?}, max {:?}",
            at(0.5),
            at(0.9),
            at(0.99),
            at(1.0)
        );
    }
}

fn app(i: usize) -> Result<ApplicationAttemptId, std::num::TryFromIntError> {
    Ok(ApplicationAttemptId::new(
        ApplicationId::new(1, i32::try_from(i + 1)?),
        1,
    ))
}

type Result2<T> = Result<T, Box<dyn std::error::Error>>;

/// Every application asks for its containers again: on `*` only, or
/// (with `nodes`) on 3 hosts, their racks and `*`.
fn ask_all(s: &mut Scheduler, now: &mut u64, nodes: Option<&[NodeId]>) -> Result2<()> {
    let size = Resource::new(1024, 1);
    for i in 0..APPS {
        let mut asks = vec![ResourceAsk::new(1, ANY, size, CONTAINERS_PER_APP)];
        if let Some(nodes) = nodes {
            for k in 0..3 {
                let n = (i * 7 + k * 3_331) % NODES;
                asks.push(ResourceAsk::new(
                    1,
                    nodes[n].host.clone(),
                    size,
                    CONTAINERS_PER_APP,
                ));
                asks.push(ResourceAsk::new(
                    1,
                    format!("/rack{:03}", n % RACKS),
                    size,
                    CONTAINERS_PER_APP,
                ));
            }
        }
        *now += 1;
        s.handle(
            *now,
            Input::AsksUpdated {
                attempt: app(i)?,
                asks,
                releases: vec![],
                blacklist_add: vec![],
                blacklist_remove: vec![],
            },
        )?;
    }
    Ok(())
}

fn complete_all(s: &mut Scheduler, now: &mut u64, placed: &mut Vec<ContainerId>) -> Result2<()> {
    for container in placed.drain(..) {
        *now += 1;
        s.handle(
            *now,
            Input::ContainerCompleted {
                container,
                exit: ContainerExit::Finished {
                    exit_status: 0,
                    diagnostics: String::new(),
                },
            },
        )?;
    }
    Ok(())
}

/// Continuous passes until one places nothing.
fn passes(
    s: &mut Scheduler,
    now: &mut u64,
    per_pass: usize,
    placed: &mut Vec<ContainerId>,
) -> Result2<Stats> {
    let mut stats = Stats::new();
    loop {
        *now += 1;
        let start = Instant::now();
        let d = s.schedule(*now, per_pass)?;
        stats.record(start.elapsed(), d.allocations.len());
        if d.allocations.is_empty() {
            return Ok(stats);
        }
        placed.extend(d.allocations.iter().map(|a| a.container));
    }
}

/// One heartbeat of every node, in turn.
fn heartbeats(
    s: &mut Scheduler,
    now: &mut u64,
    nodes: &[NodeId],
    placed: &mut Vec<ContainerId>,
) -> Result2<Stats> {
    let mut stats = Stats::new();
    for node in nodes {
        *now += 1;
        let start = Instant::now();
        let d = s.handle(
            *now,
            Input::NodeUpdated {
                node: node.clone(),
                update: NodeUpdate::heartbeat(),
            },
        )?;
        stats.record(start.elapsed(), d.allocations.len());
        placed.extend(d.allocations.iter().map(|a| a.container));
    }
    Ok(stats)
}

fn report(mut stats: Stats, what: &str, selection: NodeSelectionKind) {
    if selection == NodeSelectionKind::Packing {
        println!(
            "{what} (under packing heartbeats place nothing; they count delay opportunities):"
        );
    }
    stats.print(what);
}

fn main() -> Result2<()> {
    let selection: NodeSelectionKind = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "spread".into())
        .parse()?;
    let (queues, leaves) = tree();
    let config = SchedulerConfig {
        queues,
        node_selection: selection,
        // Hadoop's default capacity delay: 40 opportunities, then the
        // off-switch formula.
        locality: LocalityDelay::Capacity {
            node_locality_delay: 40,
            rack_locality_additional_delay: -1,
        },
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
    let nodes: Vec<NodeId> = (0..NODES)
        .map(|i| NodeId::new(format!("node{i:05}.example"), 8041))
        .collect();
    for (i, node) in nodes.iter().enumerate() {
        now += 1;
        s.handle(
            now,
            Input::NodeAdded {
                node: node.clone(),
                rack: format!("/rack{:03}", i % RACKS),
                capability: Resource::new(16 * 1024, 16),
            },
        )?;
    }
    for i in 0..APPS {
        let attempt = app(i)?;
        now += 1;
        s.handle(
            now,
            Input::AppAdded {
                attempt,
                queue: leaves[i % leaves.len()].clone(),
                user: format!("user{}", i % 50),
                priority: 0,
                unmanaged_am: true,
            },
        )?;
    }
    ask_all(&mut s, &mut now, None)?;
    println!(
        "setup ({} node selection): {NODES} nodes, {APPS} applications in {} leaves, {} containers asked, {:.3} s",
        selection,
        leaves.len(),
        APPS * CONTAINERS_PER_APP as usize,
        setup.elapsed().as_secs_f64()
    );

    // Continuous passes on a fresh cluster.
    let mut placed: Vec<ContainerId> = Vec::new();
    let mut stats = passes(&mut s, &mut now, per_pass, &mut placed)?;
    stats.print("continuous passes, empty cluster");

    // Everything finishes; the same demand again on the warm state.
    let finish = Instant::now();
    let completed = placed.len();
    complete_all(&mut s, &mut now, &mut placed)?;
    println!(
        "completing {completed} containers: {:.3} s",
        finish.elapsed().as_secs_f64()
    );
    ask_all(&mut s, &mut now, None)?;
    let mut stats = passes(&mut s, &mut now, per_pass, &mut placed)?;
    stats.print("continuous passes, after churn");

    // Heartbeat-driven placement: every node heartbeats in turn. Under
    // packing heartbeats place nothing (passes do); this measures what
    // they cost then.
    complete_all(&mut s, &mut now, &mut placed)?;
    ask_all(&mut s, &mut now, None)?;
    let stats = heartbeats(&mut s, &mut now, &nodes, &mut placed)?;
    report(stats, "node heartbeats, `*` asks", selection);
    let mut stats = passes(&mut s, &mut now, per_pass, &mut placed)?;
    stats.print("  then continuous passes");

    // Located asks: every application names 3 hosts (and their racks) for
    // its 100 containers, under the capacity delay rule, so heartbeats
    // walk the applications, count opportunities and place node-local.
    complete_all(&mut s, &mut now, &mut placed)?;
    ask_all(&mut s, &mut now, Some(&nodes))?;
    let wanted = APPS * CONTAINERS_PER_APP as usize;
    let mut beats = Stats::new();
    let mut pass_stats = Stats::new();
    let mut rounds = 0;
    // As the RM does on its ticks: a pass after every 100 heartbeats.
    'rounds: while rounds < 10 {
        rounds += 1;
        for chunk in nodes.chunks(100) {
            beats.merge(heartbeats(&mut s, &mut now, chunk, &mut placed)?);
            pass_stats.merge(passes(&mut s, &mut now, per_pass, &mut placed)?);
            if placed.len() >= wanted {
                break 'rounds;
            }
        }
    }
    println!(
        "located asks: {} of {wanted} containers placed in {} heartbeats, with a pass after every 100",
        placed.len(),
        beats.calls
    );
    report(beats, "  node heartbeats, located asks", selection);
    pass_stats.print("  continuous passes, located asks");
    s.check_invariants()?;
    Ok(())
}
