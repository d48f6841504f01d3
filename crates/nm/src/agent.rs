//! The node status updater: registers with the ResourceManager, heartbeats,
//! re-registers when told to resync, and unregisters on a clean stop.
//!
//! Behaviour follows Hadoop's `NodeStatusUpdaterImpl`:
//! - registration carries the NodeId, HTTP port, total and physical
//!   resources, version and current health; SHUTDOWN in the answer stops
//!   the node, anything else means registered;
//! - the first heartbeat goes out right after registering, with response
//!   id 0; each later one carries the id of the last answer;
//! - the next interval is the one the RM sends (≤ 0 or absent: 1000 ms);
//! - RESYNC re-registers (the response id restarts at 0); before that, when
//!   the ResourceManager does not keep containers across its restarts
//!   ([`NmConfig::rm_work_preserving`] false), every container is killed
//!   and the node waits for them to complete, as Hadoop's
//!   `NodeManager.resyncWithRM` does, so that no container outlives what the
//!   new ResourceManager knows; the registration reports them (complete, or
//!   still dying). No container starts in between: the RM identifier is
//!   forgotten at once. SHUTDOWN stops the node without unregistering (the
//!   RM already dropped it);
//! - every call goes through the client proxy ([`spindle_ipc::RpcProxy`])
//!   with `ServerRMProxy`'s rules ([`NmConfig::rm_retry`]): while the RM
//!   cannot be reached, or is standby, the call is retried (with RM HA, on
//!   the next RM) for `yarn.nodemanager.resourcemanager.connect.max-wait.ms`;
//! - when that wait runs out without the RM ever answering, the node ends
//!   (`NmExit::Failed`), as Hadoop's NodeManager shuts down; a heartbeat the
//!   RM refused is logged and the next one goes out at the next interval.

use std::sync::Arc;
use std::time::Duration;

use hadoop_protos::yarn::{
    NodeActionProto, NodeHeartbeatRequestProto, NodeHeartbeatResponseProto,
    RegisterNodeManagerRequestProto, RegisterNodeManagerResponseProto,
    UnRegisterNodeManagerRequestProto,
};
use spindle_common::text::escaped;
use spindle_common::NodeId;
use spindle_ipc::methods::resource_tracker::{
    NODE_HEARTBEAT as HEARTBEAT, REGISTER_NODE_MANAGER as REGISTER,
    UN_REGISTER_NODE_MANAGER as UNREGISTER,
};
use spindle_ipc::{protocols, CallError, Failure, ProxyConfig, RpcProxy};
use tokio::sync::watch;
use tracing::{debug, info, warn};

use crate::config::NmConfig;
use crate::containers::ContainerManager;
use crate::disks::NodeHealth;
use crate::session::RmSession;
use crate::wire::{self, MasterKey};

/// The heartbeat interval used when the RM does not give a positive one
/// (Hadoop's `DEFAULT_RM_NM_HEARTBEAT_INTERVAL_MS`).
pub const DEFAULT_HEARTBEAT_INTERVAL: Duration = Duration::from_millis(1000);

/// How long a resync waits for killed containers beyond the SIGKILL delay
/// (Hadoop waits without a bound; a container stuck in the kernel must not
/// keep the node from registering).
const RESYNC_KILL_GRACE: Duration = Duration::from_secs(3);

/// Where the agent is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NmState {
    /// Trying to register (at start-up or after RESYNC).
    Registering,
    /// Registered and heartbeating.
    Running,
    /// Finished; see [`NmExit`].
    Exited(NmExit),
}

/// How the agent ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NmExit {
    /// Stopped on request (after unregistering if it was registered).
    Stopped,
    /// The ResourceManager sent SHUTDOWN (at registration or in a heartbeat).
    ShutdownByRm { diagnostics: String },
    /// The ResourceManager rejected the registration, or the agent broke.
    Failed { message: String },
}

impl NmExit {
    /// True only for a requested stop; a daemon exits non-zero otherwise.
    pub fn is_clean(&self) -> bool {
        matches!(self, NmExit::Stopped)
    }
}

impl std::fmt::Display for NmExit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NmExit::Stopped => f.write_str("stopped"),
            NmExit::ShutdownByRm { diagnostics } if diagnostics.is_empty() => {
                f.write_str("shut down by the ResourceManager")
            }
            NmExit::ShutdownByRm { diagnostics } => {
                write!(f, "shut down by the ResourceManager: {diagnostics}")
            }
            NmExit::Failed { message } => write!(f, "failed: {message}"),
        }
    }
}

/// The proxy to the resource tracker(s).
fn tracker(cfg: &NmConfig) -> RpcProxy {
    let mut c = ProxyConfig::new(String::new(), cfg.user.clone(), protocols::RESOURCE_TRACKER)
        .with_policy(cfg.rm_retry.policy());
    c.servers = cfg.resource_tracker_addrs.clone();
    c.connect_timeout = cfg.rm_connect_timeout;
    c.call_timeout = cfg.rm_call_timeout;
    c.connect_retry = cfg.rm_connect_retry;
    c.kerberos = cfg.kerberos.clone();
    RpcProxy::new(c)
}

/// True when the call never reached a ResourceManager: the proxy gave up
/// connecting.
fn unreachable(e: &CallError) -> bool {
    matches!(e.failure(), Failure::Connect | Failure::ConnectTimeout)
}

enum HeartbeatEnd {
    Resync,
    Exit(NmExit),
}

/// Interruptible waits: `true` means "stop requested".
struct StopSignal(watch::Receiver<bool>);

impl StopSignal {
    async fn requested(&mut self) {
        // A dropped sender also means stop.
        let _ = self.0.wait_for(|s| *s).await;
    }

    fn is_requested(&self) -> bool {
        *self.0.borrow()
    }

    async fn sleep(&mut self, d: Duration) -> bool {
        tokio::select! {
            _ = tokio::time::sleep(d) => false,
            _ = self.requested() => true,
        }
    }
}

pub(crate) struct Agent {
    cfg: Arc<NmConfig>,
    node_id: NodeId,
    tracker: RpcProxy,
    health: watch::Receiver<NodeHealth>,
    state: watch::Sender<NmState>,
    session: watch::Sender<RmSession>,
    containers: ContainerManager,
    stop: StopSignal,
    interval: Duration,
    token_sequence_no: i64,
    /// The last rejected heartbeat, so a repeating rejection is logged once.
    last_rejection: Option<String>,
}

impl Agent {
    pub(crate) fn new(
        cfg: Arc<NmConfig>,
        node_id: NodeId,
        health: watch::Receiver<NodeHealth>,
        state: watch::Sender<NmState>,
        session: watch::Sender<RmSession>,
        containers: ContainerManager,
        stop: watch::Receiver<bool>,
    ) -> Agent {
        Agent {
            tracker: tracker(&cfg),
            interval: cfg.heartbeat_interval,
            cfg,
            node_id,
            health,
            state,
            session,
            containers,
            stop: StopSignal(stop),
            token_sequence_no: 0,
            last_rejection: None,
        }
    }

    /// Runs until stopped, shut down by the RM, or failed.
    pub(crate) async fn run(&mut self) -> NmExit {
        loop {
            if let Err(exit) = self.register().await {
                return exit;
            }
            match self.heartbeats().await {
                HeartbeatEnd::Resync => self.resync().await,
                HeartbeatEnd::Exit(exit) => return exit,
            }
        }
    }

    /// What the node does on RESYNC before registering again.
    async fn resync(&mut self) {
        // Container tokens of the old registration are no longer accepted.
        self.session.send_modify(|s| s.rm_identifier = None);
        if self.cfg.rm_work_preserving {
            info!("the ResourceManager preserves work across restarts; keeping the containers");
            return;
        }
        info!("cleaning up running containers on resync");
        let timeout = self.cfg.containers.sigkill_delay + RESYNC_KILL_GRACE;
        tokio::select! {
            _ = self.containers.cleanup_on_resync(timeout) => {}
            _ = self.stop.requested() => {}
        }
    }

    /// Publishes how the agent ended.
    pub(crate) fn finish(&self, exit: NmExit) {
        self.state.send_replace(NmState::Exited(exit));
    }

    fn current_health(&self) -> NodeHealth {
        self.health.borrow().clone()
    }

    fn register_request(&self) -> RegisterNodeManagerRequestProto {
        let total = self.session.borrow().total_resource;
        RegisterNodeManagerRequestProto {
            node_id: Some(wire::node_id_proto(&self.node_id)),
            http_port: Some(self.cfg.http_port),
            resource: Some(wire::resource_proto(total)),
            nm_version: Some(self.cfg.version.clone()),
            container_statuses: self.containers.registration_statuses(),
            running_applications: self
                .containers
                .running_applications()
                .iter()
                .map(wire::app_id_proto)
                .collect(),
            physical_resource: self.cfg.physical_resource.map(wire::resource_proto),
            node_status: Some(wire::node_status(
                &self.node_id,
                0,
                &self.current_health(),
                Vec::new(),
            )),
            ..Default::default()
        }
    }

    /// Registers (the proxy retries while the RM is unreachable or
    /// standby). `Err` ends the agent.
    async fn register(&mut self) -> Result<(), NmExit> {
        self.state.send_replace(NmState::Registering);
        self.session.send_modify(|s| s.rm_identifier = None);
        if self.stop.is_requested() {
            return Err(NmExit::Stopped);
        }
        let req = self.register_request();
        let result = tokio::select! {
            r = self.tracker.call(&REGISTER, &req) => r,
            _ = self.stop.requested() => return Err(NmExit::Stopped),
        };
        match result {
            Ok(resp) => self.registered(resp),
            Err(e) => {
                let message = if unreachable(&e) {
                    format!("cannot reach the ResourceManager to register: {e}")
                } else {
                    format!(
                        "registration with the ResourceManager at {} was rejected: {e}",
                        e.addr
                    )
                };
                tracing::error!("{}", escaped(&message));
                Err(NmExit::Failed { message })
            }
        }
    }

    fn registered(&mut self, resp: RegisterNodeManagerResponseProto) -> Result<(), NmExit> {
        let diagnostics = resp.diagnostics_message.clone().unwrap_or_default();
        if resp.node_action() == NodeActionProto::Shutdown {
            warn!(
                rm = %self.tracker.addr(),
                "the ResourceManager answered the registration with SHUTDOWN; message from the \
                 ResourceManager: {}",
                escaped(&diagnostics)
            );
            return Err(NmExit::ShutdownByRm { diagnostics });
        }
        let (container_key, nm_key) = wire::master_keys_from_proto(
            resp.container_token_master_key.as_ref(),
            resp.nm_token_master_key.as_ref(),
        );
        let mut total = self.session.borrow().total_resource;
        if let Some(r) = resp.resource.as_ref().map(wire::resource_from_proto) {
            if r != total && r.memory_mb > 0 && r.vcores > 0 {
                info!(configured = %total, from_rm = %r, "the ResourceManager set this node's resource");
                total = r;
            }
        }
        self.session.send_modify(|s| {
            s.rm_identifier = resp.rm_identifier;
            s.rm_version = resp.rm_version.clone();
            s.apply_keys(container_key, nm_key);
            s.total_resource = total;
            s.registrations += 1;
        });
        info!(
            rm = %self.tracker.addr(),
            node = %self.node_id,
            resource = %total,
            rm_identifier = ?resp.rm_identifier,
            "registered with the ResourceManager"
        );
        self.state.send_replace(NmState::Running);
        Ok(())
    }

    fn heartbeat_request(&self, response_id: i32) -> NodeHeartbeatRequestProto {
        let session = self.session.borrow();
        NodeHeartbeatRequestProto {
            log_aggregation_reports_for_apps: self.containers.log_aggregation_reports(),
            node_status: Some(wire::node_status(
                &self.node_id,
                response_id,
                &self.current_health(),
                self.containers.heartbeat_statuses(),
            )),
            last_known_container_token_master_key: session
                .container_token_master_key
                .as_ref()
                .map(MasterKey::to_proto),
            last_known_nm_token_master_key: session
                .nm_token_master_key
                .as_ref()
                .map(MasterKey::to_proto),
            token_sequence_no: Some(self.token_sequence_no),
            ..Default::default()
        }
    }

    async fn heartbeats(&mut self) -> HeartbeatEnd {
        let mut response_id = 0;
        loop {
            let req = self.heartbeat_request(response_id);
            let result = tokio::select! {
                r = self.tracker.call(&HEARTBEAT, &req) => r,
                _ = self.stop.requested() => return HeartbeatEnd::Exit(self.unregister().await),
            };
            match result {
                Ok(resp) => {
                    self.last_rejection = None;
                    self.containers
                        .log_aggregation_reports_sent(req.log_aggregation_reports_for_apps.len());
                    match self.heartbeat_answered(resp) {
                        Ok(id) => response_id = id,
                        Err(end) => return end,
                    }
                }
                // As Hadoop's NodeManager: the ResourceManager stayed out of
                // reach for the whole connect wait, the node shuts down.
                Err(e) if unreachable(&e) => {
                    let message = format!("lost the ResourceManager: {e}");
                    tracing::error!("{}", escaped(&message));
                    return HeartbeatEnd::Exit(NmExit::Failed { message });
                }
                // Hadoop logs and carries on: the next heartbeat may well succeed.
                Err(e) => {
                    let text = e.to_string();
                    if self.last_rejection.as_deref() != Some(text.as_str()) {
                        warn!(rm = %e.addr, error = %escaped(&text), "a heartbeat failed; sending the next one at the next interval");
                        self.last_rejection = Some(text);
                    } else {
                        debug!(rm = %e.addr, error = %escaped(&text), "heartbeat failed again");
                    }
                }
            }
            if self.stop.sleep(self.interval).await {
                return HeartbeatEnd::Exit(self.unregister().await);
            }
        }
    }

    /// Applies one heartbeat answer; `Ok` carries the id for the next one.
    fn heartbeat_answered(
        &mut self,
        resp: NodeHeartbeatResponseProto,
    ) -> Result<i32, HeartbeatEnd> {
        let next = resp.next_heart_beat_interval.unwrap_or(0);
        self.interval = if next > 0 {
            Duration::from_millis(next.unsigned_abs())
        } else {
            DEFAULT_HEARTBEAT_INTERVAL
        };
        let (container_key, nm_key) = wire::master_keys_from_proto(
            resp.container_token_master_key.as_ref(),
            resp.nm_token_master_key.as_ref(),
        );
        if container_key.is_some() || nm_key.is_some() {
            debug!(
                ?container_key,
                ?nm_key,
                "the ResourceManager rolled master keys"
            );
            self.session
                .send_modify(|s| s.apply_keys(container_key, nm_key));
        }
        let diagnostics = resp.diagnostics_message.clone().unwrap_or_default();
        match resp.node_action() {
            NodeActionProto::Shutdown => {
                warn!(
                    rm = %self.tracker.addr(),
                    "received SHUTDOWN from the ResourceManager in a heartbeat; shutting down. \
                     Message from the ResourceManager: {}",
                    escaped(&diagnostics)
                );
                return Err(HeartbeatEnd::Exit(NmExit::ShutdownByRm { diagnostics }));
            }
            NodeActionProto::Resync => {
                warn!(
                    rm = %self.tracker.addr(),
                    "the node is out of sync with the ResourceManager; registering again. \
                     Message from the ResourceManager: {}",
                    escaped(&diagnostics)
                );
                return Err(HeartbeatEnd::Resync);
            }
            NodeActionProto::Normal => {}
        }
        if let Some(seq) = resp.token_sequence_no {
            self.token_sequence_no = seq;
        }
        self.containers.after_heartbeat();
        self.containers
            .acknowledge_completed(&resp.containers_to_be_removed_from_nm);
        if !resp.containers_to_cleanup.is_empty() {
            self.containers
                .cleanup_containers(&resp.containers_to_cleanup);
        }
        if !resp.applications_to_cleanup.is_empty() {
            let apps: Vec<_> = resp
                .applications_to_cleanup
                .iter()
                .filter_map(wire::app_id_from_proto)
                .collect();
            self.containers.cleanup_applications(&apps);
        }
        if !resp.containers_to_signal.is_empty() {
            self.containers.signal_from_rm(&resp.containers_to_signal);
        }
        if let Some(r) = resp.resource.as_ref().map(wire::resource_from_proto) {
            let total = self.session.borrow().total_resource;
            if r != total && r.memory_mb > 0 && r.vcores > 0 {
                info!(old = %total, new = %r, "the ResourceManager updated this node's resource");
                self.session.send_modify(|s| s.total_resource = r);
            }
        }
        Ok(resp.response_id.unwrap_or(0))
    }

    /// Best-effort `unRegisterNodeManager`, bounded by the configured time.
    async fn unregister(&mut self) -> NmExit {
        if self.cfg.recovery.keeps_containers_on_stop() {
            // Hadoop's NodeStatusUpdaterImpl: a supervised node comes back
            // at once and re-registers with its containers.
            info!("recovery is on and supervised: not unregistering from the ResourceManager");
            return NmExit::Stopped;
        }
        let req = UnRegisterNodeManagerRequestProto {
            node_id: Some(wire::node_id_proto(&self.node_id)),
        };
        let call = self.tracker.call(&UNREGISTER, &req);
        match tokio::time::timeout(self.cfg.unregister_timeout, call).await {
            Ok(Ok(_)) => {
                info!(rm = %self.tracker.addr(), node = %self.node_id, "unregistered from the ResourceManager")
            }
            Ok(Err(e)) => {
                warn!(rm = %self.tracker.addr(), error = %escaped(&e.to_string()), "unRegisterNodeManager failed; stopping anyway")
            }
            Err(_) => warn!(
                rm = %self.tracker.addr(),
                "unRegisterNodeManager did not finish within {} ms; stopping anyway",
                self.cfg.unregister_timeout.as_millis()
            ),
        }
        NmExit::Stopped
    }
}
