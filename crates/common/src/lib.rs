//! Shared building blocks of Spindle, the Rust replacement for the YARN
//! ResourceManager and NodeManager:
//!
//! * [`conf`]: Hadoop-style XML configuration (`core-site.xml`,
//!   `yarn-site.xml`) with Hadoop's precedence, `final` and `${...}`
//!   expansion rules, built-in Hadoop 3.3 defaults, and errors that name
//!   the file, line and key;
//! * [`ids`]: application, attempt, container and node ids with Hadoop's
//!   string forms;
//! * [`resource`]: memory + vcores arithmetic;
//! * [`proto`]: the conversions between those ids and resources and their
//!   YARN protobuf records, shared by every crate that speaks a protocol;
//! * [`states`]: application and attempt states and the final status, as
//!   Hadoop names them, shared by the RM and its clients;
//! * [`text`]: peer-supplied text escaped for log lines;
//! * [`markup`]: text escaped for HTML, XML and SVG, the one escaping every
//!   page, report and document Spindle writes uses;
//! * [`time`]: the wall clock and file times in epoch milliseconds, and the
//!   calendar fields every date Spindle writes is made of;
//! * [`security`]: token identifiers, master keys and token passwords, and
//!   Hadoop's credentials ("HDTS") format.
//!
//! Beyond [`proto`] and [`security`] (whose token identifiers *are* protobuf
//! messages), this crate knows nothing about the wire: conversions of whole
//! requests and reports live in the crates that speak the protocols.
//!
//! ```
//! use spindle_common::conf::{keys, Configuration};
//!
//! let mut conf = Configuration::with_defaults();
//! conf.set(keys::RM_HOSTNAME, "rm.example.internal");
//! assert_eq!(
//!     conf.get_socket_addr(keys::RM_ADDRESS).ok(),
//!     Some(("rm.example.internal".to_string(), 8032))
//! );
//! ```

pub mod acl;
pub mod conf;
pub mod exit_status;
pub mod ids;
pub mod markup;
pub mod proto;
pub mod resource;
pub mod security;
pub mod states;
pub mod text;
pub mod time;

pub use conf::{current_user, ConfError, Configuration};
pub use ids::{ApplicationAttemptId, ApplicationId, ContainerId, HostName, IdParseError, NodeId};
pub use resource::Resource;
pub use states::{AppState, AttemptState, FinalStatus};
