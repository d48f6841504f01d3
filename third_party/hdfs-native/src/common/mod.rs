pub mod config;
pub(crate) mod idle_timeout;
