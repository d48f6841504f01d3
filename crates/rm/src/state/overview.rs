//! Read-only questions the RM's web UI and REST lists ask that the
//! protocol reports do not answer: the cluster overview's totals, the
//! attempts of one application with where their AM containers ran, the
//! users of each queue, and the lean entries of a long list of
//! applications. Plain reports, no HTML or JSON (that is `web/`).

use std::collections::BTreeMap;

use spindle_common::ids::{ApplicationId, NodeId};
use spindle_common::resource::Resource;

use super::RmState;
use crate::log_aggregation::LogAggregationStatus;
use crate::model::access::Caller;
use crate::model::apps::{App, AppFilter, AppScope, AppState, FinalStatus};
use crate::model::launch::AppAccess;
use crate::model::refusal::Refusal;
use crate::model::reports::{AmContainer, AmTracking, AppView, AttemptReport, ClusterMetrics};
use crate::model::tracking::UNAVAILABLE;

/// One application of a list as the web shows it (`/ws/v1/cluster/apps`):
/// the fields of its report and AM container that Hadoop's `AppInfo`
/// shows, copied and nothing else (no ACLs, tokens or launch context),
/// so that a list of thousands keeps the owner of the state busy for as
/// little as possible. A caller without VIEW_APP gets what
/// [`crate::model::reports::AppReport`] shows it: host, RPC port, diagnostics
/// "N/A"/-1, no progress, usage -1, no attempt or AM container.
#[derive(Debug, Clone, PartialEq)]
pub struct AppListEntry {
    pub id: ApplicationId,
    pub user: String,
    pub name: String,
    pub queue: String,
    pub app_type: String,
    /// The tags, in order, joined with commas.
    pub tags: String,
    pub priority: i32,
    pub state: AppState,
    pub final_status: FinalStatus,
    pub diagnostics: String,
    pub start_ms: u64,
    pub launch_ms: u64,
    pub finish_ms: u64,
    pub am_host: String,
    pub am_rpc_port: i32,
    pub unmanaged_am: bool,
    /// The LIFETIME timeout: its expiry (epoch milliseconds) and the
    /// seconds left (see `AppReport::lifetime_remaining_s`).
    pub lifetime: Option<(u64, i64)>,
    pub progress: f32,
    pub used_containers: i32,
    pub used: Resource,
    /// Capability of RUNNING nodes (for the usage percentage).
    pub cluster_capability: Resource,
    /// Whether the caller has VIEW_APP.
    pub viewable: bool,
    /// The current attempt's state and AM URL (the tracking URLs are made
    /// of them); `None` without an attempt or when not viewable.
    pub am_tracking: Option<AmTracking>,
    /// The current attempt's AM container; `None` when not viewable.
    pub am: Option<AmContainer>,
    /// The log aggregation status (Hadoop's `AppInfo` shows it only to
    /// callers with VIEW_APP).
    pub log_aggregation: Option<LogAggregationStatus>,
}

/// A part of a list of applications ([`RmState::app_list`]).
#[derive(Debug, Clone, PartialEq)]
pub struct AppListPart {
    pub entries: Vec<AppListEntry>,
    /// Where the next part starts (after this application); `None` when
    /// this part is the last.
    pub next: Option<ApplicationId>,
}

impl AppListEntry {
    /// The entry of a full view (one application's `/apps/{id}`).
    pub fn of_view(view: &AppView) -> AppListEntry {
        let (r, a) = (&view.report, &view.report.app);
        AppListEntry {
            id: a.id,
            user: a.user.clone(),
            name: a.name.clone(),
            queue: a.queue.clone(),
            app_type: a.app_type.clone(),
            tags: joined_tags(a.tags.iter()),
            priority: a.priority,
            state: a.state,
            final_status: a.final_status,
            diagnostics: a.diagnostics.clone(),
            start_ms: a.start_ms,
            launch_ms: a.launch_ms,
            finish_ms: a.finish_ms,
            am_host: a.am_host.clone(),
            am_rpc_port: a.am_rpc_port,
            unmanaged_am: a.unmanaged_am,
            lifetime: a
                .lifetime
                .map(|l| (l.expiry_wall_ms, r.lifetime_remaining_s)),
            progress: r.progress,
            used_containers: r.used_containers,
            used: r.used,
            cluster_capability: r.cluster_capability,
            viewable: r.viewable,
            am_tracking: r.am_tracking.clone(),
            am: view.am.clone(),
            log_aggregation: r.log_aggregation.filter(|_| r.viewable),
        }
    }
}

fn joined_tags<'a>(tags: impl Iterator<Item = &'a String>) -> String {
    let mut out = String::new();
    for (i, t) in tags.enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(t);
    }
    out
}

/// The cluster at a glance, as the UI's overview shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterOverview {
    /// Nodes by state.
    pub nodes: ClusterMetrics,
    /// Capability of RUNNING nodes.
    pub capability: Resource,
    /// What the scheduler has allocated.
    pub used: Resource,
    /// Containers the scheduler has allocated.
    pub containers: i64,
    /// Applications this RM remembers, by state (every state, in Hadoop's order).
    pub apps_by_state: Vec<(AppState, usize)>,
}

/// An attempt with the node its AM container ran on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptOverview {
    pub report: AttemptReport,
    pub am_node: Option<NodeId>,
    /// The AM node's HTTP address, while the RM knows the node.
    pub am_node_http_address: Option<String>,
}

/// A user with unfinished applications in a leaf queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueUser {
    pub user: String,
    /// Unfinished applications of the user in the queue.
    pub apps: usize,
    /// Of those, RUNNING.
    pub running: usize,
}

impl RmState {
    /// The cluster's nodes, resources and applications at a glance.
    pub fn overview_totals(&self) -> ClusterOverview {
        let nodes = self.cluster.nodes();
        // What the scheduler has allocated (Hadoop's allocatedMB and
        // containersAllocated), not what the NodeManagers last reported.
        let allocated = self.cluster.scheduler().cluster();
        let mut counts: BTreeMap<AppState, usize> = BTreeMap::new();
        for app in self.apps.all() {
            *counts.entry(app.state).or_default() += 1;
        }
        ClusterOverview {
            nodes: self.cluster_metrics(),
            capability: nodes.cluster_capability(),
            used: allocated.used,
            containers: allocated.containers as i64,
            apps_by_state: AppState::ALL
                .into_iter()
                .map(|s| (s, counts.get(&s).copied().unwrap_or(0)))
                .collect(),
        }
    }

    /// Every attempt of the application, oldest first, with where its AM
    /// container ran; needs VIEW_APP, as [`RmState::attempts_of`].
    pub fn attempts_with_am_nodes(
        &self,
        app: &ApplicationId,
        caller: &Caller,
    ) -> Result<Vec<AttemptOverview>, Refusal> {
        let reports = self.attempts_of(app, caller)?;
        Ok(reports
            .into_iter()
            .map(|report| {
                let am_node = self
                    .attempts
                    .get(&report.id)
                    .and_then(|a| a.am_node.clone());
                let am_node_http_address = am_node
                    .as_ref()
                    .and_then(|n| self.cluster.nodes().get(n))
                    .map(|n| n.http_address());
                AttemptOverview {
                    report,
                    am_node,
                    am_node_http_address,
                }
            })
            .collect())
    }

    /// The applications `filter` selects whose final status is
    /// `final_status` (any when `None`; Hadoop checks it after the limit),
    /// in id order, as `caller` sees them: what [`RmState::app_views`]
    /// reports, as lean entries, copied only for the applications kept.
    ///
    /// One part of the list at a time: the first `max` applications
    /// selected after `after` (from the start when `None`), so that a long
    /// list is asked in several short queries and the owner of the state
    /// answers heartbeats between them. Asking again from
    /// [`AppListPart::next`] until it is `None` lists every application
    /// once, in id order (as Hadoop's, the whole list is no atomic
    /// snapshot: applications may change between the parts).
    pub fn app_list(
        &self,
        filter: &AppFilter,
        final_status: Option<FinalStatus>,
        caller: &Caller,
        after: Option<ApplicationId>,
        max: usize,
    ) -> AppListPart {
        let selected = self.apps.list(filter);
        let from = after.map_or(0, |id| selected.partition_point(|a| a.id <= id));
        let rest = selected.get(from..).unwrap_or_default();
        let max = max.max(1);
        let (part, next) = if rest.len() > max {
            (&rest[..max], Some(rest[max - 1].id))
        } else {
            (rest, None)
        };
        AppListPart {
            entries: self.app_entries(part, filter.scope, final_status, caller),
            next,
        }
    }

    fn app_entries(
        &self,
        selected: &[&App],
        scope: AppScope,
        final_status: Option<FinalStatus>,
        caller: &Caller,
    ) -> Vec<AppListEntry> {
        let capability = self.cluster.nodes().cluster_capability();
        let mut administers: BTreeMap<&str, bool> = BTreeMap::new();
        let mut http: BTreeMap<&NodeId, Option<String>> = BTreeMap::new();
        let mut out = Vec::with_capacity(selected.len());
        for &app in selected {
            if scope == AppScope::Own && app.user != caller.user {
                continue;
            }
            if final_status.is_some_and(|f| f != app.final_status) {
                continue;
            }
            let viewable = self
                .access
                .may_access_with(caller, AppAccess::View, app, |queue| {
                    *administers.entry(app.queue.as_str()).or_insert_with(|| {
                        self.queues
                            .may_administer_app(queue, &caller.user, &caller.groups)
                    })
                });
            if scope == AppScope::Viewable && !viewable {
                continue;
            }
            let attempt = if viewable {
                self.current_attempt(&app.id)
            } else {
                None
            };
            let (used_containers, used) = self.attempt_usage(attempt);
            let progress = Self::report_progress(app, attempt);
            let am = attempt.and_then(|a| {
                let (id, node) = (a.am_container?, a.am_node.as_ref()?);
                let node_http_address = http
                    .entry(node)
                    .or_insert_with(|| self.cluster.nodes().get(node).map(|n| n.http_address()))
                    .clone();
                Some(AmContainer {
                    id,
                    node: node.clone(),
                    node_http_address,
                })
            });
            let hidden = |s: &String| {
                if viewable {
                    s.clone()
                } else {
                    UNAVAILABLE.to_string()
                }
            };
            out.push(AppListEntry {
                id: app.id,
                user: app.user.clone(),
                name: app.name.clone(),
                queue: app.queue.clone(),
                app_type: app.app_type.clone(),
                tags: joined_tags(app.tags.iter()),
                priority: app.priority,
                state: app.state,
                final_status: app.final_status,
                diagnostics: hidden(&crate::model::reports::shown_diagnostics(app, attempt)),
                start_ms: app.start_ms,
                launch_ms: app.launch_ms,
                finish_ms: app.finish_ms,
                am_host: hidden(&app.am_host),
                am_rpc_port: if viewable { app.am_rpc_port } else { -1 },
                unmanaged_am: app.unmanaged_am,
                lifetime: app
                    .lifetime
                    .map(|l| (l.expiry_wall_ms, self.lifetime_remaining_s(app))),
                progress: if viewable { progress } else { 0.0 },
                used_containers: if viewable { used_containers } else { -1 },
                used: if viewable {
                    used
                } else {
                    Resource::new(-1, -1)
                },
                cluster_capability: capability,
                viewable,
                am_tracking: attempt.map(|a| AmTracking {
                    state: a.state,
                    url: a.tracking_url.clone(),
                }),
                am,
                // As the application report: with an attempt, to callers with VIEW_APP.
                log_aggregation: (viewable && attempt.is_some())
                    .then(|| self.log_aggregation_status(&app.id)),
            });
        }
        out
    }

    /// The leaf queue (full path) an application's queue name stands for:
    /// the scheduler's own queue when it has one (it knows the queues
    /// placement created on demand, which the queue file does not), else
    /// the queue file's resolution of a short name. `None` for a parent or
    /// an unknown name.
    pub fn leaf_of(&self, queue: &str) -> Option<String> {
        match self.cluster.scheduler().queue(queue) {
            Some(q) if q.leaf => Some(q.path),
            Some(_) => None,
            None => self.queues.tree.resolve_leaf(queue),
        }
    }

    /// Per leaf queue (full path), the users with unfinished applications
    /// there, by user name (queues placement created on demand included).
    /// Applications whose queue names no leaf (any more) are left out.
    pub fn active_queue_users(&self) -> BTreeMap<String, Vec<QueueUser>> {
        let mut by_queue: BTreeMap<String, BTreeMap<String, QueueUser>> = BTreeMap::new();
        // The leaf each queue name resolves to, asked once per name.
        let mut leaves: BTreeMap<&str, Option<String>> = BTreeMap::new();
        for app in self.apps.all().filter(|a| !a.state.is_final()) {
            let leaf = leaves
                .entry(app.queue.as_str())
                .or_insert_with(|| self.leaf_of(&app.queue));
            let Some(leaf) = leaf.clone() else {
                continue;
            };
            let user = by_queue
                .entry(leaf)
                .or_default()
                .entry(app.user.clone())
                .or_insert_with(|| QueueUser {
                    user: app.user.clone(),
                    apps: 0,
                    running: 0,
                });
            user.apps += 1;
            if app.state == AppState::Running {
                user.running += 1;
            }
        }
        by_queue
            .into_iter()
            .map(|(q, users)| (q, users.into_values().collect()))
            .collect()
    }
}
