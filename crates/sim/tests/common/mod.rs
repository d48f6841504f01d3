//! Helpers shared by the simulator's integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

use spindle_sim::{Progress, SimError, SimOptions, WorkloadSource, WorkloadSpec};

/// A path in the workspace.
pub fn workspace(p: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(p)
}

pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Options for an inline JSON workload.
pub fn inline(json: &str) -> Result<SimOptions, SimError> {
    let spec = WorkloadSpec::parse(json, "inline workload")?;
    let mut o = SimOptions::new(WorkloadSource::Spec {
        spec: Box::new(spec),
        origin: "inline workload".into(),
        base_dir: PathBuf::from(env!("CARGO_MANIFEST_DIR")),
    });
    o.progress = Progress::Never;
    Ok(o)
}

pub fn file(p: &str) -> SimOptions {
    let mut o = SimOptions::new(WorkloadSource::File(workspace(p)));
    o.progress = Progress::Never;
    o
}

/// A small elastic cluster with bursts of MapReduce and Spark-like jobs
/// and a service: enough to exercise every part of the engine in well
/// under a second of debug-build time.
pub const SMALL_ELASTIC: &str = r#"{
  "name": "small-elastic",
  "horizon_s": 14400,
  "sample_interval_s": 30,
  "scheduler": {
    "kind": "fair",
    "placement": "spread",
    "packing_min_nodes": 2,
    "queues": [{"path": "etl", "weight": 2}, {"path": "adhoc", "weight": 1}]
  },
  "cluster": {
    "pools": [{"name": "w", "count": 2, "memory_mb": 16384, "vcores": 16, "racks": 2}],
    "elastic": {"min_nodes": 2, "max_nodes": 16, "provisioning_delay_s": 60,
                "scale_up_wait_s": 120, "scale_down_idle_s": 300, "check_interval_s": 15}
  },
  "jobs": [
    {"name": "etl", "kind": "mapreduce", "queue": "etl",
     "arrivals": [{"periodic_bursts": {"from_s": 600, "until_s": 10800, "every_s": 3600, "jobs": 4, "within_s": 120}}],
     "maps": {"count": {"mean": 12, "std": 4}, "duration_s": {"mean": 60, "std": 30},
              "memory_mb": 2048, "locality": {"node_fraction": 0.6, "rack_fraction": 0.2}},
     "reduces": {"count": 2, "duration_s": 90, "memory_mb": 3072}},
    {"name": "adhoc", "kind": "spark", "queue": "adhoc",
     "arrivals": [{"poisson": {"rate_per_hour": 4, "until_s": 10800}}],
     "executors": {"count": {"min": 2, "max": 8}, "duration_s": {"exp_mean": 300}, "memory_mb": 4096, "vcores": 2}},
    {"name": "svc", "kind": "service", "queue": "adhoc",
     "arrivals": [{"at_s": [0]}], "lifetime_s": 7200,
     "containers": {"count": 2, "memory_mb": 1024}}
  ]
}"#;
