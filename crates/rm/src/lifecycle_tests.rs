//! The application lifecycle driven step by step on the pure state: submission, AM
//! container and launch effect, registration, allocate sequencing, container
//! completion, unregistration, retries and kill.

use std::collections::BTreeSet;
use std::sync::Arc;

use hadoop_protos::yarn as pb;
use spindle_common::ids::{ApplicationAttemptId, ApplicationId, ContainerId, NodeId};
use spindle_common::resource::Resource;
use spindle_common::security::{
    AmRmTokenIdentifier, ContainerTokenIdentifier, Credentials, NmTokenIdentifier,
};
use spindle_scheduler::{Scheduler, SchedulerConfig};

use super::*;
use crate::acl::Acl;
use crate::apps::{AppTable, Submission, SubmitError};
use crate::hosts::HostLists;
use crate::nodes::{Health, NodeConfig, NodeTable, Registration};

const TS: i64 = 1_700_000_000_000;

fn state() -> RmState {
    let min = Resource::new(1024, 1);
    let max = Resource::new(8192, 4);
    let nodes = NodeTable::new(
        NodeConfig {
            liveness_expiry_ms: 10_000,
            heartbeat_interval_ms: 1000,
            min_allocation: min,
            default_graceful_timeout_ms: 1000,
            default_rack: "/default-rack".into(),
        },
        HostLists::default(),
    );
    let scheduler = Scheduler::new(SchedulerConfig {
        minimum_allocation: min,
        maximum_allocation: max,
        ..SchedulerConfig::default()
    })
    .expect("scheduler");
    let mut s = RmState::new(
        TS,
        nodes,
        AppTable::new(TS, 100, max, 2),
        crate::queue_files::QueueFile::fifo(),
        Acl::parse("*"),
        scheduler,
        Arc::new(KeyRing::generate()),
    );
    s.am_expiry_ms = 5_000;
    s
}

fn node(host: &str) -> NodeId {
    NodeId::new(host, 4040)
}

fn add_node(s: &mut RmState, host: &str, now: u64) {
    let reg = Registration {
        id: node(host),
        http_port: 8042,
        capability: Resource::new(8192, 8),
        nm_version: "test".into(),
        rack: None,
        health: Health {
            healthy: true,
            report: String::new(),
            last_report_ms: 0,
        },
    };
    assert_eq!(
        s.nodes.register(reg, now),
        crate::nodes::RegisterOutcome::Accepted
    );
    s.node_registered(&node(host), now);
}

fn submit(s: &mut RmState, now: u64) -> ApplicationId {
    submit_keeping(s, now, false)
}

fn submit_keeping(s: &mut RmState, now: u64, keep_containers: bool) -> ApplicationId {
    let id = s.apps.new_id();
    let sub = Submission {
        id,
        name: "test".into(),
        queue: "default".into(),
        app_type: "YARN".into(),
        tags: BTreeSet::new(),
        priority: None,
        am_resource: Resource::new(1024, 1),
        max_attempts: 0,
        unmanaged_am: false,
        keep_containers,
    };
    let clc = pb::ContainerLaunchContextProto {
        command: vec!["sleep 1".into()],
        ..Default::default()
    };
    s.submit(sub, clc, "alice", &[], now).expect("submit");
    id
}

/// Takes the one LaunchAm effect and checks its tokens.
fn take_launch(s: &mut RmState) -> (ApplicationAttemptId, NodeId, ContainerId) {
    let effects = std::mem::take(&mut s.outbox);
    assert_eq!(effects.len(), 1, "{effects:?}");
    let Effect::LaunchAm {
        attempt,
        node,
        nm_token,
        request,
    } = effects.into_iter().next().expect("one effect");
    let nm = NmTokenIdentifier::decode(&nm_token.identifier).expect("nm token");
    assert_eq!(
        (nm.attempt, &nm.node, nm.app_submitter.as_str()),
        (attempt, &node, "alice")
    );
    let start = &request.start_container_request[0];
    let token = start.container_token.clone().expect("container token");
    let ident = ContainerTokenIdentifier::decode(&token.identifier).expect("container identifier");
    assert_eq!(ident.nm_host_addr, node.to_string());
    assert_eq!(ident.rm_identifier, TS);
    assert_eq!(
        ident.container_type,
        Some(pb::ContainerTypeProto::ApplicationMaster)
    );
    // The AMRMToken was merged into the launch context's credentials.
    let clc = start.container_launch_context.clone().expect("clc");
    let creds = Credentials::from_bytes(clc.tokens.as_deref().unwrap_or_default()).expect("HDTS");
    let amrm: Vec<_> = creds.tokens_of_kind("YARN_AM_RM_TOKEN").collect();
    assert_eq!(amrm.len(), 1);
    let amrm_id = AmRmTokenIdentifier::decode(&amrm[0].identifier).expect("amrm identifier");
    assert_eq!(amrm_id.attempt, attempt);
    assert!(clc
        .environment
        .iter()
        .any(|e| e.key.as_deref() == Some("APPLICATION_WEB_PROXY_BASE")));
    (attempt, node, ident.container)
}

fn amrm_key(s: &RmState) -> i32 {
    read(&s.secrets.amrm).current_key().key_id
}

fn complete(s: &mut RmState, node: &NodeId, container: ContainerId, exit: i32, now: u64) {
    s.container_statuses(
        node,
        vec![NmContainerStatus {
            container,
            running: false,
            complete: true,
            exit_status: exit,
            diagnostics: format!("exit {exit}"),
        }],
        now,
    );
}

fn ask(pri: i32, name: &str, mb: i64, n: i32) -> pb::ResourceRequestProto {
    pb::ResourceRequestProto {
        priority: Some(pb::PriorityProto {
            priority: Some(pri),
        }),
        resource_name: Some(name.into()),
        capability: Some(crate::convert::resource_to_pb(Resource::new(mb, 1))),
        num_containers: Some(n),
        relax_locality: Some(true),
        ..Default::default()
    }
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

    s.am_launched(attempt, 20);
    assert!(matches!(
        s.allocate(attempt, amrm_key(&s), pb::AllocateRequestProto::default(), 25),
        Err(e) if e.class_name == class::APPLICATION_MASTER_NOT_REGISTERED
    ));
    s.register_am(
        attempt,
        "amhost".into(),
        7000,
        "http://amhost:4040".into(),
        30,
    )
    .expect("register");
    assert_eq!(s.apps.get(&app).map(|a| a.state), Some(AppState::Running));
    assert!(
        s.register_am(attempt, "amhost".into(), 7000, String::new(), 31)
            .is_err(),
        "second register refused"
    );

    // Ask for two 2 GB containers anywhere.
    let req = pb::AllocateRequestProto {
        ask: vec![ask(1, "*", 2048, 2)],
        response_id: Some(0),
        ..Default::default()
    };
    let r1 = s
        .allocate(attempt, amrm_key(&s), req.clone(), 40)
        .expect("allocate");
    assert_eq!(r1.response_id, Some(1));
    assert_eq!(r1.allocated_containers.len(), 2);
    assert_eq!(r1.nm_tokens.len(), 1, "one NMToken for the one node");
    for c in &r1.allocated_containers {
        assert!(
            c.priority.is_some() && c.node_http_address.is_some() && c.container_token.is_some()
        );
    }
    // A repeated call with the old response id replays the same answer.
    assert_eq!(
        s.allocate(attempt, amrm_key(&s), req, 41).expect("replay"),
        r1
    );
    // Out-of-sequence ids are refused.
    let bad = pb::AllocateRequestProto {
        response_id: Some(7),
        ..Default::default()
    };
    assert!(s.allocate(attempt, amrm_key(&s), bad, 42).is_err());

    // One task container finishes; the AM hears about it on the next call.
    let task =
        crate::convert::container_id_from_pb(r1.allocated_containers[0].id.as_ref().expect("id"))
            .expect("cid");
    complete(&mut s, &am_node, task, 0, 50);
    let r2 = s
        .allocate(
            attempt,
            amrm_key(&s),
            pb::AllocateRequestProto {
                response_id: Some(1),
                ..Default::default()
            },
            60,
        )
        .expect("allocate 2");
    assert_eq!(r2.response_id, Some(2));
    assert_eq!(r2.completed_container_statuses.len(), 1);
    assert_eq!(r2.completed_container_statuses[0].exit_status, Some(0));
    assert!(
        r2.nm_tokens.is_empty(),
        "no second NMToken for the same node"
    );

    assert_eq!(
        s.finish_am(
            attempt,
            FinalStatus::Succeeded,
            "done".into(),
            String::new(),
            70
        ),
        Ok(true)
    );
    let a = s.apps.get(&app).expect("app");
    assert_eq!(
        (a.state, a.final_status),
        (AppState::Finished, FinalStatus::Succeeded)
    );
    // The AM container exits: the attempt is over and the node cleans up the app.
    complete(&mut s, &am_node, am_container, 0, 80);
    assert_eq!(
        s.attempts.get(&attempt).map(|a| a.state),
        Some(AttemptState::Finished)
    );
    let work = s.take_node_work(&am_node);
    assert!(work.cleanup_apps.contains(&app));
    assert!(work.acked.contains(&am_container));
    s.scheduler.check_invariants().expect("invariants");
    assert_eq!(
        s.scheduler.cluster().used,
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
    s.am_launched(a1, 20);
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
    assert!(s.outbox.is_empty(), "no third attempt");
}

#[test]
fn lost_node_does_not_count_as_an_attempt_failure() {
    let mut s = state();
    add_node(&mut s, "h1", 0);
    let app = submit(&mut s, 10);
    let (a1, n1, _c1) = take_launch(&mut s);
    s.am_launched(a1, 20);
    // The node goes away (as after liveness expiry).
    add_node(&mut s, "h2", 25);
    s.nodes.unregister(&n1);
    s.sync_node(&n1, 30);
    let (a2, n2, _) = take_launch(&mut s);
    assert_eq!(n2, node("h2"));
    assert_eq!(s.launch.get(&app).map(|l| l.failed_attempts), Some(0));
    assert_eq!(a2.attempt_id, 2);
}

#[test]
fn am_launch_failure_fails_the_attempt() {
    let mut s = state();
    add_node(&mut s, "h1", 0);
    let app = submit(&mut s, 10);
    let (a1, _, _) = take_launch(&mut s);
    s.am_launch_failed(a1, "connection refused".into(), 20);
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
    s.am_launched(a1, 20);
    s.register_am(a1, "h".into(), 1, String::new(), 30)
        .expect("register");
    s.lifecycle_tick(4_000);
    assert_eq!(
        s.attempts.get(&a1).map(|a| a.state),
        Some(AttemptState::Running)
    );
    s.lifecycle_tick(6_000);
    let a = s.attempts.get(&a1).expect("attempt");
    assert_eq!(a.state, AttemptState::Failed);
    assert!(a.diagnostics.contains("timed out"));
    assert_eq!(s.launch.get(&app).map(|l| l.attempts.len()), Some(2));
}

#[test]
fn kill_ends_the_attempt_and_cleans_its_containers() {
    let mut s = state();
    add_node(&mut s, "h1", 0);
    let app = submit(&mut s, 10);
    let (a1, n1, c1) = take_launch(&mut s);
    s.am_launched(a1, 20);
    s.register_am(a1, "h".into(), 1, String::new(), 30)
        .expect("register");
    let r = s
        .allocate(
            a1,
            amrm_key(&s),
            pb::AllocateRequestProto {
                ask: vec![ask(1, "*", 1024, 1)],
                response_id: Some(0),
                ..Default::default()
            },
            40,
        )
        .expect("allocate");
    assert_eq!(r.allocated_containers.len(), 1);
    assert_eq!(s.kill_app(app, "killed by test".into(), 50), Some(true));
    assert_eq!(s.apps.get(&app).map(|a| a.state), Some(AppState::Killed));
    let work = s.take_node_work(&n1);
    assert!(work.cleanup_containers.contains(&c1), "AM container killed");
    assert_eq!(work.cleanup_containers.len(), 2, "and the task container");
    assert!(work.cleanup_apps.contains(&app));
    // The killed attempt's AM is told to shut down.
    let after = s
        .allocate(
            a1,
            amrm_key(&s),
            pb::AllocateRequestProto {
                response_id: Some(1),
                ..Default::default()
            },
            60,
        )
        .expect("allocate after kill");
    assert_eq!(
        after.a_m_command,
        Some(pb::AmCommandProto::AmShutdown as i32)
    );
    s.scheduler.check_invariants().expect("invariants");
}

#[test]
fn rolled_amrm_key_hands_the_am_a_new_token() {
    let mut s = state();
    add_node(&mut s, "h1", 0);
    let _app = submit(&mut s, 10);
    let (a1, _, _) = take_launch(&mut s);
    s.register_am(a1, "h".into(), 1, String::new(), 20)
        .expect("register");
    let old_key = amrm_key(&s);
    let plain = |id| pb::AllocateRequestProto {
        response_id: Some(id),
        ..Default::default()
    };
    assert!(s
        .allocate(a1, old_key, plain(0), 30)
        .expect("allocate")
        .am_rm_token
        .is_none());
    s.key_rolling.amrm_interval_ms = 1000;
    s.key_rolling.amrm_rolled_ms = 0;
    s.roll_keys(2_000);
    assert_ne!(amrm_key(&s), old_key);
    let r = s
        .allocate(a1, old_key, plain(1), 2_010)
        .expect("allocate after roll");
    let token = r.am_rm_token.expect("a new AMRMToken");
    let ident = AmRmTokenIdentifier::decode(&token.identifier).expect("identifier");
    assert_eq!((ident.attempt, ident.key_id), (a1, amrm_key(&s)));
    // The old key is still accepted as the previous one.
    assert!(read(&s.secrets.amrm).key(old_key).is_ok());
}

#[test]
fn kept_containers_survive_the_am_and_go_to_the_next_attempt() {
    let mut s = state();
    add_node(&mut s, "h1", 0);
    let app = submit_keeping(&mut s, 10, true);
    let (a1, n1, c1) = take_launch(&mut s);
    s.am_launched(a1, 20);
    s.register_am(a1, "h".into(), 1, String::new(), 30)
        .expect("register");
    let r = s
        .allocate(
            a1,
            amrm_key(&s),
            pb::AllocateRequestProto {
                ask: vec![ask(1, "*", 1024, 2)],
                response_id: Some(0),
                ..Default::default()
            },
            40,
        )
        .expect("allocate");
    let tasks: Vec<ContainerId> = r
        .allocated_containers
        .iter()
        .map(|c| crate::convert::container_id_from_pb(c.id.as_ref().expect("id")).expect("cid"))
        .collect();
    assert_eq!(tasks.len(), 2);
    // The AM dies; its task containers keep running.
    complete(&mut s, &n1, c1, 1, 50);
    let work = s.take_node_work(&n1);
    assert!(
        work.cleanup_containers.is_empty(),
        "nothing killed: {work:?}"
    );
    assert!(work.cleanup_apps.is_empty());
    let (a2, _, _) = take_launch(&mut s);
    s.am_launched(a2, 60);
    let reg = s
        .register_am(a2, "h".into(), 1, String::new(), 70)
        .expect("register 2");
    assert_eq!(reg.containers_from_previous_attempts.len(), 2);
    assert_eq!(reg.nm_tokens_from_previous_attempts.len(), 1);
    // One kept container finishes: the new AM hears of it; the other it releases.
    complete(&mut s, &n1, tasks[0], 0, 80);
    let r = s
        .allocate(
            a2,
            amrm_key(&s),
            pb::AllocateRequestProto {
                response_id: Some(0),
                release: vec![crate::convert::container_id_to_pb(&tasks[1])],
                ..Default::default()
            },
            90,
        )
        .expect("allocate 2");
    let done: Vec<_> = r
        .completed_container_statuses
        .iter()
        .map(|c| c.exit_status)
        .collect();
    assert!(done.contains(&Some(0)), "{done:?}");
    assert!(s.take_node_work(&n1).cleanup_containers.contains(&tasks[1]));
    s.finish_am(
        a2,
        FinalStatus::Succeeded,
        String::new(),
        String::new(),
        100,
    )
    .expect("finish");
    assert_eq!(
        s.apps.get(&app).map(|a| a.final_status),
        Some(FinalStatus::Succeeded)
    );
    s.scheduler.check_invariants().expect("invariants");
}

#[test]
fn ams_hear_about_nodes_that_change() {
    let mut s = state();
    add_node(&mut s, "h1", 0);
    add_node(&mut s, "h2", 0);
    let _app = submit(&mut s, 10);
    let (a1, _, _) = take_launch(&mut s);
    s.register_am(a1, "h".into(), 1, String::new(), 20)
        .expect("register");
    let req = |id| pb::AllocateRequestProto {
        response_id: Some(id),
        ..Default::default()
    };
    let r = s.allocate(a1, amrm_key(&s), req(0), 30).expect("allocate");
    assert!(
        r.updated_nodes.is_empty(),
        "nothing changed since registration"
    );
    // h2 starts decommissioning gracefully.
    let lists = crate::hosts::HostLists {
        include: Default::default(),
        exclude: crate::hosts::parse_list("h2"),
    };
    s.nodes.refresh(
        lists,
        crate::nodes::Decommission::Graceful { timeout_ms: None },
        40,
    );
    s.sync_all_nodes(40);
    let r = s.allocate(a1, amrm_key(&s), req(1), 50).expect("allocate");
    let states: Vec<_> = r
        .updated_nodes
        .iter()
        .map(|n| (n.node_id.clone().and_then(|i| i.host), n.node_state))
        .collect();
    assert_eq!(
        states,
        vec![(
            Some("h2".into()),
            Some(pb::NodeStateProto::NsDecommissioning as i32)
        )]
    );
    let r = s.allocate(a1, amrm_key(&s), req(2), 60).expect("allocate");
    assert!(r.updated_nodes.is_empty(), "each change is told once");
}

#[test]
fn am_reporting_failure_leaves_the_app_finished_with_failed_status() {
    let mut s = state();
    add_node(&mut s, "h1", 0);
    let app = submit(&mut s, 10);
    let (a1, _, _) = take_launch(&mut s);
    s.register_am(a1, "h".into(), 1, String::new(), 20)
        .expect("register");
    s.finish_am(
        a1,
        FinalStatus::Failed,
        "job failed".into(),
        String::new(),
        30,
    )
    .expect("finish");
    let a = s.apps.get(&app).expect("app");
    assert_eq!(
        (a.state, a.final_status),
        (AppState::Finished, FinalStatus::Failed)
    );
    assert_eq!(a.diagnostics, "job failed");
}

#[test]
fn unknown_queue_fails_the_app_without_an_attempt() {
    let mut s = state();
    add_node(&mut s, "h1", 0);
    let id = s.apps.new_id();
    let sub = Submission {
        id,
        name: "x".into(),
        queue: "nope".into(),
        app_type: "YARN".into(),
        tags: BTreeSet::new(),
        priority: None,
        am_resource: Resource::new(1024, 1),
        max_attempts: 0,
        unmanaged_am: false,
        keep_containers: false,
    };
    // The capacity scheduler's default queues (FIFO ignores queue names).
    s.queues = crate::queue_files::load(
        spindle_scheduler::SchedulerKind::Capacity,
        &spindle_common::conf::Configuration::with_defaults(),
        None,
    )
    .expect("default capacity queues");
    s.submit(sub, Default::default(), "bob", &[], 5)
        .expect("recorded");
    let a = s.apps.get(&id).expect("app");
    assert_eq!(a.state, AppState::Failed);
    assert!(a.diagnostics.contains("unknown queue: nope"));
    assert!(s.outbox.is_empty());
}

#[test]
fn submit_acl_refuses_outright_when_acls_are_enabled() {
    let mut s = state();
    let mut conf = spindle_common::conf::Configuration::with_defaults();
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
    s.queues =
        crate::queue_files::capacity::from_conf(&conf, "capacity-scheduler.xml").expect("queues");
    s.acl_enabled = true;
    let submission = |id| Submission {
        id,
        name: "x".into(),
        queue: "default".into(),
        app_type: "YARN".into(),
        tags: BTreeSet::new(),
        priority: None,
        am_resource: Resource::new(1024, 1),
        max_attempts: 0,
        unmanaged_am: false,
        keep_containers: false,
    };
    let id = s.apps.new_id();
    let refused = s.submit(submission(id), Default::default(), "bob", &[], 5);
    match refused {
        Err(SubmitError::AccessDenied(m)) => assert_eq!(
            m,
            format!("User bob does not have permission to submit {id} to queue default")
        ),
        other => panic!("bob should be refused: {other:?}"),
    }
    assert!(
        s.apps.get(&id).is_none(),
        "a refused submission leaves no record"
    );
    let id = s.apps.new_id();
    s.submit(submission(id), Default::default(), "alice", &[], 6)
        .expect("alice may submit");
    assert_eq!(s.apps.get(&id).map(|a| a.state), Some(AppState::Accepted));
}
