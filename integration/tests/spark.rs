//! Spark 3.5.3 on YARN against real Spindle daemons: `spark-submit` from the pyspark
//! install that also provides the Hadoop CLI, run unchanged against a Spindle RM and
//! NodeManagers, with Spark's default uploads (the `__spark_libs__` archive).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use spindle_integration::cli::{parse_report, report_value};
use spindle_integration::process::{run_with_timeout, CliOutput};
use spindle_integration::{Cluster, HadoopClients, NodeManagerSpec};

/// The pyspark package directory (SPARK_HOME of a pip install).
fn spark_home(clients: &HadoopClients) -> PathBuf {
    clients
        .jar_dir()
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

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
    let home = spark_home(clients);
    let mut cmd = Command::new(home.join("bin/spark-submit"));
    cmd.env("SPARK_HOME", &home)
        .env("HADOOP_CONF_DIR", cluster.conf_dir())
        .env("YARN_CONF_DIR", cluster.conf_dir())
        .env("SPARK_LOCAL_IP", "127.0.0.1")
        .env("PYSPARK_PYTHON", "python3")
        .env_remove("PYSPARK_DRIVER_PYTHON")
        .args(["--master", "yarn"])
        .arg("--conf")
        // Per cluster: two clusters started in the same millisecond hand out the same
        // application ids, and Spark's staging paths are named after them.
        .arg(format!(
            "spark.yarn.stagingDir=file://{}",
            cluster.root().join("staging").display()
        ))
        .args([
            "--conf",
            "spark.driver.memory=512m",
            "--conf",
            "spark.executor.memory=512m",
        ])
        .args(["--conf", "spark.executor.instances=2"])
        .args(args);
    run_with_timeout(cmd, timeout).expect("spark-submit runs")
}

fn app_id_in(output: &CliOutput) -> Option<String> {
    let text = format!("{}\n{}", output.stdout, output.stderr);
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .find(|w| w.starts_with("application_") && w.matches('_').count() == 2)
        .map(str::to_string)
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
    let report = status_of(&cluster, &app);
    // As with Hadoop's RM: Spark's last attempt unregisters with FAILED, so the
    // application is FINISHED with final status FAILED.
    assert_eq!(
        report_value(&report, "State"),
        Some("FINISHED"),
        "{report:?}"
    );
    assert_eq!(
        report_value(&report, "Final-State"),
        Some("FAILED"),
        "{report:?}"
    );
    let attempts = cluster.yarn(["applicationattempt", "-list", &app]);
    attempts.assert_success();
    assert!(
        attempts
            .stdout
            .contains("Total number of application attempts :2"),
        "two attempts expected:\n{attempts}"
    );
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
    std::thread::sleep(Duration::from_secs(10));
    let left = processes_mentioning(&[&root, &app]);
    assert!(
        left.is_empty(),
        "processes of {app} still running 10 s after the kill:\n{}",
        left.join("\n")
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
