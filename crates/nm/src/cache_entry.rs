//! What the localizer's cache is made of, as data: shared by the localizer
//! ([`crate::localizer`]), which fills and checks the cache, and the
//! recovery records ([`crate::recovery`]), which keep it across restarts.

use std::path::PathBuf;

use spindle_common::ApplicationId;

/// How a resource is made available.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResourceType {
    File,
    Archive,
    Pattern,
}

/// Who a cached copy belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Scope {
    Public,
    /// A user's private cache.
    User(String),
    /// An application's cache (its user, the application).
    App(String, ApplicationId),
}

/// What identifies a cached copy and changes when it is written to or its
/// mode is changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint {
    pub dev: u64,
    pub ino: u64,
    pub len: u64,
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
    pub mode: u32,
}

/// One cache entry as the recovery records keep it
/// (`yarn.nodemanager.recovery.enabled`): what was localized, for whom, and
/// the copy as it was right after it was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedResource {
    pub scope: Scope,
    /// The group the copy was given (see `executor::RunAs`).
    pub group: Option<u32>,
    /// The remote file system of the source (`hdfs://host:port`), if any.
    pub filesystem: Option<String>,
    pub source: PathBuf,
    pub size: i64,
    pub timestamp: i64,
    pub kind: ResourceType,
    /// The local copy.
    pub path: PathBuf,
    /// Size of the source.
    pub bytes: u64,
    pub fingerprint: Fingerprint,
}
