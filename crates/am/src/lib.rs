//! The ApplicationMaster side of YARN, for Rust applications on a Spindle (or
//! Hadoop) cluster:
//!
//! - [`YarnClient`]: submit, watch, list and kill applications on the
//!   ResourceManager's client port;
//! - [`AmRmClient`]: an ApplicationMaster's scheduler client — register,
//!   heartbeat with the request table of [`requests`] (host / rack / `*`
//!   rows with absolute counts, only changes sent), releases and
//!   blacklists, response-id sequencing with replay of lost answers,
//!   re-registration when the ResourceManager lost the attempt, unregister;
//! - [`NmClient`]: start, stop and query containers on NodeManagers with the
//!   NMTokens the scheduler sent ([`NmTokenCache`]);
//! - [`dshell`]: the distributed-shell example built on them.
//!
//! ```no_run
//! # async fn demo(conf: spindle_common::Configuration) -> Result<(), spindle_am::AmError> {
//! use spindle_am::{AmRmClient, ContainerRequest, FinalStatus, LaunchContext, NmClient};
//! use spindle_common::Resource;
//!
//! // Inside an ApplicationMaster container:
//! let mut rm = AmRmClient::from_env(&conf)?;
//! rm.register("am-host", -1, "").await?;
//! let nm = NmClient::new(rm.attempt(), rm.nm_token_cache());
//! rm.add_request(&ContainerRequest::new(0, Resource::new(512, 1)))?;
//! let mut started = 0;
//! while started < 1 {
//!     for c in rm.allocate(0.0).await?.allocated {
//!         if rm.container_granted(&c).is_some() {
//!             nm.start_container(&c, &LaunchContext::command("sleep 1")).await?;
//!             started += 1;
//!         } else {
//!             rm.release(c.id);
//!         }
//!     }
//!     tokio::time::sleep(std::time::Duration::from_secs(1)).await;
//! }
//! rm.finish(FinalStatus::Succeeded, "", "").await?;
//! # Ok(()) }
//! ```

pub mod amrm;
pub mod convert;
pub mod dshell;
pub mod error;
pub mod launch;
pub mod nm_client;
pub mod nm_tokens;
pub mod records;
pub mod requests;
pub mod yarn_client;

pub use amrm::{Allocation, AmRmClient, AmRmConfig, Registration};
pub use error::AmError;
pub use launch::{
    quote_for_launch, LaunchContext, LocalResource, LocalResourceKind, LocalResourceVisibility,
};
pub use nm_client::{NmClient, Started};
pub use nm_tokens::NmTokenCache;
pub use records::{
    exit_status, AppReport, AppState, Container, ContainerState, ContainerStatus, FinalStatus,
    NodeUpdate,
};
pub use requests::{
    ContainerRequest, DefaultRackResolver, RackResolver, RequestTable, ResourceRow,
    StaticRackResolver, ANY, DEFAULT_RACK,
};
pub use yarn_client::{ApplicationSubmission, YarnClient};
