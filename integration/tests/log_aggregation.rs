//! Log aggregation end to end: Spark 3.5.3's pi.py in cluster mode on two Spindle
//! NodeManagers with `yarn.log-aggregation-enable`; when the application is over each
//! node uploads its containers' logs in Hadoop's aggregated format to the bucket layout
//! under `yarn.nodemanager.remote-app-log-dir` (`file://` here; `spark_hdfs.rs` does
//! the same on HDFS), the RM reports the aggregation SUCCEEDED, the node's own copies
//! are gone, and the stock Hadoop 3.3.4 `yarn logs` prints every container's stdout and
//! stderr, the driver's "Pi is roughly" among them, with `-containerId` and
//! `-log_files` narrowing it. A remote dir the node cannot write gives FAILED with the
//! reason, and the node keeps the logs.
//!
//! Without the client jars (integration/setup-clients.sh) the tests print `SKIP:` and
//! pass, except under CI, where they fail.

mod web_http;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use spindle_integration::logs::{
    containers_in, final_aggregation_status, minicluster_jar, yarn_logs,
};
use spindle_integration::process::run_with_timeout;
use spindle_integration::spark::{self, app_id_in, pi_py, Staging};
use spindle_integration::{Cluster, HadoopClients, NodeManagerSpec};

const TIMEOUT: Duration = Duration::from_secs(120);

fn start(clients: &HadoopClients, remote_dir: &str) -> Cluster {
    Cluster::builder()
        .heartbeat_interval_ms(500)
        .rm_property("yarn.log-aggregation-enable", "true")
        .rm_property("yarn.nodemanager.remote-app-log-dir", remote_dir)
        .nodemanager(NodeManagerSpec::new(4096, 4))
        .nodemanager(NodeManagerSpec::new(4096, 4))
        .start(clients)
        .expect("cluster starts")
}

fn pi_cluster_mode(cluster: &Cluster, clients: &HadoopClients) -> String {
    let pi = pi_py(clients);
    let cmd = spark::submit_command(
        cluster,
        clients,
        Staging::ClusterDir,
        &[
            "--deploy-mode",
            "cluster",
            pi.to_str().unwrap_or_default(),
            "4",
        ],
    );
    let out = run_with_timeout(cmd, Duration::from_secs(600)).expect("spark-submit runs");
    assert!(
        out.success(),
        "spark-submit failed:\n{out}\n{}",
        cluster.log_report()
    );
    app_id_in(&out).unwrap_or_else(|| panic!("no application id in the output:\n{out}"))
}

/// Every file below `dir` (recursively), as paths relative to it.
fn files_below(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(rel) = p.strip_prefix(dir) {
                out.push(rel.display().to_string());
            }
        }
    }
    out.sort();
    out
}

fn user() -> String {
    std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty())
        .or_else(|| {
            std::process::Command::new("id")
                .arg("-un")
                .output()
                .ok()
                .and_then(|o| String::from_utf8(o.stdout).ok())
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_default()
}

#[test]
fn spark_logs_are_aggregated_to_a_local_dir_and_yarn_logs_prints_them() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jettison) = minicluster_jar() else {
        return;
    };
    let remote = tempfile::tempdir().expect("a temp dir");
    let root = remote.path().join("app-logs");
    let cluster = start(&clients, &format!("file://{}", root.display()));

    let app = pi_cluster_mode(&cluster, &clients);
    let (status, report) = final_aggregation_status(&cluster, &app, TIMEOUT);
    assert_eq!(status, "SUCCEEDED", "{report}\n{}", cluster.log_report());
    // The REST API says the same (Hadoop's AppInfo.logAggregationStatus).
    let rest = web_http::get_json(cluster.rm().webapp, &format!("/ws/v1/cluster/apps/{app}"));
    assert_eq!(rest["app"]["logAggregationStatus"], "SUCCEEDED", "{rest}");

    // Hadoop 3.3's bucket layout: <root>/<user>/bucket-logs-tfile/<id % 10000>/<app>/<host>_<port>.
    let seq: u32 = app
        .rsplit('_')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("an application sequence number");
    let app_dir = root
        .join(user())
        .join("bucket-logs-tfile")
        .join(format!("{:04}", seq % 10_000))
        .join(&app);
    let uploaded = files_below(&app_dir);
    assert!(
        !uploaded.is_empty() && uploaded.iter().all(|f| !f.ends_with(".tmp")),
        "one finished file per node that ran containers in {}: {uploaded:?}\n{:?}",
        app_dir.display(),
        files_below(&root)
    );
    for name in &uploaded {
        let (host, port) = name.rsplit_once('_').expect("<host>_<port>");
        assert!(
            (0..2).any(|i| {
                let nm = cluster.nodemanager(i);
                nm.host().to_string() == host && nm.port().to_string() == port
            }),
            "{name} names one of the cluster's NodeManagers"
        );
    }
    // The nodes' own copies are gone once uploaded (delete.debug-delay-sec is 0).
    let deadline = Instant::now() + TIMEOUT;
    let local = |i: usize| cluster.root().join(format!("nm-{i}/logs")).join(&app);
    while (0..2).any(|i| local(i).exists()) {
        assert!(
            Instant::now() < deadline,
            "the nodes delete their copies of the logs after uploading them"
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // Every container's stdout and stderr, the driver's result among them.
    let all = yarn_logs(&cluster, &jettison, &["-applicationId", &app]);
    all.assert_success();
    assert!(all.stdout.contains("Pi is roughly"), "{all}");
    let containers = containers_in(&all);
    let am = containers
        .iter()
        .find(|c| c.ends_with("_01_000001"))
        .unwrap_or_else(|| panic!("the AM container is among {containers:?}:\n{all}"))
        .clone();
    assert!(
        containers.len() >= 2,
        "the driver and at least one executor: {containers:?}"
    );
    for file in ["LogType:stdout", "LogType:stderr"] {
        assert_eq!(
            all.stdout.lines().filter(|l| *l == file).count(),
            containers.len(),
            "every container has its {file}:\n{all}"
        );
    }
    assert!(
        all.stdout.contains("LogAggregationType: AGGREGATED"),
        "{all}"
    );

    // One container, one file.
    let driver = yarn_logs(
        &cluster,
        &jettison,
        &[
            "-applicationId",
            &app,
            "-containerId",
            &am,
            "-log_files",
            "stdout",
        ],
    );
    driver.assert_success();
    assert!(driver.stdout.contains("Pi is roughly"), "{driver}");
    assert!(!driver.stdout.contains("LogType:stderr"), "{driver}");
    assert_eq!(
        containers_in(&driver),
        BTreeSet::from([am.clone()]),
        "{driver}"
    );
    let stderr_only = yarn_logs(
        &cluster,
        &jettison,
        &[
            "-applicationId",
            &app,
            "-containerId",
            &am,
            "-log_files",
            "stderr",
        ],
    );
    stderr_only.assert_success();
    assert!(
        !stderr_only.stdout.contains("Pi is roughly"),
        "{stderr_only}"
    );
    assert!(
        stderr_only.stdout.contains("LogType:stderr"),
        "{stderr_only}"
    );
}

#[test]
fn an_unwritable_remote_dir_fails_the_aggregation_and_the_node_keeps_the_logs() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    // A path below a regular file can never be created.
    let remote = tempfile::tempdir().expect("a temp dir");
    let blocker = remote.path().join("not-a-dir");
    std::fs::write(&blocker, b"x").expect("write");
    let cluster = start(&clients, &format!("file://{}/app-logs", blocker.display()));
    let mut cmd = std::process::Command::new(cluster.binary());
    cmd.arg("distributed-shell")
        .arg("--conf")
        .arg(cluster.conf_dir())
        .args(["--num-containers", "1", "--container-memory", "256"])
        .args(["--command", "echo kept"]);
    let out = run_with_timeout(cmd, Duration::from_secs(180)).expect("distributed-shell runs");
    assert!(out.success(), "{out}\n{}", cluster.log_report());
    let app = app_id_in(&out).unwrap_or_else(|| panic!("no application id in:\n{out}"));
    let (status, report) = final_aggregation_status(&cluster, &app, TIMEOUT);
    assert_eq!(status, "FAILED", "{report}");
    let kept = (0..2).any(|i| {
        files_below(&cluster.root().join(format!("nm-{i}/logs")).join(&app))
            .iter()
            .any(|f| f.ends_with("stdout"))
    });
    assert!(kept, "the node keeps the logs it could not upload");
    assert!(
        report.stdout.contains("not-a-dir") || cluster.log_report().contains("not-a-dir"),
        "the reason names the path:\n{report}\n{}",
        cluster.log_report()
    );
}

/// The figures of docs/benchmarks.md ("Log aggregation"): 100 containers, each writing
/// 10 KiB to stdout and 10 KiB to stderr, on two NodeManagers; how long each node took
/// to aggregate (its log line), the aggregated bytes, and how long the stock `yarn logs`
/// takes to print them all, on `file://` and on HDFS. Not a test of speed (nothing is
/// asserted about time): run by hand, with a release binary:
/// `SPINDLE_BIN=target/release/spindle cargo test -p spindle-integration --test log_aggregation -- --ignored --nocapture`
#[test]
#[ignore]
fn figures_for_100_containers() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jettison) = minicluster_jar() else {
        return;
    };
    let Some(jars) = spindle_integration::HdfsJars::for_tests() else {
        return;
    };
    let hdfs = spindle_integration::HdfsServer::start(&jars).expect("HDFS starts");
    let remote = tempfile::tempdir().expect("a temp dir");
    for (what, dir, default_fs) in [
        (
            "file://",
            format!("file://{}/app-logs", remote.path().display()),
            "file:///".to_string(),
        ),
        ("hdfs://", "/tmp/logs".to_string(), hdfs.uri()),
    ] {
        let cluster = Cluster::builder()
            .heartbeat_interval_ms(500)
            .core_property("fs.defaultFS", &default_fs)
            .rm_property("yarn.log-aggregation-enable", "true")
            .rm_property("yarn.nodemanager.remote-app-log-dir", &dir)
            .nodemanager(NodeManagerSpec::new(8192, 8))
            .nodemanager(NodeManagerSpec::new(8192, 8))
            .start(&clients)
            .expect("cluster starts");
        let mut cmd = std::process::Command::new(cluster.binary());
        cmd.arg("distributed-shell")
            .arg("--conf")
            .arg(cluster.conf_dir())
            .args(["--num-containers", "100", "--container-memory", "128"])
            .args([
                "--command",
                "head -c 10240 /dev/zero | tr '\\0' o; head -c 10240 /dev/zero | tr '\\0' e >&2",
            ]);
        let out = run_with_timeout(cmd, Duration::from_secs(900)).expect("distributed-shell runs");
        assert!(out.success(), "{out}\n{}", cluster.log_report());
        let app = app_id_in(&out).unwrap_or_else(|| panic!("no application id in:\n{out}"));
        let (status, report) = final_aggregation_status(&cluster, &app, TIMEOUT);
        assert_eq!(status, "SUCCEEDED", "{report}");
        let took: Vec<String> = cluster
            .log_report()
            .lines()
            .filter(|l| l.contains("aggregated the application's logs") && l.contains(&app))
            .map(|l| {
                let field = |k: &str| {
                    l.split_whitespace()
                        .find_map(|w| w.strip_prefix(k))
                        .unwrap_or("?")
                        .to_string()
                };
                format!(
                    "{} containers, {} bytes in {} ms",
                    field("containers="),
                    field("bytes="),
                    field("took_ms=")
                )
            })
            .collect();
        let started = Instant::now();
        let logs = yarn_logs(&cluster, &jettison, &["-applicationId", &app]);
        let printing = started.elapsed();
        logs.assert_success();
        let printed = containers_in(&logs).len();
        println!(
            "FIGURE {what}: per node: {took:?}; yarn logs printed {printed} containers \
             ({} bytes of output) in {:.2} s",
            logs.stdout.len(),
            printing.as_secs_f64()
        );
    }
}
