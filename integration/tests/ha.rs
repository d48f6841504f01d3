//! An HA pair of Spindle ResourceManagers (issue S9) driven by the real
//! Hadoop 3.3.4 CLI, without ZooKeeper: `yarn rmadmin -getServiceState`,
//! `-getAllServiceState`, `-transitionToActive/-transitionToStandby` (with
//! `--forcemanual` when automatic failover is enabled), and the client's
//! own failover to the active RM. Both RMs share one embedded store, which
//! only the active holds open. Without the client jars
//! (integration/setup-clients.sh) the tests print `SKIP:` and pass, except
//! under CI, where they fail.

use std::time::Duration;

use spindle_integration::cli::{AppList, NodeList};
use spindle_integration::cluster::wait_until;
use spindle_integration::{AppSubmission, CliOutput, Cluster, HadoopClients};

const TIMEOUT: Duration = Duration::from_secs(90);
const POLL: Duration = Duration::from_millis(500);

fn pair(clients: &HadoopClients, automatic_failover: bool, nodemanagers: usize) -> Cluster {
    match Cluster::builder()
        .ha_pair(automatic_failover)
        .nodemanagers(nodemanagers)
        .rm_property("yarn.resourcemanager.recovery.enabled", true)
        // The NodeManagers keep trying while both RMs are standby.
        .rm_property("yarn.resourcemanager.connect.max-wait.ms", 120_000)
        .start(clients)
    {
        Ok(c) => c,
        Err(e) => panic!("the HA pair did not start: {e:#}"),
    }
}

#[track_caller]
fn service_state(cluster: &Cluster, id: &str) -> String {
    let out = cluster.yarn(["rmadmin", "-getServiceState", id]);
    out.assert_success();
    out.stdout.trim().to_string()
}

#[track_caller]
fn rmadmin(cluster: &Cluster, args: &[&str]) -> CliOutput {
    let mut all = vec!["rmadmin"];
    all.extend_from_slice(args);
    let out = cluster.yarn(all);
    if !out.success() {
        panic!("rmadmin {args:?} failed:\n{out}\n{}", cluster.log_report());
    }
    out
}

/// `-getAllServiceState` prints one line per RM: its admin address and state.
#[track_caller]
fn all_states(cluster: &Cluster) -> (Vec<(u16, String)>, CliOutput) {
    let out = rmadmin(cluster, &["-getAllServiceState"]);
    let states = out
        .stdout
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let addr = words.next()?;
            let state = words.next()?;
            let port = addr.rsplit_once(':')?.1.parse().ok()?;
            Some((port, state.to_string()))
        })
        .collect();
    (states, out)
}

/// How many NodeManagers `yarn node -list` shows RUNNING (on the active RM).
fn running_nodes(cluster: &Cluster) -> Option<usize> {
    let out = cluster.yarn(["node", "-list"]);
    if !out.success() {
        return None;
    }
    NodeList::parse(&out.stdout)
        .ok()
        .map(|l| l.nodes.iter().filter(|n| n.state == "RUNNING").count())
}

#[track_caller]
fn wait_for_running_node(cluster: &Cluster, what: &str) {
    if !wait_until(TIMEOUT, POLL, || running_nodes(cluster) == Some(1)) {
        panic!(
            "the NodeManager is not RUNNING on {what}\n{}",
            cluster.log_report()
        );
    }
}

#[track_caller]
fn app_list(cluster: &Cluster) -> AppList {
    let out = cluster.yarn(["application", "-list", "-appStates", "ALL"]);
    out.assert_success();
    match AppList::parse(&out.stdout) {
        Ok(list) => list,
        Err(e) => panic!("cannot parse the application list: {e:#}\n{out}"),
    }
}

#[test]
fn manual_failover_hands_the_applications_to_the_other_rm() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let cluster = pair(&clients, false, 1);
    let rm1_admin = cluster.rm().admin.port();
    let rm2_admin = match cluster.rm2() {
        Some(rm2) => rm2.admin.port(),
        None => panic!("no rm2"),
    };

    // Both start standby.
    assert_eq!(service_state(&cluster, "rm1"), "standby");
    assert_eq!(service_state(&cluster, "rm2"), "standby");

    rmadmin(&cluster, &["-transitionToActive", "rm1"]);
    assert_eq!(service_state(&cluster, "rm1"), "active");
    rmadmin(&cluster, &["-checkHealth", "rm1"]);
    // The NodeManager, failing over on StandbyException, registers with rm1.
    wait_for_running_node(&cluster, "rm1");
    let (states, out) = all_states(&cluster);
    assert!(
        states.contains(&(rm1_admin, "active".into()))
            && states.contains(&(rm2_admin, "standby".into())),
        "{out}"
    );

    // The client finds the active RM by itself.
    let app = match cluster.submit_app(&AppSubmission::new("ha-before", "sleep 300")) {
        Ok(id) => id,
        Err(e) => panic!("submission failed: {e:#}\n{}", cluster.log_report()),
    };
    assert!(app_list(&cluster).find(&app).is_some());

    // Manual failover: rm1 steps down (closing the store), rm2 takes over
    // and recovers the application.
    rmadmin(&cluster, &["-transitionToStandby", "rm1"]);
    rmadmin(&cluster, &["-transitionToActive", "rm2"]);
    let (states, out) = all_states(&cluster);
    assert!(
        states.contains(&(rm1_admin, "standby".into()))
            && states.contains(&(rm2_admin, "active".into())),
        "{out}"
    );
    let list = app_list(&cluster);
    assert!(
        list.find(&app).is_some(),
        "{app} is not listed after the failover\n{}",
        cluster.log_report()
    );
    // The NodeManager follows to rm2.
    wait_for_running_node(&cluster, "rm2");

    // The CLI refuses to make a second RM active while one is.
    let out = cluster.yarn(["rmadmin", "-transitionToActive", "rm1"]);
    assert!(!out.success(), "{out}");
    assert!(out.stderr.contains("rm2 is already active"), "{out}");
    assert_eq!(service_state(&cluster, "rm1"), "standby");
}

#[test]
fn with_automatic_failover_only_a_forced_manual_transition_is_done() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let cluster = pair(&clients, true, 0);
    let out = cluster.yarn(["rmadmin", "-transitionToActive", "rm1"]);
    assert!(!out.success(), "{out}");
    assert!(
        out.stderr.contains("Automatic failover is enabled")
            || out.stdout.contains("Automatic failover is enabled"),
        "{out}"
    );
    assert_eq!(service_state(&cluster, "rm1"), "standby");

    // --forcemanual asks for a confirmation on stdin.
    let out = match cluster.yarn_command().stdin("Y\n").run([
        "rmadmin",
        "-transitionToActive",
        "--forcemanual",
        "rm1",
    ]) {
        Ok(out) => out,
        Err(e) => panic!("cannot run the yarn launcher: {e:#}"),
    };
    assert!(out.success(), "{out}\n{}", cluster.log_report());
    assert_eq!(service_state(&cluster, "rm1"), "active");
    assert_eq!(service_state(&cluster, "rm2"), "standby");
}
