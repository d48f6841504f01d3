//! Spindle's MR3-style DAG ApplicationMaster on YARN: the session AM, its
//! ContainerWorkers and the `spindle dag` client.
//!
//! The decisions (which task runs where, when workers stop or move, when to
//! scale out or in) are made by the pure cores of `spindle-dag`; this crate
//! is their production driver:
//!
//! - [`session`]: the driver proper — real events in, core inputs, core
//!   decisions out as [`session::Effect`]s; no I/O, so it is unit-tested;
//! - [`am`]: the AM process (`spindle dag am`): AMRM heartbeats, worker
//!   launches through the NodeManagers, the session server;
//! - [`worker`]: `spindle worker`, run in each worker container;
//! - [`client`]: `spindle dag session start|stop`, `submit`, `status`, `kill`;
//! - [`protocol`]: the newline-delimited JSON spoken on the session port;
//! - [`http`]: how workers serve and fetch task outputs;
//! - [`dagfile`]: the DAG file format.
//!
//! See `docs/dag.md` for the user-facing description.

pub mod am;
pub mod client;
pub mod dagfile;
pub mod http;
pub mod protocol;
pub mod session;
pub mod worker;

/// The YARN application type of a DAG session.
pub const APP_TYPE: &str = "SPINDLE-DAG";
/// `spindle dag <AM_SUBCOMMAND>` runs the AM.
pub const AM_SUBCOMMAND: &str = "am";
/// `spindle <WORKER_SUBCOMMAND>` runs a worker.
pub const WORKER_SUBCOMMAND: &str = "worker";
