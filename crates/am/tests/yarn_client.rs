//! `YarnClient` against Spindle's ResourceManager, in process, without
//! NodeManagers: applications are accepted and wait for an AM container.

use std::time::Duration;

use spindle_am::{AppState, ApplicationSubmission, FinalStatus, LaunchContext, YarnClient};
use spindle_common::conf::{keys, Configuration};
use spindle_common::{ApplicationId, Resource};
use spindle_ipc::class;
use spindle_rm::ResourceManager;

async fn start_rm() -> (ResourceManager, Configuration) {
    let mut conf = Configuration::with_defaults();
    for key in [
        keys::RM_ADDRESS,
        keys::RM_SCHEDULER_ADDRESS,
        keys::RM_RESOURCE_TRACKER_ADDRESS,
        keys::RM_ADMIN_ADDRESS,
        keys::RM_WEBAPP_ADDRESS,
    ] {
        conf.set(key, "127.0.0.1:0");
    }
    conf.set(keys::SCHEDULER_MINIMUM_ALLOCATION_MB, "128");
    let rm = ResourceManager::start(&conf, None)
        .await
        .expect("RM starts");
    conf.set(keys::RM_ADDRESS, rm.addresses().client.to_string());
    conf.set(
        "yarn.client.application-client-protocol.poll-interval-ms",
        "50",
    );
    (rm, conf)
}

#[tokio::test]
async fn submit_report_list_and_kill() {
    tokio::time::timeout(Duration::from_secs(120), async {
        let (_rm, conf) = start_rm().await;
        let yarn = YarnClient::connect(&conf).await.expect("connect");
        assert_eq!(yarn.user(), spindle_common::current_user());

        let (id, max) = yarn.create_application().await.expect("new application");
        assert!(max.memory_mb > 0 && max.vcores > 0, "{max}");

        let mut sub = ApplicationSubmission::new(
            "yarn-client-test",
            Resource::new(256, 1),
            LaunchContext::command("sleep 1000").env("A", "B"),
        );
        sub.queue = "default".into();
        sub.app_type = "SPINDLE-TEST".into();
        sub.tags = vec!["t1".into()];
        let accepted = yarn.submit(id, &sub).await.expect("submit");
        assert_eq!(accepted.id, id);
        assert_eq!(accepted.state, AppState::Accepted);

        let report = yarn.report(id).await.expect("report");
        assert_eq!(report.name, "yarn-client-test");
        assert_eq!(report.app_type, "SPINDLE-TEST");
        assert_eq!(report.queue, "default");
        assert_eq!(report.user, spindle_common::current_user());
        assert_eq!(report.final_status, FinalStatus::Undefined);
        assert!(report.start_time_ms > 0);

        let accepted_apps = yarn.list(&[AppState::Accepted]).await.expect("list");
        assert!(accepted_apps.iter().any(|a| a.id == id));
        let running = yarn.list(&[AppState::Running]).await.expect("list");
        assert!(running.iter().all(|a| a.id != id));
        let all = yarn.list(&[]).await.expect("list all");
        assert!(all.iter().any(|a| a.id == id));

        yarn.kill(id, Some("test is over")).await.expect("kill");
        let killed = yarn.report(id).await.expect("report");
        assert_eq!(killed.state, AppState::Killed);
        assert!(
            killed.diagnostics.contains("test is over"),
            "{}",
            killed.diagnostics
        );

        let absent = ApplicationId::new(id.cluster_timestamp, id.id + 100);
        let err = yarn.report(absent).await.expect_err("unknown application");
        assert_eq!(err.remote_class(), Some(class::APPLICATION_NOT_FOUND));
    })
    .await
    .expect("test timed out");
}

#[tokio::test]
async fn an_unreachable_resource_manager_is_named() {
    let mut conf = Configuration::with_defaults();
    // A port nothing listens on: bound and held but never listening, so that no
    // other test's server can take it meanwhile and connections are refused.
    let held = tokio::net::TcpSocket::new_v4().expect("a socket");
    held.bind("127.0.0.1:0".parse().expect("an address"))
        .expect("bind");
    let addr = held.local_addr().expect("addr");
    conf.set(keys::RM_ADDRESS, addr.to_string());
    // As Hadoop's client, it keeps trying for the connect wait (15 minutes
    // by default): a short one here, with retries 10 ms apart and one
    // connection attempt each.
    conf.set(keys::RM_CONNECT_MAX_WAIT_MS, "300");
    conf.set(keys::RM_CONNECT_RETRY_INTERVAL_MS, "10");
    conf.set(keys::IPC_CLIENT_CONNECT_MAX_RETRIES, "0");
    let err = YarnClient::connect(&conf)
        .await
        .expect_err("nothing listens");
    let text = err.to_string();
    assert!(text.contains(&addr.to_string()), "{text}");
    assert!(
        text.contains(" attempts "),
        "the attempts are counted: {text}"
    );
    assert!(err.is_transport());
    drop(held);
}

#[tokio::test]
async fn with_rm_ha_the_client_fails_over_to_a_reachable_resource_manager() {
    tokio::time::timeout(Duration::from_secs(120), async {
        let (_rm, mut conf) = start_rm().await;
        let live = conf.get(keys::RM_ADDRESS).expect("the RM's client address");
        let dead = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            l.local_addr().expect("addr").to_string()
        };
        conf.set(keys::RM_HA_ENABLED, "true");
        conf.set(keys::RM_HA_RM_IDS, "rm1,rm2");
        conf.set(&format!("{}.rm1", keys::RM_ADDRESS), dead.as_str());
        conf.set(&format!("{}.rm2", keys::RM_ADDRESS), live.as_str());
        conf.set("yarn.client.failover-sleep-base-ms", "10");
        conf.set("yarn.client.failover-sleep-max-ms", "50");
        let yarn = YarnClient::connect(&conf).await.expect("fails over to rm2");
        assert_eq!(yarn.addr(), live);
        let (id, _) = yarn.create_application().await.expect("new application");
        assert!(yarn
            .list(&[])
            .await
            .expect("list")
            .iter()
            .all(|a| a.id != id));
        assert_eq!(yarn.addr(), live, "later calls stay with rm2");
    })
    .await
    .expect("test timed out");
}

/// The RM goes away and a new one comes up on the same address: a call made
/// in between waits, as Hadoop's client does for
/// `yarn.resourcemanager.connect.max-wait.ms`, and is answered by the new RM
/// (S14: Spindle's clients used to give up at once when the connection
/// dropped).
#[tokio::test]
async fn a_call_waits_for_a_restarted_resource_manager() {
    tokio::time::timeout(Duration::from_secs(120), async {
        let (rm, mut conf) = start_rm().await;
        let client_addr = rm.addresses().client;
        conf.set(keys::RM_CONNECT_MAX_WAIT_MS, "60000");
        conf.set(keys::RM_CONNECT_RETRY_INTERVAL_MS, "100");
        conf.set(keys::IPC_CLIENT_CONNECT_MAX_RETRIES, "0");
        let yarn = YarnClient::connect(&conf).await.expect("connect");
        let (first, _) = yarn.create_application().await.expect("new application");
        drop(rm);

        // The call starts while no RM listens.
        let (started_tx, started_rx) = tokio::sync::oneshot::channel();
        let call = tokio::spawn(async move {
            let _ = started_tx.send(());
            yarn.create_application().await
        });
        started_rx.await.expect("the call task runs");
        // It is still waiting: nothing answered and it did not give up. The
        // time is the subject here, not a stand-in for an event: the wait lets
        // three of the client's 100 ms retry intervals pass without an RM, and
        // the call must outlast them (no counter shows its failed attempts).
        tokio::time::sleep(Duration::from_millis(300)).await;
        if call.is_finished() {
            let out = call.await.expect("the call task");
            panic!("the call ended without an RM: {out:?}");
        }

        // A new RM on the same client port answers it.
        let mut restarted = conf.clone();
        restarted.set(keys::RM_ADDRESS, client_addr.to_string());
        let _rm2 = ResourceManager::start(&restarted, None)
            .await
            .expect("the new RM starts on the old port");
        let (second, _) = call
            .await
            .expect("the call task")
            .expect("answered by the new RM");
        assert_ne!(
            second.cluster_timestamp, first.cluster_timestamp,
            "a different RM answered"
        );
    })
    .await
    .expect("test timed out");
}
