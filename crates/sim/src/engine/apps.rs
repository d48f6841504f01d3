//! The simulated ApplicationMasters: an application arrives and submits
//! an attempt (with its AM's ask), the AM starts and heartbeats (takes
//! new containers and completions, runs tasks phase by phase, sends the
//! request rows that changed), and the application finishes or its
//! attempt fails and a new one starts.

use spindle_scheduler::{Input, ResourceAsk, ANY};

use super::{AppState, Engine, Ev, Role, TaskState, AM_SLOT};
use crate::askbook::{AskBook, ReqKey};
use crate::error::SimError;
use crate::model::AppKind;

impl Engine<'_> {
    fn start_waiting(&mut self, a: usize, t: usize) {
        let app = &mut self.apps[a];
        let plan = app.plans[t];
        app.tasks[t] = TaskState::Waiting;
        app.book.add(t, app.keys[t], plan.locality.clone());
        app.waiting_since.insert(t, self.now);
        self.waiting.insert((self.now, a, t));
    }

    fn stop_waiting(&mut self, a: usize, slot: usize) {
        if let Some(since) = self.apps[a].waiting_since.remove(&slot) {
            self.waiting.remove(&(since, a, slot));
        }
    }

    pub(super) fn arrive(&mut self, a: usize) -> Result<(), SimError> {
        self.active.insert(a);
        self.apps[a].attempt = 1;
        self.submit_attempt(a)
    }

    fn submit_attempt(&mut self, a: usize) -> Result<(), SimError> {
        let job = &self.w.jobs[a];
        let attempt = self.apps[a].attempt_id();
        self.feed(Input::AppAdded {
            attempt,
            queue: job.queue.clone(),
            user: job.user.clone(),
            priority: job.priority,
            unmanaged_am: job.unmanaged_am,
        })?;
        if let Some(r) = self.sched.app(&attempt) {
            self.apps[a].queue_path = r.queue;
        }
        let app = &mut self.apps[a];
        app.am_container = None;
        if job.unmanaged_am {
            app.state = AppState::WaitingAm;
            return self.am_launched(a, attempt.attempt_id);
        }
        app.state = AppState::WaitingAm;
        app.waiting_since.insert(AM_SLOT, self.now);
        self.waiting.insert((self.now, a, AM_SLOT));
        self.feed(Input::AsksUpdated {
            attempt,
            asks: vec![ResourceAsk::new(0, ANY, job.am_resource, 1)],
            releases: Vec::new(),
            blacklist_add: Vec::new(),
            blacklist_remove: Vec::new(),
        })?;
        self.pass()
    }

    pub(super) fn am_launched(&mut self, a: usize, attempt: i32) -> Result<(), SimError> {
        let app = &mut self.apps[a];
        if app.attempt != attempt || app.state != AppState::WaitingAm {
            return Ok(());
        }
        app.state = AppState::Running;
        app.am_start = self.now;
        app.first_am_start.get_or_insert(self.now);
        self.activate_phase(a);
        self.am_heartbeat(a, attempt)
    }

    /// Makes the current phase's unfinished tasks ask (or wait for their
    /// request delay).
    fn activate_phase(&mut self, a: usize) {
        let (lo, hi) = self.apps[a]
            .phases
            .get(self.apps[a].phase)
            .copied()
            .unwrap_or((0, 0));
        let mut left = 0;
        for t in lo..hi {
            let app = &mut self.apps[a];
            if app.tasks[t] == TaskState::Done {
                continue;
            }
            left += 1;
            if app.tasks[t] != TaskState::Blocked {
                continue;
            }
            let delay = app.plans[t].request_delay_ms;
            if delay > 0 && self.now < app.am_start + delay {
                app.tasks[t] = TaskState::Delayed;
                app.delayed.push(t);
            } else {
                self.start_waiting(a, t);
            }
        }
        self.apps[a].phase_left = left;
    }

    pub(super) fn am_heartbeat(&mut self, a: usize, attempt: i32) -> Result<(), SimError> {
        if self.apps[a].attempt != attempt || self.apps[a].state != AppState::Running {
            return Ok(());
        }
        let service_lifetime = match self.w.jobs[a].kind {
            AppKind::Batch => None,
            AppKind::Service { lifetime_ms } => Some(lifetime_ms),
        };
        // Completed containers.
        let done = std::mem::take(&mut self.apps[a].inbox_done);
        for c in done {
            let app = &mut self.apps[a];
            let Some(t) = app.running.remove(&c.container) else {
                continue;
            };
            if c.exit_status == 0 && service_lifetime.is_none() {
                app.tasks[t] = TaskState::Done;
                app.left -= 1;
                app.phase_left = app.phase_left.saturating_sub(1);
                self.metrics.tasks_completed += 1;
            } else {
                if c.exit_status == 0 {
                    self.metrics.tasks_completed += 1;
                } else {
                    self.metrics.tasks_lost += 1;
                }
                app.tasks[t] = TaskState::Blocked;
                self.start_waiting(a, t);
            }
        }
        // New containers.
        let allocs = std::mem::take(&mut self.apps[a].inbox_alloc);
        for al in allocs {
            let n = self.node_index.get(&al.node).copied();
            let (host, rack) = match n {
                Some(n) => (self.nodes[n].id.host.clone(), self.nodes[n].rack.clone()),
                None => continue,
            };
            let key = ReqKey::new(al.priority, al.resource);
            let task = self.apps[a].book.allocated(key, al.locality, &host, &rack);
            let alive = self.containers.contains_key(&al.container);
            match (task, alive) {
                (Some(t), false) => {
                    // Lost before the AM saw it: the task asks again.
                    self.stop_waiting(a, t);
                    self.start_waiting(a, t);
                }
                (Some(t), true) => {
                    self.stop_waiting(a, t);
                    let node = n.unwrap_or_default();
                    let app = &mut self.apps[a];
                    app.tasks[t] = TaskState::Running(al.container);
                    app.running.insert(al.container, t);
                    app.ran_on.insert(node);
                    let duration = app.plans[t].duration_ms;
                    if let Some(c) = self.containers.get_mut(&al.container) {
                        c.role = Role::Task(t);
                    }
                    self.nodes[node].app_state.insert(a);
                    if let Some(d) = duration {
                        let end = self.now + self.w.cluster.launch_delay_ms + d;
                        self.push(end, Ev::ContainerExit(al.container));
                    }
                }
                (None, true) => {
                    if let Some(c) = self.containers.get_mut(&al.container) {
                        c.role = Role::Released;
                    }
                    self.apps[a].releases.push(al.container);
                }
                (None, false) => {}
            }
        }
        // Tasks whose request delay is over.
        if !self.apps[a].delayed.is_empty() {
            let start = self.apps[a].am_start;
            let delayed = std::mem::take(&mut self.apps[a].delayed);
            for t in delayed {
                if self.apps[a].tasks[t] != TaskState::Delayed {
                    continue;
                }
                if self.now >= start + self.apps[a].plans[t].request_delay_ms {
                    self.start_waiting(a, t);
                } else {
                    self.apps[a].delayed.push(t);
                }
            }
        }
        // Next phase.
        while service_lifetime.is_none()
            && self.apps[a].phase_left == 0
            && self.apps[a].phase + 1 < self.apps[a].phases.len()
        {
            self.apps[a].phase += 1;
            self.activate_phase(a);
        }
        let finished = match service_lifetime {
            None => self.apps[a].left == 0,
            Some(life) => self.now >= self.apps[a].first_am_start.unwrap_or(self.now) + life,
        };
        if finished {
            return self.finish(a, false);
        }
        let app = &mut self.apps[a];
        let asks = app.book.updates();
        let releases = std::mem::take(&mut app.releases);
        if !asks.is_empty() || !releases.is_empty() {
            let attempt_id = app.attempt_id();
            self.feed(Input::AsksUpdated {
                attempt: attempt_id,
                asks,
                releases,
                blacklist_add: Vec::new(),
                blacklist_remove: Vec::new(),
            })?;
            self.pass()?;
        }
        let next = self.now + self.w.cluster.am_heartbeat_interval_ms;
        self.push(next, Ev::AmHeartbeat { app: a, attempt });
        Ok(())
    }

    /// Forgets every request of the application's current attempt.
    fn clear_requests(&mut self, a: usize) {
        let slots: Vec<usize> = self.apps[a].waiting_since.keys().copied().collect();
        for slot in slots {
            self.stop_waiting(a, slot);
        }
        let app = &mut self.apps[a];
        app.book = AskBook::default();
        app.delayed.clear();
        app.inbox_alloc.clear();
        app.inbox_done.clear();
        app.releases.clear();
        app.running.clear();
    }

    /// The application ends (its AM unregisters, or it ran out of
    /// attempts).
    fn finish(&mut self, a: usize, failed: bool) -> Result<(), SimError> {
        let registered = matches!(self.apps[a].state, AppState::WaitingAm | AppState::Running);
        self.apps[a].state = AppState::Done { failed };
        self.apps[a].finish_ms = Some(self.now);
        self.apps_done += 1;
        self.active.remove(&a);
        self.clear_requests(a);
        let ran_on = std::mem::take(&mut self.apps[a].ran_on);
        for n in ran_on {
            self.nodes[n].app_state.remove(&a);
        }
        if registered {
            let attempt = self.apps[a].attempt_id();
            self.feed(Input::AppRemoved { attempt })?;
        }
        Ok(())
    }

    /// The attempt's AM died (its container was lost, or it crashed).
    pub(super) fn fail_attempt(&mut self, a: usize, counts: bool) -> Result<(), SimError> {
        if !matches!(self.apps[a].state, AppState::WaitingAm | AppState::Running) {
            return Ok(());
        }
        self.metrics.am_attempts_failed += 1;
        let attempt = self.apps[a].attempt_id();
        self.apps[a].state = AppState::Restarting;
        self.feed(Input::AppRemoved { attempt })?;
        self.clear_requests(a);
        let app = &mut self.apps[a];
        for t in app.tasks.iter_mut() {
            match *t {
                TaskState::Running(_) => {
                    *t = TaskState::Blocked;
                    self.metrics.tasks_lost += 1;
                }
                TaskState::Waiting | TaskState::Delayed => *t = TaskState::Blocked,
                TaskState::Blocked | TaskState::Done => {}
            }
        }
        app.am_container = None;
        if counts {
            app.counted_failures += 1;
        }
        if app.counted_failures >= self.w.cluster.max_am_attempts {
            // `finish` must not unregister an attempt the core dropped.
            return self.finish(a, true);
        }
        app.attempt += 1;
        self.submit_attempt(a)
    }
}
