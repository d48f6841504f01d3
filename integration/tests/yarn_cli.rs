//! The real Hadoop 3.3.4 `yarn` CLIs against real `spindle` daemons on loopback.
//!
//! Every test checks what the CLI prints, parsed with the format strings of the 3.3.4
//! client. Without the client jars (integration/setup-clients.sh) the tests print
//! `SKIP:` and pass, except under CI, where they fail.

mod web_http;

use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use spindle_integration::cli::{parse_report, report_value, AppList, NodeList};
use spindle_integration::cluster::free_port;
use spindle_integration::conf::fast_failing_client_settings;
use spindle_integration::{AppSubmission, CliOutput, Cluster, HadoopClients, NodeManagerSpec};

/// Time for NodeManagers to register, or for a node state change to show.
const NODE_TIMEOUT: Duration = Duration::from_secs(60);
/// Pause between two polls (each poll starts a JVM, which takes about a second).
const POLL: Duration = Duration::from_millis(300);
/// Every state `yarn application -list -appStates ALL` asks for, in the CLI's order.
const ALL_APP_STATES: &str =
    "[NEW, NEW_SAVING, SUBMITTED, ACCEPTED, RUNNING, FINISHED, FAILED, KILLED]";
/// Application states at or after acceptance: what `YarnClient.submitApplication`
/// waits for before it returns.
const ACCEPTED_OR_LATER: [&str; 5] = ["ACCEPTED", "RUNNING", "FINISHED", "FAILED", "KILLED"];

fn start(clients: &HadoopClients, builder: spindle_integration::ClusterBuilder) -> Cluster {
    match builder.start(clients) {
        Ok(cluster) => cluster,
        Err(e) => panic!("the spindle cluster did not start: {e:#}"),
    }
}

/// `yarn node <args>`, which must succeed, parsed.
#[track_caller]
fn node_list(cluster: &Cluster, args: &[&str]) -> (NodeList, CliOutput) {
    let mut full = vec!["node", "-list"];
    full.extend_from_slice(args);
    let out = cluster.yarn(&full);
    out.assert_success();
    match NodeList::parse(&out.stdout) {
        Ok(list) => (list, out),
        Err(e) => panic!("cannot parse the node list: {e:#}\n{out}"),
    }
}

/// The state the CLI reports for NodeManager `index`, if it is listed.
fn state_of(cluster: &Cluster, list: &NodeList, index: usize) -> Option<String> {
    let nm = cluster.nodemanager(index);
    list.find(|id| nm.is_node_id(id))
        .map(|row| row.state.clone())
}

/// Polls `yarn node -list -all -showDetails` until every `(index, state)` pair holds;
/// panics with the last output when `timeout` passes first.
#[track_caller]
fn wait_for_node_states(
    cluster: &Cluster,
    expected: &[(usize, &str)],
    timeout: Duration,
) -> NodeList {
    let deadline = Instant::now() + timeout;
    loop {
        let (list, out) = node_list(cluster, &["-all", "-showDetails"]);
        let reached = expected
            .iter()
            .all(|(i, state)| state_of(cluster, &list, *i).as_deref() == Some(*state));
        if reached {
            return list;
        }
        if Instant::now() >= deadline {
            let wanted: Vec<String> = expected
                .iter()
                .map(|(i, s)| format!("{} {s}", cluster.nodemanager(*i).address()))
                .collect();
            panic!(
                "nodes did not reach [{}] within {timeout:?}; last listing:\n{out}",
                wanted.join(", ")
            );
        }
        std::thread::sleep(POLL);
    }
}

/// `yarn application -list <args>`, which must succeed, parsed.
#[track_caller]
fn app_list(cluster: &Cluster, args: &[&str]) -> (AppList, CliOutput) {
    let mut full = vec!["application", "-list"];
    full.extend_from_slice(args);
    let out = cluster.yarn(&full);
    out.assert_success();
    match AppList::parse(&out.stdout) {
        Ok(list) => (list, out),
        Err(e) => panic!("cannot parse the application list: {e:#}\n{out}"),
    }
}

#[track_caller]
fn submit(cluster: &Cluster, app: &AppSubmission) -> String {
    match cluster.submit_app(app) {
        Ok(id) => id,
        Err(e) => panic!("submission failed: {e:#}"),
    }
}

#[test]
fn launcher_runs_the_hadoop_3_3_4_client() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let out = clients
        .yarn()
        .run(["version"])
        .expect("the launcher starts");
    out.assert_success();
    assert_eq!(
        out.stdout.lines().next(),
        Some("Hadoop 3.3.4"),
        "unexpected version banner:\n{out}"
    );
}

#[test]
fn cli_without_a_resourcemanager_fails_with_connection_refused() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let port = free_port(IpAddr::V4(Ipv4Addr::LOCALHOST)).expect("a free port");
    let mut conf = fast_failing_client_settings();
    conf.set("yarn.resourcemanager.address", format!("127.0.0.1:{port}"));
    conf.write(&dir.path().join("yarn-site.xml"))
        .expect("yarn-site.xml written");
    let out = clients
        .yarn()
        .conf_dir(dir.path())
        .run(["node", "-list"])
        .expect("the launcher starts");
    // Exiting by itself (not killed at the launcher's generous timeout) shows the
    // fast-fail settings were applied: without them the client retries for 15 minutes.
    out.assert_exit_failure();
    assert!(
        out.stderr.contains("java.net.ConnectException")
            && out.stderr.contains("Connection refused"),
        "expected a connection-refused error:\n{out}"
    );
    assert!(
        out.stderr
            .contains(&format!(":{port} failed on connection exception")),
        "the error should name port {port}:\n{out}"
    );
}

#[test]
fn node_list_shows_every_nodemanager_running_with_its_resources() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let cluster = start(
        &clients,
        Cluster::builder()
            .nodemanager(NodeManagerSpec::new(4096, 4))
            .nodemanager(NodeManagerSpec::new(2048, 2)),
    );
    let list = wait_for_node_states(&cluster, &[(0, "RUNNING"), (1, "RUNNING")], NODE_TIMEOUT);
    assert_eq!(list.total, 2, "{list:#?}");
    for nm in cluster.nodemanagers() {
        let row = list
            .find(|id| nm.is_node_id(id))
            .unwrap_or_else(|| panic!("{} is not listed: {list:#?}", nm.address()));
        assert_eq!(row.running_containers, 0, "{row:#?}");
        assert_eq!(
            row.detail("Configured Resources"),
            Some(format!("<memory:{}, vCores:{}>", nm.memory_mb(), nm.vcores()).as_str()),
            "capability of {}: {row:#?}",
            nm.address()
        );
        assert!(
            row.http_address.ends_with(&format!(":{}", nm.web_port())),
            "the node's HTTP address should use its web port {}: {row:#?}",
            nm.web_port()
        );
    }

    // Without -all the CLI asks for RUNNING nodes only.
    let (running, out) = node_list(&cluster, &[]);
    assert_eq!(running.total, 2, "{out}");

    // The per-node report.
    let nm = cluster.nodemanager(0);
    let node_id = list
        .find(|id| nm.is_node_id(id))
        .map(|row| row.node_id.clone())
        .expect("listed above");
    let out = cluster.yarn(["node", "-status", node_id.as_str()]);
    out.assert_success()
        .assert_stdout_contains("Node Report : ");
    let report = parse_report(&out.stdout);
    assert_eq!(
        report_value(&report, "Node-Id"),
        Some(node_id.as_str()),
        "{out}"
    );
    assert_eq!(
        report_value(&report, "Node-State"),
        Some("RUNNING"),
        "{out}"
    );
    assert_eq!(
        report_value(&report, "Memory-Capacity"),
        Some("4096MB"),
        "{out}"
    );
    assert_eq!(
        report_value(&report, "CPU-Capacity"),
        Some("4 vcores"),
        "{out}"
    );
    assert_eq!(report_value(&report, "Containers"), Some("0"), "{out}");
}

#[test]
fn killed_nodemanager_becomes_lost_after_the_expiry_interval() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let mut cluster = start(
        &clients,
        Cluster::builder()
            .nodemanagers(2)
            .liveness_expiry_ms(3000)
            .heartbeat_interval_ms(300),
    );
    wait_for_node_states(&cluster, &[(0, "RUNNING"), (1, "RUNNING")], NODE_TIMEOUT);

    // SIGKILL: the NodeManager cannot unregister, only the missing heartbeats tell.
    cluster.kill_nodemanager(1).expect("NodeManager 1 killed");
    wait_for_node_states(&cluster, &[(0, "RUNNING"), (1, "LOST")], NODE_TIMEOUT);

    let (running, out) = node_list(&cluster, &[]);
    assert_eq!(
        running.total, 1,
        "only NodeManager 0 is still running:\n{out}"
    );
    assert!(state_of(&cluster, &running, 0).is_some(), "{out}");

    let (lost, out) = node_list(&cluster, &["-states", "LOST"]);
    assert_eq!(lost.total, 1, "{out}");
    assert_eq!(
        state_of(&cluster, &lost, 1).as_deref(),
        Some("LOST"),
        "{out}"
    );
}

#[test]
fn excluded_nodemanager_is_decommissioned_after_refresh_nodes() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let mut cluster = start(&clients, Cluster::builder().nodemanagers(2));
    wait_for_node_states(&cluster, &[(0, "RUNNING"), (1, "RUNNING")], NODE_TIMEOUT);

    // Editing the exclude file alone changes nothing ...
    let excluded = cluster.nodemanager(1).host().to_string();
    cluster
        .set_exclude_hosts(&[excluded.as_str()])
        .expect("exclude file written");
    let (list, out) = node_list(&cluster, &["-all"]);
    assert_eq!(
        state_of(&cluster, &list, 1).as_deref(),
        Some("RUNNING"),
        "{out}"
    );

    // ... until the admin asks the RM to re-read it.
    cluster.yarn(["rmadmin", "-refreshNodes"]).assert_success();
    wait_for_node_states(
        &cluster,
        &[(0, "RUNNING"), (1, "DECOMMISSIONED")],
        NODE_TIMEOUT,
    );

    // The RM tells the decommissioned NodeManager to shut down on its next heartbeat.
    let stopped = spindle_integration::wait_until(NODE_TIMEOUT, POLL, || {
        matches!(cluster.nodemanager_running(1), Ok(false))
    });
    assert!(
        stopped,
        "the decommissioned NodeManager should have been told to shut down"
    );
    assert!(
        cluster
            .nodemanager_running(0)
            .expect("state of NodeManager 0"),
        "NodeManager 0 was not excluded and must keep running"
    );
}

#[test]
fn empty_cluster_lists_no_applications() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let cluster = start(&clients, Cluster::builder().nodemanagers(1));
    let (all, out) = app_list(&cluster, &["-appStates", "ALL"]);
    assert_eq!(
        all.header,
        format!(
            "Total number of applications (application-types: [], states: {ALL_APP_STATES} and tags: []):0"
        ),
        "{out}"
    );
    assert!(all.apps.is_empty(), "{out}");

    let (default_states, out) = app_list(&cluster, &[]);
    assert_eq!(default_states.total, 0, "{out}");
}

#[test]
fn submitted_application_is_listed_and_reported() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let cluster = start(&clients, Cluster::builder().nodemanagers(1));
    wait_for_node_states(&cluster, &[(0, "RUNNING")], NODE_TIMEOUT);

    let id = submit(
        &cluster,
        &AppSubmission::new("spindle-it-listed", "sleep 1").user("spindle-it"),
    );

    let (list, out) = app_list(&cluster, &["-appStates", "ALL"]);
    assert_eq!(list.total, 1, "{out}");
    let app = list
        .find(&id)
        .unwrap_or_else(|| panic!("{id} is not listed:\n{out}"));
    assert_eq!(app.name, "spindle-it-listed", "{out}");
    assert_eq!(app.app_type, "YARN", "{out}");
    assert_eq!(app.user, "spindle-it", "{out}");
    assert!(
        app.queue == "default" || app.queue == "root.default",
        "queue: {out}"
    );
    assert!(
        ACCEPTED_OR_LATER.contains(&app.state.as_str()),
        "state after submitApplication returned: {out}"
    );

    let out = cluster.yarn(["application", "-status", id.as_str()]);
    out.assert_success()
        .assert_stdout_contains("Application Report : ");
    let report = parse_report(&out.stdout);
    assert_eq!(
        report_value(&report, "Application-Id"),
        Some(id.as_str()),
        "{out}"
    );
    assert_eq!(
        report_value(&report, "Application-Name"),
        Some("spindle-it-listed"),
        "{out}"
    );
    assert_eq!(
        report_value(&report, "Application-Type"),
        Some("YARN"),
        "{out}"
    );
    assert_eq!(report_value(&report, "User"), Some("spindle-it"), "{out}");
    let state = report_value(&report, "State").unwrap_or_default();
    assert!(ACCEPTED_OR_LATER.contains(&state), "{out}");
    assert!(report_value(&report, "Final-State").is_some(), "{out}");
}

#[test]
fn unknown_application_does_not_exist_in_rm() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let cluster = start(&clients, Cluster::builder());
    // The CLI prints this only when the RM's error names Hadoop's
    // ApplicationNotFoundException class; any other error is a stack trace instead.
    let expected = "Application with id 'application_1_0001' doesn't exist in RM";

    let out = cluster.yarn(["application", "-status", "application_1_0001"]);
    out.assert_exit_failure().assert_stdout_contains(expected);

    let out = cluster.yarn(["application", "-kill", "application_1_0001"]);
    out.assert_exit_failure()
        .assert_stdout_contains(&format!("{expected}."));
}

#[test]
fn kill_moves_a_running_application_to_killed() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let cluster = start(&clients, Cluster::builder().nodemanagers(1));
    wait_for_node_states(&cluster, &[(0, "RUNNING")], NODE_TIMEOUT);

    // An AM that outlives the test unless the kill reaches it.
    let id = submit(
        &cluster,
        &AppSubmission::new("spindle-it-kill", "sleep 300"),
    );

    let out = cluster.yarn(["application", "-kill", id.as_str()]);
    out.assert_success()
        .assert_stdout_contains(&format!("Killing application {id}"));

    let out = cluster.yarn(["application", "-status", id.as_str()]);
    out.assert_success();
    let report = parse_report(&out.stdout);
    assert_eq!(report_value(&report, "State"), Some("KILLED"), "{out}");
    assert_eq!(
        report_value(&report, "Final-State"),
        Some("KILLED"),
        "{out}"
    );

    let out = cluster.yarn(["application", "-kill", id.as_str()]);
    out.assert_success()
        .assert_stdout_contains(&format!("Application {id} has already finished"));

    let (killed, out) = app_list(&cluster, &["-appStates", "KILLED"]);
    assert_eq!(killed.total, 1, "{out}");
    assert_eq!(
        killed.find(&id).map(|a| a.state.as_str()),
        Some("KILLED"),
        "{out}"
    );
    let (active, out) = app_list(&cluster, &[]);
    assert!(
        active.find(&id).is_none(),
        "a killed app is not active:\n{out}"
    );
}

/// A POST of `path` to the RM's web server; the status code and the body.
fn post(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    let reply = web_http::request(addr, "POST", path, &[("Content-Length", "0")]);
    (reply.status, reply.text())
}

/// Waits until the node runs `n` containers.
#[track_caller]
fn wait_for_running_containers(cluster: &Cluster, n: u32) {
    let deadline = Instant::now() + NODE_TIMEOUT;
    loop {
        let (list, out) = node_list(cluster, &[]);
        if list.nodes.iter().any(|row| row.running_containers == n) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the node never ran {n} containers:\n{out}\n{}",
            cluster.log_report()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// `yarn container -signal` and its REST twin (`POST
/// /ws/v1/cluster/containers/{id}/signal/{command}`): the RM queues the signal for the
/// container's node, which delivers it (GRACEFUL_SHUTDOWN is a SIGTERM: the `sleep` AM
/// ends with 143 and its only attempt fails); a container the RM does not hold gets
/// Hadoop's refusal, an unknown command Hadoop's 400.
#[test]
fn container_signal_goes_through_the_rm_to_the_container() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let cluster = start(&clients, Cluster::builder().nodemanagers(1));
    wait_for_node_states(&cluster, &[(0, "RUNNING")], NODE_TIMEOUT);
    let by_cli = submit(
        &cluster,
        &AppSubmission::new("spindle-it-signal", "sleep 600"),
    );
    let by_rest = submit(
        &cluster,
        &AppSubmission::new("spindle-it-signal-rest", "sleep 600"),
    );
    // The AM containers must run on the node before a signal can reach them.
    wait_for_running_containers(&cluster, 2);
    let am = |app: &str| {
        format!(
            "{}_01_000001",
            app.replacen("application_", "container_", 1)
        )
    };

    let absent = format!(
        "{}_01_000099",
        by_cli.replacen("application_", "container_", 1)
    );
    let out = cluster.yarn(["container", "-signal", absent.as_str(), "GRACEFUL_SHUTDOWN"]);
    out.assert_exit_failure();
    assert!(
        out.stderr
            .contains(&format!("Trying to signal an absent container {absent}")),
        "{out}"
    );
    let web = cluster.rm().webapp;
    let (status, body) = post(
        web,
        &format!("/ws/v1/cluster/containers/{absent}/signal/GRACEFUL_SHUTDOWN"),
    );
    assert_eq!(status, 500, "{body}");
    assert!(
        body.contains("Trying to signal an absent container"),
        "{body}"
    );
    let (status, body) = post(
        web,
        &format!("/ws/v1/cluster/containers/{}/signal/HANG_UP", am(&by_rest)),
    );
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("Invalid command: HANG_UP"), "{body}");

    let container = am(&by_cli);
    let out = cluster.yarn([
        "container",
        "-signal",
        container.as_str(),
        "GRACEFUL_SHUTDOWN",
    ]);
    out.assert_success()
        .assert_stdout_contains(&format!("Signalling container {container}"));
    let (status, body) = post(
        web,
        &format!(
            "/ws/v1/cluster/containers/{}/signal/graceful_shutdown",
            am(&by_rest)
        ),
    );
    assert_eq!(status, 200, "{body}");
    for app in [&by_cli, &by_rest] {
        let report = spindle_integration::cluster::wait_app_state(
            &clients,
            cluster.conf_dir(),
            app,
            &["FAILED"],
            Duration::from_secs(90),
        )
        .unwrap_or_else(|| {
            panic!(
                "{app} did not fail after the signal:\n{}",
                cluster.log_report()
            )
        });
        let diagnostics = report_value(&report, "Diagnostics").unwrap_or_default();
        assert!(diagnostics.contains("exitCode: 143"), "{app}: {report:?}");
    }
}

/// `yarn applicationattempt -fail`: the attempt fails ("Attempt failed by user."), and
/// with attempts left the application starts another on the node; an attempt the RM
/// never had is Hadoop's ApplicationAttemptNotFoundException.
#[test]
fn failing_an_attempt_starts_the_next_one() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    // The harness's RM allows one attempt (yarn.resourcemanager.am.max-attempts=1).
    let cluster = start(
        &clients,
        Cluster::builder()
            .nodemanagers(1)
            .rm_property("yarn.resourcemanager.am.max-attempts", 2),
    );
    wait_for_node_states(&cluster, &[(0, "RUNNING")], NODE_TIMEOUT);
    let id = submit(
        &cluster,
        &AppSubmission::new("spindle-it-fail-attempt", "sleep 600").max_attempts(2),
    );
    wait_for_running_containers(&cluster, 1);
    let attempt = |n: u32| format!("{}_{n:06}", id.replacen("application_", "appattempt_", 1));

    let out = cluster.yarn(["applicationattempt", "-fail", attempt(7).as_str()]);
    out.assert_exit_failure();
    assert!(
        out.stderr.contains("ApplicationAttemptNotFoundException")
            && out.stderr.contains(&format!(
                "ApplicationAttempt with id '{}' doesn't exist in RM.",
                attempt(7)
            )),
        "{out}"
    );

    let out = cluster.yarn(["applicationattempt", "-fail", attempt(1).as_str()]);
    out.assert_success().assert_stdout_contains(&format!(
        "Failing attempt {} of application {id}",
        attempt(1)
    ));
    let deadline = Instant::now() + NODE_TIMEOUT;
    loop {
        let out = cluster.yarn(["applicationattempt", "-list", id.as_str()]);
        out.assert_success();
        let first_failed = out
            .stdout
            .lines()
            .any(|l| l.contains(&attempt(1)) && l.contains("FAILED"));
        if first_failed && out.stdout.contains(&attempt(2)) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no second attempt after the first failed:\n{out}\n{}",
            cluster.log_report()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    let out = cluster.yarn(["applicationattempt", "-status", attempt(1).as_str()]);
    out.assert_success()
        .assert_stdout_contains("Attempt failed by user.");
}

/// `yarn application -updatePriority`: the new priority shows in the report, and
/// one above `yarn.cluster.max-application-priority` is lowered to it.
#[test]
fn update_priority_changes_the_reported_priority_up_to_the_cluster_maximum() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let cluster = start(
        &clients,
        Cluster::builder()
            .nodemanagers(1)
            .rm_property("yarn.cluster.max-application-priority", 10),
    );
    wait_for_node_states(&cluster, &[(0, "RUNNING")], NODE_TIMEOUT);
    let id = submit(
        &cluster,
        &AppSubmission::new("spindle-it-priority", "sleep 300"),
    );
    let priority = |cluster: &Cluster| {
        let out = cluster.yarn(["application", "-status", id.as_str()]);
        out.assert_success();
        let report = parse_report(&out.stdout);
        (
            report_value(&report, "Application Priority").map(str::to_string),
            out,
        )
    };
    let (before, out) = priority(&cluster);
    assert_eq!(before.as_deref(), Some("0"), "{out}");

    for (asked, effective) in [("5", "5"), ("50", "10")] {
        let out = cluster.yarn([
            "application",
            "-appId",
            id.as_str(),
            "-updatePriority",
            asked,
        ]);
        out.assert_success();
        let (now, out) = priority(&cluster);
        assert_eq!(now.as_deref(), Some(effective), "asked for {asked}:\n{out}");
    }
    cluster
        .yarn(["application", "-kill", id.as_str()])
        .assert_success();
}

#[test]
fn queue_status_reports_the_default_queue() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let cluster = start(&clients, Cluster::builder().nodemanagers(1));
    let out = cluster.yarn(["queue", "-status", "default"]);
    out.assert_success()
        .assert_stdout_contains("Queue Information : ");
    let report = parse_report(&out.stdout);
    assert_eq!(
        report_value(&report, "Queue Name"),
        Some("default"),
        "{out}"
    );
    assert_eq!(report_value(&report, "State"), Some("RUNNING"), "{out}");
    for key in ["Capacity", "Current Capacity", "Maximum Capacity"] {
        let value = report_value(&report, key).unwrap_or_default();
        assert!(value.ends_with('%'), "{key} should be a percentage:\n{out}");
    }
}

#[test]
fn cluster_lists_node_labels() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let cluster = start(&clients, Cluster::builder().nodemanagers(1));
    let out = cluster.yarn(["cluster", "-lnl"]);
    out.assert_success();
    assert!(
        out.stdout.lines().any(|l| l.starts_with("Node Labels:")),
        "expected a `Node Labels:` line:\n{out}"
    );
}

#[test]
fn rmadmin_refreshes_succeed() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let cluster = start(&clients, Cluster::builder().nodemanagers(1));
    for command in ["-refreshQueues", "-refreshNodes"] {
        let out = cluster.yarn(["rmadmin", command]);
        out.assert_success();
        assert!(
            !out.stderr.contains("Exception"),
            "rmadmin {command} reported an exception:\n{out}"
        );
    }
}

#[test]
fn racks_come_from_the_topology_script() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    // Hadoop's contract: host names as arguments, one rack per name on stdout.
    let dir = tempfile::tempdir().expect("temp dir");
    let script = dir.path().join("topology.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\nfor host in \"$@\"; do\n  echo \"/rack-${host##*.}\"\ndone\n",
    )
    .expect("write the script");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))
            .expect("make the script executable");
    }
    let cluster = start(
        &clients,
        Cluster::builder()
            .rm_property("net.topology.script.file.name", script.display())
            .nodemanager(NodeManagerSpec::new(2048, 2))
            .nodemanager(NodeManagerSpec::new(2048, 2)),
    );
    let list = wait_for_node_states(&cluster, &[(0, "RUNNING"), (1, "RUNNING")], NODE_TIMEOUT);
    for nm in cluster.nodemanagers() {
        let node_id = list
            .find(|id| nm.is_node_id(id))
            .map(|row| row.node_id.clone())
            .unwrap_or_else(|| panic!("{} is not listed: {list:#?}", nm.address()));
        let host = node_id.rsplit_once(':').map_or("", |(h, _)| h).to_string();
        let last_octet = host.rsplit('.').next().unwrap_or_default().to_string();
        let out = cluster.yarn(["node", "-status", node_id.as_str()]);
        out.assert_success();
        let report = parse_report(&out.stdout);
        assert_eq!(
            report_value(&report, "Rack"),
            Some(format!("/rack-{last_octet}").as_str()),
            "{out}"
        );
    }
}

/// `spindle standalone` as a user runs it (only its ports moved): it prints the
/// defaults it applies and its addresses, all on loopback; the real CLI lists its
/// node; Ctrl-C stops it cleanly; its log, written to a file, has no colour codes.
#[test]
fn standalone_serves_the_cli_on_loopback_and_stops_cleanly_on_ctrl_c() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let mut standalone =
        match spindle_integration::Standalone::start(&spindle_integration::HadoopConf::new()) {
            Ok(s) => s,
            Err(e) => panic!("standalone did not start: {e:#}"),
        };
    let printed = standalone.stdout();
    assert!(
        printed.contains(
            "standalone defaults: yarn.nodemanager.vmem-check-enabled=false, \
             spindle.shuffle.bind-host=127.0.0.1, \
             yarn.resourcemanager.hostname=127.0.0.1, yarn.nodemanager.hostname=127.0.0.1"
        ),
        "{printed}"
    );
    assert!(printed.contains("Listening on loopback only"), "{printed}");
    for (key, addr) in standalone.addresses() {
        assert!(addr.ip().is_loopback(), "{key} is {addr}:\n{printed}");
    }
    let listed = spindle_integration::wait_for(NODE_TIMEOUT, POLL, || {
        let out = standalone
            .yarn(&clients)
            .run(["node", "-list", "-all"])
            .ok()?;
        let list = NodeList::parse(&out.stdout).ok()?;
        (list.total == 1 && list.nodes.iter().all(|n| n.state == "RUNNING")).then_some(list)
    });
    let list = listed.unwrap_or_else(|| {
        panic!(
            "the standalone NodeManager never showed RUNNING:\n{}",
            standalone.log_tail()
        )
    });
    assert!(
        list.nodes[0].node_id.starts_with("127.0.0.1:"),
        "the node listens on loopback: {list:#?}"
    );
    let status = standalone
        .interrupt(Duration::from_secs(60))
        .expect("SIGINT sent");
    let log = standalone.stderr();
    assert!(
        status.is_some_and(|s| s.success()),
        "standalone should exit 0 after Ctrl-C, got {status:?}:\n{}",
        standalone.log_tail()
    );
    assert!(
        !log.contains('\u{1b}'),
        "a log written to a file has no ANSI colour codes:\n{log}"
    );
}
