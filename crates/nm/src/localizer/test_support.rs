//! What the localizer's tests share: resources as launch contexts name
//! them, and file modes.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use hadoop_protos::yarn::{
    LocalResourceProto, LocalResourceTypeProto, LocalResourceVisibilityProto, UrlProto,
};
use spindle_common::ApplicationId;

use super::resource::{mtime_ms, LocalResource};

pub(super) fn proto(
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

pub(super) fn stat(path: &Path) -> (i64, i64) {
    let m = fs::metadata(path).expect("stat");
    (i64::try_from(m.len()).expect("size"), mtime_ms(&m))
}

pub(super) fn app() -> ApplicationId {
    ApplicationId::new(1_700_000_000_000, 1)
}

/// A resource of `path` as its launch context would name it.
pub(super) fn resource(
    path: &Path,
    kind: LocalResourceTypeProto,
    vis: LocalResourceVisibilityProto,
) -> LocalResource {
    let (size, ts) = stat(path);
    let mut p = proto(path.to_str().expect("utf-8"), "file", size, ts, kind);
    p.visibility = Some(vis as i32);
    LocalResource::from_proto(&p).expect("valid")
}

pub(super) fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).expect("chmod");
}

pub(super) fn mode_of(path: &Path) -> u32 {
    fs::symlink_metadata(path).expect("stat").mode() & 0o7777
}

pub(super) const NOT_PUBLIC: &str =
    "is not publicly accessible and as such cannot be part of the public cache.";

/// A temporary directory whose own mode lets others in (so only the
/// directories a test creates decide).
pub(super) fn open_tempdir() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tempdir");
    chmod(tmp.path(), 0o755);
    tmp
}
