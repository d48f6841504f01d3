//! The IPC server: accepts connections, checks the preamble, runs SASL and the
//! connection context, then dispatches calls by (protocol, method) to typed handlers.
//!
//! Each connection has a reader (this task), a writer task fed by a bounded channel,
//! and one task per in-flight call, so calls on one connection are pipelined and a slow
//! handler never stalls the reader. A per-connection semaphore bounds in-flight calls
//! (the reader stops reading when it is exhausted, which pushes back on the client).
//!
//! What peers can hold is bounded (see [`crate::limits`]): connection slots in total
//! and per peer address, checked on accept; the bytes of request frames across all
//! connections, taken from a budget before a frame's body is allocated and given back
//! when its call is done; and read buffers, which an idle connection does not hold.
//!
//! Every peer-supplied string that reaches a log line (user names, protocol and method
//! names, the reasons a connection was dropped, which quote peer input) is written
//! through [`escaped`], so it cannot start a forged line.

use std::any::Any;
use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hadoop_protos::common::rpc_request_header_proto::OperationProto;
use hadoop_protos::common::rpc_response_header_proto::{RpcErrorCodeProto, RpcStatusProto};
use hadoop_protos::common::{
    IpcConnectionContextProto, RequestHeaderProto, RpcKindProto, RpcRequestHeaderProto,
    RpcResponseHeaderProto, RpcSaslProto,
};
use prost::Message;
use spindle_common::conf::{ConfError, Configuration};
use spindle_common::text::escaped;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, Semaphore};
use tokio::time::Instant;
use tracing::{debug, info, warn};

use crate::error::{class, RpcError};
use crate::frame::{
    self, call_id, decode_delimited, encode_frame_raw, FrameError, Preamble, AUTH_NONE, AUTH_SASL,
    HTTP_ON_IPC_PORT, IPC_VERSION,
};
use crate::limits::{Admission, Budget, Counters, Hold, PeerTable, ServerStats};
use crate::reader::FrameReader;
use crate::sasl::{AuthMethod, Mechanism, SaslServer, SaslStep};

/// Who is calling, as established by the connection.
#[derive(Debug, Clone)]
pub struct CallContext {
    /// The effective user: from the connection context (SIMPLE) or the token.
    pub user: String,
    /// The real user when the effective user is proxied.
    pub real_user: Option<String>,
    pub auth: AuthMethod,
    pub protocol: String,
    pub method: String,
    pub peer: SocketAddr,
    pub call_id: i32,
}

type HandlerFuture = Pin<Box<dyn Future<Output = Result<Vec<u8>, RpcError>> + Send>>;
type Handler = Arc<dyn Fn(CallContext, Bytes) -> HandlerFuture + Send + Sync>;

/// One protocol's methods.
pub struct Service {
    protocol: String,
    methods: HashMap<String, Handler>,
}

impl Service {
    pub fn new(protocol: impl Into<String>) -> Self {
        Service {
            protocol: protocol.into(),
            methods: HashMap::new(),
        }
    }

    pub fn protocol(&self) -> &str {
        &self.protocol
    }

    /// Registers a typed handler. The request body is decoded as `Req` before the
    /// handler runs; a body that does not decode is answered with an error naming the
    /// message type, and the connection stays open.
    pub fn method<Req, Resp, F, Fut>(mut self, name: &str, handler: F) -> Self
    where
        Req: Message + Default + 'static,
        Resp: Message + 'static,
        F: Fn(CallContext, Req) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Resp, RpcError>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let boxed: Handler = Arc::new(move |ctx: CallContext, body: Bytes| {
            let handler = handler.clone();
            Box::pin(async move {
                let req = Req::decode(body).map_err(|e| {
                    let type_name = std::any::type_name::<Req>();
                    let short = type_name.rsplit("::").next().unwrap_or(type_name);
                    RpcError::io(format!(
                        "cannot decode {short} for {}.{}: {e}",
                        ctx.protocol, ctx.method
                    ))
                })?;
                let resp = handler(ctx, req).await?;
                Ok(resp.encode_to_vec())
            })
        });
        self.methods.insert(name.to_string(), boxed);
        self
    }

    /// Registers methods that exist in Hadoop's protocol but that Spindle does not
    /// serve: they answer a clear YarnException naming the method (never a hang).
    pub fn unsupported(mut self, names: &[&str]) -> Self {
        for name in names {
            let protocol = self.protocol.clone();
            let method = name.to_string();
            let boxed: Handler = Arc::new(move |_ctx, _body| {
                let err = RpcError::not_supported(&protocol, &method);
                Box::pin(async move { Err(err) })
            });
            self.methods.insert(name.to_string(), boxed);
        }
        self
    }
}

/// A [`Service`] whose handlers share a state `S` (the daemon's context):
/// each handler is a named `async fn(Arc<S>, CallContext, Req) -> Result<Resp,
/// RpcError>`, registered in one line, so a reader finds the handler of any
/// method by its name.
///
/// ```
/// # use std::sync::Arc;
/// # use spindle_ipc::{CallContext, RpcError, Service};
/// # use hadoop_protos::yarn as pb;
/// struct Daemon;
/// async fn get_new_application(
///     _d: Arc<Daemon>,
///     _call: CallContext,
///     _req: pb::GetNewApplicationRequestProto,
/// ) -> Result<pb::GetNewApplicationResponseProto, RpcError> {
///     Ok(Default::default())
/// }
/// let service: Service = Service::new("proto")
///     .with_state(Arc::new(Daemon))
///     .method("getNewApplication", get_new_application)
///     .into();
/// ```
pub struct StatefulService<S> {
    service: Service,
    state: Arc<S>,
}

impl Service {
    /// Handlers registered on the result receive `state` as their first argument.
    pub fn with_state<S: Send + Sync + 'static>(self, state: Arc<S>) -> StatefulService<S> {
        StatefulService {
            service: self,
            state,
        }
    }
}

impl<S: Send + Sync + 'static> StatefulService<S> {
    /// Registers a handler (see [`Service::method`] for decoding and errors).
    pub fn method<Req, Resp, F, Fut>(mut self, name: &str, handler: F) -> Self
    where
        Req: Message + Default + 'static,
        Resp: Message + 'static,
        F: Fn(Arc<S>, CallContext, Req) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Resp, RpcError>> + Send + 'static,
    {
        let state = self.state.clone();
        self.service = self
            .service
            .method(name, move |call, req| handler(state.clone(), call, req));
        self
    }

    /// See [`Service::unsupported`].
    pub fn unsupported(mut self, names: &[&str]) -> Self {
        self.service = self.service.unsupported(names);
        self
    }
}

impl<S> From<StatefulService<S>> for Service {
    fn from(s: StatefulService<S>) -> Service {
        s.service
    }
}

/// The configuration keys of a server's limits.
pub mod keys {
    /// Hadoop's longest request frame (default 128 MiB).
    pub const MAX_DATA_LENGTH: &str = "ipc.maximum.data.length";
    /// Twice this is how long a connection may stay idle (Hadoop's rule).
    pub const CONNECTION_MAXIDLETIME: &str = "ipc.client.connection.maxidletime";
    /// Hadoop's cap on a server's open connections; 0 means no limit. Hadoop's
    /// default is 0; unset, Spindle uses [`super::DEFAULT_MAX_CONNECTIONS`].
    pub const MAX_CONNECTIONS: &str = "ipc.server.max.connections";
    /// Spindle's cap on the connections one peer (IP address; IPv6: /64) may
    /// hold open on one server; 0 means no limit. Hadoop has no such limit.
    pub const MAX_CONNECTIONS_PER_PEER: &str = "spindle.ipc.server.max.connections.per.peer";
    /// Spindle's budget of request bytes one server may hold across all its
    /// connections. Hadoop bounds its call queue by count
    /// (`ipc.server.handler.queue.size` per handler), not by bytes.
    pub const MAX_BUFFERED_REQUEST_BYTES: &str = "spindle.ipc.server.max.buffered.request.bytes";
}

/// Open connections of one server when `ipc.server.max.connections` is unset.
pub const DEFAULT_MAX_CONNECTIONS: usize = 16_384;
/// Default of `spindle.ipc.server.max.connections.per.peer`.
pub const DEFAULT_MAX_CONNECTIONS_PER_PEER: usize = 256;
/// Default of `spindle.ipc.server.max.buffered.request.bytes`: 256 MiB, two
/// frames of Hadoop's largest size.
pub const DEFAULT_MAX_BUFFERED_REQUEST_BYTES: usize = 256 * 1024 * 1024;

/// Limits and timeouts of a server.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// `ipc.maximum.data.length`.
    pub max_frame_bytes: usize,
    /// A connection with no call in flight and no traffic but pings for this long is
    /// closed (a Hadoop client pings only while it waits for a call).
    pub idle_timeout: Duration,
    /// Once a frame has started, the rest of it must arrive within this time.
    pub frame_timeout: Duration,
    /// Calls one connection may have in flight before the server stops reading it.
    pub max_in_flight_per_connection: usize,
    /// `ipc.server.max.connections`: connections beyond this are closed on accept;
    /// 0 means no limit.
    pub max_connections: usize,
    /// `spindle.ipc.server.max.connections.per.peer`: connections from one peer
    /// beyond this are closed on accept; 0 means no limit.
    pub max_connections_per_peer: usize,
    /// `spindle.ipc.server.max.buffered.request.bytes`: request bytes all
    /// connections together may hold (at least 1 MiB).
    pub max_buffered_request_bytes: usize,
    /// Authentication methods offered to SASL clients.
    pub mechanisms: Vec<Mechanism>,
    /// Name used in logs.
    pub name: String,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            max_frame_bytes: frame::DEFAULT_MAX_FRAME_BYTES,
            // Hadoop closes idle connections after 2 × ipc.client.connection.maxidletime.
            idle_timeout: Duration::from_secs(20),
            frame_timeout: Duration::from_secs(60),
            max_in_flight_per_connection: 256,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_connections_per_peer: DEFAULT_MAX_CONNECTIONS_PER_PEER,
            max_buffered_request_bytes: DEFAULT_MAX_BUFFERED_REQUEST_BYTES,
            mechanisms: vec![Mechanism::Simple],
            name: "ipc".into(),
        }
    }
}

impl ServerConfig {
    /// The defaults with the limits Hadoop's and Spindle's `ipc.*` keys set in
    /// `conf` (see [`keys`]); `name` is the name used in logs.
    pub fn from_conf(conf: &Configuration, name: &str) -> Result<ServerConfig, ConfError> {
        let mut cfg = ServerConfig {
            name: name.to_string(),
            ..ServerConfig::default()
        };
        let set = |key: &str| conf.get_raw(key).is_some_and(|v| !v.trim().is_empty());
        let size = |key: &str| {
            conf.get_u64(key)
                .map(|v| usize::try_from(v).unwrap_or(usize::MAX))
        };
        if set(keys::MAX_DATA_LENGTH) {
            cfg.max_frame_bytes = size(keys::MAX_DATA_LENGTH)?;
        }
        if set(keys::CONNECTION_MAXIDLETIME) {
            let ms = conf.get_u64(keys::CONNECTION_MAXIDLETIME)?;
            cfg.idle_timeout = Duration::from_millis(ms.saturating_mul(2));
        }
        if set(keys::MAX_CONNECTIONS) {
            cfg.max_connections = size(keys::MAX_CONNECTIONS)?;
        }
        if set(keys::MAX_CONNECTIONS_PER_PEER) {
            cfg.max_connections_per_peer = size(keys::MAX_CONNECTIONS_PER_PEER)?;
        }
        if set(keys::MAX_BUFFERED_REQUEST_BYTES) {
            cfg.max_buffered_request_bytes = size(keys::MAX_BUFFERED_REQUEST_BYTES)?;
        }
        Ok(cfg)
    }
}

struct Shared {
    services: HashMap<String, Service>,
    config: ServerConfig,
    /// Slots of `max_connections`; `None` when there is no limit.
    connections: Option<Arc<Semaphore>>,
    peers: Arc<PeerTable>,
    budget: Arc<Budget>,
    counters: Arc<Counters>,
    /// Set while refusals for a full server are logged at DEBUG only.
    full_warned: std::sync::atomic::AtomicBool,
}

impl Shared {
    /// The longest frame this server reads: `ipc.maximum.data.length`, or less if
    /// the byte budget could never hold such a frame.
    fn max_frame(&self) -> usize {
        self.config.max_frame_bytes.min(self.budget.max_frame())
    }
}

/// A running server. Dropping it stops accepting and closes every open connection.
pub struct RpcServer {
    local_addr: SocketAddr,
    accept_task: tokio::task::JoinHandle<()>,
    shared: Arc<Shared>,
    /// Set to true when the server is dropped: every open connection closes.
    stopped: tokio::sync::watch::Sender<bool>,
}

impl RpcServer {
    /// Binds `addr` and starts serving `services`.
    pub async fn bind(
        addr: SocketAddr,
        services: Vec<Service>,
        config: ServerConfig,
    ) -> std::io::Result<RpcServer> {
        let listener = TcpListener::bind(addr).await?;
        let local_addr = listener.local_addr()?;
        let mut map = HashMap::new();
        for s in services {
            map.insert(s.protocol.clone(), s);
        }
        let connections = (config.max_connections > 0).then(|| {
            Arc::new(Semaphore::new(
                config.max_connections.min(Semaphore::MAX_PERMITS),
            ))
        });
        let shared = Arc::new(Shared {
            services: map,
            connections,
            peers: PeerTable::new(config.max_connections_per_peer),
            budget: Budget::new(config.max_buffered_request_bytes),
            counters: Arc::new(Counters::default()),
            full_warned: std::sync::atomic::AtomicBool::new(false),
            config,
        });
        info!(
            server = %shared.config.name,
            addr = %local_addr,
            max_connections = shared.config.max_connections,
            max_connections_per_peer = shared.config.max_connections_per_peer,
            max_buffered_request_bytes = shared.budget.limit(),
            "IPC server listening"
        );
        let (stopped, stop) = tokio::sync::watch::channel(false);
        let accept_task = tokio::spawn(accept_loop(listener, shared.clone(), stop));
        Ok(RpcServer {
            local_addr,
            accept_task,
            shared,
            stopped,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The server's counters now: connections, request bytes held, read buffers,
    /// refusals.
    pub fn stats(&self) -> ServerStats {
        use std::sync::atomic::Ordering::Relaxed;
        let c = &self.shared.counters;
        let b = &self.shared.budget;
        ServerStats {
            connections: c.connections.load(Relaxed),
            buffered_request_bytes: b.held(),
            peak_buffered_request_bytes: b.peak(),
            buffered_request_bytes_limit: b.limit(),
            waiting_for_budget: b.waiting(),
            read_buffer_bytes: c.read_buffer_bytes.load(Relaxed),
            refused_server_full: c.refused_server_full.load(Relaxed),
            refused_peer_full: c.refused_peer_full.load(Relaxed),
        }
    }
}

impl Drop for RpcServer {
    /// Stops accepting and closes every open connection (calls in flight
    /// get no reply), as a stopped Hadoop server does.
    fn drop(&mut self) {
        self.accept_task.abort();
        let _ = self.stopped.send(true);
    }
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    stop: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                // Typically EMFILE: back off instead of spinning.
                warn!(server = %shared.config.name, error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        // The peer's limit first, so that one peer filling its share never takes the
        // server's last slots from others.
        let peer_slot = match shared.peers.admit(peer.ip()) {
            Admission::Admitted(slot) => slot,
            Admission::Refused { first } => {
                shared
                    .counters
                    .refused_peer_full
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let limit = shared.config.max_connections_per_peer;
                if first {
                    warn!(server = %shared.config.name, %peer, limit,
                        "peer has too many connections; closing new ones from it");
                } else {
                    debug!(server = %shared.config.name, %peer, limit,
                        "peer has too many connections; closing new one");
                }
                drop(stream);
                continue;
            }
        };
        let permit = match &shared.connections {
            None => None,
            Some(slots) => match slots.clone().try_acquire_owned() {
                Ok(p) => {
                    // Warn again once the server has had room for a while.
                    if slots.available_permits() >= (shared.config.max_connections / 20).max(1) {
                        shared
                            .full_warned
                            .store(false, std::sync::atomic::Ordering::Relaxed);
                    }
                    Some(p)
                }
                Err(_) => {
                    shared
                        .counters
                        .refused_server_full
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let limit = shared.config.max_connections;
                    if !shared
                        .full_warned
                        .swap(true, std::sync::atomic::Ordering::Relaxed)
                    {
                        warn!(server = %shared.config.name, %peer, limit,
                            "too many connections; closing new ones");
                    } else {
                        debug!(server = %shared.config.name, %peer, limit,
                            "too many connections; closing new one");
                    }
                    drop(stream);
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let shared = shared.clone();
        let mut stop = stop.clone();
        tokio::spawn(async move {
            let name = shared.config.name.clone();
            let counters = shared.counters.clone();
            counters
                .connections
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let served = tokio::select! {
                r = serve_connection(stream, peer, shared) => r,
                // The server was dropped (or its sender is gone with it).
                _ = stop.wait_for(|stopped| *stopped) => Err("the server stopped".to_string()),
            };
            match served {
                Ok(()) => debug!(server = %name, %peer, "connection closed"),
                Err(reason) => {
                    info!(server = %name, %peer, reason = %escaped(&reason), "connection dropped")
                }
            }
            counters
                .connections
                .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
            drop(permit);
            drop(peer_slot);
        });
    }
}

/// Per-connection state established before calls.
struct Conn {
    peer: SocketAddr,
    auth: Option<AuthMethod>,
    sasl: Option<SaslServer>,
    user: Option<String>,
    real_user: Option<String>,
    context_protocol: Option<String>,
}

async fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    shared: Arc<Shared>,
) -> Result<(), String> {
    let (read_half, mut write_half) = stream.into_split();
    let mut reader = FrameReader::new(read_half, shared.counters.clone());

    let mut preamble = [0u8; 7];
    match tokio::time::timeout(
        shared.config.frame_timeout,
        reader.read_exact(&mut preamble),
    )
    .await
    {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(format!("reading preamble: {e}")),
        Err(_) => return Err("no preamble within the frame timeout".into()),
    }
    let auth_byte = match Preamble::parse(&preamble) {
        Preamble::Hadoop { auth, .. } => auth,
        Preamble::Http => {
            let _ = write_half.write_all(HTTP_ON_IPC_PORT.as_bytes()).await;
            let _ = write_half.shutdown().await;
            return Err("HTTP request on the IPC port".into());
        }
        Preamble::WrongVersion(v) => {
            let msg = format!(
                "Server IPC version {IPC_VERSION} cannot communicate with client version {v}"
            );
            let frame = fatal_frame(
                call_id::AUTHORIZATION_FAILED,
                &[],
                class::VERSION_MISMATCH,
                &msg,
                RpcErrorCodeProto::FatalVersionMismatch,
            );
            let _ = write_half.write_all(&frame).await;
            let _ = write_half.shutdown().await;
            return Err(msg);
        }
        Preamble::Garbage => {
            let _ = write_half.shutdown().await;
            return Err(format!(
                "bad preamble {preamble:02x?}; expected 'hrpc' and version 9"
            ));
        }
    };

    let mut conn = Conn {
        peer,
        auth: None,
        sasl: None,
        user: None,
        real_user: None,
        context_protocol: None,
    };
    match auth_byte {
        AUTH_NONE => {
            if !shared.config.mechanisms.contains(&Mechanism::Simple) {
                let msg = "SIMPLE authentication is not enabled.  Available:[TOKEN]";
                let frame = fatal_frame(
                    call_id::AUTHORIZATION_FAILED,
                    &[],
                    class::ACCESS_CONTROL,
                    msg,
                    RpcErrorCodeProto::FatalUnauthorized,
                );
                let _ = write_half.write_all(&frame).await;
                return Err(msg.into());
            }
            conn.auth = Some(AuthMethod::Simple);
        }
        AUTH_SASL => conn.sasl = Some(SaslServer::new(shared.config.mechanisms.clone())),
        other => {
            let msg = format!("unknown auth protocol byte {other:#04x}");
            let frame = fatal_frame(
                call_id::AUTHORIZATION_FAILED,
                &[],
                class::ACCESS_CONTROL,
                &msg,
                RpcErrorCodeProto::FatalUnauthorized,
            );
            let _ = write_half.write_all(&frame).await;
            return Err(msg);
        }
    }

    // Writer task: the only owner of the write half. A FATAL reply arrives on its own
    // channel: it is written at once, the socket is shut, and replies of calls still in
    // flight are dropped (a FATAL ends the connection, as in Hadoop).
    let (tx, mut rx) = mpsc::channel::<Bytes>(1024);
    let (final_tx, final_rx) = oneshot::channel::<Bytes>();
    let writer = tokio::spawn(async move {
        let mut final_rx = Some(final_rx);
        loop {
            let next = match final_rx.as_mut() {
                Some(f) => tokio::select! {
                    biased;
                    fatal = f => {
                        final_rx = None;
                        match fatal {
                            Ok(frame) => {
                                let _ = write_half.write_all(&frame).await;
                                break;
                            }
                            // Closed without a FATAL: drain the ordinary replies.
                            Err(_) => continue,
                        }
                    }
                    frame = rx.recv() => frame,
                },
                None => rx.recv().await,
            };
            let Some(frame) = next else { break };
            if let Err(e) = write_half.write_all(&frame).await {
                debug!(error = %e, "write failed; dropping connection output");
                return;
            }
        }
        let _ = write_half.shutdown().await;
    });

    let in_flight = Arc::new(Semaphore::new(shared.config.max_in_flight_per_connection));
    let result = read_loop(&mut reader, &mut conn, &shared, &tx, &in_flight).await;
    drop(tx);
    let result = match result {
        Ok(()) => Ok(()),
        Err(Closing { reason, fatal }) => {
            if let Some(frame) = fatal {
                let _ = final_tx.send(frame);
            }
            Err(reason)
        }
    };
    // Let queued replies (or the FATAL) reach the client before the socket closes.
    let _ = writer.await;
    result
}

/// Why a connection's read loop ended abnormally, with the FATAL reply to send if any.
struct Closing {
    reason: String,
    fatal: Option<Bytes>,
}

impl From<String> for Closing {
    fn from(reason: String) -> Closing {
        Closing {
            reason,
            fatal: None,
        }
    }
}

enum Flow {
    Continue,
    /// A ping: answered by nothing and not counted as activity (a connection
    /// with calls in flight is never idle anyway).
    Ping,
    Close,
}

async fn read_loop(
    reader: &mut FrameReader,
    conn: &mut Conn,
    shared: &Arc<Shared>,
    tx: &mpsc::Sender<Bytes>,
    in_flight: &Arc<Semaphore>,
) -> Result<(), Closing> {
    let cfg = &shared.config;
    let max_frame = shared.max_frame();
    let mut last_activity = Instant::now();
    loop {
        // Wait for the next frame to start. Idle time only counts while nothing is
        // in flight (a client waiting for a long call is not idle), and pings do not
        // end it: a Hadoop client pings only while it waits for a call.
        let idle_deadline = last_activity + cfg.idle_timeout;
        match tokio::time::timeout_at(idle_deadline, reader.next_frame_starts()).await {
            Ok(Ok(false)) => return Ok(()),
            Ok(Ok(true)) => {}
            Ok(Err(e)) => return Err(format!("read error: {e}").into()),
            Err(_) => {
                if in_flight.available_permits() == cfg.max_in_flight_per_connection {
                    return Err(format!("idle for {} ms", cfg.idle_timeout.as_millis()).into());
                }
                last_activity = Instant::now();
                continue;
            }
        }
        let (body, hold) = match tokio::time::timeout(
            cfg.frame_timeout,
            reader.read_frame(max_frame, &shared.budget),
        )
        .await
        {
            Err(_) => {
                return Err(String::from("frame not completed within the frame timeout").into())
            }
            Ok(Ok(frame)) => frame,
            Ok(Err(FrameError::Eof)) => return Ok(()),
            Ok(Err(e @ (FrameError::TooLong { .. } | FrameError::Negative(_)))) => {
                let msg = e.to_string();
                let frame = fatal_frame(
                    call_id::AUTHORIZATION_FAILED,
                    &[],
                    class::RPC_SERVER,
                    &msg,
                    RpcErrorCodeProto::FatalInvalidRpcHeader,
                );
                return Err(Closing {
                    reason: msg,
                    fatal: Some(frame),
                });
            }
            Ok(Err(e)) => return Err(e.to_string().into()),
        };
        match handle_frame(body, hold, conn, shared, tx, in_flight).await {
            Ok(Flow::Continue) => last_activity = Instant::now(),
            // Not activity: with nothing in flight a pinging connection is idle.
            Ok(Flow::Ping) => {}
            Ok(Flow::Close) => return Ok(()),
            Err(fatal) => {
                return Err(Closing {
                    reason: fatal.reason,
                    fatal: Some(fatal.frame),
                })
            }
        }
    }
}

struct Fatal {
    frame: Bytes,
    reason: String,
}

impl Fatal {
    fn new(
        call: i32,
        client_id: &[u8],
        class_name: &str,
        msg: String,
        code: RpcErrorCodeProto,
    ) -> Fatal {
        Fatal {
            frame: fatal_frame(call, client_id, class_name, &msg, code),
            reason: msg,
        }
    }
}

/// Handles one frame. `hold` is the frame's share of the byte budget: a call keeps it
/// until its reply is queued; any other frame gives it back when this returns.
async fn handle_frame(
    mut body: Bytes,
    hold: Hold,
    conn: &mut Conn,
    shared: &Arc<Shared>,
    tx: &mpsc::Sender<Bytes>,
    in_flight: &Arc<Semaphore>,
) -> Result<Flow, Fatal> {
    let header: RpcRequestHeaderProto = decode_delimited(&mut body).map_err(|e| {
        Fatal::new(
            call_id::AUTHORIZATION_FAILED,
            &[],
            class::RPC_SERVER,
            format!("cannot decode the RPC request header: {e}"),
            RpcErrorCodeProto::FatalInvalidRpcHeader,
        )
    })?;
    let cid = header.call_id;
    let client_id = header.client_id.clone();
    let invalid = |msg: String| {
        Fatal::new(
            cid,
            &client_id,
            class::RPC_SERVER,
            msg,
            RpcErrorCodeProto::FatalInvalidRpcHeader,
        )
    };
    match header.rpc_kind.map(RpcKindProto::try_from) {
        Some(Ok(RpcKindProto::RpcProtocolBuffer)) => {}
        Some(_) => {
            return Err(Fatal::new(
                cid,
                &client_id,
                class::RPC_SERVER,
                format!(
                    "unsupported RPC kind {:?}; only protocol buffers are served",
                    header.rpc_kind
                ),
                RpcErrorCodeProto::FatalUnsupportedSerialization,
            ))
        }
        None => {
            return Err(invalid(
                "the RPC kind is missing from the request header".into(),
            ))
        }
    }
    match header.rpc_op.map(OperationProto::try_from) {
        Some(Ok(OperationProto::RpcFinalPacket)) => {}
        Some(Ok(OperationProto::RpcCloseConnection)) => return Ok(Flow::Close),
        Some(_) => {
            return Err(invalid(format!(
                "unsupported RPC operation {:?}",
                header.rpc_op
            )))
        }
        None => {
            return Err(invalid(
                "the RPC operation is missing from the request header".into(),
            ))
        }
    }

    if cid == call_id::SASL {
        return handle_sasl(body, conn, tx).await;
    }
    if conn.auth.is_none() {
        return Err(Fatal::new(
            cid,
            &client_id,
            class::ACCESS_CONTROL,
            "call before SASL negotiation finished".into(),
            RpcErrorCodeProto::FatalUnauthorized,
        ));
    }
    if cid == call_id::PING {
        return Ok(Flow::Ping);
    }
    if cid == call_id::CONNECTION_CONTEXT {
        if conn.context_protocol.is_some() {
            return Err(invalid("connection context sent twice".into()));
        }
        let ctx: IpcConnectionContextProto = decode_delimited(&mut body).map_err(|e| {
            Fatal::new(
                cid,
                &client_id,
                class::RPC_SERVER,
                format!("cannot decode the connection context: {e}"),
                RpcErrorCodeProto::FatalDeserializingRequest,
            )
        })?;
        let info = ctx.user_info.unwrap_or_default();
        match conn.auth.as_ref() {
            Some(AuthMethod::Token { user, .. }) => {
                // A token connection may not claim another identity.
                if let Some(claimed) = info.effective_user.filter(|u| !u.is_empty() && u != user) {
                    return Err(Fatal::new(
                        cid,
                        &client_id,
                        class::ACCESS_CONTROL,
                        format!(
                            "authenticated as {user} but the connection context claims {claimed}"
                        ),
                        RpcErrorCodeProto::FatalUnauthorized,
                    ));
                }
                conn.user = Some(user.clone());
            }
            _ => {
                let user = info
                    .effective_user
                    .filter(|u| !u.is_empty())
                    .ok_or_else(|| {
                        Fatal::new(
                            cid,
                            &client_id,
                            class::ACCESS_CONTROL,
                            "the connection context names no user".into(),
                            RpcErrorCodeProto::FatalUnauthorized,
                        )
                    })?;
                conn.user = Some(user);
                conn.real_user = info.real_user;
            }
        }
        let protocol = ctx.protocol.unwrap_or_default();
        debug!(
            server = %shared.config.name,
            peer = %conn.peer,
            user = %escaped(conn.user.as_deref().unwrap_or_default()),
            real_user = %escaped(conn.real_user.as_deref().unwrap_or_default()),
            protocol = %escaped(&protocol),
            "connection context"
        );
        conn.context_protocol = Some(protocol);
        return Ok(Flow::Continue);
    }
    if cid < 0 {
        return Err(invalid(format!("unknown special call id {cid}")));
    }
    let Some(user) = conn.user.clone() else {
        return Err(invalid("call before the connection context".into()));
    };
    let retry = header.retry_count.unwrap_or(-1);

    let req_header: RequestHeaderProto = match decode_delimited(&mut body) {
        Ok(h) => h,
        Err(e) => {
            let err = RpcError {
                class_name: class::RPC_SERVER.into(),
                message: format!("cannot decode the request header of call {cid}: {e}"),
                code: RpcErrorCodeProto::ErrorRpcServer,
            };
            send_error(tx, cid, &client_id, retry, &err).await;
            return Ok(Flow::Continue);
        }
    };
    let protocol = req_header.declaring_class_protocol_name.clone();
    let method = req_header.method_name.clone();
    let handler = match shared.services.get(&protocol) {
        None => Err(RpcError::no_such_protocol(&protocol)),
        Some(service) => match service.methods.get(&method) {
            None => Err(RpcError::no_such_method(&protocol, &method)),
            Some(h) => Ok(h.clone()),
        },
    };
    let handler = match handler {
        Ok(h) => h,
        Err(err) => {
            debug!(protocol = %escaped(&protocol), method = %escaped(&method), "no handler");
            send_error(tx, cid, &client_id, retry, &err).await;
            return Ok(Flow::Continue);
        }
    };
    let payload = match frame::take_delimited(&mut body) {
        Ok(p) => p,
        Err(e) => {
            let err = RpcError::io(format!(
                "cannot read the request body of {protocol}.{method}: {e}"
            ));
            send_error(tx, cid, &client_id, retry, &err).await;
            return Ok(Flow::Continue);
        }
    };
    let ctx = CallContext {
        user,
        real_user: conn.real_user.clone(),
        auth: conn.auth.clone().unwrap_or(AuthMethod::Simple),
        protocol,
        method,
        peer: conn.peer,
        call_id: cid,
    };
    // Backpressure: wait for a slot before reading more from this connection.
    let Ok(permit) = in_flight.clone().acquire_owned().await else {
        return Ok(Flow::Close);
    };
    let tx = tx.clone();
    tokio::spawn(async move {
        // The frame's bytes stay counted until the call is done.
        let _hold = hold;
        let label = format!("{}.{}", ctx.protocol, ctx.method);
        // A panic in the handler becomes an error reply.
        let result = match CatchPanic(handler(ctx, payload)).await {
            Ok(r) => r,
            Err(panic) => Err(RpcError {
                class_name: class::RPC_SERVER.into(),
                message: format!("internal error in {label}: {}", panic_message(&*panic)),
                code: RpcErrorCodeProto::ErrorRpcServer,
            }),
        };
        match result {
            Ok(resp) => {
                let header = response_header(cid, &client_id, retry, RpcStatusProto::Success);
                let _ = tx.send(encode_frame_raw(&header, Some(&resp))).await;
            }
            Err(err) => {
                debug!(
                    call = %escaped(&label),
                    error = %escaped(&err.to_string()),
                    "call failed"
                );
                send_error(&tx, cid, &client_id, retry, &err).await;
            }
        }
        drop(permit);
    });
    Ok(Flow::Continue)
}

/// A handler's future, with a panic in any of its polls caught and
/// returned. The call's own task polls it: a task of its own per call (the
/// way to catch a panic with `tokio::spawn`) cost a spawn, a wake-up and a
/// join on every call.
struct CatchPanic(HandlerFuture);

impl Future for CatchPanic {
    type Output = Result<Result<Vec<u8>, RpcError>, Box<dyn Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let fut = &mut self.0;
        match std::panic::catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(r)) => Poll::Ready(Ok(r)),
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }
}

/// What a caught panic said, as `tokio`'s `JoinError` would show it.
fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        format!("panicked with message {s:?}")
    } else if let Some(s) = panic.downcast_ref::<String>() {
        format!("panicked with message {s:?}")
    } else {
        "panicked".to_string()
    }
}

async fn handle_sasl(
    mut body: Bytes,
    conn: &mut Conn,
    tx: &mpsc::Sender<Bytes>,
) -> Result<Flow, Fatal> {
    let unauthorized = |msg: String| {
        Fatal::new(
            call_id::SASL,
            &[],
            class::ACCESS_CONTROL,
            msg,
            RpcErrorCodeProto::FatalUnauthorized,
        )
    };
    let Some(sasl) = conn.sasl.as_mut() else {
        return Err(unauthorized(
            "SASL message on a connection that did not ask for SASL".into(),
        ));
    };
    if conn.auth.is_some() {
        return Err(unauthorized(
            "SASL message after authentication finished".into(),
        ));
    }
    let msg: RpcSaslProto = decode_delimited(&mut body)
        .map_err(|e| unauthorized(format!("cannot decode the SASL message: {e}")))?;
    if let Some(message) = sasl.standby() {
        return Err(Fatal::new(
            call_id::SASL,
            &[],
            class::STANDBY,
            message,
            RpcErrorCodeProto::FatalUnauthorized,
        ));
    }
    let reply = match sasl.step(&msg).map_err(|e| unauthorized(e.0))? {
        SaslStep::Reply(r) => Some(r),
        SaslStep::Done(r, auth) => {
            conn.auth = Some(auth);
            r
        }
    };
    if let Some(reply) = reply {
        let header = response_header(call_id::SASL, &[], -1, RpcStatusProto::Success);
        let out = frame::encode_frame(&[&header, &reply]);
        let _ = tx.send(out).await;
    }
    Ok(Flow::Continue)
}

fn response_header(
    cid: i32,
    client_id: &[u8],
    retry: i32,
    status: RpcStatusProto,
) -> RpcResponseHeaderProto {
    RpcResponseHeaderProto {
        // The response call id is uint32 on the wire: −33 goes out as 4294967263.
        call_id: cid as u32,
        status: status as i32,
        server_ipc_version_num: Some(u32::from(IPC_VERSION)),
        client_id: Some(client_id.to_vec()),
        retry_count: Some(retry),
        ..Default::default()
    }
}

async fn send_error(
    tx: &mpsc::Sender<Bytes>,
    cid: i32,
    client_id: &[u8],
    retry: i32,
    err: &RpcError,
) {
    let mut header = response_header(cid, client_id, retry, RpcStatusProto::Error);
    header.exception_class_name = Some(err.class_name.clone());
    header.error_msg = Some(err.message.clone());
    header.error_detail = Some(err.code as i32);
    let _ = tx.send(encode_frame_raw(&header, None)).await;
}

fn fatal_frame(
    cid: i32,
    client_id: &[u8],
    class_name: &str,
    msg: &str,
    code: RpcErrorCodeProto,
) -> Bytes {
    let mut header = response_header(cid, client_id, -1, RpcStatusProto::Fatal);
    header.exception_class_name = Some(class_name.to_string());
    header.error_msg = Some(msg.to_string());
    header.error_detail = Some(code as i32);
    encode_frame_raw(&header, None)
}
