//! Log aggregation (`yarn.log-aggregation-enable`), as Hadoop's
//! `LogAggregationService` with the TFile controller: when an application
//! is over on this node, its containers' logs are written into one
//! aggregated log file (`spindle_tfile::aggregated`), uploaded through the
//! file system layer (`spindle_fs`: `hdfs:` or `file:`) to
//! `<remote-app-log-dir>/<user>/bucket-<suffix>-tfile/<bucket>/<appId>/<host>_<port>`
//! (as `….tmp`, renamed when complete), and the local logs are deleted
//! after `yarn.nodemanager.delete.debug-delay-sec`. The outcome goes to the
//! ResourceManager in the next heartbeats (`LogAggregationReportProto`).
//!
//! Without aggregation the local logs of a finished application are
//! deleted after `yarn.nodemanager.log.retain-seconds` (Hadoop's
//! `NonAggregatingLogHandler`).
//!
//! Reading them back is the `yarn logs` CLI's business (or any reader of
//! Hadoop's format); the NodeManager only writes.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use spindle_common::conf::{keys, Configuration};
use spindle_common::ids::{ApplicationId, ContainerId, NodeId};
use spindle_common::text::escaped;
use spindle_fs::remote_logs::BUCKET_PREFIX;
use spindle_fs::{FileSystems, Location};

use crate::error::NmError;
use tracing::{debug, info, warn};

/// Hadoop's permission of the remote root log dir (`TLDIR_PERMISSIONS`).
const ROOT_DIR_PERMISSION: u16 = 0o1777;
/// Hadoop's permission of the directories below it, down to the
/// application's (`APP_DIR_PERMISSIONS`).
const APP_DIR_PERMISSION: u16 = 0o770;
/// Hadoop's permission of an aggregated log file (0640: `APP_LOG_FILE_UMASK`).
const LOG_FILE_PERMISSION: u16 = 0o640;
/// `LogAggregationUtils.TMP_FILE_SUFFIX`.
const TMP_SUFFIX: &str = ".tmp";

/// How this node aggregates logs.
#[derive(Debug, Clone, PartialEq)]
pub struct LogAggregationSettings {
    /// `yarn.log-aggregation-enable`, with the remote root log dir
    /// (`yarn.log-aggregation.TFile.remote-app-log-dir`, else
    /// `yarn.nodemanager.remote-app-log-dir`, on `fs.defaultFS`) when on.
    pub remote_root: Option<Location>,
    /// The directory below the user's: `yarn.log-aggregation.TFile.remote-app-log-dir-suffix`,
    /// else `yarn.nodemanager.remote-app-log-dir-suffix` + `-tfile` (Hadoop's
    /// `extractRemoteRootLogDirSuffix`); the bucket layout puts `bucket-` before it.
    pub suffix: String,
    /// `yarn.nodemanager.log.retain-seconds`: how long local logs stay when
    /// aggregation is off.
    pub local_retain: Duration,
}

impl Default for LogAggregationSettings {
    /// Hadoop's defaults: aggregation off, local logs kept for 3 hours.
    fn default() -> Self {
        LogAggregationSettings {
            remote_root: None,
            suffix: "logs-tfile".to_string(),
            local_retain: Duration::from_secs(10_800),
        }
    }
}

impl LogAggregationSettings {
    /// Reads the settings; a remote dir that is no file system path (or on
    /// an unsupported file system) is an error when aggregation is on.
    pub fn from_conf(conf: &Configuration) -> Result<LogAggregationSettings, NmError> {
        let d = LogAggregationSettings::default();
        let retain = match conf.get(keys::NM_LOG_RETAIN_SECONDS) {
            Some(_) => conf.get_i64(keys::NM_LOG_RETAIN_SECONDS)?,
            None => d.local_retain.as_secs() as i64,
        };
        let suffix = spindle_fs::remote_logs::remote_log_suffix(conf)?;
        let enabled = conf.get(keys::YARN_LOG_AGGREGATION_ENABLE).is_some()
            && conf.get_bool(keys::YARN_LOG_AGGREGATION_ENABLE)?;
        let remote_root = if enabled {
            Some(spindle_fs::remote_logs::remote_log_root(conf)?)
        } else {
            None
        };
        Ok(LogAggregationSettings {
            remote_root,
            suffix,
            local_retain: Duration::from_secs(retain.max(0).unsigned_abs()),
        })
    }
}

/// Where one application's aggregated log of one node goes: Hadoop 3.3's
/// bucket layout, `<root>/<user>/bucket-<suffix>/<id % 10000, 4 digits>/<appId>/<host>_<port>`.
pub fn remote_log_file(
    root: &Location,
    user: &str,
    suffix: &str,
    app: ApplicationId,
    node: &NodeId,
) -> Location {
    app_dir(root, user, suffix, app).join(&node_string(node))
}

/// `<root>/<user>/bucket-<suffix>/<bucket>/<appId>`.
fn app_dir(root: &Location, user: &str, suffix: &str, app: ApplicationId) -> Location {
    root.join(user)
        .join(&format!("{BUCKET_PREFIX}{suffix}"))
        .join(&format!("{:04}", app.id.rem_euclid(10_000)))
        .join(&app.to_string())
}

/// Hadoop's `LogAggregationUtils.getNodeString`: `host:port` → `host_port`.
pub fn node_string(node: &NodeId) -> String {
    node.to_string().replace(':', "_")
}

/// The outcome of one application's aggregation on this node, for the
/// ResourceManager.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AggregationStatus {
    Running,
    Succeeded,
    Failed,
}

/// What the next heartbeat tells the ResourceManager about one application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AggregationReport {
    pub app: ApplicationId,
    pub status: AggregationStatus,
    pub diagnostics: String,
}

/// What one aggregation wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Aggregated {
    pub file: Location,
    pub containers: usize,
    pub bytes: u64,
}

/// The node's log aggregation: settings, file systems, and the reports
/// waiting for a heartbeat.
pub struct LogAggregator {
    settings: LogAggregationSettings,
    filesystems: FileSystems,
    log_dirs: Vec<PathBuf>,
    /// Where an aggregated file is written before its upload: the first
    /// local dir's `nmPrivate`.
    scratch: PathBuf,
    reports: Mutex<Vec<AggregationReport>>,
}

impl LogAggregator {
    pub fn new(
        settings: LogAggregationSettings,
        remote_fs: Vec<(String, String)>,
        log_dirs: Vec<PathBuf>,
        local_dirs: &[PathBuf],
    ) -> LogAggregator {
        let scratch = local_dirs
            .first()
            .map(|d| d.join("nmPrivate"))
            .unwrap_or_else(std::env::temp_dir);
        LogAggregator {
            settings,
            filesystems: FileSystems::new(remote_fs),
            log_dirs,
            scratch,
            reports: Mutex::default(),
        }
    }

    /// Whether finished applications' logs are aggregated.
    pub fn enabled(&self) -> bool {
        self.settings.remote_root.is_some()
    }

    pub fn settings(&self) -> &LogAggregationSettings {
        &self.settings
    }

    fn report(&self, app: ApplicationId, status: AggregationStatus, diagnostics: String) {
        self.reports
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(AggregationReport {
                app,
                status,
                diagnostics,
            });
    }

    /// The reports not yet acknowledged by a heartbeat answer, oldest
    /// first. A heartbeat sends them all; [`LogAggregator::acknowledge`]
    /// drops the ones it sent once the ResourceManager answered.
    pub fn pending_reports(&self) -> Vec<AggregationReport> {
        self.reports
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Drops the `sent` oldest reports (a heartbeat carrying them was
    /// answered). Reports only ever join at the end, so these are the ones sent.
    pub fn acknowledge(&self, sent: usize) {
        let mut reports = self.reports.lock().unwrap_or_else(|e| e.into_inner());
        let n = sent.min(reports.len());
        reports.drain(..n);
    }

    /// The local log directories of `app`: `<log-dir>/<appId>` of every log dir.
    fn local_app_dirs(&self, app: ApplicationId) -> Vec<PathBuf> {
        self.log_dirs
            .iter()
            .map(|d| d.join(app.to_string()))
            .collect()
    }

    /// The application is over on this node and its containers are done:
    /// aggregate its logs (when on) and delete the local ones after
    /// `delay` (`delete.debug-delay-sec`); when aggregation is off or
    /// failed, after `log.retain-seconds`, so no log is lost sooner. The
    /// aggregated file carries the application's `acls` ((access type,
    /// ACL) pairs, `VIEW_APP` / `MODIFY_APP`).
    pub async fn app_finished(
        &self,
        node: &NodeId,
        app: ApplicationId,
        user: &str,
        acls: &[(String, String)],
        delay: Duration,
    ) {
        let delay = match &self.settings.remote_root {
            Some(root) => {
                self.report(app, AggregationStatus::Running, String::new());
                let started = std::time::Instant::now();
                match self.aggregate(root, node, app, user, acls).await {
                    Ok(done) => {
                        info!(
                            app = %app,
                            containers = done.containers,
                            bytes = done.bytes,
                            file = %escaped(&done.file.url()),
                            took_ms = started.elapsed().as_millis() as u64,
                            "aggregated the application's logs"
                        );
                        self.report(app, AggregationStatus::Succeeded, String::new());
                        delay
                    }
                    Err(e) => {
                        warn!(
                            app = %app,
                            error = %escaped(&e),
                            keep_s = self.settings.local_retain.as_secs(),
                            "log aggregation failed; the logs stay on this node for log.retain-seconds"
                        );
                        self.report(
                            app,
                            AggregationStatus::Failed,
                            format!("Log aggregation failed on {node}: {e}"),
                        );
                        self.settings.local_retain.max(delay)
                    }
                }
            }
            None => self.settings.local_retain,
        };
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        for dir in self.local_app_dirs(app) {
            match tokio::fs::remove_dir_all(&dir).await {
                Ok(()) => debug!(dir = %escaped(&dir.to_string_lossy()), "deleted"),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    warn!(dir = %escaped(&dir.to_string_lossy()), error = %e, "cannot delete an application's logs")
                }
            }
        }
    }

    /// Writes `app`'s logs on this node into one aggregated file and
    /// uploads it, as `user`, with the application's `acls`.
    pub async fn aggregate(
        &self,
        root: &Location,
        node: &NodeId,
        app: ApplicationId,
        user: &str,
        acls: &[(String, String)],
    ) -> Result<Aggregated, String> {
        let containers = containers_of(app, &self.local_app_dirs(app)).await;
        let file = remote_log_file(root, user, &self.settings.suffix, app, node);
        let scratch = self.scratch.join(format!(
            "{app}.{}.aggregated{TMP_SUFFIX}",
            node_string(node)
        ));
        let local = scratch.clone();
        let owner = user.to_string();
        let acls = acls.to_vec();
        let count = containers.len();
        let written = tokio::task::spawn_blocking(move || {
            write_aggregated(&local, &owner, &acls, &containers)
        })
        .await
        .map_err(|e| format!("writing the aggregated log failed: {e}"))?;
        let result = match written {
            Ok(_) => self.upload(root, user, app, &scratch, &file).await,
            Err(e) => Err(format!("writing {}: {e}", scratch.display())),
        };
        let _ = tokio::fs::remove_file(&scratch).await;
        let bytes = result?;
        Ok(Aggregated {
            file,
            containers: count,
            bytes,
        })
    }

    /// Creates the remote directories Hadoop would and uploads `local` as
    /// `file` (through `file.tmp`).
    async fn upload(
        &self,
        root: &Location,
        user: &str,
        app: ApplicationId,
        local: &Path,
        file: &Location,
    ) -> Result<u64, String> {
        // The root dir as the node (Hadoop's verifyAndCreateRemoteLogDir),
        // the rest as the application's user (createAppDir).
        let node_fs = self.filesystems.of(root, None).map_err(|e| e.to_string())?;
        spindle_fs::create_dirs(&*node_fs, &[(&root.path, ROOT_DIR_PERMISSION)])
            .await
            .map_err(|e| format!("the remote root log dir: {e}"))?;
        let fs = self
            .filesystems
            .of(root, Some(user))
            .map_err(|e| e.to_string())?;
        let user_dir = root.join(user);
        let suffix_dir = user_dir.join(&format!("bucket-{}", self.settings.suffix));
        let app_dir = app_dir(root, user, &self.settings.suffix, app);
        let bucket_dir = Location {
            filesystem: app_dir.filesystem.clone(),
            path: app_dir
                .path
                .rsplit_once('/')
                .map_or_else(|| app_dir.path.clone(), |(p, _)| p.to_string()),
        };
        spindle_fs::create_dirs(
            &*fs,
            &[
                (&user_dir.path, APP_DIR_PERMISSION),
                (&suffix_dir.path, APP_DIR_PERMISSION),
                (&bucket_dir.path, APP_DIR_PERMISSION),
                (&app_dir.path, APP_DIR_PERMISSION),
            ],
        )
        .await
        .map_err(|e| format!("the application's log dir: {e}"))?;
        let tmp = format!("{}{TMP_SUFFIX}", file.path);
        let bytes = fs
            .upload(local, &tmp, LOG_FILE_PERMISSION)
            .await
            .map_err(|e| e.to_string())?;
        if let Err(e) = fs.rename(&tmp, &file.path).await {
            let _ = fs.delete(&tmp, false).await;
            return Err(e.to_string());
        }
        Ok(bytes)
    }
}

/// One container's log files, by name, from every log dir.
#[derive(Debug)]
struct ContainerLogs {
    id: ContainerId,
    files: Vec<(String, PathBuf)>,
}

/// The containers of `app` with logs in `app_dirs` (`<log-dir>/<appId>`),
/// in id order, each with its regular files (links are not followed).
async fn containers_of(app: ApplicationId, app_dirs: &[PathBuf]) -> Vec<ContainerLogs> {
    let dirs = app_dirs.to_vec();
    tokio::task::spawn_blocking(move || {
        let mut by_id: std::collections::BTreeMap<ContainerId, Vec<(String, PathBuf)>> =
            Default::default();
        for dir in &dirs {
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let Some(id) = entry
                    .file_name()
                    .to_str()
                    .and_then(|n| n.parse::<ContainerId>().ok())
                    .filter(|id| id.app() == app)
                else {
                    continue;
                };
                if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                    continue;
                }
                let files = by_id.entry(id).or_default();
                let Ok(logs) = std::fs::read_dir(entry.path()) else {
                    continue;
                };
                for log in logs.flatten() {
                    let regular = log.file_type().is_ok_and(|t| t.is_file());
                    if let (true, Some(name)) = (regular, log.file_name().to_str()) {
                        files.push((name.to_string(), log.path()));
                    }
                }
            }
        }
        by_id
            .into_iter()
            .map(|(id, files)| ContainerLogs { id, files })
            .collect()
    })
    .await
    .unwrap_or_default()
}

/// Writes the aggregated log file of `containers` (owner `owner`, the
/// application's `acls`) at `path`.
fn write_aggregated(
    path: &Path,
    owner: &str,
    acls: &[(String, String)],
    containers: &[ContainerLogs],
) -> std::io::Result<u64> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    let mut writer =
        spindle_tfile::aggregated::LogWriter::new(std::io::BufWriter::new(file), owner, acls)?;
    let mut bytes = 0;
    for c in containers {
        bytes += writer.append_container(&c.id.to_string(), &c.files)?;
    }
    let mut out = writer.finish()?;
    out.flush()?;
    out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(pairs: &[(&str, &str)]) -> Configuration {
        let mut c = Configuration::with_defaults();
        for (k, v) in pairs {
            c.set(k, *v);
        }
        c
    }

    #[test]
    fn the_remote_file_is_hadoop_s_bucket_layout() {
        let root = spindle_fs::locate("hdfs://nn:8020/tmp/logs", "file:///").expect("a url");
        let app = ApplicationId::new(1_700_000_000_000, 12_345);
        let node: NodeId = "host1:45454".parse().expect("a node id");
        assert_eq!(
            remote_log_file(&root, "alice", "logs-tfile", app, &node).url(),
            "hdfs://nn:8020/tmp/logs/alice/bucket-logs-tfile/2345/\
             application_1700000000000_12345/host1_45454"
        );
        let small = ApplicationId::new(1, 7);
        assert_eq!(
            remote_log_file(&root, "bob", "logs-tfile", small, &node).path,
            "/tmp/logs/bob/bucket-logs-tfile/0007/application_1_0007/host1_45454"
        );
    }

    #[test]
    fn settings_follow_hadoop_s_keys_and_defaults() {
        let off = LogAggregationSettings::from_conf(&conf(&[])).expect("valid");
        assert_eq!(off.remote_root, None);
        assert_eq!(off.suffix, "logs-tfile");
        assert_eq!(off.local_retain, Duration::from_secs(10_800));
        let on = LogAggregationSettings::from_conf(&conf(&[
            ("yarn.log-aggregation-enable", "true"),
            ("fs.defaultFS", "hdfs://nn:9000"),
            ("yarn.nodemanager.remote-app-log-dir-suffix", "applogs"),
        ]))
        .expect("valid");
        assert_eq!(on.remote_root.expect("on").url(), "hdfs://nn:9000/tmp/logs");
        assert_eq!(on.suffix, "applogs-tfile");
        let own = LogAggregationSettings::from_conf(&conf(&[
            ("yarn.log-aggregation-enable", "true"),
            (
                "yarn.log-aggregation.TFile.remote-app-log-dir",
                "file:///var/agg",
            ),
            (
                "yarn.log-aggregation.TFile.remote-app-log-dir-suffix",
                "mine",
            ),
        ]))
        .expect("valid");
        assert_eq!(own.remote_root.expect("on").url(), "file:///var/agg");
        assert_eq!(own.suffix, "mine");
        let bad = LogAggregationSettings::from_conf(&conf(&[
            ("yarn.log-aggregation-enable", "true"),
            ("yarn.nodemanager.remote-app-log-dir", "s3a://bucket/logs"),
        ]))
        .expect_err("refused")
        .to_string();
        assert!(bad.contains("\"s3a\""), "{bad}");
    }

    #[test]
    fn reports_wait_until_a_heartbeat_carried_them() {
        let agg = LogAggregator::new(LogAggregationSettings::default(), vec![], vec![], &[]);
        let app = ApplicationId::new(1, 1);
        agg.report(app, AggregationStatus::Running, String::new());
        let sent = agg.pending_reports();
        agg.report(app, AggregationStatus::Succeeded, String::new());
        agg.acknowledge(sent.len());
        let left = agg.pending_reports();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].status, AggregationStatus::Succeeded);
    }

    #[test]
    fn the_aggregated_file_carries_the_application_s_acls() {
        let tmp = tempfile::tempdir().expect("a temp dir");
        let app = ApplicationId::new(1, 5);
        let c1 = ContainerId::new(spindle_common::ids::ApplicationAttemptId::new(app, 1), 1);
        let log = tmp.path().join("stdout");
        std::fs::write(&log, b"hello").expect("write");
        let containers = [ContainerLogs {
            id: c1,
            files: vec![("stdout".to_string(), log)],
        }];
        let acls = vec![
            ("VIEW_APP".to_string(), "bob,carol ops".to_string()),
            ("MODIFY_APP".to_string(), " ".to_string()),
        ];
        let out = tmp.path().join("agg").join("node_1");
        write_aggregated(&out, "alice", &acls, &containers).expect("written");
        let reader =
            spindle_tfile::aggregated::LogReader::new(std::fs::File::open(&out).expect("open"))
                .expect("a readable aggregated file");
        assert_eq!(reader.owner(), Some("alice"));
        assert_eq!(reader.acls(), &acls[..]);
    }

    #[tokio::test]
    async fn containers_are_found_in_every_log_dir_and_links_are_skipped() {
        let tmp = tempfile::tempdir().expect("a temp dir");
        let app = ApplicationId::new(1, 3);
        let c1 = ContainerId::new(spindle_common::ids::ApplicationAttemptId::new(app, 1), 1);
        let other = ContainerId::new(
            spindle_common::ids::ApplicationAttemptId::new(ApplicationId::new(1, 4), 1),
            1,
        );
        let (d1, d2) = (tmp.path().join("l1"), tmp.path().join("l2"));
        for d in [&d1, &d2] {
            std::fs::create_dir_all(d.join(app.to_string()).join(c1.to_string())).expect("mkdir");
        }
        std::fs::create_dir_all(d1.join(app.to_string()).join(other.to_string())).expect("mkdir");
        let c1_dir = |d: &Path| d.join(app.to_string()).join(c1.to_string());
        std::fs::write(c1_dir(&d1).join("stdout"), b"out").expect("write");
        std::fs::write(c1_dir(&d2).join("stderr"), b"err").expect("write");
        std::os::unix::fs::symlink("/etc/passwd", c1_dir(&d2).join("link")).expect("link");
        let found = containers_of(app, &[d1.join(app.to_string()), d2.join(app.to_string())]).await;
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].id, c1);
        let mut names: Vec<_> = found[0].files.iter().map(|(n, _)| n.as_str()).collect();
        names.sort();
        assert_eq!(names, ["stderr", "stdout"]);
    }
}
