//! The Spindle ResourceManager: Hadoop's RM protocols over Hadoop IPC.
//!
//! The crate stands in layers, each folder using only those below it:
//!
//! - [`start`] (private): reads the configuration and binds the ports;
//! - [`rpc`]: the five protocols (client, ApplicationMaster, resource
//!   tracker, admin, HA), one named handler per method; [`web`]: the REST
//!   API, web proxy and UI;
//! - [`runtime`]: the running RM: the task that owns the state and the
//!   handle handlers use ([`runtime::core`]), the active/standby switch
//!   ([`runtime::active`]) and failover, the effects that need the network
//!   ([`runtime::launcher`]), log retention;
//! - [`state`]: the RM state ([`state::RmState`]), changed only by the
//!   closed set of [`state::command`]s through `RmState::handle`, read
//!   through its named queries, and built through one door
//!   ([`state::build`]);
//! - [`model`]: the state's parts, pure domain logic with time passed in:
//!   applications, attempts, keys and tokens, access, limits, reports and
//!   their wire form ([`model::convert`]);
//! - [`cluster`]: the node table and the scheduler core, kept in step;
//!   [`store`]: the state store (redb, ZooKeeper);
//! - below them, read by all: [`queue_files`], [`hosts`], [`topology`],
//!   [`ha`] (ZooKeeper election), [`acl`], [`time`], [`iso8601`],
//!   [`log_aggregation`], [`error`], [`web_host`] (the host name the RM
//!   writes in its web addresses, resolved at start-up).

pub mod acl;
pub mod cluster;
pub mod error;
pub mod ha;
pub mod hosts;
pub mod iso8601;
pub mod log_aggregation;
pub mod model;
pub mod queue_files;
pub mod rpc;
pub mod runtime;
mod start;
pub mod state;
pub mod store;
pub mod time;
pub mod topology;
pub mod web;
pub mod web_host;

pub use crate::error::RmError;
pub use crate::runtime::active::{RmControl, ServiceState};
pub use crate::runtime::context::RmContext;
pub use crate::start::{ipc_server_config, ResourceManager, RmAddresses};
