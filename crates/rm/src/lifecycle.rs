//! The application lifecycle on top of the scheduler core: attempts, the AM
//! container, AM launch, registration, allocate, unregister, retries and cleanup.
//!
//! Everything here runs on the state's owner task with the time passed in. Work
//! that needs the network (starting an AM container on a NodeManager) leaves as an
//! [`Effect`] in `RmState::outbox`; its outcome comes back as another command.

use std::collections::BTreeSet;
use std::sync::{Arc, RwLock};

use hadoop_protos::common::TokenProto;
use hadoop_protos::yarn as pb;
use spindle_common::ids::{ApplicationAttemptId, ApplicationId, ContainerId, NodeId};
use spindle_common::resource::Resource;
use spindle_common::security::{
    kind, AmRmTokenIdentifier, ContainerTokenIdentifier, Credentials, NmTokenIdentifier,
    SecretManager, Token,
};
use spindle_ipc::sasl::{TokenVerifier, VerifiedToken};
use spindle_ipc::{class, RpcError};
use spindle_scheduler::{
    ContainerExit, Decisions, Input, NodeAction as SchedNodeAction, NodeUpdate, ResourceAsk, ANY,
};
use tracing::{info, warn};

use crate::apps::{AppState, FinalStatus};
use crate::attempts::{
    counts_towards_max_attempts, Attempt, AttemptState, Finished, Granted, ResponseIdCheck,
};
use crate::convert::{container_id_to_pb, node_id_to_pb, resource_to_pb};
use crate::core::RmState;
use crate::nodes::NodeState;

/// The AM container's priority in the scheduler (Hadoop uses 0 for it).
pub const AM_PRIORITY: i32 = 0;

/// Network work the owner task hands to the effect executor.
#[derive(Debug, Clone)]
pub enum Effect {
    /// Start the AM container on its NodeManager (the RM acting as a client with an
    /// NMToken, as Hadoop's AMLauncher does).
    LaunchAm {
        attempt: ApplicationAttemptId,
        node: NodeId,
        nm_token: Token,
        request: pb::StartContainersRequestProto,
    },
}

/// Things a NodeManager must hear on its next heartbeat.
#[derive(Debug, Default, Clone)]
pub struct NodeWork {
    pub cleanup_containers: BTreeSet<ContainerId>,
    pub cleanup_apps: BTreeSet<ApplicationId>,
    /// Completed containers the RM has taken note of (so the NM stops reporting them).
    pub acked: BTreeSet<ContainerId>,
}

/// The RM's token secret managers. Shared by the state's owner (which mints tokens)
/// and the IPC servers' token verifiers (which check them), so each sits behind a
/// read-mostly lock; nothing else in the RM is locked.
#[derive(Debug)]
pub struct KeyRing {
    pub amrm: RwLock<SecretManager>,
    pub nm_token: RwLock<SecretManager>,
    pub container_token: RwLock<SecretManager>,
}

impl KeyRing {
    /// Fresh random keys.
    pub fn generate() -> KeyRing {
        use rand::Rng;
        let mut rng = rand::rng();
        let mut key = || random_master_key(rng.random_range(1..i32::MAX / 2));
        KeyRing {
            amrm: RwLock::new(SecretManager::new(key())),
            nm_token: RwLock::new(SecretManager::new(key())),
            container_token: RwLock::new(SecretManager::new(key())),
        }
    }
}

/// When each master key was last rolled and how often it rolls
/// (`yarn.resourcemanager.{am-rm,container,nm}-tokens.master-key-rolling-interval-secs`).
#[derive(Debug, Clone)]
pub struct KeyRolling {
    pub amrm_interval_ms: u64,
    pub container_interval_ms: u64,
    pub nm_interval_ms: u64,
    pub amrm_rolled_ms: u64,
    pub container_rolled_ms: u64,
    pub nm_rolled_ms: u64,
}

impl KeyRolling {
    /// Hadoop's default: every key rolls daily.
    pub fn daily(now_ms: u64) -> KeyRolling {
        let day = 86_400_000;
        KeyRolling {
            amrm_interval_ms: day,
            container_interval_ms: day,
            nm_interval_ms: day,
            amrm_rolled_ms: now_ms,
            container_rolled_ms: now_ms,
            nm_rolled_ms: now_ms,
        }
    }
}

/// Makes a fresh key current in `lock`; the old one stays valid as the previous key.
fn roll(lock: &RwLock<SecretManager>) {
    let mut keys = lock.write().unwrap_or_else(|e| e.into_inner());
    let next = random_master_key(keys.next_key_id());
    if let Err(e) = keys.roll(next) {
        warn!(error = %e, "master key roll failed");
    }
}

/// Reads a lock, tolerating poisoning (a panicked reader cannot corrupt a key).
pub fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
}

/// Checks AMRMTokens on the scheduler port; the connection's user becomes the attempt.
pub struct AmrmVerifier(pub Arc<KeyRing>);

impl TokenVerifier for AmrmVerifier {
    fn kind(&self) -> &str {
        kind::AM_RM
    }

    fn verify(&self, identifier: &[u8]) -> Result<VerifiedToken, String> {
        let ident = AmRmTokenIdentifier::decode(identifier).map_err(|e| e.to_string())?;
        let password = read(&self.0.amrm)
            .retrieve_password(identifier, ident.key_id)
            .map_err(|e| format!("AMRMToken for {} refused: {e}", ident.attempt))?;
        Ok(VerifiedToken {
            password,
            user: ident.user(),
        })
    }
}

/// What the scheduler core knows about a node (mirrors the node table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SchedNode {
    capability: Resource,
    healthy: bool,
    schedulable: bool,
}

/// What the submission carried that the AM launch needs later.
#[derive(Debug, Clone)]
pub struct LaunchSpec {
    pub clc: pb::ContainerLaunchContextProto,
    pub submit_ms: u64,
    pub failed_attempts: i32,
    pub attempts: Vec<ApplicationAttemptId>,
    /// Failed attempts whose containers were kept for the next attempt
    /// (keep-containers-across-application-attempts).
    pub retained: BTreeSet<ApplicationAttemptId>,
}

/// A container status from a NodeManager heartbeat, converted.
#[derive(Debug, Clone)]
pub struct NmContainerStatus {
    pub container: ContainerId,
    pub running: bool,
    pub complete: bool,
    pub exit_status: i32,
    pub diagnostics: String,
}

/// How long the cluster totals in allocate answers may be reused while no
/// node joined, left or changed its capability, health or schedulability.
/// Only the nodes' reported usage can move in that time, and it is already
/// up to a heartbeat interval old when it arrives.
const CLUSTER_SUMMARY_MAX_AGE_MS: u64 = 100;

/// What every allocate answer tells the AM about the cluster: the headroom
/// (capability of RUNNING nodes less what the nodes report in use) and the
/// number of RUNNING nodes. Computing them walks every node, which at
/// thousands of nodes and thousands of allocate calls per second was most of
/// the RM's work, so they are kept for a short while.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClusterSummary {
    node_change_seq: u64,
    computed_ms: u64,
    headroom: Resource,
    running_nodes: i32,
}

/// The wire answer to an allocate call, remembered for replay.
pub type AllocateResponse = pb::AllocateResponseProto;

fn not_registered(attempt: &ApplicationAttemptId) -> RpcError {
    RpcError::new(
        class::APPLICATION_MASTER_NOT_REGISTERED,
        format!(
            "AM is not registered for known application attempt: {attempt} or RM had restarted \
             after AM registered. AM should re-register."
        ),
    )
}

impl RmState {
    // ---- scheduler plumbing -------------------------------------------------

    fn feed(&mut self, input: Input, now_ms: u64) {
        let kind = input.kind();
        match self.scheduler.handle(now_ms, input) {
            Ok(d) => self.apply_decisions(d, now_ms),
            Err(e) => warn!(input = kind, error = %e, "scheduler refused an input"),
        }
    }

    /// One continuous-scheduling pass with bounded work.
    pub fn schedule_pass(&mut self, now_ms: u64) {
        match self.scheduler.schedule(now_ms, self.containers_per_pass) {
            Ok(d) => self.apply_decisions(d, now_ms),
            Err(e) => warn!(error = %e, "scheduling pass failed"),
        }
    }

    /// Brings the scheduler's view of `id` in line with the node table.
    pub(crate) fn sync_node(&mut self, id: &NodeId, now_ms: u64) {
        let desired = self
            .nodes
            .get(id)
            .filter(|n| n.state.is_active())
            .map(|n| SchedNode {
                capability: n.capability,
                healthy: n.state != NodeState::Unhealthy,
                schedulable: n.state != NodeState::Decommissioning,
            });
        let current = self.sched_nodes.get(id).copied();
        if current != desired {
            self.record_node_change(id);
        }
        match (current, desired) {
            (None, None) => {}
            (Some(_), None) => {
                self.sched_nodes.remove(id);
                self.feed(Input::NodeRemoved { node: id.clone() }, now_ms);
            }
            (None, Some(d)) => {
                let rack = self
                    .nodes
                    .get(id)
                    .map(|n| n.rack.clone())
                    .unwrap_or_default();
                self.sched_nodes.insert(id.clone(), d);
                self.feed(
                    Input::NodeAdded {
                        node: id.clone(),
                        rack,
                        capability: d.capability,
                    },
                    now_ms,
                );
                if !d.healthy || !d.schedulable {
                    self.feed(
                        Input::NodeUpdated {
                            node: id.clone(),
                            update: NodeUpdate {
                                capability: None,
                                healthy: Some(d.healthy),
                                schedulable: Some(d.schedulable),
                            },
                        },
                        now_ms,
                    );
                }
            }
            (Some(c), Some(d)) if c != d => {
                self.sched_nodes.insert(id.clone(), d);
                self.feed(
                    Input::NodeUpdated {
                        node: id.clone(),
                        update: NodeUpdate {
                            capability: (c.capability != d.capability).then_some(d.capability),
                            healthy: Some(d.healthy),
                            schedulable: Some(d.schedulable),
                        },
                    },
                    now_ms,
                );
            }
            (Some(_), Some(_)) => {}
        }
    }

    /// Notes that `id` changed, for the `updated_nodes` of AMs' next allocate answers.
    fn record_node_change(&mut self, id: &NodeId) {
        self.node_change_seq += 1;
        let seq = self.node_change_seq;
        if let Some(old) = self.node_changes_by_node.insert(id.clone(), seq) {
            self.node_changes.remove(&old);
        }
        self.node_changes.insert(seq, id.clone());
    }

    /// Reports of the nodes that changed after `since`, and the latest change number.
    fn node_changes_since(&self, since: u64) -> (Vec<pb::NodeReportProto>, u64) {
        let reports = self
            .node_changes
            .range(since + 1..)
            .filter_map(|(_, id)| self.nodes.get(id))
            .map(crate::convert::node_report)
            .collect();
        (reports, self.node_change_seq)
    }

    /// A (re-)registration: a node that was already known starts afresh, so the
    /// containers it had are gone.
    pub fn node_registered(&mut self, id: &NodeId, now_ms: u64) {
        if self.sched_nodes.remove(id).is_some() {
            self.feed(Input::NodeRemoved { node: id.clone() }, now_ms);
        }
        self.node_work.remove(id);
        self.sync_node(id, now_ms);
    }

    /// Re-syncs every node the scheduler knows or the table has active (after bulk
    /// changes such as refreshNodes or expiry).
    pub fn sync_all_nodes(&mut self, now_ms: u64) {
        let mut ids: BTreeSet<NodeId> = self.sched_nodes.keys().cloned().collect();
        ids.extend(self.nodes.active().map(|n| n.id.clone()));
        for id in ids {
            self.sync_node(&id, now_ms);
        }
    }

    fn apply_decisions(&mut self, d: Decisions, now_ms: u64) {
        for alloc in d.allocations {
            let attempt_id = alloc.attempt();
            let Some(attempt) = self.attempts.get_mut(&attempt_id) else {
                continue;
            };
            attempt.live.insert(alloc.container, alloc.node.clone());
            if attempt.am_container.is_none() && attempt.state == AttemptState::Scheduled {
                attempt.am_container = Some(alloc.container);
                attempt.am_node = Some(alloc.node.clone());
                attempt.state = AttemptState::Allocated;
                info!(attempt = %attempt_id, container = %alloc.container, node = %alloc.node, "AM container allocated");
                self.launch_am(attempt_id, now_ms);
            } else {
                attempt.granted.push(Granted {
                    container: alloc.container,
                    node: alloc.node,
                    resource: alloc.resource,
                    priority: alloc.priority,
                    allocation_request_id: alloc.allocation_request_id,
                });
            }
        }
        for done in d.completed {
            let attempt_id = done.attempt();
            let Some(attempt) = self.attempts.get_mut(&attempt_id) else {
                continue;
            };
            attempt.live.remove(&done.container);
            let finished = Finished {
                container: done.container,
                exit_status: done.exit_status,
                diagnostics: done.diagnostics.clone(),
                resource: done.resource,
            };
            if attempt.am_container == Some(done.container) {
                self.am_container_completed(attempt_id, done.exit_status, done.diagnostics, now_ms);
            } else if !attempt.state.is_final() {
                attempt.finished.push(finished);
            } else if let Some(current) = self.current_attempt_id(&attempt_id.app) {
                // A container kept from an earlier attempt: its AM now is the current one.
                if let Some(cur) = self
                    .attempts
                    .get_mut(&current)
                    .filter(|c| !c.state.is_final())
                {
                    cur.finished.push(finished);
                }
            }
        }
        for action in d.node_actions {
            let SchedNodeAction::KillContainer { node, container } = action;
            let work = self.node_work.entry(node).or_default();
            work.cleanup_containers.insert(container);
        }
    }

    /// The cluster totals of allocate answers, recomputed when a node changed
    /// or the last ones are older than [`CLUSTER_SUMMARY_MAX_AGE_MS`].
    fn cluster_summary(&mut self, now_ms: u64) -> ClusterSummary {
        if let Some(s) = self.cluster_summary {
            if s.node_change_seq == self.node_change_seq
                && now_ms.saturating_sub(s.computed_ms) < CLUSTER_SUMMARY_MAX_AGE_MS
                && now_ms >= s.computed_ms
            {
                return s;
            }
        }
        let s = ClusterSummary {
            node_change_seq: self.node_change_seq,
            computed_ms: now_ms,
            headroom: self
                .nodes
                .cluster_capability()
                .saturating_sub_non_negative(self.nodes.cluster_used()),
            running_nodes: self.nodes.running_count() as i32,
        };
        self.cluster_summary = Some(s);
        s
    }

    // ---- applications and attempts -------------------------------------------

    /// Starts the next attempt of an accepted application.
    pub fn start_attempt(&mut self, app_id: ApplicationId, now_ms: u64) {
        let Some(app) = self.apps.get(&app_id) else {
            return;
        };
        let (queue, user, priority, am_resource, unmanaged) = (
            app.queue.clone(),
            app.user.clone(),
            app.priority,
            app.am_resource,
            app.unmanaged_am,
        );
        let Some(spec) = self.launch.get_mut(&app_id) else {
            return;
        };
        let attempt_id = ApplicationAttemptId::new(app_id, spec.attempts.len() as i32 + 1);
        spec.attempts.push(attempt_id);
        self.attempts
            .insert(attempt_id, Attempt::new(attempt_id, am_resource, now_ms));
        info!(attempt = %attempt_id, unmanaged, "application attempt started");
        self.feed(
            Input::AppAdded {
                attempt: attempt_id,
                queue,
                user,
                priority,
                // An unmanaged AM holds no container, so it does not count
                // against the queue's AM limits.
                unmanaged_am: unmanaged,
            },
            now_ms,
        );
        if unmanaged {
            // As in Hadoop, an unmanaged AM's attempt asks for no AM container:
            // it is LAUNCHED at once (its AMRMToken now shows in the owner's
            // application report) and the liveness monitor starts watching it.
            if let Some(a) = self.attempts.get_mut(&attempt_id) {
                a.state = AttemptState::Launched;
                a.last_contact_ms = now_ms;
            }
            if let Some(app) = self.apps.get_mut(&app_id) {
                app.launch_ms = now_ms;
            }
            info!(attempt = %attempt_id, "unmanaged ApplicationMaster attempt launched");
            self.schedule_pass(now_ms);
            return;
        }
        self.feed(
            Input::AsksUpdated {
                attempt: attempt_id,
                asks: vec![ResourceAsk::new(AM_PRIORITY, ANY, am_resource, 1)],
                releases: Vec::new(),
                blacklist_add: Vec::new(),
                blacklist_remove: Vec::new(),
            },
            now_ms,
        );
        self.schedule_pass(now_ms);
    }

    /// The id of the application's latest attempt.
    pub fn current_attempt_id(&self, app_id: &ApplicationId) -> Option<ApplicationAttemptId> {
        self.launch.get(app_id)?.attempts.last().copied()
    }

    /// The attempt currently running for an application, if any.
    pub fn current_attempt(&self, app_id: &ApplicationId) -> Option<&Attempt<AllocateResponse>> {
        let id = self.launch.get(app_id)?.attempts.last()?;
        self.attempts.get(id)
    }

    fn launch_am(&mut self, attempt_id: ApplicationAttemptId, now_ms: u64) {
        let Some(attempt) = self.attempts.get(&attempt_id) else {
            return;
        };
        let (Some(container), Some(node)) = (attempt.am_container, attempt.am_node.clone()) else {
            return;
        };
        let resource = attempt.am_resource;
        let app_id = attempt_id.app;
        let Some(app) = self.apps.get(&app_id) else {
            return;
        };
        let user = app.user.clone();
        let priority = app.priority;
        let Some(spec) = self.launch.get(&app_id) else {
            return;
        };
        let mut clc = spec.clc.clone();
        let submit_ms = spec.submit_ms;

        // Merge the AMRMToken into the credentials the client gave (never replace them).
        let amrm = self.amrm_token(attempt_id);
        let mut creds = match clc.tokens.as_deref().filter(|t| !t.is_empty()) {
            None => Credentials::new(),
            Some(bytes) => match Credentials::from_bytes(bytes) {
                Ok(c) => c,
                Err(e) => {
                    let msg = format!("the AM launch context's tokens cannot be read: {e}");
                    self.fail_attempt(attempt_id, msg, true, now_ms);
                    return;
                }
            },
        };
        creds.add_token(amrm.service.clone(), amrm);
        clc.tokens = Some(creds.to_bytes());
        let max_attempts = self.apps.get(&app_id).map_or(1, |a| a.max_attempts);
        for (k, v) in [
            ("APPLICATION_WEB_PROXY_BASE", format!("/proxy/{app_id}")),
            ("APP_SUBMIT_TIME_ENV", submit_ms.to_string()),
            ("MAX_APP_ATTEMPTS", max_attempts.to_string()),
        ] {
            clc.environment.retain(|e| e.key.as_deref() != Some(k));
            clc.environment.push(pb::StringStringMapProto {
                key: Some(k.to_string()),
                value: Some(v),
            });
        }
        let container_token =
            self.container_token(container, &node, &user, resource, priority, true, now_ms);
        let nm_token = self.nm_token(attempt_id, &node, &user);
        let request = pb::StartContainersRequestProto {
            start_container_request: vec![pb::StartContainerRequestProto {
                container_launch_context: Some(clc),
                container_token: Some(container_token),
            }],
        };
        self.outbox.push(Effect::LaunchAm {
            attempt: attempt_id,
            node,
            nm_token,
            request,
        });
    }

    /// The AM container's NodeManager accepted the start request.
    pub fn am_launched(&mut self, attempt_id: ApplicationAttemptId, now_ms: u64) {
        if let Some(a) = self.attempts.get_mut(&attempt_id) {
            if a.state == AttemptState::Allocated {
                a.state = AttemptState::Launched;
                a.last_contact_ms = now_ms;
                if let Some(app) = self.apps.get_mut(&attempt_id.app) {
                    app.launch_ms = now_ms;
                }
                info!(attempt = %attempt_id, "AM container launched");
            }
        }
    }

    /// Starting the AM container failed: the attempt fails.
    pub fn am_launch_failed(
        &mut self,
        attempt_id: ApplicationAttemptId,
        reason: String,
        now_ms: u64,
    ) {
        let diag = format!("Error launching {attempt_id}. Got exception: {reason}");
        warn!(attempt = %attempt_id, %reason, "AM launch failed");
        self.fail_attempt(attempt_id, diag, true, now_ms);
    }

    fn am_container_completed(
        &mut self,
        attempt_id: ApplicationAttemptId,
        exit: i32,
        diagnostics: String,
        now_ms: u64,
    ) {
        let Some(attempt) = self.attempts.get(&attempt_id) else {
            return;
        };
        match attempt.state {
            AttemptState::Finishing => {
                self.end_attempt(attempt_id, AttemptState::Finished, String::new(), now_ms);
                if let Some(app) = self.apps.get_mut(&attempt_id.app) {
                    app.finish_ms = app.finish_ms.max(now_ms);
                }
            }
            s if s.is_final() => {}
            _ => {
                let container = attempt
                    .am_container
                    .map(|c| c.to_string())
                    .unwrap_or_default();
                let diag = format!(
                    "AM Container for {attempt_id} exited with  exitCode: {exit}\n\
                     Failing this attempt.Diagnostics: [{container}] {diagnostics}"
                );
                self.fail_attempt(attempt_id, diag, counts_towards_max_attempts(exit), now_ms);
            }
        }
    }

    /// Removes an attempt from the scheduler and ends it; its containers are killed.
    fn end_attempt(
        &mut self,
        attempt_id: ApplicationAttemptId,
        state: AttemptState,
        diag: String,
        now_ms: u64,
    ) {
        let nodes: BTreeSet<NodeId> = match self.attempts.get_mut(&attempt_id) {
            Some(a) if !a.state.is_final() => {
                a.end(state, diag, now_ms);
                let mut nodes: BTreeSet<NodeId> = a.live.values().cloned().collect();
                nodes.extend(a.am_node.clone());
                nodes
            }
            _ => return,
        };
        for node in nodes {
            self.node_work
                .entry(node)
                .or_default()
                .cleanup_apps
                .insert(attempt_id.app);
        }
        self.feed(
            Input::AppRemoved {
                attempt: attempt_id,
            },
            now_ms,
        );
        // Containers kept from earlier attempts end with the application's last one.
        let retained = self
            .launch
            .get_mut(&attempt_id.app)
            .map(|spec| std::mem::take(&mut spec.retained))
            .unwrap_or_default();
        for old in retained {
            let nodes: Vec<NodeId> = self
                .attempts
                .get(&old)
                .map(|a| a.live.values().cloned().collect())
                .unwrap_or_default();
            for node in nodes {
                self.node_work
                    .entry(node)
                    .or_default()
                    .cleanup_apps
                    .insert(old.app);
            }
            self.feed(Input::AppRemoved { attempt: old }, now_ms);
        }
    }

    /// Ends a failed attempt but keeps its task containers running for the next
    /// attempt: its asks are cancelled and only its AM container goes.
    fn retain_attempt(&mut self, attempt_id: ApplicationAttemptId, diag: String, now_ms: u64) {
        let am = match self.attempts.get_mut(&attempt_id) {
            Some(a) if !a.state.is_final() => {
                a.end(AttemptState::Failed, diag, now_ms);
                a.am_container.filter(|c| a.live.contains_key(c))
            }
            _ => return,
        };
        let cancel: Vec<ResourceAsk> = self
            .scheduler
            .asks(&attempt_id)
            .unwrap_or_default()
            .into_iter()
            .map(|mut ask| {
                ask.num_containers = 0;
                ask
            })
            .collect();
        self.feed(
            Input::AsksUpdated {
                attempt: attempt_id,
                asks: cancel,
                releases: am.into_iter().collect(),
                blacklist_add: Vec::new(),
                blacklist_remove: Vec::new(),
            },
            now_ms,
        );
        if let Some(spec) = self.launch.get_mut(&attempt_id.app) {
            spec.retained.insert(attempt_id);
        }
    }

    /// Fails an attempt; retries the application or fails it when attempts run out.
    fn fail_attempt(
        &mut self,
        attempt_id: ApplicationAttemptId,
        diag: String,
        counts: bool,
        now_ms: u64,
    ) {
        let app_id = attempt_id.app;
        let (max, keep, app_final, unmanaged) = match self.apps.get(&app_id) {
            Some(app) => (
                app.max_attempts,
                app.keep_containers,
                app.state.is_final(),
                app.unmanaged_am,
            ),
            None => (1, false, true, false),
        };
        let failed_so_far = self.launch.get(&app_id).map_or(0, |s| s.failed_attempts);
        // The RM cannot restart an AM it does not run: an unmanaged
        // application ends with its first failed attempt, as in Hadoop.
        let exhausted = unmanaged || failed_so_far + i32::from(counts) >= max;
        if keep && !exhausted && !app_final {
            self.retain_attempt(attempt_id, diag.clone(), now_ms);
        } else {
            self.end_attempt(attempt_id, AttemptState::Failed, diag.clone(), now_ms);
        }
        if app_final {
            return;
        }
        let Some(spec) = self.launch.get_mut(&app_id) else {
            return;
        };
        if counts {
            spec.failed_attempts += 1;
        }
        if unmanaged {
            let msg = format!(
                "Unmanaged application {app_id} failed due to {diag}. Failing the application."
            );
            info!(app = %app_id, "unmanaged application failed");
            self.apps.fail(app_id, msg, now_ms);
        } else if spec.failed_attempts >= max {
            let msg = format!(
                "Application {app_id} failed {max} times due to {diag}. Failing the application."
            );
            info!(app = %app_id, "application failed: attempts exhausted");
            self.apps.fail(app_id, msg, now_ms);
        } else {
            if let Some(app) = self.apps.get_mut(&app_id) {
                app.state = AppState::Accepted;
            }
            self.start_attempt(app_id, now_ms);
        }
    }

    /// `forceKillApplication`: ends the running attempt and the application.
    pub fn kill_app(
        &mut self,
        app_id: ApplicationId,
        diagnostics: String,
        now_ms: u64,
    ) -> Option<bool> {
        if let Some(attempt) = self.current_attempt(&app_id).map(|a| a.id) {
            self.end_attempt(attempt, AttemptState::Killed, diagnostics.clone(), now_ms);
        }
        self.apps.kill(app_id, diagnostics, now_ms)
    }

    /// Rolls master keys whose interval has passed. NodeManagers get new keys in
    /// their next heartbeat, AMs a new AMRMToken in their next allocate answer; tokens
    /// under the previous key stay valid until the following roll.
    pub fn roll_keys(&mut self, now_ms: u64) {
        let r = &mut self.key_rolling;
        if now_ms.saturating_sub(r.amrm_rolled_ms) >= r.amrm_interval_ms {
            r.amrm_rolled_ms = now_ms;
            roll(&self.secrets.amrm);
            info!("AMRMToken master key rolled");
        }
        if now_ms.saturating_sub(r.container_rolled_ms) >= r.container_interval_ms {
            r.container_rolled_ms = now_ms;
            roll(&self.secrets.container_token);
            info!("container-token master key rolled");
        }
        if now_ms.saturating_sub(r.nm_rolled_ms) >= r.nm_interval_ms {
            r.nm_rolled_ms = now_ms;
            roll(&self.secrets.nm_token);
            info!("NMToken master key rolled");
        }
    }

    /// Periodic work: node liveness, AM liveness, a scheduling pass.
    pub fn lifecycle_tick(&mut self, now_ms: u64) {
        self.roll_keys(now_ms);
        let expiry = self.am_expiry_ms;
        let expired: Vec<ApplicationAttemptId> = self
            .attempts
            .values()
            .filter(|a| {
                matches!(
                    a.state,
                    AttemptState::Launched | AttemptState::Running | AttemptState::Finishing
                ) && now_ms.saturating_sub(a.last_contact_ms) > expiry
            })
            .map(|a| a.id)
            .collect();
        for id in expired {
            let finishing = self
                .attempts
                .get(&id)
                .is_some_and(|a| a.state == AttemptState::Finishing);
            if finishing {
                // Unregistered but its container never exited: finish it anyway.
                self.end_attempt(id, AttemptState::Finished, String::new(), now_ms);
            } else {
                warn!(attempt = %id, "ApplicationMaster timed out");
                self.fail_attempt(
                    id,
                    format!("ApplicationMaster for attempt {id} timed out"),
                    true,
                    now_ms,
                );
            }
        }
        self.schedule_pass(now_ms);
    }

    // ---- NodeManager heartbeats ------------------------------------------------

    /// Container statuses from a heartbeat: completions go to the scheduler (once),
    /// running AM containers confirm their launch.
    pub fn container_statuses(
        &mut self,
        node: &NodeId,
        statuses: Vec<NmContainerStatus>,
        now_ms: u64,
    ) {
        for st in statuses {
            if st.complete {
                let first_report = self
                    .node_work
                    .entry(node.clone())
                    .or_default()
                    .acked
                    .insert(st.container);
                if first_report {
                    self.feed(
                        Input::ContainerCompleted {
                            container: st.container,
                            exit: ContainerExit::Finished {
                                exit_status: st.exit_status,
                                diagnostics: st.diagnostics,
                            },
                        },
                        now_ms,
                    );
                }
            } else if st.running {
                let attempt_id = st.container.attempt;
                let is_am = self
                    .attempts
                    .get(&attempt_id)
                    .is_some_and(|a| a.am_container == Some(st.container));
                if is_am {
                    self.am_launched(attempt_id, now_ms);
                }
            }
        }
        // The heartbeat itself lets the scheduler place containers on this node.
        if self.sched_nodes.contains_key(node) {
            self.feed(
                Input::NodeUpdated {
                    node: node.clone(),
                    update: NodeUpdate::heartbeat(),
                },
                now_ms,
            );
        }
    }

    /// What the node must be told in this heartbeat's answer; clears it.
    pub fn take_node_work(&mut self, node: &NodeId) -> NodeWork {
        self.node_work.remove(node).unwrap_or_default()
    }

    // ---- tokens ------------------------------------------------------------------

    pub fn amrm_token(&self, attempt: ApplicationAttemptId) -> Token {
        let keys = read(&self.secrets.amrm);
        let id = AmRmTokenIdentifier::new(attempt, keys.current_key().key_id).encode();
        let password = keys.create_password(&id);
        Token::new(id, password, kind::AM_RM, self.scheduler_service.clone())
    }

    pub fn nm_token(&self, attempt: ApplicationAttemptId, node: &NodeId, user: &str) -> Token {
        let keys = read(&self.secrets.nm_token);
        let key_id = keys.current_key().key_id;
        let id = NmTokenIdentifier::new(attempt, node.clone(), user, key_id).encode();
        let password = keys.create_password(&id);
        Token::new(id, password, kind::NM, node.to_string())
    }

    #[allow(clippy::too_many_arguments)]
    fn container_token(
        &self,
        container: ContainerId,
        node: &NodeId,
        user: &str,
        resource: Resource,
        priority: i32,
        am: bool,
        now_ms: u64,
    ) -> TokenProto {
        let keys = read(&self.secrets.container_token);
        let key_id = keys.current_key().key_id;
        let ident = ContainerTokenIdentifier::new(
            container,
            node.to_string(),
            user,
            resource,
            (now_ms + self.container_token_expiry_ms) as i64,
            key_id,
            self.cluster_ts,
            priority,
            now_ms as i64,
            if am {
                pb::ContainerTypeProto::ApplicationMaster
            } else {
                pb::ContainerTypeProto::Task
            },
        );
        let id = ident.encode();
        let password = keys.create_password(&id);
        Token::new(id, password, kind::CONTAINER, node.to_string()).to_proto()
    }

    // ---- ApplicationMasterProtocol -------------------------------------------------

    fn live_attempt(
        &mut self,
        attempt_id: &ApplicationAttemptId,
    ) -> Result<&mut Attempt<AllocateResponse>, RpcError> {
        let current = self
            .launch
            .get(&attempt_id.app)
            .and_then(|s| s.attempts.last())
            .copied();
        if current != Some(*attempt_id) {
            return Err(RpcError::new(
                class::INVALID_APPLICATION_MASTER_REQUEST,
                format!("Application attempt {attempt_id} is not the current attempt of its application"),
            ));
        }
        self.attempts
            .get_mut(attempt_id)
            .ok_or_else(|| not_registered(attempt_id))
    }

    pub fn register_am(
        &mut self,
        attempt_id: ApplicationAttemptId,
        host: String,
        rpc_port: i32,
        tracking_url: String,
        now_ms: u64,
    ) -> Result<pb::RegisterApplicationMasterResponseProto, RpcError> {
        let max = self.apps.max_allocation;
        let queue = self
            .apps
            .get(&attempt_id.app)
            .map(|a| a.queue.clone())
            .unwrap_or_default();
        let node_seq = self.node_change_seq;
        let attempt = self.live_attempt(&attempt_id)?;
        if attempt.is_registered() {
            return Err(RpcError::new(
                class::INVALID_APPLICATION_MASTER_REQUEST,
                format!(
                    "Application Master is already registered : {}",
                    attempt_id.app
                ),
            ));
        }
        if attempt.state.is_final() {
            return Err(RpcError::new(
                class::INVALID_APPLICATION_MASTER_REQUEST,
                format!(
                    "Application attempt {attempt_id} has already ended ({:?})",
                    attempt.state
                ),
            ));
        }
        attempt.state = AttemptState::Running;
        attempt.node_changes_seen = node_seq;
        attempt.last_response_id = 0;
        attempt.last_response = None;
        attempt.last_contact_ms = now_ms;
        attempt.host = host.clone();
        attempt.rpc_port = rpc_port;
        attempt.tracking_url = tracking_url.clone();
        attempt.original_tracking_url = tracking_url.clone();
        if let Some(app) = self.apps.get_mut(&attempt_id.app) {
            if !app.state.is_final() {
                app.state = AppState::Running;
            }
            app.am_host = host;
            app.am_rpc_port = rpc_port;
            app.tracking_url = tracking_url;
        }
        info!(attempt = %attempt_id, "ApplicationMaster registered");
        let (previous, previous_tokens) = self.previous_containers(attempt_id, now_ms);
        Ok(pb::RegisterApplicationMasterResponseProto {
            maximum_capability: Some(resource_to_pb(max)),
            queue: Some(queue),
            scheduler_resource_types: vec![pb::SchedulerResourceTypes::Memory as i32],
            resource_types: crate::convert::resource_types(),
            containers_from_previous_attempts: previous,
            nm_tokens_from_previous_attempts: previous_tokens,
            ..Default::default()
        })
    }

    /// `token_key_id` is the master key of the AMRMToken the AM authenticated with: when
    /// it is not the current key, the answer carries a fresh token.
    /// The task containers kept from the application's earlier attempts, with NMTokens
    /// for their nodes, handed to a newly registered AM.
    fn previous_containers(
        &mut self,
        attempt_id: ApplicationAttemptId,
        now_ms: u64,
    ) -> (Vec<pb::ContainerProto>, Vec<pb::NmTokenProto>) {
        let retained = self
            .launch
            .get(&attempt_id.app)
            .map(|s| s.retained.clone())
            .unwrap_or_default();
        let user = self
            .apps
            .get(&attempt_id.app)
            .map(|a| a.user.clone())
            .unwrap_or_default();
        let kept: Vec<(ContainerId, NodeId)> = retained
            .iter()
            .filter_map(|old| self.attempts.get(old))
            .flat_map(|a| a.live.iter().filter(|(c, _)| Some(**c) != a.am_container))
            .map(|(c, n)| (*c, n.clone()))
            .collect();
        let mut containers = Vec::new();
        let mut nodes = BTreeSet::new();
        for (cid, node) in kept {
            let Some(report) = self.scheduler.container(&cid) else {
                continue;
            };
            containers.push(self.container_proto(
                cid,
                &node,
                report.resource,
                report.priority,
                report.allocation_request_id,
                &user,
                now_ms,
            ));
            nodes.insert(node);
        }
        let mut tokens = Vec::new();
        for node in nodes {
            tokens.push(pb::NmTokenProto {
                node_id: Some(node_id_to_pb(&node)),
                token: Some(self.nm_token(attempt_id, &node, &user).to_proto()),
            });
            if let Some(a) = self.attempts.get_mut(&attempt_id) {
                a.nm_tokens_sent.insert(node);
            }
        }
        (containers, tokens)
    }

    /// A granted container as the AM sees it, with a fresh container token.
    #[allow(clippy::too_many_arguments)]
    fn container_proto(
        &self,
        cid: ContainerId,
        node: &NodeId,
        resource: Resource,
        priority: i32,
        allocation_request_id: i64,
        user: &str,
        now_ms: u64,
    ) -> pb::ContainerProto {
        let http = self
            .nodes
            .get(node)
            .map(|n| n.http_address())
            .unwrap_or_else(|| format!("{}:0", node.host));
        let token = self.container_token(cid, node, user, resource, priority, false, now_ms);
        pb::ContainerProto {
            id: Some(container_id_to_pb(&cid)),
            node_id: Some(node_id_to_pb(node)),
            node_http_address: Some(http),
            resource: Some(resource_to_pb(resource)),
            priority: Some(pb::PriorityProto {
                priority: Some(priority),
            }),
            container_token: Some(token),
            execution_type: Some(pb::ExecutionTypeProto::Guaranteed as i32),
            allocation_request_id: Some(allocation_request_id),
            version: Some(0),
            allocation_tags: Vec::new(),
            exposed_ports: None,
        }
    }

    pub fn allocate(
        &mut self,
        attempt_id: ApplicationAttemptId,
        token_key_id: i32,
        req: pb::AllocateRequestProto,
        now_ms: u64,
    ) -> Result<AllocateResponse, RpcError> {
        let attempt = self.live_attempt(&attempt_id)?;
        if attempt.state.is_final() {
            return Ok(AllocateResponse {
                a_m_command: Some(pb::AmCommandProto::AmShutdown as i32),
                response_id: Some(attempt.last_response_id),
                ..Default::default()
            });
        }
        if !attempt.is_registered() {
            return Err(not_registered(&attempt_id));
        }
        let request_id = req.response_id.unwrap_or(0);
        let next_id = match attempt.check_response_id(request_id) {
            ResponseIdCheck::Duplicate => {
                if let Some(last) = attempt.last_response.clone() {
                    return Ok(last);
                }
                return Err(not_registered(&attempt_id));
            }
            ResponseIdCheck::Invalid { expected } => {
                return Err(RpcError::new(
                    class::INVALID_APPLICATION_MASTER_REQUEST,
                    format!(
                        "Invalid responseId in AllocateRequest from application attempt: {attempt_id}, \
                         expect responseId to be {expected}, but get {request_id}"
                    ),
                ))
            }
            ResponseIdCheck::Next(n) => n,
        };
        attempt.last_contact_ms = now_ms;
        if let Some(p) = req.progress {
            attempt.progress = p.clamp(0.0, 1.0);
        }
        if let Some(url) = req.tracking_url.clone().filter(|u| !u.is_empty()) {
            attempt.tracking_url = url;
        }

        let asks = req
            .ask
            .iter()
            .map(|r| {
                let cap = crate::convert::resource_from_pb(r.capability.as_ref());
                ResourceAsk::new(
                    r.priority.as_ref().and_then(|p| p.priority).unwrap_or(0),
                    r.resource_name.clone().unwrap_or_else(|| ANY.to_string()),
                    cap,
                    r.num_containers.unwrap_or(0),
                )
                .relax(r.relax_locality.unwrap_or(true))
                .with_allocation_request_id(r.allocation_request_id.unwrap_or(-1))
            })
            .collect::<Vec<_>>();
        let (releases, kept_releases): (Vec<ContainerId>, Vec<ContainerId>) = req
            .release
            .iter()
            .filter_map(|c| crate::convert::container_id_from_pb(c).ok())
            .partition(|c| c.attempt == attempt_id);
        // Containers kept from an earlier attempt are released through that attempt.
        let retained = self
            .launch
            .get(&attempt_id.app)
            .map(|s| s.retained.clone())
            .unwrap_or_default();
        for old in retained {
            let mine: Vec<ContainerId> = kept_releases
                .iter()
                .filter(|c| c.attempt == old)
                .copied()
                .collect();
            if !mine.is_empty() {
                self.feed(
                    Input::AsksUpdated {
                        attempt: old,
                        asks: Vec::new(),
                        releases: mine,
                        blacklist_add: Vec::new(),
                        blacklist_remove: Vec::new(),
                    },
                    now_ms,
                );
            }
        }
        let blacklist = req.blacklist_request.clone().unwrap_or_default();
        let input = Input::AsksUpdated {
            attempt: attempt_id,
            asks,
            releases,
            blacklist_add: blacklist.blacklist_additions,
            blacklist_remove: blacklist.blacklist_removals,
        };
        match self.scheduler.handle(now_ms, input) {
            Ok(d) => self.apply_decisions(d, now_ms),
            Err(e) => {
                return Err(RpcError::new(
                    class::INVALID_RESOURCE_REQUEST,
                    e.to_string(),
                ))
            }
        }
        self.schedule_pass(now_ms);

        let user = self
            .apps
            .get(&attempt_id.app)
            .map(|a| a.user.clone())
            .unwrap_or_default();
        let (granted, finished) = match self.attempts.get_mut(&attempt_id) {
            Some(a) => (
                std::mem::take(&mut a.granted),
                std::mem::take(&mut a.finished),
            ),
            None => return Err(not_registered(&attempt_id)),
        };
        let mut allocated = Vec::with_capacity(granted.len());
        let mut new_nodes = BTreeSet::new();
        for g in &granted {
            allocated.push(self.container_proto(
                g.container,
                &g.node,
                g.resource,
                g.priority,
                g.allocation_request_id,
                &user,
                now_ms,
            ));
            new_nodes.insert(g.node.clone());
        }
        let mut nm_tokens = Vec::new();
        for node in new_nodes {
            let already = self
                .attempts
                .get(&attempt_id)
                .is_some_and(|a| a.nm_tokens_sent.contains(&node));
            if !already {
                let token = self.nm_token(attempt_id, &node, &user);
                nm_tokens.push(pb::NmTokenProto {
                    node_id: Some(node_id_to_pb(&node)),
                    token: Some(token.to_proto()),
                });
                if let Some(a) = self.attempts.get_mut(&attempt_id) {
                    a.nm_tokens_sent.insert(node);
                }
            }
        }
        let completed = finished
            .into_iter()
            .map(|f| pb::ContainerStatusProto {
                container_id: Some(container_id_to_pb(&f.container)),
                state: Some(pb::ContainerStateProto::CComplete as i32),
                diagnostics: Some(f.diagnostics),
                exit_status: Some(f.exit_status),
                capability: Some(resource_to_pb(f.resource)),
                ..Default::default()
            })
            .collect();
        let cluster = self.cluster_summary(now_ms);
        let current_amrm_key = read(&self.secrets.amrm).current_key().key_id;
        let am_rm_token =
            (token_key_id != current_amrm_key).then(|| self.amrm_token(attempt_id).to_proto());
        let since = self
            .attempts
            .get(&attempt_id)
            .map_or(0, |a| a.node_changes_seen);
        let (updated_nodes, seen) = self.node_changes_since(since);
        let response = AllocateResponse {
            updated_nodes,
            response_id: Some(next_id),
            am_rm_token,
            allocated_containers: allocated,
            completed_container_statuses: completed,
            limit: Some(resource_to_pb(cluster.headroom)),
            num_cluster_nodes: Some(cluster.running_nodes),
            nm_tokens,
            ..Default::default()
        };
        if let Some(a) = self.attempts.get_mut(&attempt_id) {
            a.node_changes_seen = seen;
            a.last_response_id = next_id;
            a.last_response = Some(response.clone());
        }
        Ok(response)
    }

    pub fn finish_am(
        &mut self,
        attempt_id: ApplicationAttemptId,
        status: FinalStatus,
        diagnostics: String,
        tracking_url: String,
        now_ms: u64,
    ) -> Result<bool, RpcError> {
        let attempt = self.live_attempt(&attempt_id)?;
        if attempt.state == AttemptState::Finishing || attempt.state.is_final() {
            return Ok(true);
        }
        if !attempt.is_registered() {
            return Err(not_registered(&attempt_id));
        }
        attempt.state = AttemptState::Finishing;
        attempt.final_status = status;
        attempt.diagnostics = diagnostics.clone();
        attempt.last_contact_ms = now_ms;
        if !tracking_url.is_empty() {
            attempt.tracking_url = tracking_url.clone();
        }
        // Hadoop reports an unregistered application as FINISHED, whatever final
        // status the AM gave (that goes in the final status), while its container
        // winds down.
        self.apps.finish_by_am(
            attempt_id.app,
            AppState::Finished,
            status,
            diagnostics,
            tracking_url,
            now_ms,
        );
        info!(attempt = %attempt_id, ?status, "ApplicationMaster unregistered");
        let unmanaged = self
            .apps
            .get(&attempt_id.app)
            .is_some_and(|a| a.unmanaged_am);
        if unmanaged {
            // No AM container to wait for: the attempt is over (Hadoop goes
            // straight to FINISHED for unmanaged AMs).
            self.end_attempt(attempt_id, AttemptState::Finished, String::new(), now_ms);
        }
        Ok(true)
    }
}

/// A fresh master key for a secret manager.
pub fn random_master_key(key_id: i32) -> spindle_common::security::MasterKey {
    use rand::RngCore;
    let mut bytes = vec![0u8; spindle_common::security::secret::DEFAULT_KEY_BYTES];
    rand::rng().fill_bytes(&mut bytes);
    spindle_common::security::MasterKey::new(key_id, bytes)
}

#[cfg(test)]
#[path = "lifecycle_tests.rs"]
mod tests;
