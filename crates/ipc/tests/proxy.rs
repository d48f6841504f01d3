//! The client proxy against real servers on loopback: servers that come up
//! late or never, failover away from a standby, connections that break
//! while a call waits, and tokens replaced while the proxy lives.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use hadoop_protos::common::UserInformationProto;
use spindle_common::security::Token;
use spindle_ipc::retry::RM_PROXY_RETRIED;
use spindle_ipc::sasl::AuthMethod;
use spindle_ipc::{
    class, CallContext, CallError, ConnectRetry, Failure, Limit, Mechanism, Method, ProxyConfig,
    RetryPolicy, RpcError, RpcProxy, RpcServer, ServerConfig, Service, Sleep, TokenVerifier,
    VerifiedToken,
};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

const PROTOCOL: &str = "org.apache.spindle.test.ProxyTestProtocol";
/// The test protocol's methods, outside Spindle's table as its protocol is.
type Echo = Method<UserInformationProto, UserInformationProto>;
const WHOAMI: Echo = Method::idempotent(PROTOCOL, "whoami");
const HANG_AT_MOST_ONCE: Echo = Method::at_most_once(PROTOCOL, "hang");
const HANG_NOT_IDEMPOTENT: Echo = Method::not_idempotent(PROTOCOL, "hang");

async fn bounded<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(60), f)
        .await
        .expect("test timed out")
}

/// What this test binary's tracing subscriber wrote (INFO and above): the
/// proxy's retries, which a test waits for.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Log {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Log {
    /// The process-wide subscriber (tasks may log from any thread),
    /// installed on first use.
    fn get() -> Log {
        static LOG: OnceLock<Log> = OnceLock::new();
        LOG.get_or_init(|| {
            let log = Log::default();
            let writer = log.clone();
            tracing_subscriber::fmt()
                .with_max_level(tracing::Level::INFO)
                .with_ansi(false)
                .with_writer(move || writer.clone())
                .init();
            log
        })
        .clone()
    }

    /// Whether the proxy logged that it could not reach `addr` and will try
    /// again: a connection-level retry, or a retry of the policy.
    fn retried(&self, addr: SocketAddr) -> bool {
        let text = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let connect = format!("Retrying connect to server: {addr}.");
        let policy = format!("server={addr} ");
        String::from_utf8_lossy(&text).lines().any(|l| {
            l.contains(&connect) || (l.contains("; retrying after ") && l.contains(&policy))
        })
    }
}

/// A port nothing listens on (yet).
fn free_addr() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr")
}

/// Accepts identifiers `good:<user>` whose password is `pw-<user>`.
struct Verifier;

impl TokenVerifier for Verifier {
    fn kind(&self) -> &str {
        "TEST_TOKEN"
    }

    fn verify(&self, identifier: &[u8]) -> Result<VerifiedToken, String> {
        let text = String::from_utf8_lossy(identifier);
        let user = text
            .strip_prefix("good:")
            .ok_or_else(|| format!("token identifier '{text}' is not known"))?;
        Ok(VerifiedToken {
            real_user: None,
            password: format!("pw-{user}").into_bytes(),
            user: user.to_string(),
        })
    }
}

fn token(user: &str) -> Token {
    Token {
        identifier: format!("good:{user}").into_bytes(),
        password: format!("pw-{user}").into_bytes(),
        kind: "TEST_TOKEN".into(),
        service: String::new(),
    }
}

/// What a test server does and saw.
#[derive(Clone, Default)]
struct Behaviour {
    name: String,
    /// Answer every call with StandbyException.
    standby: bool,
    /// Calls received, by every method.
    calls: Arc<AtomicUsize>,
    /// The first `hang` call never answers.
    hung: Arc<AtomicUsize>,
}

/// `whoami` answers the caller's user and, as real_user, the server's name
/// and how the caller authenticated. `hang` never answers its first call.
async fn server_on(addr: SocketAddr, b: &Behaviour, idle: Duration) -> RpcServer {
    let (w, h) = (b.clone(), b.clone());
    let service = Service::new(PROTOCOL)
        .handle(
            &WHOAMI,
            move |ctx: CallContext, _req: UserInformationProto| {
                let b = w.clone();
                async move {
                    b.calls.fetch_add(1, Ordering::SeqCst);
                    if b.standby {
                        return Err(RpcError::new(class::STANDBY, "Server is in standby state"));
                    }
                    let auth = match ctx.auth {
                        AuthMethod::Simple => "SIMPLE".to_string(),
                        AuthMethod::Token { user, .. } => format!("TOKEN:{user}"),
                        AuthMethod::Kerberos { principal, .. } => format!("KERBEROS:{principal}"),
                    };
                    Ok(UserInformationProto {
                        effective_user: Some(ctx.user),
                        real_user: Some(format!("{}/{auth}", b.name)),
                    })
                }
            },
        )
        .handle(
            &HANG_AT_MOST_ONCE,
            move |_ctx: CallContext, req: UserInformationProto| {
                let b = h.clone();
                async move {
                    b.calls.fetch_add(1, Ordering::SeqCst);
                    if b.hung.fetch_add(1, Ordering::SeqCst) == 0 {
                        std::future::pending::<()>().await;
                    }
                    Ok(req)
                }
            },
        );
    let config = ServerConfig {
        mechanisms: vec![Mechanism::token(Verifier), Mechanism::Simple],
        name: b.name.clone(),
        idle_timeout: idle,
        ..ServerConfig::default()
    };
    RpcServer::bind(addr, vec![service], config)
        .await
        .expect("bind the test server")
}

async fn server(b: &Behaviour) -> RpcServer {
    server_on(([127, 0, 0, 1], 0).into(), b, Duration::from_secs(20)).await
}

fn behaviour(name: &str) -> Behaviour {
    Behaviour {
        name: name.into(),
        ..Behaviour::default()
    }
}

fn config(servers: &[String], policy: RetryPolicy) -> ProxyConfig {
    let mut c = ProxyConfig::new(String::new(), "alice", PROTOCOL).with_policy(policy);
    c.servers = servers.to_vec();
    c.connect_timeout = Duration::from_secs(5);
    c.call_timeout = Duration::from_secs(10);
    c
}

async fn whoami(proxy: &RpcProxy) -> Result<(String, String), CallError> {
    let r: UserInformationProto = proxy
        .call(&WHOAMI, &UserInformationProto::default())
        .await?;
    Ok((
        r.effective_user.unwrap_or_default(),
        r.real_user.unwrap_or_default(),
    ))
}

fn retry_every(ms: u64, times: u32) -> RetryPolicy {
    RetryPolicy::OnNetworkFailures {
        on: RM_PROXY_RETRIED,
        limit: Limit::Count(times),
        sleep: Sleep::Fixed(Duration::from_millis(ms)),
    }
}

/// The server is down when the first call starts and comes up once the
/// proxy has failed to reach it: the call succeeds, by policy-level retries
/// or by connection-level ones.
#[tokio::test]
async fn a_server_that_comes_up_late_is_reached() {
    let log = Log::get();
    bounded(async {
        for by_policy in [true, false] {
            let addr = free_addr();
            let mut c = if by_policy {
                config(&[addr.to_string()], retry_every(20, 500))
            } else {
                config(&[addr.to_string()], RetryPolicy::TryOnceThenFail)
            };
            if !by_policy {
                c.connect_retry = ConnectRetry {
                    max_retries: 500,
                    retry_interval: Duration::from_millis(20),
                    max_retries_on_timeouts: 0,
                };
            }
            let proxy = RpcProxy::new(c);
            let b = behaviour("late");
            let late = {
                let b = b.clone();
                let log = log.clone();
                tokio::spawn(async move {
                    wait_until("the proxy failed to reach the server and retries", || {
                        log.retried(addr)
                    })
                    .await;
                    server_on(addr, &b, Duration::from_secs(20)).await
                })
            };
            let (user, who) = whoami(&proxy).await.expect("reached once the server is up");
            assert_eq!((user.as_str(), who.as_str()), ("alice", "late/SIMPLE"));
            assert_eq!(b.calls.load(Ordering::SeqCst), 1);
            drop(late.await.expect("server task"));
        }
    })
    .await;
}

/// Nothing ever listens: the call ends after the policy's retries with an
/// error naming the server and the attempts.
#[tokio::test]
async fn a_server_that_never_comes_up_is_named_with_the_attempts() {
    bounded(async {
        let addr = free_addr().to_string();
        let mut c = config(std::slice::from_ref(&addr), retry_every(1, 3));
        c.connect_retry = ConnectRetry {
            max_retries: 2,
            retry_interval: Duration::from_millis(1),
            max_retries_on_timeouts: 0,
        };
        let err = whoami(&RpcProxy::new(c))
            .await
            .expect_err("nothing listens");
        assert_eq!(err.addr, addr);
        assert_eq!(err.attempts, 4, "{err}");
        assert_eq!(err.failure(), Failure::Connect);
        assert!(err.is_transport());
        let text = err.to_string();
        assert!(text.contains(&addr), "{text}");
        assert!(text.contains("after 4 attempts"), "{text}");

        // Without retries, one attempt and no word about attempts.
        let err = whoami(&RpcProxy::new(config(
            std::slice::from_ref(&addr),
            RetryPolicy::TryOnceThenFail,
        )))
        .await
        .expect_err("nothing listens");
        assert_eq!(err.attempts, 1);
        assert!(err
            .to_string()
            .starts_with(&format!("whoami on {addr} failed: ")));
    })
    .await;
}

/// The first server is standby: the call fails over to the second and
/// later calls go there directly.
#[tokio::test]
async fn standby_fails_over_and_later_calls_stay() {
    bounded(async {
        let mut standby = behaviour("rm1");
        standby.standby = true;
        let active = behaviour("rm2");
        let (s1, s2) = (server(&standby).await, server(&active).await);
        let servers = [s1.local_addr().to_string(), s2.local_addr().to_string()];
        let proxy = RpcProxy::new(config(
            &servers,
            RetryPolicy::FailoverOnNetworkException {
                max_failovers: 4,
                max_retries: 0,
                sleep_base: Duration::from_millis(5),
                sleep_max: Duration::from_millis(20),
            },
        ));
        assert_eq!(proxy.addr(), servers[0]);
        let (_, who) = whoami(&proxy).await.expect("answered by the active one");
        assert_eq!(who, "rm2/SIMPLE");
        assert_eq!(standby.calls.load(Ordering::SeqCst), 1);
        assert_eq!(proxy.addr(), servers[1]);
        for _ in 0..3 {
            assert_eq!(whoami(&proxy).await.expect("again").1, "rm2/SIMPLE");
        }
        assert_eq!(standby.calls.load(Ordering::SeqCst), 1, "no call went back");
        assert_eq!(active.calls.load(Ordering::SeqCst), 4);

        // Both standby: the failovers run out, and the error says so.
        let mut other = behaviour("rm3");
        other.standby = true;
        let s3 = server(&other).await;
        let both = [servers[0].clone(), s3.local_addr().to_string()];
        let proxy = RpcProxy::new(config(
            &both,
            RetryPolicy::FailoverOnNetworkException {
                max_failovers: 3,
                max_retries: 0,
                sleep_base: Duration::from_millis(1),
                sleep_max: Duration::from_millis(2),
            },
        ));
        let err = whoami(&proxy).await.expect_err("nobody is active");
        assert_eq!(err.remote_class(), Some(class::STANDBY));
        assert_eq!((err.attempts, err.failovers), (4, 3), "{err}");
        assert!(err.to_string().contains("failovers (3) exceeded"), "{err}");
    })
    .await;
}

/// A TCP relay whose connections can be reset (RST), as a crashed peer or a
/// broken network would.
struct Relay {
    addr: SocketAddr,
    cut: watch::Sender<u64>,
    accepted: Arc<AtomicUsize>,
}

impl Relay {
    async fn start(upstream: SocketAddr) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind relay");
        let addr = listener.local_addr().expect("relay addr");
        let (cut, cuts) = watch::channel(0u64);
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            while let Ok((mut down, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let mut cuts = cuts.clone();
                cuts.mark_unchanged();
                tokio::spawn(async move {
                    let Ok(mut up) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut down, &mut up) => {}
                        _ = cuts.changed() => {
                            let _ = down.set_zero_linger();
                        }
                    }
                });
            }
        });
        Relay {
            addr,
            cut,
            accepted,
        }
    }

    /// Resets every open relayed connection.
    fn reset_all(&self) {
        self.cut.send_modify(|n| *n += 1);
    }
}

async fn wait_until(what: &str, cond: impl Fn() -> bool) {
    for _ in 0..2000 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("timed out waiting until {what}");
}

/// The connection breaks while `hang` waits for its answer: a retry-safe
/// method is sent again and answered; any other fails without a second
/// call, as the server may have acted on it.
#[tokio::test]
async fn a_connection_broken_mid_call_repeats_only_retry_safe_methods() {
    bounded(async {
        for retry_safe in [true, false] {
            let b = behaviour("nm");
            let srv = server(&b).await;
            let relay = Relay::start(srv.local_addr()).await;
            let proxy = RpcProxy::new(config(&[relay.addr.to_string()], retry_every(10, 5)));
            let method = if retry_safe {
                HANG_AT_MOST_ONCE
            } else {
                HANG_NOT_IDEMPOTENT
            };
            let call = {
                let proxy = proxy.clone();
                tokio::spawn(
                    async move { proxy.call(&method, &UserInformationProto::default()).await },
                )
            };
            wait_until("the server holds the call", || {
                b.calls.load(Ordering::SeqCst) == 1
            })
            .await;
            relay.reset_all();
            let outcome = call.await.expect("call task");
            if retry_safe {
                outcome.expect("sent again on a new connection and answered");
                assert_eq!(b.calls.load(Ordering::SeqCst), 2);
                assert_eq!(relay.accepted.load(Ordering::SeqCst), 2);
            } else {
                let err = outcome.expect_err("not repeated");
                assert_eq!(err.failure(), Failure::Socket, "{err}");
                assert_eq!(err.attempts, 1);
                assert!(
                    err.to_string().contains("not idempotent"),
                    "the error says why: {err}"
                );
                assert_eq!(b.calls.load(Ordering::SeqCst), 1, "the call ran once");
            }
        }
    })
    .await;
}

/// A replaced token is presented by the next connection: after an explicit
/// disconnect, and after the server closed the idle connection (the call
/// that finds it closed is sent again at once on a new connection).
#[tokio::test]
async fn a_replaced_token_is_used_by_the_next_connection() {
    bounded(async {
        let b = behaviour("s");
        let srv = server_on(([127, 0, 0, 1], 0).into(), &b, Duration::from_millis(200)).await;
        let c = config(
            &[srv.local_addr().to_string()],
            RetryPolicy::TryOnceThenFail,
        )
        .with_token(token("first"));
        let proxy = RpcProxy::new(c);
        assert_eq!(whoami(&proxy).await.expect("first").1, "s/TOKEN:first");

        assert!(proxy.set_token(token("second")));
        assert!(
            !proxy.set_token(token("second")),
            "the same token is no change"
        );
        // The open connection keeps its authentication.
        assert_eq!(whoami(&proxy).await.expect("same conn").1, "s/TOKEN:first");
        proxy.disconnect();
        assert_eq!(whoami(&proxy).await.expect("new conn").1, "s/TOKEN:second");

        proxy.set_token(token("third"));
        // The server closes the idle connection.
        wait_until("the server closed the idle connection", || {
            srv.stats().connections == 0
        })
        .await;
        assert_eq!(
            whoami(&proxy).await.expect("after the idle close").1,
            "s/TOKEN:third"
        );
        assert!(proxy.is_connected());
    })
    .await;
}
