//! The RM's web proxy with a real Spark 3.5 application: Spark's AM installs
//! Hadoop's `AmIpFilter`, which sends browsers to
//! `http://<rm-webapp>/proxy/<appId>/`; through it the Spark UI comes back
//! (not a redirect loop), the stock CLI's report names the proxy URL as the
//! tracking URL, and once the application finished the proxy sends browsers
//! to the history URL Spark gave at unregister.

mod web_http;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use spindle_integration::cli::{parse_report, report_value};
use spindle_integration::process::{run_with_timeout, CliOutput};
use spindle_integration::{wait_for, Cluster, HadoopClients, NodeManagerSpec};
use web_http::browser_get as get;

const HISTORY: &str = "http://history.example:18080";

fn spark_home(clients: &HadoopClients) -> PathBuf {
    clients
        .jar_dir()
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// spark-submit of pi.py in cluster mode, long enough to be looked at while
/// it runs, on a thread of its own.
fn start_long_pi(
    cluster: &Cluster,
    clients: &HadoopClients,
) -> std::thread::JoinHandle<anyhow::Result<CliOutput>> {
    let home = spark_home(clients);
    let pi = home.join("examples/src/main/python/pi.py");
    let mut cmd = Command::new(home.join("bin/spark-submit"));
    cmd.env("SPARK_HOME", &home)
        .env("HADOOP_CONF_DIR", cluster.conf_dir())
        .env("YARN_CONF_DIR", cluster.conf_dir())
        .env("SPARK_LOCAL_IP", "127.0.0.1")
        .env("PYSPARK_PYTHON", "python3")
        .env_remove("PYSPARK_DRIVER_PYTHON")
        .args(["--master", "yarn", "--deploy-mode", "cluster"])
        .arg("--conf")
        .arg(format!(
            "spark.yarn.stagingDir=file://{}",
            cluster.root().join("staging").display()
        ))
        .args(["--conf", "spark.driver.memory=512m"])
        .args(["--conf", "spark.executor.memory=512m"])
        .args(["--conf", "spark.executor.instances=2"])
        // Spark's AM unregisters with its history page as the final tracking URL.
        .args([
            "--conf",
            &format!("spark.yarn.historyServer.address={HISTORY}"),
        ])
        .arg(pi)
        .arg("300");
    std::thread::spawn(move || run_with_timeout(cmd, Duration::from_secs(900)))
}

fn running_app(cluster: &Cluster) -> Option<String> {
    let list = cluster.yarn(["application", "-list", "-appStates", "RUNNING"]);
    list.stdout
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .find(|w| w.starts_with("application_") && w.matches('_').count() == 2)
        .map(str::to_string)
}

#[test]
fn the_spark_ui_is_served_through_the_rm_web_proxy() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let cluster = Cluster::builder()
        .heartbeat_interval_ms(500)
        .nodemanager(NodeManagerSpec::new(8192, 8))
        .start(&clients)
        .expect("cluster starts");
    let web = cluster.rm().webapp;
    let job = start_long_pi(&cluster, &clients);
    let app = wait_for(Duration::from_secs(300), Duration::from_millis(500), || {
        running_app(&cluster)
    })
    .unwrap_or_else(|| panic!("the pi job never ran:\n{}", cluster.log_report()));

    // The stock CLI shows the report's original tracking URL: the AM's own.
    let status = cluster.yarn(["application", "-status", &app]);
    status.assert_success();
    let report = parse_report(&status.stdout);
    let original = report_value(&report, "Tracking-URL").unwrap_or_default();
    assert!(
        original.starts_with("http://") && !original.contains("/proxy/"),
        "the original tracking URL should be the Spark UI's own: {report:?}"
    );

    // The Spark UI through the proxy, once the driver's UI is up.
    let jobs = wait_for(Duration::from_secs(300), Duration::from_millis(500), || {
        let a = get(web, &format!("/proxy/{app}/jobs/"));
        (a.status == 200).then_some(a)
    })
    .unwrap_or_else(|| {
        let a = get(web, &format!("/proxy/{app}/jobs/"));
        panic!(
            "the Spark jobs page never came through the proxy; last answer:\n{}\n{}\n{}",
            a.head,
            a.body,
            cluster.log_report()
        )
    });
    assert!(
        jobs.body.contains("Spark Jobs"),
        "the Spark jobs page expected:\n{}\n{}",
        jobs.head,
        jobs.body
    );
    // Spark's root redirects to /jobs/ on the AM; the proxy follows it.
    let root = get(web, &format!("/proxy/{app}/"));
    assert_eq!(root.status, 200, "{}\n{}", root.head, root.body);
    assert!(root.body.contains("Spark Jobs"), "{}", root.body);
    // An AM page the browser reached directly is sent back to the proxy by
    // Spark's AmIpFilter (what made the Spark UI unreachable without a proxy).
    let exec = get(web, &format!("/proxy/{app}/executors/"));
    assert_eq!(exec.status, 200, "{}\n{}", exec.head, exec.body);

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

    // spark-submit prints the report's tracking URL (getApplicationReport):
    // the RM's web proxy.
    let proxied = format!(":{}/proxy/{app}/", web.port());
    assert!(
        out.stdout
            .lines()
            .chain(out.stderr.lines())
            .any(|l| l.contains("tracking URL: http://") && l.trim_end().ends_with(&proxied)),
        "spark-submit should print the proxy as the tracking URL ({proxied}):\n{out}"
    );

    // Finished: the proxy sends the browser to Spark's history page.
    let done = get(web, &format!("/proxy/{app}/jobs/"));
    assert_eq!(done.status, 302, "{}\n{}", done.head, done.body);
    let location = done.header("Location").unwrap_or_default();
    assert!(
        location.starts_with(&format!("{HISTORY}/history/{app}")) && location.ends_with("/jobs/"),
        "a redirect to the history server expected: {}",
        done.head
    );
}
