//! Where aggregated logs live, as the daemons that write, read and delete
//! them all read it from the configuration: the NodeManager's log
//! aggregation writes there, the ResourceManager's retention deletes there.
//!
//! Hadoop's `LogAggregationFileController` (TFile controller, Hadoop's
//! default `yarn.log-aggregation.file-formats`) decides the two parts:
//! the remote root log dir and the suffix of the directory below each
//! user's (`<root>/<user>/bucket-<suffix>/<bucket>/<appId>`, and the older
//! `<root>/<user>/<suffix>/<appId>`).

use spindle_common::conf::{keys, ConfError, Configuration};

use crate::{locate, Location};

/// The file controller Spindle writes with: Hadoop's default
/// `yarn.log-aggregation.file-formats`.
pub const CONTROLLER: &str = "TFile";

/// What Hadoop puts before the suffix in the bucket layout
/// (`LogAggregationUtils.getBucketSuffix`).
pub const BUCKET_PREFIX: &str = "bucket-";

/// The prefixes of the Hadoop settings a remote file system client reads.
const CLIENT_SETTING_PREFIXES: [&str; 4] = ["fs.", "dfs.", "hadoop.", "ipc."];

/// The directory below the user's: `yarn.log-aggregation.TFile.remote-app-log-dir-suffix`,
/// else `yarn.nodemanager.remote-app-log-dir-suffix` + `-tfile` (Hadoop's
/// `extractRemoteRootLogDirSuffix`). A suffix that is no single directory
/// name is an error naming the key it came from.
pub fn remote_log_suffix(conf: &Configuration) -> Result<String, ConfError> {
    let own_key = format!("yarn.log-aggregation.{CONTROLLER}.remote-app-log-dir-suffix");
    let (key, suffix) = match conf.get(&own_key).filter(|s| !s.trim().is_empty()) {
        Some(s) => (own_key.as_str(), s),
        None => {
            let base = conf
                .get(keys::NM_REMOTE_APP_LOG_DIR_SUFFIX)
                .unwrap_or_else(|| "logs".to_string());
            (
                keys::NM_REMOTE_APP_LOG_DIR_SUFFIX,
                format!("{base}-{}", CONTROLLER.to_lowercase()),
            )
        }
    };
    if suffix.contains('/') || suffix.trim().is_empty() || suffix == ".." || suffix == "." {
        return Err(invalid(conf, key, &suffix, "is not a directory name"));
    }
    Ok(suffix)
}

/// The remote root log dir: `yarn.log-aggregation.TFile.remote-app-log-dir`,
/// else `yarn.nodemanager.remote-app-log-dir` (default `/tmp/logs`), a bare
/// path being on `fs.defaultFS`. A value that is no path on a file system
/// Spindle speaks is an error naming the key it came from.
pub fn remote_log_root(conf: &Configuration) -> Result<Location, ConfError> {
    let own_key = format!("yarn.log-aggregation.{CONTROLLER}.remote-app-log-dir");
    let (key, dir) = match conf.get(&own_key).filter(|s| !s.trim().is_empty()) {
        Some(d) => (own_key.as_str(), d),
        None => (
            keys::NM_REMOTE_APP_LOG_DIR,
            conf.get(keys::NM_REMOTE_APP_LOG_DIR)
                .unwrap_or_else(|| "/tmp/logs".to_string()),
        ),
    };
    let default_fs = conf
        .get("fs.defaultFS")
        .unwrap_or_else(|| "file:///".to_string());
    locate(dir.trim(), &default_fs).map_err(|e| invalid(conf, key, &dir, &e.to_string()))
}

/// The Hadoop client settings (`fs.*`, `dfs.*`, `hadoop.*`, `ipc.*`) a
/// daemon gives its remote file system clients ([`crate::FileSystems::new`]).
pub fn client_settings(conf: &Configuration) -> Vec<(String, String)> {
    conf.keys()
        .filter(|k| CLIENT_SETTING_PREFIXES.iter().any(|p| k.starts_with(p)))
        .filter_map(|k| conf.get(k).map(|v| (k.to_string(), v)))
        .collect()
}

/// An error about `key`'s value; `problem` completes "value '…' …".
fn invalid(conf: &Configuration, key: &str, value: &str, problem: &str) -> ConfError {
    match conf.invalid_value(key, problem) {
        // The key is unset and the value is the built-in fallback.
        ConfError::Missing { .. } => ConfError::InvalidValue {
            origin: spindle_common::conf::Origin::programmatic(),
            key: key.to_string(),
            value: value.to_string(),
            problem: problem.to_string(),
        },
        e => e,
    }
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
    fn suffix_follows_hadoops_controller_rules() {
        assert_eq!(
            remote_log_suffix(&conf(&[])).ok().as_deref(),
            Some("logs-tfile")
        );
        let c = conf(&[(keys::NM_REMOTE_APP_LOG_DIR_SUFFIX, "agg")]);
        assert_eq!(remote_log_suffix(&c).ok().as_deref(), Some("agg-tfile"));
        let c = conf(&[
            (keys::NM_REMOTE_APP_LOG_DIR_SUFFIX, "agg"),
            (
                "yarn.log-aggregation.TFile.remote-app-log-dir-suffix",
                "mine",
            ),
        ]);
        assert_eq!(remote_log_suffix(&c).ok().as_deref(), Some("mine"));
        let c = conf(&[(
            "yarn.log-aggregation.TFile.remote-app-log-dir-suffix",
            "a/b",
        )]);
        let e = remote_log_suffix(&c).expect_err("refused");
        assert_eq!(
            e.key(),
            Some("yarn.log-aggregation.TFile.remote-app-log-dir-suffix")
        );
    }

    #[test]
    fn root_is_on_the_default_file_system_unless_it_names_one() {
        let root = remote_log_root(&conf(&[])).expect("default");
        assert_eq!(root.url(), "file:///tmp/logs");
        let c = conf(&[("fs.defaultFS", "hdfs://nn:8020")]);
        assert_eq!(
            remote_log_root(&c).expect("valid").url(),
            "hdfs://nn:8020/tmp/logs"
        );
        let c = conf(&[
            (keys::NM_REMOTE_APP_LOG_DIR, "/x"),
            ("yarn.log-aggregation.TFile.remote-app-log-dir", "file:///y"),
        ]);
        assert_eq!(remote_log_root(&c).expect("valid").url(), "file:///y");
        let c = conf(&[(keys::NM_REMOTE_APP_LOG_DIR, "viewfs://c/logs")]);
        let e = remote_log_root(&c).expect_err("refused");
        assert_eq!(e.key(), Some(keys::NM_REMOTE_APP_LOG_DIR));
        assert!(e.to_string().contains("viewfs"), "{e}");
    }

    #[test]
    fn client_settings_are_the_hadoop_client_keys() {
        let c = conf(&[("dfs.replication", "1"), ("yarn.x", "y")]);
        let s = client_settings(&c);
        assert!(s.contains(&("dfs.replication".to_string(), "1".to_string())));
        assert!(s.iter().all(|(k, _)| !k.starts_with("yarn.")));
    }
}
