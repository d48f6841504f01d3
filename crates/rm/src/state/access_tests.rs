//! Access control through the state's commands and queries: every client
//! operation on an application goes through the one decider
//! (`crate::model::access`), with Hadoop's refusals and its hidden report fields.

use hadoop_protos::yarn as pb;
use spindle_common::ids::{ApplicationAttemptId, ApplicationId, ContainerId};
use spindle_common::resource::Resource;

use super::test_support::{capacity_queues, submission, TestRm, TS};
use super::Settings;
use crate::acl::Acl;
use crate::cluster::nodes::ContainerSignal;
use crate::model::access::Caller;
use crate::model::apps::{AppFilter, AppScope, AppState};
use crate::model::convert::launch_context_from_pb;
use crate::model::keys::KeyRolling;
use crate::model::launch::AppAccess;
use crate::model::refusal::Refusal;
use crate::state::command::{
    FailApplicationAttempt, KillApplication, NewApplication, RefreshAdminAcls, SignalContainer,
    SubmitApplication, UpdateApplicationPriority,
};

/// ACLs on, `alice` the administrator, root closed, leaf `a` open to every
/// submitter and administered by `dave`, leaf `b` administered by nobody.
fn locked(acl_enabled: bool) -> TestRm {
    let queues = capacity_queues(&[
        ("root.queues", "a,b"),
        ("root.a.capacity", "50"),
        ("root.b.capacity", "50"),
        ("root.a.maximum-am-resource-percent", "1.0"),
        ("root.acl_submit_applications", " "),
        ("root.acl_administer_queue", " "),
        ("root.a.acl_submit_applications", "*"),
        ("root.b.acl_submit_applications", "*"),
        ("root.a.acl_administer_queue", "dave"),
    ]);
    let settings = Settings {
        acl_enabled,
        max_application_priority: 10,
        ..Settings::new(TS)
    };
    let mut s = TestRm::new(queues, settings, KeyRolling::daily(0));
    s.run(
        0,
        RefreshAdminAcls {
            acl: Acl::parse("alice"),
        },
    );
    s
}

/// bob's application in `queue` with the given application ACLs.
fn submit(s: &mut TestRm, queue: &str, acls: &[(AppAccess, &str)], ms: u64) -> ApplicationId {
    let id = s.run(ms, NewApplication);
    let clc = pb::ContainerLaunchContextProto {
        command: vec!["sleep 100".into()],
        application_ac_ls: acls
            .iter()
            .map(|(access, acl)| pb::ApplicationAclMapProto {
                access_type: Some(match access {
                    AppAccess::View => pb::ApplicationAccessTypeProto::AppaccessViewApp,
                    AppAccess::Modify => pb::ApplicationAccessTypeProto::AppaccessModifyApp,
                } as i32),
                acl: Some((*acl).into()),
            })
            .collect(),
        ..Default::default()
    };
    let submit = SubmitApplication {
        submission: submission(id, queue, None),
        launch: launch_context_from_pb(clc),
        user: "bob".into(),
        groups: Vec::new(),
    };
    if let Err(e) = s.run(ms, submit) {
        panic!("submit: {e:?}");
    }
    id
}

fn kill(s: &mut TestRm, app: ApplicationId, user: &str, ms: u64) -> Result<bool, Refusal> {
    s.run(
        ms,
        KillApplication {
            app,
            user: user.into(),
            groups: Vec::new(),
            reason: None,
            from: None,
        },
    )
}

#[test]
fn kill_needs_modify_app_and_a_refused_kill_changes_nothing() {
    let mut s = locked(true);
    let in_a = submit(&mut s, "a", &[(AppAccess::Modify, "carol")], 1);
    assert_eq!(
        kill(&mut s, in_a, "mallory", 2),
        Err(Refusal::AppAccessDenied {
            user: "mallory".into(),
            access: AppAccess::Modify,
            app: in_a
        })
    );
    assert_eq!(s.app_state(&in_a), Some(AppState::Accepted));
    // The VIEW_APP ACL does not let anyone modify.
    let viewed = submit(&mut s, "b", &[(AppAccess::View, "victor")], 3);
    assert!(kill(&mut s, viewed, "victor", 4).is_err());
    assert_eq!(s.app_state(&viewed), Some(AppState::Accepted));
    // An unknown application is absent before anything else.
    let stranger = ApplicationId::new(TS, 99);
    assert_eq!(
        kill(&mut s, stranger, "mallory", 5),
        Err(Refusal::KillOfAbsentApplication(stranger))
    );

    // The MODIFY_APP ACL, the owner, the administrator, the queue's administrator.
    assert_eq!(kill(&mut s, in_a, "carol", 6), Ok(true));
    assert_eq!(s.app_state(&in_a), Some(AppState::Killed));
    // (Each command later than the one before: the scheduler core refuses
    // time going backwards.)
    for (ms, (killer, queue)) in [(7, ("bob", "b")), (9, ("alice", "b")), (11, ("dave", "a"))] {
        let id = submit(&mut s, queue, &[], ms);
        assert_eq!(kill(&mut s, id, killer, ms + 1), Ok(true), "{killer}");
        assert_eq!(s.app_state(&id), Some(AppState::Killed), "{killer}");
    }
    // dave administers a, not b.
    let in_b = submit(&mut s, "b", &[], 13);
    assert!(kill(&mut s, in_b, "dave", 14).is_err());
}

#[test]
fn priority_changes_follow_the_same_rules_as_kill() {
    let mut s = locked(true);
    let id = submit(&mut s, "a", &[(AppAccess::Modify, "carol")], 1);
    let update = |s: &mut TestRm, user: &str| {
        s.run(
            2,
            UpdateApplicationPriority {
                app: id,
                priority: 5,
                user: user.into(),
                groups: Vec::new(),
            },
        )
    };
    assert!(matches!(
        update(&mut s, "mallory"),
        Err(Refusal::AppAccessDenied { .. })
    ));
    for user in ["carol", "dave", "alice", "bob"] {
        assert_eq!(update(&mut s, user), Ok(5), "{user}");
    }
}

/// `signalToContainer`: Hadoop's checks in its order (the application, MODIFY_APP, the
/// container), and an accepted signal reaches the container's node on its next heartbeat,
/// once.
#[test]
fn a_container_signal_needs_modify_app_and_goes_to_the_containers_node_once() {
    let mut s = locked(true);
    let node = s.add_node("h1", Resource::new(8192, 8), 0);
    let id = submit(&mut s, "a", &[(AppAccess::Modify, "carol")], 1);
    assert_eq!(s.run_ams(2).len(), 1);
    let am = ContainerId::new(ApplicationAttemptId::new(id, 1), 1);
    let signal = |s: &mut TestRm, container: ContainerId, user: &str| {
        s.run(
            3,
            SignalContainer {
                container,
                signal: ContainerSignal::OutputThreadDump,
                user: user.into(),
                groups: Vec::new(),
            },
        )
    };
    // Whatever the run of AMs left for the node is taken first.
    let _ = s.heartbeat(&node, Vec::new(), 3);

    assert_eq!(
        signal(&mut s, am, "mallory"),
        Err(Refusal::AppAccessDenied {
            user: "mallory".into(),
            access: AppAccess::Modify,
            app: id
        })
    );
    let stranger = ContainerId::new(ApplicationAttemptId::new(ApplicationId::new(TS, 99), 1), 1);
    assert_eq!(
        signal(&mut s, stranger, "mallory"),
        Err(Refusal::SignalOfAbsentContainer(stranger))
    );
    let unallocated = ContainerId::new(ApplicationAttemptId::new(id, 1), 77);
    assert_eq!(
        signal(&mut s, unallocated, "carol"),
        Err(Refusal::SignalOfAbsentContainer(unallocated))
    );
    assert!(s.heartbeat(&node, Vec::new(), 4).work.signals.is_empty());

    assert_eq!(signal(&mut s, am, "carol"), Ok(()));
    assert_eq!(
        s.heartbeat(&node, Vec::new(), 5).work.signals,
        vec![(am, ContainerSignal::OutputThreadDump)]
    );
    assert!(s.heartbeat(&node, Vec::new(), 6).work.signals.is_empty());
}

/// `failApplicationAttempt`: Hadoop's checks in its order (the application, MODIFY_APP,
/// the attempt); a failed attempt counts, so the application retries, then fails when
/// its attempts run out; failing an attempt of an ended application changes nothing.
#[test]
fn failing_an_attempt_needs_modify_app_and_counts_towards_the_maximum() {
    let mut s = locked(true);
    s.add_node("h1", Resource::new(8192, 8), 0);
    let id = submit(&mut s, "a", &[(AppAccess::Modify, "carol")], 1);
    assert_eq!(s.run_ams(2).len(), 1);
    let fail = |s: &mut TestRm, attempt: ApplicationAttemptId, user: &str, ms: u64| {
        s.run(
            ms,
            FailApplicationAttempt {
                attempt,
                user: user.into(),
                groups: Vec::new(),
            },
        )
    };
    let first = ApplicationAttemptId::new(id, 1);
    assert_eq!(
        fail(&mut s, first, "mallory", 3),
        Err(Refusal::AppAccessDenied {
            user: "mallory".into(),
            access: AppAccess::Modify,
            app: id
        })
    );
    let stranger = ApplicationAttemptId::new(ApplicationId::new(TS, 99), 1);
    assert_eq!(
        fail(&mut s, stranger, "carol", 3),
        Err(Refusal::ApplicationNotFound(stranger.app))
    );
    let later = ApplicationAttemptId::new(id, 5);
    assert_eq!(
        fail(&mut s, later, "carol", 3),
        Err(Refusal::AttemptNotFound(later))
    );
    assert_eq!(s.state.current_attempt_id(&id), Some(first));

    assert_eq!(fail(&mut s, first, "carol", 4), Ok(()));
    let second = ApplicationAttemptId::new(id, 2);
    assert_eq!(s.state.current_attempt_id(&id), Some(second));
    assert_eq!(s.app_state(&id), Some(AppState::Accepted));
    assert_eq!(s.run_ams(5).len(), 1);
    assert_eq!(fail(&mut s, second, "bob", 6), Ok(()));
    assert_eq!(s.app_state(&id), Some(AppState::Failed));
    let diagnostics = s.state.apps.get(&id).map(|a| a.diagnostics.clone());
    assert!(
        diagnostics
            .as_deref()
            .is_some_and(|d| d.contains("failed 2 times due to Attempt failed by user.")),
        "{diagnostics:?}"
    );
    // Over: nothing more happens.
    assert_eq!(fail(&mut s, second, "bob", 7), Ok(()));
    assert_eq!(s.app_state(&id), Some(AppState::Failed));
}

#[test]
fn without_yarn_acl_enable_everything_is_allowed() {
    let mut s = locked(false);
    let id = submit(&mut s, "b", &[], 1);
    let report = s.app_report(&id, &Caller::user("mallory")).expect("report");
    assert!(report.viewable);
    assert_eq!(kill(&mut s, id, "mallory", 2), Ok(true));
}

#[test]
fn a_report_without_view_app_hides_what_hadoop_hides() {
    let mut s = locked(true);
    s.add_node("h1", Resource::new(8192, 8), 0);
    let id = submit(&mut s, "b", &[(AppAccess::View, "victor")], 1);
    assert_eq!(s.run_ams(2).len(), 1);
    if let Some(app) = s.state.apps.get_mut(&id) {
        app.diagnostics = "secret".into();
    }
    let full = s.app_report(&id, &Caller::user("victor")).expect("report");
    assert!(full.viewable);
    assert_eq!(full.app.am_host, "amhost");
    assert_eq!(full.app.diagnostics, "secret");
    assert_eq!(full.current_attempt, Some(ApplicationAttemptId::new(id, 1)));
    assert_eq!(full.used_containers, 1);

    let hidden = s.app_report(&id, &Caller::user("mallory")).expect("report");
    assert!(!hidden.viewable);
    assert_eq!(hidden.app.user, "bob");
    assert_eq!(hidden.app.state, AppState::Running);
    assert_eq!(hidden.app.am_host, "N/A");
    assert_eq!(hidden.app.am_rpc_port, -1);
    assert_eq!(hidden.app.tracking_url, "N/A");
    assert_eq!(hidden.app.diagnostics, "N/A");
    assert_eq!(
        hidden.current_attempt,
        Some(ApplicationAttemptId::new(id, -1))
    );
    assert_eq!((hidden.used_containers, hidden.progress), (-1, 0.0));
    assert!(hidden.amrm_token.is_none());

    // getApplications: all, the viewable ones, the caller's own.
    let list = |scope, user: &str| {
        s.list_apps(
            &AppFilter {
                scope,
                ..Default::default()
            },
            &Caller::user(user),
        )
        .iter()
        .map(|r| (r.app.id, r.viewable))
        .collect::<Vec<_>>()
    };
    assert_eq!(list(AppScope::All, "mallory"), [(id, false)]);
    assert!(list(AppScope::Viewable, "mallory").is_empty());
    assert_eq!(list(AppScope::Viewable, "victor"), [(id, true)]);
    assert!(list(AppScope::Own, "victor").is_empty());
    assert_eq!(list(AppScope::Own, "bob"), [(id, true)]);

    // Queue info with applications leaves out what the caller may not view.
    let apps_in_b = |user: &str| {
        s.queue_info("b", true, false, false, &Caller::user(user))
            .map(|q| q.apps.len())
    };
    assert_eq!(apps_in_b("mallory"), Some(0));
    assert_eq!(apps_in_b("victor"), Some(1));
}

#[test]
fn attempts_and_containers_need_view_app() {
    let mut s = locked(true);
    s.add_node("h1", Resource::new(8192, 8), 0);
    let id = submit(&mut s, "b", &[], 1);
    assert_eq!(s.run_ams(2).len(), 1);
    let attempt = ApplicationAttemptId::new(id, 1);
    let am = ContainerId::new(attempt, 1);
    let mallory = Caller::user("mallory");
    let denied = Refusal::AppViewDenied {
        user: "mallory".into(),
        app: id,
    };
    assert_eq!(s.attempts_of(&id, &mallory), Err(denied.clone()));
    assert_eq!(s.containers_of(&attempt, &mallory), Err(denied.clone()));
    assert_eq!(s.container_report(&am, &mallory), Err(denied));
    assert_eq!(
        s.attempt_report(&attempt, &mallory),
        Err(Refusal::AttemptViewDenied {
            user: "mallory".into(),
            attempt
        })
    );
    // The application must exist first, as Hadoop checks.
    let stranger = ApplicationId::new(TS, 99);
    assert_eq!(
        s.attempts_of(&stranger, &mallory),
        Err(Refusal::ApplicationNotFound(stranger))
    );
    assert_eq!(
        s.attempt_report(&ApplicationAttemptId::new(stranger, 1), &mallory),
        Err(Refusal::ApplicationNotFound(stranger))
    );

    let bob = Caller::user("bob");
    assert_eq!(s.attempts_of(&id, &bob).map(|a| a.len()), Ok(1));
    assert_eq!(s.attempt_report(&attempt, &bob).map(|a| a.id), Ok(attempt));
    assert_eq!(s.containers_of(&attempt, &bob).map(|c| c.len()), Ok(1));
    assert_eq!(s.container_report(&am, &bob).map(|c| c.id), Ok(am));
    let second = ApplicationAttemptId::new(id, 2);
    assert_eq!(
        s.attempt_report(&second, &bob),
        Err(Refusal::AttemptNotFound(second))
    );
    assert_eq!(
        s.container_report(&ContainerId::new(second, 1), &bob),
        Err(Refusal::AttemptNotFound(second))
    );
}

#[test]
fn queue_user_acls_report_each_right_from_its_own_chain() {
    let s = locked(true);
    let rights = |user: &str| {
        let mut r = s.queue_user_acls(&Caller::user(user));
        r.sort();
        r
    };
    assert_eq!(
        rights("dave"),
        [
            ("a".to_string(), true, true),
            ("b".to_string(), true, false),
            ("root".to_string(), false, false)
        ]
    );
    assert_eq!(
        rights("mallory"),
        [
            ("a".to_string(), true, false),
            ("b".to_string(), true, false),
            ("root".to_string(), false, false)
        ]
    );
}
