//! The local file system (`file:`), acting as this process.

use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use spindle_common::time::epoch_ms;

use crate::{FileSystem, Status, FILE_URI};

/// The local file system. Blocking calls run on tokio's blocking pool.
#[derive(Debug, Default, Clone, Copy)]
pub struct LocalFs;

fn named(path: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{FILE_URI}{path}: {e}"))
}

fn status_of(path: &str, meta: &std::fs::Metadata) -> Status {
    let modified_ms = meta.modified().map_or(0, epoch_ms);
    let owner = nix::unistd::User::from_uid(meta.uid().into())
        .ok()
        .flatten()
        .map_or_else(|| meta.uid().to_string(), |u| u.name);
    let group = nix::unistd::Group::from_gid(meta.gid().into())
        .ok()
        .flatten()
        .map_or_else(|| meta.gid().to_string(), |g| g.name);
    Status {
        path: path.to_string(),
        is_dir: meta.is_dir(),
        len: if meta.is_dir() { 0 } else { meta.len() },
        modified_ms,
        permission: (meta.mode() & 0o7777) as u16,
        owner,
        group,
    }
}

/// Runs `f` on the blocking pool.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| io::Error::other(format!("a file system task failed: {e}")))?
}

impl FileSystem for LocalFs {
    fn uri(&self) -> &str {
        FILE_URI
    }

    fn status<'a>(&'a self, path: &'a str) -> BoxFuture<'a, io::Result<Status>> {
        let p = path.to_string();
        blocking(move || {
            std::fs::symlink_metadata(&p)
                .map(|m| status_of(&p, &m))
                .map_err(|e| named(&p, e))
        })
        .boxed()
    }

    fn list<'a>(&'a self, dir: &'a str) -> BoxFuture<'a, io::Result<Vec<Status>>> {
        let d = dir.to_string();
        blocking(move || {
            let mut out = Vec::new();
            for entry in std::fs::read_dir(&d).map_err(|e| named(&d, e))? {
                let entry = entry.map_err(|e| named(&d, e))?;
                let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                    continue;
                };
                let path = format!("{}/{name}", d.trim_end_matches('/'));
                match entry.metadata() {
                    Ok(m) => out.push(status_of(&path, &m)),
                    // Deleted while listing.
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(named(&path, e)),
                }
            }
            Ok(out)
        })
        .boxed()
    }

    fn mkdirs<'a>(&'a self, path: &'a str, permission: u16) -> BoxFuture<'a, io::Result<()>> {
        let p = path.to_string();
        blocking(move || {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(u32::from(permission))
                .create(&p)
                .map_err(|e| named(&p, e))
        })
        .boxed()
    }

    fn set_permission<'a>(
        &'a self,
        path: &'a str,
        permission: u16,
    ) -> BoxFuture<'a, io::Result<()>> {
        let p = path.to_string();
        blocking(move || {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(u32::from(permission)))
                .map_err(|e| named(&p, e))
        })
        .boxed()
    }

    fn rename<'a>(&'a self, from: &'a str, to: &'a str) -> BoxFuture<'a, io::Result<()>> {
        let (f, t) = (from.to_string(), to.to_string());
        blocking(move || std::fs::rename(&f, &t).map_err(|e| named(&f, e))).boxed()
    }

    fn delete<'a>(&'a self, path: &'a str, recursive: bool) -> BoxFuture<'a, io::Result<bool>> {
        let p = path.to_string();
        blocking(move || {
            let meta = match std::fs::symlink_metadata(&p) {
                Ok(m) => m,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
                Err(e) => return Err(named(&p, e)),
            };
            let r = if meta.is_dir() && recursive {
                std::fs::remove_dir_all(&p)
            } else if meta.is_dir() {
                std::fs::remove_dir(&p)
            } else {
                std::fs::remove_file(&p)
            };
            match r {
                Ok(()) => Ok(true),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
                Err(e) => Err(named(&p, e)),
            }
        })
        .boxed()
    }

    fn download<'a>(
        &'a self,
        path: &'a str,
        len: u64,
        dest: &'a Path,
    ) -> BoxFuture<'a, io::Result<()>> {
        let (p, d) = (path.to_string(), dest.to_path_buf());
        blocking(move || {
            let src = std::fs::File::open(&p).map_err(|e| named(&p, e))?;
            let mut out = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&d)
                .map_err(|e| io::Error::new(e.kind(), format!("creating {}: {e}", d.display())))?;
            let copied = io::copy(&mut io::Read::take(src, len), &mut out)?;
            crate::copied_all(FILE_URI, &p, copied, len)
        })
        .boxed()
    }

    fn upload<'a>(
        &'a self,
        src: &'a Path,
        path: &'a str,
        permission: u16,
    ) -> BoxFuture<'a, io::Result<u64>> {
        let (s, p) = (src.to_path_buf(), path.to_string());
        blocking(move || {
            let mut input = std::fs::File::open(&s)
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", s.display())))?;
            let mut out = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(u32::from(permission))
                .open(&p)
                .map_err(|e| named(&p, e))?;
            let n = io::copy(&mut input, &mut out).map_err(|e| named(&p, e))?;
            out.sync_all().map_err(|e| named(&p, e))?;
            Ok(n)
        })
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_operations_do_what_they_say() {
        let tmp = tempfile::tempdir().expect("succeeds");
        let root = tmp.path().to_str().expect("succeeds").to_string();
        let fs = LocalFs;
        let dir = format!("{root}/x/y");
        fs.mkdirs(&dir, 0o750).await.expect("succeeds");
        assert!(fs.status(&dir).await.expect("succeeds").is_dir);
        let src = tmp.path().join("src");
        std::fs::write(&src, b"hello").expect("succeeds");
        let file = format!("{dir}/f.tmp");
        assert_eq!(fs.upload(&src, &file, 0o640).await.expect("succeeds"), 5);
        fs.rename(&file, &format!("{dir}/f"))
            .await
            .expect("succeeds");
        let listed = fs.list(&dir).await.expect("succeeds");
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].name(), "f");
        assert_eq!(listed[0].len, 5);
        let dest = tmp.path().join("dest");
        fs.download(&format!("{dir}/f"), 5, &dest)
            .await
            .expect("succeeds");
        assert_eq!(std::fs::read(&dest).expect("succeeds"), b"hello");
        let short = fs
            .download(&format!("{dir}/f"), 9, &tmp.path().join("d2"))
            .await
            .expect_err("refused");
        assert_eq!(short.kind(), io::ErrorKind::UnexpectedEof);
        assert!(!fs
            .delete(&format!("{root}/x"), false)
            .await
            .is_ok_and(|d| d));
        assert!(fs
            .delete(&format!("{root}/x"), true)
            .await
            .expect("succeeds"));
        assert!(!fs
            .delete(&format!("{root}/x"), true)
            .await
            .expect("succeeds"));
        let e = fs.status(&dir).await.expect_err("refused");
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(e.to_string().contains(&dir), "{e}");
    }
}
