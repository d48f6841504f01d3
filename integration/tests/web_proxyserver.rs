//! `spindle proxyserver`, the separate web proxy (Hadoop's `yarn
//! proxyserver`), with a real Spark 3.5 application: the RM's
//! `yarn.web-proxy.address` names the proxy server's port, so the RM's
//! reports point browsers there and the RM does not serve `/proxy/`
//! itself; the proxy server learns about the application from the RM's
//! client port and serves the Spark UI, answers 404 for an application the
//! RM does not know, sends browsers to Spark's history page once it ended,
//! and answers an error page (not a hang) while the RM is down.

mod web_http;

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use spindle_integration::cluster::free_port;
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
        .args(["--conf", "spark.executor.instances=1"])
        .args([
            "--conf",
            &format!("spark.yarn.historyServer.address={HISTORY}"),
        ])
        .arg(pi)
        .arg("200");
    std::thread::spawn(move || run_with_timeout(cmd, Duration::from_secs(900)))
}

/// The running application, from the RM's REST API (no JVM per poll).
fn running_app(web: SocketAddr) -> Option<String> {
    let list = get(web, "/ws/v1/cluster/apps?states=RUNNING");
    list.body
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .find(|w| w.starts_with("application_") && w.matches('_').count() == 2)
        .map(str::to_string)
}

/// The proxy server process, stopped on drop.
struct ProxyServer {
    child: Child,
    log: PathBuf,
}

impl ProxyServer {
    fn start(cluster: &Cluster) -> ProxyServer {
        let log = cluster.root().join("proxyserver.log");
        let out = std::fs::File::create(&log).expect("create the proxy server's log");
        let err = out.try_clone().expect("clone the log file");
        let child = Command::new(cluster.binary())
            .arg("proxyserver")
            .arg("--conf")
            .arg(cluster.conf_dir())
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .expect("start spindle proxyserver");
        ProxyServer { child, log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for ProxyServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_proxyserver_needs_its_address() {
    let Ok(bin) = spindle_integration::spindle_binary() else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("yarn-site.xml"),
        "<configuration></configuration>\n",
    )
    .expect("yarn-site.xml");
    let out = Command::new(bin)
        .arg("proxyserver")
        .arg("--conf")
        .arg(dir.path())
        .output()
        .expect("run spindle proxyserver");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("yarn.web-proxy.address is not set so the proxy will not run."),
        "{err}"
    );
}

#[test]
fn the_spark_ui_is_served_by_the_separate_proxy_server() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let local = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let proxy_port = free_port(local).expect("a free port for the proxy");
    let proxy = SocketAddr::new(local, proxy_port);
    let mut cluster = Cluster::builder()
        .heartbeat_interval_ms(500)
        .nodemanager(NodeManagerSpec::new(8192, 8))
        .rm_property("yarn.web-proxy.address", proxy)
        // How long the proxy server waits for the RM's report (and for an AM page).
        .rm_property("yarn.resourcemanager.proxy.connection.timeout", 15_000)
        .start(&clients)
        .expect("cluster starts");
    let server = ProxyServer::start(&cluster);
    let web = cluster.rm().webapp;
    let up = wait_for(Duration::from_secs(60), Duration::from_millis(200), || {
        TcpStream::connect(proxy).ok()
    });
    assert!(
        up.is_some(),
        "the proxy server never listened:\n{}",
        server.log()
    );

    // An application the RM does not know: Hadoop's 404 page.
    let unknown = get(proxy, "/proxy/application_1_0001/");
    assert_eq!(unknown.status, 404, "{}\n{}", unknown.head, unknown.body);
    assert!(
        unknown
            .body
            .contains("Application application_1_0001 could not be found in RM or history server"),
        "{}",
        unknown.body
    );

    let job = start_long_pi(&cluster, &clients);
    let app = wait_for(Duration::from_secs(300), Duration::from_millis(500), || {
        running_app(web)
    })
    .unwrap_or_else(|| panic!("the pi job never ran:\n{}", cluster.log_report()));

    // The RM's report names the proxy server as the tracking URL.
    let rest = get(web, &format!("/ws/v1/cluster/apps/{app}"));
    assert_eq!(rest.status, 200, "{}\n{}", rest.head, rest.body);
    let tracking = format!("\"trackingUrl\":\"http://{proxy}/proxy/{app}/\"");
    assert!(
        rest.body.contains(&tracking),
        "{tracking} expected: {}",
        rest.body
    );
    // ... and the RM itself does not serve the proxy.
    let on_rm = get(web, &format!("/proxy/{app}/jobs/"));
    assert_eq!(on_rm.status, 404, "{}\n{}", on_rm.head, on_rm.body);

    // The Spark UI through the proxy server, once the driver's UI is up.
    let jobs = wait_for(Duration::from_secs(300), Duration::from_millis(500), || {
        let a = get(proxy, &format!("/proxy/{app}/jobs/"));
        (a.status == 200).then_some(a)
    })
    .unwrap_or_else(|| {
        let a = get(proxy, &format!("/proxy/{app}/jobs/"));
        panic!(
            "the Spark jobs page never came through the proxy server; last answer:\n{}\n{}\n{}\n{}",
            a.head,
            a.body,
            server.log(),
            cluster.log_report()
        )
    });
    assert!(
        jobs.body.contains("Spark Jobs"),
        "the Spark jobs page expected:\n{}\n{}",
        jobs.head,
        jobs.body
    );
    // Spark's AmIpFilter accepts the proxy server's requests: its root
    // redirects to /jobs/ on the AM, which the proxy follows.
    let root = get(proxy, &format!("/proxy/{app}/"));
    assert_eq!(root.status, 200, "{}\n{}", root.head, root.body);
    assert!(root.body.contains("Spark Jobs"), "{}", root.body);

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
    // spark-submit prints the report's tracking URL: the proxy server's.
    let proxied = format!("tracking URL: http://{proxy}/proxy/{app}/");
    assert!(
        out.stdout
            .lines()
            .chain(out.stderr.lines())
            .any(|l| l.trim_end().ends_with(&proxied)),
        "spark-submit should print the proxy server as the tracking URL ({proxied}):\n{out}"
    );

    // Finished: the proxy server sends the browser to Spark's history page.
    let done = get(proxy, &format!("/proxy/{app}/jobs/"));
    assert_eq!(done.status, 302, "{}\n{}", done.head, done.body);
    let location = done.header("Location").unwrap_or_default();
    assert!(
        location.starts_with(&format!("{HISTORY}/history/{app}")) && location.ends_with("/jobs/"),
        "a redirect to the history server expected: {}",
        done.head
    );

    // The RM down: an error page naming the ResourceManager, within the
    // proxy's timeout (the read above is bounded, so a hang fails here).
    cluster.kill_rm().expect("kill the RM");
    let down = get(proxy, &format!("/proxy/{app}/jobs/"));
    assert_eq!(down.status, 503, "{}\n{}", down.head, down.body);
    assert!(down.body.contains("ResourceManager"), "{}", down.body);
}
