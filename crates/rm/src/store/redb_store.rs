//! The embedded store: one `redb` file on local disk.
//!
//! Three tables: `meta` (format version, epoch, last cluster timestamp, token
//! master keys, delegation-token keys), `apps` (one JSON record per
//! application, keyed by its id) and `delegation-tokens` (one JSON record
//! per live RM delegation token, keyed by its sequence number). Every write is one transaction committed with redb's default
//! durability (fsync'd before `commit` returns).

use std::path::{Path, PathBuf};

use redb::{Database, ReadableTable, ReadableTableMetadata, TableDefinition};

use super::{Recovered, StateStore, StoreError, StoreOp, StoredApp, StoredKeys};

pub(super) const META: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("meta");
pub(super) const APPS: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("apps");
/// RM delegation tokens by sequence number.
pub(super) const DELEGATION_TOKENS: TableDefinition<'_, i32, &[u8]> =
    TableDefinition::new("delegation-tokens");

/// The record layout this binary writes and understands.
pub const FORMAT_VERSION: u32 = 1;

pub(super) const VERSION_KEY: &str = "format-version";
const EPOCH_KEY: &str = "epoch";
const CLUSTER_TS_KEY: &str = "cluster-timestamp";
const KEYS_KEY: &str = "master-keys";
const DELEGATION_KEYS_KEY: &str = "delegation-keys";

/// The embedded state store.
pub struct RedbStore {
    path: PathBuf,
    db: Database,
}

impl std::fmt::Debug for RedbStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedbStore")
            .field("path", &self.path)
            .finish()
    }
}

fn u64_bytes(v: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(v.try_into().ok()?))
}

impl RedbStore {
    /// Opens (or creates) the store at `path` for an RM starting with
    /// cluster timestamp `cluster_ts`: checks the format, reads everything,
    /// and records the new epoch and timestamp before answering.
    pub fn open(path: &Path, cluster_ts: i64) -> Result<(RedbStore, Recovered), StoreError> {
        let err = |what: String| StoreError {
            path: path.display().to_string(),
            what,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| err(format!("cannot create {}: {e}", dir.display())))?;
        }
        let unreadable = |e: String| {
            err(format!(
                "cannot open it ({e}); it is not a store this RM can read \
                 (`spindle resourcemanager --format-state-store` wipes it)"
            ))
        };
        // redb asserts (panics) on some damaged files, such as a truncated
        // one: that is a damaged store too, not a crash of the RM.
        let opened = std::panic::catch_unwind(|| Database::create(path));
        let db = match opened {
            Ok(Ok(db)) => db,
            Ok(Err(redb::DatabaseError::DatabaseAlreadyOpen)) => {
                return Err(err(
                    "it is already open (another ResourceManager uses this store)".into(),
                ))
            }
            Ok(Err(e)) => return Err(unreadable(e.to_string())),
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "damaged".into());
                return Err(unreadable(format!("the file is damaged: {what}")));
            }
        };
        let mut store = RedbStore {
            path: path.to_path_buf(),
            db,
        };
        let recovered = store.start(cluster_ts).map_err(err)?;
        Ok((store, recovered))
    }

    fn start(&mut self, cluster_ts: i64) -> Result<Recovered, String> {
        let txn = self.db.begin_write().map_err(|e| e.to_string())?;
        let mut recovered: Recovered;
        {
            let mut meta = txn.open_table(META).map_err(|e| e.to_string())?;
            let version = meta
                .get(VERSION_KEY)
                .map_err(|e| e.to_string())?
                .map(|v| u64_bytes(v.value()));
            match version {
                None => {}
                Some(Some(v)) if v <= u64::from(FORMAT_VERSION) => {}
                Some(Some(v)) => {
                    return Err(format!(
                        "it was written in format version {v}, newer than this RM understands \
                         ({FORMAT_VERSION}); run the newer RM or wipe it with \
                         `spindle resourcemanager --format-state-store`"
                    ))
                }
                Some(None) => return Err("its format-version record is malformed".into()),
            }
            let epoch = match meta.get(EPOCH_KEY).map_err(|e| e.to_string())? {
                None => None,
                Some(v) => Some(
                    u64_bytes(v.value())
                        .ok_or_else(|| "its epoch record is malformed".to_string())?,
                ),
            };
            let last_cluster_ts = match meta.get(CLUSTER_TS_KEY).map_err(|e| e.to_string())? {
                None => None,
                Some(v) => Some(
                    u64_bytes(v.value())
                        .ok_or_else(|| "its cluster-timestamp record is malformed".to_string())?
                        as i64,
                ),
            };
            recovered = Recovered::starting(epoch, last_cluster_ts, cluster_ts);
            if let Some(v) = meta.get(KEYS_KEY).map_err(|e| e.to_string())? {
                let keys: StoredKeys = serde_json::from_slice(v.value())
                    .map_err(|e| format!("its master-keys record is malformed: {e}"))?;
                recovered.keys = Some(keys);
            }
            if let Some(v) = meta.get(DELEGATION_KEYS_KEY).map_err(|e| e.to_string())? {
                let keys = serde_json::from_slice(v.value())
                    .map_err(|e| format!("its delegation-keys record is malformed: {e}"))?;
                recovered.delegation_keys = Some(keys);
            }
            meta.insert(
                VERSION_KEY,
                u64::from(FORMAT_VERSION).to_le_bytes().as_slice(),
            )
            .map_err(|e| e.to_string())?;
            meta.insert(EPOCH_KEY, recovered.epoch.to_le_bytes().as_slice())
                .map_err(|e| e.to_string())?;
            meta.insert(
                CLUSTER_TS_KEY,
                (recovered.cluster_ts as u64).to_le_bytes().as_slice(),
            )
            .map_err(|e| e.to_string())?;
            let apps = txn.open_table(APPS).map_err(|e| e.to_string())?;
            for entry in apps.iter().map_err(|e| e.to_string())? {
                let (k, v) = entry.map_err(|e| e.to_string())?;
                let app: StoredApp = serde_json::from_slice(v.value())
                    .map_err(|e| format!("the record of {} is malformed: {e}", k.value()))?;
                recovered.apps.push(app);
            }
            let tokens = txn
                .open_table(DELEGATION_TOKENS)
                .map_err(|e| e.to_string())?;
            for entry in tokens.iter().map_err(|e| e.to_string())? {
                let (k, v) = entry.map_err(|e| e.to_string())?;
                let token = serde_json::from_slice(v.value())
                    .map_err(|e| format!("delegation token {} is malformed: {e}", k.value()))?;
                recovered.delegation_tokens.push(token);
            }
        }
        txn.commit().map_err(|e| e.to_string())?;
        Ok(recovered)
    }

    fn apply(&mut self, ops: &[StoreOp]) -> Result<(), String> {
        let txn = self.db.begin_write().map_err(|e| e.to_string())?;
        {
            let mut apps = txn.open_table(APPS).map_err(|e| e.to_string())?;
            let mut meta = txn.open_table(META).map_err(|e| e.to_string())?;
            let mut tokens = txn
                .open_table(DELEGATION_TOKENS)
                .map_err(|e| e.to_string())?;
            for op in ops {
                match op {
                    StoreOp::PutApp(app) => {
                        let bytes = serde_json::to_vec(app).map_err(|e| e.to_string())?;
                        apps.insert(app.id.as_str(), bytes.as_slice())
                            .map_err(|e| e.to_string())?;
                    }
                    StoreOp::RemoveApp(id) => {
                        apps.remove(id.to_string().as_str())
                            .map_err(|e| e.to_string())?;
                    }
                    StoreOp::PutKeys(keys) => {
                        let bytes = serde_json::to_vec(keys).map_err(|e| e.to_string())?;
                        meta.insert(KEYS_KEY, bytes.as_slice())
                            .map_err(|e| e.to_string())?;
                    }
                    StoreOp::PutDelegationKeys(keys) => {
                        let bytes = serde_json::to_vec(keys).map_err(|e| e.to_string())?;
                        meta.insert(DELEGATION_KEYS_KEY, bytes.as_slice())
                            .map_err(|e| e.to_string())?;
                    }
                    StoreOp::PutDelegationToken(token) => {
                        let bytes = serde_json::to_vec(token).map_err(|e| e.to_string())?;
                        tokens
                            .insert(token.sequence, bytes.as_slice())
                            .map_err(|e| e.to_string())?;
                    }
                    StoreOp::RemoveDelegationToken(sequence) => {
                        tokens.remove(*sequence).map_err(|e| e.to_string())?;
                    }
                }
            }
        }
        txn.commit().map_err(|e| e.to_string())
    }

    /// How many applications the store holds.
    pub fn app_count(&self) -> Result<u64, StoreError> {
        let count = || -> Result<u64, String> {
            let txn = self.db.begin_read().map_err(|e| e.to_string())?;
            let apps = match txn.open_table(APPS) {
                Ok(t) => t,
                Err(redb::TableError::TableDoesNotExist(_)) => return Ok(0),
                Err(e) => return Err(e.to_string()),
            };
            apps.len().map_err(|e| e.to_string())
        };
        count().map_err(|what| StoreError {
            path: self.path.display().to_string(),
            what,
        })
    }
}

impl StateStore for RedbStore {
    fn describe(&self) -> String {
        self.path.display().to_string()
    }

    fn write(&mut self, ops: &[StoreOp]) -> Result<(), StoreError> {
        self.apply(ops).map_err(|what| StoreError {
            path: self.path.display().to_string(),
            what,
        })
    }
}
