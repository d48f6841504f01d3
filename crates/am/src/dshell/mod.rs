//! The distributed shell: YARN's classic example application, built on this
//! crate's clients.
//!
//! - [`client_main`] (`spindle distributed-shell`) submits an
//!   ApplicationMaster that runs this same executable as
//!   `<exe> distributed-shell-am …`, waits for the application to end and
//!   prints its final state and where each container's output is. It
//!   succeeds only if the application FINISHED with SUCCEEDED.
//! - [`am_main`] (`spindle distributed-shell-am`, run by a NodeManager)
//!   registers, asks for N containers, runs the shell command in each with
//!   its stdout and stderr in the container's log dir, waits for all of them
//!   and unregisters with SUCCEEDED if every one exited 0, else FAILED; the
//!   diagnostics list each container's node, exit status and output file.
//!
//! The executable path travels to the AM as an absolute path in its
//! command: the NodeManagers must see the same file (one host in tests, or a
//! shared installation path on a cluster).

mod am;
mod client;

pub use am::{am_main, AmArgs, AmOutcome, ContainerResult};
pub use client::{client_main, ClientArgs, ClientOutcome};

/// The subcommand that runs the ApplicationMaster.
pub const AM_SUBCOMMAND: &str = "distributed-shell-am";
/// The application type the client submits.
pub const APP_TYPE: &str = "YARN";
