//! A Kerberized HA pair on ZooKeeper (leader election and the ZooKeeper
//! state store) with a real MIT KDC: after `kill -9` of the active RM the
//! other takes over, the NodeManager logs in to it with its keytab, and an
//! RM delegation token issued by the killed RM still opens the new active
//! for a process that holds only the token, and is renewed there: tokens
//! and their keys live in the store.
//!
//! One test function: MIT's library and the Java clients this test starts
//! read the realm and the ticket cache from the process environment.

use std::time::Duration;

use spindle_integration::cluster::wait_until;
use spindle_integration::kdc::{self, REALM};
use spindle_integration::zookeeper::{ZooKeeperJars, ZooKeeperServer};
use spindle_integration::{Cluster, HadoopClients};

const TIMEOUT: Duration = Duration::from_secs(90);
const POLL: Duration = Duration::from_millis(500);

#[test]
fn a_kerberized_pair_fails_over_after_kill_9_and_keeps_its_delegation_tokens() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = ZooKeeperJars::for_tests() else {
        return;
    };
    let Some(kdc) = kdc::for_test() else {
        return;
    };
    let zookeeper = ZooKeeperServer::start(&jars).expect("ZooKeeper starts");
    let host = kdc::machine_host();
    let rm_keytab = kdc.keytab_for("rm/localhost").expect("rm keytab");
    let nm_keytab = kdc.keytab_for(&format!("nm/{host}")).expect("nm keytab");
    let alice_keytab = kdc.keytab_for("alice").expect("alice keytab");
    let caches = tempfile::tempdir().expect("tempdir");
    let alice = caches.path().join("alice.cc");
    let nobody = caches.path().join("none.cc");
    kdc.kinit("alice", &alice_keytab, &alice).expect("kinit");
    // Every client this test starts (the cluster's own CLI calls included)
    // is alice with her ticket.
    std::env::set_var("KRB5CCNAME", format!("FILE:{}", alice.display()));
    std::env::set_var(
        spindle_integration::clients::TEST_YARN_OPTS,
        kdc.java_opts(),
    );

    let mut cluster = Cluster::builder()
        .ha_pair(true)
        .zookeeper(zookeeper.connect_string())
        .nodemanagers(1)
        .rm_property("hadoop.zk.timeout-ms", 4000)
        .rm_property("yarn.resourcemanager.connect.max-wait.ms", 120_000)
        .core_property("hadoop.security.authentication", "kerberos")
        .rm_property(
            "yarn.resourcemanager.principal",
            format!("rm/localhost@{REALM}"),
        )
        .rm_property("yarn.resourcemanager.keytab", rm_keytab.display())
        .rm_property("yarn.nodemanager.principal", format!("nm/_HOST@{REALM}"))
        .rm_property("yarn.nodemanager.keytab", nm_keytab.display())
        .start(&clients)
        .unwrap_or_else(|e| panic!("the Kerberized HA pair did not start: {e:#}"));
    let Some(first) = cluster.wait_for_one_active(TIMEOUT) else {
        panic!(
            "no RM was elected active: {}\n{}",
            cluster.yarn(["rmadmin", "-getServiceState", "rm2"]),
            cluster.log_report()
        );
    };
    let second = if first == "rm1" { "rm2" } else { "rm1" };
    wait_for_running_node(&cluster, &format!("on {first}"));

    // alice's token from the first active, for herself to renew.
    let classes = clients
        .compile_java("RmToken")
        .unwrap_or_else(|e| panic!("cannot compile RmToken: {e:#}"));
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("rm.token").display().to_string();
    let rm_token = |cluster: &Cluster, args: &[&str]| {
        let mut full = vec!["RmToken"];
        full.extend_from_slice(args);
        cluster
            .yarn_command()
            .classpath(classes.clone())
            .run(&full)
            .expect("RmToken runs")
    };
    let out = rm_token(&cluster, &["fetch", "--renewer", "alice", "--out", &file]);
    assert!(out.success(), "{out}\n{}", cluster.log_report());
    let with_token_only = |cluster: &Cluster, args: &[&str]| {
        cluster
            .yarn_command()
            .env("KRB5CCNAME", format!("FILE:{}", nobody.display()))
            .env("HADOOP_TOKEN_FILE_LOCATION", &file)
            .run(args)
            .expect("the CLI runs")
    };
    let out = with_token_only(&cluster, &["application", "-list"]);
    assert!(out.success(), "{out}\n{}", cluster.log_report());

    // kill -9 of the active: the other is elected and recovers the store.
    cluster
        .kill_rm_id(&first)
        .unwrap_or_else(|e| panic!("kill -9 of {first}: {e:#}"));
    let want = vec![second.to_string()];
    if !wait_until(TIMEOUT, POLL, || {
        cluster.active_rms().as_ref() == Some(&want)
    }) {
        panic!(
            "{second} did not take over after kill -9 of {first}\n{}",
            cluster.log_report()
        );
    }
    // The NodeManager logs in to the new active with its keytab.
    wait_for_running_node(&cluster, &format!("on {second} after the failover"));
    // The token the killed RM issued opens the new active, and renews there.
    let out = with_token_only(&cluster, &["application", "-list"]);
    assert!(out.success(), "{out}\n{}", cluster.log_report());
    let out = rm_token(&cluster, &["renew", "--in", &file]);
    assert!(out.success(), "{out}\n{}", cluster.log_report());
    assert!(out.stdout.starts_with("expires="), "{out}");
    // Cancelled on the new active, it opens nothing.
    let out = rm_token(&cluster, &["cancel", "--in", &file]);
    assert!(out.success(), "{out}\n{}", cluster.log_report());
    let out = with_token_only(&cluster, &["application", "-list"]);
    assert!(!out.success(), "{out}");
    assert!(out.stderr.contains("can't be found in cache"), "{out}");
}

#[track_caller]
fn wait_for_running_node(cluster: &Cluster, what: &str) {
    let running = || {
        let out = cluster.yarn(["node", "-list"]);
        out.success() && out.stdout.contains("RUNNING")
    };
    if !wait_until(TIMEOUT, POLL, running) {
        panic!("no RUNNING node {what}\n{}", cluster.log_report());
    }
}
