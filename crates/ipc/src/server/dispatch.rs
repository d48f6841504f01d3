//! One frame of a connection: the RPC request header, then SASL, a ping, the
//! connection context, or a call, which is decoded and run by its handler on a
//! task of its own.

use std::any::Any;
use std::future::Future;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use hadoop_protos::common::rpc_request_header_proto::OperationProto;
use hadoop_protos::common::rpc_response_header_proto::{RpcErrorCodeProto, RpcStatusProto};
use hadoop_protos::common::{
    IpcConnectionContextProto, RequestHeaderProto, RpcKindProto, RpcRequestHeaderProto,
    RpcSaslProto,
};
use spindle_common::text::escaped;
use tokio::sync::{mpsc, Semaphore};
use tracing::{debug, warn};

use super::reply::{fatal_frame, response_header, send_error};
use super::service::HandlerFuture;
use super::{CallContext, ConnectionCaller, Shared};
use crate::error::{class, RpcError};
use crate::frame::{self, call_id, decode_delimited, encode_frame_raw};
use crate::limits::Hold;
use crate::sasl::{AuthMethod, SaslServer, SaslStep};

/// Per-connection state established before calls.
pub(super) struct Conn {
    pub(super) peer: SocketAddr,
    pub(super) auth: Option<AuthMethod>,
    pub(super) sasl: Option<SaslServer>,
    pub(super) user: Option<String>,
    pub(super) real_user: Option<String>,
    pub(super) context_protocol: Option<String>,
}

/// What the connection does after a frame.
pub(super) enum Flow {
    Continue,
    /// A ping: answered by nothing and not counted as activity (a connection
    /// with calls in flight is never idle anyway).
    Ping,
    Close,
}

/// A fatal answer: the frame sent before the connection closes, and the
/// reason logged.
pub(super) struct Fatal {
    pub(super) frame: Bytes,
    pub(super) reason: String,
}

impl Fatal {
    pub(super) fn new(
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
pub(super) async fn handle_frame(
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
            Some(AuthMethod::Token {
                user, real_user, ..
            }) => {
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
                // A delegation token issued to an impersonator carries
                // who authenticated.
                conn.real_user = real_user.clone();
            }
            Some(AuthMethod::Kerberos { principal, user }) => {
                // The Java client names its login user in full; another name
                // is a proxy user, allowed by the server's impersonation rules
                // (hadoop.proxyuser.*) or refused in Hadoop's words.
                let claimed = info
                    .effective_user
                    .filter(|u| !u.is_empty() && u != principal && u != user);
                match claimed {
                    None => conn.user = Some(user.clone()),
                    Some(claimed) => {
                        let verdict = match &shared.config.impersonation {
                            Some(rules) => {
                                rules
                                    .authorize(principal, user, &claimed, conn.peer.ip())
                                    .await
                            }
                            None => Err(format!(
                                "User: {principal} is not allowed to impersonate {claimed}"
                            )),
                        };
                        if let Err(why) = verdict {
                            return Err(Fatal::new(
                                cid,
                                &client_id,
                                class::AUTHORIZATION,
                                why,
                                RpcErrorCodeProto::FatalUnauthorized,
                            ));
                        }
                        conn.user = Some(claimed);
                        conn.real_user = Some(user.clone());
                    }
                }
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
        if let (Some(authz), Some(user), Some(auth)) = (
            &shared.config.authorization,
            conn.user.as_deref(),
            conn.auth.as_ref(),
        ) {
            let caller = ConnectionCaller {
                user,
                real_user: conn.real_user.as_deref(),
                auth,
            };
            if let Err(why) = authz.authorize(caller, &protocol, conn.peer.ip()).await {
                warn!(
                    server = %shared.config.name,
                    peer = %conn.peer,
                    why = %escaped(&why),
                    "connection refused by service-level authorization"
                );
                return Err(Fatal::new(
                    cid,
                    &client_id,
                    class::AUTHORIZATION,
                    why,
                    RpcErrorCodeProto::FatalUnauthorized,
                ));
            }
        }
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
    // A GSSAPI step blocks in MIT's library: on a multi-threaded runtime
    // the worker hands its other tasks over while it runs.
    let step = if sasl.blocks(&msg)
        && tokio::runtime::Handle::current().runtime_flavor()
            == tokio::runtime::RuntimeFlavor::MultiThread
    {
        tokio::task::block_in_place(|| sasl.step(&msg))
    } else {
        sasl.step(&msg)
    };
    let reply = match step.map_err(|e| unauthorized(e.0))? {
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
