//! `/ws/v1/cluster/apps` built the cheap way (the owner copying lean
//! entries, typed DAOs written straight to JSON) against the way it was
//! built before (full reports and views cloned on the owner, a
//! `serde_json::Value` tree per application), kept here as the reference:
//! the bodies must be identical byte for byte, JSON and XML.
//!
//! `apps_list_cost` measures both on 10,000 applications, split into the
//! part on the owner of the state (the query) and the part off it (the
//! body). A measurement, not a check: ignored by default; run it with
//! `cargo test [--release] -p spindle-rm --lib apps_list_cost -- --ignored --nocapture`.

use std::time::{Duration, Instant};

use hadoop_protos::yarn as pb;
use serde_json::{json, Map, Value};
use spindle_common::ids::ApplicationId;
use spindle_common::resource::Resource;
use spindle_common::states::AppState;
use spindle_web::Format;

use super::apps::apps_body;
use super::dao::{elapsed, running_log_url, with_scheme, DeSelects};
use super::list_body;
use super::params::{apps_query, AppsQuery, Params};
use crate::acl::Acl;
use crate::model::access::Caller;
use crate::model::convert::launch_context_from_pb;
use crate::model::keys::KeyRolling;
use crate::model::reports::AppView;
use crate::model::submission::Submission;
use crate::model::tracking::{WebAddresses, UNAVAILABLE};
use crate::state::command::{KillApplication, NewApplication, RefreshAdminAcls, SubmitApplication};
use crate::state::test_support::{capacity_queues, state_with, submission, TestRm, TS};
use crate::state::Settings;

/// `AppInfo` as a `Value` tree, as it was built before the typed DAO.
fn reference_app_info(view: &AppView, cluster_id: i64, now: u64, deselects: DeSelects) -> Value {
    let r = &view.report;
    let a = &r.app;
    let not_ready = a.tracking_url.is_empty()
        || matches!(
            a.state,
            AppState::New | AppState::NewSaving | AppState::Submitted | AppState::Accepted
        );
    let tracking_ui = if not_ready {
        "UNASSIGNED"
    } else if a.finish_ms == 0 {
        "ApplicationMaster"
    } else {
        "History"
    };
    let seconds = || {
        json!({"entry": [
            {"key": "memory-mb", "value": "0"},
            {"key": "vcores", "value": "0"},
        ]})
    };
    let mut o = Map::new();
    o.insert("id".into(), json!(a.id.to_string()));
    o.insert("user".into(), json!(a.user));
    o.insert("name".into(), json!(a.name));
    o.insert("queue".into(), json!(a.queue));
    o.insert("state".into(), json!(a.state.as_str()));
    o.insert("finalStatus".into(), json!(a.final_status.as_str()));
    o.insert("progress".into(), json!(r.progress * 100.0));
    o.insert("trackingUI".into(), json!(tracking_ui));
    if !not_ready {
        o.insert("trackingUrl".into(), json!(with_scheme(&a.tracking_url)));
    }
    o.insert("diagnostics".into(), json!(a.diagnostics));
    o.insert("clusterId".into(), json!(cluster_id));
    o.insert("applicationType".into(), json!(a.app_type));
    let tags: Vec<&str> = a.tags.iter().map(String::as_str).collect();
    o.insert("applicationTags".into(), json!(tags.join(",")));
    o.insert("priority".into(), json!(a.priority));
    let seen = r.viewable;
    let (started, launched, finished, elapsed_ms) = if seen {
        (
            a.start_ms,
            a.launch_ms,
            a.finish_ms,
            elapsed(a.start_ms, a.finish_ms, now),
        )
    } else {
        (0, 0, 0, 0)
    };
    o.insert("startedTime".into(), json!(started));
    o.insert("launchTime".into(), json!(launched));
    o.insert("finishedTime".into(), json!(finished));
    o.insert("elapsedTime".into(), json!(elapsed_ms));
    if let Some(am) = view.am.as_ref().filter(|_| seen) {
        if let Some(http) = &am.node_http_address {
            o.insert(
                "amContainerLogs".into(),
                json!(running_log_url(http, &am.id.to_string(), &a.user)),
            );
            o.insert("amHostHttpAddress".into(), json!(http));
        }
    }
    if seen && a.am_host != "N/A" && !a.am_host.is_empty() && a.am_rpc_port != -1 {
        o.insert(
            "amRPCAddress".into(),
            json!(format!("{}:{}", a.am_host, a.am_rpc_port)),
        );
    }
    if let Some(am) = view.am.as_ref().filter(|_| seen) {
        o.insert("masterNodeId".into(), json!(am.node.to_string()));
    }
    let (used, containers) = if seen && r.used_containers >= 0 {
        (r.used, r.used_containers)
    } else {
        (Resource::default(), 0)
    };
    let cluster_usage = if seen && r.cluster_capability.memory_mb > 0 {
        used.memory_mb as f64 * 100.0 / r.cluster_capability.memory_mb as f64
    } else {
        0.0
    };
    o.insert("allocatedMB".into(), json!(used.memory_mb));
    o.insert("allocatedVCores".into(), json!(used.vcores));
    o.insert("reservedMB".into(), json!(0));
    o.insert("reservedVCores".into(), json!(0));
    o.insert("runningContainers".into(), json!(containers));
    o.insert("memorySeconds".into(), json!(0));
    o.insert("vcoreSeconds".into(), json!(0));
    o.insert("queueUsagePercentage".into(), json!(0.0));
    o.insert("clusterUsagePercentage".into(), json!(cluster_usage as f32));
    o.insert("resourceSecondsMap".into(), seconds());
    o.insert("preemptedResourceMB".into(), json!(0));
    o.insert("preemptedResourceVCores".into(), json!(0));
    o.insert("numNonAMContainerPreempted".into(), json!(0));
    o.insert("numAMContainerPreempted".into(), json!(0));
    o.insert("preemptedMemorySeconds".into(), json!(0));
    o.insert("preemptedVcoreSeconds".into(), json!(0));
    o.insert("preemptedResourceSecondsMap".into(), seconds());
    if let Some(status) = r.log_aggregation.filter(|_| r.viewable) {
        o.insert("logAggregationStatus".into(), json!(status.as_str()));
    }
    o.insert("unmanagedApplication".into(), json!(a.unmanaged_am));
    if !deselects.am_node_label_expression && !a.unmanaged_am {
        o.insert("amNodeLabelExpression".into(), json!(""));
    }
    if !deselects.timeouts {
        o.insert(
            "timeouts".into(),
            json!({"timeout": [{
                "type": "LIFETIME",
                "expiryTime": "UNLIMITED",
                "remainingTimeInSeconds": -1,
            }]}),
        );
    }
    Value::Object(o)
}

/// The `/apps` body as it was built before: the views the state gave
/// (full reports), the final status filtered off the owner, a `Value` per
/// application, the list rendered.
fn reference_body(
    views: Vec<AppView>,
    addresses: &WebAddresses,
    ts: i64,
    now: u64,
    q: &AppsQuery,
    format: Format,
) -> String {
    let items = views
        .into_iter()
        .filter(|v| {
            q.final_status
                .is_none_or(|f| v.report.app.final_status == f)
        })
        .map(|mut v| {
            let urls = addresses.app_urls(&v.report);
            v.report.app.tracking_url = if urls.tracking == UNAVAILABLE {
                String::new()
            } else {
                urls.tracking
            };
            reference_app_info(&v, ts, now, q.deselects)
        })
        .collect();
    list_body(format, "apps", "app", items)
}

fn addresses() -> WebAddresses {
    WebAddresses::new("rm:8088".into(), None)
}

fn query(q: &str) -> AppsQuery {
    apps_query(&Params::parse(q).expect("query parses")).expect("query is valid")
}

/// The new body and the reference for `caller` asking `q`.
fn both(s: &TestRm, caller: &Caller, q: &str, format: Format) -> (String, String) {
    let q = query(q);
    // In parts of two, as the handler asks for them in parts.
    let mut entries = Vec::new();
    let mut after = None;
    loop {
        let part = s.app_list(&q.filter, q.final_status, caller, after, 2);
        entries.extend(part.entries);
        match part.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    let new = apps_body(&entries, &addresses(), TS, 5000, q.deselects, format)
        .expect("the body is written");
    let new = String::from_utf8(new).expect("UTF-8");
    let old = reference_body(
        s.app_views(&q.filter, caller),
        &addresses(),
        TS,
        5000,
        &q,
        format,
    );
    (new, old)
}

/// ACLs on, `alice` the administrator, leaf `a` administered by `dave`,
/// leaf `b` by nobody.
fn locked() -> TestRm {
    let queues = capacity_queues(&[
        ("root.queues", "a,b"),
        ("root.a.capacity", "50"),
        ("root.b.capacity", "50"),
        ("root.a.maximum-am-resource-percent", "1.0"),
        ("root.b.maximum-am-resource-percent", "1.0"),
        ("root.acl_submit_applications", " "),
        ("root.acl_administer_queue", " "),
        ("root.a.acl_submit_applications", "*"),
        ("root.b.acl_submit_applications", "*"),
        ("root.a.acl_administer_queue", "dave"),
    ]);
    let settings = Settings {
        acl_enabled: true,
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

fn submit_with(
    s: &mut TestRm,
    queue: &str,
    user: &str,
    ms: u64,
    change: impl FnOnce(&mut Submission),
) -> ApplicationId {
    let id = s.run(ms, NewApplication);
    let mut submission = submission(id, queue, Some(3));
    change(&mut submission);
    let submit = SubmitApplication {
        submission,
        launch: launch_context_from_pb(pb::ContainerLaunchContextProto {
            command: vec!["sleep 1".into()],
            ..Default::default()
        }),
        user: user.into(),
        groups: Vec::new(),
    };
    if let Err(e) = s.run(ms, submit) {
        panic!("submit: {e:?}");
    }
    id
}

#[test]
fn the_typed_list_writes_what_the_value_tree_wrote() {
    let mut s = locked();
    s.add_node("h1", Resource::new(10 * 1024, 10), 0);
    let n2 = s.add_node("h2", Resource::new(20 * 1024, 10), 0);
    for (i, queue) in ["a", "b", "a"].into_iter().enumerate() {
        submit_with(&mut s, queue, "bob", 10 + i as u64, |sub| {
            sub.name = format!("job \"{i}\" <&> \u{1}\t\u{e9}");
            sub.tags = ["x", "Y", "z"].map(String::from).into_iter().collect();
            sub.app_type = "SPARK".into();
        });
    }
    s.heartbeat(&n2, Vec::new(), 20);
    s.run_ams(30);
    // Waiting ones, an unmanaged one, one killed.
    for queue in ["a", "b"] {
        submit_with(&mut s, queue, "carol", 40, |_| {});
    }
    submit_with(&mut s, "a", "erin", 41, |sub| sub.unmanaged_am = true);
    let killed = submit_with(&mut s, "b", "erin", 42, |_| {});
    let kill = KillApplication {
        app: killed,
        user: "erin".into(),
        groups: Vec::new(),
        reason: Some("enough".into()),
        from: None,
    };
    if let Err(e) = s.run(43, kill) {
        panic!("kill: {e:?}");
    }
    let queries = [
        "",
        "deSelects=timeouts,amNodeLabelExpression",
        "finalStatus=KILLED",
        "finalStatus=UNDEFINED&limit=4",
        "states=RUNNING",
        "states=FINISHED",
        "user=carol",
        "queue=a&applicationTags=y",
    ];
    let callers = ["alice", "bob", "carol", "dave", "dr.who"];
    for caller in callers {
        let caller = Caller::user(caller);
        for q in queries {
            for format in [Format::Json, Format::Xml] {
                let (new, old) = both(&s, &caller, q, format);
                assert_eq!(new, old, "{} asking {q:?} in {format:?}", caller.user);
            }
        }
    }
    // The state really showed the cases compared above.
    let (all, _) = both(&s, &Caller::user("alice"), "", Format::Json);
    for shown in [
        "\"state\":\"RUNNING\"",
        "\"state\":\"ACCEPTED\"",
        "\"state\":\"KILLED\"",
        "\"unmanagedApplication\":true",
        "\"amContainerLogs\":\"http://h2:",
        "\"trackingUrl\":\"http://rm:8088/proxy/",
        "\"applicationTags\":\"Y,x,z\"",
    ] {
        assert!(all.contains(shown), "{shown} in {all}");
    }
    let (xml, _) = both(&s, &Caller::user("alice"), "", Format::Xml);
    assert!(
        xml.contains("<name>job &quot;0&quot; &lt;&amp;&gt; \\u0001\t\u{e9}</name>"),
        "{xml}"
    );
    let (hidden, _) = both(&s, &Caller::user("carol"), "queue=a", Format::Json);
    assert!(hidden.contains("\"diagnostics\":\"N/A\""), "{hidden}");
    let (empty, _) = both(&s, &Caller::user("alice"), "states=FINISHED", Format::Json);
    assert_eq!(empty, r#"{"apps":null}"#);
}

/// 10,000 applications in one queue on 10 nodes: about a thousand RUNNING
/// (AM containers on the nodes, tracking URLs), the rest ACCEPTED.
fn ten_thousand_apps() -> TestRm {
    let mut s = state_with(capacity_queues(&[
        ("maximum-applications", "20000"),
        ("root.default.maximum-am-resource-percent", "1.0"),
    ]));
    let nodes: Vec<_> = (0..10)
        .map(|i| s.add_node(&format!("node{i}"), Resource::new(100 * 1024, 100), 0))
        .collect();
    for i in 0..10_000 {
        s.submit_to("default", &format!("user{}", i % 7), None, 1);
    }
    for n in &nodes {
        s.heartbeat(n, Vec::new(), 2);
    }
    s.run_ams(3);
    s
}

fn per_app(total: Duration, reps: u32, apps: usize) -> f64 {
    total.as_secs_f64() * 1e6 / f64::from(reps) / apps as f64
}

#[test]
#[ignore = "a measurement: run with --ignored --nocapture"]
fn apps_list_cost() {
    let s = ten_thousand_apps();
    let caller = Caller::user("dr.who");
    let q = query("");
    let addresses = addresses();
    let running = s
        .overview_totals()
        .apps_by_state
        .iter()
        .find(|(state, _)| *state == AppState::Running)
        .map_or(0, |(_, n)| *n);
    let reps = 5;
    // [before, after] × [owner, JSON body, XML body]
    let mut took = [[Duration::ZERO; 3]; 2];
    let mut sizes = [[0; 2]; 2];
    let mut apps = [0; 2];
    for _ in 0..reps {
        let started = Instant::now();
        let views = s.app_views(&q.filter, &caller);
        took[0][0] += started.elapsed();
        apps[0] = views.len();
        for (i, format) in [Format::Json, Format::Xml].into_iter().enumerate() {
            let views = views.clone();
            let started = Instant::now();
            let body = reference_body(views, &addresses, TS, 5000, &q, format);
            took[0][1 + i] += started.elapsed();
            sizes[0][i] = body.len();
        }

        let started = Instant::now();
        let mut entries = Vec::new();
        let mut after = None;
        loop {
            let part = s.app_list(&q.filter, q.final_status, &caller, after, 1000);
            entries.extend(part.entries);
            match part.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        took[1][0] += started.elapsed();
        apps[1] = entries.len();
        for (i, format) in [Format::Json, Format::Xml].into_iter().enumerate() {
            let started = Instant::now();
            let body = apps_body(&entries, &addresses, TS, 5000, q.deselects, format)
                .expect("the body is written");
            took[1][1 + i] += started.elapsed();
            sizes[1][i] = body.len();
        }
    }
    assert_eq!(apps, [10_000; 2]);
    assert_eq!(sizes[0], sizes[1]);
    for (name, took, sizes) in [("before", took[0], sizes[0]), ("after", took[1], sizes[1])] {
        println!(
            "{name}: /apps of 10000 applications ({running} running), per application: \
             owner query {:.2} µs, JSON body {:.2} µs ({} bytes), XML body {:.2} µs ({} bytes)",
            per_app(took[0], reps, 10_000),
            per_app(took[1], reps, 10_000),
            sizes[0],
            per_app(took[2], reps, 10_000),
            sizes[1],
        );
    }
}
