//! A fenced or failing active steps down: with HA, a state store write that
//! fails turns the RM standby (it stops serving, drops its state, closes the
//! store), and it can become active again from what the store kept. The
//! failure is a real one: the process's file-size limit (`RLIMIT_FSIZE`) is
//! lowered to the store file's size, so the write that grows it fails with
//! EFBIG. That limit is process-wide, so this test has a binary of its own.

use std::time::Duration;

use hadoop_protos::yarn as pb;
use spindle_common::conf::Configuration;
use spindle_ipc::methods::application_client::{
    GET_APPLICATIONS, GET_NEW_APPLICATION, SUBMIT_APPLICATION,
};
use spindle_ipc::{protocols, ClientOptions, IpcClient, IpcError};
use spindle_rm::{ResourceManager, ServiceState};

mod common;
use common::RM_ADDRESS_KEYS;

/// Sets the soft `RLIMIT_FSIZE` (`None`: back to the hard limit).
#[allow(unsafe_code)]
fn set_file_size_limit(bytes: Option<u64>) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write `limit`.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_FSIZE, &mut limit), 0);
        limit.rlim_cur = bytes.map_or(limit.rlim_max, |b| b as libc::rlim_t);
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &limit), 0);
    }
}

async fn submit(client: &IpcClient, n: usize) -> Result<(), IpcError> {
    let new: pb::GetNewApplicationResponseProto = client
        .call_method(&GET_NEW_APPLICATION, &pb::GetNewApplicationRequestProto {})
        .await?;
    let ctx = pb::ApplicationSubmissionContextProto {
        application_id: new.application_id,
        application_name: Some(format!("{n}-{}", "x".repeat(4000))),
        unmanaged_am: Some(true),
        resource: Some(pb::ResourceProto {
            memory: Some(1024),
            virtual_cores: Some(1),
            resource_value_map: Vec::new(),
        }),
        ..Default::default()
    };
    client
        .call_method(
            &SUBMIT_APPLICATION,
            &pb::SubmitApplicationRequestProto {
                application_submission_context: Some(ctx),
            },
        )
        .await
        .map(|_| ())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_store_write_makes_an_ha_rm_step_down() {
    // A write past the limit fails with EFBIG; the SIGXFSZ it raises is
    // caught (kept in this stream) instead of killing the process.
    let _sigxfsz =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::from_raw(libc::SIGXFSZ))
            .expect("catching SIGXFSZ");
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("spindle.redb");
    let mut conf = Configuration::with_defaults();
    conf.set("yarn.resourcemanager.recovery.enabled", "true");
    conf.set(
        "spindle.resourcemanager.state-store.path",
        store.display().to_string(),
    );
    conf.set("yarn.resourcemanager.ha.enabled", "true");
    conf.set("yarn.resourcemanager.ha.rm-ids", "rm1,rm2");
    conf.set("yarn.resourcemanager.ha.id", "rm1");
    conf.set(
        "yarn.resourcemanager.ha.automatic-failover.enabled",
        "false",
    );
    for key in RM_ADDRESS_KEYS {
        for id in ["rm1", "rm2"] {
            conf.set(&format!("{key}.{id}"), "127.0.0.1:0");
        }
    }
    tokio::time::timeout(Duration::from_secs(120), async {
        let rm = ResourceManager::start(&conf, None).await.expect("starts");
        rm.transition_to_active().await.expect("active");
        let mut state = rm.control().watch_service_state();
        let client = IpcClient::connect(
            &rm.addresses().client.to_string(),
            ClientOptions::new("alice", protocols::APPLICATION_CLIENT),
        )
        .await
        .expect("client");
        submit(&client, 0).await.expect("a first submission");

        let size = std::fs::metadata(&store).expect("the store file").len();
        set_file_size_limit(Some(size));
        let mut acknowledged = 1;
        let mut refusal = None;
        for n in 1..20_000 {
            match submit(&client, n).await {
                Ok(()) => acknowledged += 1,
                Err(e) => {
                    refusal = Some(e);
                    break;
                }
            }
        }
        set_file_size_limit(None);
        let refusal = refusal.expect("a store write failed");
        eprintln!("{acknowledged} submissions acknowledged, then: {refusal}");

        state
            .wait_for(|s| *s == ServiceState::Standby)
            .await
            .expect("the RM steps down");
        let err = client
            .call_method(&GET_NEW_APPLICATION, &pb::GetNewApplicationRequestProto {})
            .await
            .expect_err("a standby serves nothing");
        assert!(err.to_string().contains("StandbyException"), "{err}");

        // The store was closed: the RM becomes active again from it, with
        // every acknowledged submission.
        rm.transition_to_active().await.expect("active again");
        let listed: pb::GetApplicationsResponseProto = client
            .call_method(
                &GET_APPLICATIONS,
                &pb::GetApplicationsRequestProto::default(),
            )
            .await
            .expect("list");
        assert!(
            listed.applications.len() >= acknowledged,
            "{} listed, {acknowledged} acknowledged",
            listed.applications.len()
        );
    })
    .await
    .expect("in time");
}
