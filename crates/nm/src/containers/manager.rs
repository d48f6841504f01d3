//! The [`ContainerManager`] and the state changes every concern shares:
//! phases, completion, kills, signals and the cleanup of finished
//! applications.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hadoop_protos::yarn::SignalContainerCommandProto;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use spindle_common::text::escaped;
use spindle_common::{ApplicationId, ContainerId, NodeId};
use tokio::sync::watch;
use tracing::{debug, info, warn};

use super::records::{
    App, AppReport, Container, ContainerPhase, ContainerReport, KillOutcome, KillReason, State,
};
use crate::aux_services::AuxServices;
use crate::config::NmConfig;
use crate::launch::ContainerPaths;
use crate::localizer::Localizer;
use crate::logagg::LogAggregator;
use crate::procfs;
use crate::recovery::{AppRecord, ContainerRecord, StateStore};
use crate::security::{ContainerTokenChecker, Rejection, SharedNodeId, TokenSecrets};
use crate::session::RmSession;

pub(super) struct Inner {
    pub(super) cfg: Arc<NmConfig>,
    pub(super) node_id: SharedNodeId,
    pub(super) session: watch::Receiver<RmSession>,
    pub(super) tokens: ContainerTokenChecker,
    pub(super) localizer: Arc<Localizer>,
    pub(super) state: Mutex<State>,
    /// Bumped on every phase change, for waiters.
    pub(super) changes: watch::Sender<u64>,
    pub(super) shutting_down: AtomicBool,
    pub(super) next_work_dir: AtomicUsize,
    pub(super) page_size: u64,
    pub(super) tick_ms: f64,
    /// The recovery records, when `yarn.nodemanager.recovery.enabled`.
    pub(super) store: Option<Arc<StateStore>>,
    /// Finished applications' logs: aggregated, then deleted.
    pub(super) logs: Arc<LogAggregator>,
    /// The auxiliary services.
    pub(super) aux: Arc<AuxServices>,
}

/// The container side of the NodeManager. Cheap to clone.
#[derive(Clone)]
pub struct ContainerManager {
    pub(super) inner: Arc<Inner>,
}

impl ContainerManager {
    pub(crate) fn new(
        cfg: Arc<NmConfig>,
        node_id: SharedNodeId,
        session: watch::Receiver<RmSession>,
        secrets: Arc<dyn TokenSecrets>,
        store: Option<StateStore>,
        aux: Arc<AuxServices>,
    ) -> ContainerManager {
        let (page_size, tick_ms) = procfs::system_units();

        let store = store.map(Arc::new);
        ContainerManager {
            inner: Arc::new(Inner {
                localizer: Arc::new(
                    Localizer::recording(cfg.local_dirs.clone(), store.clone())
                        .with_remote_settings(cfg.containers.remote_fs.clone()),
                ),
                tokens: ContainerTokenChecker::new(node_id.clone(), secrets),
                logs: Arc::new(LogAggregator::new(
                    cfg.containers.log_aggregation.clone(),
                    cfg.containers.remote_fs.clone(),
                    cfg.log_dirs.clone(),
                    &cfg.local_dirs,
                )),
                cfg,
                node_id,
                session,
                state: Mutex::new(State::default()),
                changes: watch::channel(0).0,
                shutting_down: AtomicBool::new(false),
                next_work_dir: AtomicUsize::new(0),
                page_size,
                tick_ms,
                store,
                aux,
            }),
        }
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn changed(&self) {
        self.inner.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// The auxiliary services.
    pub fn aux_services(&self) -> &Arc<AuxServices> {
        &self.inner.aux
    }

    /// The localizer (its counters show cache use).
    pub fn localizer(&self) -> &Arc<Localizer> {
        &self.inner.localizer
    }

    pub(super) fn node_id(&self) -> Option<NodeId> {
        self.inner.node_id.get().cloned()
    }

    // ------------------------------------------------------------ recovery records

    /// Records a container's current state (with recovery on). Called with
    /// the state lock held, so records are written in the order of the
    /// changes they record (a completion is never overwritten by an
    /// earlier phase, nor a removal by a late write).
    pub(super) fn persist(&self, c: &Container) {
        if let Some(store) = &self.inner.store {
            store.store_container(&ContainerRecord {
                grant: c.grant.clone(),
                phase: c.phase,
                exit_status: c.exit_status,
                diagnostics: c.diagnostics.clone(),
                paths: c.paths.clone(),
                service_data: c.service_data.clone(),
            });
        }
    }

    /// Resolves once the records asked for so far are written (at once
    /// with recovery off).
    pub async fn records_flushed(&self) {
        if let Some(store) = &self.inner.store {
            store.flushed().await;
        }
    }

    pub(super) fn unpersist(&self, id: &ContainerId) {
        if let Some(store) = &self.inner.store {
            store.remove_container(id);
        }
    }

    pub(super) fn persist_app(&self, id: &ApplicationId, app: &App) {
        if let Some(store) = &self.inner.store {
            store.store_app(
                id,
                &AppRecord {
                    user: app.user.clone(),
                    finishing: app.finishing,
                    acls: app.acls.clone(),
                },
            );
        }
    }

    /// Whether a clean stop leaves the containers running.
    pub fn keeps_containers_on_stop(&self) -> bool {
        self.inner.cfg.recovery.keeps_containers_on_stop()
    }

    /// Leaves every container running when the node goes away: no new
    /// container starts, and dropped container tasks kill nothing.
    pub fn detach(&self) {
        self.inner.shutting_down.store(true, Ordering::SeqCst);
        self.inner.cfg.executor.detach_containers();
    }

    // ------------------------------------------------------------ queries

    /// A snapshot of a container this node still tracks.
    pub fn report(&self, id: &ContainerId) -> Option<ContainerReport> {
        self.lock().containers.get(id).map(Container::report)
    }

    /// Snapshots of every tracked container.
    pub fn reports(&self) -> Vec<ContainerReport> {
        self.lock()
            .containers
            .values()
            .map(Container::report)
            .collect()
    }

    /// A snapshot of an application this node has containers of (until
    /// it is over and its containers are done).
    pub fn app_report(&self, id: &ApplicationId) -> Option<AppReport> {
        self.lock().apps.get(id).map(|a| a.report(*id))
    }

    /// Snapshots of every application on this node.
    pub fn app_reports(&self) -> Vec<AppReport> {
        self.lock()
            .apps
            .iter()
            .map(|(id, a)| a.report(*id))
            .collect()
    }

    /// Waits until `pred` holds for the container's report (or the
    /// container is no longer tracked: `None`), at most `timeout`.
    pub async fn wait_for(
        &self,
        id: &ContainerId,
        timeout: Duration,
        pred: impl Fn(&ContainerReport) -> bool,
    ) -> Option<ContainerReport> {
        let mut rx = self.inner.changes.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let r = self.report(id);
            match &r {
                Some(rep) if pred(rep) => return r,
                None => return None,
                Some(_) => {}
            }
            // Memory readings change without a phase change: re-check at
            // least every 50 ms.
            let wake = (tokio::time::Instant::now() + Duration::from_millis(50)).min(deadline);
            tokio::select! {
                _ = rx.changed() => {}
                _ = tokio::time::sleep_until(wake) => {}
            }
            if tokio::time::Instant::now() >= deadline {
                return self.report(id).filter(|r| pred(r));
            }
        }
    }

    /// Waits for a container to be done (see [`wait_for`](Self::wait_for)).
    pub async fn wait_done(&self, id: &ContainerId, timeout: Duration) -> Option<ContainerReport> {
        self.wait_for(id, timeout, |r| r.phase == ContainerPhase::Done)
            .await
    }

    /// Waits for each of `ids` to be done, `timeout` for them all together;
    /// answers those still known and not done by then (after a kill, the
    /// ones that did not die in time).
    pub(super) async fn wait_all_done(
        &self,
        ids: &[ContainerId],
        timeout: Duration,
    ) -> Vec<ContainerId> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut alive = Vec::new();
        for id in ids {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if self.wait_done(id, left).await.is_none()
                && self
                    .report(id)
                    .is_some_and(|r| r.phase != ContainerPhase::Done)
            {
                alive.push(*id);
            }
        }
        alive
    }

    // ------------------------------------------------------------ kills

    /// Kills a container for `reason` (the first reason wins).
    pub fn kill(&self, id: ContainerId, reason: KillReason) -> KillOutcome {
        let mut st = self.lock();
        let Some(c) = st.containers.get_mut(&id) else {
            return KillOutcome::Unknown;
        };
        if c.phase == ContainerPhase::Done {
            return KillOutcome::AlreadyDone;
        }
        if c.kill.is_none() {
            info!(container = %id, exit_status = reason.exit_status, "killing container: {}", escaped(reason.diagnostics.lines().next().unwrap_or("")));
            c.kill = Some(reason);
        }
        c.kill_tx.send_replace(true);
        KillOutcome::Killing
    }

    pub(super) fn signal(
        &self,
        id: ContainerId,
        command: SignalContainerCommandProto,
    ) -> Result<(), Rejection> {
        let signal = match command {
            SignalContainerCommandProto::OutputThreadDump => Signal::SIGQUIT,
            SignalContainerCommandProto::GracefulShutdown => Signal::SIGTERM,
            SignalContainerCommandProto::ForcefulShutdown => Signal::SIGKILL,
        };
        let st = self.lock();
        let c = st.containers.get(&id).ok_or_else(|| {
            Rejection::yarn(format!("Container {id} is not handled by this NodeManager"))
        })?;
        match (c.phase, c.pid) {
            (ContainerPhase::Running, Some(pid)) => {
                info!(container = %id, ?signal, "signalling the container");
                killpg(Pid::from_raw(pid), signal).map_err(|e| {
                    Rejection::yarn(format!("cannot send {signal} to container {id}: {e}"))
                })
            }
            (phase, _) => Err(Rejection::yarn(format!(
                "Container {id} cannot be signalled: it is {}",
                match phase {
                    ContainerPhase::Done => "already complete",
                    _ => "not running yet",
                }
            ))),
        }
    }

    /// Removes a finishing application whose containers are all done, and
    /// schedules the deletion of its directories.
    pub(super) fn maybe_finish_app(&self, app: ApplicationId) {
        let (user, acls) = {
            let mut st = self.lock();
            let all_done = match st.apps.get(&app) {
                Some(a) if a.finishing => a.containers.iter().all(|id| {
                    st.containers
                        .get(id)
                        .is_none_or(|c| c.phase == ContainerPhase::Done)
                }),
                _ => false,
            };
            if !all_done {
                return;
            }
            match st.apps.remove(&app) {
                Some(a) => {
                    if let Some(store) = &self.inner.store {
                        store.remove_app(&app);
                    }
                    (a.user, a.acls)
                }
                None => return,
            }
        };
        self.inner.localizer.forget_app(app);
        // Hadoop's APPLICATION_STOP (handleAppFinishWithContainersCleanedup).
        self.inner.aux.application_stopped(&app.to_string());
        if let Some(node) = self.inner.node_id.get().cloned() {
            let (logs, user) = (self.inner.logs.clone(), user.clone());
            let delay = self.inner.cfg.containers.delete_debug_delay;
            tokio::spawn(async move { logs.app_finished(&node, app, &user, &acls, delay).await });
        }
        let dirs: Vec<PathBuf> = self
            .inner
            .cfg
            .local_dirs
            .iter()
            .map(|d| {
                d.join("usercache")
                    .join(&user)
                    .join("appcache")
                    .join(app.to_string())
            })
            .collect();
        let delay = self.inner.cfg.containers.delete_debug_delay;
        info!(app = %app, delay_s = delay.as_secs(), "application cleaned up; deleting its directories");
        tokio::spawn(async move {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            let _ = tokio::task::spawn_blocking(move || {
                for d in dirs {
                    match std::fs::remove_dir_all(&d) {
                        Ok(()) => debug!(dir = %escaped(&d.to_string_lossy()), "deleted"),
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(e) => warn!(dir = %escaped(&d.to_string_lossy()), error = %e, "cannot delete an application directory"),
                    }
                }
            })
            .await;
        });
    }

    /// Kills every container and waits (at most `timeout`) until all are
    /// done. No new container starts afterwards.
    pub async fn shutdown(&self, timeout: Duration) {
        self.inner.shutting_down.store(true, Ordering::SeqCst);
        let ids: Vec<ContainerId> = self.lock().containers.keys().copied().collect();
        for id in &ids {
            self.kill(
                *id,
                KillReason::after_app_completion("the NodeManager is shutting down"),
            );
        }
        for id in self.wait_all_done(&ids, timeout).await {
            warn!(container = %id, "still not done when the NodeManager stopped");
        }
    }

    // ------------------------------------------------------------ one container

    pub(super) fn set_phase(
        &self,
        id: ContainerId,
        phase: ContainerPhase,
        pid: Option<i32>,
        paths: Option<ContainerPaths>,
    ) {
        {
            let mut st = self.lock();
            if let Some(c) = st.containers.get_mut(&id) {
                c.phase = phase;
                if pid.is_some() {
                    c.pid = pid;
                }
                if paths.is_some() {
                    c.paths = paths;
                }
                if phase == ContainerPhase::Running {
                    self.persist(c);
                }
            }
        }
        self.changed();
    }

    pub(super) fn kill_reason(&self, id: &ContainerId) -> Option<KillReason> {
        self.lock().containers.get(id).and_then(|c| c.kill.clone())
    }

    /// Marks the container done. A pending kill reason wins over
    /// `exit_status`.
    pub(super) fn complete(&self, id: ContainerId, exit_status: i32, diagnostics: String) {
        let max = self.inner.cfg.containers.diagnostics_max_chars;
        let app = {
            let mut st = self.lock();
            let Some(c) = st.containers.get_mut(&id) else {
                return;
            };
            let was_done = c.phase == ContainerPhase::Done;
            let (status, mut diag) = match &c.kill {
                Some(k) if diagnostics.is_empty() => (k.exit_status, k.diagnostics.clone()),
                Some(k) => (k.exit_status, format!("{}\n{diagnostics}", k.diagnostics)),
                None => (exit_status, diagnostics),
            };
            if diag.chars().count() > max {
                let skip = diag.chars().count() - max;
                diag = diag.chars().skip(skip).collect();
            }
            c.phase = ContainerPhase::Done;
            c.exit_status = status;
            c.diagnostics = diag;
            self.persist(c);
            info!(container = %id, exit_status = status, "container complete");
            if !was_done {
                // Hadoop's CONTAINER_STOP.
                self.inner
                    .aux
                    .container_stopped(super::records::aux_context(&c.grant));
            }
            id.app()
        };
        self.changed();
        self.maybe_finish_app(app);
    }
}
