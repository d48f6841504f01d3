//! The RM state's queue-level behaviour: refreshQueues with the scheduler
//! settings that come with the tree, application priorities (submission,
//! queue defaults, the cluster maximum, updates) and queue admission.

use spindle_common::conf::Configuration;
use spindle_common::ids::ApplicationId;
use spindle_common::resource::Resource;
use spindle_scheduler::{HeartbeatAssignment, LocalityDelay};

use super::test_support::{capacity_queues, state_with, TestRm, TS};
use super::Settings;
use crate::acl::Acl;
use crate::model::access::Caller;
use crate::model::apps::AppState;
use crate::model::convert::refusal_to_rpc;
use crate::model::keys::KeyRolling;
use crate::model::launch::AppAccess;
use crate::model::refusal::Refusal;
use crate::queue_files::{fair, QueueFile};
use crate::state::command::{
    KillApplication, RefreshAdminAcls, RefreshQueues, UpdateApplicationPriority,
};

const TWO_QUEUES: [(&str, &str); 5] = [
    ("root.queues", "a,b"),
    ("root.a.capacity", "50"),
    ("root.b.capacity", "50"),
    ("root.a.maximum-am-resource-percent", "1.0"),
    ("root.b.maximum-am-resource-percent", "1.0"),
];

fn with(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    let mut pairs = TWO_QUEUES.to_vec();
    pairs.extend_from_slice(extra);
    pairs
}

/// A state over `queues` whose cluster maximum priority is `max_priority`.
fn with_max_priority(queues: QueueFile, max_priority: i32) -> TestRm {
    let settings = Settings {
        max_application_priority: max_priority,
        ..Settings::new(TS)
    };
    TestRm::new(queues, settings, KeyRolling::daily(0))
}

/// The applications whose AM containers the effects ask to launch, in order.
fn launched(s: &mut TestRm) -> Vec<ApplicationId> {
    s.launched().into_iter().map(|a| a.app).collect()
}

fn priority_of(s: &TestRm, id: ApplicationId) -> (i32, Option<i32>, Option<i32>) {
    let app = s.apps.get(&id).unwrap_or_else(|| panic!("no {id}"));
    let in_scheduler = s
        .current_attempt_id(&id)
        .and_then(|a| s.cluster.scheduler().app(&a))
        .map(|a| a.priority);
    let reported = s
        .app_report(&id, &Caller::user(""))
        .ok()
        .map(|r| r.app.priority);
    (app.priority, in_scheduler, reported)
}

fn update(
    s: &mut TestRm,
    ms: u64,
    app: ApplicationId,
    priority: i32,
    user: &str,
) -> Result<i32, Refusal> {
    update_as(s, ms, app, priority, user, &[])
}

fn update_as(
    s: &mut TestRm,
    ms: u64,
    app: ApplicationId,
    priority: i32,
    user: &str,
    groups: &[String],
) -> Result<i32, Refusal> {
    s.run(
        ms,
        UpdateApplicationPriority {
            app,
            priority,
            user: user.into(),
            groups: groups.to_vec(),
        },
    )
}

fn kill(s: &mut TestRm, ms: u64, app: ApplicationId, reason: &str) {
    let killed = s.run(
        ms,
        KillApplication {
            app,
            user: "alice".into(),
            groups: Vec::new(),
            reason: Some(reason.into()),
            from: None,
        },
    );
    assert_eq!(killed, Ok(true));
}

// ---- refreshQueues ----------------------------------------------------------

/// `refreshQueues` hands the scheduler the capacity delays and
/// per-heartbeat settings of the new file with its tree (they used to be
/// read at start-up only).
#[test]
fn refresh_applies_capacity_delays_and_heartbeat_caps() {
    let mut s = state_with(capacity_queues(&TWO_QUEUES));
    assert_eq!(
        s.cluster.scheduler().config().locality,
        LocalityDelay::Capacity {
            node_locality_delay: 40,
            rack_locality_additional_delay: -1
        }
    );
    assert_eq!(
        s.cluster.scheduler().config().heartbeat,
        HeartbeatAssignment {
            max_containers: Some(100),
            max_off_switch: Some(1)
        }
    );
    let changed = capacity_queues(&with(&[
        ("node-locality-delay", "5"),
        ("rack-locality-additional-delay", "2"),
        ("per-node-heartbeat.multiple-assignments-enabled", "false"),
        ("per-node-heartbeat.maximum-offswitch-assignments", "3"),
    ]));
    s.run(10, RefreshQueues { queues: changed })
        .unwrap_or_else(|e| panic!("{e:?}"));
    let expected_locality = LocalityDelay::Capacity {
        node_locality_delay: 5,
        rack_locality_additional_delay: 2,
    };
    let expected_heartbeat = HeartbeatAssignment {
        max_containers: Some(1),
        max_off_switch: Some(3),
    };
    assert_eq!(s.cluster.scheduler().config().locality, expected_locality);
    assert_eq!(s.cluster.scheduler().config().heartbeat, expected_heartbeat);
    assert_eq!(s.queues.locality, expected_locality);
    assert_eq!(s.queues.heartbeat, expected_heartbeat);
}

/// The fair scheduler's `locality.threshold.*` and `assignmultiple` /
/// `max.assign` (yarn-site keys, re-read on refresh) take effect too.
#[test]
fn refresh_applies_fair_thresholds_and_max_assign() {
    let xml = "<allocations><queue name=\"a\"/></allocations>";
    let load = |site: &Configuration| {
        fair::from_str(xml, "fair-scheduler.xml", site).unwrap_or_else(|e| panic!("{e}"))
    };
    let mut site = Configuration::empty();
    let mut s = state_with(load(&site));
    assert_eq!(
        s.cluster.scheduler().config().heartbeat.max_containers,
        Some(1),
        "one container per heartbeat without assignmultiple"
    );
    site.set("yarn.scheduler.fair.locality.threshold.node", "0.5");
    site.set("yarn.scheduler.fair.locality.threshold.rack", "0.25");
    site.set("yarn.scheduler.fair.assignmultiple", "true");
    site.set("yarn.scheduler.fair.dynamic.max.assign", "false");
    site.set("yarn.scheduler.fair.max.assign", "4");
    s.run(
        10,
        RefreshQueues {
            queues: load(&site),
        },
    )
    .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        s.cluster.scheduler().config().locality,
        LocalityDelay::Fair {
            node_threshold: 0.5,
            rack_threshold: 0.25
        }
    );
    assert_eq!(
        s.cluster.scheduler().config().heartbeat.max_containers,
        Some(4)
    );
}

/// A refresh the scheduler refuses (it drops a queue that holds an
/// application) changes nothing: neither the tree nor the delays nor the
/// caps, in the scheduler or in the RM's copy.
#[test]
fn refused_refresh_keeps_tree_and_settings() {
    let mut s = state_with(capacity_queues(&TWO_QUEUES));
    s.add_node("h1", Resource::new(8192, 8), 0);
    s.submit_to("b", "alice", None, 1);
    let before_queues = s.queues.clone();
    let before_config = s.cluster.scheduler().config().clone();
    let dropped = capacity_queues(&[
        ("root.queues", "a"),
        ("root.a.capacity", "100"),
        ("node-locality-delay", "1"),
        ("per-node-heartbeat.maximum-container-assignments", "2"),
    ]);
    let err = s
        .run(10, RefreshQueues { queues: dropped })
        .expect_err("b holds an app");
    let err = refusal_to_rpc(err).message;
    assert!(err.contains("root.b"), "{err}");
    assert_eq!(s.queues, before_queues);
    assert_eq!(s.cluster.scheduler().config(), &before_config);
}

// ---- application priorities -------------------------------------------------

/// Capacity scheduler: a submission without a priority takes its leaf's
/// `default-application-priority` (0 when unset); every priority is then
/// lowered to `yarn.cluster.max-application-priority`; nothing raises a
/// low or negative one. The effective priority is what the application
/// record, the scheduler and the report all show.
#[test]
fn submitted_priorities_take_queue_defaults_and_the_cluster_maximum() {
    let mut s = with_max_priority(
        capacity_queues(&with(&[("root.a.default-application-priority", "3")])),
        5,
    );
    s.add_node("h1", Resource::new(8192, 8), 0);
    let cases = [
        ("a", None, 3),
        ("a", Some(9), 5),
        ("a", Some(2), 2),
        ("a", Some(-1), -1),
        ("b", None, 0),
        ("b", Some(5), 5),
    ];
    for (queue, requested, effective) in cases {
        let id = s.submit_to(queue, "alice", requested, 1);
        assert_eq!(
            priority_of(&s, id),
            (effective, Some(effective), Some(effective)),
            "{queue} {requested:?}"
        );
    }
}

/// With Hadoop's default maximum (0), priorities above 0 are lowered to
/// 0, a queue default included.
#[test]
fn default_cluster_maximum_is_zero() {
    let mut s = state_with(capacity_queues(&with(&[(
        "root.a.default-application-priority",
        "3",
    )])));
    assert_eq!(s.settings.max_application_priority, 0);
    let asked = s.submit_to("a", "alice", Some(7), 1);
    let defaulted = s.submit_to("a", "alice", None, 1);
    assert_eq!(s.apps.get(&asked).map(|a| a.priority), Some(0));
    assert_eq!(s.apps.get(&defaulted).map(|a| a.priority), Some(0));
}

/// Hadoop's FIFO and fair schedulers do not support application
/// priorities: every application gets 0, whatever it asked for.
#[test]
fn fifo_and_fair_schedulers_give_priority_zero() {
    let fair_file = fair::from_str(
        "<allocations><queue name=\"a\"/></allocations>",
        "fair-scheduler.xml",
        &Configuration::empty(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    for file in [QueueFile::fifo(), fair_file] {
        let kind = file.tree.kind;
        let mut s = with_max_priority(file, 10);
        let id = s.submit_to("default", "alice", Some(4), 1);
        assert_eq!(s.apps.get(&id).map(|a| a.priority), Some(0), "{kind}");
        assert_eq!(update(&mut s, 2, id, 6, "alice"), Ok(0), "{kind}");
    }
}

/// In a fifo-ordered capacity leaf the RM's priorities decide who is
/// served first: with room for two AM containers, the two applications
/// with the highest priorities get them, whatever the submission order.
#[test]
fn higher_priority_applications_get_containers_first() {
    let mut s = with_max_priority(
        capacity_queues(&[
            ("root.queues", "a"),
            ("root.a.capacity", "100"),
            ("root.a.maximum-am-resource-percent", "1.0"),
            ("root.a.ordering-policy", "fifo"),
        ]),
        10,
    );
    let low = s.submit_to("a", "alice", Some(1), 1);
    let high = s.submit_to("a", "alice", Some(5), 2);
    let mid = s.submit_to("a", "alice", Some(3), 3);
    assert!(launched(&mut s).is_empty(), "no node yet");
    s.add_node("h1", Resource::new(2048, 2), 4);
    s.tick(5);
    assert_eq!(launched(&mut s), [high, mid]);
    assert_eq!(s.apps.get(&low).map(|a| a.state), Some(AppState::Accepted));
}

/// `updateApplicationPriority`: clamped to the cluster maximum, recorded,
/// handed to the scheduler, which re-orders the leaf: the raised
/// application gets the next free AM container.
#[test]
fn priority_update_is_clamped_and_reorders_the_queue() {
    let mut s = with_max_priority(
        capacity_queues(&with(&[("root.a.ordering-policy", "fifo")])),
        10,
    );
    let first = s.submit_to("a", "alice", Some(2), 1);
    let second = s.submit_to("a", "alice", Some(1), 2);
    assert_eq!(update(&mut s, 3, second, 20, "alice"), Ok(10));
    assert_eq!(priority_of(&s, second), (10, Some(10), Some(10)));
    // The same priority again changes nothing and answers it.
    assert_eq!(update(&mut s, 4, second, 10, "alice"), Ok(10));
    s.add_node("h1", Resource::new(1024, 1), 5);
    s.tick(6);
    assert_eq!(launched(&mut s), [second]);
    assert_eq!(
        s.apps.get(&first).map(|a| a.state),
        Some(AppState::Accepted)
    );
}

/// Unknown applications, finished ones (their priority is answered, as
/// Hadoop does), applications not yet accepted, and callers who may not
/// modify the application when ACLs are on (the root's ACLs are closed:
/// unset, they make everyone an administrator of every queue).
#[test]
fn priority_update_refusals() {
    let mut s = TestRm::new(
        capacity_queues(&with(&[
            ("root.acl_submit_applications", " "),
            ("root.acl_administer_queue", " "),
            ("root.a.acl_submit_applications", "*"),
        ])),
        Settings {
            max_application_priority: 10,
            acl_enabled: true,
            ..Settings::new(TS)
        },
        KeyRolling::daily(0),
    );
    let id = s.submit_to("a", "alice", Some(4), 1);
    let stranger = ApplicationId::new(TS, 99);
    assert_eq!(
        update(&mut s, 2, stranger, 1, "alice"),
        Err(Refusal::ApplicationNotFound(stranger))
    );

    s.run(
        2,
        RefreshAdminAcls {
            acl: Acl::parse("root admins"),
        },
    );
    let refused = update(&mut s, 3, id, 6, "mallory");
    assert_eq!(
        refused,
        Err(Refusal::AppAccessDenied {
            user: "mallory".into(),
            access: AppAccess::Modify,
            app: id
        })
    );
    let message = refused.err().map(|r| refusal_to_rpc(r).message);
    assert_eq!(
        message,
        Some(format!(
            "java.security.AccessControlException: \
             User mallory cannot perform operation MODIFY_APP on {id}"
        ))
    );
    assert_eq!(s.apps.get(&id).map(|a| a.priority), Some(4));
    assert_eq!(update(&mut s, 4, id, 6, "alice"), Ok(6));
    assert_eq!(
        update_as(&mut s, 5, id, 7, "bob", &["admins".to_string()]),
        Ok(7)
    );

    if let Some(app) = s.state.apps.get_mut(&id) {
        app.state = AppState::Submitted;
    }
    let refused = update(&mut s, 6, id, 8, "alice");
    assert_eq!(
        refused,
        Err(Refusal::PriorityUpdateInState(AppState::Submitted))
    );
    assert_eq!(
        refused.err().map(|r| refusal_to_rpc(r).message),
        Some("Application in SUBMITTED state cannot update priority.".into())
    );
    if let Some(app) = s.state.apps.get_mut(&id) {
        app.state = AppState::Accepted;
    }
    kill(&mut s, 7, id, "killed");
    assert_eq!(update(&mut s, 8, id, 9, "alice"), Ok(7));
    assert_eq!(s.apps.get(&id).map(|a| a.priority), Some(7));
}

/// A RUNNING application's priority can be changed too.
#[test]
fn running_application_priority_update() {
    let mut s = with_max_priority(capacity_queues(&TWO_QUEUES), 3);
    s.add_node("h1", Resource::new(8192, 8), 0);
    let id = s.submit_to("a", "alice", None, 1);
    assert_eq!(s.run_ams(2).len(), 1);
    assert_eq!(s.apps.get(&id).map(|a| a.state), Some(AppState::Running));
    assert_eq!(update(&mut s, 3, id, 2, "alice"), Ok(2));
    assert_eq!(priority_of(&s, id), (2, Some(2), Some(2)));
}

/// Every allocate answer names the application's current priority, as
/// Hadoop's RM does (MapReduce's AM reads it on every heartbeat and fails
/// without it).
#[test]
fn allocate_answers_carry_the_application_priority() {
    let mut s = with_max_priority(capacity_queues(&TWO_QUEUES), 3);
    s.add_node("h1", Resource::new(8192, 8), 0);
    let id = s.submit_to("a", "alice", Some(1), 1);
    let attempt = s.run_ams(2)[0];
    let heartbeat = |s: &mut TestRm, response_id: i32, ms: u64| {
        let key = s.state.tokens.current_amrm_key_id();
        s.run(
            ms,
            crate::state::command::Allocate {
                attempt,
                amrm_key_id: key,
                request: crate::model::amrm::AllocateRequest {
                    response_id,
                    ..Default::default()
                },
            },
        )
        .expect("allocate")
        .application_priority
    };
    assert_eq!(heartbeat(&mut s, 0, 3), Some(1));
    assert_eq!(update(&mut s, 4, id, 3, "alice"), Ok(3));
    assert_eq!(heartbeat(&mut s, 1, 5), Some(3));
}

// ---- admission ----------------------------------------------------------------

/// `maximum-applications`: a leaf holding that many unfinished
/// applications refuses the next one with Hadoop's message, and accepts
/// again once one has finished.
#[test]
fn maximum_applications_refuses_with_hadoops_message() {
    let mut s = state_with(capacity_queues(&with(&[(
        "root.a.maximum-applications",
        "2",
    )])));
    s.add_node("h1", Resource::new(8192, 8), 0);
    let first = s.submit_to("a", "alice", None, 1);
    let second = s.submit_to("a", "bob", None, 2);
    let third = s.submit_to("a", "carol", None, 3);
    for id in [first, second] {
        assert_eq!(s.apps.get(&id).map(|a| a.state), Some(AppState::Accepted));
    }
    let refused = s.apps.get(&third).expect("recorded");
    assert_eq!(refused.state, AppState::Failed);
    assert_eq!(
        refused.diagnostics,
        format!(
            "Queue root.a already has 2 applications, cannot accept submission of application: {third}"
        )
    );
    assert!(
        s.current_attempt_id(&third).is_none(),
        "a refused application never reaches the scheduler"
    );
    // Another leaf is not affected.
    let elsewhere = s.submit_to("b", "carol", None, 4);
    assert_eq!(
        s.apps.get(&elsewhere).map(|a| a.state),
        Some(AppState::Accepted)
    );
    // A finished application frees its place.
    kill(&mut s, 5, first, "done");
    let fourth = s.submit_to("a", "carol", None, 6);
    assert_eq!(
        s.apps.get(&fourth).map(|a| a.state),
        Some(AppState::Accepted)
    );
}

/// An allocate answer tells the AM its own headroom: here its queue may use
/// at most half of the 16 GB cluster, so with its 1 GB AM running, 7 GB,
/// and 7 of its 8 vcores, not the cluster's 15 GB free (Hadoop's
/// `CapacityHeadroomProvider`).
#[test]
fn allocate_answers_carry_the_attempts_headroom() {
    let mut s = state_with(capacity_queues(&[
        ("root.queues", "a,b"),
        ("root.a.capacity", "50"),
        ("root.a.maximum-capacity", "50"),
        ("root.a.user-limit-factor", "2"),
        ("root.b.capacity", "50"),
    ]));
    s.add_node("h1", Resource::new(8192, 8), 0);
    s.add_node("h2", Resource::new(8192, 8), 0);
    s.submit_to("a", "alice", None, 10);
    let attempts = s.run_ams(20);
    let attempt = attempts[0];
    let reply = s
        .run(
            30,
            crate::state::command::Allocate {
                attempt,
                amrm_key_id: s.state.tokens.current_amrm_key_id(),
                request: crate::model::amrm::AllocateRequest {
                    response_id: 0,
                    ..Default::default()
                },
            },
        )
        .expect("allocate");
    let cluster = reply.cluster.expect("cluster view");
    assert_eq!(cluster.headroom, Resource::new(7168, 7));
}
