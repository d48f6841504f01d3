//! `yarn logs` (Hadoop 3.3.4's `LogsCLI`) against a test cluster, and waiting for an
//! application's log aggregation to end.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::cli::{parse_report, report_value};
use crate::{CliOutput, Cluster, MavenJars};

/// Hadoop 3.3.4's `LogsCLI` parses the RM's and NM's JSON with the shaded Jettison,
/// which the shaded client runtime (the jars pyspark ships) leaves out; Hadoop's
/// `hadoop-client-minicluster` jar of the same release carries it
/// (`integration/setup-maven.sh hdfs` installs it). `None` (the test skips) without it.
pub fn minicluster_jar() -> Option<PathBuf> {
    let jars = MavenJars::for_tests("hdfs", "hadoop-client-minicluster")?;
    let entries = jars.classpath_entries().unwrap_or_default();
    entries.into_iter().find(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("hadoop-client-minicluster"))
    })
}

/// `yarn logs <args>` with `jettison` (see [`minicluster_jar`]) on the classpath.
#[track_caller]
pub fn yarn_logs(cluster: &Cluster, jettison: &Path, args: &[&str]) -> CliOutput {
    let mut full = vec!["logs"];
    full.extend_from_slice(args);
    match cluster.yarn_command().classpath(jettison).run(&full) {
        Ok(out) => out,
        Err(e) => panic!("cannot run yarn logs: {e:#}"),
    }
}

/// Waits (up to `timeout`) until `yarn application -status` shows the application's
/// log aggregation as final (SUCCEEDED, FAILED or TIME_OUT), and returns that status
/// with the output it came from.
#[track_caller]
pub fn final_aggregation_status(
    cluster: &Cluster,
    app: &str,
    timeout: Duration,
) -> (String, CliOutput) {
    let deadline = Instant::now() + timeout;
    loop {
        let out = cluster.yarn(["application", "-status", app]);
        out.assert_success();
        let report = parse_report(&out.stdout);
        let status = report_value(&report, "Log Aggregation Status")
            .unwrap_or_default()
            .to_string();
        if ["SUCCEEDED", "FAILED", "TIME_OUT"].contains(&status.as_str()) {
            return (status, out);
        }
        assert!(
            Instant::now() < deadline,
            "log aggregation of {app} did not end within {timeout:?} (last: {status:?}):\n{out}\n{}",
            cluster.log_report()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The containers `yarn logs` printed logs for (its `Container: <id> on <node>` lines).
pub fn containers_in(out: &CliOutput) -> std::collections::BTreeSet<String> {
    out.stdout
        .lines()
        .filter_map(|l| l.strip_prefix("Container: "))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(str::to_string)
        .collect()
}
