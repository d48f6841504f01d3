//! The RM's HTML pages over real HTTP against an in-process RM: user strings
//! are escaped, ACL-hidden fields stay hidden from callers without VIEW_APP,
//! bad input is a 4xx page, the stylesheet is cacheable, reloading can be
//! turned off, and a standby RM says so. (The real-browser test is
//! `integration/tests/web_ui.rs`.)

use std::net::SocketAddr;

use spindle_common::conf::Configuration;
use spindle_common::ids::ApplicationId;
use spindle_ipc::{protocols, ClientOptions, IpcClient};
use spindle_rm::ResourceManager;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod common;
use common::write_yarn_site;

const HOSTILE: &str = "<script>alert(1)</script>";

struct Answer {
    status: u16,
    head: String,
    body: String,
}

/// A plain HTTP/1.0 GET of `target` (sent as is, so it may hold bytes a
/// client library would refuse).
async fn get(addr: SocketAddr, target: &str) -> Answer {
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    s.write_all(format!("GET {target} HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
        .await
        .expect("send");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.expect("read");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    Answer {
        status: head
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0),
        head: head.to_ascii_lowercase(),
        body: body.to_string(),
    }
}

async fn start(dir: &std::path::Path, extra: &[(&str, &str)]) -> ResourceManager {
    let mut pairs = vec![("yarn.acl.enable", "true"), ("yarn.admin.acl", "alice")];
    pairs.extend_from_slice(extra);
    write_yarn_site(dir, &pairs);
    let queues = [
        ("yarn.scheduler.capacity.root.queues", "default"),
        ("yarn.scheduler.capacity.root.default.capacity", "100"),
        ("yarn.scheduler.capacity.root.acl_submit_applications", " "),
        ("yarn.scheduler.capacity.root.acl_administer_queue", " "),
        (
            "yarn.scheduler.capacity.root.default.acl_submit_applications",
            "*",
        ),
        (
            "yarn.scheduler.capacity.root.default.acl_administer_queue",
            " ",
        ),
    ];
    let mut xml = String::from("<?xml version=\"1.0\"?>\n<configuration>\n");
    for (k, v) in queues {
        xml.push_str(&format!(
            "<property><name>{k}</name><value>{v}</value></property>\n"
        ));
    }
    xml.push_str("</configuration>\n");
    std::fs::write(dir.join("capacity-scheduler.xml"), xml).expect("write queues");
    let conf = Configuration::load(Some(dir)).expect("configuration");
    ResourceManager::start(&conf, Some(dir.to_path_buf()))
        .await
        .expect("RM starts")
}

/// Submits, as `user`, an application named `name` with diagnostics-worthy
/// tags; it stays ACCEPTED (no NodeManager).
async fn submit(rm: &ResourceManager, user: &str, name: &str) -> ApplicationId {
    let client = IpcClient::connect(
        &rm.addresses().client.to_string(),
        ClientOptions::new(user, protocols::APPLICATION_CLIENT),
    )
    .await
    .expect("client connection");
    common::submit_with(&client, |ctx| {
        ctx.application_name = Some(name.into());
        ctx.application_type = Some(format!("T{HOSTILE}"));
        ctx.application_tags = vec!["tag\"onmouseover=alert(3)".into()];
    })
    .await
}

fn assert_escaped(page: &Answer, what: &str) {
    assert_eq!(page.status, 200, "{what}: {}", page.body);
    assert!(
        !page.body.contains(HOSTILE) && !page.body.contains("tag\"onmouseover"),
        "{what} carries a user string unescaped:\n{}",
        page.body
    );
}

#[tokio::test]
async fn pages_escape_user_strings_and_hide_what_acls_hide() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rm = start(dir.path(), &[]).await;
    let web = rm.addresses().webapp;
    let id = submit(&rm, "bob", HOSTILE).await;

    let apps = get(web, "/cluster/apps?user.name=bob").await;
    assert_escaped(&apps, "the applications page");
    assert!(
        apps.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{}",
        apps.body
    );
    assert!(apps.body.contains(&format!("data-id=\"{id}\"")));

    // The owner sees the application and its attempt.
    let own = get(web, &format!("/cluster/app/{id}?user.name=bob")).await;
    assert_escaped(&own, "the owner's application page");
    assert!(own.body.contains("id=\"attempts\""), "{}", own.body);
    assert!(
        own.body.contains("tag&quot;onmouseover=alert(3)"),
        "{}",
        own.body
    );
    assert!(own.body.contains(&format!("/proxy/{id}/")), "{}", own.body);

    // Another user without VIEW_APP gets what Hadoop's reports leave: no
    // attempts, no tracking link.
    let other = get(web, &format!("/cluster/app/{id}?user.name=mallory")).await;
    assert_escaped(&other, "another user's application page");
    assert!(!other.body.contains("id=\"attempts\""), "{}", other.body);
    assert!(
        !other.body.contains(&format!("/proxy/{id}/")),
        "{}",
        other.body
    );
    assert!(other.body.contains("mallory"), "{}", other.body);
    let listed = get(web, "/cluster/apps?user.name=mallory").await;
    assert!(
        !listed.body.contains(&format!("/proxy/{id}/")),
        "{}",
        listed.body
    );
    // The anonymous caller too; the administrator sees everything.
    let anonymous = get(web, &format!("/cluster/app/{id}")).await;
    assert!(
        !anonymous.body.contains("id=\"attempts\""),
        "{}",
        anonymous.body
    );
    let admin = get(web, &format!("/cluster/app/{id}?user.name=alice")).await;
    assert!(admin.body.contains("id=\"attempts\""), "{}", admin.body);
    let attempt = get(
        web,
        &format!(
            "/cluster/appattempt/appattempt_{}_{:04}_000001?user.name=bob",
            id.cluster_timestamp, id.id
        ),
    )
    .await;
    assert_escaped(&attempt, "the attempt page");
    let denied = get(
        web,
        &format!(
            "/cluster/appattempt/appattempt_{}_{:04}_000001?user.name=mallory",
            id.cluster_timestamp, id.id
        ),
    )
    .await;
    assert_eq!(denied.status, 403, "{}", denied.body);

    for page in [
        "/",
        "/cluster",
        "/cluster/nodes",
        "/cluster/scheduler",
        "/cluster/cluster",
    ] {
        assert_escaped(&get(web, page).await, page);
    }
    let scheduler = get(web, "/cluster/scheduler").await;
    assert!(
        scheduler.body.contains("data-queue=\"root.default\""),
        "{}",
        scheduler.body
    );
    assert!(
        scheduler.body.contains("bob (1 apps, 0 running)"),
        "{}",
        scheduler.body
    );

    // A hostile query comes back escaped.
    let q = get(
        web,
        "/cluster/apps?q=%22%3E%3Cscript%3Ealert(1)%3C/script%3E",
    )
    .await;
    assert_escaped(&q, "a filtered applications page");
}

#[tokio::test]
async fn bad_input_is_a_4xx_page_and_other_requests_go_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rm = start(dir.path(), &[]).await;
    let web = rm.addresses().webapp;
    for (target, status) in [
        ("/cluster/app/not-an-id", 400),
        ("/cluster/app/application_1_0001", 404),
        ("/cluster/app/%FF%FE", 400),
        ("/cluster/appattempt/appattempt_1_0001", 400),
        ("/cluster/appattempt/appattempt_1_0001_000001", 404),
        ("/cluster/apps/NOSUCHSTATE", 400),
        ("/cluster/apps?sort=nope", 400),
        ("/cluster/apps?order=sideways", 400),
        ("/cluster/apps?refresh=soon", 400),
        // Undecodable bytes in a query value become U+FFFD (axum decodes lossily).
        ("/cluster/apps?q=%FF", 200),
        ("/cluster/apps?refresh=%FF", 400),
        ("/cluster/nodes/NOSUCHSTATE", 400),
    ] {
        let a = get(web, target).await;
        assert_eq!(a.status, status, "{target}: {}", a.body);
        assert!(a.head.contains("text/html"), "{target}: {}", a.head);
    }
    let fine = get(web, "/cluster/apps/accepted?sort=name&order=asc&q=x").await;
    assert_eq!(fine.status, 200, "{}", fine.body);
}

#[tokio::test]
async fn stylesheet_is_cacheable_and_reloading_can_be_turned_off() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rm = start(dir.path(), &[]).await;
    let web = rm.addresses().webapp;
    let css = get(web, "/static/spindle.css").await;
    assert_eq!(css.status, 200);
    assert!(css.head.contains("content-type: text/css"), "{}", css.head);
    assert!(
        css.head.contains("cache-control: public, max-age="),
        "{}",
        css.head
    );

    let page = get(web, "/cluster").await;
    assert!(page.body.contains("name=\"viewport\""), "{}", page.body);
    assert!(
        page.body.contains("http-equiv=\"refresh\" content=\"30\""),
        "{}",
        page.body
    );
    assert!(
        page.head.contains("cache-control: no-store"),
        "{}",
        page.head
    );
    let off = get(web, "/cluster?refresh=0").await;
    assert!(!off.body.contains("http-equiv=\"refresh\""), "{}", off.body);
    assert!(!off.body.contains("location.replace"), "{}", off.body);
    drop(rm);

    let dir = tempfile::tempdir().expect("tempdir");
    let rm = start(dir.path(), &[("spindle.webapp.ui.refresh-seconds", "0")]).await;
    let page = get(rm.addresses().webapp, "/cluster").await;
    assert!(
        !page.body.contains("http-equiv=\"refresh\""),
        "{}",
        page.body
    );
    let asked = get(rm.addresses().webapp, "/cluster?refresh=5").await;
    assert!(asked.body.contains("content=\"5\""), "{}", asked.body);
}

#[tokio::test]
async fn a_standby_rm_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rm = start(dir.path(), &[]).await;
    let web = rm.addresses().webapp;
    rm.transition_to_standby().await.expect("to standby");
    // The overview says so; the other pages are redirected towards an active RM as
    // Hadoop's RMWebAppFilter does (with no other RM: the retry page).
    let a = get(web, "/cluster").await;
    assert_eq!(a.status, 200, "/cluster");
    assert!(a.body.contains("id=\"standby\""), "{}", a.body);
    assert!(a.body.contains("is in standby"), "{}", a.body);
    for page in ["/cluster/apps", "/cluster/nodes", "/cluster/scheduler"] {
        let a = get(web, page).await;
        assert_eq!(a.status, 307, "{page}: {}", a.body);
    }
}

#[tokio::test]
async fn the_scheduler_page_shows_fifo_and_fair_trees() {
    for (class, name) in [
        (
            "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fifo.FifoScheduler",
            "FIFO Scheduler",
        ),
        (
            "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fair.FairScheduler",
            "Fair Scheduler",
        ),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let rm = start(
            dir.path(),
            &[("yarn.resourcemanager.scheduler.class", class)],
        )
        .await;
        submit(&rm, "bob", "queued").await;
        let page = get(rm.addresses().webapp, "/cluster/scheduler").await;
        assert_eq!(page.status, 200, "{class}: {}", page.body);
        assert!(page.body.contains(name), "{class}: {}", page.body);
        assert!(
            page.body.contains("data-queue=\"root\""),
            "{class}: {}",
            page.body
        );
        assert!(
            page.body.contains("bob (1 apps, 0 running)"),
            "{class}: {}",
            page.body
        );
    }
}
