//! What a client submits for an application, in domain terms: read by the
//! limits, recorded by the application table.

use std::collections::BTreeSet;

use spindle_common::ids::ApplicationId;
use spindle_common::resource::Resource;

/// What a client submitted, in domain terms. The AM's launch context travels
/// beside it (see `launch::AmLaunchContext`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submission {
    pub id: ApplicationId,
    pub name: String,
    pub queue: String,
    pub app_type: String,
    pub tags: BTreeSet<String>,
    /// The priority the client asked for; `None` when the submission
    /// carries none (the queue's default then applies). The RM replaces it
    /// by the effective priority before the application is recorded.
    pub priority: Option<i32>,
    pub am_resource: Resource,
    pub max_attempts: i32,
    pub unmanaged_am: bool,
    pub keep_containers: bool,
}
