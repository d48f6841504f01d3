//! A server's limits and timeouts, and the `ipc.*` keys that set them.

use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use spindle_common::conf::{ConfError, Configuration};

use crate::frame;
use crate::sasl::Mechanism;

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
/// Who may act for whom on a server (Hadoop's `ImpersonationProvider`).
pub trait Impersonation: Send + Sync + std::fmt::Debug {
    /// `Ok` when `real_principal` (short name `real_short`) may act for
    /// `user` from `from`; a refusal is Hadoop's message.
    fn authorize<'a>(
        &'a self,
        real_principal: &'a str,
        real_short: &'a str,
        user: &'a str,
        from: IpAddr,
    ) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>>;
}

pub const DEFAULT_MAX_CONNECTIONS: usize = 16_384;

/// Who a connection is, as service-level authorization sees it.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionCaller<'a> {
    /// The effective user (a Kerberos caller's short name, a token's user,
    /// a SIMPLE caller's claim, or the user a proxy acts for).
    pub user: &'a str,
    /// Who authenticated for `user`, when it is a proxy.
    pub real_user: Option<&'a str>,
    pub auth: &'a crate::sasl::AuthMethod,
}

impl ConnectionCaller<'_> {
    /// Hadoop's `UserGroupInformation.toString()` of the caller
    /// (`alice@EXAMPLE.COM (auth:KERBEROS)`, `bob (auth:PROXY) via alice
    /// (auth:SIMPLE)`), and its Kerberos principal when it acts for itself.
    pub fn ugi(&self) -> (String, Option<String>) {
        use crate::sasl::AuthMethod;
        let (name, how, principal) = match self.auth {
            AuthMethod::Simple => (self.real_user.unwrap_or(self.user), "SIMPLE", None),
            AuthMethod::Kerberos { principal, .. } => {
                (principal.as_str(), "KERBEROS", Some(principal.clone()))
            }
            AuthMethod::Token {
                user, real_user, ..
            } => (real_user.as_deref().unwrap_or(user), "TOKEN", None),
        };
        match self.real_user {
            Some(_) => (
                format!("{} (auth:PROXY) via {name} (auth:{how})", self.user),
                None,
            ),
            None => (format!("{name} (auth:{how})"), principal),
        }
    }
}

/// Hadoop's `ServiceAuthorizationManager`: whether a caller may open a
/// connection to a protocol.
pub trait ServiceAuthorization: Send + Sync + std::fmt::Debug {
    /// `Ok` when `caller` may use `protocol` from `from`; a refusal is
    /// Hadoop's message (sent in an AuthorizationException).
    fn authorize<'a>(
        &'a self,
        caller: ConnectionCaller<'a>,
        protocol: &'a str,
        from: IpAddr,
    ) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>>;
}
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
    /// Who may act for whom: asked when a Kerberos caller names another user
    /// in its connection context (Hadoop's proxy users). `None`: nobody may.
    pub impersonation: Option<Arc<dyn Impersonation>>,
    /// Service-level authorization (`hadoop.security.authorization`): asked
    /// once per connection, after its context names the user and protocol.
    /// `None`: every authenticated caller reaches every protocol.
    pub authorization: Option<Arc<dyn ServiceAuthorization>>,
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
            impersonation: None,
            authorization: None,
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
