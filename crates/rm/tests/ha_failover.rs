//! Automatic failover over a real ZooKeeper 3.8 server (started by the
//! integration harness; skipped without its jars, except under CI where it
//! fails): two in-process RMs with `yarn.resourcemanager.ha.enabled`,
//! automatic failover (the RM's own elector) and the ZooKeeper store. One
//! becomes active by itself; when it goes, the other takes over with the
//! applications; when ZooKeeper goes, the active steps down (no RM serves
//! rather than two); when ZooKeeper is back, one is active again.

use std::time::Duration;

use hadoop_protos::yarn as pb;
use spindle_common::conf::Configuration;
use spindle_integration::{ZooKeeperJars, ZooKeeperServer};
use spindle_ipc::methods::application_client::GET_APPLICATIONS;
use spindle_ipc::{protocols, ClientOptions, IpcClient};
use spindle_rm::{ResourceManager, ServiceState};

mod common;
use common::{submit, RM_ADDRESS_KEYS};

/// A bound on each wait, only to stop a hang: the tests wait on events.
const DEADLINE: Duration = Duration::from_secs(90);

fn conf(server: &ZooKeeperServer, rm_id: &str) -> Configuration {
    let mut conf = Configuration::with_defaults();
    conf.set("yarn.resourcemanager.recovery.enabled", "true");
    conf.set(
        "yarn.resourcemanager.store.class",
        "org.apache.hadoop.yarn.server.resourcemanager.recovery.ZKRMStateStore",
    );
    conf.set("hadoop.zk.address", server.connect_string());
    conf.set("hadoop.zk.timeout-ms", "4000");
    conf.set("hadoop.zk.retry-interval-ms", "200");
    conf.set("yarn.resourcemanager.cluster-id", "failover-test");
    conf.set("yarn.resourcemanager.ha.enabled", "true");
    conf.set("yarn.resourcemanager.ha.rm-ids", "rm1,rm2");
    conf.set("yarn.resourcemanager.ha.id", rm_id);
    for key in RM_ADDRESS_KEYS {
        for id in ["rm1", "rm2"] {
            conf.set(&format!("{key}.{id}"), "127.0.0.1:0");
        }
    }
    conf
}

async fn client(rm: &ResourceManager) -> IpcClient {
    IpcClient::connect(
        &rm.addresses().client.to_string(),
        ClientOptions::new("alice", protocols::APPLICATION_CLIENT),
    )
    .await
    .expect("connect")
}

async fn app_count(rm: &ResourceManager) -> usize {
    let apps: pb::GetApplicationsResponseProto = client(rm)
        .await
        .call_method(
            &GET_APPLICATIONS,
            &pb::GetApplicationsRequestProto::default(),
        )
        .await
        .expect("getApplications on the active RM");
    apps.applications.len()
}

/// Waits until `rm` is in `state`.
async fn becomes(rm: &ResourceManager, state: ServiceState, what: &str) {
    let mut rx = rm.control().watch_service_state();
    if tokio::time::timeout(DEADLINE, rx.wait_for(|s| *s == state))
        .await
        .is_err()
    {
        panic!("{what}: the RM is still {}", rm.service_state());
    }
}

/// Waits until one of `rms` is active and answers its index.
async fn one_active(rms: &[&ResourceManager], what: &str) -> usize {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let active: Vec<usize> = (0..rms.len())
            .filter(|i| rms[*i].service_state() == ServiceState::Active)
            .collect();
        match active.as_slice() {
            [i] => return *i,
            [] => {}
            _ => panic!("{what}: two active RMs"),
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: no RM became active"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_elected_rm_serves_and_the_other_takes_over_when_it_goes() {
    let Some(jars) = ZooKeeperJars::for_tests() else {
        return;
    };
    let mut server = ZooKeeperServer::start(&jars).expect("ZooKeeper starts");
    let mut rms = Vec::new();
    for id in ["rm1", "rm2"] {
        let rm = ResourceManager::start(&conf(&server, id), None)
            .await
            .unwrap_or_else(|e| panic!("{id} starts: {e}"));
        rms.push(Some(rm));
    }

    // One of them is elected and serves; the other stands by.
    let first = {
        let both: Vec<&ResourceManager> = rms.iter().flatten().collect();
        let first = one_active(&both, "after start").await;
        submit(&client(both[first]).await, false).await;
        assert_eq!(app_count(both[first]).await, 1);
        first
    };

    // The active goes away (its ZooKeeper session with it): the other is
    // elected, opens the store and serves the application.
    rms[first] = None;
    let survivor = rms[1 - first].as_ref().expect("the other RM");
    becomes(survivor, ServiceState::Active, "after the active went").await;
    assert_eq!(app_count(survivor).await, 1);

    // ZooKeeper lost: the active steps down rather than serve unelected.
    server.kill().expect("kill ZooKeeper");
    becomes(survivor, ServiceState::Standby, "with ZooKeeper gone").await;

    // ZooKeeper back: elected again, serving the same applications.
    server.restart().expect("ZooKeeper restarts");
    becomes(survivor, ServiceState::Active, "with ZooKeeper back").await;
    assert_eq!(app_count(survivor).await, 1);
}
