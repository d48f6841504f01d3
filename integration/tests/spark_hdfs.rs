//! Spark 3.5.3 on Spindle with `fs.defaultFS` on a real HDFS (Hadoop 3.3.4's
//! MiniDFSCluster): `spark-submit` stages its archive and files in
//! `/user/<user>/.sparkStaging/<appId>` on HDFS, Spindle's NodeManagers localize them from
//! there (natively, no JVM), the job succeeds in cluster and client mode, and Spark removes
//! its staging directory at the end. With `yarn.log-aggregation-enable` the nodes
//! aggregate the logs onto HDFS (`/tmp/logs`, Hadoop's bucket layout) and the stock
//! `yarn logs` prints them.

use std::time::Duration;

use spindle_integration::cli::{parse_report, report_value};
use spindle_integration::logs::{
    containers_in, final_aggregation_status, minicluster_jar, yarn_logs,
};
use spindle_integration::process::{run_with_timeout, CliOutput};
use spindle_integration::spark::{self, app_id_in, pi_py, Staging};
use spindle_integration::{Cluster, HadoopClients, HdfsJars, HdfsServer, NodeManagerSpec};

fn start(clients: &HadoopClients, hdfs: &HdfsServer) -> Cluster {
    Cluster::builder()
        .heartbeat_interval_ms(500)
        .core_property("fs.defaultFS", hdfs.uri())
        .rm_property("yarn.log-aggregation-enable", "true")
        .nodemanager(NodeManagerSpec::new(8192, 8))
        .start(clients)
        .expect("cluster starts")
}

fn pi(cluster: &Cluster, clients: &HadoopClients, mode: &str) -> CliOutput {
    let pi = pi_py(clients);
    let cmd = spark::submit_command(
        cluster,
        clients,
        Staging::DefaultFs,
        &["--deploy-mode", mode, pi.to_str().unwrap_or_default(), "4"],
    );
    run_with_timeout(cmd, Duration::from_secs(600)).expect("spark-submit runs")
}

/// `hadoop fs <args>` against the cluster's file system.
fn fs(cluster: &Cluster, args: &[&str]) -> CliOutput {
    cluster.yarn(std::iter::once("org.apache.hadoop.fs.FsShell").chain(args.iter().copied()))
}

/// The sequence number of an application id (`application_<ts>_<seq>`).
fn app_seq(app: &str) -> u32 {
    app.rsplit('_')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{app} is an application id"))
}

fn assert_succeeded(cluster: &Cluster, out: &CliOutput) -> String {
    assert!(
        out.success(),
        "spark-submit failed:\n{out}\n{}",
        cluster.log_report()
    );
    let app = app_id_in(out).unwrap_or_else(|| panic!("no application id in the output:\n{out}"));
    let status = cluster.yarn(["application", "-status", &app]);
    status.assert_success();
    let report = parse_report(&status.stdout);
    assert_eq!(report_value(&report, "State"), Some("FINISHED"), "{status}");
    assert_eq!(
        report_value(&report, "Final-State"),
        Some("SUCCEEDED"),
        "{status}"
    );
    app
}

#[test]
fn spark_pi_with_hdfs_staging_succeeds_in_both_modes_and_cleans_its_staging() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = HdfsJars::for_tests() else {
        return;
    };
    let hdfs = HdfsServer::start(&jars).expect("HDFS starts");
    let cluster = start(&clients, &hdfs);

    let out = pi(&cluster, &clients, "cluster");
    let app = assert_succeeded(&cluster, &out);
    // The uploads went to the application's staging directory on HDFS (and the
    // NodeManager localized them from there: the job could not have run otherwise).
    let staged = format!("{}/user/", hdfs.uri());
    assert!(
        out.stderr
            .lines()
            .any(|l| l.contains("Uploading resource") && l.contains(&staged) && l.contains(&app)),
        "Spark staged on HDFS:\n{out}"
    );
    let listed = fs(&cluster, &["-ls", "-R", "/user"]);
    listed.assert_success();
    assert!(
        !listed.stdout.contains(&app),
        "Spark removes its staging directory when the application ends:\n{listed}"
    );

    // Log aggregation to HDFS (the default /tmp/logs on fs.defaultFS): the node's file
    // in the bucket layout, and the stock `yarn logs` printing the driver's result.
    let (status, report) = final_aggregation_status(&cluster, &app, Duration::from_secs(120));
    assert_eq!(status, "SUCCEEDED", "{report}\n{}", cluster.log_report());
    let listed = fs(&cluster, &["-ls", "-R", "/tmp/logs"]);
    listed.assert_success();
    let bucket = format!("/bucket-logs-tfile/{:04}/{app}/", app_seq(&app) % 10_000);
    assert!(
        listed
            .stdout
            .lines()
            .any(|l| l.contains(&bucket) && l.starts_with("-rw-r-----")),
        "one aggregated file per node, 0640, in Hadoop's bucket layout:\n{listed}"
    );
    if let Some(jettison) = minicluster_jar() {
        let logs = yarn_logs(&cluster, &jettison, &["-applicationId", &app]);
        logs.assert_success();
        assert!(logs.stdout.contains("Pi is roughly"), "{logs}");
        assert!(
            containers_in(&logs).len() >= 2,
            "the driver and executors: {logs}"
        );
    }

    let out = pi(&cluster, &clients, "client");
    assert_succeeded(&cluster, &out);
    assert!(out.stdout.contains("Pi is roughly"), "{out}");
}
