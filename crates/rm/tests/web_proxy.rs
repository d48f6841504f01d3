//! The RM's web proxy (`/proxy/<appId>/`) against a real HTTP server
//! playing the ApplicationMaster's web UI: an unmanaged AM registers with
//! that server's address as its tracking URL, and requests go through the
//! RM's web port as a browser's would.

use std::net::SocketAddr;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::RawQuery;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, put};
use axum::Router;
use hadoop_protos::yarn as pb;
use spindle_common::ids::ApplicationId;
use spindle_common::proto::app_id_to_pb;
use spindle_ipc::methods::application_client::FORCE_KILL_APPLICATION;
use spindle_ipc::methods::application_master::{
    FINISH_APPLICATION_MASTER, REGISTER_APPLICATION_MASTER,
};
use spindle_ipc::IpcClient;
use spindle_rm::web_host::resolved_host_port;
use spindle_rm::ResourceManager;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

mod common;
use common::{am_client, client_as, report, start_rm, submit};

/// An unmanaged application whose AM registered with `tracking_url`.
async fn registered(
    rm: &ResourceManager,
    client: &IpcClient,
    tracking_url: &str,
) -> (ApplicationId, IpcClient) {
    let app = submit(client, true).await;
    let token = report(client, app).await.am_rm_token.expect("token");
    let am = am_client(rm, &token).await;
    let _: pb::RegisterApplicationMasterResponseProto = am
        .call_method(
            &REGISTER_APPLICATION_MASTER,
            &pb::RegisterApplicationMasterRequestProto {
                host: Some("127.0.0.1".into()),
                rpc_port: Some(-1),
                tracking_url: Some(tracking_url.into()),
                placement_constraints: Vec::new(),
            },
        )
        .await
        .expect("register");
    (app, am)
}

async fn finish(am: &IpcClient, final_url: &str) {
    let _: pb::FinishApplicationMasterResponseProto = am
        .call_method(
            &FINISH_APPLICATION_MASTER,
            &pb::FinishApplicationMasterRequestProto {
                diagnostics: None,
                tracking_url: Some(final_url.into()),
                final_application_status: Some(
                    pb::FinalApplicationStatusProto::AppSucceeded as i32,
                ),
            },
        )
        .await
        .expect("finish");
}

/// A small web UI: `/jobs/` describes the request it got, `/` redirects
/// to `/jobs/` on its own address (as Spark's root does), `/echo` answers
/// a PUT with its body, `/slow` never answers.
async fn start_am_ui() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the AM's web UI");
    let addr = listener.local_addr().expect("address");
    let describe = |headers: HeaderMap, RawQuery(q): RawQuery| async move {
        let h = |n: &str| {
            headers
                .get(n)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string()
        };
        (
            [("X-From-Am", "yes"), ("Content-Type", "text/html")],
            format!(
                "<title>Spark Jobs</title>ua={};accept={};cookie={};custom={};host={};q={}",
                h("user-agent"),
                h("accept"),
                h("cookie"),
                h("x-custom"),
                h("host"),
                q.unwrap_or_default()
            ),
        )
    };
    let root = move || async move {
        (
            StatusCode::FOUND,
            [("Location", format!("http://{addr}/jobs/"))],
        )
            .into_response()
    };
    let router = Router::new()
        .route("/", get(root))
        .route("/jobs/", get(describe))
        .route("/echo", put(|body: Bytes| async move { body }))
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                "late"
            }),
        );
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    addr
}

struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// One HTTP/1.0 request, as plain as a browser's.
async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Answer {
    let exchange = async {
        let mut s = TcpStream::connect(addr).await.expect("connect to the RM");
        let mut req = format!("{method} {path} HTTP/1.0\r\nHost: {addr}\r\n");
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
        s.write_all(req.as_bytes()).await.expect("send");
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).await.expect("read the answer");
        raw
    };
    let raw = tokio::time::timeout(Duration::from_secs(60), exchange)
        .await
        .expect("the RM answers");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("a head");
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .expect("a status");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    Answer {
        status,
        headers,
        body: body.to_string(),
    }
}

fn rm_page(rm: &ResourceManager, app: ApplicationId) -> String {
    let web = rm.addresses().webapp;
    format!(
        "http://{}/cluster/app/{app}",
        resolved_host_port("127.0.0.1", web.port())
    )
}

#[tokio::test]
async fn a_running_am_is_proxied_with_hadoops_headers() {
    let rm = start_rm(&[]).await;
    let web = rm.addresses().webapp;
    let alice = client_as(&rm, "alice").await;
    let ui = start_am_ui().await;
    // Scheme-less, as Hadoop's AMs often give it.
    let (app, _am) = registered(&rm, &alice, &ui.to_string()).await;

    let a = http(
        web,
        "GET",
        &format!("/proxy/{app}/jobs/?a=1&b=x%20y"),
        &[
            ("User-Agent", "test-agent"),
            ("Accept", "text/html"),
            ("X-Custom", "not passed"),
            ("Cookie", "session=browser"),
        ],
        "",
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.header("X-From-Am"), Some("yes"));
    assert!(a.body.contains("<title>Spark Jobs</title>"), "{}", a.body);
    assert!(a.body.contains("ua=test-agent;"), "{}", a.body);
    assert!(a.body.contains("accept=text/html;"), "{}", a.body);
    // Only the proxy's own cookie, naming the web user.
    assert!(a.body.contains("cookie=proxy-user=dr.who;"), "{}", a.body);
    assert!(a.body.contains("custom=;"), "{}", a.body);
    assert!(a.body.contains(&format!("host={ui};")), "{}", a.body);
    assert!(a.body.contains("q=a=1&b=x%20y"), "{}", a.body);

    // The pseudo-authentication user is the one the AM is told about.
    let a = http(
        web,
        "GET",
        &format!("/proxy/{app}/jobs/?user.name=bob"),
        &[],
        "",
    )
    .await;
    assert!(a.body.contains("cookie=proxy-user=bob;"), "{}", a.body);

    // The AM's redirect to its own address is followed, not handed to the
    // browser (which the AM's filter would send back to the proxy).
    let a = http(web, "GET", &format!("/proxy/{app}/"), &[], "").await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert!(a.body.contains("Spark Jobs"), "{}", a.body);
    let a = http(web, "GET", &format!("/proxy/{app}"), &[], "").await;
    assert_eq!(a.status, 200, "{}", a.body);

    // PUT carries its body both ways.
    let a = http(web, "PUT", &format!("/proxy/{app}/echo"), &[], "hello AM").await;
    assert_eq!((a.status, a.body.as_str()), (200, "hello AM"));

    // Hadoop's servlet serves GET and PUT (and HEAD) only.
    let a = http(web, "POST", &format!("/proxy/{app}/jobs/"), &[], "").await;
    assert_eq!(a.status, 405);

    // The report of an unmanaged AM carries the AM's own URL.
    let r = report(&alice, app).await;
    assert_eq!(r.tracking_url.as_deref(), Some(ui.to_string().as_str()));
    assert_eq!(
        r.original_tracking_url.as_deref(),
        Some(ui.to_string().as_str())
    );
}

#[tokio::test]
async fn bad_ids_unknown_apps_and_unreachable_ams() {
    let rm = start_rm(&[("yarn.resourcemanager.proxy.connection.timeout", "500")]).await;
    let web = rm.addresses().webapp;
    let alice = client_as(&rm, "alice").await;

    for path in ["/proxy", "/proxy/redirect"] {
        let a = http(web, "GET", path, &[], "").await;
        assert_eq!(a.status, 404, "{path}");
        assert!(
            a.body
                .contains("Your path appears to be formatted incorrectly."),
            "{path}: {}",
            a.body
        );
    }
    for (path, id) in [
        ("/proxy/foo/jobs/", "foo"),
        ("/proxy/application_x_1/", "application_x_1"),
        ("/proxy/%3Cb%3E/", "%3Cb%3E"),
    ] {
        let a = http(web, "GET", path, &[], "").await;
        assert_eq!(a.status, 404, "{path}");
        assert!(
            a.body
                .contains(&format!("{id} appears to be formatted incorrectly.")),
            "{path}: {}",
            a.body
        );
    }
    let a = http(web, "GET", "/proxy/application_1_9999/", &[], "").await;
    assert_eq!(a.status, 404);
    assert!(
        a.body
            .contains("Application application_1_9999 could not be found in RM or history server"),
        "{}",
        a.body
    );

    // An AM whose web UI is gone: a bad gateway, quickly.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr")
    };
    let (down, _am) = registered(&rm, &alice, &format!("http://{closed}")).await;
    let a = http(web, "GET", &format!("/proxy/{down}/jobs/"), &[], "").await;
    assert_eq!(a.status, 502, "{}", a.body);

    // An AM that never answers: the bound, then a gateway timeout.
    let ui = start_am_ui().await;
    let (slow, _am2) = registered(&rm, &alice, &format!("http://{ui}")).await;
    let a = http(web, "GET", &format!("/proxy/{slow}/slow"), &[], "").await;
    assert_eq!(a.status, 504, "{}", a.body);
    // Other requests are not held up.
    let a = http(web, "GET", &format!("/proxy/{slow}/jobs/"), &[], "").await;
    assert_eq!(a.status, 200, "{}", a.body);
}

#[tokio::test]
async fn apps_without_a_running_am_are_redirected_as_hadoop_does() {
    let rm = start_rm(&[]).await;
    let web = rm.addresses().webapp;
    let alice = client_as(&rm, "alice").await;

    // Not registered yet: the RM's application page.
    let waiting = submit(&alice, true).await;
    let a = http(web, "GET", &format!("/proxy/{waiting}/jobs/"), &[], "").await;
    assert_eq!(a.status, 302, "{}", a.body);
    assert_eq!(a.header("Location"), Some(rm_page(&rm, waiting).as_str()));
    assert!(a.body.contains("Moved"), "{}", a.body);

    // Finished with a history URL: there, with the rest of the path and the query.
    let ui = start_am_ui().await;
    let (done, am) = registered(&rm, &alice, &format!("http://{ui}")).await;
    finish(&am, "http://history.example:18080/history/app-1").await;
    let a = http(web, "GET", &format!("/proxy/{done}/jobs/?x=1"), &[], "").await;
    assert_eq!(a.status, 302, "{}", a.body);
    assert_eq!(
        a.header("Location"),
        Some("http://history.example:18080/history/app-1/jobs/?x=1")
    );
    let r = report(&alice, done).await;
    assert_eq!(
        r.original_tracking_url.as_deref(),
        Some("http://history.example:18080/history/app-1")
    );

    // Finished without one: the RM's application page.
    let (bare, am) = registered(&rm, &alice, &format!("http://{ui}")).await;
    finish(&am, "").await;
    let a = http(web, "GET", &format!("/proxy/{bare}/jobs/"), &[], "").await;
    assert_eq!(a.status, 302, "{}", a.body);
    assert_eq!(a.header("Location"), Some(rm_page(&rm, bare).as_str()));
    assert_eq!(
        report(&alice, bare).await.original_tracking_url.as_deref(),
        Some("N/A")
    );

    // Killed: the attempt's URLs are the RM's application page.
    let (killed, _am) = registered(&rm, &alice, &format!("http://{ui}")).await;
    let _: pb::KillApplicationResponseProto = alice
        .call_method(
            &FORCE_KILL_APPLICATION,
            &pb::KillApplicationRequestProto {
                application_id: Some(app_id_to_pb(&killed)),
                diagnostics: None,
            },
        )
        .await
        .expect("kill");
    let page = rm_page(&rm, killed);
    let a = http(web, "GET", &format!("/proxy/{killed}/"), &[], "").await;
    assert_eq!(a.status, 302, "{}", a.body);
    assert_eq!(a.header("Location"), Some(page.as_str()));
    let a = http(web, "GET", &format!("/proxy/{killed}/jobs/"), &[], "").await;
    assert_eq!(a.header("Location"), Some(format!("{page}/jobs/").as_str()));
    let r = report(&alice, killed).await;
    assert_eq!(r.tracking_url.as_deref(), Some(page.as_str()));

    // The AM filter's redirect arriving from this machine: the AM sent the
    // proxy back to itself, so the RM's failure page.
    let (running, _am) = registered(&rm, &alice, &format!("http://{ui}")).await;
    let a = http(
        web,
        "GET",
        &format!("/proxy/redirect/{running}/jobs/"),
        &[],
        "",
    )
    .await;
    assert_eq!(a.status, 302, "{}", a.body);
    let failure = format!(
        "http://{}/cluster/failure/{running}",
        resolved_host_port("127.0.0.1", web.port())
    );
    assert_eq!(a.header("Location"), Some(failure.as_str()));
}

#[tokio::test]
async fn a_separate_proxy_address_leaves_the_rm_without_proxy() {
    let rm = start_rm(&[("yarn.web-proxy.address", "proxy.example:9046")]).await;
    let alice = client_as(&rm, "alice").await;
    let ui = start_am_ui().await;
    let (app, _am) = registered(&rm, &alice, &format!("http://{ui}")).await;
    let a = http(
        rm.addresses().webapp,
        "GET",
        &format!("/proxy/{app}/jobs/"),
        &[],
        "",
    )
    .await;
    assert_eq!(a.status, 404);
}
