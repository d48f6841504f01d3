//! An HA pair of Spindle ResourceManagers (issue S9) driven by the real
//! Hadoop 3.3.4 CLI: `yarn rmadmin -getServiceState`, `-getAllServiceState`,
//! `-transitionToActive/-transitionToStandby` (with `--forcemanual` when
//! automatic failover is enabled), and the client's own failover to the
//! active RM. Manual failover runs without ZooKeeper (both RMs share one
//! embedded store, which only the active holds open); automatic failover
//! runs on a real ZooKeeper server (leader election and the ZooKeeper store):
//! `kill -9` of the active, the killed RM back as standby, ZooKeeper lost
//! (no RM active, never two) and back. Without the client jars
//! (integration/setup-clients.sh) or the ZooKeeper jars
//! (integration/setup-maven.sh zookeeper) the tests print `SKIP:` and pass,
//! except under CI, where they fail.

use std::time::Duration;

use spindle_integration::cli::{AppList, NodeList};
use spindle_integration::cluster::wait_until;
use spindle_integration::{
    AppSubmission, CliOutput, Cluster, HadoopClients, ZooKeeperJars, ZooKeeperServer,
};

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

/// A pair with automatic failover on `zookeeper`: leader election and the
/// ZooKeeper state store, a 4 s session timeout (Hadoop's default is 10 s)
/// to keep the test short.
fn auto_pair(clients: &HadoopClients, zookeeper: &ZooKeeperServer, nodemanagers: usize) -> Cluster {
    match Cluster::builder()
        .ha_pair(true)
        .zookeeper(zookeeper.connect_string())
        .nodemanagers(nodemanagers)
        .rm_property("hadoop.zk.timeout-ms", 4000)
        .rm_property(
            "yarn.resourcemanager.work-preserving-recovery.scheduling-wait-ms",
            2000,
        )
        // The NodeManagers and the CLI keep failing over while no RM is active.
        .rm_property("yarn.resourcemanager.connect.max-wait.ms", 120_000)
        .start(clients)
    {
        Ok(c) => c,
        Err(e) => panic!("the HA pair did not start: {e:#}"),
    }
}

fn start_zookeeper() -> Option<ZooKeeperServer> {
    let jars = ZooKeeperJars::for_tests()?;
    match ZooKeeperServer::start(&jars) {
        Ok(zk) => Some(zk),
        Err(e) => panic!("the ZooKeeper server did not start: {e:#}"),
    }
}

fn other_rm(id: &str) -> &'static str {
    if id == "rm1" {
        "rm2"
    } else {
        "rm1"
    }
}

/// Waits until the RMs the CLI reports active are exactly `ids`.
#[track_caller]
fn wait_for_actives(cluster: &Cluster, ids: &[&str], what: &str) {
    let want: Vec<String> = ids.iter().map(|s| s.to_string()).collect();
    if !wait_until(TIMEOUT, POLL, || {
        cluster.active_rms().as_ref() == Some(&want)
    }) {
        panic!(
            "{what}: the active RMs are {:?}, not {want:?}\n{}",
            cluster.service_states().map(|(_, out)| out.to_string()),
            cluster.log_report()
        );
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
    let Some(zookeeper) = start_zookeeper() else {
        return;
    };
    let cluster = auto_pair(&clients, &zookeeper, 0);
    let Some(active) = cluster.wait_for_one_active(TIMEOUT) else {
        panic!("no RM was elected active\n{}", cluster.log_report());
    };
    let standby = other_rm(&active);

    let out = cluster.yarn(["rmadmin", "-transitionToActive", standby]);
    assert!(!out.success(), "{out}");
    assert!(
        out.stderr.contains("Automatic failover is enabled")
            || out.stdout.contains("Automatic failover is enabled"),
        "{out}"
    );
    assert_eq!(service_state(&cluster, standby), "standby");
    assert_eq!(service_state(&cluster, &active), "active");

    // --forcemanual asks for a confirmation on stdin; the forced standby gives
    // its election lock up, and the election makes one RM active again.
    let out = match cluster.yarn_command().stdin("Y\n").run([
        "rmadmin",
        "-transitionToStandby",
        "--forcemanual",
        active.as_str(),
    ]) {
        Ok(out) => out,
        Err(e) => panic!("cannot run the yarn launcher: {e:#}"),
    };
    assert!(out.success(), "{out}\n{}", cluster.log_report());
    if cluster.wait_for_one_active(TIMEOUT).is_none() {
        panic!(
            "no RM is active after the forced transition\n{}",
            cluster.log_report()
        );
    }
}

/// Automatic failover end to end: the RMs elect the active by themselves;
/// `kill -9` of the active hands the cluster (and the application) to the
/// other; the killed RM, started again, joins as standby; a plain manual
/// transition is refused; ZooKeeper lost, the active steps down (no RM
/// active, never two) and the CLI finds no active RM; ZooKeeper back, one RM
/// is active again.
#[test]
fn automatic_failover_on_zookeeper_after_a_kill_9_and_a_lost_zookeeper() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(mut zookeeper) = start_zookeeper() else {
        return;
    };
    let mut cluster = auto_pair(&clients, &zookeeper, 1);

    // Exactly one RM becomes active by itself.
    let Some(first) = cluster.wait_for_one_active(TIMEOUT) else {
        panic!("no RM was elected active\n{}", cluster.log_report());
    };
    let second = other_rm(&first);
    wait_for_running_node(&cluster, &first);
    let app = match cluster.submit_app(&AppSubmission::new("ha-auto", "sleep 300")) {
        Ok(id) => id,
        Err(e) => panic!("submission failed: {e:#}\n{}", cluster.log_report()),
    };
    assert!(app_list(&cluster).find(&app).is_some());

    // kill -9 of the active: its ZooKeeper session expires, the other RM is
    // elected, recovers from the ZooKeeper store and serves; the CLI fails
    // over by itself.
    if let Err(e) = cluster.kill_rm_id(&first) {
        panic!("kill -9 of {first}: {e:#}");
    }
    wait_for_actives(&cluster, &[second], "after kill -9 of the active");
    let list = app_list(&cluster);
    assert!(
        list.find(&app).is_some(),
        "{app} is not listed after the failover\n{}",
        cluster.log_report()
    );
    wait_for_running_node(&cluster, second);

    // The killed RM, started again, joins as standby.
    if let Err(e) = cluster.restart_rm_id(&first, TIMEOUT) {
        panic!(
            "{first} did not start again: {e:#}\n{}",
            cluster.log_report()
        );
    }
    assert_eq!(
        cluster.wait_for_one_active(TIMEOUT).as_deref(),
        Some(second),
        "{}",
        cluster.log_report()
    );
    assert_eq!(service_state(&cluster, &first), "standby");

    // Automatic failover is on: a plain manual transition is refused.
    let out = cluster.yarn(["rmadmin", "-transitionToActive", first.as_str()]);
    assert!(!out.success(), "{out}");
    assert!(
        format!("{}{}", out.stdout, out.stderr).contains("Automatic failover is enabled"),
        "{out}"
    );
    assert_eq!(service_state(&cluster, &first), "standby");

    // ZooKeeper lost: the active steps down within the session timeout; no
    // RM is active, and never two.
    if let Err(e) = zookeeper.kill() {
        panic!("kill -9 of ZooKeeper: {e:#}");
    }
    let mut seen = Vec::new();
    let stepped_down = wait_until(TIMEOUT, POLL, || {
        let Ok((states, _)) = cluster.service_states() else {
            return false;
        };
        seen.push(states.clone());
        states.len() == 2 && states.iter().all(|(_, s)| s == "standby")
    });
    assert!(
        stepped_down,
        "the active did not step down without ZooKeeper: {seen:?}\n{}",
        cluster.log_report()
    );
    assert!(
        seen.iter()
            .all(|states| states.iter().filter(|(_, s)| s == "active").count() <= 1),
        "two active RMs: {seen:?}"
    );
    // No RM serves the client protocol: the CLI fails over until it gives up
    // (the same command succeeds once an RM is active again, below).
    let short_client = [
        "application",
        "-D",
        "yarn.resourcemanager.connect.max-wait.ms=3000",
        "-list",
        "-appStates",
        "ALL",
    ];
    let out = cluster.yarn(short_client);
    assert!(!out.success(), "a client found an active RM:\n{out}");
    assert!(
        out.stderr.contains("StandbyException") || out.stderr.contains("is not Active"),
        "the client should have been refused by standbys:\n{out}"
    );

    // ZooKeeper back: one RM is elected again and serves the application.
    if let Err(e) = zookeeper.restart() {
        panic!("ZooKeeper did not start again: {e:#}");
    }
    if cluster.wait_for_one_active(TIMEOUT).is_none() {
        panic!(
            "no RM is active after ZooKeeper came back\n{}",
            cluster.log_report()
        );
    }
    assert!(
        app_list(&cluster).find(&app).is_some(),
        "{app} is not listed after ZooKeeper came back\n{}",
        cluster.log_report()
    );
    let out = cluster.yarn(short_client);
    assert!(out.success() && out.stdout.contains(&app), "{out}");
}

/// Figures, not assertions (issue S9): the failover time from `kill -9` of
/// the active RM to the first successful client call (`getYarnClusterMetrics`
/// through Hadoop's YarnClient, already running and connected, which fails
/// over by itself with the harness's client settings: 500 ms between
/// failover attempts), median of 5, with Hadoop's default ZooKeeper session
/// timeout (10 s) and with 4 s. Run:
///
/// ```sh
/// cargo build -p spindle
/// cargo test -p spindle-integration --test ha -- --ignored failover_time --nocapture
/// ```
#[test]
#[ignore = "a measurement: run by hand with --ignored --nocapture"]
fn failover_time_from_kill_9_to_the_first_successful_client_call() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = ZooKeeperJars::for_tests() else {
        return;
    };
    let mut report = Vec::new();
    for timeout_ms in [10_000u64, 4_000] {
        let zookeeper = match ZooKeeperServer::start(&jars) {
            Ok(zk) => zk,
            Err(e) => panic!("the ZooKeeper server did not start: {e:#}"),
        };
        let times = measure_failovers(&clients, &zookeeper, timeout_ms, 5);
        let mut sorted = times.clone();
        sorted.sort();
        let median = sorted[sorted.len() / 2];
        let line = format!(
            "hadoop.zk.timeout-ms={timeout_ms}: kill -9 of the active to the first successful \
             client call: median {median:?} of {} (each: {times:?})",
            times.len()
        );
        eprintln!("{line}");
        report.push(line);
    }
    println!("{}", report.join("\n"));
}

fn measure_failovers(
    clients: &HadoopClients,
    zookeeper: &ZooKeeperServer,
    timeout_ms: u64,
    rounds: usize,
) -> Vec<Duration> {
    use std::io::{BufRead as _, BufReader, Write as _};
    use std::process::Stdio;

    let mut cluster = match Cluster::builder()
        .ha_pair(true)
        .zookeeper(zookeeper.connect_string())
        .rm_property("hadoop.zk.timeout-ms", timeout_ms)
        .rm_property("yarn.resourcemanager.connect.max-wait.ms", 120_000)
        .start(clients)
    {
        Ok(c) => c,
        Err(e) => panic!("the HA pair did not start: {e:#}"),
    };
    let Some(mut active) = cluster.wait_for_one_active(TIMEOUT) else {
        panic!("no RM was elected active\n{}", cluster.log_report());
    };
    let classes = match clients.compile_java("FailoverProbe") {
        Ok(c) => c,
        Err(e) => panic!("compiling the probe: {e:#}"),
    };
    let mut command = match cluster
        .yarn_command()
        .classpath(classes)
        .command(["FailoverProbe"])
    {
        Ok(c) => c,
        Err(e) => panic!("the probe's command: {e:#}"),
    };
    let mut probe = match command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
    {
        Ok(p) => p,
        Err(e) => panic!("starting the probe: {e}"),
    };
    let (Some(mut input), Some(output)) = (probe.stdin.take(), probe.stdout.take()) else {
        panic!("the probe has no pipes");
    };
    let mut output = BufReader::new(output);
    let mut read_line = || {
        let mut line = String::new();
        match output.read_line(&mut line) {
            Ok(0) | Err(_) => panic!("the probe exited (see the cluster logs below)"),
            Ok(_) => line.trim().to_string(),
        }
    };
    assert_eq!(read_line(), "ready");
    let mut times = Vec::new();
    for _ in 0..rounds {
        if let Err(e) = cluster.kill_rm_id(&active) {
            panic!("kill -9 of {active}: {e:#}");
        }
        let killed = std::time::Instant::now();
        if let Err(e) = writeln!(input, "call").and_then(|()| input.flush()) {
            panic!("writing to the probe: {e}");
        }
        let answer = read_line();
        let elapsed = killed.elapsed();
        assert_eq!(answer, "ok", "the client call failed after the failover");
        times.push(elapsed);
        eprintln!(
            "hadoop.zk.timeout-ms={timeout_ms}: {active} killed, client served after {elapsed:?}"
        );
        let killed_id = active.clone();
        if let Err(e) = cluster.restart_rm_id(&killed_id, TIMEOUT) {
            panic!("{killed_id} did not start again: {e:#}");
        }
        active = match cluster.wait_for_one_active(TIMEOUT) {
            Some(id) => id,
            None => panic!("no single active RM\n{}", cluster.log_report()),
        };
    }
    drop(input);
    let _ = probe.kill();
    let _ = probe.wait();
    times
}
