//! The RM's `/stacks` (Hadoop's `StackServlet`): a text page listing the
//! process's OS threads by name and state, for administrators only when
//! `hadoop.security.instrumentation.requires.admin` and
//! `hadoop.security.authorization` are both on (Hadoop's
//! `HttpServer2.hasAdministratorAccess`).

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

mod common;
use common::start_rm;

async fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let exchange = async {
        let mut s = TcpStream::connect(addr).await.expect("connect to the RM");
        let req = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n");
        s.write_all(req.as_bytes()).await.expect("send");
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).await.expect("read the answer");
        raw
    };
    let raw = tokio::time::timeout(Duration::from_secs(60), exchange)
        .await
        .expect("the RM answers");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    (status, text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stacks_lists_the_process_threads() {
    let rm = start_rm(&[]).await;
    let (status, text) = get(rm.addresses().webapp, "/stacks").await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("text/plain"), "{text}");
    assert!(text.contains("Process Thread Dump: "), "{text}");
    assert!(text.contains("active threads"), "{text}");
    // The runtime's worker threads, by their names (`tokio-rt-worker`, or
    // `tokio-runtime-w[orker]` in older tokio), with states.
    assert!(text.contains("(tokio-r"), "{text}");
    assert!(text.contains("  State: "), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instrumentation_for_admins_needs_service_authorization_as_in_hadoop() {
    // Hadoop's `HttpServer2.hasAdministratorAccess` lets everyone in while
    // `hadoop.security.authorization` is off: `requires.admin` alone keeps
    // /stacks open.
    let rm = start_rm(&[
        ("hadoop.security.instrumentation.requires.admin", "true"),
        ("yarn.admin.acl", "boss"),
    ])
    .await;
    let web = rm.addresses().webapp;
    let (status, text) = get(web, "/stacks?user.name=mallory").await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("Process Thread Dump: "), "{text}");
    drop(rm);

    // With it on, administrators only: named in the ACL, or in one of its
    // groups, here by a static group override (no such group on the host).
    let rm = start_rm(&[
        ("hadoop.security.instrumentation.requires.admin", "true"),
        ("hadoop.security.authorization", "true"),
        ("yarn.admin.acl", "boss spindle-test-admins"),
        (
            "hadoop.user.group.static.mapping.overrides",
            "dr.who=;carol=spindle-test-admins",
        ),
    ])
    .await;
    let web = rm.addresses().webapp;
    let (status, text) = get(web, "/stacks?user.name=mallory").await;
    assert_eq!(status, 403, "{text}");
    assert!(
        text.contains("User mallory is unauthorized to access this page."),
        "{text}"
    );
    for admin in ["boss", "carol"] {
        let (status, text) = get(web, &format!("/stacks?user.name={admin}")).await;
        assert_eq!(status, 200, "{admin}: {text}");
    }
}
