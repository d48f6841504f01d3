//! Spark 3.5.3 on YARN against real Spindle daemons: `spark-submit` from the pyspark
//! install that also provides the Hadoop CLI, run unchanged against a Spindle RM and
//! NodeManagers, with Spark's default uploads (the `__spark_libs__` archive).

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use spindle_integration::cli::{parse_report, report_value};
use spindle_integration::process::{run_with_timeout, CliOutput};
use spindle_integration::spark::{self, app_id_in, spark_home, Staging};
use spindle_integration::{Cluster, HadoopClients, NodeManagerSpec};

fn python_script(name: &str) -> PathBuf {
    spindle_integration::clients::integration_dir()
        .join("python")
        .join(name)
}

fn start_cluster(clients: &HadoopClients, nms: usize) -> Cluster {
    start_cluster_with(clients, nms, Cluster::builder())
}

fn start_cluster_with(
    clients: &HadoopClients,
    nms: usize,
    builder: spindle_integration::ClusterBuilder,
) -> Cluster {
    let mut builder = builder.heartbeat_interval_ms(500);
    for _ in 0..nms {
        builder = builder.nodemanager(NodeManagerSpec::new(8192, 8));
    }
    // The harness's core-site.xml sets fs.defaultFS to file:///, so Spark stages its
    // uploads on the local file system.
    builder.start(clients).expect("cluster starts")
}

fn spark_submit(
    cluster: &Cluster,
    clients: &HadoopClients,
    args: &[&str],
    timeout: Duration,
) -> CliOutput {
    run_with_timeout(spark_submit_command(cluster, clients, args), timeout)
        .expect("spark-submit runs")
}

/// The `spark-submit` command [`spark_submit`] runs (staging in the cluster's directory).
fn spark_submit_command(cluster: &Cluster, clients: &HadoopClients, args: &[&str]) -> Command {
    spark::submit_command(cluster, clients, Staging::ClusterDir, args)
}

#[test]
fn spark_pi_in_cluster_mode_finishes_succeeded() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let cluster = start_cluster(&clients, 1);
    let pi = spark_home(&clients).join("examples/src/main/python/pi.py");
    let out = spark_submit(
        &cluster,
        &clients,
        &[
            "--deploy-mode",
            "cluster",
            pi.to_str().unwrap_or_default(),
            "4",
        ],
        Duration::from_secs(400),
    );
    assert!(
        out.success(),
        "spark-submit failed:\n{out}\n{}",
        cluster.log_report()
    );
    let app = app_id_in(&out).unwrap_or_else(|| panic!("no application id in the output:\n{out}"));
    let status = cluster.yarn(["application", "-status", &app]);
    status.assert_success();
    let report = parse_report(&status.stdout);
    assert_eq!(report_value(&report, "State"), Some("FINISHED"), "{status}");
    assert_eq!(
        report_value(&report, "Final-State"),
        Some("SUCCEEDED"),
        "{status}"
    );
}

#[test]
fn spark_pi_in_client_mode_prints_the_result() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let cluster = start_cluster(&clients, 1);
    let pi = spark_home(&clients).join("examples/src/main/python/pi.py");
    let out = spark_submit(
        &cluster,
        &clients,
        &[
            "--deploy-mode",
            "client",
            pi.to_str().unwrap_or_default(),
            "4",
        ],
        Duration::from_secs(400),
    );
    assert!(
        out.success(),
        "spark-submit failed:\n{out}\n{}",
        cluster.log_report()
    );
    assert!(out.stdout.contains("Pi is roughly"), "{out}");
}

fn status_of(cluster: &Cluster, app: &str) -> Vec<(String, String)> {
    let status = cluster.yarn(["application", "-status", app]);
    status.assert_success();
    parse_report(&status.stdout)
}

/// `app` ended FINISHED with `final_state` after `attempts` attempts; its report.
fn assert_ended(
    cluster: &Cluster,
    app: &str,
    final_state: &str,
    attempts: usize,
) -> Vec<(String, String)> {
    let report = status_of(cluster, app);
    assert_eq!(
        report_value(&report, "State"),
        Some("FINISHED"),
        "{report:?}"
    );
    assert_eq!(
        report_value(&report, "Final-State"),
        Some(final_state),
        "{report:?}"
    );
    let listed = cluster.yarn(["applicationattempt", "-list", app]);
    listed.assert_success();
    assert!(
        listed
            .stdout
            .contains(&format!("Total number of application attempts :{attempts}")),
        "{attempts} attempt(s) expected:\n{listed}\n{}",
        cluster.log_report()
    );
    report
}

#[test]
fn failing_driver_fails_the_application_after_its_attempts() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let cluster = start_cluster_with(
        &clients,
        1,
        Cluster::builder().rm_property("yarn.resourcemanager.am.max-attempts", 2),
    );
    let script = python_script("fail.py");
    let out = spark_submit(
        &cluster,
        &clients,
        &[
            "--deploy-mode",
            "cluster",
            "--conf",
            "spark.yarn.maxAppAttempts=2",
            script.to_str().unwrap_or_default(),
        ],
        Duration::from_secs(400),
    );
    assert!(
        !out.success(),
        "spark-submit should report the failure:\n{out}"
    );
    let app = app_id_in(&out).unwrap_or_else(|| panic!("no application id in the output:\n{out}"));
    // As with Hadoop's RM: Spark's last attempt unregisters with FAILED, so the
    // application is FINISHED with final status FAILED, after its two attempts.
    let report = assert_ended(&cluster, &app, "FAILED", 2);
    let diagnostics = report_value(&report, "Diagnostics").unwrap_or_default();
    assert!(!diagnostics.is_empty(), "diagnostics expected: {report:?}");
}

/// Processes whose command line mentions every one of `needles`.
fn processes_mentioning(needles: &[&str]) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|p| p.chars().all(|c| c.is_ascii_digit()))
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if needles.iter().all(|n| cmdline.contains(n)) {
            found.push(format!("{pid}: {cmdline}"));
        }
    }
    found
}

#[test]
fn killed_application_leaves_no_processes() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let cluster = start_cluster(&clients, 1);
    let script = python_script("sleep.py");
    let out = spark_submit(
        &cluster,
        &clients,
        &[
            "--deploy-mode",
            "cluster",
            "--conf",
            "spark.yarn.submit.waitAppCompletion=false",
            script.to_str().unwrap_or_default(),
            "600",
        ],
        Duration::from_secs(300),
    );
    assert!(
        out.success(),
        "submission failed:\n{out}\n{}",
        cluster.log_report()
    );
    let app = app_id_in(&out).unwrap_or_else(|| panic!("no application id in the output:\n{out}"));
    // This cluster's containers only: another test's cluster may use the same app id.
    let root = cluster.root().display().to_string();
    let running = spindle_integration::wait_until(
        Duration::from_secs(180),
        Duration::from_millis(500),
        || {
            report_value(&status_of(&cluster, &app), "State") == Some("RUNNING")
                && !processes_mentioning(&[&root, &format!("{app}/container")]).is_empty()
        },
    );
    assert!(
        running,
        "the application never ran:\n{}",
        cluster.log_report()
    );
    let kill = cluster.yarn(["application", "-kill", &app]);
    kill.assert_success();
    let report = status_of(&cluster, &app);
    assert_eq!(report_value(&report, "State"), Some("KILLED"), "{report:?}");
    let gone = spindle_integration::wait_until(
        Duration::from_secs(60),
        Duration::from_millis(200),
        || processes_mentioning(&[&root, &app]).is_empty(),
    );
    assert!(
        gone,
        "processes of {app} still running 60 s after the kill:\n{}",
        processes_mentioning(&[&root, &app]).join("\n")
    );
}

#[test]
fn two_applications_at_once_on_two_nodes_both_finish() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let cluster = start_cluster(&clients, 2);
    let pi = spark_home(&clients).join("examples/src/main/python/pi.py");
    let pi = pi.to_str().unwrap_or_default().to_string();
    let outputs = std::thread::scope(|scope| {
        let runs: Vec<_> = (0..2)
            .map(|_| {
                let (cluster, clients, pi) = (&cluster, &clients, pi.clone());
                scope.spawn(move || {
                    spark_submit(
                        cluster,
                        clients,
                        &["--deploy-mode", "cluster", &pi, "4"],
                        Duration::from_secs(500),
                    )
                })
            })
            .collect();
        runs.into_iter()
            .map(|r| r.join().expect("spark-submit thread"))
            .collect::<Vec<_>>()
    });
    let mut apps = Vec::new();
    for out in &outputs {
        assert!(
            out.success(),
            "spark-submit failed:\n{out}\n{}",
            cluster.log_report()
        );
        apps.push(app_id_in(out).unwrap_or_else(|| panic!("no application id:\n{out}")));
    }
    assert_ne!(apps[0], apps[1]);
    for app in &apps {
        let report = status_of(&cluster, app);
        assert_eq!(
            report_value(&report, "Final-State"),
            Some("SUCCEEDED"),
            "{report:?}"
        );
    }
}

/// The first-contact report's queues: `alpha` 70 % and `beta` 30 % (at most 50 %),
/// `user-limit-factor` left at its default 1, `maximum-am-resource-percent` 0.5.
fn alpha_beta_xml() -> String {
    let mut xml = String::from("<?xml version=\"1.0\"?>\n<configuration>\n");
    for (name, value) in [
        ("root.queues", "alpha,beta"),
        ("maximum-am-resource-percent", "0.5"),
        ("root.alpha.capacity", "70"),
        ("root.beta.capacity", "30"),
        ("root.beta.maximum-capacity", "50"),
    ] {
        xml.push_str(&format!(
            "  <property><name>yarn.scheduler.capacity.{name}</name><value>{value}</value></property>\n"
        ));
    }
    xml.push_str("</configuration>\n");
    xml
}

/// Two Spark applications of one user in `beta` (2 NMs of 8 GB; each application a
/// 2 GB driver and two 2 GB executors; the user's limit 30 % of 16 GB) both finish:
/// the user, at their limit, may take one more container, and their second AM waits
/// for the first application to end (Hadoop's per-user AM limit). With a hard
/// `used + ask <= factor × guarantee` cap both AMs started and neither application
/// ever got an executor.
#[test]
fn two_spark_apps_of_one_user_in_a_small_capacity_queue_both_finish() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    // Hadoop's default minimum allocation, as in the report: a 1 GB driver or executor
    // and its 384 MB overhead take a 2 GB container.
    let cluster = start_cluster_with(
        &clients,
        2,
        Cluster::builder()
            .conf_file("capacity-scheduler.xml", alpha_beta_xml())
            .rm_property("yarn.scheduler.minimum-allocation-mb", 1024),
    );
    let pi = spark_home(&clients).join("examples/src/main/python/pi.py");
    let pi = pi.to_str().unwrap_or_default().to_string();
    let outputs = std::thread::scope(|scope| {
        let runs: Vec<_> = (0..2)
            .map(|_| {
                let (cluster, clients, pi) = (&cluster, &clients, pi.clone());
                scope.spawn(move || {
                    spark_submit(
                        cluster,
                        clients,
                        &[
                            "--deploy-mode",
                            "cluster",
                            "--queue",
                            "beta",
                            "--conf",
                            "spark.driver.memory=1g",
                            "--conf",
                            "spark.executor.memory=1g",
                            &pi,
                            "10",
                        ],
                        Duration::from_secs(600),
                    )
                })
            })
            .collect();
        runs.into_iter()
            .map(|r| r.join().expect("spark-submit thread"))
            .collect::<Vec<_>>()
    });
    for out in &outputs {
        assert!(
            out.success(),
            "spark-submit failed:\n{out}\n{}",
            cluster.log_report()
        );
        let app = app_id_in(out).unwrap_or_else(|| panic!("no application id:\n{out}"));
        let report = status_of(&cluster, &app);
        assert_eq!(report_value(&report, "Queue"), Some("beta"), "{report:?}");
        assert_eq!(
            report_value(&report, "Final-State"),
            Some("SUCCEEDED"),
            "{report:?}"
        );
    }
}

/// A capacity-scheduler.xml with leaves `a` and `b` (elastic to 100%) and
/// `closed` (10%, in the given state).
fn capacity_xml(closed_state: &str, a_capacity: u32, b_capacity: u32) -> String {
    let property = |name: &str, value: &str| {
        format!("  <property><name>yarn.scheduler.capacity.{name}</name><value>{value}</value></property>\n")
    };
    let mut xml = String::from("<?xml version=\"1.0\"?>\n<configuration>\n");
    for (name, value) in [
        ("root.queues", "a,b,closed".to_string()),
        ("maximum-am-resource-percent", "0.5".to_string()),
        ("root.a.capacity", a_capacity.to_string()),
        ("root.a.maximum-capacity", "100".to_string()),
        ("root.a.user-limit-factor", "2".to_string()),
        ("root.b.capacity", b_capacity.to_string()),
        ("root.b.maximum-capacity", "100".to_string()),
        ("root.b.user-limit-factor", "2".to_string()),
        ("root.closed.capacity", "10".to_string()),
        ("root.closed.state", closed_state.to_string()),
    ] {
        xml.push_str(&property(name, &value));
    }
    xml.push_str("</configuration>\n");
    xml
}

/// `yarn queue -status Q`, parsed.
fn queue_status(cluster: &Cluster, queue: &str) -> Vec<(String, String)> {
    let out = cluster.yarn(["queue", "-status", queue]);
    out.assert_success();
    parse_report(&out.stdout)
}

/// "12.5%" -> 12.5
fn percent(value: Option<&str>) -> f64 {
    value
        .and_then(|v| v.trim().trim_end_matches('%').parse().ok())
        .unwrap_or(-1.0)
}

#[test]
fn spark_apps_in_two_capacity_queues_both_run_and_queue_status_shows_their_usage() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let cluster = start_cluster_with(
        &clients,
        2,
        Cluster::builder().conf_file("capacity-scheduler.xml", capacity_xml("RUNNING", 45, 45)),
    );
    let a = queue_status(&cluster, "a");
    assert_eq!(report_value(&a, "Capacity"), Some("45.00%"), "{a:?}");
    assert_eq!(
        report_value(&a, "Maximum Capacity"),
        Some("100.00%"),
        "{a:?}"
    );
    // The CLI formats with "#.00", so nothing used prints as ".00%".
    assert_eq!(report_value(&a, "Current Capacity"), Some(".00%"), "{a:?}");
    let script = python_script("sleep.py");
    let script = script.to_str().unwrap_or_default().to_string();
    let (outputs, seen) = std::thread::scope(|scope| {
        let runs: Vec<_> = ["a", "b"]
            .into_iter()
            .map(|queue| {
                let (cluster, clients, script) = (&cluster, &clients, script.clone());
                scope.spawn(move || {
                    spark_submit(
                        cluster,
                        clients,
                        &["--deploy-mode", "cluster", "--queue", queue, &script, "20"],
                        Duration::from_secs(500),
                    )
                })
            })
            .collect();
        // While both run, each queue reports what its containers hold.
        let mut seen = (0.0f64, 0.0f64);
        spindle_integration::wait_until(
            Duration::from_secs(300),
            Duration::from_millis(500),
            || {
                let a = percent(report_value(
                    &queue_status(&cluster, "a"),
                    "Current Capacity",
                ));
                let b = percent(report_value(
                    &queue_status(&cluster, "b"),
                    "Current Capacity",
                ));
                seen = (seen.0.max(a), seen.1.max(b));
                a > 0.0 && b > 0.0
            },
        );
        let outputs = runs
            .into_iter()
            .map(|r| r.join().expect("spark-submit thread"))
            .collect::<Vec<_>>();
        (outputs, seen)
    });
    for (out, queue) in outputs.iter().zip(["a", "b"]) {
        assert!(
            out.success(),
            "spark-submit to {queue} failed:\n{out}\n{}",
            cluster.log_report()
        );
        let app = app_id_in(out).unwrap_or_else(|| panic!("no application id:\n{out}"));
        let report = status_of(&cluster, &app);
        assert_eq!(report_value(&report, "Queue"), Some(queue), "{report:?}");
        assert_eq!(
            report_value(&report, "Final-State"),
            Some("SUCCEEDED"),
            "{report:?}"
        );
    }
    assert!(
        seen.0 > 0.0 && seen.1 > 0.0,
        "both queues should have shown usage while their apps ran: a {}%, b {}%",
        seen.0,
        seen.1
    );
}

#[test]
fn stopped_queue_refuses_submissions_and_refresh_queues_applies_or_rejects_files() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let cluster = start_cluster_with(
        &clients,
        1,
        Cluster::builder().conf_file("capacity-scheduler.xml", capacity_xml("STOPPED", 45, 45)),
    );
    let status = queue_status(&cluster, "closed");
    assert_eq!(
        report_value(&status, "State"),
        Some("STOPPED"),
        "{status:?}"
    );
    let pi = spark_home(&clients).join("examples/src/main/python/pi.py");
    let out = spark_submit(
        &cluster,
        &clients,
        &[
            "--deploy-mode",
            "cluster",
            "--queue",
            "closed",
            pi.to_str().unwrap_or_default(),
            "2",
        ],
        Duration::from_secs(300),
    );
    assert!(!out.success(), "a STOPPED queue must refuse:\n{out}");
    let app = app_id_in(&out).unwrap_or_else(|| panic!("no application id:\n{out}"));
    let expected =
        format!("Queue root.closed is STOPPED. Cannot accept submission of application: {app}");
    let report = status_of(&cluster, &app);
    assert_eq!(report_value(&report, "State"), Some("FAILED"), "{report:?}");
    assert!(
        report_value(&report, "Diagnostics").is_some_and(|d| d.contains(&expected)),
        "diagnostics should carry Hadoop's message '{expected}': {report:?}"
    );

    // A changed file takes effect on refreshQueues...
    let file = cluster.conf_dir().join("capacity-scheduler.xml");
    std::fs::write(&file, capacity_xml("RUNNING", 60, 30)).expect("rewrite the queue file");
    cluster.yarn(["rmadmin", "-refreshQueues"]).assert_success();
    let status = queue_status(&cluster, "closed");
    assert_eq!(
        report_value(&status, "State"),
        Some("RUNNING"),
        "{status:?}"
    );
    let a = queue_status(&cluster, "a");
    assert_eq!(report_value(&a, "Capacity"), Some("60.00%"), "{a:?}");

    // ...and an invalid one is refused with its reason, the old queues staying.
    std::fs::write(&file, capacity_xml("RUNNING", 60, 40)).expect("rewrite the queue file");
    let refused = cluster.yarn(["rmadmin", "-refreshQueues"]);
    assert!(
        !refused.success(),
        "an invalid file must be refused:\n{refused}"
    );
    let text = format!("{}{}", refused.stdout, refused.stderr);
    assert!(
        text.contains("capacity-scheduler.xml"),
        "the refusal should name the file:\n{refused}"
    );
    let a = queue_status(&cluster, "a");
    assert_eq!(report_value(&a, "Capacity"), Some("60.00%"), "{a:?}");
}

/// S9: `kill -9` of the ResourceManager (embedded store, work-preserving
/// recovery, Hadoop's default) while a Spark pi job runs in cluster mode; a
/// new RM process on the same store: the NodeManager keeps the containers and
/// re-registers with them, Spark's AM (Hadoop's AMRMClient) registers again
/// by itself, and the job finishes SUCCEEDED in its one attempt. An
/// application that finished before the crash is still listed.
/// spark-submit of pi.py in cluster mode with enough slices to be running
/// when its executors' JVMs start, on a thread of its own.
fn start_long_pi(
    cluster: &Cluster,
    clients: &HadoopClients,
) -> std::thread::JoinHandle<anyhow::Result<CliOutput>> {
    let pi = spark_home(clients).join("examples/src/main/python/pi.py");
    let cmd = spark_submit_command(
        cluster,
        clients,
        &[
            "--deploy-mode",
            "cluster",
            pi.to_str().unwrap_or_default(),
            "100",
        ],
    );
    std::thread::spawn(move || run_with_timeout(cmd, Duration::from_secs(900)))
}

/// Waits until an executor of this cluster's Spark job runs.
fn wait_for_executors(cluster: &Cluster) {
    let root = cluster.root().display().to_string();
    let executing = spindle_integration::wait_until(
        Duration::from_secs(300),
        Duration::from_millis(200),
        || !processes_mentioning(&[&root, "CoarseGrainedExecutorBackend"]).is_empty(),
    );
    assert!(
        executing,
        "no executor of the pi job ever ran:\n{}",
        cluster.log_report()
    );
}

/// The job `job` ran succeeded, FINISHED/SUCCEEDED in one attempt; its id.
fn succeeded_in_one_attempt(
    cluster: &Cluster,
    job: std::thread::JoinHandle<anyhow::Result<CliOutput>>,
) -> String {
    let out = match job.join() {
        Ok(Ok(out)) => out,
        Ok(Err(e)) => panic!("spark-submit did not run: {e:#}"),
        Err(_) => panic!("the spark-submit thread panicked"),
    };
    assert!(
        out.success(),
        "spark-submit failed:\n{out}\n{}",
        cluster.log_report()
    );
    let app = app_id_in(&out).unwrap_or_else(|| panic!("no application id in the output:\n{out}"));
    assert_ended(cluster, &app, "SUCCEEDED", 1);
    app
}

#[test]
fn spark_job_survives_a_kill_9_of_the_resourcemanager() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let builder = Cluster::builder()
        .rm_property("yarn.resourcemanager.recovery.enabled", true)
        .rm_property(
            "yarn.resourcemanager.work-preserving-recovery.scheduling-wait-ms",
            2000,
        )
        // The NodeManager and the AM wait for the RM to come back (the
        // harness's clients otherwise give up after 5 s).
        .rm_property("yarn.resourcemanager.connect.max-wait.ms", 180_000);
    let mut cluster = start_cluster_with(&clients, 1, builder);

    // An application that ends before the crash.
    let finished = match cluster.submit_app(&spindle_integration::AppSubmission::new(
        "finished-before-the-crash",
        "sleep 300",
    )) {
        Ok(id) => id,
        Err(e) => panic!("submission failed: {e:#}\n{}", cluster.log_report()),
    };
    cluster
        .yarn(["application", "-kill", finished.as_str()])
        .assert_success();

    let job = start_long_pi(&cluster, &clients);

    // Executors of this cluster's pi job are running: kill the RM.
    wait_for_executors(&cluster);
    if let Err(e) = cluster.kill_rm() {
        panic!("kill -9 of the RM: {e:#}");
    }
    let killed_at = std::time::Instant::now();
    if let Err(e) = cluster.restart_rm(Duration::from_secs(60)) {
        panic!(
            "the RM did not start again: {e:#}\n{}",
            cluster.log_report()
        );
    }
    let serving = killed_at.elapsed();

    // The AM registers again with the new RM (logged as `rm-<n>`) by itself.
    let log_dir = cluster.log_dir().to_path_buf();
    let log = |what: &str| {
        std::fs::read_dir(&log_dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.starts_with("rm-") && name.ends_with(".stderr")
            })
            .any(|e| {
                std::fs::read_to_string(e.path())
                    .unwrap_or_default()
                    .contains(what)
            })
    };
    let reregistered = spindle_integration::wait_until(
        Duration::from_secs(120),
        Duration::from_millis(100),
        || log("ApplicationMaster registered"),
    );
    let reregistration = killed_at.elapsed();
    assert!(
        reregistered,
        "the AM never registered with the new RM:\n{}",
        cluster.log_report()
    );
    assert!(
        log("container recovered"),
        "the node's containers were not taken back:\n{}",
        cluster.log_report()
    );
    eprintln!(
        "kill -9 to the new RM serving: {serving:?}; to the AM registered again: {reregistration:?}"
    );

    let app = succeeded_in_one_attempt(&cluster, job);
    let all = cluster.yarn(["application", "-list", "-appStates", "ALL"]);
    all.assert_success();
    assert!(
        all.stdout.contains(finished.as_str()) && all.stdout.contains(app.as_str()),
        "both applications listed:\n{all}"
    );
}

/// S9: an HA pair with automatic failover on a real ZooKeeper server (leader
/// election, the ZooKeeper state store, work-preserving recovery): `kill -9`
/// of the active RM while a Spark pi job runs in cluster mode. The standby is
/// elected and recovers the job; the NodeManager keeps the containers and
/// re-registers with it, Spark's AM (Hadoop's AMRMClient) and spark-submit's
/// YarnClient fail over by themselves (they read the HA keys from the
/// harness's configuration directory, which Spark ships to the AM), and the
/// job finishes SUCCEEDED in its one attempt. The killed RM, started again,
/// joins as standby.
#[test]
fn spark_job_survives_a_kill_9_of_the_active_rm_of_an_ha_pair() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jars) = spindle_integration::ZooKeeperJars::for_tests() else {
        return;
    };
    let zookeeper = match spindle_integration::ZooKeeperServer::start(&jars) {
        Ok(zk) => zk,
        Err(e) => panic!("the ZooKeeper server did not start: {e:#}"),
    };
    let builder = Cluster::builder()
        .ha_pair(true)
        .zookeeper(zookeeper.connect_string())
        // Hadoop's default session timeout is 10 s; 4 s keeps the test short.
        .rm_property("hadoop.zk.timeout-ms", 4000)
        .rm_property(
            "yarn.resourcemanager.work-preserving-recovery.scheduling-wait-ms",
            2000,
        )
        // The NodeManager, the AM and spark-submit keep failing over while
        // no RM is active (the harness's clients otherwise give up after 5 s).
        .rm_property("yarn.resourcemanager.connect.max-wait.ms", 180_000);
    let mut cluster = start_cluster_with(&clients, 1, builder);
    let Some(active) = cluster.wait_for_one_active(Duration::from_secs(90)) else {
        panic!("no RM was elected active\n{}", cluster.log_report());
    };
    let standby = if active == "rm1" { "rm2" } else { "rm1" };

    let job = start_long_pi(&cluster, &clients);

    // Executors of this cluster's pi job are running: kill the active RM.
    wait_for_executors(&cluster);
    if let Err(e) = cluster.kill_rm_id(&active) {
        panic!("kill -9 of {active}: {e:#}");
    }

    // The standby is elected; -getAllServiceState shows the change.
    let took_over = spindle_integration::wait_until(
        Duration::from_secs(120),
        Duration::from_millis(500),
        || cluster.active_rms() == Some(vec![standby.to_string()]),
    );
    assert!(
        took_over,
        "{standby} did not become active: {:?}\n{}",
        cluster.service_states().map(|(_, out)| out.to_string()),
        cluster.log_report()
    );

    // The AM registers again with the new active by itself, and the node's
    // containers are taken back.
    let log_dir = cluster.log_dir().to_path_buf();
    let new_active_log = log_dir.join(format!("{standby}.stderr"));
    let log_has = |what: &str| {
        std::fs::read_to_string(&new_active_log)
            .unwrap_or_default()
            .contains(what)
    };
    let reregistered = spindle_integration::wait_until(
        Duration::from_secs(120),
        Duration::from_millis(200),
        || log_has("ApplicationMaster registered"),
    );
    assert!(
        reregistered,
        "the AM never registered with {standby}:\n{}",
        cluster.log_report()
    );
    let recovered = spindle_integration::wait_until(
        Duration::from_secs(120),
        Duration::from_millis(200),
        || log_has("container recovered"),
    );
    assert!(
        recovered,
        "the node's containers were not taken back by {standby}:\n{}",
        cluster.log_report()
    );

    // The old RM, started again, joins as standby.
    if let Err(e) = cluster.restart_rm_id(&active, Duration::from_secs(60)) {
        panic!(
            "{active} did not start again: {e:#}\n{}",
            cluster.log_report()
        );
    }
    assert_eq!(
        cluster
            .wait_for_one_active(Duration::from_secs(90))
            .as_deref(),
        Some(standby),
        "{}",
        cluster.log_report()
    );

    succeeded_in_one_attempt(&cluster, job);
}
