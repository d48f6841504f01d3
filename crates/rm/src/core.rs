//! The RM's state and its single owner.
//!
//! [`RmState`] holds nodes, applications and queues. One task owns it; RPC handlers
//! send it closures over a bounded channel and await the result ([`CoreHandle::with`]),
//! so there is no lock and every change happens in one place, in arrival order. Time is
//! passed in by the owner, never read inside the state.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use spindle_common::ids::ApplicationId;
use tokio::sync::{mpsc, oneshot};
use tracing::{info, warn};

use crate::acl::Acl;
use crate::apps::{AppTable, Submission, SubmitError};
use crate::nodes::NodeTable;
use crate::queues::{QueueState, Queues};

/// Everything the RM knows.
#[derive(Debug)]
pub struct RmState {
    pub cluster_ts: i64,
    pub nodes: NodeTable,
    pub apps: AppTable,
    pub queues: Queues,
    /// `yarn.admin.acl`, replaced by `refreshAdminAcls`.
    pub admin_acl: Acl,
}

impl RmState {
    /// Records a submission and hands it to its queue: ACCEPTED, or FAILED with the
    /// reason when the queue does not exist or is stopped (as Hadoop's schedulers do).
    pub fn submit(
        &mut self,
        sub: Submission,
        user: &str,
        now_ms: u64,
    ) -> Result<ApplicationId, SubmitError> {
        let id = sub.id;
        let queue_name = sub.queue.clone();
        let known = self.apps.get(&id).is_some();
        self.apps.submit(sub, user, now_ms)?;
        if known {
            return Ok(id);
        }
        match self.queues.get(&queue_name) {
            None => {
                let msg = format!(
                    "Application {id} submitted by user {user} to unknown queue: {queue_name}"
                );
                info!(app = %id, %msg, "application rejected");
                self.apps.fail(id, msg, now_ms);
            }
            Some(q) if q.state == QueueState::Stopped => {
                let msg = format!(
                    "Queue {} is STOPPED. Cannot accept submission of application: {id}",
                    q.name
                );
                info!(app = %id, %msg, "application rejected");
                self.apps.fail(id, msg, now_ms);
            }
            Some(_) => {
                self.apps.accept(id);
                info!(app = %id, %user, queue = %queue_name, "application accepted");
            }
        }
        Ok(id)
    }

    /// Periodic work: liveness expiry.
    pub fn tick(&mut self, now_ms: u64) {
        for id in self.nodes.expire(now_ms) {
            warn!(node = %id, "node expired: no heartbeat within the liveness interval; now LOST");
        }
    }
}

type Command = Box<dyn FnOnce(&mut RmState, u64) + Send>;

/// A handle to the task that owns the [`RmState`].
#[derive(Clone)]
pub struct CoreHandle {
    tx: mpsc::Sender<Command>,
}

/// The owner has stopped (the RM is shutting down).
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the ResourceManager is shutting down")]
pub struct CoreStopped;

/// Wall-clock milliseconds since the epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Capacity of the command channel: handlers wait (back-pressure) beyond it.
const COMMAND_QUEUE: usize = 4096;

impl CoreHandle {
    /// Starts the owner task and a ticker that runs [`RmState::tick`] every `tick`.
    pub fn spawn(state: RmState, tick: Duration) -> CoreHandle {
        let (tx, mut rx) = mpsc::channel::<Command>(COMMAND_QUEUE);
        tokio::spawn(async move {
            let mut state = state;
            while let Some(cmd) = rx.recv().await {
                cmd(&mut state, now_ms());
            }
        });
        let handle = CoreHandle { tx };
        let ticker = handle.clone();
        tokio::spawn(async move {
            let mut interval = tokio::time::interval(tick);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                interval.tick().await;
                if ticker.with(|s, now| s.tick(now)).await.is_err() {
                    return;
                }
            }
        });
        handle
    }

    /// Runs `f` on the state, in order with every other command, and returns its result.
    pub async fn with<R, F>(&self, f: F) -> Result<R, CoreStopped>
    where
        R: Send + 'static,
        F: FnOnce(&mut RmState, u64) -> R + Send + 'static,
    {
        let (reply_tx, reply_rx) = oneshot::channel();
        let cmd: Command = Box::new(move |state, now| {
            let _ = reply_tx.send(f(state, now));
        });
        self.tx.send(cmd).await.map_err(|_| CoreStopped)?;
        reply_rx.await.map_err(|_| CoreStopped)
    }
}

impl From<CoreStopped> for spindle_ipc::RpcError {
    fn from(e: CoreStopped) -> Self {
        spindle_ipc::RpcError::new(spindle_ipc::class::RETRIABLE, e.to_string())
    }
}
