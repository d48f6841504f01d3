//! The NodeManager's web services with real clients: the stock Hadoop 3.3.4
//! `yarn logs` reading a running application's logs from the NM (through the
//! container reports of the RM), `yarn container -status` showing the log
//! URL, and a GET of the link shape Spark's executor log links use.
//!
//! Without the client jars (integration/setup-clients.sh) the tests print
//! `SKIP:` and pass, except under CI, where they fail.

mod web_http;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::Value;
use spindle_integration::cli::{parse_report, report_value, NodeList};
use spindle_integration::logs::{minicluster_jar, yarn_logs};
use spindle_integration::{
    AppSubmission, Cluster, HadoopClients, HadoopConf, NodeManagerSpec, Standalone,
};
use web_http::{get, get_json};

const TIMEOUT: Duration = Duration::from_secs(90);
const POLL: Duration = Duration::from_millis(200);

const OUT_MARK: &str = "spindle-web-nm-stdout-marker";
const ERR_MARK: &str = "spindle-web-nm-stderr-marker";

fn nm_web(cluster: &Cluster) -> SocketAddr {
    let nm = cluster.nodemanager(0);
    SocketAddr::new(nm.host(), nm.web_port())
}

/// Polls `f` until it returns `Some`, panicking with `what` after `TIMEOUT`.
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

fn as_list(v: &Value) -> Vec<Value> {
    match v {
        Value::Array(items) => items.clone(),
        Value::Null => Vec::new(),
        other => vec![other.clone()],
    }
}

#[test]
fn yarn_logs_reads_a_running_applications_logs_from_the_nodemanager() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let Some(jettison) = minicluster_jar() else {
        return;
    };
    let cluster = match Cluster::builder().nodemanagers(1).start(&clients) {
        Ok(c) => c,
        Err(e) => panic!("the spindle cluster did not start: {e:#}"),
    };
    let web = nm_web(&cluster);

    // The node's own description.
    let info = get_json(web, "/ws/v1/node/info");
    let node_id = info["nodeInfo"]["id"].as_str().expect("id").to_string();
    assert!(cluster.nodemanager(0).is_node_id(&node_id), "{info}");
    assert_eq!(info["nodeInfo"]["totalPmemAllocatedContainersMB"], 4096);
    assert_eq!(get_json(web, "/ws/v1/node")["nodeInfo"]["id"], node_id);

    // An AM that writes to both logs and keeps running.
    let command = format!(
        "(echo {OUT_MARK}; echo {ERR_MARK} 1>&2; exec sleep 600) 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr"
    );
    let app = cluster
        .submit_app(&AppSubmission::new("spindle-it-web-nm", command))
        .unwrap_or_else(|e| panic!("submit: {e:#}\n{}", cluster.log_report()));

    // The NM serves the running container, its application and its logs.
    let container = wait(&cluster, "the AM container running on the node", || {
        let v = get_json(web, "/ws/v1/node/containers");
        as_list(&v["containers"]["container"])
            .into_iter()
            .find(|c| {
                c["state"] == "RUNNING"
                    && c["id"].as_str().is_some_and(|id| id.contains(&app[12..]))
            })
    });
    let cid = container["id"].as_str().expect("container id").to_string();
    let user = container["user"].as_str().expect("user").to_string();
    assert_eq!(container["nodeId"], node_id);
    assert_eq!(
        container["containerLogsLink"],
        format!(
            "http://{node_host}:{}/node/containerlogs/{cid}/{user}",
            web.port(),
            node_host = node_id.split(':').next().unwrap_or_default()
        ),
    );
    let apps = get_json(web, "/ws/v1/node/apps");
    let listed = as_list(&apps["apps"]["app"]);
    assert!(
        listed.iter().any(|a| a["id"] == app.as_str()
            && a["state"] == "RUNNING"
            && a["user"] == user.as_str()),
        "{apps}"
    );
    let one = get_json(web, &format!("/ws/v1/node/apps/{app}"));
    assert_eq!(one["app"]["containerids"][0], cid.as_str(), "{one}");
    assert!(
        as_list(
            &get_json(web, &format!("/ws/v1/node/apps?user={user}&state=RUNNING"))["apps"]["app"]
        )
        .len()
            == 1
    );
    assert!(as_list(&get_json(web, "/ws/v1/node/apps?user=nobody-here")["apps"]["app"]).is_empty());
    assert_eq!(get(web, "/ws/v1/node/apps?state=BOGUS").status, 400);

    // The files are there once the shell has written them.
    wait(&cluster, "both markers in the NM's log files", || {
        let out = get(web, &format!("/ws/v1/node/containerlogs/{cid}/stdout"));
        let err = get(web, &format!("/ws/v1/node/containers/{cid}/logs/stderr"));
        (out.status == 200 && out.text().contains(OUT_MARK) && err.text().contains(ERR_MARK))
            .then_some(())
    });
    let list = get_json(web, &format!("/ws/v1/node/containers/{cid}/logs"));
    let infos = as_list(&list["containerLogsInfo"]);
    assert_eq!(infos[0]["logAggregationType"], "LOCAL", "{list}");
    let files: Vec<String> = as_list(&infos[0]["containerLogInfo"])
        .iter()
        .filter_map(|f| f["fileName"].as_str().map(str::to_string))
        .collect();
    assert!(
        files.contains(&"stdout".to_string()) && files.contains(&"stderr".to_string()),
        "{list}"
    );

    // `size`: the last bytes only.
    let tail = get(
        web,
        &format!("/ws/v1/node/containerlogs/{cid}/stdout?size=-7"),
    );
    assert_eq!(tail.status, 200, "{tail}");
    assert!(tail.text().contains("LogContents:\nmarker\n"), "{tail}");
    assert!(
        tail.text()
            .contains(&format!("Container: {cid} on {node_id}")),
        "{tail}"
    );

    // The stock CLI: the whole application, then one container and one file.
    let out = yarn_logs(&cluster, &jettison, &["-applicationId", app.as_str()]);
    out.assert_success();
    for needle in [
        OUT_MARK,
        ERR_MARK,
        "LogAggregationType: LOCAL",
        "LogType:stderr",
    ] {
        out.assert_stdout_contains(needle);
    }
    out.assert_stdout_contains(&format!("Container: {cid} on {node_id}"));
    let out = yarn_logs(
        &cluster,
        &jettison,
        &["-containerId", cid.as_str(), "-log_files", "stderr"],
    );
    out.assert_success().assert_stdout_contains(ERR_MARK);
    assert!(
        !out.stdout.contains(OUT_MARK),
        "only stderr was asked for:\n{out}"
    );

    // The RM's container report links to the NM's log page.
    let out = cluster.yarn(["container", "-status", cid.as_str()]);
    out.assert_success();
    let report = parse_report(&out.stdout);
    let http = format!(
        "http://{}:{}",
        node_id.split(':').next().unwrap_or_default(),
        web.port()
    );
    assert_eq!(
        report_value(&report, "NodeHttpAddress"),
        Some(http.as_str()),
        "{out}"
    );
    let log_url = format!("{http}/node/containerlogs/{cid}/{user}");
    assert_eq!(
        report_value(&report, "LOG-URL"),
        Some(log_url.as_str()),
        "{out}"
    );

    // Spark's executor log links: `<logUrl>/stderr?start=-4096`.
    let page = get(
        web,
        &format!("/node/containerlogs/{cid}/{user}/stderr?start=-4096"),
    );
    assert_eq!(page.status, 200, "{page}");
    assert!(
        page.header("content-type")
            .is_some_and(|t| t.starts_with("text/html")),
        "{page}"
    );
    assert!(page.text().contains(ERR_MARK), "{page}");
    let listing = get(web, &format!("/node/containerlogs/{cid}/{user}"));
    assert_eq!(listing.status, 200, "{listing}");
    assert!(
        listing.text().contains(&format!(
            "/node/containerlogs/{cid}/{user}/stderr/?start=-4096"
        )),
        "{listing}"
    );

    // Bad input: 4xx, never a file outside the container's log dir.
    for (path, status) in [
        (
            format!("/ws/v1/node/containerlogs/{cid}/..%2F..%2F..%2Fetc%2Fpasswd"),
            400,
        ),
        (
            format!("/ws/v1/node/containerlogs/{cid}/%2Fetc%2Fpasswd"),
            400,
        ),
        (format!("/ws/v1/node/containerlogs/{cid}/.."), 400),
        (
            format!("/ws/v1/node/containers/{cid}/logs/nonexistent"),
            404,
        ),
        (
            "/ws/v1/node/containerlogs/container_1_0001_01_000001/stderr".to_string(),
            404,
        ),
        (
            "/ws/v1/node/containerlogs/not-a-container/stderr".to_string(),
            400,
        ),
        ("/ws/v1/node/containers/not-a-container".to_string(), 400),
        (
            "/ws/v1/node/containers/container_1_0001_01_000001".to_string(),
            404,
        ),
        ("/ws/v1/node/apps/application_1_0001".to_string(), 404),
        (
            format!("/ws/v1/node/containerlogs/{cid}/stdout?size=abc"),
            400,
        ),
        (
            format!("/ws/v1/node/containerlogs/{cid}/stdout?format=pdf"),
            400,
        ),
        (
            format!("/node/containerlogs/{cid}/{user}/..%2F..%2Fstdout"),
            400,
        ),
        (
            format!("/node/containerlogs/{cid}/{user}/stderr?start=x"),
            400,
        ),
        (
            "/node/containerlogs/container_1_0001_01_000001/x/stderr".to_string(),
            404,
        ),
    ] {
        let r = get(web, &path);
        assert_eq!(r.status, status, "GET {path}: {r}");
        assert!(!r.text().contains("root:"), "GET {path}: {r}");
    }
    let err = get(web, "/ws/v1/node/containers/container_1_0001_01_000001");
    let json: Value = serde_json::from_slice(&err.body).expect("error JSON");
    assert_eq!(
        json["RemoteException"]["exception"], "NotFoundException",
        "{err}"
    );

    // The node keeps serving.
    assert_eq!(get(web, "/ws/v1/node/info").status, 200);
    cluster
        .yarn(["application", "-kill", app.as_str()])
        .assert_success();
}

#[test]
fn nodemanager_web_port_zero_is_reported_as_bound() {
    // A NodeManager configured with port 0 reports the port it bound: the
    // RM's node report names it, and the node answers there.
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let mut spec = NodeManagerSpec::default();
    spec.properties.set(
        "yarn.nodemanager.webapp.address",
        "${yarn.nodemanager.hostname}:0",
    );
    let cluster = match Cluster::builder().nodemanager(spec).start(&clients) {
        Ok(c) => c,
        Err(e) => panic!("the spindle cluster did not start: {e:#}"),
    };
    let row = wait(&cluster, "a RUNNING node in `yarn node -list`", || {
        let out = cluster.yarn(["node", "-list"]);
        let list = NodeList::parse(&out.stdout).ok()?;
        list.nodes.into_iter().find(|n| n.state == "RUNNING")
    });
    let web: SocketAddr = row
        .http_address
        .parse()
        .unwrap_or_else(|e| panic!("{e}: {row:?}"));
    assert_ne!(web.port(), 0, "{row:?}");
    assert_eq!(web.ip(), cluster.nodemanager(0).host(), "{row:?}");
    let info = get_json(web, "/ws/v1/node/info");
    assert_eq!(info["nodeInfo"]["id"], row.node_id.as_str(), "{info}");
}

#[test]
fn standalone_prints_the_nodemanager_web_address_it_serves() {
    // Standalone moves only its ports: the NM's web server binds a free one
    // (not Hadoop's 8042) and standalone prints it.
    if HadoopClients::for_tests().is_none() {
        return;
    }
    let standalone = match Standalone::start(&HadoopConf::new()) {
        Ok(s) => s,
        Err(e) => panic!("standalone did not start: {e:#}"),
    };
    let web = standalone.nm_web_address();
    assert!(web.ip().is_loopback(), "{web}");
    assert_ne!(web.port(), 8042);
    let info = get_json(web, "/ws/v1/node/info");
    assert!(
        info["nodeInfo"]["id"]
            .as_str()
            .is_some_and(|id| id.starts_with(&web.ip().to_string())),
        "{info}\n{}",
        standalone.log_tail()
    );
}
