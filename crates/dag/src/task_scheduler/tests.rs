use super::*;
use crate::config::{CapacitySpecs, TaskSchedulerLimits};
use crate::dag::{VertexPriorityScheme, VertexSpec};
use expect_test::expect;

const GB: u64 = 1024;

fn slot() -> Resource {
    Resource::new(GB, 1)
}

fn scheduler(config: TaskSchedulerConfig) -> TaskScheduler {
    TaskScheduler::new(config).expect("valid config")
}

fn with_workers(s: &mut TaskScheduler, n: u32, slots_each: u64) {
    for i in 0..n {
        s.handle(
            0,
            Input::WorkerAdded {
                worker: WorkerId::new(format!("w{i:03}")),
                capacity: Resource::new(slots_each * GB, slots_each as u32),
            },
        )
        .expect("add worker");
    }
}

fn one_vertex(name: &str, tasks: u32) -> DagSpec {
    DagSpec::new(name)
        .vertex(VertexSpec::new("v", tasks, slot()).with_command("run {vertex} {task}"))
}

fn submit(s: &mut TaskScheduler, id: u64, queue: Option<&str>, spec: DagSpec) {
    s.handle(
        s.last_ms,
        Input::SubmitDag {
            id: DagId(id),
            client: "c".into(),
            queue: queue.map(str::to_string),
            spec,
        },
    )
    .expect("submit");
    s.check_invariants().expect("invariants");
}

fn step(s: &mut TaskScheduler, input: Input) -> TaskDecisions {
    let d = s.handle(s.last_ms, input).expect("input accepted");
    s.check_invariants().expect("invariants");
    d
}

fn finish(s: &mut TaskScheduler, attempt: AttemptId, outcome: AttemptOutcome) -> TaskDecisions {
    step(s, Input::AttemptFinished { attempt, outcome })
}

fn capacity(specs: &str) -> TaskSchedulerConfig {
    TaskSchedulerConfig {
        queue_scheme: DagQueueScheme::Capacity,
        capacity_specs: CapacitySpecs::parse(specs).expect("valid specs"),
        ..TaskSchedulerConfig::default()
    }
}

/// Percent of the group each queue uses, in queue order.
fn usage(s: &TaskScheduler) -> Vec<(String, u64)> {
    s.queue_reports()
        .into_iter()
        .map(|q| (q.name, q.usage_percent))
        .collect()
}

fn pairs(v: &[(&str, u64)]) -> Vec<(String, u64)> {
    v.iter().map(|(n, p)| (n.to_string(), *p)).collect()
}

/// 10 workers x 10 slots of 1 GB: every task is exactly 1% of the group.
fn hundred_slots(config: TaskSchedulerConfig, demand: &[(&str, u32)]) -> TaskScheduler {
    let mut s = scheduler(config);
    with_workers(&mut s, 10, 10);
    for (i, (queue, tasks)) in demand.iter().enumerate() {
        submit(&mut s, i as u64, Some(queue), one_vertex(queue, *tasks));
    }
    step(&mut s, Input::OfferAll);
    s
}

// ----- the seed's first worked example: high=80,medium=50,default=20,background=0 -----

#[test]
fn capacity_example_one_high_gets_its_eighty_percent() {
    // Every queue asks for more than the whole group.
    let s = hundred_slots(
        capacity("high=80,medium=50,default=20,background=0"),
        &[
            ("high", 200),
            ("medium", 200),
            ("default", 200),
            ("background", 200),
        ],
    );
    // high is guaranteed 80%; medium's 50% holds only if high uses no
    // more than 50%, so it gets the remaining 20%; default's 20% holds
    // only if high and medium use no more than 80%: nothing is left.
    assert_eq!(
        usage(&s),
        pairs(&[
            ("high", 80),
            ("medium", 20),
            ("default", 0),
            ("background", 0)
        ])
    );
    expect![[r#"DAGScheduler All-In-One 102400MB: high = 120/80%, medium = 180/20%, default = 200/0%, background = 200/0%"#]]
        .assert_eq(&s.status_line());
}

#[test]
fn capacity_example_one_idle_share_of_high_goes_down() {
    // high claims only 30%: medium gets its 50% (high uses <= 50%),
    // default its 20% (high + medium use <= 80%), background nothing.
    let s = hundred_slots(
        capacity("high=80,medium=50,default=20,background=0"),
        &[
            ("high", 30),
            ("medium", 200),
            ("default", 200),
            ("background", 200),
        ],
    );
    assert_eq!(
        usage(&s),
        pairs(&[
            ("high", 30),
            ("medium", 50),
            ("default", 20),
            ("background", 0)
        ])
    );
}

#[test]
fn capacity_example_one_spare_goes_to_the_highest_queue_that_asks() {
    // high takes 10%; medium 50% and default 20% are guaranteed; the
    // remaining 20% goes to medium, the highest queue still asking.
    let s = hundred_slots(
        capacity("high=80,medium=50,default=20,background=0"),
        &[
            ("high", 10),
            ("medium", 200),
            ("default", 200),
            ("background", 200),
        ],
    );
    assert_eq!(
        usage(&s),
        pairs(&[
            ("high", 10),
            ("medium", 70),
            ("default", 20),
            ("background", 0)
        ])
    );
}

#[test]
fn capacity_example_one_high_over_fifty_lets_medium_take_the_rest_and_default_nothing() {
    // The seed's conditions read as a chain in priority order: a queue
    // below its share is served before every queue after it. high asks
    // for 60% (more than the 50% medium's condition allows), so medium
    // is still served first while below its 50% and takes all high
    // leaves: min(50, 100 - 60) = 40%. high + medium then use 100%,
    // more than the 80% default's 20% depends on, so default gets
    // nothing. (Capping medium at 80 - 60 = 20% to keep default's 20%
    // would rank a lower queue's conditional share above a higher
    // queue's; the seed lists queues in priority order.)
    let s = hundred_slots(
        capacity("high=80,medium=50,default=20,background=0"),
        &[
            ("high", 60),
            ("medium", 200),
            ("default", 200),
            ("background", 200),
        ],
    );
    assert_eq!(
        usage(&s),
        pairs(&[
            ("high", 60),
            ("medium", 40),
            ("default", 0),
            ("background", 0)
        ])
    );
    // ... and with high at 50%, medium gets exactly its 50%.
    let s = hundred_slots(
        capacity("high=80,medium=50,default=20,background=0"),
        &[
            ("high", 50),
            ("medium", 200),
            ("default", 200),
            ("background", 200),
        ],
    );
    assert_eq!(
        usage(&s),
        pairs(&[
            ("high", 50),
            ("medium", 50),
            ("default", 0),
            ("background", 0)
        ])
    );
}

#[test]
fn capacity_background_runs_only_when_nobody_else_asks() {
    let s = hundred_slots(
        capacity("high=80,medium=50,default=20,background=0"),
        &[("default", 5), ("background", 200)],
    );
    assert_eq!(
        usage(&s),
        pairs(&[
            ("high", 0),
            ("medium", 0),
            ("default", 5),
            ("background", 95)
        ])
    );
}

// ----- the seed's second worked example: high=40,medium=20,default=10,background=0 -----

#[test]
fn capacity_example_two_remaining_thirty_percent_goes_to_higher_queues() {
    let s = hundred_slots(
        capacity("high=40,medium=20,default=10,background=0"),
        &[
            ("high", 200),
            ("medium", 200),
            ("default", 200),
            ("background", 200),
        ],
    );
    // 40 + 20 + 10 guaranteed; the remaining 30% goes to high first;
    // background gets nothing while the others ask.
    assert_eq!(
        usage(&s),
        pairs(&[
            ("high", 70),
            ("medium", 20),
            ("default", 10),
            ("background", 0)
        ])
    );
}

#[test]
fn capacity_example_two_spare_passes_down_in_priority_order() {
    // high asks for only 45%: the remaining share goes to medium next.
    let s = hundred_slots(
        capacity("high=40,medium=20,default=10,background=0"),
        &[
            ("high", 45),
            ("medium", 200),
            ("default", 200),
            ("background", 200),
        ],
    );
    assert_eq!(
        usage(&s),
        pairs(&[
            ("high", 45),
            ("medium", 45),
            ("default", 10),
            ("background", 0)
        ])
    );
}

#[test]
fn capacity_default_is_appended_and_unknown_queues_go_there() {
    let mut s = scheduler(capacity("foo=80,bar=20"));
    with_workers(&mut s, 1, 10);
    submit(&mut s, 1, Some("nonexistent"), one_vertex("a", 3));
    submit(&mut s, 2, None, one_vertex("b", 3));
    submit(&mut s, 3, Some("bar"), one_vertex("c", 3));
    assert_eq!(s.dag_report(DagId(1)).expect("known").queue, "default");
    assert_eq!(s.dag_report(DagId(2)).expect("known").queue, "default");
    assert_eq!(s.dag_report(DagId(3)).expect("known").queue, "bar");
    assert_eq!(
        s.status_line(),
        "DAGScheduler All-In-One 10240MB: foo = 0/0%, bar = 3/0%, default = 6/0%"
    );
}

#[test]
fn capacity_never_preempts_lower_queues() {
    let mut s = scheduler(capacity("high=80,medium=50,default=20,background=0"));
    with_workers(&mut s, 10, 10);
    submit(&mut s, 1, Some("background"), one_vertex("bg", 300));
    let d = step(&mut s, Input::OfferAll);
    assert_eq!(d.assignments.len(), 100);
    submit(&mut s, 2, Some("high"), one_vertex("hi", 300));
    let d = step(&mut s, Input::OfferAll);
    assert!(d.assignments.is_empty(), "nothing is preempted for high");
    assert!(d.kills.is_empty());
    // Ten background tasks end; the freed slots go to high.
    let bg: Vec<AttemptId> = s.attempts.keys().take(10).copied().collect();
    for a in bg {
        finish(&mut s, a, AttemptOutcome::Succeeded);
    }
    let d = step(&mut s, Input::OfferAll);
    assert_eq!(d.assignments.len(), 10);
    assert!(d.assignments.iter().all(|a| a.attempt.task.dag == DagId(2)));
    assert_eq!(
        usage(&s),
        pairs(&[
            ("high", 10),
            ("medium", 0),
            ("default", 0),
            ("background", 90)
        ])
    );
}

// ----- readiness, priorities, queue schemes -----

fn chain_dag() -> DagSpec {
    DagSpec::new("chain")
        .vertex(VertexSpec::new("map", 3, slot()))
        .vertex(VertexSpec::new("mid", 3, slot()))
        .vertex(VertexSpec::new("reduce", 2, slot()))
        .edge("map", "mid", EdgeKind::OneToOne)
        .edge("mid", "reduce", EdgeKind::AllToAll)
}

fn running_vertices(s: &TaskScheduler) -> Vec<(u64, u32, u32)> {
    s.attempts
        .keys()
        .map(|a| (a.task.dag.0, a.task.vertex, a.task.task))
        .collect()
}

#[test]
fn one_to_one_tasks_wake_per_task_and_all_to_all_per_vertex() {
    let mut s = scheduler(TaskSchedulerConfig::default());
    with_workers(&mut s, 1, 100);
    submit(&mut s, 1, None, chain_dag());
    let d = step(&mut s, Input::OfferAll);
    assert_eq!(d.assignments.len(), 3, "only the roots are ready");
    let a = |v, t| AttemptId {
        task: TaskId {
            dag: DagId(1),
            vertex: v,
            task: t,
        },
        attempt: 1,
    };
    finish(&mut s, a(0, 1), AttemptOutcome::Succeeded);
    let d = step(&mut s, Input::OfferAll);
    assert_eq!(
        d.assignments.iter().map(|x| x.attempt).collect::<Vec<_>>(),
        vec![a(1, 1)],
        "mid task 1 wakes alone"
    );
    finish(&mut s, a(0, 0), AttemptOutcome::Succeeded);
    finish(&mut s, a(0, 2), AttemptOutcome::Succeeded);
    step(&mut s, Input::OfferAll);
    finish(&mut s, a(1, 0), AttemptOutcome::Succeeded);
    finish(&mut s, a(1, 1), AttemptOutcome::Succeeded);
    let d = step(&mut s, Input::OfferAll);
    assert!(
        d.assignments.is_empty(),
        "reduce waits for the whole of mid"
    );
    finish(&mut s, a(1, 2), AttemptOutcome::Succeeded);
    let d = step(&mut s, Input::OfferAll);
    assert_eq!(d.assignments.len(), 2);
    assert_eq!(d.assignments[0].vertex_name, "reduce");
    finish(&mut s, a(2, 0), AttemptOutcome::Succeeded);
    let d = finish(&mut s, a(2, 1), AttemptOutcome::Succeeded);
    assert_eq!(d.dag_events, vec![DagEvent::Succeeded { dag: DagId(1) }]);
    assert!(
        s.dag_report(DagId(1)).is_none(),
        "finished DAGs are forgotten"
    );
    assert_eq!(s.used(), Resource::ZERO);
}

#[test]
fn fifo_runs_older_dags_first_and_concurrent_interleaves_by_vertex_priority() {
    let two_level = |name: &str| {
        DagSpec::new(name)
            .vertex(VertexSpec::new("a", 2, slot()).with_priority(5))
            .vertex(VertexSpec::new("b", 2, slot()).with_priority(1))
    };
    for (scheme, expected) in [
        (
            DagPriorityScheme::Fifo,
            vec![(1, 0, 0), (1, 1, 0), (1, 1, 1)],
        ),
        (
            DagPriorityScheme::Concurrent,
            vec![(1, 1, 0), (1, 1, 1), (2, 1, 0)],
        ),
    ] {
        let mut s = scheduler(TaskSchedulerConfig {
            dag_priority_scheme: scheme,
            ..TaskSchedulerConfig::default()
        });
        with_workers(&mut s, 1, 3);
        submit(&mut s, 1, None, two_level("first"));
        submit(&mut s, 2, None, two_level("second"));
        step(&mut s, Input::OfferAll);
        assert_eq!(running_vertices(&s), expected, "{scheme}");
    }
}

#[test]
fn consumer_of_a_younger_dag_jumps_over_roots_of_an_older_dag() {
    for (scheme, winner) in [
        (TaskQueueScheme::Indexed, 2u64),
        (TaskQueueScheme::Basic, 1),
    ] {
        let mut s = scheduler(TaskSchedulerConfig {
            task_queue_scheme: scheme,
            ..TaskSchedulerConfig::default()
        });
        // DAG 1 (older, fifo priority 0): five 2 GB roots.
        submit(
            &mut s,
            1,
            None,
            DagSpec::new("big").vertex(VertexSpec::new("scan", 5, Resource::new(2 * GB, 1))),
        );
        // DAG 2 (younger): a 1 GB root feeding a 1 GB consumer.
        submit(
            &mut s,
            2,
            None,
            DagSpec::new("small")
                .vertex(VertexSpec::new("m", 1, slot()))
                .vertex(VertexSpec::new("r", 1, slot()))
                .edge("m", "r", EdgeKind::AllToAll),
        );
        // A 1 GB worker fits only DAG 2's root.
        step(
            &mut s,
            Input::WorkerAdded {
                worker: WorkerId::new("small"),
                capacity: slot(),
            },
        );
        let d = step(
            &mut s,
            Input::Offer {
                worker: WorkerId::new("small"),
            },
        );
        assert_eq!(d.assignments.len(), 1);
        assert_eq!(d.assignments[0].attempt.task.dag, DagId(2));
        finish(&mut s, d.assignments[0].attempt, AttemptOutcome::Succeeded);
        // DAG 2's consumer now has its whole input; DAG 1 still has
        // five roots of higher (fifo) priority. A 2 GB worker fits both.
        step(
            &mut s,
            Input::WorkerAdded {
                worker: WorkerId::new("large"),
                capacity: Resource::new(2 * GB, 1),
            },
        );
        let d = step(
            &mut s,
            Input::Offer {
                worker: WorkerId::new("large"),
            },
        );
        assert_eq!(d.assignments.len(), 1);
        assert_eq!(d.assignments[0].attempt.task.dag, DagId(winner), "{scheme}");
    }
}

#[test]
fn individual_serves_the_dag_using_the_least_memory() {
    let mut s = scheduler(TaskSchedulerConfig {
        queue_scheme: DagQueueScheme::Individual,
        ..TaskSchedulerConfig::default()
    });
    with_workers(&mut s, 1, 4);
    // DAG 1 runs two 1 GB tasks before DAG 2 arrives.
    submit(&mut s, 1, None, one_vertex("old", 10));
    step(
        &mut s,
        Input::WorkerAdded {
            worker: WorkerId::new("tmp"),
            capacity: Resource::new(2 * GB, 2),
        },
    );
    step(
        &mut s,
        Input::Offer {
            worker: WorkerId::new("tmp"),
        },
    );
    submit(&mut s, 2, None, one_vertex("new", 10));
    // The 4-slot worker: DAG 2 (0 GB in use) gets slots until it
    // matches DAG 1 (2 GB); ties go to the older DAG.
    step(
        &mut s,
        Input::Offer {
            worker: WorkerId::new("w000"),
        },
    );
    let per_dag = |id| s.dag_report(DagId(id)).expect("known").running.memory_mb / GB;
    assert_eq!((per_dag(1), per_dag(2)), (3, 3));
    assert_eq!(
        s.status_line(),
        "DAGScheduler All-In-One 6144MB: dag_1 = 7/50%, dag_2 = 7/50%"
    );
}

#[test]
fn failed_attempts_retry_until_the_limit_then_the_dag_fails() {
    let mut s = scheduler(TaskSchedulerConfig {
        max_task_attempts: 2,
        ..TaskSchedulerConfig::default()
    });
    with_workers(&mut s, 1, 4);
    submit(&mut s, 1, None, one_vertex("flaky", 2));
    let d = step(&mut s, Input::OfferAll);
    assert_eq!(d.assignments.len(), 2);
    let first = d.assignments[0].attempt;
    let other = d.assignments[1].attempt;
    assert_eq!(d.assignments[0].command, "run v 0");
    finish(
        &mut s,
        first,
        AttemptOutcome::Failed {
            reason: "exit 1".into(),
        },
    );
    let d = step(&mut s, Input::OfferAll);
    assert_eq!(d.assignments.len(), 1);
    let retry = d.assignments[0].attempt;
    assert_eq!((retry.task, retry.attempt), (first.task, 2));
    // Kills do not count as failures.
    finish(
        &mut s,
        other,
        AttemptOutcome::Killed {
            reason: "preempted".into(),
        },
    );
    step(&mut s, Input::OfferAll);
    let d = finish(
        &mut s,
        retry,
        AttemptOutcome::Failed {
            reason: "exit 3".into(),
        },
    );
    assert_eq!(
        d.dag_events,
        vec![DagEvent::Failed {
            dag: DagId(1),
            reason: "task task_1_00_000000 of vertex 'v' failed 2 attempts \
                     (mr3.am.task.max.failed.attempts = 2); last error: exit 3"
                .into()
        }]
    );
    // The other task's second attempt is asked to stop, and keeps its
    // resources until it does.
    assert_eq!(d.kills.len(), 1);
    assert_eq!(d.kills[0].attempt.attempt, 2);
    assert_eq!(s.used(), slot());
    assert!(matches!(
        s.dag_report(DagId(1))
            .expect("kept while an attempt runs")
            .status,
        DagStatus::Failed { .. }
    ));
    let d = finish(
        &mut s,
        d.kills[0].attempt,
        AttemptOutcome::Killed {
            reason: "killed".into(),
        },
    );
    assert!(d.dag_events.is_empty());
    assert!(s.dag_report(DagId(1)).is_none());
    assert_eq!(s.used(), Resource::ZERO);
}

#[test]
fn kill_dag_drops_pending_and_kills_running() {
    let mut s = scheduler(TaskSchedulerConfig::default());
    with_workers(&mut s, 1, 2);
    submit(&mut s, 1, None, one_vertex("a", 5));
    submit(&mut s, 2, None, one_vertex("b", 1));
    step(&mut s, Input::OfferAll);
    let d = step(
        &mut s,
        Input::KillDag {
            id: DagId(1),
            reason: "user asked".into(),
        },
    );
    assert_eq!(
        d.dag_events,
        vec![DagEvent::Killed {
            dag: DagId(1),
            reason: "user asked".into()
        }]
    );
    assert_eq!(d.kills.len(), 2);
    // Killing again is harmless while its attempts end.
    assert!(step(
        &mut s,
        Input::KillDag {
            id: DagId(1),
            reason: "again".into()
        }
    )
    .dag_events
    .is_empty());
    let d = step(&mut s, Input::OfferAll);
    assert!(
        d.assignments.is_empty(),
        "killed attempts still hold the worker"
    );
    for k in [d.kills.clone(), vec![]].concat() {
        finish(
            &mut s,
            k.attempt,
            AttemptOutcome::Killed { reason: "k".into() },
        );
    }
    let ids: Vec<AttemptId> = s.attempts.keys().copied().collect();
    for a in ids {
        finish(&mut s, a, AttemptOutcome::Succeeded);
    }
    let d = step(&mut s, Input::OfferAll);
    assert_eq!(d.assignments.len(), 1);
    assert_eq!(d.assignments[0].attempt.task.dag, DagId(2));
    assert!(matches!(
        s.handle(
            0,
            Input::KillDag {
                id: DagId(1),
                reason: "gone".into()
            }
        ),
        Err(CoreError::Unknown { .. })
    ));
}

#[test]
fn draining_worker_serves_only_dags_active_at_drain_time() {
    let mut s = scheduler(TaskSchedulerConfig::default());
    with_workers(&mut s, 1, 2);
    submit(&mut s, 1, None, chain_dag());
    let d = step(&mut s, Input::OfferAll);
    assert_eq!(d.assignments.len(), 2);
    let d = step(
        &mut s,
        Input::DrainWorker {
            worker: WorkerId::new("w000"),
        },
    );
    assert!(d.drained_workers.is_empty());
    submit(&mut s, 2, None, one_vertex("later", 4));
    // Finish attempts one by one; the worker keeps serving DAG 1 only.
    let mut guard = 0;
    while s.dag_report(DagId(1)).is_some() {
        guard += 1;
        assert!(guard < 100);
        let a = *s.attempts.keys().next().expect("DAG 1 has work running");
        assert_eq!(a.task.dag, DagId(1));
        let d = finish(&mut s, a, AttemptOutcome::Succeeded);
        if s.dag_report(DagId(1)).is_none() {
            assert_eq!(d.drained_workers, vec![WorkerId::new("w000")]);
            break;
        }
        assert!(d.drained_workers.is_empty());
        step(&mut s, Input::OfferAll);
    }
    let d = step(&mut s, Input::OfferAll);
    assert!(d.assignments.is_empty(), "a drained worker takes nothing");
    step(
        &mut s,
        Input::WorkerRemoved {
            worker: WorkerId::new("w000"),
        },
    );
    assert_eq!(s.capacity(), Resource::ZERO);
    assert_eq!(s.pending_demand(), (4, Resource::new(4 * GB, 4)));
}

#[test]
fn idle_worker_drains_at_once_when_no_dag_is_active() {
    let mut s = scheduler(TaskSchedulerConfig::default());
    with_workers(&mut s, 2, 2);
    let d = step(
        &mut s,
        Input::DrainWorker {
            worker: WorkerId::new("w001"),
        },
    );
    assert_eq!(d.drained_workers, vec![WorkerId::new("w001")]);
    assert_eq!(s.idle_workers(), vec![WorkerId::new("w000")]);
}

#[test]
fn idle_workers_hold_no_output_and_see_no_fitting_work() {
    let mut s = scheduler(TaskSchedulerConfig::default());
    with_workers(&mut s, 2, 1);
    submit(&mut s, 1, None, chain_dag());
    assert!(s.idle_workers().is_empty(), "ready tasks fit both");
    let d = step(
        &mut s,
        Input::Offer {
            worker: WorkerId::new("w000"),
        },
    );
    finish(&mut s, d.assignments[0].attempt, AttemptOutcome::Succeeded);
    // w000 holds output of the active DAG, so it is not idle even
    // without a fitting task.
    let report = s.worker_report(&WorkerId::new("w000")).expect("known");
    assert_eq!(report.holds_output_of, vec![DagId(1)]);
    step(
        &mut s,
        Input::KillDag {
            id: DagId(1),
            reason: "done".into(),
        },
    );
    assert_eq!(
        s.idle_workers(),
        vec![WorkerId::new("w000"), WorkerId::new("w001")]
    );
}

#[test]
fn a_worker_name_can_come_back_after_removal() {
    let mut s = scheduler(TaskSchedulerConfig::default());
    with_workers(&mut s, 1, 3);
    submit(&mut s, 1, None, chain_dag());
    let d = step(&mut s, Input::OfferAll);
    finish(&mut s, d.assignments[0].attempt, AttemptOutcome::Succeeded);
    assert_eq!(
        s.worker_report(&WorkerId::new("w000"))
            .expect("known")
            .holds_output_of,
        vec![DagId(1)]
    );
    step(
        &mut s,
        Input::WorkerRemoved {
            worker: WorkerId::new("w000"),
        },
    );
    step(
        &mut s,
        Input::WorkerAdded {
            worker: WorkerId::new("w000"),
            capacity: slot(),
        },
    );
    let report = s.worker_report(&WorkerId::new("w000")).expect("known");
    assert!(report.holds_output_of.is_empty());
    // The two lost attempts and the woken mid task are ready again.
    assert_eq!(s.dag_report(DagId(1)).expect("known").pending_tasks, 3);
}

#[test]
fn lost_worker_attempts_are_retried_elsewhere() {
    let mut s = scheduler(TaskSchedulerConfig::default());
    with_workers(&mut s, 2, 1);
    submit(&mut s, 1, None, one_vertex("a", 2));
    step(&mut s, Input::OfferAll);
    step(
        &mut s,
        Input::WorkerRemoved {
            worker: WorkerId::new("w000"),
        },
    );
    let report = s.dag_report(DagId(1)).expect("known");
    assert_eq!((report.pending_tasks, report.running_attempts), (1, 1));
    step(
        &mut s,
        Input::WorkerAdded {
            worker: WorkerId::new("w002"),
            capacity: slot(),
        },
    );
    let d = step(&mut s, Input::OfferAll);
    assert_eq!(d.assignments.len(), 1);
    assert_eq!(d.assignments[0].attempt.attempt, 2);
    assert_eq!(d.assignments[0].worker, WorkerId::new("w002"));
}

fn three_stage() -> DagSpec {
    DagSpec::new("three")
        .vertex(VertexSpec::new("a", 2, slot()))
        .vertex(VertexSpec::new("b", 1, slot()))
        .vertex(VertexSpec::new("c", 1, slot()))
        .edge("a", "b", EdgeKind::AllToAll)
        .edge("b", "c", EdgeKind::AllToAll)
}

/// Runs every assignment in `d` to success, returning where each ran.
fn succeed_all(s: &mut TaskScheduler, d: &TaskDecisions) -> Vec<(u32, u32, WorkerId)> {
    let mut ran = Vec::new();
    for a in &d.assignments {
        finish(s, a.attempt, AttemptOutcome::Succeeded);
        ran.push((a.attempt.task.vertex, a.attempt.task.task, a.worker.clone()));
    }
    ran
}

#[test]
fn lost_output_a_running_consumer_needs_is_made_again() {
    let mut s = scheduler(TaskSchedulerConfig::default());
    with_workers(&mut s, 2, 1);
    submit(&mut s, 1, None, chain_dag());
    // map 0 on w000, map 1 on w001; then mid 0 and mid 1 behind them.
    let d = step(&mut s, Input::OfferAll);
    let ran = succeed_all(&mut s, &d);
    assert_eq!(ran.len(), 2);
    let d = step(&mut s, Input::OfferAll);
    let mids: Vec<AttemptId> = d.assignments.iter().map(|a| a.attempt).collect();
    assert!(mids.iter().all(|a| a.task.vertex == 1), "{mids:?}");
    // w001 dies: the mid running there is retried; the map output it
    // held is needed by that mid, so map 1 runs again first.
    let lost = ran
        .iter()
        .find(|r| r.2 == WorkerId::new("w001"))
        .expect("ran");
    let d = step(
        &mut s,
        Input::WorkerRemoved {
            worker: WorkerId::new("w001"),
        },
    );
    assert!(d.kills.is_empty(), "the mid on w000 reads only map 0");
    let report = s.dag_report(DagId(1)).expect("known");
    assert_eq!(report.succeeded_tasks, 1, "map 0 only");
    let mid0 = *mids
        .iter()
        .find(|a| s.attempts.contains_key(a))
        .expect("the mid on w000 still runs");
    finish(&mut s, mid0, AttemptOutcome::Succeeded);
    let d = step(&mut s, Input::OfferAll);
    assert_eq!(d.assignments.len(), 1);
    assert_eq!(
        (
            d.assignments[0].attempt.task.vertex,
            d.assignments[0].attempt.task.task
        ),
        (0, lost.1),
        "the lost map output is made again"
    );
    assert_eq!(d.assignments[0].attempt.attempt, 2);
    succeed_all(&mut s, &d);
    // Then everything else, to the end.
    for _ in 0..10 {
        let d = step(&mut s, Input::OfferAll);
        if d.assignments.is_empty() {
            break;
        }
        let mut ended = false;
        for a in &d.assignments {
            ended |= !finish(&mut s, a.attempt, AttemptOutcome::Succeeded)
                .dag_events
                .is_empty();
        }
        if ended {
            break;
        }
    }
    assert!(s.active_dags().is_empty(), "the DAG succeeded");
}

#[test]
fn consumers_lose_readiness_and_running_ones_are_stopped() {
    let mut s = scheduler(TaskSchedulerConfig::default());
    with_workers(&mut s, 2, 1);
    submit(&mut s, 1, None, three_stage());
    let d = step(&mut s, Input::OfferAll);
    succeed_all(&mut s, &d); // a0 on w000, a1 on w001
    let d = step(&mut s, Input::OfferAll);
    assert_eq!(d.assignments.len(), 1, "b");
    let b = d.assignments[0].clone();
    let d = step(
        &mut s,
        Input::WorkerRemoved {
            worker: if b.worker == WorkerId::new("w000") {
                WorkerId::new("w001")
            } else {
                WorkerId::new("w000")
            },
        },
    );
    // b runs on the survivor, but one of its inputs is gone: it is asked
    // to stop, and its failure (a fetch error) is not held against it.
    assert_eq!(
        d.kills,
        vec![AttemptKill {
            attempt: b.attempt,
            worker: b.worker.clone()
        }]
    );
    let d = finish(
        &mut s,
        b.attempt,
        AttemptOutcome::Failed {
            reason: "fetching the output of task 1 of vertex 'a' failed".into(),
        },
    );
    assert!(d.dag_events.is_empty(), "not a failure of b");
    let report = s.dag_report(DagId(1)).expect("known");
    assert_eq!(report.pending_tasks, 1, "the lost a task, not b");
    let d = step(&mut s, Input::OfferAll);
    assert_eq!(d.assignments[0].attempt.task.vertex, 0);
    succeed_all(&mut s, &d);
    let d = step(&mut s, Input::OfferAll);
    assert_eq!(d.assignments[0].attempt.task.vertex, 1);
    assert_eq!(d.assignments[0].attempt.attempt, 2);
}

#[test]
fn outputs_nobody_needs_are_not_made_again_until_a_rerun_needs_them() {
    let mut s = scheduler(TaskSchedulerConfig::default());
    with_workers(&mut s, 1, 2);
    submit(&mut s, 1, None, three_stage());
    let w = |n: &str| WorkerId::new(n);
    let d = step(&mut s, Input::Offer { worker: w("w000") });
    assert_eq!(succeed_all(&mut s, &d).len(), 2, "both a tasks on w000");
    let add = |s: &mut TaskScheduler, name: &str, slots: u64| {
        step(
            s,
            Input::WorkerAdded {
                worker: WorkerId::new(name),
                capacity: Resource::new(slots * GB, slots as u32),
            },
        );
    };
    add(&mut s, "w001", 1);
    let d = step(&mut s, Input::Offer { worker: w("w001") });
    assert_eq!(succeed_all(&mut s, &d), vec![(1, 0, w("w001"))]);
    // b has read the a outputs: losing them now costs nothing.
    let d = step(&mut s, Input::WorkerRemoved { worker: w("w000") });
    assert!(d.kills.is_empty());
    let report = s.dag_report(DagId(1)).expect("known");
    assert_eq!((report.pending_tasks, report.succeeded_tasks), (1, 3));
    // Lose b's output before c runs: b runs again, and before it the a
    // outputs it needs, lost earlier; c waits for all of them.
    add(&mut s, "w002", 2);
    let d = step(&mut s, Input::WorkerRemoved { worker: w("w001") });
    assert!(d.kills.is_empty());
    let report = s.dag_report(DagId(1)).expect("known");
    assert_eq!((report.pending_tasks, report.succeeded_tasks), (2, 0));
    let d = step(&mut s, Input::OfferAll);
    let again: Vec<(u32, u32, u32)> = d
        .assignments
        .iter()
        .map(|a| {
            (
                a.attempt.task.vertex,
                a.attempt.task.task,
                a.attempt.attempt,
            )
        })
        .collect();
    assert_eq!(again, vec![(0, 0, 2), (0, 1, 2)]);
    succeed_all(&mut s, &d);
    let d = step(&mut s, Input::OfferAll);
    assert_eq!(succeed_all(&mut s, &d), vec![(1, 0, w("w002"))]);
    let d = step(&mut s, Input::OfferAll);
    assert_eq!(d.assignments[0].attempt.task.vertex, 2, "c at last");
}

#[test]
fn status_line_is_periodic_on_ticks() {
    let mut s = scheduler(capacity("high=80,medium=50,default=20,background=0"));
    with_workers(&mut s, 1, 1);
    let line = |s: &mut TaskScheduler, t| s.handle(t, Input::Tick).expect("tick").status_line;
    assert_eq!(
        line(&mut s, 1_000).as_deref(),
        Some("DAGScheduler All-In-One 1024MB: high = 0/0%, medium = 0/0%, default = 0/0%, background = 0/0%")
    );
    assert_eq!(line(&mut s, 10_999), None);
    assert!(line(&mut s, 11_000).is_some());
    assert_eq!(line(&mut s, 20_000), None);
    let mut quiet = scheduler(TaskSchedulerConfig {
        status_interval_ms: 0,
        ..TaskSchedulerConfig::default()
    });
    assert_eq!(line(&mut quiet, 5_000), None);
}

#[test]
fn contract_errors_change_nothing() {
    let mut s = scheduler(TaskSchedulerConfig {
        limits: TaskSchedulerConfig::default().limits,
        ..TaskSchedulerConfig::default()
    });
    with_workers(&mut s, 1, 1);
    s.handle(100, Input::Tick).expect("tick");
    assert_eq!(
        s.handle(99, Input::Tick).expect_err("must be refused"),
        CoreError::TimeWentBackwards {
            now_ms: 99,
            last_ms: 100
        }
    );
    assert!(matches!(
        s.handle(
            100,
            Input::WorkerAdded {
                worker: WorkerId::new("w000"),
                capacity: slot()
            }
        ),
        Err(CoreError::Duplicate { .. })
    ));
    submit(&mut s, 1, None, one_vertex("a", 1));
    assert!(matches!(
        s.handle(
            100,
            Input::SubmitDag {
                id: DagId(1),
                client: "c".into(),
                queue: None,
                spec: one_vertex("a", 1)
            }
        ),
        Err(CoreError::Duplicate { .. })
    ));
    let bad = DagSpec::new("bad").vertex(VertexSpec::new("v", 0, slot()));
    assert_eq!(
        s.handle(
            100,
            Input::SubmitDag {
                id: DagId(2),
                client: "c".into(),
                queue: None,
                spec: bad
            }
        )
        .expect_err("must be refused")
        .to_string(),
        "DAG rejected: DAG 'bad': vertex 'v' has 0 tasks; every vertex needs at least one"
    );
    let ghost = AttemptId {
        task: TaskId {
            dag: DagId(1),
            vertex: 0,
            task: 0,
        },
        attempt: 7,
    };
    assert!(matches!(
        s.handle(
            100,
            Input::AttemptFinished {
                attempt: ghost,
                outcome: AttemptOutcome::Succeeded
            }
        ),
        Err(CoreError::Unknown {
            what: "attempt",
            ..
        })
    ));
    assert!(matches!(
        s.handle(
            100,
            Input::Offer {
                worker: WorkerId::new("nobody")
            }
        ),
        Err(CoreError::Unknown { what: "worker", .. })
    ));
    s.check_invariants().expect("invariants");
    assert_eq!(s.active_dags(), vec![DagId(1)]);

    let mut small = scheduler(TaskSchedulerConfig {
        limits: TaskSchedulerLimits {
            max_active_dags: 1,
            ..TaskSchedulerLimits::default()
        },
        ..TaskSchedulerConfig::default()
    });
    submit(&mut small, 1, None, one_vertex("a", 1));
    assert_eq!(
        small
            .handle(
                0,
                Input::SubmitDag {
                    id: DagId(2),
                    client: "c".into(),
                    queue: None,
                    spec: one_vertex("b", 1)
                }
            )
            .expect_err("must be refused")
            .to_string(),
        "limit mr3.am.max.num.concurrent.dags = 1 reached: 1 DAGs are active; dag_2 is refused"
    );
}

#[test]
fn vertex_priority_scheme_orders_tasks_within_a_dag() {
    // Two independent branches; intact priorities prefer branch b.
    let spec = DagSpec::new("d")
        .vertex(VertexSpec::new("a", 1, slot()).with_priority(9))
        .vertex(VertexSpec::new("b", 1, slot()).with_priority(2));
    for (scheme, first) in [
        (VertexPriorityScheme::Intact, 1u32),
        (VertexPriorityScheme::Roots, 0),
        (VertexPriorityScheme::Normalize, 1),
    ] {
        let mut s = scheduler(TaskSchedulerConfig {
            vertex_priority_scheme: scheme,
            ..TaskSchedulerConfig::default()
        });
        with_workers(&mut s, 1, 1);
        submit(&mut s, 1, None, spec.clone());
        let d = step(&mut s, Input::OfferAll);
        assert_eq!(d.assignments[0].attempt.task.vertex, first, "{scheme}");
    }
}

/// The checks notice a corrupted state: each corruption of a consistent one (two
/// DAGs in capacity queues, attempts running) is named.
#[test]
fn corrupted_states_fail_the_invariants() {
    type Corruption = fn(&mut TaskScheduler);
    let corruptions: [([&str; 2], Corruption); 4] = [
        (["worker w", "but its attempts sum to"], |s| {
            if let Some(w) = s.workers.values_mut().find(|w| !w.running.is_empty()) {
                w.used = Resource::ZERO;
            }
        }),
        (["group capacity", "is not the workers' sum"], |s| {
            s.capacity = s.capacity.saturating_add(slot());
        }),
        (["queue ", "pending tasks but holds"], |s| {
            if let Some(q) = s.shared.iter_mut().find(|q| q.pending_tasks > 0) {
                q.pending_tasks += 1;
            }
        }),
        (["queue ", "but its attempts sum to"], |s| {
            if let Some(q) = s.shared.iter_mut().find(|q| q.running != Resource::ZERO) {
                q.running = Resource::ZERO;
            }
        }),
    ];
    for ([start, rest], corrupt) in corruptions {
        let mut s = hundred_slots(capacity("high=80,low=20"), &[("high", 150), ("low", 150)]);
        s.check_invariants().expect("consistent before");
        corrupt(&mut s);
        let v = s.check_invariants().expect_err(rest).to_string();
        assert!(v.contains(start) && v.contains(rest), "{v}");
    }
}
