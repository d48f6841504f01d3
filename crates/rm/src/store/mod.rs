//! The RM state store: what a restarted ResourceManager needs to carry on.
//!
//! With `yarn.resourcemanager.recovery.enabled`, the owner task writes, after
//! every command that changed something a restart must give back, the
//! [`StoreOp`]s the state emitted (`RmState::take_store_ops`) and the token
//! master keys when they rolled, and only then answers the caller: a
//! submitted application is never lost. The state does no I/O; it only says
//! what changed. On start the store hands back everything it holds
//! ([`Recovered`]) with a new RM epoch.
//!
//! [`StateStore`] has two stores behind it, chosen by [`open`] from [`StoreConf`]:
//! [`RedbStore`], an embedded `redb` file on local disk (the default), and
//! [`ZkStore`] in ZooKeeper (when `yarn.resourcemanager.store.class` names Hadoop's
//! `ZKRMStateStore`; for RMs in HA), whose writes are fenced against a deposed active.

mod records;
mod redb_store;
pub mod zk_store;

pub use records::{
    StoredApp, StoredAttempt, StoredDelegationKey, StoredDelegationKeys, StoredDelegationToken,
    StoredKeys, StoredLaunch, StoredSecret,
};
pub use redb_store::{RedbStore, FORMAT_VERSION};
pub use zk_store::{ZkStore, ZkStoreConf};

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use spindle_common::conf::Configuration;
use spindle_common::ids::ApplicationId;

/// One change to the stored state.
#[derive(Debug, Clone, PartialEq)]
pub enum StoreOp {
    /// The application's whole record, new or changed.
    PutApp(Box<StoredApp>),
    /// The application is gone (pruned past the store's bound).
    RemoveApp(ApplicationId),
    /// The token master keys (current and previous of each manager).
    PutKeys(StoredKeys),
    /// The RM delegation-token keys and sequence number.
    PutDelegationKeys(StoredDelegationKeys),
    /// An RM delegation token, new or renewed.
    PutDelegationToken(StoredDelegationToken),
    /// An RM delegation token cancelled or expired (its sequence number).
    RemoveDelegationToken(i32),
}

/// What a store held when the RM started, and this start's epoch.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recovered {
    /// This start's RM epoch: one more than the last start's (0 on a new store).
    pub epoch: u64,
    /// This start's cluster timestamp: the one asked for, or one past the
    /// previous start's if that is not earlier.
    pub cluster_ts: i64,
    /// The cluster timestamp of the previous start, if any: the new one must
    /// be later, so that new application ids never collide with recovered ones.
    pub last_cluster_ts: Option<i64>,
    pub apps: Vec<StoredApp>,
    pub keys: Option<StoredKeys>,
    pub delegation_keys: Option<StoredDelegationKeys>,
    pub delegation_tokens: Vec<StoredDelegationToken>,
}

impl Recovered {
    /// A start on a store whose last start (if any) had epoch `last_epoch`
    /// and cluster timestamp `last_cluster_ts`, asked to run at
    /// `cluster_ts`: the next epoch, and a cluster timestamp later than the
    /// last one, so that new application ids never collide with stored ones.
    /// The applications and keys are the store's to fill in.
    pub fn starting(
        last_epoch: Option<u64>,
        last_cluster_ts: Option<i64>,
        cluster_ts: i64,
    ) -> Recovered {
        Recovered {
            epoch: last_epoch.map_or(0, |e| e + 1),
            cluster_ts: match last_cluster_ts {
                Some(last) if last >= cluster_ts => last + 1,
                _ => cluster_ts,
            },
            last_cluster_ts,
            apps: Vec::new(),
            keys: None,
            delegation_keys: None,
            delegation_tokens: Vec::new(),
        }
    }
}

/// A store that failed: which store, and what is wrong.
#[derive(Debug, thiserror::Error)]
#[error("state store {path}: {what}")]
pub struct StoreError {
    pub path: String,
    pub what: String,
}

/// A place the RM's state outlives the process.
pub trait StateStore: Send {
    /// Where the store is, for messages.
    fn describe(&self) -> String;
    /// Applies `ops` in order, durably, all or nothing.
    fn write(&mut self, ops: &[StoreOp]) -> Result<(), StoreError>;
}

/// Hadoop's ZooKeeper store class: it selects [`ZkStore`].
pub const ZK_STORE_CLASS: &str =
    "org.apache.hadoop.yarn.server.resourcemanager.recovery.ZKRMStateStore";

/// Which store holds the state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreBackend {
    /// The embedded store at `spindle.resourcemanager.state-store.path`.
    Embedded { path: PathBuf },
    /// The ZooKeeper store.
    ZooKeeper(ZkStoreConf),
}

/// The store settings the RM reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreConf {
    pub backend: StoreBackend,
    /// `yarn.resourcemanager.state-store.max-completed-applications`, at most
    /// `yarn.resourcemanager.max-completed-applications` (as Hadoop's RMAppManager).
    pub max_completed: usize,
}

impl StoreConf {
    /// The store's file (`spindle.resourcemanager.state-store.path`, a
    /// `file://` prefix allowed), whether recovery is on or not.
    pub fn path(conf: &Configuration) -> Result<PathBuf, String> {
        let path_key = "spindle.resourcemanager.state-store.path";
        let path = conf.get_trimmed(path_key).unwrap_or_default();
        if path.is_empty() {
            return Err(format!("{path_key} is empty"));
        }
        Ok(PathBuf::from(path.strip_prefix("file://").unwrap_or(&path)))
    }

    /// `None` when `yarn.resourcemanager.recovery.enabled` is false; an
    /// error for settings the chosen store cannot work with.
    pub fn from_conf(conf: &Configuration) -> Result<Option<StoreConf>, String> {
        let enabled = conf
            .get_bool("yarn.resourcemanager.recovery.enabled")
            .map_err(|e| e.to_string())?;
        if !enabled {
            return Ok(None);
        }
        let class_key = "yarn.resourcemanager.store.class";
        let class = conf.get_trimmed(class_key).unwrap_or_default();
        let zookeeper = class == ZK_STORE_CLASS || class.ends_with(".ZKRMStateStore");
        let number = |key: &str| -> Result<usize, String> {
            Ok(conf.get_i64(key).map_err(|e| e.to_string())?.max(0) as usize)
        };
        let in_memory = number("yarn.resourcemanager.max-completed-applications")?;
        let max_completed =
            number("yarn.resourcemanager.state-store.max-completed-applications")?.min(in_memory);
        let backend = if zookeeper {
            StoreBackend::ZooKeeper(
                ZkStoreConf::from_conf(conf).map_err(|e| format!("{class_key} = {class}: {e}"))?,
            )
        } else {
            let path = StoreConf::path(conf)?;
            if !class.is_empty() {
                tracing::info!(
                    class = %class,
                    path = %path.display(),
                    "the embedded state store stands in for {class_key}"
                );
            }
            StoreBackend::Embedded { path }
        };
        Ok(Some(StoreConf {
            backend,
            max_completed,
        }))
    }

    /// Where the store is, for messages.
    pub fn describe(&self) -> String {
        match &self.backend {
            StoreBackend::Embedded { path } => path.display().to_string(),
            StoreBackend::ZooKeeper(zk) => format!("zookeeper {}{}", zk.zk.address, zk.root()),
        }
    }
}

/// Opens the configured store for an RM starting with cluster timestamp `cluster_ts`.
pub fn open(
    conf: &StoreConf,
    cluster_ts: i64,
) -> Result<(Box<dyn StateStore>, Recovered), StoreError> {
    match &conf.backend {
        StoreBackend::Embedded { path } => {
            let (db, recovered) = RedbStore::open(path, cluster_ts)?;
            Ok((Box::new(db), recovered))
        }
        StoreBackend::ZooKeeper(zk) => {
            let (db, recovered) = ZkStore::open(zk, cluster_ts)?;
            Ok((Box::new(db), recovered))
        }
    }
}

/// Wipes the configured store (`--format-state-store`), whether recovery is on or not,
/// and says what happened: the embedded file at `spindle.resourcemanager.state-store.path`,
/// or the ZooKeeper store's root znode when `yarn.resourcemanager.store.class` names
/// `ZKRMStateStore`.
pub fn format_configured(conf: &Configuration) -> Result<String, String> {
    let class = conf
        .get_trimmed("yarn.resourcemanager.store.class")
        .unwrap_or_default();
    if class == ZK_STORE_CLASS || class.ends_with(".ZKRMStateStore") {
        let zk = ZkStoreConf::from_conf(conf)?;
        let place = format!("zookeeper {}{}", zk.zk.address, zk.root());
        let wiped = zk_store::format(&zk).map_err(|e| e.to_string())?;
        return Ok(if wiped {
            format!("state store {place} wiped")
        } else {
            format!("state store {place} did not exist")
        });
    }
    let path = StoreConf::path(conf)?;
    let wiped = format(&path).map_err(|e| e.to_string())?;
    Ok(if wiped {
        format!("state store {} wiped", path.display())
    } else {
        format!("state store {} did not exist", path.display())
    })
}

/// Wipes the store at `path` (`--format-state-store`): the file goes.
pub fn format(path: &Path) -> Result<bool, StoreError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(StoreError {
            path: path.display().to_string(),
            what: format!("cannot remove it: {e}"),
        }),
    }
}

/// Counts and times of store writes, readable from any task.
#[derive(Debug, Default)]
pub struct StoreStats {
    writes: AtomicU64,
    ops: AtomicU64,
    failures: AtomicU64,
    total_us: AtomicU64,
    max_us: AtomicU64,
    /// Writes by duration: bucket `i` counts writes under `2^i` µs (the last
    /// bucket everything longer).
    buckets: [AtomicU64; 24],
}

/// A snapshot of [`StoreStats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreFigures {
    pub writes: u64,
    pub ops: u64,
    pub failures: u64,
    pub mean_us: u64,
    pub max_us: u64,
    /// Upper bounds (powers of two, µs) of the 50th and 99th percentiles.
    pub p50_us: u64,
    pub p99_us: u64,
}

impl StoreStats {
    /// Records one write of `ops` operations that took `took`.
    pub fn record(&self, ops: usize, took: Duration, ok: bool) {
        let us = took.as_micros().min(u64::MAX as u128) as u64;
        self.writes.fetch_add(1, Ordering::Relaxed);
        self.ops.fetch_add(ops as u64, Ordering::Relaxed);
        if !ok {
            self.failures.fetch_add(1, Ordering::Relaxed);
        }
        self.total_us.fetch_add(us, Ordering::Relaxed);
        self.max_us.fetch_max(us, Ordering::Relaxed);
        let bucket = (64 - us.leading_zeros() as usize).min(self.buckets.len() - 1);
        self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
    }

    pub fn figures(&self) -> StoreFigures {
        let writes = self.writes.load(Ordering::Relaxed);
        let counts: Vec<u64> = self
            .buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect();
        let quantile = |q: f64| -> u64 {
            let want = ((writes as f64) * q).ceil().max(1.0) as u64;
            let mut seen = 0;
            for (i, c) in counts.iter().enumerate() {
                seen += c;
                if seen >= want {
                    return 1u64 << i;
                }
            }
            0
        };
        StoreFigures {
            writes,
            ops: self.ops.load(Ordering::Relaxed),
            failures: self.failures.load(Ordering::Relaxed),
            mean_us: self.total_us.load(Ordering::Relaxed) / writes.max(1),
            max_us: self.max_us.load(Ordering::Relaxed),
            p50_us: if writes == 0 { 0 } else { quantile(0.5) },
            p99_us: if writes == 0 { 0 } else { quantile(0.99) },
        }
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod zk_tests;
