//! The HTTP layer Spindle's daemons share: a server bound like the RPC
//! listeners ([`WebServer`]), Hadoop's content negotiation between JSON and
//! XML ([`Format`], [`reply`]) and its error bodies ([`WebError`]).
//!
//! What a daemon serves lives in that daemon's crate (`spindle_rm::web`,
//! `spindle_nm::web`); this crate knows no YARN record.

pub mod conf_page;
mod error;
pub mod jmx;
pub mod log_level;
pub mod prom;
pub mod query;
mod render;
mod server;
pub mod spnego;
pub mod stacks;

pub use error::WebError;
pub use render::{json_to_xml, reply, Format};
pub use server::WebServer;
