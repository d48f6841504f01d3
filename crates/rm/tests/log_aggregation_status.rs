//! Log aggregation status through a real RM's ports: a stand-in NodeManager
//! reports where it is with an application's logs in its heartbeats, and
//! the application's report (`getApplicationReport`, as YarnClient calls
//! it; and the real Hadoop 3.3.4 `yarn application -status`) shows the
//! status Hadoop's RM computes from them.

use std::time::{Duration, Instant};

use hadoop_protos::yarn as pb;
use spindle_common::ids::ApplicationId;
use spindle_common::proto::app_id_to_pb;
use spindle_ipc::methods::application_master::FINISH_APPLICATION_MASTER;
use spindle_ipc::methods::resource_tracker::NODE_HEARTBEAT;
use spindle_ipc::IpcClient;
use spindle_rm::ResourceManager;

mod common;
use common::{allocate, client_as, registered_unmanaged_am, report, start_rm, FakeNm};

use pb::LogAggregationStatusProto as Status;

/// The status the application's report carries.
async fn status(client: &IpcClient, app: ApplicationId) -> Option<Status> {
    report(client, app)
        .await
        .log_aggregation_status
        .and_then(|v| Status::try_from(v).ok())
}

/// A heartbeat of `nm` carrying `reports` (application, status, message).
async fn heartbeat_reporting(nm: &mut FakeNm, reports: &[(ApplicationId, Status, &str)]) {
    let resp: pb::NodeHeartbeatResponseProto = nm
        .client
        .call_method(
            &NODE_HEARTBEAT,
            &pb::NodeHeartbeatRequestProto {
                node_status: Some(pb::NodeStatusProto {
                    node_id: Some(nm.node.clone()),
                    response_id: Some(nm.response_id),
                    node_health_status: Some(pb::NodeHealthStatusProto {
                        is_node_healthy: Some(true),
                        health_report: Some(String::new()),
                        last_health_report_time: Some(0),
                    }),
                    ..Default::default()
                }),
                log_aggregation_reports_for_apps: reports
                    .iter()
                    .map(|(app, status, diag)| pb::LogAggregationReportProto {
                        application_id: Some(app_id_to_pb(app)),
                        log_aggregation_status: Some(*status as i32),
                        diagnostics: Some((*diag).into()),
                    })
                    .collect(),
                ..Default::default()
            },
        )
        .await
        .expect("heartbeat");
    assert_eq!(resp.node_action, Some(pb::NodeActionProto::Normal as i32));
    nm.response_id = resp.response_id.unwrap_or(0);
}

/// An unmanaged application of alice's that ran one container on `nm` and
/// whose AM has unregistered (so it has ended).
async fn ended_app_on(rm: &ResourceManager, alice: &IpcClient, nm: &mut FakeNm) -> ApplicationId {
    let (app, am) = registered_unmanaged_am(rm, alice).await;
    let ask = vec![pb::ResourceRequestProto {
        priority: Some(pb::PriorityProto { priority: Some(1) }),
        resource_name: Some("*".into()),
        capability: Some(pb::ResourceProto {
            memory: Some(1024),
            virtual_cores: Some(1),
            resource_value_map: Vec::new(),
        }),
        num_containers: Some(1),
        relax_locality: Some(true),
        ..Default::default()
    }];
    let mut response_id = 0;
    let mut granted = allocate(&am, &mut response_id, ask).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while granted.allocated_containers.is_empty() {
        assert!(Instant::now() < deadline, "no container was granted");
        nm.heartbeat().await;
        granted = allocate(&am, &mut response_id, Vec::new()).await;
    }
    assert_eq!(
        granted.allocated_containers[0].node_id.as_ref(),
        Some(&nm.node)
    );
    assert_eq!(status(alice, app).await, Some(Status::LogNotStart));
    let done: pb::FinishApplicationMasterResponseProto = am
        .call_method(
            &FINISH_APPLICATION_MASTER,
            &pb::FinishApplicationMasterRequestProto {
                diagnostics: Some(String::new()),
                tracking_url: Some(String::new()),
                final_application_status: Some(
                    pb::FinalApplicationStatusProto::AppSucceeded as i32,
                ),
            },
        )
        .await
        .expect("finish");
    assert_eq!(done.is_unregistered, Some(true));
    app
}

/// Writes a `yarn-site.xml` pointing a Hadoop client at `rm` into `dir`.
fn client_conf(rm: &ResourceManager, dir: &std::path::Path) {
    let xml = format!(
        "<?xml version=\"1.0\"?>\n<configuration>\n  <property><name>yarn.resourcemanager.address</name><value>{}</value></property>\n</configuration>\n",
        rm.addresses().client
    );
    std::fs::write(dir.join("yarn-site.xml"), xml).expect("write yarn-site.xml");
}

#[tokio::test]
async fn the_report_follows_the_nodes_reports_to_succeeded() {
    tokio::time::timeout(Duration::from_secs(300), async {
        let rm = start_rm(&[("yarn.log-aggregation-enable", "true")]).await;
        let alice = client_as(&rm, "alice").await;
        let mut nm = FakeNm::register(rm.addresses().resource_tracker, "nm1", 8192).await;
        let app = ended_app_on(&rm, &alice, &mut nm).await;
        assert_eq!(status(&alice, app).await, Some(Status::LogNotStart));

        heartbeat_reporting(&mut nm, &[(app, Status::LogRunning, "")]).await;
        assert_eq!(status(&alice, app).await, Some(Status::LogRunning));
        heartbeat_reporting(
            &mut nm,
            &[(app, Status::LogRunningWithFailure, "stderr not uploaded")],
        )
        .await;
        assert_eq!(
            status(&alice, app).await,
            Some(Status::LogRunningWithFailure)
        );
        heartbeat_reporting(&mut nm, &[(app, Status::LogSucceeded, "")]).await;
        assert_eq!(status(&alice, app).await, Some(Status::LogSucceeded));
        // Final: a later report changes nothing.
        heartbeat_reporting(&mut nm, &[(app, Status::LogFailed, "late")]).await;
        assert_eq!(status(&alice, app).await, Some(Status::LogSucceeded));

        // Hadoop's own CLI prints it.
        let Some(clients) = spindle_integration::HadoopClients::for_tests() else {
            return;
        };
        let dir = tempfile::tempdir().expect("temp dir");
        client_conf(&rm, dir.path());
        let yarn = clients
            .yarn()
            .conf_dir(dir.path())
            .env("HADOOP_USER_NAME", "alice");
        let id = app.to_string();
        let out = tokio::task::spawn_blocking(move || yarn.run(["application", "-status", &id]))
            .await
            .expect("the CLI thread")
            .expect("the CLI runs");
        assert_eq!(out.status, Some(0), "{out:?}");
        assert!(
            out.stdout.contains("Log Aggregation Status : SUCCEEDED"),
            "{}",
            out.stdout
        );
    })
    .await
    .expect("test timed out");
}

#[tokio::test]
async fn a_node_that_never_finishes_times_the_application_out() {
    tokio::time::timeout(Duration::from_secs(120), async {
        let rm = start_rm(&[
            ("yarn.log-aggregation-enable", "true"),
            ("yarn.log-aggregation-status.time-out.ms", "500"),
        ])
        .await;
        let alice = client_as(&rm, "alice").await;
        let mut nm = FakeNm::register(rm.addresses().resource_tracker, "nm1", 8192).await;
        let app = ended_app_on(&rm, &alice, &mut nm).await;
        heartbeat_reporting(&mut nm, &[(app, Status::LogRunning, "uploading")]).await;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match status(&alice, app).await {
                Some(Status::LogTimeOut) => break,
                Some(Status::LogRunning) => {}
                other => panic!("unexpected status {other:?}"),
            }
            assert!(Instant::now() < deadline, "never timed out");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // Final: the node's late success changes nothing.
        heartbeat_reporting(&mut nm, &[(app, Status::LogSucceeded, "")]).await;
        assert_eq!(status(&alice, app).await, Some(Status::LogTimeOut));
    })
    .await
    .expect("test timed out");
}

#[tokio::test]
async fn without_log_aggregation_the_status_is_disabled() {
    tokio::time::timeout(Duration::from_secs(60), async {
        let rm = start_rm(&[]).await;
        let alice = client_as(&rm, "alice").await;
        let mut nm = FakeNm::register(rm.addresses().resource_tracker, "nm1", 8192).await;
        let (app, _am) = registered_unmanaged_am(&rm, &alice).await;
        assert_eq!(status(&alice, app).await, Some(Status::LogDisabled));
        heartbeat_reporting(&mut nm, &[(app, Status::LogSucceeded, "")]).await;
        assert_eq!(status(&alice, app).await, Some(Status::LogDisabled));
    })
    .await
    .expect("test timed out");
}
