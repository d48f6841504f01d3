//! The state's side of the store: what it asks to write, and what it
//! rebuilds from the records.

use std::collections::BTreeMap;

use spindle_common::ids::{ApplicationAttemptId, ContainerId, NodeId};
use spindle_common::resource::Resource;

use super::test_support::{healthy, state_with, TestRm};
use super::RESTART_DIAGNOSTICS;
use crate::apps::AppState;
use crate::attempts::AttemptState;
use crate::cluster::nodes::{ContainerStatus, Registration};
use crate::command::{KillApplication, NodeRegistration, RegisterNode};
use crate::queue_files::QueueFile;
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
            StoreOp::PutKeys(_) => {}
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
fn a_running_application_restarts_in_a_new_attempt_and_its_old_containers_are_killed() {
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

    let mut after = fresh();
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
