//! HDFS going wrong under real applications (Hadoop 3.3.4's MiniDFSCluster, applications
//! submitted by Hadoop 3.3.4's `YarnClient` with a PRIVATE resource on HDFS):
//! - a resource changed on HDFS after the submission fails the AM container with
//!   Hadoop's message ("Resource … changed on src filesystem"), and the node goes on
//!   serving the next application;
//! - with HDFS down, the container fails with a diagnostic naming the file system, an
//!   application running beside it on the same node is not touched, and once HDFS is back
//!   the same resource is localized for the next submission;
//! - an attempt that failed because HDFS was down is followed by one that succeeds once
//!   HDFS is back (the node's HDFS client retries as Hadoop's does meanwhile).
//!
//! The node's HDFS client is told to give up fast (`dfs.client.failover.max.attempts=1`):
//! Hadoop's default retries take minutes, in Java as here.
//!
//! Without the client jars (integration/setup-clients.sh) the tests print `SKIP:` and
//! pass, except under CI, where they fail.

use std::time::Duration;

use spindle_integration::cli::report_value;
use spindle_integration::cluster::{wait_app_state, wait_for};
use spindle_integration::{
    AppSubmission, CliOutput, Cluster, HadoopClients, HdfsJars, HdfsServer, NodeManagerSpec,
};

const WAIT: Duration = Duration::from_secs(120);
const POLL: Duration = Duration::from_millis(300);

/// One NodeManager with 1 GB: an application asking for all of it holds the node, so a
/// second one waits, submitted, until the first is killed.
fn start(clients: &HadoopClients, hdfs: &HdfsServer) -> Cluster {
    Cluster::builder()
        .heartbeat_interval_ms(300)
        .core_property("fs.defaultFS", hdfs.uri())
        .core_property("dfs.client.failover.max.attempts", 1)
        .core_property("dfs.client.failover.sleep.base.millis", 100)
        .nodemanager(NodeManagerSpec::new(1024, 4))
        .start(clients)
        .expect("cluster starts")
}

/// `hadoop fs <args>` against the cluster's file system.
fn fs(cluster: &Cluster, args: &[&str]) -> CliOutput {
    let out =
        cluster.yarn(std::iter::once("org.apache.hadoop.fs.FsShell").chain(args.iter().copied()));
    out.assert_success();
    out
}

/// The modification time (ms) of `path` on the cluster's file system, as
/// `hadoop fs -stat %Y` prints it.
fn modified(cluster: &Cluster, path: &str) -> String {
    fs(cluster, &["-stat", "%Y", path]).stdout.trim().to_owned()
}

#[track_caller]
fn submit(cluster: &Cluster, app: &AppSubmission) -> String {
    match cluster.submit_app(app) {
        Ok(id) => id,
        Err(e) => panic!("submission failed: {e:#}\n{}", cluster.log_report()),
    }
}

/// The application's report once it is in one of `states`.
#[track_caller]
fn wait_state(cluster: &Cluster, id: &str, states: &[&str]) -> Vec<(String, String)> {
    let clients = cluster
        .clients()
        .expect("a cluster started with the clients");
    wait_app_state(clients, cluster.conf_dir(), id, states, WAIT).unwrap_or_else(|| {
        panic!(
            "{id} did not reach {states:?} within {WAIT:?}\n{}",
            cluster.log_report()
        )
    })
}

/// Waits until the AM of an application started by [`reader`] or [`marker`] wrote `name`
/// into the cluster's root; its text.
#[track_caller]
fn wait_marker(cluster: &Cluster, name: &str) -> String {
    let path = cluster.root().join(name);
    let found = wait_for(WAIT, POLL, || {
        std::fs::read_to_string(&path)
            .ok()
            .filter(|t| t.ends_with('\n'))
    });
    found.unwrap_or_else(|| {
        panic!(
            "{} was not written within {WAIT:?}\n{}",
            path.display(),
            cluster.log_report()
        )
    })
}

/// An AM container (a command, not a registering AM) that writes `name` into the
/// cluster's root, then runs `then`.
fn marker(cluster: &Cluster, app: &str, name: &str, then: &str) -> AppSubmission {
    let path = cluster.root().join(name);
    AppSubmission::new(app, format!("echo up > {}; {then}", path.display()))
}

/// Holds the whole node with a sleeping AM container; returns its id once it runs.
fn hold_the_node(cluster: &Cluster) -> String {
    let id = submit(
        cluster,
        &marker(cluster, "holder", "holder.up", "sleep 600").memory_mb(1024),
    );
    wait_marker(cluster, "holder.up");
    id
}

fn kill(cluster: &Cluster, id: &str) {
    cluster.yarn(["application", "-kill", id]).assert_success();
}

/// An AM container that writes `name` into the cluster's root once it has read
/// `from-hdfs` in its resource.
fn reader(cluster: &Cluster, app: &str, name: &str, file: &str) -> AppSubmission {
    let path = cluster.root().join(name);
    AppSubmission::new(
        app,
        format!("grep -q from-hdfs res && echo read > {}", path.display()),
    )
    .memory_mb(256)
    .private_file("res", file)
}

#[test]
fn a_resource_changed_after_submission_fails_its_container_and_the_node_goes_on() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = HdfsJars::for_tests() else {
        return;
    };
    let hdfs = HdfsServer::start(&jars).expect("HDFS starts");
    let cluster = start(&clients, &hdfs);
    let local = cluster.root().join("res.txt");
    std::fs::write(&local, "from-hdfs\n").expect("write");
    let local = local.display().to_string();
    fs(&cluster, &["-mkdir", "-p", "/user/root"]);
    fs(&cluster, &["-put", "-f", &local, "/user/root/res.txt"]);
    let file = format!("{}/user/root/res.txt", hdfs.uri());
    // The modification time the submission will record (nothing changes the file first).
    let recorded = modified(&cluster, "/user/root/res.txt");

    let holder = hold_the_node(&cluster);
    let changed = submit(&cluster, &reader(&cluster, "changed", "changed.out", &file));
    // Rewritten after the submission recorded its size and time: HDFS gives it another
    // modification time, the one Hadoop's check compares.
    std::fs::write(cluster.root().join("res.txt"), "from-hdfs, rewritten\n").expect("write");
    fs(&cluster, &["-put", "-f", &local, "/user/root/res.txt"]);
    let rewritten = modified(&cluster, "/user/root/res.txt");
    assert_ne!(
        rewritten, recorded,
        "the rewrite left the modification time as the submission recorded it"
    );
    kill(&cluster, &holder);

    let report = wait_state(&cluster, &changed, &["FAILED", "FINISHED", "KILLED"]);
    assert_eq!(report_value(&report, "State"), Some("FAILED"), "{report:?}");
    // The diagnostics run over several lines of the report.
    let diagnostics = cluster.yarn(["application", "-status", &changed]).stdout;
    assert!(
        diagnostics.contains("changed on src filesystem") && diagnostics.contains("res.txt"),
        "Hadoop's message names the resource: {diagnostics}\n{}",
        cluster.log_report()
    );

    assert!(!cluster.root().join("changed.out").exists());

    // The node goes on: the same file, submitted again, is localized and read.
    submit(&cluster, &reader(&cluster, "again", "again.out", &file));
    assert_eq!(wait_marker(&cluster, "again.out"), "read\n");
}

#[test]
fn hdfs_down_fails_the_container_clearly_and_loses_nothing_else() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = HdfsJars::for_tests() else {
        return;
    };
    let mut hdfs = HdfsServer::start(&jars).expect("HDFS starts");
    let cluster = start(&clients, &hdfs);
    let local = cluster.root().join("res.txt");
    std::fs::write(&local, "from-hdfs\n").expect("write");
    fs(&cluster, &["-mkdir", "-p", "/user/root"]);
    fs(
        &cluster,
        &[
            "-put",
            "-f",
            &local.display().to_string(),
            "/user/root/res.txt",
        ],
    );
    let file = format!("{}/user/root/res.txt", hdfs.uri());

    // The resource is recorded while HDFS is up; HDFS dies before the node gets to it.
    let holder = hold_the_node(&cluster);
    let doomed = submit(&cluster, &reader(&cluster, "doomed", "doomed.out", &file));
    hdfs.kill().expect("HDFS killed");
    // The holder gives way to the doomed one and to a bystander without HDFS resources.
    submit(
        &cluster,
        &marker(&cluster, "bystander", "bystander.up", "sleep 3").memory_mb(256),
    );
    kill(&cluster, &holder);

    let report = wait_state(&cluster, &doomed, &["FAILED", "FINISHED", "KILLED"]);
    assert_eq!(report_value(&report, "State"), Some("FAILED"), "{report:?}");
    let diagnostics = cluster.yarn(["application", "-status", &doomed]).stdout;
    assert!(
        diagnostics.contains("cannot localize") && diagnostics.contains("res.txt"),
        "the diagnostic says which resource could not be read: {diagnostics}\n{}",
        cluster.log_report()
    );
    // The application beside it on the same node runs.
    wait_marker(&cluster, "bystander.up");
    assert!(!cluster.root().join("doomed.out").exists());

    // HDFS back: the same resource is served to the next submission.
    hdfs.restart().expect("HDFS restarts");
    submit(&cluster, &reader(&cluster, "again", "again.out", &file));
    assert_eq!(wait_marker(&cluster, "again.out"), "read\n");
}

/// An AM that registers (Spindle's distributed-shell AM, one container running `true`)
/// once its container has read `from-hdfs` in its resource `res` on HDFS.
fn registering_reader(cluster: &Cluster, app: &str, file: &str) -> AppSubmission {
    AppSubmission::new(
        app,
        format!(
            "grep -q from-hdfs res && {} distributed-shell-am --conf {} --num-containers 1 \
             --container-memory 128 --command true",
            cluster.binary().display(),
            cluster.conf_dir().display()
        ),
    )
    .memory_mb(256)
    .private_file("res", file)
}

#[test]
fn the_attempt_after_hdfs_comes_back_succeeds() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = HdfsJars::for_tests() else {
        return;
    };
    let mut hdfs = HdfsServer::start(&jars).expect("HDFS starts");
    // The node's HDFS client retries an unreachable NameNode for about a minute (30
    // attempts, 1-2 s apart; Hadoop's defaults retry for longer): long enough for HDFS to
    // come back while the second attempt waits, short enough for the first to give up.
    let cluster = Cluster::builder()
        .heartbeat_interval_ms(300)
        .core_property("fs.defaultFS", hdfs.uri())
        .core_property("dfs.client.failover.max.attempts", 30)
        .core_property("dfs.client.failover.sleep.base.millis", 1000)
        .core_property("dfs.client.failover.sleep.max.millis", 2000)
        .rm_property("yarn.resourcemanager.am.max-attempts", 2)
        .nodemanager(NodeManagerSpec::new(1024, 4))
        .start(&clients)
        .expect("cluster starts");
    let local = cluster.root().join("res.txt");
    std::fs::write(&local, "from-hdfs\n").expect("write");
    fs(&cluster, &["-mkdir", "-p", "/user/root"]);
    fs(
        &cluster,
        &[
            "-put",
            "-f",
            &local.display().to_string(),
            "/user/root/res.txt",
        ],
    );
    let file = format!("{}/user/root/res.txt", hdfs.uri());

    // Submitted while HDFS is up (the resource's size and time are recorded), localized
    // while it is down.
    let holder = hold_the_node(&cluster);
    let app = submit(
        &cluster,
        &registering_reader(&cluster, "two-attempts", &file).max_attempts(2),
    );
    hdfs.kill().expect("HDFS killed");
    kill(&cluster, &holder);

    // The first attempt fails at localization; the second one is started at once and
    // waits on HDFS, which comes back.
    let first_failed = wait_for(Duration::from_secs(300), POLL, || {
        let out = cluster.yarn(["applicationattempt", "-list", &app]);
        out.stdout.contains("FAILED").then_some(out.stdout)
    });
    assert!(
        first_failed.is_some(),
        "the first attempt of {app} did not fail\n{}",
        cluster.log_report()
    );
    hdfs.restart().expect("HDFS restarts");

    let report = wait_state(&cluster, &app, &["FAILED", "FINISHED", "KILLED"]);
    assert_eq!(
        report_value(&report, "State"),
        Some("FINISHED"),
        "{report:?}\n{}",
        cluster.log_report()
    );
    assert_eq!(
        report_value(&report, "Final-State"),
        Some("SUCCEEDED"),
        "{report:?}"
    );
    let attempts = cluster.yarn(["applicationattempt", "-list", &app]).stdout;
    assert!(
        attempts.contains("_000001") && attempts.contains("_000002"),
        "two attempts: {attempts}"
    );
    let first = cluster
        .yarn([
            "applicationattempt",
            "-status",
            &format!("{}_000001", app.replacen("application_", "appattempt_", 1)),
        ])
        .stdout;
    assert!(
        first.contains("cannot localize") && first.contains("res.txt"),
        "the first attempt says which resource it could not read: {first}"
    );
}
