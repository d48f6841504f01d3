//! The task that owns the RM state, and the handle everyone else uses.
//!
//! One task owns the [`RmState`]. Protocol handlers, the ticker and the
//! effect executor send it commands over a bounded channel and await the
//! reply ([`CoreHandle::call`]), or ask it a read-only question
//! ([`CoreHandle::query`]). There is no lock: every change happens in
//! `RmState::handle`, in arrival order, and only this task reads the clock.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tracing::{debug, error, info};

use spindle_ipc::{class, RpcError};

use crate::model::keys::KeyIds;
use crate::model::launch::Effect;
use crate::runtime::amrm_verifier::KeySlot;
use crate::state::command::{Command, Reply, Request, Tick};
use crate::state::RmState;
use crate::store::{StateStore, StoreError, StoreOp, StoreStats};
use crate::time::Clock;

/// A read-only question, run on the owner task.
type Query = Box<dyn FnOnce(&RmState) + Send>;

enum Message {
    Command(Box<Command>, oneshot::Sender<Reply>),
    Query(Query),
}

/// A handle to the task that owns the [`RmState`].
///
/// The handle the protocol handlers share follows the RM's activations
/// (`crate::runtime::active`): it reaches the owner task of the current activation,
/// and while the RM is standby (no state exists) every call fails with
/// [`CoreStopped::Standby`]. A handle [`CoreInbox::pinned`] to one activation
/// (the ticker's, the launcher's) never reaches a later one.
#[derive(Clone)]
pub struct CoreHandle {
    slot: Arc<RwLock<Option<mpsc::Sender<Message>>>>,
    /// `yarn.resourcemanager.ha.rm-id` with HA (for the standby message).
    rm_id: Arc<str>,
}

/// Where an owner task's results go besides its replies.
pub struct OwnerOutputs {
    /// The effects the state asks for (the launcher).
    pub effects: mpsc::UnboundedSender<Effect>,
    /// The state store's writer, with recovery on.
    pub store: Option<StoreDriver>,
    /// Told when a store write fails (the task has ended then).
    pub store_failed: Option<oneshot::Sender<()>>,
    /// The scheduler port's AMRMToken keys, published when they roll.
    pub keys: KeySlot,
}

/// The receiving end of one activation's channel, until its owner task starts.
pub struct CoreInbox {
    rx: mpsc::Receiver<Message>,
    pinned: CoreHandle,
}

/// Why a call reached no owner task.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CoreStopped {
    /// The owner has stopped (the RM is shutting down, or stopped serving
    /// after a failed store write).
    #[error("the ResourceManager is shutting down")]
    ShuttingDown,
    /// The RM is standby: no state exists here (Hadoop's StandbyException).
    #[error("ResourceManager {0}is not Active!")]
    Standby(String),
}

/// Hadoop clients retry a RetriableException (the RM is going away), and
/// fail over to another RM on a StandbyException (this one is standby).
impl From<CoreStopped> for RpcError {
    fn from(e: CoreStopped) -> RpcError {
        let class = match e {
            CoreStopped::ShuttingDown => class::RETRIABLE,
            CoreStopped::Standby(_) => class::STANDBY,
        };
        RpcError::new(class, e.to_string())
    }
}

/// The most messages one store write covers (group commit).
const GROUP_COMMIT_MAX: usize = 256;

/// Capacity of the command channel: callers wait (back-pressure) beyond it.
const COMMAND_QUEUE: usize = 4096;

fn write_slot<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|e| e.into_inner())
}

impl CoreHandle {
    /// A handle that reaches no owner yet (a standby RM's); `rm_id` names
    /// the RM in the standby refusal.
    pub fn standby(rm_id: Option<&str>) -> CoreHandle {
        CoreHandle {
            slot: Arc::new(RwLock::new(None)),
            rm_id: Arc::from(rm_id.unwrap_or("")),
        }
    }

    /// A fresh channel for one activation: the handle's calls wait in it
    /// once [`CoreHandle::serve`] points the handle at it, until
    /// [`CoreInbox::spawn`] starts the owner (so that the state can be
    /// built after the handle exists).
    pub fn channel(&self) -> CoreInbox {
        let (tx, rx) = mpsc::channel(COMMAND_QUEUE);
        let pinned = CoreHandle {
            slot: Arc::new(RwLock::new(Some(tx))),
            rm_id: self.rm_id.clone(),
        };
        CoreInbox { rx, pinned }
    }

    /// Points this handle (and every clone) at `inbox`'s activation.
    pub fn serve(&self, inbox: &CoreInbox) {
        *write_slot(&self.slot) = inbox.pinned.sender();
    }

    /// Detaches this handle (and every clone) from any activation: calls
    /// fail with [`CoreStopped::Standby`] from now on.
    pub fn withdraw(&self) {
        *write_slot(&self.slot) = None;
    }

    /// Whether the handle reaches an activation.
    pub fn is_serving(&self) -> bool {
        self.slot
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// Resolves once the activation this handle reaches has ended (its
    /// owner task is gone), at once when it reaches none. Meant for a
    /// handle [`CoreInbox::pinned`] to one activation: the tasks of that
    /// activation stop with it.
    pub async fn ended(&self) {
        if let Some(tx) = self.sender() {
            tx.closed().await;
        }
    }

    fn sender(&self) -> Option<mpsc::Sender<Message>> {
        self.slot.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The refusal of a call that reached no owner: standby when the handle
    /// is withdrawn (also when it was withdrawn while the call waited).
    fn stopped(&self) -> CoreStopped {
        if self.is_serving() {
            CoreStopped::ShuttingDown
        } else {
            self.standby_refusal()
        }
    }

    /// [`CoreStopped::Standby`] naming this RM.
    pub fn standby_refusal(&self) -> CoreStopped {
        let id = if self.rm_id.is_empty() {
            String::new()
        } else {
            format!("{} ", self.rm_id)
        };
        CoreStopped::Standby(id)
    }

    async fn send(&self, message: Message) -> Result<(), CoreStopped> {
        let tx = self.sender().ok_or_else(|| self.stopped())?;
        tx.send(message).await.map_err(|_| self.stopped())
    }

    /// Sends `request` as a command, in order with every other, and answers its reply.
    pub async fn call<R: Request>(&self, request: R) -> Result<R::Reply, CoreStopped> {
        let (reply_tx, reply_rx) = oneshot::channel();
        self.send(Message::Command(Box::new(request.into()), reply_tx))
            .await?;
        let reply = reply_rx.await.map_err(|_| self.stopped())?;
        // `RmState::handle` answers each command with its own variant.
        Ok(R::reply(reply).unwrap_or_else(|| {
            unreachable!(
                "{} was answered with another command's reply",
                std::any::type_name::<R>()
            )
        }))
    }

    /// Runs the read-only question `f` on the state, in order with the
    /// commands, and answers its result.
    pub async fn query<T, F>(&self, f: F) -> Result<T, CoreStopped>
    where
        T: Send + 'static,
        F: FnOnce(&RmState) -> T + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let query: Query = Box::new(move |state| {
            let _ = tx.send(f(state));
        });
        self.send(Message::Query(query)).await?;
        rx.await.map_err(|_| self.stopped())
    }
}

/// What must reach the state store after a batch of commands: the store
/// operations the state says its changes need, and the master keys when
/// they rolled since they were last written. Pure bookkeeping, no I/O: the
/// owner task ([`StoreDriver`]) and the whole-RM simulation both ask it,
/// write what it says, and tell it when a write succeeded.
#[derive(Debug)]
pub struct Persistence {
    written_keys: Option<KeyIds>,
}

/// One write's worth of [`Persistence::due`]: its operations, and the key
/// ids it stores (for [`Persistence::written`]).
#[derive(Debug)]
pub struct Due {
    pub ops: Vec<StoreOp>,
    key_ids: KeyIds,
}

impl Persistence {
    /// Over the activation's `state`; `keys_stored` when the store already
    /// holds its current keys (they came from it).
    pub fn new(state: &RmState, keys_stored: bool) -> Persistence {
        let written_keys = keys_stored.then(|| state.keys().key_ids());
        Persistence { written_keys }
    }

    /// What changed since the last call, with the keys if they rolled.
    pub fn due(&self, state: &mut RmState) -> Due {
        let mut ops = state.take_store_ops();
        let key_ids = state.keys().key_ids();
        if self.written_keys != Some(key_ids) {
            ops.push(StoreOp::PutKeys(state.keys().snapshot()));
        }
        Due { ops, key_ids }
    }

    /// `due` is in the store.
    pub fn written(&mut self, due: &Due) {
        self.written_keys = Some(due.key_ids);
    }
}

/// The owner task's writer to the state store: after each command, what
/// [`Persistence`] says is due, written (and measured) before the caller is
/// answered.
pub struct StoreDriver {
    /// `None` only while a write runs on the blocking pool.
    store: Option<Box<dyn StateStore>>,
    persistence: Persistence,
    stats: Arc<StoreStats>,
}

impl StoreDriver {
    /// A writer to `store` for `state`; `keys_stored` when the store
    /// already holds the state's current keys (they came from it).
    pub fn new(
        store: Box<dyn StateStore>,
        state: &RmState,
        stats: Arc<StoreStats>,
        keys_stored: bool,
    ) -> StoreDriver {
        StoreDriver {
            store: Some(store),
            persistence: Persistence::new(state, keys_stored),
            stats,
        }
    }

    /// Writes what changed; nothing when nothing did. The write (an fsync,
    /// milliseconds) runs on the blocking pool, so it holds no runtime
    /// worker; the owner task awaits it, so commands stay in order and no
    /// reply leaves before its change is stored.
    pub async fn persist(&mut self, state: &mut RmState) -> Result<(), StoreError> {
        let due = self.persistence.due(state);
        if due.ops.is_empty() {
            return Ok(());
        }
        let Some(mut store) = self.store.take() else {
            return Err(StoreError {
                path: String::new(),
                what: "an earlier write never finished".into(),
            });
        };
        let count = due.ops.len();
        let (store, due, result, took) = tokio::task::spawn_blocking(move || {
            let started = Instant::now();
            let result = store.write(&due.ops);
            (store, due, result, started.elapsed())
        })
        .await
        .map_err(|e| StoreError {
            path: String::new(),
            what: format!("the write task failed: {e}"),
        })?;
        self.store = Some(store);
        self.stats.record(count, took, result.is_ok());
        debug!(
            ops = count,
            took_us = took.as_micros() as u64,
            "state store write"
        );
        let figures = self.stats.figures();
        if figures.writes.is_multiple_of(1000) {
            info!(
                writes = figures.writes,
                failures = figures.failures,
                mean_us = figures.mean_us,
                p50_below_us = figures.p50_us,
                p99_below_us = figures.p99_us,
                max_us = figures.max_us,
                "state store writes"
            );
        }
        if result.is_ok() {
            self.persistence.written(&due);
        }
        result
    }
}

/// How an owner task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnerExit {
    /// [`Owner::stop`] asked it to.
    Stopped,
    /// Every handle to it went away.
    Closed,
    /// A state store write failed: the state is dropped, the RM stops serving.
    StoreFailed,
}

/// A running owner task and its ticker.
pub struct Owner {
    stop: watch::Sender<bool>,
    task: JoinHandle<OwnerExit>,
}

impl Owner {
    /// Stops the owner task and its ticker and waits until the state (and
    /// the store it writes to) is dropped. Commands still queued are
    /// dropped unanswered: their callers see the handle's refusal.
    pub async fn stop(self) -> OwnerExit {
        let _ = self.stop.send(true);
        match self.task.await {
            Ok(exit) => exit,
            Err(e) => {
                error!(error = %e, "the ResourceManager's owner task failed");
                OwnerExit::Closed
            }
        }
    }
}

impl CoreInbox {
    /// A handle to this activation only (it never reaches a later one).
    pub fn pinned(&self) -> CoreHandle {
        self.pinned.clone()
    }

    /// Starts the owner task on `state`, and a ticker that sends a [`Tick`]
    /// every `tick`; see [`OwnerOutputs`] for where its results go.
    pub fn spawn(self, state: RmState, clock: Clock, tick: Duration, out: OwnerOutputs) -> Owner {
        let CoreInbox { mut rx, pinned } = self;
        let OwnerOutputs {
            effects,
            mut store,
            store_failed,
            keys,
        } = out;
        let (stop_tx, mut stop) = watch::channel(false);
        let mut ticker_stop = stop.clone();
        let task = tokio::spawn(async move {
            let mut state = state;
            let mut store_failed = store_failed;
            let mut failed = move |e: StoreError| {
                error!(error = %e, "state store write failed: the ResourceManager stops serving");
                if let Some(tx) = store_failed.take() {
                    let _ = tx.send(());
                }
                OwnerExit::StoreFailed
            };
            if let Some(store) = &mut store {
                // What recovery changed (new attempts, the keys) is stored
                // before the first command.
                if let Err(e) = store.persist(&mut state).await {
                    return failed(e);
                }
            }
            // A query that ended the last batch, answered first in the next.
            let mut held: Option<Message> = None;
            loop {
                let message = match held.take() {
                    Some(m) => Some(m),
                    None => tokio::select! {
                        biased;
                        _ = stop.wait_for(|s| *s) => return OwnerExit::Stopped,
                        m = rx.recv() => m,
                    },
                };
                let Some(message) = message else {
                    return OwnerExit::Closed;
                };
                // Group commit: with a store, the commands already waiting
                // are handled with this one and their changes written in
                // one transaction (one fsync for the lot, not one each). A
                // query after a command ends the batch: it is answered
                // once that command's change is stored, in order with the
                // commands, and before any later one.
                let mut answered = Vec::new();
                let mut next = Some(message);
                let amrm_key = state.keys().amrm.current_key().key_id;
                let delegation = state.delegation_version();
                while let Some(message) = next.take() {
                    match message {
                        Message::Command(command, reply_to) => {
                            let (reply, out) = state.handle(clock.now(), *command);
                            answered.push((reply_to, reply, out));
                        }
                        Message::Query(query) if answered.is_empty() => query(&state),
                        query @ Message::Query(_) => {
                            held = Some(query);
                            break;
                        }
                    }
                    if store.is_some() && answered.len() < GROUP_COMMIT_MAX {
                        next = rx.try_recv().ok();
                    }
                }
                // A rolled AMRMToken key reaches the scheduler port's
                // verifier before any reply carries a token under it.
                if state.keys().amrm.current_key().key_id != amrm_key {
                    keys.publish(&state.keys().amrm);
                }
                // So do delegation tokens issued, renewed or cancelled: a
                // token works once its getDelegationToken has answered.
                if state.delegation_version() != delegation {
                    keys.publish_delegation(state.delegation_view());
                }
                if let Some(store) = &mut store {
                    // Durable before answered: a change the store could
                    // not keep is never acknowledged.
                    if !answered.is_empty() {
                        if let Err(e) = store.persist(&mut state).await {
                            return failed(e);
                        }
                    }
                }
                for (reply_to, reply, out) in answered {
                    // The reply is handed over before the effects, so that
                    // the caller's answer is on its way first.
                    let _ = reply_to.send(reply);
                    for effect in out {
                        let _ = effects.send(effect);
                    }
                }
            }
        });
        tokio::spawn(async move {
            let mut interval = tokio::time::interval(tick);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = ticker_stop.wait_for(|s| *s) => return,
                    _ = interval.tick() => {}
                }
                if pinned.call(Tick).await.is_err() {
                    return;
                }
            }
        });
        Owner {
            stop: stop_tx,
            task,
        }
    }
}
