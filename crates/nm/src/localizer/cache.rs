//! The node's resource caches: the [`Localizer`], which hands out one
//! copy per cache key (scope, group, source, size, timestamp, type),
//! fetched once however many containers ask at once; takes back the copies
//! a previous run recorded; forgets copies that changed or disappeared, and
//! an application's copies with it; and runs the cache cleanup over the
//! copies no container holds ([`super::retention`]).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use spindle_common::text::escaped;
use spindle_common::ApplicationId;
use tokio::sync::OnceCell;
use tracing::{debug, info, warn};

use super::copy::{disk_usage, fingerprint, remove_copy, CachedCopy, Done};
use super::fetch::fetch;
use super::key::CacheKey;
use super::remote::{download, place_downloaded};
use super::resource::{LocalResource, Visibility};
use super::retention::{Cleanup, Lease, Retention};
use crate::cache_entry::{CachedResource, Scope};
use crate::executor::RunAs;
use crate::recovery::StateStore;

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
    retention: Arc<Retention>,
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
            retention: Arc::default(),
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
    fn lease(&self, key: &CacheKey, slot: &Slot) -> Option<Lease> {
        let slots = self.lock();
        if !slots.get(key).is_some_and(|s| Arc::ptr_eq(s, slot)) {
            return None;
        }
        Some(self.retention.lease(key))
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

    /// Hadoop's cache cleanup (`ResourceRetentionSet`): while the PUBLIC
    /// and PRIVATE copies take more than `target_bytes` on disk, the copies
    /// no container holds are removed, least recently used first.
    /// Application copies are not counted (they go with their application).
    pub fn clean_up(&self, target_bytes: u64) -> Cleanup {
        let mut removed_dirs = Vec::new();
        let mut report = Cleanup::default();
        {
            let mut slots = self.lock();
            let copies = slots.iter().filter_map(|(key, slot)| match slot.get() {
                Some(Ok(done)) => Some((key, done.disk_bytes)),
                _ => None,
            });
            let (before, evicted) = self.retention.choose(copies, target_bytes);
            report.before = before;
            for (key, disk_bytes) in evicted {
                let Some(slot) = slots.remove(&key) else {
                    continue;
                };
                if let Some(Ok(done)) = slot.get() {
                    if let Some(dir) = done.path.parent() {
                        removed_dirs.push(dir.to_path_buf());
                    }
                }
                self.retention.forget(&key);
                self.unrecord(&key, Some(slot));
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
            self.retention.forget(key);
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

/// The user a scope's copies are localized for (the node's own for PUBLIC).
fn key_user(scope: &Scope) -> String {
    match scope {
        Scope::Public => String::new(),
        Scope::User(user) | Scope::App(user, _) => user.clone(),
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::sync::Arc;

    use hadoop_protos::yarn::{LocalResourceTypeProto, LocalResourceVisibilityProto};
    use spindle_common::ApplicationId;

    use crate::localizer::test_support::{app, chmod, open_tempdir, proto, resource, stat};
    use crate::localizer::{LocalResource, Localizer};
    use crate::recovery::StateStore;

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
