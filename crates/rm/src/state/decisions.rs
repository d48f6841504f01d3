//! Applying what the scheduler core decided: containers granted (an AM
//! container starts its launch), containers completed (an AM container's
//! end ends or fails its attempt), containers to kill (node work).

use spindle_scheduler::{Decisions, NodeAction, SchedulerError};
use tracing::{info, warn};

use super::RmState;
use crate::model::attempts::{AttemptState, Finished, Granted, LiveContainer};
use crate::time::Now;
use spindle_common::text::escaped;

impl RmState {
    /// Applies `d` in order. Applying may change applications, and so feed
    /// the scheduler again (a failed attempt's successor); those decisions
    /// are applied as they come.
    pub(super) fn apply(&mut self, d: Decisions, now: Now) {
        for alloc in d.allocations {
            let attempt_id = alloc.attempt();
            let Some(attempt) = self.attempts.get_mut(&attempt_id) else {
                continue;
            };
            if let Some(history) = self.history.get_mut(&attempt_id.app) {
                history.ran_on.insert(alloc.node.clone());
            }
            attempt.live.insert(
                alloc.container,
                LiveContainer {
                    node: alloc.node.clone(),
                    allocated_wall_ms: now.wall_ms,
                },
            );
            if attempt.am_container.is_none() && attempt.state == AttemptState::Scheduled {
                attempt.am_container = Some(alloc.container);
                attempt.am_node = Some(alloc.node.clone());
                attempt.state = AttemptState::Allocated;
                info!(attempt = %attempt_id, container = %alloc.container, node = %escaped(&alloc.node.to_string()), "AM container allocated");
                // Hadoop's attempt takes its AM container at once.
                self.ran_on_node(attempt_id.app, &alloc.node);
                self.launch_am(attempt_id, now);
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
            // Ended before the AM pulled it: never handed out (Hadoop's
            // containerCompleted drops it from the newly allocated ones);
            // the AM hears only that it completed.
            attempt.granted.retain(|g| g.container != done.container);
            let finished = Finished {
                container: done.container,
                exit_status: done.exit_status,
                diagnostics: done.diagnostics.clone(),
                resource: done.resource,
            };
            if attempt.am_container == Some(done.container) {
                self.am_container_completed(attempt_id, done.exit_status, done.diagnostics, now);
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
            let NodeAction::KillContainer { node, container } = action;
            let work = self.node_work.entry(node).or_default();
            work.cleanup_containers.insert(container);
        }
    }

    /// Applies the outcome of an application input. The RM only sends
    /// inputs its own records agree with, so a refusal is a disagreement
    /// with the core, logged with the input's name.
    pub(super) fn apply_or_warn(
        &mut self,
        input: &'static str,
        outcome: Result<Decisions, SchedulerError>,
        now: Now,
    ) {
        match outcome {
            Ok(d) => self.apply(d, now),
            Err(e) => {
                warn!(input, error = %e, "scheduler refused an input");
                // A disagreement with the core: `check_invariants` reports it.
                if self.disagreement.is_none() {
                    self.disagreement = Some(format!("the scheduler refused {input}: {e}"));
                }
            }
        }
    }

    /// One continuous-scheduling pass with bounded work.
    pub(super) fn schedule_pass(&mut self, now: Now) {
        let d = self.cluster.schedule(now.mono_ms);
        self.apply(d, now);
    }
}
