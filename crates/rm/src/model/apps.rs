//! Applications as the RM records them: ids, submission, state and kill.
//!
//! Pure state like `nodes`: time comes in as an argument (the wall clock's:
//! every time here is one Hadoop reports). Attempts and the AM container
//! build on this in the state's application lifecycle.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use spindle_common::ids::ApplicationId;
use spindle_common::resource::Resource;
pub use spindle_common::states::{AppState, FinalStatus};

use crate::model::launch::AppAcls;
use crate::model::limits::Limits;
use crate::model::refusal::Refusal;
use crate::model::submission::Submission;

/// One application.
#[derive(Debug, Clone, PartialEq)]
pub struct App {
    pub id: ApplicationId,
    pub user: String,
    pub name: String,
    pub queue: String,
    pub app_type: String,
    pub tags: BTreeSet<String>,
    pub priority: i32,
    pub am_resource: Resource,
    pub max_attempts: i32,
    pub unmanaged_am: bool,
    pub keep_containers: bool,
    /// The application's own VIEW_APP/MODIFY_APP ACLs, from its AM launch
    /// context (see [`crate::model::access`]).
    pub acls: AppAcls,
    pub state: AppState,
    pub final_status: FinalStatus,
    pub diagnostics: String,
    pub submit_ms: u64,
    pub start_ms: u64,
    pub launch_ms: u64,
    pub finish_ms: u64,
    pub progress: f32,
    pub am_host: String,
    pub am_rpc_port: i32,
    pub tracking_url: String,
    /// The LIFETIME timeout, once set (`updateApplicationTimeouts`).
    pub lifetime: Option<Lifetime>,
}

/// When an application's lifetime ends: the wall-clock time Hadoop reports
/// (and the client gave), and the same instant on the monotonic clock, which
/// the lifetime monitor goes by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Lifetime {
    pub expiry_wall_ms: u64,
    pub deadline_mono_ms: u64,
}

/// Which applications `getApplications` considers
/// (`ApplicationsRequestScope`): all, those the caller may view, or its own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AppScope {
    #[default]
    All,
    Viewable,
    Own,
}

/// Filters of `getApplications`; empty sets mean "any".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AppFilter {
    pub scope: AppScope,
    pub states: BTreeSet<AppState>,
    pub types: BTreeSet<String>,
    pub queues: BTreeSet<String>,
    pub users: BTreeSet<String>,
    pub tags: BTreeSet<String>,
    pub name: Option<String>,
    pub limit: Option<usize>,
    pub started: Option<(u64, u64)>,
    pub finished: Option<(u64, u64)>,
}

/// All applications this RM remembers.
#[derive(Debug)]
pub struct AppTable {
    cluster_ts: i64,
    next_id: i32,
    apps: BTreeMap<ApplicationId, App>,
    completed: VecDeque<ApplicationId>,
    max_completed: usize,
    /// Applications dropped from the table since the last `take_evicted`.
    evicted: Vec<ApplicationId>,
    /// Applications added, changed or dropped since the last `take_changed`
    /// (for the state store's bookkeeping).
    changed: BTreeSet<ApplicationId>,
    max_allocation: Resource,
    global_max_attempts: i32,
    /// Applications' diagnostics are kept to this (see [`crate::model::limits`]).
    limits: Limits,
}

impl AppTable {
    pub fn new(
        cluster_ts: i64,
        max_completed: usize,
        max_allocation: Resource,
        global_max_attempts: i32,
    ) -> Self {
        AppTable {
            cluster_ts,
            next_id: 0,
            apps: BTreeMap::new(),
            completed: VecDeque::new(),
            max_completed,
            evicted: Vec::new(),
            changed: BTreeSet::new(),
            max_allocation,
            global_max_attempts,
            limits: Limits::default(),
        }
    }

    /// The table with `limits` (Hadoop's defaults otherwise).
    pub fn with_limits(mut self, limits: Limits) -> AppTable {
        self.limits = limits;
        self
    }

    /// `yarn.scheduler.maximum-allocation-*`: the most one container may have.
    pub fn max_allocation(&self) -> Resource {
        self.max_allocation
    }

    /// `getNewApplication`: the next id. Ids count up from 1 for this RM's lifetime.
    pub fn new_id(&mut self) -> ApplicationId {
        self.next_id += 1;
        ApplicationId::new(self.cluster_ts, self.next_id)
    }

    /// `submitApplication`. Submitting an id that is already known succeeds without
    /// change, as Hadoop does (YarnClient re-submits after a lost answer).
    pub fn submit(&mut self, sub: Submission, user: &str, wall_ms: u64) -> Result<&App, Refusal> {
        if self.apps.contains_key(&sub.id) {
            return Ok(&self.apps[&sub.id]);
        }
        if sub.id.cluster_timestamp != self.cluster_ts || sub.id.id < 1 || sub.id.id > self.next_id
        {
            return Err(Refusal::UnknownApplicationId {
                id: sub.id,
                cluster_ts: self.cluster_ts,
            });
        }
        let max = self.max_allocation;
        let r = sub.am_resource;
        if r.memory_mb < 0 || r.vcores < 0 {
            return Err(Refusal::NegativeAmResource { requested: r });
        }
        if r.memory_mb > max.memory_mb || r.vcores > max.vcores {
            return Err(Refusal::AmResourceAboveMaximum {
                requested: r,
                maximum: max,
            });
        }
        let max_attempts = if sub.max_attempts <= 0 || sub.max_attempts > self.global_max_attempts {
            self.global_max_attempts
        } else {
            sub.max_attempts
        };
        let app = App {
            id: sub.id,
            user: user.to_string(),
            name: sub.name,
            queue: sub.queue,
            app_type: sub.app_type,
            tags: sub.tags,
            priority: sub.priority.unwrap_or(0),
            am_resource: sub.am_resource,
            max_attempts,
            unmanaged_am: sub.unmanaged_am,
            keep_containers: sub.keep_containers,
            acls: AppAcls::new(),
            state: AppState::Submitted,
            final_status: FinalStatus::Undefined,
            diagnostics: String::new(),
            submit_ms: wall_ms,
            start_ms: wall_ms,
            launch_ms: 0,
            finish_ms: 0,
            progress: 0.0,
            am_host: "N/A".into(),
            am_rpc_port: -1,
            tracking_url: String::new(),
            lifetime: None,
        };
        self.apps.insert(sub.id, app);
        self.changed.insert(sub.id);
        Ok(&self.apps[&sub.id])
    }

    /// SUBMITTED → ACCEPTED once the queue took the application.
    pub fn accept(&mut self, id: ApplicationId) {
        if let Some(app) = self.apps.get_mut(&id) {
            if app.state == AppState::Submitted {
                app.state = AppState::Accepted;
                self.changed.insert(id);
            }
        }
    }

    /// Ends an application that a queue refused or that failed.
    pub fn fail(&mut self, id: ApplicationId, diagnostics: String, wall_ms: u64) {
        self.finish(
            id,
            AppState::Failed,
            FinalStatus::Failed,
            diagnostics,
            wall_ms,
        );
    }

    /// The AM unregistered with a final status: the application is reported FINISHED
    /// with that status (Hadoop maps FINISHING to FINISHED) while its containers wind
    /// down.
    pub fn finish_by_am(
        &mut self,
        id: ApplicationId,
        state: AppState,
        status: FinalStatus,
        diagnostics: String,
        tracking_url: String,
        wall_ms: u64,
    ) {
        if let Some(app) = self.apps.get_mut(&id) {
            if !tracking_url.is_empty() {
                app.tracking_url = tracking_url;
                self.changed.insert(id);
            }
        }
        self.finish(id, state, status, diagnostics, wall_ms);
    }

    /// `forceKillApplication`: `None` when unknown, else whether the kill is complete
    /// (always, as nothing runs yet that must be stopped first).
    pub fn kill(&mut self, id: ApplicationId, diagnostics: String, wall_ms: u64) -> Option<bool> {
        let app = self.apps.get(&id)?;
        if !app.state.is_final() {
            self.finish(
                id,
                AppState::Killed,
                FinalStatus::Killed,
                diagnostics,
                wall_ms,
            );
        }
        Some(true)
    }

    fn finish(
        &mut self,
        id: ApplicationId,
        state: AppState,
        status: FinalStatus,
        diagnostics: String,
        wall_ms: u64,
    ) {
        let Some(app) = self.apps.get_mut(&id) else {
            return;
        };
        if app.state.is_final() {
            return;
        }
        app.state = state;
        app.final_status = status;
        app.diagnostics = self.limits.bound_diagnostics(diagnostics);
        app.finish_ms = wall_ms;
        app.progress = 1.0;
        self.changed.insert(id);
        self.completed.push_back(id);
        while self.completed.len() > self.max_completed {
            if let Some(old) = self.completed.pop_front() {
                self.apps.remove(&old);
                self.changed.insert(old);
                self.evicted.push(old);
            }
        }
    }

    /// Puts back an application a state store held (finished ones in the
    /// order they finished), keeping the bound on finished applications.
    pub fn restore(&mut self, app: App) {
        let (id, done) = (app.id, app.state.is_final());
        self.apps.insert(id, app);
        self.changed.insert(id);
        if done {
            self.completed.push_back(id);
            while self.completed.len() > self.max_completed {
                if let Some(old) = self.completed.pop_front() {
                    self.apps.remove(&old);
                    self.changed.insert(old);
                    self.evicted.push(old);
                }
            }
        }
    }

    /// The applications dropped (past `max-completed-applications`) since
    /// the last call, for the RM to drop what it keeps about them.
    pub fn take_evicted(&mut self) -> Vec<ApplicationId> {
        std::mem::take(&mut self.evicted)
    }

    pub fn get(&self, id: &ApplicationId) -> Option<&App> {
        self.apps.get(id)
    }

    /// The application, for a change (noted for the state store).
    pub fn get_mut(&mut self, id: &ApplicationId) -> Option<&mut App> {
        let app = self.apps.get_mut(id)?;
        self.changed.insert(*id);
        Some(app)
    }

    /// The applications added, changed or dropped since the last call.
    pub fn take_changed(&mut self) -> BTreeSet<ApplicationId> {
        std::mem::take(&mut self.changed)
    }

    pub fn all(&self) -> impl Iterator<Item = &App> {
        self.apps.values()
    }

    /// Applications matching `filter`, in id order, at most `limit`.
    pub fn list(&self, filter: &AppFilter) -> Vec<&App> {
        let lower_tags: BTreeSet<String> = filter.tags.iter().map(|t| t.to_lowercase()).collect();
        let within =
            |range: Option<(u64, u64)>, t: u64| range.is_none_or(|(lo, hi)| t >= lo && t <= hi);
        self.apps
            .values()
            .filter(|a| filter.states.is_empty() || filter.states.contains(&a.state))
            .filter(|a| {
                filter.types.is_empty()
                    || filter
                        .types
                        .iter()
                        .any(|t| t.eq_ignore_ascii_case(&a.app_type))
            })
            .filter(|a| filter.queues.is_empty() || filter.queues.contains(&a.queue))
            .filter(|a| filter.users.is_empty() || filter.users.contains(&a.user))
            .filter(|a| {
                lower_tags.is_empty()
                    || a.tags
                        .iter()
                        .any(|t| lower_tags.contains(&t.to_lowercase()))
            })
            .filter(|a| filter.name.as_ref().is_none_or(|n| n == &a.name))
            .filter(|a| within(filter.started, a.start_ms))
            .filter(|a| within(filter.finished, a.finish_ms))
            .take(filter.limit.unwrap_or(usize::MAX))
            .collect()
    }

    pub fn count(&self, state: AppState) -> usize {
        self.apps.values().filter(|a| a.state == state).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> AppTable {
        AppTable::new(1000, 2, Resource::new(8192, 4), 2)
    }

    fn sub(id: ApplicationId) -> Submission {
        Submission {
            id,
            name: "job".into(),
            queue: "default".into(),
            app_type: "SPARK".into(),
            tags: BTreeSet::new(),
            priority: None,
            am_resource: Resource::new(1024, 1),
            max_attempts: 0,
            unmanaged_am: false,
            keep_containers: false,
        }
    }

    #[test]
    fn ids_count_up_and_only_issued_ids_submit() {
        let mut t = table();
        let a = t.new_id();
        assert_eq!(a.to_string(), "application_1000_0001");
        assert!(matches!(
            t.submit(sub(ApplicationId::new(1000, 5)), "u", 0),
            Err(Refusal::UnknownApplicationId { .. })
        ));
        assert!(matches!(
            t.submit(sub(ApplicationId::new(999, 1)), "u", 0),
            Err(Refusal::UnknownApplicationId { .. })
        ));
        let app = t.submit(sub(a), "alice", 10).expect("submit");
        assert_eq!(
            (app.state, app.user.as_str(), app.max_attempts),
            (AppState::Submitted, "alice", 2)
        );
        t.accept(a);
        // Resubmission of a known id is a no-op success.
        let again = t.submit(sub(a), "bob", 20).expect("resubmit");
        assert_eq!(
            (again.state, again.user.as_str()),
            (AppState::Accepted, "alice")
        );
    }

    #[test]
    fn oversized_am_is_refused() {
        let mut t = table();
        let id = t.new_id();
        let mut s = sub(id);
        s.am_resource = Resource::new(16384, 1);
        match t.submit(s, "u", 0) {
            Err(Refusal::AmResourceAboveMaximum { requested, maximum }) => {
                assert_eq!(
                    (requested, maximum),
                    (Resource::new(16384, 1), Resource::new(8192, 4))
                )
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn kill_is_final_and_idempotent() {
        let mut t = table();
        let id = t.new_id();
        t.submit(sub(id), "u", 0).expect("submit");
        assert_eq!(t.kill(id, "killed by user".into(), 5), Some(true));
        let app = t.get(&id).expect("app");
        assert_eq!(
            (app.state, app.final_status, app.finish_ms),
            (AppState::Killed, FinalStatus::Killed, 5)
        );
        assert_eq!(t.kill(id, "again".into(), 9), Some(true));
        assert_eq!(t.get(&id).map(|a| a.finish_ms), Some(5));
        assert_eq!(t.kill(ApplicationId::new(1000, 77), String::new(), 0), None);
    }

    #[test]
    fn completed_apps_are_bounded() {
        let mut t = table();
        let ids: Vec<_> = (0..3).map(|_| t.new_id()).collect();
        for id in &ids {
            t.submit(sub(*id), "u", 0).expect("submit");
            t.kill(*id, String::new(), 1);
        }
        assert!(t.get(&ids[0]).is_none(), "oldest completed app evicted");
        assert!(t.get(&ids[2]).is_some());
    }

    #[test]
    fn filters() {
        let mut t = AppTable::new(1000, 100, Resource::new(8192, 4), 2);
        let a = t.new_id();
        let b = t.new_id();
        t.submit(sub(a), "alice", 0).expect("a");
        let mut sb = sub(b);
        sb.queue = "etl".into();
        sb.app_type = "MAPREDUCE".into();
        sb.tags.insert("Nightly".into());
        t.submit(sb, "bob", 0).expect("b");
        t.accept(b);
        let ids = |f: &AppFilter| t.list(f).iter().map(|x| x.id).collect::<Vec<_>>();
        let mut f = AppFilter::default();
        assert_eq!(ids(&f), vec![a, b]);
        f.states.insert(AppState::Accepted);
        assert_eq!(ids(&f), vec![b]);
        let f = AppFilter {
            types: ["mapreduce".to_string()].into(),
            ..Default::default()
        };
        assert_eq!(ids(&f), vec![b]);
        let f = AppFilter {
            users: ["alice".to_string()].into(),
            ..Default::default()
        };
        assert_eq!(ids(&f), vec![a]);
        let f = AppFilter {
            tags: ["nightly".to_string()].into(),
            ..Default::default()
        };
        assert_eq!(ids(&f), vec![b]);
        let f = AppFilter {
            limit: Some(1),
            ..Default::default()
        };
        assert_eq!(ids(&f), vec![a]);
    }
}
