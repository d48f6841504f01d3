//! Application priorities over real IPC against an in-process RM (capacity
//! scheduler, Hadoop's default queue): the submitted priority is capped at
//! `yarn.cluster.max-application-priority`, and `updateApplicationPriority`
//! (what `yarn application -appId X -updatePriority N` calls) answers the
//! effective priority, which the application report then shows.

use hadoop_protos::yarn as pb;
use spindle_common::conf::Configuration;
use spindle_common::ids::ApplicationId;
use spindle_ipc::methods::application_client::UPDATE_APPLICATION_PRIORITY;
use spindle_ipc::methods::resource_manager_administration::REFRESH_CLUSTER_MAX_PRIORITY;
use spindle_ipc::{protocols, ClientOptions, IpcClient};
use spindle_rm::ResourceManager;

mod common;
use common::{report, submit, write_yarn_site};
use spindle_common::proto::app_id_to_pb;

async fn start_rm(max_priority: &str) -> ResourceManager {
    let mut conf = Configuration::with_defaults();
    for key in [
        "yarn.resourcemanager.address",
        "yarn.resourcemanager.scheduler.address",
        "yarn.resourcemanager.resource-tracker.address",
        "yarn.resourcemanager.admin.address",
        "yarn.resourcemanager.webapp.address",
    ] {
        conf.set(key, "127.0.0.1:0");
    }
    conf.set("yarn.cluster.max-application-priority", max_priority);
    ResourceManager::start(&conf, None)
        .await
        .expect("RM starts")
}

async fn update(
    client: &IpcClient,
    id: ApplicationId,
    priority: i32,
) -> Result<pb::UpdateApplicationPriorityResponseProto, spindle_ipc::IpcError> {
    client
        .call_method(
            &UPDATE_APPLICATION_PRIORITY,
            &pb::UpdateApplicationPriorityRequestProto {
                application_id: app_id_to_pb(&id),
                application_priority: pb::PriorityProto {
                    priority: Some(priority),
                },
            },
        )
        .await
}

async fn reported_priority(client: &IpcClient, id: ApplicationId) -> Option<i32> {
    report(client, id).await.priority?.priority
}

#[tokio::test]
async fn update_application_priority_answers_the_effective_priority() {
    let rm = start_rm("10").await;
    let client = IpcClient::connect(
        &rm.addresses().client.to_string(),
        ClientOptions::new("alice", protocols::APPLICATION_CLIENT),
    )
    .await
    .expect("client connection");
    // No NodeManager: the application stays ACCEPTED.
    let id = submit(&client, false).await;
    assert_eq!(reported_priority(&client, id).await, Some(0));

    let resp = update(&client, id, 4).await.expect("update to 4");
    assert_eq!(resp.application_priority.and_then(|p| p.priority), Some(4));
    assert_eq!(reported_priority(&client, id).await, Some(4));

    // Above the cluster maximum: lowered to it.
    let resp = update(&client, id, 50).await.expect("update to 50");
    assert_eq!(resp.application_priority.and_then(|p| p.priority), Some(10));
    assert_eq!(reported_priority(&client, id).await, Some(10));

    let missing = ApplicationId::new(id.cluster_timestamp, 999);
    let err = update(&client, missing, 1).await.expect_err("unknown app");
    assert_eq!(
        err.remote_class(),
        Some("org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException"),
        "{err}"
    );
}

/// `yarn rmadmin -refreshClusterMaxPriority` re-reads
/// `yarn.cluster.max-application-priority` from yarn-site.xml and applies it
/// to later submissions and priority updates (as Hadoop's
/// `setClusterMaxPriority`); a value that is not an int is refused and the
/// old maximum stays.
#[tokio::test]
async fn refresh_cluster_max_priority_applies_the_new_maximum() {
    let dir = tempfile::tempdir().expect("temp dir");
    write_yarn_site(
        dir.path(),
        &[("yarn.cluster.max-application-priority", "2")],
    );
    let conf = Configuration::load(Some(dir.path())).expect("configuration");
    let rm = ResourceManager::start(&conf, Some(dir.path().to_path_buf()))
        .await
        .expect("RM starts");
    let client = IpcClient::connect(
        &rm.addresses().client.to_string(),
        ClientOptions::new("alice", protocols::APPLICATION_CLIENT),
    )
    .await
    .expect("client connection");
    let admin = IpcClient::connect(
        &rm.addresses().admin.to_string(),
        ClientOptions::new("alice", protocols::RESOURCE_MANAGER_ADMINISTRATION),
    )
    .await
    .expect("admin connection");
    let refresh = || async {
        admin
            .call_method(
                &REFRESH_CLUSTER_MAX_PRIORITY,
                &pb::RefreshClusterMaxPriorityRequestProto::default(),
            )
            .await
    };
    let id = submit(&client, false).await;
    let effective = |resp: pb::UpdateApplicationPriorityResponseProto| {
        resp.application_priority.and_then(|p| p.priority)
    };
    assert_eq!(
        update(&client, id, 7).await.map(effective).ok(),
        Some(Some(2))
    );

    write_yarn_site(
        dir.path(),
        &[("yarn.cluster.max-application-priority", "10")],
    );
    refresh().await.expect("refreshClusterMaxPriority");
    assert_eq!(
        update(&client, id, 7).await.map(effective).ok(),
        Some(Some(7))
    );
    assert_eq!(reported_priority(&client, id).await, Some(7));
    assert_eq!(
        update(&client, id, 50).await.map(effective).ok(),
        Some(Some(10))
    );

    write_yarn_site(
        dir.path(),
        &[("yarn.cluster.max-application-priority", "lots")],
    );
    let err = refresh().await.expect_err("a bad value is refused");
    assert!(
        err.to_string()
            .contains("yarn.cluster.max-application-priority"),
        "{err}"
    );
    assert_eq!(
        update(&client, id, 50).await.map(effective).ok(),
        Some(Some(10))
    );
}
