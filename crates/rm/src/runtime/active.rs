//! The RM's active services and its active/standby switch (Hadoop's
//! `RMActiveServices` and `ResourceManager.transitionTo{Active,Standby}`).
//!
//! The always-on part of the RM (configuration, the four bound ports, the
//! admin and HA services) lives as long as the process. An *activation*
//! is everything that exists only while the RM is active: the state store,
//! opened (and recovered from) on activation and closed on deactivation so
//! that another RM can open it; the [`RmState`] and its owner task; the
//! ticker; the AM launcher; the master keys; the cluster timestamp. The
//! protocol handlers reach it through the context's [`CoreHandle`], which
//! answers `StandbyException` while there is none.
//!
//! Without HA the RM activates once, at start. With HA it starts standby
//! and a driver (the `HAServiceProtocol` on the admin port, or an elector)
//! calls [`RmControl::transition_to_active`] and
//! [`RmControl::transition_to_standby`]. A state store write that fails
//! makes an HA RM step down (a fenced active stops serving).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::{oneshot, watch};
use tracing::{info, warn};

use crate::acl::Acl;
use crate::error::RmError;
use crate::runtime::amrm_verifier::KeySlot;
use crate::runtime::context::RmContext;
use crate::runtime::core::{CoreHandle, CoreInbox, Owner, StoreDriver};
use crate::runtime::ha_conf::HaConf;
use crate::runtime::launcher::Launcher;
use crate::runtime::log_retention::LogRetention;
use crate::state::build::{Built, FromStore, StateConf};
use crate::store::{self, StoreConf, StoreStats};
use crate::time::Clock;

/// Hadoop's `HAServiceProtocol.HAServiceState` as far as an RM has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServiceState {
    Active,
    Standby,
}

impl std::fmt::Display for ServiceState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ServiceState::Active => "active",
            ServiceState::Standby => "standby",
        })
    }
}

/// What an activation is built from: read and checked once, at start-up.
#[derive(Clone)]
pub(crate) struct ActiveConf {
    pub clock: Clock,
    pub store: Option<StoreConf>,
    /// What the state is built from ([`StateConf::build`]).
    pub state: StateConf,
    pub tick: Duration,
    pub launcher: Launcher,
    /// Aggregated log retention (`None`: logs are kept).
    pub log_retention: Option<LogRetention>,
}

/// One activation: what [`RmControl::transition_to_standby`] stops.
struct Activation {
    owner: Owner,
    /// A handle to this activation only.
    core: CoreHandle,
    generation: u64,
}

/// The figures of the current (or last) activation.
#[derive(Default, Clone)]
struct Figures {
    stats: Option<Arc<StoreStats>>,
    epoch: Option<u64>,
}

/// The RM's active/standby switch.
pub struct RmControl {
    ctx: Arc<RmContext>,
    keys: KeySlot,
    conf: ActiveConf,
    ha: Option<HaConf>,
    /// `Some` while active; the lock serializes transitions.
    current: tokio::sync::Mutex<Option<Activation>>,
    state: watch::Sender<ServiceState>,
    figures: Mutex<Figures>,
    generation: AtomicU64,
    /// Itself, for the task that steps down after a failed store write.
    me: Weak<RmControl>,
}

impl RmControl {
    pub(crate) fn new(
        ctx: Arc<RmContext>,
        keys: KeySlot,
        conf: ActiveConf,
        ha: Option<HaConf>,
    ) -> Arc<RmControl> {
        Arc::new_cyclic(|me| RmControl {
            ctx,
            keys,
            conf,
            ha,
            current: tokio::sync::Mutex::new(None),
            state: watch::Sender::new(ServiceState::Standby),
            figures: Mutex::default(),
            generation: AtomicU64::new(0),
            me: me.clone(),
        })
    }

    pub fn context(&self) -> &Arc<RmContext> {
        &self.ctx
    }

    /// The HA settings (`None` without HA).
    pub fn ha(&self) -> Option<&HaConf> {
        self.ha.as_ref()
    }

    pub fn service_state(&self) -> ServiceState {
        *self.state.borrow()
    }

    /// Follows the service state (e.g. to wait for a step-down).
    pub fn watch_service_state(&self) -> watch::Receiver<ServiceState> {
        self.state.subscribe()
    }

    /// Opens the store, recovers, starts the state's owner task and serves.
    /// Nothing changes when already active; on an error the RM stays standby.
    pub async fn transition_to_active(&self) -> Result<(), RmError> {
        let mut current = self.current.lock().await;
        if current.is_some() {
            return Ok(());
        }
        let activation = self.activate(None).await?;
        *current = Some(activation);
        self.state.send_replace(ServiceState::Active);
        info!(rm_id = ?self.ctx.rm_id, "ResourceManager is active");
        Ok(())
    }

    /// The activation at start-up without HA, on the channel the handle
    /// already points at (calls wait in it meanwhile).
    pub(crate) async fn activate_first(&self, inbox: CoreInbox) -> Result<(), RmError> {
        let mut current = self.current.lock().await;
        let activation = match self.activate(Some(inbox)).await {
            Ok(a) => a,
            Err(e) => {
                self.ctx.core.withdraw();
                return Err(e);
            }
        };
        *current = Some(activation);
        self.state.send_replace(ServiceState::Active);
        Ok(())
    }

    /// Stops serving, stops the owner task and drops the state and the
    /// store (closed when this returns). Nothing changes when standby.
    pub async fn transition_to_standby(&self) -> Result<(), RmError> {
        let mut current = self.current.lock().await;
        if let Some(activation) = current.take() {
            self.deactivate(activation).await;
        }
        self.state.send_replace(ServiceState::Standby);
        Ok(())
    }

    /// After a failed store write of activation `generation`: with HA the
    /// RM steps down (another RM may hold the store now); without HA it
    /// stays up but does not serve, as before.
    async fn store_failed(&self, generation: u64) {
        if self.ha.is_none() {
            return;
        }
        let mut current = self.current.lock().await;
        if current.as_ref().is_some_and(|a| a.generation == generation) {
            warn!("the state store failed: the ResourceManager steps down to standby");
            if let Some(activation) = current.take() {
                self.deactivate(activation).await;
            }
            self.state.send_replace(ServiceState::Standby);
        }
    }

    async fn deactivate(&self, activation: Activation) {
        let Activation { owner, core, .. } = activation;
        self.ctx.core.withdraw();
        self.keys.set(None);
        // The admin ACL in force now stays the standby's.
        if let Ok(acl) = core.query(|s| s.admin_acl().clone()).await {
            *self
                .ctx
                .standby_admin_acl
                .write()
                .unwrap_or_else(|e| e.into_inner()) = acl;
        }
        let exit = owner.stop().await;
        info!(rm_id = ?self.ctx.rm_id, ?exit, "ResourceManager is standby; state dropped, store closed");
    }

    /// This activation's state store figures (`None` with recovery off).
    pub fn store_figures(&self) -> Option<store::StoreFigures> {
        self.figures_now().stats.map(|s| s.figures())
    }

    /// This activation's RM epoch (`None` with recovery off).
    pub fn epoch(&self) -> Option<u64> {
        self.figures_now().epoch
    }

    fn figures_now(&self) -> Figures {
        self.figures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    async fn activate(&self, first: Option<CoreInbox>) -> Result<Activation, RmError> {
        let c = &self.conf;
        let clock = c.clock;
        let cluster_ts = clock.now().wall_ms as i64;
        // The one place the state store is opened.
        let opened = match &c.store {
            Some(sc) => {
                let opening = sc.clone();
                let (db, recovered) =
                    tokio::task::spawn_blocking(move || store::open(&opening, cluster_ts))
                        .await
                        .map_err(|e| {
                            RmError::Invalid(format!("opening the state store failed: {e}"))
                        })??;
                info!(
                    store = %sc.describe(),
                    epoch = recovered.epoch,
                    apps = recovered.apps.len(),
                    "state store opened (yarn.resourcemanager.recovery.enabled)"
                );
                Some((db, recovered))
            }
            None => None,
        };
        let admin_acl: Acl = self.ctx.standby_admin_acl();
        let (opened, from_store) = match opened {
            Some((db, recovered)) => (
                Some(db),
                c.store.as_ref().map(|sc| FromStore {
                    recovered,
                    max_completed: sc.max_completed,
                }),
            ),
            None => (None, None),
        };
        let epoch = from_store.as_ref().map(|s| s.recovered.epoch);
        let built = c
            .state
            .build(admin_acl, clock.now(), from_store, rand::random())
            .map_err(|what| store::StoreError {
                path: c.store.as_ref().map(|s| s.describe()).unwrap_or_default(),
                what,
            })?;
        let Built {
            state,
            keys_stored,
            cluster_ts,
            recovery,
        } = built;
        if let Some(summary) = recovery {
            info!(?summary, "recovered from the state store");
        }
        let mut figures = Figures::default();
        let store_driver = match opened {
            Some(db) => {
                let stats = Arc::new(StoreStats::default());
                figures = Figures {
                    stats: Some(stats.clone()),
                    epoch,
                };
                Some(StoreDriver::new(db, &state, stats, keys_stored))
            }
            None => None,
        };
        let generation = self.generation.fetch_add(1, Ordering::Relaxed) + 1;
        let (failed_tx, failed_rx) = oneshot::channel();
        let me = self.me.clone();
        tokio::spawn(async move {
            if failed_rx.await.is_ok() {
                if let Some(control) = me.upgrade() {
                    control.store_failed(generation).await;
                }
            }
        });
        let (effects_tx, effects_rx) = tokio::sync::mpsc::unbounded_channel();
        let inbox = first.unwrap_or_else(|| self.ctx.core.channel());
        let pinned = inbox.pinned();
        // What the handlers read beside the state follows the activation
        // before they reach it.
        self.ctx
            .cluster_ts
            .store(cluster_ts, std::sync::atomic::Ordering::Relaxed);
        self.keys
            .set(Some((state.keys().amrm.clone(), state.delegation_view())));
        self.ctx.core.serve(&inbox);
        let owner = inbox.spawn(
            state,
            clock,
            c.tick,
            crate::runtime::core::OwnerOutputs {
                effects: effects_tx,
                store: store_driver,
                store_failed: Some(failed_tx),
                keys: self.keys.clone(),
            },
        );
        tokio::spawn(c.launcher.clone().run(pinned.clone(), effects_rx));
        if let Some(retention) = &c.log_retention {
            tokio::spawn(retention.clone().run(pinned.clone()));
        }
        *self.figures.lock().unwrap_or_else(|e| e.into_inner()) = figures;
        info!(cluster_ts, generation, "active services started");
        Ok(Activation {
            owner,
            core: pinned,
            generation,
        })
    }
}
