//! Errors of the ApplicationMaster-side clients.

use spindle_common::conf::ConfError;
use spindle_ipc::CallError;

/// What went wrong talking to the ResourceManager or a NodeManager.
#[derive(Debug, thiserror::Error)]
pub enum AmError {
    /// A configuration key is missing or malformed.
    #[error(transparent)]
    Conf(#[from] ConfError),

    /// The process environment lacks what an ApplicationMaster container is
    /// given (`CONTAINER_ID`, `HADOOP_TOKEN_FILE_LOCATION`, ...), or has a
    /// malformed value.
    #[error("{0}")]
    Environment(String),

    /// A file (the token file, a local resource) could not be read.
    #[error("cannot read {path}: {source}")]
    File {
        path: String,
        #[source]
        source: std::io::Error,
    },

    /// A call failed: the peer answered with an exception, or the transport
    /// broke, timed out or was refused (after the retries of the client
    /// proxy, which the error counts).
    #[error(transparent)]
    Rpc(Box<CallError>),

    /// A NodeManager refused one container of a request (an entry of
    /// `failed_requests`), with the Java exception it raised.
    #[error("{operation} of {container} on {node} failed: {class_name}: {message}")]
    Container {
        operation: &'static str,
        container: String,
        node: String,
        class_name: String,
        message: String,
    },

    /// The ResourceManager never sent an NMToken for this node, so no
    /// container can be started there (Hadoop's NMClient fails the same way).
    #[error("No NMToken sent for {node}")]
    NoNmToken { node: String },

    /// The caller asked for something the protocol cannot express
    /// (a negative count, an unknown request to remove, ...).
    #[error("invalid request: {0}")]
    InvalidRequest(String),

    /// A peer's answer lacks a field the protocol requires, or is inconsistent.
    #[error("protocol error: {0}")]
    Protocol(String),

    /// Something did not happen in the time allowed.
    #[error("{0}")]
    Timeout(String),

    /// The ResourceManager ended this attempt (AM_SHUTDOWN in an allocate answer).
    #[error("the ResourceManager asked attempt {attempt} to shut down")]
    Shutdown { attempt: String },
}

impl From<CallError> for AmError {
    fn from(e: CallError) -> AmError {
        AmError::Rpc(Box::new(e))
    }
}

impl AmError {
    /// The Java class name of the exception the peer answered with, if the
    /// call reached it and failed there.
    pub fn remote_class(&self) -> Option<&str> {
        match self {
            AmError::Rpc(e) => e.remote_class(),
            AmError::Container { class_name, .. } => Some(class_name),
            _ => None,
        }
    }

    /// True when the call may not have reached the peer or its answer was
    /// lost (broken connection, timeout): retrying it is the remedy.
    pub fn is_transport(&self) -> bool {
        matches!(self, AmError::Rpc(e) if e.is_transport())
    }
}
