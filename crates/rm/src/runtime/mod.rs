//! The running RM: the task that owns the state and the handle every
//! protocol handler uses ([`core`]), what the handlers share ([`context`]),
//! the active/standby switch ([`active`]) with its HA configuration
//! ([`ha_conf`]) and automatic failover ([`failover`]), the effects that
//! need the network ([`launcher`]), aggregated log retention
//! ([`log_retention`]) and the proxy-user rules the IPC servers ask
//! ([`impersonation`]).

pub mod active;
pub mod amrm_verifier;
pub mod context;
pub mod core;
pub mod delegation_verifier;
pub mod failover;
pub mod ha_conf;
pub mod impersonation;
pub mod launcher;
pub mod log_retention;
pub mod service_authz;
