//! RM restart with `yarn.resourcemanager.recovery.enabled` over real IPC:
//! each RM runs on its own runtime, dropped whole to stop it as a crash
//! would (no shutdown step), and a new RM starts on the same store file.

use std::path::Path;
use std::time::Duration;

use hadoop_protos::yarn as pb;
use spindle_common::conf::Configuration;
use spindle_common::ids::ApplicationId;
use spindle_common::proto::app_id_to_pb;
use spindle_common::security::Token;
use spindle_ipc::client::ClientToken;
use spindle_ipc::{protocols, ClientOptions, IpcClient};
use spindle_rm::ResourceManager;

mod common;
use common::{report, submit, RM_ADDRESS_KEYS};

fn conf(store: &Path, extra: &[(&str, &str)]) -> Configuration {
    let mut conf = Configuration::with_defaults();
    for key in RM_ADDRESS_KEYS {
        conf.set(key, "127.0.0.1:0");
    }
    conf.set("yarn.resourcemanager.recovery.enabled", "true");
    conf.set(
        "spindle.resourcemanager.state-store.path",
        store.display().to_string(),
    );
    for (k, v) in extra {
        conf.set(k, *v);
    }
    conf
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

async fn client(rm: &ResourceManager) -> IpcClient {
    IpcClient::connect(
        &rm.addresses().client.to_string(),
        ClientOptions::new("alice", protocols::APPLICATION_CLIENT),
    )
    .await
    .expect("client connection")
}

fn state(r: &pb::ApplicationReportProto) -> Option<pb::YarnApplicationStateProto> {
    r.yarn_application_state
        .and_then(|v| pb::YarnApplicationStateProto::try_from(v).ok())
}

fn attempt_no(r: &pb::ApplicationReportProto) -> Option<i32> {
    r.current_application_attempt_id
        .as_ref()
        .and_then(|a| a.attempt_id)
}

async fn kill(client: &IpcClient, id: ApplicationId) {
    let _: pb::KillApplicationResponseProto = client
        .call(
            "forceKillApplication",
            &pb::KillApplicationRequestProto {
                application_id: Some(app_id_to_pb(&id)),
                diagnostics: None,
            },
        )
        .await
        .expect("kill");
}

async fn all_apps(client: &IpcClient) -> Vec<pb::ApplicationReportProto> {
    let r: pb::GetApplicationsResponseProto = client
        .call(
            "getApplications",
            &pb::GetApplicationsRequestProto::default(),
        )
        .await
        .expect("list");
    r.applications
}

/// Connects to the scheduler port with an AMRMToken: the RM verifies it.
async fn am_connect(rm: &ResourceManager, token: &Token) -> Result<IpcClient, String> {
    let options = ClientOptions::new("am", protocols::APPLICATION_MASTER).with_token(ClientToken {
        identifier: token.identifier.clone(),
        password: token.password.clone(),
        kind: token.kind.clone(),
        service: token.service.clone(),
    });
    let client = IpcClient::connect(&rm.addresses().scheduler.to_string(), options)
        .await
        .map_err(|e| e.to_string())?;
    // A call proves the connection was accepted.
    client
        .call::<_, pb::AllocateResponseProto>(
            "allocate",
            &pb::AllocateRequestProto {
                response_id: Some(0),
                ..Default::default()
            },
        )
        .await
        .map(|_| ())
        .or_else(|e| {
            let text = e.to_string();
            // An attempt the RM does not serve any more is refused by the
            // protocol, after authentication.
            if text.contains("ApplicationMasterNotRegistered")
                || text.contains("InvalidApplicationMasterRequest")
                || text.contains("ApplicationAttemptNotFound")
            {
                Ok(())
            } else {
                Err(text)
            }
        })?;
    Ok(client)
}

struct Before {
    accepted: ApplicationId,
    killed: ApplicationId,
    unmanaged: ApplicationId,
    token: Token,
    killed_diagnostics: String,
}

#[test]
fn applications_states_and_keys_survive_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("rmstore/spindle.redb");
    let conf = conf(&store, &[]);

    let rt = runtime();
    let before = rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let rm = ResourceManager::start(&conf, None)
                .await
                .expect("RM starts");
            assert_eq!(rm.epoch(), Some(0));
            let c = client(&rm).await;
            let accepted = submit(&c, false).await;
            let killed = submit(&c, false).await;
            kill(&c, killed).await;
            let unmanaged = submit(&c, true).await;
            let token = report(&c, unmanaged)
                .await
                .am_rm_token
                .map(Token::from_proto)
                .expect("the owner reads the AMRMToken");
            am_connect(&rm, &token)
                .await
                .expect("the token verifies before the restart");
            let killed_report = report(&c, killed).await;
            assert_eq!(
                state(&killed_report),
                Some(pb::YarnApplicationStateProto::Killed)
            );
            let figures = rm.store_figures().expect("store on");
            assert!(figures.writes >= 3, "{figures:?}");
            assert_eq!(figures.failures, 0);
            Before {
                accepted,
                killed,
                unmanaged,
                token,
                killed_diagnostics: killed_report.diagnostics.unwrap_or_default(),
            }
        })
        .await
        .expect("in time")
    });
    // The RM goes down as in a crash: every task dropped mid-flight.
    drop(rt);

    let rt = runtime();
    rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let rm = ResourceManager::start(&conf, None)
                .await
                .expect("RM starts again");
            assert_eq!(rm.epoch(), Some(1));
            let c = client(&rm).await;
            let listed = all_apps(&c).await;
            assert_eq!(listed.len(), 3, "{listed:?}");

            let killed = report(&c, before.killed).await;
            assert_eq!(state(&killed), Some(pb::YarnApplicationStateProto::Killed));
            assert_eq!(
                killed.diagnostics.unwrap_or_default(),
                before.killed_diagnostics
            );
            assert_eq!(killed.user.as_deref(), Some("alice"));

            // The unfinished managed application runs again in a new attempt.
            let accepted = report(&c, before.accepted).await;
            assert_eq!(
                state(&accepted),
                Some(pb::YarnApplicationStateProto::Accepted)
            );
            assert_eq!(attempt_no(&accepted), Some(2));

            // An unmanaged AM cannot be started again: its application fails.
            let unmanaged = report(&c, before.unmanaged).await;
            assert_eq!(
                state(&unmanaged),
                Some(pb::YarnApplicationStateProto::Failed)
            );

            // Tokens minted before the restart verify after it.
            am_connect(&rm, &before.token)
                .await
                .expect("the AMRMToken from before the restart verifies");

            // New ids never collide with recovered ones.
            let fresh = submit(&c, false).await;
            assert!(
                fresh.cluster_timestamp > before.accepted.cluster_timestamp,
                "{fresh} after {}",
                before.accepted
            );
            assert_eq!(all_apps(&c).await.len(), 4);
        })
        .await
        .expect("in time")
    });
    drop(rt);

    // What the second RM changed (the new attempt, the failure, the new
    // application) was stored too.
    let rt = runtime();
    rt.block_on(async {
        let rm = ResourceManager::start(&conf, None)
            .await
            .expect("RM starts a third time");
        assert_eq!(rm.epoch(), Some(2));
        let c = client(&rm).await;
        assert_eq!(all_apps(&c).await.len(), 4);
        let accepted = report(&c, before.accepted).await;
        assert_eq!(attempt_no(&accepted), Some(3));
        let unmanaged = report(&c, before.unmanaged).await;
        assert_eq!(
            state(&unmanaged),
            Some(pb::YarnApplicationStateProto::Failed)
        );
    });
}

#[test]
fn completed_applications_are_pruned_in_the_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("spindle.redb");
    let conf = conf(
        &store,
        &[(
            "yarn.resourcemanager.state-store.max-completed-applications",
            "2",
        )],
    );
    let rt = runtime();
    let ids = rt.block_on(async {
        let rm = ResourceManager::start(&conf, None)
            .await
            .expect("RM starts");
        let c = client(&rm).await;
        let mut ids = Vec::new();
        for _ in 0..4 {
            let id = submit(&c, false).await;
            kill(&c, id).await;
            ids.push(id);
        }
        // Still in memory (bounded by max-completed-applications, 1000).
        assert_eq!(all_apps(&c).await.len(), 4);
        ids
    });
    drop(rt);
    let rt = runtime();
    rt.block_on(async {
        let rm = ResourceManager::start(&conf, None)
            .await
            .expect("RM starts");
        let c = client(&rm).await;
        let mut back: Vec<ApplicationId> = all_apps(&c)
            .await
            .iter()
            .filter_map(|r| r.application_id)
            .map(|p| ApplicationId::new(p.cluster_timestamp.unwrap_or(0), p.id.unwrap_or(0)))
            .collect();
        back.sort();
        assert_eq!(back, ids[2..].to_vec());
    });
}

#[test]
fn a_store_the_rm_cannot_use_stops_it_with_the_file_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("spindle.redb");
    std::fs::write(&store, vec![0x33u8; 4096]).expect("write");
    let rt = runtime();
    rt.block_on(async {
        let err = ResourceManager::start(&conf(&store, &[]), None)
            .await
            .err()
            .expect("a corrupt store stops the RM");
        let msg = err.to_string();
        assert!(msg.contains(&store.display().to_string()), "{msg}");
        let err = ResourceManager::start(
            &conf(
                &store,
                &[(
                    "yarn.resourcemanager.store.class",
                    "org.apache.hadoop.yarn.server.resourcemanager.recovery.ZKRMStateStore",
                )],
            ),
            None,
        )
        .await
        .err()
        .expect("the ZooKeeper store without a ZooKeeper address is refused");
        assert!(err.to_string().contains("hadoop.zk.address"), "{err}");
    });
    assert_eq!(std::fs::read(&store).expect("kept"), vec![0x33u8; 4096]);
}

/// The RM configuration for the ZooKeeper store on `server`.
fn zk_conf(server: &spindle_integration::ZooKeeperServer) -> Configuration {
    let dir_unused = Path::new("/nonexistent/unused.redb");
    conf(
        dir_unused,
        &[
            (
                "yarn.resourcemanager.store.class",
                "org.apache.hadoop.yarn.server.resourcemanager.recovery.ZKRMStateStore",
            ),
            ("hadoop.zk.address", &server.connect_string()),
            ("hadoop.zk.timeout-ms", "4000"),
        ],
    )
}

#[test]
fn applications_survive_a_restart_on_the_zookeeper_store() {
    let Some(jars) = spindle_integration::ZooKeeperJars::for_tests() else {
        return;
    };
    let server = spindle_integration::ZooKeeperServer::start(&jars).expect("ZooKeeper starts");
    let conf = zk_conf(&server);
    let rt = runtime();
    let (accepted, killed) = rt.block_on(async {
        let rm = ResourceManager::start(&conf, None)
            .await
            .expect("RM starts on the ZooKeeper store");
        assert_eq!(rm.epoch(), Some(0));
        let c = client(&rm).await;
        let accepted = submit(&c, false).await;
        let killed = submit(&c, false).await;
        kill(&c, killed).await;
        (accepted, killed)
    });
    // A crash: every task dropped mid-flight.
    drop(rt);
    let rt = runtime();
    rt.block_on(async {
        let rm = ResourceManager::start(&conf, None)
            .await
            .expect("RM restarts on the ZooKeeper store");
        assert_eq!(rm.epoch(), Some(1));
        let c = client(&rm).await;
        let apps = all_apps(&c).await;
        assert_eq!(apps.len(), 2, "{apps:?}");
        assert_eq!(
            state(&report(&c, killed).await),
            Some(pb::YarnApplicationStateProto::Killed)
        );
        let r = report(&c, accepted).await;
        assert_ne!(state(&r), Some(pb::YarnApplicationStateProto::Killed));
    });
}

#[test]
fn an_rm_whose_zookeeper_store_was_taken_over_stops_acknowledging_changes() {
    let Some(jars) = spindle_integration::ZooKeeperJars::for_tests() else {
        return;
    };
    let server = spindle_integration::ZooKeeperServer::start(&jars).expect("ZooKeeper starts");
    let conf = zk_conf(&server);
    let rt = runtime();
    rt.block_on(async {
        let old = ResourceManager::start(&conf, None).await.expect("first RM");
        let old_client = client(&old).await;
        submit(&old_client, false).await;
        // A second RM opens the store (as a new active does): the first is fenced.
        let new = ResourceManager::start(&conf, None)
            .await
            .expect("second RM");
        assert_eq!(new.epoch(), Some(1));
        let new_app: pb::GetNewApplicationResponseProto = old_client
            .call("getNewApplication", &pb::GetNewApplicationRequestProto {})
            .await
            .expect("a new id (nothing stored yet)");
        let refused: Result<pb::SubmitApplicationResponseProto, _> = old_client
            .call(
                "submitApplication",
                &pb::SubmitApplicationRequestProto {
                    application_submission_context: Some(pb::ApplicationSubmissionContextProto {
                        application_id: new_app.application_id,
                        unmanaged_am: Some(true),
                        resource: Some(pb::ResourceProto {
                            memory: Some(1024),
                            virtual_cores: Some(1),
                            resource_value_map: Vec::new(),
                        }),
                        ..Default::default()
                    }),
                },
            )
            .await;
        assert!(
            refused.is_err(),
            "the fenced RM must not acknowledge a submission: {refused:?}"
        );
        let new_client = client(&new).await;
        submit(&new_client, false).await;
        assert_eq!(all_apps(&new_client).await.len(), 2);
    });
}
