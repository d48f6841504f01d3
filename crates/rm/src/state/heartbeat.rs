//! NodeManagers: registration, heartbeats and leaving.

use spindle_common::ids::NodeId;

use super::RmState;
use crate::cluster::nodes::{ContainerStatus, NodeAction, NodeWork, RegisterOutcome};
use crate::command::{
    HeartbeatAnswer, NodeHeartbeat, NodeRegistration, RegisterNode, UnregisterNode,
};
use crate::time::Now;

impl RmState {
    /// `registerNodeManager`: the node joins (a known node starts afresh:
    /// what it ran is gone, and so is what it was still to be told) and
    /// gets the master keys it verifies tokens with; or it is told to shut
    /// down (excluded, or smaller than the minimum allocation).
    pub(super) fn register_node(&mut self, now: Now, cmd: RegisterNode) -> NodeRegistration {
        let id = cmd.registration.id.clone();
        let (outcome, decisions) = self.cluster.register_node(cmd.registration, now.mono_ms);
        self.apply(decisions, now);
        match outcome {
            RegisterOutcome::Accepted => {
                self.node_work.remove(&id);
                self.last_answers.remove(&id);
                NodeRegistration::Accepted(self.tokens.nm_master_keys())
            }
            RegisterOutcome::Rejected(reason) => NodeRegistration::Rejected(reason),
        }
    }

    /// `nodeHeartbeat`, in order: the node table and the scheduler's view of
    /// the node take its status (it may be told to resync or shut down
    /// instead, and then nothing else happens); its container statuses are
    /// taken; the scheduler may place containers on it; the answer carries
    /// the containers and applications it must clean up, the completions the
    /// RM has taken note of, and master keys it does not have yet.
    pub(super) fn node_heartbeat(&mut self, now: Now, cmd: NodeHeartbeat) -> HeartbeatAnswer {
        let NodeHeartbeat {
            heartbeat,
            containers,
            known_container_token_key,
            known_nm_token_key,
        } = cmd;
        let id = heartbeat.id.clone();
        if self.cluster.nodes().is_repeat(&heartbeat) {
            if let Some(last) = self.last_answers.get(&id) {
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
        self.container_statuses(&id, containers, now);
        let offered = self.cluster.offer_node(&id, now.mono_ms);
        self.apply(offered, now);
        let work = self.node_work.remove(&id).unwrap_or_default();
        let keys = self.tokens.nm_master_keys();
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
                if first_report {
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
                }
            }
        }
    }
}
