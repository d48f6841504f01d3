//! The application lifecycle driven command by command on the state:
//! submission, AM container and launch effect, registration, allocate
//! sequencing, container completion, unregistration, retries and kill.

use std::collections::BTreeSet;

use spindle_common::conf::Configuration;
use spindle_common::ids::{ApplicationAttemptId, ApplicationId, ContainerId, NodeId};
use spindle_common::resource::Resource;
use spindle_common::security::{
    AmRmTokenIdentifier, ContainerTokenIdentifier, Credentials, NmTokenIdentifier,
};
use spindle_scheduler::ResourceAsk;

use super::test_support::{state_with, TestRm, TS};
use super::Settings;
use crate::cluster::nodes::{ContainerStatus, Decommission, NodeState, NodeWork};
use crate::hosts::{parse_list, HostLists};
use crate::model::access::Caller;
use crate::model::amrm::{AllocateReply, AllocateRequest, RegisterReply};
use crate::model::apps::{AppState, FinalStatus};
use crate::model::attempts::AttemptState;
use crate::model::convert::refusal_to_rpc;
use crate::model::keys::KeyRolling;
use crate::model::launch::{AmLaunchContext, Effect};
use crate::model::refusal::Refusal;
use crate::model::submission::Submission;
use crate::queue_files::QueueFile;
use crate::state::command::{
    Allocate, AmLaunchFailed, AmLaunched, FinishApplicationMaster, KillApplication, NewApplication,
    NodeRegistration, RefreshNodes, RegisterApplicationMaster, RegisterNode, SubmitApplication,
    UnregisterNode,
};

/// FIFO queues, a 5 s AM liveness interval, keys rolling as `rolling` says.
fn state_rolling(rolling: KeyRolling) -> TestRm {
    let settings = Settings {
        am_expiry_ms: 5_000,
        ..Settings::new(TS)
    };
    TestRm::new(QueueFile::fifo(), settings, rolling)
}

fn state() -> TestRm {
    state_rolling(KeyRolling::daily(0))
}

fn node(host: &str) -> NodeId {
    NodeId::new(host, 4040)
}

fn add_node(s: &mut TestRm, host: &str, ms: u64) {
    s.add_node(host, Resource::new(8192, 8), ms);
}

fn submit(s: &mut TestRm, ms: u64) -> ApplicationId {
    submit_keeping(s, ms, false)
}

fn submit_keeping(s: &mut TestRm, ms: u64, keep_containers: bool) -> ApplicationId {
    let id = s.run(ms, NewApplication);
    let mut submission = super::test_support::submission(id, "default", None);
    submission.keep_containers = keep_containers;
    let submit = SubmitApplication {
        submission,
        launch: crate::model::convert::launch_context_from_pb(
            hadoop_protos::yarn::ContainerLaunchContextProto {
                command: vec!["sleep 1".into()],
                ..Default::default()
            },
        ),
        user: "alice".into(),
        groups: Vec::new(),
    };
    s.run(ms, submit).expect("submit");
    id
}

/// Takes the one LaunchAm effect and checks its tokens.
fn take_launch(s: &mut TestRm) -> (ApplicationAttemptId, NodeId, ContainerId) {
    let effects = s.take_effects();
    assert_eq!(effects.len(), 1, "{effects:?}");
    let Effect::LaunchAm {
        attempt,
        node,
        nm_token,
        container_token,
        launch,
    } = effects.into_iter().next().expect("one effect");
    let nm = NmTokenIdentifier::decode(&nm_token.identifier).expect("nm token");
    assert_eq!(
        (nm.attempt, &nm.node, nm.app_submitter.as_str()),
        (attempt, &node, "alice")
    );
    let ident = ContainerTokenIdentifier::decode(&container_token.identifier)
        .expect("container identifier");
    assert_eq!(ident.nm_host_addr, node.to_string());
    assert_eq!(ident.rm_identifier, TS);
    assert_eq!(
        ident.container_type,
        Some(hadoop_protos::yarn::ContainerTypeProto::ApplicationMaster)
    );
    // The AMRMToken was merged into the launch context's credentials.
    let creds =
        Credentials::from_bytes(launch.tokens.as_deref().unwrap_or_default()).expect("HDTS");
    let amrm: Vec<_> = creds.tokens_of_kind("YARN_AM_RM_TOKEN").collect();
    assert_eq!(amrm.len(), 1);
    let amrm_id = AmRmTokenIdentifier::decode(&amrm[0].identifier).expect("amrm identifier");
    assert_eq!(amrm_id.attempt, attempt);
    assert!(launch
        .environment
        .iter()
        .any(|(name, _)| name == "APPLICATION_WEB_PROXY_BASE"));
    (attempt, node, ident.container)
}

fn amrm_key(s: &TestRm) -> i32 {
    s.tokens.current_amrm_key_id()
}

/// The node reports `container` completed with `exit`; answers what the
/// node is told.
fn complete(s: &mut TestRm, node: &NodeId, container: ContainerId, exit: i32, ms: u64) -> NodeWork {
    let status = ContainerStatus {
        container,
        running: false,
        complete: true,
        exit_status: exit,
        diagnostics: format!("exit {exit}"),
        resource: Resource::new(1024, 1),
    };
    s.heartbeat(node, vec![status], ms).work
}

/// What the node is told on a heartbeat reporting nothing.
fn node_work(s: &mut TestRm, node: &NodeId, ms: u64) -> NodeWork {
    s.heartbeat(node, Vec::new(), ms).work
}

fn ask(pri: i32, name: &str, mb: i64, n: i32) -> ResourceAsk {
    ResourceAsk::new(pri, name, Resource::new(mb, 1), n)
}

fn register(
    s: &mut TestRm,
    attempt: ApplicationAttemptId,
    url: &str,
    ms: u64,
) -> Result<RegisterReply, Refusal> {
    s.run(
        ms,
        RegisterApplicationMaster {
            attempt,
            host: "amhost".into(),
            rpc_port: 7000,
            tracking_url: url.into(),
        },
    )
}

fn allocate(
    s: &mut TestRm,
    attempt: ApplicationAttemptId,
    key: i32,
    request: AllocateRequest,
    ms: u64,
) -> Result<AllocateReply, Refusal> {
    s.run(
        ms,
        Allocate {
            attempt,
            amrm_key_id: key,
            request,
        },
    )
}

/// An allocate call with response id `id` and nothing else.
fn plain(id: i32) -> AllocateRequest {
    AllocateRequest {
        response_id: id,
        ..Default::default()
    }
}

fn finish(
    s: &mut TestRm,
    attempt: ApplicationAttemptId,
    status: FinalStatus,
    diagnostics: &str,
    ms: u64,
) -> Result<bool, Refusal> {
    s.run(
        ms,
        FinishApplicationMaster {
            attempt,
            status,
            diagnostics: diagnostics.into(),
            tracking_url: String::new(),
        },
    )
}

fn launched(s: &mut TestRm, attempt: ApplicationAttemptId, ms: u64) {
    s.run(ms, AmLaunched { attempt });
}

#[test]
fn application_runs_to_success() {
    let mut s = state();
    add_node(&mut s, "h1", 0);
    let app = submit(&mut s, 10);
    let (attempt, am_node, am_container) = take_launch(&mut s);
    assert_eq!(
        am_container.sequence(),
        1,
        "the AM container is the attempt's first"
    );
    assert_eq!(s.apps.get(&app).map(|a| a.state), Some(AppState::Accepted));

    launched(&mut s, attempt, 20);
    let key = amrm_key(&s);
    assert_eq!(
        allocate(&mut s, attempt, key, plain(0), 25),
        Err(Refusal::AmNotRegistered(attempt))
    );
    register(&mut s, attempt, "http://amhost:4040", 30).expect("register");
    assert_eq!(s.apps.get(&app).map(|a| a.state), Some(AppState::Running));
    assert!(
        register(&mut s, attempt, "", 31).is_err(),
        "second register refused"
    );

    // Ask for two 2 GB containers anywhere.
    let req = AllocateRequest {
        asks: vec![ask(1, "*", 2048, 2)],
        response_id: 0,
        ..Default::default()
    };
    let r1 = allocate(&mut s, attempt, key, req.clone(), 40).expect("allocate");
    assert_eq!(r1.response_id, 1);
    assert_eq!(r1.allocated.len(), 2);
    assert_eq!(r1.nm_tokens.len(), 1, "one NMToken for the one node");
    for c in &r1.allocated {
        assert_eq!(c.priority, 1);
        assert_eq!(c.node_http_address, "h1:8042");
        assert_eq!(c.token.kind, "ContainerToken");
    }
    // A repeated call with the old response id replays the same answer.
    assert_eq!(allocate(&mut s, attempt, key, req, 41).expect("replay"), r1);
    // Out-of-sequence ids are refused.
    assert_eq!(
        allocate(&mut s, attempt, key, plain(7), 42),
        Err(Refusal::InvalidResponseId {
            attempt,
            expected: 1,
            got: 7
        })
    );

    // One task container finishes; the AM hears about it on the next call.
    let task = r1.allocated[0].id;
    complete(&mut s, &am_node, task, 0, 50);
    let r2 = allocate(&mut s, attempt, key, plain(1), 60).expect("allocate 2");
    assert_eq!(r2.response_id, 2);
    assert_eq!(r2.completed.len(), 1);
    assert_eq!(r2.completed[0].exit_status, 0);
    assert!(
        r2.nm_tokens.is_empty(),
        "no second NMToken for the same node"
    );

    assert_eq!(
        finish(&mut s, attempt, FinalStatus::Succeeded, "done", 70),
        Ok(true)
    );
    let a = s.apps.get(&app).expect("app");
    assert_eq!(
        (a.state, a.final_status),
        (AppState::Finished, FinalStatus::Succeeded)
    );
    // The AM container exits: the attempt is over and the node cleans up the app.
    let work = complete(&mut s, &am_node, am_container, 0, 80);
    assert_eq!(
        s.attempts.get(&attempt).map(|a| a.state),
        Some(AttemptState::Finished)
    );
    assert!(work.cleanup_apps.contains(&app));
    assert!(work.acked.contains(&am_container));
    s.cluster
        .scheduler()
        .check_invariants()
        .expect("invariants");
    assert_eq!(
        s.cluster.scheduler().cluster().used,
        Resource::ZERO,
        "everything returned"
    );
}

#[test]
fn failed_am_is_retried_then_the_app_fails() {
    let mut s = state();
    add_node(&mut s, "h1", 0);
    let app = submit(&mut s, 10);
    let (a1, n1, c1) = take_launch(&mut s);
    launched(&mut s, a1, 20);
    complete(&mut s, &n1, c1, 1, 30);
    assert_eq!(
        s.attempts.get(&a1).map(|a| a.state),
        Some(AttemptState::Failed)
    );
    // A second attempt starts with a new AM container.
    let (a2, n2, c2) = take_launch(&mut s);
    assert_eq!(a2.attempt_id, 2);
    assert_ne!(c1, c2);
    assert_eq!(s.apps.get(&app).map(|a| a.state), Some(AppState::Accepted));
    complete(&mut s, &n2, c2, 1, 40);
    let a = s.apps.get(&app).expect("app");
    assert_eq!(a.state, AppState::Failed);
    assert!(
        a.diagnostics.contains("failed 2 times"),
        "{}",
        a.diagnostics
    );
    assert!(a.diagnostics.contains("exitCode: 1"), "{}", a.diagnostics);
    assert!(s.effects.is_empty(), "no third attempt");
}

/// A failed attempt that is retried ends only its own containers (the
/// scheduler kills them); the application itself is cleaned up on its nodes
/// only when it ends, as Hadoop's RMAppImpl does on reaching a final state.
/// Cleaning it up at the first failure races the next attempt's AM container
/// on the NodeManager ("Application ... is finishing on this node").
#[test]
fn a_retried_attempt_leaves_the_application_on_its_nodes() {
    let mut s = state();
    add_node(&mut s, "h1", 0);
    let app = submit(&mut s, 10);
    let (a1, n1, c1) = take_launch(&mut s);
    launched(&mut s, a1, 20);
    let work = complete(&mut s, &n1, c1, 1, 30);
    assert!(!work.cleanup_apps.contains(&app), "{work:?}");
    let (a2, n2, c2) = take_launch(&mut s);
    launched(&mut s, a2, 35);
    assert!(!node_work(&mut s, &n2, 36).cleanup_apps.contains(&app));
    // The last attempt fails: now the application ends on every node.
    let work = complete(&mut s, &n2, c2, 1, 40);
    assert_eq!(s.apps.get(&app).map(|a| a.state), Some(AppState::Failed));
    assert!(work.cleanup_apps.contains(&app), "{work:?}");
}

/// A launch that gives up after its attempt already ended (the AM
/// container exited and the next attempt started) changes nothing: no
/// attempt counts twice and no third attempt starts.
#[test]
fn a_late_launch_failure_of_an_ended_attempt_is_ignored() {
    let mut s = state();
    add_node(&mut s, "h1", 0);
    let app = submit(&mut s, 10);
    let (a1, n1, c1) = take_launch(&mut s);
    launched(&mut s, a1, 20);
    complete(&mut s, &n1, c1, 1, 30);
    let (a2, _, _) = take_launch(&mut s);
    s.run(
        40,
        AmLaunchFailed {
            attempt: a1,
            reason: "startContainers timed out".into(),
        },
    );
    assert!(s.effects.is_empty(), "no third attempt: {:?}", s.effects);
    assert_eq!(s.history.get(&app).map(|h| h.ids.len()), Some(2));
    assert_eq!(s.history.get(&app).map(|h| h.failed), Some(1));
    assert_eq!(
        s.attempts.get(&a2).map(|a| a.state),
        Some(AttemptState::Allocated)
    );
}

/// A node whose heartbeat answer was lost sends the same heartbeat again
/// and must hear the same cleanups: they were taken out of the RM's node
/// work when the first answer was made.
#[test]
fn a_repeated_heartbeat_gets_the_same_answer_again() {
    let mut s = state();
    add_node(&mut s, "h1", 0);
    let app = submit(&mut s, 10);
    let (a1, n1, c1) = take_launch(&mut s);
    launched(&mut s, a1, 20);
    let killed = s.run(
        30,
        KillApplication {
            app,
            user: "alice".into(),
            groups: Vec::new(),
            reason: None,
            from: None,
        },
    );
    assert_eq!(killed, Ok(true));
    let first = node_work(&mut s, &n1, 40);
    assert!(first.cleanup_containers.contains(&c1), "{first:?}");
    assert!(first.cleanup_apps.contains(&app), "{first:?}");
    let again = s.repeat_heartbeat(&n1, 45);
    assert_eq!(again.work, first);
    // The next fresh heartbeat has nothing left to say.
    let next = node_work(&mut s, &n1, 50);
    assert!(next.cleanup_containers.is_empty() && next.cleanup_apps.is_empty());
}

/// What the RM keeps for a node (work not yet told, its last answer) goes
/// when the node is lost.
#[test]
fn a_lost_node_leaves_nothing_behind() {
    let mut s = state();
    let n1 = s.add_node("h1", Resource::new(8192, 8), 0);
    let app = submit(&mut s, 10);
    let (a1, _, _) = take_launch(&mut s);
    launched(&mut s, a1, 20);
    let _ = node_work(&mut s, &n1, 25);
    let _ = s.run(
        30,
        KillApplication {
            app,
            user: "alice".into(),
            groups: Vec::new(),
            reason: None,
            from: None,
        },
    );
    assert!(s.node_work.contains_key(&n1));
    assert!(s.last_answers.contains_key(&n1));
    // Silent past the liveness expiry (10 s in these tests).
    s.tick(20_000);
    assert!(!s.node_work.contains_key(&n1));
    assert!(!s.last_answers.contains_key(&n1));
}

/// Past `max-completed-applications` the oldest finished application is
/// forgotten, and so are its attempts and launch history; an application
/// whose unregistered AM is still winding down keeps its attempt until the
/// AM container's end has reached it.
#[test]
fn evicted_applications_take_their_attempts_with_them() {
    let mut s = state();
    s.apps = crate::model::apps::AppTable::new(TS, 1, Resource::new(8192, 4), 2);
    add_node(&mut s, "h1", 0);
    // The first application's AM unregisters; its container still runs.
    let first = submit(&mut s, 10);
    let (a1, n1, c1) = take_launch(&mut s);
    launched(&mut s, a1, 20);
    register(&mut s, a1, "", 30).expect("register");
    finish(&mut s, a1, FinalStatus::Succeeded, "", 40).expect("finish");
    // Two more applications end: the first is evicted from the table.
    for ms in [50, 60] {
        let app = submit(&mut s, ms);
        let _ = take_launch(&mut s);
        let killed = s.run(
            ms + 1,
            KillApplication {
                app,
                user: "alice".into(),
                groups: Vec::new(),
                reason: None,
                from: None,
            },
        );
        assert_eq!(killed, Ok(true));
    }
    assert!(s.apps.get(&first).is_none(), "evicted from the table");
    assert!(s.history.contains_key(&first), "its AM is still finishing");
    assert_eq!(
        s.attempts.get(&a1).map(|a| a.state),
        Some(AttemptState::Finishing)
    );
    // Its AM container, still running, is not an orphan: the node is not
    // told to clean the application up while the AM winds down.
    let running = ContainerStatus {
        container: c1,
        running: true,
        complete: false,
        exit_status: 0,
        diagnostics: String::new(),
        resource: Resource::new(1024, 1),
    };
    let work = s.heartbeat(&n1, vec![running], 65).work;
    assert!(!work.cleanup_apps.contains(&first), "{work:?}");
    // The AM container exits: now everything about the application goes.
    complete(&mut s, &n1, c1, 0, 70);
    assert!(!s.history.contains_key(&first));
    assert!(!s.attempts.contains_key(&a1));
    // Only the newest completed application is kept, with its attempt.
    assert_eq!(s.history.len(), 1);
    assert_eq!(s.attempts.len(), 1);
}

#[test]
fn lost_node_does_not_count_as_an_attempt_failure() {
    let mut s = state();
    add_node(&mut s, "h1", 0);
    let app = submit(&mut s, 10);
    let (a1, n1, _c1) = take_launch(&mut s);
    launched(&mut s, a1, 20);
    // The node goes away (as after liveness expiry).
    add_node(&mut s, "h2", 25);
    assert!(s.run(30, UnregisterNode { node: n1 }));
    let (a2, n2, _) = take_launch(&mut s);
    assert_eq!(n2, node("h2"));
    assert_eq!(s.history.get(&app).map(|h| h.failed), Some(0));
    assert_eq!(a2.attempt_id, 2);
}

#[test]
fn am_launch_failure_fails_the_attempt() {
    let mut s = state();
    add_node(&mut s, "h1", 0);
    let app = submit(&mut s, 10);
    let (a1, _, _) = take_launch(&mut s);
    s.run(
        20,
        AmLaunchFailed {
            attempt: a1,
            reason: "connection refused".into(),
        },
    );
    let attempt = s.attempts.get(&a1).expect("attempt");
    assert_eq!(attempt.state, AttemptState::Failed);
    assert!(attempt.diagnostics.contains("connection refused"));
    let _ = take_launch(&mut s);
    assert_eq!(s.apps.get(&app).map(|a| a.state), Some(AppState::Accepted));
}

#[test]
fn silent_am_times_out() {
    let mut s = state();
    add_node(&mut s, "h1", 0);
    let app = submit(&mut s, 10);
    let (a1, _, _) = take_launch(&mut s);
    launched(&mut s, a1, 20);
    register(&mut s, a1, "", 30).expect("register");
    s.tick(4_000);
    assert_eq!(
        s.attempts.get(&a1).map(|a| a.state),
        Some(AttemptState::Running)
    );
    s.tick(6_000);
    let a = s.attempts.get(&a1).expect("attempt");
    assert_eq!(a.state, AttemptState::Failed);
    assert!(a.diagnostics.contains("timed out"));
    assert_eq!(s.history.get(&app).map(|h| h.ids.len()), Some(2));
}

#[test]
fn kill_ends_the_attempt_and_cleans_its_containers() {
    let mut s = state();
    add_node(&mut s, "h1", 0);
    let app = submit(&mut s, 10);
    let (a1, n1, c1) = take_launch(&mut s);
    launched(&mut s, a1, 20);
    register(&mut s, a1, "", 30).expect("register");
    let key = amrm_key(&s);
    let r = allocate(
        &mut s,
        a1,
        key,
        AllocateRequest {
            asks: vec![ask(1, "*", 1024, 1)],
            response_id: 0,
            ..Default::default()
        },
        40,
    )
    .expect("allocate");
    assert_eq!(r.allocated.len(), 1);
    let killed = s.run(
        50,
        KillApplication {
            app,
            user: "alice".into(),
            groups: Vec::new(),
            reason: Some("killed by test".into()),
            from: Some(std::net::Ipv4Addr::new(10, 0, 0, 9).into()),
        },
    );
    assert_eq!(killed, Ok(true));
    assert_eq!(s.apps.get(&app).map(|a| a.state), Some(AppState::Killed));
    assert_eq!(
        s.apps.get(&app).map(|a| a.diagnostics.clone()),
        Some(format!(
            "Application {app} was killed by user alice at 10.0.0.9 \
             with diagnostic message: killed by test"
        ))
    );
    let work = node_work(&mut s, &n1, 55);
    assert!(work.cleanup_containers.contains(&c1), "AM container killed");
    assert_eq!(work.cleanup_containers.len(), 2, "and the task container");
    assert!(work.cleanup_apps.contains(&app));
    // The killed attempt's AM is told to shut down.
    let after = allocate(&mut s, a1, key, plain(1), 60).expect("allocate after kill");
    assert!(after.shutdown);
    s.cluster
        .scheduler()
        .check_invariants()
        .expect("invariants");
}

#[test]
fn rolled_amrm_key_hands_the_am_a_new_token() {
    let mut s = state_rolling(KeyRolling {
        amrm_interval_ms: 1000,
        ..KeyRolling::daily(0)
    });
    add_node(&mut s, "h1", 0);
    let _app = submit(&mut s, 10);
    let (a1, _, _) = take_launch(&mut s);
    register(&mut s, a1, "", 20).expect("register");
    let old_key = amrm_key(&s);
    assert!(allocate(&mut s, a1, old_key, plain(0), 30)
        .expect("allocate")
        .amrm_token
        .is_none());
    // The AMRMToken key rolls every second: the tick at 2 s rolls it.
    s.tick(2_000);
    assert_ne!(amrm_key(&s), old_key);
    let r = allocate(&mut s, a1, old_key, plain(1), 2_010).expect("allocate after roll");
    let token = r.amrm_token.expect("a new AMRMToken");
    let ident = AmRmTokenIdentifier::decode(&token.identifier).expect("identifier");
    assert_eq!((ident.attempt, ident.key_id), (a1, amrm_key(&s)));
    // The old key is still accepted as the previous one.
    assert!(s.tokens.keys().amrm.key(old_key).is_ok());
}

/// As Hadoop's RM: a rolled container-token or NMToken key goes to the
/// NodeManagers in their heartbeats first and signs tokens only after the
/// activation delay (1.5 × the NM liveness expiry), so no node is handed a
/// token under a key it has not heard of yet.
#[test]
fn rolled_node_keys_reach_the_nodes_before_they_sign_tokens() {
    let mut s = state_rolling(KeyRolling {
        container_interval_ms: 10_000,
        nm_interval_ms: 10_000,
        ..KeyRolling::daily(0)
    });
    add_node(&mut s, "h1", 0);
    let current = |s: &TestRm| {
        let keys = s.tokens.keys();
        (
            keys.container_token.current_key().key_id,
            keys.nm_token.current_key().key_id,
        )
    };
    let (container_key, nm_key) = current(&s);
    s.tick(10_000);
    // Rolled: the node hears of the next keys...
    let answer = s.heartbeat(&node("h1"), Vec::new(), 10_010);
    let next_container = answer
        .container_token_key
        .expect("the next container-token key")
        .key_id;
    let next_nm = answer.nm_token_key.expect("the next NMToken key").key_id;
    assert_ne!(next_container, container_key);
    assert_ne!(next_nm, nm_key);
    // ...while tokens are still signed with the keys it had.
    assert_eq!(current(&s), (container_key, nm_key));
    // After the activation delay the next keys sign.
    s.tick(10_000 + 900_000);
    assert_eq!(current(&s), (next_container, next_nm));
    // The old keys stay valid as the previous ones.
    let keys = s.tokens.keys();
    assert!(keys.container_token.key(container_key).is_ok());
    assert!(keys.nm_token.key(nm_key).is_ok());
}

#[test]
fn kept_containers_survive_the_am_and_go_to_the_next_attempt() {
    let mut s = state();
    add_node(&mut s, "h1", 0);
    let app = submit_keeping(&mut s, 10, true);
    let (a1, n1, c1) = take_launch(&mut s);
    launched(&mut s, a1, 20);
    register(&mut s, a1, "", 30).expect("register");
    let key = amrm_key(&s);
    let r = allocate(
        &mut s,
        a1,
        key,
        AllocateRequest {
            asks: vec![ask(1, "*", 1024, 2)],
            response_id: 0,
            ..Default::default()
        },
        40,
    )
    .expect("allocate");
    let tasks: Vec<ContainerId> = r.allocated.iter().map(|c| c.id).collect();
    assert_eq!(tasks.len(), 2);
    // The AM dies; its task containers keep running.
    let work = complete(&mut s, &n1, c1, 1, 50);
    assert!(
        work.cleanup_containers.is_empty(),
        "nothing killed: {work:?}"
    );
    assert!(work.cleanup_apps.is_empty());
    let (a2, _, _) = take_launch(&mut s);
    launched(&mut s, a2, 60);
    let reg = register(&mut s, a2, "", 70).expect("register 2");
    assert_eq!(reg.previous_containers.len(), 2);
    assert_eq!(reg.previous_nm_tokens.len(), 1);
    // One kept container finishes: the new AM hears of it; the other it releases.
    complete(&mut s, &n1, tasks[0], 0, 80);
    let r = allocate(
        &mut s,
        a2,
        key,
        AllocateRequest {
            response_id: 0,
            releases: vec![tasks[1]],
            ..Default::default()
        },
        90,
    )
    .expect("allocate 2");
    let done: Vec<_> = r.completed.iter().map(|c| c.exit_status).collect();
    assert!(done.contains(&0), "{done:?}");
    assert!(node_work(&mut s, &n1, 95)
        .cleanup_containers
        .contains(&tasks[1]));
    finish(&mut s, a2, FinalStatus::Succeeded, "", 100).expect("finish");
    assert_eq!(
        s.apps.get(&app).map(|a| a.final_status),
        Some(FinalStatus::Succeeded)
    );
    s.cluster
        .scheduler()
        .check_invariants()
        .expect("invariants");
}

#[test]
fn ams_hear_about_nodes_that_change() {
    let mut s = state();
    add_node(&mut s, "h1", 0);
    add_node(&mut s, "h2", 0);
    let _app = submit(&mut s, 10);
    let (a1, _, _) = take_launch(&mut s);
    register(&mut s, a1, "", 20).expect("register");
    let key = amrm_key(&s);
    let r = allocate(&mut s, a1, key, plain(0), 30).expect("allocate");
    assert!(
        r.updated_nodes.is_empty(),
        "nothing changed since registration"
    );
    // h2 starts decommissioning gracefully (refreshNodes -g).
    let hosts = HostLists {
        include: Default::default(),
        exclude: parse_list("h2"),
    };
    s.run(
        40,
        RefreshNodes {
            hosts,
            mode: Decommission::Graceful { timeout_ms: None },
        },
    );
    let r = allocate(&mut s, a1, key, plain(1), 50).expect("allocate");
    let states: Vec<_> = r
        .updated_nodes
        .iter()
        .map(|n| (n.id.host.as_str(), n.state))
        .collect();
    assert_eq!(states, vec![("h2", NodeState::Decommissioning)]);
    let r = allocate(&mut s, a1, key, plain(2), 60).expect("allocate");
    assert!(r.updated_nodes.is_empty(), "each change is told once");
}

#[test]
fn am_reporting_failure_leaves_the_app_finished_with_failed_status() {
    let mut s = state();
    add_node(&mut s, "h1", 0);
    let app = submit(&mut s, 10);
    let (a1, _, _) = take_launch(&mut s);
    register(&mut s, a1, "", 20).expect("register");
    finish(&mut s, a1, FinalStatus::Failed, "job failed", 30).expect("finish");
    let a = s.apps.get(&app).expect("app");
    assert_eq!(
        (a.state, a.final_status),
        (AppState::Finished, FinalStatus::Failed)
    );
    assert_eq!(a.diagnostics, "job failed");
}

#[test]
fn unknown_queue_fails_the_app_without_an_attempt() {
    // The capacity scheduler's default queues (FIFO ignores queue names).
    let queues = crate::queue_files::load(
        spindle_scheduler::SchedulerKind::Capacity,
        &Configuration::with_defaults(),
        None,
    )
    .expect("default capacity queues");
    let mut s = state_with(queues);
    add_node(&mut s, "h1", 0);
    let id = s.run(1, NewApplication);
    let submit = SubmitApplication {
        submission: Submission {
            name: "x".into(),
            ..super::test_support::submission(id, "nope", None)
        },
        launch: AmLaunchContext::default(),
        user: "bob".into(),
        groups: Vec::new(),
    };
    s.run(5, submit).expect("recorded");
    let a = s.apps.get(&id).expect("app");
    assert_eq!(a.state, AppState::Failed);
    assert!(a.diagnostics.contains("unknown queue: nope"));
    assert!(s.effects.is_empty());
}

#[test]
fn submit_acl_refuses_outright_when_acls_are_enabled() {
    let mut conf = Configuration::with_defaults();
    for (k, v) in [
        ("yarn.scheduler.capacity.root.acl_submit_applications", " "),
        ("yarn.scheduler.capacity.root.acl_administer_queue", " "),
        (
            "yarn.scheduler.capacity.root.default.acl_submit_applications",
            "alice",
        ),
    ] {
        conf.set(k, v);
    }
    let queues =
        crate::queue_files::capacity::from_conf(&conf, "capacity-scheduler.xml").expect("queues");
    let settings = Settings {
        acl_enabled: true,
        am_expiry_ms: 5_000,
        ..Settings::new(TS)
    };
    let mut s = TestRm::new(queues, settings, KeyRolling::daily(0));
    let submission = |s: &mut TestRm, user: &str| {
        let id = s.run(5, NewApplication);
        let submit = SubmitApplication {
            submission: Submission {
                name: "x".into(),
                ..super::test_support::submission(id, "default", None)
            },
            launch: AmLaunchContext::default(),
            user: user.into(),
            groups: Vec::new(),
        };
        (id, s.run(5, submit))
    };
    let (id, refused) = submission(&mut s, "bob");
    match refused {
        Err(r) => {
            assert_eq!(
                r,
                Refusal::SubmitAccessDenied {
                    user: "bob".into(),
                    app: id,
                    queue: "default".into()
                }
            );
            let message = refusal_to_rpc(r).message;
            assert!(
                message.ends_with(&format!(
                    "User bob does not have permission to submit {id} to queue default"
                )),
                "{message}"
            );
        }
        other => panic!("bob should be refused: {other:?}"),
    }
    assert!(
        s.apps.get(&id).is_none(),
        "a refused submission leaves no record"
    );
    let (id, accepted) = submission(&mut s, "alice");
    accepted.expect("alice may submit");
    assert_eq!(s.apps.get(&id).map(|a| a.state), Some(AppState::Accepted));
}

/// Tags and other submission fields land in the application record.
#[test]
fn submission_fields_are_recorded() {
    let mut s = state();
    let id = s.run(1, NewApplication);
    let submit = SubmitApplication {
        submission: Submission {
            tags: BTreeSet::from(["nightly".to_string()]),
            ..super::test_support::submission(id, "default", None)
        },
        launch: AmLaunchContext::default(),
        user: "alice".into(),
        groups: Vec::new(),
    };
    s.run(2, submit).expect("submit");
    let report = s.app_report(&id, &Caller::user("alice")).expect("report");
    assert_eq!(report.app.tags, BTreeSet::from(["nightly".to_string()]));
    assert_eq!(report.app.user, "alice");
}

/// As Hadoop's application report (`RMAppAttemptImpl`'s `amLaunchDiagnostics`):
/// while the AM container is launched and the AM has not registered, an
/// application without diagnostics of its own shows `AMState.LAUNCHED`'s
/// message; registering clears it.
#[test]
fn reports_show_hadoops_launch_diagnostics_until_the_am_registers() {
    let mut s = state();
    add_node(&mut s, "h1", 0);
    let app = submit(&mut s, 10);
    let (attempt, _, _) = take_launch(&mut s);
    let diagnostics = |s: &TestRm| {
        let report = s.app_report(&app, &Caller::user("alice")).expect("report");
        report.app.diagnostics
    };
    assert_eq!(diagnostics(&s), "");
    launched(&mut s, attempt, 20);
    assert_eq!(
        diagnostics(&s),
        "AM container is launched, waiting for AM container to Register with RM"
    );
    register(&mut s, attempt, "", 30).expect("register");
    assert_eq!(diagnostics(&s), "");
}

/// A node registering again while the RM still holds it (a reconnect: its
/// registration was sent twice, or it restarted within the liveness
/// interval with recovery) keeps its running containers when it reports
/// running applications, as Hadoop's `RMNodeImpl.ReconnectNodeTransition`
/// does: its AMs must not hear that containers still running were lost.
/// Found by the whole-RM simulation (seed 2): a registration sent twice
/// reported a running container lost, and the AM heard it twice.
#[test]
fn a_node_reconnecting_with_running_applications_keeps_its_containers() {
    let mut s = state();
    add_node(&mut s, "h1", 0);
    let app = submit(&mut s, 10);
    let (a1, n1, am) = take_launch(&mut s);
    launched(&mut s, a1, 20);
    register(&mut s, a1, "", 30).expect("register");
    let key = amrm_key(&s);
    let r = allocate(
        &mut s,
        a1,
        key,
        AllocateRequest {
            asks: vec![ask(1, "*", 1024, 1)],
            response_id: 0,
            ..Default::default()
        },
        40,
    )
    .expect("allocate");
    let r = if r.allocated.is_empty() {
        s.heartbeat(&n1, Vec::new(), 45);
        allocate(&mut s, a1, key, plain(1), 50).expect("allocate")
    } else {
        r
    };
    let task = r.allocated[0].id;
    let running = |c: ContainerId| ContainerStatus {
        container: c,
        running: true,
        complete: false,
        exit_status: -1000,
        diagnostics: String::new(),
        resource: Resource::new(1024, 1),
    };
    let used = s.cluster.scheduler().cluster().used;
    // The node registers again, reporting both containers running.
    let registration = crate::cluster::nodes::Registration {
        id: n1.clone(),
        http_port: 8042,
        capability: Resource::new(8192, 8),
        nm_version: "test".into(),
        rack: None,
        health: super::test_support::healthy(),
    };
    let outcome = s.run(
        60,
        RegisterNode {
            registration,
            containers: vec![running(am), running(task)],
            running_apps: vec![app],
            log_reports: Vec::new(),
        },
    );
    assert!(
        matches!(outcome, NodeRegistration::Accepted(_)),
        "{outcome:?}"
    );
    assert_eq!(
        s.cluster.scheduler().cluster().used,
        used,
        "nothing released"
    );
    assert!(s.cluster.scheduler().container(&task).is_some());
    let r = allocate(&mut s, a1, key, plain(r.response_id), 70).expect("allocate");
    assert!(
        r.completed.is_empty(),
        "the AM heard of containers that still run: {:?}",
        r.completed
    );
    assert_eq!(
        s.attempts.get(&a1).map(|a| a.state),
        Some(AttemptState::Running)
    );
    // Without running applications a reconnect starts the node afresh, as in
    // Hadoop: what it held is gone.
    let registration = crate::cluster::nodes::Registration {
        id: n1.clone(),
        http_port: 8042,
        capability: Resource::new(8192, 8),
        nm_version: "test".into(),
        rack: None,
        health: super::test_support::healthy(),
    };
    s.run(
        80,
        RegisterNode {
            registration,
            containers: Vec::new(),
            running_apps: Vec::new(),
            log_reports: Vec::new(),
        },
    );
    assert!(s.cluster.scheduler().container(&task).is_none());
}

/// A heartbeat repeated because its answer was lost counts for the node's
/// liveness, as in Hadoop (`ResourceTrackerService.nodeHeartbeat` pings the
/// liveness monitor before it answers a duplicate with the last answer):
/// a node whose answers keep getting lost is not declared LOST while it
/// heartbeats. Found by the whole-RM simulation (seed 162): the node went
/// LOST 4 s after a repeated heartbeat, and its AMs heard their running
/// containers were lost.
#[test]
fn a_repeated_heartbeat_keeps_the_node_alive() {
    let mut s = state();
    add_node(&mut s, "h1", 0);
    let h1 = node("h1");
    s.heartbeat(&h1, Vec::new(), 1_000);
    // Its answers are lost: it repeats the same heartbeat, every 3 s, for
    // longer than the liveness interval (10 s in these tests).
    for ms in (4_000..=16_000).step_by(3_000) {
        s.repeat_heartbeat(&h1, ms);
        s.tick(ms + 1);
    }
    assert_eq!(
        s.cluster.nodes().get(&h1).map(|n| n.state),
        Some(NodeState::Running)
    );
}

/// A container that ends before its AM pulled it (its node was removed
/// between the allocation and the AM's next allocate) is not handed out:
/// the AM hears only that it completed, as Hadoop's
/// `containerCompleted` drops it from the newly allocated containers.
/// Found by the whole-RM simulation (seed 656): the AM got the container
/// and its completion in one answer, started it, and heard it complete
/// again later.
#[test]
fn a_container_that_ends_before_its_am_pulled_it_is_not_handed_out() {
    let mut s = state();
    add_node(&mut s, "h1", 0);
    let _app = submit(&mut s, 10);
    let (a1, _n1, _am) = take_launch(&mut s);
    launched(&mut s, a1, 20);
    register(&mut s, a1, "", 30).expect("register");
    let key = amrm_key(&s);
    // A whole node's worth: it does not fit beside the AM, so it waits.
    let r = allocate(
        &mut s,
        a1,
        key,
        AllocateRequest {
            asks: vec![ask(1, "*", 8192, 1)],
            response_id: 0,
            ..Default::default()
        },
        40,
    )
    .expect("allocate");
    assert!(r.allocated.is_empty(), "nothing fits yet");
    // A second node comes: its heartbeat grants the container there.
    add_node(&mut s, "h2", 50);
    let h2 = node("h2");
    s.heartbeat(&h2, Vec::new(), 60);
    let granted: Vec<ContainerId> = s
        .attempts
        .get(&a1)
        .map(|a| a.granted.iter().map(|g| g.container).collect())
        .unwrap_or_default();
    assert_eq!(granted.len(), 1, "one container waits for the AM");
    // The node registers again with nothing running: what it held is gone.
    let registration = crate::cluster::nodes::Registration {
        id: h2.clone(),
        http_port: 8042,
        capability: Resource::new(8192, 8),
        nm_version: "test".into(),
        rack: None,
        health: super::test_support::healthy(),
    };
    s.run(
        70,
        RegisterNode {
            registration,
            containers: Vec::new(),
            running_apps: Vec::new(),
            log_reports: Vec::new(),
        },
    );
    let r = allocate(&mut s, a1, key, plain(r.response_id), 80).expect("allocate");
    assert!(
        !r.allocated.iter().any(|c| c.id == granted[0]),
        "a container that already ended was handed out: {:?}",
        r.allocated
    );
    assert!(r.completed.iter().any(|c| c.container == granted[0]));
}

/// A node reporting a running container of a known attempt that the
/// scheduler does not hold (it ended, for the RM, before its AM started
/// it) is told to kill it, as Hadoop's `containerLaunchedOnNode` kills a
/// container that "sneaked into the system": it would run unaccounted, and
/// its end would reach the AM after the RM had already reported it.
/// Found by the whole-RM simulation (seed 739).
#[test]
fn a_running_container_the_scheduler_does_not_hold_is_killed() {
    let mut s = state();
    add_node(&mut s, "h1", 0);
    let _app = submit(&mut s, 10);
    let (a1, n1, am) = take_launch(&mut s);
    launched(&mut s, a1, 20);
    register(&mut s, a1, "", 30).expect("register");
    let stray = ContainerId::new(a1, 99);
    let running = |c: ContainerId| ContainerStatus {
        container: c,
        running: true,
        complete: false,
        exit_status: -1000,
        diagnostics: String::new(),
        resource: Resource::new(1024, 1),
    };
    let work = s.heartbeat(&n1, vec![running(am), running(stray)], 40).work;
    assert!(work.cleanup_containers.contains(&stray), "{work:?}");
    assert!(!work.cleanup_containers.contains(&am), "{work:?}");
    assert_eq!(
        s.attempts.get(&a1).map(|a| a.state),
        Some(AttemptState::Running)
    );
}
