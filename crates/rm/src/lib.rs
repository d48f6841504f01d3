//! The Spindle ResourceManager: Hadoop's RM protocols over Hadoop IPC.
//!
//! - [`state`]: the RM state ([`state::RmState`]), changed only by the closed set of
//!   [`command`]s through `RmState::handle`, read through its named queries;
//! - [`core`]: the task that owns the state and the handle ([`core::CoreHandle`])
//!   protocol handlers use to send commands and ask queries; [`time`]: the clocks;
//! - [`cluster`]: the node table and the scheduler core, kept in step;
//! - [`apps`], [`attempts`], [`keys`], [`hosts`], [`acl`], [`queue_files`]: the
//!   state's parts, pure domain logic with time passed in; [`access`]: who may
//!   do what to an application, decided in one place;
//! - [`client_service`], [`ams_service`], [`tracker_service`], [`admin_service`]:
//!   the four protocols, one named handler per method, converting with
//!   [`convert`]; [`launcher`]: the effects that need the network.

pub mod access;
pub mod acl;
pub mod active;
pub mod admin_service;
pub mod amrm;
pub mod ams_service;
pub mod apps;
pub mod attempts;
pub mod client_service;
pub mod cluster;
pub mod command;
pub mod context;
pub mod convert;
pub mod core;
pub mod error;
pub mod failover;
pub mod ha;
pub mod ha_conf;
pub mod haservice;
pub mod hosts;
pub mod iso8601;
pub mod keys;
pub mod launch;
pub mod launcher;
pub mod limits;
pub mod log_aggregation;
pub mod log_retention;
pub mod queue_admission;
pub mod queue_files;
pub mod refusal;
pub mod reports;
mod start;
pub mod state;
pub mod state_build;
pub mod store;
pub mod submission;
pub mod time;
pub mod topology;
pub mod tracker_service;
pub mod tracking;
pub mod web;

pub use crate::active::{RmControl, ServiceState};
pub use crate::context::RmContext;
pub use crate::error::RmError;
pub use crate::start::{ipc_server_config, ResourceManager, RmAddresses};
