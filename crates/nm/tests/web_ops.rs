//! The NodeManager's operations pages on its web port: `/jmx` with
//! Hadoop's `NodeManagerMetrics` gauges from the containers the node runs,
//! `/conf` redacted, and `/stacks`.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;
use spindle_nm::ContainerPhase;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

mod common;
use common::{container, user};

async fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let exchange = async {
        let mut s = TcpStream::connect(addr).await.expect("connect to the NM");
        let req = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n");
        s.write_all(req.as_bytes()).await.expect("send");
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).await.expect("read the answer");
        raw
    };
    let raw = tokio::time::timeout(Duration::from_secs(60), exchange)
        .await
        .expect("the NM answers");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

fn metrics(body: &str) -> Value {
    let v: Value = serde_json::from_str(body).expect("JSON");
    v["beans"][0].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jmx_conf_and_stacks_on_the_nm_web_port() {
    let (node, _tmp) = common::start_node(
        |conf| {
            conf.set("spindle.test.password", "hunter2");
        },
        None,
    )
    .await;
    let web = node.nm.web_addr();
    let qry = "/jmx?qry=Hadoop:service=NodeManager,name=NodeManagerMetrics";

    let (status, body) = get(web, qry).await;
    assert_eq!(status, 200, "{body}");
    let idle = metrics(&body);
    assert_eq!(
        idle["name"], "Hadoop:service=NodeManager,name=NodeManagerMetrics",
        "{body}"
    );
    assert_eq!(idle["ContainersRunning"], 0, "{body}");
    assert_eq!(idle["AllocatedContainers"], 0, "{body}");

    // One 256 MB container running: Hadoop's gauges count it.
    let id = container(1, 2);
    node.start_command(id, &user(), "sleep 30");
    node.wait_phase(&id, ContainerPhase::Running).await;
    let (status, body) = get(web, qry).await;
    assert_eq!(status, 200, "{body}");
    let busy = metrics(&body);
    assert_eq!(busy["ContainersRunning"], 1, "{body}");
    assert_eq!(busy["AllocatedContainers"], 1, "{body}");
    assert_eq!(busy["AllocatedGB"], 1, "{body}");
    assert_eq!(busy["AllocatedVCores"], 1, "{body}");
    assert_eq!(
        busy["AvailableVCores"].as_i64(),
        idle["AvailableVCores"].as_i64().map(|v| v - 1),
        "{body}"
    );

    // The process's own beans, and a query naming nothing.
    let (status, body) = get(web, "/jmx?qry=Hadoop:service=NodeManager,name=JvmMetrics").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(metrics(&body)["tag.ProcessName"], "NodeManager", "{body}");
    let (status, body) = get(web, "/jmx?qry=Hadoop:service=Nothing,name=X").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body.trim(), r#"{"beans":[]}"#);

    // /conf: XML by default, one key as JSON, secrets redacted.
    let (status, body) = get(web, "/conf").await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("<name>yarn.nodemanager.address</name>"),
        "{body}"
    );
    assert!(!body.contains("hunter2"), "{body}");
    let (status, body) = get(web, "/conf?name=spindle.test.password&format=json").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("<redacted>"), "{body}");
    let (status, _) = get(web, "/conf?name=no.such.key").await;
    assert_eq!(status, 404);

    // /stacks: the process's threads.
    let (status, body) = get(web, "/stacks").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.starts_with("Process Thread Dump: "), "{body}");
    assert!(body.contains("  State: "), "{body}");

    node.nm
        .containers()
        .kill(id, spindle_nm::KillReason::by_app_master());
    node.wait_done(&id).await;
}
