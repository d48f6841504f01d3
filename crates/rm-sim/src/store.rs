//! The state store of the simulation: in memory, shared by every RM of the
//! run, fenced as Hadoop's ZooKeeper store is (an RM writes only while no
//! later one has opened it), and made to fail on demand.

use std::collections::BTreeMap;

use spindle_rm::store::{
    Recovered, StoreError, StoreOp, StoredApp, StoredDelegationKeys, StoredDelegationToken,
    StoredKeys,
};

/// What the store holds between RM lives.
#[derive(Debug, Default)]
pub struct MemStore {
    apps: BTreeMap<String, StoredApp>,
    keys: Option<StoredKeys>,
    delegation_keys: Option<StoredDelegationKeys>,
    delegation_tokens: BTreeMap<i32, StoredDelegationToken>,
    last_epoch: Option<u64>,
    last_cluster_ts: Option<i64>,
    /// The epoch of the RM that opened it last: only it may write.
    fence: Option<u64>,
    /// Writes to fail from now on (one each), for store-failure faults.
    fail_writes: u32,
    /// Successful writes, and by which epoch (for the two-writers check).
    pub writes: u64,
}

impl MemStore {
    /// Opens the store for an RM asked to start at `cluster_ts`: the next
    /// epoch, everything held, and the fence moved to that epoch (a deposed
    /// RM's writes fail from now on).
    pub fn open(&mut self, cluster_ts: i64) -> Recovered {
        let mut recovered = Recovered::starting(self.last_epoch, self.last_cluster_ts, cluster_ts);
        recovered.apps = self.apps.values().cloned().collect();
        recovered.keys = self.keys.clone();
        recovered.delegation_keys = self.delegation_keys.clone();
        recovered.delegation_tokens = self.delegation_tokens.values().cloned().collect();
        self.last_epoch = Some(recovered.epoch);
        self.last_cluster_ts = Some(recovered.cluster_ts);
        self.fence = Some(recovered.epoch);
        recovered
    }

    /// Makes the next `n` writes fail.
    pub fn fail_next(&mut self, n: u32) {
        self.fail_writes += n;
    }

    /// Applies `ops` for the RM of `epoch`, all or nothing.
    pub fn write(&mut self, epoch: u64, ops: &[StoreOp]) -> Result<(), StoreError> {
        if self.fence != Some(epoch) {
            return Err(StoreError {
                path: "memory".into(),
                what: format!(
                    "fenced: epoch {epoch} writes, but the store belongs to epoch {:?}",
                    self.fence
                ),
            });
        }
        if self.fail_writes > 0 {
            self.fail_writes -= 1;
            return Err(StoreError {
                path: "memory".into(),
                what: "an injected write failure".into(),
            });
        }
        for op in ops {
            match op {
                StoreOp::PutApp(app) => {
                    self.apps.insert(app.id.clone(), (**app).clone());
                }
                StoreOp::RemoveApp(id) => {
                    self.apps.remove(&id.to_string());
                }
                StoreOp::PutKeys(keys) => self.keys = Some(keys.clone()),
                StoreOp::PutDelegationKeys(keys) => self.delegation_keys = Some(keys.clone()),
                StoreOp::PutDelegationToken(token) => {
                    self.delegation_tokens.insert(token.sequence, token.clone());
                }
                StoreOp::RemoveDelegationToken(sequence) => {
                    self.delegation_tokens.remove(sequence);
                }
            }
        }
        self.writes += 1;
        Ok(())
    }

    /// The epoch that may write.
    pub fn fence(&self) -> Option<u64> {
        self.fence
    }
}
