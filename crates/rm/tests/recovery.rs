//! RM restart with `yarn.resourcemanager.recovery.enabled` over real IPC:
//! each RM runs on its own runtime, dropped whole to stop it as a crash
//! would (no shutdown step), and a new RM starts on the same store file.

use std::path::Path;
use std::time::{Duration, Instant};

use hadoop_protos::yarn as pb;
use spindle_am::{AmRmClient, AmRmConfig, ContainerRequest, FinalStatus};
use spindle_common::conf::Configuration;
use spindle_common::ids::{ApplicationAttemptId, ApplicationId, ContainerId};
use spindle_common::proto::{app_id_to_pb, container_id_to_pb};
use spindle_common::resource::Resource;
use spindle_common::security::Token;
use spindle_ipc::methods::application_client::{
    FORCE_KILL_APPLICATION, GET_APPLICATIONS, GET_NEW_APPLICATION, GET_QUEUE_INFO,
    SUBMIT_APPLICATION,
};
use spindle_ipc::methods::application_master::ALLOCATE;
use spindle_ipc::{protocols, ClientOptions, IpcClient};
use spindle_rm::ResourceManager;

mod common;
use common::{report, submit, FakeNm, RM_ADDRESS_KEYS};

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
        .call_method(
            &FORCE_KILL_APPLICATION,
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
        .call_method(
            &GET_APPLICATIONS,
            &pb::GetApplicationsRequestProto::default(),
        )
        .await
        .expect("list");
    r.applications
}

/// Connects to the scheduler port with an AMRMToken: the RM verifies it.
async fn am_connect(rm: &ResourceManager, token: &Token) -> Result<IpcClient, String> {
    let options = ClientOptions::new("am", protocols::APPLICATION_MASTER).with_token(Token {
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
        .call_method(
            &ALLOCATE,
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
fn without_work_preserving_recovery_applications_states_and_keys_survive_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("rmstore/spindle.redb");
    let conf = conf(
        &store,
        &[(
            "yarn.resourcemanager.work-preserving-recovery.enabled",
            "false",
        )],
    );

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

/// Submissions from many clients at once share store writes (group
/// commit); each is still acknowledged only once written: every one comes
/// back after a restart.
#[test]
fn concurrent_submissions_are_all_kept() {
    const CLIENTS: usize = 8;
    const EACH: usize = 12;
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("spindle.redb");
    let conf = conf(&store, &[]);
    let rt = runtime();
    let mut acknowledged = rt.block_on(async {
        let rm = ResourceManager::start(&conf, None)
            .await
            .expect("RM starts");
        let addr = rm.addresses().client.to_string();
        let tasks: Vec<_> = (0..CLIENTS)
            .map(|_| {
                let addr = addr.clone();
                tokio::spawn(async move {
                    let c = IpcClient::connect(
                        &addr,
                        ClientOptions::new("alice", protocols::APPLICATION_CLIENT),
                    )
                    .await
                    .expect("connect");
                    let mut ids = Vec::new();
                    for _ in 0..EACH {
                        ids.push(submit(&c, false).await);
                    }
                    ids
                })
            })
            .collect();
        let mut ids = Vec::new();
        for t in tasks {
            ids.extend(t.await.expect("submitter"));
        }
        let f = rm.store_figures().expect("store figures");
        assert!(f.writes >= 1 && f.failures == 0, "{f:?}");
        ids
    });
    drop(rt);
    let rt = runtime();
    let mut back: Vec<ApplicationId> = rt.block_on(async {
        let rm = ResourceManager::start(&conf, None)
            .await
            .expect("RM starts again");
        all_apps(&client(&rm).await)
            .await
            .iter()
            .filter_map(|r| r.application_id)
            .map(|p| ApplicationId::new(p.cluster_timestamp.unwrap_or(0), p.id.unwrap_or(0)))
            .collect()
    });
    acknowledged.sort();
    back.sort();
    assert_eq!(back.len(), CLIENTS * EACH);
    assert_eq!(back, acknowledged);
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
            .call_method(&GET_NEW_APPLICATION, &pb::GetNewApplicationRequestProto {})
            .await
            .expect("a new id (nothing stored yet)");
        let refused: Result<pb::SubmitApplicationResponseProto, _> = old_client
            .call_method(
                &SUBMIT_APPLICATION,
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

/// Free loopback addresses, one per RM port (bound, then let go), so that a restarted
/// RM serves where its predecessor did and the AM and NM find it again.
fn fixed_addresses() -> Vec<(&'static str, String)> {
    let listeners: Vec<std::net::TcpListener> = RM_ADDRESS_KEYS
        .iter()
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("bind"))
        .collect();
    RM_ADDRESS_KEYS
        .iter()
        .zip(&listeners)
        .map(|(k, l)| (*k, l.local_addr().expect("addr").to_string()))
        .collect()
}

fn nm_status(container: ContainerId) -> pb::NmContainerStatusProto {
    pb::NmContainerStatusProto {
        container_id: Some(container_id_to_pb(&container)),
        container_state: Some(pb::ContainerStateProto::CRunning as i32),
        resource: Some(pb::ResourceProto {
            memory: Some(1024),
            virtual_cores: Some(1),
            resource_value_map: Vec::new(),
        }),
        ..Default::default()
    }
}

fn running_ids(containers: &[ContainerId]) -> Vec<pb::ContainerIdProto> {
    containers.iter().map(container_id_to_pb).collect()
}

/// What the application holds, as its report says (memory MB,
/// containers), and the default queue's used share of the cluster.
async fn usage(client: &IpcClient, app: ApplicationId) -> (i64, i32, f32) {
    let r = report(client, app).await;
    let u = r.app_resource_usage.unwrap_or_default();
    let queue: pb::GetQueueInfoResponseProto = client
        .call_method(
            &GET_QUEUE_INFO,
            &pb::GetQueueInfoRequestProto {
                queue_name: Some("default".into()),
                ..Default::default()
            },
        )
        .await
        .expect("queue info");
    (
        u.used_resources.and_then(|r| r.memory).unwrap_or(0),
        u.num_used_containers.unwrap_or(0),
        queue
            .queue_info
            .and_then(|q| q.current_capacity)
            .unwrap_or(0.0),
    )
}

/// Heartbeats the AM and the node (reporting `running`) until the AM has
/// been granted `n` containers, or the deadline.
async fn grant(
    am: &mut AmRmClient,
    nm: &mut FakeNm,
    running: &[ContainerId],
    n: usize,
) -> Vec<ContainerId> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut granted = Vec::new();
    while granted.len() < n {
        assert!(Instant::now() < deadline, "granted only {granted:?}");
        let mut all: Vec<ContainerId> = running.to_vec();
        all.extend(&granted);
        nm.heartbeat_with(&running_ids(&all)).await;
        let allocation = am.allocate(0.5).await.expect("allocate");
        for c in allocation.allocated {
            am.container_granted(&c);
            granted.push(c.id);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    granted
}

/// Work-preserving restart (`yarn.resourcemanager.work-preserving-recovery.enabled`,
/// Hadoop's default): the RM goes down as in a crash while an AM is
/// registered and holds containers on a node; the restarted RM keeps the
/// attempt, the node re-registers with its containers and they are counted
/// again, the AM (our AMRMClient) is told to register again, does, resends
/// its asks, gets more containers once the scheduling wait is over and
/// finishes SUCCEEDED in its one attempt.
#[test]
fn a_work_preserving_restart_keeps_the_running_application_and_its_containers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("spindle.redb");
    let addresses = fixed_addresses();
    let mut extra: Vec<(&str, &str)> = addresses.iter().map(|(k, v)| (*k, v.as_str())).collect();
    extra.push((
        "yarn.resourcemanager.work-preserving-recovery.scheduling-wait-ms",
        "2000",
    ));
    let conf = conf(&store, &extra);

    // The AM and the node run on their own runtime, which outlives both RMs.
    let outside = runtime();
    let rm_runtime = runtime();
    let rm = rm_runtime
        .block_on(ResourceManager::start(&conf, None))
        .expect("RM starts");
    let (client_addr, scheduler_addr, tracker) = (
        rm.addresses().client,
        rm.addresses().scheduler.to_string(),
        rm.addresses().resource_tracker,
    );
    let (mut am, app, held) = outside.block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let c = IpcClient::connect(
                &client_addr.to_string(),
                ClientOptions::new("alice", protocols::APPLICATION_CLIENT),
            )
            .await
            .expect("client");
            let mut nm = FakeNm::register(tracker, "h1", 8192).await;
            let app = submit(&c, true).await;
            let token = report(&c, app)
                .await
                .am_rm_token
                .map(Token::from_proto)
                .expect("AMRMToken");
            let attempt = ApplicationAttemptId::new(app, 1);
            let mut am = AmRmClient::new(AmRmConfig::new(scheduler_addr.clone(), attempt, token));
            am.register("am-host", -1, "").await.expect("register");
            am.add_request(&ContainerRequest::new(1, Resource::new(1024, 1)))
                .expect("ask");
            am.add_request(&ContainerRequest::new(1, Resource::new(1024, 1)))
                .expect("ask");
            let held = grant(&mut am, &mut nm, &[], 2).await;
            assert_eq!(usage(&c, app).await, (2048, 2, 0.25));
            (am, app, held)
        })
        .await
        .expect("in time")
    });
    // The RM goes down as in a crash.
    drop(rm_runtime);
    drop(rm);

    let restarted = std::time::Instant::now();
    let rm_runtime = runtime();
    let rm = rm_runtime
        .block_on(ResourceManager::start(&conf, None))
        .expect("RM starts again");
    assert_eq!(rm.epoch(), Some(1));
    outside.block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            let c = IpcClient::connect(
                &client_addr.to_string(),
                ClientOptions::new("alice", protocols::APPLICATION_CLIENT),
            )
            .await
            .expect("client");
            let before = report(&c, app).await;
            assert_eq!(
                state(&before),
                Some(pb::YarnApplicationStateProto::Accepted),
                "ACCEPTED until the AM registers again"
            );
            assert_eq!(attempt_no(&before), Some(1));
            // The node re-registers still running both containers: they
            // are counted again.
            let statuses = held.iter().copied().map(nm_status).collect();
            let mut nm =
                FakeNm::register_holding(tracker, "h1", 8192, statuses, vec![app_id_to_pb(&app)])
                    .await;
            assert_eq!(usage(&c, app).await, (2048, 2, 0.25));
            let answer = nm.heartbeat_with(&running_ids(&held)).await;
            assert!(
                answer.containers_to_cleanup.is_empty()
                    && answer.applications_to_cleanup.is_empty(),
                "{answer:?}"
            );

            // The AM's next heartbeat is refused; it registers again (with
            // the AMRMToken from before the restart) and resends its table.
            am.add_request(&ContainerRequest::new(1, Resource::new(1024, 1)))
                .expect("ask");
            let more = grant(&mut am, &mut nm, &held, 1).await;
            let waited = restarted.elapsed();
            assert!(!held.contains(&more[0]), "{more:?} {held:?}");
            assert_eq!(more[0].epoch(), 1, "{}", more[0]);
            let running = report(&c, app).await;
            assert_eq!(
                state(&running),
                Some(pb::YarnApplicationStateProto::Running)
            );
            let mut all = held.clone();
            all.extend(&more);
            nm.heartbeat_with(&running_ids(&all)).await;
            assert_eq!(usage(&c, app).await, (3072, 3, 0.375));
            eprintln!("restart to the first container granted after it: {waited:?}");

            am.finish(FinalStatus::Succeeded, "", "")
                .await
                .expect("finish");
            let done = report(&c, app).await;
            assert_eq!(state(&done), Some(pb::YarnApplicationStateProto::Finished));
            assert_eq!(
                done.final_application_status,
                Some(pb::FinalApplicationStatusProto::AppSucceeded as i32)
            );
            assert_eq!(attempt_no(&done), Some(1), "one attempt");
        })
        .await
        .expect("in time")
    });
    drop(rm_runtime);
    drop(rm);
}
