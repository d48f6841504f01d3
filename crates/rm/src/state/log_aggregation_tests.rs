//! Log aggregation status through the state's commands: the nodes an
//! application ran on, NodeManagers' reports in heartbeats and at
//! registration, the time-out on ticks, and what application reports show.

use spindle_common::ids::{ApplicationAttemptId, ApplicationId, ContainerId, NodeId};
use spindle_common::resource::Resource;
use spindle_scheduler::ResourceAsk;

use super::test_support::{capacity_queues, healthy, submission, TestRm, TS};
use super::Settings;
use crate::acl::Acl;
use crate::cluster::nodes::{ContainerStatus, Registration};
use crate::log_aggregation::LogAggregationStatus::{
    self, Disabled, Failed, NotStart, Running, RunningWithFailure, Succeeded, TimeOut,
};
use crate::log_aggregation::{AppLogReport, LogAggregationConf};
use crate::model::access::Caller;
use crate::model::amrm::AllocateRequest;
use crate::model::apps::FinalStatus;
use crate::model::keys::KeyRolling;
use crate::model::launch::Effect;
use crate::queue_files::QueueFile;
use crate::state::command::{
    Allocate, AmLaunched, FinishApplicationMaster, KillApplication, NewApplication,
    RefreshAdminAcls, RegisterApplicationMaster, RegisterNode, SubmitApplication,
};
use crate::time::Now;

const TIMEOUT_MS: u64 = 10_000;

fn state(enabled: bool) -> TestRm {
    let settings = Settings {
        log_aggregation: LogAggregationConf {
            enabled,
            status_timeout_ms: TIMEOUT_MS,
            ..LogAggregationConf::default()
        },
        ..Settings::new(TS)
    };
    TestRm::new(QueueFile::fifo(), settings, KeyRolling::daily(0))
}

fn submit(s: &mut TestRm, ms: u64) -> ApplicationId {
    let id = s.run(ms, NewApplication);
    let submit = SubmitApplication {
        submission: submission(id, "default", None),
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

/// The status the owner's application report shows.
fn shown(s: &TestRm, app: ApplicationId) -> Option<LogAggregationStatus> {
    s.app_report(&app, &Caller::new("alice", Vec::new()))
        .expect("report")
        .log_aggregation
}

fn report(app: ApplicationId, status: LogAggregationStatus, diag: &str) -> AppLogReport {
    AppLogReport {
        app,
        status,
        diagnostics: diag.into(),
    }
}

/// `node` heartbeats at `ms` with `reports`.
fn reports(s: &mut TestRm, node: &NodeId, reports: Vec<AppLogReport>, ms: u64) {
    s.heartbeat_reporting(node, Vec::new(), reports, Now::at(ms));
}

/// An application whose AM ran on h1 (1 GB, only room for the AM) and
/// one task container on h2; its AM unregistered and its AM container
/// exited at 80 ms, so it has ended. Answers the application, h1 and h2.
fn ended_on_two_nodes(s: &mut TestRm) -> (ApplicationId, NodeId, NodeId) {
    let h1 = s.add_node("h1", Resource::new(1024, 1), 0);
    let app = submit(s, 10);
    let effects = s.take_effects();
    let Some(Effect::LaunchAm {
        attempt,
        node: am_node,
        ..
    }) = effects.into_iter().next()
    else {
        panic!("the AM container is launched");
    };
    assert_eq!(am_node, h1);
    let h2 = s.add_node("h2", Resource::new(8192, 8), 15);
    s.run(20, AmLaunched { attempt });
    s.run(
        30,
        RegisterApplicationMaster {
            attempt,
            host: "amhost".into(),
            rpc_port: 7000,
            tracking_url: String::new(),
        },
    )
    .expect("register");
    let before_the_end = if s.log_aggregation.conf().enabled {
        NotStart
    } else {
        Disabled
    };
    assert_eq!(shown(s, app), Some(before_the_end), "running");
    let key = s.tokens.current_amrm_key_id();
    let reply = s
        .run(
            40,
            Allocate {
                attempt,
                amrm_key_id: key,
                request: AllocateRequest {
                    asks: vec![ResourceAsk::new(1, "*", Resource::new(2048, 1), 1)],
                    response_id: 0,
                    ..Default::default()
                },
            },
        )
        .expect("allocate");
    assert_eq!(reply.allocated.len(), 1);
    assert_eq!(reply.allocated[0].node, h2, "h1 is full with the AM");
    s.run(
        70,
        FinishApplicationMaster {
            attempt,
            status: FinalStatus::Succeeded,
            diagnostics: String::new(),
            tracking_url: String::new(),
        },
    )
    .expect("finish");
    assert_eq!(
        shown(s, app),
        Some(before_the_end),
        "FINISHING: not ended until the AM container exits"
    );
    am_exits(s, &h1, attempt, 80);
    (app, h1, h2)
}

fn am_exits(s: &mut TestRm, node: &NodeId, attempt: ApplicationAttemptId, ms: u64) {
    let status = ContainerStatus {
        container: ContainerId::new(attempt, 1),
        running: false,
        complete: true,
        exit_status: 0,
        diagnostics: String::new(),
        resource: Resource::new(1024, 1),
    };
    s.heartbeat(node, vec![status], ms);
}

#[test]
fn the_status_follows_the_nodes_until_all_succeeded() {
    let mut s = state(true);
    let (app, h1, h2) = ended_on_two_nodes(&mut s);
    assert_eq!(shown(&s, app), Some(NotStart));
    reports(&mut s, &h1, vec![report(app, Running, "")], 90);
    assert_eq!(shown(&s, app), Some(Running));
    reports(&mut s, &h1, vec![report(app, Succeeded, "")], 100);
    assert_eq!(
        shown(&s, app),
        Some(Running),
        "h2 ran a container and has not reported"
    );
    reports(&mut s, &h2, vec![report(app, Succeeded, "")], 110);
    assert_eq!(shown(&s, app), Some(Succeeded));
    // Final: nothing changes it, not even the time-out.
    reports(&mut s, &h2, vec![report(app, Failed, "late")], 120);
    s.tick(80 + TIMEOUT_MS * 2);
    assert_eq!(shown(&s, app), Some(Succeeded));
}

#[test]
fn one_failed_node_fails_the_application_once_every_node_is_final() {
    let mut s = state(true);
    let (app, h1, h2) = ended_on_two_nodes(&mut s);
    reports(
        &mut s,
        &h2,
        vec![report(app, RunningWithFailure, "could not upload stderr")],
        90,
    );
    assert_eq!(shown(&s, app), Some(RunningWithFailure));
    reports(&mut s, &h2, vec![report(app, Failed, "")], 95);
    assert_eq!(shown(&s, app), Some(Running), "h1 is still to report");
    reports(&mut s, &h1, vec![report(app, Succeeded, "")], 100);
    assert_eq!(shown(&s, app), Some(Failed));
    let kept = s
        .log_aggregation_reports(&app, &Caller::new("alice", Vec::new()))
        .expect("reports");
    assert_eq!(kept.len(), 1, "only the failed node's report is kept");
    assert_eq!((kept[0].0.clone(), kept[0].1.status), (h2, Failed));
}

#[test]
fn nodes_silent_past_the_timeout_time_the_application_out() {
    let mut s = state(true);
    let (app, h1, _h2) = ended_on_two_nodes(&mut s);
    reports(&mut s, &h1, vec![report(app, Succeeded, "")], 90);
    s.tick(80 + TIMEOUT_MS);
    assert_eq!(
        shown(&s, app),
        Some(Running),
        "at the deadline, not past it"
    );
    s.tick(81 + TIMEOUT_MS);
    assert_eq!(shown(&s, app), Some(TimeOut));
    let statuses: Vec<LogAggregationStatus> = s
        .log_aggregation_reports(&app, &Caller::new("alice", Vec::new()))
        .expect("reports")
        .into_iter()
        .map(|(_, r)| r.status)
        .collect();
    assert_eq!(statuses, vec![Succeeded, TimeOut]);
}

#[test]
fn disabled_aggregation_shows_disabled() {
    let mut s = state(false);
    let (app, h1, _) = ended_on_two_nodes(&mut s);
    reports(&mut s, &h1, vec![report(app, Succeeded, "")], 90);
    assert_eq!(shown(&s, app), Some(Disabled));
    assert!(s.log_aggregation.is_empty(), "nothing kept when disabled");
}

#[test]
fn no_status_without_an_attempt_or_for_those_who_may_not_view() {
    let queues = capacity_queues(&[("root.acl_administer_queue", " ")]);
    let mut s = TestRm::new(
        queues,
        Settings {
            acl_enabled: true,
            log_aggregation: LogAggregationConf {
                enabled: true,
                ..LogAggregationConf::default()
            },
            ..Settings::new(TS)
        },
        KeyRolling::daily(0),
    );
    s.run(
        0,
        RefreshAdminAcls {
            acl: Acl::parse("root"),
        },
    );
    s.add_node("h1", Resource::new(8192, 8), 0);
    let app = submit(&mut s, 10);
    assert_eq!(shown(&s, app), Some(NotStart));
    let other = s
        .app_report(&app, &Caller::new("mallory", Vec::new()))
        .expect("report");
    assert!(!other.viewable);
    assert_eq!(other.log_aggregation, None);

    // Rejected at submission (unknown queue): never had an attempt.
    let id = s.run(20, NewApplication);
    s.run(
        20,
        SubmitApplication {
            submission: submission(id, "root.nowhere", None),
            launch: Default::default(),
            user: "alice".into(),
            groups: Vec::new(),
        },
    )
    .expect("submit");
    assert_eq!(shown(&s, id), None);
}

#[test]
fn a_killed_application_ends_and_its_nodes_report() {
    let mut s = state(true);
    let h1 = s.add_node("h1", Resource::new(8192, 8), 0);
    let app = submit(&mut s, 10);
    s.take_effects();
    s.run(
        20,
        KillApplication {
            app,
            user: "alice".into(),
            groups: Vec::new(),
            reason: None,
            from: None,
        },
    )
    .expect("kill");
    assert_eq!(shown(&s, app), Some(NotStart));
    reports(&mut s, &h1, vec![report(app, Succeeded, "")], 30);
    assert_eq!(shown(&s, app), Some(Succeeded));
}

#[test]
fn reports_about_unknown_applications_are_dropped() {
    let mut s = state(true);
    let h1 = s.add_node("h1", Resource::new(8192, 8), 0);
    let unknown = ApplicationId::new(TS - 1, 3);
    reports(&mut s, &h1, vec![report(unknown, Succeeded, "")], 10);
    assert!(s.log_aggregation.is_empty());
}

#[test]
fn a_registering_node_puts_its_running_applications_on_it_and_hands_in_its_reports() {
    let mut s = state(true);
    s.add_node("h1", Resource::new(8192, 8), 0);
    let app = submit(&mut s, 10);
    let registration = |host: &str| Registration {
        id: NodeId::new(host, 4040),
        http_port: 8042,
        capability: Resource::new(8192, 8),
        nm_version: "test".into(),
        rack: None,
        health: healthy(),
    };
    // h2 says it runs the application: it is awaited once the application ends.
    s.run(
        20,
        RegisterNode {
            registration: registration("h2"),
            containers: Vec::new(),
            running_apps: vec![app],
            log_reports: Vec::new(),
        },
    );
    s.run(
        30,
        KillApplication {
            app,
            user: "alice".into(),
            groups: Vec::new(),
            reason: None,
            from: None,
        },
    )
    .expect("kill");
    let h1 = NodeId::new("h1", 4040);
    reports(&mut s, &h1, vec![report(app, Succeeded, "")], 40);
    assert_eq!(shown(&s, app), Some(Running), "h2 has not reported");
    // h2 restarts and hands in the report it kept.
    s.run(
        50,
        RegisterNode {
            registration: registration("h2"),
            containers: Vec::new(),
            running_apps: Vec::new(),
            log_reports: vec![report(app, Succeeded, "")],
        },
    );
    assert_eq!(shown(&s, app), Some(Succeeded));
}

#[test]
fn reports_are_not_stored_a_restart_starts_over_from_not_start() {
    let mut before = state(true);
    before.enable_store(10);
    let h1 = before.add_node("h1", Resource::new(8192, 8), 0);
    let app = submit(&mut before, 10);
    before
        .run(
            20,
            KillApplication {
                app,
                user: "alice".into(),
                groups: Vec::new(),
                reason: None,
                from: None,
            },
        )
        .expect("kill");
    reports(&mut before, &h1, vec![report(app, Succeeded, "")], 30);
    assert_eq!(shown(&before, app), Some(Succeeded));
    let stored: Vec<_> = before
        .take_store_ops()
        .into_iter()
        .filter_map(|op| match op {
            crate::store::StoreOp::PutApp(a) => Some(*a),
            _ => None,
        })
        .collect();

    let mut after = state(true);
    after.enable_store(10);
    after.recover(stored, Now::at(1_000));
    assert_eq!(
        shown(&after, app),
        Some(NotStart),
        "as Hadoop after a restart"
    );
    // The node reports again (a NodeManager re-sends what it kept when it
    // registers): the status follows.
    after.run(
        1_100,
        RegisterNode {
            registration: Registration {
                id: h1.clone(),
                http_port: 8042,
                capability: Resource::new(8192, 8),
                nm_version: "test".into(),
                rack: None,
                health: healthy(),
            },
            containers: Vec::new(),
            running_apps: Vec::new(),
            log_reports: vec![report(app, Succeeded, "")],
        },
    );
    assert_eq!(shown(&after, app), Some(Succeeded));
}

#[test]
fn reports_go_with_their_applications() {
    let mut s = state(true);
    let h1 = s.add_node("h1", Resource::new(8192, 8), 0);
    let mut apps = Vec::new();
    // The application table keeps 100 ended applications.
    for i in 0..110u64 {
        let app = submit(&mut s, i * 10);
        s.run(
            i * 10 + 1,
            KillApplication {
                app,
                user: "alice".into(),
                groups: Vec::new(),
                reason: None,
                from: None,
            },
        )
        .expect("kill");
        reports(&mut s, &h1, vec![report(app, Running, "")], i * 10 + 2);
        apps.push(app);
    }
    assert_eq!(s.log_aggregation.len(), 100);
    assert!(s.apps.get(&apps[0]).is_none(), "evicted");
    assert_eq!(s.log_aggregation_status(&apps[0]), NotStart, "forgotten");
    assert_eq!(shown(&s, apps[109]), Some(Running));
}
