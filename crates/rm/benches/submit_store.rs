//! Submit latency with the state store off and on (docs/benchmarks.md):
//! an in-process RM over real IPC, one client submitting managed
//! applications one after another; the latency of `submitApplication` is
//! measured at the client, and the RM's own store write figures are printed.
//!
//! `cargo bench -p spindle-rm --bench submit_store [-- N]` (N submissions per
//! mode, 1000 by default).

use std::time::{Duration, Instant};

use hadoop_protos::yarn as pb;
use spindle_common::conf::Configuration;
use spindle_ipc::{protocols, ClientOptions, IpcClient};
use spindle_rm::ResourceManager;

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

async fn run(store: Option<&std::path::Path>, n: usize) -> Result<(), String> {
    let mut conf = Configuration::with_defaults();
    for key in [
        "yarn.resourcemanager.address",
        "yarn.resourcemanager.scheduler.address",
        "yarn.resourcemanager.resource-tracker.address",
        "yarn.resourcemanager.admin.address",
    ] {
        conf.set(key, "127.0.0.1:0");
    }
    conf.set("yarn.scheduler.capacity.maximum-applications", "100000");
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
    let client = IpcClient::connect(
        &rm.addresses().client.to_string(),
        ClientOptions::new("bench", protocols::APPLICATION_CLIENT),
    )
    .await
    .map_err(|e| e.to_string())?;
    let mut took = Vec::with_capacity(n);
    for i in 0..n + n / 10 {
        let new: pb::GetNewApplicationResponseProto = client
            .call("getNewApplication", &pb::GetNewApplicationRequestProto {})
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
            .call(
                "submitApplication",
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
    took.sort();
    println!(
        "store {}: {n} submissions, p50 {:?}, p99 {:?}, max {:?}",
        if store.is_some() { "on " } else { "off" },
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

fn main() -> Result<(), String> {
    let n = std::env::args()
        .skip(1)
        .find_map(|a| a.parse::<usize>().ok())
        .unwrap_or(1000);
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    // Each mode on its own runtime, so the first RM is gone before the second.
    for store in [None, Some(dir.path().join("spindle.redb"))] {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        rt.block_on(run(store.as_deref(), n))?;
    }
    Ok(())
}
