//! The accept loop and a connection's life: admission against the connection
//! limits, the preamble and authentication byte, the writer task, and the read
//! loop that hands each frame to `dispatch.rs`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hadoop_protos::common::rpc_response_header_proto::RpcErrorCodeProto;
use spindle_common::text::escaped;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, Semaphore};
use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::dispatch::{handle_frame, Conn, Flow};
use super::reply::fatal_frame;
use super::Shared;
use crate::error::class;
use crate::frame::{
    call_id, FrameError, Preamble, AUTH_NONE, AUTH_SASL, HTTP_ON_IPC_PORT, IPC_VERSION,
};
use crate::limits::Admission;
use crate::reader::FrameReader;
use crate::sasl::{AuthMethod, Mechanism, SaslServer};

pub(super) async fn accept_loop(
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
                // Hadoop's words, with the methods it would list.
                let mut available: Vec<&str> = Vec::new();
                for m in &shared.config.mechanisms {
                    let name = match m {
                        Mechanism::Token(_) => "TOKEN",
                        Mechanism::Kerberos(_) => "KERBEROS",
                        Mechanism::Simple => "SIMPLE",
                    };
                    if !available.contains(&name) {
                        available.push(name);
                    }
                }
                let msg = format!(
                    "SIMPLE authentication is not enabled.  Available:[{}]",
                    available.join(", ")
                );
                let frame = fatal_frame(
                    call_id::AUTHORIZATION_FAILED,
                    &[],
                    class::ACCESS_CONTROL,
                    &msg,
                    RpcErrorCodeProto::FatalUnauthorized,
                );
                let _ = write_half.write_all(&frame).await;
                let _ = write_half.shutdown().await;
                reader.drain(DRAIN_LIMIT, DRAIN_TIME).await;
                return Err(msg);
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
            let _ = write_half.shutdown().await;
            reader.drain(DRAIN_LIMIT, DRAIN_TIME).await;
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
    // The FATAL is handed over before the ordinary channel closes: a
    // writer that saw the channel closed first would end without it.
    let mut fatal_sent = false;
    let result = match result {
        Ok(()) => Ok(()),
        Err(Closing { reason, fatal }) => {
            if let Some(frame) = fatal {
                fatal_sent = final_tx.send(frame).is_ok();
            }
            Err(reason)
        }
    };
    drop(tx);
    // Let queued replies (or the FATAL) reach the client before the socket closes.
    let _ = writer.await;
    if fatal_sent {
        // After a FATAL the client may still be sending: take its input
        // briefly, so the close does not reset the connection under it.
        reader.drain(DRAIN_LIMIT, DRAIN_TIME).await;
    }
    result
}

/// How much a refused peer's remaining input is read, and for how long,
/// before the socket closes (see [`FrameReader::drain`]).
const DRAIN_LIMIT: usize = 64 * 1024;
const DRAIN_TIME: Duration = Duration::from_secs(2);

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
