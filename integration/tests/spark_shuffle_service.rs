//! Spark's external shuffle service hosted by Spindle's NodeManager: Spark's
//! `org.apache.spark.network.yarn.YarnShuffleService` (from
//! `integration/setup-maven.sh spark_shuffle` or `$SPINDLE_SPARK_SHUFFLE_JARS`), configured
//! as on a Hadoop cluster (`yarn.nodemanager.aux-services.spark_shuffle.class` and
//! `.classpath`), runs in the NodeManager's Java host (`java/aux-host/build.sh`). A pyspark
//! job with `spark.shuffle.service.enabled` and dynamic allocation writes a shuffle, lets
//! every executor go for being idle, then reads the shuffle again: the map stage does not
//! run again, the new executor fetches the blocks the released ones wrote from the shuffle
//! service.
//!
//! The jars are Spark 3.5.5's `spark-network-yarn` and its runtime dependencies (the
//! published artifact is not the shaded jar distributions ship; see the pom). Without the
//! Hadoop clients, the shuffle jars or the built host it prints `SKIP:` and passes, except
//! under CI.

use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::time::Duration;

use spindle_integration::cluster::free_port;
use spindle_integration::mapreduce::aux_host_dir;
use spindle_integration::maven::MavenJars;
use spindle_integration::process::run_with_timeout;
use spindle_integration::spark::{self, Staging};
use spindle_integration::{Cluster, HadoopClients, NodeManagerSpec};

/// Every daemon log file of the cluster, concatenated.
fn cluster_logs(dir: &Path) -> String {
    let mut out = String::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(text) = std::fs::read_to_string(&p) {
                out.push_str(&text);
            }
        }
    }
    out
}

fn value<'a>(stdout: &'a str, key: &str) -> Option<&'a str> {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .map(str::trim)
}

#[test]
fn a_shuffle_is_served_by_the_hosted_yarn_shuffle_service_after_executors_are_released() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(host) = aux_host_dir() else {
        return;
    };
    let Some(jars) = MavenJars::for_tests("spark_shuffle", "spark-network-yarn") else {
        return;
    };
    let port = free_port(IpAddr::V4(Ipv4Addr::UNSPECIFIED)).expect("a free port");
    let mut nm = NodeManagerSpec::new(8192, 8);
    nm.properties
        .set("yarn.nodemanager.aux-services", "spark_shuffle")
        .set(
            "yarn.nodemanager.aux-services.spark_shuffle.class",
            "org.apache.spark.network.yarn.YarnShuffleService",
        )
        .set(
            "yarn.nodemanager.aux-services.spark_shuffle.classpath",
            format!("{}/*", jars.dir().display()),
        )
        .set("spark.shuffle.service.port", port)
        .set(
            "spindle.nodemanager.aux-services.java-host.dir",
            host.display(),
        );
    let cluster = Cluster::builder()
        .heartbeat_interval_ms(500)
        .nodemanager(nm)
        .start(&clients)
        .expect("cluster starts");

    let script = spindle_integration::clients::integration_dir()
        .join("python")
        .join("shuffle_after_release.py");
    let port_conf = format!("spark.shuffle.service.port={port}");
    let cmd = spark::submit_command(
        &cluster,
        &clients,
        Staging::ClusterDir,
        &[
            "--deploy-mode",
            "client",
            "--conf",
            "spark.shuffle.service.enabled=true",
            "--conf",
            &port_conf,
            "--conf",
            "spark.dynamicAllocation.enabled=true",
            "--conf",
            "spark.dynamicAllocation.minExecutors=0",
            "--conf",
            "spark.dynamicAllocation.initialExecutors=1",
            "--conf",
            "spark.dynamicAllocation.maxExecutors=2",
            "--conf",
            "spark.dynamicAllocation.executorIdleTimeout=2s",
            "--conf",
            "spark.dynamicAllocation.schedulerBacklogTimeout=1s",
            script.to_str().unwrap_or_default(),
            "180",
        ],
    );
    let out = run_with_timeout(cmd, Duration::from_secs(600)).expect("spark-submit runs");
    let logs = cluster_logs(cluster.root());
    assert!(
        out.success(),
        "spark-submit failed:\n{out}\n{}",
        cluster.log_report()
    );
    assert_eq!(
        value(&out.stdout, "EXECUTORS_BEFORE_SECOND_READ"),
        Some("0"),
        "the executors were not released before the second read:\n{out}"
    );
    assert_eq!(value(&out.stdout, "SAME_RESULT"), Some("True"), "{out}");
    assert_eq!(
        value(&out.stdout, "GROUPS"),
        Some("97 TOTAL=20000"),
        "{out}"
    );
    // The map stage ran once: the second read fetched what the released executors
    // wrote, from the shuffle service.
    assert_eq!(value(&out.stdout, "MAP_RECORDS"), Some("20000"), "{out}");
    assert!(
        logs.contains(&format!(
            "Started YARN shuffle service for Spark on port {port}"
        )),
        "the hosted shuffle service did not start:\n{}",
        cluster.log_report()
    );
    assert!(
        logs.contains("Registered executor"),
        "no executor registered with the hosted shuffle service:\n{}",
        cluster.log_report()
    );
}
