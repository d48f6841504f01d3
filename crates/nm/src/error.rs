//! Errors of the NodeManager agent.

use spindle_common::ConfError;

/// Why the NodeManager could not start, or stopped on its own.
#[derive(Debug, thiserror::Error)]
pub enum NmError {
    /// A configuration value could not be read (the message names the file, line and key).
    #[error(transparent)]
    Conf(#[from] ConfError),

    /// A setting asks for a security or isolation property Spindle does not provide.
    #[error(transparent)]
    Refused(#[from] spindle_common::conf::refuse::Refused),

    /// A configuration value was read but cannot be used.
    #[error("property '{key}': {message}")]
    Config { key: String, message: String },

    /// The machine's host name could not be determined.
    #[error("cannot determine this machine's host name: {0}")]
    Hostname(String),

    /// The container-management server address did not resolve.
    #[error("cannot resolve the container-management address {addr}: {detail}")]
    Resolve { addr: String, detail: String },

    /// The container-management server could not listen.
    #[error("cannot listen on {addr} for the container-management protocol: {source}")]
    Bind {
        addr: String,
        #[source]
        source: std::io::Error,
    },

    /// The ResourceManager refused the registration.
    #[error("registration with the ResourceManager at {rm} failed: {message}")]
    Registration { rm: String, message: String },

    /// The ResourceManager told this node to shut down.
    #[error("the ResourceManager told this NodeManager to shut down: {diagnostics}")]
    ShutdownByRm { diagnostics: String },

    /// An auxiliary service could not be set up or started.
    #[error("auxiliary service {name}: {message}")]
    AuxService { name: String, message: String },

    /// The agent task ended abnormally (a bug).
    #[error("the NodeManager agent task failed: {0}")]
    Internal(String),
}
