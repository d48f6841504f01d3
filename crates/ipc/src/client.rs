//! The client side of Hadoop IPC: one multiplexed connection per [`IpcClient`].
//!
//! Calls are pipelined: each gets the next call id, its response is matched by id by a
//! reader task. When the connection breaks every pending call fails and later calls
//! fail fast with [`IpcError::Closed`]; callers reconnect by building a new client.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use hadoop_protos::common::rpc_request_header_proto::OperationProto;
use hadoop_protos::common::rpc_response_header_proto::RpcStatusProto;
use hadoop_protos::common::{
    IpcConnectionContextProto, RequestHeaderProto, RpcKindProto, RpcRequestHeaderProto,
    RpcResponseHeaderProto, UserInformationProto,
};
use prost::Message;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};

use crate::error::IpcError;
use crate::frame::{self, call_id, decode_delimited, read_frame, Preamble, AUTH_NONE};

/// How to open a connection.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// The effective user sent in the connection context.
    pub user: String,
    /// The protocol name (see [`crate::protocols`]).
    pub protocol: String,
    pub connect_timeout: Duration,
    pub call_timeout: Duration,
    /// Largest response frame accepted.
    pub max_frame_bytes: usize,
}

impl ClientOptions {
    pub fn new(user: impl Into<String>, protocol: impl Into<String>) -> Self {
        ClientOptions {
            user: user.into(),
            protocol: protocol.into(),
            connect_timeout: Duration::from_secs(20),
            call_timeout: Duration::from_secs(60),
            max_frame_bytes: frame::DEFAULT_MAX_FRAME_BYTES,
        }
    }
}

type Pending = Arc<Mutex<HashMap<i32, oneshot::Sender<Result<Bytes, IpcError>>>>>;

struct Inner {
    addr: String,
    options: ClientOptions,
    client_id: [u8; 16],
    next_call: AtomicI32,
    pending: Pending,
    closed: Arc<AtomicBool>,
    writer: mpsc::Sender<Bytes>,
}

/// A connection to one IPC server for one protocol.
#[derive(Clone)]
pub struct IpcClient {
    inner: Arc<Inner>,
}

impl IpcClient {
    /// Connects to `addr` (`host:port`), sends the preamble and connection context.
    pub async fn connect(addr: &str, options: ClientOptions) -> Result<IpcClient, IpcError> {
        let io_err = |source| IpcError::Io {
            addr: addr.to_string(),
            source,
        };
        let stream = tokio::time::timeout(options.connect_timeout, TcpStream::connect(addr))
            .await
            .map_err(|_| {
                io_err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!(
                        "connect timed out after {} ms",
                        options.connect_timeout.as_millis()
                    ),
                ))
            })?
            .map_err(io_err)?;
        let _ = stream.set_nodelay(true);
        let (mut read_half, mut write_half) = stream.into_split();
        let client_id = *uuid::Uuid::new_v4().as_bytes();

        let context_header = request_header(call_id::CONNECTION_CONTEXT, &client_id, -1);
        let context = IpcConnectionContextProto {
            user_info: Some(UserInformationProto {
                effective_user: Some(options.user.clone()),
                real_user: None,
            }),
            protocol: Some(options.protocol.clone()),
        };
        let mut hello = Preamble::encode(AUTH_NONE).to_vec();
        hello.extend_from_slice(&frame::encode_frame(&[&context_header, &context]));
        write_half.write_all(&hello).await.map_err(io_err)?;

        let pending: Pending = Arc::new(Mutex::new(HashMap::new()));
        let closed = Arc::new(AtomicBool::new(false));
        let (tx, mut rx) = mpsc::channel::<Bytes>(256);
        tokio::spawn(async move {
            while let Some(f) = rx.recv().await {
                if write_half.write_all(&f).await.is_err() {
                    return;
                }
            }
        });
        {
            let pending = pending.clone();
            let closed = closed.clone();
            let addr = addr.to_string();
            let max = options.max_frame_bytes;
            tokio::spawn(async move {
                let reason = loop {
                    let mut body = match read_frame(&mut read_half, max).await {
                        Ok(b) => b,
                        Err(e) => break e.to_string(),
                    };
                    let header: RpcResponseHeaderProto = match decode_delimited(&mut body) {
                        Ok(h) => h,
                        Err(e) => break format!("undecodable response header: {e}"),
                    };
                    let status =
                        RpcStatusProto::try_from(header.status).unwrap_or(RpcStatusProto::Fatal);
                    let result = match status {
                        RpcStatusProto::Success => {
                            frame::take_delimited(&mut body).map_err(|e| IpcError::Protocol {
                                addr: addr.clone(),
                                detail: format!("bad response body: {e}"),
                            })
                        }
                        RpcStatusProto::Error | RpcStatusProto::Fatal => Err(IpcError::Remote {
                            class_name: header.exception_class_name.clone().unwrap_or_default(),
                            message: header.error_msg.clone().unwrap_or_default(),
                        }),
                    };
                    if status == RpcStatusProto::Fatal {
                        break format!(
                            "server sent FATAL {}: {}",
                            header.exception_class_name.unwrap_or_default(),
                            header.error_msg.unwrap_or_default()
                        );
                    }
                    let waiter = pending
                        .lock()
                        .ok()
                        .and_then(|mut p| p.remove(&(header.call_id as i32)));
                    if let Some(w) = waiter {
                        let _ = w.send(result);
                    }
                };
                closed.store(true, Ordering::SeqCst);
                if let Ok(mut p) = pending.lock() {
                    for (_, w) in p.drain() {
                        let _ = w.send(Err(IpcError::Closed {
                            addr: addr.clone(),
                            detail: reason.clone(),
                        }));
                    }
                }
            });
        }
        Ok(IpcClient {
            inner: Arc::new(Inner {
                addr: addr.to_string(),
                options,
                client_id,
                next_call: AtomicI32::new(0),
                pending,
                closed,
                writer: tx,
            }),
        })
    }

    /// The server address this client talks to.
    pub fn addr(&self) -> &str {
        &self.inner.addr
    }

    /// False once the connection has broken.
    pub fn is_open(&self) -> bool {
        !self.inner.closed.load(Ordering::SeqCst)
    }

    /// Calls `method` of this client's protocol.
    pub async fn call<Req, Resp>(&self, method: &str, req: &Req) -> Result<Resp, IpcError>
    where
        Req: Message,
        Resp: Message + Default,
    {
        let inner = &self.inner;
        let closed = || IpcError::Closed {
            addr: inner.addr.clone(),
            detail: "connection is closed".into(),
        };
        if !self.is_open() {
            return Err(closed());
        }
        // Call ids count up from 0 and wrap within the non-negative range.
        let cid = inner.next_call.fetch_add(1, Ordering::SeqCst) & i32::MAX;
        let header = request_header(cid, &inner.client_id, 0);
        let req_header = RequestHeaderProto {
            method_name: method.to_string(),
            declaring_class_protocol_name: inner.options.protocol.clone(),
            client_protocol_version: 1,
        };
        let frame = frame::encode_frame(&[&header, &req_header, req]);
        let (tx, rx) = oneshot::channel();
        inner.pending.lock().map_err(|_| closed())?.insert(cid, tx);
        if inner.writer.send(frame).await.is_err() {
            self.forget(cid);
            return Err(closed());
        }
        let outcome = tokio::time::timeout(inner.options.call_timeout, rx).await;
        let body = match outcome {
            Err(_) => {
                self.forget(cid);
                return Err(IpcError::Timeout {
                    addr: inner.addr.clone(),
                    method: method.to_string(),
                    timeout_ms: inner.options.call_timeout.as_millis() as u64,
                });
            }
            Ok(Err(_)) => return Err(closed()),
            Ok(Ok(r)) => r?,
        };
        Resp::decode(body).map_err(|e| IpcError::Protocol {
            addr: inner.addr.clone(),
            detail: format!("cannot decode the response of {method}: {e}"),
        })
    }

    fn forget(&self, cid: i32) {
        if let Ok(mut p) = self.inner.pending.lock() {
            p.remove(&cid);
        }
    }
}

fn request_header(cid: i32, client_id: &[u8; 16], retry: i32) -> RpcRequestHeaderProto {
    RpcRequestHeaderProto {
        rpc_kind: Some(RpcKindProto::RpcProtocolBuffer as i32),
        rpc_op: Some(OperationProto::RpcFinalPacket as i32),
        call_id: cid,
        client_id: client_id.to_vec(),
        retry_count: Some(retry),
        ..Default::default()
    }
}
