//! The ResourceManager's REST API (`/ws/v1/cluster/...`) read by real clients: the
//! PyPI `yarn-api-client` library (what monitoring scripts and notebooks use) reads
//! info, metrics, the scheduler, applications with Hadoop's filters, one
//! application, its attempts and containers, nodes and application statistics
//! against a Spindle RM and NodeManager; XML comes back for `Accept:
//! application/xml`; bad input (malformed ids, a huge `limit`, unknown states and
//! paths, bytes that are not UTF-8) is a 4xx with Hadoop's error JSON and the server
//! keeps answering; the stock `yarn top` reads the RM's start time from
//! `/ws/v1/cluster/info`.
//!
//! The applications are `sleep` AMs submitted with Hadoop's own YarnClient: they never
//! register, so they stay ACCEPTED with their AM container allocated, which is what
//! the reads need. With `yarn.acl.enable` a caller naming another user
//! (`user.name=mallory`) sees an application with Hadoop's hidden fields.
//!
//! Without the client jars (integration/setup-clients.sh) or the Python packages
//! (integration/setup-pip.sh web) the tests print `SKIP:` and pass, except under CI.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use spindle_integration::clients::{integration_dir, running_in_ci};
use spindle_integration::{wait_until, AppSubmission, Cluster, HadoopClients, HdfsJars};

const TIMEOUT: Duration = Duration::from_secs(90);
const POLL: Duration = Duration::from_millis(300);

/// One HTTP reply.
#[derive(Debug)]
struct Reply {
    status: u16,
    content_type: String,
    body: String,
}

impl Reply {
    fn json(&self) -> Value {
        match serde_json::from_str(&self.body) {
            Ok(v) => v,
            Err(e) => panic!("not JSON ({e}): {self:?}"),
        }
    }
}

/// `GET <target>` (sent byte for byte, so it may hold what a URL may not) with
/// `Accept: accept`.
fn get_raw(addr: SocketAddr, target: &[u8], accept: &str) -> Reply {
    let mut stream = TcpStream::connect(addr).expect("connect to the RM's web address");
    stream
        .set_read_timeout(Some(TIMEOUT))
        .expect("read timeout");
    let mut request = b"GET ".to_vec();
    request.extend_from_slice(target);
    request.extend_from_slice(
        format!(" HTTP/1.1\r\nHost: {addr}\r\nAccept: {accept}\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    );
    stream.write_all(&request).expect("send the request");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read the reply");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    let header = |name: &str| {
        head.lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.trim()
                    .eq_ignore_ascii_case(name)
                    .then(|| v.trim().to_string())
            })
            .unwrap_or_default()
    };
    let body = if header("transfer-encoding").eq_ignore_ascii_case("chunked") {
        dechunk(body)
    } else {
        body.to_string()
    };
    Reply {
        status,
        content_type: header("content-type"),
        body,
    }
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

fn get(addr: SocketAddr, path: &str) -> Reply {
    get_raw(addr, path.as_bytes(), "application/json")
}

fn get_xml(addr: SocketAddr, path: &str) -> Reply {
    get_raw(addr, path.as_bytes(), "application/xml")
}

/// The directory `integration/<script> <name>` (setup-pip.sh, setup-maven.sh) prints
/// last, or `None` (SKIP) outside CI when it fails.
fn setup(script: &str, name: &str) -> Option<PathBuf> {
    let out = Command::new("bash")
        .arg(integration_dir().join(script))
        .arg(name)
        .output();
    let dir = match &out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout)
            .lines()
            .last()
            .map(|l| PathBuf::from(l.trim())),
        _ => None,
    };
    match dir {
        Some(d) => Some(d),
        None if running_in_ci() => panic!("integration/{script} {name} failed: {out:?}"),
        None => {
            eprintln!("SKIP: integration/{script} {name} failed: {out:?}");
            None
        }
    }
}

/// The PyPI packages of `integration/pip/web` (yarn-api-client).
fn python_path() -> Option<PathBuf> {
    setup("setup-pip.sh", "web")
}

/// Runs `integration/python/rest_client.py <url> <args...>` and parses what it prints.
fn rest_client(python_path: &PathBuf, addr: SocketAddr, args: &[&str]) -> Value {
    let script = integration_dir().join("python").join("rest_client.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(format!("http://{addr}"))
        .args(args)
        .env("PYTHONPATH", python_path)
        .stdin(Stdio::null())
        .output()
        .expect("run python3");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "rest_client.py failed:\n{stdout}\n{stderr}"
    );
    match serde_json::from_str(stdout.trim()) {
        Ok(v) => v,
        Err(e) => panic!("rest_client.py printed no JSON ({e}):\n{stdout}\n{stderr}"),
    }
}

fn property(name: &str, value: &str) -> String {
    format!("  <property><name>{name}</name><value>{value}</value></property>\n")
}

/// One leaf, `default`, open to every submitter; nobody administers the queues, so
/// only owners and administrators see an application in full.
fn capacity_scheduler_xml() -> String {
    let mut xml = String::from("<?xml version=\"1.0\"?>\n<configuration>\n");
    for (name, value) in [
        ("root.queues", "default"),
        ("root.default.capacity", "100"),
        ("root.acl_submit_applications", " "),
        ("root.acl_administer_queue", " "),
        ("root.default.acl_submit_applications", "*"),
        ("root.default.acl_administer_queue", " "),
    ] {
        xml.push_str(&property(&format!("yarn.scheduler.capacity.{name}"), value));
    }
    xml.push_str("</configuration>\n");
    xml
}

#[track_caller]
fn submit(cluster: &Cluster, app: &AppSubmission) -> String {
    match cluster.submit_app(app) {
        Ok(id) => id,
        Err(e) => panic!("submission failed: {e:#}\n{}", cluster.log_report()),
    }
}

fn apps_of(v: &Value) -> Vec<Value> {
    v["apps"]["app"].as_array().cloned().unwrap_or_default()
}

fn ids_of(v: &Value) -> Vec<String> {
    apps_of(v)
        .iter()
        .filter_map(|a| a["id"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn rest_api_serves_a_capacity_cluster_to_yarn_api_client() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(pypath) = python_path() else {
        return;
    };
    let cluster = match Cluster::builder()
        .nodemanagers(1)
        .rm_property("yarn.acl.enable", "true")
        // Anonymous requests act as Hadoop's static web user, dr.who: an administrator
        // here, so yarn-api-client (which names no user) sees everything, and
        // `user.name=mallory` shows what ACLs hide.
        .rm_property("yarn.admin.acl", "nobody-admin,dr.who")
        .conf_file("capacity-scheduler.xml", capacity_scheduler_xml())
        .start(&clients)
    {
        Ok(c) => c,
        Err(e) => panic!("the spindle cluster did not start: {e:#}"),
    };
    let web = cluster.rm().webapp;

    let running = submit(
        &cluster,
        &AppSubmission::new("spindle-it-web-sleeper", "sleep 600").user("alice"),
    );
    let killed = submit(
        &cluster,
        &AppSubmission::new("spindle-it-web-killed", "sleep 600").user("bob"),
    );
    let kill = cluster
        .yarn_command()
        .env("HADOOP_USER_NAME", "bob")
        .run(["application", "-kill", &killed])
        .expect("run yarn application -kill");
    kill.assert_success();
    // The sleeper's AM container is allocated once the app shows its master node.
    let path = format!("/ws/v1/cluster/apps/{running}");
    assert!(
        wait_until(TIMEOUT, POLL, || {
            get(web, &path).json()["app"].get("masterNodeId").is_some()
        }),
        "the AM container of {running} was never allocated:\n{}",
        cluster.log_report()
    );
    let killed_path = format!("/ws/v1/cluster/apps/{killed}");
    assert!(
        wait_until(TIMEOUT, POLL, || {
            get(web, &killed_path).json()["app"]["state"] == "KILLED"
        }),
        "{killed} was never KILLED"
    );

    // The killed application's AM container is gone from the node once the
    // NodeManager reports it.
    assert!(
        wait_until(TIMEOUT, POLL, || {
            get(web, "/ws/v1/cluster/nodes").json()["nodes"]["node"][0]["numContainers"] == 1
        }),
        "the node never showed one container: {:?}\n{}",
        get(web, "/ws/v1/cluster/nodes"),
        cluster.log_report()
    );

    let out = rest_client(&pypath, web, &["cluster", &running, &killed]);

    // Cluster info and metrics.
    let info = &out["info"]["clusterInfo"];
    assert!(info["startedOn"].as_i64().unwrap_or(0) > 0, "{info}");
    assert_eq!(info["id"], info["startedOn"], "{info}");
    assert_eq!(info["state"], "STARTED", "{info}");
    assert_eq!(info["haState"], "ACTIVE", "{info}");
    assert_eq!(
        info["haZooKeeperConnectionState"],
        "ResourceManager HA is not enabled."
    );
    let m = &out["metrics"]["clusterMetrics"];
    assert_eq!(m["appsSubmitted"], 2, "{m}");
    assert_eq!(m["appsKilled"], 1, "{m}");
    assert_eq!(m["appsPending"], 1, "{m}");
    assert_eq!(m["activeNodes"], 1, "{m}");
    assert_eq!(m["totalNodes"], 1, "{m}");
    assert_eq!(m["totalMB"], 4096, "{m}");
    assert_eq!(m["containersAllocated"], 1, "{m}");
    assert_eq!(m["allocatedMB"], 256, "{m}");
    assert_eq!(m["availableMB"], 4096 - 256, "{m}");

    // The capacity scheduler's queue tree, with alice's usage in default.
    let s = &out["scheduler"]["scheduler"]["schedulerInfo"];
    assert_eq!(s["type"], "capacityScheduler", "{s}");
    assert_eq!(s["queueName"], "root", "{s}");
    let queues = s["queues"]["queue"].as_array().expect("root's queues");
    assert_eq!(queues.len(), 1, "{s}");
    let default = &queues[0];
    assert_eq!(
        default["type"], "capacitySchedulerLeafQueueInfo",
        "{default}"
    );
    assert_eq!(default["queueName"], "default", "{default}");
    assert_eq!(default["queuePath"], "root.default", "{default}");
    assert_eq!(default["capacity"], 100.0, "{default}");
    assert_eq!(default["resourcesUsed"]["memory"], 256, "{default}");
    assert_eq!(default["numApplications"], 1, "{default}");
    let users = default["users"]["user"]
        .as_array()
        .expect("default's users");
    assert_eq!(users.len(), 1, "{default}");
    assert_eq!(users[0]["username"], "alice", "{default}");
    assert_eq!(users[0]["resourcesUsed"]["memory"], 256, "{default}");

    // Applications, with Hadoop's filters.
    let mut all = ids_of(&out["apps"]);
    all.sort();
    let mut want = vec![running.clone(), killed.clone()];
    want.sort();
    assert_eq!(all, want, "{}", out["apps"]);
    assert_eq!(ids_of(&out["apps_accepted"]), vec![running.clone()]);
    assert_eq!(ids_of(&out["apps_killed"]), vec![killed.clone()]);
    assert_eq!(out["apps_finished"], serde_json::json!({"apps": null}));
    assert_eq!(ids_of(&out["apps_bob"]), vec![killed.clone()]);
    assert_eq!(ids_of(&out["apps_limit"]).len(), 1);
    assert_eq!(ids_of(&out["apps_type"]).len(), 2);
    assert_eq!(out["apps_other_type"], serde_json::json!({"apps": null}));
    assert_eq!(ids_of(&out["apps_final_killed"]), vec![killed.clone()]);

    // One application (asked anonymously: everything shown, as Hadoop's hasAccess).
    let app = &out["app"]["app"];
    assert_eq!(app["id"], running.as_str(), "{app}");
    assert_eq!(app["user"], "alice", "{app}");
    assert_eq!(app["name"], "spindle-it-web-sleeper", "{app}");
    assert_eq!(app["queue"], "default", "{app}");
    assert_eq!(app["state"], "ACCEPTED", "{app}");
    assert_eq!(app["finalStatus"], "UNDEFINED", "{app}");
    assert_eq!(app["trackingUI"], "UNASSIGNED", "{app}");
    assert_eq!(app["applicationType"], "YARN", "{app}");
    assert_eq!(app["allocatedMB"], 256, "{app}");
    assert_eq!(app["runningContainers"], 1, "{app}");
    assert!(app["startedTime"].as_i64().unwrap_or(0) > 0, "{app}");
    let node_id = app["masterNodeId"]
        .as_str()
        .expect("masterNodeId")
        .to_string();
    assert!(cluster.nodemanager(0).is_node_id(&node_id), "{app}");
    let logs = app["amContainerLogs"].as_str().expect("amContainerLogs");
    assert!(
        logs.starts_with("http://") && logs.contains("/node/containerlogs/container_"),
        "{app}"
    );
    assert!(logs.ends_with("/alice"), "{app}");

    // Its attempts, the attempt and the AM container.
    let attempts = out["attempts"]["appAttempts"]["appAttempt"]
        .as_array()
        .expect("attempts");
    assert_eq!(attempts.len(), 1, "{}", out["attempts"]);
    let attempt = &attempts[0];
    assert_eq!(attempt["id"], 1, "{attempt}");
    assert_eq!(attempt["nodeId"], node_id.as_str(), "{attempt}");
    let attempt_id = attempt["appAttemptId"].as_str().expect("appAttemptId");
    let am_container = attempt["containerId"].as_str().expect("containerId");
    assert!(am_container.ends_with("_000001"), "{attempt}");
    let one = &out["attempt"]["appAttempt"];
    assert_eq!(one["appAttemptId"], attempt_id, "{one}");
    assert_eq!(one["amContainerId"], am_container, "{one}");
    let containers = out["containers"]["containers"]["container"]
        .as_array()
        .expect("containers");
    assert_eq!(containers.len(), 1, "{}", out["containers"]);
    assert_eq!(containers[0]["containerId"], am_container);
    assert_eq!(containers[0]["allocatedMB"], 256);
    assert_eq!(containers[0]["assignedNodeId"], node_id.as_str());
    assert_eq!(out["state"], serde_json::json!({"state": "ACCEPTED"}));
    assert_eq!(out["queue"], serde_json::json!({"queue": "default"}));
    assert_eq!(out["priority"], serde_json::json!({"priority": 0}));

    // Nodes.
    let nodes = out["nodes"]["nodes"]["node"].as_array().expect("nodes");
    assert_eq!(nodes.len(), 1, "{}", out["nodes"]);
    let node = &out["node"]["node"];
    assert_eq!(node["id"], node_id.as_str(), "{node}");
    assert_eq!(node["state"], "RUNNING", "{node}");
    assert_eq!(node["usedMemoryMB"], 256, "{node}");
    assert_eq!(node["availMemoryMB"], 4096 - 256, "{node}");
    assert_eq!(node["numContainers"], 1, "{node}");
    assert_eq!(
        node["nodeHTTPAddress"],
        format!(
            "{}:{}",
            cluster.nodemanager(0).host(),
            cluster.nodemanager(0).web_port()
        )
        .as_str(),
        "{node}"
    );

    // Application statistics.
    let items = out["stats"]["appStatInfo"]["statItem"]
        .as_array()
        .expect("statItem");
    assert_eq!(items.len(), 8, "{}", out["stats"]);
    let count = |state: &str| {
        items
            .iter()
            .find(|i| i["state"] == state)
            .map(|i| i["count"].clone())
    };
    assert_eq!(count("ACCEPTED"), Some(1.into()));
    assert_eq!(count("KILLED"), Some(1.into()));
    assert_eq!(count("RUNNING"), Some(0.into()));
    assert_eq!(
        out["stats_killed_yarn"]["appStatInfo"]["statItem"],
        serde_json::json!([{"state": "KILLED", "type": "yarn", "count": 1}])
    );

    // The library's errors carry Hadoop's status and RemoteException.
    let malformed = out["malformed"].as_str().unwrap_or_default();
    assert!(
        malformed.contains("status: 400") && malformed.contains("BadRequestException"),
        "{malformed}"
    );
    let unknown = out["unknown"].as_str().unwrap_or_default();
    assert!(
        unknown.contains("status: 404")
            && unknown.contains("app with id: application_1_9999 not found"),
        "{unknown}"
    );

    // XML for Accept: application/xml, with JAXB's element names.
    for (path, start) in [
        ("/ws/v1/cluster/info", "<clusterInfo><id>"),
        (
            "/ws/v1/cluster/metrics",
            "<clusterMetrics><appsSubmitted>2<",
        ),
        ("/ws/v1/cluster/apps", "<apps><app><id>application_"),
        ("/ws/v1/cluster/nodes", "<nodes><node><rack>"),
        ("/ws/v1/cluster/apps?states=FINISHED", "<apps></apps>"),
    ] {
        let r = get_xml(web, path);
        assert_eq!(r.status, 200, "{path}: {r:?}");
        assert!(
            r.content_type.starts_with("application/xml"),
            "{path}: {r:?}"
        );
        assert!(
            r.body.starts_with("<?xml") && r.body.contains(start),
            "{path}: {r:?}"
        );
    }
    let r = get_xml(web, &format!("/ws/v1/cluster/apps/{running}/state"));
    assert!(
        r.body
            .ends_with("<appstate><state>ACCEPTED</state></appstate>"),
        "{r:?}"
    );
    let r = get_xml(web, "/ws/v1/cluster/apps/application_1_9999");
    assert_eq!(r.status, 404, "{r:?}");
    assert!(
        r.body
            .contains("<RemoteException><exception>NotFoundException</exception>"),
        "{r:?}"
    );

    // A caller without VIEW_APP sees the application with Hadoop's hidden fields;
    // its owner sees it in full.
    let as_mallory = get(web, &format!("{path}?user.name=mallory")).json();
    let hidden = &as_mallory["app"];
    assert_eq!(hidden["user"], "alice", "{hidden}");
    assert_eq!(hidden["startedTime"], 0, "{hidden}");
    assert!(hidden.get("masterNodeId").is_none(), "{hidden}");
    assert!(hidden.get("amContainerLogs").is_none(), "{hidden}");
    let as_alice = get(web, &format!("{path}?user.name=alice")).json();
    assert!(as_alice["app"].get("masterNodeId").is_some(), "{as_alice}");
    let attempts_as_mallory = get(
        web,
        &format!("/ws/v1/cluster/apps/{running}/appattempts?user.name=mallory"),
    )
    .json();
    assert_eq!(
        attempts_as_mallory["appAttempts"]["appAttempt"][0]["containerId"], "",
        "{attempts_as_mallory}"
    );
    let r = get(
        web,
        &format!("/ws/v1/cluster/apps/{running}/appattempts/{attempt_id}?user.name=mallory"),
    );
    assert_eq!(r.status, 403, "{r:?}");
    assert_eq!(
        r.json()["RemoteException"]["exception"],
        "ForbiddenException"
    );

    // Bad input: 4xx with Hadoop's error JSON, never a 5xx.
    let bad: &[(&[u8], u16, &str)] = &[
        (
            b"/ws/v1/cluster/apps/application_bogus",
            400,
            "BadRequestException",
        ),
        (
            b"/ws/v1/cluster/apps/bogus/appattempts",
            400,
            "Invalid ApplicationId prefix",
        ),
        (
            b"/ws/v1/cluster/apps/application_1_9999",
            404,
            "app with id: application_1_9999 not found",
        ),
        (
            b"/ws/v1/cluster/apps?limit=99999999999999999999",
            400,
            "limit value must be a number!",
        ),
        (
            b"/ws/v1/cluster/apps?limit=0",
            400,
            "limit value must be greater then 0",
        ),
        (
            b"/ws/v1/cluster/apps?states=bogus",
            400,
            "Invalid application-state bogus",
        ),
        (
            b"/ws/v1/cluster/apps?startedTimeBegin=-5",
            400,
            "startedTimeBegin must be greater than 0",
        ),
        (
            b"/ws/v1/cluster/apps?queue=nosuchqueue",
            400,
            "Unknown queue: nosuchqueue",
        ),
        (b"/ws/v1/cluster/nodes?states=bogus", 400, "NodeState.BOGUS"),
        (
            b"/ws/v1/cluster/nodes/nohost",
            400,
            "Invalid NodeId [nohost]",
        ),
        (
            b"/ws/v1/cluster/nodes/nohost:1",
            404,
            "nodeId, nohost:1, is not found",
        ),
        (
            b"/ws/v1/cluster/appstatistics?applicationTypes=a,b",
            400,
            "at most one applicationType",
        ),
        (b"/ws/v1/cluster/no/such/resource", 404, "NotFoundException"),
        (b"/ws/v1/cluster/apps/%ff%fe", 400, ""),
        (b"/ws/v1/cluster/apps?user.name=%ff", 400, ""),
        (b"/ws/v1/cluster/apps?states=%zz", 400, ""),
        (b"/ws/v1/cluster/apps/\xff\xfe/state", 400, ""),
    ];
    for (target, status, needle) in bad {
        let shown = String::from_utf8_lossy(target);
        let r = get_raw(web, target, "application/json");
        assert_eq!(r.status, *status, "{shown}: {r:?}");
        assert!(r.body.contains(needle), "{shown}: {r:?}");
        if !needle.is_empty() {
            assert!(r.body.contains("\"RemoteException\""), "{shown}: {r:?}");
        }
        // The server keeps answering.
        assert_eq!(
            get(web, "/ws/v1/cluster/metrics").status,
            200,
            "after {shown}"
        );
    }
}

/// The fair and FIFO schedulers' shapes of `/ws/v1/cluster/scheduler`, read by the
/// same client library.
#[test]
fn rest_api_shows_the_fair_and_fifo_schedulers() {
    let Some(pypath) = python_path() else {
        return;
    };
    for (class, kind) in [
        (
            "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fair.FairScheduler",
            "fairScheduler",
        ),
        (
            "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fifo.FifoScheduler",
            "fifoScheduler",
        ),
    ] {
        let cluster = match Cluster::builder()
            .nodemanagers(1)
            .rm_property("yarn.resourcemanager.scheduler.class", class)
            .start_without_clients()
        {
            Ok(c) => c,
            Err(e) => panic!("the spindle cluster did not start: {e:#}"),
        };
        let web = cluster.rm().webapp;
        assert!(
            wait_until(TIMEOUT, POLL, || {
                get(web, "/ws/v1/cluster/metrics").json()["clusterMetrics"]["activeNodes"] == 1
            }),
            "the NodeManager never registered:\n{}",
            cluster.log_report()
        );
        let out = rest_client(&pypath, web, &["scheduler"]);
        let s = &out["scheduler"]["scheduler"]["schedulerInfo"];
        assert_eq!(s["type"], kind, "{s}");
        match kind {
            "fairScheduler" => {
                let root = &s["rootQueue"];
                assert_eq!(root["queueName"], "root", "{s}");
                assert_eq!(root["clusterResources"]["memory"], 4096, "{s}");
                let children = root["childQueues"]["queue"].as_array().expect("children");
                assert!(
                    children.iter().any(|q| q["queueName"] == "root.default"
                        && q["type"] == "fairSchedulerLeafQueueInfo"),
                    "{s}"
                );
            }
            _ => {
                assert_eq!(s["qstate"], "RUNNING", "{s}");
                assert_eq!(s["totalNodeCapacity"], 4096, "{s}");
                assert_eq!(s["numNodes"], 1, "{s}");
                assert_eq!(s["usedNodeCapacity"], 0, "{s}");
            }
        }
    }
}

/// The stock `yarn top` reads the RM's start time from `/ws/v1/cluster/info` (and
/// logs "Could not fetch RM start time" when it cannot), then draws its screen; `q`
/// on its standard input ends it.
#[test]
fn yarn_top_reads_the_cluster_info() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    // TopCLI parses the JSON with the shaded Jettison of hadoop-client-minicluster,
    // which the client-api/runtime jars lack; the HDFS jars have it.
    let Some(hdfs_jars) = HdfsJars::for_tests() else {
        return;
    };
    let cluster = match Cluster::builder().nodemanagers(1).start(&clients) {
        Ok(c) => c,
        Err(e) => panic!("the spindle cluster did not start: {e:#}"),
    };
    let mut cmd = match cluster
        .yarn_command()
        .classpath(hdfs_jars.dir().join("hadoop-client-minicluster-3.3.4.jar"))
        .command(["top", "-cols", "200", "-rows", "40"])
    {
        Ok(c) => c,
        Err(e) => panic!("cannot build the yarn top command: {e:#}"),
    };
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start yarn top");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr_pipe = child.stderr.take().expect("stderr");
    let stderr_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr_pipe.read_to_string(&mut s);
        s
    });
    // Read until the screen's header shows, then press q.
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        let mut signalled = false;
        loop {
            match stdout.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    seen.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&seen).into_owned();
                    if !signalled && text.contains("Queue(s) Applications") {
                        signalled = true;
                        let _ = tx.send(text);
                    }
                }
            }
        }
        String::from_utf8_lossy(&seen).into_owned()
    });
    let screen = rx.recv_timeout(TIMEOUT);
    if let Some(stdin) = child.stdin.as_mut() {
        let _ = stdin.write_all(b"q\n");
        let _ = stdin.flush();
    }
    let exited = wait_until(TIMEOUT, POLL, || matches!(child.try_wait(), Ok(Some(_))));
    if !exited {
        let _ = child.kill();
    }
    let _ = child.wait();
    let all_stdout = reader.join().unwrap_or_default();
    let stderr = stderr_reader.join().unwrap_or_default();
    let screen = match screen {
        Ok(s) => s,
        Err(_) => panic!("yarn top never drew its screen:\n{all_stdout}\n{stderr}"),
    };
    assert!(exited, "yarn top did not end on q:\n{all_stdout}\n{stderr}");
    assert!(
        screen.contains("YARN top - ") && screen.contains(", up "),
        "{screen}"
    );
    assert!(
        !stderr.contains("Could not fetch RM start time"),
        "yarn top could not read /ws/v1/cluster/info:\n{stderr}"
    );
}
