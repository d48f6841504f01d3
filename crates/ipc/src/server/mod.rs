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
//! through [`spindle_common::text::escaped`], so it cannot start a forged line.
//!
//! One file per concern: `config.rs` (limits and timeouts, from the `ipc.*`
//! keys), `service.rs` (a protocol's methods and their typed handlers), the
//! accept loop and a connection's life (`connection.rs`: preamble,
//! authentication byte, writer task, read loop), a frame's handling
//! (`dispatch.rs`: the connection's state, request header, SASL, connection
//! context, dispatch to a handler; `connection.rs` uses it, never the other
//! way) and the reply frames (`reply.rs`).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tracing::info;

use crate::limits::{Budget, Counters, PeerTable, ServerStats};
use crate::sasl::AuthMethod;

mod config;
mod connection;
mod dispatch;
mod reply;
mod service;

pub use config::{
    keys, ConnectionCaller, Impersonation, ServerConfig, ServiceAuthorization,
    DEFAULT_MAX_BUFFERED_REQUEST_BYTES, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_CONNECTIONS_PER_PEER,
};
pub use service::{Service, StatefulService};

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

pub(crate) struct Shared {
    pub(crate) services: HashMap<String, Service>,
    pub(crate) config: ServerConfig,
    /// Slots of `max_connections`; `None` when there is no limit.
    pub(crate) connections: Option<Arc<Semaphore>>,
    pub(crate) peers: Arc<PeerTable>,
    pub(crate) budget: Arc<Budget>,
    pub(crate) counters: Arc<Counters>,
    /// Set while refusals for a full server are logged at DEBUG only.
    pub(crate) full_warned: std::sync::atomic::AtomicBool,
}

impl Shared {
    /// The longest frame this server reads: `ipc.maximum.data.length`, or less if
    /// the byte budget could never hold such a frame.
    pub(crate) fn max_frame(&self) -> usize {
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
            map.insert(s.protocol().to_string(), s);
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
        let accept_task = tokio::spawn(connection::accept_loop(listener, shared.clone(), stop));
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
