//! The RM's REST writes over its web port: killing an application, changing
//! its priority, moving it to another queue, its lifetime and new application ids, with
//! pseudo authentication (`user.name`) and the same ACLs as the RPC twins.

use std::net::SocketAddr;
use std::time::Duration;

use hadoop_protos::yarn as pb;
use serde_json::Value;
use spindle_common::ids::ApplicationId;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

mod common;
use common::{client_as, report, start_rm, submit};

struct Answer {
    status: u16,
    head: String,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", self.head, self.body))
    }
}

async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    content_type: &str,
    body: &str,
) -> Answer {
    let exchange = async {
        let mut s = TcpStream::connect(addr).await.expect("connect to the RM");
        let req = format!(
            "{method} {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Type: {content_type}\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
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
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    Answer {
        status,
        head: head.to_string(),
        body: body.to_string(),
    }
}

const JSON: &str = "application/json";

fn state(r: &pb::ApplicationReportProto) -> Option<pb::YarnApplicationStateProto> {
    r.yarn_application_state
        .and_then(|v| pb::YarnApplicationStateProto::try_from(v).ok())
}

fn state_path(app: ApplicationId, user: Option<&str>) -> String {
    match user {
        Some(u) => format!("/ws/v1/cluster/apps/{app}/state?user.name={u}"),
        None => format!("/ws/v1/cluster/apps/{app}/state"),
    }
}

#[tokio::test]
async fn kill_is_checked_like_its_rpc_twin() {
    let rm = start_rm(&[
        ("yarn.acl.enable", "true"),
        ("yarn.admin.acl", "nobody"),
        ("yarn.scheduler.capacity.root.acl_administer_queue", " "),
    ])
    .await;
    let web = rm.addresses().webapp;
    let alice = client_as(&rm, "alice").await;
    let app = submit(&alice, true).await;
    let killed = r#"{"state":"KILLED"}"#;

    // No user: the static web user (dr.who), who may not kill alice's application.
    let a = http(web, "PUT", &state_path(app, None), JSON, killed).await;
    assert_eq!(a.status, 403, "{}", a.body);
    assert!(a.body.contains("by remote user dr.who"), "{}", a.body);

    // A user who may not modify the application: 403 and Hadoop's message.
    let a = http(web, "PUT", &state_path(app, Some("bob")), JSON, killed).await;
    assert_eq!(a.status, 403, "{}", a.body);
    assert_eq!(
        a.body,
        format!("Unauthorized attempt to kill appid {app} by remote user bob")
    );
    assert_ne!(
        state(&report(&alice, app).await),
        Some(pb::YarnApplicationStateProto::Killed)
    );

    // Bad input.
    let a = http(web, "PUT", &state_path(app, Some("alice")), JSON, "{nope").await;
    assert_eq!(a.status, 400, "{}", a.body);
    let a = http(
        web,
        "PUT",
        &state_path(app, Some("alice")),
        "text/plain",
        "KILLED",
    )
    .await;
    assert_eq!(a.status, 415, "{}", a.body);
    let a = http(
        web,
        "PUT",
        "/ws/v1/cluster/apps/application_1_9999/state?user.name=alice",
        JSON,
        killed,
    )
    .await;
    assert_eq!(a.status, 404, "{}", a.body);
    assert_eq!(
        a.json()["RemoteException"]["message"],
        "app with id: application_1_9999 not found"
    );
    let a = http(
        web,
        "PUT",
        "/ws/v1/cluster/apps/app_x/state?user.name=alice",
        JSON,
        killed,
    )
    .await;
    assert_eq!(a.status, 400, "{}", a.body);
    let a = http(
        web,
        "PUT",
        &state_path(app, Some("alice")),
        JSON,
        r#"{"state":"FINISHED"}"#,
    )
    .await;
    assert_eq!(
        (a.status, a.body.as_str()),
        (400, "Only 'KILLED' is allowed as a target state.")
    );

    // The owner kills it (an XML body works as well).
    let a = http(
        web,
        "PUT",
        &state_path(app, Some("alice")),
        "application/xml",
        "<appstate><state>KILLED</state></appstate>",
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.json()["state"], "KILLED");
    assert_eq!(
        state(&report(&alice, app).await),
        Some(pb::YarnApplicationStateProto::Killed)
    );
    // Asking again answers the state.
    let a = http(web, "PUT", &state_path(app, Some("alice")), JSON, killed).await;
    assert_eq!(
        (a.status, a.json()["state"].clone()),
        (200, "KILLED".into())
    );
}

#[tokio::test]
async fn priority_queue_and_new_application() {
    let rm = start_rm(&[
        ("yarn.acl.enable", "true"),
        ("yarn.admin.acl", "nobody"),
        ("yarn.scheduler.capacity.root.acl_administer_queue", " "),
        ("yarn.cluster.max-application-priority", "10"),
        ("yarn.scheduler.capacity.root.queues", "default,b"),
        ("yarn.scheduler.capacity.root.default.capacity", "50"),
        ("yarn.scheduler.capacity.root.b.capacity", "50"),
    ])
    .await;
    let web = rm.addresses().webapp;
    let alice = client_as(&rm, "alice").await;
    let app = submit(&alice, true).await;
    let path = |user: &str| format!("/ws/v1/cluster/apps/{app}/priority?user.name={user}");

    let a = http(web, "PUT", &path("bob"), JSON, r#"{"priority":5}"#).await;
    assert_eq!(a.status, 403, "{}", a.body);
    assert_eq!(
        a.body,
        format!("Unauthorized attempt to change priority of appid {app} by remote user bob")
    );
    let a = http(web, "PUT", &path("alice"), JSON, r#"{"priority":"x"}"#).await;
    assert_eq!(a.status, 400, "{}", a.body);
    let a = http(web, "PUT", &path("alice"), JSON, r#"{"priority":5}"#).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.json()["priority"], 5);
    let r = report(&alice, app).await;
    assert_eq!(r.priority.and_then(|p| p.priority), Some(5));

    // Moves: the current queue is no move; a caller without MODIFY_APP,
    // and (ACLs on) a target that does not exist, are 403s as in Hadoop's
    // RMWebServices.moveApp; a real move answers the new queue.
    let queue = |q: &str| format!(r#"{{"queue":"{q}"}}"#);
    let qpath = |user: &str| format!("/ws/v1/cluster/apps/{app}/queue?user.name={user}");
    let a = http(web, "PUT", &qpath("alice"), JSON, &queue("default")).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.json()["queue"], "default");
    for (user, target) in [("bob", "b"), ("alice", "other")] {
        let a = http(web, "PUT", &qpath(user), JSON, &queue(target)).await;
        assert_eq!(a.status, 403, "{}", a.body);
        assert_eq!(
            a.body,
            format!("Unauthorized attempt to move appid {app} by remote user {user}")
        );
    }
    let a = http(web, "PUT", &qpath("alice"), JSON, &queue("b")).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.json()["queue"], "b");
    let r = report(&alice, app).await;
    assert_eq!(r.queue.as_deref(), Some("b"));

    // Lifetimes: Hadoop's checks, then the application's LIFETIME timeout.
    let tpath = |user: &str| format!("/ws/v1/cluster/apps/{app}/timeout?user.name={user}");
    let timeout = |t: &str| format!(r#"{{"timeout":{{"type":"LIFETIME","expiryTime":"{t}"}}}}"#);
    let a = http(
        web,
        "PUT",
        &tpath("alice"),
        JSON,
        r#"{"timeout":{"type":"LIFETIME"}}"#,
    )
    .await;
    assert_eq!(
        (a.status, a.body.as_str()),
        (400, "Timeout type or ExpiryTime is null.")
    );
    let in_an_hour = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64 + 3_600_000)
        .unwrap_or_default();
    let expiry = spindle_rm::iso8601::format(in_an_hour);
    let a = http(web, "PUT", &tpath("bob"), JSON, &timeout(&expiry)).await;
    assert_eq!(a.status, 403, "{}", a.body);
    assert_eq!(
        a.body,
        format!("Unauthorized attempt to change timeout of app {app} by remote user bob")
    );
    let a = http(web, "PUT", &tpath("alice"), JSON, &timeout("tomorrow")).await;
    assert_eq!(a.status, 400, "{}", a.body);
    assert!(
        a.body.starts_with("Expire time is not in ISO8601 format."),
        "{}",
        a.body
    );
    let a = http(web, "PUT", &tpath("alice"), JSON, &timeout(&expiry)).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.json()["timeout"]["type"], "LIFETIME");
    assert_eq!(a.json()["timeout"]["expiryTime"], expiry.as_str());
    let left = a.json()["timeout"]["remainingTimeInSeconds"]
        .as_i64()
        .unwrap_or(-1);
    assert!((1..=3600).contains(&left), "{}", a.body);
    let r = report(&alice, app).await;
    let lifetime = r
        .app_timeouts
        .first()
        .and_then(|t| t.application_timeout.clone());
    assert_eq!(lifetime.and_then(|t| t.expire_time), Some(expiry));

    // New application ids, for the owner of the request.
    // Anonymous requests act as the static web user: a new id needs no ACL.
    let a = http(web, "POST", "/ws/v1/cluster/apps/new-application", JSON, "").await;
    assert_eq!(a.status, 200, "{}", a.body);
    let a = http(
        web,
        "POST",
        "/ws/v1/cluster/apps/new-application?user.name=alice",
        JSON,
        "",
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);
    let v = a.json();
    let id: ApplicationId = v["application-id"]
        .as_str()
        .unwrap_or_default()
        .parse()
        .unwrap_or_else(|e| panic!("{e:?}: {v}"));
    assert_eq!(id.cluster_timestamp, app.cluster_timestamp);
    assert!(id.id > app.id, "{v}");
    assert_eq!(v["maximum-resource-capability"]["memory"], 8192);

    // Delegation tokens need a Kerberos (SPNEGO) caller, which this web
    // does not authenticate: Hadoop's 403, for each of the three resources.
    for (method, path) in [
        ("POST", "/ws/v1/cluster/delegation-token?user.name=alice"),
        (
            "POST",
            "/ws/v1/cluster/delegation-token/expiration?user.name=alice",
        ),
        ("DELETE", "/ws/v1/cluster/delegation-token?user.name=alice"),
    ] {
        let r = http(web, method, path, JSON, r#"{"renewer":"yarn"}"#).await;
        assert_eq!(r.status, 403, "{method} {path}: {}", r.body);
        assert_eq!(
            r.body,
            "Delegation token operations can only be carried out on a Kerberos \
             authenticated channel. Expected auth type is kerberos, got type simple"
        );
    }
}

#[tokio::test]
async fn rest_submission_builds_the_rpc_submission() {
    // Anonymous requests refused: a write without a user is Hadoop's 401.
    let rm = start_rm(&[(
        "hadoop.http.authentication.simple.anonymous.allowed",
        "false",
    )])
    .await;
    let web = rm.addresses().webapp;
    let alice = client_as(&rm, "alice").await;
    let new = http(
        web,
        "POST",
        "/ws/v1/cluster/apps/new-application?user.name=alice",
        JSON,
        "",
    )
    .await;
    let id = new.json()["application-id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let body = |extra: &str| {
        format!(
            r#"{{"application-id":"{id}","application-name":"rest-app","queue":"default",
            "application-type":"SHELL","max-app-attempts":1,"priority":0,
            "application-tags":{{"tag":["web","rest"]}},
            "am-container-spec":{{"commands":{{"command":"sleep 1"}},
              "environment":{{"entry":[{{"key":"A","value":"1"}}]}}{extra}}},
            "resource":{{"memory":1024,"vCores":1}}}}"#
        )
    };
    let submit = "/ws/v1/cluster/apps?user.name=alice";

    let a = http(web, "POST", "/ws/v1/cluster/apps", JSON, &body("")).await;
    assert_eq!(a.status, 401, "{}", a.body);
    let a = http(web, "POST", submit, JSON, "{").await;
    assert_eq!(a.status, 400, "{}", a.body);
    let a = http(
        web,
        "POST",
        submit,
        JSON,
        &body(r#","local-resources":{"entry":[{"key":"x","value":{"resource":"file:///x","type":"FILE","visibility":"APPLICATION","size":1,"timestamp":1}}]}"#),
    )
    .await;
    assert_eq!(a.status, 400, "{}", a.body);
    let too_big = body("").replace(r#""memory":1024"#, r#""memory":999999"#);
    let a = http(web, "POST", submit, JSON, &too_big).await;
    assert_eq!(a.status, 400, "{}", a.body);
    assert_eq!(
        a.json()["RemoteException"]["exception"],
        "BadRequestException"
    );

    let a = http(web, "POST", submit, JSON, &body("")).await;
    assert_eq!(a.status, 202, "{}\n{}", a.head, a.body);
    assert!(
        a.head.contains(&format!("/ws/v1/cluster/apps/{id}")),
        "{}",
        a.head
    );
    let app: ApplicationId = id.parse().expect("an application id");
    let r = report(&alice, app).await;
    assert_eq!(r.user.as_deref(), Some("alice"));
    assert_eq!(r.name.as_deref(), Some("rest-app"));
    assert_eq!(r.application_type.as_deref(), Some("SHELL"));
    let mut tags = r.application_tags.clone();
    tags.sort();
    assert_eq!(tags, vec!["rest".to_string(), "web".to_string()]);
}
