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
//! - RESYNC re-registers (the response id restarts at 0), SHUTDOWN stops
//!   the node without unregistering (the RM already dropped it);
//! - when the RM cannot be reached the agent keeps trying at the current
//!   interval, logging once when the outage starts and once when it ends;
//!   with RM HA it moves on to the next RM when one is unreachable or standby.

use std::sync::Arc;
use std::time::{Duration, Instant};

use hadoop_protos::yarn::{
    NodeActionProto, NodeHeartbeatRequestProto, NodeHeartbeatResponseProto,
    RegisterNodeManagerRequestProto, RegisterNodeManagerResponseProto,
    UnRegisterNodeManagerRequestProto, UnRegisterNodeManagerResponseProto,
};
use spindle_common::NodeId;
use spindle_ipc::{class, protocols, ClientOptions, IpcClient, IpcError};
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

/// One connection at a time to the resource tracker, reopened when it breaks.
struct Tracker {
    addrs: Vec<String>,
    current: usize,
    options: ClientOptions,
    client: Option<IpcClient>,
}

impl Tracker {
    fn new(cfg: &NmConfig) -> Tracker {
        let mut options = ClientOptions::new(cfg.user.clone(), protocols::RESOURCE_TRACKER);
        options.connect_timeout = cfg.rm_connect_timeout;
        options.call_timeout = cfg.rm_call_timeout;
        Tracker {
            addrs: cfg.resource_tracker_addrs.clone(),
            current: 0,
            options,
            client: None,
        }
    }

    fn addr(&self) -> &str {
        self.addrs
            .get(self.current)
            .map(String::as_str)
            .unwrap_or("")
    }

    async fn call<Req, Resp>(&mut self, method: &str, req: &Req) -> Result<Resp, IpcError>
    where
        Req: prost::Message,
        Resp: prost::Message + Default,
    {
        let reused = matches!(&self.client, Some(c) if c.is_open());
        let result = self.call_once(method, req).await;
        match result {
            // The RM may have closed an idle or old connection (for instance
            // when it restarted): try once more on a fresh one before
            // calling it an outage. A repeated heartbeat is harmless, the RM
            // recognises it by its response id.
            Err(IpcError::Closed { .. } | IpcError::Io { .. }) if reused => {
                self.call_once(method, req).await
            }
            other => other,
        }
    }

    async fn call_once<Req, Resp>(&mut self, method: &str, req: &Req) -> Result<Resp, IpcError>
    where
        Req: prost::Message,
        Resp: prost::Message + Default,
    {
        let client = match &self.client {
            Some(c) if c.is_open() => c.clone(),
            _ => {
                self.client = None;
                let c = IpcClient::connect(self.addr(), self.options.clone()).await?;
                self.client = Some(c.clone());
                c
            }
        };
        let result = client.call(method, req).await;
        if let Err(e) = &result {
            if !matches!(e, IpcError::Remote { .. }) {
                // A timed-out or broken connection is not reused.
                self.client = None;
            }
        }
        result
    }

    /// With RM HA, moves on to the next ResourceManager.
    fn fail_over(&mut self) {
        if self.addrs.len() > 1 {
            self.current = (self.current + 1) % self.addrs.len();
            self.client = None;
            info!(rm = %self.addr(), "failing over to the next ResourceManager");
        }
    }
}

/// Whether a failed call is worth repeating (the RM is away, starting, or standby).
fn is_retriable(e: &IpcError) -> bool {
    match e {
        IpcError::Remote { class_name, .. } => {
            class_name == class::STANDBY || class_name == class::RETRIABLE
        }
        _ => true,
    }
}

/// Whether to try another RM after this error.
fn should_fail_over(e: &IpcError) -> bool {
    match e {
        IpcError::Remote { class_name, .. } => class_name == class::STANDBY,
        _ => true,
    }
}

struct Outage {
    since: Instant,
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
    tracker: Tracker,
    health: watch::Receiver<NodeHealth>,
    state: watch::Sender<NmState>,
    session: watch::Sender<RmSession>,
    containers: ContainerManager,
    stop: StopSignal,
    interval: Duration,
    token_sequence_no: i64,
    outage: Option<Outage>,
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
            tracker: Tracker::new(&cfg),
            interval: cfg.heartbeat_interval,
            cfg,
            node_id,
            health,
            state,
            session,
            containers,
            stop: StopSignal(stop),
            token_sequence_no: 0,
            outage: None,
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
                HeartbeatEnd::Resync => continue,
                HeartbeatEnd::Exit(exit) => return exit,
            }
        }
    }

    /// Publishes how the agent ended.
    pub(crate) fn finish(&self, exit: NmExit) {
        self.state.send_replace(NmState::Exited(exit));
    }

    fn current_health(&self) -> NodeHealth {
        self.health.borrow().clone()
    }

    fn note_failure(&mut self, method: &str, e: &IpcError) {
        match &self.outage {
            None => {
                warn!(
                    rm = %self.tracker.addr(),
                    error = %e,
                    "{method} failed: the ResourceManager is unreachable; retrying every {} ms",
                    self.interval.as_millis()
                );
                self.outage = Some(Outage {
                    since: Instant::now(),
                });
            }
            Some(_) => debug!(rm = %self.tracker.addr(), error = %e, "{method} failed again"),
        }
        if should_fail_over(e) {
            self.tracker.fail_over();
        }
    }

    fn note_success(&mut self) {
        if let Some(o) = self.outage.take() {
            info!(
                rm = %self.tracker.addr(),
                "the ResourceManager is reachable again after {:.1} s",
                o.since.elapsed().as_secs_f64()
            );
        }
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

    /// Registers, retrying while the RM is unreachable. `Err` ends the agent.
    async fn register(&mut self) -> Result<(), NmExit> {
        self.state.send_replace(NmState::Registering);
        self.session.send_modify(|s| s.rm_identifier = None);
        loop {
            if self.stop.is_requested() {
                return Err(NmExit::Stopped);
            }
            let req = self.register_request();
            let result = tokio::select! {
                r = self.tracker.call::<_, RegisterNodeManagerResponseProto>("registerNodeManager", &req) => r,
                _ = self.stop.requested() => return Err(NmExit::Stopped),
            };
            match result {
                Ok(resp) => {
                    self.note_success();
                    return self.registered(resp);
                }
                Err(e) if is_retriable(&e) => self.note_failure("registerNodeManager", &e),
                Err(e) => {
                    let message = format!(
                        "registration with the ResourceManager at {} was rejected: {e}",
                        self.tracker.addr()
                    );
                    tracing::error!("{message}");
                    return Err(NmExit::Failed { message });
                }
            }
            if self.stop.sleep(self.interval).await {
                return Err(NmExit::Stopped);
            }
        }
    }

    fn registered(&mut self, resp: RegisterNodeManagerResponseProto) -> Result<(), NmExit> {
        let diagnostics = resp.diagnostics_message.clone().unwrap_or_default();
        if resp.node_action() == NodeActionProto::Shutdown {
            warn!(
                rm = %self.tracker.addr(),
                "the ResourceManager answered the registration with SHUTDOWN; message from the \
                 ResourceManager: {diagnostics}"
            );
            return Err(NmExit::ShutdownByRm { diagnostics });
        }
        let container_key = resp
            .container_token_master_key
            .as_ref()
            .and_then(wire::master_key_from_proto);
        let nm_key = resp
            .nm_token_master_key
            .as_ref()
            .and_then(wire::master_key_from_proto);
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
                r = self.tracker.call::<_, NodeHeartbeatResponseProto>("nodeHeartbeat", &req) => r,
                _ = self.stop.requested() => return HeartbeatEnd::Exit(self.unregister().await),
            };
            match result {
                Ok(resp) => {
                    self.note_success();
                    self.last_rejection = None;
                    match self.heartbeat_answered(resp) {
                        Ok(id) => response_id = id,
                        Err(end) => return end,
                    }
                }
                Err(e) if is_retriable(&e) => self.note_failure("nodeHeartbeat", &e),
                // Hadoop logs and carries on: the next heartbeat may well succeed.
                Err(e) => {
                    let text = e.to_string();
                    if self.last_rejection.as_deref() != Some(text.as_str()) {
                        warn!(rm = %self.tracker.addr(), error = %text, "the ResourceManager rejected a heartbeat; retrying");
                        self.last_rejection = Some(text);
                    } else {
                        debug!(rm = %self.tracker.addr(), error = %text, "heartbeat rejected again");
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
        let container_key = resp
            .container_token_master_key
            .as_ref()
            .and_then(wire::master_key_from_proto);
        let nm_key = resp
            .nm_token_master_key
            .as_ref()
            .and_then(wire::master_key_from_proto);
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
                     Message from the ResourceManager: {diagnostics}"
                );
                return Err(HeartbeatEnd::Exit(NmExit::ShutdownByRm { diagnostics }));
            }
            NodeActionProto::Resync => {
                warn!(
                    rm = %self.tracker.addr(),
                    "the node is out of sync with the ResourceManager; registering again. \
                     Message from the ResourceManager: {diagnostics}"
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
        let req = UnRegisterNodeManagerRequestProto {
            node_id: Some(wire::node_id_proto(&self.node_id)),
        };
        let call = self
            .tracker
            .call::<_, UnRegisterNodeManagerResponseProto>("unRegisterNodeManager", &req);
        match tokio::time::timeout(self.cfg.unregister_timeout, call).await {
            Ok(Ok(_)) => {
                info!(rm = %self.tracker.addr(), node = %self.node_id, "unregistered from the ResourceManager")
            }
            Ok(Err(e)) => {
                warn!(rm = %self.tracker.addr(), error = %e, "unRegisterNodeManager failed; stopping anyway")
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
