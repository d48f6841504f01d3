//! RM HA without an elector, over real IPC: with
//! `yarn.resourcemanager.ha.enabled` an RM starts standby (StandbyException
//! on the client, scheduler and admin refreshes; the store not opened), the
//! HAServiceProtocol on the admin port switches it, and stepping down
//! releases the store so that another RM on the same file takes over with
//! the applications.

use std::path::Path;
use std::time::Duration;

use hadoop_protos::common as hc;
use hadoop_protos::yarn as pb;
use spindle_common::conf::Configuration;
use spindle_common::security::Token;
use spindle_ipc::methods::application_client::{GET_APPLICATIONS, GET_NEW_APPLICATION};
use spindle_ipc::methods::application_master::ALLOCATE;
use spindle_ipc::methods::ha_service::{
    GET_SERVICE_STATUS, MONITOR_HEALTH, TRANSITION_TO_ACTIVE, TRANSITION_TO_OBSERVER,
    TRANSITION_TO_STANDBY,
};
use spindle_ipc::methods::resource_manager_administration::REFRESH_QUEUES;
use spindle_ipc::{protocols, ClientOptions, IpcClient, IpcError};

use spindle_rm::{ResourceManager, ServiceState};

mod common;
use common::{submit, RM_ADDRESS_KEYS};

const STANDBY: &str = "org.apache.hadoop.ipc.StandbyException";

fn conf(store: &Path, rm_id: &str, automatic_failover: bool) -> Configuration {
    let mut conf = Configuration::with_defaults();
    conf.set("yarn.resourcemanager.recovery.enabled", "true");
    conf.set(
        "spindle.resourcemanager.state-store.path",
        store.display().to_string(),
    );
    conf.set("yarn.resourcemanager.ha.enabled", "true");
    conf.set("yarn.resourcemanager.ha.rm-ids", "rm1,rm2");
    conf.set("yarn.resourcemanager.ha.id", rm_id);
    conf.set(
        "yarn.resourcemanager.ha.automatic-failover.enabled",
        if automatic_failover { "true" } else { "false" },
    );
    for key in RM_ADDRESS_KEYS {
        for id in ["rm1", "rm2"] {
            conf.set(&format!("{key}.{id}"), "127.0.0.1:0");
        }
    }
    conf
}

async fn connect(addr: std::net::SocketAddr, protocol: &str) -> IpcClient {
    IpcClient::connect(&addr.to_string(), ClientOptions::new("alice", protocol))
        .await
        .expect("connection")
}

fn remote_class(e: &IpcError) -> Option<&str> {
    match e {
        IpcError::Remote { class_name, .. } => Some(class_name),
        _ => None,
    }
}

async fn new_app(client: &IpcClient) -> Result<pb::GetNewApplicationResponseProto, IpcError> {
    client
        .call_method(&GET_NEW_APPLICATION, &pb::GetNewApplicationRequestProto {})
        .await
}

async fn apps(client: &IpcClient) -> Vec<pb::ApplicationReportProto> {
    let r: pb::GetApplicationsResponseProto = client
        .call_method(
            &GET_APPLICATIONS,
            &pb::GetApplicationsRequestProto::default(),
        )
        .await
        .expect("list");
    r.applications
}

async fn status(admin: &IpcClient) -> hc::HaServiceStateProto {
    let r: hc::GetServiceStatusResponseProto = admin
        .call_method(&GET_SERVICE_STATUS, &hc::GetServiceStatusRequestProto {})
        .await
        .expect("status");
    hc::HaServiceStateProto::try_from(r.state).expect("a state")
}

fn req_info(source: hc::HaRequestSource) -> hc::HaStateChangeRequestInfoProto {
    hc::HaStateChangeRequestInfoProto {
        req_source: source as i32,
    }
}

async fn to_active(admin: &IpcClient, source: hc::HaRequestSource) -> Result<(), IpcError> {
    admin
        .call_method(
            &TRANSITION_TO_ACTIVE,
            &hc::TransitionToActiveRequestProto {
                req_info: req_info(source),
            },
        )
        .await
        .map(|_| ())
}

async fn to_standby(admin: &IpcClient, source: hc::HaRequestSource) -> Result<(), IpcError> {
    admin
        .call_method(
            &TRANSITION_TO_STANDBY,
            &hc::TransitionToStandbyRequestProto {
                req_info: req_info(source),
            },
        )
        .await
        .map(|_| ())
}

async fn within<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(60), f)
        .await
        .expect("in time")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standby_refuses_active_serves_and_stepping_down_hands_the_store_over() {
    within(async {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = dir.path().join("rmstore/spindle.redb");
        let rm1 = ResourceManager::start(&conf(&store, "rm1", false), None)
            .await
            .expect("rm1 starts");
        assert_eq!(rm1.service_state(), ServiceState::Standby);
        // A standby opens no store.
        assert!(!store.exists(), "the standby opened the store");

        let client1 = connect(rm1.addresses().client, protocols::APPLICATION_CLIENT).await;
        let err = new_app(&client1).await.expect_err("a standby refuses");
        assert_eq!(remote_class(&err), Some(STANDBY), "{err}");
        assert!(err.to_string().contains("rm1 is not Active"), "{err}");

        // The scheduler port refuses the AM's token negotiation with a
        // StandbyException (so that the AM fails over), not as a bad token.
        let am = IpcClient::connect(
            &rm1.addresses().scheduler.to_string(),
            ClientOptions::new("am", protocols::APPLICATION_MASTER).with_token(Token {
                identifier: vec![1, 2, 3],
                password: vec![4, 5, 6],
                kind: "YARN_AM_RM_TOKEN".into(),
                service: String::new(),
            }),
        )
        .await;
        let am_err = match am {
            Ok(c) => c
                .call_method(&ALLOCATE, &pb::AllocateRequestProto::default())
                .await
                .map(|_| ())
                .expect_err("a standby serves no AM"),
            Err(e) => e,
        };
        assert!(am_err.to_string().contains(STANDBY), "{am_err}");

        // Admin refreshes refuse too (AdminService.checkRMStatus).
        let rmadmin = connect(
            rm1.addresses().admin,
            protocols::RESOURCE_MANAGER_ADMINISTRATION,
        )
        .await;
        let refresh = rmadmin
            .call_method(&REFRESH_QUEUES, &pb::RefreshQueuesRequestProto::default())
            .await
            .expect_err("a standby refreshes nothing");
        assert_eq!(remote_class(&refresh), Some(STANDBY), "{refresh}");

        // HAServiceProtocol on the admin port.
        let ha1 = connect(rm1.addresses().admin, protocols::HA_SERVICE).await;
        assert_eq!(status(&ha1).await, hc::HaServiceStateProto::Standby);
        to_active(&ha1, hc::HaRequestSource::RequestByUser)
            .await
            .expect("manual failover is allowed without automatic failover");
        assert_eq!(status(&ha1).await, hc::HaServiceStateProto::Active);
        assert_eq!(rm1.service_state(), ServiceState::Active);
        // Transitions are idempotent.
        to_active(&ha1, hc::HaRequestSource::RequestByUser)
            .await
            .expect("already active");
        assert!(store.exists());

        let a = submit(&client1, true).await;
        let b = submit(&client1, false).await;
        assert_eq!(apps(&client1).await.len(), 2);

        // Another RM on the same store cannot become active while rm1 holds it.
        let rm2 = ResourceManager::start(&conf(&store, "rm2", false), None)
            .await
            .expect("rm2 starts");
        assert_eq!(rm2.service_state(), ServiceState::Standby);
        let held = rm2.transition_to_active().await;
        assert!(held.is_err(), "two RMs opened one store");
        assert_eq!(rm2.service_state(), ServiceState::Standby);

        to_standby(&ha1, hc::HaRequestSource::RequestByUser)
            .await
            .expect("to standby");
        assert_eq!(status(&ha1).await, hc::HaServiceStateProto::Standby);
        let err = new_app(&client1).await.expect_err("standby again");
        assert_eq!(remote_class(&err), Some(STANDBY), "{err}");

        // rm1 released the store: rm2 takes over with the applications.
        rm2.transition_to_active()
            .await
            .expect("rm2 becomes active");
        assert_eq!(rm2.epoch(), Some(1));
        let client2 = connect(rm2.addresses().client, protocols::APPLICATION_CLIENT).await;
        let listed = apps(&client2).await;
        let mut ids: Vec<i32> = listed
            .iter()
            .filter_map(|r| r.application_id.as_ref().and_then(|i| i.id))
            .collect();
        ids.sort_unstable();
        assert_eq!(ids, [a.id, b.id], "{listed:?}");
        // rm2 serves, under its own cluster timestamp (as a restarted RM).
        let next = new_app(&client2).await.expect("rm2 serves");
        let ts = next.application_id.and_then(|i| i.cluster_timestamp);
        assert!(ts > Some(b.cluster_timestamp), "{ts:?} after {b}");

        // And rm1, standby, cannot take the store back while rm2 holds it.
        let refused = to_active(&ha1, hc::HaRequestSource::RequestByUser)
            .await
            .expect_err("the store is rm2's");
        assert_eq!(
            remote_class(&refused),
            Some("org.apache.hadoop.ha.ServiceFailedException"),
            "{refused}"
        );
        assert_eq!(rm1.service_state(), ServiceState::Standby);
    })
    .await
}

/// With automatic failover enabled (the default), a user's transition is
/// refused as Hadoop refuses it, and a forced one (`--forcemanual`) is done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn automatic_failover_refuses_manual_transitions_unless_forced() {
    within(async {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = dir.path().join("spindle.redb");
        // Automatic failover by an external failover controller (not the
        // RM's own elector, which `ha_failover.rs` tests on ZooKeeper).
        let mut c = conf(&store, "rm1", true);
        c.set("yarn.resourcemanager.ha.automatic-failover.embedded", "false");
        let rm = ResourceManager::start(&c, None).await.expect("rm starts");
        let ha = connect(rm.addresses().admin, protocols::HA_SERVICE).await;
        let refused = to_active(&ha, hc::HaRequestSource::RequestByUser)
            .await
            .expect_err("manual failover refused");
        assert_eq!(
            remote_class(&refused),
            Some("org.apache.hadoop.security.AccessControlException"),
            "{refused}"
        );
        assert!(
            refused.to_string().contains(
                "Manual failover for this ResourceManager is disallowed, because automatic failover is enabled."
            ),
            "{refused}"
        );
        assert_eq!(rm.service_state(), ServiceState::Standby);
        to_active(&ha, hc::HaRequestSource::RequestByUserForced)
            .await
            .expect("forced");
        assert_eq!(rm.service_state(), ServiceState::Active);
        let _: hc::MonitorHealthResponseProto = ha
            .call_method(&MONITOR_HEALTH, &hc::MonitorHealthRequestProto {})
            .await
            .expect("healthy");
        let observer = ha
            .call_method(
                &TRANSITION_TO_OBSERVER,
                &hc::TransitionToObserverRequestProto {
                    req_info: req_info(hc::HaRequestSource::RequestByUserForced),
                },
            )
            .await
            .expect_err("no observer RM");
        assert_eq!(
            remote_class(&observer),
            Some("org.apache.hadoop.ha.ServiceFailedException"),
            "{observer}"
        );
        to_standby(&ha, hc::HaRequestSource::RequestByZkfc)
            .await
            .expect("a failover controller's request");
        assert_eq!(rm.service_state(), ServiceState::Standby);
    })
    .await
}

/// Without HA, the admin port does not serve HAServiceProtocol (as Hadoop's
/// AdminService registers it only with HA) and the RM is active at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_ha_the_rm_is_active_and_has_no_ha_protocol() {
    within(async {
        let mut c = Configuration::with_defaults();
        for key in RM_ADDRESS_KEYS {
            c.set(key, "127.0.0.1:0");
        }
        let rm = ResourceManager::start(&c, None).await.expect("rm starts");
        assert_eq!(rm.service_state(), ServiceState::Active);
        let ha = connect(rm.addresses().admin, protocols::HA_SERVICE).await;
        let err = ha
            .call_method(&GET_SERVICE_STATUS, &hc::GetServiceStatusRequestProto {})
            .await
            .expect_err("no HA protocol");
        assert_eq!(
            remote_class(&err),
            Some("org.apache.hadoop.ipc.RpcNoSuchProtocolException"),
            "{err}"
        );
    })
    .await
}
