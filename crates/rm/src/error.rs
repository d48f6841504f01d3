//! Why the ResourceManager could not start.

use std::net::SocketAddr;

use spindle_common::conf::ConfError;

use crate::store;

/// Why the RM could not start.
#[derive(Debug, thiserror::Error)]
pub enum RmError {
    #[error(transparent)]
    Conf(#[from] ConfError),
    /// A setting asks for a security or isolation property Spindle does not provide.
    #[error(transparent)]
    Refused(#[from] spindle_common::conf::refuse::Refused),
    #[error(transparent)]
    Store(#[from] store::StoreError),
    #[error("invalid configuration: {0}")]
    Invalid(String),
    #[error("cannot resolve {key} = '{value}': {detail}")]
    Resolve {
        key: String,
        value: String,
        detail: String,
    },
    #[error("cannot listen on {addr} ({key}): {source}")]
    Bind {
        key: String,
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}
