//! Decommissioning through the real handlers, against an in-process RM: a node
//! taken out by `refreshNodes` (at once, or gracefully once its timeout has
//! passed on the RM's tick) leaves the scheduler too, so nothing is placed on
//! it and what ran there completes.

use std::path::Path;
use std::time::{Duration, Instant};

use hadoop_protos::yarn as pb;
use spindle_common::conf::Configuration;
use spindle_common::ids::ApplicationId;
use spindle_common::proto::app_id_to_pb;
use spindle_ipc::methods::application_client::{GET_APPLICATION_ATTEMPTS, GET_CLUSTER_NODES};
use spindle_ipc::methods::resource_manager_administration::REFRESH_NODES;
use spindle_ipc::{protocols, ClientOptions, IpcClient};
use spindle_rm::ResourceManager;

mod common;
use common::{allocate, registered_unmanaged_am, report, submit, write_yarn_site, FakeNm};

/// An RM whose configuration directory names `exclude` as its exclude list.
async fn start_rm(dir: &Path, exclude: &Path) -> ResourceManager {
    write_yarn_site(
        dir,
        &[(
            "yarn.resourcemanager.nodes.exclude-path",
            exclude.to_str().expect("utf-8 path"),
        )],
    );
    let conf = Configuration::load(Some(dir)).expect("configuration");
    ResourceManager::start(&conf, Some(dir.to_path_buf()))
        .await
        .expect("RM starts")
}

async fn connect(rm: &ResourceManager, protocol: &str) -> IpcClient {
    let addr = match protocol {
        protocols::RESOURCE_MANAGER_ADMINISTRATION => rm.addresses().admin,
        _ => rm.addresses().client,
    };
    IpcClient::connect(&addr.to_string(), ClientOptions::new("alice", protocol))
        .await
        .expect("connection")
}

/// `yarn rmadmin -refreshNodes [-g timeout]`.
async fn refresh_nodes(admin: &IpcClient, graceful_timeout_s: Option<i32>) {
    let req = pb::RefreshNodesRequestProto {
        decommission_type: Some(match graceful_timeout_s {
            Some(_) => pb::DecommissionTypeProto::Graceful,
            None => pb::DecommissionTypeProto::Normal,
        } as i32),
        decommission_timeout: graceful_timeout_s,
        sub_cluster_id: None,
    };
    let _: pb::RefreshNodesResponseProto = admin
        .call_method(&REFRESH_NODES, &req)
        .await
        .expect("refreshNodes");
}

async fn node_state(client: &IpcClient, host: &str) -> Option<pb::NodeStateProto> {
    let resp: pb::GetClusterNodesResponseProto = client
        .call_method(
            &GET_CLUSTER_NODES,
            &pb::GetClusterNodesRequestProto::default(),
        )
        .await
        .expect("nodes");
    resp.node_reports
        .iter()
        .find(|n| n.node_id.as_ref().and_then(|i| i.host.as_deref()) == Some(host))
        .and_then(|n| n.node_state)
        .and_then(|v| pb::NodeStateProto::try_from(v).ok())
}

async fn attempts(
    client: &IpcClient,
    app: ApplicationId,
) -> Vec<pb::ApplicationAttemptReportProto> {
    let resp: pb::GetApplicationAttemptsResponseProto = client
        .call_method(
            &GET_APPLICATION_ATTEMPTS,
            &pb::GetApplicationAttemptsRequestProto {
                application_id: Some(app_id_to_pb(&app)),
            },
        )
        .await
        .expect("attempts");
    resp.application_attempts
}

/// A node excluded by `refreshNodes` is DECOMMISSIONED and gets nothing:
/// an application submitted afterwards waits for its AM container (its
/// attempt stays SCHEDULED) until another node joins, which gets it.
#[tokio::test]
async fn a_node_excluded_by_refresh_nodes_gets_no_containers() {
    tokio::time::timeout(Duration::from_secs(60), async {
        let dir = tempfile::tempdir().expect("temp dir");
        let exclude = dir.path().join("exclude");
        std::fs::write(&exclude, "").expect("write exclude list");
        let rm = start_rm(dir.path(), &exclude).await;
        let client = connect(&rm, protocols::APPLICATION_CLIENT).await;
        let admin = connect(&rm, protocols::RESOURCE_MANAGER_ADMINISTRATION).await;

        let mut excluded =
            FakeNm::register(rm.addresses().resource_tracker, "nm-excluded", 16384).await;
        excluded.heartbeat().await;
        assert_eq!(
            node_state(&client, "nm-excluded").await,
            Some(pb::NodeStateProto::NsRunning)
        );

        std::fs::write(&exclude, "nm-excluded\n").expect("write exclude list");
        refresh_nodes(&admin, None).await;
        assert_eq!(
            node_state(&client, "nm-excluded").await,
            Some(pb::NodeStateProto::NsDecommissioned)
        );

        // The only node is out: the AM container has nowhere to go. (The
        // excluded node has not heartbeated since: nothing but the refresh
        // itself took it out of the scheduler.)
        let app = submit(&client, false).await;
        let first = attempts(&client, app).await;
        assert_eq!(first.len(), 1, "{first:?}");
        assert_eq!(
            first[0].yarn_application_attempt_state,
            Some(pb::YarnApplicationAttemptStateProto::AppAttemptScheduled as i32),
            "the AM container went to the decommissioned node: {first:?}"
        );
        assert_eq!(first[0].am_container_id, None, "{first:?}");
        let answer = excluded.heartbeat().await;
        assert_eq!(
            answer.node_action,
            Some(pb::NodeActionProto::Shutdown as i32)
        );

        // A node that may join gets the AM container.
        let mut good = FakeNm::register(rm.addresses().resource_tracker, "nm-good", 16384).await;
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            good.heartbeat().await;
            let now = attempts(&client, app).await;
            if now.iter().any(|a| a.am_container_id.is_some()) {
                break;
            }
            assert!(Instant::now() < deadline, "no AM container: {now:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("test timed out");
}

/// A graceful decommission whose timeout passes while the node still runs a
/// container ends on the RM's tick: the node is DECOMMISSIONED, leaves the
/// scheduler, and the container it ran completes for its application (the
/// AM hears of it and the application no longer holds it).
#[tokio::test]
async fn a_graceful_decommission_that_times_out_leaves_the_scheduler() {
    tokio::time::timeout(Duration::from_secs(60), async {
        let dir = tempfile::tempdir().expect("temp dir");
        let exclude = dir.path().join("exclude");
        std::fs::write(&exclude, "").expect("write exclude list");
        let rm = start_rm(dir.path(), &exclude).await;
        let client = connect(&rm, protocols::APPLICATION_CLIENT).await;
        let admin = connect(&rm, protocols::RESOURCE_MANAGER_ADMINISTRATION).await;
        let mut nm = FakeNm::register(rm.addresses().resource_tracker, "nm-draining", 16384).await;
        nm.heartbeat().await;

        // An unmanaged AM gets one container on the node, which runs it.
        let (app, am) = registered_unmanaged_am(&rm, &client).await;
        let mut response_id = 0;
        let mut ask = vec![pb::ResourceRequestProto {
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
        let deadline = Instant::now() + Duration::from_secs(20);
        let container = loop {
            nm.heartbeat().await;
            let resp = allocate(&am, &mut response_id, std::mem::take(&mut ask)).await;
            if let Some(c) = resp.allocated_containers.first() {
                break c.id.expect("container id");
            }
            assert!(Instant::now() < deadline, "no container granted");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        nm.heartbeat_with(&[container]).await;
        let usage = |r: pb::ApplicationReportProto| {
            r.app_resource_usage
                .and_then(|u| u.num_used_containers)
                .unwrap_or(-1)
        };
        assert_eq!(usage(report(&client, app).await), 1);

        // Decommission gracefully with a 2 s timeout. The node still runs the
        // container, so its heartbeats keep it DECOMMISSIONING; then it goes
        // quiet, and its timeout passes on the RM's tick.
        std::fs::write(&exclude, "nm-draining\n").expect("write exclude list");
        refresh_nodes(&admin, Some(2)).await;
        let answer = nm.heartbeat_with(&[container]).await;
        assert_eq!(answer.node_action, Some(pb::NodeActionProto::Normal as i32));
        assert_eq!(
            node_state(&client, "nm-draining").await,
            Some(pb::NodeStateProto::NsDecommissioning)
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        while node_state(&client, "nm-draining").await != Some(pb::NodeStateProto::NsDecommissioned)
        {
            assert!(Instant::now() < deadline, "never decommissioned");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }

        // The node is gone from the scheduler: its container completes for
        // the AM, and the application holds nothing any more.
        let deadline = Instant::now() + Duration::from_secs(10);
        let completed = loop {
            let resp = allocate(&am, &mut response_id, Vec::new()).await;
            if let Some(done) = resp.completed_container_statuses.first() {
                break done.clone();
            }
            assert!(
                Instant::now() < deadline,
                "the container on the decommissioned node never completed"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert_eq!(completed.container_id, Some(container));
        assert_eq!(usage(report(&client, app).await), 0);
    })
    .await
    .expect("test timed out");
}
