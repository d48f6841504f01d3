//! The scheduler port's token security, over real IPC against an in-process RM:
//! only a genuine AMRMToken of the application's current attempt gets through, and a
//! refused client never disturbs the others.

use std::time::Duration;

use hadoop_protos::yarn as pb;
use spindle_common::conf::Configuration;
use spindle_common::ids::ApplicationAttemptId;
use spindle_common::security::{AmRmTokenIdentifier, Token};
use spindle_ipc::methods::application_client::{GET_APPLICATION_REPORT, GET_CLUSTER_METRICS};
use spindle_ipc::methods::application_master::{ALLOCATE, REGISTER_APPLICATION_MASTER};
use spindle_ipc::{class, protocols, ClientOptions, IpcClient, IpcError};
use spindle_rm::ResourceManager;

mod common;

async fn start_rm() -> ResourceManager {
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
    ResourceManager::start(&conf, None)
        .await
        .expect("RM starts")
}

async fn amrm_token(rm: &ResourceManager, attempt: ApplicationAttemptId) -> Token {
    rm.context()
        .core
        .query(move |s| s.amrm_token(attempt))
        .await
        .expect("core")
}

async fn scheduler_client(rm: &ResourceManager, token: Token) -> Result<IpcClient, IpcError> {
    let ident = AmRmTokenIdentifier::decode(&token.identifier).expect("identifier");
    let options = ClientOptions::new(ident.attempt.to_string(), protocols::APPLICATION_MASTER)
        .with_token(Token {
            identifier: token.identifier,
            password: token.password,
            kind: token.kind,
            service: token.service,
        });
    IpcClient::connect(&rm.addresses().scheduler.to_string(), options).await
}

async fn register(
    client: &IpcClient,
) -> Result<pb::RegisterApplicationMasterResponseProto, IpcError> {
    client
        .call_method(
            &REGISTER_APPLICATION_MASTER,
            &pb::RegisterApplicationMasterRequestProto {
                host: Some("am".into()),
                rpc_port: Some(1),
                tracking_url: Some(String::new()),
                placement_constraints: Vec::new(),
            },
        )
        .await
}

#[tokio::test]
async fn scheduler_port_accepts_only_genuine_current_amrm_tokens() {
    tokio::time::timeout(Duration::from_secs(60), async {
        let rm = start_rm().await;
        let client = IpcClient::connect(
            &rm.addresses().client.to_string(),
            ClientOptions::new("alice", protocols::APPLICATION_CLIENT),
        )
        .await
        .expect("client connection");
        let app_a = common::submit(&client, false).await;
        let app_b = common::submit(&client, false).await;
        let attempt_a = ApplicationAttemptId::new(app_a, 1);

        // A forged password: the SASL handshake fails and nothing reaches a handler.
        let mut forged = amrm_token(&rm, attempt_a).await;
        forged.password = vec![0u8; forged.password.len()];
        let err = scheduler_client(&rm, forged)
            .await
            .err()
            .expect("forged token refused");
        assert!(err.to_string().contains("DIGEST-MD5"), "{err}");

        // A plain SIMPLE client is refused at the connection.
        let simple = IpcClient::connect(
            &rm.addresses().scheduler.to_string(),
            ClientOptions::new("mallory", protocols::APPLICATION_MASTER),
        )
        .await;
        let refused = match simple {
            Err(e) => e.to_string(),
            Ok(c) => register(&c).await.expect_err("simple refused").to_string(),
        };
        assert!(
            refused.contains("SIMPLE authentication is not enabled"),
            "{refused}"
        );

        // A genuine token for an attempt that does not exist (attempt 2 of app B).
        let ghost = amrm_token(&rm, ApplicationAttemptId::new(app_b, 2)).await;
        let c = scheduler_client(&rm, ghost)
            .await
            .expect("a genuine token authenticates");
        let err = register(&c).await.expect_err("not the current attempt");
        assert_eq!(
            err.remote_class(),
            Some(class::INVALID_APPLICATION_MASTER_REQUEST),
            "{err}"
        );

        // The genuine token of app A's attempt registers for app A only: the attempt is
        // taken from the token, never from the request.
        let good = scheduler_client(&rm, amrm_token(&rm, attempt_a).await)
            .await
            .expect("connect");
        let resp = register(&good).await.expect("register");
        assert_eq!(resp.queue.as_deref(), Some("default"));
        let report: pb::GetApplicationReportResponseProto = client
            .call_method(
                &GET_APPLICATION_REPORT,
                &pb::GetApplicationReportRequestProto {
                    application_id: Some(pb::ApplicationIdProto {
                        id: Some(app_b.id),
                        cluster_timestamp: Some(app_b.cluster_timestamp),
                    }),
                },
            )
            .await
            .expect("report");
        let state_b = report
            .application_report
            .and_then(|r| r.yarn_application_state);
        assert_eq!(
            state_b,
            Some(pb::YarnApplicationStateProto::Accepted as i32),
            "app B untouched"
        );

        // Allocate without the right response id is refused; with it, it works.
        let bad: Result<pb::AllocateResponseProto, _> = good
            .call_method(
                &ALLOCATE,
                &pb::AllocateRequestProto {
                    response_id: Some(5),
                    ..Default::default()
                },
            )
            .await;
        assert_eq!(
            bad.err()
                .and_then(|e| e.remote_class().map(str::to_string))
                .as_deref(),
            Some(class::INVALID_APPLICATION_MASTER_REQUEST)
        );
        let ok: pb::AllocateResponseProto = good
            .call_method(
                &ALLOCATE,
                &pb::AllocateRequestProto {
                    response_id: Some(0),
                    ..Default::default()
                },
            )
            .await
            .expect("allocate");
        assert_eq!(ok.response_id, Some(1));
        // The client port kept serving throughout.
        let _: pb::GetClusterMetricsResponseProto = client
            .call_method(&GET_CLUSTER_METRICS, &pb::GetClusterMetricsRequestProto {})
            .await
            .expect("still served");
    })
    .await
    .expect("test timed out");
}

/// When the AMRMToken master key rolls, the AM gets a token under the new
/// key in an allocate answer; a connection opened with it is accepted (the
/// scheduler port's verifier has the new key before that answer leaves,
/// as the state's owner publishes it), and the old token, under the key
/// now previous, still is.
#[tokio::test]
async fn a_rolled_amrm_key_verifies_new_connections() {
    tokio::time::timeout(Duration::from_secs(60), async {
        let rm = common::start_rm(&[(
            "yarn.resourcemanager.am-rm-tokens.master-key-rolling-interval-secs",
            "1",
        )])
        .await;
        let client = common::client_as(&rm, "alice").await;
        let app = common::submit(&client, true).await;
        let first = common::report(&client, app)
            .await
            .am_rm_token
            .expect("the owner's report carries the AMRMToken");
        let am = common::am_client(&rm, &first).await;
        register(&am).await.expect("register");
        let mut response_id = 0;
        let rolled = loop {
            let answer = common::allocate(&am, &mut response_id, Vec::new()).await;
            if let Some(token) = answer.am_rm_token {
                break token;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let key_of = |t: &hadoop_protos::common::TokenProto| {
            AmRmTokenIdentifier::decode(&t.identifier)
                .expect("identifier")
                .key_id
        };
        assert_ne!(key_of(&rolled), key_of(&first));
        for token in [&rolled, &first] {
            let fresh = common::am_client(&rm, token).await;
            let mut id = response_id;
            common::allocate(&fresh, &mut id, Vec::new()).await;
            response_id = id;
        }
    })
    .await
    .expect("test timed out");
}
