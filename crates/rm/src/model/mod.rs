//! The RM's domain: applications, attempts, the tokens and keys, who may
//! do what, the limits on what peers send, the reports queries answer and
//! the wire form of all of these. Pure logic with time passed in; the
//! state ([`crate::state`]) is made of these parts.

pub mod access;
pub mod amrm;
pub mod apps;
pub mod attempts;
pub mod convert;
pub mod delegation;
pub mod keys;
pub mod launch;
pub mod limits;
pub mod queue_admission;
pub mod refusal;
pub mod reports;
pub mod submission;
pub mod tracking;
