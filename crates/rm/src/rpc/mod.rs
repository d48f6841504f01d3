//! The RM's RPC protocols, one module each, one named handler per method,
//! converting with [`crate::model::convert`] and reaching the state
//! through [`crate::runtime::core`].

pub mod admin_service;
pub mod ams_service;
pub mod client_service;
pub mod haservice;
pub mod tracker_service;
