//! Application priorities over real IPC against an in-process RM (capacity
//! scheduler, Hadoop's default queue): the submitted priority is capped at
//! `yarn.cluster.max-application-priority`, and `updateApplicationPriority`
//! (what `yarn application -appId X -updatePriority N` calls) answers the
//! effective priority, which the application report then shows.

use hadoop_protos::yarn as pb;
use spindle_common::conf::Configuration;
use spindle_common::ids::ApplicationId;
use spindle_ipc::{protocols, ClientOptions, IpcClient};
use spindle_rm::ResourceManager;

mod common;
use common::{report, submit};
use spindle_common::proto::app_id_to_pb;

async fn start_rm(max_priority: &str) -> ResourceManager {
    let mut conf = Configuration::with_defaults();
    for key in [
        "yarn.resourcemanager.address",
        "yarn.resourcemanager.scheduler.address",
        "yarn.resourcemanager.resource-tracker.address",
        "yarn.resourcemanager.admin.address",
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
        .call(
            "updateApplicationPriority",
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
