//! Token security for a non-Kerberos YARN cluster:
//!
//! * [`tokens`]: tokens, the YARN token kinds and their identifiers (AMRMToken,
//!   NMToken, ContainerToken) with the users they authenticate as;
//! * [`secret`]: master keys, key rolling and HmacSHA1 token passwords;
//! * [`credentials`]: Hadoop's "HDTS" credentials format, as found in
//!   `ContainerLaunchContext.tokens` and `HADOOP_TOKEN_FILE_LOCATION` files.
//!
//! The IPC layer proves tokens with DIGEST-MD5 (`spindle_ipc::sasl`); this module
//! supplies the identifiers and passwords it works with.

pub mod auth_to_local;
pub mod credentials;
pub mod proxy_users;
pub mod secret;
pub mod service_acl;
pub mod tokens;

pub use credentials::{Credentials, CredentialsError};
pub use secret::{MasterKey, SecretError, SecretManager};
pub use tokens::{
    kind, AmRmTokenIdentifier, ContainerKind, ContainerTokenIdentifier, NmTokenIdentifier,
    RmDelegationTokenIdentifier, Token, TokenError, TokenIdentifier,
};
