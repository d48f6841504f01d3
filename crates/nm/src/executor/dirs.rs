//! A container's directories, credentials and script, made before it
//! starts.
//!
//! With the DefaultContainerExecutor everything belongs to the NodeManager's
//! user (application dirs, work dir and log dirs 0750, as before).
//!
//! With the LinuxContainerExecutor the NodeManager runs as root and the
//! container as its user; the container's private dirs are that user's, as
//! Hadoop's container-executor makes them:
//!
//! | path | owner | mode |
//! |---|---|---|
//! | `<local>/usercache/<user>` | root : user's group | 0750 |
//! | `…/appcache/<app>` (every local dir, `LOCAL_DIRS`) | root : user's group | 1770 |
//! | `…/appcache/<app>/filecache` (application cache) | root | 0755 |
//! | `…/appcache/<app>/<container>` (work dir, `PWD`) | user : user's group | 0710 |
//! | `…/<container>/tmp` | user : user's group | 0710 |
//! | `launch_container.sh`, `container_tokens` | user | 0700, 0600 |
//! | `<log>/<app>` | root : user's group | 0750 |
//! | `<log>/<app>/<container>` | user : NodeManager's group | 2750 |
//!
//! Unlike Hadoop, whose localizer runs as the user, Spindle's localizer is
//! the NodeManager itself (root), so no directory that root writes into
//! later may be the user's: the application dir is writable by the user's
//! group (Spark and MapReduce keep scratch files in `LOCAL_DIRS`) but sticky
//! and root's, so a container cannot rename or replace the application
//! cache (made before the dir becomes writable) nor another container's
//! work dir. The caches stay root's and read-only to containers (private
//! and application copies carry the container user's group, so it can read
//! them: see `Localizer::localize_as`); the user's
//! dir `usercache/<user>` lets only the user's group in. Work and log dirs
//! are made fresh (anything already at their path is removed first), filled
//! while still root's, and handed over last; files are created with
//! `O_NOFOLLOW | O_EXCL`, and directories are changed through descriptors
//! opened with `O_NOFOLLOW`, so no link a container planted is followed.

use std::fs::{self, DirBuilder, File, OpenOptions, Permissions};
use std::io::{self, Write as _};
use std::os::unix::fs::{fchown, DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use super::users::RunAs;
use crate::launch::ContainerPaths;

/// Creates the dirs of a container run as the NodeManager's user and
/// writes its credentials and script.
pub(super) fn prepare_as_nm(paths: &ContainerPaths, tokens: &[u8], script: &str) -> io::Result<()> {
    let mut builder = DirBuilder::new();
    builder.recursive(true).mode(0o750);
    for d in &paths.app_dirs {
        builder.create(d)?;
    }
    builder.create(paths.work_dir.join("tmp"))?;
    for d in &paths.log_dirs {
        builder.create(d)?;
    }
    let write = |path: &Path, data: &[u8], mode: u32| -> io::Result<()> {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(path)?;
        f.write_all(data)?;
        f.set_permissions(Permissions::from_mode(mode))
    };
    write(&paths.tokens_file(), tokens, 0o600)?;
    write(&paths.script(), script.as_bytes(), 0o700)?;
    Ok(())
}

/// Creates the dirs of a container run as `user` by a root NodeManager
/// (see the module docs) and writes its credentials and script.
pub(super) fn prepare_as_user(
    paths: &ContainerPaths,
    user: &RunAs,
    nm_gid: u32,
    tokens: &[u8],
    script: &str,
) -> io::Result<()> {
    let (uid, gid) = (user.uid, user.gid);
    for user_dir in &paths.user_dirs {
        let usercache = user_dir.parent().unwrap_or(user_dir);
        root_dir(usercache, nm_gid, 0o755)?;
        root_dir(user_dir, gid, 0o750)?;
        root_dir(&user_dir.join("appcache"), nm_gid, 0o755)?;
    }
    for app_dir in &paths.app_dirs {
        // The application cache first: once the app dir is writable by the
        // user's group, an entry the NodeManager has not made could be
        // theirs.
        make_dir(app_dir)?;
        root_dir(&app_dir.join("filecache"), nm_gid, 0o755)?;
        root_dir(app_dir, gid, 0o1770)?;
    }

    let work = fresh_dir(&paths.work_dir)?;
    let tmp = paths.work_dir.join("tmp");
    DirBuilder::new().mode(0o700).create(&tmp)?;
    hand_over(&open_dir(&tmp)?, uid, gid, 0o710)?;
    write_new(&paths.tokens_file(), tokens, uid, gid, 0o600)?;
    write_new(&paths.script(), script.as_bytes(), uid, gid, 0o700)?;
    hand_over(&work, uid, gid, 0o710)?;

    for log_dir in &paths.log_dirs {
        if let Some(app_logs) = log_dir.parent() {
            root_dir(app_logs, gid, 0o750)?;
        }
        let dir = fresh_dir(log_dir)?;
        hand_over(&dir, uid, nm_gid, 0o2750)?;
    }
    Ok(())
}

/// Opens a directory without following a symbolic link at its last
/// component.
fn open_dir(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .open(path)
}

/// Creates `path` (mode 0700) unless it exists.
fn make_dir(path: &Path) -> io::Result<()> {
    match DirBuilder::new().mode(0o700).create(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(with_path(e, path)),
    }
}

/// Makes `path` a directory (if missing) owned by root, in group `gid`,
/// with `mode`. A link, a file, or a directory someone else owns is an
/// error: the NodeManager never uses a directory a container could have
/// made.
fn root_dir(path: &Path, gid: u32, mode: u32) -> io::Result<()> {
    make_dir(path)?;
    let dir = open_dir(path).map_err(|e| with_path(e, path))?;
    let owner = dir.metadata()?.uid();
    if owner != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} belongs to uid {owner}, not to the NodeManager: refusing to use it",
                path.display()
            ),
        ));
    }
    hand_over(&dir, 0, gid, mode).map_err(|e| with_path(e, path))
}

/// Makes `path` a new, empty directory owned by root with mode 0700,
/// removing whatever was there (a directory, a file or a link: the link
/// itself), and returns it opened.
fn fresh_dir(path: &Path) -> io::Result<File> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path)?,
        Ok(_) => fs::remove_file(path)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(with_path(e, path)),
    }
    DirBuilder::new()
        .mode(0o700)
        .create(path)
        .map_err(|e| with_path(e, path))?;
    let dir = open_dir(path).map_err(|e| with_path(e, path))?;
    fchown(&dir, Some(0), Some(0))?;
    dir.set_permissions(Permissions::from_mode(0o700))?;
    Ok(dir)
}

/// Owner, group and mode of an open file or directory.
fn hand_over(f: &File, uid: u32, gid: u32, mode: u32) -> io::Result<()> {
    let meta = f.metadata()?;
    if meta.uid() != uid || meta.gid() != gid {
        fchown(f, Some(uid), Some(gid))?;
    }
    // After the owner: chown clears set-id bits.
    f.set_permissions(Permissions::from_mode(mode))
}

/// Creates a file that must not exist yet (no link followed), writes it and
/// hands it over.
fn write_new(path: &Path, data: &[u8], uid: u32, gid: u32, mode: u32) -> io::Result<()> {
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| with_path(e, path))?;
    f.write_all(data)?;
    hand_over(&f, uid, gid, mode)
}

fn with_path(e: io::Error, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use spindle_common::{ApplicationAttemptId, ApplicationId, ContainerId};
    use std::os::unix::fs::symlink;

    fn is_root() -> bool {
        nix::unistd::geteuid().is_root()
    }

    #[test]
    fn planted_links_are_removed_not_followed() {
        if !is_root() {
            eprintln!("SKIP: handing dirs over to another user needs root");
            assert!(
                std::env::var_os("CI").is_none(),
                "CI runs as root; this test must run there"
            );
            return;
        }
        let tmp = tempfile::tempdir().expect("tempdir");
        let id = ContainerId::new(
            ApplicationAttemptId::new(ApplicationId::new(1_795_326_004_599, 3), 1),
            2,
        );
        let paths = ContainerPaths::new(
            &[tmp.path().join("local")],
            &[tmp.path().join("logs")],
            "alice",
            &id,
            0,
            0,
        );
        // A victim outside the node's dirs, and links to it where the work
        // dir and the log dir will be.
        let victim = tmp.path().join("victim");
        fs::create_dir(&victim).expect("victim");
        fs::write(victim.join("launch_container.sh"), "original").expect("file");
        fs::create_dir_all(paths.work_dir.parent().expect("app dir")).expect("app dir");
        symlink(&victim, &paths.work_dir).expect("link");
        fs::create_dir_all(paths.log_dir.parent().expect("app logs")).expect("app logs");
        symlink(&victim, &paths.log_dir).expect("link");

        let user = RunAs {
            name: "nobody".into(),
            uid: 65534,
            gid: 65534,
            groups: vec![65534],
        };
        prepare_as_user(&paths, &user, 0, b"HDTS", "#!/bin/bash\n").expect("prepared");

        let meta = |p: &Path| fs::symlink_metadata(p).expect("stat");
        assert_eq!(
            fs::read_to_string(victim.join("launch_container.sh")).expect("read"),
            "original"
        );
        assert_eq!(meta(&victim).uid(), 0, "the victim was handed over");
        let work = meta(&paths.work_dir);
        assert!(work.is_dir());
        assert_eq!(
            (work.uid(), work.gid(), work.mode() & 0o7777),
            (65534, 65534, 0o710)
        );
        let script = meta(&paths.script());
        assert_eq!((script.uid(), script.mode() & 0o777), (65534, 0o700));
        assert_eq!(meta(&paths.tokens_file()).mode() & 0o777, 0o600);
        let logs = meta(&paths.log_dir);
        assert!(logs.is_dir());
        assert_eq!(
            (logs.uid(), logs.gid(), logs.mode() & 0o7777),
            (65534, 0, 0o2750)
        );
        let app = meta(&paths.app_dirs[0]);
        assert_eq!(
            (app.uid(), app.gid(), app.mode() & 0o7777),
            (0, 65534, 0o1770)
        );
        let cache = meta(&paths.app_dirs[0].join("filecache"));
        assert_eq!((cache.uid(), cache.mode() & 0o777), (0, 0o755));
        let user_dir = meta(&paths.user_dirs[0]);
        assert_eq!(
            (user_dir.uid(), user_dir.gid(), user_dir.mode() & 0o7777),
            (0, 65534, 0o750)
        );
    }
}
