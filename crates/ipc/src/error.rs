//! Errors as they travel on a Hadoop IPC connection.
//!
//! A Java client rebuilds the exception it knows from the class name in the response
//! header, so a handler failure is always a Java class name plus a message. The
//! constants below are the names Hadoop's clients branch on.

use hadoop_protos::common::rpc_response_header_proto::RpcErrorCodeProto;

/// Java exception class names that Hadoop and YARN clients recognise.
pub mod class {
    pub const IO_EXCEPTION: &str = "java.io.IOException";
    pub const ILLEGAL_ARGUMENT: &str = "java.lang.IllegalArgumentException";
    pub const UNSUPPORTED_OPERATION: &str = "java.lang.UnsupportedOperationException";
    pub const NO_SUCH_METHOD: &str = "org.apache.hadoop.ipc.RpcNoSuchMethodException";
    pub const NO_SUCH_PROTOCOL: &str = "org.apache.hadoop.ipc.RpcNoSuchProtocolException";
    pub const RPC_SERVER: &str = "org.apache.hadoop.ipc.RpcServerException";
    pub const VERSION_MISMATCH: &str = "org.apache.hadoop.ipc.RPC$VersionMismatch";
    pub const ACCESS_CONTROL: &str = "org.apache.hadoop.security.AccessControlException";
    pub const AUTHORIZATION: &str = "org.apache.hadoop.security.authorize.AuthorizationException";
    pub const STANDBY: &str = "org.apache.hadoop.ipc.StandbyException";
    pub const RETRIABLE: &str = "org.apache.hadoop.ipc.RetriableException";
    pub const YARN: &str = "org.apache.hadoop.yarn.exceptions.YarnException";
    pub const APPLICATION_NOT_FOUND: &str =
        "org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException";
    pub const APPLICATION_ATTEMPT_NOT_FOUND: &str =
        "org.apache.hadoop.yarn.exceptions.ApplicationAttemptNotFoundException";
    pub const CONTAINER_NOT_FOUND: &str =
        "org.apache.hadoop.yarn.exceptions.ContainerNotFoundException";
    pub const INVALID_RESOURCE_REQUEST: &str =
        "org.apache.hadoop.yarn.exceptions.InvalidResourceRequestException";
    pub const INVALID_APPLICATION_MASTER_REQUEST: &str =
        "org.apache.hadoop.yarn.exceptions.InvalidApplicationMasterRequestException";
    pub const APPLICATION_MASTER_NOT_REGISTERED: &str =
        "org.apache.hadoop.yarn.exceptions.ApplicationMasterNotRegisteredException";
    pub const INVALID_CONTAINER: &str =
        "org.apache.hadoop.yarn.exceptions.InvalidContainerException";
    pub const INVALID_AUX_SERVICE: &str =
        "org.apache.hadoop.yarn.exceptions.InvalidAuxServiceException";
}

/// A failed call, as it goes out in an ERROR response header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcError {
    /// Fully qualified Java exception class name.
    pub class_name: String,
    /// Human-readable message (Hadoop strips the "ClassName: " prefix; so do we).
    pub message: String,
    /// The IPC-level error code.
    pub code: RpcErrorCodeProto,
}

impl RpcError {
    /// An exception thrown by the application-level handler.
    pub fn new(class_name: impl Into<String>, message: impl Into<String>) -> Self {
        RpcError {
            class_name: class_name.into(),
            message: message.into(),
            code: RpcErrorCodeProto::ErrorApplication,
        }
    }

    /// `org.apache.hadoop.yarn.exceptions.YarnException`.
    pub fn yarn(message: impl Into<String>) -> Self {
        Self::new(class::YARN, message)
    }

    /// `java.io.IOException`.
    pub fn io(message: impl Into<String>) -> Self {
        Self::new(class::IO_EXCEPTION, message)
    }

    pub fn no_such_protocol(protocol: &str) -> Self {
        RpcError {
            class_name: class::NO_SUCH_PROTOCOL.into(),
            message: format!("Unknown protocol: {protocol}"),
            code: RpcErrorCodeProto::ErrorNoSuchProtocol,
        }
    }

    pub fn no_such_method(protocol: &str, method: &str) -> Self {
        RpcError {
            class_name: class::NO_SUCH_METHOD.into(),
            message: format!("Unknown method {method} called on {protocol} protocol."),
            code: RpcErrorCodeProto::ErrorNoSuchMethod,
        }
    }

    /// A method that exists in Hadoop's protocol but that Spindle does not serve.
    pub fn not_supported(protocol: &str, method: &str) -> Self {
        Self::new(
            class::YARN,
            format!("{method} of {protocol} is not supported by Spindle"),
        )
    }
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.class_name, self.message)
    }
}

impl std::error::Error for RpcError {}

/// Errors seen by the client side of a connection.
#[derive(Debug, thiserror::Error)]
pub enum IpcError {
    #[error("I/O error talking to {addr}: {source}")]
    Io {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("remote exception {class_name}: {message}")]
    Remote { class_name: String, message: String },
    #[error("protocol error from {addr}: {detail}")]
    Protocol { addr: String, detail: String },
    #[error("connection to {addr} closed: {detail}")]
    Closed {
        addr: String,
        detail: String,
        /// Whether the call left, and how the connection ended.
        cause: CloseCause,
    },
    #[error("call {method} to {addr} timed out after {timeout_ms} ms")]
    Timeout {
        addr: String,
        method: String,
        timeout_ms: u64,
    },
}

/// How a call met a closed connection. Hadoop's client sees these as different
/// Java exceptions, and its retry policies treat them differently (see
/// [`crate::retry::Failure`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseCause {
    /// The connection had closed before the call was sent: the server never saw it.
    NotSent,
    /// The server ended the stream while the call waited (`java.io.EOFException`).
    Eof,
    /// The connection broke while the call waited: reset, read error, a FATAL
    /// reply, or bytes the client could not read (`java.net.SocketException`).
    Broken,
}

impl IpcError {
    /// The Java class name of a remote exception, if this is one.
    pub fn remote_class(&self) -> Option<&str> {
        match self {
            IpcError::Remote { class_name, .. } => Some(class_name),
            _ => None,
        }
    }
}
