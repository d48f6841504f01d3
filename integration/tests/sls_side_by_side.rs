//! SLS inputs side by side: `spindle sim` and Hadoop 3.3.4's own ResourceManager with its
//! CapacityScheduler (driven in real time by our SLS-style driver, integration/bin/sls-driver)
//! on the same trace, node file and queues; one table of both.
//!
//! * `sample_trace_runs_on_both_with_the_same_jobs_and_tasks` (runs in CI): Hadoop SLS's own
//!   sample trace and node file, its clock divided by 4 (the Hadoop side runs in real time:
//!   the sample's 200 s become 50 s), two queues of 50%.
//! * `generated_large_trace_side_by_side` (`#[ignore]`d, a measurement): the input of
//!   integration/bench/sls_gen.py (1,000 nodes, 1,000 jobs over 3 minutes, queues of 70% and
//!   30%), about 6 minutes of real time on the Hadoop side. `SLS_SIDE_DIR` keeps the inputs and
//!   outputs there; `SPINDLE_BIN` picks the spindle binary (e.g. a release build).
//!
//! Without Hadoop's server jars (integration/setup-maven.sh yarn-server) the tests print
//! `SKIP:` and pass, except under CI.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use spindle_integration::clients::integration_dir;
use spindle_integration::cluster::spindle_binary;
use spindle_integration::hadoop_yarn::YarnServerJars;
use spindle_integration::process::run_with_timeout;
use spindle_integration::sls_side::{
    generator, render_table, run_sls_driver, run_spindle_sim, scale_sls_trace, SideSummary,
};

fn fixture(name: &str) -> PathBuf {
    integration_dir()
        .parent()
        .expect("the repository")
        .join("crates/sim/tests/fixtures")
        .join(name)
}

/// Two leaves of 50%, each up to the whole cluster, Hadoop's default locality delay written
/// out; the same for both sides.
const SAMPLE_CAPACITY_SCHEDULER: &str = r#"<?xml version="1.0"?>
<configuration>
  <property><name>yarn.scheduler.capacity.root.queues</name><value>sls_queue_1,sls_queue_2</value></property>
  <property><name>yarn.scheduler.capacity.root.sls_queue_1.capacity</name><value>50</value></property>
  <property><name>yarn.scheduler.capacity.root.sls_queue_1.maximum-capacity</name><value>100</value></property>
  <property><name>yarn.scheduler.capacity.root.sls_queue_1.user-limit-factor</name><value>2</value></property>
  <property><name>yarn.scheduler.capacity.root.sls_queue_2.capacity</name><value>50</value></property>
  <property><name>yarn.scheduler.capacity.root.sls_queue_2.maximum-capacity</name><value>100</value></property>
  <property><name>yarn.scheduler.capacity.root.sls_queue_2.user-limit-factor</name><value>2</value></property>
  <property><name>yarn.scheduler.capacity.node-locality-delay</name><value>40</value></property>
</configuration>
"#;

fn sample_workload(trace: &Path, nodes: &Path) -> String {
    serde_json::json!({
        "name": "sls-sample-side-by-side",
        "sample_interval_s": 1,
        "scheduler": {
            "kind": "capacity",
            "locality_delay": {"capacity": {"node_locality_delay": 40}},
            "queues": [
                {"path": "root.sls_queue_1", "capacity": 50, "max": 100, "user_limit_factor": 2},
                {"path": "root.sls_queue_2", "capacity": 50, "max": 100, "user_limit_factor": 2}
            ]
        },
        "cluster": {"heartbeat_interval_ms": 1000, "am_heartbeat_interval_ms": 1000, "launch_delay_ms": 0},
        "sls": {"trace": trace.display().to_string(), "nodes": nodes.display().to_string()}
    })
    .to_string()
}

/// (job id, maps, reduces) per line of the driver's jobruntime.csv.
fn driver_jobs(csv: &str) -> Vec<(String, u64, u64)> {
    csv.lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert!(f.len() >= 7, "bad jobruntime line: {l}");
            let n = |i: usize| {
                f[i].parse::<u64>()
                    .unwrap_or_else(|_| panic!("bad number in {l}"))
            };
            (f[0].to_string(), n(2), n(3))
        })
        .collect()
}

fn assert_both_complete(hadoop: &SideSummary, spindle: &SideSummary, table: &str) {
    assert!(hadoop.apps_submitted > 0, "{table}");
    assert_eq!(
        hadoop.apps_completed, hadoop.apps_submitted,
        "Hadoop: every job completes\n{table}"
    );
    assert_eq!(
        spindle.apps_completed, spindle.apps_submitted,
        "spindle: every job completes\n{table}"
    );
    assert_eq!(
        hadoop.apps_submitted, spindle.apps_submitted,
        "the same jobs\n{table}"
    );
    assert_eq!(
        hadoop.tasks_completed, spindle.tasks_completed,
        "the same tasks\n{table}"
    );
    for side in [hadoop, spindle] {
        let total: f64 = side.queue_shares.values().sum();
        assert!(
            (total - 1.0).abs() < 1e-6,
            "shares sum to 1: {:?}\n{table}",
            side.queue_shares
        );
    }
    assert_eq!(
        hadoop.queue_shares.keys().collect::<Vec<_>>(),
        spindle.queue_shares.keys().collect::<Vec<_>>(),
        "both report the same leaf queues\n{table}"
    );
}

#[test]
fn sample_trace_runs_on_both_with_the_same_jobs_and_tasks() {
    let Some(_jars) = YarnServerJars::for_tests() else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temporary folder");
    let original = std::fs::read_to_string(fixture("inputsls.json")).expect("the sample trace");
    let trace = dir.path().join("inputsls-div4.json");
    std::fs::write(&trace, scale_sls_trace(&original, 4).expect("scaled")).expect("write trace");
    let nodes = fixture("nodes.json");
    let xml = dir.path().join("capacity-scheduler.xml");
    std::fs::write(&xml, SAMPLE_CAPACITY_SCHEDULER).expect("write queues");
    let workload = dir.path().join("workload.json");
    std::fs::write(&workload, sample_workload(&trace, &nodes)).expect("write workload");

    let binary = spindle_binary().expect("the spindle binary");
    let spindle =
        run_spindle_sim(&binary, &workload, &dir.path().join("spindle")).expect("spindle sim runs");
    let (hadoop, jobs) = run_sls_driver(
        &trace,
        &nodes,
        &xml,
        &dir.path().join("hadoop"),
        Duration::from_secs(300),
    )
    .expect("the driver runs");
    let table = render_table(&hadoop, &spindle);
    println!("{table}");

    assert_both_complete(&hadoop, &spindle, &table);
    // The sample: job_1 (3 maps) in sls_queue_1, job_2 (2 maps) in sls_queue_2.
    assert_eq!(
        driver_jobs(&jobs),
        [("job_1".to_string(), 3, 0), ("job_2".to_string(), 2, 0)],
        "{jobs}"
    );
    assert_eq!(spindle.tasks_completed, 5, "{table}");
    // Five tasks and two AM containers, at least, on each side.
    assert!(
        hadoop.allocations >= 7 && spindle.allocations >= 7,
        "{table}"
    );
    // Both queues ran something on both sides.
    for side in [&hadoop, &spindle] {
        for q in ["sls_queue_1", "sls_queue_2"] {
            assert!(
                side.queue_shares.get(q).is_some_and(|s| *s > 0.0),
                "{q}\n{table}"
            );
        }
    }
    assert!(hadoop.allocate_ms_p99.is_some_and(|p| p > 0.0), "{table}");
}

#[test]
#[ignore = "a measurement: about 6 minutes of real time on the Hadoop side"]
fn generated_large_trace_side_by_side() {
    let Some(_jars) = YarnServerJars::for_tests() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("a temporary folder");
    let dir = std::env::var_os("SLS_SIDE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| tmp.path().to_path_buf());
    let mut gen = Command::new("python3");
    gen.arg(generator()).arg(&dir);
    let out = run_with_timeout(gen, Duration::from_secs(300)).expect("the generator runs");
    assert!(out.success(), "{out}");

    let binary = spindle_binary().expect("the spindle binary");
    println!("spindle binary: {}", binary.display());
    let spindle = run_spindle_sim(
        &binary,
        &dir.join("spindle-workload.json"),
        &dir.join("spindle"),
    )
    .expect("spindle sim runs");
    let (hadoop, _jobs) = run_sls_driver(
        &dir.join("trace.json"),
        &dir.join("nodes.json"),
        &dir.join("capacity-scheduler.xml"),
        &dir.join("hadoop"),
        Duration::from_secs(3600),
    )
    .expect("the driver runs");
    let table = render_table(&hadoop, &spindle);
    println!("{table}");
    assert_both_complete(&hadoop, &spindle, &table);
}
