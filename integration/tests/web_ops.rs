//! The RM's operations endpoints on a real cluster: `/jmx` beans and counts
//! after applications ran, `/prom` read by the Prometheus text parser from
//! PyPI (`prometheus_client`, installed by `integration/setup-pip.sh web`),
//! `/conf` with redaction, `/isActive`; on an HA pair the standby's
//! `/isActive` 405 and its redirect to the active RM.
//!
//! Without the client jars (integration/setup-clients.sh) the tests print
//! `SKIP:` and pass, except under CI, where they fail.

mod web_http;

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use spindle_integration::{AppSubmission, Cluster, HadoopClients};
use web_http::{get, get_json};

const TIMEOUT: Duration = Duration::from_secs(90);
const POLL: Duration = Duration::from_millis(200);

#[track_caller]
fn wait<T>(cluster: &Cluster, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Some(v) = f() {
            return v;
        }
        if Instant::now() >= deadline {
            panic!(
                "{what} did not happen within {TIMEOUT:?}\n{}",
                cluster.log_report()
            );
        }
        std::thread::sleep(POLL);
    }
}

/// The bean named `name` of a `/jmx` answer.
fn bean<'a>(jmx: &'a Value, name: &str) -> Option<&'a Value> {
    jmx["beans"].as_array()?.iter().find(|b| b["name"] == name)
}

/// `integration/setup-pip.sh web`'s directory (the last line it prints).
fn python_path() -> PathBuf {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("setup-pip.sh");
    let out = Command::new("bash")
        .arg(script)
        .arg("web")
        .stderr(Stdio::inherit())
        .output()
        .expect("running setup-pip.sh web");
    assert!(out.status.success(), "setup-pip.sh web failed");
    let text = String::from_utf8_lossy(&out.stdout);
    PathBuf::from(text.lines().last().unwrap_or_default().trim())
}

/// `/prom`'s text parsed by `prometheus_client.parser`: every sample as
/// `[name, labels, value]`.
fn parse_prometheus(text: &str) -> Vec<(String, serde_json::Map<String, Value>, f64)> {
    let code = r#"
import sys, json
from prometheus_client.parser import text_string_to_metric_families
out = []
for fam in text_string_to_metric_families(sys.stdin.read()):
    for s in fam.samples:
        out.append([s.name, s.labels, s.value])
print(json.dumps(out))
"#;
    let mut child = Command::new("python3")
        .arg("-c")
        .arg(code)
        .env("PYTHONPATH", python_path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("writing to the parser");
    let out = child.wait_with_output().expect("parser output");
    assert!(
        out.status.success(),
        "the Prometheus parser failed: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    let samples: Vec<(String, serde_json::Map<String, Value>, f64)> =
        serde_json::from_slice(&out.stdout).expect("parser JSON");
    samples
}

#[test]
fn jmx_prom_conf_and_is_active() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let cluster = match Cluster::builder()
        .nodemanagers(1)
        .rm_property("hadoop.prometheus.endpoint.enabled", true)
        .rm_property("spindle.test.db.password", "hunter2")
        .rm_property("spindle.test.visible", "shown")
        .start(&clients)
    {
        Ok(c) => c,
        Err(e) => panic!("the spindle cluster did not start: {e:#}"),
    };
    let web: SocketAddr = cluster.rm().webapp;
    const CLUSTER: &str = "Hadoop:service=ResourceManager,name=ClusterMetrics";
    const ROOT: &str = "Hadoop:service=ResourceManager,name=QueueMetrics,q0=root";
    const DEFAULT: &str = "Hadoop:service=ResourceManager,name=QueueMetrics,q0=root,q1=default";

    wait(&cluster, "NumActiveNMs = 1 in /jmx", || {
        let jmx = get_json(web, &format!("/jmx?qry={CLUSTER}"));
        (bean(&jmx, CLUSTER)?["NumActiveNMs"] == 1).then_some(())
    });

    // The launcher's DEBUG lines, off at the default INFO, on from now.
    let page = get(
        web,
        "/logLevel?log=spindle_rm::runtime::launcher&level=DEBUG",
    );
    assert!(
        page.text().contains("Effective Level: <b>DEBUG</b>"),
        "{page}"
    );

    // One application killed, one running.
    let killed = cluster
        .submit_app(&AppSubmission::new("spindle-it-ops-killed", "sleep 300"))
        .expect("submit");
    cluster
        .yarn(["application", "-kill", killed.as_str()])
        .assert_success();
    let running = cluster
        .submit_app(&AppSubmission::new("spindle-it-ops-running", "sleep 300"))
        .expect("submit");

    let jmx = wait(&cluster, "the queue counts in /jmx", || {
        let jmx = get_json(web, "/jmx");
        let q = bean(&jmx, DEFAULT)?;
        (q["AppsSubmitted"] == 2 && q["AppsKilled"] == 1).then_some(jmx)
    });
    // The level set above is in force: the RM logs its AM launches at DEBUG.
    wait(
        &cluster,
        "a DEBUG line of spindle_rm::runtime::launcher in the RM's log",
        || {
            cluster
                .log_report()
                .lines()
                .any(|l| l.contains("DEBUG") && l.contains("AM container started"))
                .then_some(())
        },
    );
    let cm = bean(&jmx, CLUSTER).expect("ClusterMetrics");
    assert_eq!(cm["modelerType"], "ClusterMetrics");
    assert_eq!(cm["tag.Context"], "yarn");
    assert_eq!(cm["NumLostNMs"], 0);
    let root = bean(&jmx, ROOT).expect("root queue");
    assert_eq!(root["AppsSubmitted"], 2, "{root}");
    assert_eq!(root["tag.Queue"], "root");
    let default = bean(&jmx, DEFAULT).expect("default queue");
    assert_eq!(default["modelerType"], "QueueMetrics,q0=root,q1=default");
    assert_eq!(default["AppsKilled"], 1, "{default}");
    assert!(default["AllocatedMB"].as_i64().is_some(), "{default}");
    let nm_info = bean(&jmx, "Hadoop:service=ResourceManager,name=RMNMInfo").expect("RMNMInfo");
    let live: Value =
        serde_json::from_str(nm_info["LiveNodeManagers"].as_str().expect("a JSON string"))
            .expect("LiveNodeManagers is JSON");
    assert_eq!(live.as_array().map(Vec::len), Some(1), "{live}");
    assert!(cluster
        .nodemanager(0)
        .is_node_id(live[0]["NodeId"].as_str().unwrap_or_default()));
    let jvm = bean(&jmx, "Hadoop:service=ResourceManager,name=JvmMetrics").expect("JvmMetrics");
    assert!(
        jvm["MemHeapUsedM"].as_f64().is_some_and(|m| m > 0.0),
        "{jvm}"
    );

    // qry patterns and get.
    let queues = get_json(
        web,
        "/jmx?qry=Hadoop:service=ResourceManager,name=QueueMetrics,*",
    );
    assert_eq!(
        queues["beans"].as_array().map(Vec::len),
        Some(2),
        "{queues}"
    );
    let one = get_json(web, &format!("/jmx?get={CLUSTER}::NumActiveNMs"));
    assert_eq!(one["beans"][0]["NumActiveNMs"], 1, "{one}");
    assert!(one["beans"][0].get("NumLostNMs").is_none(), "{one}");
    assert_eq!(get(web, "/jmx?qry=not-an-object-name").status, 400);
    assert_eq!(get(web, &format!("/jmx?get={CLUSTER}::Nope")).status, 404);

    // /prom, read by the Prometheus client library's parser (which names
    // a counter's samples `<family>_total`).
    let prom = get(web, "/prom");
    assert_eq!(prom.status, 200, "{prom}");
    let samples = parse_prometheus(&prom.text());
    let find = |name: &str, label: (&str, &str)| {
        samples
            .iter()
            .find(|(n, l, _)| n == name && l.get(label.0).and_then(Value::as_str) == Some(label.1))
            .map(|(_, _, v)| *v)
    };
    assert_eq!(
        find("cluster_metrics_num_active_n_ms", ("context", "yarn")),
        Some(1.0),
        "{prom}"
    );
    assert_eq!(
        find("queue_metrics_apps_killed_total", ("queue", "root.default")),
        Some(1.0),
        "{prom}"
    );
    assert_eq!(
        find("queue_metrics_apps_submitted_total", ("queue", "root")),
        Some(2.0),
        "{prom}"
    );

    // /conf: XML by default, JSON on request, one key, secrets redacted.
    let xml = get(web, "/conf");
    assert_eq!(xml.status, 200);
    assert!(
        xml.text()
            .contains("<name>spindle.test.visible</name><value>shown</value>"),
        "{xml}"
    );
    assert!(!xml.text().contains("hunter2"), "a secret in /conf");
    let one = get_json(web, "/conf?name=spindle.test.visible&format=json");
    assert_eq!(one["property"]["value"], "shown", "{one}");
    assert_eq!(one["property"]["key"], "spindle.test.visible");
    let secret = get_json(web, "/conf?name=spindle.test.db.password&format=json");
    assert_eq!(secret["property"]["value"], "<redacted>", "{secret}");
    assert_eq!(get(web, "/conf?name=no.such.key").status, 404);
    assert_eq!(get(web, "/conf?format=yaml").status, 400);

    // /logLevel: a tracing target's level, shown and set at run time.
    let page = get(web, "/logLevel?log=spindle_rm::web");
    assert_eq!(page.status, 200, "{page}");
    assert!(
        page.text()
            .contains("<!-- OUTPUT -->Effective Level: <b>INFO</b>"),
        "{page}"
    );
    let page = get(web, "/logLevel?log=spindle_rm::web&level=DEBUG");
    assert!(
        page.text()
            .contains("Setting Level to <strong>DEBUG</strong>"),
        "{page}"
    );
    let page = get(web, "/logLevel?log=spindle_rm::web::ops");
    assert!(
        page.text().contains("Effective Level: <b>DEBUG</b>"),
        "{page}"
    );
    let page = get(web, "/logLevel?log=spindle_rm");
    assert!(
        page.text().contains("Effective Level: <b>INFO</b>"),
        "{page}"
    );
    let page = get(web, "/logLevel?log=spindle_rm&level=LOUD");
    assert!(page.text().contains("Bad level : LOUD"), "{page}");
    assert_eq!(get(web, "/logLevel?log=a%3Db%2Cc").status, 400);

    let active = get(web, "/isActive");
    assert_eq!(
        (active.status, active.text().as_str()),
        (200, "I am Active!")
    );

    cluster
        .yarn(["application", "-kill", running.as_str()])
        .assert_success();
}

#[test]
fn prom_is_off_unless_enabled() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let cluster = match Cluster::builder().start(&clients) {
        Ok(c) => c,
        Err(e) => panic!("the spindle cluster did not start: {e:#}"),
    };
    let web = cluster.rm().webapp;
    assert_eq!(get(web, "/prom").status, 404);
    // /logLevel is for administrators only with hadoop.security.authorization
    // on (Hadoop's HttpServer2.hasAdministratorAccess; kerberos_cluster.rs);
    // off, it answers everyone, as Hadoop's does.
    let anyone = get(web, "/logLevel?log=spindle_rm&user.name=not-an-admin");
    assert_eq!(anyone.status, 200, "{anyone}");
}

#[test]
fn a_standby_rm_redirects_to_the_active_one() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let cluster = match Cluster::builder()
        .ha_pair(false)
        .rm_property("yarn.resourcemanager.recovery.enabled", true)
        .start(&clients)
    {
        Ok(c) => c,
        Err(e) => panic!("the HA pair did not start: {e:#}"),
    };
    let rm1 = cluster.rm_addresses("rm1").expect("rm1").webapp;
    let rm2 = cluster.rm_addresses("rm2").expect("rm2").webapp;

    // Both standby: no active RM to send anyone to.
    let r = get(rm1, "/ws/v1/cluster/apps");
    assert_eq!(r.status, 307, "{r}");
    assert!(
        r.text()
            .contains("Can not find any active RM. Will retry in next 5 seconds."),
        "{r}"
    );
    assert!(
        r.header("refresh")
            .is_some_and(|v| v.contains("next.refresh.interval=1")),
        "{r}"
    );
    let r = get(rm1, "/isActive");
    assert_eq!((r.status, r.text().as_str()), (405, "I am not Active!"));

    cluster
        .yarn(["rmadmin", "-transitionToActive", "rm1"])
        .assert_success();

    let r = get(rm1, "/isActive");
    assert_eq!((r.status, r.text().as_str()), (200, "I am Active!"));
    let r = get(rm2, "/isActive");
    assert_eq!((r.status, r.text().as_str()), (405, "I am not Active!"));
    let r = get(rm2, "/ws/v1/cluster/apps?states=RUNNING");
    assert_eq!(r.status, 307, "{r}");
    let location = format!("http://{rm1}/ws/v1/cluster/apps?states=RUNNING");
    assert_eq!(r.header("location"), Some(location.as_str()), "{r}");
    assert!(
        r.text().contains(&format!(
            "This is standby RM. The redirect url is: {location}"
        )),
        "{r}"
    );
    // What a standby serves itself.
    assert_eq!(get(rm2, "/jmx").status, 200);
    assert_eq!(get(rm2, "/conf").status, 200);
}
