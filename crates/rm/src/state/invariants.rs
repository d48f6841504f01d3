//! [`RmState::check_invariants`]: the RM's tables checked against each
//! other and against the scheduler core, after every step of the tests and
//! of the whole-RM simulation (`spindle-rm-sim`).

use spindle_common::ids::{ContainerId, NodeId};
use spindle_common::resource::Resource;

use super::RmState;

impl RmState {
    /// Checks that:
    ///
    /// * the scheduler core is consistent ([`spindle_scheduler::Scheduler::check_invariants`]:
    ///   node, attempt, queue and cluster usage are the sums of their
    ///   containers', and more);
    /// * every attempt the scheduler holds is one the RM knows: a running
    ///   one is its application's current attempt, an ended one (or one of
    ///   an ended application) still has containers and asks for nothing;
    /// * every node the scheduler holds is an active node of the node table;
    /// * every application's current attempt is in the attempt table;
    /// * the scheduler core never refused an input the RM sent it (the RM
    ///   sends only inputs its records agree with).
    ///
    /// Costs O(state): for tests and simulations. `Err` says what is wrong.
    pub fn check_invariants(&self) -> Result<(), String> {
        if let Some(d) = &self.disagreement {
            return Err(format!("the RM and its scheduler core disagree: {d}"));
        }
        let scheduler = self.cluster.scheduler();
        scheduler
            .check_invariants()
            .map_err(|e| format!("scheduler: {e}"))?;
        for held in scheduler.apps() {
            let id = held.attempt;
            let Some(attempt) = self.attempts.get(&id) else {
                return Err(format!(
                    "the scheduler holds attempt {id} ({} containers), which the RM does not know",
                    held.containers.len()
                ));
            };
            // An ended attempt (or one of an ended application) stays in
            // the scheduler only while containers of it still run down
            // (its AM container after unregistering) or wait for the next
            // attempt (kept containers), and asks for nothing more.
            let app = self.apps.get(&id.app);
            let app_ended = app.is_some_and(|a| a.state.is_final());
            let ended = attempt.state.is_final() || app_ended;
            // An attempt whose containers the next one keeps stays (empty or
            // not) until the application's last attempt ends.
            let retained = self
                .history
                .get(&id.app)
                .is_some_and(|h| h.retained.contains(&id));
            // An unregistered attempt waits (FINISHING) for its AM container
            // to end, which after a restart no node may have reported yet.
            let finishing = attempt.state == spindle_common::states::AttemptState::Finishing;
            if ended && held.containers.is_empty() && !retained && !finishing {
                return Err(format!(
                    "attempt {id} has ended ({}) but the scheduler still holds it, with no container",
                    attempt.state.as_str()
                ));
            }
            if ended && !held.pending.is_zero() {
                return Err(format!(
                    "attempt {id} has ended ({}) but still asks the scheduler for {}",
                    attempt.state.as_str(),
                    held.pending
                ));
            }
            let current = self.history.get(&id.app).and_then(|h| h.ids.last());
            if !ended && current != Some(&id) {
                return Err(format!(
                    "the scheduler holds running attempt {id}, but the current attempt of {} is \
                     {current:?}",
                    id.app
                ));
            }
        }
        for node in scheduler.nodes() {
            let active = self
                .cluster
                .nodes()
                .get(&node.id)
                .is_some_and(|n| n.state.is_active());
            if !active {
                return Err(format!(
                    "the scheduler holds node {} ({} containers), which is not an active node",
                    node.id,
                    node.containers.len()
                ));
            }
        }
        for (app, history) in self.history.iter() {
            if let Some(last) = history.ids.last() {
                if self.attempts.get(last).is_none() {
                    return Err(format!(
                        "application {app}'s current attempt {last} is not in the attempt table"
                    ));
                }
            }
        }
        Ok(())
    }

    /// Every container the scheduler core holds, by node: what the
    /// simulation compares with what its NodeManagers run.
    pub fn held_containers(&self) -> Vec<(NodeId, Resource, Vec<ContainerId>)> {
        self.cluster
            .scheduler()
            .nodes()
            .into_iter()
            .map(|n| (n.id, n.used, n.containers))
            .collect()
    }

    /// What the scheduler core holds for `attempt`: its usage, what it
    /// still asks for, and its headroom (for the simulation's reports).
    pub fn scheduler_view(
        &self,
        attempt: &spindle_common::ids::ApplicationAttemptId,
    ) -> Option<(Resource, Resource, Option<Resource>)> {
        let s = self.cluster.scheduler();
        let app = s.app(attempt)?;
        Some((app.used, app.pending, s.headroom(attempt)))
    }
}
