//! Automatic failover: the RM's own leader election on ZooKeeper drives its
//! active/standby switch, as Hadoop's embedded elector
//! (`ActiveStandbyElectorBasedElectorService`) does when
//! `yarn.resourcemanager.ha.automatic-failover.enabled` and `.embedded` are
//! true (the defaults).
//!
//! - Elected: the RM becomes active (`RmControl::transition_to_active`: the
//!   store opened and recovered). If it cannot (the store refuses it, say),
//!   it gives the lock up and competes again after the retry interval
//!   (Hadoop's `rejoinElection`), so another RM can take over.
//! - Not elected (another RM holds the lock, or ZooKeeper was lost for the
//!   session timeout): the RM steps down to standby.
//! - Standby while still holding the lock (a failed store write, e.g. fenced
//!   by another RM that opened the ZooKeeper store; a forced manual
//!   transition): the lock is given up, so the cluster is not left without
//!   an active.

use std::sync::Arc;

use spindle_common::conf::Configuration;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::{info, warn};

use crate::error::RmError;
use crate::ha::{Election, Elector, ElectorConf};
use crate::runtime::active::{RmControl, ServiceState};

/// The running election of this RM. Dropping it leaves the election (the
/// ZooKeeper session is closed, so a lock this RM held goes at once).
pub struct Failover {
    task: JoinHandle<()>,
}

impl Drop for Failover {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Failover {
    /// Joins the election of `rm_id`'s cluster; fails with the ZooKeeper
    /// address and the reason when ZooKeeper gives no session.
    pub async fn start(
        conf: &Configuration,
        rm_id: &str,
        control: Arc<RmControl>,
    ) -> Result<Failover, RmError> {
        let elector_conf = ElectorConf::from_conf(conf, rm_id).map_err(RmError::Invalid)?;
        info!(
            zookeeper = %elector_conf.zk_address,
            election = %elector_conf.parent,
            "automatic failover: joining the leader election"
        );
        let (elector, election) = Elector::start(elector_conf)
            .await
            .map_err(|e| RmError::Invalid(format!("automatic failover: {e}")))?;
        let task = tokio::spawn(drive(control, elector, election));
        Ok(Failover { task })
    }
}

async fn drive(control: Arc<RmControl>, elector: Elector, mut election: watch::Receiver<Election>) {
    let mut state = control.watch_service_state();
    loop {
        let elected = *election.borrow_and_update();
        let serving = *state.borrow_and_update();
        match (elected, serving) {
            (Election::Active, ServiceState::Standby) => {
                info!("elected active: becoming active");
                if let Err(e) = control.transition_to_active().await {
                    warn!(error = %e, "cannot become active: giving the election up for a while");
                    elector.rejoin().await;
                }
            }
            (Election::Standby, ServiceState::Active) => {
                info!("no longer elected: stepping down to standby");
                if let Err(e) = control.transition_to_standby().await {
                    warn!(error = %e, "stepping down failed");
                }
            }
            _ => {}
        }
        tokio::select! {
            changed = election.changed() => {
                if changed.is_err() {
                    return;
                }
            }
            changed = state.changed() => {
                if changed.is_err() {
                    return;
                }
                let now = *state.borrow();
                if now == ServiceState::Standby && *election.borrow() == Election::Active {
                    warn!(
                        "standby while holding the election lock (the store failed, or a \
                         manual transition): giving the lock up"
                    );
                    elector.rejoin().await;
                }
            }
        }
    }
}
