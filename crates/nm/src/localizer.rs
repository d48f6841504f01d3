//! Localization: bringing a container's resources onto this node.
//!
//! `file:` URLs (the node and the submitter share a file system, or the
//! file was staged on this machine) and `hdfs://` URLs are served; HDFS is
//! read natively (through `spindle_fs`), as the application's user for
//! PRIVATE and APPLICATION resources and as the node's for PUBLIC ones.
//! Any other scheme is refused with the scheme named. Each resource is
//! checked against its source (size and modification time in ms, as the
//! launch context states them) and placed in a cache:
//!
//! | visibility  | cache                                                      |
//! |-------------|------------------------------------------------------------|
//! | PUBLIC      | `<local-dir>/filecache/<n>/<name>`                         |
//! | PRIVATE     | `<local-dir>/usercache/<user>/filecache/<n>/<name>`        |
//! | APPLICATION | `<local-dir>/usercache/<user>/appcache/<app>/filecache/<n>/<name>` |
//!
//! The cache key is the scope plus (source path, size, timestamp, type), so
//! the containers of an application share one copy, and concurrent requests
//! for the same resource wait for the first one instead of copying again.
//! A FILE is copied (a directory recursively, its links kept as links; a
//! directory on HDFS up to 32 levels and 100,000 entries, every name checked); an
//! ARCHIVE is unpacked into a directory named like the resource (with the
//! checks of [`crate::unpack`]); a PATTERN jar has only the entries matching
//! its pattern unpacked and the jar itself kept in that directory too (other
//! PATTERN archives are unpacked whole, as Hadoop does).
//!
//! # Rules that keep localization safe
//!
//! - **Only regular files and directories** are localized: the source is
//!   opened once (without blocking, so a FIFO cannot hang the node), checked
//!   through that open handle, and copied or unpacked from it, so it cannot
//!   be swapped between the check and the copy. Devices, FIFOs and sockets
//!   are refused.
//! - **PUBLIC means readable by everyone**, as Hadoop's
//!   `FSDownload.isPublic` decides: the file must be readable by others (a
//!   directory readable and searchable by others, and so everything in it,
//!   recursively), and every directory above it searchable by others. The
//!   directories checked are those above the file's real location (links
//!   resolved), so a link in a public directory cannot publish a file kept
//!   in a private one. Otherwise the localization fails with Hadoop's
//!   message: "Resource … is not publicly accessible and as such cannot be
//!   part of the public cache."
//! - **Copies, never hard links.** A container's writes to its resource
//!   can never reach the source file, nor the copies of other scopes.
//! - **Read-only copies**, with Hadoop's modes: PUBLIC files `r-xr-xr-x`
//!   and directories `rwxr-xr-x`; PRIVATE and APPLICATION files `r-x------`
//!   and directories `rwx------` (modes are set without following links).
//!   A container that does not own the copy (containers run as their user,
//!   the cache belongs to the node) cannot change it; one that runs as the
//!   node's user or as root can, so:
//! - **A shared copy that changed is not handed out again**: a cached copy
//!   is reused only while its inode, size, modification and change times
//!   and mode are what they were right after it was made (the change time
//!   moves with every write and `chmod`); a changed one is localized anew
//!   for the next container. For a directory (an unpacked archive) only the
//!   directory itself is compared; the files in it rely on their modes.
//!
//! With `yarn.nodemanager.recovery.enabled`, every copy made is recorded in
//! the node's recovery records ([`crate::recovery`]) and unrecorded when
//! forgotten, and a restarted node takes back the recorded copies that
//! pass the same check ([`Localizer::restore`]).

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, Read, Seek};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::UNIX_EPOCH;

use hadoop_protos::yarn::{
    LocalResourceProto, LocalResourceTypeProto, LocalResourceVisibilityProto,
};
use spindle_common::text::escaped;
use spindle_common::ApplicationId;
use tokio::sync::OnceCell;
use tracing::{debug, info, warn};

pub use crate::cache_entry::{CachedResource, Fingerprint, ResourceType, Scope};
use crate::executor::RunAs;
use crate::recovery::StateStore;
use crate::unpack::{self, ArchiveFormat, Dir, Kind};

/// Who may share a localized copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Visibility {
    Public,
    Private,
    Application,
}

/// One resource of a launch context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalResource {
    /// The file system holding the source when it is not this node's
    /// (`hdfs://host:port`); `None` for a `file:` URL.
    pub filesystem: Option<String>,
    /// The source file (its path on `filesystem`).
    pub source: PathBuf,
    /// Expected size in bytes; negative means "not checked".
    pub size: i64,
    /// Expected modification time in ms since the epoch.
    pub timestamp: i64,
    pub kind: ResourceType,
    pub visibility: Visibility,
    pub pattern: Option<String>,
}

impl LocalResource {
    /// Reads a resource of a launch context: a `file:` URL (without a
    /// remote host) or an `hdfs://` one.
    pub fn from_proto(p: &LocalResourceProto) -> Result<LocalResource, String> {
        let url = p
            .resource
            .as_ref()
            .ok_or_else(|| "the local resource has no URL".to_string())?;
        let scheme = url.scheme.clone().unwrap_or_default();
        let file = url.file.clone().unwrap_or_default();
        let host = url.host.as_deref().filter(|h| !h.is_empty());
        let filesystem = if scheme.eq_ignore_ascii_case("file") {
            if let Some(host) = host.filter(|h| *h != "localhost") {
                return Err(format!(
                    "cannot localize {scheme}:{file}: it names host '{host}'; only local files \
                     can be localized"
                ));
            }
            None
        } else if scheme.eq_ignore_ascii_case(spindle_fs::HDFS_SCHEME) {
            let host = host.ok_or_else(|| {
                format!("cannot localize {scheme}:{file}: the URL names no NameNode host")
            })?;
            Some(filesystem_uri(host, url.port))
        } else {
            let scheme = if scheme.is_empty() { "(none)" } else { &scheme };
            return Err(format!(
                "cannot localize {scheme}:{file}: scheme {scheme} is not supported by Spindle's \
                 NodeManager (only file: and hdfs: URLs are)"
            ));
        };
        let shown = match &filesystem {
            Some(fs) => format!("{fs}{file}"),
            None => format!("{scheme}:{file}"),
        };
        if !file.starts_with('/') {
            return Err(format!("cannot localize {shown}: the path is not absolute"));
        }
        let kind = match p.r#type.map(LocalResourceTypeProto::try_from) {
            None | Some(Ok(LocalResourceTypeProto::File)) => ResourceType::File,
            Some(Ok(LocalResourceTypeProto::Archive)) => ResourceType::Archive,
            Some(Ok(LocalResourceTypeProto::Pattern)) => ResourceType::Pattern,
            Some(Err(_)) => return Err(format!("cannot localize {shown}: unknown resource type")),
        };
        let visibility = match p.visibility.map(LocalResourceVisibilityProto::try_from) {
            Some(Ok(LocalResourceVisibilityProto::Public)) => Visibility::Public,
            None | Some(Ok(LocalResourceVisibilityProto::Private)) => Visibility::Private,
            Some(Ok(LocalResourceVisibilityProto::Application)) => Visibility::Application,
            Some(Err(_)) => return Err(format!("cannot localize {shown}: unknown visibility")),
        };
        Ok(LocalResource {
            filesystem,
            source: PathBuf::from(file),
            size: p.size.unwrap_or(-1),
            timestamp: p.timestamp.unwrap_or(0),
            kind,
            visibility,
            pattern: p.pattern.clone(),
        })
    }

    /// The resource's URL, for messages.
    pub fn display(&self) -> String {
        match &self.filesystem {
            Some(fs) => format!("{fs}{}", self.source.display()),
            None => format!("file:{}", self.source.display()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct CacheKey {
    scope: Scope,
    /// The group private and application copies are given (see [`RunAs`]).
    group: Option<u32>,
    filesystem: Option<String>,
    source: PathBuf,
    size: i64,
    timestamp: i64,
    kind: ResourceType,
}

/// A localized resource.
#[derive(Debug)]
pub struct Localized {
    /// The local copy (a file, or the directory an archive was unpacked into).
    pub path: PathBuf,
    /// True when an earlier localization was reused.
    pub from_cache: bool,
    /// Size of the source.
    pub bytes: u64,
    /// Keeps a PUBLIC or PRIVATE copy from being evicted while it is held
    /// (a container holds it until it ends).
    pub lease: Lease,
}

/// A use of a cached copy: while any lease of a copy lives, the cache
/// cleanup leaves it alone; the last one dropped marks it used now.
#[derive(Debug)]
pub struct Lease {
    localizer: std::sync::Weak<Localizer>,
    key: Option<CacheKey>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let (Some(key), Some(localizer)) = (self.key.take(), self.localizer.upgrade()) {
            localizer.release(&key);
        }
    }
}

/// How a PUBLIC or PRIVATE copy is used, for the cache cleanup.
#[derive(Debug, Default, Clone, Copy)]
struct Usage {
    /// Leases alive.
    refs: usize,
    /// When it was last handed out or given back (the localizer's tick).
    last_used: u64,
}

/// What one cache cleanup did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cleanup {
    /// Bytes the PUBLIC and PRIVATE copies took on disk before.
    pub before: u64,
    /// Copies removed, and their bytes.
    pub removed: usize,
    pub freed: u64,
}

#[derive(Debug, Clone)]
struct Done {
    path: PathBuf,
    bytes: u64,
    /// What the copy takes on disk (an unpacked archive: all its files).
    disk_bytes: u64,
    /// The copy as it was right after it was made.
    fingerprint: Option<Fingerprint>,
}

impl CachedResource {
    fn new(key: &CacheKey, done: &Done) -> Option<CachedResource> {
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

    fn key(&self) -> CacheKey {
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

fn fingerprint(path: &Path) -> Option<Fingerprint> {
    let m = fs::symlink_metadata(path).ok()?;
    Some(Fingerprint {
        dev: m.dev(),
        ino: m.ino(),
        len: m.len(),
        mtime: (m.mtime(), m.mtime_nsec()),
        ctime: (m.ctime(), m.ctime_nsec()),
        mode: m.mode(),
    })
}

/// Whether a cached copy is still the one that was made.
enum CachedCopy {
    Intact,
    Gone,
    Changed,
}

impl Done {
    fn check(&self) -> CachedCopy {
        match fingerprint(&self.path) {
            None => CachedCopy::Gone,
            f if f == self.fingerprint => CachedCopy::Intact,
            Some(_) => CachedCopy::Changed,
        }
    }
}

type Slot = Arc<OnceCell<Result<Done, String>>>;

/// The node's resource caches.
pub struct Localizer {
    local_dirs: Vec<PathBuf>,
    slots: Mutex<HashMap<CacheKey, Slot>>,
    next_dir: AtomicUsize,
    next_id: AtomicU64,
    fetches: AtomicU64,
    /// With recovery on: every copy made is recorded, every copy forgotten
    /// is unrecorded, so a restarted node reuses its caches.
    store: Option<Arc<StateStore>>,
    /// Clients of the remote file systems resources come from.
    remote: spindle_fs::FileSystems,
    /// Leases and last use of the PUBLIC and PRIVATE copies (locked after
    /// `slots` when both are needed).
    usage: Mutex<HashMap<CacheKey, Usage>>,
    /// A logical clock for `Usage::last_used`.
    tick: AtomicU64,
}

impl Localizer {
    pub fn new(local_dirs: Vec<PathBuf>) -> Localizer {
        Localizer::recording(local_dirs, None)
    }

    /// A localizer that records its cache in `store` (recovery on).
    pub fn recording(local_dirs: Vec<PathBuf>, store: Option<Arc<StateStore>>) -> Localizer {
        Localizer {
            local_dirs,
            slots: Mutex::new(HashMap::new()),
            next_dir: AtomicUsize::new(0),
            next_id: AtomicU64::new(10),
            fetches: AtomicU64::new(0),
            store,
            remote: spindle_fs::FileSystems::default(),
            usage: Mutex::new(HashMap::new()),
            tick: AtomicU64::new(0),
        }
    }

    /// Gives the clients of remote file systems these Hadoop settings (the
    /// node's `fs.*`, `dfs.*`, ... keys: retries, failover, NameServices).
    pub fn with_remote_settings(mut self, settings: Vec<(String, String)>) -> Localizer {
        self.remote = spindle_fs::FileSystems::new(settings);
        self
    }

    /// Takes back the copies a previous run of the node recorded: each one
    /// whose copy is still exactly as it was made (the same check a cached
    /// copy passes before it is handed out again), and, for application
    /// copies, whose application is among `live_apps`. The others are
    /// unrecorded. Answers (taken back, dropped).
    pub fn restore(
        &self,
        entries: Vec<CachedResource>,
        live_apps: &std::collections::HashSet<ApplicationId>,
    ) -> (usize, usize) {
        let (mut kept, mut dropped) = (0, 0);
        for entry in entries {
            let live = match &entry.scope {
                Scope::App(_, app) => live_apps.contains(app),
                _ => true,
            };
            let intact = fingerprint(&entry.path).as_ref() == Some(&entry.fingerprint);
            if live && intact {
                let done = Done {
                    disk_bytes: disk_usage(&entry.path),
                    path: entry.path.clone(),
                    bytes: entry.bytes,
                    fingerprint: Some(entry.fingerprint.clone()),
                };
                let slot: Slot = Arc::new(OnceCell::new_with(Some(Ok(done))));
                self.lock().insert(entry.key(), slot);
                kept += 1;
            } else {
                info!(
                    path = %escaped(&entry.path.to_string_lossy()),
                    application_finished = !live,
                    copy_changed = !intact,
                    "a recorded localized resource is not taken back"
                );
                if let Some(store) = &self.store {
                    store.remove_resource(&entry);
                }
                dropped += 1;
            }
        }
        (kept, dropped)
    }

    /// How many resources were actually copied or unpacked (not served
    /// from the cache) since the node started.
    pub fn fetch_count(&self) -> u64 {
        self.fetches.load(Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<CacheKey, Slot>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Makes `res` available for a container of `app` run by `user`, the
    /// container running as the NodeManager's own user.
    pub async fn localize(
        self: &Arc<Self>,
        res: &LocalResource,
        user: &str,
        app: ApplicationId,
    ) -> Result<Localized, String> {
        self.localize_as(res, user, app, None).await
    }

    /// Makes `res` available for a container of `app` submitted by `user`
    /// that runs as `reader` (the LinuxContainerExecutor's mapped user), or
    /// as the NodeManager's user when `None`. A PRIVATE or APPLICATION
    /// resource must then be readable by `reader` where it is (Hadoop's
    /// localizer reads it as the user), and its copy is given `reader`'s
    /// group, readable and not writable (Hadoop's 0500/0700 with the group
    /// bits added: the copy stays root's, so the container cannot change
    /// what later containers of the user get).
    pub async fn localize_as(
        self: &Arc<Self>,
        res: &LocalResource,
        user: &str,
        app: ApplicationId,
        reader: Option<RunAs>,
    ) -> Result<Localized, String> {
        self.localize_with(res, user, app, reader, Arc::default())
            .await
    }

    /// As [`Localizer::localize_as`], a PRIVATE or APPLICATION resource on
    /// HDFS read with the delegation tokens among `tokens` (the container's
    /// credentials), as Hadoop's `ContainerLocalizer` reads with the tokens
    /// it is started with. PUBLIC resources are read as the node, as
    /// Hadoop's public localizer does.
    pub async fn localize_with(
        self: &Arc<Self>,
        res: &LocalResource,
        user: &str,
        app: ApplicationId,
        reader: Option<RunAs>,
        tokens: Arc<Vec<spindle_fs::Token>>,
    ) -> Result<Localized, String> {
        let reader = match res.visibility {
            Visibility::Public => None,
            Visibility::Private | Visibility::Application => reader,
        };
        let scope = match res.visibility {
            Visibility::Public => Scope::Public,
            Visibility::Private => Scope::User(user.to_string()),
            Visibility::Application => Scope::App(user.to_string(), app),
        };
        let key = CacheKey {
            scope,
            group: reader.as_ref().map(|r| r.gid),
            filesystem: res.filesystem.clone(),
            source: res.source.clone(),
            size: res.size,
            timestamp: res.timestamp,
            kind: res.kind,
        };
        // A cached copy deleted behind the cache's back is fetched again,
        // once.
        for _ in 0..2 {
            let slot = self.lock().entry(key.clone()).or_default().clone();
            let mut fetched_here = false;
            let result = slot
                .get_or_init(|| {
                    fetched_here = true;
                    let this = self.clone();
                    let res = res.clone();
                    let key = key.clone();
                    let reader = reader.clone();
                    let tokens = tokens.clone();
                    async move {
                        let base = this.cache_base(&key.scope);
                        let shown = res.display();
                        let started = std::time::Instant::now();
                        let store = this.store.clone();
                        // A remote source is checked and downloaded first (into
                        // the copy's directory); then it is placed as a local one.
                        let downloaded = match &res.filesystem {
                            Some(_) => {
                                let (as_user, tokens) = match res.visibility {
                                    Visibility::Public => (None, &[][..]),
                                    Visibility::Private | Visibility::Application => {
                                        (Some(key_user(&key.scope)), &tokens[..])
                                    }
                                };
                                Some(download(&this.remote, &res, as_user, tokens, &base).await?)
                            }
                            None => None,
                        };
                        let r = tokio::task::spawn_blocking(move || {
                            let done = match downloaded {
                                Some(d) => place_downloaded(&res, d, reader.as_ref())?,
                                None => fetch(&res, &base, reader.as_ref())?,
                            };
                            // Recorded (by the writer thread, in order) as the copy is made.
                            if let (Some(store), Some(entry)) =
                                (&store, CachedResource::new(&key, &done))
                            {
                                store.store_resource(&entry);
                            }
                            Ok(done)
                        })
                        .await
                        .unwrap_or_else(|e| Err(format!("the localizer task failed: {e}")));
                        if let Ok(done) = &r {
                            this.fetches.fetch_add(1, Ordering::Relaxed);
                            info!(
                                resource = %escaped(&shown),
                                bytes = done.bytes,
                                elapsed_ms = started.elapsed().as_millis() as u64,
                                "localized"
                            );
                        }
                        r
                    }
                })
                .await
                .clone();
            let check = match &result {
                Ok(done) if !fetched_here => done.check(),
                _ => CachedCopy::Intact,
            };
            match (result, check) {
                (Ok(done), CachedCopy::Intact) => {
                    // Taken only while the copy is still the cache's: one the
                    // cleanup removed meanwhile is localized again.
                    let Some(lease) = self.lease(&key, &slot) else {
                        continue;
                    };
                    if !fetched_here {
                        debug!(resource = %escaped(&res.display()), "reused the cached copy");
                    }
                    return Ok(Localized {
                        path: done.path,
                        from_cache: !fetched_here,
                        bytes: done.bytes,
                        lease,
                    });
                }
                (Ok(done), CachedCopy::Gone) => {
                    info!(path = %escaped(&done.path.to_string_lossy()), "a cached resource disappeared; localizing it again");
                    self.forget(&key, &slot);
                }
                (Ok(done), CachedCopy::Changed) => {
                    warn!(
                        path = %escaped(&done.path.to_string_lossy()),
                        "a cached resource was changed after it was localized; it is not handed out \
                         again, localizing it anew"
                    );
                    self.forget(&key, &slot);
                }
                (Err(e), _) => {
                    self.forget(&key, &slot);
                    return Err(e);
                }
            }
        }
        Err(format!(
            "{} could not be localized: its cached copy keeps changing or disappearing",
            res.display()
        ))
    }

    /// A lease of the copy `slot` holds, if `slot` is still the cache's
    /// for `key` (application copies are not tracked: they go with their
    /// application).
    fn lease(self: &Arc<Self>, key: &CacheKey, slot: &Slot) -> Option<Lease> {
        let slots = self.lock();
        if !slots.get(key).is_some_and(|s| Arc::ptr_eq(s, slot)) {
            return None;
        }
        let key = match key.scope {
            Scope::App(..) => None,
            Scope::Public | Scope::User(_) => {
                let now = self.tick.fetch_add(1, Ordering::Relaxed);
                let mut usage = self.usage_lock();
                let u = usage.entry(key.clone()).or_default();
                u.refs += 1;
                u.last_used = now;
                Some(key.clone())
            }
        };
        Some(Lease {
            localizer: Arc::downgrade(self),
            key,
        })
    }

    /// Leases of the PUBLIC and PRIVATE copies at `paths` (or holding
    /// them: a path inside an unpacked archive names its copy), one per
    /// copy named; paths of no cached copy are passed over. For a
    /// container reacquired after a restart, which holds the copies its
    /// work dir links to.
    pub fn lease_copies(self: &Arc<Self>, paths: &[PathBuf]) -> Vec<Lease> {
        let held: Vec<(CacheKey, Slot)> = {
            let slots = self.lock();
            slots
                .iter()
                .filter(|(key, _)| !matches!(key.scope, Scope::App(..)))
                .filter(|(_, slot)| match slot.get() {
                    Some(Ok(done)) => paths.iter().any(|p| p.starts_with(&done.path)),
                    _ => false,
                })
                .map(|(key, slot)| (key.clone(), slot.clone()))
                .collect()
        };
        held.iter()
            .filter_map(|(key, slot)| self.lease(key, slot))
            .collect()
    }

    fn release(&self, key: &CacheKey) {
        let now = self.tick.fetch_add(1, Ordering::Relaxed);
        if let Some(u) = self.usage_lock().get_mut(key) {
            u.refs = u.refs.saturating_sub(1);
            u.last_used = now;
        }
    }

    fn usage_lock(&self) -> std::sync::MutexGuard<'_, HashMap<CacheKey, Usage>> {
        self.usage.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Hadoop's cache cleanup (`ResourceRetentionSet`): while the PUBLIC
    /// and PRIVATE copies take more than `target_bytes` on disk, the copies
    /// no container holds are removed, least recently used first.
    /// Application copies are not counted (they go with their application).
    pub fn clean_up(&self, target_bytes: u64) -> Cleanup {
        let mut removed_dirs = Vec::new();
        let mut report = Cleanup::default();
        {
            let mut slots = self.lock();
            let usage = self.usage_lock();
            let mut candidates = Vec::new();
            for (key, slot) in slots.iter() {
                if matches!(key.scope, Scope::App(..)) {
                    continue;
                }
                let Some(Ok(done)) = slot.get() else { continue };
                report.before += done.disk_bytes;
                let u = usage.get(key).copied().unwrap_or_default();
                if u.refs == 0 {
                    candidates.push((u.last_used, key.clone(), done.disk_bytes));
                }
            }
            drop(usage);
            candidates.sort_by_key(|(last_used, _, _)| *last_used);
            let mut total = report.before;
            for (_, key, disk_bytes) in candidates {
                if total <= target_bytes {
                    break;
                }
                let Some(slot) = slots.remove(&key) else {
                    continue;
                };
                if let Some(Ok(done)) = slot.get() {
                    if let Some(dir) = done.path.parent() {
                        removed_dirs.push(dir.to_path_buf());
                    }
                }
                self.usage_lock().remove(&key);
                self.unrecord(&key, Some(slot));
                total = total.saturating_sub(disk_bytes);
                report.removed += 1;
                report.freed += disk_bytes;
            }
        }
        for dir in removed_dirs {
            if let Err(e) = remove_copy(&dir) {
                warn!(dir = %escaped(&dir.to_string_lossy()), error = %e, "cannot remove an evicted cached resource");
            }
        }
        if report.removed > 0 {
            info!(
                removed = report.removed,
                freed_bytes = report.freed,
                before_bytes = report.before,
                target_bytes,
                "cache cleanup removed unused resources"
            );
        }
        report
    }

    fn forget(&self, key: &CacheKey, slot: &Slot) {
        let removed = {
            let mut slots = self.lock();
            if slots.get(key).is_some_and(|s| Arc::ptr_eq(s, slot)) {
                slots.remove(key)
            } else {
                None
            }
        };
        if removed.is_some() {
            self.usage_lock().remove(key);
        }
        self.unrecord(key, removed);
    }

    /// Removes the record of a forgotten copy (with recovery on).
    fn unrecord(&self, key: &CacheKey, slot: Option<Slot>) {
        let (Some(store), Some(slot)) = (&self.store, slot) else {
            return;
        };
        if let Some(Ok(done)) = slot.get() {
            if let Some(entry) = CachedResource::new(key, done) {
                store.remove_resource(&entry);
            }
        }
    }

    /// Forgets the application-scoped copies of `app` (its directory is
    /// about to be deleted).
    pub fn forget_app(&self, app: ApplicationId) {
        let gone: Vec<(CacheKey, Slot)> = {
            let mut slots = self.lock();
            let keys: Vec<CacheKey> = slots
                .keys()
                .filter(|k| matches!(&k.scope, Scope::App(_, a) if *a == app))
                .cloned()
                .collect();
            keys.into_iter()
                .filter_map(|k| slots.remove(&k).map(|s| (k, s)))
                .collect()
        };
        for (key, slot) in gone {
            self.unrecord(&key, Some(slot));
        }
    }

    fn cache_base(&self, scope: &Scope) -> PathBuf {
        let n = self.next_dir.fetch_add(1, Ordering::Relaxed);
        let root = self
            .local_dirs
            .get(n % self.local_dirs.len().max(1))
            .cloned()
            .unwrap_or_else(|| PathBuf::from("/tmp"));
        let base = match scope {
            Scope::Public => root.join("filecache"),
            Scope::User(user) => root.join("usercache").join(user).join("filecache"),
            Scope::App(user, app) => root
                .join("usercache")
                .join(user)
                .join("appcache")
                .join(app.to_string())
                .join("filecache"),
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        base.join(id.to_string())
    }
}

fn mtime_ms(meta: &fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Opens the source without following it into a FIFO's wait, and checks
/// that it is a regular file or a directory.
fn open_source(res: &LocalResource) -> Result<(File, fs::Metadata), String> {
    let shown = res.display();
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(&res.source)
        .map_err(|e| format!("cannot localize {shown}: {e}"))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot localize {shown}: {e}"))?;
    if !meta.is_file() && !meta.is_dir() {
        return Err(format!(
            "cannot localize {shown}: it is not a regular file or a directory"
        ));
    }
    Ok((file, meta))
}

/// Where the opened `file` really is (all links resolved).
fn real_path(file: &File, fallback: &Path) -> io::Result<PathBuf> {
    fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
        .or_else(|_| fs::canonicalize(fallback))
}

/// Who must be able to read a resource where it is.
enum Reader<'a> {
    /// Everyone: Hadoop's `FSDownload.isPublic` (the "other" bits).
    Everyone,
    /// The user a container runs as.
    User(&'a RunAs),
}

impl Reader<'_> {
    /// Whether the mode bits of `meta` grant all of `want` (4 read, 1
    /// search/execute) to this reader. Root may read anything.
    fn allowed(&self, meta: &fs::Metadata, want: u32) -> bool {
        let mode = meta.mode();
        let bits = match self {
            Reader::Everyone => mode & 0o7,
            Reader::User(r) if r.uid == 0 => 0o7,
            Reader::User(r) if meta.uid() == r.uid => (mode >> 6) & 0o7,
            Reader::User(r) if meta.gid() == r.gid || r.groups.contains(&meta.gid()) => {
                (mode >> 3) & 0o7
            }
            Reader::User(_) => mode & 0o7,
        };
        bits & want == want
    }
}

/// Whether `reader` may read the opened `file` at its real location: the
/// file readable (a directory readable and searchable, and everything in
/// it, recursively) and every directory above it searchable.
fn readable_by(
    res: &LocalResource,
    file: &File,
    meta: &fs::Metadata,
    reader: &Reader<'_>,
) -> Result<bool, String> {
    let io_err = |e: io::Error| format!("cannot localize {}: {e}", res.display());
    let real = real_path(file, &res.source).map_err(io_err)?;
    if !readable_tree(&real, meta, reader).map_err(io_err)? {
        return Ok(false);
    }
    for dir in real.ancestors().skip(1) {
        let m = fs::metadata(dir).map_err(io_err)?;
        if !reader.allowed(&m, 0o1) {
            return Ok(false);
        }
    }
    Ok(true)
}

fn readable_tree(path: &Path, meta: &fs::Metadata, reader: &Reader<'_>) -> io::Result<bool> {
    if !meta.is_dir() {
        return Ok(reader.allowed(meta, 0o4));
    }
    if !reader.allowed(meta, 0o5) {
        return Ok(false);
    }
    for entry in fs::read_dir(path)? {
        let child = entry?.path();
        // As Hadoop's listing: a link is judged by what it points to.
        let m = fs::metadata(&child)?;
        if !readable_tree(&child, &m, reader)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Hadoop's check of a source against what the launch context says of it:
/// the modification time (ms) and, for a file (`len`), the size.
fn check_source(res: &LocalResource, modified: i64, len: Option<u64>) -> Result<(), String> {
    let shown = res.display();
    if modified != res.timestamp {
        return Err(format!(
            "Resource {shown} changed on src filesystem (expected {}, was {modified})",
            res.timestamp
        ));
    }
    match len {
        Some(len) if res.size >= 0 && len != res.size.unsigned_abs() => Err(format!(
            "Resource {shown} changed on src filesystem (expected size {}, was {len})",
            res.size
        )),
        _ => Ok(()),
    }
}

/// Hadoop's refusal of a PUBLIC resource others cannot read.
fn not_public(res: &LocalResource) -> String {
    format!(
        "Resource {} is not publicly accessible and as such cannot be part of the public cache.",
        res.display()
    )
}

/// Checks the source and copies or unpacks it under a fresh directory
/// derived from `base` (`base`, or `base` with a suffix if it exists).
fn fetch(res: &LocalResource, base: &Path, reader: Option<&RunAs>) -> Result<Done, String> {
    let shown = res.display();
    let (file, meta) = open_source(res)?;
    check_source(res, mtime_ms(&meta), meta.is_file().then_some(meta.len()))?;
    if res.visibility == Visibility::Public && !readable_by(res, &file, &meta, &Reader::Everyone)? {
        return Err(not_public(res));
    }
    if let Some(r) = reader {
        if !readable_by(res, &file, &meta, &Reader::User(r))? {
            return Err(format!(
                "cannot localize {shown}: Permission denied for user {} (a {} resource is read \
                 as the user the container runs as)",
                r.name,
                if res.visibility == Visibility::Private {
                    "PRIVATE"
                } else {
                    "APPLICATION"
                }
            ));
        }
    }
    let name = res
        .source
        .file_name()
        .ok_or_else(|| format!("cannot localize {shown}: the path has no file name"))?
        .to_owned();

    let dir = unique_dir(base).map_err(|e| format!("cannot localize {shown}: {e}"))?;
    let dest = dir.join(&name);
    let result = place(res, file, &meta, &dest).and_then(|()| {
        restrict_modes(&dir, &name, res.visibility, reader.map(|r| r.gid))
            .map_err(|e| format!("cannot set the modes of the copy of {shown}: {e}"))
    });
    if let Err(e) = &result {
        debug!(resource = %escaped(&shown), error = %escaped(e), "localization failed; removing the partial copy");
        let _ = fs::remove_dir_all(&dir);
    }
    result.map(|()| Done {
        fingerprint: fingerprint(&dest),
        disk_bytes: disk_usage(&dest),
        path: dest,
        bytes: meta.len(),
    })
}

/// The name of a remote resource's download inside its copy's directory (a
/// dot name, so it never collides with the resource's own name).
const DOWNLOAD_NAME: &str = ".download";

/// A remote resource downloaded into the directory its copy goes to.
#[derive(Debug)]
struct Downloaded {
    /// The copy's directory (made for it).
    dir: PathBuf,
    /// The downloaded bytes, in `dir`.
    file: PathBuf,
    /// The source's size (a directory's: the sum of its files').
    bytes: u64,
    /// A directory resource: `file` is the copied tree.
    is_dir: bool,
}

/// How big a directory resource from a remote file system may be.
const REMOTE_TREE: spindle_fs::TreeLimits = spindle_fs::TreeLimits {
    max_depth: 32,
    max_entries: 100_000,
};

/// A directory resource on a remote file system (a FILE resource naming a
/// directory, as Hadoop's `FSDownload` copies recursively): checked as
/// Hadoop checks it before a byte is copied (the top's modification time;
/// for PUBLIC, the top readable and searchable by everyone with every
/// directory above it searchable, and everything in it readable, every
/// directory searchable), listed whole within [`REMOTE_TREE`] with every
/// name a plain path component, then copied into a fresh directory derived
/// from `base`.
async fn download_dir(
    remote: &spindle_fs::FileSystems,
    fs: &dyn spindle_fs::FileSystem,
    res: &LocalResource,
    filesystem: &str,
    path: &str,
    status: &spindle_fs::Status,
    base: &Path,
) -> Result<Downloaded, String> {
    let shown = res.display();
    let fail = |e: String| format!("cannot localize {shown}: {e}");
    if res.kind != ResourceType::File {
        return Err(fail("it is a directory, not an archive".into()));
    }
    check_source(res, status.modified_ms, None)?;
    let tree = spindle_fs::list_tree(fs, path, REMOTE_TREE)
        .await
        .map_err(|e| fail(e.to_string()))?;
    if res.visibility == Visibility::Public {
        let everyone_may_read = |s: &spindle_fs::Status| {
            let want = if s.is_dir { 0o005 } else { 0o004 };
            s.permission & want == want
        };
        let public = everyone_may_read(status)
            && tree.iter().all(|e| everyone_may_read(&e.status))
            && is_public_remote(remote, filesystem, path, status)
                .await
                .map_err(|e| fail(e.to_string()))?;
        if !public {
            return Err(not_public(res));
        }
    }
    let dir = unique_dir(base).map_err(|e| fail(e.to_string()))?;
    let file = dir.join(DOWNLOAD_NAME);
    match spindle_fs::download_tree(fs, &tree, &file).await {
        Ok(bytes) => {
            debug!(resource = %escaped(&shown), entries = tree.len(), bytes, "downloaded a directory");
            Ok(Downloaded {
                dir,
                file,
                bytes,
                is_dir: true,
            })
        }
        Err(e) => {
            let _ = tokio::task::spawn_blocking(move || remove_copy(&dir)).await;
            Err(fail(e.to_string()))
        }
    }
}

/// Checks the remote resource `res` where it is, before a byte is copied,
/// as Hadoop's `FSDownload` does (modification time and size against the
/// launch context; a PUBLIC one readable by everyone), reading as `user`
/// (the node's own user when `None`), then downloads it into a fresh
/// directory derived from `base`.
async fn download(
    remote: &spindle_fs::FileSystems,
    res: &LocalResource,
    user: Option<String>,
    tokens: &[spindle_fs::Token],
    base: &Path,
) -> Result<Downloaded, String> {
    let shown = res.display();
    let fail = |e: String| format!("cannot localize {shown}: {e}");
    let filesystem = res
        .filesystem
        .as_deref()
        .ok_or_else(|| fail("it is not on a remote file system".into()))?;
    let path = res
        .source
        .to_str()
        .ok_or_else(|| fail("the path is not UTF-8".into()))?;
    let fs = remote
        .get_with_tokens(filesystem, user.as_deref(), tokens)
        .map_err(|e| fail(e.to_string()))?;
    let status = fs.status(path).await.map_err(|e| fail(e.to_string()))?;
    if status.is_dir {
        return download_dir(remote, &*fs, res, filesystem, path, &status, base).await;
    }
    check_source(res, status.modified_ms, Some(status.len))?;
    if res.visibility == Visibility::Public
        && !is_public_remote(remote, filesystem, path, &status)
            .await
            .map_err(|e| fail(e.to_string()))?
    {
        return Err(not_public(res));
    }
    let dir = unique_dir(base).map_err(|e| fail(e.to_string()))?;
    let file = dir.join(DOWNLOAD_NAME);
    match fs.download(path, status.len, &file).await {
        Ok(()) => Ok(Downloaded {
            dir,
            file,
            bytes: status.len,
            is_dir: false,
        }),
        Err(e) => {
            let _ = tokio::fs::remove_dir_all(&dir).await;
            Err(fail(e.to_string()))
        }
    }
}

/// Hadoop's public check of a remote source, its parents read as the node.
async fn is_public_remote(
    remote: &spindle_fs::FileSystems,
    filesystem: &str,
    path: &str,
    status: &spindle_fs::Status,
) -> std::io::Result<bool> {
    let fs = remote.get(filesystem, None)?;
    spindle_fs::is_public(&*fs, path, status).await
}

/// `hdfs://host[:port]`, the file system a resource URL names.
fn filesystem_uri(host: &str, port: Option<i32>) -> String {
    match port {
        Some(p) if p > 0 => format!("{}://{host}:{p}", spindle_fs::HDFS_SCHEME),
        _ => format!("{}://{host}", spindle_fs::HDFS_SCHEME),
    }
}

/// The user a scope's copies are localized for (the node's own for PUBLIC).
fn key_user(scope: &Scope) -> String {
    match scope {
        Scope::Public => String::new(),
        Scope::User(user) | Scope::App(user, _) => user.clone(),
    }
}

/// Places a resource downloaded from a remote file system (already checked
/// against its source there) in its directory, as [`fetch`] places a local
/// one, and removes the download.
fn place_downloaded(
    res: &LocalResource,
    d: Downloaded,
    reader: Option<&RunAs>,
) -> Result<Done, String> {
    let shown = res.display();
    let name = res
        .source
        .file_name()
        .ok_or_else(|| format!("cannot localize {shown}: the path has no file name"))?
        .to_owned();
    let dest = d.dir.join(&name);
    let placed = if d.is_dir {
        // A directory resource is the copied tree itself.
        fs::rename(&d.file, &dest)
            .map_err(|e| format!("cannot localize {shown}: placing its download: {e}"))
    } else {
        File::open(&d.file)
            .and_then(|f| f.metadata().map(|m| (f, m)))
            .map_err(|e| format!("cannot localize {shown}: reading its download: {e}"))
            .and_then(|(file, meta)| {
                let placed = place(res, file, &meta, &dest);
                let _ = fs::remove_file(&d.file);
                placed
            })
    };
    let result = placed.and_then(|()| {
        restrict_modes(&d.dir, &name, res.visibility, reader.map(|r| r.gid))
            .map_err(|e| format!("cannot set the modes of the copy of {shown}: {e}"))
    });
    if let Err(e) = &result {
        debug!(resource = %escaped(&shown), error = %escaped(e), "localization failed; removing the partial copy");
        let _ = remove_copy(&d.dir);
    }
    result.map(|()| Done {
        fingerprint: fingerprint(&dest),
        disk_bytes: disk_usage(&dest),
        path: dest,
        bytes: d.bytes,
    })
}

/// The bytes of the files under `path` (links not followed).
fn disk_usage(path: &Path) -> u64 {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return 0;
    };
    if !meta.is_dir() {
        return meta.len();
    }
    fs::read_dir(path)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| disk_usage(&e.path()))
                .sum()
        })
        .unwrap_or(0)
}

/// Removes a copy's directory; its read-only directories are made
/// writable by their owner first (as the node, which made them).
fn remove_copy(dir: &Path) -> io::Result<()> {
    fn writable(path: &Path) -> io::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let meta = fs::symlink_metadata(path)?;
        if meta.is_dir() {
            fs::set_permissions(path, fs::Permissions::from_mode(meta.mode() | 0o700))?;
            for entry in fs::read_dir(path)? {
                writable(&entry?.path())?;
            }
        }
        Ok(())
    }
    writable(dir)?;
    fs::remove_dir_all(dir)
}

/// The directories of a local dir that a node started without recovery
/// does not take over from its predecessor (Hadoop's `cleanUpLocalDirs`):
/// the caches and the node's private dir.
pub const CLEANED_AT_START: [&str; 3] = ["usercache", "filecache", crate::executor::NM_PRIVATE];

/// What marks a directory moved aside for deletion: `<name>_DEL_<ms>`.
const MOVED_ASIDE: &str = "_DEL_";

/// Hadoop's start-up cleanup of the local dirs (recovery off): renames
/// each local dir's [`CLEANED_AT_START`] dirs to `<name>_DEL_<now_ms>` at
/// once, so the node starts from empty caches however big the old ones
/// are, and answers them together with any `<name>_DEL_…` an earlier start
/// left behind ([`moved_aside_leftovers`]), for [`delete_moved_aside`] to
/// remove in the background.
/// Call it after the executor reaped the previous run's containers (their
/// pid files are in `nmPrivate`). A dir that cannot be renamed is logged
/// and left.
pub fn move_aside_local_dirs(local_dirs: &[PathBuf], now_ms: u128) -> Vec<PathBuf> {
    for root in local_dirs {
        for name in CLEANED_AT_START {
            move_aside(root, name, now_ms);
        }
    }
    moved_aside_leftovers(local_dirs)
}

/// Renames `root/name` to `root/<name>_DEL_<now_ms>` (a free variant of it).
fn move_aside(root: &Path, name: &str, now_ms: u128) {
    let from = root.join(name);
    if fs::symlink_metadata(&from).is_err() {
        return;
    }
    let base = format!("{name}{MOVED_ASIDE}{now_ms}");
    let mut to = root.join(&base);
    let mut k = 0;
    while fs::symlink_metadata(&to).is_ok() && k < 1000 {
        k += 1;
        to = root.join(format!("{base}-{k}"));
    }
    match fs::rename(&from, &to) {
        Ok(()) => info!(
            dir = %escaped(&from.to_string_lossy()),
            moved_to = %escaped(&to.to_string_lossy()),
            "recovery is off: moved the previous run's directory aside; it is deleted in \
             the background"
        ),
        Err(e) => warn!(
            dir = %escaped(&from.to_string_lossy()),
            error = %e,
            "cannot move the previous run's directory aside"
        ),
    }
}

/// True for `application_<digits>_<digits>`, an application's log dir.
fn is_app_log_dir(name: &str) -> bool {
    let mut parts = name.split('_');
    parts.next() == Some("application")
        && parts.clone().count() == 2
        && parts.all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// Hadoop's `cleanupLogDirs` for a start without recovery: every
/// application's directory in each log dir is moved to
/// `<app>_DEL_<now_ms>`; answers every moved-aside application log dir
/// (this run's and leftovers), for [`delete_moved_aside`].
pub fn move_aside_app_logs(log_dirs: &[PathBuf], now_ms: u128) -> Vec<PathBuf> {
    for dir in dirs_named(log_dirs, is_app_log_dir) {
        if let (Some(root), Some(app)) = (dir.parent(), dir.file_name()) {
            move_aside(root, &app.to_string_lossy(), now_ms);
        }
    }
    moved_aside_app_logs(log_dirs)
}

/// Application log dirs a previous start moved aside and did not finish
/// deleting.
pub fn moved_aside_app_logs(log_dirs: &[PathBuf]) -> Vec<PathBuf> {
    dirs_named(log_dirs, |name| {
        name.split_once(MOVED_ASIDE)
            .is_some_and(|(app, _)| is_app_log_dir(app))
    })
}

/// The `<name>_DEL_…` directories in the local dirs: moved aside by this
/// start or left by an earlier one that stopped before deleting them.
pub fn moved_aside_leftovers(local_dirs: &[PathBuf]) -> Vec<PathBuf> {
    dirs_named(local_dirs, |name| {
        CLEANED_AT_START
            .iter()
            .any(|d| name.starts_with(&format!("{d}{MOVED_ASIDE}")))
    })
}

/// The directories directly in any of `roots` whose names `wanted` accepts,
/// sorted; unreadable roots are skipped.
fn dirs_named(roots: &[PathBuf], wanted: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for root in roots {
        let Ok(entries) = fs::read_dir(root) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name();
            if wanted(&name.to_string_lossy()) && entry.file_type().is_ok_and(|t| t.is_dir()) {
                found.push(entry.path());
            }
        }
    }
    found.sort();
    found
}

/// Deletes the directories [`move_aside_local_dirs`] answered, read-only
/// ones (localized copies) included; failures are logged.
pub fn delete_moved_aside(dirs: Vec<PathBuf>) {
    for dir in dirs {
        let started = std::time::Instant::now();
        let result = fs::remove_dir_all(&dir).or_else(|_| remove_copy(&dir));
        match result {
            Ok(()) => info!(
                dir = %escaped(&dir.to_string_lossy()),
                elapsed_ms = started.elapsed().as_millis() as u64,
                "deleted a directory a previous run left"
            ),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => warn!(
                dir = %escaped(&dir.to_string_lossy()),
                error = %e,
                "cannot delete a directory a previous run left"
            ),
        }
    }
}

/// Creates `base` (or `base-<k>` when taken) with its parents.
fn unique_dir(base: &Path) -> io::Result<PathBuf> {
    if let Some(parent) = base.parent() {
        fs::create_dir_all(parent)?;
    }
    let mut candidate = base.to_path_buf();
    for k in 1..1000 {
        match fs::create_dir(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                candidate = PathBuf::from(format!("{}-{k}", base.display()));
            }
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("no free cache directory next to {}", base.display()),
    ))
}

fn place(res: &LocalResource, file: File, meta: &fs::Metadata, dest: &Path) -> Result<(), String> {
    let shown = res.display();
    let copy_err = |e: io::Error| format!("cannot copy {shown}: {e}");
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match res.kind {
        ResourceType::File => {
            if meta.is_dir() {
                let real = real_path(&file, &res.source).map_err(copy_err)?;
                copy_tree(&real, dest).map_err(copy_err)
            } else {
                copy_file(file, meta.len(), dest).map_err(copy_err)
            }
        }
        ResourceType::Archive | ResourceType::Pattern => {
            if meta.is_dir() {
                return Err(format!(
                    "cannot localize {shown}: it is a directory, not an archive"
                ));
            }
            match ArchiveFormat::of(&name) {
                Some(format) => {
                    // A PATTERN jar: only the entries matching the pattern are unpacked
                    // and the jar itself is kept beside them (Hadoop's unJarAndSave). Any
                    // other PATTERN resource is unpacked whole, as Hadoop does.
                    let is_jar = name.to_ascii_lowercase().ends_with(".jar");
                    let keep = match (&res.kind, &res.pattern) {
                        (ResourceType::Pattern, Some(p)) if is_jar && !p.is_empty() => {
                            Some(regex::Regex::new(&format!("^(?:{p})$")).map_err(|e| {
                                format!("cannot localize {shown}: invalid pattern '{p}': {e}")
                            })?)
                        }
                        _ => None,
                    };
                    let jar = if res.kind == ResourceType::Pattern && is_jar {
                        Some(file.try_clone().map_err(copy_err)?)
                    } else {
                        None
                    };
                    let stats = unpack::unpack_file(file, &shown, format, dest, keep.as_ref())
                        .map_err(|e| format!("cannot localize {shown}: {e}"))?;
                    debug!(resource = %escaped(&shown), ?stats, "unpacked");
                    if let Some(mut jar) = jar {
                        jar.rewind().map_err(copy_err)?;
                        copy_file(jar, meta.len(), &dest.join(&name)).map_err(copy_err)?;
                    }
                    Ok(())
                }
                None => {
                    // Hadoop keeps an archive it cannot unpack as a plain file.
                    warn!(resource = %escaped(&shown), "not a zip, jar or tar archive; localizing it as a file");
                    copy_file(file, meta.len(), dest).map_err(copy_err)
                }
            }
        }
    }
}

/// Copies `len` bytes of the opened source into the new file `dest` (which
/// must not exist; a link there is not followed).
fn copy_file(src: File, len: u64, dest: &Path) -> io::Result<()> {
    let mut out = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .mode(0o600)
        .open(dest)?;
    let copied = io::copy(&mut src.take(len), &mut out)?;
    if copied != len {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("the source ended after {copied} of {len} bytes"),
        ));
    }
    Ok(())
}

fn copy_tree(src: &Path, dest: &Path) -> io::Result<()> {
    fs::create_dir(dest)?;
    for entry in fs::read_dir(src)? {
        let entry = entry?;
        let target = dest.join(entry.file_name());
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(entry.path())?, &target)?;
        } else if kind.is_file() {
            // Opened without following a link that replaced the file since
            // it was listed, and without waiting on a FIFO.
            let src = fs::OpenOptions::new()
                .read(true)
                .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
                .open(entry.path())?;
            let meta = src.metadata()?;
            if !meta.is_file() {
                continue;
            }
            let len = meta.len();
            copy_file(src, len, &target)?;
        }
        // Devices, FIFOs and sockets in a directory resource are left out.
    }
    Ok(())
}

/// Hadoop's modes for localized copies (`FSDownload`'s PUBLIC_FILE_PERMS
/// and friends); a private or application copy given to a container
/// user's `group` also lets that group read (and search) it.
fn modes(visibility: Visibility, group: Option<u32>) -> (u32, u32) {
    match (visibility, group) {
        (Visibility::Public, _) => (0o555, 0o755),
        (Visibility::Private | Visibility::Application, None) => (0o500, 0o700),
        (Visibility::Private | Visibility::Application, Some(_)) => (0o550, 0o750),
    }
}

/// Sets Hadoop's modes (and `group`, when given) on the copy `name` in
/// `dir` and, for a directory, on everything in it, never following a link.
fn restrict_modes(
    dir: &Path,
    name: &std::ffi::OsStr,
    visibility: Visibility,
    group: Option<u32>,
) -> io::Result<()> {
    let (file_mode, dir_mode) = modes(visibility, group);
    let parent = Dir::open(dir)?;
    match parent.kind(name)? {
        Kind::File => parent.set_file_access(name, file_mode, group),
        Kind::Dir => match parent.subdir(name)? {
            Some(d) => restrict_tree(&d, &dir.join(name), (file_mode, dir_mode), group),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}

fn restrict_tree(dir: &Dir, path: &Path, modes: (u32, u32), group: Option<u32>) -> io::Result<()> {
    for entry in fs::read_dir(path)? {
        let name = entry?.file_name();
        match dir.kind(&name)? {
            Kind::File => dir.set_file_access(&name, modes.0, group)?,
            Kind::Dir => {
                if let Some(sub) = dir.subdir(&name)? {
                    restrict_tree(&sub, &path.join(&name), modes, group)?;
                }
            }
            _ => {}
        }
    }
    dir.set_access(modes.1, group)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_system_is_named_by_host_and_port() {
        assert_eq!(filesystem_uri("nn", Some(8020)), "hdfs://nn:8020");
        assert_eq!(filesystem_uri("nameservice1", None), "hdfs://nameservice1");
        assert_eq!(filesystem_uri("nn", Some(-1)), "hdfs://nn");
    }
    use hadoop_protos::yarn::UrlProto;

    fn proto(
        file: &str,
        scheme: &str,
        size: i64,
        ts: i64,
        kind: LocalResourceTypeProto,
    ) -> LocalResourceProto {
        LocalResourceProto {
            resource: Some(UrlProto {
                scheme: Some(scheme.into()),
                host: None,
                port: Some(-1),
                file: Some(file.into()),
                user_info: None,
            }),
            size: Some(size),
            timestamp: Some(ts),
            r#type: Some(kind as i32),
            visibility: Some(LocalResourceVisibilityProto::Private as i32),
            pattern: None,
            should_be_uploaded_to_shared_cache: None,
        }
    }

    fn stat(path: &Path) -> (i64, i64) {
        let m = fs::metadata(path).expect("stat");
        (i64::try_from(m.len()).expect("size"), mtime_ms(&m))
    }

    fn app() -> ApplicationId {
        ApplicationId::new(1_700_000_000_000, 1)
    }

    #[test]
    fn file_and_hdfs_urls_are_accepted() {
        let mut p = proto("/data/x.jar", "viewfs", 1, 1, LocalResourceTypeProto::File);
        let err = LocalResource::from_proto(&p).expect_err("viewfs");
        assert!(
            err.contains("scheme viewfs is not supported by Spindle's NodeManager"),
            "{err}"
        );
        if let Some(url) = p.resource.as_mut() {
            url.scheme = Some("hdfs".into());
        }
        let err = LocalResource::from_proto(&p).expect_err("hdfs without a host");
        assert!(err.contains("names no NameNode host"), "{err}");
        if let Some(url) = p.resource.as_mut() {
            url.host = Some("nn".into());
            url.port = Some(8020);
        }
        let r = LocalResource::from_proto(&p).expect("hdfs");
        assert_eq!(r.filesystem.as_deref(), Some("hdfs://nn:8020"));
        assert_eq!(r.display(), "hdfs://nn:8020/data/x.jar");
        let mut p = proto("/data/x.jar", "file", 1, 1, LocalResourceTypeProto::Archive);
        let r = LocalResource::from_proto(&p).expect("file");
        assert_eq!(r.kind, ResourceType::Archive);
        assert_eq!(r.visibility, Visibility::Private);
        if let Some(url) = p.resource.as_mut() {
            url.host = Some("elsewhere".into());
        }
        assert!(LocalResource::from_proto(&p).is_err());
    }

    #[tokio::test]
    async fn files_are_checked_against_their_source() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let src = tmp.path().join("pi.py");
        fs::write(&src, b"print(1)\n").expect("write");
        let (size, ts) = stat(&src);
        let loc = Arc::new(Localizer::new(vec![tmp.path().join("local")]));

        let p = proto(
            src.to_str().expect("utf-8"),
            "file",
            size,
            ts + 1,
            LocalResourceTypeProto::File,
        );
        let res = LocalResource::from_proto(&p).expect("valid");
        let err = loc
            .localize(&res, "alice", app())
            .await
            .expect_err("mtime differs");
        assert_eq!(
            err,
            format!(
                "Resource file:{} changed on src filesystem (expected {}, was {ts})",
                src.display(),
                ts + 1
            )
        );

        let p = proto(
            src.to_str().expect("utf-8"),
            "file",
            size + 5,
            ts,
            LocalResourceTypeProto::File,
        );
        let res = LocalResource::from_proto(&p).expect("valid");
        let err = loc
            .localize(&res, "alice", app())
            .await
            .expect_err("size differs");
        assert!(err.contains("expected size"), "{err}");

        let p = proto(
            src.to_str().expect("utf-8"),
            "file",
            size,
            ts,
            LocalResourceTypeProto::File,
        );
        let res = LocalResource::from_proto(&p).expect("valid");
        let got = loc.localize(&res, "alice", app()).await.expect("localized");
        assert!(!got.from_cache);
        assert!(got
            .path
            .starts_with(tmp.path().join("local/usercache/alice/filecache")));
        assert_eq!(got.path.file_name().and_then(|n| n.to_str()), Some("pi.py"));
        assert_eq!(fs::read(&got.path).expect("read"), b"print(1)\n");
        let again = loc.localize(&res, "alice", app()).await.expect("cached");
        assert!(again.from_cache);
        assert_eq!(again.path, got.path);

        // Another user gets a private copy of their own.
        let other = loc.localize(&res, "bob", app()).await.expect("bob");
        assert!(!other.from_cache);
        assert!(other
            .path
            .starts_with(tmp.path().join("local/usercache/bob/filecache")));

        // A vanished cached copy is localized again.
        fs::remove_file(&got.path).expect("rm");
        let refetched = loc.localize(&res, "alice", app()).await.expect("again");
        assert!(!refetched.from_cache);
        assert!(refetched.path.exists());
    }

    #[tokio::test]
    async fn archives_unpack_once_under_concurrency() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let src = tmp.path().join("__spark_libs__123.zip");
        let payload = vec![7u8; 2 << 20];
        crate::unpack::tests::make_zip(&src, &[("a.jar", &payload), ("b.jar", b"b")]);
        let (size, ts) = stat(&src);
        let mut p = proto(
            src.to_str().expect("utf-8"),
            "file",
            size,
            ts,
            LocalResourceTypeProto::Archive,
        );
        p.visibility = Some(LocalResourceVisibilityProto::Application as i32);
        let res = LocalResource::from_proto(&p).expect("valid");
        let loc = Arc::new(Localizer::new(vec![
            tmp.path().join("l1"),
            tmp.path().join("l2"),
        ]));

        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let loc = loc.clone();
                let res = res.clone();
                tokio::spawn(async move { loc.localize(&res, "alice", app()).await })
            })
            .collect();
        let mut paths = Vec::new();
        let mut fresh = 0;
        for t in tasks {
            let got = t.await.expect("task").expect("localized");
            if !got.from_cache {
                fresh += 1;
            }
            paths.push(got.path);
        }
        assert_eq!(fresh, 1, "exactly one request did the work");
        assert_eq!(loc.fetch_count(), 1);
        assert!(paths.windows(2).all(|w| w[0] == w[1]));
        let dir = &paths[0];
        assert!(dir.is_dir(), "the archive is unpacked into a directory");
        assert_eq!(
            dir.file_name().and_then(|n| n.to_str()),
            Some("__spark_libs__123.zip")
        );
        assert!(dir
            .to_string_lossy()
            .contains("usercache/alice/appcache/application_1700000000000_0001/filecache"));
        assert_eq!(fs::read(dir.join("a.jar")).expect("read").len(), 2 << 20);

        loc.forget_app(app());
        let after = loc.localize(&res, "alice", app()).await.expect("again");
        assert!(
            !after.from_cache,
            "forgotten application copies are fetched again"
        );
    }

    #[tokio::test]
    async fn failures_are_not_cached() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let src = tmp.path().join("conf.zip");
        fs::write(&src, b"not a zip").expect("write");
        let (size, ts) = stat(&src);
        let p = proto(
            src.to_str().expect("utf-8"),
            "file",
            size,
            ts,
            LocalResourceTypeProto::Archive,
        );
        let res = LocalResource::from_proto(&p).expect("valid");
        let loc = Arc::new(Localizer::new(vec![tmp.path().join("local")]));
        let err = loc
            .localize(&res, "alice", app())
            .await
            .expect_err("corrupt");
        assert!(err.contains("not a valid zip archive"), "{err}");
        // The partial directory is gone.
        let cache = tmp.path().join("local/usercache/alice/filecache");
        assert_eq!(fs::read_dir(&cache).map(|d| d.count()).unwrap_or(0), 0);
        // A fixed source with the same key is tried again, not served from a cached failure.
        crate::unpack::tests::make_zip(&src, &[("x", b"y")]);
        let (size, ts) = stat(&src);
        let p = proto(
            src.to_str().expect("utf-8"),
            "file",
            size,
            ts,
            LocalResourceTypeProto::Archive,
        );
        let res = LocalResource::from_proto(&p).expect("valid");
        loc.localize(&res, "alice", app()).await.expect("now valid");
    }

    #[tokio::test]
    async fn directories_and_unknown_archives() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("conf");
        fs::create_dir_all(dir.join("sub")).expect("mkdir");
        fs::write(dir.join("sub/a.xml"), b"<a/>").expect("write");
        let (_, ts) = stat(&dir);
        let p = proto(
            dir.to_str().expect("utf-8"),
            "file",
            4096,
            ts,
            LocalResourceTypeProto::File,
        );
        let loc = Arc::new(Localizer::new(vec![tmp.path().join("local")]));
        let got = loc
            .localize(&LocalResource::from_proto(&p).expect("valid"), "u", app())
            .await
            .expect("dir copied");
        assert_eq!(fs::read(got.path.join("sub/a.xml")).expect("read"), b"<a/>");

        let odd = tmp.path().join("data.bin");
        fs::write(&odd, b"raw").expect("write");
        let (size, ts) = stat(&odd);
        let p = proto(
            odd.to_str().expect("utf-8"),
            "file",
            size,
            ts,
            LocalResourceTypeProto::Archive,
        );
        let got = loc
            .localize(&LocalResource::from_proto(&p).expect("valid"), "u", app())
            .await
            .expect("kept as a file");
        assert_eq!(fs::read(&got.path).expect("read"), b"raw");
    }

    /// A resource of `path` as its launch context would name it.
    #[tokio::test]
    async fn the_cache_cleanup_removes_unused_copies_least_recently_used_first() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let loc = Arc::new(Localizer::new(vec![tmp.path().join("local")]));
        let private = |name: &str, bytes: usize| {
            let src = tmp.path().join(name);
            fs::write(&src, vec![b'x'; bytes]).expect("write");
            resource(
                &src,
                LocalResourceTypeProto::File,
                LocalResourceVisibilityProto::Private,
            )
        };
        let (a, b, c) = (private("a", 1000), private("b", 1000), private("c", 1000));
        let app_res = {
            let src = tmp.path().join("d");
            fs::write(&src, vec![b'x'; 5000]).expect("write");
            resource(
                &src,
                LocalResourceTypeProto::File,
                LocalResourceVisibilityProto::Application,
            )
        };
        // a, then b, are used and given back; c is held (a container runs);
        // the application's copy does not count.
        let la = loc.localize(&a, "alice", app()).await.expect("a");
        let lb = loc.localize(&b, "alice", app()).await.expect("b");
        let lc = loc.localize(&c, "alice", app()).await.expect("c");
        let ld = loc.localize(&app_res, "alice", app()).await.expect("d");
        let (a_path, b_path, c_path) = (la.path.clone(), lb.path.clone(), lc.path.clone());
        drop(la);
        drop(lb);

        // Under the target: nothing goes.
        let none = loc.clean_up(3000);
        assert_eq!((none.before, none.removed), (3000, 0));
        // Over it: the least recently used unheld copy goes first, and only
        // as many as needed.
        let one = loc.clean_up(2500);
        assert_eq!((one.removed, one.freed), (1, 1000));
        assert!(!a_path.exists() && a_path.parent().is_some_and(|d| !d.exists()));
        assert!(b_path.exists() && c_path.exists());
        // Down to nothing: the held copy and the application's stay.
        let rest = loc.clean_up(0);
        assert_eq!((rest.before, rest.removed), (2000, 1));
        assert!(!b_path.exists());
        assert!(c_path.exists() && ld.path.exists());

        // An evicted resource is localized again when asked for.
        let fetched = loc.fetch_count();
        let again = loc.localize(&a, "alice", app()).await.expect("a again");
        assert!(!again.from_cache);
        assert_eq!(loc.fetch_count(), fetched + 1);
        assert_eq!(fs::read(&again.path).expect("copy").len(), 1000);
        drop(lc);
    }

    /// A recovered container holds the copies its work dir links to (a
    /// file, and a file inside an unpacked archive): the cleanup leaves
    /// them until it ends; copies it does not link to are not held.
    #[tokio::test]
    async fn copies_a_recovered_container_links_to_are_held_until_it_ends() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let store = Arc::new(StateStore::open(&tmp.path().join("recovery")).expect("store"));
        let local = vec![tmp.path().join("local")];
        let public = |name: &str, kind: LocalResourceTypeProto| {
            let src = tmp.path().join(name);
            if kind == LocalResourceTypeProto::Archive {
                crate::unpack::tests::make_zip(&src, &[("lib/a.jar", b"aaaa")]);
            } else {
                fs::write(&src, vec![b'x'; 100]).expect("write");
            }
            chmod(&src, 0o644);
            resource(&src, kind, LocalResourceVisibilityProto::Public)
        };
        chmod(tmp.path(), 0o755);
        let (file, zip, other) = (
            public("used.txt", LocalResourceTypeProto::File),
            public("env.zip", LocalResourceTypeProto::Archive),
            public("unused.txt", LocalResourceTypeProto::File),
        );
        let first = Arc::new(Localizer::recording(local.clone(), Some(store.clone())));
        let (f1, z1, o1) = (
            first.localize(&file, "alice", app()).await.expect("file"),
            first.localize(&zip, "alice", app()).await.expect("zip"),
            first.localize(&other, "alice", app()).await.expect("other"),
        );
        let (f_path, z_path, o_path) = (f1.path.clone(), z1.path.clone(), o1.path.clone());
        drop((f1, z1, o1));

        // The next run takes the copies back; its reacquired container links
        // to the file and to a jar inside the archive.
        let second = Arc::new(Localizer::recording(local, Some(store.clone())));
        let live = std::collections::HashSet::from([app()]);
        assert_eq!(second.restore(store.load().resources, &live), (3, 0));
        let leases = second.lease_copies(&[
            f_path.clone(),
            z_path.join("lib/a.jar"),
            tmp.path().join("elsewhere"),
        ]);
        assert_eq!(leases.len(), 2);
        let cleaned = second.clean_up(0);
        assert_eq!(cleaned.removed, 1, "{cleaned:?}");
        assert!(!o_path.exists(), "the copy nobody holds is evicted");
        assert!(f_path.exists() && z_path.join("lib/a.jar").exists());
        // The container ends: its copies may go.
        drop(leases);
        assert_eq!(second.clean_up(0).removed, 2);
        assert!(!f_path.exists() && !z_path.exists());
    }

    /// Without recovery the node starts from empty caches: the old ones are
    /// moved aside at once (read-only copies included) and deleted, with
    /// what an earlier start left moved aside.
    #[test]
    fn a_start_without_recovery_moves_the_old_caches_aside_and_deletes_them() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().join("local");
        let copy = root.join("filecache/10/x.jar");
        fs::create_dir_all(&copy).expect("mkdir");
        fs::write(copy.join("a"), b"a").expect("write");
        chmod(&copy.join("a"), 0o555);
        chmod(&copy, 0o555);
        fs::create_dir_all(root.join("usercache/alice/appcache/app_1")).expect("mkdir");
        fs::create_dir_all(root.join("nmPrivate/app_1/c_1")).expect("mkdir");
        fs::create_dir_all(root.join("usercache_DEL_5/bob")).expect("mkdir");
        fs::create_dir_all(root.join("other")).expect("mkdir");

        let doomed = move_aside_local_dirs(std::slice::from_ref(&root), 77);
        let names: Vec<String> = doomed
            .iter()
            .filter_map(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "filecache_DEL_77",
                "nmPrivate_DEL_77",
                "usercache_DEL_5",
                "usercache_DEL_77"
            ]
        );
        for gone in ["filecache", "usercache", "nmPrivate"] {
            assert!(!root.join(gone).exists(), "{gone} is still there");
        }
        // The same instant again (a start within the same ms): another name.
        fs::create_dir_all(root.join("filecache")).expect("mkdir");
        let again = move_aside_local_dirs(std::slice::from_ref(&root), 77);
        assert!(
            again.contains(&root.join("filecache_DEL_77-1")),
            "{again:?}"
        );

        delete_moved_aside(again);
        let left: Vec<String> = fs::read_dir(&root)
            .expect("list")
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, ["other"]);
        assert!(moved_aside_leftovers(std::slice::from_ref(&root)).is_empty());
    }

    /// Hadoop's cleanupLogDirs: the previous run's application log dirs are
    /// moved aside (nothing else in a log dir) and deleted, with what an
    /// earlier start left moved aside.
    #[test]
    fn a_start_without_recovery_moves_the_old_application_logs_aside() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let logs = tmp.path().join("logs");
        let c = logs.join("application_1700000000000_0001/container_1/stdout");
        fs::create_dir_all(c.parent().expect("parent")).expect("mkdir");
        fs::write(&c, b"old").expect("write");
        fs::create_dir_all(logs.join("application_1700000000000_0002_DEL_5")).expect("mkdir");
        for keep in [
            "application_x_1",
            "application_1_2_3",
            "notes",
            "application_1",
        ] {
            fs::create_dir_all(logs.join(keep)).expect("mkdir");
        }
        let doomed = move_aside_app_logs(std::slice::from_ref(&logs), 77);
        let names: Vec<String> = doomed
            .iter()
            .filter_map(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "application_1700000000000_0001_DEL_77",
                "application_1700000000000_0002_DEL_5"
            ]
        );
        delete_moved_aside(doomed);
        let mut left: Vec<String> = fs::read_dir(&logs)
            .expect("list")
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                "application_1",
                "application_1_2_3",
                "application_x_1",
                "notes"
            ]
        );
        assert!(moved_aside_app_logs(std::slice::from_ref(&logs)).is_empty());
    }

    fn resource(
        path: &Path,
        kind: LocalResourceTypeProto,
        vis: LocalResourceVisibilityProto,
    ) -> LocalResource {
        let (size, ts) = stat(path);
        let mut p = proto(path.to_str().expect("utf-8"), "file", size, ts, kind);
        p.visibility = Some(vis as i32);
        LocalResource::from_proto(&p).expect("valid")
    }

    fn chmod(path: &Path, mode: u32) {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).expect("chmod");
    }

    fn mode_of(path: &Path) -> u32 {
        fs::symlink_metadata(path).expect("stat").mode() & 0o7777
    }

    const NOT_PUBLIC: &str =
        "is not publicly accessible and as such cannot be part of the public cache.";

    /// A temporary directory whose own mode lets others in (so only the
    /// directories a test creates decide).
    fn open_tempdir() -> tempfile::TempDir {
        let tmp = tempfile::tempdir().expect("tempdir");
        chmod(tmp.path(), 0o755);
        tmp
    }

    #[tokio::test]
    async fn public_resources_must_be_readable_by_everyone() {
        use LocalResourceTypeProto::{Archive, File};
        use LocalResourceVisibilityProto::Public;
        let tmp = open_tempdir();
        let loc = Arc::new(Localizer::new(vec![tmp.path().join("local")]));
        let etc = tmp.path().join("etc");
        fs::create_dir(&etc).expect("mkdir");
        chmod(&etc, 0o755);

        // Like /etc/shadow: not readable by others.
        let shadow = etc.join("shadow");
        fs::write(&shadow, b"root:secret\n").expect("write");
        chmod(&shadow, 0o640);
        let err = loc
            .localize(&resource(&shadow, File, Public), "mallory", app())
            .await
            .expect_err("not public");
        assert_eq!(
            err,
            format!("Resource file:{} {NOT_PUBLIC}", shadow.display())
        );

        // Readable by everyone, below a directory others cannot enter.
        let private = tmp.path().join("private");
        fs::create_dir(&private).expect("mkdir");
        chmod(&private, 0o700);
        let inner = private.join("data.txt");
        fs::write(&inner, b"mine").expect("write");
        chmod(&inner, 0o644);
        let err = loc
            .localize(&resource(&inner, File, Public), "mallory", app())
            .await
            .expect_err("ancestor not searchable");
        assert!(err.ends_with(NOT_PUBLIC), "{err}");

        // A link in a public directory to that file: judged where it is.
        let link = etc.join("link.txt");
        std::os::unix::fs::symlink(&inner, &link).expect("symlink");
        let err = loc
            .localize(&resource(&link, File, Public), "mallory", app())
            .await
            .expect_err("real location not public");
        assert!(err.ends_with(NOT_PUBLIC), "{err}");

        // A directory with one private file in it.
        let conf = tmp.path().join("conf");
        fs::create_dir(&conf).expect("mkdir");
        chmod(&conf, 0o755);
        fs::write(conf.join("a.xml"), b"<a/>").expect("write");
        chmod(&conf.join("a.xml"), 0o644);
        fs::write(conf.join("secret.xml"), b"<s/>").expect("write");
        chmod(&conf.join("secret.xml"), 0o600);
        let err = loc
            .localize(&resource(&conf, File, Public), "mallory", app())
            .await
            .expect_err("a private file inside");
        assert!(err.ends_with(NOT_PUBLIC), "{err}");

        // An archive that is private.
        let zip = etc.join("env.zip");
        crate::unpack::tests::make_zip(&zip, &[("bin/run", b"x")]);
        chmod(&zip, 0o600);
        let err = loc
            .localize(&resource(&zip, Archive, Public), "mallory", app())
            .await
            .expect_err("archive not public");
        assert!(err.ends_with(NOT_PUBLIC), "{err}");
        assert_eq!(loc.fetch_count(), 0, "nothing was localized");

        // Properly public ones are localized, read-only for everyone.
        chmod(&conf.join("secret.xml"), 0o644);
        let got = loc
            .localize(&resource(&conf, File, Public), "alice", app())
            .await
            .expect("public directory");
        assert!(got.path.starts_with(tmp.path().join("local/filecache")));
        assert_eq!(mode_of(&got.path), 0o755);
        assert_eq!(mode_of(&got.path.join("a.xml")), 0o555);
        chmod(&zip, 0o644);
        let got = loc
            .localize(&resource(&zip, Archive, Public), "alice", app())
            .await
            .expect("public archive");
        assert_eq!(mode_of(&got.path.join("bin")), 0o755);
        assert_eq!(mode_of(&got.path.join("bin/run")), 0o555);
        let pi = etc.join("pi.py");
        fs::write(&pi, b"print(1)\n").expect("write");
        chmod(&pi, 0o644);
        let got = loc
            .localize(&resource(&pi, File, Public), "alice", app())
            .await
            .expect("public file");
        assert_eq!(fs::read(&got.path).expect("read"), b"print(1)\n");
        assert_eq!(mode_of(&got.path), 0o555);
    }

    /// A container run as another user (the LinuxContainerExecutor): a
    /// PRIVATE or APPLICATION resource must be readable by that user where
    /// it is (Hadoop's localizer reads it as the user, so a user cannot have
    /// root's localizer fetch a file they may not read), and the copy is
    /// root's with the user's group, readable and searchable but not
    /// writable by it (before, it was root's 0500: unreadable by the user).
    #[tokio::test]
    async fn private_resources_are_read_as_the_container_user_and_given_its_group() {
        use LocalResourceTypeProto::{Archive, File};
        use LocalResourceVisibilityProto::{Application, Private, Public};
        if !nix::unistd::geteuid().is_root() {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI runs as root; this test must run there"
            );
            eprintln!("SKIP: reading as the container's user needs root");
            return;
        }
        let tmp = open_tempdir();
        let loc = Arc::new(Localizer::new(vec![tmp.path().join("local")]));
        let nobody = RunAs {
            name: "nobody".into(),
            uid: 65534,
            gid: 65534,
            groups: vec![65534],
        };
        let home = tmp.path().join("home");
        fs::create_dir(&home).expect("mkdir");
        chmod(&home, 0o755);

        // Root's secret (like /etc/shadow), asked for as PRIVATE and as
        // APPLICATION: refused, nothing copied.
        let secret = home.join("secret");
        fs::write(&secret, b"root only\n").expect("write");
        chmod(&secret, 0o600);
        for vis in [Private, Application] {
            let err = loc
                .localize_as(
                    &resource(&secret, File, vis),
                    "mallory",
                    app(),
                    Some(nobody.clone()),
                )
                .await
                .expect_err("not readable by the container's user");
            assert!(err.contains("Permission denied for user nobody"), "{err}");
        }
        // Readable by the user only through its group: allowed.
        let shared = home.join("shared");
        fs::write(&shared, b"group data\n").expect("write");
        std::os::unix::fs::chown(&shared, Some(0), Some(65534)).expect("chown");
        chmod(&shared, 0o640);
        let got = loc
            .localize_as(
                &resource(&shared, File, Private),
                "alice",
                app(),
                Some(nobody.clone()),
            )
            .await
            .expect("readable through the group");
        let meta = fs::metadata(&got.path).expect("copy");
        assert_eq!((meta.uid(), meta.gid()), (0, 65534));
        assert_eq!(mode_of(&got.path), 0o550);
        // A readable file below a directory the user cannot search: refused.
        let closed = home.join("closed");
        fs::create_dir(&closed).expect("mkdir");
        chmod(&closed, 0o700);
        let inner = closed.join("data");
        fs::write(&inner, b"x").expect("write");
        chmod(&inner, 0o644);
        let err = loc
            .localize_as(
                &resource(&inner, File, Private),
                "alice",
                app(),
                Some(nobody.clone()),
            )
            .await
            .expect_err("ancestor not searchable by the user");
        assert!(err.contains("Permission denied for user nobody"), "{err}");
        // An archive: every unpacked entry is root's with the user's group.
        let zip = home.join("env.zip");
        crate::unpack::tests::make_zip(&zip, &[("lib/a.jar", b"a")]);
        chmod(&zip, 0o644);
        let got = loc
            .localize_as(
                &resource(&zip, Archive, Application),
                "alice",
                app(),
                Some(nobody.clone()),
            )
            .await
            .expect("unpacked");
        for (path, mode) in [
            (got.path.clone(), 0o750),
            (got.path.join("lib"), 0o750),
            (got.path.join("lib/a.jar"), 0o550),
        ] {
            let m = fs::symlink_metadata(&path).expect("stat");
            assert_eq!((m.uid(), m.gid()), (0, 65534), "{}", path.display());
            assert_eq!(mode_of(&path), mode, "{}", path.display());
        }
        // PUBLIC resources keep Hadoop's public rules and modes whoever runs.
        let public = home.join("public.txt");
        fs::write(&public, b"p").expect("write");
        chmod(&public, 0o644);
        let got = loc
            .localize_as(
                &resource(&public, File, Public),
                "alice",
                app(),
                Some(nobody),
            )
            .await
            .expect("public");
        assert_eq!(mode_of(&got.path), 0o555);
        assert_eq!(fs::metadata(&got.path).expect("copy").gid(), 0);
    }

    #[tokio::test]
    async fn file_resources_are_read_only_copies() {
        use LocalResourceTypeProto::{Archive, File};
        use LocalResourceVisibilityProto::{Application, Private, Public};
        let tmp = open_tempdir();
        let loc = Arc::new(Localizer::new(vec![tmp.path().join("local")]));
        let src = tmp.path().join("data.txt");
        fs::write(&src, b"original\n").expect("write");
        chmod(&src, 0o666);
        for vis in [Public, Private, Application] {
            let got = loc
                .localize(&resource(&src, File, vis), "alice", app())
                .await
                .expect("localized");
            let (a, b) = (
                fs::metadata(&src).expect("src"),
                fs::metadata(&got.path).expect("copy"),
            );
            assert_ne!(
                (a.dev(), a.ino()),
                (b.dev(), b.ino()),
                "{vis:?}: a copy, not a link"
            );
            assert_eq!(a.nlink(), 1, "{vis:?}: nothing links to the source");
            let expected = if vis == Public { 0o555 } else { 0o500 };
            assert_eq!(mode_of(&got.path), expected, "{vis:?}");
        }
        let zip = tmp.path().join("env.zip");
        crate::unpack::tests::make_zip(&zip, &[("lib/a.jar", b"a")]);
        let got = loc
            .localize(&resource(&zip, Archive, Private), "alice", app())
            .await
            .expect("unpacked");
        assert_eq!(mode_of(&got.path), 0o700);
        assert_eq!(mode_of(&got.path.join("lib")), 0o700);
        assert_eq!(mode_of(&got.path.join("lib/a.jar")), 0o500);

        // Someone who does not own the copy cannot write to it. Run as
        // root, the writer is another user; else it is the owner, whom the
        // mode stops as well.
        let public = loc
            .localize(&resource(&src, File, Public), "alice", app())
            .await
            .expect("cached");
        let as_other = |script: String| {
            let mut cmd = std::process::Command::new("/bin/sh");
            cmd.arg("-c").arg(script);
            if fs::metadata("/proc/self").expect("proc").uid() == 0 {
                std::os::unix::process::CommandExt::uid(&mut cmd, 65534);
                std::os::unix::process::CommandExt::gid(&mut cmd, 65534);
            }
            cmd.status().expect("run the shell")
        };
        let copy = public.path.display();
        assert!(
            as_other(format!("cat '{copy}' > /dev/null")).success(),
            "the public copy is readable"
        );
        assert!(
            !as_other(format!("echo tampered 2>/dev/null >> '{copy}'")).success(),
            "the write went through"
        );
        assert_eq!(fs::read(&public.path).expect("copy"), b"original\n");
        assert_eq!(fs::read(&src).expect("source"), b"original\n");
    }

    #[tokio::test]
    async fn a_changed_cached_copy_is_not_handed_out_again() {
        use LocalResourceTypeProto::File;
        use LocalResourceVisibilityProto::Public;
        let tmp = open_tempdir();
        let loc = Arc::new(Localizer::new(vec![tmp.path().join("local")]));
        let src = tmp.path().join("data.txt");
        fs::write(&src, b"original\n").expect("write");
        chmod(&src, 0o644);
        let res = resource(&src, File, Public);
        let first = loc.localize(&res, "alice", app()).await.expect("first");

        // A container running as the copy's owner (or root) makes it
        // writable and writes to it.
        chmod(&first.path, 0o755);
        fs::OpenOptions::new()
            .append(true)
            .open(&first.path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"tampered\n"))
            .expect("tamper");
        assert_eq!(fs::read(&src).expect("source"), b"original\n");

        let other_app = ApplicationId::new(1_700_000_000_000, 2);
        let second = loc.localize(&res, "bob", other_app).await.expect("second");
        assert!(!second.from_cache, "the changed copy is not reused");
        assert_ne!(second.path, first.path);
        assert_eq!(fs::read(&second.path).expect("copy"), b"original\n");
        let third = loc.localize(&res, "carol", other_app).await.expect("third");
        assert!(third.from_cache, "the new copy is shared again");
        assert_eq!(third.path, second.path);
        assert_eq!(loc.fetch_count(), 2);
    }

    #[tokio::test]
    async fn only_regular_files_and_directories_are_localized() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let fifo = tmp.path().join("pipe");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o644))
            .expect("mkfifo");
        let loc = Arc::new(Localizer::new(vec![tmp.path().join("local")]));
        let res = resource(
            &fifo,
            LocalResourceTypeProto::File,
            LocalResourceVisibilityProto::Private,
        );
        let err = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            loc.localize(&res, "alice", app()),
        )
        .await
        .expect("does not wait for a writer")
        .expect_err("a FIFO");
        assert!(err.contains("not a regular file or a directory"), "{err}");
        let dev = resource(
            Path::new("/dev/zero"),
            LocalResourceTypeProto::File,
            LocalResourceVisibilityProto::Private,
        );
        let err = loc
            .localize(&dev, "alice", app())
            .await
            .expect_err("a device");
        assert!(err.contains("not a regular file or a directory"), "{err}");
    }

    #[tokio::test]
    async fn a_recorded_cache_is_taken_back_by_the_next_run() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let store = Arc::new(StateStore::open(&tmp.path().join("recovery")).expect("store"));
        let local = vec![tmp.path().join("local")];
        let file = |name: &str, vis: LocalResourceVisibilityProto| {
            let src = tmp.path().join(name);
            fs::write(&src, name.as_bytes()).expect("write");
            let (size, ts) = stat(&src);
            let mut p = proto(
                src.to_str().expect("utf-8"),
                "file",
                size,
                ts,
                LocalResourceTypeProto::File,
            );
            p.visibility = Some(vis as i32);
            LocalResource::from_proto(&p).expect("valid")
        };
        let private = file("private.jar", LocalResourceVisibilityProto::Private);
        let mine = file("app.jar", LocalResourceVisibilityProto::Application);
        let changed = file("changed.jar", LocalResourceVisibilityProto::Private);
        let finished = ApplicationId::new(1_700_000_000_000, 2);

        let first = Arc::new(Localizer::recording(local.clone(), Some(store.clone())));
        let p1 = first
            .localize(&private, "alice", app())
            .await
            .expect("private");
        let a1 = first.localize(&mine, "alice", app()).await.expect("app");
        first
            .localize(&mine, "alice", finished)
            .await
            .expect("the finished app's copy");
        let c1 = first
            .localize(&changed, "alice", app())
            .await
            .expect("changed");
        assert_eq!(first.fetch_count(), 4);
        // Someone writes to a cached copy while no NodeManager runs.
        chmod(&c1.path, 0o600);
        fs::write(&c1.path, b"tampered").expect("tamper");

        // The next run: only the live application's copies, and only those
        // still exactly as made, are taken back.
        let recorded = store.load().resources;
        assert_eq!(recorded.len(), 4);
        let second = Arc::new(Localizer::recording(local, Some(store.clone())));
        let live = std::collections::HashSet::from([app()]);
        assert_eq!(second.restore(recorded, &live), (2, 2));
        assert_eq!(store.load().resources.len(), 2);
        let p2 = second
            .localize(&private, "alice", app())
            .await
            .expect("private");
        let a2 = second.localize(&mine, "alice", app()).await.expect("app");
        assert!(p2.from_cache && a2.from_cache);
        assert_eq!((&p2.path, &a2.path), (&p1.path, &a1.path));
        let c2 = second
            .localize(&changed, "alice", app())
            .await
            .expect("changed");
        assert!(!c2.from_cache);
        assert_ne!(c2.path, c1.path);
        assert_eq!(second.fetch_count(), 1);

        // A finished application's copies are unrecorded with it.
        second.forget_app(app());
        let left: Vec<_> = store.load().resources.into_iter().map(|r| r.path).collect();
        assert_eq!(left.len(), 2, "{left:?}");
        assert!(!left.contains(&a1.path));
    }
}
