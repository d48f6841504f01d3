//! Hadoop access control lists and the group lookup they need: the shared
//! implementation in [`spindle_common::acl`], which the NodeManager uses too
//! (application ACLs on its log pages).

pub use spindle_common::acl::*;
