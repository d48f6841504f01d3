//! An `hdfs:` source, read through `spindle_fs`: checked where it is
//! before a byte is copied, as Hadoop's `FSDownload` does (modification
//! time and size; PUBLIC from the remote permissions of the file, its
//! ancestors and, for a directory, everything in it), downloaded into the
//! copy's directory, then placed as a local file is.

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use spindle_common::text::escaped;
use tracing::debug;

use super::access::not_public;
use super::copy::{disk_usage, fingerprint, place, remove_copy, restrict_modes, unique_dir, Done};
use super::resource::{check_source, LocalResource, Visibility};
use crate::cache_entry::ResourceType;
use crate::executor::RunAs;

/// The name of a remote resource's download inside its copy's directory (a
/// dot name, so it never collides with the resource's own name).
const DOWNLOAD_NAME: &str = ".download";

/// A remote resource downloaded into the directory its copy goes to.
#[derive(Debug)]
pub(super) struct Downloaded {
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
pub(super) async fn download(
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

/// Places a resource downloaded from a remote file system (already checked
/// against its source there) in its directory, as [`super::fetch::fetch`]
/// places a local one, and removes the download.
pub(super) fn place_downloaded(
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
