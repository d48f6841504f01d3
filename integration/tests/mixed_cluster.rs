//! Mixed clusters, both ways, as an operator migrating a live cluster runs them:
//!
//! * Hadoop 3.3.4's own Java NodeManager registers with Spindle's ResourceManager, shows
//!   RUNNING in `yarn node -list`, and runs the containers of an application (Spindle's
//!   distributed shell: its AM starts containers on the Hadoop NM with the NM tokens and
//!   container tokens Spindle's RM issued) and of a Spark 3.5.3 pi job in cluster mode.
//! * Spindle's NodeManager registers with Hadoop's ResourceManager (capacity scheduler) and
//!   runs the same two applications, with the tokens Hadoop's RM issued.
//!
//! Then, each both ways (a Hadoop NM under Spindle's RM, Spindle's NM under Hadoop's
//! RM): node keys rolled by the RM every few seconds; a killed application's container
//! stopped, an AM's exit code failing its application, a decommission (at once and
//! graceful, draining a container); a resync with a restarted RM; a container kept
//! across a work-preserving RM restart; log aggregation reaching SUCCEEDED; a node
//! with full disks UNHEALTHY; `updateNodeResource` reaching the node and surviving a
//! resync; and (Spindle's NM under Hadoop's RM) `yarn container -signal`.
//!
//! Needs the Hadoop client (`integration/setup-clients.sh`) and the Hadoop daemons
//! (`integration/setup-maven.sh yarn-server`); skips without them, except under CI.

use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use spindle_integration::cli::{parse_report, report_value, NodeList};
use spindle_integration::process::{run_with_timeout, CliOutput};
use spindle_integration::spark::{self, app_id_in};
use spindle_integration::{
    spindle_binary, submit_app_with, wait_for, wait_until, AppSubmission, Cluster,
    ExtraNodeManager, HadoopClients, HadoopRm, NmKind, NodeManagerSpec, YarnServerJars,
};

/// Waits until `yarn node -list -all` (with the configuration in `conf_dir`) shows the
/// NodeManager `nm` RUNNING; returns the last listing either way.
fn wait_node_running(
    clients: &HadoopClients,
    conf_dir: &Path,
    nm: &ExtraNodeManager,
) -> (bool, CliOutput) {
    let mut last = None;
    let running = wait_for(Duration::from_secs(60), Duration::from_millis(500), || {
        let out = clients
            .yarn()
            .conf_dir(conf_dir)
            .run(["node", "-list", "-all"])
            .ok()?;
        let found = out.success()
            && NodeList::parse(&out.stdout).is_ok_and(|list| {
                list.nodes
                    .iter()
                    .any(|n| nm.is_node_id(&n.node_id) && n.state == "RUNNING")
            });
        last = Some(out);
        found.then_some(())
    })
    .is_some();
    match last {
        Some(out) => (running, out),
        None => panic!("yarn node -list could not be run"),
    }
}

/// `spindle distributed-shell` against the RM that `conf_dir` names: its AM (this
/// `spindle` binary, in an AM container) asks for `containers` containers and starts
/// each with the NM token and container token the RM handed it.
fn distributed_shell(conf_dir: &Path, containers: u32) -> CliOutput {
    let binary = spindle_binary().expect("the spindle binary");
    let mut cmd = Command::new(binary);
    cmd.arg("distributed-shell")
        .arg("--conf")
        .arg(conf_dir)
        .args(["--num-containers", &containers.to_string()])
        .args(["--container-memory", "256"])
        .args(["--command", "echo hello from $CONTAINER_ID"]);
    run_with_timeout(cmd, Duration::from_secs(240)).expect("distributed-shell runs")
}

/// Spark's pi.py in cluster mode against the RM that `conf_dir` names, staging in
/// `staging`; returns the output and the application id.
fn spark_pi(clients: &HadoopClients, conf_dir: &Path, staging: &Path) -> (CliOutput, String) {
    let pi = spark::pi_py(clients);
    let cmd = spark::submit_command_to(
        conf_dir,
        Some(staging),
        clients,
        &["--deploy-mode", "cluster", &pi.display().to_string(), "4"],
    );
    let out = run_with_timeout(cmd, Duration::from_secs(420)).expect("spark-submit runs");
    let app = app_id_in(&out).unwrap_or_default();
    (out, app)
}

fn assert_finished_succeeded(clients: &HadoopClients, conf_dir: &Path, app: &str, logs: &str) {
    let status = clients
        .yarn()
        .conf_dir(conf_dir)
        .run(["application", "-status", app])
        .expect("yarn application -status runs");
    assert!(status.success(), "{status}\n{logs}");
    let report = parse_report(&status.stdout);
    assert_eq!(
        report_value(&report, "State"),
        Some("FINISHED"),
        "{status}\n{logs}"
    );
    assert_eq!(
        report_value(&report, "Final-State"),
        Some("SUCCEEDED"),
        "{status}\n{logs}"
    );
}

/// A loopback address of the extra NodeManager's own (the cluster's own NMs use
/// 127.0.0.2 and up).
const EXTRA_NM_HOST: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 77));

#[test]
fn a_hadoop_nodemanager_joins_spindle_rm_and_runs_a_distributed_shell_and_spark_pi() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = YarnServerJars::for_tests() else {
        return;
    };
    // Spindle's RM alone: the Hadoop NM is the only node.
    let cluster = Cluster::builder()
        .heartbeat_interval_ms(500)
        .start(&clients)
        .expect("Spindle's RM starts");
    let nm = ExtraNodeManager::start(
        &NmKind::Hadoop(jars),
        EXTRA_NM_HOST,
        cluster.yarn_site(),
        cluster.core_site(),
        &NodeManagerSpec::new(8192, 8),
    )
    .unwrap_or_else(|e| {
        panic!(
            "Hadoop's NM did not register: {e:#}\n{}",
            cluster.log_report()
        )
    });
    let logs = || format!("{}\n{}", cluster.log_report(), nm.log_tail(200));

    let (running, out) = wait_node_running(&clients, cluster.conf_dir(), &nm);
    assert!(running, "Hadoop's NM is not RUNNING:\n{out}\n{}", logs());

    let out = distributed_shell(cluster.conf_dir(), 2);
    assert!(
        out.success(),
        "distributed-shell failed:\n{out}\n{}",
        logs()
    );
    assert!(
        out.stdout
            .contains("ended: state FINISHED, final status SUCCEEDED"),
        "{out}\n{}",
        logs()
    );

    let (out, app) = spark_pi(
        &clients,
        cluster.conf_dir(),
        &cluster.root().join("staging"),
    );
    assert!(out.success(), "spark-submit failed:\n{out}\n{}", logs());
    assert_finished_succeeded(&clients, cluster.conf_dir(), &app, &logs());
}

#[test]
fn spindle_nodemanager_joins_hadoop_rm_and_runs_a_distributed_shell_and_spark_pi() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = YarnServerJars::for_tests() else {
        return;
    };
    let binary = spindle_binary().expect("the spindle binary");
    let rm = HadoopRm::start(&jars, &Default::default())
        .unwrap_or_else(|e| panic!("Hadoop's RM did not start: {e:#}"));
    let nm = ExtraNodeManager::start(
        &NmKind::Spindle(binary),
        EXTRA_NM_HOST,
        rm.yarn_site(),
        rm.core_site(),
        &NodeManagerSpec::new(8192, 8),
    )
    .unwrap_or_else(|e| panic!("Spindle's NM did not start: {e:#}\n{}", rm.log_tail(200)));
    let logs = || format!("{}\n{}", rm.log_tail(200), nm.log_tail(200));

    let (running, out) = wait_node_running(&clients, rm.conf_dir(), &nm);
    assert!(running, "Spindle's NM is not RUNNING:\n{out}\n{}", logs());

    let out = distributed_shell(rm.conf_dir(), 2);
    assert!(
        out.success(),
        "distributed-shell failed:\n{out}\n{}",
        logs()
    );
    assert!(
        out.stdout
            .contains("ended: state FINISHED, final status SUCCEEDED"),
        "{out}\n{}",
        logs()
    );

    let (out, app) = spark_pi(&clients, rm.conf_dir(), &rm.root().join("staging"));
    assert!(out.success(), "spark-submit failed:\n{out}\n{}", logs());
    assert_finished_succeeded(&clients, rm.conf_dir(), &app, &logs());
}

/// Properties that make the node keys roll every 7 s and activate 3 s later (1.5 × a
/// 2 s liveness expiry), on either RM.
fn fast_key_rolling() -> spindle_integration::HadoopConf {
    let mut conf = spindle_integration::HadoopConf::new();
    conf.set("yarn.nm.liveness-monitor.expiry-interval-ms", 2000)
        .set(
            "yarn.resourcemanager.container-tokens.master-key-rolling-interval-secs",
            7,
        )
        .set(
            "yarn.resourcemanager.nm-tokens.master-key-rolling-interval-secs",
            7,
        );
    conf
}

/// Runs distributed shells against the RM of `conf_dir` until `activated` says both
/// node keys have rolled and activated at least once, then once more: every run must
/// succeed (its containers are started with tokens under the keys of the moment).
fn shells_across_key_rolls(
    conf_dir: &Path,
    activated: impl Fn() -> bool,
    logs: impl Fn() -> String,
) {
    let mut runs = 0;
    let rolled = wait_for(Duration::from_secs(120), Duration::from_millis(10), || {
        let done = activated();
        let out = distributed_shell(conf_dir, 2);
        runs += 1;
        assert!(
            out.success() && out.stdout.contains("final status SUCCEEDED"),
            "distributed-shell run {runs} failed:\n{out}\n{}",
            logs()
        );
        done.then_some(())
    });
    assert!(
        rolled.is_some(),
        "the node keys did not roll and activate within 120 s ({runs} runs)\n{}",
        logs()
    );
}

#[test]
fn a_hadoop_nodemanager_takes_the_node_keys_spindle_rm_rolls() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = YarnServerJars::for_tests() else {
        return;
    };
    let mut builder = Cluster::builder().heartbeat_interval_ms(500);
    for (key, value) in fast_key_rolling().iter() {
        builder = builder.rm_property(key, value);
    }
    let cluster = builder.start(&clients).expect("Spindle's RM starts");
    let nm = ExtraNodeManager::start(
        &NmKind::Hadoop(jars),
        EXTRA_NM_HOST,
        cluster.yarn_site(),
        cluster.core_site(),
        &NodeManagerSpec::new(8192, 8),
    )
    .unwrap_or_else(|e| {
        panic!(
            "Hadoop's NM did not register: {e:#}\n{}",
            cluster.log_report()
        )
    });
    let rm_log = cluster.log_dir().join("rm.stdout");
    let rm_err = cluster.log_dir().join("rm.stderr");
    let activated = || {
        let text = [&rm_log, &rm_err]
            .iter()
            .map(|p| std::fs::read_to_string(p).unwrap_or_default())
            .collect::<String>();
        text.contains("container-token master key activated")
            && text.contains("NMToken master key activated")
    };
    shells_across_key_rolls(cluster.conf_dir(), activated, || {
        format!("{}\n{}", cluster.log_report(), nm.log_tail(200))
    });
}

#[test]
fn spindle_nodemanager_takes_the_node_keys_hadoop_rm_rolls() {
    let Some(_clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = YarnServerJars::for_tests() else {
        return;
    };
    let binary = spindle_binary().expect("the spindle binary");
    let rm = HadoopRm::start(&jars, &fast_key_rolling())
        .unwrap_or_else(|e| panic!("Hadoop's RM did not start: {e:#}"));
    let nm = ExtraNodeManager::start(
        &NmKind::Spindle(binary),
        EXTRA_NM_HOST,
        rm.yarn_site(),
        rm.core_site(),
        &NodeManagerSpec::new(8192, 8),
    )
    .unwrap_or_else(|e| panic!("Spindle's NM did not start: {e:#}\n{}", rm.log_tail(200)));
    let rm_err = rm.root().join("hadoop-rm.stderr");
    let activated = || {
        let text = std::fs::read_to_string(&rm_err).unwrap_or_default();
        // Both secret managers log this line when their next key activates.
        text.matches("Activating next master key with id").count() >= 2
    };
    shells_across_key_rolls(rm.conf_dir(), activated, || {
        format!("{}\n{}", rm.log_tail(200), nm.log_tail(200))
    });
}

/// The node list row of `nm` (`yarn node -list -all` with `conf_dir`), if listed.
fn node_row(
    clients: &HadoopClients,
    conf_dir: &Path,
    nm: &ExtraNodeManager,
) -> Option<spindle_integration::cli::NodeRow> {
    let out = clients
        .yarn()
        .conf_dir(conf_dir)
        .run(["node", "-list", "-all"])
        .ok()?;
    NodeList::parse(&out.stdout)
        .ok()?
        .nodes
        .into_iter()
        .find(|n| nm.is_node_id(&n.node_id))
}

/// Waits until `yarn application -status app` shows `state`; returns the report.
fn wait_app_state(
    clients: &HadoopClients,
    conf_dir: &Path,
    app: &str,
    state: &str,
) -> Option<Vec<(String, String)>> {
    spindle_integration::cluster::wait_app_state(
        clients,
        conf_dir,
        app,
        &[state],
        Duration::from_secs(90),
    )
}

/// On the RM of `conf_dir` with `nm` its only node: a running AM container is killed
/// with its application (the NM stops it and reports it, the node's count drops to 0);
/// an AM container that exits 3 fails its application with that exit code; a node put
/// in the exclude file and refreshed is DECOMMISSIONED and its NM shuts down.
fn kill_failure_and_decommission(
    clients: &HadoopClients,
    conf_dir: &Path,
    nm: &mut ExtraNodeManager,
    exclude: impl Fn(&str),
    logs: impl Fn(&ExtraNodeManager) -> String,
) {
    let sleeper = submit_app_with(
        clients,
        conf_dir,
        &AppSubmission::new("mixed-sleeper", "sleep 600"),
    )
    .unwrap_or_else(|e| panic!("submitting: {e:#}\n{}", logs(nm)));
    let running = wait_for(Duration::from_secs(90), Duration::from_millis(500), || {
        node_row(clients, conf_dir, nm).filter(|n| n.running_containers == 1)
    });
    assert!(
        running.is_some(),
        "the AM container never ran:\n{}",
        logs(nm)
    );
    clients
        .yarn()
        .conf_dir(conf_dir)
        .run(["application", "-kill", &sleeper])
        .expect("yarn application -kill runs")
        .assert_success();
    assert!(
        wait_app_state(clients, conf_dir, &sleeper, "KILLED").is_some(),
        "{sleeper} not KILLED:\n{}",
        logs(nm)
    );
    let idle = wait_for(Duration::from_secs(90), Duration::from_millis(500), || {
        node_row(clients, conf_dir, nm).filter(|n| n.running_containers == 0)
    });
    assert!(
        idle.is_some(),
        "the killed container still runs:\n{}",
        logs(nm)
    );

    let failing = submit_app_with(
        clients,
        conf_dir,
        &AppSubmission::new("mixed-exit-3", "exit 3"),
    )
    .unwrap_or_else(|e| panic!("submitting: {e:#}\n{}", logs(nm)));
    let report = wait_app_state(clients, conf_dir, &failing, "FAILED")
        .or_else(|| wait_app_state(clients, conf_dir, &failing, "FINISHED"));
    let report = report.unwrap_or_else(|| panic!("{failing} did not end:\n{}", logs(nm)));
    assert_eq!(
        report_value(&report, "Final-State"),
        Some("FAILED"),
        "{report:?}"
    );
    let diagnostics = report_value(&report, "Diagnostics").unwrap_or_default();
    assert!(
        diagnostics.contains("exitCode: 3"),
        "diagnostics without the exit code: {report:?}\n{}",
        logs(nm)
    );

    exclude(&nm.host().to_string());
    clients
        .yarn()
        .conf_dir(conf_dir)
        .run(["rmadmin", "-refreshNodes"])
        .expect("yarn rmadmin runs")
        .assert_success();
    let decommissioned = wait_for(Duration::from_secs(60), Duration::from_millis(500), || {
        node_row(clients, conf_dir, nm).filter(|n| n.state == "DECOMMISSIONED")
    });
    assert!(
        decommissioned.is_some(),
        "not DECOMMISSIONED:\n{}",
        logs(nm)
    );
    let exited = wait_for(Duration::from_secs(60), Duration::from_millis(200), || {
        nm.process().try_exit_status().ok().flatten()
    });
    assert!(exited.is_some(), "the NM did not shut down:\n{}", logs(nm));
}

#[test]
fn a_hadoop_nodemanager_under_spindle_rm_kills_fails_and_is_decommissioned() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = YarnServerJars::for_tests() else {
        return;
    };
    let cluster = Cluster::builder()
        .heartbeat_interval_ms(500)
        .start(&clients)
        .expect("Spindle's RM starts");
    let mut nm = ExtraNodeManager::start(
        &NmKind::Hadoop(jars),
        EXTRA_NM_HOST,
        cluster.yarn_site(),
        cluster.core_site(),
        &NodeManagerSpec::new(8192, 8),
    )
    .unwrap_or_else(|e| {
        panic!(
            "Hadoop's NM did not register: {e:#}\n{}",
            cluster.log_report()
        )
    });
    kill_failure_and_decommission(
        &clients,
        cluster.conf_dir(),
        &mut nm,
        |host| cluster.set_exclude_hosts(&[host]).expect("exclude file"),
        |nm| format!("{}\n{}", cluster.log_report(), nm.log_tail(200)),
    );
}

#[test]
fn spindle_nodemanager_under_hadoop_rm_kills_fails_and_is_decommissioned() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = YarnServerJars::for_tests() else {
        return;
    };
    let binary = spindle_binary().expect("the spindle binary");
    let rm = HadoopRm::start(&jars, &Default::default())
        .unwrap_or_else(|e| panic!("Hadoop's RM did not start: {e:#}"));
    let mut nm = ExtraNodeManager::start(
        &NmKind::Spindle(binary),
        EXTRA_NM_HOST,
        rm.yarn_site(),
        rm.core_site(),
        &NodeManagerSpec::new(8192, 8),
    )
    .unwrap_or_else(|e| panic!("Spindle's NM did not start: {e:#}\n{}", rm.log_tail(200)));
    kill_failure_and_decommission(
        &clients,
        rm.conf_dir(),
        &mut nm,
        |host| rm.set_exclude_hosts(&[host]).expect("exclude file"),
        |nm| format!("{}\n{}", rm.log_tail(200), nm.log_tail(200)),
    );
}

/// NodeManager settings that keep retrying an RM that is away for a restart.
fn patient_nm() -> NodeManagerSpec {
    let mut spec = NodeManagerSpec::new(8192, 8);
    spec.properties
        .set("yarn.resourcemanager.connect.max-wait.ms", 180_000)
        .set("yarn.resourcemanager.connect.retry-interval.ms", 500)
        .set("ipc.client.connect.max.retries", 10)
        .set("ipc.client.connect.retry.interval", 500);
    spec
}

#[test]
fn a_hadoop_nodemanager_resyncs_with_a_restarted_spindle_rm() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = YarnServerJars::for_tests() else {
        return;
    };
    let mut cluster = Cluster::builder()
        .heartbeat_interval_ms(500)
        .start(&clients)
        .expect("Spindle's RM starts");
    let nm = ExtraNodeManager::start(
        &NmKind::Hadoop(jars),
        EXTRA_NM_HOST,
        cluster.yarn_site(),
        cluster.core_site(),
        &patient_nm(),
    )
    .unwrap_or_else(|e| {
        panic!(
            "Hadoop's NM did not register: {e:#}\n{}",
            cluster.log_report()
        )
    });
    let (running, out) = wait_node_running(&clients, cluster.conf_dir(), &nm);
    assert!(running, "{out}");
    cluster.kill_rm().expect("kill -9 of the RM");
    cluster
        .restart_rm(Duration::from_secs(60))
        .expect("the RM starts again");
    // The restarted RM (no state store) does not know the node: it tells it to
    // resync, and the NM registers again.
    let logs = || format!("{}\n{}", cluster.log_report(), nm.log_tail(200));
    let (running, out) = wait_node_running(&clients, cluster.conf_dir(), &nm);
    assert!(
        running,
        "not RUNNING after the RM restart:\n{out}\n{}",
        logs()
    );
    let out = distributed_shell(cluster.conf_dir(), 2);
    assert!(
        out.success() && out.stdout.contains("final status SUCCEEDED"),
        "distributed-shell failed after the restart:\n{out}\n{}",
        logs()
    );
}

#[test]
fn spindle_nodemanager_resyncs_with_a_restarted_hadoop_rm() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = YarnServerJars::for_tests() else {
        return;
    };
    let binary = spindle_binary().expect("the spindle binary");
    let mut rm = HadoopRm::start(&jars, &Default::default())
        .unwrap_or_else(|e| panic!("Hadoop's RM did not start: {e:#}"));
    let nm = ExtraNodeManager::start(
        &NmKind::Spindle(binary),
        EXTRA_NM_HOST,
        rm.yarn_site(),
        rm.core_site(),
        &patient_nm(),
    )
    .unwrap_or_else(|e| panic!("Spindle's NM did not start: {e:#}\n{}", rm.log_tail(200)));
    let (running, out) = wait_node_running(&clients, rm.conf_dir(), &nm);
    assert!(running, "{out}");
    if let Err(e) = rm.restart() {
        panic!("Hadoop's RM did not restart: {e:#}\n{}", nm.log_tail(200));
    }
    let (running, out) = wait_node_running(&clients, rm.conf_dir(), &nm);
    assert!(
        running,
        "not RUNNING after the RM restart:\n{out}\n{}\n{}",
        rm.log_tail(200),
        nm.log_tail(200)
    );
    let out = distributed_shell(rm.conf_dir(), 2);
    assert!(
        out.success() && out.stdout.contains("final status SUCCEEDED"),
        "distributed-shell failed after the restart:\n{out}\n{}\n{}",
        rm.log_tail(200),
        nm.log_tail(200)
    );
}

/// On the RM of `conf_dir` with `nm` its only node, a running AM container (`sleep`,
/// never registering) survives a kill -9 and restart of the RM with work-preserving
/// recovery (`restart`): the NM keeps it and reports it when it registers again, the
/// application stays RUNNING, and a kill after the restart stops the container the
/// RM recovered.
fn container_survives_rm_restart(
    clients: &HadoopClients,
    conf_dir: &Path,
    nm: &ExtraNodeManager,
    restart: impl FnOnce(),
    logs: impl Fn() -> String,
) {
    let app = submit_app_with(
        clients,
        conf_dir,
        &AppSubmission::new("mixed-survivor", "sleep 600"),
    )
    .unwrap_or_else(|e| panic!("submitting: {e:#}\n{}", logs()));
    let running = wait_for(Duration::from_secs(90), Duration::from_millis(500), || {
        node_row(clients, conf_dir, nm).filter(|n| n.running_containers == 1)
    });
    assert!(running.is_some(), "the AM container never ran:\n{}", logs());
    // An AM that never registers leaves its application ACCEPTED (RUNNING once
    // registered): the state must be the same after the restart.
    let app_state = |clients: &HadoopClients| {
        let out = clients
            .yarn()
            .conf_dir(conf_dir)
            .run(["application", "-status", &app])
            .ok()?;
        report_value(&parse_report(&out.stdout), "State").map(str::to_owned)
    };
    let before = app_state(clients).unwrap_or_else(|| panic!("no state of {app}:\n{}", logs()));
    restart();
    let recovered = wait_for(Duration::from_secs(90), Duration::from_millis(500), || {
        node_row(clients, conf_dir, nm)
            .filter(|n| n.state == "RUNNING" && n.running_containers == 1)
    });
    assert!(
        recovered.is_some(),
        "the node and its container are not back:\n{}",
        logs()
    );
    let after = wait_app_state(clients, conf_dir, &app, &before);
    assert!(
        after.is_some(),
        "{app} is no longer {before} after the restart ({:?}):\n{}",
        app_state(clients),
        logs()
    );
    let attempts = clients
        .yarn()
        .conf_dir(conf_dir)
        .run(["applicationattempt", "-list", &app])
        .expect("yarn applicationattempt runs");
    assert!(
        attempts.stdout.contains("_000001") && !attempts.stdout.contains("_000002"),
        "the first attempt goes on:\n{attempts}\n{}",
        logs()
    );
    clients
        .yarn()
        .conf_dir(conf_dir)
        .run(["application", "-kill", &app])
        .expect("yarn application -kill runs")
        .assert_success();
    let idle = wait_for(Duration::from_secs(90), Duration::from_millis(500), || {
        node_row(clients, conf_dir, nm).filter(|n| n.running_containers == 0)
    });
    assert!(
        idle.is_some(),
        "the recovered container was not stopped:\n{}",
        logs()
    );
}

#[test]
fn a_hadoop_nodemanager_keeps_its_containers_across_a_work_preserving_spindle_rm_restart() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = YarnServerJars::for_tests() else {
        return;
    };
    let mut cluster = Cluster::builder()
        .heartbeat_interval_ms(500)
        .rm_property("yarn.resourcemanager.recovery.enabled", true)
        .rm_property(
            "yarn.resourcemanager.work-preserving-recovery.enabled",
            true,
        )
        .start(&clients)
        .expect("Spindle's RM starts");
    let nm = ExtraNodeManager::start(
        &NmKind::Hadoop(jars),
        EXTRA_NM_HOST,
        cluster.yarn_site(),
        cluster.core_site(),
        &patient_nm(),
    )
    .unwrap_or_else(|e| {
        panic!(
            "Hadoop's NM did not register: {e:#}\n{}",
            cluster.log_report()
        )
    });
    let conf_dir = cluster.conf_dir().to_path_buf();
    let logs_dir = cluster.log_dir().to_path_buf();
    let restart = || {
        cluster.kill_rm().expect("kill -9 of the RM");
        cluster
            .restart_rm(Duration::from_secs(60))
            .expect("the RM starts again");
    };
    let nm_ref = &nm;
    container_survives_rm_restart(&clients, &conf_dir, nm_ref, restart, || {
        let rm = ["rm.stderr", "rm.stdout", "rm-2.stderr", "rm-2.stdout"]
            .iter()
            .map(|f| std::fs::read_to_string(logs_dir.join(f)).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n");
        let tail: Vec<&str> = rm.lines().rev().take(200).collect();
        format!(
            "{}\n{}",
            tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
            nm_ref.log_tail(200)
        )
    });
}

#[test]
fn spindle_nodemanager_keeps_its_containers_across_a_work_preserving_hadoop_rm_restart() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = YarnServerJars::for_tests() else {
        return;
    };
    let binary = spindle_binary().expect("the spindle binary");
    let store = tempfile::tempdir().expect("a state store dir");
    let mut props = spindle_integration::HadoopConf::new();
    props
        .set("yarn.resourcemanager.recovery.enabled", true)
        .set(
            "yarn.resourcemanager.work-preserving-recovery.enabled",
            true,
        )
        .set(
            "yarn.resourcemanager.store.class",
            "org.apache.hadoop.yarn.server.resourcemanager.recovery.FileSystemRMStateStore",
        )
        .set(
            "yarn.resourcemanager.fs.state-store.uri",
            format!("file://{}", store.path().display()),
        );
    let rm = std::cell::RefCell::new(
        HadoopRm::start(&jars, &props)
            .unwrap_or_else(|e| panic!("Hadoop's RM did not start: {e:#}")),
    );
    let nm = {
        let rm = rm.borrow();
        ExtraNodeManager::start(
            &NmKind::Spindle(binary),
            EXTRA_NM_HOST,
            rm.yarn_site(),
            rm.core_site(),
            &patient_nm(),
        )
        .unwrap_or_else(|e| panic!("Spindle's NM did not start: {e:#}\n{}", rm.log_tail(200)))
    };
    let conf_dir = rm.borrow().conf_dir().to_path_buf();
    container_survives_rm_restart(
        &clients,
        &conf_dir,
        &nm,
        || {
            if let Err(e) = rm.borrow_mut().restart() {
                panic!("Hadoop's RM did not restart: {e:#}");
            }
        },
        || format!("{}\n{}", rm.borrow().log_tail(200), nm.log_tail(200)),
    );
}

#[test]
fn spindle_nodemanager_takes_a_container_signal_from_hadoop_rm() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = YarnServerJars::for_tests() else {
        return;
    };
    let binary = spindle_binary().expect("the spindle binary");
    let rm = HadoopRm::start(&jars, &Default::default())
        .unwrap_or_else(|e| panic!("Hadoop's RM did not start: {e:#}"));
    let nm = ExtraNodeManager::start(
        &NmKind::Spindle(binary),
        EXTRA_NM_HOST,
        rm.yarn_site(),
        rm.core_site(),
        &NodeManagerSpec::new(8192, 8),
    )
    .unwrap_or_else(|e| panic!("Spindle's NM did not start: {e:#}\n{}", rm.log_tail(200)));
    let logs = || format!("{}\n{}", rm.log_tail(200), nm.log_tail(200));
    let app = submit_app_with(
        &clients,
        rm.conf_dir(),
        &AppSubmission::new("mixed-signalled", "sleep 600"),
    )
    .unwrap_or_else(|e| panic!("submitting: {e:#}\n{}", logs()));
    let running = wait_for(Duration::from_secs(90), Duration::from_millis(500), || {
        node_row(&clients, rm.conf_dir(), &nm).filter(|n| n.running_containers == 1)
    });
    assert!(running.is_some(), "the AM container never ran:\n{}", logs());
    // container_<cluster ts>_<seq>_01_000001: the first attempt's AM container.
    let container = format!(
        "{}_01_000001",
        app.replacen("application_", "container_", 1)
    );
    let out = clients
        .yarn()
        .conf_dir(rm.conf_dir())
        .run(["container", "-signal", &container, "GRACEFUL_SHUTDOWN"])
        .expect("yarn container -signal runs");
    assert!(out.success(), "{out}\n{}", logs());
    // SIGTERM ends `sleep`: the only attempt fails with the signal's exit code.
    let report = wait_app_state(&clients, rm.conf_dir(), &app, "FAILED")
        .unwrap_or_else(|| panic!("{app} did not fail after the signal:\n{}", logs()));
    let diagnostics = report_value(&report, "Diagnostics").unwrap_or_default();
    assert!(
        diagnostics.contains("exitCode: 143"),
        "{report:?}\n{}",
        logs()
    );
}

fn user() -> String {
    std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty())
        .or_else(|| {
            Command::new("id")
                .arg("-un")
                .output()
                .ok()
                .and_then(|o| String::from_utf8(o.stdout).ok())
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_default()
}

/// Log aggregation to a local remote dir (`root`): a distributed shell on `nm`, the
/// only node of the RM of `conf_dir`; the NM uploads its containers' logs to Hadoop
/// 3.3's bucket layout and reports it, and the RM's application report says
/// SUCCEEDED.
fn logs_aggregated(
    clients: &HadoopClients,
    conf_dir: &Path,
    nm: &ExtraNodeManager,
    root: &Path,
    logs: impl Fn() -> String,
) {
    let out = distributed_shell(conf_dir, 2);
    assert!(
        out.success(),
        "distributed-shell failed:\n{out}\n{}",
        logs()
    );
    let app = app_id_in(&out).unwrap_or_else(|| panic!("no application id:\n{out}"));
    let ended = wait_for(Duration::from_secs(120), Duration::from_millis(500), || {
        let out = clients
            .yarn()
            .conf_dir(conf_dir)
            .run(["application", "-status", &app])
            .ok()?;
        let report = parse_report(&out.stdout);
        let status = report_value(&report, "Log Aggregation Status")?.to_owned();
        ["SUCCEEDED", "FAILED", "TIME_OUT"]
            .contains(&status.as_str())
            .then_some((status, out))
    });
    let (status, report) =
        ended.unwrap_or_else(|| panic!("log aggregation of {app} did not end:\n{}", logs()));
    assert_eq!(status, "SUCCEEDED", "{report}\n{}", logs());
    let seq: u32 = app
        .rsplit('_')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("an application sequence number");
    let file = root
        .join(user())
        .join("bucket-logs-tfile")
        .join(format!("{:04}", seq % 10_000))
        .join(&app)
        .join(nm.address().replace(':', "_"));
    let size = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
    assert!(
        size > 0,
        "no aggregated log file {}:\n{}",
        file.display(),
        logs()
    );
}

fn aggregation_properties(root: &Path) -> spindle_integration::HadoopConf {
    let mut conf = spindle_integration::HadoopConf::new();
    conf.set("yarn.log-aggregation-enable", true).set(
        "yarn.nodemanager.remote-app-log-dir",
        format!("file://{}", root.display()),
    );
    conf
}

#[test]
fn a_hadoop_nodemanager_aggregates_logs_for_spindle_rm() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = YarnServerJars::for_tests() else {
        return;
    };
    let remote = tempfile::tempdir().expect("a temp dir");
    let root = remote.path().join("app-logs");
    let mut builder = Cluster::builder().heartbeat_interval_ms(500);
    for (key, value) in aggregation_properties(&root).iter() {
        builder = builder.rm_property(key, value);
    }
    let cluster = builder.start(&clients).expect("Spindle's RM starts");
    let nm = ExtraNodeManager::start(
        &NmKind::Hadoop(jars),
        EXTRA_NM_HOST,
        cluster.yarn_site(),
        cluster.core_site(),
        &NodeManagerSpec::new(8192, 8),
    )
    .unwrap_or_else(|e| {
        panic!(
            "Hadoop's NM did not register: {e:#}\n{}",
            cluster.log_report()
        )
    });
    logs_aggregated(&clients, cluster.conf_dir(), &nm, &root, || {
        format!("{}\n{}", cluster.log_report(), nm.log_tail(200))
    });
}

#[test]
fn spindle_nodemanager_aggregates_logs_for_hadoop_rm() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = YarnServerJars::for_tests() else {
        return;
    };
    let binary = spindle_binary().expect("the spindle binary");
    let remote = tempfile::tempdir().expect("a temp dir");
    let root = remote.path().join("app-logs");
    let rm = HadoopRm::start(&jars, &aggregation_properties(&root))
        .unwrap_or_else(|e| panic!("Hadoop's RM did not start: {e:#}"));
    let nm = ExtraNodeManager::start(
        &NmKind::Spindle(binary),
        EXTRA_NM_HOST,
        rm.yarn_site(),
        rm.core_site(),
        &NodeManagerSpec::new(8192, 8),
    )
    .unwrap_or_else(|e| panic!("Spindle's NM did not start: {e:#}\n{}", rm.log_tail(200)));
    logs_aggregated(&clients, rm.conf_dir(), &nm, &root, || {
        format!("{}\n{}", rm.log_tail(200), nm.log_tail(200))
    });
}

/// A NodeManager whose every dir is over the disk utilisation limit (a limit of
/// 0.001 %): it is unhealthy from its first health check.
fn unhealthy_nm() -> NodeManagerSpec {
    let mut spec = NodeManagerSpec::new(8192, 8);
    spec.properties.set(
        "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage",
        "0.001",
    );
    spec
}

/// Waits until the node list of the RM of `conf_dir` shows `nm` UNHEALTHY.
fn assert_unhealthy(
    clients: &HadoopClients,
    conf_dir: &Path,
    nm: &ExtraNodeManager,
    logs: impl Fn() -> String,
) {
    let row = wait_for(Duration::from_secs(60), Duration::from_millis(500), || {
        node_row(clients, conf_dir, nm).filter(|n| n.state == "UNHEALTHY")
    });
    assert!(
        row.is_some(),
        "not UNHEALTHY: {:?}\n{}",
        node_row(clients, conf_dir, nm),
        logs()
    );
}

#[test]
fn a_hadoop_nodemanager_with_full_disks_is_unhealthy_at_spindle_rm() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = YarnServerJars::for_tests() else {
        return;
    };
    let cluster = Cluster::builder()
        .heartbeat_interval_ms(500)
        .start(&clients)
        .expect("Spindle's RM starts");
    let nm = ExtraNodeManager::start(
        &NmKind::Hadoop(jars),
        EXTRA_NM_HOST,
        cluster.yarn_site(),
        cluster.core_site(),
        &unhealthy_nm(),
    )
    .unwrap_or_else(|e| {
        panic!(
            "Hadoop's NM did not register: {e:#}\n{}",
            cluster.log_report()
        )
    });
    assert_unhealthy(&clients, cluster.conf_dir(), &nm, || {
        format!("{}\n{}", cluster.log_report(), nm.log_tail(200))
    });
}

#[test]
fn spindle_nodemanager_with_full_disks_is_unhealthy_at_hadoop_rm() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = YarnServerJars::for_tests() else {
        return;
    };
    let binary = spindle_binary().expect("the spindle binary");
    let rm = HadoopRm::start(&jars, &Default::default())
        .unwrap_or_else(|e| panic!("Hadoop's RM did not start: {e:#}"));
    let nm = ExtraNodeManager::start(
        &NmKind::Spindle(binary),
        EXTRA_NM_HOST,
        rm.yarn_site(),
        rm.core_site(),
        &unhealthy_nm(),
    )
    .unwrap_or_else(|e| panic!("Spindle's NM did not start: {e:#}\n{}", rm.log_tail(200)));
    assert_unhealthy(&clients, rm.conf_dir(), &nm, || {
        format!("{}\n{}", rm.log_tail(200), nm.log_tail(200))
    });
}

/// On the RM of `conf_dir` with `nm` its only node: a node gracefully decommissioned
/// (`rmadmin -refreshNodes -g 300 -server`) while it runs a container is
/// DECOMMISSIONING and keeps the container; once the container's application is
/// killed the node is DECOMMISSIONED and its NM shuts down.
fn graceful_decommission(
    clients: &HadoopClients,
    conf_dir: &Path,
    nm: &mut ExtraNodeManager,
    exclude: impl Fn(&str),
    logs: impl Fn(&ExtraNodeManager) -> String,
) {
    let app = submit_app_with(
        clients,
        conf_dir,
        &AppSubmission::new("mixed-draining", "sleep 600"),
    )
    .unwrap_or_else(|e| panic!("submitting: {e:#}\n{}", logs(nm)));
    let running = wait_for(Duration::from_secs(90), Duration::from_millis(500), || {
        node_row(clients, conf_dir, nm).filter(|n| n.running_containers == 1)
    });
    assert!(
        running.is_some(),
        "the AM container never ran:\n{}",
        logs(nm)
    );
    exclude(&nm.host().to_string());
    let out = clients
        .yarn()
        .conf_dir(conf_dir)
        .run(["rmadmin", "-refreshNodes", "-g", "300", "-server"])
        .expect("yarn rmadmin runs");
    assert!(out.success(), "{out}\n{}", logs(nm));
    let draining = wait_for(Duration::from_secs(60), Duration::from_millis(500), || {
        node_row(clients, conf_dir, nm)
            .filter(|n| n.state == "DECOMMISSIONING" && n.running_containers == 1)
    });
    assert!(
        draining.is_some(),
        "not DECOMMISSIONING with its container: {:?}\n{}",
        node_row(clients, conf_dir, nm),
        logs(nm)
    );
    clients
        .yarn()
        .conf_dir(conf_dir)
        .run(["application", "-kill", &app])
        .expect("yarn application -kill runs")
        .assert_success();
    let decommissioned = wait_for(Duration::from_secs(90), Duration::from_millis(500), || {
        node_row(clients, conf_dir, nm).filter(|n| n.state == "DECOMMISSIONED")
    });
    assert!(
        decommissioned.is_some(),
        "not DECOMMISSIONED once idle: {:?}\n{}",
        node_row(clients, conf_dir, nm),
        logs(nm)
    );
    let exited = wait_for(Duration::from_secs(60), Duration::from_millis(200), || {
        nm.process().try_exit_status().ok().flatten()
    });
    assert!(exited.is_some(), "the NM did not shut down:\n{}", logs(nm));
}

#[test]
fn a_hadoop_nodemanager_drains_for_a_graceful_decommission_by_spindle_rm() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = YarnServerJars::for_tests() else {
        return;
    };
    let cluster = Cluster::builder()
        .heartbeat_interval_ms(500)
        .start(&clients)
        .expect("Spindle's RM starts");
    let mut nm = ExtraNodeManager::start(
        &NmKind::Hadoop(jars),
        EXTRA_NM_HOST,
        cluster.yarn_site(),
        cluster.core_site(),
        &NodeManagerSpec::new(8192, 8),
    )
    .unwrap_or_else(|e| {
        panic!(
            "Hadoop's NM did not register: {e:#}\n{}",
            cluster.log_report()
        )
    });
    graceful_decommission(
        &clients,
        cluster.conf_dir(),
        &mut nm,
        |host| cluster.set_exclude_hosts(&[host]).expect("exclude file"),
        |nm| format!("{}\n{}", cluster.log_report(), nm.log_tail(200)),
    );
}

#[test]
fn spindle_nodemanager_drains_for_a_graceful_decommission_by_hadoop_rm() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = YarnServerJars::for_tests() else {
        return;
    };
    let binary = spindle_binary().expect("the spindle binary");
    let rm = HadoopRm::start(&jars, &Default::default())
        .unwrap_or_else(|e| panic!("Hadoop's RM did not start: {e:#}"));
    let mut nm = ExtraNodeManager::start(
        &NmKind::Spindle(binary),
        EXTRA_NM_HOST,
        rm.yarn_site(),
        rm.core_site(),
        &NodeManagerSpec::new(8192, 8),
    )
    .unwrap_or_else(|e| panic!("Spindle's NM did not start: {e:#}\n{}", rm.log_tail(200)));
    graceful_decommission(
        &clients,
        rm.conf_dir(),
        &mut nm,
        |host| rm.set_exclude_hosts(&[host]).expect("exclude file"),
        |nm| format!("{}\n{}", rm.log_tail(200), nm.log_tail(200)),
    );
}

/// `Memory-Capacity` of `nm` in `yarn node -status` of the RM of `conf_dir`.
fn memory_capacity(
    clients: &HadoopClients,
    conf_dir: &Path,
    nm: &ExtraNodeManager,
) -> Option<String> {
    let out = clients
        .yarn()
        .conf_dir(conf_dir)
        .run(["node", "-status", &nm.address()])
        .ok()?;
    report_value(&parse_report(&out.stdout), "Memory-Capacity").map(str::to_owned)
}

/// What Hadoop's NM logs when it takes 2048 MB and 2 vcores from the RM
/// (`NodeStatusUpdaterImpl.updateNMResource` tells `ContainersMonitorImpl`).
const HADOOP_NM_TOOK_2048_MB: &str =
    "Setting the resources allocated to containers to <memory:2048, vCores:2>";

/// What Spindle's NM logs when it takes new resources from the RM.
const SPINDLE_NM_TOOK_RESOURCES: &str = "the ResourceManager updated this node's resource";

#[test]
fn a_hadoop_nodemanager_takes_a_resource_update_from_spindle_rm_and_keeps_it_after_a_resync() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = YarnServerJars::for_tests() else {
        return;
    };
    let mut cluster = Cluster::builder()
        .heartbeat_interval_ms(500)
        .start(&clients)
        .expect("Spindle's RM starts");
    let nm = ExtraNodeManager::start(
        &NmKind::Hadoop(jars),
        EXTRA_NM_HOST,
        cluster.yarn_site(),
        cluster.core_site(),
        &patient_nm(),
    )
    .unwrap_or_else(|e| {
        panic!(
            "Hadoop's NM did not register: {e:#}\n{}",
            cluster.log_report()
        )
    });
    let (running, out) = wait_node_running(&clients, cluster.conf_dir(), &nm);
    assert!(running, "{out}");
    cluster
        .yarn(["rmadmin", "-updateNodeResource", &nm.address(), "2048", "2"])
        .assert_success();
    let updated = wait_for(Duration::from_secs(30), Duration::from_millis(500), || {
        memory_capacity(&clients, cluster.conf_dir(), &nm).filter(|m| m == "2048MB")
    });
    assert!(
        updated.is_some(),
        "{:?}",
        memory_capacity(&clients, cluster.conf_dir(), &nm)
    );
    // The node hears of its new resources in a heartbeat (Hadoop's `resource` field)
    // and registers with them after a resync, as under Hadoop's RM: once it has taken
    // them (Hadoop's NM logs the resources it now gives containers), restart the RM
    // (no state store), which makes it register again.
    let taken = wait_until(Duration::from_secs(30), Duration::from_millis(200), || {
        nm.printed(HADOOP_NM_TOOK_2048_MB)
    });
    assert!(
        taken,
        "the node never took its new resources:\n{}\n{}",
        cluster.log_report(),
        nm.log_tail(100)
    );
    cluster.kill_rm().expect("kill -9 of the RM");
    cluster
        .restart_rm(Duration::from_secs(60))
        .expect("the RM starts again");
    let (running, out) = wait_node_running(&clients, cluster.conf_dir(), &nm);
    assert!(running, "{out}\n{}", cluster.log_report());
    assert_eq!(
        memory_capacity(&clients, cluster.conf_dir(), &nm).as_deref(),
        Some("2048MB"),
        "the node registered again with its configured resources:\n{}\n{}",
        cluster.log_report(),
        nm.log_tail(100)
    );
}

#[test]
fn spindle_nodemanager_takes_a_resource_update_from_hadoop_rm_and_keeps_it_after_a_resync() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = YarnServerJars::for_tests() else {
        return;
    };
    let binary = spindle_binary().expect("the spindle binary");
    let mut rm = HadoopRm::start(&jars, &Default::default())
        .unwrap_or_else(|e| panic!("Hadoop's RM did not start: {e:#}"));
    let nm = ExtraNodeManager::start(
        &NmKind::Spindle(binary),
        EXTRA_NM_HOST,
        rm.yarn_site(),
        rm.core_site(),
        &patient_nm(),
    )
    .unwrap_or_else(|e| panic!("Spindle's NM did not start: {e:#}\n{}", rm.log_tail(200)));
    let (running, out) = wait_node_running(&clients, rm.conf_dir(), &nm);
    assert!(running, "{out}");
    let out = clients
        .yarn()
        .conf_dir(rm.conf_dir())
        .run(["rmadmin", "-updateNodeResource", &nm.address(), "2048", "2"])
        .expect("yarn rmadmin runs");
    assert!(out.success(), "{out}");
    let updated = wait_for(Duration::from_secs(30), Duration::from_millis(500), || {
        memory_capacity(&clients, rm.conf_dir(), &nm).filter(|m| m == "2048MB")
    });
    assert!(
        updated.is_some(),
        "{:?}",
        memory_capacity(&clients, rm.conf_dir(), &nm)
    );
    // Once the node has taken its new resources from a heartbeat, a restarted RM (no
    // state store) makes it register again, with them.
    let taken = wait_until(Duration::from_secs(30), Duration::from_millis(200), || {
        nm.printed(SPINDLE_NM_TOOK_RESOURCES)
    });
    assert!(
        taken,
        "the node never took its new resources:\n{}\n{}",
        rm.log_tail(100),
        nm.log_tail(100)
    );
    if let Err(e) = rm.restart() {
        panic!("Hadoop's RM did not restart: {e:#}\n{}", nm.log_tail(200));
    }
    let (running, out) = wait_node_running(&clients, rm.conf_dir(), &nm);
    assert!(running, "{out}\n{}", nm.log_tail(200));
    assert_eq!(
        memory_capacity(&clients, rm.conf_dir(), &nm).as_deref(),
        Some("2048MB"),
        "the node registered again with its configured resources:\n{}\n{}",
        rm.log_tail(100),
        nm.log_tail(100)
    );
}
