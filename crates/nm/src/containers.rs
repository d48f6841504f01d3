//! The containers of this node.
//!
//! [`ContainerManager`] owns every container from the accepted start
//! request until the ResourceManager has acknowledged its completion:
//!
//! 1. `startContainers` checks the caller's NMToken and each container
//!    token ([`crate::security`]), validates the launch context and starts
//!    one task per container;
//! 2. the task localizes the resources ([`crate::localizer`]), creates the
//!    work and log dirs, writes `container_tokens` and
//!    `launch_container.sh` ([`crate::launch`]) and runs the script with
//!    bash in a process group of its own;
//! 3. a kill (the application master, the ResourceManager, application
//!    cleanup, a memory limit, node shutdown) sends SIGTERM to the group,
//!    then SIGKILL after `sleep-delay-before-sigkill.ms`; the kill's exit
//!    status wins over the process's;
//! 4. the monitor ([`ContainerManager::run_monitor`]) measures each process
//!    tree from `/proc` and kills containers over their memory limits;
//! 5. heartbeats report running containers and completed ones until the
//!    ResourceManager acknowledges them.
//!
//! All state sits behind one mutex held only for short, non-blocking
//! sections; file and process work runs in the container tasks.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hadoop_protos::yarn::{
    ContainerExceptionMapProto, ContainerIdProto, ContainerLaunchContextProto, ContainerStateProto,
    ContainerStatusProto, ContainerSubStateProto, ExecutionTypeProto,
    GetContainerStatusesRequestProto, GetContainerStatusesResponseProto, NmContainerStatusProto,
    PriorityProto, SerializedExceptionProto, SignalContainerCommandProto,
    SignalContainerRequestProto, SignalContainerResponseProto, StartContainerRequestProto,
    StartContainersRequestProto, StartContainersResponseProto, StopContainersRequestProto,
    StopContainersResponseProto,
};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use spindle_common::{ApplicationId, ContainerId, NodeId, Resource};
use spindle_ipc::{class, RpcError};
use tokio::sync::watch;
use tracing::{debug, info, warn};

use crate::agent::RmSession;
use crate::config::NmConfig;
use crate::launch::{self, ContainerPaths, NodeEnv, ResourceLink};
use crate::localizer::{LocalResource, Localizer};
use crate::procfs::{self, MemoryKind, ProcessTable};
use crate::security::{
    ContainerTokenChecker, NmTokenCaller, Rejection, SharedNodeId, TokenSecrets,
    NM_NOT_YET_READY_CLASS,
};
use crate::wire;
use spindle_common::security::ContainerTokenIdentifier;

/// YARN's container exit statuses (`ContainerExitStatus`) and the process
/// codes the node uses.
pub mod exit_status {
    pub use spindle_common::exit_status::*;

    /// 128 + SIGKILL.
    pub const FORCE_KILLED: i32 = 137;
    /// 128 + SIGTERM.
    pub const TERMINATED: i32 = 143;

    /// The exit status of a process that ended with `code`, or was killed
    /// by signal `signal` (shell convention: 128 + signal).
    pub fn from_process(code: Option<i32>, signal: Option<i32>) -> i32 {
        match (code, signal) {
            (Some(c), _) => c,
            (None, Some(s)) => 128 + s,
            (None, None) => INVALID,
        }
    }
}

/// Where a container is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ContainerPhase {
    /// Accepted; resources are being localized.
    Localizing,
    /// Resources are ready; directories and the script are being written.
    Launching,
    /// The process runs.
    Running,
    /// Finished (exited, killed, or failed before running).
    Done,
}

/// Why a container is killed; the exit status reported instead of the
/// process's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KillReason {
    pub exit_status: i32,
    pub diagnostics: String,
}

impl KillReason {
    /// `stopContainers` from the application master.
    pub fn by_app_master() -> KillReason {
        KillReason {
            exit_status: exit_status::KILLED_BY_APPMASTER,
            diagnostics: "Container killed by the ApplicationMaster.".into(),
        }
    }

    /// `containers_to_cleanup` in a heartbeat answer.
    pub fn by_resource_manager() -> KillReason {
        KillReason {
            exit_status: exit_status::KILLED_BY_RESOURCEMANAGER,
            diagnostics: "Container Killed by ResourceManager".into(),
        }
    }

    /// `applications_to_cleanup` in a heartbeat answer, or node shutdown.
    pub fn after_app_completion(why: &str) -> KillReason {
        KillReason {
            exit_status: exit_status::KILLED_AFTER_APP_COMPLETION,
            diagnostics: format!("Container killed on application-finish event: {why}"),
        }
    }
}

/// A snapshot of one container.
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerReport {
    pub id: ContainerId,
    pub user: String,
    pub resource: Resource,
    pub phase: ContainerPhase,
    /// [`exit_status::INVALID`] until the container is done.
    pub exit_status: i32,
    pub diagnostics: String,
    /// Pid of the launch script (the process group id).
    pub pid: Option<i32>,
    pub paths: Option<ContainerPaths>,
    /// Memory of the process tree at the last monitor check (rss, vmem).
    pub memory_bytes: Option<(u64, u64)>,
}

struct Container {
    grant: ContainerTokenIdentifier,
    phase: ContainerPhase,
    exit_status: i32,
    diagnostics: String,
    pid: Option<i32>,
    paths: Option<ContainerPaths>,
    kill: Option<KillReason>,
    kill_tx: watch::Sender<bool>,
    /// Completed and sent in a heartbeat at least once.
    reported: bool,
    memory: Option<(u64, u64)>,
    /// Pids seen at the last monitor check.
    seen_pids: HashSet<i32>,
}

impl Container {
    fn report(&self) -> ContainerReport {
        ContainerReport {
            id: self.grant.container,
            user: self.grant.app_submitter.clone(),
            resource: self.grant.resource,
            phase: self.phase,
            exit_status: self.exit_status,
            diagnostics: self.diagnostics.clone(),
            pid: self.pid,
            paths: self.paths.clone(),
            memory_bytes: self.memory,
        }
    }

    fn status_proto(&self, for_rm: bool) -> ContainerStatusProto {
        let (state, sub) = match self.phase {
            // Hadoop's ResourceManager takes any state other than RUNNING
            // (or SCHEDULED, which this protocol version lacks) as
            // "completed", so the RM hears RUNNING from acceptance on.
            ContainerPhase::Localizing | ContainerPhase::Launching if !for_rm => (
                ContainerStateProto::CNew,
                ContainerSubStateProto::CssScheduled,
            ),
            ContainerPhase::Localizing | ContainerPhase::Launching => (
                ContainerStateProto::CRunning,
                ContainerSubStateProto::CssScheduled,
            ),
            ContainerPhase::Running => (
                ContainerStateProto::CRunning,
                ContainerSubStateProto::CssRunning,
            ),
            ContainerPhase::Done => (
                ContainerStateProto::CComplete,
                ContainerSubStateProto::CssDone,
            ),
        };
        ContainerStatusProto {
            container_id: Some(wire::container_id_proto(&self.grant.container)),
            state: Some(state as i32),
            diagnostics: Some(self.diagnostics.clone()),
            exit_status: Some(self.exit_status),
            capability: Some(wire::resource_proto(self.grant.resource)),
            execution_type: Some(ExecutionTypeProto::Guaranteed as i32),
            container_attributes: Vec::new(),
            container_sub_state: Some(sub as i32),
        }
    }
}

struct App {
    user: String,
    containers: BTreeSet<ContainerId>,
    /// The ResourceManager said the application is over.
    finishing: bool,
}

#[derive(Default)]
struct State {
    containers: BTreeMap<ContainerId, Container>,
    apps: BTreeMap<ApplicationId, App>,
    /// Acknowledged completions, remembered for a while.
    recently_stopped: BTreeMap<ContainerId, Instant>,
}

struct Inner {
    cfg: Arc<NmConfig>,
    node_id: SharedNodeId,
    session: watch::Receiver<RmSession>,
    tokens: ContainerTokenChecker,
    localizer: Arc<Localizer>,
    state: Mutex<State>,
    /// Bumped on every phase change, for waiters.
    changes: watch::Sender<u64>,
    shutting_down: AtomicBool,
    next_work_dir: AtomicUsize,
    page_size: u64,
    tick_ms: f64,
}

/// The container side of the NodeManager. Cheap to clone.
#[derive(Clone)]
pub struct ContainerManager {
    inner: Arc<Inner>,
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn serialized(r: &Rejection) -> SerializedExceptionProto {
    SerializedExceptionProto {
        message: Some(r.message.clone()),
        trace: Some(format!("{}: {}", r.class_name, r.message)),
        class_name: Some(r.class_name.clone()),
        cause: None,
    }
}

fn failure(id: Option<ContainerIdProto>, r: &Rejection) -> ContainerExceptionMapProto {
    ContainerExceptionMapProto {
        container_id: id,
        exception: Some(serialized(r)),
    }
}

/// A user name that can be a directory name.
fn check_user(user: &str) -> Result<(), Rejection> {
    if user.is_empty() {
        return Err(Rejection::yarn(
            "the container token names no application submitter",
        ));
    }
    if user == "." || user == ".." || user.contains('/') || user.contains('\0') {
        return Err(Rejection::yarn(format!(
            "the application submitter '{user}' cannot be used as a directory name"
        )));
    }
    Ok(())
}

/// A checked launch context, ready for the container task.
struct Launch {
    resources: Vec<(String, LocalResource)>,
    environment: Vec<(String, String)>,
    commands: Vec<String>,
    tokens: Vec<u8>,
}

fn check_launch_context(clc: &ContainerLaunchContextProto) -> Result<Launch, Rejection> {
    if let Some(service) = clc.service_data.first() {
        return Err(Rejection::new(
            class::INVALID_AUX_SERVICE,
            format!(
                "The auxService:{} does not exist",
                service.key.as_deref().unwrap_or("")
            ),
        ));
    }
    let mut resources = Vec::with_capacity(clc.local_resources.len());
    for entry in &clc.local_resources {
        let link = entry.key.clone().unwrap_or_default();
        launch::validate_link_name(&link).map_err(Rejection::yarn)?;
        let value = entry.value.as_ref().ok_or_else(|| {
            Rejection::yarn(format!("the local resource '{link}' has no description"))
        })?;
        let res = LocalResource::from_proto(value).map_err(Rejection::yarn)?;
        resources.push((link, res));
    }
    let environment = clc
        .environment
        .iter()
        .filter_map(|e| Some((e.key.clone()?, e.value.clone().unwrap_or_default())))
        .collect::<Vec<_>>();
    for (k, _) in &environment {
        let valid = !k.is_empty()
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !k.starts_with(|c: char| c.is_ascii_digit());
        if !valid {
            return Err(Rejection::yarn(format!(
                "the environment variable name '{k}' cannot be exported by a shell"
            )));
        }
    }
    if clc.command.is_empty() {
        return Err(Rejection::yarn("the launch context has no command"));
    }
    Ok(Launch {
        resources,
        environment,
        commands: clc.command.clone(),
        tokens: clc
            .tokens
            .clone()
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| launch::EMPTY_CREDENTIALS.to_vec()),
    })
}

impl ContainerManager {
    pub(crate) fn new(
        cfg: Arc<NmConfig>,
        node_id: SharedNodeId,
        session: watch::Receiver<RmSession>,
        secrets: Arc<dyn TokenSecrets>,
    ) -> ContainerManager {
        let (page_size, tick_ms) = procfs::system_units();
        ContainerManager {
            inner: Arc::new(Inner {
                localizer: Arc::new(Localizer::new(cfg.local_dirs.clone())),
                tokens: ContainerTokenChecker::new(node_id.clone(), secrets),
                cfg,
                node_id,
                session,
                state: Mutex::new(State::default()),
                changes: watch::channel(0).0,
                shutting_down: AtomicBool::new(false),
                next_work_dir: AtomicUsize::new(0),
                page_size,
                tick_ms,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn changed(&self) {
        self.inner.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// The localizer (its counters show cache use).
    pub fn localizer(&self) -> &Arc<Localizer> {
        &self.inner.localizer
    }

    fn node_id(&self) -> Option<NodeId> {
        self.inner.node_id.get().cloned()
    }

    // ------------------------------------------------------------ protocol

    /// `startContainers`. Each request succeeds or fails on its own; the
    /// whole call fails only when the node cannot start anything (not
    /// registered yet, shutting down). Must run inside a tokio runtime.
    pub fn start_containers(
        &self,
        caller: &NmTokenCaller,
        req: StartContainersRequestProto,
    ) -> Result<StartContainersResponseProto, RpcError> {
        if self.inner.shutting_down.load(Ordering::SeqCst) {
            return Err(RpcError::yarn(
                "Container start failed as the NodeManager is in the process of shutting down",
            ));
        }
        let Some(rm_identifier) = self.inner.session.borrow().rm_identifier else {
            return Err(RpcError::new(
                NM_NOT_YET_READY_CLASS,
                "Rejecting new containers as NodeManager has not yet connected with \
                 ResourceManager",
            ));
        };
        let mut resp = StartContainersResponseProto::default();
        for request in req.start_container_request {
            let token_id = request
                .container_token
                .as_ref()
                .and_then(|t| {
                    <hadoop_protos::yarn::ContainerTokenIdentifierProto as prost::Message>::decode(
                        t.identifier.as_slice(),
                    )
                    .ok()
                })
                .and_then(|i| i.container_id);
            match self.start_one(caller, request, rm_identifier) {
                Ok(id) => resp.succeeded_requests.push(wire::container_id_proto(&id)),
                Err(r) => {
                    warn!(container = ?token_id.as_ref().map(wire::describe_container_id), rejection = %r, "container start refused");
                    resp.failed_requests.push(failure(token_id, &r));
                }
            }
        }
        Ok(resp)
    }

    fn start_one(
        &self,
        caller: &NmTokenCaller,
        request: StartContainerRequestProto,
        rm_identifier: i64,
    ) -> Result<ContainerId, Rejection> {
        let token = request.container_token.ok_or_else(|| {
            Rejection::invalid_token("the start request carries no container token")
        })?;
        let grant = self
            .inner
            .tokens
            .verify(caller, &token, rm_identifier, now_ms())?;
        let id = grant.container;
        check_user(&grant.app_submitter)?;
        let clc = request.container_launch_context.ok_or_else(|| {
            Rejection::yarn(format!("the start request of {id} has no launch context"))
        })?;
        let launch = check_launch_context(&clc)?;

        let (kill_tx, kill_rx) = watch::channel(false);
        {
            let mut st = self.lock();
            // Checked under the lock: `shutdown` sets the flag before it
            // snapshots the containers, so none slips past it.
            if self.inner.shutting_down.load(Ordering::SeqCst) {
                return Err(Rejection::yarn(
                    "Container start failed as the NodeManager is in the process of shutting down",
                ));
            }
            if st.containers.contains_key(&id) {
                return Err(Rejection::yarn(format!(
                    "Container {id} already is running on this node"
                )));
            }
            if let Some(app) = st.apps.get(&id.app()) {
                if app.finishing {
                    return Err(Rejection::yarn(format!(
                        "Application {} is finishing on this node; container {id} is not started",
                        id.app()
                    )));
                }
                if app.user != grant.app_submitter {
                    return Err(Rejection::yarn(format!(
                        "Container {id} is submitted by {} but application {} runs as {} on \
                         this node",
                        grant.app_submitter,
                        id.app(),
                        app.user
                    )));
                }
            }
            if !self.inner.tokens.record_start(&grant) {
                return Err(Rejection::yarn(format!(
                    "Unauthorized request to start container.\nAttempt to relaunch the same \
                     container with id {id}."
                )));
            }
            st.apps
                .entry(id.app())
                .or_insert_with(|| App {
                    user: grant.app_submitter.clone(),
                    containers: BTreeSet::new(),
                    finishing: false,
                })
                .containers
                .insert(id);
            st.containers.insert(
                id,
                Container {
                    grant: grant.clone(),
                    phase: ContainerPhase::Localizing,
                    exit_status: exit_status::INVALID,
                    diagnostics: String::new(),
                    pid: None,
                    paths: None,
                    kill: None,
                    kill_tx,
                    reported: false,
                    memory: None,
                    seen_pids: HashSet::new(),
                },
            );
        }
        info!(container = %id, user = %grant.app_submitter, resource = %grant.resource, "starting container");
        self.changed();
        let this = self.clone();
        tokio::spawn(async move { this.run_container(grant, launch, kill_rx).await });
        Ok(id)
    }

    /// `stopContainers`: kills with [`KillReason::by_app_master`].
    pub fn stop_containers(
        &self,
        caller: &NmTokenCaller,
        req: StopContainersRequestProto,
    ) -> Result<StopContainersResponseProto, RpcError> {
        let mut resp = StopContainersResponseProto::default();
        for p in req.container_id {
            match self.stop_one(caller, &p) {
                Ok(()) => resp.succeeded_requests.push(p),
                Err(r) => resp.failed_requests.push(failure(Some(p), &r)),
            }
        }
        Ok(resp)
    }

    fn authorize(
        &self,
        caller: &NmTokenCaller,
        p: &ContainerIdProto,
    ) -> Result<ContainerId, Rejection> {
        let id = wire::container_id_from_proto(p).ok_or_else(|| {
            Rejection::yarn(format!(
                "{} is not a complete container id",
                wire::describe_container_id(p)
            ))
        })?;
        let app = caller.identity.attempt.app;
        if id.app() != app {
            return Err(Rejection::yarn(format!(
                "Unauthorized request: the NMToken of {} cannot act on container {id} of \
                 another application",
                caller.identity.attempt
            )));
        }
        Ok(id)
    }

    fn stop_one(&self, caller: &NmTokenCaller, p: &ContainerIdProto) -> Result<(), Rejection> {
        let id = self.authorize(caller, p)?;
        info!(container = %id, by = %caller.identity.attempt, "stop requested");
        match self.kill(id, KillReason::by_app_master()) {
            KillOutcome::Killing | KillOutcome::AlreadyDone => Ok(()),
            KillOutcome::Unknown if self.lock().recently_stopped.contains_key(&id) => Ok(()),
            KillOutcome::Unknown => Err(Rejection::yarn(format!(
                "Container {id} is not handled by this NodeManager"
            ))),
        }
    }

    /// `getContainerStatuses`.
    pub fn get_container_statuses(
        &self,
        caller: &NmTokenCaller,
        req: GetContainerStatusesRequestProto,
    ) -> Result<GetContainerStatusesResponseProto, RpcError> {
        let mut resp = GetContainerStatusesResponseProto::default();
        for p in req.container_id {
            let result = self.authorize(caller, &p).and_then(|id| {
                let st = self.lock();
                match st.containers.get(&id) {
                    Some(c) => Ok(c.status_proto(false)),
                    None if st.recently_stopped.contains_key(&id) => Err(Rejection::yarn(format!(
                        "Container {id} was recently stopped on node manager."
                    ))),
                    None => Err(Rejection::yarn(format!(
                        "Container {id} is not handled by this NodeManager"
                    ))),
                }
            });
            match result {
                Ok(s) => resp.status.push(s),
                Err(r) => resp.failed_requests.push(failure(Some(p), &r)),
            }
        }
        Ok(resp)
    }

    /// `signalToContainer`: thread dump (SIGQUIT), graceful (SIGTERM) or
    /// forceful (SIGKILL) shutdown of the container's process group.
    pub fn signal_to_container(
        &self,
        caller: &NmTokenCaller,
        req: SignalContainerRequestProto,
    ) -> Result<SignalContainerResponseProto, RpcError> {
        let id = self
            .authorize(caller, &req.container_id)
            .map_err(|r| RpcError::new(r.class_name, r.message))?;
        let command = SignalContainerCommandProto::try_from(req.command).map_err(|_| {
            RpcError::yarn(format!("unknown signal command {} for {id}", req.command))
        })?;
        self.signal(id, command)
            .map_err(|r| RpcError::new(r.class_name, r.message))?;
        Ok(SignalContainerResponseProto {})
    }

    fn signal(
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
            info!(container = %id, exit_status = reason.exit_status, "killing container: {}", reason.diagnostics.lines().next().unwrap_or(""));
            c.kill = Some(reason);
        }
        c.kill_tx.send_replace(true);
        KillOutcome::Killing
    }

    // ------------------------------------------------------------ heartbeat side

    /// Statuses for the next heartbeat: every container the ResourceManager
    /// has not acknowledged as complete.
    pub fn heartbeat_statuses(&self) -> Vec<ContainerStatusProto> {
        let mut st = self.lock();
        st.containers
            .values_mut()
            .map(|c| {
                if c.phase == ContainerPhase::Done {
                    c.reported = true;
                }
                c.status_proto(true)
            })
            .collect()
    }

    /// After a heartbeat went through: completed containers of applications
    /// this node no longer has are dropped once they have been reported
    /// (the ResourceManager may never acknowledge them).
    pub fn after_heartbeat(&self) {
        let mut st = self.lock();
        let State {
            containers,
            apps,
            recently_stopped,
        } = &mut *st;
        let gone: Vec<ContainerId> = containers
            .iter()
            .filter(|(id, c)| {
                c.phase == ContainerPhase::Done && c.reported && !apps.contains_key(&id.app())
            })
            .map(|(id, _)| *id)
            .collect();
        let now = Instant::now();
        for id in gone {
            containers.remove(&id);
            recently_stopped.insert(id, now);
        }
    }

    /// Statuses for a (re-)registration.
    pub fn registration_statuses(&self) -> Vec<NmContainerStatusProto> {
        let st = self.lock();
        st.containers
            .values()
            .map(|c| {
                let s = c.status_proto(true);
                NmContainerStatusProto {
                    container_id: s.container_id,
                    container_state: s.state,
                    resource: s.capability,
                    priority: Some(PriorityProto {
                        priority: Some(c.grant.priority),
                    }),
                    diagnostics: s.diagnostics,
                    container_exit_status: s.exit_status,
                    creation_time: Some(c.grant.creation_time_ms),
                    node_label_expression: c.grant.node_label_expression.clone(),
                    version: Some(c.grant.version),
                    execution_type: Some(ExecutionTypeProto::Guaranteed as i32),
                    allocation_request_id: Some(c.grant.allocation_request_id),
                    allocation_tags: c.grant.allocation_tags.clone(),
                }
            })
            .collect()
    }

    /// Applications with containers on this node.
    pub fn running_applications(&self) -> Vec<ApplicationId> {
        self.lock().apps.keys().copied().collect()
    }

    /// `containers_to_be_removed_from_nm`: the RM has seen these complete.
    pub fn acknowledge_completed(&self, ids: &[ContainerIdProto]) {
        let mut st = self.lock();
        let now = Instant::now();
        for id in ids.iter().filter_map(wire::container_id_from_proto) {
            if st
                .containers
                .get(&id)
                .is_some_and(|c| c.phase == ContainerPhase::Done)
            {
                st.containers.remove(&id);
                st.recently_stopped.insert(id, now);
                debug!(container = %id, "completion acknowledged by the ResourceManager");
            }
        }
        let keep = self.inner.cfg.containers.track_stopped_for;
        st.recently_stopped
            .retain(|_, at| now.duration_since(*at) < keep);
    }

    /// `containers_to_cleanup`: kill with [`KillReason::by_resource_manager`].
    pub fn cleanup_containers(&self, ids: &[ContainerIdProto]) {
        for id in ids.iter().filter_map(wire::container_id_from_proto) {
            if self.kill(id, KillReason::by_resource_manager()) == KillOutcome::Unknown {
                debug!(container = %id, "cleanup requested for a container this node does not have");
            }
        }
    }

    /// `applications_to_cleanup`: kill the applications' containers and
    /// delete their directories (after `delete.debug-delay-sec`) once all
    /// of them are done.
    pub fn cleanup_applications(&self, apps: &[ApplicationId]) {
        for app in apps {
            let ids: Vec<ContainerId> = {
                let mut st = self.lock();
                let Some(a) = st.apps.get_mut(app) else {
                    continue;
                };
                if a.finishing {
                    continue;
                }
                a.finishing = true;
                a.containers.iter().copied().collect()
            };
            info!(app = %app, containers = ids.len(), "application finished; cleaning up");
            for id in ids {
                self.kill(
                    id,
                    KillReason::after_app_completion("Application killed by ResourceManager"),
                );
            }
            self.maybe_finish_app(*app);
        }
    }

    /// `containers_to_signal` from the ResourceManager.
    pub fn signal_from_rm(&self, requests: &[SignalContainerRequestProto]) {
        for r in requests {
            let Some(id) = wire::container_id_from_proto(&r.container_id) else {
                continue;
            };
            let Ok(command) = SignalContainerCommandProto::try_from(r.command) else {
                warn!(container = %id, command = r.command, "unknown signal command from the ResourceManager");
                continue;
            };
            if let Err(e) = self.signal(id, command) {
                info!(container = %id, "signal from the ResourceManager not delivered: {}", e.message);
            }
        }
    }

    /// Removes a finishing application whose containers are all done, and
    /// schedules the deletion of its directories.
    fn maybe_finish_app(&self, app: ApplicationId) {
        let user = {
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
                Some(a) => a.user,
                None => return,
            }
        };
        self.inner.localizer.forget_app(app);
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
                        Ok(()) => debug!(dir = %d.display(), "deleted"),
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(e) => warn!(dir = %d.display(), error = %e, "cannot delete an application directory"),
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
        let deadline = tokio::time::Instant::now() + timeout;
        for id in &ids {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if self.wait_done(id, left).await.is_none()
                && self
                    .report(id)
                    .is_some_and(|r| r.phase != ContainerPhase::Done)
            {
                warn!(container = %id, "still not done when the NodeManager stopped");
            }
        }
    }

    // ------------------------------------------------------------ one container

    fn set_phase(
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
            }
        }
        self.changed();
    }

    fn kill_reason(&self, id: &ContainerId) -> Option<KillReason> {
        self.lock().containers.get(id).and_then(|c| c.kill.clone())
    }

    /// Marks the container done. A pending kill reason wins over
    /// `exit_status`.
    fn complete(&self, id: ContainerId, exit_status: i32, diagnostics: String) {
        let max = self.inner.cfg.containers.diagnostics_max_chars;
        let app = {
            let mut st = self.lock();
            let Some(c) = st.containers.get_mut(&id) else {
                return;
            };
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
            info!(container = %id, exit_status = status, "container complete");
            id.app()
        };
        self.changed();
        self.maybe_finish_app(app);
    }

    async fn run_container(
        self,
        grant: ContainerTokenIdentifier,
        launch: Launch,
        mut kill_rx: watch::Receiver<bool>,
    ) {
        let id = grant.container;
        let started = Instant::now();

        // 1. Localize, all resources at once.
        let app = id.app();
        let jobs = launch.resources.iter().cloned().map(|(link, res)| {
            let localizer = self.inner.localizer.clone();
            let user = grant.app_submitter.clone();
            async move {
                localizer
                    .localize(&res, &user, app)
                    .await
                    .map(|l| (link, l))
            }
        });
        // The localizations run as tasks of their own: a kill does not wait
        // for them (they finish in the background and stay cached).
        let results = tokio::select! {
            r = futures_join_all(jobs) => r,
            _ = killed(&mut kill_rx) => {
                self.complete(id, exit_status::INVALID, String::new());
                return;
            }
        };
        let mut links = Vec::with_capacity(results.len());
        let mut counters = [0u64; 4];
        for r in results {
            match r {
                Ok((link, l)) => {
                    if l.from_cache {
                        counters[1] += l.bytes;
                        counters[3] += 1;
                    } else {
                        counters[0] += l.bytes;
                        counters[2] += 1;
                    }
                    links.push(ResourceLink {
                        target: l.path,
                        link,
                    });
                }
                Err(e) => {
                    warn!(container = %id, "localization failed: {e}");
                    self.complete(id, exit_status::INVALID, e);
                    return;
                }
            }
        }
        let localization_counters = format!(
            "{},{},{},{},{}",
            counters[0],
            counters[1],
            counters[2],
            counters[3],
            started.elapsed().as_millis()
        );
        if self.kill_reason(&id).is_some() {
            self.complete(id, exit_status::INVALID, String::new());
            return;
        }

        // 2. Directories, credentials, script.
        let cfg = &self.inner.cfg;
        let work_index = self.inner.next_work_dir.fetch_add(1, Ordering::Relaxed);
        let paths = ContainerPaths::new(
            &cfg.local_dirs,
            &cfg.log_dirs,
            &grant.app_submitter,
            &id,
            work_index,
            0,
        );
        self.set_phase(id, ContainerPhase::Launching, None, Some(paths.clone()));
        let Some(node_id) = self.node_id() else {
            self.complete(
                id,
                exit_status::INVALID,
                "the NodeManager is still starting".into(),
            );
            return;
        };
        let node_env = NodeEnv {
            node_id: &node_id,
            http_port: cfg.http_port,
            user_home_dir: &cfg.containers.user_home_dir,
            whitelist: &cfg.containers.env_whitelist,
            admin_env: &cfg.containers.admin_env,
            nm_env: &cfg.containers.nm_env,
        };
        let env = launch::build_env(
            &launch.environment,
            &id,
            &grant.app_submitter,
            &paths,
            &node_env,
            &localization_counters,
        );
        let commands: Vec<String> = launch
            .commands
            .iter()
            .map(|c| launch::expand(c, &paths.log_dir))
            .collect();
        let script = launch::launch_script(&env, &links, &commands, &paths.log_dir);
        let prepared = {
            let paths = paths.clone();
            let tokens = launch.tokens.clone();
            tokio::task::spawn_blocking(move || prepare_dirs(&paths, &tokens, &script))
                .await
                .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())))
        };
        if let Err(e) = prepared {
            let msg = format!(
                "cannot prepare the directories of container {id} (work dir {}): {e}",
                paths.work_dir.display()
            );
            warn!(container = %id, "{msg}");
            self.complete(id, exit_status::INVALID, msg);
            return;
        }
        if self.kill_reason(&id).is_some() {
            self.complete(id, exit_status::INVALID, String::new());
            return;
        }

        // 3. Run.
        let mut cmd = tokio::process::Command::new("/bin/bash");
        cmd.arg(paths.script())
            .current_dir(&paths.work_dir)
            .env_clear()
            .envs(env.as_map())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0);
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                let msg =
                    format!("cannot run the launch script of container {id} with /bin/bash: {e}");
                warn!(container = %id, "{msg}");
                self.complete(id, exit_status::INVALID, msg);
                return;
            }
        };
        let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) else {
            self.complete(
                id,
                exit_status::INVALID,
                "the container process vanished at once".into(),
            );
            return;
        };
        let mut group = GroupGuard::new(pid);
        self.set_phase(id, ContainerPhase::Running, Some(pid), None);
        info!(container = %id, pid, work_dir = %paths.work_dir.display(), "container launched");

        let status = tokio::select! {
            s = child.wait() => s,
            _ = killed(&mut kill_rx) => {
                let _ = killpg(Pid::from_raw(pid), Signal::SIGTERM);
                match tokio::time::timeout(cfg.containers.sigkill_delay, child.wait()).await {
                    Ok(s) => s,
                    Err(_) => {
                        let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
                        child.wait().await
                    }
                }
            }
        };
        // Whatever is left of the group goes with the container (the
        // leader is reaped only now, so the group id is still ours).
        group.kill_now();
        let code = match status {
            Ok(s) => {
                use std::os::unix::process::ExitStatusExt;
                exit_status::from_process(s.code(), s.signal())
            }
            Err(e) => {
                warn!(container = %id, error = %e, "cannot wait for the container process");
                exit_status::INVALID
            }
        };
        let diagnostics = if self.kill_reason(&id).is_some() {
            format!("Container killed on request. Exit code is {code}")
        } else if code == exit_status::SUCCESS {
            String::new()
        } else {
            let tail = cfg.containers.stderr_tail_bytes;
            let log_dir = paths.log_dir.clone();
            let cid = id.to_string();
            tokio::task::spawn_blocking(move || failure_diagnostics(&cid, code, &log_dir, tail))
                .await
                .unwrap_or_default()
        };
        self.complete(id, code, diagnostics);
    }

    // ------------------------------------------------------------ monitor

    /// Checks memory every `container-monitor.interval-ms` until `stop`.
    pub async fn run_monitor(self, mut stop: watch::Receiver<bool>) {
        let s = &self.inner.cfg.containers;
        if !s.pmem_check_enabled && !s.vmem_check_enabled {
            debug!("container memory checks are off");
        }
        let mut tick = tokio::time::interval(s.monitor_interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = stop.wait_for(|s| *s) => return,
            }
            self.check_memory().await;
        }
    }

    /// One monitor pass.
    pub async fn check_memory(&self) {
        let running: Vec<(ContainerId, i32, u64, HashSet<i32>)> = {
            let st = self.lock();
            st.containers
                .values()
                .filter(|c| c.phase == ContainerPhase::Running && c.kill.is_none())
                .filter_map(|c| {
                    // A container without memory in its token has no limit.
                    let mb = u64::try_from(c.grant.resource.memory_mb)
                        .ok()
                        .filter(|m| *m > 0)?;
                    Some((c.grant.container, c.pid?, mb << 20, c.seen_pids.clone()))
                })
                .collect()
        };
        if running.is_empty() {
            return;
        }
        let table =
            match tokio::task::spawn_blocking(|| ProcessTable::read(Path::new("/proc"))).await {
                Ok(Ok(t)) => t,
                Ok(Err(e)) => {
                    warn!(error = %e, "cannot read /proc; container memory is not checked");
                    return;
                }
                Err(_) => return,
            };
        let s = &self.inner.cfg.containers;
        for (id, pid, pmem_limit, previous) in running {
            let usage = procfs::measure(
                &table,
                pid,
                &previous,
                self.inner.page_size,
                self.inner.tick_ms,
            );
            let vmem_limit = (pmem_limit as f64 * s.vmem_pmem_ratio) as u64;
            {
                let mut st = self.lock();
                if let Some(c) = st.containers.get_mut(&id) {
                    c.memory = Some((usage.rss_bytes, usage.vmem_bytes));
                    c.seen_pids = usage.pids.iter().copied().collect();
                }
            }
            let over = if s.vmem_check_enabled
                && procfs::over_limit(usage.vmem_bytes, usage.aged_vmem_bytes, vmem_limit)
            {
                Some((MemoryKind::Virtual, exit_status::KILLED_EXCEEDED_VMEM))
            } else if s.pmem_check_enabled
                && procfs::over_limit(usage.rss_bytes, usage.aged_rss_bytes, pmem_limit)
            {
                Some((MemoryKind::Physical, exit_status::KILLED_EXCEEDED_PMEM))
            } else {
                None
            };
            if let Some((kind, status)) = over {
                let diagnostics = procfs::memory_kill_diagnostics(
                    kind,
                    pid,
                    &id.to_string(),
                    &usage,
                    pmem_limit,
                    vmem_limit,
                );
                warn!(container = %id, "{}", diagnostics.lines().next().unwrap_or(""));
                self.kill(
                    id,
                    KillReason {
                        exit_status: status,
                        diagnostics,
                    },
                );
            }
        }
        self.changed();
    }
}

/// Result of [`ContainerManager::kill`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillOutcome {
    /// The kill is under way (or was already).
    Killing,
    /// The container had already completed.
    AlreadyDone,
    /// No such container on this node.
    Unknown,
}

/// Kills the rest of a container's process group when the container ends
/// abnormally (its task is dropped, e.g. at runtime shutdown).
struct GroupGuard {
    pgid: Option<i32>,
}

impl GroupGuard {
    fn new(pgid: i32) -> GroupGuard {
        GroupGuard { pgid: Some(pgid) }
    }

    fn kill_now(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill_now();
    }
}

/// Resolves once a kill is requested. A closed channel means nobody can ask
/// for a kill any more, so it never resolves then.
async fn killed(rx: &mut watch::Receiver<bool>) {
    if rx.wait_for(|k| *k).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Waits for all futures, in order.
async fn futures_join_all<F>(jobs: impl Iterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handles: Vec<_> = jobs.map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        match h.await {
            Ok(v) => out.push(v),
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }
    out
}

/// Creates the application dirs on every local dir, the work dir with
/// `tmp/`, the log dirs, and writes the credentials and the script.
fn prepare_dirs(paths: &ContainerPaths, tokens: &[u8], script: &str) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true).mode(0o750);
    for d in &paths.app_dirs {
        builder.create(d)?;
    }
    builder.create(paths.work_dir.join("tmp"))?;
    for d in &paths.log_dirs {
        builder.create(d)?;
    }
    let write = |path: &Path, data: &[u8], mode: u32| -> std::io::Result<()> {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(path)?;
        f.write_all(data)?;
        f.set_permissions(std::fs::Permissions::from_mode(mode))
    };
    write(&paths.tokens_file(), tokens, 0o600)?;
    write(&paths.script(), script.as_bytes(), 0o700)?;
    Ok(())
}

/// The last `max` bytes of a file, as text.
fn tail(path: &Path, max: u64) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    f.seek(SeekFrom::Start(len.saturating_sub(max))).ok()?;
    let mut buf = Vec::new();
    f.take(max).read_to_end(&mut buf).ok()?;
    Some(String::from_utf8_lossy(&buf).into_owned())
}

/// Diagnostics of a container that exited non-zero: the exit code and the
/// ends of `prelaunch.err` and of the error files in the log dir.
fn failure_diagnostics(container: &str, code: i32, log_dir: &Path, tail_bytes: u64) -> String {
    let mut d = format!(
        "Exception from container-launch.\nContainer id: {container}\nExit code: {code}\n\
         Container exited with a non-zero exit code {code}. Error file: {}.\n",
        launch::PRELAUNCH_ERR
    );
    let mut files: Vec<PathBuf> = vec![log_dir.join(launch::PRELAUNCH_ERR)];
    if let Ok(entries) = std::fs::read_dir(log_dir) {
        let mut others: Vec<PathBuf> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.to_ascii_lowercase().contains("stderr"))
            })
            .collect();
        others.sort();
        files.extend(others);
    }
    for f in files {
        if let Some(t) = tail(&f, tail_bytes) {
            let name = f
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            d.push_str(&format!("Last {tail_bytes} bytes of {name} :\n{t}\n"));
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_status_mapping() {
        assert_eq!(exit_status::from_process(Some(0), None), 0);
        assert_eq!(exit_status::from_process(Some(3), None), 3);
        assert_eq!(
            exit_status::from_process(None, Some(15)),
            exit_status::TERMINATED
        );
        assert_eq!(
            exit_status::from_process(None, Some(9)),
            exit_status::FORCE_KILLED
        );
        assert_eq!(exit_status::from_process(None, None), exit_status::INVALID);
        assert_eq!(KillReason::by_app_master().exit_status, -105);
        assert_eq!(KillReason::by_resource_manager().exit_status, -106);
        assert_eq!(KillReason::after_app_completion("x").exit_status, -107);
    }

    #[test]
    fn launch_contexts_are_checked() {
        use hadoop_protos::yarn::{
            StringBytesMapProto, StringLocalResourceMapProto, StringStringMapProto,
        };
        let base = ContainerLaunchContextProto {
            command: vec!["true".into()],
            ..Default::default()
        };
        let l = check_launch_context(&base).expect("minimal");
        assert_eq!(l.tokens, launch::EMPTY_CREDENTIALS);

        let mut shuffle = base.clone();
        shuffle.service_data.push(StringBytesMapProto {
            key: Some("spark_shuffle".into()),
            value: Some(vec![]),
        });
        let r = check_launch_context(&shuffle).err().expect("aux service");
        assert_eq!(r.class_name, class::INVALID_AUX_SERVICE);
        assert_eq!(r.message, "The auxService:spark_shuffle does not exist");

        let mut bad_env = base.clone();
        bad_env.environment.push(StringStringMapProto {
            key: Some("A-B".into()),
            value: Some("x".into()),
        });
        assert!(check_launch_context(&bad_env).is_err());

        let mut hdfs = base.clone();
        hdfs.local_resources.push(StringLocalResourceMapProto {
            key: Some("x.jar".into()),
            value: Some(hadoop_protos::yarn::LocalResourceProto {
                resource: Some(hadoop_protos::yarn::UrlProto {
                    scheme: Some("hdfs".into()),
                    host: Some("nn".into()),
                    port: Some(8020),
                    file: Some("/x.jar".into()),
                    user_info: None,
                }),
                ..Default::default()
            }),
        });
        let r = check_launch_context(&hdfs).err().expect("hdfs");
        assert!(
            r.message.contains("scheme hdfs is not supported"),
            "{}",
            r.message
        );

        let no_command = ContainerLaunchContextProto::default();
        assert!(check_launch_context(&no_command).is_err());
        assert!(check_user("alice").is_ok());
        assert!(check_user("../x").is_err());
        assert!(check_user("").is_err());
    }

    #[test]
    fn failure_diagnostics_carry_the_error_tails() {
        let tmp = tempfile::tempdir().expect("tempdir");
        std::fs::write(tmp.path().join("prelaunch.err"), "").expect("write");
        std::fs::write(tmp.path().join("stderr"), "x".repeat(100) + "boom\n").expect("write");
        let d = failure_diagnostics("container_1_0001_01_000002", 3, tmp.path(), 10);
        assert!(d.contains("Exit code: 3"), "{d}");
        assert!(d.contains("Last 10 bytes of stderr :\nxxxxx"), "{d}");
        assert!(d.contains("boom"), "{d}");
        assert!(!d.contains(&"x".repeat(11)), "{d}");
    }
}
