//! Applications in their queues: adding an attempt to its leaf (a fair
//! scheduler may create the leaf), the running-application limits that
//! make an attempt wait, removing it with its containers, priority
//! changes, replacing the queue tree under the live attempts, and filing
//! each attempt in its leaf's serving order.

use std::collections::{BTreeMap, BTreeSet};

use spindle_common::{ApplicationAttemptId, ContainerId, Resource};

use super::{AppState, Scheduler};
use crate::asks::AskTable;
use crate::config::{validate_heartbeat, validate_locality};
use crate::error::SchedulerError;
use crate::output::{exit_status, CompletionCause, Decisions, NodeAction};
use crate::queue_config::{HeartbeatAssignment, LocalityDelay, QueueTreeConfig, SchedulerKind};
use crate::tree::{QueueIdx, QueueTree};

impl Scheduler {
    /// The leaf a queue name refers to: a full path, or a leaf's short name
    /// when it is unique. In the fair scheduler, a missing leaf under an
    /// existing parent is created.
    fn resolve_leaf(&mut self, queue: &str) -> Result<QueueIdx, String> {
        match self.tree.find(queue, true) {
            Ok(idx) if self.tree.queues[idx].is_leaf() => Ok(idx),
            Ok(_) => Err(format!(
                "{queue} is a parent queue; applications go to leaf queues"
            )),
            Err(true) => Err(format!(
                "the short name {queue} is ambiguous; use the full path"
            )),
            Err(false) if self.tree.kind() == SchedulerKind::Fair && queue.starts_with("root.") => {
                self.tree.create_leaf(queue)
            }
            Err(false) => Err("no such leaf queue".to_string()),
        }
    }

    pub(super) fn add_app(
        &mut self,
        attempt: ApplicationAttemptId,
        queue: String,
        user: String,
        priority: i32,
        unmanaged_am: bool,
        am_pending: bool,
    ) -> Result<Decisions, SchedulerError> {
        if self.apps.contains_key(&attempt) {
            return Err(SchedulerError::AttemptExists(attempt));
        }
        if queue.is_empty() || user.is_empty() {
            return Err(SchedulerError::InvalidApp {
                attempt,
                reason: "queue and user must not be empty".into(),
            });
        }
        let max = self.config.limits.max_apps;
        if self.apps.len() >= max {
            return Err(SchedulerError::LimitExceeded {
                limit: "max_apps",
                requested: self.apps.len() + 1,
                max,
                context: format!("adding {attempt} to queue {queue}"),
            });
        }
        let leaf = self
            .resolve_leaf(&queue)
            .map_err(|reason| SchedulerError::UnknownQueue {
                attempt,
                queue: queue.clone(),
                reason,
            })?;
        let path = self.tree.queues[leaf].path.clone();
        let submission_seq = self.next_submission_seq;
        self.next_submission_seq += 1;
        let q = &mut self.tree.queues[leaf];
        q.apps.insert(attempt);
        q.users.entry(user.clone()).or_default().apps += 1;
        self.apps.insert(
            attempt,
            AppState {
                queue: path,
                leaf,
                user,
                priority,
                submission_seq,
                asks: AskTable::default(),
                blacklist: BTreeSet::new(),
                containers: BTreeSet::new(),
                used: Resource::ZERO,
                next_sequence: 1,
                unmanaged_am,
                am_container: None,
                am_pending,
                runnable: false,
                parked: false,
                active_key: None,
                counted_active: false,
                delay: BTreeMap::new(),
            },
        );
        if self.may_run(attempt) {
            self.set_runnable(attempt);
        } else {
            self.waiting.insert((submission_seq, attempt));
        }
        Ok(Decisions::default())
    }

    /// Whether the attempt fits its queues' and its user's running limits.
    fn may_run(&self, attempt: ApplicationAttemptId) -> bool {
        let Some(app) = self.apps.get(&attempt) else {
            return false;
        };
        if !self.tree.may_run(app.leaf) {
            return false;
        }
        match self.tree.user_max_running(&app.user) {
            None => true,
            Some(max) => self.running_by_user.get(&app.user).copied().unwrap_or(0) < max,
        }
    }

    fn set_runnable(&mut self, attempt: ApplicationAttemptId) {
        let Some(app) = self.apps.get_mut(&attempt) else {
            return;
        };
        if app.runnable {
            return;
        }
        app.runnable = true;
        let leaf = app.leaf;
        *self.running_by_user.entry(app.user.clone()).or_default() += 1;
        self.tree.count_running(leaf, true);
        self.refresh_app(attempt);
    }

    /// Makes waiting attempts runnable, oldest first, while limits allow.
    fn promote_waiting(&mut self) {
        if self.waiting.is_empty() {
            return;
        }
        let candidates: Vec<(u64, ApplicationAttemptId)> = self.waiting.iter().copied().collect();
        for entry in candidates {
            if self.may_run(entry.1) {
                self.waiting.remove(&entry);
                self.set_runnable(entry.1);
            }
        }
    }

    pub(super) fn remove_app(
        &mut self,
        attempt: ApplicationAttemptId,
    ) -> Result<Decisions, SchedulerError> {
        let Some(app) = self.apps.get(&attempt) else {
            return Err(SchedulerError::UnknownAttempt(attempt));
        };
        let live: Vec<ContainerId> = app.containers.iter().copied().collect();
        let mut decisions = Decisions::default();
        for container in live {
            if let Some(done) = self.finish_container(
                container,
                CompletionCause::ApplicationFinished,
                exit_status::ABORTED,
                format!("application attempt {attempt} finished; the container is stopped"),
            ) {
                decisions.node_actions.push(NodeAction::KillContainer {
                    node: done.node.clone(),
                    container,
                });
                decisions.completed.push(done);
            }
        }
        // Leave the serving order, then the queue.
        if let Some(app) = self.apps.get_mut(&attempt) {
            app.asks = AskTable::default();
            app.parked = false;
        }
        self.refresh_app(attempt);
        if let Some(app) = self.apps.remove(&attempt) {
            self.waiting.remove(&(app.submission_seq, attempt));
            if app.runnable {
                self.tree.count_running(app.leaf, false);
                if let Some(n) = self.running_by_user.get_mut(&app.user) {
                    *n = n.saturating_sub(1);
                    if *n == 0 {
                        self.running_by_user.remove(&app.user);
                    }
                }
            }
            let q = &mut self.tree.queues[app.leaf];
            q.apps.remove(&attempt);
            q.forget_user_app(&app.user);
            self.tree.refresh_path(app.leaf);
            if app.runnable {
                self.promote_waiting();
            }
        }
        Ok(decisions)
    }

    /// Replaces the queue tree, the delay-scheduling rule and the
    /// per-heartbeat caps, all or nothing. Every attempt must find its leaf
    /// again (by full path; leaves created on demand are created again)
    /// and the settings must be valid; otherwise the new configuration is
    /// refused and the old one stays.
    pub(super) fn reconfigure(
        &mut self,
        queues: QueueTreeConfig,
        locality: LocalityDelay,
        heartbeat: HeartbeatAssignment,
    ) -> Result<Decisions, SchedulerError> {
        validate_locality(&locality)
            .and_then(|()| validate_heartbeat(&heartbeat))
            .map_err(|e| SchedulerError::InvalidQueues(e.to_string()))?;
        let mut tree = QueueTree::build(queues.clone(), self.capacity)
            .map_err(SchedulerError::InvalidQueues)?;
        let mut leaves: BTreeMap<ApplicationAttemptId, QueueIdx> = BTreeMap::new();
        for (attempt, app) in &self.apps {
            let leaf = match tree.by_path.get(&app.queue) {
                Some(&idx) if tree.queues[idx].is_leaf() => idx,
                Some(_) => {
                    return Err(SchedulerError::InvalidQueues(format!(
                        "queue {} holds applications ({attempt}) and cannot become a parent queue",
                        app.queue
                    )))
                }
                None if self.tree.queues[app.leaf].dynamic => tree
                    .create_leaf(&app.queue)
                    .map_err(SchedulerError::InvalidQueues)?,
                None => {
                    return Err(SchedulerError::InvalidQueues(format!(
                        "queue {} holds applications ({attempt}) and is missing from the new configuration",
                        app.queue
                    )))
                }
            };
            leaves.insert(*attempt, leaf);
        }
        // Accepted: move every attempt over, then rebuild the orders.
        for (attempt, app) in self.apps.iter_mut() {
            let leaf = leaves[attempt];
            app.leaf = leaf;
            app.active_key = None;
            app.counted_active = false;
            app.parked = false;
            let am = app
                .am_container
                .and_then(|c| self.containers.get(&c))
                .map_or(Resource::ZERO, |c| c.resource);
            let q = &mut tree.queues[leaf];
            q.apps.insert(*attempt);
            q.users.entry(app.user.clone()).or_default().apps += 1;
            tree.charge(leaf, &app.user, app.used, true, false);
            let q = &mut tree.queues[leaf];
            q.am_used += am;
            if let Some(u) = q.users.get_mut(&app.user) {
                u.am_used += am;
            }
            if app.runnable {
                tree.count_running(leaf, true);
            }
        }
        self.tree = tree;
        self.config.queues = queues;
        self.config.locality = locality;
        self.config.heartbeat = heartbeat;
        let attempts: Vec<ApplicationAttemptId> = self.apps.keys().copied().collect();
        for attempt in attempts {
            self.refresh_app(attempt);
        }
        self.tree.refresh_all();
        self.promote_waiting();
        Ok(Decisions::default())
    }

    /// Gives the attempt a new application priority and re-files it in its
    /// leaf's serving order.
    pub(super) fn update_priority(
        &mut self,
        attempt: ApplicationAttemptId,
        priority: i32,
    ) -> Result<Decisions, SchedulerError> {
        let Some(app) = self.apps.get_mut(&attempt) else {
            return Err(SchedulerError::UnknownAttempt(attempt));
        };
        app.priority = priority;
        self.refresh_app(attempt);
        Ok(Decisions::default())
    }

    /// Moves the attempt to another leaf with everything it holds: its
    /// usage (the AM container's also as AM usage) leaves the old leaf and
    /// its ancestors and is charged to the new ones, its user's counts
    /// follow, and it is filed in the new leaf's serving order with its
    /// asks. A runnable attempt stays runnable (Hadoop's move checks the
    /// target's application limits before, in the RM); a waiting one waits
    /// for the new leaf's limits. Moving to the leaf it is in changes
    /// nothing.
    pub(super) fn move_app(
        &mut self,
        attempt: ApplicationAttemptId,
        queue: String,
    ) -> Result<Decisions, SchedulerError> {
        if !self.apps.contains_key(&attempt) {
            return Err(SchedulerError::UnknownAttempt(attempt));
        }
        let dest = self
            .resolve_leaf(&queue)
            .map_err(|reason| SchedulerError::UnknownQueue {
                attempt,
                queue: queue.clone(),
                reason,
            })?;
        let Some(app) = self.apps.get_mut(&attempt) else {
            return Err(SchedulerError::UnknownAttempt(attempt));
        };
        let source = app.leaf;
        if dest == source {
            return Ok(Decisions::default());
        }
        // Leave the old leaf's serving order and active-user counts.
        let key = app.active_key.take();
        let counted = std::mem::replace(&mut app.counted_active, false);
        app.parked = false;
        let user = app.user.clone();
        let used = app.used;
        let runnable = app.runnable;
        let am = app
            .am_container
            .and_then(|c| self.containers.get(&c))
            .map_or(Resource::ZERO, |c| c.resource);
        let q = &mut self.tree.queues[source];
        if let Some(key) = key {
            q.active_apps.remove(&(key, attempt));
        }
        if counted {
            q.count_active_app(&user, false);
        }
        // Usage: the AM container's part as AM usage, the rest as plain.
        self.tree.charge(source, &user, am, false, true);
        self.tree.charge(source, &user, used - am, false, false);
        let q = &mut self.tree.queues[source];
        q.apps.remove(&attempt);
        q.forget_user_app(&user);
        if runnable {
            self.tree.count_running(source, false);
        }
        // Join the new leaf.
        let path = self.tree.queues[dest].path.clone();
        let q = &mut self.tree.queues[dest];
        q.apps.insert(attempt);
        q.users.entry(user.clone()).or_default().apps += 1;
        self.tree.charge(dest, &user, am, true, true);
        self.tree.charge(dest, &user, used - am, true, false);
        if runnable {
            self.tree.count_running(dest, true);
        }
        if let Some(app) = self.apps.get_mut(&attempt) {
            app.leaf = dest;
            app.queue = path;
        }
        self.tree.refresh_path(source);
        self.refresh_app(attempt);
        self.tree.refresh_path(dest);
        self.promote_waiting();
        Ok(Decisions::default())
    }

    /// Files the attempt in its leaf's serving set under a fresh key while
    /// it is runnable, not parked and has outstanding asks, and takes it
    /// out otherwise; then re-files the queues above it.
    pub(super) fn refresh_app(&mut self, attempt: ApplicationAttemptId) {
        let Some(app) = self.apps.get(&attempt) else {
            return;
        };
        let leaf = app.leaf;
        if app.runnable && app.asks.is_active() && app.asks.located_rows_count() > 0 {
            self.located_apps.insert(attempt);
        } else {
            self.located_apps.remove(&attempt);
        }
        let active = app.runnable && app.asks.is_active();
        let want = (active && !app.parked).then(|| {
            self.tree
                .app_key(leaf, app.priority, app.submission_seq, app.used)
        });
        let have = app.active_key;
        let counted = app.counted_active;
        if want == have && counted == active {
            if self.tree.queue_keys_follow_usage() {
                self.tree.refresh_path(leaf);
            }
            return;
        }
        let user = app.user.clone();
        let q = &mut self.tree.queues[leaf];
        if want != have {
            if let Some(old) = have {
                q.active_apps.remove(&(old, attempt));
            }
            if let Some(new) = want {
                q.active_apps.insert((new, attempt));
            }
        }
        if counted != active {
            q.count_active_app(&user, active);
        }
        if let Some(app) = self.apps.get_mut(&attempt) {
            app.active_key = want;
            app.counted_active = active;
        }
        self.tree.refresh_path(leaf);
    }
}
