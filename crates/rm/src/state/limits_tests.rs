//! Bounds on what clients and AMs send, through the state's commands: an
//! oversized submission is refused whole, diagnostics are kept to Hadoop's
//! limit, an AM's address is bounded.

use std::collections::BTreeSet;

use spindle_common::ids::ApplicationAttemptId;
use spindle_common::resource::Resource;

use super::test_support::{state_with, submission, TestRm};
use crate::model::apps::AppState;
use crate::model::convert::refusal_to_rpc;
use crate::model::launch::AmLaunchContext;
use crate::model::limits::{LimitExceeded, MAX_APPLICATION_NAME_CHARS, MAX_TRACKING_URL_CHARS};
use crate::model::refusal::Refusal;
use crate::queue_files::QueueFile;
use crate::state::command::{
    FinishApplicationMaster, KillApplication, NewApplication, RegisterApplicationMaster,
    SubmitApplication,
};
use spindle_common::states::FinalStatus;

fn state() -> TestRm {
    state_with(QueueFile::fifo())
}

/// The issue's case: a 20 MB application name is refused, with a message
/// naming the field and the limit, and nothing is recorded.
#[test]
fn an_oversized_name_is_refused_and_nothing_is_recorded() {
    let mut s = state();
    let id = s.run(1, NewApplication);
    let huge = "n".repeat(20 << 20);
    let submit = SubmitApplication {
        submission: crate::model::submission::Submission {
            name: huge,
            ..submission(id, "default", None)
        },
        launch: AmLaunchContext::default(),
        user: "bob".into(),
        groups: Vec::new(),
    };
    let refused = s.run(2, submit);
    let Err(refusal) = refused else {
        panic!("a 20 MB name was accepted");
    };
    assert_eq!(
        refusal,
        Refusal::LimitExceeded {
            app: Some(id),
            what: LimitExceeded::Field {
                field: "application name",
                unit: "characters",
                max: MAX_APPLICATION_NAME_CHARS,
                actual: 20 << 20,
            }
        }
    );
    let rpc = refusal_to_rpc(refusal);
    assert_eq!(rpc.class_name, spindle_ipc::class::YARN);
    assert_eq!(
        rpc.message,
        format!(
            "Application {id} refused: its application name has 20971520 characters, \
             more than the 4096 allowed"
        )
    );
    assert!(s.apps.get(&id).is_none());
}

/// Hadoop's tag limits, with its messages.
#[test]
fn too_many_tags_are_refused_with_hadoops_message() {
    let mut s = state();
    let id = s.run(1, NewApplication);
    let submit = SubmitApplication {
        submission: crate::model::submission::Submission {
            tags: (0..11).map(|i| format!("t{i}")).collect::<BTreeSet<_>>(),
            app_type: "A-TYPE-LONGER-THAN-TWENTY".into(),
            ..submission(id, "default", None)
        },
        launch: AmLaunchContext::default(),
        user: "bob".into(),
        groups: Vec::new(),
    };
    let message = s
        .run(2, submit.clone())
        .err()
        .map(|r| refusal_to_rpc(r).message);
    assert_eq!(
        message.as_deref(),
        Some(
            "java.lang.IllegalArgumentException: Too many applicationTags, \
             a maximum of only 10 are allowed!"
        )
    );
    // Ten are fine; the type is cut to Hadoop's twenty characters.
    let mut ten = submit;
    ten.submission.tags = (0..10).map(|i| format!("t{i}")).collect();
    s.run(3, ten).expect("ten tags");
    assert_eq!(
        s.apps.get(&id).map(|a| a.app_type.as_str()),
        Some("A-TYPE-LONGER-THAN-T")
    );
}

/// A kill reason (like any diagnostics) is kept to the last 64 Ki
/// characters behind Hadoop's header.
#[test]
fn diagnostics_are_kept_to_hadoops_limit() {
    let mut s = state();
    let id = s.submit_to("default", "bob", None, 1);
    let killed = s.run(
        2,
        KillApplication {
            app: id,
            user: "bob".into(),
            groups: Vec::new(),
            reason: Some("r".repeat(1 << 20)),
            from: None,
        },
    );
    assert_eq!(killed, Ok(true));
    let app = s.apps.get(&id).expect("app");
    assert_eq!(app.state, AppState::Killed);
    let total = format!("Application {id} was killed by user bob with diagnostic message: ").len()
        + (1 << 20);
    assert!(
        app.diagnostics.starts_with(&format!(
            "Diagnostic messages truncated, showing last 65536 chars out of {total}:\n..."
        )),
        "{}",
        &app.diagnostics[..100]
    );
    assert!(app.diagnostics.len() < 65_536 + 200);
    let attempt = s
        .attempts
        .get(&ApplicationAttemptId::new(id, 1))
        .expect("attempt");
    assert!(attempt.diagnostics.len() < 65_536 + 200);
}

/// An AM's host and tracking URL are bounded; its unregistration
/// diagnostics are kept to the limit.
#[test]
fn an_ams_address_and_diagnostics_are_bounded() {
    let mut s = state();
    s.add_node("h1", Resource::new(8192, 8), 0);
    let id = s.submit_to("default", "bob", None, 1);
    let attempts = s.launched();
    assert_eq!(attempts.len(), 1);
    let attempt = attempts[0];
    s.run(2, crate::state::command::AmLaunched { attempt });
    let register = |url: String| RegisterApplicationMaster {
        attempt,
        host: "amhost".into(),
        rpc_port: 1,
        tracking_url: url,
    };
    let refused = s.run(3, register("u".repeat(MAX_TRACKING_URL_CHARS + 1)));
    assert!(
        matches!(
            refused,
            Err(Refusal::LimitExceeded {
                what: LimitExceeded::Field {
                    field: "tracking URL",
                    ..
                },
                ..
            })
        ),
        "{refused:?}"
    );
    s.run(4, register("http://am:1".into())).expect("register");
    let finished = s.run(
        5,
        FinishApplicationMaster {
            attempt,
            status: FinalStatus::Failed,
            diagnostics: "x".repeat(1 << 20),
            tracking_url: String::new(),
        },
    );
    assert_eq!(finished, Ok(true));
    let app = s.apps.get(&id).expect("app");
    assert!(
        app.diagnostics.len() < 65_536 + 200,
        "{}",
        app.diagnostics.len()
    );
}

/// An ended application's launch context is let go on the next tick, and
/// an application the table forgets takes its attempts and history along.
#[test]
fn ended_applications_let_their_launch_contexts_and_records_go() {
    let mut s = state();
    let first = s.submit_to("default", "bob", None, 1);
    let kill = |s: &mut TestRm, app, ms| {
        s.run(
            ms,
            KillApplication {
                app,
                user: "bob".into(),
                groups: Vec::new(),
                reason: None,
                from: None,
            },
        )
    };
    assert!(s
        .history
        .get(&first)
        .is_some_and(|h| !h.launch.forwarded.is_empty()));
    assert_eq!(kill(&mut s, first, 2), Ok(true));
    s.tick(3);
    assert_eq!(
        s.history.get(&first).map(|h| h.launch.clone()),
        Some(AmLaunchContext::default())
    );
    assert!(s
        .attempts
        .contains_key(&ApplicationAttemptId::new(first, 1)));
    // The test table remembers 100 completed applications.
    for i in 0..100 {
        let id = s.submit_to("default", "bob", None, 10 + i);
        assert_eq!(kill(&mut s, id, 10 + i), Ok(true));
    }
    s.tick(200);
    assert!(s.apps.get(&first).is_none());
    assert!(!s.history.contains_key(&first));
    assert!(!s
        .attempts
        .contains_key(&ApplicationAttemptId::new(first, 1)));
    assert_eq!(s.history.len(), 100);
}
