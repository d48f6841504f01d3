//! Unmanaged ApplicationMasters over real IPC against an in-process RM: the
//! application needs no AM container, its owner reads the AMRMToken from the
//! application report (as Hadoop's UnmanagedAMLauncher does), and the AM then
//! registers, allocates and finishes with it.

use std::time::{Duration, Instant};

use hadoop_protos::yarn as pb;
use spindle_common::conf::Configuration;
use spindle_common::ids::ApplicationAttemptId;
use spindle_common::security::AmRmTokenIdentifier;
use spindle_ipc::methods::application_client::{
    GET_APPLICATIONS, GET_APPLICATION_ATTEMPTS, GET_APPLICATION_ATTEMPT_REPORT,
};
use spindle_ipc::methods::application_master::{
    ALLOCATE, FINISH_APPLICATION_MASTER, REGISTER_APPLICATION_MASTER,
};
use spindle_ipc::{protocols, ClientOptions, IpcClient};
use spindle_rm::ResourceManager;

mod common;
use common::{am_client, report, submit, FakeNm};
use spindle_common::proto::app_id_to_pb;

async fn start_rm(extra: &[(&str, &str)]) -> ResourceManager {
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
    for (k, v) in extra {
        conf.set(k, *v);
    }
    ResourceManager::start(&conf, None)
        .await
        .expect("RM starts")
}

async fn client_as(rm: &ResourceManager, user: &str) -> IpcClient {
    IpcClient::connect(
        &rm.addresses().client.to_string(),
        ClientOptions::new(user, protocols::APPLICATION_CLIENT),
    )
    .await
    .expect("client connection")
}

fn state(r: &pb::ApplicationReportProto) -> Option<pb::YarnApplicationStateProto> {
    r.yarn_application_state
        .and_then(|v| pb::YarnApplicationStateProto::try_from(v).ok())
}

async fn attempt_state(
    client: &IpcClient,
    attempt: ApplicationAttemptId,
) -> Option<pb::YarnApplicationAttemptStateProto> {
    let resp: pb::GetApplicationAttemptReportResponseProto = client
        .call_method(
            &GET_APPLICATION_ATTEMPT_REPORT,
            &pb::GetApplicationAttemptReportRequestProto {
                application_attempt_id: Some(pb::ApplicationAttemptIdProto {
                    application_id: Some(app_id_to_pb(&attempt.app)),
                    attempt_id: Some(attempt.attempt_id),
                }),
            },
        )
        .await
        .expect("attempt report");
    resp.application_attempt_report
        .and_then(|r| r.yarn_application_attempt_state)
        .and_then(|v| pb::YarnApplicationAttemptStateProto::try_from(v).ok())
}

async fn allocate(
    am: &IpcClient,
    response_id: i32,
    asks: Vec<pb::ResourceRequestProto>,
    release: Vec<pb::ContainerIdProto>,
) -> pb::AllocateResponseProto {
    am.call_method(
        &ALLOCATE,
        &pb::AllocateRequestProto {
            ask: asks,
            release,
            response_id: Some(response_id),
            progress: Some(0.5),
            ..Default::default()
        },
    )
    .await
    .expect("allocate")
}

#[tokio::test]
async fn an_unmanaged_am_runs_with_the_token_from_its_report() {
    tokio::time::timeout(Duration::from_secs(60), async {
        let rm = start_rm(&[]).await;
        let alice = client_as(&rm, "alice").await;
        let bob = client_as(&rm, "bob").await;
        let app = submit(&alice, true).await;
        let attempt = ApplicationAttemptId::new(app, 1);

        // No NodeManager exists, yet the attempt is LAUNCHED: no AM container.
        assert_eq!(
            attempt_state(&alice, attempt).await,
            Some(pb::YarnApplicationAttemptStateProto::AppAttemptLaunched)
        );
        let owner_view = report(&alice, app).await;
        assert_eq!(
            state(&owner_view),
            Some(pb::YarnApplicationStateProto::Accepted)
        );
        assert_eq!(owner_view.unmanaged_application, Some(true));
        let token = owner_view
            .am_rm_token
            .clone()
            .expect("the owner's report carries the AMRMToken");
        let ident = AmRmTokenIdentifier::decode(token.identifier.as_slice()).expect("identifier");
        assert_eq!(ident.attempt, attempt);
        assert_eq!(token.kind, "YARN_AM_RM_TOKEN");
        assert_eq!(token.service, rm.addresses().scheduler.to_string());

        // Another user sees the application but never its token, in the
        // report or in the listing.
        let other_view = report(&bob, app).await;
        assert_eq!(other_view.am_rm_token, None);
        let listing: pb::GetApplicationsResponseProto = bob
            .call_method(
                &GET_APPLICATIONS,
                &pb::GetApplicationsRequestProto::default(),
            )
            .await
            .expect("list");
        assert_eq!(listing.applications.len(), 1);
        assert_eq!(listing.applications[0].am_rm_token, None);
        let owner_listing: pb::GetApplicationsResponseProto = alice
            .call_method(
                &GET_APPLICATIONS,
                &pb::GetApplicationsRequestProto::default(),
            )
            .await
            .expect("list");
        assert!(owner_listing.applications[0].am_rm_token.is_some());

        // Register with the token; the application runs and the report stops
        // carrying the token (it is only offered while LAUNCHED).
        let am = am_client(&rm, &token).await;
        let reg: pb::RegisterApplicationMasterResponseProto = am
            .call_method(
                &REGISTER_APPLICATION_MASTER,
                &pb::RegisterApplicationMasterRequestProto {
                    host: Some("launcher-host".into()),
                    rpc_port: Some(-1),
                    tracking_url: Some(String::new()),
                    placement_constraints: Vec::new(),
                },
            )
            .await
            .expect("register");
        assert_eq!(reg.queue.as_deref(), Some("default"));
        let running = report(&alice, app).await;
        assert_eq!(
            state(&running),
            Some(pb::YarnApplicationStateProto::Running)
        );
        assert_eq!(running.am_rm_token, None);
        assert_eq!(running.host.as_deref(), Some("launcher-host"));

        // Containers come once a node heartbeats.
        let mut nm =
            FakeNm::register(rm.addresses().resource_tracker, "nm-unmanaged-test", 8192).await;
        let ask = pb::ResourceRequestProto {
            priority: Some(pb::PriorityProto { priority: Some(1) }),
            resource_name: Some("*".into()),
            capability: Some(pb::ResourceProto {
                memory: Some(1024),
                virtual_cores: Some(1),
                resource_value_map: Vec::new(),
            }),
            num_containers: Some(2),
            relax_locality: Some(true),
            ..Default::default()
        };
        let mut response_id = 0;
        let mut granted = Vec::new();
        let mut asks = vec![ask];
        let deadline = Instant::now() + Duration::from_secs(20);
        while granted.len() < 2 {
            assert!(Instant::now() < deadline, "no containers: {granted:?}");
            nm.heartbeat().await;
            let resp = allocate(&am, response_id, std::mem::take(&mut asks), Vec::new()).await;
            response_id = resp.response_id.expect("response id");
            granted.extend(resp.allocated_containers);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // The two task containers are all the application holds: no AM container.
        let usage = report(&alice, app).await.app_resource_usage.expect("usage");
        assert_eq!(usage.num_used_containers, Some(2));
        let attempts: pb::GetApplicationAttemptsResponseProto = alice
            .call_method(
                &GET_APPLICATION_ATTEMPTS,
                &pb::GetApplicationAttemptsRequestProto {
                    application_id: Some(app_id_to_pb(&app)),
                },
            )
            .await
            .expect("attempts");
        assert_eq!(attempts.application_attempts.len(), 1);
        assert_eq!(attempts.application_attempts[0].am_container_id, None);

        // Release one; the AM hears it completed.
        let released = granted[0].id.expect("container id");
        let mut completed = Vec::new();
        let mut release = vec![released];
        while completed.is_empty() {
            assert!(Instant::now() < deadline, "release never completed");
            let resp = allocate(&am, response_id, Vec::new(), std::mem::take(&mut release)).await;
            response_id = resp.response_id.expect("response id");
            completed.extend(resp.completed_container_statuses);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(completed[0].container_id.as_ref(), Some(&released));

        // Unregister: the attempt and the application end at once, FINISHED.
        let done: pb::FinishApplicationMasterResponseProto = am
            .call_method(
                &FINISH_APPLICATION_MASTER,
                &pb::FinishApplicationMasterRequestProto {
                    diagnostics: Some("all done".into()),
                    tracking_url: Some(String::new()),
                    final_application_status: Some(
                        pb::FinalApplicationStatusProto::AppSucceeded as i32,
                    ),
                },
            )
            .await
            .expect("finish");
        assert_eq!(done.is_unregistered, Some(true));
        let finished = report(&alice, app).await;
        assert_eq!(
            state(&finished),
            Some(pb::YarnApplicationStateProto::Finished)
        );
        assert_eq!(
            finished.final_application_status,
            Some(pb::FinalApplicationStatusProto::AppSucceeded as i32)
        );
        assert_eq!(
            attempt_state(&alice, attempt).await,
            Some(pb::YarnApplicationAttemptStateProto::AppAttemptFinished)
        );
        // The node is told to clean the application up.
        let resp = nm.heartbeat().await;
        assert!(
            resp.applications_to_cleanup.contains(&app_id_to_pb(&app)),
            "{resp:?}"
        );
    })
    .await
    .expect("test timed out");
}

#[tokio::test]
async fn managed_applications_never_show_a_token() {
    tokio::time::timeout(Duration::from_secs(30), async {
        let rm = start_rm(&[]).await;
        let alice = client_as(&rm, "alice").await;
        let app = submit(&alice, false).await;
        let r = report(&alice, app).await;
        assert_eq!(r.unmanaged_application, Some(false));
        assert_eq!(r.am_rm_token, None);
        // Without a NodeManager its attempt waits for the AM container.
        assert_eq!(
            attempt_state(&alice, ApplicationAttemptId::new(app, 1)).await,
            Some(pb::YarnApplicationAttemptStateProto::AppAttemptScheduled)
        );
    })
    .await
    .expect("test timed out");
}

#[tokio::test]
async fn a_silent_unmanaged_am_fails_its_application_without_a_retry() {
    tokio::time::timeout(Duration::from_secs(30), async {
        let rm = start_rm(&[
            ("yarn.am.liveness-monitor.expiry-interval-ms", "600"),
            ("yarn.resourcemanager.am.max-attempts", "3"),
        ])
        .await;
        let alice = client_as(&rm, "alice").await;
        let app = submit(&alice, true).await;
        let deadline = Instant::now() + Duration::from_secs(20);
        let failed = loop {
            let r = report(&alice, app).await;
            if state(&r) == Some(pb::YarnApplicationStateProto::Failed) {
                break r;
            }
            assert!(Instant::now() < deadline, "never expired: {r:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let diagnostics = failed.diagnostics.unwrap_or_default();
        assert!(
            diagnostics.starts_with(&format!("Unmanaged application {app} failed due to")),
            "{diagnostics}"
        );
        assert!(diagnostics.contains("timed out"), "{diagnostics}");
        assert_eq!(failed.am_rm_token, None);
        // No second attempt, whatever the maximum.
        let attempts: pb::GetApplicationAttemptsResponseProto = alice
            .call_method(
                &GET_APPLICATION_ATTEMPTS,
                &pb::GetApplicationAttemptsRequestProto {
                    application_id: Some(app_id_to_pb(&app)),
                },
            )
            .await
            .expect("attempts");
        assert_eq!(attempts.application_attempts.len(), 1);
    })
    .await
    .expect("test timed out");
}
