//! Randomized test with fixed seeds: node churn, asks, releases,
//! blacklists, completions and scheduling passes in random order. After
//! every step the scheduler's own invariants must hold, and an independent
//! model of the request tables, node usage and live containers must agree
//! with it. Every allocation is checked against the model: the `*` row and
//! the rows of the locality it claims were positive, the locality is the
//! one the rules give for that node, the node had room and was not
//! blacklisted. A failing seed replays exactly.

use std::collections::{BTreeMap, BTreeSet};

use spindle_common::{ApplicationAttemptId, ApplicationId, ContainerId, NodeId, Resource};
use spindle_scheduler::{
    AppOrdering, HeartbeatAssignment, LocalityDelay, QueueConfig, QueueShare, QueueTreeConfig,
    ResourceBound, ResourceCalculatorKind, SchedulerKind,
};
use spindle_scheduler::{
    CompletionCause, ContainerExit, Decisions, Input, Locality, NodeSelectionKind, NodeUpdate,
    PackingConfig, ResourceAsk, Scheduler, SchedulerConfig, SchedulerError, ANY,
};

/// xorshift64*: tiny, deterministic, good enough to pick test actions.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n as u64).unwrap_or(0)
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const HOSTS: [&str; 8] = ["h0", "h1", "h2", "h3", "h4", "h5", "h6", "h7"];
const RACKS: [&str; 3] = ["/r0", "/r1", "/r2"];
const MIN: Resource = Resource::new(1024, 1);
const MAX: Resource = Resource::new(8192, 4);

/// (priority, allocation request id, memory, vcores) — the model's key.
type Key = (i32, i64, i64, i32);

#[derive(Default)]
struct ModelApp {
    rows: BTreeMap<Key, BTreeMap<String, (u32, bool)>>,
    blacklist: BTreeSet<String>,
}

impl ModelApp {
    fn count(&self, key: &Key, name: &str) -> u32 {
        self.rows
            .get(key)
            .and_then(|r| r.get(name))
            .map_or(0, |r| r.0)
    }

    fn relax(&self, key: &Key, name: &str) -> bool {
        self.rows
            .get(key)
            .and_then(|r| r.get(name))
            .is_none_or(|r| r.1)
    }

    /// The locality rules, written out independently of the scheduler.
    fn locality(&self, key: &Key, host: &str, rack: &str) -> Option<Locality> {
        if self.count(key, ANY) == 0 {
            return None;
        }
        let rack_count = self.count(key, rack);
        if self.count(key, host) > 0 && rack_count > 0 {
            Some(Locality::NodeLocal)
        } else if rack_count > 0 {
            self.relax(key, rack).then_some(Locality::RackLocal)
        } else if self.relax(key, ANY) {
            Some(Locality::OffSwitch)
        } else {
            None
        }
    }

    fn decrement(&mut self, key: &Key, name: &str) {
        let Some(rows) = self.rows.get_mut(key) else {
            panic!("decrement of missing key {key:?}");
        };
        let Some(row) = rows.get_mut(name) else {
            panic!("decrement of missing row {name} of {key:?}");
        };
        row.0 -= 1;
        if row.0 == 0 {
            rows.remove(name);
        }
        if rows.is_empty() {
            self.rows.remove(key);
        }
    }
}

struct ModelNode {
    rack: String,
    capability: Resource,
    used: Resource,
}

#[derive(Default)]
struct Model {
    nodes: BTreeMap<NodeId, ModelNode>,
    apps: BTreeMap<ApplicationAttemptId, ModelApp>,
    containers: BTreeMap<ContainerId, (NodeId, Resource)>,
    next_app: i32,
    /// Allocations made, by locality.
    allocations: BTreeMap<Locality, usize>,
}

impl Model {
    fn apply(&mut self, d: &Decisions, step: usize) {
        for c in &d.completed {
            let Some((node, resource)) = self.containers.remove(&c.container) else {
                panic!(
                    "step {step}: completion of {} which is not live",
                    c.container
                );
            };
            assert_eq!(node, c.node, "step {step}: completion names the wrong node");
            assert_eq!(
                resource, c.resource,
                "step {step}: completion names the wrong size"
            );
            if let Some(n) = self.nodes.get_mut(&node) {
                n.used -= resource;
            }
        }
        for a in &d.allocations {
            let Some(node) = self.nodes.get_mut(&a.node) else {
                panic!("step {step}: allocation on unknown node {}", a.node);
            };
            let Some(app) = self.apps.get_mut(&a.attempt()) else {
                panic!(
                    "step {step}: allocation for unknown attempt {}",
                    a.attempt()
                );
            };
            let key = (
                a.priority,
                a.allocation_request_id,
                a.resource.memory_mb,
                a.resource.vcores,
            );
            let host = a.node.host.as_str();
            let rack = node.rack.as_str();
            assert_eq!(
                app.locality(&key, host, rack),
                Some(a.locality),
                "step {step}: {} granted {} on {} but the rows say otherwise",
                a.container,
                a.locality,
                a.node
            );
            assert!(
                !app.blacklist.contains(host) && !app.blacklist.contains(rack),
                "step {step}: {} granted on blacklisted {}",
                a.container,
                a.node
            );
            assert!(
                (node.used + a.resource).fits_in(&node.capability),
                "step {step}: {} does not fit on {}",
                a.container,
                a.node
            );
            match a.locality {
                Locality::NodeLocal => {
                    app.decrement(&key, host);
                    app.decrement(&key, rack);
                }
                Locality::RackLocal => app.decrement(&key, rack),
                Locality::OffSwitch => {}
            }
            app.decrement(&key, ANY);
            node.used += a.resource;
            assert!(
                self.containers
                    .insert(a.container, (a.node.clone(), a.resource))
                    .is_none(),
                "step {step}: container id {} handed out twice",
                a.container
            );
            *self.allocations.entry(a.locality).or_default() += 1;
        }
    }

    fn compare(&self, s: &Scheduler, step: usize) {
        if let Err(e) = s.check_invariants() {
            panic!("step {step}: {e}");
        }
        assert_eq!(s.cluster().containers, self.containers.len(), "step {step}");
        assert_eq!(s.nodes().len(), self.nodes.len(), "step {step}");
        for (id, n) in &self.nodes {
            let report = s.node(id).map(|r| (r.used, r.capability, r.rack));
            assert_eq!(
                report,
                Some((n.used, n.capability, n.rack.clone())),
                "step {step}: node {id}"
            );
        }
        for (attempt, app) in &self.apps {
            let mut expected: Vec<ResourceAsk> = Vec::new();
            for (key, rows) in &app.rows {
                for (name, (count, relax)) in rows {
                    expected.push(ResourceAsk {
                        priority: key.0,
                        resource_name: name.clone(),
                        capability: Resource::new(key.2, key.3),
                        num_containers: i32::try_from(*count).unwrap_or(i32::MAX),
                        relax_locality: *relax,
                        allocation_request_id: key.1,
                    });
                }
            }
            assert_eq!(
                s.asks(attempt),
                Some(expected),
                "step {step}: asks of {attempt}"
            );
            let blacklist: Vec<String> = app.blacklist.iter().cloned().collect();
            assert_eq!(
                s.app(attempt).map(|r| r.blacklist),
                Some(blacklist),
                "step {step}: blacklist of {attempt}"
            );
        }
        assert_eq!(s.apps().len(), self.apps.len(), "step {step}");
    }
}

fn normalize(mb: i64, vcores: i32) -> Option<Resource> {
    if mb > MAX.memory_mb || vcores > MAX.vcores {
        return None;
    }
    let up = |v: i64, step: i64| (v.max(step) + step - 1) / step * step;
    Some(Resource::new(
        up(mb, MIN.memory_mb).min(MAX.memory_mb),
        i32::try_from(up(i64::from(vcores), i64::from(MIN.vcores))).unwrap_or(MAX.vcores),
    ))
}

/// The queue tree and delay rule of a run of `kind`; `variant` shifts the
/// capacities, weights and delays (for reconfiguration).
fn queues(kind: SchedulerKind, variant: u64) -> (QueueTreeConfig, LocalityDelay) {
    let v = variant % 2 == 1;
    match kind {
        SchedulerKind::Fifo => (QueueTreeConfig::fifo(), LocalityDelay::Off),
        SchedulerKind::Capacity => {
            let cap = |c: f64, m: f64| QueueShare::Capacity {
                capacity_pct: c,
                maximum_pct: m,
            };
            let mut default = QueueConfig::leaf("default", cap(40.0, 100.0));
            default.user_limit_factor = Some(2.0);
            default.max_am_share = Some(0.5);
            let mut etl = QueueConfig::leaf("etl", cap(50.0, if v { 100.0 } else { 70.0 }));
            etl.ordering = AppOrdering::Fair;
            etl.minimum_user_limit_percent = 50.0;
            let adhoc = QueueConfig::leaf("adhoc", cap(50.0, 100.0));
            let tree = QueueTreeConfig {
                kind,
                root: QueueConfig::parent(
                    "root",
                    cap(100.0, 100.0),
                    vec![
                        default,
                        QueueConfig::parent("batch", cap(60.0, 100.0), vec![etl, adhoc]),
                    ],
                ),
                ..QueueTreeConfig::fifo()
            };
            let mut tree = tree;
            if v {
                tree.root.children[0].share = cap(30.0, 100.0);
                tree.root.children[1].share = cap(70.0, 100.0);
            }
            (
                tree,
                LocalityDelay::Capacity {
                    node_locality_delay: if v { 4 } else { 2 },
                    rack_locality_additional_delay: if v { 1 } else { -1 },
                },
            )
        }
        SchedulerKind::Fair => {
            let fair = |w: f64| QueueShare::Fair {
                weight: w,
                min: None,
                max: None,
            };
            let mut default = QueueConfig::leaf("default", fair(if v { 1.0 } else { 3.0 }));
            default.ordering = AppOrdering::Fair;
            default.max_am_share = Some(0.5);
            let mut etl = QueueConfig::leaf(
                "etl",
                QueueShare::Fair {
                    weight: 1.0,
                    min: Some(ResourceBound::Absolute(Resource::new(2048, 2))),
                    max: None,
                },
            );
            etl.ordering = AppOrdering::Drf;
            let mut adhoc = QueueConfig::leaf("adhoc", fair(2.0));
            adhoc.max_running_apps = Some(2);
            adhoc.ordering = AppOrdering::Fifo;
            let mut root = QueueConfig::parent("root", fair(1.0), vec![default, etl, adhoc]);
            root.ordering = if v {
                AppOrdering::Drf
            } else {
                AppOrdering::Fair
            };
            let mut users = BTreeMap::new();
            users.insert("v".to_string(), 2);
            let tree = QueueTreeConfig {
                kind,
                root,
                resource_calculator: if v {
                    ResourceCalculatorKind::Dominant
                } else {
                    ResourceCalculatorKind::Memory
                },
                user_max_running_apps: users,
                user_max_running_apps_default: None,
                dynamic_leaf: None,
            };
            (
                tree,
                LocalityDelay::Fair {
                    node_threshold: if v { 0.5 } else { 0.3 },
                    rack_threshold: 0.3,
                },
            )
        }
    }
}

fn run(
    seed: u64,
    steps: usize,
    selection: NodeSelectionKind,
    kind: SchedulerKind,
) -> BTreeMap<Locality, usize> {
    let (tree, locality) = queues(kind, 0);
    let config = SchedulerConfig {
        queues: tree,
        locality,
        minimum_allocation: MIN,
        maximum_allocation: MAX,
        node_selection: selection,
        // Thresholds and cluster-size boundaries vary with the seed, so
        // runs cross the min-nodes boundary both ways and meet nodes
        // exactly at the threshold.
        packing: PackingConfig {
            high_memory_threshold: [0.25, 0.5, 0.6, 1.0][(seed % 4) as usize],
            min_nodes: (seed % 5) as usize,
            seed,
        },
        ..SchedulerConfig::default()
    };
    let mut s = match Scheduler::new(config) {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    };
    let mut m = Model::default();
    let mut rng = Rng::new(seed);
    let mut now = 0u64;

    for step in 0..steps {
        now += rng.below(50) as u64;
        let nodes: Vec<NodeId> = m.nodes.keys().cloned().collect();
        let apps: Vec<ApplicationAttemptId> = m.apps.keys().copied().collect();
        let live: Vec<ContainerId> = m.containers.keys().copied().collect();
        let action = rng.below(100);
        // Node and app removals apply their decisions to the model
        // themselves, before the model forgets the node or app.
        let mut applied = false;
        let result: Result<Decisions, SchedulerError> = match action {
            0..=5 => {
                let host = *rng.pick(&HOSTS);
                let node = NodeId::new(host, 8041 + i32::from(rng.chance(20)));
                let rack = rng.pick(&RACKS).to_string();
                let capability =
                    Resource::new(*rng.pick(&[2048, 4096, 8192]), *rng.pick(&[2, 4, 8]));
                let r = s.handle(
                    now,
                    Input::NodeAdded {
                        node: node.clone(),
                        rack: rack.clone(),
                        capability,
                    },
                );
                let expected_ok = !m.nodes.contains_key(&node);
                assert_eq!(r.is_ok(), expected_ok, "step {step}: adding {node}: {r:?}");
                if expected_ok {
                    m.nodes.insert(
                        node,
                        ModelNode {
                            rack,
                            capability,
                            used: Resource::ZERO,
                        },
                    );
                }
                r
            }
            6..=8 if !nodes.is_empty() => {
                let node = rng.pick(&nodes).clone();
                let on_node: BTreeSet<ContainerId> = m
                    .containers
                    .iter()
                    .filter(|(_, (n, _))| *n == node)
                    .map(|(c, _)| *c)
                    .collect();
                let r = s.handle(now, Input::NodeRemoved { node: node.clone() });
                if let Ok(d) = &r {
                    let lost: BTreeSet<ContainerId> =
                        d.completed.iter().map(|c| c.container).collect();
                    assert_eq!(lost, on_node, "step {step}: containers lost with {node}");
                    assert!(d
                        .completed
                        .iter()
                        .all(|c| c.cause == CompletionCause::NodeLost));
                    assert!(d.node_actions.is_empty());
                    m.apply(d, step);
                    m.nodes.remove(&node);
                    applied = true;
                }
                r
            }
            9..=14 if !nodes.is_empty() => {
                let node = rng.pick(&nodes).clone();
                let mut update = NodeUpdate::heartbeat();
                if rng.chance(20) {
                    update.capability = Some(Resource::new(
                        *rng.pick(&[1024, 2048, 4096, 8192]),
                        *rng.pick(&[1, 2, 4, 8]),
                    ));
                }
                if rng.chance(15) {
                    update.healthy = Some(rng.chance(70));
                }
                if rng.chance(15) {
                    update.schedulable = Some(rng.chance(70));
                }
                if let (Some(c), Some(n)) = (update.capability, m.nodes.get_mut(&node)) {
                    n.capability = c;
                }
                s.handle(now, Input::NodeUpdated { node, update })
            }
            15..=29 if !nodes.is_empty() => {
                let node = rng.pick(&nodes).clone();
                s.handle(
                    now,
                    Input::NodeUpdated {
                        node,
                        update: NodeUpdate::heartbeat(),
                    },
                )
            }
            30..=33 if m.apps.len() < 6 => {
                m.next_app += 1;
                let attempt = ApplicationAttemptId::new(ApplicationId::new(7, m.next_app), 1);
                m.apps.insert(attempt, ModelApp::default());
                s.handle(
                    now,
                    Input::AppAdded {
                        attempt,
                        queue: if kind == SchedulerKind::Fifo {
                            "default".to_string()
                        } else {
                            rng.pick(&["default", "etl", "adhoc"]).to_string()
                        },
                        user: rng.pick(&["u", "v"]).to_string(),
                        priority: *rng.pick(&[0, 0, 1]),
                        unmanaged_am: rng.chance(10),
                    },
                )
            }
            34..=35 if !apps.is_empty() => {
                let attempt = *rng.pick(&apps);
                let theirs: BTreeSet<ContainerId> = m
                    .containers
                    .keys()
                    .filter(|c| c.attempt == attempt)
                    .copied()
                    .collect();
                let r = s.handle(now, Input::AppRemoved { attempt });
                if let Ok(d) = &r {
                    let done: BTreeSet<ContainerId> =
                        d.completed.iter().map(|c| c.container).collect();
                    assert_eq!(done, theirs, "step {step}: containers of {attempt}");
                    assert_eq!(d.node_actions.len(), theirs.len());
                    m.apply(d, step);
                    m.apps.remove(&attempt);
                    applied = true;
                }
                r
            }
            36..=59 if !apps.is_empty() => {
                let attempt = *rng.pick(&apps);
                let mut asks = Vec::new();
                let mut valid = true;
                let mut updates = Vec::new();
                // Half the time, rows the way an AM client builds them:
                // hosts of real nodes, their racks and *, aggregated.
                let mut rows: Vec<(String, i32)> = Vec::new();
                if rng.chance(50) && !nodes.is_empty() {
                    let mut counts: BTreeMap<String, i32> = BTreeMap::new();
                    let k = 1 + rng.below(3);
                    for _ in 0..k {
                        let node = rng.pick(&nodes);
                        *counts.entry(node.host.to_string()).or_default() += 1;
                        if let Some(n) = m.nodes.get(node) {
                            *counts.entry(n.rack.clone()).or_default() += 1;
                        }
                    }
                    *counts.entry(ANY.to_string()).or_default() +=
                        i32::try_from(k + rng.below(2)).unwrap_or(1);
                    rows.extend(counts);
                }
                let priority = *rng.pick(&[0, 1, 2]);
                let mb = *rng.pick(&[0, 512, 1024, 1024, 2048, 3000]);
                let vcores = *rng.pick(&[0, 1, 1, 2]);
                for (name, count) in rows {
                    let relax = name.starts_with('h') || rng.chance(85);
                    let cap = normalize(mb, vcores).unwrap_or(MIN);
                    updates.push((
                        (priority, -1, cap.memory_mb, cap.vcores),
                        name.clone(),
                        count.unsigned_abs(),
                        relax,
                    ));
                    asks.push(
                        ResourceAsk::new(priority, name, Resource::new(mb, vcores), count)
                            .relax(relax),
                    );
                }
                for _ in 0..=rng.below(4) {
                    let name = match rng.below(10) {
                        0..=3 => rng.pick(&HOSTS).to_string(),
                        4..=6 => rng.pick(&RACKS).to_string(),
                        _ => ANY.to_string(),
                    };
                    let mb = *rng.pick(&[0, 512, 1024, 1024, 2048, 3000, 9000]);
                    let vcores = *rng.pick(&[0, 1, 1, 2, 5]);
                    let count = if rng.chance(3) {
                        -1
                    } else {
                        *rng.pick(&[0, 1, 1, 2, 3])
                    };
                    let relax = rng.chance(85);
                    let priority = *rng.pick(&[0, 1, 2]);
                    let id = *rng.pick(&[-1, -1, 3]);
                    match (normalize(mb, vcores), u32::try_from(count)) {
                        (Some(cap), Ok(n)) => {
                            updates.push((
                                (priority, id, cap.memory_mb, cap.vcores),
                                name.clone(),
                                n,
                                relax,
                            ));
                        }
                        _ => valid = false,
                    }
                    asks.push(
                        ResourceAsk::new(priority, name, Resource::new(mb, vcores), count)
                            .relax(relax)
                            .with_allocation_request_id(id),
                    );
                }
                let r = s.handle(
                    now,
                    Input::AsksUpdated {
                        attempt,
                        asks,
                        releases: vec![],
                        blacklist_add: vec![],
                        blacklist_remove: vec![],
                    },
                );
                assert_eq!(r.is_ok(), valid, "step {step}: ask update {r:?}");
                if valid {
                    let Some(app) = m.apps.get_mut(&attempt) else {
                        panic!("model lost {attempt}");
                    };
                    for (key, name, n, relax) in updates {
                        if n == 0 {
                            if let Some(rows) = app.rows.get_mut(&key) {
                                rows.remove(&name);
                                if rows.is_empty() {
                                    app.rows.remove(&key);
                                }
                            }
                        } else {
                            app.rows.entry(key).or_default().insert(name, (n, relax));
                        }
                    }
                }
                r
            }
            60..=66 if !apps.is_empty() => {
                let attempt = *rng.pick(&apps);
                let mut releases = Vec::new();
                let mine: Vec<ContainerId> = live
                    .iter()
                    .filter(|c| c.attempt == attempt)
                    .copied()
                    .collect();
                for _ in 0..rng.below(3) {
                    if !mine.is_empty() && rng.chance(80) {
                        releases.push(*rng.pick(&mine));
                    } else {
                        releases.push(ContainerId::new(attempt, 10_000 + rng.below(5) as i64));
                    }
                }
                let r = s.handle(
                    now,
                    Input::AsksUpdated {
                        attempt,
                        asks: vec![],
                        releases: releases.clone(),
                        blacklist_add: vec![],
                        blacklist_remove: vec![],
                    },
                );
                if let Ok(d) = &r {
                    let expected: BTreeSet<ContainerId> = releases
                        .iter()
                        .filter(|c| m.containers.contains_key(c))
                        .copied()
                        .collect();
                    let done: BTreeSet<ContainerId> =
                        d.completed.iter().map(|c| c.container).collect();
                    assert_eq!(done, expected, "step {step}: released");
                    assert!(d
                        .completed
                        .iter()
                        .all(|c| c.cause == CompletionCause::ReleasedByApplication));
                }
                r
            }
            67..=70 if !apps.is_empty() => {
                let attempt = *rng.pick(&apps);
                let mut add = Vec::new();
                let mut remove = Vec::new();
                for _ in 0..=rng.below(2) {
                    let name = if rng.chance(70) {
                        rng.pick(&HOSTS).to_string()
                    } else {
                        rng.pick(&RACKS).to_string()
                    };
                    if rng.chance(50) {
                        add.push(name);
                    } else {
                        remove.push(name);
                    }
                }
                if let Some(app) = m.apps.get_mut(&attempt) {
                    app.blacklist.extend(add.iter().cloned());
                    for n in &remove {
                        app.blacklist.remove(n);
                    }
                }
                s.handle(
                    now,
                    Input::AsksUpdated {
                        attempt,
                        asks: vec![],
                        releases: vec![],
                        blacklist_add: add,
                        blacklist_remove: remove,
                    },
                )
            }
            71..=82 if !live.is_empty() => {
                let container = *rng.pick(&live);
                let exit = match rng.below(3) {
                    0 => ContainerExit::Expired,
                    1 => ContainerExit::KilledByResourceManager {
                        diagnostics: "test".into(),
                    },
                    _ => ContainerExit::Finished {
                        exit_status: 0,
                        diagnostics: String::new(),
                    },
                };
                let r = s.handle(now, Input::ContainerCompleted { container, exit });
                if let Ok(d) = &r {
                    assert_eq!(d.completed.len(), 1, "step {step}");
                }
                r
            }
            83 if !apps.is_empty() && rng.chance(50) => {
                let attempt = *rng.pick(&apps);
                if rng.chance(50) {
                    s.handle(
                        now,
                        Input::AppPriorityUpdated {
                            attempt,
                            priority: *rng.pick(&[-1, 0, 1, 5]),
                        },
                    )
                } else {
                    // A move to another leaf (or the same one, or none).
                    let queue = if kind == SchedulerKind::Fifo {
                        "default"
                    } else {
                        *rng.pick(&["default", "etl", "adhoc", "batch", "nosuch"])
                    };
                    s.handle(
                        now,
                        Input::AppMoved {
                            attempt,
                            queue: queue.to_string(),
                        },
                    )
                }
            }
            83 => s.handle(now, Input::Tick),
            84 => {
                let (queues, locality) = queues(kind, rng.next());
                let heartbeat = HeartbeatAssignment {
                    max_containers: [None, Some(1), Some(3)][rng.below(3)],
                    max_off_switch: [None, Some(1)][rng.below(2)],
                };
                let r = s.handle(
                    now,
                    Input::QueuesReconfigured {
                        queues: Box::new(queues),
                        locality,
                        heartbeat,
                    },
                );
                assert!(
                    r.is_ok(),
                    "seed {seed} step {step}: reconfiguration refused: {r:?}"
                );
                r
            }
            _ => s.schedule(now, 1 + rng.below(20)),
        };
        if let (Ok(d), false) = (&result, applied) {
            m.apply(d, step);
        }
        m.compare(&s, step);
    }
    m.allocations
}

#[test]
fn random_operations_keep_every_invariant() {
    random_operations(NodeSelectionKind::Spread, SchedulerKind::Fifo);
}

#[test]
fn random_operations_keep_every_invariant_with_packing() {
    random_operations(NodeSelectionKind::Packing, SchedulerKind::Fifo);
}

#[test]
fn random_operations_keep_every_invariant_with_capacity_queues() {
    random_operations(NodeSelectionKind::Spread, SchedulerKind::Capacity);
}

#[test]
fn random_operations_keep_every_invariant_with_fair_queues_and_packing() {
    random_operations(NodeSelectionKind::Packing, SchedulerKind::Fair);
}

fn random_operations(selection: NodeSelectionKind, kind: SchedulerKind) {
    let mut total: BTreeMap<Locality, usize> = BTreeMap::new();
    for seed in 1..=40 {
        for (locality, n) in run(seed, 1_500, selection, kind) {
            *total.entry(locality).or_default() += n;
        }
    }
    // The runs must exercise every kind of allocation, not just errors.
    for locality in [
        Locality::NodeLocal,
        Locality::RackLocal,
        Locality::OffSwitch,
    ] {
        let n = total.get(&locality).copied().unwrap_or(0);
        assert!(
            n >= 500,
            "only {n} {locality} allocations in all seeds: {total:?}"
        );
    }
}
