//! The task that owns the RM state, and the handle everyone else uses.
//!
//! One task owns the [`RmState`]. Protocol handlers, the ticker and the
//! effect executor send it commands over a bounded channel and await the
//! reply ([`CoreHandle::call`]), or ask it a read-only question
//! ([`CoreHandle::query`]). There is no lock: every change happens in
//! `RmState::handle`, in arrival order, and only this task reads the clock.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};
use tracing::{debug, error, info};

use crate::command::{Command, Reply, Request, Tick};
use crate::keys::{KeyIds, KeyRing};
use crate::launch::Effect;
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
#[derive(Clone)]
pub struct CoreHandle {
    tx: mpsc::Sender<Message>,
}

/// The receiving end of a [`CoreHandle`], until the owner task starts.
pub struct CoreInbox {
    rx: mpsc::Receiver<Message>,
    handle: CoreHandle,
}

/// The owner has stopped (the RM is shutting down).
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the ResourceManager is shutting down")]
pub struct CoreStopped;

/// Capacity of the command channel: callers wait (back-pressure) beyond it.
const COMMAND_QUEUE: usize = 4096;

impl CoreHandle {
    /// A handle whose calls wait until [`CoreInbox::spawn`] starts the owner
    /// (so that the RM's servers can be bound before the state, which needs
    /// their addresses, exists).
    pub fn new() -> (CoreHandle, CoreInbox) {
        let (tx, rx) = mpsc::channel(COMMAND_QUEUE);
        let handle = CoreHandle { tx };
        let inbox = CoreInbox {
            rx,
            handle: handle.clone(),
        };
        (handle, inbox)
    }

    /// Sends `request` as a command, in order with every other, and answers its reply.
    pub async fn call<R: Request>(&self, request: R) -> Result<R::Reply, CoreStopped> {
        let (reply_tx, reply_rx) = oneshot::channel();
        self.tx
            .send(Message::Command(Box::new(request.into()), reply_tx))
            .await
            .map_err(|_| CoreStopped)?;
        let reply = reply_rx.await.map_err(|_| CoreStopped)?;
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
        self.tx
            .send(Message::Query(query))
            .await
            .map_err(|_| CoreStopped)?;
        rx.await.map_err(|_| CoreStopped)
    }
}

/// The owner task's writer to the state store: after each command, what
/// the state says changed and the master keys if they rolled, written (and
/// measured) before the caller is answered.
pub struct StoreDriver {
    /// `None` only while a write runs on the blocking pool.
    store: Option<Box<dyn StateStore>>,
    keys: Arc<KeyRing>,
    stats: Arc<StoreStats>,
    written_keys: Option<KeyIds>,
}

impl StoreDriver {
    /// A writer to `store`; `keys_stored` when the store already holds the
    /// ring's current keys (they came from it).
    pub fn new(
        store: Box<dyn StateStore>,
        keys: Arc<KeyRing>,
        stats: Arc<StoreStats>,
        keys_stored: bool,
    ) -> StoreDriver {
        let written_keys = keys_stored.then(|| keys.key_ids());
        StoreDriver {
            store: Some(store),
            keys,
            stats,
            written_keys,
        }
    }

    /// Writes what changed; nothing when nothing did. The write (an fsync,
    /// milliseconds) runs on the blocking pool, so it holds no runtime
    /// worker; the owner task awaits it, so commands stay in order and no
    /// reply leaves before its change is stored.
    pub async fn persist(&mut self, state: &mut RmState) -> Result<(), StoreError> {
        let mut ops = state.take_store_ops();
        let ids = self.keys.key_ids();
        if self.written_keys != Some(ids) {
            ops.push(StoreOp::PutKeys(self.keys.snapshot()));
        }
        if ops.is_empty() {
            return Ok(());
        }
        let Some(mut store) = self.store.take() else {
            return Err(StoreError {
                path: String::new(),
                what: "an earlier write never finished".into(),
            });
        };
        let count = ops.len();
        let (store, result, took) = tokio::task::spawn_blocking(move || {
            let started = Instant::now();
            let result = store.write(&ops);
            (store, result, started.elapsed())
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
            self.written_keys = Some(ids);
        }
        result
    }
}

impl CoreInbox {
    /// Starts the owner task on `state`, and a ticker that sends a [`Tick`]
    /// every `tick`. Effects the state asks for go to `effects`.
    pub fn spawn(
        self,
        state: RmState,
        clock: Clock,
        tick: Duration,
        effects: mpsc::UnboundedSender<Effect>,
        mut store: Option<StoreDriver>,
    ) {
        let CoreInbox { mut rx, handle } = self;
        tokio::spawn(async move {
            let mut state = state;
            if let Some(store) = &mut store {
                // What recovery changed (new attempts, the keys) is stored
                // before the first command.
                if let Err(e) = store.persist(&mut state).await {
                    error!(error = %e, "state store write failed: the ResourceManager stops serving");
                    return;
                }
            }
            while let Some(message) = rx.recv().await {
                match message {
                    Message::Command(command, reply_to) => {
                        let (reply, out) = state.handle(clock.now(), *command);
                        if let Some(store) = &mut store {
                            // Durable before answered: a change the store
                            // could not keep is never acknowledged.
                            if let Err(e) = store.persist(&mut state).await {
                                error!(error = %e, "state store write failed: the ResourceManager stops serving");
                                return;
                            }
                        }
                        // The reply is handed over before the effects, so that the
                        // caller's answer is on its way first.
                        let _ = reply_to.send(reply);
                        for effect in out {
                            let _ = effects.send(effect);
                        }
                    }
                    Message::Query(query) => query(&state),
                }
            }
        });
        tokio::spawn(async move {
            let mut interval = tokio::time::interval(tick);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                interval.tick().await;
                if handle.call(Tick).await.is_err() {
                    return;
                }
            }
        });
    }
}
