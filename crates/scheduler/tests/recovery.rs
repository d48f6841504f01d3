//! Work-preserving RM restart in the core: a recovered attempt takes back
//! the containers re-registering nodes still run (node, queue, user and
//! application usage), its AM container is recognised, new container ids
//! carry the new epoch, and nothing is placed while allocations are held.

use spindle_common::{ApplicationAttemptId, ApplicationId, ContainerId, NodeId, Resource};
use spindle_scheduler::{
    Decisions, Input, NodeUpdate, ResourceAsk, Scheduler, SchedulerConfig, SchedulerError, ANY,
};

fn attempt(app: i32) -> ApplicationAttemptId {
    ApplicationAttemptId::new(ApplicationId::new(1_700_000_000_000, app), 1)
}

fn ok(result: Result<Decisions, SchedulerError>) -> Decisions {
    match result {
        Ok(d) => d,
        Err(e) => panic!("unexpected error: {e}"),
    }
}

/// A scheduler of epoch 1 (restarted once) with one 8 GB node.
fn restarted() -> (Scheduler, NodeId) {
    let config = SchedulerConfig {
        epoch: 1,
        ..SchedulerConfig::default()
    };
    let mut s = Scheduler::new(config).expect("config");
    let node = NodeId::new("worker-1", 45454);
    ok(s.handle(
        0,
        Input::NodeAdded {
            node: node.clone(),
            rack: "/default-rack".into(),
            capability: Resource::new(8192, 8),
        },
    ));
    (s, node)
}

fn recovered_app(a: ApplicationAttemptId) -> Input {
    Input::AppRecovered {
        attempt: a,
        queue: "default".into(),
        user: "alice".into(),
        priority: 0,
        unmanaged_am: false,
    }
}

fn recovered(container: ContainerId, node: &NodeId, mb: i64, am: bool) -> Input {
    Input::ContainerRecovered {
        container,
        node: node.clone(),
        resource: Resource::new(mb, 1),
        priority: if am { 0 } else { 1 },
        am,
    }
}

fn ask(a: ApplicationAttemptId, mb: i64, n: i32) -> Input {
    Input::AsksUpdated {
        attempt: a,
        asks: vec![ResourceAsk::new(1, ANY, Resource::new(mb, 1), n)],
        releases: vec![],
        blacklist_add: vec![],
        blacklist_remove: vec![],
    }
}

fn heartbeat(node: &NodeId) -> Input {
    Input::NodeUpdated {
        node: node.clone(),
        update: NodeUpdate::heartbeat(),
    }
}

#[test]
fn recovered_containers_are_counted_everywhere_and_new_ids_do_not_collide() {
    let (mut s, node) = restarted();
    let a = attempt(1);
    ok(s.handle(1, recovered_app(a)));
    // Allocated by the RM of epoch 0: the AM (1) and a task (2).
    let am = ContainerId::with_epoch(a, 0, 1);
    let task = ContainerId::with_epoch(a, 0, 2);
    ok(s.handle(2, recovered(am, &node, 1024, true)));
    ok(s.handle(2, recovered(task, &node, 2048, false)));
    s.check_invariants().expect("invariants");

    let n = s.node(&node).expect("node");
    assert_eq!(n.used, Resource::new(3072, 2));
    assert_eq!(n.containers, vec![am, task]);
    let app = s.app(&a).expect("app");
    assert_eq!(app.used, Resource::new(3072, 2));
    let q = s.queue("root.default").expect("queue");
    assert_eq!(q.used, Resource::new(3072, 2));
    assert_eq!(
        q.am_used,
        Resource::new(1024, 1),
        "the AM container is the AM's"
    );
    assert_eq!(s.cluster().used, Resource::new(3072, 2));

    // A new container of the same attempt: the new epoch, sequence 1, and
    // not taken for an AM container.
    ok(s.handle(3, ask(a, 1024, 1)));
    let d = ok(s.handle(4, heartbeat(&node)));
    assert_eq!(d.allocations.len(), 1);
    let fresh = d.allocations[0].container;
    assert_eq!(fresh, ContainerId::with_epoch(a, 1, 1));
    assert_ne!(fresh, am);
    assert_eq!(
        s.queue("root.default").expect("queue").am_used,
        Resource::new(1024, 1)
    );
    s.check_invariants().expect("invariants");

    // A recovered container's end gives its resources back.
    ok(s.handle(
        5,
        Input::ContainerCompleted {
            container: task,
            exit: spindle_scheduler::ContainerExit::Finished {
                exit_status: 0,
                diagnostics: String::new(),
            },
        },
    ));
    assert_eq!(s.node(&node).expect("node").used, Resource::new(2048, 2));
    s.check_invariants().expect("invariants");
}

#[test]
fn a_recovered_attempt_never_gets_a_second_am_container() {
    let (mut s, node) = restarted();
    let a = attempt(1);
    ok(s.handle(1, recovered_app(a)));
    // The AM asks again before its node has re-registered its AM container.
    ok(s.handle(2, ask(a, 1024, 1)));
    let d = ok(s.handle(3, heartbeat(&node)));
    assert_eq!(d.allocations.len(), 1);
    assert_eq!(
        s.queue("root.default").expect("queue").am_used,
        Resource::ZERO,
        "a task container of a recovered attempt is no AM container"
    );
    // Whereas a new attempt's first container is its AM's.
    let b = attempt(2);
    ok(s.handle(
        4,
        Input::AppAdded {
            attempt: b,
            queue: "default".into(),
            user: "alice".into(),
            priority: 0,
            unmanaged_am: false,
        },
    ));
    ok(s.handle(4, ask(b, 1024, 1)));
    ok(s.handle(5, heartbeat(&node)));
    assert_eq!(
        s.queue("root.default").expect("queue").am_used,
        Resource::new(1024, 1)
    );
    s.check_invariants().expect("invariants");
}

#[test]
fn a_node_can_come_back_fuller_than_it_is_and_takes_nothing_until_it_fits() {
    let (mut s, node) = restarted();
    let a = attempt(1);
    ok(s.handle(1, recovered_app(a)));
    ok(s.handle(
        2,
        recovered(ContainerId::with_epoch(a, 0, 1), &node, 6144, true),
    ));
    ok(s.handle(
        2,
        recovered(ContainerId::with_epoch(a, 0, 2), &node, 4096, false),
    ));
    s.check_invariants().expect("invariants");
    assert_eq!(s.node(&node).expect("node").used, Resource::new(10240, 2));
    ok(s.handle(3, ask(a, 1024, 1)));
    let d = ok(s.handle(4, heartbeat(&node)));
    assert!(d.allocations.is_empty(), "{d:?}");
}

#[test]
fn invalid_recoveries_are_refused_and_change_nothing() {
    let (mut s, node) = restarted();
    let a = attempt(1);
    let c = ContainerId::with_epoch(a, 0, 1);
    // Unknown attempt.
    assert!(matches!(
        s.handle(1, recovered(c, &node, 1024, true)),
        Err(SchedulerError::UnknownAttempt(_))
    ));
    ok(s.handle(1, recovered_app(a)));
    // Unknown node.
    let elsewhere = NodeId::new("worker-9", 45454);
    assert!(matches!(
        s.handle(1, recovered(c, &elsewhere, 1024, true)),
        Err(SchedulerError::UnknownNode(_))
    ));
    // An epoch after the core's own.
    assert!(s
        .handle(
            1,
            recovered(ContainerId::with_epoch(a, 2, 1), &node, 1024, false)
        )
        .is_err());
    // Empty.
    let empty = Input::ContainerRecovered {
        container: c,
        node: node.clone(),
        resource: Resource::ZERO,
        priority: 1,
        am: false,
    };
    assert!(s.handle(1, empty).is_err());
    assert_eq!(s.cluster().used, Resource::ZERO);
    // Twice.
    ok(s.handle(1, recovered(c, &node, 1024, true)));
    assert!(s.handle(1, recovered(c, &node, 1024, true)).is_err());
    assert_eq!(s.cluster().used, Resource::new(1024, 1));
    s.check_invariants().expect("invariants");
}

#[test]
fn nothing_is_allocated_while_allocations_are_held() {
    let (mut s, node) = restarted();
    ok(s.handle(0, Input::HoldAllocations { until_ms: 10_000 }));
    let a = attempt(1);
    ok(s.handle(1, recovered_app(a)));
    ok(s.handle(2, ask(a, 1024, 2)));
    assert!(ok(s.handle(3, heartbeat(&node))).allocations.is_empty());
    assert!(s.schedule(9_999, 10).expect("pass").allocations.is_empty());
    // The asks wait; once the hold is over they are served.
    assert_eq!(s.app(&a).expect("app").pending, Resource::new(2048, 2));
    let d = ok(s.handle(10_000, heartbeat(&node)));
    assert_eq!(d.allocations.len(), 2);
}
