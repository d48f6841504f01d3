//! Applications and their attempts: ids, submission, kill, priority and
//! container signals;
//! attempts started, their AM container launched, failed and retried, kept
//! across attempts, ended; AM liveness.

use spindle_common::ids::{ApplicationAttemptId, ApplicationId};
use spindle_common::security::Credentials;
use spindle_common::text::escaped;
use spindle_scheduler::{ResourceAsk, ANY};
use tracing::{info, warn};

use super::{AppEnd, RmState};
use crate::model::access::Caller;
use crate::model::amrm::AllocateReply;
use crate::model::apps::{App, AppState};
use crate::model::attempts::{
    counts_towards_max_attempts, AppAttempts, Attempt, AttemptState, Granted,
};
use crate::model::keys::ContainerKind;
use crate::model::launch::app_acls;
use crate::model::launch::{AppAccess, Effect};
use crate::model::limits::cut_application_type;
use crate::model::refusal::Refusal;
use crate::state::command::{
    AmLaunchFailed, FailApplicationAttempt, KillApplication, SignalContainer, SubmitApplication,
    UpdateApplicationPriority,
};
use crate::time::Now;

/// The AM container's priority in the scheduler (Hadoop uses 0 for it).
const AM_PRIORITY: i32 = 0;

impl RmState {
    /// `getNewApplication`: ids count up from 1 for this RM's lifetime.
    pub(super) fn new_application(&mut self) -> ApplicationId {
        self.apps.new_id()
    }

    /// `submitApplication`: records the submission and hands it to its
    /// queue: placement rules pick the leaf; ACCEPTED (and its first attempt
    /// started), or FAILED with Hadoop's reason when the queue does not
    /// exist, is stopped or is full. A user without the submit ACL (when
    /// `yarn.acl.enable`) is refused outright and nothing is recorded.
    pub(super) fn submit_application(
        &mut self,
        now: Now,
        cmd: SubmitApplication,
    ) -> Result<(), Refusal> {
        let SubmitApplication {
            mut submission,
            launch,
            user,
            groups,
        } = cmd;
        let id = submission.id;
        self.settings
            .limits
            .check_submission(&submission, &user, &launch)
            .map_err(|what| Refusal::LimitExceeded {
                app: Some(id),
                what,
            })?;
        cut_application_type(&mut submission.app_type);
        let requested = submission.queue.clone();
        if self.apps.get(&id).is_some() {
            // A retried submission: the first answer stands.
            self.apps.submit(submission, &user, now.wall_ms)?;
            return Ok(());
        }
        let placed = self
            .queues
            .placement
            .place(&requested, &user, &groups, &self.queues.tree);
        if let Ok(p) = &placed {
            let caller = Caller::new(user.as_str(), groups);
            if !self.access.may_submit(&caller, &p.queue, &self.queues) {
                return Err(Refusal::SubmitAccessDenied {
                    user,
                    app: id,
                    queue: requested,
                });
            }
            submission.queue = self.queues.display_name(&p.queue);
        }
        // The effective priority is what the application is recorded with
        // (and what its report shows), as Hadoop's RMAppManager sets it
        // back into the submission context.
        let leaf_path = placed.as_ref().map(|p| p.queue.as_str()).unwrap_or("");
        submission.priority = Some(self.queues.application_priority(
            submission.priority,
            leaf_path,
            self.settings.max_application_priority,
        ));
        self.apps.submit(submission, &user, now.wall_ms)?;
        if let Some(app) = self.apps.get_mut(&id) {
            app.acls = app_acls(&launch.acls);
        }
        self.watch(id, &launch.acls);
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
                info!(app = %id, msg = %escaped(&msg), "application rejected");
                self.apps.fail(id, msg, now.wall_ms);
                return Ok(());
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
                info!(app = %id, msg = %escaped(&msg), "application rejected");
                self.apps.fail(id, msg, now.wall_ms);
            }
            None => {
                self.apps.accept(id);
                info!(app = %id, user = %escaped(&user), queue = %escaped(&leaf), "application accepted");
                self.history
                    .insert(id, AppAttempts::new(launch, now.wall_ms));
                self.start_attempt(id, now);
            }
        }
        Ok(())
    }

    /// `forceKillApplication`: ends the running attempt (its containers are
    /// killed) and the application. Always complete at once. Needs
    /// MODIFY_APP (see [`crate::model::access`]); a refused kill changes nothing.
    pub(super) fn kill_application(
        &mut self,
        now: Now,
        cmd: KillApplication,
    ) -> Result<bool, Refusal> {
        let Some(app) = self.apps.get(&cmd.app) else {
            return Err(Refusal::KillOfAbsentApplication(cmd.app));
        };
        self.require_modify(app, &cmd.user, cmd.groups)?;
        // Hadoop's `ClientRMService.forceKillApplication` message.
        let mut diagnostics = format!("Application {} was killed by user {}", cmd.app, cmd.user);
        if let Some(ip) = cmd.from {
            diagnostics.push_str(&format!(" at {ip}"));
        }
        if let Some(reason) = cmd
            .reason
            .as_deref()
            .map(str::trim)
            .filter(|r| !r.is_empty())
        {
            diagnostics.push_str(" with diagnostic message: ");
            diagnostics.push_str(reason);
        }
        self.kill_now(cmd.app, diagnostics, now)
            .ok_or(Refusal::KillOfAbsentApplication(cmd.app))
    }

    /// Kills an application at once: its current attempt ends KILLED and
    /// the application with it, both with `diagnostics`. What the table's
    /// `kill` answers (`None` for an application it does not have).
    pub(super) fn kill_now(
        &mut self,
        app: ApplicationId,
        diagnostics: String,
        now: Now,
    ) -> Option<bool> {
        if let Some(attempt) = self.current_attempt_id(&app) {
            self.end_attempt(
                attempt,
                AttemptState::Killed,
                diagnostics.clone(),
                AppEnd::Ends,
                now,
            );
        }
        self.apps.kill(app, diagnostics, now.wall_ms)
    }

    /// `updateApplicationPriority`: gives the application the priority its
    /// scheduler allows (see `QueueFile::application_priority`) and moves
    /// its current attempt in its queue's order. Answers the effective
    /// priority, which Hadoop's client prints. A finished application keeps
    /// its priority and the call succeeds, as in Hadoop; one that is not
    /// ACCEPTED or RUNNING yet is refused. Needs MODIFY_APP (see
    /// [`crate::model::access`]).
    pub(super) fn update_application_priority(
        &mut self,
        now: Now,
        cmd: UpdateApplicationPriority,
    ) -> Result<i32, Refusal> {
        let UpdateApplicationPriority {
            app: id,
            priority: requested,
            user,
            groups,
        } = cmd;
        let Some(app) = self.apps.get(&id) else {
            return Err(Refusal::ApplicationNotFound(id));
        };
        self.require_modify(app, &user, groups)?;
        if app.state.is_final() {
            return Ok(app.priority);
        }
        if !matches!(app.state, AppState::Accepted | AppState::Running) {
            return Err(Refusal::PriorityUpdateInState(app.state));
        }
        let leaf = self
            .queues
            .tree
            .resolve_leaf(&app.queue)
            .unwrap_or_default();
        let priority = self.queues.application_priority(
            Some(requested),
            &leaf,
            self.settings.max_application_priority,
        );
        if priority == app.priority {
            return Ok(priority);
        }
        if let Some(app) = self.apps.get_mut(&id) {
            app.priority = priority;
        }
        info!(app = %id, priority, user = %escaped(&user), "application priority updated");
        let attempt = self
            .current_attempt_id(&id)
            .filter(|a| self.cluster.scheduler().app(a).is_some());
        if let Some(attempt) = attempt {
            let outcome = self.cluster.update_priority(attempt, priority, now.mono_ms);
            self.apply_or_warn("AppPriorityUpdated", outcome, now);
            self.schedule_pass(now);
        }
        Ok(priority)
    }

    /// `signalToContainer`: the signal is queued for the container's node, which
    /// hears it with its next heartbeat answer (Hadoop's `RMNodeSignalContainerEvent`).
    /// Hadoop's checks in its order: the application must exist, the caller needs
    /// MODIFY_APP, and the container must be allocated (else "Trying to signal an
    /// absent container").
    pub(super) fn signal_container(&mut self, cmd: SignalContainer) -> Result<(), Refusal> {
        let SignalContainer {
            container,
            signal,
            user,
            groups,
        } = cmd;
        let Some(app) = self.apps.get(&container.app()) else {
            return Err(Refusal::SignalOfAbsentContainer(container));
        };
        self.require_modify(app, &user, groups)?;
        let Some(node) = self
            .cluster
            .scheduler()
            .container(&container)
            .map(|c| c.node.clone())
        else {
            return Err(Refusal::SignalOfAbsentContainer(container));
        };
        info!(%container, %node, ?signal, user = %escaped(&user), "container signal queued for its node");
        self.node_work
            .entry(node)
            .or_default()
            .signals
            .push((container, signal));
        Ok(())
    }

    /// `failApplicationAttempt`: the attempt fails as if its AM had ("Attempt failed
    /// by user."), counting towards the maximum, so the application retries or
    /// fails. Hadoop's checks in its order: the application must exist, the caller
    /// needs MODIFY_APP, the attempt must exist; an application that has ended
    /// answers success and nothing changes, as does an attempt that has.
    pub(super) fn fail_application_attempt(
        &mut self,
        now: Now,
        cmd: FailApplicationAttempt,
    ) -> Result<(), Refusal> {
        let FailApplicationAttempt {
            attempt,
            user,
            groups,
        } = cmd;
        let Some(app) = self.apps.get(&attempt.app) else {
            return Err(Refusal::ApplicationNotFound(attempt.app));
        };
        self.require_modify(app, &user, groups)?;
        if !self.attempts.contains_key(&attempt) {
            return Err(Refusal::AttemptNotFound(attempt));
        }
        if app.state.is_final() {
            return Ok(());
        }
        info!(%attempt, user = %escaped(&user), "attempt failed by user");
        self.fail_attempt(attempt, "Attempt failed by user.".to_string(), true, now);
        Ok(())
    }

    /// MODIFY_APP on `app` for `user` (see [`crate::model::access`]), or Hadoop's refusal.
    pub(super) fn require_modify(
        &self,
        app: &App,
        user: &str,
        groups: Vec<String>,
    ) -> Result<(), Refusal> {
        let caller = Caller::new(user, groups);
        if self
            .access
            .may_access(&caller, AppAccess::Modify, app, &self.queues)
        {
            Ok(())
        } else {
            Err(Refusal::AppAccessDenied {
                user: user.to_string(),
                access: AppAccess::Modify,
                app: app.id,
            })
        }
    }

    /// The id of the application's latest attempt.
    pub(super) fn current_attempt_id(&self, app: &ApplicationId) -> Option<ApplicationAttemptId> {
        self.history.get(app)?.current()
    }

    /// The application's latest attempt.
    pub(super) fn current_attempt(&self, app: &ApplicationId) -> Option<&Attempt<AllocateReply>> {
        self.attempts.get(&self.current_attempt_id(app)?)
    }

    /// Starts the next attempt of an accepted application: the scheduler
    /// gets the attempt and its AM container ask (an unmanaged AM's attempt
    /// asks for none and is LAUNCHED at once).
    pub(super) fn start_attempt(&mut self, app_id: ApplicationId, now: Now) {
        let Some(app) = self.apps.get(&app_id) else {
            return;
        };
        let (am_resource, unmanaged) = (app.am_resource, app.unmanaged_am);
        let Some(history) = self.history.get_mut(&app_id) else {
            return;
        };
        let attempt_id = ApplicationAttemptId::new(app_id, history.ids.len() as i32 + 1);
        history.ids.push(attempt_id);
        self.attempts
            .insert(attempt_id, Attempt::new(attempt_id, am_resource, now));
        info!(attempt = %attempt_id, unmanaged, "application attempt started");
        self.schedule_attempt(attempt_id, now);
    }

    /// Hands a new (SCHEDULED) attempt to the scheduler with its AM
    /// container ask; an unmanaged AM's attempt is LAUNCHED at once.
    pub(super) fn schedule_attempt(&mut self, attempt_id: ApplicationAttemptId, now: Now) {
        let app_id = attempt_id.app;
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
        // An unmanaged AM holds no container, so it does not count
        // against the queue's AM limits.
        let added = self
            .cluster
            .add_app(attempt_id, queue, user, priority, unmanaged, now.mono_ms);
        self.apply_or_warn("AppAdded", added, now);
        if unmanaged {
            // As in Hadoop, an unmanaged AM's attempt asks for no AM container:
            // it is LAUNCHED at once (its AMRMToken now shows in the owner's
            // application report) and the liveness monitor starts watching it.
            if let Some(a) = self.attempts.get_mut(&attempt_id) {
                a.state = AttemptState::Launched;
                a.last_contact_ms = now.mono_ms;
            }
            if let Some(app) = self.apps.get_mut(&app_id) {
                app.launch_ms = now.wall_ms;
            }
            info!(attempt = %attempt_id, "unmanaged ApplicationMaster attempt launched");
            self.schedule_pass(now);
            return;
        }
        let asked = self.cluster.update_asks(
            attempt_id,
            vec![ResourceAsk::new(AM_PRIORITY, ANY, am_resource, 1)],
            Vec::new(),
            Vec::new(),
            Vec::new(),
            now.mono_ms,
        );
        self.apply_or_warn("AsksUpdated", asked, now);
        self.schedule_pass(now);
    }

    /// The AM container was granted: leaves the effect that starts it on its
    /// NodeManager, with the AMRMToken merged into the client's credentials
    /// (never replacing them) and the environment Hadoop's AMs expect.
    pub(super) fn launch_am(&mut self, attempt_id: ApplicationAttemptId, now: Now) {
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
        let (user, priority, max_attempts) = (app.user.clone(), app.priority, app.max_attempts);
        let Some(history) = self.history.get(&app_id) else {
            return;
        };
        let mut launch = history.launch.clone();
        let submit_wall_ms = history.submit_wall_ms;

        let amrm = self.tokens.amrm(attempt_id);
        let mut credentials = match launch.tokens.as_deref().filter(|t| !t.is_empty()) {
            None => Credentials::new(),
            Some(bytes) => match Credentials::from_bytes(bytes) {
                Ok(c) => c,
                Err(e) => {
                    let msg = format!("the AM launch context's tokens cannot be read: {e}");
                    self.fail_attempt(attempt_id, msg, true, now);
                    return;
                }
            },
        };
        credentials.add_token(amrm.service.clone(), amrm);
        launch.tokens = Some(credentials.to_bytes());
        launch.set_env("APPLICATION_WEB_PROXY_BASE", format!("/proxy/{app_id}"));
        launch.set_env("APP_SUBMIT_TIME_ENV", submit_wall_ms.to_string());
        launch.set_env("MAX_APP_ATTEMPTS", max_attempts.to_string());
        let granted = Granted {
            container,
            node: node.clone(),
            resource,
            priority,
            allocation_request_id: -1,
        };
        let container_token = self.tokens.container(
            &granted,
            &user,
            ContainerKind::ApplicationMaster,
            now.wall_ms,
        );
        let nm_token = self.tokens.nm(attempt_id, &node, &user);
        self.outbox.push(Effect::LaunchAm {
            attempt: attempt_id,
            node,
            nm_token,
            container_token,
            launch,
        });
    }

    /// The AM container's NodeManager accepted the start request (or the
    /// container reported running): the attempt is LAUNCHED and the liveness
    /// monitor starts watching its AM.
    pub(super) fn am_launched(&mut self, now: Now, attempt_id: ApplicationAttemptId) {
        if let Some(a) = self.attempts.get_mut(&attempt_id) {
            if a.state == AttemptState::Allocated {
                a.state = AttemptState::Launched;
                a.last_contact_ms = now.mono_ms;
                if let Some(app) = self.apps.get_mut(&attempt_id.app) {
                    app.launch_ms = now.wall_ms;
                }
                info!(attempt = %attempt_id, "AM container launched");
            }
        }
    }

    /// Starting the AM container failed: the attempt fails.
    pub(super) fn am_launch_failed(&mut self, now: Now, cmd: AmLaunchFailed) {
        let AmLaunchFailed { attempt, reason } = cmd;
        // The launch may give up long after the attempt ended another way
        // (its AM container exited, the application was killed): only the
        // current attempt, still waiting for its launch, fails for it.
        let waiting = self.current_attempt_id(&attempt.app) == Some(attempt)
            && self
                .attempts
                .get(&attempt)
                .is_some_and(|a| a.state == AttemptState::Allocated);
        if !waiting {
            info!(%attempt, %reason, "a launch failure for an attempt that is no longer launching; ignored");
            return;
        }
        let diag = format!("Error launching {attempt}. Got exception: {reason}");
        warn!(%attempt, reason = %escaped(&reason), "AM launch failed");
        self.fail_attempt(attempt, diag, true, now);
    }

    /// The AM container completed: an unregistered AM's attempt is FINISHED,
    /// any other attempt FAILED (counting towards the maximum unless the
    /// exit was not the application's fault).
    pub(super) fn am_container_completed(
        &mut self,
        attempt_id: ApplicationAttemptId,
        exit: i32,
        diagnostics: String,
        now: Now,
    ) {
        let Some(attempt) = self.attempts.get(&attempt_id) else {
            return;
        };
        match attempt.state {
            AttemptState::Finishing => {
                self.end_attempt(
                    attempt_id,
                    AttemptState::Finished,
                    String::new(),
                    AppEnd::Ends,
                    now,
                );
                if let Some(app) = self.apps.get_mut(&attempt_id.app) {
                    app.finish_ms = app.finish_ms.max(now.wall_ms);
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
                self.fail_attempt(attempt_id, diag, counts_towards_max_attempts(exit), now);
            }
        }
    }

    /// Removes an attempt from the scheduler and ends it; the scheduler kills
    /// its containers. When it is the application's last attempt
    /// ([`AppEnd::Ends`]), the containers kept from earlier attempts go too,
    /// and every node the application ran on is told to clean it up.
    pub(super) fn end_attempt(
        &mut self,
        attempt_id: ApplicationAttemptId,
        state: AttemptState,
        diag: String,
        app_end: AppEnd,
        now: Now,
    ) {
        let diag = self.settings.limits.bound_diagnostics(diag);
        match self.attempts.get_mut(&attempt_id) {
            Some(a) if !a.state.is_final() => a.end(state, diag, now.wall_ms),
            _ => return,
        }
        let removed = self.cluster.remove_app(attempt_id, now.mono_ms);
        self.apply_or_warn("AppRemoved", removed, now);
        if app_end == AppEnd::Continues {
            return;
        }
        self.logs_app_ended(attempt_id.app, now.mono_ms);
        let Some(history) = self.history.get_mut(&attempt_id.app) else {
            return;
        };
        // Containers kept from earlier attempts end with the application's last one.
        let retained = std::mem::take(&mut history.retained);
        let ran_on = history.ran_on.clone();
        for old in retained {
            let removed = self.cluster.remove_app(old, now.mono_ms);
            self.apply_or_warn("AppRemoved", removed, now);
        }
        for node in ran_on {
            self.node_work
                .entry(node)
                .or_default()
                .cleanup_apps
                .insert(attempt_id.app);
        }
    }

    /// Ends a failed attempt but keeps its task containers running for the next
    /// attempt: its asks are cancelled and only its AM container goes.
    fn retain_attempt(&mut self, attempt_id: ApplicationAttemptId, diag: String, now: Now) {
        let diag = self.settings.limits.bound_diagnostics(diag);
        let am = match self.attempts.get_mut(&attempt_id) {
            Some(a) if !a.state.is_final() => {
                a.end(AttemptState::Failed, diag, now.wall_ms);
                a.am_container.filter(|c| a.live.contains_key(c))
            }
            _ => return,
        };
        let cancel: Vec<ResourceAsk> = self
            .cluster
            .scheduler()
            .asks(&attempt_id)
            .unwrap_or_default()
            .into_iter()
            .map(|mut ask| {
                ask.num_containers = 0;
                ask
            })
            .collect();
        let updated = self.cluster.update_asks(
            attempt_id,
            cancel,
            am.into_iter().collect(),
            Vec::new(),
            Vec::new(),
            now.mono_ms,
        );
        self.apply_or_warn("AsksUpdated", updated, now);
        if let Some(history) = self.history.get_mut(&attempt_id.app) {
            history.retained.insert(attempt_id);
        }
    }

    /// Fails an attempt; retries the application or fails it when attempts
    /// run out. `counts`: whether this failure counts towards the maximum.
    pub(super) fn fail_attempt(
        &mut self,
        attempt_id: ApplicationAttemptId,
        diag: String,
        counts: bool,
        now: Now,
    ) {
        // An attempt fails once: a second report of its end (a late launch
        // failure, a liveness expiry racing its container's exit) must not
        // count again or start another attempt.
        if self
            .attempts
            .get(&attempt_id)
            .is_none_or(|a| a.state.is_final())
        {
            return;
        }
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
        let failed_so_far = self.history.get(&app_id).map_or(0, |h| h.failed);
        // The RM cannot restart an AM it does not run: an unmanaged
        // application ends with its first failed attempt, as in Hadoop.
        let exhausted = unmanaged || failed_so_far + i32::from(counts) >= max;
        if keep && !exhausted && !app_final {
            self.retain_attempt(attempt_id, diag.clone(), now);
        } else {
            let app_end = if exhausted || app_final {
                AppEnd::Ends
            } else {
                AppEnd::Continues
            };
            self.end_attempt(attempt_id, AttemptState::Failed, diag.clone(), app_end, now);
        }
        if app_final {
            return;
        }
        let Some(history) = self.history.get_mut(&app_id) else {
            return;
        };
        if counts {
            history.failed += 1;
        }
        if unmanaged {
            let msg = format!(
                "Unmanaged application {app_id} failed due to {diag}. Failing the application."
            );
            info!(app = %app_id, "unmanaged application failed");
            self.apps.fail(app_id, msg, now.wall_ms);
        } else if history.failed >= max {
            let msg = format!(
                "Application {app_id} failed {max} times due to {diag}. Failing the application."
            );
            info!(app = %app_id, "application failed: attempts exhausted");
            self.apps.fail(app_id, msg, now.wall_ms);
        } else {
            if let Some(app) = self.apps.get_mut(&app_id) {
                app.state = AppState::Accepted;
            }
            self.start_attempt(app_id, now);
        }
    }

    /// AM liveness (part of the tick): an AM that has not called in within
    /// `yarn.am.liveness-monitor.expiry-interval-ms` fails its attempt; an
    /// unregistered one whose container never exited is finished anyway.
    pub(super) fn expire_silent_ams(&mut self, now: Now) {
        let expiry = self.settings.am_expiry_ms;
        let expired: Vec<ApplicationAttemptId> = self
            .attempts
            .values()
            .filter(|a| {
                matches!(
                    a.state,
                    AttemptState::Launched | AttemptState::Running | AttemptState::Finishing
                ) && now.mono_ms.saturating_sub(a.last_contact_ms) > expiry
            })
            .map(|a| a.id)
            .collect();
        for id in expired {
            let finishing = self
                .attempts
                .get(&id)
                .is_some_and(|a| a.state == AttemptState::Finishing);
            if finishing {
                self.end_attempt(id, AttemptState::Finished, String::new(), AppEnd::Ends, now);
            } else {
                warn!(attempt = %id, "ApplicationMaster timed out");
                self.fail_attempt(
                    id,
                    format!("ApplicationMaster for attempt {id} timed out"),
                    true,
                    now,
                );
            }
        }
    }
}
