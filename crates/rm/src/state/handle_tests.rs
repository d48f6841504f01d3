//! `RmState::handle` as a whole: every command gets its own reply; node
//! changes reach the scheduler whichever command makes them; time on the
//! two clocks.

use spindle_common::ids::{ApplicationAttemptId, ContainerId, NodeId};
use spindle_common::resource::Resource;

use super::test_support::{state_with, TestRm, TS};
use super::Settings;
use crate::acl::Acl;
use crate::cluster::nodes::{Decommission, Health, Heartbeat, NodeState, Registration};
use crate::hosts::{parse_list, HostLists};
use crate::model::access::Caller;
use crate::model::amrm::AllocateRequest;
use crate::model::apps::{AppState, FinalStatus};
use crate::model::attempts::AttemptState;
use crate::model::keys::KeyRolling;
use crate::model::launch::AmLaunchContext;
use crate::model::refusal::Refusal;
use crate::queue_files::QueueFile;
use crate::state::command::{
    Allocate, AmLaunchFailed, AmLaunched, Command, FailApplicationAttempt, FinishApplicationMaster,
    KillApplication, NewApplication, NodeHeartbeat, NodeRegistration, RefreshAdminAcls,
    RefreshNodes, RefreshQueues, RegisterNode, SignalContainer, Tick, UnregisterNode,
    UpdateApplicationPriority, UpdateNodeResources,
};
use crate::time::Now;

fn state() -> TestRm {
    let settings = Settings {
        am_expiry_ms: 5_000,
        ..Settings::new(TS)
    };
    TestRm::new(QueueFile::fifo(), settings, KeyRolling::daily(0))
}

fn excluding(host: &str) -> HostLists {
    HostLists {
        include: Default::default(),
        exclude: parse_list(host),
    }
}

/// The nodes the scheduler core knows, with whether it may place on them.
fn in_scheduler(s: &TestRm) -> Vec<(String, bool)> {
    s.cluster
        .scheduler()
        .nodes()
        .into_iter()
        .map(|n| (n.id.host.to_string(), n.schedulable))
        .collect()
}

fn attempt_state(s: &TestRm, attempt: ApplicationAttemptId) -> Option<AttemptState> {
    s.attempts.get(&attempt).map(|a| a.state)
}

/// `TestRm::run` unwraps each reply with the command's own `Request`
/// impl, so driving every command through it shows that `handle`
/// answers each with its own variant.
#[test]
fn every_command_is_answered_with_its_own_reply() {
    let mut s = state();
    let node = s.add_node("h1", Resource::new(8192, 8), 0);
    let app = s.submit_to("default", "alice", None, 1);
    let attempt = ApplicationAttemptId::new(app, 1);
    // AmLaunched and RegisterApplicationMaster.
    assert_eq!(s.run_ams(2), [attempt]);
    let key = s.tokens.current_amrm_key_id();
    let allocated = s.run(
        4,
        Allocate {
            attempt,
            amrm_key_id: key,
            request: AllocateRequest::default(),
        },
    );
    assert_eq!(allocated.map(|r| r.response_id), Ok(1));
    let answer = s.run(
        5,
        NodeHeartbeat {
            heartbeat: Heartbeat {
                id: node.clone(),
                response_id: 0,
                health: Health {
                    healthy: true,
                    report: String::new(),
                    last_report_ms: 0,
                },
                num_containers: 1,
                used: Resource::new(1024, 1),
            },
            containers: Vec::new(),
            log_reports: Vec::new(),
            known_container_token_key: None,
            known_nm_token_key: None,
        },
    );
    assert_eq!(answer.reply.response_id, 1);
    assert!(answer.container_token_key.is_some() && answer.nm_token_key.is_some());
    let priority = s.run(
        6,
        UpdateApplicationPriority {
            app,
            priority: 1,
            user: "alice".into(),
            groups: Vec::new(),
        },
    );
    assert_eq!(priority, Ok(0), "FIFO gives every application priority 0");
    s.run(
        7,
        RefreshQueues {
            queues: QueueFile::fifo(),
        },
    )
    .expect("same queues");
    s.run(
        7,
        RefreshNodes {
            hosts: HostLists::default(),
            mode: Decommission::Normal,
        },
    );
    s.run(
        7,
        RefreshAdminAcls {
            acl: Acl::parse("*"),
        },
    );
    s.run(
        7,
        UpdateNodeResources {
            nodes: vec![(node.clone(), Resource::new(8192, 8))],
        },
    )
    .expect("an active node");
    s.run(8, Tick);
    let finished = s.run(
        9,
        FinishApplicationMaster {
            attempt,
            status: FinalStatus::Succeeded,
            diagnostics: String::new(),
            tracking_url: String::new(),
        },
    );
    assert_eq!(finished, Ok(true));
    let other = s.submit_to("default", "alice", None, 10);
    let other_attempt = ApplicationAttemptId::new(other, 1);
    s.run(
        11,
        AmLaunchFailed {
            attempt: other_attempt,
            reason: "test".into(),
        },
    );
    let killed = s.run(
        12,
        KillApplication {
            app: other,
            user: "alice".into(),
            groups: Vec::new(),
            reason: None,
            from: None,
        },
    );
    assert_eq!(killed, Ok(true));
    assert!(s.run(13, UnregisterNode { node }));
    let tiny = Registration {
        id: NodeId::new("tiny", 1),
        http_port: 1,
        capability: Resource::new(1, 1),
        nm_version: String::new(),
        health: Health::default(),
        rack: None,
    };
    let refused = s.run(
        14,
        RegisterNode {
            registration: tiny,
            containers: Vec::new(),
            running_apps: Vec::new(),
            log_reports: Vec::new(),
        },
    );
    assert!(
        matches!(refused, NodeRegistration::Rejected(_)),
        "{refused:?}"
    );
}

/// What a restart needs kept is what the application's history is made of.
#[test]
fn durable_commands_are_the_applications_history() {
    let attempt = ApplicationAttemptId::new(spindle_common::ids::ApplicationId::new(TS, 1), 1);
    let durable: Vec<Command> = vec![
        NewApplication.into(),
        KillApplication {
            app: attempt.app,
            user: "u".into(),
            groups: Vec::new(),
            reason: None,
            from: None,
        }
        .into(),
        FailApplicationAttempt {
            attempt,
            user: "u".into(),
            groups: Vec::new(),
        }
        .into(),
        AmLaunched { attempt }.into(),
        FinishApplicationMaster {
            attempt,
            status: FinalStatus::Succeeded,
            diagnostics: String::new(),
            tracking_url: String::new(),
        }
        .into(),
    ];
    for c in durable {
        assert!(c.is_durable(), "{}", c.name());
    }
    let passing: Vec<Command> = vec![
        Tick.into(),
        UnregisterNode {
            node: NodeId::new("h", 1),
        }
        .into(),
        Allocate {
            attempt,
            amrm_key_id: 1,
            request: AllocateRequest::default(),
        }
        .into(),
        RefreshAdminAcls {
            acl: Acl::parse("*"),
        }
        .into(),
        SignalContainer {
            container: ContainerId::new(attempt, 1),
            signal: crate::cluster::nodes::ContainerSignal::GracefulShutdown,
            user: "u".into(),
            groups: Vec::new(),
        }
        .into(),
    ];
    for c in passing {
        assert!(!c.is_durable(), "{}", c.name());
    }
}

/// `refreshNodes` (a normal decommission) takes excluded nodes out of the
/// scheduler in the same command: nothing is placed on them afterwards.
#[test]
fn refresh_nodes_takes_excluded_nodes_out_of_the_scheduler() {
    let mut s = state();
    s.add_node("h1", Resource::new(8192, 8), 0);
    s.add_node("h2", Resource::new(8192, 8), 0);
    s.run(
        5,
        RefreshNodes {
            hosts: excluding("h1"),
            mode: Decommission::Normal,
        },
    );
    assert_eq!(in_scheduler(&s), [("h2".to_string(), true)]);
    s.submit_to("default", "alice", None, 10);
    let effects = s.take_effects();
    let nodes: Vec<_> = effects
        .iter()
        .map(|e| {
            let crate::model::launch::Effect::LaunchAm { node, .. } = e;
            node.host.clone()
        })
        .collect();
    assert_eq!(nodes, ["h2"]);
}

/// A graceful decommission whose timeout passes on the tick takes the node
/// out of the scheduler: its AM container completes (ABORTED, which does
/// not count against the application) and the next attempt waits for a node.
#[test]
fn a_graceful_decommission_timing_out_on_the_tick_leaves_the_scheduler() {
    let mut s = state();
    s.add_node("h1", Resource::new(8192, 8), 0);
    let app = s.submit_to("default", "alice", None, 10);
    let attempts = s.run_ams(20);
    assert_eq!(attempts.len(), 1);
    s.run(
        30,
        RefreshNodes {
            hosts: excluding("h1"),
            mode: Decommission::Graceful {
                timeout_ms: Some(100),
            },
        },
    );
    assert_eq!(in_scheduler(&s), [("h1".to_string(), false)]);
    s.tick(100);
    assert_eq!(
        s.cluster
            .nodes()
            .get(&NodeId::new("h1", 4040))
            .map(|n| n.state),
        Some(NodeState::Decommissioning),
        "before its deadline"
    );
    s.tick(130);
    assert_eq!(
        s.cluster
            .nodes()
            .get(&NodeId::new("h1", 4040))
            .map(|n| n.state),
        Some(NodeState::Decommissioned)
    );
    assert!(in_scheduler(&s).is_empty(), "{:?}", in_scheduler(&s));
    assert_eq!(attempt_state(&s, attempts[0]), Some(AttemptState::Failed));
    assert_eq!(s.history.get(&app).map(|h| h.failed), Some(0));
    assert_eq!(s.app_state(&app), Some(AppState::Accepted));
    let second = ApplicationAttemptId::new(app, 2);
    assert_eq!(attempt_state(&s, second), Some(AttemptState::Scheduled));
    s.cluster
        .scheduler()
        .check_invariants()
        .expect("invariants");
}

/// The wall clock stepping back (an NTP correction) changes reported times
/// only: the scheduler core, which refuses time going backwards, runs on
/// the monotonic clock, and so do node and AM liveness.
#[test]
fn a_wall_clock_stepping_back_stops_neither_scheduling_nor_liveness() {
    let mut s = state();
    let at = |mono_ms: u64, wall_ms: u64| Now { mono_ms, wall_ms };
    let hour = 3_600_000;
    let start = 10 * hour;
    let node = s.add_node("h1", Resource::new(8192, 8), 0);
    s.heartbeat_at(&node, Vec::new(), at(50, start + 50));

    // The wall clock goes back an hour; the monotonic one goes on.
    let id = s.run_at(at(100, start - hour + 100), NewApplication);
    let submit = crate::state::command::SubmitApplication {
        submission: super::test_support::submission(id, "default", None),
        launch: AmLaunchContext::default(),
        user: "alice".into(),
        groups: Vec::new(),
    };
    s.run_at(at(100, start - hour + 100), submit)
        .expect("submit");
    let attempt = ApplicationAttemptId::new(id, 1);
    assert_eq!(
        attempt_state(&s, attempt),
        Some(AttemptState::Allocated),
        "the AM container is granted"
    );
    assert_eq!(s.launched(), [attempt]);
    let report = s.app_report(&id, &Caller::user("alice")).expect("report");
    assert_eq!(
        report.app.submit_ms,
        start - hour + 100,
        "wall time reported"
    );
    let am_container = s
        .attempts
        .get(&attempt)
        .and_then(|a| a.am_container)
        .expect("AM container");
    assert_eq!(
        s.container_report(&am_container, &Caller::user("alice"))
            .map(|c| c.created_ms),
        Ok(start - hour + 100)
    );

    // The AM registers and asks for a container; the node's heartbeat places it.
    s.run_at(at(200, start - hour + 200), AmLaunched { attempt });
    let register = crate::state::command::RegisterApplicationMaster {
        attempt,
        host: "h".into(),
        rpc_port: 1,
        tracking_url: String::new(),
    };
    s.run_at(at(200, start - hour + 200), register)
        .expect("register");
    let key = s.tokens.current_amrm_key_id();
    let ask = AllocateRequest {
        asks: vec![spindle_scheduler::ResourceAsk::new(
            1,
            "*",
            Resource::new(1024, 1),
            1,
        )],
        ..Default::default()
    };
    let first = s.run_at(
        at(300, start - hour + 300),
        Allocate {
            attempt,
            amrm_key_id: key,
            request: ask,
        },
    );
    assert_eq!(first.map(|r| r.allocated.len()), Ok(1));

    // Still alive on the monotonic clock, although the wall clock says
    // nothing has happened for an hour.
    s.heartbeat_at(&node, Vec::new(), at(4_000, start - hour + 4_000));
    let next = AllocateRequest {
        response_id: 1,
        ..Default::default()
    };
    s.run_at(
        at(4_500, start - hour + 4_500),
        Allocate {
            attempt,
            amrm_key_id: key,
            request: next,
        },
    )
    .expect("allocate");
    s.run_at(at(9_000, start - hour + 9_000), Tick);
    assert_eq!(
        s.cluster.nodes().get(&node).map(|n| n.state),
        Some(NodeState::Running)
    );
    assert_eq!(attempt_state(&s, attempt), Some(AttemptState::Running));

    // Silence is measured on the monotonic clock too: the AM (5 s), then
    // the node (10 s) expire.
    s.heartbeat_at(&node, Vec::new(), at(9_500, start - hour + 9_500));
    s.run_at(at(10_000, start - hour + 10_000), Tick);
    assert_eq!(attempt_state(&s, attempt), Some(AttemptState::Failed));
    assert!(
        s.attempts
            .get(&attempt)
            .is_some_and(|a| a.diagnostics.contains("timed out")),
        "{:?}",
        s.attempts.get(&attempt).map(|a| &a.diagnostics)
    );
    assert_eq!(
        s.cluster.nodes().get(&node).map(|n| n.state),
        Some(NodeState::Running)
    );
    s.run_at(at(20_000, start - hour + 20_000), Tick);
    assert_eq!(
        s.cluster.nodes().get(&node).map(|n| n.state),
        Some(NodeState::Lost)
    );
    s.cluster
        .scheduler()
        .check_invariants()
        .expect("invariants");
}

/// A refusal leaves nothing behind: an unknown application's kill.
#[test]
fn refusals_change_nothing() {
    let mut s = state_with(QueueFile::fifo());
    let stranger = spindle_common::ids::ApplicationId::new(TS, 42);
    assert_eq!(
        s.run(
            1,
            KillApplication {
                app: stranger,
                user: "alice".into(),
                groups: Vec::new(),
                reason: None,
                from: None,
            }
        ),
        Err(Refusal::KillOfAbsentApplication(stranger))
    );
    assert!(s.effects.is_empty());
}

/// As Hadoop's RM: a node whose resources an admin updated hears of them in
/// its next heartbeat answer, once.
#[test]
fn updated_node_resources_reach_the_node_in_one_heartbeat() {
    let mut s = state();
    let node = s.add_node("h1", Resource::new(8192, 8), 0);
    assert_eq!(s.heartbeat(&node, Vec::new(), 1).work.new_capability, None);
    s.run(
        2,
        UpdateNodeResources {
            nodes: vec![(node.clone(), Resource::new(2048, 2))],
        },
    )
    .expect("an active node");
    assert_eq!(
        s.heartbeat(&node, Vec::new(), 3).work.new_capability,
        Some(Resource::new(2048, 2))
    );
    assert_eq!(s.heartbeat(&node, Vec::new(), 4).work.new_capability, None);
}
