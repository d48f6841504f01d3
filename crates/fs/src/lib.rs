//! One file system interface for the daemons: [`FileSystem`], with a local
//! (`file:`) and an HDFS (`hdfs:`) implementation. HDFS is spoken natively
//! (the `hdfs-native` client talks to the NameNode and DataNodes; no JVM).
//!
//! The NodeManager localizes resources from it and writes aggregated logs
//! to it; the ResourceManager deletes expired aggregated logs through it.
//! Paths given to a [`FileSystem`] are absolute paths on that file system
//! (`/tmp/logs/alice`); [`FileSystems::resolve`] splits a Hadoop URL
//! (`hdfs://nn:8020/tmp/logs`, `file:///tmp/logs`, or a bare path on the
//! default file system) into the file system and the path.
//!
//! Errors are `std::io::Error`s whose kind says what callers branch on
//! (`NotFound`, `AlreadyExists`, `PermissionDenied`, `Unsupported`) and
//! whose message names the file system and path.

mod hdfs;
mod local;
pub mod remote_logs;
mod tree;

use std::collections::HashMap;
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;

pub use hdfs::{HdfsFs, HDFS_DELEGATION_TOKEN, HDFS_SCHEME};
pub use local::LocalFs;
pub use spindle_common::security::tokens::Token;
pub use tree::{download_tree, list_tree, TreeEntry, TreeLimits};

/// The URL scheme of the local file system.
pub const FILE_SCHEME: &str = "file";

/// What a file system says of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// The absolute path on its file system.
    pub path: String,
    pub is_dir: bool,
    /// Length in bytes (0 for a directory).
    pub len: u64,
    /// Modification time, milliseconds since the epoch.
    pub modified_ms: i64,
    /// The permission bits (`rwxrwxrwx` and sticky).
    pub permission: u16,
    pub owner: String,
    pub group: String,
}

impl Status {
    /// The last component of the path.
    pub fn name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }
}

/// A file system: local or remote, always addressed by absolute paths.
///
/// The operations are the ones Hadoop's daemons use on a `FileSystem`;
/// each returns a boxed future so that callers can hold any file system as
/// `Arc<dyn FileSystem>`.
pub trait FileSystem: Send + Sync {
    /// `file://` or `hdfs://host:port`: the file system's URI, without a
    /// path.
    fn uri(&self) -> &str;

    /// The status of `path`; `NotFound` when it does not exist.
    fn status<'a>(&'a self, path: &'a str) -> BoxFuture<'a, io::Result<Status>>;

    /// The entries of the directory `dir`, in no particular order.
    fn list<'a>(&'a self, dir: &'a str) -> BoxFuture<'a, io::Result<Vec<Status>>>;

    /// Creates `path` and any missing parents with `permission` (the
    /// process umask or `fs.permissions.umask-mode` may narrow it, as in
    /// Hadoop's `mkdirs`); an existing directory is fine.
    fn mkdirs<'a>(&'a self, path: &'a str, permission: u16) -> BoxFuture<'a, io::Result<()>>;

    /// Sets `path`'s permission bits exactly.
    fn set_permission<'a>(
        &'a self,
        path: &'a str,
        permission: u16,
    ) -> BoxFuture<'a, io::Result<()>>;

    /// Renames `from` to `to`, replacing a file at `to`.
    fn rename<'a>(&'a self, from: &'a str, to: &'a str) -> BoxFuture<'a, io::Result<()>>;

    /// Deletes `path` (a directory only when `recursive`); whether
    /// something was deleted.
    fn delete<'a>(&'a self, path: &'a str, recursive: bool) -> BoxFuture<'a, io::Result<bool>>;

    /// Streams the first `len` bytes of `path` into the new local file
    /// `dest` (created with mode 0600); fails if the source is shorter.
    fn download<'a>(
        &'a self,
        path: &'a str,
        len: u64,
        dest: &'a Path,
    ) -> BoxFuture<'a, io::Result<()>>;

    /// Streams the local file `src` to a new file `path` (replacing one
    /// there) with `permission`; the bytes written.
    fn upload<'a>(
        &'a self,
        src: &'a Path,
        path: &'a str,
        permission: u16,
    ) -> BoxFuture<'a, io::Result<u64>>;
}

/// A download's end: an error unless all `len` bytes of `path` on
/// `filesystem` were copied (the source is shorter than it was said to be).
fn copied_all(filesystem: &str, path: &str, copied: u64, len: u64) -> io::Result<()> {
    if copied == len {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!("{filesystem}{path} ended after {copied} of {len} bytes"),
    ))
}

/// Whether everyone may read `path`: Hadoop's `FSDownload.isPublic`, the
/// file readable by others and every directory above it searchable by
/// others. `file` is its status.
pub async fn is_public(fs: &dyn FileSystem, path: &str, file: &Status) -> io::Result<bool> {
    if file.permission & 0o004 == 0 {
        return Ok(false);
    }
    for dir in Path::new(path).ancestors().skip(1) {
        let Some(dir) = dir.to_str() else {
            return Ok(false);
        };
        if fs.status(dir).await?.permission & 0o001 == 0 {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Creates every missing directory of `dirs` (outermost first) with its
/// permission, and sets that permission on the ones this call created, so
/// a umask cannot narrow them: Hadoop's `LogAggregationFileController`
/// `createDir`. Directories that already exist are left as they are.
pub async fn create_dirs(fs: &dyn FileSystem, dirs: &[(&str, u16)]) -> io::Result<()> {
    for &(dir, permission) in dirs {
        match fs.status(dir).await {
            Ok(s) if s.is_dir => continue,
            Ok(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{}{dir} exists and is not a directory", fs.uri()),
                ))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        fs.mkdirs(dir, permission).await?;
        fs.set_permission(dir, permission).await?;
    }
    Ok(())
}

/// A file system and an absolute path on it, from a Hadoop URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// `file://` or `hdfs://authority`.
    pub filesystem: String,
    /// Absolute, without `.`/`..` components or repeated slashes.
    pub path: String,
}

impl Location {
    /// The URL again: `hdfs://nn:8020/tmp/logs`, `file:///tmp/logs`.
    pub fn url(&self) -> String {
        format!("{}{}", self.filesystem, self.path)
    }

    /// This location with `name` (one or more `/`-separated components)
    /// below it.
    pub fn join(&self, name: &str) -> Location {
        let mut path = self.path.trim_end_matches('/').to_string();
        for part in name.split('/').filter(|p| !p.is_empty()) {
            path.push('/');
            path.push_str(part);
        }
        Location {
            filesystem: self.filesystem.clone(),
            path,
        }
    }
}

/// Splits `url` into its file system and absolute path. A bare path (no
/// scheme) is on `default_fs` (Hadoop's `fs.defaultFS`, e.g.
/// `hdfs://nn:8020` or `file:///`). Schemes other than `file` and `hdfs`
/// are refused with `Unsupported`, naming the scheme.
pub fn locate(url: &str, default_fs: &str) -> io::Result<Location> {
    let bad = |why: &str| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{url:?} is not a file system path: {why}"),
        )
    };
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) if !s.is_empty() && !s.contains('/') => (s.to_ascii_lowercase(), r),
        _ if url.starts_with('/') => {
            let base = locate(default_fs, FILE_URI)?;
            return Ok(Location {
                filesystem: base.filesystem,
                path: normalize(url).ok_or_else(|| bad("it leaves the root"))?,
            });
        }
        _ => match url.split_once(':') {
            // `file:/tmp/x`, as Hadoop's Path prints a local path.
            Some((s, p)) if s.eq_ignore_ascii_case(FILE_SCHEME) && p.starts_with('/') => {
                (FILE_SCHEME.to_string(), p)
            }
            _ => return Err(bad("it is relative")),
        },
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let filesystem = match scheme.as_str() {
        FILE_SCHEME => {
            if !authority.is_empty() && authority != "localhost" {
                return Err(bad("a file: URL names no host"));
            }
            FILE_URI.to_string()
        }
        HDFS_SCHEME => {
            if authority.is_empty() {
                let base = locate(default_fs, FILE_URI)?;
                if !base.filesystem.starts_with("hdfs://") {
                    return Err(bad(
                        "it names no NameNode and the default file system is not HDFS",
                    ));
                }
                base.filesystem
            } else {
                format!("{HDFS_SCHEME}://{authority}")
            }
        }
        other => {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!(
                    "{url:?}: the file system scheme {other:?} is not supported \
                     (Spindle reads and writes {FILE_SCHEME}: and {HDFS_SCHEME}:)"
                ),
            ))
        }
    };
    Ok(Location {
        filesystem,
        path: normalize(path).ok_or_else(|| bad("it leaves the root"))?,
    })
}

/// The local file system's URI.
pub const FILE_URI: &str = "file://";

/// `/a//b/./c/../d` → `/a/b/d`; `None` when `..` climbs above the root.
fn normalize(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(format!("/{}", parts.join("/")))
}

/// A file system and the user a client acts as (the process's own when
/// `None`).
type Key = (String, Option<String>);

/// The file systems a daemon uses, one client per file system and user,
/// made when first needed.
#[derive(Default)]
pub struct FileSystems {
    /// Hadoop settings (`fs.*`, `dfs.*`, `hadoop.*`, `ipc.*`) every HDFS
    /// client is given.
    settings: Vec<(String, String)>,
    clients: Mutex<HashMap<Key, Arc<dyn FileSystem>>>,
}

impl FileSystems {
    /// File systems whose HDFS clients get `settings` over the
    /// configuration files `hdfs-native` reads itself.
    pub fn new(settings: Vec<(String, String)>) -> FileSystems {
        FileSystems {
            settings,
            clients: Mutex::default(),
        }
    }

    /// The file system `filesystem` (`file://`, `hdfs://nn:8020`) acting as
    /// `user`. The local file system always acts as this process.
    pub fn get(&self, filesystem: &str, user: Option<&str>) -> io::Result<Arc<dyn FileSystem>> {
        if filesystem == FILE_URI {
            return Ok(Arc::new(LocalFs));
        }
        if !filesystem.starts_with("hdfs://") {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("the file system {filesystem:?} is not supported"),
            ));
        }
        let key = (filesystem.to_string(), user.map(str::to_string));
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = clients.get(&key) {
            return Ok(c.clone());
        }
        let fs: Arc<dyn FileSystem> = Arc::new(HdfsFs::connect(filesystem, user, &self.settings)?);
        clients.insert(key, fs.clone());
        Ok(fs)
    }

    /// The file system `filesystem` acting as `user` with the delegation
    /// tokens among `tokens` (a container's credentials): a client of its
    /// own, not shared, when there is an HDFS token (the tokens are one
    /// application's); else [`FileSystems::get`]'s.
    pub fn get_with_tokens(
        &self,
        filesystem: &str,
        user: Option<&str>,
        tokens: &[Token],
    ) -> io::Result<Arc<dyn FileSystem>> {
        if filesystem.starts_with("hdfs://")
            && tokens.iter().any(|t| t.kind == hdfs::HDFS_DELEGATION_TOKEN)
        {
            return Ok(Arc::new(HdfsFs::connect_with_tokens(
                filesystem,
                user,
                &self.settings,
                tokens,
            )?));
        }
        self.get(filesystem, user)
    }

    /// The file system of `location`, acting as `user`.
    pub fn of(&self, location: &Location, user: Option<&str>) -> io::Result<Arc<dyn FileSystem>> {
        self.get(&location.filesystem, user)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(fs: &str, path: &str) -> Location {
        Location {
            filesystem: fs.into(),
            path: path.into(),
        }
    }

    #[test]
    fn urls_split_into_file_system_and_path() {
        let d = "hdfs://nn:8020";
        assert_eq!(
            locate("hdfs://nn:9000/a/b", d).expect("succeeds"),
            at("hdfs://nn:9000", "/a/b")
        );
        assert_eq!(
            locate("hdfs:///a", d).expect("succeeds"),
            at("hdfs://nn:8020", "/a")
        );
        assert_eq!(
            locate("/tmp/logs", d).expect("succeeds"),
            at("hdfs://nn:8020", "/tmp/logs")
        );
        assert_eq!(
            locate("/tmp/logs", "file:///").expect("succeeds"),
            at("file://", "/tmp/logs")
        );
        assert_eq!(
            locate("file:///x//y/./z", d).expect("succeeds"),
            at("file://", "/x/y/z")
        );
        assert_eq!(locate("file:/x", d).expect("succeeds"), at("file://", "/x"));
        assert_eq!(
            locate("HDFS://nn", d).expect("succeeds"),
            at("hdfs://nn", "/")
        );
        assert_eq!(
            locate("hdfs://nn:1/a/b", d).expect("succeeds").url(),
            "hdfs://nn:1/a/b"
        );
        assert_eq!(at("file://", "/a").join("b/c/").url(), "file:///a/b/c");
    }

    #[test]
    fn bad_urls_are_refused_with_a_reason() {
        let d = "file:///";
        let e = locate("viewfs://cluster/a", d).expect_err("refused");
        assert_eq!(e.kind(), io::ErrorKind::Unsupported);
        assert!(e.to_string().contains("\"viewfs\""), "{e}");
        assert_eq!(
            locate("a/b", d).expect_err("refused").kind(),
            io::ErrorKind::InvalidInput
        );
        assert_eq!(
            locate("/../etc", d).expect_err("refused").kind(),
            io::ErrorKind::InvalidInput
        );
        assert_eq!(
            locate("file://host/x", d).expect_err("refused").kind(),
            io::ErrorKind::InvalidInput
        );
        assert_eq!(
            locate("hdfs:///x", d).expect_err("refused").kind(),
            io::ErrorKind::InvalidInput
        );
    }

    #[tokio::test]
    async fn directories_are_created_with_their_permission_despite_the_umask() {
        let tmp = tempfile::tempdir().expect("succeeds");
        let root = tmp.path().to_str().expect("succeeds");
        let (a, b) = (format!("{root}/a"), format!("{root}/a/b"));
        create_dirs(&LocalFs, &[(&a, 0o1777), (&b, 0o770)])
            .await
            .expect("succeeds");
        assert_eq!(
            LocalFs.status(&a).await.expect("succeeds").permission,
            0o1777
        );
        assert_eq!(
            LocalFs.status(&b).await.expect("succeeds").permission,
            0o770
        );
        // An existing directory keeps its permission.
        LocalFs.set_permission(&b, 0o700).await.expect("succeeds");
        create_dirs(&LocalFs, &[(&b, 0o770)])
            .await
            .expect("succeeds");
        assert_eq!(
            LocalFs.status(&b).await.expect("succeeds").permission,
            0o700
        );
    }

    #[tokio::test]
    async fn public_means_readable_file_and_searchable_parents() {
        let tmp = tempfile::tempdir().expect("succeeds");
        let dir = tmp.path().join("d");
        std::fs::create_dir(&dir).expect("succeeds");
        let file = dir.join("f");
        std::fs::write(&file, b"x").expect("succeeds");
        let path = file.to_str().expect("succeeds");
        LocalFs
            .set_permission(tmp.path().to_str().expect("succeeds"), 0o755)
            .await
            .expect("succeeds");
        LocalFs
            .set_permission(dir.to_str().expect("succeeds"), 0o755)
            .await
            .expect("succeeds");
        LocalFs.set_permission(path, 0o644).await.expect("succeeds");
        let st = LocalFs.status(path).await.expect("succeeds");
        assert!(is_public(&LocalFs, path, &st).await.expect("succeeds"));
        LocalFs
            .set_permission(dir.to_str().expect("succeeds"), 0o750)
            .await
            .expect("succeeds");
        assert!(!is_public(&LocalFs, path, &st).await.expect("succeeds"));
    }
}
