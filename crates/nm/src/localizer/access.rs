//! Who may read a source where it is: PUBLIC resources only when everyone
//! may (Hadoop's `FSDownload.isPublic`), PRIVATE and APPLICATION ones,
//! for a container run as its own user, only when that user may. A source
//! is judged at its real location (links resolved), the file (a directory
//! with everything in it) readable and every directory above it
//! searchable.

use std::fs::{self, File};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::resource::LocalResource;
use crate::executor::RunAs;

/// Where the opened `file` really is (all links resolved).
pub(super) fn real_path(file: &File, fallback: &Path) -> io::Result<PathBuf> {
    fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
        .or_else(|_| fs::canonicalize(fallback))
}

/// Who must be able to read a resource where it is.
pub(super) enum Reader<'a> {
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
pub(super) fn readable_by(
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

/// Hadoop's refusal of a PUBLIC resource others cannot read.
pub(super) fn not_public(res: &LocalResource) -> String {
    format!(
        "Resource {} is not publicly accessible and as such cannot be part of the public cache.",
        res.display()
    )
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::MetadataExt;
    use std::sync::Arc;

    use hadoop_protos::yarn::{LocalResourceTypeProto, LocalResourceVisibilityProto};

    use crate::executor::RunAs;
    use crate::localizer::test_support::{app, chmod, mode_of, open_tempdir, resource, NOT_PUBLIC};
    use crate::localizer::Localizer;

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
}
