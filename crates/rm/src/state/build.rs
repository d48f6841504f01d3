//! The one door into an [`RmState`]: built for an activation from the
//! settings read at start-up and, with recovery on, from what the state
//! store held. The RM's activation (`crate::runtime::active`) and the whole-RM
//! simulation (`spindle-rm-sim`) both come in here, so a simulated restart
//! or failover builds its state exactly as a real one does.
//!
//! Nothing here does I/O or reads a clock: the store has been opened, the
//! time read and the key seed drawn by the caller.

use spindle_scheduler::{Scheduler, SchedulerConfig};
use tracing::warn;

use crate::acl::Acl;
use crate::cluster::nodes::{NodeConfig, NodeTable};
use crate::cluster::Cluster;
use crate::hosts::HostLists;
use crate::model::apps::AppTable;
use crate::model::delegation::{DelegationConf, DelegationTokens};
use crate::model::keys::{KeyRing, KeyRolling, TokenIssuer};
use crate::queue_files::QueueFile;
use crate::state::{RecoverySummary, RmState, Settings};
use crate::store::Recovered;
use crate::time::Now;

/// What every activation's state is built from: read and checked once.
#[derive(Debug, Clone)]
pub struct StateConf {
    /// Without the epoch, which each activation takes from its store.
    pub scheduler: SchedulerConfig,
    pub nodes: NodeConfig,
    pub hosts: HostLists,
    /// Without the cluster timestamp, which each activation sets.
    pub settings: Settings,
    pub queue_file: QueueFile,
    /// `yarn.resourcemanager.max-completed-applications`.
    pub max_completed: usize,
    pub am_max_attempts: i32,
    /// The rolling intervals (their last-rolled times are set at build).
    pub key_rolling: KeyRolling,
    pub container_token_expiry_ms: u64,
    /// The scheduler port's `host:port`, in AMRMTokens.
    pub scheduler_service: String,
    /// `yarn.resourcemanager.delegation.*`.
    pub delegation: DelegationConf,
}

/// With recovery on: what the store held and its bound on finished
/// applications (`yarn.resourcemanager.state-store.max-completed-applications`).
#[derive(Debug)]
pub struct FromStore {
    pub recovered: Recovered,
    pub max_completed: usize,
}

/// A state built for one activation.
#[derive(Debug)]
pub struct Built {
    pub state: RmState,
    /// The store already holds these keys (they came from it).
    pub keys_stored: bool,
    /// The activation's cluster timestamp.
    pub cluster_ts: i64,
    /// With recovery on: what recovery did.
    pub recovery: Option<RecoverySummary>,
}

impl StateConf {
    /// The state of an activation at `now`: `cluster_ts` is the store's
    /// answer with recovery on (`store`), else the wall time; keys come from
    /// the store, else from `key_seed`, which also seeds later rolls.
    pub fn build(
        &self,
        admin_acl: Acl,
        now: Now,
        mut store: Option<FromStore>,
        key_seed: u64,
    ) -> Result<Built, String> {
        use rand::SeedableRng;
        let cluster_ts = store
            .as_ref()
            .map_or(now.wall_ms as i64, |s| s.recovered.cluster_ts);
        let scheduler = Scheduler::new(SchedulerConfig {
            // Container ids carry the epoch (`container_e<epoch>_…`) as
            // Hadoop's do after a restart with recovery.
            epoch: store.as_ref().map_or(0, |s| {
                (s.recovered.epoch % (spindle_scheduler::MAX_EPOCH as u64 + 1)) as i64
            }),
            ..self.scheduler.clone()
        })
        .map_err(|e| e.to_string())?;
        let mut rng = rand::rngs::StdRng::seed_from_u64(key_seed);
        let stored_keys = store.as_ref().and_then(|s| s.recovered.keys.as_ref());
        let keys = match stored_keys {
            Some(k) => KeyRing::from_stored(k)?,
            None => KeyRing::generate(&mut rng),
        };
        let keys_stored = stored_keys.is_some();
        let mut state = RmState::new(
            Settings {
                cluster_ts,
                ..self.settings.clone()
            },
            Cluster::new(
                NodeTable::new(self.nodes.clone(), self.hosts.clone()),
                scheduler,
            ),
            AppTable::new(
                cluster_ts,
                self.max_completed,
                self.scheduler.maximum_allocation,
                self.am_max_attempts,
            )
            .with_limits(self.settings.limits.clone()),
            self.queue_file.clone(),
            admin_acl,
            TokenIssuer::new(
                keys,
                KeyRolling {
                    amrm_interval_ms: self.key_rolling.amrm_interval_ms,
                    container_interval_ms: self.key_rolling.container_interval_ms,
                    nm_interval_ms: self.key_rolling.nm_interval_ms,
                    activation_delay_ms: self.key_rolling.activation_delay_ms,
                    ..KeyRolling::daily(now.mono_ms)
                },
                self.scheduler_service.clone(),
                cluster_ts,
                self.container_token_expiry_ms,
                rand::Rng::random(&mut rng),
            ),
        );
        // Delegation tokens as the store kept them, else a fresh key.
        let stored_delegation = store.as_mut().and_then(|s| {
            let tokens = std::mem::take(&mut s.recovered.delegation_tokens);
            s.recovered.delegation_keys.take().map(|k| (k, tokens))
        });
        let delegation_seed = rand::Rng::random(&mut rng);
        let delegation = match &stored_delegation {
            Some((keys, tokens)) => {
                let (dt, dropped) = DelegationTokens::from_stored(
                    self.delegation,
                    keys,
                    tokens,
                    now.wall_ms as i64,
                    delegation_seed,
                )?;
                for token in dropped {
                    warn!(%token, "stored RM delegation token dropped: its master key is gone");
                }
                dt
            }
            None => DelegationTokens::new(self.delegation, now.wall_ms as i64, delegation_seed),
        };
        let recovery = store.map(|s| {
            state.enable_store(s.max_completed);
            state.recover(s.recovered.apps, now)
        });
        let mut delegation = delegation;
        if state.store_enabled() {
            delegation.record();
        }
        state.set_delegation(delegation);
        Ok(Built {
            state,
            keys_stored,
            cluster_ts,
            recovery,
        })
    }
}
