//! The ApplicationMaster protocol: registration, allocate (with Hadoop's
//! response-id sequencing and replay) and unregistration. The attempt is
//! always the one named by the AMRMToken that authenticated the call.

use std::collections::BTreeSet;

use spindle_common::ids::{ApplicationAttemptId, ContainerId, NodeId};
use tracing::info;

use super::{AppEnd, RmState};
use crate::model::amrm::{
    AllocateReply, AllocatedContainer, ClusterView, NmTokenGrant, RegisterReply,
};
use crate::model::apps::AppState;
use crate::model::attempts::{Attempt, AttemptState, Granted, ResponseIdCheck};
use crate::model::keys::ContainerKind;
use crate::model::limits::check_am_address;
use crate::model::refusal::Refusal;
use crate::model::reports::NodeReport;
use crate::state::command::{Allocate, FinishApplicationMaster, RegisterApplicationMaster};
use crate::time::Now;

impl RmState {
    /// `registerApplicationMaster`: the attempt becomes RUNNING (and its
    /// application too); the answer carries the containers kept from earlier
    /// attempts, with NMTokens for their nodes.
    pub(super) fn register_application_master(
        &mut self,
        now: Now,
        cmd: RegisterApplicationMaster,
    ) -> Result<RegisterReply, Refusal> {
        let RegisterApplicationMaster {
            attempt: attempt_id,
            host,
            rpc_port,
            tracking_url,
        } = cmd;
        check_am_address(&host, &tracking_url).map_err(|what| Refusal::LimitExceeded {
            app: Some(attempt_id.app),
            what,
        })?;
        let maximum_capability = self.apps.max_allocation();
        let queue = self
            .apps
            .get(&attempt_id.app)
            .map(|a| a.queue.clone())
            .unwrap_or_default();
        let node_seq = self.cluster.change_seq();
        let attempt = self.live_attempt(&attempt_id)?;
        if attempt.is_registered() {
            return Err(Refusal::AmAlreadyRegistered(attempt_id.app));
        }
        if attempt.state.is_final() {
            return Err(Refusal::AttemptEnded {
                attempt: attempt_id,
                state: attempt.state,
            });
        }
        attempt.state = AttemptState::Running;
        attempt.node_changes_seen = node_seq;
        attempt.last_response_id = 0;
        attempt.last_response = None;
        attempt.last_contact_ms = now.mono_ms;
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
        let (previous_containers, previous_nm_tokens) = self.previous_containers(attempt_id, now);
        Ok(RegisterReply {
            maximum_capability,
            queue,
            previous_containers,
            previous_nm_tokens,
        })
    }

    /// `allocate`: takes the AM's progress, asks, releases and blacklist,
    /// runs a scheduling pass, and answers what was granted and completed
    /// since the last call, the nodes that changed, the attempt's headroom,
    /// NMTokens for new nodes and a fresh AMRMToken after a key roll. A call
    /// repeating the last response id gets the last answer again.
    pub(super) fn allocate(&mut self, now: Now, cmd: Allocate) -> Result<AllocateReply, Refusal> {
        let Allocate {
            attempt: attempt_id,
            amrm_key_id,
            request,
        } = cmd;
        let attempt = self.live_attempt(&attempt_id)?;
        if attempt.state.is_final() {
            return Ok(AllocateReply::shutdown(attempt.last_response_id));
        }
        if !attempt.is_registered() {
            return Err(Refusal::AmNotRegistered(attempt_id));
        }
        let next_id = match attempt.check_response_id(request.response_id) {
            ResponseIdCheck::Duplicate => {
                return attempt
                    .last_response
                    .clone()
                    .ok_or(Refusal::AmNotRegistered(attempt_id));
            }
            ResponseIdCheck::Invalid { expected } => {
                return Err(Refusal::InvalidResponseId {
                    attempt: attempt_id,
                    expected,
                    got: request.response_id,
                })
            }
            ResponseIdCheck::Next(n) => n,
        };
        attempt.last_contact_ms = now.mono_ms;
        if let Some(p) = request.progress {
            attempt.progress = p.clamp(0.0, 1.0);
        }
        if let Some(url) = request.tracking_url {
            attempt.tracking_url = url;
        }

        let (releases, kept_releases): (Vec<ContainerId>, Vec<ContainerId>) = request
            .releases
            .into_iter()
            .partition(|c| c.attempt == attempt_id);
        // Containers kept from an earlier attempt are released through that attempt.
        let retained = self
            .history
            .get(&attempt_id.app)
            .map(|h| h.retained.clone())
            .unwrap_or_default();
        for old in retained {
            let mine: Vec<ContainerId> = kept_releases
                .iter()
                .filter(|c| c.attempt == old)
                .copied()
                .collect();
            if !mine.is_empty() {
                let released = self.cluster.update_asks(
                    old,
                    Vec::new(),
                    mine,
                    Vec::new(),
                    Vec::new(),
                    now.mono_ms,
                );
                self.apply_or_warn("AsksUpdated", released, now);
            }
        }
        if self.recovered_attempts.contains(&attempt_id) {
            // Containers nodes have not reported since the restart yet.
            let scheduler = self.cluster.scheduler();
            let unknown: Vec<ContainerId> = releases
                .iter()
                .filter(|c| scheduler.container(c).is_none())
                .copied()
                .collect();
            self.pending_releases.extend(unknown);
        }
        let updated = self.cluster.update_asks(
            attempt_id,
            request.asks,
            releases,
            request.blacklist_add,
            request.blacklist_remove,
            now.mono_ms,
        );
        match updated {
            Ok(d) => self.apply(d, now),
            Err(e) => return Err(Refusal::AsksRefused(e)),
        }
        self.schedule_pass(now);

        let (user, application_priority) = self
            .apps
            .get(&attempt_id.app)
            .map(|a| (a.user.clone(), Some(a.priority)))
            .unwrap_or_default();
        let (granted, completed) = match self.attempts.get_mut(&attempt_id) {
            Some(a) => (
                std::mem::take(&mut a.granted),
                std::mem::take(&mut a.finished),
            ),
            None => return Err(Refusal::AmNotRegistered(attempt_id)),
        };
        let allocated: Vec<AllocatedContainer> = granted
            .iter()
            .map(|g| self.allocated_container(g, &user, now))
            .collect();
        let new_nodes: BTreeSet<NodeId> = granted.into_iter().map(|g| g.node).collect();
        // Containers the AM takes (Hadoop's ACQUIRED) put the application
        // on their nodes.
        for node in &new_nodes {
            self.ran_on_node(attempt_id.app, node);
        }
        let nm_tokens = self.nm_tokens_for(attempt_id, new_nodes, &user);
        let summary = self.cluster.summary(now.mono_ms);
        let amrm_token = (amrm_key_id != self.tokens.current_amrm_key_id())
            .then(|| self.tokens.amrm(attempt_id));
        let since = self
            .attempts
            .get(&attempt_id)
            .map_or(0, |a| a.node_changes_seen);
        let (changed, seen) = self.cluster.changed_since(since);
        let updated_nodes = changed.into_iter().map(NodeReport::of).collect();
        let reply = AllocateReply {
            response_id: next_id,
            shutdown: false,
            allocated,
            completed,
            updated_nodes,
            cluster: Some(ClusterView {
                // What this attempt may still get (queue maxima, user
                // limit, free resources), as Hadoop's schedulers compute it.
                headroom: self
                    .cluster
                    .scheduler()
                    .headroom(&attempt_id)
                    .unwrap_or(summary.headroom),
                running_nodes: summary.running_nodes,
            }),
            nm_tokens,
            amrm_token,
            application_priority,
        };
        if let Some(a) = self.attempts.get_mut(&attempt_id) {
            a.node_changes_seen = seen;
            a.last_response_id = next_id;
            a.last_response = Some(reply.clone());
        }
        Ok(reply)
    }

    /// `finishApplicationMaster`: the attempt is FINISHING until its AM
    /// container exits (an unmanaged AM's is FINISHED at once); the
    /// application is reported FINISHED with the AM's final status.
    pub(super) fn finish_application_master(
        &mut self,
        now: Now,
        cmd: FinishApplicationMaster,
    ) -> Result<bool, Refusal> {
        let FinishApplicationMaster {
            attempt: attempt_id,
            status,
            diagnostics,
            tracking_url,
        } = cmd;
        check_am_address("", &tracking_url).map_err(|what| Refusal::LimitExceeded {
            app: Some(attempt_id.app),
            what,
        })?;
        let diagnostics = self.settings.limits.bound_diagnostics(diagnostics);
        let attempt = self.live_attempt(&attempt_id)?;
        if attempt.state == AttemptState::Finishing || attempt.state.is_final() {
            return Ok(true);
        }
        if !attempt.is_registered() {
            return Err(Refusal::AmNotRegistered(attempt_id));
        }
        attempt.state = AttemptState::Finishing;
        attempt.final_status = status;
        attempt.diagnostics = diagnostics.clone();
        attempt.last_contact_ms = now.mono_ms;
        // The AM's final URL replaces its running one, even when empty (as
        // Hadoop's `updateInfoOnAMUnregister`: reports then say "N/A" and
        // the web proxy sends browsers to the RM's application page).
        attempt.tracking_url = tracking_url.clone();
        // Hadoop reports an unregistered application as FINISHED, whatever final
        // status the AM gave (that goes in the final status), while its container
        // winds down.
        self.apps.finish_by_am(
            attempt_id.app,
            AppState::Finished,
            status,
            diagnostics,
            tracking_url,
            now.wall_ms,
        );
        info!(attempt = %attempt_id, ?status, "ApplicationMaster unregistered");
        let unmanaged = self
            .apps
            .get(&attempt_id.app)
            .is_some_and(|a| a.unmanaged_am);
        if unmanaged {
            // No AM container to wait for: the attempt is over (Hadoop goes
            // straight to FINISHED for unmanaged AMs).
            self.end_attempt(
                attempt_id,
                AttemptState::Finished,
                String::new(),
                AppEnd::Ends,
                now,
            );
        }
        Ok(true)
    }

    /// The attempt an AM call is about, if it is its application's current one.
    fn live_attempt(
        &mut self,
        attempt_id: &ApplicationAttemptId,
    ) -> Result<&mut Attempt<AllocateReply>, Refusal> {
        if self.current_attempt_id(&attempt_id.app) != Some(*attempt_id) {
            return Err(Refusal::NotCurrentAttempt(*attempt_id));
        }
        self.attempts
            .get_mut(attempt_id)
            .ok_or(Refusal::AmNotRegistered(*attempt_id))
    }

    /// The task containers kept from the application's earlier attempts, with
    /// NMTokens for their nodes, handed to a newly registered AM.
    fn previous_containers(
        &mut self,
        attempt_id: ApplicationAttemptId,
        now: Now,
    ) -> (Vec<AllocatedContainer>, Vec<NmTokenGrant>) {
        let retained = self
            .history
            .get(&attempt_id.app)
            .map(|h| h.retained.clone())
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
            .map(|(c, live)| (*c, live.node.clone()))
            .collect();
        let mut containers = Vec::new();
        let mut nodes = BTreeSet::new();
        for (container, node) in kept {
            let Some(report) = self.cluster.scheduler().container(&container) else {
                continue;
            };
            let granted = Granted {
                container,
                node: node.clone(),
                resource: report.resource,
                priority: report.priority,
                allocation_request_id: report.allocation_request_id,
            };
            containers.push(self.allocated_container(&granted, &user, now));
            nodes.insert(node);
        }
        let tokens = self.nm_tokens_for(attempt_id, nodes, &user);
        (containers, tokens)
    }

    /// NMTokens for those of `nodes` the attempt has none for yet.
    fn nm_tokens_for(
        &mut self,
        attempt_id: ApplicationAttemptId,
        nodes: BTreeSet<NodeId>,
        user: &str,
    ) -> Vec<NmTokenGrant> {
        let mut tokens = Vec::new();
        for node in nodes {
            let already = self
                .attempts
                .get(&attempt_id)
                .is_some_and(|a| a.nm_tokens_sent.contains(&node));
            if !already {
                let token = self.tokens.nm(attempt_id, &node, user);
                tokens.push(NmTokenGrant {
                    node: node.clone(),
                    token,
                });
                if let Some(a) = self.attempts.get_mut(&attempt_id) {
                    a.nm_tokens_sent.insert(node);
                }
            }
        }
        tokens
    }

    /// A granted container as the AM sees it, with a fresh container token.
    fn allocated_container(&self, g: &Granted, user: &str, now: Now) -> AllocatedContainer {
        let node_http_address = self
            .cluster
            .nodes()
            .get(&g.node)
            .map(|n| n.http_address())
            .unwrap_or_else(|| format!("{}:0", g.node.host));
        AllocatedContainer {
            id: g.container,
            node: g.node.clone(),
            node_http_address,
            resource: g.resource,
            priority: g.priority,
            allocation_request_id: g.allocation_request_id,
            token: self
                .tokens
                .container(g, user, ContainerKind::Task, now.wall_ms),
        }
    }
}
