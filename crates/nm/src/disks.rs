//! Health of the NodeManager's local and log directories.
//!
//! A directory is good when it exists (or can be created), is a readable
//! directory, its file system is not fuller than the configured limits, and a
//! probe file can be created in it and removed again. The node is healthy as
//! long as, for local dirs and for log dirs separately, the fraction of good
//! directories is at least `yarn.nodemanager.disk-health-checker.min-healthy-disks`.
//!
//! The checks and the report text follow Hadoop's `DirectoryCollection` and
//! `LocalDirsHandlerService`, so an operator sees the same health report in
//! `yarn node -status` as with a Hadoop NodeManager. Like Hadoop, the limits
//! have two watermarks: a good directory turns bad above the high
//! utilization (or below the low free-space limit) and a bad one turns good
//! again only below the low utilization (and above the high free-space limit).
//!
//! [`DiskHealthChecker`] is synchronous and takes the file-system usage from
//! a [`SpaceSource`], so tests can drive it with fake numbers; the daemon
//! runs it on a blocking thread every `interval`.

use std::fmt::Write as _;
use std::fs;
use std::io::{self, Write as _};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use spindle_common::time::wall_ms;
use tokio::sync::watch;
use tracing::{error, info, warn};

use crate::error::NmError;

/// Size of the file system holding a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskUsage {
    /// Size of the file system (`f_blocks × f_frsize`).
    pub total_bytes: u64,
    /// Space an unprivileged process may still use (`f_bavail × f_frsize`).
    pub usable_bytes: u64,
}

/// Where the checker learns how full a directory's file system is.
pub trait SpaceSource: Send + Sync + 'static {
    fn usage(&self, dir: &Path) -> io::Result<DiskUsage>;
}

/// The real file systems, through `statvfs(3)`.
#[derive(Debug, Clone, Copy, Default)]
pub struct StatvfsSpace;

impl SpaceSource for StatvfsSpace {
    // The statvfs field types are narrower than u64 on some targets.
    #[allow(clippy::useless_conversion)]
    fn usage(&self, dir: &Path) -> io::Result<DiskUsage> {
        let st = nix::sys::statvfs::statvfs(dir).map_err(io::Error::from)?;
        let fragment = u64::from(st.fragment_size());
        Ok(DiskUsage {
            total_bytes: u64::from(st.blocks()).saturating_mul(fragment),
            usable_bytes: u64::from(st.blocks_available()).saturating_mul(fragment),
        })
    }
}

/// Settings of the disk health checker (the
/// `yarn.nodemanager.disk-health-checker.*` keys).
#[derive(Debug, Clone, PartialEq)]
pub struct DiskHealthConfig {
    /// `enable`: when false no directory is ever marked bad and the report is empty.
    pub enabled: bool,
    /// `interval-ms`.
    pub interval: Duration,
    /// `min-healthy-disks`: fraction of good dirs (per kind) below which the node is unhealthy.
    pub min_healthy_fraction: f32,
    /// `disk-utilization-threshold.enabled`.
    pub utilization_check_enabled: bool,
    /// `max-disk-utilization-per-disk-percentage`: a good dir turns bad above this.
    pub max_utilization_percent: f32,
    /// `disk-utilization-watermark-low-per-disk-percentage`: a bad dir turns good below this.
    pub low_utilization_percent: f32,
    /// `disk-free-space-threshold.enabled`.
    pub free_space_check_enabled: bool,
    /// `min-free-space-per-disk-mb`: a good dir turns bad when less is free.
    pub min_free_space_mb: u64,
    /// `min-free-space-per-disk-watermark-high-mb`: a bad dir needs this much free to turn good.
    pub min_free_space_high_mb: u64,
}

impl Default for DiskHealthConfig {
    /// Hadoop's defaults.
    fn default() -> Self {
        DiskHealthConfig {
            enabled: true,
            interval: Duration::from_millis(120_000),
            min_healthy_fraction: 0.25,
            utilization_check_enabled: true,
            max_utilization_percent: 90.0,
            low_utilization_percent: 90.0,
            free_space_check_enabled: true,
            min_free_space_mb: 0,
            min_free_space_high_mb: 0,
        }
    }
}

impl DiskHealthConfig {
    /// Brings the watermarks into a consistent order, as Hadoop does: the
    /// high utilization is clamped to 0..=100, the low one to 0..=high, and a
    /// high free-space mark below the low one is raised to it.
    pub fn normalized(mut self) -> Self {
        let high = if self.max_utilization_percent.is_nan() {
            100.0
        } else {
            self.max_utilization_percent.clamp(0.0, 100.0)
        };
        let low = if self.low_utilization_percent.is_nan() {
            high
        } else {
            self.low_utilization_percent.clamp(0.0, high)
        };
        self.max_utilization_percent = high;
        self.low_utilization_percent = low;
        self.min_free_space_high_mb = self.min_free_space_high_mb.max(self.min_free_space_mb);
        self
    }
}

/// The outcome of the last check of one directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DirState {
    Good,
    /// The file system is over a space limit (Hadoop's DISK_FULL).
    Full(String),
    /// Missing and not creatable, not a directory, unreadable or unwritable.
    Failed(String),
}

impl DirState {
    pub fn is_good(&self) -> bool {
        matches!(self, DirState::Good)
    }
}

/// One configured directory and its state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirStatus {
    pub path: PathBuf,
    pub state: DirState,
}

/// The health the NodeManager reports to the ResourceManager.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeHealth {
    pub healthy: bool,
    /// Empty when everything is fine.
    pub report: String,
    /// When the last check finished, in ms since the epoch.
    pub last_report_time_ms: i64,
}

/// Checks the local dirs and log dirs and keeps their state.
pub struct DiskHealthChecker<S: SpaceSource = StatvfsSpace> {
    config: DiskHealthConfig,
    local: Vec<DirStatus>,
    log: Vec<DirStatus>,
    space: S,
    last_check_ms: i64,
}

const LOCAL_DIRS: &str = "local-dirs";
const LOG_DIRS: &str = "log-dirs";
const CAPACITY_EXCEEDED: &str =
    "usable space is below configured utilization percentage/no more usable space";

impl<S: SpaceSource> DiskHealthChecker<S> {
    /// A checker for `local_dirs` and `log_dirs`; every dir starts out good
    /// until the first [`check`](Self::check).
    pub fn new(
        config: DiskHealthConfig,
        local_dirs: Vec<PathBuf>,
        log_dirs: Vec<PathBuf>,
        space: S,
        now_ms: i64,
    ) -> Self {
        let good = |dirs: Vec<PathBuf>| {
            dirs.into_iter()
                .map(|path| DirStatus {
                    path,
                    state: DirState::Good,
                })
                .collect()
        };
        DiskHealthChecker {
            config: config.normalized(),
            local: good(local_dirs),
            log: good(log_dirs),
            space,
            last_check_ms: now_ms,
        }
    }

    pub fn config(&self) -> &DiskHealthConfig {
        &self.config
    }

    /// Checks every directory now, logs directories that turned bad or
    /// good, and remembers `now_ms` as the time of the report.
    pub fn check(&mut self, now_ms: i64) {
        if !self.config.enabled {
            self.last_check_ms = now_ms;
            return;
        }
        let mut turned_bad = false;
        let mut turned_good = false;
        for dirs in [&mut self.local, &mut self.log] {
            for dir in dirs.iter_mut() {
                let was_good = dir.state.is_good();
                let state = check_dir(&dir.path, was_good, &self.config, &self.space);
                match (&state, was_good) {
                    (DirState::Full(msg) | DirState::Failed(msg), true) => {
                        warn!(
                            dir = %dir.path.display(),
                            "directory error, {msg}, removing it from the list of valid directories"
                        );
                        turned_bad = true;
                    }
                    (DirState::Good, false) => {
                        info!(
                            dir = %dir.path.display(),
                            "directory passed the disk check, adding it to the list of valid directories"
                        );
                        turned_good = true;
                    }
                    _ => {}
                }
                dir.state = state;
            }
        }
        self.last_check_ms = now_ms;
        if turned_bad {
            info!(report = %self.health_report(), "disk(s) failed");
        }
        if turned_good {
            info!(report = %self.good_dirs_report(), "disk(s) turned good");
        }
        if (turned_bad || turned_good) && !self.is_healthy() {
            error!(report = %self.health_report(), "too many disks failed; the node is unhealthy");
        }
    }

    /// All local dirs with their state, in configuration order.
    pub fn local_dirs(&self) -> &[DirStatus] {
        &self.local
    }

    /// All log dirs with their state, in configuration order.
    pub fn log_dirs(&self) -> &[DirStatus] {
        &self.log
    }

    /// Local dirs that passed the last check.
    pub fn good_local_dirs(&self) -> Vec<PathBuf> {
        good_paths(&self.local)
    }

    /// Log dirs that passed the last check.
    pub fn good_log_dirs(&self) -> Vec<PathBuf> {
        good_paths(&self.log)
    }

    /// False when too few local dirs or too few log dirs are good.
    pub fn is_healthy(&self) -> bool {
        if !self.config.enabled {
            return true;
        }
        [&self.local, &self.log].into_iter().all(|dirs| {
            if dirs.is_empty() {
                return true;
            }
            let good = dirs.iter().filter(|d| d.state.is_good()).count();
            good as f32 / dirs.len() as f32 >= self.config.min_healthy_fraction
        })
    }

    /// Hadoop's report of bad directories; empty when all are good.
    pub fn health_report(&self) -> String {
        if !self.config.enabled {
            return String::new();
        }
        let mut report = String::new();
        for (dirs, label) in [(&self.local, LOCAL_DIRS), (&self.log, LOG_DIRS)] {
            let total = dirs.len();
            let failed: Vec<_> = dirs
                .iter()
                .filter(|d| matches!(d.state, DirState::Failed(_)))
                .collect();
            let full: Vec<_> = dirs
                .iter()
                .filter(|d| matches!(d.state, DirState::Full(_)))
                .collect();
            if !failed.is_empty() {
                let _ = write!(
                    report,
                    "{}/{total} {label} have errors: {}",
                    failed.len(),
                    dir_list(&failed)
                );
            }
            if !full.is_empty() {
                let _ = write!(
                    report,
                    "{}/{total} {label} {CAPACITY_EXCEEDED}{}",
                    full.len(),
                    dir_list(&full)
                );
                if label == LOCAL_DIRS {
                    report.push_str("; ");
                }
            }
        }
        report
    }

    /// The health as reported to the ResourceManager.
    pub fn node_health(&self) -> NodeHealth {
        NodeHealth {
            healthy: self.is_healthy(),
            report: self.health_report(),
            last_report_time_ms: self.last_check_ms,
        }
    }

    /// When the last check ran, in ms since the epoch.
    pub fn last_check_time_ms(&self) -> i64 {
        self.last_check_ms
    }

    fn good_dirs_report(&self) -> String {
        let part = |dirs: &[DirStatus], label: &str| {
            let good = good_paths(dirs);
            let names: Vec<String> = good.iter().map(|p| p.display().to_string()).collect();
            format!(
                "{}/{} {label} are good: {}",
                good.len(),
                dirs.len(),
                names.join(",")
            )
        };
        format!(
            "{}; {}",
            part(&self.local, LOCAL_DIRS),
            part(&self.log, LOG_DIRS)
        )
    }
}

fn good_paths(dirs: &[DirStatus]) -> Vec<PathBuf> {
    dirs.iter()
        .filter(|d| d.state.is_good())
        .map(|d| d.path.clone())
        .collect()
}

/// " [ /a : reason , /b : reason ] ", the shape of Hadoop's list.
fn dir_list(dirs: &[&DirStatus]) -> String {
    let items: Vec<String> = dirs
        .iter()
        .map(|d| {
            let msg = match &d.state {
                DirState::Full(m) | DirState::Failed(m) => m.as_str(),
                DirState::Good => "Unknown cause for disk error",
            };
            format!("{} : {msg}", d.path.display())
        })
        .collect();
    format!(" [ {} ] ", items.join(" , "))
}

/// Creates `dir` (and missing parents) with mode 0755 when nothing exists
/// at that path yet. Something that exists but is no directory is left for
/// [`check_dir`] to report.
pub fn create_dir(dir: &Path) -> io::Result<()> {
    if dir.exists() {
        return Ok(());
    }
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(dir)
}

/// The start's first step: creates the node's missing local and log dirs.
/// One that cannot be created is logged and left: the health check marks
/// it bad and reports it to the ResourceManager.
pub fn create_node_dirs(local_dirs: &[PathBuf], log_dirs: &[PathBuf]) {
    for dir in local_dirs.iter().chain(log_dirs) {
        if let Err(e) = create_dir(dir) {
            warn!(dir = %dir.display(), error = %e, "cannot create a NodeManager directory");
        }
    }
}

/// Checks one directory. `was_good` picks the watermark: a good dir is held
/// to the high utilization / low free-space limits, a bad one to the others.
pub fn check_dir<S: SpaceSource + ?Sized>(
    dir: &Path,
    was_good: bool,
    config: &DiskHealthConfig,
    space: &S,
) -> DirState {
    let shown = dir.display();
    if let Err(e) = create_dir(dir) {
        return DirState::Failed(format!("Cannot create directory: {shown}: {e}"));
    }
    match fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return DirState::Failed(format!("Not a directory: {shown}")),
        Err(e) => return DirState::Failed(format!("Cannot access directory: {shown}: {e}")),
    }
    if let Err(e) = fs::read_dir(dir) {
        return DirState::Failed(format!("Directory is not readable: {shown}: {e}"));
    }
    if config.utilization_check_enabled || config.free_space_check_enabled {
        let usage = match space.usage(dir) {
            Ok(u) => u,
            Err(e) => {
                return DirState::Failed(format!(
                    "Cannot read the file system usage of {shown}: {e}"
                ))
            }
        };
        if config.utilization_check_enabled {
            let cutoff = if was_good {
                config.max_utilization_percent
            } else {
                config.low_utilization_percent
            };
            if let Some(used) = used_percent(usage) {
                if used > cutoff || used >= 100.0 {
                    return DirState::Full(format!(
                        "used space above threshold of {}%",
                        java_float(cutoff)
                    ));
                }
            }
        }
        if config.free_space_check_enabled {
            let cutoff_mb = if was_good {
                config.min_free_space_mb
            } else {
                config.min_free_space_high_mb
            };
            if usage.usable_bytes / (1024 * 1024) < cutoff_mb {
                return DirState::Full(format!("free space below limit of {cutoff_mb}MB"));
            }
        }
    }
    if let Err(e) = probe_write(dir) {
        return DirState::Failed(format!("Directory is not writable: {shown}: {e}"));
    }
    DirState::Good
}

/// Percentage of the file system in use; `None` for a file system that
/// reports no size (Hadoop's arithmetic yields NaN there and never flags it).
fn used_percent(usage: DiskUsage) -> Option<f32> {
    if usage.total_bytes == 0 {
        return None;
    }
    let free = 100.0 * (usage.usable_bytes as f64 / usage.total_bytes as f64);
    Some((100.0 - free) as f32)
}

/// A float as Java prints it for ordinary magnitudes: "90.0", "98.5".
fn java_float(v: f32) -> String {
    format!("{v:?}")
}

/// Creates a uniquely named file in `dir`, writes to it and removes it.
fn probe_write(dir: &Path) -> io::Result<()> {
    let probe = dir.join(format!(
        ".spindle-disk-probe-{}",
        uuid::Uuid::new_v4().simple()
    ));
    let result = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .and_then(|mut f| f.write_all(b"spindle disk probe"));
    let removed = fs::remove_file(&probe);
    result?;
    match removed {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Runs `checker` every `interval` on a blocking thread and publishes the
/// health after each run, until `stop` turns true or every receiver is gone.
pub(crate) async fn monitor<S: SpaceSource>(
    checker: Arc<Mutex<DiskHealthChecker<S>>>,
    health: watch::Sender<NodeHealth>,
    mut stop: watch::Receiver<bool>,
    interval: Duration,
) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        match run_check(checker.clone()).await {
            Some(h) => {
                if health.send(h).is_err() {
                    return;
                }
            }
            None => warn!("the disk health check did not complete; keeping the previous health"),
        }
    }
}

/// The checker of the node's dirs after its first check, made at start
/// before the node serves or registers, and that first health.
pub(crate) async fn first_check<S: SpaceSource>(
    config: &DiskHealthConfig,
    local_dirs: &[PathBuf],
    log_dirs: &[PathBuf],
    space: S,
) -> Result<(Arc<Mutex<DiskHealthChecker<S>>>, NodeHealth), NmError> {
    let checker = Arc::new(Mutex::new(DiskHealthChecker::new(
        config.clone(),
        local_dirs.to_vec(),
        log_dirs.to_vec(),
        space,
        wall_ms(),
    )));
    let health = run_check(checker.clone())
        .await
        .ok_or_else(|| NmError::Internal("the first disk health check panicked".into()))?;
    if !health.healthy {
        warn!(report = %health.report, "the node starts unhealthy");
    }
    Ok((checker, health))
}

/// One check on a blocking thread; `None` if that thread panicked.
pub(crate) async fn run_check<S: SpaceSource>(
    checker: Arc<Mutex<DiskHealthChecker<S>>>,
) -> Option<NodeHealth> {
    tokio::task::spawn_blocking(move || {
        let mut c = checker.lock().unwrap_or_else(|p| p.into_inner());
        c.check(wall_ms());
        c.node_health()
    })
    .await
    .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Fixed usage per directory; unknown dirs report an empty 100 GiB disk.
    #[derive(Default, Clone)]
    struct FakeSpace(Arc<Mutex<HashMap<PathBuf, DiskUsage>>>);

    impl FakeSpace {
        fn set(&self, dir: &Path, used_percent: u64, total_bytes: u64) {
            let usable = total_bytes - total_bytes * used_percent / 100;
            self.0.lock().expect("lock").insert(
                dir.to_path_buf(),
                DiskUsage {
                    total_bytes,
                    usable_bytes: usable,
                },
            );
        }
    }

    impl SpaceSource for FakeSpace {
        fn usage(&self, dir: &Path) -> io::Result<DiskUsage> {
            Ok(self
                .0
                .lock()
                .expect("lock")
                .get(dir)
                .copied()
                .unwrap_or(DiskUsage {
                    total_bytes: 100 << 30,
                    usable_bytes: 100 << 30,
                }))
        }
    }

    fn checker(
        local: Vec<PathBuf>,
        log: Vec<PathBuf>,
        space: FakeSpace,
        config: DiskHealthConfig,
    ) -> DiskHealthChecker<FakeSpace> {
        DiskHealthChecker::new(config, local, log, space, 0)
    }

    #[test]
    fn missing_dir_is_created_and_good() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let local = tmp.path().join("a/b/local");
        let log = tmp.path().join("logs");
        let mut c = checker(
            vec![local.clone()],
            vec![log.clone()],
            FakeSpace::default(),
            DiskHealthConfig::default(),
        );
        c.check(42);
        assert!(local.is_dir() && log.is_dir());
        assert!(c.is_healthy());
        assert_eq!(c.health_report(), "");
        assert_eq!(c.good_local_dirs(), vec![local]);
        assert_eq!(c.last_check_time_ms(), 42);
        // The probe file is gone again.
        assert_eq!(fs::read_dir(&log).expect("read").count(), 0);
    }

    #[test]
    fn file_in_place_of_dir_and_uncreatable_dir_fail() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let file = tmp.path().join("plain-file");
        fs::write(&file, b"x").expect("write");
        let under_file = file.join("sub");
        let good = tmp.path().join("good");
        let mut c = checker(
            vec![file.clone(), under_file.clone(), good],
            vec![tmp.path().join("log")],
            FakeSpace::default(),
            DiskHealthConfig::default(),
        );
        c.check(1);
        let states: Vec<_> = c.local_dirs().iter().map(|d| d.state.clone()).collect();
        assert!(
            matches!(&states[0], DirState::Failed(m) if m.starts_with("Not a directory")),
            "{states:?}"
        );
        assert!(
            matches!(&states[1], DirState::Failed(m) if m.starts_with("Cannot create directory")),
            "{states:?}"
        );
        assert!(states[2].is_good());
        // 1 of 3 good is above the default 0.25 fraction.
        assert!(c.is_healthy());
        let report = c.health_report();
        assert!(
            report.starts_with(&format!(
                "2/3 local-dirs have errors:  [ {} : Not a directory: {}",
                file.display(),
                file.display()
            )),
            "{report}"
        );
        assert!(
            report.contains(&under_file.display().to_string()),
            "{report}"
        );
    }

    #[test]
    fn unwritable_dir_fails() {
        // /proc/self is a directory nobody, root included, can create files in.
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut c = checker(
            vec![PathBuf::from("/proc/self")],
            vec![tmp.path().join("log")],
            FakeSpace::default(),
            DiskHealthConfig::default(),
        );
        c.check(1);
        assert!(
            matches!(&c.local_dirs()[0].state, DirState::Failed(m) if m.starts_with("Directory is not writable: /proc/self")),
            "{:?}",
            c.local_dirs()
        );
        assert!(!c.is_healthy());
        assert!(c
            .health_report()
            .starts_with("1/1 local-dirs have errors:  [ /proc/self : Directory is not writable"));
    }

    #[test]
    fn read_only_permissions_fail_for_unprivileged_users() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("ro");
        fs::create_dir(&dir).expect("mkdir");
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o555)).expect("chmod");
        let state = check_dir(
            &dir,
            true,
            &DiskHealthConfig::default(),
            &FakeSpace::default(),
        );
        use std::os::unix::fs::MetadataExt;
        // A directory we just created is owned by our effective user.
        let is_root = fs::metadata(tmp.path()).expect("stat").uid() == 0;
        // Root bypasses permission bits; everyone else must be refused.
        assert_eq!(state.is_good(), is_root, "{state:?}");
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).expect("chmod back");
    }

    #[test]
    fn utilization_over_threshold_is_full_with_hadoop_report() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let local = tmp.path().join("local");
        let log = tmp.path().join("log");
        let space = FakeSpace::default();
        space.set(&local, 95, 1 << 30);
        space.set(&log, 91, 1 << 30);
        let mut c = checker(
            vec![local.clone()],
            vec![log.clone()],
            space,
            DiskHealthConfig::default(),
        );
        c.check(7);
        assert!(!c.is_healthy());
        assert_eq!(
            c.health_report(),
            format!(
                "1/1 local-dirs usable space is below configured utilization percentage/no more \
                 usable space [ {} : used space above threshold of 90.0% ] ; 1/1 log-dirs usable \
                 space is below configured utilization percentage/no more usable space [ {} : \
                 used space above threshold of 90.0% ] ",
                local.display(),
                log.display()
            )
        );
        let health = c.node_health();
        assert!(!health.healthy);
        assert_eq!(health.last_report_time_ms, 7);
    }

    #[test]
    fn watermarks_give_hysteresis() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let local = tmp.path().join("local");
        let space = FakeSpace::default();
        let config = DiskHealthConfig {
            max_utilization_percent: 90.0,
            low_utilization_percent: 80.0,
            ..DiskHealthConfig::default()
        };
        let mut c = checker(
            vec![local.clone()],
            vec![tmp.path().join("log")],
            space.clone(),
            config,
        );
        space.set(&local, 92, 1 << 30);
        c.check(1);
        assert!(matches!(&c.local_dirs()[0].state, DirState::Full(_)));
        // Between the marks: stays bad, now judged against the low mark.
        space.set(&local, 85, 1 << 30);
        c.check(2);
        assert_eq!(
            c.local_dirs()[0].state,
            DirState::Full("used space above threshold of 80.0%".into())
        );
        space.set(&local, 70, 1 << 30);
        c.check(3);
        assert!(c.local_dirs()[0].state.is_good());
        // Back between the marks while good: stays good.
        space.set(&local, 85, 1 << 30);
        c.check(4);
        assert!(c.local_dirs()[0].state.is_good());
    }

    #[test]
    fn free_space_limit() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let local = tmp.path().join("local");
        let space = FakeSpace::default();
        // 10 % of 1 GiB free ≈ 102 MB.
        space.set(&local, 90, 1 << 30);
        let config = DiskHealthConfig {
            max_utilization_percent: 99.0,
            low_utilization_percent: 99.0,
            min_free_space_mb: 200,
            ..DiskHealthConfig::default()
        };
        let mut c = checker(vec![local], vec![tmp.path().join("log")], space, config);
        c.check(1);
        assert_eq!(
            c.local_dirs()[0].state,
            DirState::Full("free space below limit of 200MB".into())
        );
    }

    #[test]
    fn disabled_checks_ignore_space() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let local = tmp.path().join("local");
        let space = FakeSpace::default();
        space.set(&local, 100, 1 << 30);
        let config = DiskHealthConfig {
            utilization_check_enabled: false,
            free_space_check_enabled: false,
            ..DiskHealthConfig::default()
        };
        let mut c = checker(vec![local], vec![tmp.path().join("log")], space, config);
        c.check(1);
        assert!(c.is_healthy());
        assert_eq!(c.health_report(), "");
    }

    #[test]
    fn min_healthy_fraction_per_kind() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let locals: Vec<PathBuf> = (0..4).map(|i| tmp.path().join(format!("l{i}"))).collect();
        let log = tmp.path().join("log");
        let space = FakeSpace::default();
        for l in &locals[..3] {
            space.set(l, 99, 1 << 30);
        }
        let mut c = checker(
            locals.clone(),
            vec![log.clone()],
            space.clone(),
            DiskHealthConfig::default(),
        );
        c.check(1);
        // 1/4 = 0.25 is not below 0.25.
        assert!(c.is_healthy(), "{}", c.health_report());
        space.set(&locals[3], 99, 1 << 30);
        c.check(2);
        assert!(!c.is_healthy());
        assert!(c.health_report().starts_with("4/4 local-dirs usable space"));

        let strict = DiskHealthConfig {
            min_healthy_fraction: 0.5,
            ..DiskHealthConfig::default()
        };
        let space = FakeSpace::default();
        space.set(&locals[0], 99, 1 << 30);
        let mut c = checker(
            locals[..3].to_vec(),
            vec![log.clone()],
            space.clone(),
            strict,
        );
        c.check(1);
        // 2/3 good ≥ 0.5.
        assert!(c.is_healthy());
        space.set(&log, 99, 1 << 30);
        c.check(2);
        // Local dirs are fine but 0/1 log dirs is not.
        assert!(!c.is_healthy());
    }

    #[test]
    fn disabled_checker_is_always_healthy() {
        let config = DiskHealthConfig {
            enabled: false,
            ..DiskHealthConfig::default()
        };
        let mut c = checker(
            vec![PathBuf::from("/proc/self")],
            vec![PathBuf::from("/proc/self")],
            FakeSpace::default(),
            config,
        );
        c.check(5);
        assert!(c.is_healthy());
        assert_eq!(c.health_report(), "");
        assert_eq!(c.last_check_time_ms(), 5);
    }

    #[test]
    fn normalization_orders_watermarks() {
        let c = DiskHealthConfig {
            max_utilization_percent: 120.0,
            low_utilization_percent: 150.0,
            min_free_space_mb: 10,
            min_free_space_high_mb: 5,
            ..DiskHealthConfig::default()
        }
        .normalized();
        assert_eq!(c.max_utilization_percent, 100.0);
        assert_eq!(c.low_utilization_percent, 100.0);
        assert_eq!(c.min_free_space_high_mb, 10);
    }

    #[test]
    fn statvfs_reads_a_real_file_system() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let usage = StatvfsSpace.usage(tmp.path()).expect("statvfs");
        assert!(usage.total_bytes > 0);
        assert!(usage.usable_bytes <= usage.total_bytes);
        assert!(StatvfsSpace.usage(&tmp.path().join("missing")).is_err());
    }

    #[test]
    fn java_float_formatting() {
        assert_eq!(java_float(90.0), "90.0");
        assert_eq!(java_float(98.5), "98.5");
    }
}
