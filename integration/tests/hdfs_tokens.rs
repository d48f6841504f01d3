//! HDFS delegation tokens in a container's credentials, end to end: a user's token is
//! fetched from a real NameNode (Hadoop 3.3.4's MiniDFSCluster, which issues and checks
//! tokens as a secured one does) with Hadoop's own client, given to the AM container as
//! MapReduce's and Spark's submitters give theirs (`ContainerLaunchContext.tokens`,
//! through Hadoop's `YarnClient`), and the NodeManager localizes the container's PRIVATE
//! HDFS resource with it: the NameNode sees the token, so a cancelled one fails the
//! container with HDFS's own message.
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

/// `hadoop fs <args>` against the cluster's file system, as `user`.
fn fs(cluster: &Cluster, user: &str, args: &[&str]) -> CliOutput {
    let clients = cluster.clients().expect("clients");
    let out = clients
        .yarn()
        .conf_dir(cluster.conf_dir())
        .env("HADOOP_USER_NAME", user)
        .run(std::iter::once("org.apache.hadoop.fs.FsShell").chain(args.iter().copied()))
        .expect("FsShell runs");
    out.assert_success();
    out
}

/// `HdfsToken <args>` (integration/java/HdfsToken.java), Hadoop's client asking the
/// NameNode for, or cancelling, delegation tokens.
fn hdfs_token(clients: &HadoopClients, args: &[&str]) -> CliOutput {
    let classes = clients
        .compile_java("HdfsToken")
        .expect("HdfsToken compiles");
    let out = clients
        .yarn()
        .classpath(classes)
        .run(std::iter::once("HdfsToken").chain(args.iter().copied()))
        .expect("HdfsToken runs");
    out.assert_success();
    out
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

#[test]
fn private_resources_are_localized_with_the_containers_hdfs_token() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = HdfsJars::for_tests() else {
        return;
    };
    let hdfs = HdfsServer::start(&jars).expect("HDFS starts");
    let cluster = Cluster::builder()
        .heartbeat_interval_ms(300)
        .core_property("fs.defaultFS", hdfs.uri())
        .core_property("dfs.client.failover.max.attempts", 1)
        .nodemanager(NodeManagerSpec::new(2048, 4))
        .start(&clients)
        .expect("cluster starts");

    // Two of alice's files only she may read.
    let local = cluster.root().join("secret.txt");
    std::fs::write(&local, "alice-only\n").expect("write");
    let local = local.display().to_string();
    fs(&cluster, "alice", &["-mkdir", "-p", "/user/alice"]);
    for name in ["one.txt", "two.txt"] {
        let path = format!("/user/alice/{name}");
        fs(&cluster, "alice", &["-put", "-f", &local, &path]);
        fs(&cluster, "alice", &["-chmod", "600", &path]);
    }
    let tokens = cluster.root().join("alice.tokens");
    let tokens_arg = tokens.display().to_string();
    let got = hdfs_token(
        &clients,
        &["get", &hdfs.uri(), "alice", "yarn", &tokens_arg],
    );
    assert!(got.stdout.contains("token HDFS_DELEGATION_TOKEN"), "{got}");

    let reader = |name: &str, file: &str| {
        let marker = cluster.root().join(format!("{name}.out"));
        AppSubmission::new(
            name,
            format!("grep -q alice-only res && echo read > {}", marker.display()),
        )
        .user("alice")
        .private_file("res", format!("{}/user/alice/{file}", hdfs.uri()))
        .tokens_file(&tokens)
    };

    // With her valid token, alice's container gets her file.
    cluster
        .submit_app(&reader("valid", "one.txt"))
        .expect("submit");
    let marker = cluster.root().join("valid.out");
    let read = wait_for(WAIT, POLL, || std::fs::read_to_string(&marker).ok());
    assert_eq!(
        read.as_deref(),
        Some("read\n"),
        "the container read its resource\n{}",
        cluster.log_report()
    );

    // The token cancelled (as the RM cancels a finished job's tokens): the NameNode
    // refuses the container's localization, which fails with HDFS's message. Without the
    // token the node would have read the file as alice by name.
    hdfs_token(&clients, &["cancel", &hdfs.uri(), "alice", &tokens_arg]);
    let id = cluster
        .submit_app(&reader("cancelled", "two.txt"))
        .expect("submit");
    let report = wait_state(&cluster, &id, &["FAILED", "FINISHED", "KILLED"]);
    assert_eq!(report_value(&report, "State"), Some("FAILED"), "{report:?}");
    let status = cluster.yarn(["application", "-status", &id]).stdout;
    assert!(
        status.contains("two.txt") && status.contains("can't be found in cache"),
        "the diagnostic is HDFS's refusal of the token: {status}\n{}",
        cluster.log_report()
    );
    assert!(!cluster.root().join("cancelled.out").exists());
}
