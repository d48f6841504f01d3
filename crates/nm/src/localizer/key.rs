//! What a cached copy is known by: its scope, the group it is given, and
//! its source as the launch context states it; and the record of a copy
//! made ([`CachedResource`], kept by the recovery records).

use std::path::PathBuf;

use super::copy::Done;
use crate::cache_entry::{CachedResource, ResourceType, Scope};

/// What a cached copy is known by: one copy per key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct CacheKey {
    pub(super) scope: Scope,
    /// The group private and application copies are given (see
    /// [`crate::executor::RunAs`]).
    pub(super) group: Option<u32>,
    pub(super) filesystem: Option<String>,
    pub(super) source: PathBuf,
    pub(super) size: i64,
    pub(super) timestamp: i64,
    pub(super) kind: ResourceType,
}

impl CachedResource {
    /// The record of the copy `done` made for `key` (none without the
    /// copy's fingerprint).
    pub(super) fn new(key: &CacheKey, done: &Done) -> Option<CachedResource> {
        Some(CachedResource {
            scope: key.scope.clone(),
            group: key.group,
            filesystem: key.filesystem.clone(),
            source: key.source.clone(),
            size: key.size,
            timestamp: key.timestamp,
            kind: key.kind,
            path: done.path.clone(),
            bytes: done.bytes,
            fingerprint: done.fingerprint.clone()?,
        })
    }

    /// The key a recorded copy is cached under.
    pub(super) fn key(&self) -> CacheKey {
        CacheKey {
            scope: self.scope.clone(),
            group: self.group,
            filesystem: self.filesystem.clone(),
            source: self.source.clone(),
            size: self.size,
            timestamp: self.timestamp,
            kind: self.kind,
        }
    }
}
