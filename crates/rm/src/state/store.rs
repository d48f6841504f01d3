//! What the state store must keep, said by the state (which does no I/O):
//! the store operations a command's changes need ([`RmState::take_store_ops`]),
//! and the state rebuilt from what a store held ([`RmState::recover`]).
//!
//! Applications are watched from submission until their final record is
//! written; after each command the owner task asks for the operations, and
//! a watched application whose stored-relevant fields changed is written
//! whole. Finished applications past the store's bound are removed, oldest
//! first, as Hadoop's RMAppManager does.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use spindle_common::ids::{ApplicationAttemptId, ApplicationId, NodeId};
use spindle_common::resource::Resource;
use spindle_common::states::{AttemptState, FinalStatus};
use tracing::{info, warn};

use super::RmState;
use crate::model::apps::{App, AppState, Lifetime};
use crate::model::attempts::{AppAttempts, Attempt};
use crate::model::launch::app_acls;
use crate::model::launch::{AmLaunchContext, AppAccess};
use crate::store::{StoreOp, StoredApp, StoredAttempt, StoredLaunch};
use crate::time::Now;

/// The diagnostics of an attempt that was running when the RM stopped and
/// that a restart without work-preserving recovery ended.
pub const RESTART_DIAGNOSTICS: &str =
    "ResourceManager restarted without work-preserving recovery: the attempt did not survive it";

/// The state store's bookkeeping in the state.
#[derive(Debug, Default)]
pub(crate) struct Persist {
    max_completed: usize,
    watched: BTreeMap<ApplicationId, Watched>,
    /// Finished applications in the store, oldest first.
    completed: VecDeque<ApplicationId>,
}

#[derive(Debug)]
struct Watched {
    acls: Vec<(String, String)>,
    last: Option<Fingerprint>,
}

/// A digest of the fields whose change means an application's record is
/// rewritten (computed without allocating: it runs after every command for
/// every watched application).
type Fingerprint = u64;

/// What [`RmState::recover`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecoverySummary {
    /// Finished applications back in the table.
    pub finished: usize,
    /// Unfinished applications, each with a new attempt.
    pub restarted: usize,
    /// Unfinished applications whose current attempt was kept
    /// (work-preserving recovery): it waits for its AM to register again,
    /// or for its AM container (if it had none yet).
    pub kept: usize,
    /// Unfinished applications ended instead: unmanaged-AM ones failed
    /// (their AM is gone), those whose queue is gone killed (as Hadoop).
    pub failed: usize,
    /// Records that could not be read back (logged, left in the store).
    pub unreadable: usize,
}

fn parse_attempt_state(s: &str) -> Option<AttemptState> {
    Some(match s {
        "SCHEDULED" => AttemptState::Scheduled,
        "ALLOCATED" => AttemptState::Allocated,
        "LAUNCHED" => AttemptState::Launched,
        "RUNNING" => AttemptState::Running,
        "FINISHING" => AttemptState::Finishing,
        "FINISHED" => AttemptState::Finished,
        "FAILED" => AttemptState::Failed,
        "KILLED" => AttemptState::Killed,
        _ => return None,
    })
}

fn parse_access(s: &str) -> Option<AppAccess> {
    [AppAccess::View, AppAccess::Modify]
        .into_iter()
        .find(|a| a.name() == s)
}

impl RmState {
    /// Turns the store's bookkeeping on: from now on, `take_store_ops`
    /// answers what changed. `max_completed` is the store's bound on
    /// finished applications.
    pub(crate) fn enable_store(&mut self, max_completed: usize) {
        self.delegation.record();
        self.persist = Some(Persist {
            max_completed,
            ..Persist::default()
        });
    }

    /// Whether `enable_store` was called.
    pub fn store_enabled(&self) -> bool {
        self.persist.is_some()
    }

    /// Starts watching a submitted application.
    pub(super) fn watch(&mut self, id: ApplicationId, acls: &[(AppAccess, String)]) {
        if let Some(p) = &mut self.persist {
            let acls = acls
                .iter()
                .map(|(a, s)| (a.name().to_string(), s.clone()))
                .collect();
            p.watched.insert(id, Watched { acls, last: None });
        }
    }

    fn fingerprint(&self, app: &App) -> Fingerprint {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (app.state, app.final_status, app.priority, &app.queue).hash(&mut h);
        app.lifetime.hash(&mut h);
        (app.diagnostics.len(), app.launch_ms, app.finish_ms).hash(&mut h);
        (&app.am_host, app.am_rpc_port, &app.tracking_url).hash(&mut h);
        if let Some(history) = self.history.get(&app.id) {
            (history.failed, history.ids.len()).hash(&mut h);
            for a in history.ids.iter().filter_map(|a| self.attempts.get(a)) {
                (a.state, a.am_container, a.final_status).hash(&mut h);
                (a.diagnostics.len(), a.rpc_port, a.finish_ms).hash(&mut h);
            }
        }
        h.finish()
    }

    /// The applications whose table entry, attempts or history changed
    /// since the last call.
    pub(super) fn take_changed(&mut self) -> BTreeSet<ApplicationId> {
        let mut changed = self.apps.take_changed();
        changed.extend(self.attempts.take_changed());
        changed.extend(self.history.take_changed());
        changed
    }

    /// In tests: no watched application outside `changed` differs from what
    /// was last stored (a change that reached the state without being
    /// noted would never be stored).
    #[cfg(test)]
    fn check_unchanged(&self, persist: &Persist, changed: &BTreeSet<ApplicationId>) {
        for (id, w) in &persist.watched {
            if changed.contains(id) || w.last.is_none() {
                continue;
            }
            let now = self.apps.get(id).map(|app| self.fingerprint(app));
            assert_eq!(
                now, w.last,
                "application {id} changed without being noted for the store"
            );
        }
    }

    fn stored_app(&self, app: &App, acls: &[(String, String)]) -> StoredApp {
        let history = self.history.get(&app.id);
        let launch = history
            .filter(|_| !app.state.is_final())
            .map(|h| StoredLaunch {
                environment: h.launch.environment.clone(),
                tokens: h.launch.tokens.clone(),
                forwarded: h.launch.forwarded.clone(),
            });
        let attempts = history
            .map(|h| {
                h.ids
                    .iter()
                    .filter_map(|a| self.attempts.get(a))
                    .map(|a| StoredAttempt {
                        id: a.id.to_string(),
                        state: a.state.as_str().to_string(),
                        final_status: a.final_status.as_str().to_string(),
                        am_container: a.am_container.map(|c| c.to_string()),
                        am_node: a.am_node.as_ref().map(|n| n.to_string()),
                        host: a.host.clone(),
                        rpc_port: a.rpc_port,
                        tracking_url: a.tracking_url.clone(),
                        diagnostics: a.diagnostics.clone(),
                        start_ms: a.start_ms,
                        finish_ms: a.finish_ms,
                    })
                    .collect()
            })
            .unwrap_or_default();
        StoredApp {
            id: app.id.to_string(),
            user: app.user.clone(),
            name: app.name.clone(),
            queue: app.queue.clone(),
            app_type: app.app_type.clone(),
            tags: app.tags.iter().cloned().collect(),
            priority: app.priority,
            am_memory_mb: app.am_resource.memory_mb,
            am_vcores: app.am_resource.vcores,
            max_attempts: app.max_attempts,
            unmanaged_am: app.unmanaged_am,
            keep_containers: app.keep_containers,
            acls: acls.to_vec(),
            state: app.state.as_str().to_string(),
            final_status: app.final_status.as_str().to_string(),
            diagnostics: app.diagnostics.clone(),
            submit_ms: app.submit_ms,
            start_ms: app.start_ms,
            launch_ms: app.launch_ms,
            finish_ms: app.finish_ms,
            am_host: app.am_host.clone(),
            am_rpc_port: app.am_rpc_port,
            tracking_url: app.tracking_url.clone(),
            lifetime_expiry_ms: app.lifetime.map(|l| l.expiry_wall_ms),
            failed_attempts: history.map_or(0, |h| h.failed),
            launch,
            attempts,
        }
    }

    /// The store operations the changes since the last call need (none
    /// when the store is off): each watched application whose record
    /// changed, written whole; finished applications past the store's bound
    /// removed.
    pub fn take_store_ops(&mut self) -> Vec<StoreOp> {
        let changed = self.take_changed();
        let Some(mut persist) = self.persist.take() else {
            return Vec::new();
        };
        #[cfg(test)]
        self.check_unchanged(&persist, &changed);
        let mut ops = self.delegation.take_store_ops();
        // Only the watched applications a command touched can have changed.
        let ids: Vec<ApplicationId> = changed
            .into_iter()
            .filter(|id| persist.watched.contains_key(id))
            .collect();
        for id in ids {
            let Some(app) = self.apps.get(&id) else {
                // Evicted from memory in the same command it ended in.
                persist.watched.remove(&id);
                ops.push(StoreOp::RemoveApp(id));
                continue;
            };
            let fp = self.fingerprint(app);
            let Some(w) = persist.watched.get_mut(&id) else {
                continue;
            };
            if w.last != Some(fp) {
                ops.push(StoreOp::PutApp(Box::new(self.stored_app(app, &w.acls))));
                w.last = Some(fp);
            }
            if app.state.is_final() {
                persist.watched.remove(&id);
                persist.completed.push_back(id);
            }
        }
        while persist.completed.len() > persist.max_completed {
            if let Some(old) = persist.completed.pop_front() {
                ops.push(StoreOp::RemoveApp(old));
            }
        }
        self.persist = Some(persist);
        ops
    }

    /// Rebuilds the applications a store held. Finished ones come back as
    /// they ended; each unfinished one's running attempt is ended (FAILED,
    /// not counted against its maximum) and a new attempt started, as
    /// Hadoop does without work-preserving recovery; an unfinished
    /// unmanaged-AM application fails (its AM cannot be started again), and
    /// one whose queue no longer exists is killed, as Hadoop does.
    ///
    /// With work-preserving recovery (`Settings::work_preserving`) an
    /// unfinished application keeps its current attempt instead: one that
    /// had its AM container is LAUNCHED again, waiting for its AM to
    /// register again (or for AM liveness to expire it), and what nodes
    /// report still running for it is taken back as they re-register; one
    /// still waiting for its AM container asks for it again. And, as
    /// Hadoop's `setSchedulerRecoveryStartAndWaitTime`, when the store held
    /// applications nothing new is allocated for
    /// `Settings::scheduling_wait_ms`.
    pub(crate) fn recover(&mut self, mut stored: Vec<StoredApp>, now: Now) -> RecoverySummary {
        let mut summary = RecoverySummary::default();
        if self.settings.work_preserving && !stored.is_empty() {
            let until = now.mono_ms.saturating_add(self.settings.scheduling_wait_ms);
            self.cluster.hold_allocations(until, now.mono_ms);
        }
        // Finished applications in the order they finished, then the rest.
        stored.sort_by_key(|a| {
            let open = a.state.parse::<AppState>().map_or(true, |s| !s.is_final());
            (open, a.finish_ms, a.id.clone())
        });
        for record in stored {
            match self.recover_app(&record, now) {
                Ok(outcome) => match outcome {
                    Recovered::Finished => summary.finished += 1,
                    Recovered::Restarted => summary.restarted += 1,
                    Recovered::Kept => summary.kept += 1,
                    Recovered::Failed => summary.failed += 1,
                },
                Err(what) => {
                    warn!(app = %record.id, %what, "stored application not recovered");
                    summary.unreadable += 1;
                }
            }
        }
        self.forget_evicted();
        info!(
            finished = summary.finished,
            restarted = summary.restarted,
            kept = summary.kept,
            failed = summary.failed,
            unreadable = summary.unreadable,
            "applications recovered from the state store"
        );
        summary
    }

    fn recover_app(&mut self, r: &StoredApp, now: Now) -> Result<Recovered, String> {
        let id: ApplicationId = r.id.parse().map_err(|e| format!("id: {e}"))?;
        let mut state: AppState = r.state.parse().map_err(|e| format!("state: {e}"))?;
        let mut final_status: FinalStatus = r
            .final_status
            .parse()
            .map_err(|e| format!("final status: {e}"))?;
        let acls: Vec<(AppAccess, String)> = r
            .acls
            .iter()
            .filter_map(|(a, s)| Some((parse_access(a)?, s.clone())))
            .collect();
        let mut attempts = Vec::new();
        for a in &r.attempts {
            let aid: ApplicationAttemptId = a.id.parse().map_err(|e| format!("attempt: {e}"))?;
            let mut attempt = Attempt::new(aid, Resource::new(r.am_memory_mb, r.am_vcores), now);
            attempt.state = parse_attempt_state(&a.state)
                .ok_or_else(|| format!("attempt state {}", a.state))?;
            attempt.final_status = a
                .final_status
                .parse()
                .map_err(|e| format!("attempt final status: {e}"))?;
            attempt.am_container = a.am_container.as_deref().and_then(|c| c.parse().ok());
            attempt.am_node = a.am_node.as_deref().and_then(|n| n.parse::<NodeId>().ok());
            attempt.host = a.host.clone();
            attempt.rpc_port = a.rpc_port;
            attempt.tracking_url = a.tracking_url.clone();
            attempt.diagnostics = a.diagnostics.clone();
            attempt.start_ms = a.start_ms;
            attempt.finish_ms = a.finish_ms;
            attempts.push(attempt);
        }
        let launch = r
            .launch
            .as_ref()
            .map(|l| AmLaunchContext {
                environment: l.environment.clone(),
                tokens: l.tokens.clone(),
                acls: acls.clone(),
                forwarded: l.forwarded.clone(),
                sizes: Default::default(),
            })
            .unwrap_or_default();
        let open = !state.is_final();
        if !open {
            // An application that ended has no attempt still running: one
            // its AM unregistered (FINISHING, waiting for its AM container
            // when the RM stopped) ends FINISHED, as Hadoop's recovered
            // attempts of a finished application are.
            for a in attempts
                .iter_mut()
                .filter(|a| a.state == AttemptState::Finishing)
            {
                a.state = AttemptState::Finished;
                if a.finish_ms == 0 {
                    a.finish_ms = r.finish_ms;
                }
            }
        }
        let mut diagnostics = r.diagnostics.clone();
        let mut finish_ms = r.finish_ms;
        let mut outcome = Recovered::Finished;
        let mut kept = None;
        let queue_exists = self.queues.tree.resolve_leaf(&r.queue).is_some();
        let keep = open
            && queue_exists
            && self.settings.work_preserving
            && attempts.last().is_some_and(|a| {
                !a.state.is_final()
                    && (a.am_container.is_some() || r.unmanaged_am || r.launch.is_some())
            });
        if keep {
            if let Some(last) = attempts.last_mut() {
                last.last_contact_ms = now.mono_ms;
                if last.am_container.is_some() || r.unmanaged_am {
                    last.state = AttemptState::Launched;
                    kept = Some(Kept::Launched(last.id));
                } else {
                    last.state = AttemptState::Scheduled;
                    kept = Some(Kept::Scheduled(last.id));
                }
            }
            // As Hadoop: ACCEPTED until the attempt's AM registers again.
            state = AppState::Accepted;
            outcome = Recovered::Kept;
        } else if open {
            if let Some(last) = attempts.last_mut().filter(|a| !a.state.is_final()) {
                last.end(
                    AttemptState::Failed,
                    RESTART_DIAGNOSTICS.into(),
                    now.wall_ms,
                );
            }
            if r.unmanaged_am || r.launch.is_none() {
                state = AppState::Failed;
                final_status = FinalStatus::Failed;
                diagnostics = format!("Application {id} failed: {RESTART_DIAGNOSTICS}");
                finish_ms = now.wall_ms;
                outcome = Recovered::Failed;
            } else if !queue_exists {
                // Hadoop's words (CapacityScheduler.addApplication, without fail-fast).
                state = AppState::Killed;
                final_status = FinalStatus::Killed;
                diagnostics = format!(
                    "Application killed on recovery as it was submitted to queue {} \
                     which no longer exists after restart.",
                    r.queue
                );
                finish_ms = now.wall_ms;
                outcome = Recovered::Failed;
            } else {
                state = AppState::Accepted;
                outcome = Recovered::Restarted;
            }
        }
        let app = App {
            id,
            user: r.user.clone(),
            name: r.name.clone(),
            queue: r.queue.clone(),
            app_type: r.app_type.clone(),
            tags: r.tags.iter().cloned().collect(),
            priority: r.priority,
            am_resource: Resource::new(r.am_memory_mb, r.am_vcores),
            max_attempts: r.max_attempts,
            unmanaged_am: r.unmanaged_am,
            keep_containers: r.keep_containers,
            acls: app_acls(&acls),
            state,
            final_status,
            diagnostics,
            submit_ms: r.submit_ms,
            start_ms: r.start_ms,
            launch_ms: r.launch_ms,
            finish_ms,
            progress: if state.is_final() { 1.0 } else { 0.0 },
            am_host: if open {
                "N/A".into()
            } else {
                r.am_host.clone()
            },
            am_rpc_port: if open { -1 } else { r.am_rpc_port },
            tracking_url: r.tracking_url.clone(),
            // A lifetime that passed while the RM was down ends at the
            // first tick.
            lifetime: r.lifetime_expiry_ms.map(|expiry| Lifetime {
                expiry_wall_ms: expiry,
                deadline_mono_ms: now
                    .mono_ms
                    .saturating_add(expiry.saturating_sub(now.wall_ms)),
            }),
        };
        let mut history = AppAttempts::new(launch, r.submit_ms);
        history.failed = r.failed_attempts;
        history.ids = attempts.iter().map(|a| a.id).collect();
        // Containers of attempts from before the restart that nodes still
        // report are not this RM's to account for, except the kept one's.
        let kept_id = kept.map(|k| match k {
            Kept::Launched(a) | Kept::Scheduled(a) => a,
        });
        self.restart_ended
            .extend(history.ids.iter().copied().filter(|a| Some(*a) != kept_id));
        for a in attempts {
            self.attempts.insert(a.id, a);
        }
        self.history.insert(id, history);
        self.apps.restore(app);
        if let Some(p) = &mut self.persist {
            let w = Watched {
                acls: r.acls.clone(),
                last: None,
            };
            if matches!(outcome, Recovered::Finished) {
                p.completed.push_back(id);
            } else {
                // Written again: its new state (and attempt) must be stored.
                p.watched.insert(id, w);
            }
        }
        match kept {
            Some(Kept::Launched(attempt)) => {
                info!(%attempt, "attempt kept: waiting for its ApplicationMaster to register again");
                self.recovered_attempts.insert(attempt);
                let recovered = self.cluster.recover_app(
                    attempt,
                    r.queue.clone(),
                    r.user.clone(),
                    r.priority,
                    r.unmanaged_am,
                    now.mono_ms,
                );
                self.apply_or_warn("AppRecovered", recovered, now);
            }
            Some(Kept::Scheduled(attempt)) => {
                info!(%attempt, "attempt kept: its AM container is asked for again");
                self.schedule_attempt(attempt, now);
            }
            None => {}
        }
        if matches!(outcome, Recovered::Restarted) {
            self.start_attempt(id, now);
        }
        if state.is_final() {
            // As Hadoop's recovered final applications: no reports (they
            // are not stored), the status time-out counting from now.
            self.logs_app_ended(id, now.mono_ms);
        }
        Ok(outcome)
    }
}

enum Recovered {
    Finished,
    Restarted,
    Kept,
    Failed,
}

/// The attempt a work-preserving restart keeps, and how.
#[derive(Clone, Copy)]
enum Kept {
    /// It had its AM container: LAUNCHED, its AM expected back.
    Launched(ApplicationAttemptId),
    /// It was still waiting for its AM container: asked for again.
    Scheduled(ApplicationAttemptId),
}
