//! Spindle's NodeManager agent.
//!
//! A NodeManager offers one machine's memory and cores to the
//! ResourceManager. This crate currently provides:
//!
//! - [`NmConfig`]: the node's settings from `yarn-site.xml` (addresses,
//!   resources with Hadoop's hardware detection, local and log dirs, disk
//!   health limits);
//! - [`disks`]: the disk health checker for the local and log dirs;
//! - the node status updater: registration with the ResourceManager's
//!   resource tracker, heartbeats with response-id sequencing, RESYNC and
//!   SHUTDOWN handling, unregistration on a clean stop;
//! - the ContainerManagementProtocol server on `yarn.nodemanager.address`,
//!   bound first so the NodeId carries the real port, with NMToken
//!   authentication ([`security`]);
//! - containers ([`containers`]): container-token checks, localization of
//!   `file:` and `hdfs:` resources with shared caches ([`localizer`],
//!   [`unpack`]; remote sources read through `spindle_fs`),
//!   Hadoop's launch contract ([`launch`]), the container executor that
//!   starts, contains and kills container processes ([`executor`]: as the
//!   NodeManager's user or as their own, cgroups v2 where available), memory
//!   monitoring from `/proc` ([`procfs`]), and their statuses in heartbeats;
//! - recovery ([`recovery`]): with `yarn.nodemanager.recovery.enabled`, a
//!   NodeManager killed and started again takes back its containers (and
//!   the cached copies they use); without it, a start moves the previous
//!   run's caches and `nmPrivate` aside and deletes them in the background.
//!
//! - the web server ([`web`]) on `yarn.nodemanager.webapp.address`:
//!   Hadoop's `NMWebServices` and the container log pages.
//!
//! ```no_run
//! # async fn demo() -> Result<(), spindle_nm::NmError> {
//! let conf = spindle_common::Configuration::load(None)?;
//! let nm = spindle_nm::NodeManager::start(&conf).await?;
//! println!("running as {}", nm.node_id());
//! tokio::select! {
//!     exit = nm.wait() => println!("NodeManager ended: {exit}"),
//!     _ = tokio::signal::ctrl_c() => {
//!         let exit = nm.stop().await;
//!         println!("NodeManager {exit}");
//!     }
//! }
//! # Ok(()) }
//! ```

pub mod agent;
pub mod aux_services;
pub mod cache_entry;
pub mod config;
pub mod container_manager;
pub mod containers;
pub mod disks;
pub mod error;
pub mod executor;
mod handle;
pub mod hardware;
pub mod launch;
pub mod localizer;
pub mod logagg;
pub mod procfs;
pub mod recovery;
pub mod security;
pub mod session;
mod start;
pub mod unpack;
pub mod web;
pub mod wire;

pub use agent::{NmExit, NmState, DEFAULT_HEARTBEAT_INTERVAL};
pub use config::{ContainerSettings, NmConfig, NM_VERSION};
pub use containers::{
    exit_status, AppReport, ContainerManager, ContainerPhase, ContainerReport, KillOutcome,
    KillReason,
};
pub use disks::{
    DiskHealthChecker, DiskHealthConfig, DiskUsage, NodeHealth, SpaceSource, StatvfsSpace,
};
pub use error::NmError;
pub use handle::NodeManagerHandle;
pub use security::{KeyPurpose, NmTokenCaller, SessionSecrets, TokenSecrets};
pub use session::RmSession;
pub use spindle_common::security::{ContainerTokenIdentifier, NmTokenIdentifier};
pub use start::NodeManager;
pub use wire::MasterKey;
