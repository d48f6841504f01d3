//! The client proxy: one place where a Spindle client connects,
//! authenticates, reconnects, retries and fails over.
//!
//! An [`RpcProxy`] stands for one protocol on one server, or on a list of
//! servers tried in turn (the ResourceManagers of an HA pair). Each call
//! takes a [`Method`] of the table ([`crate::methods`]), which types its
//! request and answer and says whether it may be sent twice. The proxy
//! keeps one pipelined connection ([`IpcClient`]) and:
//!
//! - opens it on first use and whenever the last one closed, with the
//!   connection-level retries of [`ConnectRetry`];
//! - authenticates with SIMPLE, or with the token of [`ProxyConfig::token`]
//!   (SASL TOKEN / DIGEST-MD5); [`RpcProxy::set_token`] replaces the token
//!   while the proxy lives, and the next connection presents the new one;
//! - sends a call once more at once on a new connection when a reused
//!   connection turns out to have been closed by the server (it closes idle
//!   connections), which Hadoop's client avoids by closing idle connections
//!   first;
//! - asks its [`RetryPolicy`] after any other failure, and retries the same
//!   server or moves to the next one (and stays there for later calls), or
//!   gives up with a [`CallError`] that names the server and the attempts.
//!
//! Each retry and failover is logged once at WARN with the server, the
//! attempt count and the pause, as Hadoop's `RetryInvocationHandler` does.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use prost::Message;
use spindle_common::security::Token;
use spindle_common::text::escaped;
use tracing::{debug, info, warn};

use crate::client::{ClientAuth, ClientOptions, IpcClient, KerberosClient};
use crate::error::IpcError;
use crate::frame;
use crate::methods::Method;
use crate::retry::{Attempts, ConnectRetry, Decision, Failure, Idempotence, RetryPolicy};

/// Everything an [`RpcProxy`] needs.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// `host:port` of each server, in failover order. One entry without HA.
    pub servers: Vec<String>,
    /// The user named in the connection context (SIMPLE).
    pub user: String,
    /// The protocol name (see [`crate::protocols`]).
    pub protocol: String,
    /// Authenticate with this token (SASL TOKEN / DIGEST-MD5).
    pub token: Option<Token>,
    /// Authenticate with Kerberos when the server offers it.
    pub kerberos: Option<KerberosClient>,
    /// `ipc.client.connect.timeout`: time to open a connection, SASL included.
    pub connect_timeout: Duration,
    /// How long one call waits for its answer.
    pub call_timeout: Duration,
    /// Largest response frame accepted.
    pub max_frame_bytes: usize,
    /// Retries while a connection cannot be opened.
    pub connect_retry: ConnectRetry,
    /// What to do after a failed call.
    pub policy: RetryPolicy,
}

impl ProxyConfig {
    /// One server, SIMPLE authentication as `user`, Hadoop's default
    /// timeouts, and no retries at all: the caller decides what a failure
    /// means. See [`crate::yarn_conf`] for the configurations of YARN's
    /// proxies.
    pub fn new(
        server: impl Into<String>,
        user: impl Into<String>,
        protocol: impl Into<String>,
    ) -> ProxyConfig {
        ProxyConfig {
            servers: vec![server.into()],
            user: user.into(),
            protocol: protocol.into(),
            token: None,
            kerberos: None,
            connect_timeout: Duration::from_secs(20),
            call_timeout: Duration::from_secs(60),
            max_frame_bytes: frame::DEFAULT_MAX_FRAME_BYTES,
            connect_retry: ConnectRetry::NONE,
            policy: RetryPolicy::TryOnceThenFail,
        }
    }

    /// Authenticates with `token`.
    pub fn with_token(mut self, token: Token) -> ProxyConfig {
        self.token = Some(token);
        self
    }

    /// Decides after failures with `policy`.
    pub fn with_policy(mut self, policy: RetryPolicy) -> ProxyConfig {
        self.policy = policy;
        self
    }
}

/// A call that failed for good.
#[derive(Debug, thiserror::Error)]
#[error("{method} on {addr} failed{}: {source}", attempts_text(*.attempts, .gave_up.as_deref()))]
pub struct CallError {
    /// The method called (`connect` for [`RpcProxy::connect`]).
    pub method: String,
    /// The server of the last attempt.
    pub addr: String,
    /// Attempts made (1 when the first failure was final).
    pub attempts: u32,
    /// Failovers made.
    pub failovers: u32,
    /// Why the policy stopped retrying a failure it otherwise retries.
    pub gave_up: Option<String>,
    /// The last attempt's error.
    #[source]
    pub source: IpcError,
}

fn attempts_text(attempts: u32, gave_up: Option<&str>) -> String {
    match (attempts, gave_up) {
        (1, None) => String::new(),
        (1, Some(why)) => format!(" ({why})"),
        (n, None) => format!(" after {n} attempts"),
        (n, Some(why)) => format!(" after {n} attempts ({why})"),
    }
}

impl CallError {
    /// How the last attempt failed.
    pub fn failure(&self) -> Failure {
        Failure::of(&self.source)
    }

    /// The Java class name of the exception the server answered with, if
    /// the last attempt reached a server that refused the call.
    pub fn remote_class(&self) -> Option<&str> {
        self.source.remote_class()
    }

    /// True when the call may not have reached the server or its answer was
    /// lost (no connection, broken connection, timeout).
    pub fn is_transport(&self) -> bool {
        matches!(
            self.source,
            IpcError::Io { .. } | IpcError::Closed { .. } | IpcError::Timeout { .. }
        )
    }
}

/// The connection the proxy holds.
struct Conn {
    /// Index in `servers` of the server in use.
    index: usize,
    client: Option<IpcClient>,
}

struct Inner {
    config: ProxyConfig,
    token: Mutex<Option<Token>>,
    conn: Mutex<Conn>,
    /// Held while a connection is being opened, so that concurrent calls
    /// wait for one connection instead of opening several.
    opening: tokio::sync::Mutex<()>,
}

/// A client of one protocol on one server or a failover list of servers
/// (see the module documentation). Cheap to clone; clones share the
/// connection.
#[derive(Clone)]
pub struct RpcProxy {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for RpcProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RpcProxy")
            .field("servers", &self.inner.config.servers)
            .field("protocol", &self.inner.config.protocol)
            .field("current", &self.addr())
            .finish()
    }
}

impl RpcProxy {
    /// A proxy for `config`; it connects on the first call.
    pub fn new(mut config: ProxyConfig) -> RpcProxy {
        let token = config.token.take();
        RpcProxy {
            inner: Arc::new(Inner {
                config,
                token: Mutex::new(token),
                conn: Mutex::new(Conn {
                    index: 0,
                    client: None,
                }),
                opening: tokio::sync::Mutex::new(()),
            }),
        }
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Conn> {
        self.inner.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The settings the proxy was made with (without its current token).
    pub fn config(&self) -> &ProxyConfig {
        &self.inner.config
    }

    /// The server in use: the one the next call goes to.
    pub fn addr(&self) -> String {
        let index = self.conn().index;
        self.server(index)
    }

    /// True while the proxy holds an open connection.
    pub fn is_connected(&self) -> bool {
        self.conn().client.as_ref().is_some_and(IpcClient::is_open)
    }

    /// The token the next connection presents.
    pub fn token(&self) -> Option<Token> {
        self.inner
            .token
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Replaces the token (the ResourceManager rolled the AMRMToken, a node's
    /// NMToken changed). The open connection stays as it is; the next
    /// connection presents the new token. Returns whether it changed.
    pub fn set_token(&self, token: Token) -> bool {
        let mut current = self.inner.token.lock().unwrap_or_else(|e| e.into_inner());
        if current.as_ref() == Some(&token) {
            return false;
        }
        *current = Some(token);
        true
    }

    /// Closes the connection; the next call opens a new one.
    pub fn disconnect(&self) {
        self.conn().client = None;
    }

    /// Opens the connection now (if none is open), retrying as a call would.
    pub async fn connect(&self) -> Result<ClientAuth, CallError> {
        // Opening a connection changes nothing on the server: safe to repeat.
        self.run("connect", Idempotence::Idempotent, |client| async move {
            Ok(client.auth())
        })
        .await
    }

    /// Calls `method` with `req` and answers its response, retrying and
    /// failing over as the policy and the method's [`Idempotence`] allow.
    /// `method` must belong to the proxy's protocol.
    pub async fn call<Req, Resp>(
        &self,
        method: &Method<Req, Resp>,
        req: &Req,
    ) -> Result<Resp, CallError>
    where
        Req: Message,
        Resp: Message + Default,
    {
        debug_assert_eq!(
            method.protocol, self.inner.config.protocol,
            "{} called through a proxy of another protocol",
            method.name
        );
        let name = method.name;
        self.run(name, method.idempotence, |client| async move {
            client.call(name, req).await
        })
        .await
    }

    /// One call of the method `name` under the retry policy.
    async fn run<T, F, Fut>(
        &self,
        name: &'static str,
        idempotence: Idempotence,
        attempt: F,
    ) -> Result<T, CallError>
    where
        F: Fn(IpcClient) -> Fut,
        Fut: std::future::Future<Output = Result<T, IpcError>>,
    {
        let started = Instant::now();
        let mut at = Attempts::default();
        let mut resent_on_stale = false;
        loop {
            let (index, outcome, reused) = match self.client().await {
                Ok((index, client, fresh)) => {
                    let outcome = attempt(client.clone()).await;
                    if matches!(&outcome, Err(e) if !matches!(e, IpcError::Remote { .. })) {
                        // A broken or timed-out connection is not used again.
                        self.drop_client(&client);
                    }
                    (index, outcome, !fresh)
                }
                Err((index, e)) => (index, Err(e), false),
            };
            let addr = self.server(index);
            let e = match outcome {
                Ok(v) => {
                    if at.retries > 0 {
                        info!(
                            server = %addr,
                            "{} succeeded after {} attempts",
                            name,
                            at.retries + 1
                        );
                    }
                    return Ok(v);
                }
                Err(e) => e,
            };
            let failure = Failure::of(&e);
            // The server closed a connection we had kept (NodeManagers and
            // RMs close idle ones): the call most likely never reached it.
            // Hadoop's policies treat EOF as a connection failure too, for
            // every method; Spindle sends again at once, once, then lets the
            // policy decide.
            if reused && !resent_on_stale && matches!(failure, Failure::Eof | Failure::Connect) {
                resent_on_stale = true;
                debug!(server = %addr, error = %escaped(&e.to_string()), "{}: the connection had been closed; sending again on a new one", name);
                continue;
            }
            at.elapsed = started.elapsed();
            let decision = self.inner.config.policy.decide(failure, idempotence, at);
            let attempts = at.retries + 1;
            match decision {
                Decision::Fail(gave_up) => {
                    return Err(CallError {
                        method: name.to_string(),
                        addr,
                        attempts,
                        failovers: at.failovers,
                        gave_up,
                        source: e,
                    })
                }
                Decision::Retry(pause) => {
                    warn!(
                        server = %addr,
                        attempts,
                        retry_in_ms = pause.as_millis() as u64,
                        "{} failed ({failure}): {}; retrying after {} ms",
                        name,
                        escaped(&e.to_string()),
                        pause.as_millis()
                    );
                    tokio::time::sleep(pause).await;
                }
                Decision::FailoverAndRetry(pause) => {
                    let next = self.fail_over(index);
                    warn!(
                        server = %addr,
                        next = %next,
                        attempts,
                        failovers = at.failovers + 1,
                        retry_in_ms = pause.as_millis() as u64,
                        "{} failed ({failure}): {}; failing over to {next} after {} ms",
                        name,
                        escaped(&e.to_string()),
                        pause.as_millis()
                    );
                    at.failovers += 1;
                    tokio::time::sleep(pause).await;
                }
            }
            at.retries += 1;
        }
    }

    fn server(&self, index: usize) -> String {
        self.inner
            .config
            .servers
            .get(index)
            .cloned()
            .unwrap_or_default()
    }

    /// Moves to the server after `from`, unless another call already moved
    /// on. Returns the server now in use.
    fn fail_over(&self, from: usize) -> String {
        let n = self.inner.config.servers.len().max(1);
        let mut conn = self.conn();
        if conn.index == from {
            conn.index = (from + 1) % n;
            conn.client = None;
        }
        let index = conn.index;
        drop(conn);
        self.server(index)
    }

    fn drop_client(&self, client: &IpcClient) {
        let mut conn = self.conn();
        if conn
            .client
            .as_ref()
            .is_some_and(|c| c.same_connection(client))
        {
            conn.client = None;
        }
    }

    fn open_client(&self) -> Option<(usize, IpcClient)> {
        let conn = self.conn();
        match &conn.client {
            Some(c) if c.is_open() => Some((conn.index, c.clone())),
            _ => None,
        }
    }

    /// The open connection, or a new one. `fresh` is true when this call
    /// opened it. On failure, the index of the server that was tried.
    async fn client(&self) -> Result<(usize, IpcClient, bool), (usize, IpcError)> {
        if let Some((index, c)) = self.open_client() {
            return Ok((index, c, false));
        }
        let _opening = self.inner.opening.lock().await;
        if let Some((index, c)) = self.open_client() {
            return Ok((index, c, false));
        }
        let index = self.conn().index;
        let addr = self.server(index);
        match self.open(&addr).await {
            Ok(client) => {
                let mut conn = self.conn();
                if conn.index == index {
                    conn.client = Some(client.clone());
                }
                Ok((index, client, true))
            }
            Err(e) => Err((index, e)),
        }
    }

    /// Opens a connection to `addr`, retrying as `ipc.Client` does while the
    /// connection is refused or times out.
    async fn open(&self, addr: &str) -> Result<IpcClient, IpcError> {
        let cfg = &self.inner.config;
        let retry = cfg.connect_retry;
        let mut options = ClientOptions::new(cfg.user.clone(), cfg.protocol.clone());
        options.connect_timeout = cfg.connect_timeout;
        options.call_timeout = cfg.call_timeout;
        options.max_frame_bytes = cfg.max_frame_bytes;
        options.token = self.token();
        options.kerberos = cfg.kerberos.clone();
        let mut failures = 0u32;
        let mut timeouts = 0u32;
        loop {
            let e = match IpcClient::connect(addr, options.clone()).await {
                Ok(client) => {
                    debug!(server = %addr, auth = ?client.auth(), protocol = %cfg.protocol, "connected");
                    return Ok(client);
                }
                Err(e) => e,
            };
            match Failure::of(&e) {
                Failure::ConnectTimeout if timeouts < retry.max_retries_on_timeouts => {
                    timeouts += 1;
                    info!(
                        "Retrying connect to server: {addr}. Already tried {timeouts} time(s); \
                         maxRetries={}",
                        retry.max_retries_on_timeouts
                    );
                }
                Failure::Connect if failures < retry.max_retries => {
                    failures += 1;
                    info!(
                        "Retrying connect to server: {addr}. Already tried {failures} time(s); \
                         retry policy is RetryUpToMaximumCountWithFixedSleep(maxRetries={}, \
                         sleepTime={} MILLISECONDS)",
                        retry.max_retries,
                        retry.retry_interval.as_millis()
                    );
                    tokio::time::sleep(retry.retry_interval).await;
                }
                _ => return Err(e),
            }
        }
    }
}
