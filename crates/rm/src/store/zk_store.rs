//! The ZooKeeper state store, for RMs in HA: the standby that takes over reads what the
//! active wrote.
//!
//! Layout under `<yarn.resourcemanager.zk-state-store.parent-path>/ZKRMStateRoot` (Spindle's
//! own znodes, the same JSON records as the embedded store; a Hadoop RM's znodes beside
//! them are left alone):
//!
//! | znode | data |
//! |---|---|
//! | `SpindleVersion` | the format version, decimal |
//! | `SpindleMeta` | `{"epoch":…,"cluster_ts":…}` |
//! | `SpindleKeys` | the token master keys |
//! | `SpindleApps/<application id>` | one application |
//! | `SpindleDelegationKeys` | the RM delegation-token keys and sequence number |
//! | `SpindleDelegationTokens/<sequence number>` | one live RM delegation token |
//! | `SpindleFencing` | the RM that opened the store last |
//!
//! Fencing: opening the store bumps the version of `SpindleFencing` (in the same multi-op
//! that records the new epoch), and every write is a multi-op that first checks that
//! version. Once another RM has opened the store, a deposed active's writes fail, and the
//! RM stops serving on a failed write. ZooKeeper answers a write after the quorum has
//! committed it to its transaction log, so a write is durable before it returns.
//!
//! An application record larger than `yarn.resourcemanager.zk-max-znode-size.bytes` (1 MB
//! by default, ZooKeeper's own `jute.maxbuffer`) is refused with the application named.

use std::collections::HashSet;
use std::future::Future;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use spindle_common::conf::Configuration;
use zookeeper_client::{Client, CreateMode, MultiWriteError, MultiWriteResult};

use super::{Recovered, StateStore, StoreError, StoreOp, StoredApp, StoredKeys, FORMAT_VERSION};
use crate::ha::ZkConf;

/// Hadoop's root znode name under the parent path (`ZKRMStateStore.ROOT_ZNODE_NAME`).
pub const ROOT_ZNODE_NAME: &str = "ZKRMStateRoot";
const VERSION_NODE: &str = "SpindleVersion";
const META_NODE: &str = "SpindleMeta";
const KEYS_NODE: &str = "SpindleKeys";
const APPS_NODE: &str = "SpindleApps";
const DELEGATION_KEYS_NODE: &str = "SpindleDelegationKeys";
const DELEGATION_TOKENS_NODE: &str = "SpindleDelegationTokens";
const FENCING_NODE: &str = "SpindleFencing";

/// The ZooKeeper store's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZkStoreConf {
    pub zk: ZkConf,
    /// `yarn.resourcemanager.zk-state-store.parent-path` (default `/rmstore`).
    pub parent: String,
    /// `yarn.resourcemanager.zk-max-znode-size.bytes` (default 1048576).
    pub max_znode_bytes: usize,
    /// Who opens the store, written to the fencing znode (the RM's HA id, or its host).
    pub owner: String,
}

impl ZkStoreConf {
    pub fn from_conf(conf: &Configuration) -> Result<ZkStoreConf, String> {
        let zk = ZkConf::from_conf(conf)?;
        let parent_key = "yarn.resourcemanager.zk-state-store.parent-path";
        let parent = conf
            .get_trimmed(parent_key)
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| "/rmstore".into());
        if !parent.starts_with('/') {
            return Err(format!(
                "{parent_key} = {parent:?}: not an absolute znode path"
            ));
        }
        let size_key = "yarn.resourcemanager.zk-max-znode-size.bytes";
        let max_znode_bytes = match conf.get_trimmed(size_key).filter(|v| !v.is_empty()) {
            None => 1024 * 1024,
            Some(v) => v
                .parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("{size_key} = {v:?}: not a positive number of bytes"))?,
        };
        let owner = conf
            .get_trimmed("yarn.resourcemanager.ha.id")
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| "rm".into());
        Ok(ZkStoreConf {
            zk,
            parent: parent.trim_end_matches('/').to_string(),
            max_znode_bytes,
            owner,
        })
    }

    /// `<parent>/ZKRMStateRoot`.
    pub fn root(&self) -> String {
        format!("{}/{ROOT_ZNODE_NAME}", self.parent)
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Meta {
    epoch: u64,
    cluster_ts: i64,
}

/// The ZooKeeper state store. It runs its ZooKeeper session on a small runtime of its
/// own, so its blocking `write` can be called from the blocking pool and `open` from
/// anywhere.
pub struct ZkStore {
    runtime: Option<tokio::runtime::Runtime>,
    client: Client,
    conf: ZkStoreConf,
    root: String,
    /// The fencing znode's version this store set when it opened.
    fence_version: i32,
    /// Applications that have a znode.
    apps: HashSet<String>,
    /// Delegation tokens (sequence numbers) that have a znode.
    tokens: HashSet<i32>,
    /// How long one ZooKeeper operation may take before the write fails.
    op_timeout: Duration,
}

impl std::fmt::Debug for ZkStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZkStore")
            .field("address", &self.conf.zk.address)
            .field("root", &self.root)
            .field("fence_version", &self.fence_version)
            .finish()
    }
}

impl Drop for ZkStore {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// Runs `fut` on `rt` and waits for it on this thread.
fn run_on<T: Send + 'static>(
    rt: &tokio::runtime::Runtime,
    timeout: Duration,
    fut: impl Future<Output = Result<T, String>> + Send + 'static,
) -> Result<T, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    rt.spawn(async move {
        let out = match tokio::time::timeout(timeout, fut).await {
            Ok(out) => out,
            Err(_) => Err(format!("ZooKeeper did not answer within {timeout:?}")),
        };
        let _ = tx.send(out);
    });
    rx.recv()
        .map_err(|_| "the ZooKeeper client stopped".to_string())?
}

fn node(root: &str, name: &str) -> String {
    format!("{root}/{name}")
}

/// Reads `path`'s data and version; `None` for no znode.
async fn read(client: &Client, path: &str) -> Result<Option<(Vec<u8>, i32)>, String> {
    match client.get_data(path).await {
        Ok((data, stat)) => Ok(Some((data, stat.version))),
        Err(zookeeper_client::Error::NoNode) => Ok(None),
        Err(e) => Err(format!("cannot read {path}: {e}")),
    }
}

async fn create_if_missing(client: &Client, zk: &ZkConf, path: &str) -> Result<(), String> {
    match client
        .create(path, &[], &CreateMode::Persistent.with_acls(zk.acls()))
        .await
    {
        Ok(_) | Err(zookeeper_client::Error::NodeExists) => Ok(()),
        Err(e) => Err(format!("cannot create {path}: {e}")),
    }
}

struct Opened {
    client: Client,
    recovered: Recovered,
    fence_version: i32,
    apps: HashSet<String>,
    tokens: HashSet<i32>,
}

async fn open_async(conf: ZkStoreConf, cluster_ts: i64) -> Result<Opened, String> {
    let zk = &conf.zk;
    let client = zk
        .connect()
        .await
        .map_err(|e| format!("no ZooKeeper session: {e}"))?;
    let root = conf.root();
    zk.ensure_path(&client, &root)
        .await
        .map_err(|e| format!("cannot create {root}: {e}"))?;
    for name in [
        VERSION_NODE,
        META_NODE,
        KEYS_NODE,
        APPS_NODE,
        DELEGATION_KEYS_NODE,
        DELEGATION_TOKENS_NODE,
        FENCING_NODE,
    ] {
        create_if_missing(&client, zk, &node(&root, name)).await?;
    }
    // The format first: a newer store is not read any further.
    let version_path = node(&root, VERSION_NODE);
    let (version, _) = read(&client, &version_path).await?.unwrap_or_default();
    if !version.is_empty() {
        let text = String::from_utf8_lossy(&version);
        let v: u64 = text.trim().parse().map_err(|_| {
            format!("znode {version_path} is malformed: {text:?} is not a format version")
        })?;
        if v > u64::from(FORMAT_VERSION) {
            return Err(format!(
                "znode {version_path}: the store was written in format version {v}, newer than \
                 this RM understands ({FORMAT_VERSION}); run the newer RM or wipe the store"
            ));
        }
    }
    let meta_path = node(&root, META_NODE);
    let (meta_bytes, meta_version) = read(&client, &meta_path)
        .await?
        .ok_or_else(|| format!("znode {meta_path} vanished"))?;
    let last = if meta_bytes.is_empty() {
        None
    } else {
        let meta: Meta = serde_json::from_slice(&meta_bytes)
            .map_err(|e| format!("znode {meta_path} is malformed: {e}"))?;
        Some(meta)
    };
    let mut recovered = Recovered::starting(
        last.as_ref().map(|m| m.epoch),
        last.as_ref().map(|m| m.cluster_ts),
        cluster_ts,
    );
    let keys_path = node(&root, KEYS_NODE);
    if let Some((bytes, _)) = read(&client, &keys_path).await? {
        if !bytes.is_empty() {
            let keys: StoredKeys = serde_json::from_slice(&bytes)
                .map_err(|e| format!("znode {keys_path} is malformed: {e}"))?;
            recovered.keys = Some(keys);
        }
    }
    let dt_keys_path = node(&root, DELEGATION_KEYS_NODE);
    if let Some((bytes, _)) = read(&client, &dt_keys_path).await? {
        if !bytes.is_empty() {
            let keys = serde_json::from_slice(&bytes)
                .map_err(|e| format!("znode {dt_keys_path} is malformed: {e}"))?;
            recovered.delegation_keys = Some(keys);
        }
    }
    let tokens_path = node(&root, DELEGATION_TOKENS_NODE);
    let mut tokens = HashSet::new();
    for child in client
        .list_children(&tokens_path)
        .await
        .map_err(|e| format!("cannot list {tokens_path}: {e}"))?
    {
        let path = node(&tokens_path, &child);
        let bytes = match client.get_data(&path).await {
            Ok((bytes, _)) => bytes,
            Err(zookeeper_client::Error::NoNode) => continue,
            Err(e) => return Err(format!("cannot read {path}: {e}")),
        };
        let token: super::StoredDelegationToken = serde_json::from_slice(&bytes)
            .map_err(|e| format!("znode {path} is malformed: {e}"))?;
        tokens.insert(token.sequence);
        recovered.delegation_tokens.push(token);
    }
    let apps_path = node(&root, APPS_NODE);
    let mut children = client
        .list_children(&apps_path)
        .await
        .map_err(|e| format!("cannot list {apps_path}: {e}"))?;
    children.sort();
    let mut apps = HashSet::new();
    // Pipelined: the client sends each request when it is made, so a window of reads is
    // in flight at once instead of one round trip per application.
    for window in children.chunks(256) {
        let paths: Vec<String> = window.iter().map(|c| node(&apps_path, c)).collect();
        let reads: Vec<_> = paths.iter().map(|p| client.get_data(p)).collect();
        for ((child, path), read) in window.iter().zip(&paths).zip(reads) {
            let bytes = match read.await {
                Ok((bytes, _)) => bytes,
                Err(zookeeper_client::Error::NoNode) => continue,
                Err(e) => return Err(format!("cannot read {path}: {e}")),
            };
            let app: StoredApp = serde_json::from_slice(&bytes)
                .map_err(|e| format!("znode {path} is malformed: {e}"))?;
            apps.insert(child.clone());
            recovered.apps.push(app);
        }
    }
    // Take the store: bump the fencing znode and record this start, atomically, and only
    // if no other RM changed the meta record since it was read.
    let meta = serde_json::to_vec(&Meta {
        epoch: recovered.epoch,
        cluster_ts: recovered.cluster_ts,
    })
    .map_err(|e| e.to_string())?;
    let fencing_path = node(&root, FENCING_NODE);
    let mut multi = client.new_multi_writer();
    let owner = conf.owner.as_bytes();
    multi
        .add_set_data(&fencing_path, owner, None)
        .and_then(|_| multi.add_set_data(&meta_path, &meta, Some(meta_version)))
        .and_then(|_| {
            multi.add_set_data(&version_path, FORMAT_VERSION.to_string().as_bytes(), None)
        })
        .map_err(|e| e.to_string())?;
    let results = multi.commit().await.map_err(|e| match e {
        MultiWriteError::OperationFailed {
            index: 1,
            source: zookeeper_client::Error::BadVersion,
        } => format!("another ResourceManager opened the store at {root} at the same time"),
        e => format!("cannot take the store at {root}: {e}"),
    })?;
    let fence_version = match results.first() {
        Some(MultiWriteResult::SetData { stat }) => stat.version,
        other => return Err(format!("unexpected answer from ZooKeeper: {other:?}")),
    };
    Ok(Opened {
        client,
        recovered,
        fence_version,
        apps,
        tokens,
    })
}

impl ZkStore {
    /// Opens (or creates) the store for an RM starting with cluster timestamp
    /// `cluster_ts`: checks the format, reads everything, then records the new epoch and
    /// takes the fencing znode in one multi-op.
    pub fn open(conf: &ZkStoreConf, cluster_ts: i64) -> Result<(ZkStore, Recovered), StoreError> {
        let root = conf.root();
        let err = |what: String| StoreError {
            path: format!("zookeeper {}{}", conf.zk.address, root),
            what,
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("zk-state-store")
            .enable_all()
            .build()
            .map_err(|e| err(format!("cannot start its client runtime: {e}")))?;
        // Reading 10,000 records takes a while: the bound is generous, and only stops a hang.
        let open_timeout = conf.zk.session_timeout * 6 + Duration::from_secs(60);
        let opened = run_on(&runtime, open_timeout, open_async(conf.clone(), cluster_ts));
        let opened = match opened {
            Ok(o) => o,
            Err(what) => {
                runtime.shutdown_background();
                return Err(err(what));
            }
        };
        let recovered = opened.recovered.clone();
        Ok((
            ZkStore {
                runtime: Some(runtime),
                client: opened.client,
                conf: conf.clone(),
                root,
                fence_version: opened.fence_version,
                apps: opened.apps,
                tokens: opened.tokens,
                op_timeout: conf.zk.session_timeout * 2,
            },
            recovered,
        ))
    }

    fn error(&self, what: String) -> StoreError {
        StoreError {
            path: self.describe(),
            what,
        }
    }

    fn apply(&mut self, ops: &[StoreOp]) -> Result<(), StoreError> {
        if ops.is_empty() {
            return Ok(());
        }
        let apps_path = node(&self.root, APPS_NODE);
        // Build the multi-op: the fencing check first, then every change.
        enum Change {
            Create(String, Vec<u8>),
            Set(String, Vec<u8>),
            Delete(String),
        }
        let mut changes = Vec::new();
        let mut exists = self.apps.clone();
        let mut tokens = self.tokens.clone();
        let tokens_path = node(&self.root, DELEGATION_TOKENS_NODE);
        let mut total = 0usize;
        for op in ops {
            match op {
                StoreOp::PutApp(app) => {
                    let bytes = serde_json::to_vec(app).map_err(|e| self.error(e.to_string()))?;
                    if bytes.len() > self.conf.max_znode_bytes {
                        return Err(self.error(format!(
                            "the record of {} is {} bytes, over \
                             yarn.resourcemanager.zk-max-znode-size.bytes ({}); it is not stored",
                            app.id,
                            bytes.len(),
                            self.conf.max_znode_bytes
                        )));
                    }
                    total += bytes.len();
                    let path = node(&apps_path, &app.id);
                    if exists.insert(app.id.clone()) {
                        changes.push(Change::Create(path, bytes));
                    } else {
                        changes.push(Change::Set(path, bytes));
                    }
                }
                StoreOp::RemoveApp(id) => {
                    let id = id.to_string();
                    if exists.remove(&id) {
                        changes.push(Change::Delete(node(&apps_path, &id)));
                    }
                }
                StoreOp::PutKeys(keys) => {
                    let bytes = serde_json::to_vec(keys).map_err(|e| self.error(e.to_string()))?;
                    total += bytes.len();
                    changes.push(Change::Set(node(&self.root, KEYS_NODE), bytes));
                }
                StoreOp::PutDelegationKeys(keys) => {
                    let bytes = serde_json::to_vec(keys).map_err(|e| self.error(e.to_string()))?;
                    total += bytes.len();
                    changes.push(Change::Set(node(&self.root, DELEGATION_KEYS_NODE), bytes));
                }
                StoreOp::PutDelegationToken(token) => {
                    let bytes = serde_json::to_vec(token).map_err(|e| self.error(e.to_string()))?;
                    total += bytes.len();
                    let path = node(&tokens_path, &token.sequence.to_string());
                    if tokens.insert(token.sequence) {
                        changes.push(Change::Create(path, bytes));
                    } else {
                        changes.push(Change::Set(path, bytes));
                    }
                }
                StoreOp::RemoveDelegationToken(sequence) => {
                    if tokens.remove(sequence) {
                        changes.push(Change::Delete(node(&tokens_path, &sequence.to_string())));
                    }
                }
            }
        }
        if total > self.conf.max_znode_bytes {
            return Err(self.error(format!(
                "one write of {total} bytes is over yarn.resourcemanager.zk-max-znode-size.bytes ({}), \
                 ZooKeeper's limit for one request",
                self.conf.max_znode_bytes
            )));
        }
        let client = self.client.clone();
        let fencing = node(&self.root, FENCING_NODE);
        let fence_version = self.fence_version;
        let acl = self.conf.zk.acl.clone();
        let root = self.root.clone();
        let result = match &self.runtime {
            Some(rt) => run_on(rt, self.op_timeout, async move {
                let acls = zookeeper_client::Acls::new(&acl);
                let mut multi = client.new_multi_writer();
                multi
                    .add_check_version(&fencing, fence_version)
                    .map_err(|e| e.to_string())?;
                for change in &changes {
                    match change {
                        Change::Create(path, data) => {
                            multi.add_create(path, data, &CreateMode::Persistent.with_acls(acls))
                        }
                        Change::Set(path, data) => multi.add_set_data(path, data, None),
                        Change::Delete(path) => multi.add_delete(path, None),
                    }
                    .map_err(|e| e.to_string())?;
                }
                multi.commit().await.map(|_| ()).map_err(|e| match e {
                    MultiWriteError::OperationFailed {
                        index: 0,
                        source: zookeeper_client::Error::BadVersion,
                    } => format!(
                        "fenced: another ResourceManager has opened the store since this one did \
                         (the fencing znode {root}/{FENCING_NODE} moved past version {fence_version}); \
                         this RM must not write"
                    ),
                    e => format!("the write failed: {e}"),
                })
            }),
            None => Err("the store is closed".into()),
        };
        result.map_err(|what| self.error(what))?;
        self.apps = exists;
        self.tokens = tokens;
        Ok(())
    }
}

/// Deletes `path` and everything under it; false when it did not exist.
async fn delete_tree(client: &Client, path: &str) -> Result<bool, String> {
    // Depth first, without recursion in async code: collect, then delete leaves first.
    let mut order = vec![path.to_string()];
    let mut i = 0;
    while i < order.len() {
        let here = order[i].clone();
        match client.list_children(&here).await {
            Ok(children) => order.extend(children.into_iter().map(|c| node(&here, &c))),
            Err(zookeeper_client::Error::NoNode) if i == 0 => return Ok(false),
            Err(zookeeper_client::Error::NoNode) => {}
            Err(e) => return Err(format!("cannot list {here}: {e}")),
        }
        i += 1;
    }
    for path in order.iter().rev() {
        match client.delete(path, None).await {
            Ok(()) | Err(zookeeper_client::Error::NoNode) => {}
            Err(e) => return Err(format!("cannot delete {path}: {e}")),
        }
    }
    Ok(true)
}

/// Wipes the store (`--format-state-store`, as Hadoop's `ZKRMStateStore.deleteStore`):
/// the root znode and everything under it go. False when there was none.
pub fn format(conf: &ZkStoreConf) -> Result<bool, StoreError> {
    let root = conf.root();
    let err = |what: String| StoreError {
        path: format!("zookeeper {}{}", conf.zk.address, root),
        what,
    };
    // A runtime of its own, waited on from this thread: callable from async code too.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| err(format!("cannot start its client runtime: {e}")))?;
    let zk = conf.zk.clone();
    let timeout = conf.zk.session_timeout * 6 + Duration::from_secs(60);
    let target = root.clone();
    let wiped = run_on(&runtime, timeout, async move {
        let client = zk
            .connect()
            .await
            .map_err(|e| format!("no ZooKeeper session: {e}"))?;
        delete_tree(&client, &target).await
    });
    runtime.shutdown_background();
    wiped.map_err(err)
}

impl StateStore for ZkStore {
    fn describe(&self) -> String {
        format!("zookeeper {}{}", self.conf.zk.address, self.root)
    }

    fn write(&mut self, ops: &[StoreOp]) -> Result<(), StoreError> {
        self.apply(ops)
    }
}
