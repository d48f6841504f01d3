//! The IPC server: accepts connections, checks the preamble, runs SASL and the
//! connection context, then dispatches calls by (protocol, method) to typed handlers.
//!
//! Each connection has a reader (this task), a writer task fed by a bounded channel,
//! and one task per in-flight call, so calls on one connection are pipelined and a slow
//! handler never stalls the reader. A per-connection semaphore bounds in-flight calls
//! (the reader stops reading when it is exhausted, which pushes back on the client).

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hadoop_protos::common::rpc_request_header_proto::OperationProto;
use hadoop_protos::common::rpc_response_header_proto::{RpcErrorCodeProto, RpcStatusProto};
use hadoop_protos::common::{
    IpcConnectionContextProto, RequestHeaderProto, RpcKindProto, RpcRequestHeaderProto,
    RpcResponseHeaderProto, RpcSaslProto,
};
use prost::Message;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, Semaphore};
use tracing::{debug, info, warn};

use crate::error::{class, RpcError};
use crate::frame::{
    self, call_id, decode_delimited, encode_frame_raw, read_frame, FrameError, Preamble, AUTH_NONE,
    AUTH_SASL, HTTP_ON_IPC_PORT, IPC_VERSION,
};
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

/// Limits and timeouts of a server.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// `ipc.maximum.data.length`.
    pub max_frame_bytes: usize,
    /// A connection with no call in flight and no traffic for this long is closed.
    pub idle_timeout: Duration,
    /// Once a frame has started, the rest of it must arrive within this time.
    pub frame_timeout: Duration,
    /// Calls one connection may have in flight before the server stops reading it.
    pub max_in_flight_per_connection: usize,
    /// Connections beyond this are closed on accept.
    pub max_connections: usize,
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
            max_connections: 16_384,
            mechanisms: vec![Mechanism::Simple],
            name: "ipc".into(),
        }
    }
}

struct Shared {
    services: HashMap<String, Service>,
    config: ServerConfig,
    connections: Arc<Semaphore>,
}

/// A running server. Dropping it stops accepting; open connections finish on their own.
pub struct RpcServer {
    local_addr: SocketAddr,
    accept_task: tokio::task::JoinHandle<()>,
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
        let shared = Arc::new(Shared {
            services: map,
            connections: Arc::new(Semaphore::new(config.max_connections)),
            config,
        });
        info!(server = %shared.config.name, addr = %local_addr, "IPC server listening");
        let accept_task = tokio::spawn(accept_loop(listener, shared));
        Ok(RpcServer {
            local_addr,
            accept_task,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }
}

impl Drop for RpcServer {
    fn drop(&mut self) {
        self.accept_task.abort();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
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
        let Ok(permit) = shared.connections.clone().try_acquire_owned() else {
            warn!(server = %shared.config.name, %peer, "too many connections; closing new one");
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let shared = shared.clone();
        tokio::spawn(async move {
            let name = shared.config.name.clone();
            match serve_connection(stream, peer, shared).await {
                Ok(()) => debug!(server = %name, %peer, "connection closed"),
                Err(reason) => info!(server = %name, %peer, %reason, "connection dropped"),
            }
            drop(permit);
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
    let mut reader = BufReader::with_capacity(64 * 1024, read_half);

    let mut preamble = [0u8; 7];
    match tokio::time::timeout(
        shared.config.frame_timeout,
        reader.read_exact(&mut preamble),
    )
    .await
    {
        Ok(Ok(_)) => {}
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
    Close,
}

async fn read_loop(
    reader: &mut BufReader<OwnedReadHalf>,
    conn: &mut Conn,
    shared: &Arc<Shared>,
    tx: &mpsc::Sender<Bytes>,
    in_flight: &Arc<Semaphore>,
) -> Result<(), Closing> {
    let cfg = &shared.config;
    loop {
        // Wait for the next frame to start. Idle time only counts while nothing is
        // in flight: a client waiting for a long call is not idle.
        match tokio::time::timeout(cfg.idle_timeout, reader.fill_buf()).await {
            Ok(Ok([])) => return Ok(()),
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(format!("read error: {e}").into()),
            Err(_) => {
                if in_flight.available_permits() == cfg.max_in_flight_per_connection {
                    return Err(format!("idle for {} ms", cfg.idle_timeout.as_millis()).into());
                }
                continue;
            }
        }
        let body =
            match tokio::time::timeout(cfg.frame_timeout, read_frame(reader, cfg.max_frame_bytes))
                .await
            {
                Err(_) => {
                    return Err(String::from("frame not completed within the frame timeout").into())
                }
                Ok(Ok(body)) => body,
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
        match handle_frame(body, conn, shared, tx, in_flight).await {
            Ok(Flow::Continue) => {}
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

async fn handle_frame(
    mut body: Bytes,
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
        return Ok(Flow::Continue);
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
        conn.context_protocol = Some(ctx.protocol.unwrap_or_default());
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
            debug!(%protocol, %method, "no handler");
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
        let label = format!("{}.{}", ctx.protocol, ctx.method);
        // Run the handler in its own task so a panic becomes an error reply.
        let result = match tokio::spawn(handler(ctx, payload)).await {
            Ok(r) => r,
            Err(join) => Err(RpcError {
                class_name: class::RPC_SERVER.into(),
                message: format!("internal error in {label}: {join}"),
                code: RpcErrorCodeProto::ErrorRpcServer,
            }),
        };
        match result {
            Ok(resp) => {
                let header = response_header(cid, &client_id, retry, RpcStatusProto::Success);
                let _ = tx.send(encode_frame_raw(&header, Some(&resp))).await;
            }
            Err(err) => {
                debug!(call = %label, error = %err, "call failed");
                send_error(&tx, cid, &client_id, retry, &err).await;
            }
        }
        drop(permit);
    });
    Ok(Flow::Continue)
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
