//! Aggregated log retention: Hadoop's `AggregatedLogDeletionService`, run
//! by the active ResourceManager (Hadoop runs it in the JobHistoryServer,
//! which Spindle does not have).
//!
//! With `yarn.log-aggregation-enable` and `yarn.log-aggregation.retain-seconds`
//! at 0 or more, a task of each activation walks the remote root log dir
//! (as the NodeManagers write it: [`spindle_fs::remote_logs`]) soon after
//! the RM becomes active and then every
//! `yarn.log-aggregation.retain-check-interval-seconds` (a tenth of the
//! retention when 0 or less, as Hadoop; at least a second). Its application
//! directories are `<root>/<user>/bucket-*/<bucket>/<appId>` (Hadoop 3.3's
//! layout; every `bucket-` directory, as Hadoop) and
//! `<root>/<user>/<suffix>/<appId>` (the older layout, which Hadoop's
//! readers still read). For each, as Hadoop's `LogDeletionTask`, with the
//! cutoff = now − retention:
//!
//! - a directory not modified before the cutoff, or not named by an
//!   application id, is left alone;
//! - an application that has ended (FINISHED, FAILED, KILLED) or that the RM
//!   does not know has its whole directory deleted, unless one of its node
//!   files was modified at or after the cutoff;
//! - an application still running has its node files modified before the
//!   cutoff deleted, and its directory kept.
//!
//! The decisions are pure functions ([`expired_app_dirs`], [`deletions`]);
//! the driver ([`LogRetention::run`]) does the file system work through
//! [`spindle_fs::FileSystems`] (HDFS as the RM's own user) off the state's
//! owner task, asks the state which applications are unfinished through
//! one named query ([`RmState::unfinished_apps`]), and stops when its
//! activation ends (the RM stops or steps down to standby). An error on one
//! directory is logged and the walk goes on. Only directories the listing
//! reports as directories are entered, so a symbolic link (a file in
//! listings) never leads the walk out of the root; one found where a node
//! file belongs is deleted as a link, never its target.
//!
//! The cutoff is wall-clock time (file modification times are), read here,
//! outside the state.
//!
//! [`RmState::unfinished_apps`]: crate::state::RmState::unfinished_apps

use std::collections::BTreeSet;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use spindle_common::conf::{keys, Configuration};
use spindle_common::ids::ApplicationId;
use spindle_common::text::escaped;
use spindle_fs::remote_logs::{self, BUCKET_PREFIX};
use spindle_fs::{FileSystem, FileSystems, Location, Status};
use tracing::{debug, info, warn};

use crate::error::RmError;
use crate::runtime::core::CoreHandle;

/// The shortest pause between two runs (Hadoop would refuse a zero period).
const MIN_INTERVAL: Duration = Duration::from_secs(1);

/// What a run deletes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Deletion {
    /// An ended application's whole directory.
    AppDir(String),
    /// A running application's node file.
    NodeFile(String),
}

/// The path of `entry`, listed in `dir`, built from its name; `None` for a
/// name that is no single path component.
fn child_path(dir: &str, entry: &Status) -> Option<String> {
    let name = entry.name();
    if name.is_empty() || name == "." || name == ".." || name.contains('/') {
        return None;
    }
    Some(format!("{}/{name}", dir.trim_end_matches('/')))
}

/// Of the entries listed in `dir` (a bucket directory, or the user's
/// suffix directory in the older layout), the application directories
/// worth a look: directories modified before `cutoff_ms` whose name is an
/// application id, with their paths, in name order.
pub fn expired_app_dirs(
    dir: &str,
    entries: &[Status],
    cutoff_ms: i64,
) -> Vec<(ApplicationId, String)> {
    let mut out: Vec<(ApplicationId, String)> = entries
        .iter()
        .filter(|e| e.is_dir && e.modified_ms < cutoff_ms)
        .filter_map(|e| {
            let id = e.name().parse::<ApplicationId>().ok()?;
            Some((id, child_path(dir, e)?))
        })
        .collect();
    out.sort_by(|a, b| a.1.cmp(&b.1));
    out
}

/// What to delete of the application directory `app_dir` (already found
/// expired by [`expired_app_dirs`]) whose entries are `contents`: the whole
/// directory when the application has ended and none of its entries was
/// modified at or after `cutoff_ms`; for an unfinished application, its
/// entries modified before the cutoff.
pub fn deletions(
    app_dir: &str,
    contents: &[Status],
    unfinished: bool,
    cutoff_ms: i64,
) -> Vec<Deletion> {
    if unfinished {
        let mut out: Vec<Deletion> = contents
            .iter()
            .filter(|e| e.modified_ms < cutoff_ms)
            .filter_map(|e| child_path(app_dir, e).map(Deletion::NodeFile))
            .collect();
        out.sort();
        out
    } else if contents.iter().all(|e| e.modified_ms < cutoff_ms) {
        vec![Deletion::AppDir(app_dir.to_string())]
    } else {
        Vec::new()
    }
}

/// The retention settings: where, how long, how often.
#[derive(Clone)]
pub struct LogRetention {
    root: Location,
    suffix: String,
    retain_ms: i64,
    interval: Duration,
    filesystems: Arc<FileSystems>,
}

/// What one run did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RunFigures {
    pub app_dirs_deleted: usize,
    pub node_files_deleted: usize,
    /// Directories that could not be read and paths that could not be deleted.
    pub errors: usize,
}

/// Why a run stopped before its end.
#[derive(Debug)]
enum Aborted {
    /// The activation ended: the state can no longer be asked.
    Stopped,
    /// The root could not be read.
    Root(io::Error),
}

impl LogRetention {
    /// The settings, or `None` when nothing is deleted: log aggregation off
    /// or `yarn.log-aggregation.retain-seconds` below 0 (Hadoop's default
    /// -1).
    pub fn from_conf(conf: &Configuration) -> Result<Option<LogRetention>, RmError> {
        if !conf.get_bool(keys::YARN_LOG_AGGREGATION_ENABLE)? {
            return Ok(None);
        }
        let retain_s = conf.get_i64(keys::YARN_LOG_AGGREGATION_RETAIN_SECONDS)?;
        if retain_s < 0 {
            return Ok(None);
        }
        let retain_ms = retain_s.saturating_mul(1000);
        let interval_s = conf.get_i64(keys::YARN_LOG_AGGREGATION_RETAIN_CHECK_INTERVAL_SECONDS)?;
        let interval_ms = if interval_s > 0 {
            interval_s.saturating_mul(1000)
        } else {
            retain_ms / 10
        };
        let interval = Duration::from_millis(interval_ms.unsigned_abs()).max(MIN_INTERVAL);
        Ok(Some(LogRetention {
            root: remote_logs::remote_log_root(conf)?,
            suffix: remote_logs::remote_log_suffix(conf)?,
            retain_ms,
            interval,
            filesystems: Arc::new(FileSystems::new(remote_logs::client_settings(conf))),
        }))
    }

    /// The pause between runs.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// Runs now and then every interval until the activation `core` is
    /// pinned to ends.
    pub async fn run(self, core: CoreHandle) {
        info!(
            root = %escaped(&self.root.url()),
            retain_s = self.retain_ms / 1000,
            interval_s = self.interval.as_secs(),
            "aggregated log retention started"
        );
        let mut ticks = tokio::time::interval(self.interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = core.ended() => break,
                _ = ticks.tick() => {}
            }
            let cutoff_ms = spindle_common::time::wall_ms() - self.retain_ms;
            let outcome = tokio::select! {
                _ = core.ended() => break,
                outcome = self.run_once(&core, cutoff_ms) => outcome,
            };
            match outcome {
                Ok(f) if f == RunFigures::default() => {
                    debug!("aggregated log deletion: nothing to delete")
                }
                Ok(f) => info!(
                    app_dirs = f.app_dirs_deleted,
                    node_files = f.node_files_deleted,
                    errors = f.errors,
                    "aggregated log deletion finished"
                ),
                Err(Aborted::Stopped) => break,
                Err(Aborted::Root(e)) => warn!(
                    error = %escaped(&e.to_string()),
                    "error reading the remote root log dir: this deletion run is aborted"
                ),
            }
        }
        info!("aggregated log retention stopped");
    }

    /// One walk of the root with `cutoff_ms`.
    async fn run_once(&self, core: &CoreHandle, cutoff_ms: i64) -> Result<RunFigures, Aborted> {
        let fs = self
            .filesystems
            .of(&self.root, None)
            .map_err(Aborted::Root)?;
        let fs = &*fs;
        let mut figures = RunFigures::default();
        let users = fs.list(&self.root.path).await.map_err(Aborted::Root)?;
        for user_dir in dirs_in(&self.root.path, &users) {
            let Some(entries) = self.list(fs, &user_dir, &mut figures).await else {
                continue;
            };
            for (name, dir) in named_dirs_in(&user_dir, &entries) {
                if name.starts_with(BUCKET_PREFIX) {
                    let Some(buckets) = self.list(fs, &dir, &mut figures).await else {
                        continue;
                    };
                    for bucket in dirs_in(&dir, &buckets) {
                        self.app_dirs_in(fs, core, &bucket, cutoff_ms, &mut figures)
                            .await?;
                    }
                } else if name == self.suffix {
                    self.app_dirs_in(fs, core, &dir, cutoff_ms, &mut figures)
                        .await?;
                }
            }
        }
        Ok(figures)
    }

    /// The application directories listed in `dir`.
    async fn app_dirs_in(
        &self,
        fs: &dyn FileSystem,
        core: &CoreHandle,
        dir: &str,
        cutoff_ms: i64,
        figures: &mut RunFigures,
    ) -> Result<(), Aborted> {
        let Some(entries) = self.list(fs, dir, figures).await else {
            return Ok(());
        };
        let expired = expired_app_dirs(dir, &entries, cutoff_ms);
        if expired.is_empty() {
            return Ok(());
        }
        let ids: Vec<ApplicationId> = expired.iter().map(|(id, _)| *id).collect();
        let unfinished: BTreeSet<ApplicationId> = core
            .query(move |s| s.unfinished_apps(&ids))
            .await
            .map_err(|_| Aborted::Stopped)?;
        for (id, app_dir) in expired {
            let Some(contents) = self.list(fs, &app_dir, figures).await else {
                continue;
            };
            for deletion in deletions(&app_dir, &contents, unfinished.contains(&id), cutoff_ms) {
                let path = match &deletion {
                    Deletion::AppDir(p) => {
                        info!(dir = %escaped(&self.url(p)), "deleting aggregated logs");
                        p
                    }
                    Deletion::NodeFile(p) => {
                        debug!(file = %escaped(&self.url(p)), "deleting an old aggregated log file of a running application");
                        p
                    }
                };
                match fs.delete(path, true).await {
                    Ok(_) => match deletion {
                        Deletion::AppDir(_) => figures.app_dirs_deleted += 1,
                        Deletion::NodeFile(_) => figures.node_files_deleted += 1,
                    },
                    Err(e) => {
                        figures.errors += 1;
                        warn!(path = %escaped(&self.url(path)), error = %first_line(&e), "could not delete");
                    }
                }
            }
        }
        Ok(())
    }

    /// The entries of `dir`; `None` (logged) when it cannot be read.
    async fn list(
        &self,
        fs: &dyn FileSystem,
        dir: &str,
        figures: &mut RunFigures,
    ) -> Option<Vec<Status>> {
        match fs.list(dir).await {
            Ok(entries) => Some(entries),
            // Gone since its parent was listed.
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => {
                figures.errors += 1;
                warn!(dir = %escaped(&self.url(dir)), error = %first_line(&e), "could not read the contents");
                None
            }
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.root.filesystem)
    }
}

/// The first line of an error, escaped (Hadoop logs only that of an
/// access-control error's message).
fn first_line(e: &io::Error) -> String {
    let text = e.to_string();
    escaped(text.lines().next().unwrap_or_default()).to_string()
}

/// The directories listed in `dir`, with their paths, in name order.
fn dirs_in(dir: &str, entries: &[Status]) -> Vec<String> {
    named_dirs_in(dir, entries)
        .into_iter()
        .map(|(_, path)| path)
        .collect()
}

/// The directories listed in `dir`, with their names and paths, in name order.
fn named_dirs_in(dir: &str, entries: &[Status]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = entries
        .iter()
        .filter(|e| e.is_dir)
        .filter_map(|e| Some((e.name().to_string(), child_path(dir, e)?)))
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &str, is_dir: bool, modified_ms: i64) -> Status {
        Status {
            path: path.into(),
            is_dir,
            len: 0,
            modified_ms,
            permission: 0o770,
            owner: "alice".into(),
            group: "hadoop".into(),
        }
    }

    const BUCKET: &str = "/logs/alice/bucket-logs-tfile/0001";
    const CUTOFF: i64 = 1_000;

    #[test]
    fn only_old_directories_named_by_an_application_are_looked_at() {
        let entries = [
            entry(&format!("{BUCKET}/application_5_0002"), true, 999),
            entry(&format!("{BUCKET}/application_5_0001"), true, 10),
            // Modified at the cutoff: not before it.
            entry(&format!("{BUCKET}/application_5_0003"), true, CUTOFF),
            // A file, and a link (listed as a file), with an application's name.
            entry(&format!("{BUCKET}/application_5_0004"), false, 10),
            entry(&format!("{BUCKET}/notes"), true, 10),
            entry(&format!("{BUCKET}/.."), true, 10),
        ];
        let found = expired_app_dirs(BUCKET, &entries, CUTOFF);
        assert_eq!(
            found,
            vec![
                (
                    ApplicationId::new(5, 1),
                    format!("{BUCKET}/application_5_0001")
                ),
                (
                    ApplicationId::new(5, 2),
                    format!("{BUCKET}/application_5_0002")
                ),
            ]
        );
    }

    #[test]
    fn paths_are_built_from_names_below_the_listed_directory() {
        // A listing that reports a path elsewhere cannot send a deletion there.
        let entries = [entry("/elsewhere/application_5_0001", true, 10)];
        assert_eq!(
            expired_app_dirs(BUCKET, &entries, CUTOFF),
            vec![(
                ApplicationId::new(5, 1),
                format!("{BUCKET}/application_5_0001")
            )]
        );
    }

    #[test]
    fn an_ended_application_loses_its_directory_only_when_every_file_is_old() {
        let dir = format!("{BUCKET}/application_5_0001");
        let old = [
            entry(&format!("{dir}/host1_1"), false, 10),
            entry(&format!("{dir}/host2_1"), false, 999),
        ];
        assert_eq!(
            deletions(&dir, &old, false, CUTOFF),
            vec![Deletion::AppDir(dir.clone())]
        );
        // An empty directory goes too.
        assert_eq!(
            deletions(&dir, &[], false, CUTOFF),
            vec![Deletion::AppDir(dir.clone())]
        );
        let one_new = [
            entry(&format!("{dir}/host1_1"), false, 10),
            entry(&format!("{dir}/host2_1"), false, CUTOFF),
        ];
        assert_eq!(deletions(&dir, &one_new, false, CUTOFF), vec![]);
    }

    #[test]
    fn a_running_application_loses_only_its_old_node_files() {
        let dir = format!("{BUCKET}/application_5_0001");
        let contents = [
            entry(&format!("{dir}/host2_1"), false, 10),
            entry(&format!("{dir}/host1_1"), false, 5),
            entry(&format!("{dir}/host3_1"), false, 2_000),
        ];
        assert_eq!(
            deletions(&dir, &contents, true, CUTOFF),
            vec![
                Deletion::NodeFile(format!("{dir}/host1_1")),
                Deletion::NodeFile(format!("{dir}/host2_1")),
            ]
        );
        let young = [entry(&format!("{dir}/host3_1"), false, 2_000)];
        assert_eq!(deletions(&dir, &young, true, CUTOFF), vec![]);
    }

    /// The whole decision over a bucket: directories with times, the
    /// applications the state calls unfinished, the cutoff.
    #[test]
    fn a_bucket_s_plan() {
        let a = |n: i32| format!("{BUCKET}/application_5_{n:04}");
        let listing = [
            entry(&a(1), true, 10),
            entry(&a(2), true, 10),
            entry(&a(3), true, 10),
            entry(&a(4), true, 5_000),
        ];
        let contents = |n: i32| match n {
            1 => vec![entry(&format!("{}/h_1", a(1)), false, 10)],
            2 => vec![
                entry(&format!("{}/h_1", a(2)), false, 10),
                entry(&format!("{}/h_2", a(2)), false, 5_000),
            ],
            3 => vec![entry(&format!("{}/h_1", a(3)), false, 5_000)],
            _ => vec![],
        };
        // 1 ended, 2 running, 3 ended with a new file, 4 young.
        let unfinished: BTreeSet<ApplicationId> = [ApplicationId::new(5, 2)].into();
        let plan: Vec<Deletion> = expired_app_dirs(BUCKET, &listing, CUTOFF)
            .into_iter()
            .flat_map(|(id, dir)| {
                deletions(&dir, &contents(id.id), unfinished.contains(&id), CUTOFF)
            })
            .collect();
        assert_eq!(
            plan,
            vec![
                Deletion::AppDir(a(1)),
                Deletion::NodeFile(format!("{}/h_1", a(2))),
            ]
        );
    }

    fn conf(pairs: &[(&str, &str)]) -> Configuration {
        let mut c = Configuration::with_defaults();
        for (k, v) in pairs {
            c.set(k, *v);
        }
        c
    }

    #[test]
    fn settings_follow_hadoop() {
        let on = ("yarn.log-aggregation-enable", "true");
        // Off by default, and with a negative retention.
        assert!(LogRetention::from_conf(&conf(&[]))
            .expect("valid")
            .is_none());
        assert!(LogRetention::from_conf(&conf(&[on]))
            .expect("valid")
            .is_none());
        assert!(
            LogRetention::from_conf(&conf(&[("yarn.log-aggregation.retain-seconds", "600")]))
                .expect("valid")
                .is_none()
        );
        let r =
            LogRetention::from_conf(&conf(&[on, ("yarn.log-aggregation.retain-seconds", "600")]))
                .expect("valid")
                .expect("on");
        assert_eq!(r.interval(), Duration::from_secs(60));
        assert_eq!(r.root.url(), "file:///tmp/logs");
        assert_eq!(r.suffix, "logs-tfile");
        let r = LogRetention::from_conf(&conf(&[
            on,
            ("yarn.log-aggregation.retain-seconds", "600"),
            ("yarn.log-aggregation.retain-check-interval-seconds", "7"),
        ]))
        .expect("valid")
        .expect("on");
        assert_eq!(r.interval(), Duration::from_secs(7));
        // Zero retention: never a zero period.
        let r = LogRetention::from_conf(&conf(&[on, ("yarn.log-aggregation.retain-seconds", "0")]))
            .expect("valid")
            .expect("on");
        assert_eq!(r.interval(), MIN_INTERVAL);
        let bad = LogRetention::from_conf(&conf(&[
            on,
            ("yarn.log-aggregation.retain-seconds", "a week"),
        ]));
        assert!(bad.is_err());
    }
}
