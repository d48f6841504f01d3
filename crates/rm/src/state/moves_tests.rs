//! Moving applications between queues: Hadoop's checks in its order, the
//! usage and pending asks that go with the application, and the move
//! surviving a restart.

use std::collections::BTreeMap;

use spindle_common::conf::Configuration;
use spindle_common::ids::ApplicationId;
use spindle_common::resource::Resource;

use super::test_support::{capacity_queues, state_with, TestRm, TS};
use super::Settings;
use crate::acl::Acl;
use crate::model::access::Caller;
use crate::model::apps::AppState;
use crate::model::convert::refusal_to_rpc;
use crate::model::keys::KeyRolling;
use crate::model::refusal::Refusal;
use crate::queue_files::{fair, QueueFile};
use crate::state::command::{
    KillApplication, MoveApplication, RefreshAdminAcls, UpdateApplicationTimeouts,
};
use crate::store::StoreOp;
use crate::time::Now;

/// `root.eng.{etl,adhoc}` and `root.ops` (STOPPED), `root.full` taking no
/// applications; the AM limit of etl lets one 1 GB AM run on the 10 GB node.
fn queues() -> QueueFile {
    capacity_queues(&[
        ("root.queues", "eng,ops,full"),
        ("root.eng.capacity", "60"),
        ("root.eng.maximum-capacity", "80"),
        ("root.eng.queues", "etl,adhoc"),
        ("root.eng.etl.capacity", "50"),
        ("root.eng.adhoc.capacity", "50"),
        ("root.eng.adhoc.maximum-am-resource-percent", "1.0"),
        ("root.ops.capacity", "30"),
        ("root.ops.state", "STOPPED"),
        ("root.full.capacity", "10"),
        ("root.full.maximum-applications", "0"),
        ("root.acl_submit_applications", " "),
        ("root.acl_administer_queue", " "),
        ("root.eng.acl_submit_applications", "*"),
        ("root.full.acl_submit_applications", "*"),
        ("root.ops.acl_submit_applications", "alice"),
    ])
}

fn rm(acl_enabled: bool) -> TestRm {
    let settings = Settings {
        acl_enabled,
        ..Settings::new(TS)
    };
    let mut s = TestRm::new(queues(), settings, KeyRolling::daily(0));
    s.run(
        0,
        RefreshAdminAcls {
            acl: Acl::parse("admin"),
        },
    );
    s.add_node("h1", Resource::new(10240, 10), 0);
    s
}

/// A move at 10 ms.
fn mv(s: &mut TestRm, app: ApplicationId, queue: &str, user: &str) -> Result<(), Refusal> {
    mv_at(s, 10, app, queue, user)
}

fn mv_at(
    s: &mut TestRm,
    ms: u64,
    app: ApplicationId,
    queue: &str,
    user: &str,
) -> Result<(), Refusal> {
    s.run(
        ms,
        MoveApplication {
            app,
            queue: queue.into(),
            user: user.into(),
            groups: Vec::new(),
        },
    )
}

/// What the client prints for a refusal: the exception class and message.
fn said(r: Result<(), Refusal>) -> String {
    match r {
        Ok(()) => "moved".into(),
        Err(refusal) => {
            let e = refusal_to_rpc(refusal);
            format!("{}: {}", e.class_name, e.message)
        }
    }
}

fn used_mb(s: &TestRm, queue: &str) -> i64 {
    match s.cluster.scheduler().queue(queue) {
        Some(q) => q.used.memory_mb,
        None => panic!("no queue {queue}"),
    }
}

#[test]
fn moves_are_checked_in_hadoops_order_with_its_messages() {
    let mut s = rm(true);
    let app = s.submit_to("etl", "alice", None, 1);
    s.run_ams(2);
    let absent = ApplicationId::new(TS, 99);
    assert_eq!(
        said(mv(&mut s, absent, "nosuch", "alice")),
        format!(
            "org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException: Application with id \
             '{absent}' doesn't exist in RM. Please check that the job submission was successful."
        )
    );
    // MODIFY_APP before anything about the target.
    assert_eq!(
        said(mv(&mut s, app, "nosuch", "mallory")),
        format!(
            "org.apache.hadoop.yarn.exceptions.YarnException: java.security.AccessControlException: \
             User mallory cannot perform operation MODIFY_APP on {app}"
        )
    );
    // With ACLs on, a missing target and one the caller may not submit to
    // are refused alike, before the application's state is looked at.
    let denied = |q: &str| {
        format!(
            "org.apache.hadoop.yarn.exceptions.YarnException: java.security.AccessControlException: \
             User alice cannot submit applications to target queue or the target queue doesn't \
             exist: {q} while moving {app}"
        )
    };
    assert_eq!(said(mv(&mut s, app, "nosuch", "alice")), denied("nosuch"));
    assert_eq!(
        said(mv(&mut s, app, "adhoc", "mallory")),
        format!(
        "org.apache.hadoop.yarn.exceptions.YarnException: java.security.AccessControlException: \
         User mallory cannot perform operation MODIFY_APP on {app}"
    )
    );
    // The scheduler's checks: a parent, a full leaf.
    assert_eq!(
        said(mv(&mut s, app, "eng", "alice")),
        "org.apache.hadoop.yarn.exceptions.YarnException: The specified Queue: eng is not a Leaf Queue."
    );
    assert_eq!(
        said(mv(&mut s, app, "full", "alice")),
        format!(
            "org.apache.hadoop.yarn.exceptions.YarnException: \
             org.apache.hadoop.security.AccessControlException: Queue root.full already has 0 \
             applications, cannot accept submission of application: {app}"
        )
    );
    // A stopped queue refuses as a submission.
    assert_eq!(
        said(mv(&mut s, app, "ops", "alice")),
        format!(
            "org.apache.hadoop.yarn.exceptions.YarnException: \
             org.apache.hadoop.security.AccessControlException: Queue root.ops is STOPPED. Cannot \
             accept submission of application: {app}"
        )
    );
    // Nothing of this changed the application.
    assert_eq!(
        s.apps.get(&app).map(|a| a.queue.clone()),
        Some("etl".into())
    );
    assert_eq!(used_mb(&s, "root.eng.etl"), 1024);
    // A finished application: its state, once the target passed the ACLs.
    let killed = s.run(
        20,
        KillApplication {
            app,
            user: "alice".into(),
            groups: Vec::new(),
            reason: None,
            from: None,
        },
    );
    assert_eq!(killed, Ok(true));
    assert_eq!(said(mv(&mut s, app, "nosuch", "alice")), denied("nosuch"));
    assert_eq!(
        said(mv(&mut s, app, "adhoc", "alice")),
        "org.apache.hadoop.yarn.exceptions.YarnException: App in KILLED state cannot be moved."
    );
}

#[test]
fn without_acls_a_missing_queue_is_the_schedulers_refusal_after_the_state() {
    let mut s = rm(false);
    let app = s.submit_to("etl", "alice", None, 1);
    assert_eq!(
        said(mv(&mut s, app, "nosuch", "bob")),
        "org.apache.hadoop.yarn.exceptions.YarnException: The specified Queue: nosuch doesn't exist"
    );
    // The full path names the same leaf; the queue the client named is shown.
    assert_eq!(said(mv(&mut s, app, "root.eng.adhoc", "bob")), "moved");
    assert_eq!(
        s.app_report(&app, &Caller::user("bob"))
            .map(|r| r.app.queue),
        Ok("root.eng.adhoc".to_string())
    );
}

#[test]
fn a_move_takes_usage_and_pending_asks_to_the_new_leaf() {
    let mut s = rm(false);
    let running = s.submit_to("etl", "alice", None, 1);
    assert_eq!(s.run_ams(2).len(), 1);
    // etl's AM limit holds the second AM back.
    let waiting = s.submit_to("etl", "bob", None, 3);
    s.tick(4);
    assert!(s.launched().is_empty(), "the second AM is held back");
    assert_eq!(used_mb(&s, "root.eng.etl"), 1024);

    assert_eq!(mv(&mut s, running, "adhoc", "alice"), Ok(()));
    assert_eq!(used_mb(&s, "root.eng.adhoc"), 1024);
    // etl's AM room is free again: the waiting AM is placed at once.
    assert_eq!(used_mb(&s, "root.eng.etl"), 1024);
    assert_eq!(used_mb(&s, "root.eng"), 2048);
    let launched: Vec<ApplicationId> = s.launched().into_iter().map(|a| a.app).collect();
    assert_eq!(launched, vec![waiting]);
    let report = s
        .app_report(&running, &Caller::user("alice"))
        .map(|r| r.app.queue);
    assert_eq!(report, Ok("adhoc".to_string()));
    let attempt = s.current_attempt_id(&running).expect("attempt");
    assert_eq!(
        s.cluster.scheduler().app(&attempt).map(|a| a.queue),
        Some("root.eng.adhoc".to_string())
    );

    // Moving an ACCEPTED application takes its pending AM ask along.
    let third = s.submit_to("etl", "carol", None, 11);
    assert_eq!(mv_at(&mut s, 12, third, "adhoc", "carol"), Ok(()));
    let launched: Vec<ApplicationId> = s.launched().into_iter().map(|a| a.app).collect();
    assert_eq!(launched, vec![third]);
    assert_eq!(used_mb(&s, "root.eng.adhoc"), 2048);
    assert_eq!(s.app_state(&third), Some(AppState::Accepted));
    // A move to the queue the application is in succeeds and changes nothing.
    assert_eq!(mv_at(&mut s, 13, third, "adhoc", "carol"), Ok(()));
    assert_eq!(used_mb(&s, "root.eng.adhoc"), 2048);
}

#[test]
fn a_moved_application_is_in_its_new_queue_after_a_restart() {
    let mut before = rm(false);
    before.enable_store(10);
    let app = before.submit_to("etl", "alice", None, 1);
    before.run_ams(2);
    let mut stored = BTreeMap::new();
    for op in before.take_store_ops() {
        if let StoreOp::PutApp(a) = op {
            stored.insert(a.id.clone(), *a);
        }
    }
    assert_eq!(mv(&mut before, app, "adhoc", "alice"), Ok(()));
    let ops = before.take_store_ops();
    let written: Vec<&str> = ops
        .iter()
        .filter_map(|op| match op {
            StoreOp::PutApp(a) => Some(a.queue.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(written, vec!["adhoc"], "the move is written to the store");
    for op in ops {
        if let StoreOp::PutApp(a) = op {
            stored.insert(a.id.clone(), *a);
        }
    }

    let mut after = rm(false);
    after.enable_store(10);
    let summary = after.recover(stored.into_values().collect(), Now::at(100));
    assert_eq!(summary.kept, 1, "{summary:?}");
    assert_eq!(
        after.apps.get(&app).map(|a| a.queue.clone()),
        Some("adhoc".into())
    );
    let attempt = after.current_attempt_id(&app).expect("attempt");
    assert_eq!(
        after.cluster.scheduler().app(&attempt).map(|a| a.queue),
        Some("root.eng.adhoc".to_string())
    );
}

#[test]
fn fifo_refuses_every_move_and_fair_needs_an_existing_leaf() {
    let mut s = state_with(QueueFile::fifo());
    let app = s.submit_to("default", "alice", None, 1);
    assert_eq!(
        said(mv(&mut s, app, "default", "alice")),
        "org.apache.hadoop.yarn.exceptions.YarnException: FifoScheduler does not support \
         pre-validation of moving apps between queues"
    );

    let xml = r#"<allocations>
        <queue name="a"/>
        <queue name="b"><queue name="c"/></queue>
    </allocations>"#;
    let queues = fair::from_str(xml, "fair-scheduler.xml", &Configuration::empty())
        .unwrap_or_else(|e| panic!("{e}"));
    let mut s = state_with(queues);
    s.add_node("h1", Resource::new(8192, 8), 0);
    let app = s.submit_to("root.a", "alice", None, 1);
    for target in ["nosuch", "b"] {
        assert_eq!(
            said(mv(&mut s, app, target, "alice")),
            format!(
                "org.apache.hadoop.yarn.exceptions.YarnException: Target queue {target} not found \
                 or is not a leaf queue."
            )
        );
    }
    assert_eq!(said(mv(&mut s, app, "b.c", "alice")), "moved");
    assert_eq!(
        s.apps.get(&app).map(|a| a.queue.clone()),
        Some("root.b.c".into())
    );
    assert_eq!(used_mb(&s, "root.b.c"), 1024);
    assert_eq!(used_mb(&s, "root.a"), 0);
}

// ---- application timeouts ----------------------------------------------------

fn lifetime(
    s: &mut TestRm,
    ms: u64,
    app: ApplicationId,
    expiry: Option<&str>,
    user: &str,
) -> Result<(), Refusal> {
    s.run(
        ms,
        UpdateApplicationTimeouts {
            app,
            lifetime: expiry.map(str::to_string),
            user: user.into(),
            groups: Vec::new(),
        },
    )
}

fn lifetime_report(s: &TestRm, app: ApplicationId) -> (Option<String>, i64) {
    match s.app_report(&app, &Caller::user("alice")) {
        Ok(r) => (
            r.app
                .lifetime
                .map(|l| crate::iso8601::format(l.expiry_wall_ms)),
            r.lifetime_remaining_s,
        ),
        Err(e) => panic!("{e:?}"),
    }
}

#[test]
fn lifetime_updates_are_checked_in_hadoops_order() {
    let mut s = rm(true);
    let app = s.submit_to("etl", "alice", None, 1);
    let absent = ApplicationId::new(TS, 99);
    let soon = crate::iso8601::format(TS as u64 + 60_000);
    let said = |r: Result<(), Refusal>| match r {
        Ok(()) => "ok".to_string(),
        Err(e) => refusal_to_rpc(e).message,
    };
    assert!(said(lifetime(&mut s, 20, absent, Some(&soon), "alice")).contains("doesn't exist"));
    assert_eq!(
        said(lifetime(&mut s, 20, app, None, "mallory")),
        format!("java.security.AccessControlException: User mallory cannot perform operation MODIFY_APP on {app}")
    );
    assert_eq!(
        said(lifetime(&mut s, 20, app, None, "alice")),
        "At least one ApplicationTimeoutType should be configured for updating timeouts."
    );
    assert_eq!(
        said(lifetime(&mut s, 20, app, Some("in an hour"), "alice")),
        "Expire time is not in ISO8601 format. ISO8601 supported format is \
         yyyy-MM-dd'T'HH:mm:ss.SSSZ. Configured timeout value is in an hour"
    );
    let now = TS as u64 + 5000;
    assert_eq!(
        said(lifetime(&mut s, now, app, Some("2023-11-14T22:13:20.000+0000"), "alice")),
        format!(
            "Expire time is less than current time, current-time={} expire-time=2023-11-14T22:13:20.000+0000",
            crate::iso8601::format(now)
        )
    );
    assert_eq!(lifetime_report(&s, app), (None, -1), "nothing changed");
    // A finished application answers success and keeps what it had.
    let killed = s.run(
        now,
        KillApplication {
            app,
            user: "alice".into(),
            groups: Vec::new(),
            reason: None,
            from: None,
        },
    );
    assert_eq!(killed, Ok(true));
    assert_eq!(said(lifetime(&mut s, now, app, Some(&soon), "alice")), "ok");
    assert_eq!(lifetime_report(&s, app), (None, -1));
}

#[test]
fn an_application_past_its_lifetime_is_killed() {
    let mut s = rm(false);
    let start = TS as u64;
    let app = s.submit_to("etl", "alice", None, start);
    s.run_ams(start + 1);
    let expiry = crate::iso8601::format(start + 60_000);
    assert_eq!(
        lifetime(&mut s, start + 1000, app, Some(&expiry), "alice"),
        Ok(())
    );
    assert_eq!(lifetime_report(&s, app), (Some(expiry.clone()), 59));
    // A later update replaces it.
    let later = crate::iso8601::format(start + 120_000);
    assert_eq!(
        lifetime(&mut s, start + 2000, app, Some(&later), "alice"),
        Ok(())
    );
    s.tick(start + 60_000);
    // (Its node stopped heartbeating long ago: a new attempt waits; the
    // application lives on.)
    assert!(s.app_state(&app).is_some_and(|st| !st.is_final()));
    assert_eq!(lifetime_report(&s, app), (Some(later.clone()), 60));
    s.tick(start + 120_000);
    assert_eq!(s.app_state(&app), Some(AppState::Killed));
    assert_eq!(
        s.apps.get(&app).map(|a| a.diagnostics.clone()),
        Some(
            "Application is killed by ResourceManager as it has exceeded the lifetime period."
                .into()
        )
    );
    assert_eq!(lifetime_report(&s, app), (Some(later), 0));
    assert_eq!(used_mb(&s, "root.eng.etl"), 0, "its containers are gone");
}

#[test]
fn a_lifetime_survives_a_restart_and_ends_on_time() {
    let start = TS as u64;
    let mut before = rm(false);
    before.enable_store(10);
    let app = before.submit_to("etl", "alice", None, start);
    before.run_ams(start + 1);
    let expiry = crate::iso8601::format(start + 60_000);
    assert_eq!(
        lifetime(&mut before, start + 1000, app, Some(&expiry), "alice"),
        Ok(())
    );
    let mut stored = BTreeMap::new();
    for op in before.take_store_ops() {
        if let StoreOp::PutApp(a) = op {
            stored.insert(a.id.clone(), *a);
        }
    }
    assert_eq!(
        stored[&app.to_string()].lifetime_expiry_ms,
        Some(start + 60_000)
    );

    let mut after = rm(false);
    after.enable_store(10);
    after.recover(stored.into_values().collect(), Now::at(start + 30_000));
    assert_eq!(lifetime_report(&after, app).0, Some(expiry));
    after.tick(start + 59_000);
    assert_ne!(after.app_state(&app), Some(AppState::Killed));
    after.tick(start + 60_000);
    assert_eq!(after.app_state(&app), Some(AppState::Killed));
}
