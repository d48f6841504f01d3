//! Hadoop IPC, as spoken by Hadoop 2.x/3.x's `ProtobufRpcEngine2`.
//!
//! Layers, one module each:
//! - [`frame`]: the preamble, length-prefixed frames, delimited messages;
//! - [`sasl`]: the SASL negotiation state machine (SIMPLE, and TOKEN via DIGEST-MD5);
//! - [`digest`]: DIGEST-MD5 (RFC 2831) challenges, responses and digests;
//! - [`server`]: connections, the connection context, dispatch by protocol and method;
//! - [`limits`]: connection slots per server and per peer, the byte budget of request
//!   frames, and the server's counters;
//! - [`client`]: one pipelined client connection;
//! - [`retry`]: Hadoop's retry rules as data (failures, policies, idempotence);
//! - [`methods`]: the table of protocol methods, each one constant with its
//!   request and response types and Hadoop's idempotence mark, used by clients
//!   and servers alike;
//! - [`proxy`]: the client proxy every Spindle client uses: connect,
//!   authenticate, reconnect, retry and fail over in one layer;
//! - [`yarn_conf`]: the proxies of YARN's clients from Hadoop's configuration keys;
//! - [`error`]: Java exception names and messages as they travel on the wire.

pub mod client;
pub mod digest;
pub mod error;
pub mod frame;
pub mod kerberos;
pub mod limits;
pub mod methods;
pub mod proxy;
mod reader;
pub mod retry;
pub mod sasl;
pub mod server;
pub mod yarn_conf;

pub use client::{ClientAuth, ClientOptions, IpcClient};
pub use error::{class, CloseCause, IpcError, RpcError};
pub use limits::ServerStats;
pub use methods::Method;
pub use proxy::{CallError, ProxyConfig, RpcProxy};
pub use retry::{ConnectRetry, Failure, Idempotence, Limit, RetryPolicy, Sleep};
pub use sasl::{AuthMethod, Mechanism, TokenVerifier, VerifiedToken};
pub use server::{CallContext, RpcServer, ServerConfig, Service, StatefulService};

/// The protocol names Java clients put in the connection context and request header.
pub mod protocols {
    pub const APPLICATION_CLIENT: &str = "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB";
    pub const APPLICATION_MASTER: &str = "org.apache.hadoop.yarn.api.ApplicationMasterProtocolPB";
    pub const CONTAINER_MANAGEMENT: &str =
        "org.apache.hadoop.yarn.api.ContainerManagementProtocolPB";
    pub const RESOURCE_MANAGER_ADMINISTRATION: &str =
        "org.apache.hadoop.yarn.server.api.ResourceManagerAdministrationProtocolPB";
    pub const RESOURCE_TRACKER: &str = "org.apache.hadoop.yarn.server.api.ResourceTrackerPB";
    /// `HAServiceProtocolPB`'s name: a ResourceManager with HA serves it on its
    /// admin port.
    pub const HA_SERVICE: &str = "org.apache.hadoop.ha.HAServiceProtocol";
}
