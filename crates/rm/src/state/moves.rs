//! Moving an application to another queue (`moveApplicationAcrossQueues`):
//! Hadoop 3.3.4's checks in its order, then the move itself, in the RM's
//! table (what reports and the state store show) and in the scheduler core
//! (usage, AM usage and pending asks go with the application).
//!
//! And an application's lifetime (`updateApplicationTimeouts`, LIFETIME):
//! set with Hadoop's checks, enforced by the tick as Hadoop's
//! `RMAppLifetimeMonitor` (the application is killed when it passes).

use spindle_common::text::escaped;
use spindle_scheduler::SchedulerKind;
use tracing::info;

use super::RmState;
use crate::model::access::Caller;
use crate::model::apps::{AppState, Lifetime};
use crate::model::refusal::Refusal;
use crate::state::command::{MoveApplication, UpdateApplicationTimeouts};
use crate::time::Now;

/// A queue of the tree found by the name a client gave: its full path and
/// whether it is a leaf.
struct Found {
    path: String,
    leaf: bool,
}

impl RmState {
    /// `moveApplicationAcrossQueues`, as Hadoop's `ClientRMService` and
    /// `RMAppManager` check it, in their order: the application exists; the
    /// caller has MODIFY_APP; with ACLs on, the target queue exists and the
    /// caller may submit to it (or administer it); the application is
    /// ACCEPTED or RUNNING; then the scheduler's own checks (FIFO refuses
    /// every move; capacity: the target is an existing leaf, RUNNING, below
    /// its `maximum-applications`; fair: the target is a leaf). A move to
    /// the queue the application is in succeeds and changes nothing.
    pub(super) fn move_application(
        &mut self,
        now: Now,
        cmd: MoveApplication,
    ) -> Result<(), Refusal> {
        let MoveApplication {
            app: id,
            queue: target,
            user,
            groups,
        } = cmd;
        let Some(app) = self.apps.get(&id) else {
            return Err(Refusal::ApplicationNotFound(id));
        };
        self.require_modify(app, &user, groups.clone())?;
        if self.settings.acl_enabled {
            let caller = Caller::new(user.as_str(), groups);
            let allowed = self
                .find_queue(&target)
                .is_some_and(|q| self.access.may_submit(&caller, &q.path, &self.queues));
            if !allowed {
                return Err(Refusal::MoveTargetDenied {
                    user,
                    queue: target,
                    app: id,
                });
            }
        }
        if !matches!(app.state, AppState::Accepted | AppState::Running) {
            return Err(Refusal::MoveInState(app.state));
        }
        let (dest, shown) = self.check_move_target(id, &target)?;
        let current = self
            .queues
            .tree
            .resolve_leaf(&app.queue)
            .unwrap_or_default();
        if current == dest {
            return Ok(());
        }
        // The scheduler core first: if it refuses, nothing has changed.
        let attempt = self
            .current_attempt_id(&id)
            .filter(|a| self.cluster.scheduler().app(a).is_some());
        if let Some(attempt) = attempt {
            let moved = self.cluster.move_app(attempt, dest.clone(), now.mono_ms);
            match moved {
                Ok(d) => self.apply(d, now),
                Err(e) => return Err(Refusal::MoveRefused(e.to_string())),
            }
        }
        let from = match self.apps.get_mut(&id) {
            Some(app) => std::mem::replace(&mut app.queue, shown),
            None => return Err(Refusal::ApplicationNotFound(id)),
        };
        info!(app = %id, from = %escaped(&from), to = %escaped(&dest), user = %escaped(&user), "application moved");
        self.schedule_pass(now);
        Ok(())
    }

    /// `updateApplicationTimeouts`, with Hadoop's checks in its order
    /// (`ClientRMService`, `RMAppManager.updateApplicationTimeout`): the
    /// application exists; the caller has MODIFY_APP; a timeout is given; a
    /// finished application answers success and keeps what it had; one that
    /// is not SUBMITTED, ACCEPTED or RUNNING is refused; the time must be in
    /// Hadoop's ISO 8601 form and not before now. The new lifetime replaces
    /// any earlier one. (Queues' maximum lifetimes are not read, so nothing
    /// cuts it short.)
    pub(super) fn update_application_timeouts(
        &mut self,
        now: Now,
        cmd: UpdateApplicationTimeouts,
    ) -> Result<(), Refusal> {
        let UpdateApplicationTimeouts {
            app: id,
            lifetime,
            user,
            groups,
        } = cmd;
        let Some(app) = self.apps.get(&id) else {
            return Err(Refusal::ApplicationNotFound(id));
        };
        self.require_modify(app, &user, groups)?;
        let Some(given) = lifetime else {
            return Err(Refusal::NoTimeoutGiven);
        };
        if app.state.is_final() {
            return Ok(());
        }
        if !matches!(
            app.state,
            AppState::Submitted | AppState::Accepted | AppState::Running
        ) {
            return Err(Refusal::TimeoutUpdateInState(app.state));
        }
        let Some(expiry_ms) = crate::iso8601::parse(&given) else {
            return Err(Refusal::TimeoutNotIso8601(given));
        };
        if expiry_ms < now.wall_ms {
            return Err(Refusal::TimeoutInThePast {
                now_ms: now.wall_ms,
                expiry_ms,
            });
        }
        let lifetime = Lifetime {
            expiry_wall_ms: expiry_ms,
            deadline_mono_ms: now.mono_ms.saturating_add(expiry_ms - now.wall_ms),
        };
        if let Some(app) = self.apps.get_mut(&id) {
            app.lifetime = Some(lifetime);
        }
        info!(app = %id, expiry = %escaped(&given), user = %escaped(&user), "application lifetime set");
        Ok(())
    }

    /// The lifetime monitor: applications whose lifetime has passed are
    /// killed, with Hadoop's diagnostics.
    pub(super) fn expire_lifetimes(&mut self, now: Now) {
        let expired: Vec<_> = self
            .apps
            .all()
            .filter(|a| {
                a.lifetime
                    .is_some_and(|l| l.deadline_mono_ms <= now.mono_ms)
            })
            .filter(|a| !a.state.is_final())
            .map(|a| a.id)
            .collect();
        for id in expired {
            info!(app = %id, "application lifetime passed: killed");
            self.kill_now(
                id,
                "Application is killed by ResourceManager as it has exceeded the lifetime period."
                    .to_string(),
                now,
            );
        }
    }

    /// The scheduler's checks of the target queue (Hadoop's
    /// `preValidateMoveApplication`): the leaf's full path and the queue
    /// name the application's report shows after the move, or the refusal.
    fn check_move_target(
        &self,
        id: spindle_common::ids::ApplicationId,
        target: &str,
    ) -> Result<(String, String), Refusal> {
        match self.queues.tree.kind {
            SchedulerKind::Fifo => Err(Refusal::MoveRefused(
                "FifoScheduler does not support pre-validation of moving apps between queues"
                    .to_string(),
            )),
            SchedulerKind::Fair => {
                // The fair scheduler names queues by full path; a bare name
                // is under root.
                let path = if target == "root" || target.starts_with("root.") {
                    target.to_string()
                } else {
                    format!("root.{target}")
                };
                match self.find_queue(&path) {
                    Some(q) if q.leaf => Ok((q.path.clone(), q.path)),
                    _ => Err(Refusal::MoveRefused(format!(
                        "Target queue {target} not found or is not a leaf queue."
                    ))),
                }
            }
            SchedulerKind::Capacity => {
                let Some(q) = self.find_queue(target) else {
                    return Err(Refusal::MoveRefused(format!(
                        "The specified Queue: {target} doesn't exist"
                    )));
                };
                if !q.leaf {
                    return Err(Refusal::MoveRefused(format!(
                        "The specified Queue: {target} is not a Leaf Queue."
                    )));
                }
                // LeafQueue.validateSubmitApplication.
                if self.queues.is_stopped(&q.path) {
                    return Err(Refusal::MoveQueueRefused(format!(
                        "Queue {} is STOPPED. Cannot accept submission of application: {id}",
                        q.path
                    )));
                }
                let in_leaf = self
                    .apps
                    .all()
                    .filter(|a| !a.state.is_final())
                    .filter(|a| self.queues.same_leaf(&a.queue, &q.path))
                    .count();
                if let Some(max) = self.queues.max_applications(&q.path) {
                    if in_leaf >= max {
                        return Err(Refusal::MoveQueueRefused(format!(
                            "Queue {} already has {in_leaf} applications, cannot accept submission of application: {id}",
                            q.path
                        )));
                    }
                }
                // Hadoop's CapacityScheduler keeps the name the client gave.
                Ok((q.path, target.to_string()))
            }
        }
    }

    /// The queue a client's name refers to, leaf or parent: a full path,
    /// or a short name that only one queue has (the capacity scheduler's
    /// `getQueue`; an ambiguous short name finds nothing), as the
    /// scheduler's tree resolves it for `yarn queue -status`.
    fn find_queue(&self, name: &str) -> Option<Found> {
        self.cluster.scheduler().queue(name).map(|q| Found {
            path: q.path,
            leaf: q.leaf,
        })
    }
}
