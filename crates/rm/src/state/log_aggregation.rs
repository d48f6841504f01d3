//! Log aggregation in the state: NodeManagers' reports (in heartbeats and
//! at registration), the nodes an application runs containers on, and the
//! end of an application (from which the status time-out counts). The
//! status itself is computed in [`crate::log_aggregation`]; reports show it
//! through `queries.rs`.

use spindle_common::ids::{ApplicationId, NodeId};

use super::RmState;
use crate::log_aggregation::{AppLogReport, LogAggregationStatus, NodeLogReport};
use crate::model::refusal::Refusal;

impl RmState {
    /// A node's log aggregation reports, as Hadoop's `RMNodeImpl`
    /// `handleLogAggregationStatus`: those about applications the RM does
    /// not know (any more) are dropped.
    pub(super) fn log_reports(&mut self, node: &NodeId, reports: Vec<AppLogReport>) {
        for r in reports {
            if self.apps.get(&r.app).is_some() {
                self.log_aggregation
                    .report(r.app, node, r.status, r.diagnostics);
            }
        }
    }

    /// The application runs a container on `node` (Hadoop's
    /// `RMAppRunningOnNodeEvent`): the node's logs of it are awaited.
    pub(super) fn ran_on_node(&mut self, app: ApplicationId, node: &NodeId) {
        if self.apps.get(&app).is_some() {
            self.log_aggregation.ran_on(app, node);
        }
    }

    /// The application reached its final state at `mono_ms`.
    pub(super) fn logs_app_ended(&mut self, app: ApplicationId, mono_ms: u64) {
        self.log_aggregation.app_ended(app, mono_ms);
    }

    /// The application's log aggregation status, whoever asks (a report
    /// shows it only to who may view the application).
    pub fn log_aggregation_status(&self, app: &ApplicationId) -> LogAggregationStatus {
        self.log_aggregation.status(app)
    }

    /// The per-node reports the RM keeps for an application the caller may
    /// view (what Hadoop's application page lists under "Log Aggregation
    /// Status").
    pub fn log_aggregation_reports(
        &self,
        app: &ApplicationId,
        caller: &crate::model::access::Caller,
    ) -> Result<Vec<(NodeId, NodeLogReport)>, Refusal> {
        self.viewable_app(app, caller)?;
        Ok(self.log_aggregation.node_reports(app))
    }
}
