//! Application ACLs on the NodeManager's log pages and log REST endpoints:
//! with `yarn.acl.enable`, a container's logs are read by the application's
//! owner, the users of `yarn.admin.acl` and of the application's VIEW_APP
//! ACL (from its launch context), and refused to anyone else with Hadoop's
//! message; with ACLs off everyone reads. Requests go over HTTP to the
//! node's web server (a raw HTTP/1.0 client, so that bytes no ordinary
//! client sends can be sent too).

mod common;

use std::net::SocketAddr;

use common::{clc, container, start_node, user, Node};
use hadoop_protos::yarn::{ApplicationAccessTypeProto, ApplicationAclMapProto};
use spindle_common::ContainerId;
use spindle_nm::ContainerPhase;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const MARK: &str = "spindle-web-acl-stdout-marker";

/// GET `target` (raw bytes), answered status and body.
async fn get(addr: SocketAddr, target: &[u8]) -> (u16, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let mut req = b"GET ".to_vec();
    req.extend_from_slice(target);
    req.extend_from_slice(b" HTTP/1.0\r\nHost: localhost\r\nAccept: application/json\r\n\r\n");
    s.write_all(&req).await.expect("send");
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.expect("read");
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

async fn get_str(addr: SocketAddr, target: &str) -> (u16, String) {
    get(addr, target.as_bytes()).await
}

/// A container of application 1 that wrote [`MARK`] to its stdout, its
/// launch context carrying `acls` (VIEW_APP, MODIFY_APP).
async fn container_with_logs(node: &Node, view: &str, modify: &str) -> ContainerId {
    let id = container(1, 1);
    let mut c = clc(&[
        &format!("echo {MARK}"),
        "1><LOG_DIR>/stdout",
        "2><LOG_DIR>/stderr",
    ]);
    c.application_ac_ls = vec![
        ApplicationAclMapProto {
            access_type: Some(ApplicationAccessTypeProto::AppaccessViewApp as i32),
            acl: Some(view.to_string()),
        },
        ApplicationAclMapProto {
            access_type: Some(ApplicationAccessTypeProto::AppaccessModifyApp as i32),
            acl: Some(modify.to_string()),
        },
    ];
    node.start(id, c).expect("started");
    node.wait_phase(&id, ContainerPhase::Done).await;
    id
}

fn denied(user: &str, id: &ContainerId) -> String {
    format!(
        "User [{user}] is not authorized to view the logs for application {}",
        id.app()
    )
}

#[tokio::test]
async fn with_acls_on_only_the_owner_admins_and_viewers_read_logs() {
    let (node, _tmp) = start_node(
        |c| {
            c.set("yarn.acl.enable", "true");
            c.set("yarn.admin.acl", "admin1");
        },
        None,
    )
    .await;
    let id = container_with_logs(&node, "viewer1", "modder1").await;
    let web = node.nm.web_addr();
    let owner = user();

    // The application keeps its launch context's ACLs.
    let app = node.nm.containers().app_report(&id.app()).expect("the app");
    assert_eq!(app.acl("VIEW_APP"), Some("viewer1"));
    assert_eq!(app.acl("MODIFY_APP"), Some("modder1"));

    let file = |u: &str| format!("/ws/v1/node/containerlogs/{id}/stdout?user.name={u}");
    for reader in [owner.as_str(), "admin1", "viewer1"] {
        let (status, body) = get_str(web, &file(reader)).await;
        assert_eq!(status, 200, "{reader}: {body}");
        assert!(body.contains(MARK), "{reader}: {body}");
        let (status, body) = get_str(
            web,
            &format!("/ws/v1/node/containers/{id}/logs/stdout?user.name={reader}"),
        )
        .await;
        assert_eq!(status, 200, "{reader}: {body}");
        let (status, body) = get_str(
            web,
            &format!("/node/containerlogs/{id}/{owner}/stdout?start=0&user.name={reader}"),
        )
        .await;
        assert_eq!(status, 200, "{reader}: {body}");
        assert!(body.contains(MARK), "{reader}: {body}");
    }

    // Anyone else, MODIFY_APP alone, and the anonymous web user (dr.who):
    // Hadoop's status and message, no log text.
    for (query, who) in [
        ("?user.name=mallory", "mallory"),
        ("?user.name=modder1", "modder1"),
        ("", "dr.who"),
    ] {
        let (status, body) = get_str(
            web,
            &format!("/ws/v1/node/containerlogs/{id}/stdout{query}"),
        )
        .await;
        assert_eq!(status, 500, "{who}: {body}");
        assert_eq!(body, denied(who, &id), "{who}");

        let (status, body) =
            get_str(web, &format!("/ws/v1/node/containers/{id}/logs{query}")).await;
        assert_eq!(status, 500, "{who}: {body}");
        let json: serde_json::Value = serde_json::from_str(&body).expect("json");
        assert_eq!(
            json["RemoteException"]["message"],
            format!(
                "org.apache.hadoop.yarn.exceptions.YarnException: {}",
                denied(who, &id)
            ),
            "{body}"
        );
        assert_eq!(
            json["RemoteException"]["javaClassName"],
            "javax.ws.rs.WebApplicationException"
        );

        for page in [
            format!("/node/containerlogs/{id}/{owner}/stdout{query}"),
            format!("/node/containerlogs/{id}/{owner}{query}"),
        ] {
            let (status, body) = get_str(web, &page).await;
            assert_eq!(status, 403, "{page}: {body}");
            assert!(body.contains(&denied(who, &id)), "{page}: {body}");
            assert!(!body.contains(MARK), "{page}: {body}");
        }
    }

    // The owner's listing shows the file.
    let (status, body) = get_str(
        web,
        &format!("/ws/v1/node/containers/{id}/logs?user.name={owner}"),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("stdout"), "{body}");

    // Names that cannot be users: 4xx, and the node goes on answering.
    let base = format!("/ws/v1/node/containerlogs/{id}/stdout?user.name=").into_bytes();
    let page = format!("/node/containerlogs/{id}/x/stdout?user.name=").into_bytes();
    let bad: Vec<Vec<u8>> = vec![
        [base.as_slice(), b"%ff%fe"].concat(),
        [base.as_slice(), b"a%0Ab"].concat(),
        [base.as_slice(), b"%zz"].concat(),
        [base.as_slice(), b"\xff\xfe"].concat(),
        [page.as_slice(), b"%C3%28"].concat(),
    ];
    for target in bad {
        let (status, body) = get(web, &target).await;
        let shown = String::from_utf8_lossy(&target);
        assert!((400..500).contains(&status), "{shown}: {status} {body}");
        assert!(!body.contains(MARK), "{shown}: {body}");
    }
    // A user name starting with '-' is just a user without groups.
    let (status, body) = get_str(web, &file("-Gn")).await;
    assert_eq!(status, 500, "{body}");
    assert_eq!(body, denied("-Gn", &id));
    let (status, _) = get_str(web, "/ws/v1/node/info").await;
    assert_eq!(status, 200);
    node.nm.stop().await;
}

#[tokio::test]
async fn with_acls_off_everyone_reads_and_anonymous_can_be_refused() {
    let (node, _tmp) = start_node(
        |c| {
            c.set("yarn.admin.acl", " ");
            c.set(
                "hadoop.http.authentication.simple.anonymous.allowed",
                "false",
            );
        },
        None,
    )
    .await;
    let id = container_with_logs(&node, " ", " ").await;
    let web = node.nm.web_addr();
    for reader in ["mallory", "dr.who"] {
        let (status, body) = get_str(
            web,
            &format!("/ws/v1/node/containerlogs/{id}/stdout?user.name={reader}"),
        )
        .await;
        assert_eq!(status, 200, "{reader}: {body}");
        assert!(body.contains(MARK), "{reader}: {body}");
    }
    // No user named while anonymous requests are disallowed: 401.
    let (status, body) = get_str(web, &format!("/ws/v1/node/containerlogs/{id}/stdout")).await;
    assert_eq!(status, 401, "{body}");
    assert!(!body.contains(MARK), "{body}");
    let (status, body) = get_str(web, &format!("/ws/v1/node/containers/{id}/logs")).await;
    assert_eq!(status, 401, "{body}");
    node.nm.stop().await;
}

/// The ACLs are kept in the node's recovery record of the application: a
/// node that starts again from its records still lets the viewer in and
/// keeps everyone else out.
#[tokio::test]
async fn a_node_started_from_its_records_keeps_the_acls() {
    use spindle_common::conf::keys;
    use spindle_nm::recovery::{AppRecord, ContainerRecord, StateStore};

    let tmp = tempfile::tempdir().expect("tempdir");
    let recovery = tmp.path().join("recovery");
    let store = StateStore::open(&recovery).expect("store");
    let id = container(7, 2);
    store.store_container(&ContainerRecord {
        grant: spindle_nm::ContainerTokenIdentifier::new(
            id,
            "127.0.0.1:1",
            "alice",
            spindle_common::Resource::new(256, 1),
            common::now_ms() + 600_000,
            1,
            common::FIRST_RM_IDENTIFIER,
            0,
            common::now_ms(),
            hadoop_protos::yarn::ContainerTypeProto::Task,
        ),
        phase: ContainerPhase::Done,
        exit_status: 0,
        diagnostics: String::new(),
        paths: None,
        service_data: Vec::new(),
    });
    store.store_app(
        &id.app(),
        &AppRecord {
            user: "alice".into(),
            finishing: false,
            acls: vec![("VIEW_APP".into(), "viewer1".into())],
        },
    );
    store.flush_blocking();
    let log_dir = tmp
        .path()
        .join("logs")
        .join(id.app().to_string())
        .join(id.to_string());
    std::fs::create_dir_all(&log_dir).expect("mkdir");
    std::fs::write(log_dir.join("stdout"), format!("{MARK}\n")).expect("write");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let (node, _tmp) = common::start_node_in(
        tmp,
        |conf| {
            conf.set(keys::NM_RECOVERY_ENABLED, "true");
            conf.set(keys::NM_RECOVERY_DIR, recovery.display().to_string());
            conf.set(keys::NM_ADDRESS, format!("127.0.0.1:{port}"));
            conf.set("yarn.acl.enable", "true");
            conf.set("yarn.admin.acl", " ");
        },
        common::Setup::default(),
    )
    .await;
    let app = node.nm.containers().app_report(&id.app()).expect("the app");
    assert_eq!(app.acl("VIEW_APP"), Some("viewer1"));
    let web = node.nm.web_addr();
    for reader in ["alice", "viewer1"] {
        let (status, body) = get_str(
            web,
            &format!("/ws/v1/node/containerlogs/{id}/stdout?user.name={reader}"),
        )
        .await;
        assert_eq!(status, 200, "{reader}: {body}");
        assert!(body.contains(MARK), "{reader}: {body}");
    }
    let (status, body) = get_str(
        web,
        &format!("/ws/v1/node/containerlogs/{id}/stdout?user.name=mallory"),
    )
    .await;
    assert_eq!(status, 500, "{body}");
    assert_eq!(body, denied("mallory", &id));
    node.nm.stop().await;
}
