//! Localization: bringing a container's resources onto this node.
//!
//! Only `file:` URLs are served (the node and the submitter share a file
//! system, or the file was staged on this machine). Each resource is
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
//! A FILE is hard-linked when possible, else copied (a directory is copied
//! recursively); an ARCHIVE is unpacked into a directory named like the
//! resource; a PATTERN jar has only the entries matching its pattern unpacked
//! and the jar itself kept in that directory too (other PATTERN archives are
//! unpacked whole, as Hadoop does).

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::UNIX_EPOCH;

use hadoop_protos::yarn::{
    LocalResourceProto, LocalResourceTypeProto, LocalResourceVisibilityProto,
};
use spindle_common::ApplicationId;
use tokio::sync::OnceCell;
use tracing::{debug, info};

use crate::unpack::{self, ArchiveFormat};

/// How a resource is made available.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResourceType {
    File,
    Archive,
    Pattern,
}

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
    /// The source file.
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
    /// Reads a resource of a launch context. Only `file:` URLs (without a
    /// remote host) are supported.
    pub fn from_proto(p: &LocalResourceProto) -> Result<LocalResource, String> {
        let url = p
            .resource
            .as_ref()
            .ok_or_else(|| "the local resource has no URL".to_string())?;
        let scheme = url.scheme.clone().unwrap_or_default();
        let file = url.file.clone().unwrap_or_default();
        let shown = format!("{scheme}:{file}");
        if !scheme.eq_ignore_ascii_case("file") {
            let scheme = if scheme.is_empty() { "(none)" } else { &scheme };
            return Err(format!(
                "cannot localize {shown}: scheme {scheme} is not supported by Spindle's \
                 NodeManager (only file: URLs are)"
            ));
        }
        if let Some(host) = url.host.as_deref().filter(|h| !h.is_empty()) {
            if host != "localhost" {
                return Err(format!(
                    "cannot localize {shown}: it names host '{host}'; only local files can be \
                     localized"
                ));
            }
        }
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
            source: PathBuf::from(file),
            size: p.size.unwrap_or(-1),
            timestamp: p.timestamp.unwrap_or(0),
            kind,
            visibility,
            pattern: p.pattern.clone(),
        })
    }

    fn display(&self) -> String {
        format!("file:{}", self.source.display())
    }
}

/// Who the copy belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Scope {
    Public,
    User(String),
    App(String, ApplicationId),
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct CacheKey {
    scope: Scope,
    source: PathBuf,
    size: i64,
    timestamp: i64,
    kind: ResourceType,
}

/// A localized resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Localized {
    /// The local copy (a file, or the directory an archive was unpacked into).
    pub path: PathBuf,
    /// True when an earlier localization was reused.
    pub from_cache: bool,
    /// Size of the source.
    pub bytes: u64,
}

#[derive(Debug, Clone)]
struct Done {
    path: PathBuf,
    bytes: u64,
}

type Slot = Arc<OnceCell<Result<Done, String>>>;

/// The node's resource caches.
pub struct Localizer {
    local_dirs: Vec<PathBuf>,
    slots: Mutex<HashMap<CacheKey, Slot>>,
    next_dir: AtomicUsize,
    next_id: AtomicU64,
    fetches: AtomicU64,
}

impl Localizer {
    pub fn new(local_dirs: Vec<PathBuf>) -> Localizer {
        Localizer {
            local_dirs,
            slots: Mutex::new(HashMap::new()),
            next_dir: AtomicUsize::new(0),
            next_id: AtomicU64::new(10),
            fetches: AtomicU64::new(0),
        }
    }

    /// How many resources were actually copied or unpacked (not served
    /// from the cache) since the node started.
    pub fn fetch_count(&self) -> u64 {
        self.fetches.load(Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<CacheKey, Slot>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Makes `res` available for a container of `app` run by `user`.
    pub async fn localize(
        self: &Arc<Self>,
        res: &LocalResource,
        user: &str,
        app: ApplicationId,
    ) -> Result<Localized, String> {
        let scope = match res.visibility {
            Visibility::Public => Scope::Public,
            Visibility::Private => Scope::User(user.to_string()),
            Visibility::Application => Scope::App(user.to_string(), app),
        };
        let key = CacheKey {
            scope,
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
                    async move {
                        let base = this.cache_base(&key.scope);
                        let shown = res.display();
                        let started = std::time::Instant::now();
                        let r = tokio::task::spawn_blocking(move || fetch(&res, &base))
                            .await
                            .unwrap_or_else(|e| Err(format!("the localizer task failed: {e}")));
                        if let Ok(done) = &r {
                            this.fetches.fetch_add(1, Ordering::Relaxed);
                            info!(
                                resource = %shown,
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
            match result {
                Ok(done) if fetched_here || fs::symlink_metadata(&done.path).is_ok() => {
                    if !fetched_here {
                        debug!(resource = %res.display(), "reused the cached copy");
                    }
                    return Ok(Localized {
                        path: done.path,
                        from_cache: !fetched_here,
                        bytes: done.bytes,
                    });
                }
                Ok(done) => {
                    info!(path = %done.path.display(), "a cached resource disappeared; localizing it again");
                    self.forget(&key, &slot);
                }
                Err(e) => {
                    self.forget(&key, &slot);
                    return Err(e);
                }
            }
        }
        Err(format!(
            "{} could not be localized: its cached copy keeps disappearing",
            res.display()
        ))
    }

    fn forget(&self, key: &CacheKey, slot: &Slot) {
        let mut slots = self.lock();
        if slots.get(key).is_some_and(|s| Arc::ptr_eq(s, slot)) {
            slots.remove(key);
        }
    }

    /// Forgets the application-scoped copies of `app` (its directory is
    /// about to be deleted).
    pub fn forget_app(&self, app: ApplicationId) {
        self.lock()
            .retain(|k, _| !matches!(&k.scope, Scope::App(_, a) if *a == app));
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

/// Checks the source and copies or unpacks it under a fresh directory
/// derived from `base` (`base`, or `base` with a suffix if it exists).
fn fetch(res: &LocalResource, base: &Path) -> Result<Done, String> {
    let shown = res.display();
    let meta = fs::metadata(&res.source).map_err(|e| format!("cannot localize {shown}: {e}"))?;
    let modified = mtime_ms(&meta);
    if modified != res.timestamp {
        return Err(format!(
            "Resource {shown} changed on src filesystem (expected {}, was {modified})",
            res.timestamp
        ));
    }
    if meta.is_file() && res.size >= 0 && meta.len() != res.size.unsigned_abs() {
        return Err(format!(
            "Resource {shown} changed on src filesystem (expected size {}, was {})",
            res.size,
            meta.len()
        ));
    }
    let name = res
        .source
        .file_name()
        .ok_or_else(|| format!("cannot localize {shown}: the path has no file name"))?
        .to_owned();

    let dir = unique_dir(base).map_err(|e| format!("cannot localize {shown}: {e}"))?;
    let dest = dir.join(&name);
    let result = place(res, &meta, &dest);
    if let Err(e) = &result {
        debug!(resource = %shown, error = %e, "localization failed; removing the partial copy");
        let _ = fs::remove_dir_all(&dir);
    }
    result.map(|()| Done {
        path: dest,
        bytes: meta.len(),
    })
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

fn place(res: &LocalResource, meta: &fs::Metadata, dest: &Path) -> Result<(), String> {
    let shown = res.display();
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match res.kind {
        ResourceType::File => {
            if meta.is_dir() {
                copy_tree(&res.source, dest).map_err(|e| format!("cannot copy {shown}: {e}"))
            } else {
                link_or_copy(&res.source, dest).map_err(|e| format!("cannot copy {shown}: {e}"))
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
                    let stats = unpack::unpack_matching(&res.source, format, dest, keep.as_ref())
                        .map_err(|e| format!("cannot localize {shown}: {e}"))?;
                    debug!(resource = %shown, ?stats, "unpacked");
                    if res.kind == ResourceType::Pattern && is_jar {
                        link_or_copy(&res.source, &dest.join(&name))
                            .map_err(|e| format!("cannot copy {shown}: {e}"))?;
                    }
                    Ok(())
                }
                None => {
                    // Hadoop keeps an archive it cannot unpack as a plain file.
                    tracing::warn!(resource = %shown, "not a zip, jar or tar archive; localizing it as a file");
                    link_or_copy(&res.source, dest).map_err(|e| format!("cannot copy {shown}: {e}"))
                }
            }
        }
    }
}

fn link_or_copy(src: &Path, dest: &Path) -> io::Result<()> {
    match fs::hard_link(src, dest) {
        Ok(()) => Ok(()),
        Err(_) => fs::copy(src, dest).map(|_| ()),
    }
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
        } else {
            fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
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
    fn only_file_urls_are_accepted() {
        let p = proto("/data/x.jar", "hdfs", 1, 1, LocalResourceTypeProto::File);
        let err = LocalResource::from_proto(&p).expect_err("hdfs");
        assert!(
            err.contains("scheme hdfs is not supported by Spindle's NodeManager"),
            "{err}"
        );
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
}
