//! The DAO conversions, the reply shapes and the id parsing of the REST
//! resources.

use std::collections::BTreeSet;

use axum::body::to_bytes;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use serde_json::{json, Value};
use spindle_common::ids::{ApplicationAttemptId, ApplicationId, ContainerId, NodeId};
use spindle_common::resource::Resource;
use spindle_common::states::{AppState, FinalStatus};

use super::apps::attempt_ids;
use super::dao::{self, DeSelects};
use super::*;
use crate::cluster::nodes::NodeState;
use crate::model::apps::App;
use crate::model::launch::AppAcls;
use crate::model::reports::{
    AmContainer, AppReport, AppView, ClusterMetrics, ClusterUsage, NodeReport,
};

fn app(state: AppState) -> App {
    App {
        id: ApplicationId::new(7, 3),
        user: "alice".into(),
        name: "sleeper".into(),
        queue: "default".into(),
        app_type: "YARN".into(),
        tags: ["b".to_string(), "a".to_string()].into_iter().collect(),
        priority: 2,
        am_resource: Resource::new(512, 1),
        max_attempts: 2,
        unmanaged_am: false,
        keep_containers: false,
        acls: AppAcls::new(),
        state,
        final_status: FinalStatus::Undefined,
        diagnostics: String::new(),
        submit_ms: 1000,
        start_ms: 1000,
        launch_ms: 1500,
        finish_ms: 0,
        progress: 0.0,
        am_host: "h1".into(),
        am_rpc_port: 4000,
        tracking_url: "h1:4040/ui".into(),
        lifetime: None,
    }
}

fn view(state: AppState, viewable: bool) -> AppView {
    let am = AmContainer {
        id: ContainerId::new(ApplicationAttemptId::new(ApplicationId::new(7, 3), 1), 1),
        node: NodeId::new("h1", 4545),
        node_http_address: Some("h1:8042".into()),
    };
    AppView {
        report: AppReport {
            app: app(state),
            current_attempt: None,
            lifetime_remaining_s: -1,
            progress: 0.5,
            used_containers: 2,
            used: Resource::new(2048, 2),
            cluster_capability: Resource::new(8192, 8),
            amrm_token: None,
            viewable,
            am_tracking: None,
            log_aggregation: None,
        },
        am: viewable.then_some(am),
    }
}

#[test]
fn app_info_has_hadoops_fields_and_values() {
    let a = dao::app_info(
        &view(AppState::Running, true),
        7,
        3000,
        DeSelects::default(),
    );
    let want = [
        ("id", json!("application_7_0003")),
        ("state", json!("RUNNING")),
        ("finalStatus", json!("UNDEFINED")),
        ("progress", json!(50.0)),
        ("trackingUI", json!("ApplicationMaster")),
        ("trackingUrl", json!("http://h1:4040/ui")),
        ("clusterId", json!(7)),
        ("applicationTags", json!("a,b")),
        ("priority", json!(2)),
        ("startedTime", json!(1000)),
        ("launchTime", json!(1500)),
        ("finishedTime", json!(0)),
        ("elapsedTime", json!(2000)),
        (
            "amContainerLogs",
            json!("http://h1:8042/node/containerlogs/container_7_0003_01_000001/alice"),
        ),
        ("amHostHttpAddress", json!("h1:8042")),
        ("amRPCAddress", json!("h1:4000")),
        ("masterNodeId", json!("h1:4545")),
        ("allocatedMB", json!(2048)),
        ("allocatedVCores", json!(2)),
        ("runningContainers", json!(2)),
        ("clusterUsagePercentage", json!(25.0)),
        ("unmanagedApplication", json!(false)),
    ];
    for (k, v) in want {
        assert_eq!(a[k], v, "{k} in {a}");
    }
    assert!(a.get("timeouts").is_some());
    let d = DeSelects {
        timeouts: true,
        ..DeSelects::default()
    };
    let a = dao::app_info(&view(AppState::Running, true), 7, 3000, d);
    assert!(a.get("timeouts").is_none());
}

#[test]
fn app_info_tracking_ui_follows_the_state() {
    let cases = [
        (AppState::Accepted, 0, "UNASSIGNED", false),
        (AppState::Running, 0, "ApplicationMaster", true),
        (AppState::Finished, 9000, "History", true),
    ];
    for (state, finish, ui, has_url) in cases {
        let mut v = view(state, true);
        v.report.app.finish_ms = finish;
        let a = dao::app_info(&v, 7, 10_000, DeSelects::default());
        assert_eq!(a["trackingUI"], json!(ui), "{state}");
        assert_eq!(a.get("trackingUrl").is_some(), has_url, "{state}");
    }
    let mut v = view(AppState::Finished, true);
    v.report.app.finish_ms = 4000;
    let a = dao::app_info(&v, 7, 99_999, DeSelects::default());
    assert_eq!(a["elapsedTime"], json!(3000));
}

#[test]
fn app_info_without_view_access_hides_what_hadoop_hides() {
    let a = dao::app_info(
        &view(AppState::Running, false),
        7,
        3000,
        DeSelects::default(),
    );
    for k in [
        "startedTime",
        "finishedTime",
        "elapsedTime",
        "allocatedMB",
        "runningContainers",
    ] {
        assert_eq!(a[k], json!(0), "{k}");
    }
    for k in [
        "amContainerLogs",
        "amHostHttpAddress",
        "amRPCAddress",
        "masterNodeId",
    ] {
        assert!(a.get(k).is_none(), "{k} shown: {a}");
    }
    assert_eq!(a["user"], json!("alice"));
    assert_eq!(a["state"], json!("RUNNING"));
}

fn node(state: NodeState) -> NodeReport {
    NodeReport {
        id: NodeId::new("h2", 45454),
        http_address: "h2:8042".into(),
        rack: "/default-rack".into(),
        used: Resource::new(1024, 1),
        capability: Resource::new(4096, 4),
        num_containers: 1,
        state,
        health_report: "".into(),
        last_health_report_ms: 55,
        version: "3.3.4".into(),
    }
}

#[test]
fn node_info_shapes() {
    let n = dao::node_info(&node(NodeState::Running));
    assert_eq!(n["id"], json!("h2:45454"));
    assert_eq!(n["nodeHostName"], json!("h2"));
    assert_eq!(n["nodeHTTPAddress"], json!("h2:8042"));
    assert_eq!(n["state"], json!("RUNNING"));
    assert_eq!(n["availMemoryMB"], json!(3072));
    assert_eq!(n["availableVirtualCores"], json!(3));
    assert_eq!(n["usedResource"], json!({"memory": 1024, "vCores": 1}));
    for s in [
        NodeState::Lost,
        NodeState::Decommissioned,
        NodeState::Rebooted,
    ] {
        assert_eq!(
            dao::node_info(&node(s))["nodeHTTPAddress"],
            json!(""),
            "{s:?}"
        );
    }
}

#[test]
fn cluster_metrics_totals() {
    let u = ClusterUsage {
        apps_submitted: 4,
        apps_running: 1,
        capability: Resource::new(8192, 8),
        used: Resource::new(2048, 3),
        containers: 3,
        nodes: ClusterMetrics {
            active: 2,
            lost: 1,
            ..ClusterMetrics::default()
        },
        ..ClusterUsage::default()
    };
    let m = dao::cluster_metrics(&u, true);
    assert_eq!(m["totalMB"], json!(8192));
    assert_eq!(m["availableMB"], json!(6144));
    assert_eq!(m["allocatedVirtualCores"], json!(3));
    assert_eq!(m["totalNodes"], json!(3));
    assert_eq!(m["containersAllocated"], json!(3));
    assert!(m.get("totalUsedResourcesAcrossPartition").is_some());
    assert!(dao::cluster_metrics(&u, false)
        .get("totalUsedResourcesAcrossPartition")
        .is_none());
}

#[test]
fn statistics_count_per_state_and_type() {
    let apps = vec![
        (AppState::Running, "YARN".to_string()),
        (AppState::Running, "SPARK".to_string()),
        (AppState::Finished, "yarn".to_string()),
    ];
    let states: BTreeSet<AppState> = [AppState::Running, AppState::Finished].into();
    let any = statistics_items(&states, None, &apps);
    assert_eq!(
        any,
        vec![
            json!({"state": "RUNNING", "type": "*", "count": 2}),
            json!({"state": "FINISHED", "type": "*", "count": 1}),
        ]
    );
    let yarn = statistics_items(&states, Some("yarn"), &apps);
    assert_eq!(yarn[0]["count"], json!(1));
    assert_eq!(yarn[1]["count"], json!(1));
}

#[test]
fn ids_are_parsed_with_hadoops_messages() {
    assert_eq!(
        parse_app_id("application_7_0003").expect("valid"),
        ApplicationId::new(7, 3)
    );
    let cases: &[(&str, &str)] = &[
        (
            "app_1",
            "java.lang.IllegalArgumentException: Invalid ApplicationId prefix: app_1. \
             The valid ApplicationId should start with prefix application",
        ),
        (
            "application_x_1",
            "java.lang.IllegalArgumentException: Invalid ApplicationId: application_x_1",
        ),
        (
            "application_1_99999999999999",
            "java.lang.IllegalArgumentException: Invalid ApplicationId: application_1_99999999999999",
        ),
    ];
    for (raw, msg) in cases {
        let e = parse_app_id(raw).expect_err(raw);
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
        assert_eq!(e.exception(), "BadRequestException");
        assert_eq!(e.message, *msg);
    }
    let e = parse_attempt_id("attempt_1").expect_err("prefix");
    assert_eq!(e.exception(), "IllegalArgumentException");
    assert_eq!(e.message, "Invalid AppAttemptId prefix: attempt_1");
    assert_eq!(
        parse_container_id("container_x").expect_err("bad").message,
        "Invalid ContainerId: container_x"
    );
    assert_eq!(
        parse_node_id("nohost").expect_err("bad").message,
        "Invalid NodeId [nohost]. Expected host:port"
    );
    assert!(attempt_ids("application_7_0003", "appattempt_7_0004_000001").is_err());
    assert!(attempt_ids("application_7_0003", "appattempt_7_0003_000001").is_ok());
}

fn xml() -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(header::ACCEPT, HeaderValue::from_static("application/xml"));
    h
}

async fn body(r: Response) -> String {
    let bytes = to_bytes(r.into_body(), 1 << 20).await.expect("body");
    String::from_utf8(bytes.to_vec()).expect("utf-8")
}

#[tokio::test]
async fn lists_are_null_when_empty_and_repeat_in_xml() {
    let empty = body(list_reply(&HeaderMap::new(), "apps", "app", vec![])).await;
    assert_eq!(
        serde_json::from_str::<Value>(&empty).expect("json"),
        json!({"apps": null})
    );
    assert!(body(list_reply(&xml(), "apps", "app", vec![]))
        .await
        .ends_with("<apps></apps>"));
    let two = vec![json!({"id": "a"}), json!({"id": "b"})];
    assert!(body(list_reply(&xml(), "apps", "app", two))
        .await
        .ends_with("<apps><app><id>a</id></app><app><id>b</id></app></apps>"));
}

#[tokio::test]
async fn app_state_is_unwrapped_in_json_only() {
    let j = body(unwrapped_reply(
        &HeaderMap::new(),
        "appstate",
        json!({"state": "RUNNING"}),
    ))
    .await;
    assert_eq!(j, r#"{"state":"RUNNING"}"#);
    let x = body(unwrapped_reply(
        &xml(),
        "appstate",
        json!({"state": "RUNNING"}),
    ))
    .await;
    assert!(
        x.ends_with("<appstate><state>RUNNING</state></appstate>"),
        "{x}"
    );
}
