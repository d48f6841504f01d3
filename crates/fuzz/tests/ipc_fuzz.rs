//! The IPC fuzzer against a real ResourceManager and a real NodeManager (both in this
//! process, on loopback ports), over every port: the RM's client, admin, resource
//! tracker and scheduler ports, the NM's container-management port.
//!
//! For each port, `SPINDLE_FUZZ_FRAMES` mutated cases (default 5,000; one case is one
//! connection carrying one mutated seed stream) are sent in batches of 500, eight
//! connections at a time. After every batch the test checks that
//! - nothing has panicked anywhere in the process (a panic hook counts them; a handler
//!   panic that the IPC server turns into an error reply counts too);
//! - the process's resident memory (`VmRSS`) is under `SPINDLE_FUZZ_RSS_MIB` (default
//!   512 MiB, a generous safety bound, not a measurement);
//! - real requests are still served on every port (`getClusterMetrics`,
//!   `getGroupsForUser`, the real NodeManager still RUNNING in `getClusterNodes`, an
//!   AMRMToken login and `allocate` on the scheduler port, `getContainerStatuses` on
//!   the NodeManager);
//! - no case left its connection open once the fuzzer had half-closed it.
//!
//! `SPINDLE_FUZZ_SEED` (default 0x5eed_0014) picks the cases; a run is reproducible.
//! See docs/fuzzing.md.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use hadoop_protos::yarn as pb;
use spindle_common::conf::{keys, Configuration};
use spindle_common::security::Token;
use spindle_fuzz::seeds::{self, Port};
use spindle_fuzz::{mutate, play, rss_mib, Case, Outcome, Rng, Stream};
use spindle_ipc::methods::application_client::{
    GET_APPLICATION_REPORT, GET_CLUSTER_METRICS, GET_CLUSTER_NODES, GET_NEW_APPLICATION,
    SUBMIT_APPLICATION,
};
use spindle_ipc::methods::application_master::ALLOCATE;
use spindle_ipc::methods::container_management::GET_CONTAINER_STATUSES;
use spindle_ipc::methods::resource_manager_administration::GET_GROUPS_FOR_USER;
use spindle_ipc::{protocols, ClientOptions, IpcClient, IpcError};
use spindle_nm::{NodeManager, NodeManagerHandle};
use spindle_rm::ResourceManager;

const BATCH: u64 = 500;
const PARALLEL: usize = 8;
/// Bound on each step of one case (connect, write, read until closed).
const CASE_LIMIT: Duration = Duration::from_secs(20);
/// Bound on each real request of the checks.
const CHECK_LIMIT: Duration = Duration::from_secs(20);

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => {
            let v = v.trim();
            let parsed = match v.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16).ok(),
                None => v.parse().ok(),
            };
            parsed.unwrap_or_else(|| panic!("{name}={v:?} is not a number"))
        }
        Err(_) => default,
    }
}

/// Panics anywhere in the process, with their messages.
fn panics() -> &'static Mutex<Vec<String>> {
    static PANICS: OnceLock<Mutex<Vec<String>>> = OnceLock::new();
    PANICS.get_or_init(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if let Some(p) = PANICS.get() {
                p.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(info.to_string());
            }
            default(info);
        }));
        Mutex::new(Vec::new())
    })
}

struct Cluster {
    rm: ResourceManager,
    nm: NodeManagerHandle,
    am_token: Token,
    am_user: String,
    _dir: tempfile::TempDir,
}

impl Cluster {
    async fn start() -> Cluster {
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
        let rm = ResourceManager::start(&conf, None)
            .await
            .expect("the ResourceManager starts");
        let dir = tempfile::tempdir().expect("a temporary directory");
        let nm = start_nm(dir.path(), rm.addresses().resource_tracker).await;
        let (am_token, am_user) = unmanaged_am_token(&rm).await;
        Cluster {
            rm,
            nm,
            am_token,
            am_user,
            _dir: dir,
        }
    }

    fn addr(&self, port: Port) -> SocketAddr {
        let a = self.rm.addresses();
        match port {
            Port::Client => a.client,
            Port::Admin => a.admin,
            Port::Tracker => a.resource_tracker,
            Port::Scheduler => a.scheduler,
            Port::ContainerManager => self.nm.container_manager_addr(),
        }
    }
}

async fn start_nm(dir: &Path, tracker: SocketAddr) -> NodeManagerHandle {
    let mut conf = Configuration::with_defaults();
    conf.set(keys::NM_ADDRESS, "127.0.0.1:0");
    conf.set(keys::NM_WEBAPP_ADDRESS, "127.0.0.1:0");
    conf.set(keys::RM_RESOURCE_TRACKER_ADDRESS, tracker.to_string());
    conf.set(keys::NM_RESOURCE_MEMORY_MB, "4096");
    conf.set(keys::NM_RESOURCE_CPU_VCORES, "4");
    conf.set(keys::NM_LOCAL_DIRS, dir.join("local").display().to_string());
    conf.set(keys::NM_LOG_DIRS, dir.join("logs").display().to_string());
    conf.set(keys::NM_DISK_HEALTH_CHECKER_ENABLE, "false");
    let nm = NodeManager::start(&conf)
        .await
        .expect("the NodeManager starts");
    tokio::time::timeout(CHECK_LIMIT, nm.wait_registered())
        .await
        .expect("the NodeManager registers in time")
        .expect("the NodeManager registers");
    nm
}

async fn client(addr: SocketAddr, user: &str, protocol: &str) -> IpcClient {
    tokio::time::timeout(
        CHECK_LIMIT,
        IpcClient::connect(&addr.to_string(), ClientOptions::new(user, protocol)),
    )
    .await
    .expect("connect in time")
    .unwrap_or_else(|e| panic!("connect to {addr}: {e}"))
}

/// Submits an unmanaged application and reads its AMRMToken from the report, as
/// Hadoop's UnmanagedAMLauncher does; the scheduler-port check logs in with it.
async fn unmanaged_am_token(rm: &ResourceManager) -> (Token, String) {
    let c = client(rm.addresses().client, "fuzz", protocols::APPLICATION_CLIENT).await;
    let new: pb::GetNewApplicationResponseProto = c
        .call_method(&GET_NEW_APPLICATION, &pb::GetNewApplicationRequestProto {})
        .await
        .expect("a new application");
    let id = new.application_id.expect("an application id");
    let ctx = pb::ApplicationSubmissionContextProto {
        application_id: Some(id),
        application_name: Some("fuzz-checker".into()),
        unmanaged_am: Some(true),
        resource: Some(pb::ResourceProto {
            memory: Some(1024),
            virtual_cores: Some(1),
            resource_value_map: Vec::new(),
        }),
        ..Default::default()
    };
    let _: pb::SubmitApplicationResponseProto = c
        .call_method(
            &SUBMIT_APPLICATION,
            &pb::SubmitApplicationRequestProto {
                application_submission_context: Some(ctx),
            },
        )
        .await
        .expect("submit");
    let deadline = Instant::now() + CHECK_LIMIT;
    loop {
        let report: pb::GetApplicationReportResponseProto = c
            .call_method(
                &GET_APPLICATION_REPORT,
                &pb::GetApplicationReportRequestProto {
                    application_id: Some(id),
                },
            )
            .await
            .expect("report");
        let report = report.application_report.expect("a report");
        if let Some(token) = report.am_rm_token {
            let attempt = report
                .current_application_attempt_id
                .expect("the attempt of an unmanaged AM");
            let user = format!(
                "appattempt_{}_{:04}_{:06}",
                id.cluster_timestamp.unwrap_or(0),
                id.id.unwrap_or(0),
                attempt.attempt_id.unwrap_or(0)
            );
            let token = Token {
                identifier: token.identifier,
                password: token.password,
                kind: token.kind,
                service: token.service,
            };
            return (token, user);
        }
        assert!(Instant::now() < deadline, "no AMRMToken in the report");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A call that got an answer: a reply or an error reply (an exception the server
/// sent), not a broken or hung connection.
fn answered<T>(what: &str, r: Result<Result<T, IpcError>, tokio::time::error::Elapsed>) {
    match r {
        Err(_) => panic!("{what}: no answer within {} s", CHECK_LIMIT.as_secs()),
        Ok(Ok(_)) | Ok(Err(IpcError::Remote { .. })) => {}
        Ok(Err(e)) => panic!("{what}: {e}"),
    }
}

/// Real requests on every port.
async fn still_serves(cluster: &Cluster, after: &str) {
    let c = client(
        cluster.addr(Port::Client),
        "checker",
        protocols::APPLICATION_CLIENT,
    )
    .await;
    let metrics: pb::GetClusterMetricsResponseProto = tokio::time::timeout(
        CHECK_LIMIT,
        c.call_method(&GET_CLUSTER_METRICS, &pb::GetClusterMetricsRequestProto {}),
    )
    .await
    .unwrap_or_else(|_| panic!("getClusterMetrics {after}: no answer"))
    .unwrap_or_else(|e| panic!("getClusterMetrics {after}: {e}"));
    assert!(metrics.cluster_metrics.is_some(), "{after}");
    let nodes: pb::GetClusterNodesResponseProto = tokio::time::timeout(
        CHECK_LIMIT,
        c.call_method(
            &GET_CLUSTER_NODES,
            &pb::GetClusterNodesRequestProto {
                node_states: vec![pb::NodeStateProto::NsRunning as i32],
            },
        ),
    )
    .await
    .unwrap_or_else(|_| panic!("getClusterNodes {after}: no answer"))
    .unwrap_or_else(|e| panic!("getClusterNodes {after}: {e}"));
    let real = cluster.nm.node_id();
    assert!(
        nodes
            .node_reports
            .iter()
            .any(|n| n
                .node_id
                .as_ref()
                .is_some_and(|id| id.host.as_deref() == Some(real.host.as_str())
                    && id.port == Some(real.port))),
        "{after}: the real NodeManager {real} is no longer RUNNING"
    );

    let admin = client(
        cluster.addr(Port::Admin),
        "checker",
        protocols::RESOURCE_MANAGER_ADMINISTRATION,
    )
    .await;
    answered::<pb::GetGroupsForUserResponseProto>(
        &format!("getGroupsForUser {after}"),
        tokio::time::timeout(
            CHECK_LIMIT,
            admin.call_method(
                &GET_GROUPS_FOR_USER,
                &pb::GetGroupsForUserRequestProto {
                    user: "checker".into(),
                },
            ),
        )
        .await,
    );

    let am = tokio::time::timeout(
        CHECK_LIMIT,
        IpcClient::connect(
            &cluster.addr(Port::Scheduler).to_string(),
            ClientOptions::new(cluster.am_user.clone(), protocols::APPLICATION_MASTER)
                .with_token(cluster.am_token.clone()),
        ),
    )
    .await
    .unwrap_or_else(|_| panic!("AMRMToken login {after}: no answer"))
    .unwrap_or_else(|e| panic!("AMRMToken login {after}: {e}"));
    answered::<pb::AllocateResponseProto>(
        &format!("allocate {after}"),
        tokio::time::timeout(
            CHECK_LIMIT,
            am.call_method(
                &ALLOCATE,
                &pb::AllocateRequestProto {
                    response_id: Some(0),
                    progress: Some(0.0),
                    ..Default::default()
                },
            ),
        )
        .await,
    );

    let nm = client(
        cluster.addr(Port::ContainerManager),
        "checker",
        protocols::CONTAINER_MANAGEMENT,
    )
    .await;
    answered::<pb::GetContainerStatusesResponseProto>(
        &format!("getContainerStatuses {after}"),
        tokio::time::timeout(
            CHECK_LIMIT,
            nm.call_method(
                &GET_CONTAINER_STATUSES,
                &pb::GetContainerStatusesRequestProto::default(),
            ),
        )
        .await,
    );
}

#[derive(Default)]
struct Tally {
    closed: AtomicUsize,
    reset: AtomicUsize,
    answered: AtomicUsize,
    hung: Mutex<Vec<Case>>,
}

async fn run_batch(addr: SocketAddr, cases: Vec<Case>, tally: &Arc<Tally>) {
    let limit = Arc::new(tokio::sync::Semaphore::new(PARALLEL));
    let mut set = tokio::task::JoinSet::new();
    for case in cases {
        let permit = limit
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore stays open");
        let tally = tally.clone();
        set.spawn(async move {
            match play(addr, &case.bytes, CASE_LIMIT).await {
                Outcome::Closed { reply_bytes } => {
                    tally.closed.fetch_add(1, Ordering::Relaxed);
                    if reply_bytes > 0 {
                        tally.answered.fetch_add(1, Ordering::Relaxed);
                    }
                }
                Outcome::Reset => {
                    tally.reset.fetch_add(1, Ordering::Relaxed);
                }
                Outcome::Hung => tally
                    .hung
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(case),
            }
            drop(permit);
        });
    }
    while let Some(done) = set.join_next().await {
        done.expect("a case task");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutated_client_streams_never_break_the_daemons() {
    let panics = panics();
    let frames = env_u64("SPINDLE_FUZZ_FRAMES", 5_000);
    let seed = env_u64("SPINDLE_FUZZ_SEED", 0x5eed_0014);
    let rss_cap = env_u64("SPINDLE_FUZZ_RSS_MIB", 512) as f64;
    let cluster = Cluster::start().await;
    still_serves(&cluster, "before fuzzing").await;

    let all = seeds::all();
    let every_seed: Vec<Stream> = all.iter().flat_map(|(_, s)| s.clone()).collect();
    let started = Instant::now();
    let mut rss_max = rss_mib().unwrap_or(0.0);
    let mut report = Vec::new();
    for (port_index, (port, port_seeds)) in all.iter().enumerate() {
        let addr = cluster.addr(*port);
        let tally = Arc::new(Tally::default());
        let mut index = 0u64;
        while index < frames {
            let end = (index + BATCH).min(frames);
            let cases: Vec<Case> = (index..end)
                .map(|i| {
                    let mut rng = Rng::for_case(seed, port_index, i);
                    let s = &port_seeds[rng.below(port_seeds.len())];
                    mutate(s, &every_seed, &mut rng)
                })
                .collect();
            run_batch(addr, cases, &tally).await;
            index = end;
            let after = format!("{index} cases on {}", port.name());
            let seen = panics.lock().unwrap_or_else(|e| e.into_inner()).clone();
            assert!(
                seen.is_empty(),
                "panics after {after}:\n{}",
                seen.join("\n")
            );
            let hung = tally.hung.lock().unwrap_or_else(|e| e.into_inner()).clone();
            assert!(
                hung.is_empty(),
                "{} connections stayed open after the fuzzer half-closed them ({after}); \
                 first: seed {} with {:?}, bytes {:02x?}",
                hung.len(),
                hung[0].seed,
                hung[0].mutations,
                hung[0].bytes
            );
            let rss = rss_mib().unwrap_or(0.0);
            rss_max = rss_max.max(rss);
            assert!(
                rss <= rss_cap,
                "resident memory {rss:.1} MiB exceeds {rss_cap} MiB after {after}"
            );
            still_serves(&cluster, &format!("after {after}")).await;
        }
        report.push(format!(
            "{}: {frames} cases, {} closed by the server ({} with a reply), {} reset",
            port.name(),
            tally.closed.load(Ordering::Relaxed),
            tally.answered.load(Ordering::Relaxed),
            tally.reset.load(Ordering::Relaxed),
        ));
    }
    eprintln!(
        "ipc fuzz: seed {seed:#x}, {} cases in {:.1} s, peak RSS {rss_max:.1} MiB (bound {rss_cap} MiB)\n  {}",
        frames * all.len() as u64,
        started.elapsed().as_secs_f64(),
        report.join("\n  ")
    );
}
