//! Tests of the public API that the scenario language does not reach:
//! full container ids, errors and their atomicity, reports, custom
//! policies.

use spindle_common::{ApplicationAttemptId, ApplicationId, ContainerId, NodeId, Resource};
use spindle_scheduler::policy::{NodeSelection, NodeView, SortKey};
use spindle_scheduler::{
    exit_status, CompletionCause, ConfigError, Decisions, Input, Locality, NodeAction, NodeUpdate,
    ResourceAsk, Scheduler, SchedulerConfig, SchedulerError, ANY,
};

fn attempt(app: i32, attempt: i32) -> ApplicationAttemptId {
    ApplicationAttemptId::new(ApplicationId::new(1_700_000_000_000, app), attempt)
}

fn ok(result: Result<Decisions, SchedulerError>) -> Decisions {
    match result {
        Ok(d) => d,
        Err(e) => panic!("unexpected error: {e}"),
    }
}

fn scheduler(config: SchedulerConfig) -> Scheduler {
    match Scheduler::new(config) {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    }
}

fn add_node(s: &mut Scheduler, host: &str, rack: &str, mb: i64, vcores: i32) -> NodeId {
    let node = NodeId::new(host, 45454);
    ok(s.handle(
        0,
        Input::NodeAdded {
            node: node.clone(),
            rack: rack.into(),
            capability: Resource::new(mb, vcores),
        },
    ));
    node
}

fn add_app(s: &mut Scheduler, a: ApplicationAttemptId) {
    ok(s.handle(
        0,
        Input::AppAdded {
            attempt: a,
            queue: "default".into(),
            user: "alice".into(),
            priority: 0,
            unmanaged_am: false,
        },
    ));
}

fn asks(a: ApplicationAttemptId, asks: Vec<ResourceAsk>, releases: Vec<ContainerId>) -> Input {
    Input::AsksUpdated {
        attempt: a,
        asks,
        releases,
        blacklist_add: vec![],
        blacklist_remove: vec![],
    }
}

fn check(s: &Scheduler) {
    if let Err(e) = s.check_invariants() {
        panic!("{e}");
    }
}

#[test]
fn container_ids_carry_epoch_and_count_from_one() {
    let mut s = scheduler(SchedulerConfig {
        epoch: 2,
        ..SchedulerConfig::default()
    });
    let node = add_node(&mut s, "w1", "/default-rack", 8192, 8);
    let a = attempt(7, 1);
    add_app(&mut s, a);
    ok(s.handle(
        1,
        asks(
            a,
            vec![ResourceAsk::new(0, ANY, Resource::new(2000, 1), 1)],
            vec![],
        ),
    ));
    let d = ok(s.handle(
        5,
        Input::NodeUpdated {
            node: node.clone(),
            update: NodeUpdate::heartbeat(),
        },
    ));
    assert_eq!(d.allocations.len(), 1);
    let am = &d.allocations[0];
    assert_eq!(
        am.container.to_string(),
        "container_e02_1700000000000_0007_01_000001"
    );
    assert_eq!(am.container.sequence(), 1);
    assert_eq!(am.attempt(), a);
    assert_eq!(am.node, node);
    assert_eq!(am.resource, Resource::new(2048, 1));
    assert_eq!(am.locality, Locality::OffSwitch);
    assert_eq!(am.allocated_at_ms, 5);
    assert_eq!(am.allocation_request_id, -1);
    let report = s
        .container(&am.container)
        .map(|c| (c.node, c.allocated_at_ms));
    assert_eq!(report, Some((node, 5)));

    ok(s.handle(
        6,
        asks(
            a,
            vec![ResourceAsk::new(1, ANY, Resource::new(1024, 1), 1)],
            vec![],
        ),
    ));
    let d = ok(s.schedule(7, 10));
    assert_eq!(
        d.allocations
            .first()
            .map(|x| x.container.to_string())
            .as_deref(),
        Some("container_e02_1700000000000_0007_01_000002")
    );
    check(&s);
}

#[test]
fn an_invalid_update_changes_nothing() {
    let mut s = scheduler(SchedulerConfig::default());
    let node = add_node(&mut s, "w1", "/r1", 8192, 8);
    let a = attempt(1, 1);
    let b = attempt(2, 1);
    add_app(&mut s, a);
    add_app(&mut s, b);
    ok(s.handle(
        1,
        asks(
            b,
            vec![ResourceAsk::new(0, ANY, Resource::new(1024, 1), 1)],
            vec![],
        ),
    ));
    let d = ok(s.schedule(2, 10));
    let b_container = d.allocations[0].container;

    // a tries to release b's container, in the same call as a valid ask:
    // the whole update is refused.
    let err = s
        .handle(
            3,
            asks(
                a,
                vec![ResourceAsk::new(1, ANY, Resource::new(1024, 1), 5)],
                vec![b_container],
            ),
        )
        .err();
    assert_eq!(
        err,
        Some(SchedulerError::InvalidRelease {
            attempt: a,
            container: b_container
        })
    );
    assert_eq!(s.asks(&a), Some(vec![]));
    assert!(s.container(&b_container).is_some());

    // The second ask is bad: the first is not applied either.
    let err = s
        .handle(
            4,
            asks(
                a,
                vec![
                    ResourceAsk::new(1, ANY, Resource::new(1024, 1), 5),
                    ResourceAsk::new(1, "", Resource::new(1024, 1), 5),
                ],
                vec![],
            ),
        )
        .err();
    assert!(
        matches!(err, Some(SchedulerError::InvalidAsk { index: 1, .. })),
        "{err:?}"
    );
    assert_eq!(s.asks(&a), Some(vec![]));

    // A clock going backwards is refused before anything happens.
    let err = s.handle(1, Input::NodeRemoved { node: node.clone() }).err();
    assert_eq!(
        err,
        Some(SchedulerError::ClockWentBackwards {
            now_ms: 1,
            last_ms: 4
        })
    );
    assert!(s.node(&node).is_some());
    assert_eq!(s.now_ms(), 4);

    // Unschedulable host names.
    let err = s
        .handle(
            5,
            Input::NodeAdded {
                node: NodeId::new(ANY, 1),
                rack: "/r".into(),
                capability: Resource::new(1, 1),
            },
        )
        .err();
    assert!(
        matches!(err, Some(SchedulerError::InvalidNode { .. })),
        "{err:?}"
    );
    check(&s);
}

#[test]
fn releases_report_aborted_and_ask_the_node_to_kill() {
    let mut s = scheduler(SchedulerConfig::default());
    let node = add_node(&mut s, "w1", "/r1", 8192, 8);
    let a = attempt(1, 1);
    add_app(&mut s, a);
    ok(s.handle(
        1,
        asks(
            a,
            vec![
                ResourceAsk::new(3, "w1", Resource::new(1024, 1), 1),
                ResourceAsk::new(3, "/r1", Resource::new(1024, 1), 1),
                ResourceAsk::new(3, ANY, Resource::new(1024, 1), 1).relax(false),
            ],
            vec![],
        ),
    ));
    let d = ok(s.handle(
        2,
        Input::NodeUpdated {
            node: node.clone(),
            update: NodeUpdate::heartbeat(),
        },
    ));
    let c = d.allocations[0].container;
    assert_eq!(d.allocations[0].locality, Locality::NodeLocal);
    assert_eq!(s.cluster().used, Resource::new(1024, 1));

    let d = ok(s.handle(3, asks(a, vec![], vec![c, c])));
    assert_eq!(d.completed.len(), 1);
    let done = &d.completed[0];
    assert_eq!(done.container, c);
    assert_eq!(done.attempt(), a);
    assert_eq!(done.exit_status, exit_status::ABORTED);
    assert_eq!(done.cause, CompletionCause::ReleasedByApplication);
    assert_eq!(done.resource, Resource::new(1024, 1));
    assert_eq!(
        d.node_actions,
        vec![NodeAction::KillContainer { node, container: c }]
    );
    assert_eq!(s.cluster().used, Resource::ZERO);
    assert_eq!(s.app(&a).map(|r| r.used), Some(Resource::ZERO));
    assert_eq!(s.queue("default").map(|q| q.used), Some(Resource::ZERO));
    check(&s);
}

#[test]
fn reports() {
    let mut s = scheduler(SchedulerConfig::default());
    let n1 = add_node(&mut s, "w1", "/r1", 4096, 4);
    add_node(&mut s, "w2", "/r2", 4096, 4);
    let a = attempt(1, 1);
    add_app(&mut s, a);
    ok(s.handle(
        1,
        asks(
            a,
            vec![ResourceAsk::new(1, ANY, Resource::new(1024, 1), 3).with_allocation_request_id(4)],
            vec![],
        ),
    ));
    ok(s.handle(
        1,
        Input::AsksUpdated {
            attempt: a,
            asks: vec![],
            releases: vec![],
            blacklist_add: vec!["w2".into(), "w9".into()],
            blacklist_remove: vec!["w9".into()],
        },
    ));
    ok(s.handle(
        2,
        Input::NodeUpdated {
            node: n1.clone(),
            update: NodeUpdate {
                schedulable: Some(false),
                ..NodeUpdate::default()
            },
        },
    ));
    let cluster = s.cluster();
    assert_eq!(cluster.nodes, 2);
    assert_eq!(cluster.schedulable_nodes, 1);
    assert_eq!(cluster.capability, Resource::new(8192, 8));
    assert_eq!(cluster.apps, 1);
    assert_eq!(cluster.active_apps, 1);
    assert_eq!(s.serving_order(), vec![a]);
    let app = s.app(&a);
    assert_eq!(
        app.as_ref().map(|r| r.pending),
        Some(Resource::new(3072, 3))
    );
    assert_eq!(
        app.as_ref().map(|r| r.blacklist.clone()),
        Some(vec!["w2".to_string()])
    );
    assert_eq!(
        s.asks(&a),
        Some(vec![
            ResourceAsk::new(1, ANY, Resource::new(1024, 1), 3).with_allocation_request_id(4)
        ])
    );
    // Nothing can be placed: w1 is draining, w2 is blacklisted.
    assert!(ok(s.schedule(3, 100)).is_empty());
    assert_eq!(s.node(&n1).map(|n| n.schedulable), Some(false));
    assert_eq!(s.nodes().len(), 2);
    // root and root.default; the default queue holds the attempt.
    assert_eq!(s.queues().len(), 2);
    assert_eq!(
        s.queue("default").map(|q| (q.path, q.apps)),
        Some(("root.default".to_string(), 1))
    );
    assert_eq!(s.apps().len(), 1);
    check(&s);
}

/// A node selection policy of the test's own, to show the seam: it
/// prefers the busiest node that still fits (a crude packing).
#[derive(Debug)]
struct Busiest;

impl NodeSelection for Busiest {
    fn name(&self) -> &'static str {
        "busiest"
    }

    fn node_key(&mut self, node: &NodeView<'_>) -> SortKey {
        SortKey::new(node.available().memory_mb, 0)
    }
}

#[test]
fn custom_node_selection() {
    let config = SchedulerConfig::default();
    let mut s = match Scheduler::with_selection(config, Box::new(Busiest)) {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    };
    let w1 = add_node(&mut s, "w1", "/r", 4096, 4);
    add_node(&mut s, "w2", "/r", 4096, 4);
    let a = attempt(1, 1);
    add_app(&mut s, a);
    ok(s.handle(
        1,
        asks(
            a,
            vec![ResourceAsk::new(1, ANY, Resource::new(1024, 1), 4)],
            vec![],
        ),
    ));
    let d = ok(s.schedule(2, 100));
    let nodes: Vec<&NodeId> = d.allocations.iter().map(|x| &x.node).collect();
    assert_eq!(nodes, vec![&w1, &w1, &w1, &w1]);
    check(&s);
}

#[test]
fn unknown_policy_names_are_errors() {
    let err = "lottery"
        .parse::<spindle_scheduler::NodeSelectionKind>()
        .err();
    assert!(matches!(err, Some(ConfigError::UnknownPolicy { .. })));
    assert_eq!(
        spindle_scheduler::SchedulerKind::from_class_name("org.example.LotteryScheduler"),
        None
    );
    let bad = SchedulerConfig {
        maximum_allocation: Resource::new(512, 1),
        ..SchedulerConfig::default()
    };
    assert!(Scheduler::new(bad).is_err());
}
