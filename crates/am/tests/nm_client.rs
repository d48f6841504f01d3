//! `NmClient` against a scripted NodeManager that accepts only NMTokens made
//! by a secret manager built here (SASL DIGEST-MD5), like a NodeManager's
//! container-management port.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hadoop_protos::yarn as pb;
use spindle_am::convert::{container_id_from_pb, container_id_to_pb};
use spindle_am::{AmError, Container, ContainerState, LaunchContext, NmClient, NmTokenCache};
use spindle_common::security::{kind, MasterKey, NmTokenIdentifier, SecretManager, Token};
use spindle_common::{ApplicationAttemptId, ApplicationId, ContainerId, NodeId, Resource};
use spindle_ipc::methods::container_management::{
    GET_CONTAINER_STATUSES, START_CONTAINERS, STOP_CONTAINERS,
};
use spindle_ipc::{
    protocols, AuthMethod, CallContext, Mechanism, RpcError, RpcServer, ServerConfig, Service,
    TokenVerifier, VerifiedToken,
};

fn attempt() -> ApplicationAttemptId {
    ApplicationAttemptId::new(ApplicationId::new(1_700_000_000_000, 8), 1)
}

fn secrets() -> SecretManager {
    SecretManager::new(MasterKey::new(5, b"nm-token-key".to_vec()))
}

fn nm_token(node: &NodeId, key_id_offset: i32) -> Token {
    let sm = secrets();
    let key_id = sm.current_key().key_id + key_id_offset;
    let identifier = NmTokenIdentifier::new(attempt(), node.clone(), "alice", key_id).encode();
    let password = spindle_common::security::secret::password(&identifier, sm.current_key());
    Token::new(identifier, password, kind::NM, "")
}

/// Counts handshakes; accepts tokens whose key id is the current key's id or
/// the one after it (both signed with the same key, so a "rolled" token has a
/// different identifier but still verifies).
struct NmVerifier {
    handshakes: Arc<AtomicUsize>,
}

impl TokenVerifier for NmVerifier {
    fn kind(&self) -> &str {
        kind::NM
    }

    fn verify(&self, identifier: &[u8]) -> Result<VerifiedToken, String> {
        self.handshakes.fetch_add(1, Ordering::SeqCst);
        let id = NmTokenIdentifier::decode(identifier).map_err(|e| e.to_string())?;
        let sm = secrets();
        if id.key_id != sm.current_key().key_id && id.key_id != sm.current_key().key_id + 1 {
            return Err(format!("unknown key {}", id.key_id));
        }
        Ok(VerifiedToken {
            real_user: None,
            password: spindle_common::security::secret::password(identifier, sm.current_key()),
            user: id.user(),
        })
    }
}

#[derive(Default)]
struct Seen {
    users: Vec<String>,
    starts: Vec<pb::StartContainerRequestProto>,
    stops: Vec<ContainerId>,
}

async fn fake_nm(idle_timeout: Duration) -> (RpcServer, Arc<Mutex<Seen>>, Arc<AtomicUsize>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let handshakes = Arc::new(AtomicUsize::new(0));
    let (s1, s2, s3) = (seen.clone(), seen.clone(), seen.clone());
    let token_user = |ctx: &CallContext| match &ctx.auth {
        AuthMethod::Token { kind, user, .. } if kind == "NMToken" => Ok(user.clone()),
        _ => Err(RpcError::new(
            "org.apache.hadoop.security.AccessControlException",
            "an NMToken is required",
        )),
    };
    let service = Service::new(protocols::CONTAINER_MANAGEMENT)
        .handle(
            &START_CONTAINERS,
            move |ctx: CallContext, req: pb::StartContainersRequestProto| {
                let seen = s1.clone();
                async move {
                    let user = token_user(&ctx)?;
                    let mut s = seen.lock().expect("seen");
                    s.users.push(user);
                    let mut resp = pb::StartContainersResponseProto::default();
                    for r in req.start_container_request {
                        // The container id travels in the container token's identifier
                        // here (the fake's own format: the container id string).
                        let token = r.container_token.clone().unwrap_or_default();
                        let text = String::from_utf8_lossy(&token.identifier).into_owned();
                        let id: ContainerId = text.parse().map_err(|e| RpcError::yarn(format!("{e}")))?;
                        if id.sequence() % 2 == 1 {
                            resp.failed_requests.push(pb::ContainerExceptionMapProto {
                                container_id: Some(container_id_to_pb(&id)),
                                exception: Some(pb::SerializedExceptionProto {
                                    message: Some(format!("Container {id} is refused")),
                                    trace: None,
                                    class_name: Some(
                                        "org.apache.hadoop.yarn.exceptions.InvalidContainerException"
                                            .into(),
                                    ),
                                    cause: None,
                                }),
                            });
                        } else {
                            resp.succeeded_requests.push(container_id_to_pb(&id));
                        }
                        s.starts.push(r);
                    }
                    resp.services_meta_data.push(pb::StringBytesMapProto {
                        key: Some("mapreduce_shuffle".into()),
                        value: Some(vec![0, 0, 0x34, 0x12]),
                    });
                    Ok(resp)
                }
            },
        )
        .handle(
            &STOP_CONTAINERS,
            move |ctx: CallContext, req: pb::StopContainersRequestProto| {
                let seen = s2.clone();
                async move {
                    token_user(&ctx)?;
                    let mut s = seen.lock().expect("seen");
                    let mut resp = pb::StopContainersResponseProto::default();
                    for c in req.container_id {
                        let id = container_id_from_pb(Some(&c), "stop").map_err(|e| RpcError::yarn(e.to_string()))?;
                        s.stops.push(id);
                        resp.succeeded_requests.push(c);
                    }
                    Ok(resp)
                }
            },
        )
        .handle(
            &GET_CONTAINER_STATUSES,
            move |ctx: CallContext, req: pb::GetContainerStatusesRequestProto| {
                let _seen = s3.clone();
                async move {
                    token_user(&ctx)?;
                    Ok(pb::GetContainerStatusesResponseProto {
                        status: req
                            .container_id
                            .into_iter()
                            .map(|c| pb::ContainerStatusProto {
                                container_id: Some(c),
                                state: Some(pb::ContainerStateProto::CRunning as i32),
                                exit_status: Some(-1000),
                                ..Default::default()
                            })
                            .collect(),
                        failed_requests: Vec::new(),
                    })
                }
            },
        );
    let server = RpcServer::bind(
        "127.0.0.1:0".parse().expect("addr"),
        vec![service],
        ServerConfig {
            name: "fake-nm".into(),
            idle_timeout,
            mechanisms: vec![
                Mechanism::token(NmVerifier {
                    handshakes: handshakes.clone(),
                }),
                Mechanism::Simple,
            ],
            ..ServerConfig::default()
        },
    )
    .await
    .expect("bind the fake NodeManager");
    (server, seen, handshakes)
}

fn container(seq: i64, node: &NodeId) -> Container {
    let id = ContainerId::new(attempt(), seq);
    Container {
        id,
        node: node.clone(),
        node_http_address: format!("{}:8042", node.host),
        resource: Resource::new(256, 1),
        priority: 0,
        token: Some(Token::new(
            id.to_string().into_bytes(),
            b"ct-pw".to_vec(),
            kind::CONTAINER,
            node.to_string(),
        )),
        allocation_request_id: -1,
    }
}

#[tokio::test]
async fn containers_start_stop_and_report_with_the_nodes_nm_token() {
    tokio::time::timeout(Duration::from_secs(120), async {
        let (server, seen, handshakes) = fake_nm(Duration::from_secs(20)).await;
        let node = NodeId::new("127.0.0.1", i32::from(server.local_addr().port()));
        let cache = NmTokenCache::new();
        let nm = NmClient::new(attempt(), cache.clone())
            .with_timeouts(Duration::from_secs(5), Duration::from_secs(5));
        let launch = LaunchContext::command("echo hi").env("K", "V");

        // No NMToken for the node yet: nothing is sent.
        let err = nm
            .start_container(&container(2, &node), &launch)
            .await
            .err();
        match &err {
            Some(e @ AmError::NoNmToken { .. }) => {
                assert_eq!(e.to_string(), format!("No NMToken sent for {node}"));
            }
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(handshakes.load(Ordering::SeqCst), 0);

        cache.set(node.to_string(), nm_token(&node, 0));
        let started = nm
            .start_container(&container(2, &node), &launch)
            .await
            .expect("start");
        assert_eq!(
            started.services_meta_data,
            vec![("mapreduce_shuffle".to_string(), vec![0, 0, 0x34, 0x12])]
        );
        {
            let s = seen.lock().expect("seen");
            assert_eq!(
                s.users,
                [attempt().to_string()],
                "the connection is the attempt's"
            );
            let clc = s.starts[0].container_launch_context.clone().expect("clc");
            assert_eq!(clc.command, ["echo hi"]);
            let token = s.starts[0]
                .container_token
                .clone()
                .expect("container token");
            assert_eq!(
                token.identifier,
                ContainerId::new(attempt(), 2).to_string().into_bytes()
            );
        }

        // The node refuses this one: its Java exception comes back.
        let err = nm
            .start_container(&container(3, &node), &launch)
            .await
            .err();
        match err {
            Some(AmError::Container {
                operation,
                class_name,
                message,
                container,
                ..
            }) => {
                assert_eq!(operation, "start");
                assert_eq!(
                    class_name,
                    "org.apache.hadoop.yarn.exceptions.InvalidContainerException"
                );
                assert_eq!(message, format!("Container {container} is refused"));
            }
            other => panic!("unexpected {other:?}"),
        }

        let status = nm
            .container_status(ContainerId::new(attempt(), 2), &node)
            .await
            .expect("status");
        assert_eq!(status.state, ContainerState::Running);
        nm.stop_container(ContainerId::new(attempt(), 2), &node)
            .await
            .expect("stop");
        assert_eq!(
            seen.lock().expect("seen").stops,
            [ContainerId::new(attempt(), 2)]
        );
        // All of that went over one authenticated connection.
        assert_eq!(handshakes.load(Ordering::SeqCst), 1);

        // A new NMToken for the node (a rolled key): the next call logs in with it.
        cache.set(node.to_string(), nm_token(&node, 1));
        nm.container_status(ContainerId::new(attempt(), 2), &node)
            .await
            .expect("status with the new token");
        assert_eq!(handshakes.load(Ordering::SeqCst), 2);

        // A container without a container token cannot be started.
        let mut bare = container(4, &node);
        bare.token = None;
        assert!(matches!(
            nm.start_container(&bare, &launch).await,
            Err(AmError::InvalidRequest(_))
        ));
    })
    .await
    .expect("test timed out");
}

#[tokio::test]
async fn a_connection_the_node_closed_when_idle_is_reopened() {
    tokio::time::timeout(Duration::from_secs(60), async {
        let (server, _seen, handshakes) = fake_nm(Duration::from_millis(200)).await;
        let node = NodeId::new("127.0.0.1", i32::from(server.local_addr().port()));
        let cache = NmTokenCache::new();
        cache.set(node.to_string(), nm_token(&node, 0));
        let nm = NmClient::new(attempt(), cache);
        let id = ContainerId::new(attempt(), 2);
        nm.container_status(id, &node).await.expect("first status");
        // The node closes the idle connection; the next call logs in again.
        common::wait_connections_closed(&server, Duration::from_secs(30)).await;
        nm.container_status(id, &node)
            .await
            .expect("status after the idle close");
        assert_eq!(handshakes.load(Ordering::SeqCst), 2);
    })
    .await
    .expect("test timed out");
}
