//! NodeManagers: registration, heartbeats and leaving.

use std::collections::{BTreeMap, BTreeSet};

use spindle_common::ids::{ApplicationId, ContainerId, NodeId};
use spindle_common::resource::Resource;
use spindle_common::text::escaped;
use tracing::{info, warn};

use super::RmState;
use crate::cluster::nodes::{ContainerStatus, NodeAction, NodeWork, RegisterOutcome};
use crate::model::attempts::LiveContainer;
use crate::state::command::{
    HeartbeatAnswer, NodeHeartbeat, NodeRegistration, RegisterNode, UnregisterNode,
};
use crate::time::Now;

impl RmState {
    /// `registerNodeManager`: the node joins (a known node starts afresh:
    /// what it ran is gone, and so is what it was still to be told) and
    /// gets the master keys it verifies tokens with; or it is told to shut
    /// down (excluded, or smaller than the minimum allocation).
    ///
    /// After a work-preserving restart, the node's containers of the
    /// attempts the restart kept are taken back (see `recover_containers`).
    /// Without it the RM takes none of the node's containers back. Those of
    /// applications it does not know, or of attempts it ended (a node
    /// that outlived an RM restart) are orphans: as Hadoop's `RMNodeImpl`
    /// does (`handleRunningAppOnNode`), their applications, and the
    /// running applications the node names that the RM does not know, are
    /// listed for cleanup in the node's next heartbeat answer; and, beyond
    /// Hadoop, what the orphans hold is kept from the scheduler until the
    /// node reports them gone, so nothing is placed on resources they
    /// still use. The running applications the node names that the RM
    /// knows are on the node for log aggregation, and the log aggregation
    /// reports it kept from before are taken (see `log_aggregation.rs`).
    pub(super) fn register_node(&mut self, now: Now, cmd: RegisterNode) -> NodeRegistration {
        let RegisterNode {
            registration,
            containers,
            running_apps,
            log_reports,
        } = cmd;
        let id = registration.id.clone();
        let reconnect = !running_apps.is_empty()
            && self
                .cluster
                .nodes()
                .get(&id)
                .is_some_and(|n| n.state.is_active());
        let (outcome, decisions) =
            self.cluster
                .register_node(registration, !running_apps.is_empty(), now.mono_ms);
        self.apply(decisions, now);
        match outcome {
            RegisterOutcome::Accepted => {
                // A reconnecting node keeps what it is still to be told
                // (Hadoop's RMNode lives on); its answers start over.
                if !reconnect {
                    self.node_work.remove(&id);
                }
                self.last_answers.remove(&id);
                let (known_apps, unknown_apps): (Vec<ApplicationId>, Vec<ApplicationId>) =
                    running_apps
                        .into_iter()
                        .partition(|app| self.knows_app(app));
                for app in known_apps {
                    self.ran_on_node(app, &id);
                }
                let unknown_apps: BTreeSet<ApplicationId> = unknown_apps.into_iter().collect();
                if !unknown_apps.is_empty() {
                    let names: Vec<String> =
                        unknown_apps.iter().map(ApplicationId::to_string).collect();
                    warn!(
                        node = %escaped(&id.to_string()),
                        apps = %names.join(","),
                        "node runs applications this RM does not know; they will be cleaned up"
                    );
                    self.node_work
                        .entry(id.clone())
                        .or_default()
                        .cleanup_apps
                        .extend(unknown_apps);
                }
                self.track_orphans(&id, &containers, now);
                self.recover_containers(&id, &containers, now);
                if reconnect {
                    // Its statuses count as a heartbeat's (completions).
                    self.container_statuses(&id, containers, now);
                }
                self.log_reports(&id, log_reports);
                NodeRegistration::Accepted(self.tokens.nm_master_keys())
            }
            RegisterOutcome::Rejected(reason) => NodeRegistration::Rejected(reason),
        }
    }

    /// Work-preserving recovery, as Hadoop's
    /// `AbstractYarnScheduler.recoverContainersOnNode`: each container a
    /// re-registering node still holds for an attempt the restart kept is
    /// held again by the scheduler (node, queue, user and attempt usage),
    /// the attempt's AM container recognised as such. An AM container the
    /// node reports complete ended while the RM was down: its attempt ends
    /// as it would have.
    fn recover_containers(&mut self, node: &NodeId, statuses: &[ContainerStatus], now: Now) {
        if self.recovered_attempts.is_empty() {
            return;
        }
        for st in statuses {
            let attempt_id = st.container.attempt;
            if !self.recovered_attempts.contains(&attempt_id)
                || self.cluster.scheduler().container(&st.container).is_some()
            {
                continue;
            }
            let Some(attempt) = self.attempts.get(&attempt_id) else {
                continue;
            };
            if attempt.state.is_final() {
                continue;
            }
            let am = attempt.am_container == Some(st.container);
            if st.complete {
                if am {
                    warn!(attempt = %attempt_id, container = %st.container, "the AM container ended while the RM was down");
                    self.am_container_completed(
                        attempt_id,
                        st.exit_status,
                        st.diagnostics.clone(),
                        now,
                    );
                }
                continue;
            }
            let recovered = self.cluster.recover_container(
                st.container,
                node.clone(),
                st.resource,
                am,
                now.mono_ms,
            );
            match recovered {
                Ok(d) => {
                    info!(
                        container = %st.container,
                        node = %escaped(&node.to_string()),
                        resource = %st.resource,
                        am,
                        "container recovered"
                    );
                    if let Some(a) = self.attempts.get_mut(&attempt_id) {
                        a.live.insert(
                            st.container,
                            LiveContainer {
                                node: node.clone(),
                                allocated_wall_ms: now.wall_ms,
                            },
                        );
                    }
                    if let Some(h) = self.history.get_mut(&attempt_id.app) {
                        h.ran_on.insert(node.clone());
                    }
                    self.ran_on_node(attempt_id.app, node);
                    self.apply(d, now);
                    if self.pending_releases.remove(&st.container) {
                        info!(container = %st.container, "container released by its AM before it was recovered; released now");
                        let released = self.cluster.update_asks(
                            attempt_id,
                            Vec::new(),
                            vec![st.container],
                            Vec::new(),
                            Vec::new(),
                            now.mono_ms,
                        );
                        self.apply_or_warn("AsksUpdated", released, now);
                    }
                }
                Err(e) => {
                    warn!(container = %st.container, error = %e, "container not recovered");
                }
            }
        }
    }

    /// The node's orphan containers from the statuses it reported: those not
    /// complete whose application this RM does not know. Their applications
    /// are listed for cleanup (again on every heartbeat that still reports
    /// them, as Hadoop does), and what they hold is kept from the scheduler
    /// until the node stops reporting them or reports them complete.
    fn track_orphans(&mut self, node: &NodeId, statuses: &[ContainerStatus], now: Now) {
        let orphans: BTreeMap<ContainerId, Resource> = statuses
            .iter()
            .filter(|st| !st.complete && self.is_orphan(&st.container))
            .map(|st| (st.container, st.resource))
            .collect();
        let before = self
            .cluster
            .nodes()
            .get(node)
            .map(|n| n.orphans.clone())
            .unwrap_or_default();
        if orphans == before {
            self.request_orphan_cleanup(node, &orphans);
            return;
        }
        let held = orphans
            .values()
            .fold(Resource::default(), |sum, r| sum + *r);
        if orphans.is_empty() {
            info!(node = %escaped(&node.to_string()), "the node's orphan containers are gone");
        } else {
            let names: Vec<String> = orphans.keys().map(ContainerId::to_string).collect();
            warn!(
                node = %escaped(&node.to_string()),
                containers = %names.join(","),
                %held,
                "node runs containers of applications this RM does not know; \
                 their resources stay unused until they are gone"
            );
        }
        self.request_orphan_cleanup(node, &orphans);
        let (_, decisions) = self.cluster.set_orphans(node, orphans, now.mono_ms);
        self.apply(decisions, now);
    }

    /// Lists the orphans' applications for cleanup on the node.
    fn request_orphan_cleanup(&mut self, node: &NodeId, orphans: &BTreeMap<ContainerId, Resource>) {
        if orphans.is_empty() {
            return;
        }
        // An attempt that an RM restart ended belongs to an application
        // that lives on: only its containers go.
        let (of_known, of_unknown): (Vec<ContainerId>, Vec<ContainerId>) =
            orphans.keys().partition(|c| self.knows_app(&c.attempt.app));
        let work = self.node_work.entry(node.clone()).or_default();
        work.cleanup_apps
            .extend(of_unknown.iter().map(|c| c.attempt.app));
        work.cleanup_containers.extend(of_known);
    }

    /// A container this RM does not account for: of an application it does
    /// not know, or of an attempt that its restart ended (see
    /// `store.rs`).
    fn is_orphan(&self, container: &ContainerId) -> bool {
        !self.knows_app(&container.attempt.app) || self.restart_ended.contains(&container.attempt)
    }

    /// `nodeHeartbeat`, in order: the node table and the scheduler's view of
    /// the node take its status (it may be told to resync or shut down
    /// instead, and then nothing else happens); its container statuses are
    /// taken, then its log aggregation reports; the scheduler may place
    /// containers on it; the answer carries the containers and applications
    /// it must clean up, the completions the RM has taken note of, and
    /// master keys it does not have yet.
    pub(super) fn node_heartbeat(&mut self, now: Now, cmd: NodeHeartbeat) -> HeartbeatAnswer {
        let NodeHeartbeat {
            heartbeat,
            containers,
            log_reports,
            known_container_token_key,
            known_nm_token_key,
        } = cmd;
        let id = heartbeat.id.clone();
        if self.cluster.nodes().is_repeat(&heartbeat) {
            if let Some(last) = self.last_answers.get(&id) {
                // Its answer was lost; the node is alive all the same.
                self.cluster.ping(&id, now.mono_ms);
                return last.clone();
            }
        }
        let (reply, decisions) = self.cluster.heartbeat(heartbeat, now.mono_ms);
        self.apply(decisions, now);
        if reply.action != NodeAction::Normal {
            return HeartbeatAnswer {
                reply,
                work: NodeWork::default(),
                container_token_key: None,
                nm_token_key: None,
            };
        }
        self.track_orphans(&id, &containers, now);
        self.container_statuses(&id, containers, now);
        self.log_reports(&id, log_reports);
        let offered = self.cluster.offer_node(&id, now.mono_ms);
        self.apply(offered, now);
        let work = self.node_work.remove(&id).unwrap_or_default();
        let keys = self.tokens.newest_nm_master_keys();
        let answer = HeartbeatAnswer {
            reply,
            work,
            container_token_key: (known_container_token_key != Some(keys.container_token.key_id))
                .then_some(keys.container_token),
            nm_token_key: (known_nm_token_key != Some(keys.nm_token.key_id))
                .then_some(keys.nm_token),
        };
        self.last_answers.insert(id, answer.clone());
        answer
    }

    /// `unRegisterNodeManager`: the node is SHUTDOWN and leaves the
    /// scheduler. Answers whether it was active.
    pub(super) fn unregister_node(&mut self, now: Now, cmd: UnregisterNode) -> bool {
        let (known, decisions) = self.cluster.unregister_node(&cmd.node, now.mono_ms);
        self.apply(decisions, now);
        known
    }

    /// Container statuses from a heartbeat: completions go to the scheduler
    /// (once: the node hears they were taken note of), a running AM
    /// container confirms its launch.
    fn container_statuses(&mut self, node: &NodeId, statuses: Vec<ContainerStatus>, now: Now) {
        for st in statuses {
            if st.complete {
                let first_report = self
                    .node_work
                    .entry(node.clone())
                    .or_default()
                    .acked
                    .insert(st.container);
                // An orphan's completion is only acknowledged: the
                // scheduler never had it.
                let known = self.knows_app(&st.container.attempt.app);
                if first_report && known {
                    let completed = self.cluster.container_completed(
                        st.container,
                        st.exit_status,
                        st.diagnostics,
                        now.mono_ms,
                    );
                    self.apply_or_warn("ContainerCompleted", completed, now);
                }
            } else if st.running {
                let attempt_id = st.container.attempt;
                let is_am = self
                    .attempts
                    .get(&attempt_id)
                    .is_some_and(|a| a.am_container == Some(st.container));
                if is_am {
                    self.am_launched(now, attempt_id);
                } else if self.knows_app(&attempt_id.app)
                    && !self.is_orphan(&st.container)
                    && self.cluster.scheduler().container(&st.container).is_none()
                {
                    // A container the scheduler does not hold, of an
                    // application this RM knows (it ended, for the RM,
                    // before its AM started it): killed, as Hadoop's
                    // `containerLaunchedOnNode` kills one that "sneaked into
                    // the system"; it would run unaccounted.
                    warn!(
                        container = %st.container,
                        node = %escaped(&node.to_string()),
                        "the node runs a container the scheduler does not hold; it is killed"
                    );
                    self.node_work
                        .entry(node.clone())
                        .or_default()
                        .cleanup_containers
                        .insert(st.container);
                }
            }
        }
    }
}
