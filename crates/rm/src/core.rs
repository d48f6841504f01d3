//! The RM's state and its single owner.
//!
//! [`RmState`] holds nodes, applications and queues. One task owns it; RPC handlers
//! send it closures over a bounded channel and await the result ([`CoreHandle::with`]),
//! so there is no lock and every change happens in one place, in arrival order. Time is
//! passed in by the owner, never read inside the state.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hadoop_protos::yarn as pb;
use spindle_common::ids::{ApplicationAttemptId, ApplicationId, NodeId};
use spindle_scheduler::Scheduler;
use tokio::sync::{mpsc, oneshot};
use tracing::{info, warn};

use crate::acl::Acl;
use crate::apps::{AppState, AppTable, Submission, SubmitError};
use crate::attempts::Attempt;
use crate::lifecycle::{
    AllocateResponse, Effect, KeyRing, KeyRolling, LaunchSpec, NodeWork, SchedNode,
};
use crate::nodes::NodeTable;
use crate::queue_files::QueueFile;

/// Everything the RM knows.
#[derive(Debug)]
pub struct RmState {
    pub cluster_ts: i64,
    pub nodes: NodeTable,
    pub apps: AppTable,
    /// The queue configuration in force: the tree (also held by the
    /// scheduler), placement rules and ACLs; replaced by `refreshQueues`.
    pub queues: QueueFile,
    /// `yarn.acl.enable`: queue submit ACLs are checked.
    pub acl_enabled: bool,
    /// `yarn.cluster.max-application-priority` (default 0): submitted and
    /// updated application priorities above it are lowered to it
    /// (capacity scheduler; see [`QueueFile::application_priority`]).
    pub max_application_priority: i32,
    /// `yarn.admin.acl`, replaced by `refreshAdminAcls`.
    pub admin_acl: Acl,
    /// The scheduler core: allocation decisions.
    pub scheduler: Scheduler,
    /// Nodes as the scheduler knows them, to keep it in line with `nodes`.
    pub(crate) sched_nodes: BTreeMap<NodeId, SchedNode>,
    pub attempts: BTreeMap<ApplicationAttemptId, Attempt<AllocateResponse>>,
    /// Per application: its AM launch context and attempt history.
    pub launch: BTreeMap<ApplicationId, LaunchSpec>,
    pub secrets: std::sync::Arc<KeyRing>,
    /// Heartbeat-borne instructions per node.
    pub node_work: BTreeMap<NodeId, NodeWork>,
    /// Network work for the effect executor, drained after every command.
    pub outbox: Vec<Effect>,
    /// `yarn.am.liveness-monitor.expiry-interval-ms`.
    pub am_expiry_ms: u64,
    /// `yarn.resourcemanager.rm.container-allocation.expiry-interval-ms`.
    pub container_token_expiry_ms: u64,
    /// Containers one scheduling pass may hand out.
    pub containers_per_pass: usize,
    /// The scheduler address as a token service (`ip:port`).
    pub scheduler_service: String,
    pub key_rolling: KeyRolling,
    /// Node changes in order, for AMs' `updated_nodes` (one entry per node, latest).
    pub(crate) node_changes: BTreeMap<u64, NodeId>,
    pub(crate) node_changes_by_node: BTreeMap<NodeId, u64>,
    pub(crate) node_change_seq: u64,
    /// Cluster totals for allocate answers (see `lifecycle`), so that an
    /// allocate call does not walk every node.
    pub(crate) cluster_summary: Option<crate::lifecycle::ClusterSummary>,
}

impl RmState {
    /// A state with no nodes or applications; liveness and token settings take
    /// Hadoop's defaults until set.
    pub fn new(
        cluster_ts: i64,
        nodes: NodeTable,
        apps: AppTable,
        queues: QueueFile,
        admin_acl: Acl,
        scheduler: Scheduler,
        secrets: std::sync::Arc<KeyRing>,
    ) -> RmState {
        RmState {
            cluster_ts,
            nodes,
            apps,
            queues,
            acl_enabled: false,
            max_application_priority: 0,
            admin_acl,
            scheduler,
            sched_nodes: BTreeMap::new(),
            attempts: BTreeMap::new(),
            launch: BTreeMap::new(),
            secrets,
            node_work: BTreeMap::new(),
            outbox: Vec::new(),
            am_expiry_ms: 600_000,
            container_token_expiry_ms: 600_000,
            containers_per_pass: 1000,
            scheduler_service: String::new(),
            key_rolling: KeyRolling::daily(cluster_ts.max(0) as u64),
            node_changes: BTreeMap::new(),
            node_changes_by_node: BTreeMap::new(),
            node_change_seq: 0,
            cluster_summary: None,
        }
    }

    /// Records a submission and hands it to its queue: placement rules pick
    /// the leaf; ACCEPTED, or FAILED with Hadoop's reason when the queue does
    /// not exist, is stopped or is full. A user without the submit ACL (when
    /// `yarn.acl.enable`) is refused outright and nothing is recorded.
    pub fn submit(
        &mut self,
        mut sub: Submission,
        clc: pb::ContainerLaunchContextProto,
        user: &str,
        groups: &[String],
        now_ms: u64,
    ) -> Result<ApplicationId, SubmitError> {
        let id = sub.id;
        let requested = sub.queue.clone();
        if self.apps.get(&id).is_some() {
            // A retried submission: the first answer stands.
            self.apps.submit(sub, user, now_ms)?;
            return Ok(id);
        }
        let placed = self
            .queues
            .placement
            .place(&requested, user, groups, &self.queues.tree);
        if let Ok(p) = &placed {
            if self.acl_enabled && !self.queues.may_submit(&p.queue, user, groups) {
                return Err(SubmitError::AccessDenied(format!(
                    "User {user} does not have permission to submit {id} to queue {requested}"
                )));
            }
            sub.queue = self.queues.display_name(&p.queue);
        }
        // The effective priority is what the application is recorded with
        // (and what its report shows), as Hadoop's RMAppManager sets it
        // back into the submission context.
        let leaf_path = placed.as_ref().map(|p| p.queue.as_str()).unwrap_or("");
        sub.priority = Some(self.queues.application_priority(
            sub.priority,
            leaf_path,
            self.max_application_priority,
        ));
        self.apps.submit(sub, user, now_ms)?;
        let leaf = match placed {
            Ok(p) => p.queue,
            Err(reason) => {
                // Placement's reasons are Hadoop's wording, without the id.
                let msg = if let Some(rest) = reason.strip_prefix("Application ") {
                    format!("Application {id} {rest}")
                } else if let Some(rest) = reason.strip_prefix("Reject application ") {
                    format!("Reject application {id} {rest}")
                } else {
                    format!("Application {id} submitted by user {user}: {reason}")
                };
                info!(app = %id, %msg, "application rejected");
                self.apps.fail(id, msg, now_ms);
                return Ok(id);
            }
        };
        let in_leaf = self
            .apps
            .all()
            .filter(|a| a.id != id && !a.state.is_final())
            .filter(|a| self.queues.same_leaf(&a.queue, &leaf))
            .count();
        let refusal = if self.queues.is_stopped(&leaf) {
            Some(format!(
                "Queue {leaf} is STOPPED. Cannot accept submission of application: {id}"
            ))
        } else {
            self.queues
                .max_applications(&leaf)
                .filter(|max| in_leaf >= *max)
                .map(|_| {
                    format!(
                        "Queue {leaf} already has {in_leaf} applications, cannot accept submission of application: {id}"
                    )
                })
        };
        match refusal {
            Some(msg) => {
                info!(app = %id, %msg, "application rejected");
                self.apps.fail(id, msg, now_ms);
            }
            None => {
                self.apps.accept(id);
                info!(app = %id, %user, queue = %leaf, "application accepted");
                self.launch.insert(
                    id,
                    LaunchSpec {
                        clc,
                        submit_ms: now_ms,
                        failed_attempts: 0,
                        attempts: Vec::new(),
                        retained: Default::default(),
                    },
                );
                self.start_attempt(id, now_ms);
            }
        }
        Ok(id)
    }

    /// `updateApplicationPriority`: gives the application the priority its
    /// scheduler allows (see [`QueueFile::application_priority`]) and
    /// moves its current attempt in its queue's order. Returns the
    /// effective priority, which Hadoop's client prints. A finished
    /// application keeps its priority and the call succeeds, as in Hadoop;
    /// one that is not ACCEPTED or RUNNING yet is refused. With
    /// `yarn.acl.enable`, only the owner and administrators
    /// (`yarn.admin.acl`) may change it.
    pub fn update_app_priority(
        &mut self,
        id: ApplicationId,
        requested: i32,
        caller: &str,
        groups: &[String],
        now_ms: u64,
    ) -> Result<i32, PriorityUpdateError> {
        let Some(app) = self.apps.get(&id) else {
            return Err(PriorityUpdateError::NotFound);
        };
        if self.acl_enabled && caller != app.user && !self.admin_acl.allows(caller, groups) {
            return Err(PriorityUpdateError::AccessDenied(format!(
                "User {caller} cannot perform operation MODIFY_APP on {id}"
            )));
        }
        if app.state.is_final() {
            return Ok(app.priority);
        }
        if !matches!(app.state, AppState::Accepted | AppState::Running) {
            return Err(PriorityUpdateError::WrongState(format!(
                "Application in {} state cannot update priority.",
                app.state.hadoop_name()
            )));
        }
        let leaf = self
            .queues
            .tree
            .resolve_leaf(&app.queue)
            .unwrap_or_default();
        let priority =
            self.queues
                .application_priority(Some(requested), &leaf, self.max_application_priority);
        if priority == app.priority {
            return Ok(priority);
        }
        if let Some(app) = self.apps.get_mut(&id) {
            app.priority = priority;
        }
        info!(app = %id, priority, user = %caller, "application priority updated");
        let attempt = self
            .current_attempt_id(&id)
            .filter(|a| self.scheduler.app(a).is_some());
        if let Some(attempt) = attempt {
            let input = spindle_scheduler::Input::AppPriorityUpdated { attempt, priority };
            if let Err(e) = self.scheduler.handle(now_ms, input) {
                warn!(app = %id, error = %e, "the scheduler refused a priority update");
            }
            self.schedule_pass(now_ms);
        }
        Ok(priority)
    }

    /// Puts a new queue configuration in force, if the scheduler accepts
    /// it; otherwise the old configuration stays and the reason is
    /// returned. The scheduler takes the tree together with the locality
    /// delays and per-heartbeat caps read from the same files, as Hadoop's
    /// `reinitialize` does, all or nothing.
    pub fn reconfigure_queues(&mut self, queues: QueueFile, now_ms: u64) -> Result<(), String> {
        let input = spindle_scheduler::Input::QueuesReconfigured {
            queues: Box::new(queues.tree.clone()),
            locality: queues.locality,
            heartbeat: queues.heartbeat,
        };
        match self.scheduler.handle(now_ms, input) {
            Ok(_) => {
                self.queues = queues;
                self.schedule_pass(now_ms);
                Ok(())
            }
            Err(e) => {
                let source = queues
                    .source
                    .as_ref()
                    .map(|p| format!("{}: ", p.display()))
                    .unwrap_or_default();
                Err(format!("{source}{e}"))
            }
        }
    }

    /// Periodic work: node and AM liveness, continuous scheduling.
    pub fn tick(&mut self, now_ms: u64) {
        let lost = self.nodes.expire(now_ms);
        for id in &lost {
            warn!(node = %id, "node expired: no heartbeat within the liveness interval; now LOST");
        }
        if !lost.is_empty() {
            self.sync_all_nodes(now_ms);
        }
        self.lifecycle_tick(now_ms);
    }

    /// The application's report, with its current attempt and usage.
    pub fn report(&self, app: &crate::apps::App) -> pb::ApplicationReportProto {
        let total = self.nodes.cluster_capability();
        let attempt = self.current_attempt(&app.id);
        let mut usage = crate::convert::AppUsage::default();
        if let Some(a) = attempt.filter(|a| !a.state.is_final()) {
            for cid in a.live.keys() {
                if let Some(c) = self.scheduler.container(cid) {
                    usage.containers += 1;
                    usage.used += c.resource;
                }
            }
        }
        let mut report = crate::convert::app_report(app, total, usage, attempt.map(|a| a.id));
        if let Some(a) = attempt {
            if !app.state.is_final() {
                report.progress = Some(a.progress);
            }
        }
        report
    }

    /// The report as `caller` sees it. The owner of an unmanaged application
    /// whose attempt is LAUNCHED (not registered yet) also gets the attempt's
    /// AMRMToken, which is how Hadoop's UnmanagedAMLauncher and
    /// `YarnClient.getAMRMToken` obtain it; nobody else ever sees the token.
    pub fn report_for(&self, app: &crate::apps::App, caller: &str) -> pb::ApplicationReportProto {
        let mut report = self.report(app);
        if app.unmanaged_am && !caller.is_empty() && caller == app.user {
            let launched = self
                .current_attempt(&app.id)
                .filter(|a| a.state == crate::attempts::AttemptState::Launched);
            if let Some(a) = launched {
                report.am_rm_token = Some(self.amrm_token(a.id).to_proto());
            }
        }
        report
    }

    /// A container's report while the scheduler knows it.
    pub fn container_report(
        &self,
        id: &spindle_common::ids::ContainerId,
    ) -> Option<pb::ContainerReportProto> {
        let c = self.scheduler.container(id)?;
        let http = self.nodes.get(&c.node).map(|n| n.http_address());
        Some(pb::ContainerReportProto {
            container_id: Some(crate::convert::container_id_to_pb(id)),
            resource: Some(crate::convert::resource_to_pb(c.resource)),
            node_id: Some(crate::convert::node_id_to_pb(&c.node)),
            priority: Some(pb::PriorityProto {
                priority: Some(c.priority),
            }),
            creation_time: Some(c.allocated_at_ms as i64),
            finish_time: Some(0),
            diagnostics_info: Some(String::new()),
            log_url: None,
            container_exit_status: Some(0),
            container_state: Some(pb::ContainerStateProto::CRunning as i32),
            node_http_address: http,
            execution_type: Some(pb::ExecutionTypeProto::Guaranteed as i32),
            exposed_ports: None,
        })
    }
}

/// Why `updateApplicationPriority` was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PriorityUpdateError {
    /// No such application.
    NotFound,
    /// The caller may not modify the application (`yarn.acl.enable`).
    AccessDenied(String),
    /// The application is not ACCEPTED or RUNNING (nor finished).
    WrongState(String),
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
    /// Effects the state leaves in its outbox go to `effects` after every command.
    pub fn spawn(
        state: RmState,
        tick: Duration,
        effects: mpsc::UnboundedSender<Effect>,
    ) -> CoreHandle {
        let (tx, mut rx) = mpsc::channel::<Command>(COMMAND_QUEUE);
        tokio::spawn(async move {
            let mut state = state;
            while let Some(cmd) = rx.recv().await {
                cmd(&mut state, now_ms());
                for effect in state.outbox.drain(..) {
                    let _ = effects.send(effect);
                }
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

#[cfg(test)]
#[path = "core_tests.rs"]
mod tests;
