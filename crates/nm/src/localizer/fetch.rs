//! A `file:` source: opened once (without blocking, so a FIFO cannot hang
//! the node), checked through that handle (a regular file or a directory;
//! its size and modification time; who may read it), and copied or
//! unpacked from it, so it cannot be swapped between the check and the
//! copy.

use std::fs::{self, File};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use spindle_common::text::escaped;
use tracing::debug;

use super::access::{not_public, readable_by, Reader};
use super::copy::{disk_usage, fingerprint, place, restrict_modes, unique_dir, Done};
use super::resource::{check_source, mtime_ms, LocalResource, Visibility};
use crate::executor::RunAs;

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

/// Checks the source and copies or unpacks it under a fresh directory
/// derived from `base` (`base`, or `base` with a suffix if it exists).
pub(super) fn fetch(
    res: &LocalResource,
    base: &Path,
    reader: Option<&RunAs>,
) -> Result<Done, String> {
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

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use hadoop_protos::yarn::{LocalResourceTypeProto, LocalResourceVisibilityProto};

    use crate::localizer::test_support::{app, resource};
    use crate::localizer::Localizer;

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
}
