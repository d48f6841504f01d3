//! Criterion micro-benchmarks of the core's hot paths, on a 1,000-node cluster with
//! 200 applications in a two-level capacity tree:
//!
//! - a node heartbeat with nothing to place (what every NM heartbeat costs);
//! - one continuous pass placing 500 containers, then their completions;
//! - an allocate that adds and then withdraws an ask;
//! - a capability change of a node (its re-index in the node order).
//!
//! `cargo bench -p spindle-scheduler`. The whole-scheduler figures at scale come from
//! `spindle bench scheduler` (docs/benchmarks.md).

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use spindle_common::{ApplicationAttemptId, ApplicationId, ContainerId, NodeId, Resource};
use spindle_scheduler::{
    ContainerExit, Input, NodeSelectionKind, NodeUpdate, QueueConfig, QueueShare, QueueTreeConfig,
    ResourceAsk, Scheduler, SchedulerConfig, SchedulerKind, ANY,
};

const NODES: usize = 1_000;
const APPS: usize = 200;

fn share(pct: f64) -> QueueShare {
    QueueShare::Capacity {
        capacity_pct: pct,
        maximum_pct: 100.0,
    }
}

fn attempt(i: usize) -> ApplicationAttemptId {
    ApplicationAttemptId::new(ApplicationId::new(7, i as i32 + 1), 1)
}

fn node(i: usize) -> NodeId {
    NodeId::new(format!("node{i:04}.example"), 8041)
}

/// A cluster with every application registered and nothing asked.
fn cluster(selection: NodeSelectionKind) -> Scheduler {
    let mut leaves = Vec::new();
    let teams = (0..4)
        .map(|t| {
            let children = (0..5)
                .map(|l| {
                    leaves.push(format!("root.t{t}.l{t}{l}"));
                    let mut leaf = QueueConfig::leaf(format!("l{t}{l}"), share(20.0));
                    leaf.user_limit_factor = None;
                    leaf
                })
                .collect();
            QueueConfig::parent(format!("t{t}"), share(25.0), children)
        })
        .collect();
    let config = SchedulerConfig {
        queues: QueueTreeConfig {
            kind: SchedulerKind::Capacity,
            root: QueueConfig::parent("root", share(100.0), teams),
            ..QueueTreeConfig::fifo()
        },
        node_selection: selection,
        ..SchedulerConfig::default()
    };
    let mut s = Scheduler::new(config).expect("valid config");
    let mut now = 0;
    for i in 0..NODES {
        now += 1;
        s.handle(
            now,
            Input::NodeAdded {
                node: node(i),
                rack: format!("/rack{:02}", i / 50),
                capability: Resource::new(32 * 1024, 32),
            },
        )
        .expect("node added");
    }
    for i in 0..APPS {
        now += 1;
        s.handle(
            now,
            Input::AppAdded {
                attempt: attempt(i),
                queue: leaves[i % leaves.len()].clone(),
                user: format!("u{}", i % 10),
                priority: 0,
                unmanaged_am: true,
            },
        )
        .expect("app added");
    }
    s
}

fn asks(s: &mut Scheduler, now: u64, per_app: i32) {
    for i in 0..APPS {
        s.handle(
            now,
            Input::AsksUpdated {
                attempt: attempt(i),
                asks: vec![ResourceAsk::new(1, ANY, Resource::new(1024, 1), per_app)],
                releases: vec![],
                blacklist_add: vec![],
                blacklist_remove: vec![],
            },
        )
        .expect("asks");
    }
}

fn heartbeat_idle(c: &mut Criterion) {
    let mut s = cluster(NodeSelectionKind::Spread);
    let mut now = 1_000_000u64;
    let mut i = 0usize;
    c.bench_function("heartbeat, nothing to place", |b| {
        b.iter(|| {
            now += 1;
            i = (i + 1) % NODES;
            black_box(
                s.handle(
                    now,
                    Input::NodeUpdated {
                        node: node(i),
                        update: NodeUpdate::heartbeat(),
                    },
                )
                .expect("heartbeat"),
            );
        })
    });
}

fn pass_placing(c: &mut Criterion, selection: NodeSelectionKind, name: &str) {
    let mut s = cluster(selection);
    let mut now = 1_000_000u64;
    c.bench_function(name, |b| {
        b.iter(|| {
            now += 1;
            asks(&mut s, now, 5);
            now += 1;
            let d = s.schedule(now, 1_000).expect("pass");
            let placed: Vec<ContainerId> = d.allocations.iter().map(|a| a.container).collect();
            assert_eq!(placed.len(), APPS * 5);
            for container in placed {
                now += 1;
                s.handle(
                    now,
                    Input::ContainerCompleted {
                        container,
                        exit: ContainerExit::Finished {
                            exit_status: 0,
                            diagnostics: String::new(),
                        },
                    },
                )
                .expect("completion");
            }
        })
    });
}

fn pass_spread(c: &mut Criterion) {
    pass_placing(
        c,
        NodeSelectionKind::Spread,
        "pass placing 1,000 containers + completions (spread)",
    );
}

fn pass_packing(c: &mut Criterion) {
    pass_placing(
        c,
        NodeSelectionKind::Packing,
        "pass placing 1,000 containers + completions (packing)",
    );
}

fn ask_update(c: &mut Criterion) {
    let mut s = cluster(NodeSelectionKind::Spread);
    let mut now = 1_000_000u64;
    c.bench_function("allocate: add then withdraw an ask", |b| {
        b.iter(|| {
            for count in [3, 0] {
                now += 1;
                s.handle(
                    now,
                    Input::AsksUpdated {
                        attempt: attempt(0),
                        asks: vec![
                            ResourceAsk::new(2, node(5).host.clone(), Resource::new(512, 1), count),
                            ResourceAsk::new(2, "/rack00", Resource::new(512, 1), count),
                            ResourceAsk::new(2, ANY, Resource::new(512, 1), count),
                        ],
                        releases: vec![],
                        blacklist_add: vec![],
                        blacklist_remove: vec![],
                    },
                )
                .expect("asks");
            }
        })
    });
}

fn node_reindex(c: &mut Criterion) {
    let mut s = cluster(NodeSelectionKind::Spread);
    let mut now = 1_000_000u64;
    let mut big = false;
    c.bench_function("node capability change (re-index)", |b| {
        b.iter(|| {
            now += 1;
            big = !big;
            let mb = if big { 48 * 1024 } else { 32 * 1024 };
            s.handle(
                now,
                Input::NodeUpdated {
                    node: node(17),
                    update: NodeUpdate {
                        capability: Some(Resource::new(mb, 32)),
                        ..NodeUpdate::heartbeat()
                    },
                },
            )
            .expect("node update");
        })
    });
}

criterion_group!(
    hot_paths,
    heartbeat_idle,
    pass_spread,
    pass_packing,
    ask_update,
    node_reindex
);
criterion_main!(hot_paths);
