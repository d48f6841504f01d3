//! Submit latency with the state store off and on (docs/benchmarks.md):
//! an in-process RM over real IPC, clients submitting managed applications
//! one after another (one client, then 16 at once); the latency of `submitApplication` is
//! measured at the client, and the RM's own store write figures are printed.
//!
//! Then the start time of an RM whose store holds 10,000 finished
//! applications, until it answers a client.
//!
//! `cargo bench -p spindle-rm --bench submit_store [-- N]` (N submissions per
//! mode, 1000 by default, shared among the clients: one client, then 16 at
//! once).

use std::time::{Duration, Instant};

use hadoop_protos::yarn as pb;
use spindle_common::conf::Configuration;
use spindle_common::ids::{ApplicationAttemptId, ApplicationId};
use spindle_ipc::methods::application_client::{
    GET_CLUSTER_METRICS, GET_NEW_APPLICATION, SUBMIT_APPLICATION,
};
use spindle_ipc::{protocols, ClientOptions, IpcClient};
use spindle_rm::store::{RedbStore, StateStore, StoreOp, StoredApp, StoredAttempt};
use spindle_rm::ResourceManager;

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

/// One client submitting `n` applications one after another (plus a tenth
/// not counted, first); the latency of each counted `submitApplication`.
async fn submitter(addr: String, n: usize) -> Result<Vec<Duration>, String> {
    let client = IpcClient::connect(
        &addr,
        ClientOptions::new("bench", protocols::APPLICATION_CLIENT),
    )
    .await
    .map_err(|e| e.to_string())?;
    let mut took = Vec::with_capacity(n);
    for i in 0..n + n / 10 {
        let new: pb::GetNewApplicationResponseProto = client
            .call_method(&GET_NEW_APPLICATION, &pb::GetNewApplicationRequestProto {})
            .await
            .map_err(|e| e.to_string())?;
        let ctx = pb::ApplicationSubmissionContextProto {
            application_id: new.application_id,
            application_name: Some("bench".into()),
            am_container_spec: Some(pb::ContainerLaunchContextProto {
                command: vec!["true".into()],
                ..Default::default()
            }),
            resource: Some(pb::ResourceProto {
                memory: Some(1024),
                virtual_cores: Some(1),
                resource_value_map: Vec::new(),
            }),
            ..Default::default()
        };
        let started = Instant::now();
        let _: pb::SubmitApplicationResponseProto = client
            .call_method(
                &SUBMIT_APPLICATION,
                &pb::SubmitApplicationRequestProto {
                    application_submission_context: Some(ctx),
                },
            )
            .await
            .map_err(|e| e.to_string())?;
        // The first tenth warms up.
        if i >= n / 10 {
            took.push(started.elapsed());
        }
    }
    Ok(took)
}

/// An RM configuration with every port on the loopback interface, chosen
/// by the kernel.
fn loopback_conf() -> Configuration {
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
    conf
}

/// `clients` clients submitting `n` applications each, concurrently.
async fn run(store: Option<&std::path::Path>, n: usize, clients: usize) -> Result<(), String> {
    let mut conf = loopback_conf();
    conf.set("yarn.scheduler.capacity.maximum-applications", "1000000");
    conf.set(
        "yarn.scheduler.capacity.root.default.user-limit-factor",
        "100",
    );
    conf.set("yarn.resourcemanager.max-completed-applications", "1000000");
    if let Some(path) = store {
        conf.set("yarn.resourcemanager.recovery.enabled", "true");
        conf.set(
            "spindle.resourcemanager.state-store.path",
            path.display().to_string(),
        );
    }
    let rm = ResourceManager::start(&conf, None)
        .await
        .map_err(|e| e.to_string())?;
    let addr = rm.addresses().client.to_string();
    let started = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|_| tokio::spawn(submitter(addr.clone(), n)))
        .collect();
    let mut took = Vec::with_capacity(n * clients);
    for t in tasks {
        took.extend(t.await.map_err(|e| e.to_string())??);
    }
    let wall = started.elapsed();
    took.sort();
    let total = (n + n / 10) * clients;
    println!(
        "store {}, {clients:>2} client(s): {} submissions, {:.0}/s, p50 {:?}, p99 {:?}, max {:?}",
        if store.is_some() { "on " } else { "off" },
        n * clients,
        total as f64 / wall.as_secs_f64(),
        quantile(&took, 0.5),
        quantile(&took, 0.99),
        took.last().copied().unwrap_or_default(),
    );
    if let Some(f) = rm.store_figures() {
        println!(
            "  store writes: {} ({} ops, {} failed), mean {} µs, p50 < {} µs, p99 < {} µs, max {} µs",
            f.writes, f.ops, f.failures, f.mean_us, f.p50_us, f.p99_us, f.max_us
        );
    }
    Ok(())
}

/// A finished application's record, as the RM writes one.
fn finished(ts: i64, seq: i32) -> StoredApp {
    let id = ApplicationId::new(ts, seq);
    StoredApp {
        id: id.to_string(),
        user: "bench".into(),
        name: format!("job-{seq}"),
        queue: "default".into(),
        app_type: "SPARK".into(),
        tags: Vec::new(),
        priority: 0,
        am_memory_mb: 1024,
        am_vcores: 1,
        max_attempts: 2,
        unmanaged_am: false,
        keep_containers: false,
        acls: Vec::new(),
        state: "FINISHED".into(),
        final_status: "SUCCEEDED".into(),
        diagnostics: String::new(),
        submit_ms: 1,
        start_ms: 1,
        launch_ms: 2,
        finish_ms: 3 + seq as u64,
        am_host: "host".into(),
        am_rpc_port: 7000,
        tracking_url: "http://host:4040".into(),
        lifetime_expiry_ms: None,
        failed_attempts: 0,
        launch: None,
        attempts: vec![StoredAttempt {
            id: ApplicationAttemptId::new(id, 1).to_string(),
            state: "FINISHED".into(),
            final_status: "SUCCEEDED".into(),
            am_container: Some(format!("container_{ts}_{seq:04}_01_000001")),
            am_node: Some("host:8041".into()),
            host: "host".into(),
            rpc_port: 7000,
            tracking_url: "http://host:4040".into(),
            diagnostics: String::new(),
            start_ms: 2,
            finish_ms: 3 + seq as u64,
        }],
    }
}

/// Start time of an RM whose store holds `n` finished applications (all
/// kept: both max-completed bounds at `n`), to its first answered listing.
async fn restart(path: &std::path::Path, n: usize) -> Result<(), String> {
    {
        let (mut store, _) = RedbStore::open(path, 1).map_err(|e| e.to_string())?;
        let ops: Vec<StoreOp> = (1..=n as i32)
            .map(|seq| StoreOp::PutApp(Box::new(finished(1, seq))))
            .collect();
        store.write(&ops).map_err(|e| e.to_string())?;
    }
    let mut conf = loopback_conf();
    conf.set("yarn.resourcemanager.recovery.enabled", "true");
    conf.set(
        "yarn.resourcemanager.max-completed-applications",
        n.to_string(),
    );
    conf.set(
        "yarn.resourcemanager.state-store.max-completed-applications",
        n.to_string(),
    );
    conf.set(
        "spindle.resourcemanager.state-store.path",
        path.display().to_string(),
    );
    let started = Instant::now();
    let rm = ResourceManager::start(&conf, None)
        .await
        .map_err(|e| e.to_string())?;
    let client = IpcClient::connect(
        &rm.addresses().client.to_string(),
        ClientOptions::new("bench", protocols::APPLICATION_CLIENT),
    )
    .await
    .map_err(|e| e.to_string())?;
    let _: pb::GetClusterMetricsResponseProto = client
        .call_method(&GET_CLUSTER_METRICS, &pb::GetClusterMetricsRequestProto {})
        .await
        .map_err(|e| e.to_string())?;
    println!(
        "restart with {n} finished applications in the store: serving after {:?}",
        started.elapsed()
    );
    Ok(())
}

fn main() -> Result<(), String> {
    let n = std::env::args()
        .skip(1)
        .find_map(|a| a.parse::<usize>().ok())
        .unwrap_or(1000);
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    // Each run on its own runtime (and store file), so one RM is gone
    // before the next starts. One client measures a submission's latency;
    // 16 at once, what the RM sustains (with the store, their changes share
    // writes: group commit).
    for clients in [1, 16] {
        for store in [
            None,
            Some(dir.path().join(format!("spindle-{clients}.redb"))),
        ] {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            rt.block_on(run(store.as_deref(), n / clients.min(n), clients))?;
        }
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(restart(&dir.path().join("restart.redb"), 10_000))?;
    Ok(())
}
