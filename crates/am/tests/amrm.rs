//! `AmRmClient` against a scripted scheduler: a real IPC server that accepts
//! only AMRMTokens made by a secret manager built here (SASL DIGEST-MD5), and
//! applies Hadoop's response-id rules — −1 before registration, 0 after it, a
//! request repeating the previous id is a duplicate answered with the stored
//! answer, any other id is refused.

mod common;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use hadoop_protos::common::TokenProto;
use hadoop_protos::yarn as pb;
use spindle_am::convert::{container_id_to_pb, node_id_to_pb, resource_to_pb};
use spindle_am::{
    AmError, AmRmClient, AmRmConfig, ContainerRequest, FinalStatus, ResourceRow, StaticRackResolver,
};
use spindle_common::security::{kind, AmRmTokenIdentifier, MasterKey, SecretManager, Token};
use spindle_common::{ApplicationAttemptId, ApplicationId, ContainerId, NodeId, Resource};
use spindle_ipc::methods::application_master::{
    ALLOCATE, FINISH_APPLICATION_MASTER, REGISTER_APPLICATION_MASTER,
};
use spindle_ipc::{
    class, protocols, CallContext, Mechanism, RpcError, RpcServer, ServerConfig, Service,
    TokenVerifier, VerifiedToken,
};

const STEP: Duration = Duration::from_secs(30);

fn attempt() -> ApplicationAttemptId {
    ApplicationAttemptId::new(ApplicationId::new(1_700_000_000_000, 12), 1)
}

fn secrets() -> SecretManager {
    SecretManager::new(MasterKey::new(31, b"amrm-master-key".to_vec()))
}

/// An AMRMToken for `attempt()` as the ResourceManager mints it.
fn amrm_token() -> Token {
    let sm = secrets();
    let identifier = AmRmTokenIdentifier::new(attempt(), sm.current_key().key_id).encode();
    let password = sm.create_password(&identifier);
    Token::new(identifier, password, kind::AM_RM, "")
}

/// The master key after [`secrets`]' first roll.
fn rolled_key() -> MasterKey {
    MasterKey::new(32, b"amrm-master-key-2".to_vec())
}

/// An AMRMToken for `attempt()` made with the rolled key.
fn rolled_amrm_token() -> Token {
    let key = rolled_key();
    let identifier = AmRmTokenIdentifier::new(attempt(), key.key_id).encode();
    let password = key.password(&identifier);
    Token::new(identifier, password, kind::AM_RM, "")
}

/// The scheduler port's token check, built from the same secret manager
/// (which knows the rolled key too). It notes the key of every token it sees.
struct AmrmVerifier(SecretManager, FakeScheduler);

impl TokenVerifier for AmrmVerifier {
    fn kind(&self) -> &str {
        kind::AM_RM
    }

    fn verify(&self, identifier: &[u8]) -> Result<VerifiedToken, String> {
        let id = AmRmTokenIdentifier::decode(identifier).map_err(|e| e.to_string())?;
        self.1.lock().token_keys.push(id.key_id);
        let password = self
            .0
            .retrieve_password(identifier, id.key_id)
            .map_err(|e| e.to_string())?;
        Ok(VerifiedToken {
            real_user: None,
            password,
            user: id.user(),
        })
    }
}

#[derive(Default)]
struct State {
    registered: bool,
    last_response_id: i32,
    last_response: Option<pb::AllocateResponseProto>,
    /// Who called, per call.
    users: Vec<String>,
    /// The key id of the AMRMToken of each connection.
    token_keys: Vec<i32>,
    registers: Vec<pb::RegisterApplicationMasterRequestProto>,
    /// Every allocate request received, duplicates included.
    received: Vec<pb::AllocateRequestProto>,
    /// The requests applied (duplicates are answered, not applied).
    applied: Vec<pb::AllocateRequestProto>,
    /// Contents of the next answers to applied requests.
    script: VecDeque<pb::AllocateResponseProto>,
    /// Until then, every allocate answer is held back (the client gives up
    /// waiting: its answer is "lost").
    stall_until: Option<Instant>,
    finishes: Vec<pb::FinishApplicationMasterRequestProto>,
    /// `finishApplicationMaster` answers is_unregistered=false this many times first.
    unregister_delay: usize,
}

#[derive(Clone, Default)]
struct FakeScheduler(Arc<Mutex<State>>);

fn not_registered() -> RpcError {
    RpcError::new(
        class::APPLICATION_MASTER_NOT_REGISTERED,
        "AM is not registered for known application attempt",
    )
}

impl FakeScheduler {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.0.lock().expect("fake scheduler state")
    }

    /// The RM restarted and forgot the registration.
    fn forget(&self) {
        let mut s = self.lock();
        s.registered = false;
        s.last_response_id = -1;
        s.last_response = None;
    }

    fn register(
        &self,
        ctx: CallContext,
        req: pb::RegisterApplicationMasterRequestProto,
    ) -> Result<pb::RegisterApplicationMasterResponseProto, RpcError> {
        let mut s = self.lock();
        s.users.push(ctx.user);
        if s.registered {
            return Err(RpcError::new(
                class::INVALID_APPLICATION_MASTER_REQUEST,
                "Application Master is already registered",
            ));
        }
        s.registered = true;
        s.last_response_id = 0;
        s.last_response = None;
        s.registers.push(req);
        Ok(pb::RegisterApplicationMasterResponseProto {
            maximum_capability: Some(resource_to_pb(Resource::new(8192, 8))),
            queue: Some("default".into()),
            ..Default::default()
        })
    }

    async fn allocate(
        &self,
        ctx: CallContext,
        req: pb::AllocateRequestProto,
    ) -> Result<pb::AllocateResponseProto, RpcError> {
        let (answer, stall) = {
            let mut s = self.lock();
            s.users.push(ctx.user);
            s.received.push(req.clone());
            if !s.registered {
                return Err(not_registered());
            }
            let id = req.response_id.unwrap_or(0);
            let answer = if s.last_response.is_some() && id.wrapping_add(1) == s.last_response_id {
                s.last_response.clone().ok_or_else(not_registered)?
            } else if id != s.last_response_id {
                return Err(RpcError::new(
                    class::INVALID_APPLICATION_MASTER_REQUEST,
                    format!("expected response id {}, got {id}", s.last_response_id),
                ));
            } else {
                s.applied.push(req);
                let mut answer = s.script.pop_front().unwrap_or_default();
                answer.response_id = Some(s.last_response_id + 1);
                s.last_response_id += 1;
                s.last_response = Some(answer.clone());
                answer
            };
            (answer, s.stall_until)
        };
        if let Some(until) = stall {
            tokio::time::sleep_until(until.into()).await;
        }
        Ok(answer)
    }

    fn finish(
        &self,
        req: pb::FinishApplicationMasterRequestProto,
    ) -> Result<pb::FinishApplicationMasterResponseProto, RpcError> {
        let mut s = self.lock();
        if !s.registered {
            return Err(not_registered());
        }
        s.finishes.push(req);
        let done = s.unregister_delay == 0;
        s.unregister_delay = s.unregister_delay.saturating_sub(1);
        Ok(pb::FinishApplicationMasterResponseProto {
            is_unregistered: Some(done),
        })
    }

    async fn serve(&self) -> RpcServer {
        self.serve_with_idle_timeout(ServerConfig::default().idle_timeout)
            .await
    }

    /// A server that closes connections idle for `idle`.
    async fn serve_with_idle_timeout(&self, idle: Duration) -> RpcServer {
        let (a, b, c) = (self.clone(), self.clone(), self.clone());
        let service = Service::new(protocols::APPLICATION_MASTER)
            .handle(
                &REGISTER_APPLICATION_MASTER,
                move |ctx: CallContext, req: pb::RegisterApplicationMasterRequestProto| {
                    let a = a.clone();
                    async move { a.register(ctx, req) }
                },
            )
            .handle(
                &ALLOCATE,
                move |ctx: CallContext, req: pb::AllocateRequestProto| {
                    let b = b.clone();
                    async move { b.allocate(ctx, req).await }
                },
            )
            .handle(
                &FINISH_APPLICATION_MASTER,
                move |_ctx: CallContext, req: pb::FinishApplicationMasterRequestProto| {
                    let c = c.clone();
                    async move { c.finish(req) }
                },
            );
        RpcServer::bind(
            "127.0.0.1:0".parse().expect("addr"),
            vec![service],
            ServerConfig {
                name: "fake-scheduler".into(),
                mechanisms: vec![Mechanism::token(AmrmVerifier(
                    {
                        let mut sm = secrets();
                        sm.roll(rolled_key()).expect("roll");
                        sm
                    },
                    self.clone(),
                ))],
                idle_timeout: idle,
                ..ServerConfig::default()
            },
        )
        .await
        .expect("bind the fake scheduler")
    }
}

fn client_for(server: &RpcServer, token: Token) -> AmRmClient {
    let mut config = AmRmConfig::new(server.local_addr().to_string(), attempt(), token);
    config.connect_timeout = Duration::from_secs(5);
    config.call_timeout = Duration::from_secs(5);
    config.max_wait = Duration::from_secs(5);
    config.retry_interval = Duration::from_millis(50);
    config.rack_resolver = Arc::new(StaticRackResolver::new([("n1", "/r1"), ("n2", "/r1")]));
    AmRmClient::new(config)
}

/// The asks of a request as `name xN` lines, in request order.
fn asks(req: &pb::AllocateRequestProto) -> Vec<String> {
    req.ask
        .iter()
        .map(|a| {
            format!(
                "P{} {} x{}",
                a.priority.and_then(|p| p.priority).unwrap_or(-1),
                a.resource_name.clone().unwrap_or_default(),
                a.num_containers.unwrap_or(-1)
            )
        })
        .collect()
}

fn granted(seq: i64, node: &NodeId, priority: i32, memory: i64) -> pb::ContainerProto {
    pb::ContainerProto {
        id: Some(container_id_to_pb(&ContainerId::new(attempt(), seq))),
        node_id: Some(node_id_to_pb(node)),
        node_http_address: Some(format!("{}:8042", node.host)),
        resource: Some(resource_to_pb(Resource::new(memory, 1))),
        priority: Some(pb::PriorityProto {
            priority: Some(priority),
        }),
        container_token: Some(TokenProto {
            identifier: b"container-token".to_vec(),
            password: b"pw".to_vec(),
            kind: kind::CONTAINER.into(),
            service: node.to_string(),
        }),
        ..Default::default()
    }
}

fn nm_token(node: &NodeId, id: &[u8]) -> pb::NmTokenProto {
    pb::NmTokenProto {
        node_id: Some(node_id_to_pb(node)),
        token: Some(TokenProto {
            identifier: id.to_vec(),
            password: b"nm-pw".to_vec(),
            kind: kind::NM.into(),
            service: String::new(),
        }),
    }
}

async fn bounded<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(120), f)
        .await
        .expect("test timed out")
}

#[tokio::test]
async fn register_heartbeat_and_unregister_over_the_amrm_token() {
    bounded(async {
        let fake = FakeScheduler::default();
        let server = fake.serve().await;
        let mut rm = client_for(&server, amrm_token());

        let err = rm.allocate(0.0).await.err();
        assert!(
            matches!(err, Some(AmError::InvalidRequest(_))),
            "allocate before register: {err:?}"
        );

        let reg = rm
            .register("am-host", 4444, "http://am-host:1/")
            .await
            .expect("register");
        assert_eq!(reg.max_capability, Resource::new(8192, 8));
        assert_eq!(rm.response_id(), 0);
        {
            let s = fake.lock();
            assert_eq!(
                s.users,
                [attempt().to_string()],
                "the token names the caller"
            );
            assert_eq!(s.registers[0].host.as_deref(), Some("am-host"));
            assert_eq!(s.registers[0].rpc_port, Some(4444));
        }
        // Beyond the maximum: refused locally.
        assert!(rm
            .add_request(&ContainerRequest::new(1, Resource::new(9000, 1)))
            .is_err());

        let anywhere = ContainerRequest::new(1, Resource::new(1024, 1));
        let on_n1 = ContainerRequest::new(1, Resource::new(1024, 1)).on_hosts(["n1"]);
        rm.add_request(&anywhere).expect("add");
        rm.add_request(&anywhere).expect("add");
        rm.add_request(&on_n1).expect("add");

        let n1 = NodeId::new("n1", 1234);
        fake.lock().script.push_back(pb::AllocateResponseProto {
            allocated_containers: vec![granted(2, &n1, 1, 1024)],
            nm_tokens: vec![nm_token(&n1, b"nm-n1")],
            num_cluster_nodes: Some(2),
            limit: Some(resource_to_pb(Resource::new(3072, 3))),
            ..Default::default()
        });
        let first = rm.allocate(0.1).await.expect("first heartbeat");
        assert_eq!(first.response_id, 1);
        assert_eq!(rm.response_id(), 1);
        assert_eq!(first.num_cluster_nodes, 2);
        assert_eq!(first.headroom, Resource::new(3072, 3));
        assert_eq!(first.allocated.len(), 1);
        let cache = rm.nm_token_cache();
        let token = cache
            .get("n1:1234")
            .expect("NMToken cached under the NodeId string");
        assert_eq!(token.identifier, b"nm-n1");
        assert_eq!(token.service, "n1:1234");
        {
            let s = fake.lock();
            assert_eq!(asks(&s.applied[0]), ["P1 n1 x1", "P1 /r1 x1", "P1 * x3"]);
            assert_eq!(s.applied[0].response_id, Some(0));
            assert!((s.applied[0].progress.unwrap_or(0.0) - 0.1).abs() < 1e-6);
        }

        // The container on n1 satisfies the request naming n1.
        let c = &first.allocated[0];
        assert_eq!(rm.container_granted(c), Some(on_n1));
        // Nothing asks for a container at priority 7: it cannot be matched.
        let big = spindle_am::Container::from_pb(&granted(9, &n1, 7, 1024)).expect("container");
        assert_eq!(rm.container_granted(&big), None);
        rm.release(big.id);
        rm.update_blacklist(&["bad-node".to_string()], &[]);

        // Only the changed rows go out, with the release and the blacklist.
        let second = rm.allocate(0.2).await.expect("second heartbeat");
        assert_eq!(second.response_id, 2);
        {
            let s = fake.lock();
            let req = &s.applied[1];
            assert_eq!(asks(req), ["P1 n1 x0", "P1 /r1 x0", "P1 * x2"]);
            assert_eq!(req.response_id, Some(1));
            assert_eq!(req.release, vec![container_id_to_pb(&big.id)]);
            assert_eq!(
                req.blacklist_request
                    .as_ref()
                    .map(|b| b.blacklist_additions.clone()),
                Some(vec!["bad-node".to_string()])
            );
        }
        // A quiet heartbeat carries nothing.
        rm.allocate(0.3).await.expect("third heartbeat");
        {
            let s = fake.lock();
            let req = &s.applied[2];
            assert!(
                req.ask.is_empty() && req.release.is_empty() && req.blacklist_request.is_none()
            );
        }

        // Unregistering repeats until the RM confirms.
        fake.lock().unregister_delay = 2;
        rm.finish(FinalStatus::Succeeded, "all done", "http://am-host:1/done")
            .await
            .expect("finish");
        let s = fake.lock();
        assert_eq!(s.finishes.len(), 3);
        assert_eq!(s.finishes[0].final_application_status, Some(1));
        assert_eq!(s.finishes[0].diagnostics.as_deref(), Some("all done"));
        assert!(!rm.is_registered());
        assert!(s.users.iter().all(|u| *u == attempt().to_string()));
    })
    .await;
}

#[tokio::test]
async fn a_lost_answer_is_replayed_not_applied_twice() {
    bounded(async {
        let fake = FakeScheduler::default();
        let server = fake.serve().await;
        let mut rm = client_for(&server, amrm_token());
        // Short timeouts: a held-back answer is lost quickly, and the client
        // gives up retrying within a second.
        let mut config = rm.config().clone();
        config.call_timeout = Duration::from_millis(200);
        config.max_wait = Duration::from_millis(700);
        rm = AmRmClient::new(config);
        rm.register("am-host", -1, "").await.expect("register");

        let req = ContainerRequest::new(2, Resource::new(512, 1));
        rm.add_request(&req).expect("add");
        let n2 = NodeId::new("n2", 99);
        fake.lock().script.push_back(pb::AllocateResponseProto {
            allocated_containers: vec![granted(5, &n2, 2, 512)],
            nm_tokens: vec![nm_token(&n2, b"nm-n2")],
            ..Default::default()
        });
        // The scheduler applies the heartbeat but its answers do not arrive.
        fake.lock().stall_until = Some(Instant::now() + Duration::from_secs(3));
        let lost = rm.allocate(0.0).await;
        match &lost {
            Err(e) => assert!(e.is_transport(), "{e}"),
            Ok(a) => panic!("the answer should have been lost, got {a:?}"),
        }
        assert_eq!(rm.response_id(), 0, "no answer, no new response id");
        let applied_once = fake.lock().applied.len();
        assert_eq!(applied_once, 1);

        // Meanwhile the AM wants one more container.
        let more = ContainerRequest::new(2, Resource::new(512, 1)).on_hosts(["n1"]);
        rm.add_request(&more).expect("add");
        let until = fake.lock().stall_until.take().expect("stall");
        tokio::time::sleep_until(until.into()).await;

        // The next heartbeat repeats the unanswered request verbatim; the
        // scheduler recognises it and repeats its answer.
        let replayed = rm.allocate(0.5).await.expect("replayed heartbeat");
        assert_eq!(replayed.response_id, 1);
        assert_eq!(replayed.allocated.len(), 1);
        assert_eq!(replayed.allocated[0].id, ContainerId::new(attempt(), 5));
        assert!(rm.nm_token_cache().contains("n2:99"));
        {
            let s = fake.lock();
            assert_eq!(s.applied.len(), 1, "the duplicate was not applied");
            let first = &s.received[0];
            assert!(
                s.received.len() >= 3,
                "retries and the replay: {}",
                s.received.len()
            );
            for r in &s.received {
                assert_eq!(r, first, "every repetition is the same request");
            }
            assert_eq!(asks(first), ["P2 * x1"]);
        }

        // The change made meanwhile goes in the following heartbeat.
        rm.allocate(0.6).await.expect("next heartbeat");
        let s = fake.lock();
        assert_eq!(s.applied.len(), 2);
        assert_eq!(s.applied[1].response_id, Some(1));
        assert_eq!(asks(&s.applied[1]), ["P2 n1 x1", "P2 /r1 x1", "P2 * x2"]);
    })
    .await;
}

#[tokio::test]
async fn a_forgotten_registration_is_renewed_and_everything_resent() {
    bounded(async {
        let fake = FakeScheduler::default();
        let server = fake.serve().await;
        let mut rm = client_for(&server, amrm_token());
        rm.register("am-host", 7, "http://t/")
            .await
            .expect("register");

        let a = ContainerRequest::new(1, Resource::new(1024, 1)).on_hosts(["n1", "n2"]);
        let b = ContainerRequest::new(3, Resource::new(2048, 2));
        rm.add_request(&a).expect("add");
        rm.add_request(&b).expect("add");
        rm.allocate(0.0).await.expect("heartbeat");
        let released = ContainerId::new(attempt(), 40);
        rm.release(released);
        rm.update_blacklist(&["n9".to_string(), "n8".to_string()], &[]);
        rm.allocate(0.0).await.expect("heartbeat");
        assert_eq!(rm.response_id(), 2);

        // The scheduler restarts; the AM changes one thing before its next heartbeat.
        fake.forget();
        rm.update_blacklist(&[], &["n8".to_string()]);
        rm.remove_request(&b).expect("cancel b");
        let after = rm
            .allocate(0.4)
            .await
            .expect("heartbeat after re-registration");
        assert_eq!(after.response_id, 1);
        assert_eq!(rm.response_id(), 1);

        {
            let s = fake.lock();
            assert_eq!(s.registers.len(), 2, "registered again");
            assert_eq!(s.registers[1].host.as_deref(), Some("am-host"));
            assert_eq!(s.registers[1].rpc_port, Some(7));
            assert_eq!(s.registers[1].tracking_url.as_deref(), Some("http://t/"));
            let resent = s.applied.last().expect("applied");
            assert_eq!(resent.response_id, Some(0));
            // The whole table (cancelled rows are simply absent), every release
            // not yet confirmed, the whole blacklist.
            assert_eq!(
                asks(resent),
                ["P1 n1 x1", "P1 n2 x1", "P1 /r1 x1", "P1 * x1"]
            );
            assert_eq!(resent.release, vec![container_id_to_pb(&released)]);
            let blacklist = resent.blacklist_request.clone().expect("blacklist");
            assert_eq!(blacklist.blacklist_additions, ["n9"]);
            assert!(blacklist.blacklist_removals.is_empty());
        }

        // A confirmed release is not sent again after another restart.
        fake.lock().script.push_back(pb::AllocateResponseProto {
            completed_container_statuses: vec![pb::ContainerStatusProto {
                container_id: Some(container_id_to_pb(&released)),
                state: Some(pb::ContainerStateProto::CComplete as i32),
                exit_status: Some(-100),
                diagnostics: Some("Container released by application".into()),
                ..Default::default()
            }],
            ..Default::default()
        });
        let done = rm.allocate(0.5).await.expect("heartbeat");
        assert_eq!(done.completed.len(), 1);
        assert_eq!(done.completed[0].exit_status, -100);
        fake.forget();
        rm.allocate(0.6)
            .await
            .expect("heartbeat after the second restart");
        {
            let s = fake.lock();
            let resent = s.applied.last().expect("applied");
            assert!(resent.release.is_empty());
            assert_eq!(s.registers.len(), 3);
        }

        // Unregistering after yet another restart registers first, then finishes.
        fake.forget();
        rm.finish(FinalStatus::Failed, "gave up", "")
            .await
            .expect("finish");
        let s = fake.lock();
        assert_eq!(s.registers.len(), 4);
        assert_eq!(s.finishes.len(), 1);
        assert_eq!(s.finishes[0].final_application_status, Some(2));
    })
    .await;
}

#[tokio::test]
async fn refused_requests_are_kept_for_the_next_heartbeat() {
    bounded(async {
        let fake = FakeScheduler::default();
        let server = fake.serve().await;
        let mut rm = client_for(&server, amrm_token());
        rm.register("h", -1, "").await.expect("register");
        let req = ContainerRequest::new(0, Resource::new(256, 1));
        rm.add_request(&req).expect("add");
        rm.release(ContainerId::new(attempt(), 77));
        // The scheduler refuses the heartbeat (here: a response id it does
        // not expect, as if another client had advanced it).
        fake.lock().last_response_id = 5;
        let err = rm.allocate(0.0).await.expect_err("refused");
        assert_eq!(
            err.remote_class(),
            Some(class::INVALID_APPLICATION_MASTER_REQUEST)
        );
        assert!(!err.is_transport());
        // Once the scheduler agrees again, the same rows and release go out.
        fake.lock().last_response_id = 0;
        rm.allocate(0.0).await.expect("heartbeat");
        let s = fake.lock();
        let sent = s.applied.last().expect("applied");
        assert_eq!(asks(sent), ["P0 * x1"]);
        assert_eq!(sent.release.len(), 1);
    })
    .await;
}

#[tokio::test]
async fn a_shutdown_order_ends_the_attempt() {
    bounded(async {
        let fake = FakeScheduler::default();
        let server = fake.serve().await;
        let mut rm = client_for(&server, amrm_token());
        rm.register("h", -1, "").await.expect("register");
        fake.lock().script.push_back(pb::AllocateResponseProto {
            a_m_command: Some(pb::AmCommandProto::AmShutdown as i32),
            ..Default::default()
        });
        let err = rm.allocate(0.0).await.err();
        assert!(matches!(err, Some(AmError::Shutdown { .. })), "{err:?}");
    })
    .await;
}

#[tokio::test]
async fn a_forged_token_is_refused_at_once() {
    bounded(async {
        let fake = FakeScheduler::default();
        let server = fake.serve().await;
        let mut forged = amrm_token();
        forged.password = b"guessed".to_vec();
        let mut rm = client_for(&server, forged);
        let started = Instant::now();
        let err = rm.register("h", -1, "").await.expect_err("refused");
        assert_eq!(err.remote_class(), Some(class::ACCESS_CONTROL), "{err}");
        assert!(!err.is_transport());
        assert!(started.elapsed() < STEP, "no retrying a refusal");
        assert!(fake.lock().users.is_empty(), "no call got through");
        // A row-level check of what a caller sees.
        let row = ResourceRow {
            priority: 0,
            resource_name: "*".into(),
            capability: Resource::new(1, 1),
            num_containers: 1,
            relax_locality: true,
        };
        assert_eq!(row.to_string(), "P0 * <memory:1, vCores:1> x1");
    })
    .await;
}

#[tokio::test]
async fn a_rolled_amrm_token_is_presented_by_the_next_connection() {
    bounded(async {
        let fake = FakeScheduler::default();
        // Connections idle for 200 ms are closed.
        let server = fake
            .serve_with_idle_timeout(Duration::from_millis(200))
            .await;
        let mut rm = client_for(&server, amrm_token());
        rm.register("am-host", -1, "").await.expect("register");
        let rolled = rolled_amrm_token();
        fake.lock().script.push_back(pb::AllocateResponseProto {
            am_rm_token: Some(TokenProto {
                identifier: rolled.identifier.clone(),
                password: rolled.password.clone(),
                kind: kind::AM_RM.into(),
                service: String::new(),
            }),
            ..Default::default()
        });
        rm.allocate(0.0).await.expect("allocate");
        assert_eq!(rm.config().token.identifier, rolled.identifier);
        // The open connection keeps the old token; once the server closed
        // it, the next connection presents the new one.
        rm.allocate(0.0)
            .await
            .expect("allocate on the same connection");
        assert_eq!(fake.lock().token_keys, [31]);
        common::wait_connections_closed(&server, STEP).await;
        rm.allocate(0.0)
            .await
            .expect("allocate on a new connection");
        assert_eq!(fake.lock().token_keys, [31, 32]);
        assert!(fake
            .lock()
            .users
            .iter()
            .all(|u| *u == attempt().to_string()));
    })
    .await;
}
