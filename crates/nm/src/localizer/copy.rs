//! Making a copy: a fresh directory per copy, the source copied (a
//! directory recursively, its links kept as links; never a hard link) or
//! unpacked ([`crate::unpack`]), made read-only with Hadoop's modes; what
//! the copy is right after it was made (its fingerprint), so a copy
//! changed since is never handed out again; and removing a copy.

use std::fs::{self, File};
use std::io::{self, Read, Seek};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use spindle_common::text::escaped;
use tracing::{debug, warn};

use super::access::real_path;
use super::resource::{LocalResource, Visibility};
use crate::cache_entry::{Fingerprint, ResourceType};
use crate::unpack::{self, ArchiveFormat, Dir, Kind};

#[derive(Debug, Clone)]
pub(super) struct Done {
    pub(super) path: PathBuf,
    pub(super) bytes: u64,
    /// What the copy takes on disk (an unpacked archive: all its files).
    pub(super) disk_bytes: u64,
    /// The copy as it was right after it was made.
    pub(super) fingerprint: Option<Fingerprint>,
}

pub(super) fn fingerprint(path: &Path) -> Option<Fingerprint> {
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
pub(super) enum CachedCopy {
    Intact,
    Gone,
    Changed,
}

impl Done {
    pub(super) fn check(&self) -> CachedCopy {
        match fingerprint(&self.path) {
            None => CachedCopy::Gone,
            f if f == self.fingerprint => CachedCopy::Intact,
            Some(_) => CachedCopy::Changed,
        }
    }
}

/// Creates `base` (or `base-<k>` when taken) with its parents.
pub(super) fn unique_dir(base: &Path) -> io::Result<PathBuf> {
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

pub(super) fn place(
    res: &LocalResource,
    file: File,
    meta: &fs::Metadata,
    dest: &Path,
) -> Result<(), String> {
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
pub(super) fn restrict_modes(
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

/// The bytes of the files under `path` (links not followed).
pub(super) fn disk_usage(path: &Path) -> u64 {
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
pub(super) fn remove_copy(dir: &Path) -> io::Result<()> {
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

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::MetadataExt;
    use std::sync::Arc;

    use hadoop_protos::yarn::{LocalResourceTypeProto, LocalResourceVisibilityProto};

    use crate::localizer::test_support::{
        app, chmod, mode_of, open_tempdir, proto, resource, stat,
    };
    use crate::localizer::{LocalResource, Localizer};

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
}
