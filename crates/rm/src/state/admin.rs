//! Administration: `yarn rmadmin` refreshes and node resources. The
//! handlers re-read the configuration files; the commands carry what they
//! read.

use super::RmState;
use crate::model::refusal::Refusal;
use crate::state::command::{
    RefreshAdminAcls, RefreshClusterMaxPriority, RefreshNodes, RefreshQueues, UpdateNodeResources,
};
use crate::time::Now;

impl RmState {
    /// `refreshQueues`: puts the new queue configuration in force if the
    /// scheduler accepts it (tree, locality delays and per-heartbeat caps,
    /// all or nothing); otherwise the old configuration stays and the reason
    /// is answered.
    pub(super) fn refresh_queues(&mut self, now: Now, cmd: RefreshQueues) -> Result<(), Refusal> {
        let queues = cmd.queues;
        match self.cluster.reconfigure(&queues, now.mono_ms) {
            Ok(decisions) => {
                self.queues = queues;
                self.apply(decisions, now);
                self.schedule_pass(now);
                Ok(())
            }
            Err(error) => Err(Refusal::QueuesRefused {
                source: queues.source,
                error,
            }),
        }
    }

    /// `refreshNodes`: nodes the new host lists exclude are decommissioned
    /// (at once, or gracefully), excluded ones allowed again are
    /// recommissioned; the scheduler follows.
    pub(super) fn refresh_nodes(&mut self, now: Now, cmd: RefreshNodes) {
        let decisions = self.cluster.refresh(cmd.hosts, cmd.mode, now.mono_ms);
        self.apply(decisions, now);
    }

    /// `refreshAdminAcls`: a new `yarn.admin.acl`.
    pub(super) fn refresh_admin_acls(&mut self, cmd: RefreshAdminAcls) {
        self.access.set_admins(cmd.acl);
    }

    /// `refreshClusterMaxPriority`: a new `yarn.cluster.max-application-priority`
    /// for later submissions and priority updates; applications keep the
    /// priority they have, as with Hadoop's `setClusterMaxPriority`.
    pub(super) fn refresh_cluster_max_priority(&mut self, cmd: RefreshClusterMaxPriority) {
        self.settings.max_application_priority = cmd.max_priority;
    }

    /// `updateNodeResource`: new capabilities for active nodes; nodes that
    /// are not active are named in the refusal (the others are updated).
    pub(super) fn update_node_resources(
        &mut self,
        now: Now,
        cmd: UpdateNodeResources,
    ) -> Result<(), Refusal> {
        let mut missing = Vec::new();
        for (node, capability) in cmd.nodes {
            let (known, decisions) = self.cluster.set_capability(&node, capability, now.mono_ms);
            self.apply(decisions, now);
            if known {
                self.node_work.entry(node).or_default().new_capability = Some(capability);
            } else {
                missing.push(node);
            }
        }
        if missing.is_empty() {
            Ok(())
        } else {
            Err(Refusal::NodesNotRunning(missing))
        }
    }
}
