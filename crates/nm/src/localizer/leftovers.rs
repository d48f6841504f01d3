//! What a previous run left in the local and log dirs, for a start without
//! recovery (Hadoop's `cleanUpLocalDirs` and `cleanupLogDirs`): moved aside
//! at once and deleted in the background.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use spindle_common::text::escaped;
use tracing::{info, warn};

use super::copy::remove_copy;

/// The directories of a local dir that a node started without recovery
/// does not take over from its predecessor (Hadoop's `cleanUpLocalDirs`):
/// the caches and the node's private dir.
pub const CLEANED_AT_START: [&str; 3] = ["usercache", "filecache", crate::executor::NM_PRIVATE];

/// What marks a directory moved aside for deletion: `<name>_DEL_<ms>`.
const MOVED_ASIDE: &str = "_DEL_";

/// Hadoop's start-up cleanup of the local dirs (recovery off): renames
/// each local dir's [`CLEANED_AT_START`] dirs to `<name>_DEL_<now_ms>` at
/// once, so the node starts from empty caches however big the old ones
/// are, and answers them together with any `<name>_DEL_…` an earlier start
/// left behind ([`moved_aside_leftovers`]), for [`delete_moved_aside`] to
/// remove in the background.
/// Call it after the executor reaped the previous run's containers (their
/// pid files are in `nmPrivate`). A dir that cannot be renamed is logged
/// and left.
pub fn move_aside_local_dirs(local_dirs: &[PathBuf], now_ms: u128) -> Vec<PathBuf> {
    for root in local_dirs {
        for name in CLEANED_AT_START {
            move_aside(root, name, now_ms);
        }
    }
    moved_aside_leftovers(local_dirs)
}

/// Renames `root/name` to `root/<name>_DEL_<now_ms>` (a free variant of it).
fn move_aside(root: &Path, name: &str, now_ms: u128) {
    let from = root.join(name);
    if fs::symlink_metadata(&from).is_err() {
        return;
    }
    let base = format!("{name}{MOVED_ASIDE}{now_ms}");
    let mut to = root.join(&base);
    let mut k = 0;
    while fs::symlink_metadata(&to).is_ok() && k < 1000 {
        k += 1;
        to = root.join(format!("{base}-{k}"));
    }
    match fs::rename(&from, &to) {
        Ok(()) => info!(
            dir = %escaped(&from.to_string_lossy()),
            moved_to = %escaped(&to.to_string_lossy()),
            "recovery is off: moved the previous run's directory aside; it is deleted in \
             the background"
        ),
        Err(e) => warn!(
            dir = %escaped(&from.to_string_lossy()),
            error = %e,
            "cannot move the previous run's directory aside"
        ),
    }
}

/// True for `application_<digits>_<digits>`, an application's log dir.
fn is_app_log_dir(name: &str) -> bool {
    let mut parts = name.split('_');
    parts.next() == Some("application")
        && parts.clone().count() == 2
        && parts.all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// Hadoop's `cleanupLogDirs` for a start without recovery: every
/// application's directory in each log dir is moved to
/// `<app>_DEL_<now_ms>`; answers every moved-aside application log dir
/// (this run's and leftovers), for [`delete_moved_aside`].
pub fn move_aside_app_logs(log_dirs: &[PathBuf], now_ms: u128) -> Vec<PathBuf> {
    for dir in dirs_named(log_dirs, is_app_log_dir) {
        if let (Some(root), Some(app)) = (dir.parent(), dir.file_name()) {
            move_aside(root, &app.to_string_lossy(), now_ms);
        }
    }
    moved_aside_app_logs(log_dirs)
}

/// Application log dirs a previous start moved aside and did not finish
/// deleting.
pub fn moved_aside_app_logs(log_dirs: &[PathBuf]) -> Vec<PathBuf> {
    dirs_named(log_dirs, |name| {
        name.split_once(MOVED_ASIDE)
            .is_some_and(|(app, _)| is_app_log_dir(app))
    })
}

/// The `<name>_DEL_…` directories in the local dirs: moved aside by this
/// start or left by an earlier one that stopped before deleting them.
pub fn moved_aside_leftovers(local_dirs: &[PathBuf]) -> Vec<PathBuf> {
    dirs_named(local_dirs, |name| {
        CLEANED_AT_START
            .iter()
            .any(|d| name.starts_with(&format!("{d}{MOVED_ASIDE}")))
    })
}

/// The directories directly in any of `roots` whose names `wanted` accepts,
/// sorted; unreadable roots are skipped.
fn dirs_named(roots: &[PathBuf], wanted: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for root in roots {
        let Ok(entries) = fs::read_dir(root) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name();
            if wanted(&name.to_string_lossy()) && entry.file_type().is_ok_and(|t| t.is_dir()) {
                found.push(entry.path());
            }
        }
    }
    found.sort();
    found
}

/// The start's step for what the previous run left in the local and log
/// dirs, once the executor reaped its containers by their pid files.
/// Without recovery its caches and private dir are not taken over
/// (Hadoop's `cleanUpLocalDirs`), nor its application log dirs (Hadoop's
/// `cleanupLogDirs`): they are moved aside now and deleted on a background
/// thread, so that a big cache does not slow the start. With recovery only
/// what an earlier start moved aside and did not delete goes.
pub async fn clean_up_previous_run(
    local_dirs: Vec<PathBuf>,
    log_dirs: Vec<PathBuf>,
    recovery_enabled: bool,
) {
    let doomed = tokio::task::spawn_blocking(move || {
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        if recovery_enabled {
            let mut doomed = moved_aside_leftovers(&local_dirs);
            doomed.extend(moved_aside_app_logs(&log_dirs));
            doomed
        } else {
            let mut doomed = move_aside_local_dirs(&local_dirs, now_ms);
            doomed.extend(move_aside_app_logs(&log_dirs, now_ms));
            doomed
        }
    })
    .await
    .unwrap_or_default();
    if !doomed.is_empty() {
        let spawned = std::thread::Builder::new()
            .name("nm-local-dir-cleanup".into())
            .spawn(move || delete_moved_aside(doomed));
        if let Err(e) = spawned {
            warn!(error = %e, "cannot start deleting the previous run's local directories");
        }
    }
}

/// Deletes the directories [`move_aside_local_dirs`] answered, read-only
/// ones (localized copies) included; failures are logged.
pub fn delete_moved_aside(dirs: Vec<PathBuf>) {
    for dir in dirs {
        let started = std::time::Instant::now();
        let result = fs::remove_dir_all(&dir).or_else(|_| remove_copy(&dir));
        match result {
            Ok(()) => info!(
                dir = %escaped(&dir.to_string_lossy()),
                elapsed_ms = started.elapsed().as_millis() as u64,
                "deleted a directory a previous run left"
            ),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => warn!(
                dir = %escaped(&dir.to_string_lossy()),
                error = %e,
                "cannot delete a directory a previous run left"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;
    use crate::localizer::test_support::chmod;

    /// Without recovery the node starts from empty caches: the old ones are
    /// moved aside at once (read-only copies included) and deleted, with
    /// what an earlier start left moved aside.
    #[test]
    fn a_start_without_recovery_moves_the_old_caches_aside_and_deletes_them() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().join("local");
        let copy = root.join("filecache/10/x.jar");
        fs::create_dir_all(&copy).expect("mkdir");
        fs::write(copy.join("a"), b"a").expect("write");
        chmod(&copy.join("a"), 0o555);
        chmod(&copy, 0o555);
        fs::create_dir_all(root.join("usercache/alice/appcache/app_1")).expect("mkdir");
        fs::create_dir_all(root.join("nmPrivate/app_1/c_1")).expect("mkdir");
        fs::create_dir_all(root.join("usercache_DEL_5/bob")).expect("mkdir");
        fs::create_dir_all(root.join("other")).expect("mkdir");

        let doomed = move_aside_local_dirs(std::slice::from_ref(&root), 77);
        let names: Vec<String> = doomed
            .iter()
            .filter_map(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "filecache_DEL_77",
                "nmPrivate_DEL_77",
                "usercache_DEL_5",
                "usercache_DEL_77"
            ]
        );
        for gone in ["filecache", "usercache", "nmPrivate"] {
            assert!(!root.join(gone).exists(), "{gone} is still there");
        }
        // The same instant again (a start within the same ms): another name.
        fs::create_dir_all(root.join("filecache")).expect("mkdir");
        let again = move_aside_local_dirs(std::slice::from_ref(&root), 77);
        assert!(
            again.contains(&root.join("filecache_DEL_77-1")),
            "{again:?}"
        );

        delete_moved_aside(again);
        let left: Vec<String> = fs::read_dir(&root)
            .expect("list")
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, ["other"]);
        assert!(moved_aside_leftovers(std::slice::from_ref(&root)).is_empty());
    }

    /// Hadoop's cleanupLogDirs: the previous run's application log dirs are
    /// moved aside (nothing else in a log dir) and deleted, with what an
    /// earlier start left moved aside.
    #[test]
    fn a_start_without_recovery_moves_the_old_application_logs_aside() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let logs = tmp.path().join("logs");
        let c = logs.join("application_1700000000000_0001/container_1/stdout");
        fs::create_dir_all(c.parent().expect("parent")).expect("mkdir");
        fs::write(&c, b"old").expect("write");
        fs::create_dir_all(logs.join("application_1700000000000_0002_DEL_5")).expect("mkdir");
        for keep in [
            "application_x_1",
            "application_1_2_3",
            "notes",
            "application_1",
        ] {
            fs::create_dir_all(logs.join(keep)).expect("mkdir");
        }
        let doomed = move_aside_app_logs(std::slice::from_ref(&logs), 77);
        let names: Vec<String> = doomed
            .iter()
            .filter_map(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "application_1700000000000_0001_DEL_77",
                "application_1700000000000_0002_DEL_5"
            ]
        );
        delete_moved_aside(doomed);
        let mut left: Vec<String> = fs::read_dir(&logs)
            .expect("list")
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                "application_1",
                "application_1_2_3",
                "application_x_1",
                "notes"
            ]
        );
        assert!(moved_aside_app_logs(std::slice::from_ref(&logs)).is_empty());
    }
}
