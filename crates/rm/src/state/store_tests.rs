//! The state's side of the store: what it asks to write, and what it
//! rebuilds from the records.

use std::collections::BTreeMap;

use spindle_common::ids::{ApplicationAttemptId, ContainerId, NodeId};
use spindle_common::resource::Resource;

use spindle_common::ids::ApplicationId;
use spindle_common::states::FinalStatus;
use spindle_scheduler::ResourceAsk;

use super::test_support::{healthy, state_with, TestRm, TS};
use super::{Settings, RESTART_DIAGNOSTICS};
use crate::cluster::nodes::{ContainerStatus, Registration};
use crate::model::amrm::AllocateRequest;
use crate::model::apps::AppState;
use crate::model::attempts::AttemptState;
use crate::model::keys::KeyRolling;
use crate::model::refusal::Refusal;
use crate::queue_files::QueueFile;
use crate::state::command::{Allocate, FinishApplicationMaster, RegisterApplicationMaster};
use crate::state::command::{KillApplication, NodeRegistration, RegisterNode};
use crate::store::{StoreOp, StoredApp};
use crate::time::Now;

const NODE_GB: i64 = 8 * 1024;

/// Applies `ops` to `stored` as a store would.
fn apply(stored: &mut BTreeMap<String, StoredApp>, ops: Vec<StoreOp>) {
    for op in ops {
        match op {
            StoreOp::PutApp(app) => {
                stored.insert(app.id.clone(), *app);
            }
            StoreOp::RemoveApp(id) => {
                stored.remove(&id.to_string());
            }
            StoreOp::PutKeys(_)
            | StoreOp::PutDelegationKeys(_)
            | StoreOp::PutDelegationToken(_)
            | StoreOp::RemoveDelegationToken(_) => {}
        }
    }
}

fn running(container: ContainerId) -> ContainerStatus {
    ContainerStatus {
        container,
        running: true,
        complete: false,
        exit_status: -1000,
        diagnostics: String::new(),
        resource: Resource::new(1024, 1),
    }
}

fn fresh() -> TestRm {
    let mut rm = state_with(QueueFile::fifo());
    rm.enable_store(10);
    rm
}

/// A state with the store on and work-preserving recovery off.
fn fresh_not_work_preserving() -> TestRm {
    let settings = Settings {
        work_preserving: false,
        ..Settings::new(TS)
    };
    let mut rm = TestRm::new(QueueFile::fifo(), settings, KeyRolling::daily(0));
    rm.enable_store(10);
    rm
}

fn registration(host: &str) -> Registration {
    Registration {
        id: NodeId::new(host, 4040),
        http_port: 8042,
        capability: Resource::new(NODE_GB, 8),
        nm_version: "test".into(),
        rack: None,
        health: healthy(),
    }
}

fn ask(n: i32) -> AllocateRequest {
    AllocateRequest {
        asks: vec![ResourceAsk::new(1, "*", Resource::new(1024, 1), n)],
        ..Default::default()
    }
}

/// A node, one application whose AM registered and holds one task
/// container: the state, the application, its AM and task containers, and
/// what the store holds.
fn running_app_with_a_task() -> (
    TestRm,
    ApplicationId,
    ContainerId,
    ContainerId,
    BTreeMap<String, StoredApp>,
) {
    let mut before = fresh();
    let node = before.add_node("h1", Resource::new(NODE_GB, 8), 0);
    let app = before.submit_to("default", "alice", None, 0);
    before.heartbeat(&node, Vec::new(), 1000);
    let attempt = ApplicationAttemptId::new(app, 1);
    assert_eq!(before.run_ams(1000), [attempt]);
    let am = before
        .current_attempt(&app)
        .and_then(|a| a.am_container)
        .expect("an AM container");
    let key = before.tokens.current_amrm_key_id();
    let granted = before
        .run(
            1100,
            Allocate {
                attempt,
                amrm_key_id: key,
                request: AllocateRequest {
                    response_id: 0,
                    ..ask(1)
                },
            },
        )
        .expect("allocate");
    let task = match granted.allocated.as_slice() {
        [c] => c.id,
        other => panic!("{other:?}"),
    };
    let mut stored = BTreeMap::new();
    apply(&mut stored, before.take_store_ops());
    (before, app, am, task, stored)
}

#[test]
fn each_change_is_asked_for_once_and_nothing_without_a_store() {
    let mut off = state_with(QueueFile::fifo());
    off.submit_to("default", "alice", None, 0);
    assert!(off.take_store_ops().is_empty());

    let mut rm = fresh();
    let app = rm.submit_to("default", "alice", None, 0);
    let ops = rm.take_store_ops();
    assert_eq!(ops.len(), 1, "{ops:?}");
    let StoreOp::PutApp(record) = &ops[0] else {
        panic!("{ops:?}")
    };
    assert_eq!(record.id, app.to_string());
    assert_eq!(record.state, "ACCEPTED");
    assert!(record.launch.is_some());
    // Nothing changed since: nothing to write.
    rm.tick(10);
    assert!(rm.take_store_ops().is_empty());
    rm.run(
        20,
        KillApplication {
            app,
            user: "alice".into(),
            groups: Vec::new(),
            reason: None,
            from: None,
        },
    )
    .expect("killed");
    let ops = rm.take_store_ops();
    let [StoreOp::PutApp(killed)] = ops.as_slice() else {
        panic!("{ops:?}")
    };
    assert_eq!(killed.state, "KILLED");
    assert_eq!(
        killed.launch, None,
        "a finished application needs no launch context"
    );
    assert_eq!(killed.attempts[0].state, "KILLED");
}

#[test]
fn without_work_preserving_recovery_a_running_application_restarts_in_a_new_attempt_and_its_old_containers_are_killed(
) {
    let mut before = fresh();
    let node = before.add_node("h1", Resource::new(NODE_GB, 8), 0);
    let app = before.submit_to("default", "alice", None, 0);
    before.heartbeat(&node, Vec::new(), 1000);
    let attempts = before.run_ams(1000);
    let first = ApplicationAttemptId::new(app, 1);
    assert_eq!(attempts, [first]);
    let am_container = before
        .current_attempt(&app)
        .and_then(|a| a.am_container)
        .expect("an AM container");
    let mut stored = BTreeMap::new();
    apply(&mut stored, before.take_store_ops());
    assert_eq!(stored[&app.to_string()].state, "RUNNING");
    assert_eq!(
        stored[&app.to_string()].attempts[0].am_container,
        Some(am_container.to_string())
    );

    let mut after = fresh_not_work_preserving();
    let summary = after.recover(stored.values().cloned().collect(), Now::at(5000));
    assert_eq!((summary.restarted, summary.finished), (1, 0));
    assert_eq!(after.app_state(&app), Some(AppState::Accepted));
    let old = after.attempts.get(&first).expect("the old attempt");
    assert_eq!(old.state, AttemptState::Failed);
    assert_eq!(old.diagnostics, RESTART_DIAGNOSTICS);
    let history = after.history.get(&app).expect("history");
    assert_eq!(
        history.failed, 0,
        "a restart does not count against the maximum"
    );
    assert_eq!(
        after.current_attempt_id(&app),
        Some(ApplicationAttemptId::new(app, 2))
    );
    // The new attempt is stored at once.
    apply(&mut stored, after.take_store_ops());
    assert_eq!(stored[&app.to_string()].attempts.len(), 2);

    // The node comes back still running the old AM container: it is told to
    // kill that container, not to clean the (living) application up.
    let id = NodeId::new("h1", 4040);
    let registration = Registration {
        id: id.clone(),
        http_port: 8042,
        capability: Resource::new(NODE_GB, 8),
        nm_version: "test".into(),
        rack: None,
        health: healthy(),
    };
    let outcome = after.run(
        6000,
        RegisterNode {
            registration,
            containers: vec![running(am_container)],
            running_apps: vec![app],
            log_reports: Vec::new(),
        },
    );
    assert!(matches!(outcome, NodeRegistration::Accepted(_)));
    let answer = after.heartbeat(&id, vec![running(am_container)], 7000);
    assert!(
        answer.work.cleanup_containers.contains(&am_container),
        "{:?}",
        answer.work
    );
    assert!(
        !answer.work.cleanup_apps.contains(&app),
        "{:?}",
        answer.work
    );
    // The new attempt gets its AM container on the node.
    assert_eq!(after.launched(), [ApplicationAttemptId::new(app, 2)]);
}

#[test]
fn finished_applications_come_back_and_the_store_stays_bounded() {
    let mut before = state_with(QueueFile::fifo());
    before.enable_store(2);
    let mut stored = BTreeMap::new();
    let mut apps = Vec::new();
    for i in 0..4u64 {
        let app = before.submit_to("default", "alice", None, i * 10);
        before
            .run(
                i * 10 + 1,
                KillApplication {
                    app,
                    user: "alice".into(),
                    groups: Vec::new(),
                    reason: Some(format!("number {i}")),
                    from: None,
                },
            )
            .expect("killed");
        apply(&mut stored, before.take_store_ops());
        apps.push(app);
    }
    let kept: Vec<String> = stored.keys().cloned().collect();
    assert_eq!(kept, [apps[2].to_string(), apps[3].to_string()]);

    let mut after = fresh();
    let summary = after.recover(stored.values().cloned().collect(), Now::at(100));
    assert_eq!(summary.finished, 2);
    let killed = after.apps.get(&apps[3]).expect("back");
    assert_eq!(killed.state, AppState::Killed);
    assert!(
        killed.diagnostics.contains("number 3"),
        "{}",
        killed.diagnostics
    );
    assert_eq!(killed.user, "alice");
    // Recovered finished applications are not written again.
    assert!(after.take_store_ops().is_empty());
}

#[test]
fn an_unfinished_application_whose_queue_is_gone_is_killed_on_recovery() {
    let mut before = fresh();
    let app = before.submit_to("default", "alice", None, 0);
    let mut stored = BTreeMap::new();
    apply(&mut stored, before.take_store_ops());
    let mut record = stored[&app.to_string()].clone();
    record.queue = "gone".into();

    let mut after = fresh();
    let summary = after.recover(vec![record], Now::at(100));
    assert_eq!((summary.restarted, summary.failed), (0, 1));
    let back = after.apps.get(&app).expect("back");
    assert_eq!(back.state, AppState::Killed);
    assert_eq!(
        back.diagnostics,
        "Application killed on recovery as it was submitted to queue gone \
         which no longer exists after restart."
    );
    // Its final record is stored.
    let ops = after.take_store_ops();
    assert!(
        matches!(ops.as_slice(), [StoreOp::PutApp(a)] if a.state == "KILLED"),
        "{ops:?}"
    );
}

#[test]
fn a_work_preserving_restart_keeps_the_attempt_and_takes_back_its_containers() {
    let (_before, app, am, task, stored) = running_app_with_a_task();
    let attempt = ApplicationAttemptId::new(app, 1);
    assert_eq!(stored[&app.to_string()].attempts.len(), 1);

    let mut after = fresh();
    let summary = after.recover(stored.values().cloned().collect(), Now::at(5000));
    assert_eq!((summary.kept, summary.restarted), (1, 0), "{summary:?}");
    // As Hadoop: the application ACCEPTED, its attempt LAUNCHED, waiting
    // for its AM.
    assert_eq!(after.app_state(&app), Some(AppState::Accepted));
    assert_eq!(after.current_attempt_id(&app), Some(attempt));
    assert_eq!(
        after.attempts.get(&attempt).map(|a| a.state),
        Some(AttemptState::Launched)
    );
    // Its AM's next allocate is refused: it must register again.
    let key = after.tokens.current_amrm_key_id();
    let refused = after.run(
        5100,
        Allocate {
            attempt,
            amrm_key_id: key,
            request: AllocateRequest {
                response_id: 1,
                ..Default::default()
            },
        },
    );
    assert!(
        matches!(refused, Err(Refusal::AmNotRegistered(a)) if a == attempt),
        "{refused:?}"
    );

    // The node re-registers with both containers: the scheduler holds them
    // again, the AM container as the AM's, and nothing is cleaned up.
    let node = NodeId::new("h1", 4040);
    let outcome = after.run(
        6000,
        RegisterNode {
            registration: registration("h1"),
            containers: vec![running(am), running(task)],
            running_apps: vec![app],
            log_reports: Vec::new(),
        },
    );
    assert!(matches!(outcome, NodeRegistration::Accepted(_)));
    let scheduler = after.cluster.scheduler();
    assert_eq!(
        scheduler.node(&node).map(|n| n.used),
        Some(Resource::new(2048, 2))
    );
    let queue = scheduler.queue("root.default").expect("queue");
    assert_eq!(queue.used, Resource::new(2048, 2));
    assert_eq!(queue.am_used, Resource::new(1024, 1));
    let answer = after.heartbeat(&node, vec![running(am), running(task)], 6500);
    assert!(
        answer.work.cleanup_containers.is_empty(),
        "{:?}",
        answer.work
    );
    assert!(answer.work.cleanup_apps.is_empty(), "{:?}", answer.work);

    // The AM registers again and resends its asks; nothing new is placed
    // during the scheduling wait (10 s from the restart at 5 s).
    after
        .run(
            7000,
            RegisterApplicationMaster {
                attempt,
                host: "amhost".into(),
                rpc_port: 7000,
                tracking_url: String::new(),
            },
        )
        .expect("a recovered attempt's AM registers again");
    assert_eq!(after.app_state(&app), Some(AppState::Running));
    let waiting = after
        .run(
            7100,
            Allocate {
                attempt,
                amrm_key_id: key,
                request: AllocateRequest {
                    response_id: 0,
                    ..ask(1)
                },
            },
        )
        .expect("allocate");
    assert!(waiting.allocated.is_empty(), "{waiting:?}");
    after.heartbeat(&node, vec![running(am), running(task)], 14_000);
    after.heartbeat(&node, vec![running(am), running(task)], 15_001);
    let granted = after
        .run(
            15_100,
            Allocate {
                attempt,
                amrm_key_id: key,
                request: AllocateRequest {
                    response_id: 1,
                    ..Default::default()
                },
            },
        )
        .expect("allocate");
    let fresh_container = match granted.allocated.as_slice() {
        [c] => c.id,
        other => panic!("{other:?}"),
    };
    assert!(fresh_container != am && fresh_container != task);
    assert_eq!(
        after.cluster.scheduler().node(&node).map(|n| n.used),
        Some(Resource::new(3072, 3))
    );
    // Finished in its one attempt.
    after
        .run(
            16_000,
            FinishApplicationMaster {
                attempt,
                status: FinalStatus::Succeeded,
                diagnostics: String::new(),
                tracking_url: String::new(),
            },
        )
        .expect("finish");
    assert_eq!(after.app_state(&app), Some(AppState::Finished));
    assert_eq!(after.history.get(&app).map(|h| h.ids.len()), Some(1));
}

#[test]
fn an_am_that_never_comes_back_is_expired_and_the_application_gets_a_new_attempt() {
    let (_before, app, _am, _task, stored) = running_app_with_a_task();
    let mut after = fresh();
    after.recover(stored.values().cloned().collect(), Now::at(5000));
    let expiry = after.settings.am_expiry_ms;
    after.tick(5000 + expiry);
    assert_eq!(
        after.current_attempt_id(&app),
        Some(ApplicationAttemptId::new(app, 1))
    );
    after.tick(5000 + expiry + 1);
    assert_eq!(
        after.current_attempt_id(&app),
        Some(ApplicationAttemptId::new(app, 2))
    );
    assert_eq!(
        after
            .attempts
            .get(&ApplicationAttemptId::new(app, 1))
            .map(|a| a.state),
        Some(AttemptState::Failed)
    );
}

#[test]
fn an_am_container_that_ended_while_the_rm_was_down_ends_its_attempt() {
    let (_before, app, am, task, stored) = running_app_with_a_task();
    let mut after = fresh();
    after.recover(stored.values().cloned().collect(), Now::at(5000));
    let exited = ContainerStatus {
        running: false,
        complete: true,
        exit_status: 1,
        ..running(am)
    };
    after.run(
        6000,
        RegisterNode {
            registration: registration("h1"),
            containers: vec![exited, running(task)],
            running_apps: vec![app],
            log_reports: Vec::new(),
        },
    );
    assert_eq!(
        after
            .attempts
            .get(&ApplicationAttemptId::new(app, 1))
            .map(|a| a.state),
        Some(AttemptState::Failed)
    );
    assert_eq!(
        after.current_attempt_id(&app),
        Some(ApplicationAttemptId::new(app, 2))
    );
}

#[test]
fn an_attempt_still_waiting_for_its_am_container_asks_for_it_again() {
    let mut before = fresh();
    let app = before.submit_to("default", "alice", None, 0);
    let mut stored = BTreeMap::new();
    apply(&mut stored, before.take_store_ops());

    let mut after = fresh();
    let summary = after.recover(stored.values().cloned().collect(), Now::at(100));
    assert_eq!(summary.kept, 1);
    let node = after.add_node("h1", Resource::new(NODE_GB, 8), 200);
    // Not during the scheduling wait.
    after.heartbeat(&node, Vec::new(), 300);
    assert!(after.launched().is_empty());
    after.heartbeat(&node, Vec::new(), 10_101);
    assert_eq!(after.launched(), [ApplicationAttemptId::new(app, 1)]);
}

#[test]
fn a_container_released_before_its_node_came_back_is_released_when_it_does() {
    let (_before, app, am, task, stored) = running_app_with_a_task();
    let attempt = ApplicationAttemptId::new(app, 1);
    let mut after = fresh();
    after.recover(stored.values().cloned().collect(), Now::at(5000));
    after
        .run(
            5100,
            RegisterApplicationMaster {
                attempt,
                host: "amhost".into(),
                rpc_port: 7000,
                tracking_url: String::new(),
            },
        )
        .expect("register");
    // The AM gives the task container back before the node re-registers
    // (Hadoop's AMRMClient resends unconfirmed releases after a resync).
    let key = after.tokens.current_amrm_key_id();
    after
        .run(
            5200,
            Allocate {
                attempt,
                amrm_key_id: key,
                request: AllocateRequest {
                    response_id: 0,
                    releases: vec![task],
                    ..Default::default()
                },
            },
        )
        .expect("allocate");
    let node = NodeId::new("h1", 4040);
    after.run(
        6000,
        RegisterNode {
            registration: registration("h1"),
            containers: vec![running(am), running(task)],
            running_apps: vec![app],
            log_reports: Vec::new(),
        },
    );
    // Only the AM container is held; the task is to be killed, and its AM
    // hears it completed.
    assert_eq!(
        after.cluster.scheduler().node(&node).map(|n| n.used),
        Some(Resource::new(1024, 1))
    );
    let answer = after.heartbeat(&node, vec![running(am), running(task)], 6500);
    assert!(
        answer.work.cleanup_containers.contains(&task),
        "{:?}",
        answer.work
    );
    let next = after
        .run(
            6600,
            Allocate {
                attempt,
                amrm_key_id: key,
                request: AllocateRequest {
                    response_id: 1,
                    ..Default::default()
                },
            },
        )
        .expect("allocate");
    assert!(
        next.completed.iter().any(|f| f.container == task),
        "{:?}",
        next.completed
    );
}

/// An application whose AM unregistered just before the RM stopped is
/// stored FINISHED with its attempt FINISHING (its AM container had not
/// ended yet). Recovery ends that attempt (FINISHED, its final status kept),
/// as Hadoop's recovered attempts of a finished application are: left
/// FINISHING it was expired later and taken out of a scheduler that never
/// held it (found by the whole-RM simulation, seed 58).
#[test]
fn an_unregistered_attempt_of_a_finished_application_is_finished_on_recovery() {
    let (mut before, app, _am, _task, mut stored) = running_app_with_a_task();
    let attempt = ApplicationAttemptId::new(app, 1);
    before
        .run(
            1300,
            FinishApplicationMaster {
                attempt,
                status: FinalStatus::Succeeded,
                diagnostics: "all done".into(),
                tracking_url: String::new(),
            },
        )
        .expect("unregister");
    apply(&mut stored, before.take_store_ops());
    assert_eq!(stored[&app.to_string()].attempts[0].state, "FINISHING");

    let mut after = fresh();
    after.recover(stored.values().cloned().collect(), Now::at(5000));
    let recovered = after.attempts.get(&attempt).expect("the attempt");
    assert_eq!(recovered.state, AttemptState::Finished);
    assert_eq!(recovered.final_status, FinalStatus::Succeeded);
    // Long past the AM expiry: nothing more happens to it (every command
    // also checks the tables agree with the scheduler).
    after.tick(5000 + 700_000);
    assert_eq!(
        after.attempts.get(&attempt).map(|a| a.state),
        Some(AttemptState::Finished)
    );
    assert_eq!(after.app_state(&app), Some(AppState::Finished));
}
