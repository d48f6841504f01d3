//! The session driven as the AM drives it: one input at a time, each
//! followed by the settle.

use std::collections::BTreeMap;

use super::*;
use crate::autoscaler::ScaleState;
use crate::dag::{DagSpec, EdgeKind, VertexSpec};

/// The session and the effects it decided, with one method per input as
/// the AM reports them.
struct Driver {
    core: Session,
    effects: Vec<SessionEffect>,
}

impl Driver {
    fn new(config: SessionConfig) -> Result<Driver, String> {
        let mut core = Session::new(config)?;
        core.check_every_step(true);
        Ok(Driver {
            core,
            effects: Vec::new(),
        })
    }

    /// Handles the input; returns the reply to it, if any.
    fn input(&mut self, now: u64, input: SessionInput) -> Option<Reply> {
        let mut reply = None;
        for e in self.core.handle(now, input) {
            match e {
                SessionEffect::Reply(r) => reply = Some(r),
                other => self.effects.push(other),
            }
        }
        reply
    }

    fn take_effects(&mut self) -> Vec<SessionEffect> {
        std::mem::take(&mut self.effects)
    }

    fn counters(&self) -> &SessionCounters {
        self.core.counters()
    }

    fn submit(
        &mut self,
        now: u64,
        client: &str,
        sub: &Sub,
        queue: Option<String>,
    ) -> Result<DagId, String> {
        let input = SessionInput::SubmitDag {
            client: client.to_string(),
            spec: sub.spec.clone(),
            group: sub.group.clone(),
            queue,
        };
        match self.input(now, input) {
            Some(Reply::Submitted(id)) => Ok(id),
            Some(Reply::Refused(e)) => Err(e),
            other => panic!("a submission answered {other:?}"),
        }
    }

    fn kill(&mut self, now: u64, dag: DagId, client: &str) -> Result<(), String> {
        let input = SessionInput::KillDag {
            dag,
            client: client.to_string(),
        };
        match self.input(now, input) {
            Some(Reply::Killed(_)) => Ok(()),
            Some(Reply::Refused(e)) => Err(e),
            other => panic!("a kill answered {other:?}"),
        }
    }

    fn container_allocated(&mut self, now: u64, container: WorkerId, host: String, priority: i32) {
        let input = SessionInput::ContainerGranted {
            container,
            host,
            priority,
        };
        assert_eq!(self.input(now, input), None);
    }

    fn launch_failed(&mut self, now: u64, container: &WorkerId, error: &str) {
        let input = SessionInput::LaunchFailed {
            container: container.clone(),
            error: error.to_string(),
        };
        assert_eq!(self.input(now, input), None);
    }

    fn worker_registered(
        &mut self,
        now: u64,
        worker: &WorkerId,
        address: String,
    ) -> Result<(), String> {
        let input = SessionInput::WorkerRegistered {
            worker: worker.clone(),
            address,
        };
        match self.input(now, input) {
            Some(Reply::Registered) => Ok(()),
            Some(Reply::Refused(e)) => Err(e),
            other => panic!("a registration answered {other:?}"),
        }
    }

    fn attempt_finished(
        &mut self,
        now: u64,
        worker: &WorkerId,
        attempt: AttemptId,
        outcome: WorkerOutcome,
    ) {
        let input = SessionInput::AttemptFinished {
            worker: worker.clone(),
            attempt,
            outcome,
        };
        assert_eq!(self.input(now, input), None);
    }

    fn worker_gone(&mut self, now: u64, worker: &WorkerId, why: &str) {
        let input = SessionInput::WorkerGone {
            worker: worker.clone(),
            why: why.to_string(),
        };
        assert_eq!(self.input(now, input), None);
    }

    fn tick(&mut self, now: u64) {
        assert_eq!(self.input(now, SessionInput::Tick), None);
    }

    fn report(&self, dag: Option<DagId>) -> Result<SessionReport, String> {
        self.core.report(dag)
    }

    fn check_invariants(&self) -> Result<(), String> {
        self.core.check_invariants()
    }
}

/// A submission: the DAG and its ContainerGroup (the default when `None`).
#[derive(Debug, Clone)]
struct Sub {
    spec: DagSpec,
    group: Option<GroupSpec>,
}

impl Sub {
    fn with_small_tasks(mut self) -> Sub {
        for v in &mut self.spec.vertices {
            v.resource.memory_mb = 128;
        }
        self
    }
}

fn config(pairs: &[(&str, &str)]) -> SessionConfig {
    let map: BTreeMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    SessionConfig::from_map(&map).expect("valid settings")
}

fn vertex(name: &str, tasks: u32, memory_mb: u64, command: &str) -> VertexSpec {
    VertexSpec::new(name, tasks, Resource::new(memory_mb, 1)).with_command(command)
}

fn word_count() -> Sub {
    Sub {
        spec: DagSpec::new("wc")
            .vertex(vertex("map", 2, 512, "map {task}"))
            .vertex(vertex("reduce", 1, 512, "reduce {task}"))
            .edge("map", "reduce", EdgeKind::AllToAll),
        group: None,
    }
}

/// A group's workers and outstanding worker requests, as the report
/// shows them.
fn workers_and_requests(s: &Driver, group: &str) -> (u32, u32) {
    let report = s.report(None).expect("status");
    let g = report
        .groups
        .iter()
        .find(|g| g.name == group)
        .unwrap_or_else(|| panic!("no group {group}"));
    (g.workers, g.requested_workers)
}

fn requests(effects: &[SessionEffect]) -> usize {
    effects
        .iter()
        .filter(|e| matches!(e, SessionEffect::RequestContainer { .. }))
        .count()
}

fn assignments(effects: &[SessionEffect]) -> Vec<Assignment> {
    effects
        .iter()
        .filter_map(|e| match e {
            SessionEffect::Assign { assignment, .. } => Some((**assignment).clone()),
            _ => None,
        })
        .collect()
}

fn w(name: &str) -> WorkerId {
    WorkerId::new(name)
}

/// Submits, grants one container for the default group and registers
/// its worker; returns the assignments the worker got.
fn start_worker(s: &mut Driver, now: u64, name: &str, host: &str) -> Vec<Assignment> {
    s.container_allocated(now, w(name), host.into(), 1);
    let launched = s.take_effects();
    assert!(
        launched.iter().any(
            |e| matches!(e, SessionEffect::LaunchWorker { container, .. } if container == &w(name))
        ),
        "{launched:?}"
    );
    s.worker_registered(now + 1, &w(name), format!("{host}:9000"))
        .expect("registers");
    assignments(&s.take_effects())
}

#[test]
fn a_word_count_runs_through_the_cores() {
    let mut s = Driver::new(config(&[
        (keys::WORKER_MEMORY_MB, "1024"),
        (keys::WORKER_VCORES, "2"),
    ]))
    .expect("session");
    let id = s
        .submit(10, "alice", &word_count(), None)
        .expect("accepted");
    assert_eq!(id, DagId(1));
    let e = s.take_effects();
    assert_eq!(
        requests(&e),
        1,
        "two 512 MB maps need one 1 GB worker: {e:?}"
    );

    let maps = start_worker(&mut s, 20, "container_1", "h1");
    assert_eq!(maps.len(), 2);
    assert_eq!(maps[0].command, "map 0");
    assert_eq!(maps[1].command, "map 1");
    assert_eq!(maps[0].partitions, 1, "one reduce task downstream");
    assert!(maps[0].inputs.is_empty());

    s.attempt_finished(
        30,
        &w("container_1"),
        maps[0].attempt,
        WorkerOutcome::Succeeded,
    );
    assert!(
        assignments(&s.take_effects()).is_empty(),
        "the reduce waits for both maps"
    );
    s.attempt_finished(
        31,
        &w("container_1"),
        maps[1].attempt,
        WorkerOutcome::Succeeded,
    );
    let reduce = assignments(&s.take_effects());
    assert_eq!(reduce.len(), 1);
    assert_eq!(reduce[0].vertex, "reduce");
    let inputs: Vec<(u32, u32, Option<&str>)> = reduce[0]
        .inputs
        .iter()
        .map(|i| (i.vertex_index, i.task, i.from.as_deref()))
        .collect();
    assert_eq!(
        inputs,
        vec![(0, 0, Some("h1:9000")), (0, 1, Some("h1:9000"))],
        "both map outputs, from the worker that made them"
    );
    assert_eq!(reduce[0].inputs[1].vertex, "map");

    s.attempt_finished(
        40,
        &w("container_1"),
        reduce[0].attempt,
        WorkerOutcome::Succeeded,
    );
    let e = s.take_effects();
    assert!(
        e.iter()
            .any(|e| matches!(e, SessionEffect::DagDone { dag: DagId(1), .. })),
        "{e:?}"
    );
    let report = s.report(Some(id)).expect("status");
    assert_eq!(report.dags[0].state, DagState::Succeeded);
    assert_eq!(report.dags[0].succeeded_tasks, 3);
    assert_eq!(report.dags[0].elapsed_ms, 30);
    assert_eq!(report.workers.len(), 1);
    assert!(report.groups[0]
        .status_line
        .starts_with("DAGScheduler All-In-One 1024MB"));
    s.check_invariants().expect("invariants");
}

#[test]
fn failed_attempts_are_retried_until_the_limit_then_the_dag_fails() {
    let mut s = Driver::new(config(&[(
        crate::config::keys::TASK_MAX_FAILED_ATTEMPTS,
        "2",
    )]))
    .expect("session");
    let mut file = word_count();
    file.spec.vertices = vec![vertex("only", 1, 256, "exit 1")];
    file.spec.edges.clear();
    let id = s.submit(0, "bob", &file, None).expect("accepted");
    s.take_effects();
    let first = start_worker(&mut s, 5, "container_1", "h1");
    assert_eq!(first.len(), 1);
    s.attempt_finished(
        6,
        &w("container_1"),
        first[0].attempt,
        WorkerOutcome::Failed {
            reason: "the command exited with status 1".into(),
        },
    );
    let second = assignments(&s.take_effects());
    assert_eq!(second.len(), 1, "retried");
    assert_eq!(second[0].attempt.attempt, 2);
    s.attempt_finished(
        7,
        &w("container_1"),
        second[0].attempt,
        WorkerOutcome::Failed {
            reason: "the command exited with status 1".into(),
        },
    );
    let report = s.report(Some(id)).expect("status");
    let dag = &report.dags[0];
    assert_eq!(dag.state, DagState::Failed);
    let reason = dag.reason.as_deref().unwrap_or_default();
    assert!(
        reason.contains("vertex 'only' failed 2 attempts")
            && reason.contains("exited with status 1"),
        "{reason}"
    );
    assert_eq!(s.counters().attempts_failed, 2);
    s.check_invariants().expect("invariants");
}

#[test]
fn contract_breaches_are_refused() {
    let mut s = Driver::new(config(&[(keys::WORKER_MEMORY_MB, "512")])).expect("session");
    let mut big = word_count();
    big.spec.vertices[1].resource.memory_mb = 2048;
    let err = s.submit(0, "c", &big, None).expect_err("too big");
    assert!(err.contains("vertex 'reduce' needs"), "{err}");
    let err = s
        .worker_registered(1, &w("container_9"), "h:1".into())
        .expect_err("never started");
    assert!(err.contains("no worker container_9"), "{err}");

    s.submit(2, "c", &word_count().with_small_tasks(), None)
        .expect("accepted");
    s.take_effects();
    let maps = start_worker(&mut s, 3, "container_1", "h1");
    // A report for an attempt that runs elsewhere is ignored.
    s.attempt_finished(
        4,
        &w("container_2"),
        maps[0].attempt,
        WorkerOutcome::Succeeded,
    );
    assert_eq!(s.report(None).expect("status").dags[0].succeeded_tasks, 0);
    s.check_invariants().expect("invariants");
}

#[test]
fn a_lost_worker_is_replaced_and_its_attempts_retried() {
    let mut s = Driver::new(config(&[
        (keys::WORKER_MEMORY_MB, "1024"),
        (keys::WORKER_VCORES, "2"),
    ]))
    .expect("session");
    s.submit(0, "c", &word_count(), None).expect("accepted");
    s.take_effects();
    let maps = start_worker(&mut s, 1, "container_1", "h1");
    assert_eq!(maps.len(), 2);
    s.worker_gone(
        2,
        &w("container_1"),
        "container completed with exit status 137",
    );
    let e = s.take_effects();
    assert!(
        e.iter()
            .any(|e| matches!(e, SessionEffect::ReleaseContainer { container } if container == &w("container_1"))),
        "{e:?}"
    );
    assert_eq!(requests(&e), 1, "a replacement is asked for: {e:?}");
    let again = start_worker(&mut s, 3, "container_2", "h2");
    assert_eq!(again.len(), 2, "both maps run again");
    assert_eq!(s.counters().workers_lost, 1);
    s.check_invariants().expect("invariants");
}

#[test]
fn workers_that_never_start_end_the_dag_with_a_reason() {
    let mut s = Driver::new(config(&[
        (keys::MAX_START_FAILURES, "2"),
        (keys::WORKER_VCORES, "2"),
    ]))
    .expect("session");
    let id = s.submit(0, "c", &word_count(), None).expect("accepted");
    for (i, now) in [(1, 10), (2, 20)] {
        let e = s.take_effects();
        assert_eq!(requests(&e), 1, "{e:?}");
        let c = w(&format!("container_{i}"));
        s.container_allocated(now, c.clone(), "h1".into(), 1);
        s.launch_failed(now + 1, &c, "exec format error");
    }
    let e = s.take_effects();
    assert_eq!(requests(&e), 0, "no more requests: {e:?}");
    let report = s.report(Some(id)).expect("status");
    assert_eq!(report.dags[0].state, DagState::Killed);
    let reason = report.dags[0].reason.as_deref().unwrap_or_default();
    assert!(
        reason.contains("failed to start 2 times") && reason.contains("exec format error"),
        "{reason}"
    );
}

#[test]
fn with_autoscaling_the_autoscaler_asks_for_workers() {
    let key = crate::config::keys::ENABLE_AUTO_SCALING;
    let interval = crate::config::keys::CHECK_MEMORY_USAGE_INTERVAL_SECS;
    let mut s = Driver::new(config(&[(key, "true"), (interval, "1")])).expect("session");
    s.submit(0, "c", &word_count(), None).expect("accepted");
    assert_eq!(
        requests(&s.take_effects()),
        0,
        "demand does not start workers"
    );
    s.tick(1000);
    let e = s.take_effects();
    assert_eq!(requests(&e), 1, "the initial worker: {e:?}");
    assert_eq!(s.counters().initial_requested, 1);
    assert_eq!(
        (s.counters().scale_outs, s.counters().scale_out_requested),
        (0, 0),
        "an initial request is not a scale-out"
    );
    let report = s.report(None).expect("status");
    assert_eq!(report.groups[0].autoscale_state, Some(ScaleState::ScaleOut));
    assert_eq!(report.groups[0].requested_workers, 1);
}

#[test]
fn named_groups_get_their_own_scheduler_and_request_priority() {
    let mut s = Driver::new(config(&[])).expect("session");
    let mut file = word_count();
    file.group = Some(GroupSpec::new("big".to_string(), Resource::new(2048, 2)));
    s.submit(0, "c", &file, Some("ignored".into()))
        .expect("accepted");
    let e = s.take_effects();
    assert!(
        e.contains(&SessionEffect::RequestContainer {
            group: "big".into(),
            priority: 2,
            resource: Resource::new(2048, 2)
        }),
        "{e:?}"
    );
    let report = s.report(None).expect("status");
    let names: Vec<&str> = report.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, vec!["All-In-One", "big"]);
    assert_eq!(report.dags[0].group, "big");
    s.check_invariants().expect("invariants");
}

#[test]
fn fair_scheduling_moves_a_worker_to_a_new_group_after_its_dags_finish() {
    let scheme = crate::config::keys::CONTAINER_SCHEDULER_SCHEME;
    let interval = crate::config::keys::CHECK_MEMORY_USAGE_INTERVAL_SECS;
    let mut s = Driver::new(config(&[
        (scheme, "fair"),
        (interval, "1"),
        (keys::WORKER_MEMORY_MB, "1024"),
        (keys::WORKER_VCORES, "2"),
    ]))
    .expect("session");
    let mut a = word_count();
    a.spec.vertices = vec![vertex("a", 4, 512, "a {task}")];
    a.spec.edges.clear();
    s.submit(0, "alice", &a, None).expect("accepted");
    assert_eq!(requests(&s.take_effects()), 2);
    let mut running = start_worker(&mut s, 1, "container_1", "h1");
    s.container_allocated(2, w("container_2"), "h2".into(), 1);
    s.worker_registered(3, &w("container_2"), "h2:9000".into())
        .expect("registers");
    running.extend(assignments(&s.take_effects()));
    assert_eq!(running.len(), 4);

    // A second group of the same worker size: the same ContainerKind.
    let mut b = word_count();
    b.spec.name = "b".into();
    b.spec.vertices = vec![vertex("b", 2, 512, "b {task}")];
    b.spec.edges.clear();
    b.group = Some(GroupSpec::new("other".to_string(), Resource::new(1024, 2)));
    s.submit(10, "bob", &b, None).expect("accepted");
    s.take_effects();
    // Fair rebalancing asks group All-In-One to give up one worker; it
    // drains (its DAG keeps running there) ...
    s.tick(1000);
    s.take_effects();
    let report = s.report(None).expect("status");
    let draining: Vec<&WorkerStatus> = report.workers.iter().filter(|w| w.draining).collect();
    assert_eq!(draining.len(), 1, "{report:?}");
    let moved = draining[0].worker.clone();
    // ... and once the DAG is over it moves to group `other`.
    let mut effects = Vec::new();
    for (i, r) in running.iter().enumerate() {
        let worker = if r.attempt.task.task < 2 {
            "container_1"
        } else {
            "container_2"
        };
        s.attempt_finished(
            1100 + i as u64,
            &w(worker),
            r.attempt,
            WorkerOutcome::Succeeded,
        );
        effects.extend(s.take_effects());
    }
    assert!(
        effects.iter().any(|e| matches!(
            e,
            SessionEffect::MoveWorker { worker, to, .. } if worker == &moved && to == "other"
        )),
        "{effects:?}"
    );
    let given: Vec<&Assignment> = effects
        .iter()
        .filter_map(|e| match e {
            SessionEffect::Assign { worker, assignment } if worker == &moved => Some(&**assignment),
            _ => None,
        })
        .collect();
    assert!(
        given.iter().any(|a| a.dag_name == "b"),
        "the moved worker runs group other's DAG: {effects:?}"
    );
    assert_eq!(s.counters().workers_recycled, 1);
    let report = s.report(None).expect("status");
    let moved_status = report
        .workers
        .iter()
        .find(|w| w.worker == moved)
        .expect("still a worker");
    assert_eq!(moved_status.group.as_deref(), Some("other"));
    s.check_invariants().expect("invariants");
}

/// Autoscaling every second, one-second windows and cooldowns, two
/// initial workers of 1 GB and one core (one 512 MB task each).
fn autoscaled(extra: &[(&str, &str)]) -> SessionConfig {
    use crate::config::keys as k;
    let mut pairs = vec![
        (k::ENABLE_AUTO_SCALING, "true"),
        (k::CHECK_MEMORY_USAGE_INTERVAL_SECS, "1"),
        (k::MEMORY_USAGE_WINDOW_SECS, "1"),
        (k::SCALE_OUT_GRACE_PERIOD_SECS, "1"),
        (k::SCALE_IN_DELAY_AFTER_SCALE_OUT_SECS, "0"),
        (k::SCALE_IN_GRACE_PERIOD_SECS, "1"),
        (k::SCALE_IN_MIN_HOSTS, "1"),
        (k::SCALE_OUT_NUM_INITIAL_CONTAINERS, "2"),
        (keys::WORKER_MEMORY_MB, "1024"),
        (keys::WORKER_VCORES, "1"),
    ];
    pairs.extend_from_slice(extra);
    config(&pairs)
}

fn stopped(effects: &[SessionEffect], worker: &WorkerId) -> bool {
    effects
        .iter()
        .any(|e| matches!(e, SessionEffect::StopWorker { worker: w, .. } if w == worker))
}

fn released(effects: &[SessionEffect], worker: &WorkerId) -> bool {
    effects
        .iter()
        .any(|e| matches!(e, SessionEffect::ReleaseContainer { container } if container == worker))
}

fn autoscale_state(s: &Driver) -> String {
    s.report(None).expect("status").groups[0]
        .autoscale_state
        .map(|state| state.to_string())
        .unwrap_or_default()
}

/// A word count on two workers (h1, h2) of an autoscaled session, both
/// maps done and the reduce running on one of them: returns the
/// reduce's assignment, the worker running it and the other one, which
/// holds a map output the reduce needs and is idle.
fn reduce_running(s: &mut Driver) -> (Assignment, WorkerId, WorkerId) {
    s.submit(0, "alice", &word_count(), None).expect("accepted");
    assert_eq!(requests(&s.take_effects()), 0);
    s.tick(1000);
    assert_eq!(requests(&s.take_effects()), 2, "the initial workers");
    let mut maps = start_worker(s, 1100, "container_1", "h1");
    maps.extend(start_worker(s, 1200, "container_2", "h2"));
    assert_eq!(maps.len(), 2, "one map per single-core worker");
    let worker_of = |a: &Assignment| {
        if maps[0].attempt == a.attempt {
            w("container_1")
        } else {
            w("container_2")
        }
    };
    let mut reduce = Vec::new();
    for (i, m) in maps.iter().enumerate() {
        s.attempt_finished(
            1300 + i as u64,
            &worker_of(m),
            m.attempt,
            WorkerOutcome::Succeeded,
        );
        let e = s.take_effects();
        for worker in [w("container_1"), w("container_2")] {
            reduce.extend(e.iter().filter_map(|e| match e {
                SessionEffect::Assign {
                    worker: to,
                    assignment,
                } if to == &worker => Some(((**assignment).clone(), worker.clone())),
                _ => None,
            }));
        }
    }
    assert_eq!(reduce.len(), 1, "{reduce:?}");
    let (assignment, runner) = reduce.remove(0);
    assert_eq!(assignment.vertex, "reduce");
    let other = if runner == w("container_1") {
        w("container_2")
    } else {
        w("container_1")
    };
    (assignment, runner, other)
}

#[test]
fn scale_in_lets_workers_of_released_nodes_finish_the_active_dag_before_they_stop() {
    let mut s = Driver::new(autoscaled(&[])).expect("session");
    let (reduce, runner, idle) = reduce_running(&mut s);
    let idle_host = if idle == w("container_1") { "h1" } else { "h2" };
    // Usage 512 MB of 2 GB = 25%, under the 50% ScaleInThreshold: the
    // idle worker's node is released, but the reduce still needs the
    // map output it holds.
    s.tick(2000);
    let e = s.take_effects();
    assert!(
        !stopped(&e, &idle) && !released(&e, &idle),
        "stopped before the active DAG completed: {e:?}"
    );
    assert_eq!(s.counters().scale_ins, 1);
    assert_eq!(autoscale_state(&s), "SCALE_IN");
    let report = s.report(None).expect("status");
    let draining: Vec<&str> = report
        .workers
        .iter()
        .filter(|w| w.draining)
        .map(|w| w.host.as_str())
        .collect();
    assert_eq!(draining, vec![idle_host]);
    // Another client's DAG arrives, and the reduce runs on. The grace
    // period passes, but the released node still holds the worker: the
    // scale-in goes on, so nothing new is requested for the new DAG
    // and the draining worker does not take its tasks.
    let mut big = word_count();
    big.spec.name = "big".into();
    big.spec.vertices = vec![vertex("big", 2, 1024, "big {task}")];
    big.spec.edges.clear();
    s.submit(2500, "bob", &big, None).expect("accepted");
    for now in [3000, 4000] {
        s.tick(now);
        let e = s.take_effects();
        assert!(
            !stopped(&e, &idle) && !released(&e, &idle),
            "stopped before the active DAG completed: {e:?}"
        );
        assert_eq!(requests(&e), 0, "a request during scale-in: {e:?}");
        assert!(assignments(&e).is_empty(), "{e:?}");
        assert_eq!(autoscale_state(&s), "SCALE_IN", "at {now} ms");
    }
    // The reduce ends the DAG: the drained worker is told to stop and
    // its container released; the other takes the new DAG's work.
    s.attempt_finished(4500, &runner, reduce.attempt, WorkerOutcome::Succeeded);
    let e = s.take_effects();
    assert!(stopped(&e, &idle) && released(&e, &idle), "{e:?}");
    assert!(!stopped(&e, &runner), "{e:?}");
    assert_eq!(assignments(&e).len(), 1, "{e:?}");
    assert_eq!(s.counters().scale_in_released, 1);
    let report = s.report(Some(DagId(1))).expect("status");
    assert_eq!(report.dags[0].state, DagState::Succeeded);
    // Its container completes (expected, not a loss); the released node
    // is empty, so the scale-in is over and usage (100%) scales out.
    s.worker_gone(4600, &idle, "container completed with exit status 0");
    assert_eq!(s.counters().workers_lost, 0);
    s.tick(5000);
    let e = s.take_effects();
    assert_eq!(requests(&e), 1, "{e:?}");
    assert_eq!(autoscale_state(&s), "SCALE_OUT");
    assert_eq!(s.counters().scale_outs, 1);
    s.check_invariants().expect("invariants");
}

#[test]
fn scale_in_without_waiting_for_dags_stops_the_workers_at_once() {
    let mut s = Driver::new(autoscaled(&[(
        crate::config::keys::SCALE_IN_WAIT_DAG_FINISHED,
        "false",
    )]))
    .expect("session");
    let (reduce, runner, idle) = reduce_running(&mut s);
    s.tick(2000);
    let e = s.take_effects();
    assert!(stopped(&e, &idle) && released(&e, &idle), "{e:?}");
    assert_eq!(s.counters().scale_in_released, 1);
    // The reduce needed the map output the stopped worker held: it is
    // stopped and the map made again.
    assert!(
        e.iter().any(|e| matches!(
            e,
            SessionEffect::KillAttempt { worker, attempt }
                if worker == &runner && *attempt == reduce.attempt
        )),
        "{e:?}"
    );
    assert_eq!(autoscale_state(&s), "SCALE_IN");
    s.worker_gone(2100, &idle, "container completed with exit status 0");
    assert_eq!(s.counters().workers_lost, 0);
    s.check_invariants().expect("invariants");
}

#[test]
fn a_worker_granted_on_a_released_node_is_stopped_at_once() {
    let mut s = Driver::new(autoscaled(&[(
        crate::config::keys::SCALE_OUT_NUM_INITIAL_CONTAINERS,
        "3",
    )]))
    .expect("session");
    let mut one = word_count();
    one.spec.vertices = vec![vertex("one", 1, 512, "one")];
    one.spec.edges.clear();
    s.submit(0, "alice", &one, None).expect("accepted");
    s.tick(1000);
    assert_eq!(requests(&s.take_effects()), 3);
    assert_eq!(start_worker(&mut s, 1100, "container_1", "h1").len(), 1);
    assert!(start_worker(&mut s, 1200, "container_2", "h2").is_empty());
    // The third is granted on h2 but has not registered yet.
    s.container_allocated(1300, w("container_3"), "h2".into(), 1);
    s.take_effects();
    // 25% usage: h2, the idle node, is released; its worker waits for
    // the active DAG.
    s.tick(2000);
    let e = s.take_effects();
    assert!(!stopped(&e, &w("container_2")), "{e:?}");
    assert_eq!(autoscale_state(&s), "SCALE_IN");
    // The late worker holds nothing: it goes at once.
    s.worker_registered(2100, &w("container_3"), "h2:9000".into())
        .expect("registers");
    let e = s.take_effects();
    assert!(
        stopped(&e, &w("container_3")) && released(&e, &w("container_3")),
        "{e:?}"
    );
    assert!(assignments(&e).is_empty(), "{e:?}");
    assert_eq!(s.counters().scale_in_released, 1);
    s.check_invariants().expect("invariants");
}

#[test]
fn caps_on_all_workers_hold_across_groups_without_autoscaling() {
    let caps = crate::config::keys::WORKER_TOTAL_MAX_MEMORY_GB;
    let mut s = Driver::new(config(&[
        (caps, "3"),
        (keys::WORKER_MEMORY_MB, "1024"),
        (keys::WORKER_VCORES, "1"),
    ]))
    .expect("session");
    let mut five = word_count();
    five.spec.vertices = vec![vertex("five", 5, 1024, "five {task}")];
    five.spec.edges.clear();
    s.submit(0, "alice", &five, None).expect("accepted");
    assert_eq!(
        requests(&s.take_effects()),
        3,
        "five 1 GB tasks, but 3 GB for all workers"
    );
    // Another group of another size gets nothing while the cap is full.
    let mut other = five.clone();
    other.spec.name = "other".into();
    other.group = Some(GroupSpec::new("other".to_string(), Resource::new(512, 1)));
    other.spec.vertices = vec![vertex("o", 2, 512, "o {task}")];
    s.submit(10, "bob", &other, None).expect("accepted");
    assert_eq!(requests(&s.take_effects()), 0);
    // One of the three requests is granted and its worker lost: one
    // replacement, still within the cap.
    s.container_allocated(20, w("container_1"), "h1".into(), 1);
    s.worker_registered(21, &w("container_1"), "h1:9000".into())
        .expect("registers");
    s.take_effects();
    s.worker_gone(
        30,
        &w("container_1"),
        "container completed with exit status 137",
    );
    let e = s.take_effects();
    assert_eq!(requests(&e), 1, "{e:?}");
    let report = s.report(None).expect("status");
    let asked: u32 = report.groups.iter().map(|g| g.requested_workers).sum();
    assert_eq!(asked, 3, "{report:?}");
    s.check_invariants().expect("invariants");
}

#[test]
fn caps_on_all_workers_hold_across_autoscaled_groups() {
    let caps = crate::config::keys::WORKER_TOTAL_MAX_MEMORY_GB;
    let mut s = Driver::new(autoscaled(&[(caps, "3")])).expect("session");
    s.submit(0, "alice", &word_count(), None).expect("accepted");
    let mut other = word_count();
    other.spec.name = "other".into();
    other.group = Some(GroupSpec::new("other".to_string(), Resource::new(1024, 1)));
    s.submit(0, "bob", &other, None).expect("accepted");
    s.take_effects();
    // Each group would start two workers; 3 GB hold three in all.
    s.tick(1000);
    let e = s.take_effects();
    let by_priority = |p: i32| {
        e.iter()
            .filter(
                |e| matches!(e, SessionEffect::RequestContainer { priority, .. } if *priority == p),
            )
            .count()
    };
    assert_eq!((by_priority(1), by_priority(2)), (2, 1), "{e:?}");
    assert_eq!(s.counters().initial_requested, 3);
    s.check_invariants().expect("invariants");
}

/// Workers moved into `group`.
fn reinits(effects: &[SessionEffect], group: &str) -> usize {
    effects
        .iter()
        .filter(|e| matches!(e, SessionEffect::MoveWorker { to, .. } if to == group))
        .count()
}

fn cancels(effects: &[SessionEffect], priority: i32) -> usize {
    effects
        .iter()
        .filter(|e| matches!(e, SessionEffect::CancelContainerRequest { priority: p, .. } if *p == priority))
        .count()
}

/// A DAG of `tasks` independent tasks of `memory_mb` in ContainerGroup
/// `group` (workers of 1 GB and one core).
fn in_group(group: &str, tasks: u32, memory_mb: u64) -> Sub {
    let mut f = word_count();
    f.spec.name = group.into();
    f.group = Some(GroupSpec::new(group.to_string(), Resource::new(1024, 1)));
    f.spec.vertices = vec![vertex(group, tasks, memory_mb, "run {task}")];
    f.spec.edges.clear();
    f
}

/// Registers a granted container of the group with request `priority`;
/// returns the effects.
fn grant(s: &mut Driver, now: u64, name: &str, priority: i32) -> Vec<SessionEffect> {
    s.container_allocated(now, w(name), format!("h-{name}"), priority);
    let mut e = s.take_effects();
    s.worker_registered(now + 1, &w(name), format!("h-{name}:9000"))
        .expect("registers");
    e.extend(s.take_effects());
    e
}

/// Finishes every attempt in `effects` with success; returns the
/// effects of doing so.
fn finish_all(s: &mut Driver, now: u64, effects: &[SessionEffect]) -> Vec<SessionEffect> {
    let mut out = Vec::new();
    for (i, e) in effects.iter().enumerate() {
        if let SessionEffect::Assign { worker, assignment } = e {
            s.attempt_finished(
                now + i as u64,
                worker,
                assignment.attempt,
                WorkerOutcome::Succeeded,
            );
            out.extend(s.take_effects());
        }
    }
    out
}

#[test]
fn under_binding_caps_reserve_workers_still_go_to_a_group_in_need() {
    use crate::config::keys as k;
    let mut s = Driver::new(config(&[
        (k::CONTAINER_SCHEDULER_SCHEME, "fifo"),
        (k::WORKER_TOTAL_MAX_MEMORY_GB, "3"),
        (keys::WORKER_MEMORY_MB, "1024"),
        (keys::WORKER_VCORES, "1"),
    ]))
    .expect("session");
    // Group etl (priority 2) runs two 1 GB tasks on two workers, then
    // is released: its workers wait in the reserve.
    s.submit(0, "alice", &in_group("etl", 2, 1024), None)
        .expect("accepted");
    assert_eq!(requests(&s.take_effects()), 2);
    let mut e = grant(&mut s, 10, "container_1", 2);
    e.extend(grant(&mut s, 20, "container_2", 2));
    assert_eq!(assignments(&e).len(), 2);
    finish_all(&mut s, 30, &e);
    assert_eq!(s.core.cs.reserved_workers().len(), 2);
    // Group reports needs three workers. The caps hold three in all,
    // and the two in the reserve are among them: recycling them adds
    // nothing, so reports gets both and one new worker.
    s.submit(100, "bob", &in_group("reports", 3, 1024), None)
        .expect("accepted");
    let e = s.take_effects();
    assert_eq!(reinits(&e, "reports"), 2, "{e:?}");
    assert_eq!(requests(&e), 1, "{e:?}");
    assert_eq!(assignments(&e).len(), 2, "{e:?}");
    assert!(s.core.cs.reserved_workers().is_empty());
    assert_eq!(s.counters().workers_recycled, 2);
    assert_eq!(workers_and_requests(&s, "reports"), (2, 1));
    s.check_invariants().expect("invariants");
}

#[test]
fn an_autoscalers_request_takes_reserve_workers_first() {
    use crate::config::keys as k;
    let mut s = Driver::new(autoscaled(&[
        (k::CONTAINER_SCHEDULER_SCHEME, "fifo"),
        (k::WORKER_TOTAL_MAX_MEMORY_GB, "4"),
        (k::SCALE_OUT_NUM_INITIAL_CONTAINERS, "4"),
    ]))
    .expect("session");
    // Group etl (priority 2): its autoscaler asks for four workers;
    // three come, its DAG ends, and the group is released: the three
    // wait in the reserve, the fourth request is withdrawn.
    s.submit(0, "alice", &in_group("etl", 1, 512), None)
        .expect("accepted");
    s.tick(1000);
    assert_eq!(requests(&s.take_effects()), 4);
    let mut e = grant(&mut s, 1100, "container_1", 2);
    e.extend(grant(&mut s, 1200, "container_2", 2));
    e.extend(grant(&mut s, 1300, "container_3", 2));
    let e = finish_all(&mut s, 1400, &e);
    assert_eq!(cancels(&e, 2), 1, "{e:?}");
    assert_eq!(s.core.cs.reserved_workers().len(), 3);
    s.check_invariants().expect("invariants");
    // Group reports (priority 3) is empty: its autoscaler asks for four.
    // The reserve counts against the 4 GB cap, but its workers are
    // there for the taking: the three go to reports first, and only
    // the fourth is asked of YARN.
    s.submit(1600, "bob", &in_group("reports", 4, 1024), None)
        .expect("accepted");
    assert_eq!(requests(&s.take_effects()), 0);
    s.tick(2000);
    let e = s.take_effects();
    assert_eq!(reinits(&e, "reports"), 3, "{e:?}");
    assert_eq!(requests(&e), 1, "{e:?}");
    assert_eq!(assignments(&e).len(), 3, "{e:?}");
    assert_eq!(s.counters().initial_requested, 8);
    assert_eq!(s.counters().containers_requested, 5);
    assert_eq!(s.counters().workers_recycled, 3);
    assert_eq!(workers_and_requests(&s, "reports"), (3, 1));
    s.check_invariants().expect("invariants");
}

#[test]
fn workers_freed_while_an_autoscaled_group_waits_take_the_place_of_its_requests() {
    use crate::config::keys as k;
    let mut s =
        Driver::new(autoscaled(&[(k::CONTAINER_SCHEDULER_SCHEME, "fifo")])).expect("session");
    // etl (priority 2) and reports (priority 3) each ask for two.
    s.submit(0, "alice", &in_group("etl", 1, 512), None)
        .expect("accepted");
    s.submit(0, "bob", &in_group("reports", 2, 1024), None)
        .expect("accepted");
    s.tick(1000);
    let e = s.take_effects();
    assert_eq!(requests(&e), 4, "{e:?}");
    s.check_invariants().expect("invariants");
    // etl's two come; one runs its task, the other has nothing to do
    // and, under fifo, goes to reports, which waits for workers.
    let mut e = grant(&mut s, 1100, "container_1", 2);
    e.extend(grant(&mut s, 1200, "container_2", 2));
    // etl's DAG ends: the group is released and its other worker goes
    // to reports too. Each takes the place of one of reports' requests.
    e.extend(finish_all(&mut s, 1300, &e));
    assert_eq!(reinits(&e, "reports"), 2, "{e:?}");
    assert_eq!(cancels(&e, 3), 2, "{e:?}");
    assert_eq!(s.counters().requests_cancelled, 2);
    assert_eq!(s.counters().workers_recycled, 2);
    assert_eq!(workers_and_requests(&s, "reports"), (2, 0));
    s.check_invariants().expect("invariants");
}

#[test]
fn a_worker_draining_for_scale_in_is_not_recycled_to_another_group() {
    use crate::config::keys as k;
    let mut s =
        Driver::new(autoscaled(&[(k::CONTAINER_SCHEDULER_SCHEME, "fifo")])).expect("session");
    // The default group's two workers: one runs the DAG's only task,
    // the other is idle (and the container scheduler knows it).
    let mut one = word_count();
    one.spec.vertices = vec![vertex("one", 1, 512, "one")];
    one.spec.edges.clear();
    s.submit(0, "alice", &one, None).expect("accepted");
    s.tick(1000);
    assert_eq!(requests(&s.take_effects()), 2);
    let e = grant(&mut s, 1100, "container_1", 1);
    assert_eq!(assignments(&e).len(), 1);
    grant(&mut s, 1200, "container_2", 1);
    // Group reports gets a DAG but has asked for nothing yet.
    s.submit(1500, "bob", &in_group("reports", 1, 1024), None)
        .expect("accepted");
    s.take_effects();
    // At 25% usage the idle worker's node is released: the worker
    // drains, serving the active DAG first. In the same tick reports'
    // autoscaler asks for its first workers, which makes it a group in
    // need; the draining worker is not idle for recycling: it leaves
    // with its node, and reports' workers come from YARN.
    s.tick(2000);
    let e = s.take_effects();
    assert_eq!(s.counters().scale_ins, 1);
    assert_eq!(reinits(&e, "reports"), 0, "{e:?}");
    assert_eq!(requests(&e), 2, "{e:?}");
    let report = s.report(None).expect("status");
    let draining: Vec<&str> = report
        .workers
        .iter()
        .filter(|w| w.draining)
        .map(|w| w.worker.as_str())
        .collect();
    assert_eq!(draining, vec!["container_2"], "{report:?}");
    s.check_invariants().expect("invariants");
}

#[test]
fn dags_naming_a_group_share_it_only_with_the_same_properties() {
    let mut s = Driver::new(config(&[])).expect("session");
    let with = |name: &str, props: &[(&str, &str)]| {
        let mut f = word_count().with_small_tasks();
        f.spec.name = name.into();
        let mut group = GroupSpec::new("etl", Resource::new(1024, 1));
        for (k, v) in props {
            group = group.with_property(*k, *v);
        }
        f.group = Some(group);
        f
    };
    let first = s
        .submit(0, "alice", &with("a", &[("team", "x")]), None)
        .expect("accepted");
    // Same name and properties: the same group, owned by both.
    s.submit(1, "bob", &with("b", &[("team", "x")]), None)
        .expect("merged");
    // Same name, other properties: refused while the group exists,
    // since groups are known by name and merged only when name and
    // properties match.
    let err = s
        .submit(2, "carol", &with("c", &[("team", "y")]), None)
        .expect_err("different properties");
    assert!(
        err.contains("'etl' already exists with different properties"),
        "{err}"
    );
    let err = s
        .submit(3, "carol", &with("c", &[]), None)
        .expect_err("no properties is different too");
    assert!(err.contains("different properties"), "{err}");
    let report = s.report(None).expect("status");
    let names: Vec<&str> = report.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, vec!["All-In-One", "etl"]);
    assert_eq!(report.dags.len(), 2);
    assert!(report.dags.iter().all(|d| d.group == "etl"));
    // Once its DAGs are over the group is gone, and the name is free
    // for other properties.
    for id in [first, DagId(2)] {
        let client = if id == first { "alice" } else { "bob" };
        s.kill(10, id, client).expect("killed");
    }
    let report = s.report(None).expect("status");
    assert_eq!(report.groups.len(), 1, "{report:?}");
    s.submit(20, "carol", &with("c", &[("team", "y")]), None)
        .expect("a new group of that name");
    s.check_invariants().expect("invariants");
}

#[test]
fn settings_are_checked() {
    let bad: BTreeMap<String, String> =
        [(keys::WORKER_MEMORY_MB.to_string(), "lots".to_string())].into();
    let err = SessionConfig::from_map(&bad).expect_err("bad");
    assert!(err.contains(keys::WORKER_MEMORY_MB), "{err}");
    let bad: BTreeMap<String, String> = [(
        crate::config::keys::DAG_QUEUE_SCHEME.to_string(),
        "random".to_string(),
    )]
    .into();
    assert!(SessionConfig::from_map(&bad).is_err());
}

/// A simulator's instant: inputs are applied one by one and the session
/// settles once, at the end; only then are workers offered work and the
/// ContainerScheduler told the demand.
#[test]
fn an_instant_offers_work_and_asks_for_workers_at_its_settle() {
    let mut s = Session::new(config(&[
        (keys::WORKER_MEMORY_MB, "1024"),
        (keys::WORKER_VCORES, "2"),
    ]))
    .expect("session");
    s.check_every_step(true);
    s.locate_inputs(false);
    let submit = SessionInput::SubmitDag {
        client: "alice".into(),
        spec: word_count().spec,
        group: None,
        queue: None,
    };
    let e = s.apply(0, submit);
    assert!(e.contains(&SessionEffect::Reply(Reply::Submitted(DagId(1)))));
    assert_eq!(requests(&e), 0, "the demand waits for the settle: {e:?}");
    assert_eq!(requests(&s.settle(0)), 1);
    let granted = SessionInput::ContainerGranted {
        container: w("container_1"),
        host: "h1".into(),
        priority: 1,
    };
    let e = s.apply(10, granted);
    assert!(
        e.iter()
            .any(|e| matches!(e, SessionEffect::LaunchWorker { host, .. } if host == "h1")),
        "{e:?}"
    );
    let hello = SessionInput::WorkerRegistered {
        worker: w("container_1"),
        address: "h1:9000".into(),
    };
    let e = s.apply(11, hello);
    assert!(e.contains(&SessionEffect::Reply(Reply::Registered)));
    assert!(
        assignments(&e).is_empty(),
        "no offer before the settle: {e:?}"
    );
    let maps = assignments(&s.settle(11));
    assert_eq!(maps.len(), 2);
    let mut e = Vec::new();
    for m in &maps {
        let end = SessionInput::AttemptFinished {
            worker: w("container_1"),
            attempt: m.attempt,
            outcome: WorkerOutcome::Succeeded,
        };
        e.extend(s.apply(20, end));
    }
    assert!(assignments(&e).is_empty(), "{e:?}");
    let reduce = assignments(&s.settle(20));
    assert_eq!(reduce.len(), 1);
    assert!(
        reduce[0].inputs.is_empty(),
        "inputs are not located when asked not to"
    );
    s.check_invariants().expect("invariants");
}

/// The session's checks notice a corrupted state: its bookkeeping disagreeing with
/// the cores', each named.
#[test]
fn corrupted_states_fail_the_invariants() {
    type Corruption = fn(&mut Session);
    let corruptions: [(&str, Corruption); 3] = [
        ("the session has workers [], its task scheduler", |core| {
            core.workers.clear();
        }),
        ("the session has workers [], its task scheduler", |core| {
            if let Some(entry) = core.workers.get_mut(&w("container_1")) {
                entry.group = None;
            }
        }),
        ("invariant violated", |core| {
            // A violation one of the cores noticed during a step is kept.
            core.violation = Some("invariant violated: seen by a core".into());
        }),
    ];
    for (expected, corrupt) in corruptions {
        let mut s = Driver::new(config(&[
            (keys::WORKER_MEMORY_MB, "1024"),
            (keys::WORKER_VCORES, "2"),
        ]))
        .expect("session");
        s.submit(10, "alice", &word_count(), None)
            .expect("accepted");
        s.take_effects();
        start_worker(&mut s, 20, "container_1", "h1");
        s.check_invariants().expect("consistent before");
        corrupt(&mut s.core);
        let v = s.check_invariants().expect_err(expected);
        assert!(v.contains(expected), "{v}");
    }
}
