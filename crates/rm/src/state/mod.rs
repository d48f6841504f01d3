//! The RM's state, and the one place it changes: [`RmState::handle`].
//!
//! `handle` takes a [`Command`] with the time and calls the one method that
//! performs the whole operation, step by step; those methods live in this
//! module's files, one concern each:
//!
//! - `lifecycle`: applications and attempts (ids, submission, kill,
//!   priority, attempts started, launched, failed, retried, kept, ended;
//!   AM liveness);
//! - `moves`: moving an application to another queue, and its lifetime
//!   (application timeouts) set and enforced;
//! - `am_protocol`: registerApplicationMaster, allocate (with replay) and
//!   finishApplicationMaster;
//! - `heartbeat`: NodeManagers registering, heartbeating (container
//!   statuses, node work, master keys) and leaving;
//! - `admin`: refreshes and node resources;
//! - `decisions`: applying what the scheduler core decided;
//! - `queries`: the read-only questions handlers (and any other reader)
//!   ask, answered with domain reports;
//! - `overview`: the few more the web UI asks (cluster totals, attempts
//!   with their AM nodes, queue users);
//! - `log_aggregation`: NodeManagers' log aggregation reports, the nodes
//!   an application ran on, and its end (the time-out's start).
//!
//! The nodes and the scheduler core sit in [`Cluster`], which keeps the two
//! in step; tokens in [`TokenIssuer`]. Nothing here touches the network or
//! reads a clock: work for the network leaves as [`Effect`]s with the reply.

mod admin;
mod am_protocol;
pub mod build;
pub mod command;
mod decisions;
mod delegation;
mod heartbeat;
mod invariants;
mod lifecycle;
mod log_aggregation;
mod moves;
mod overview;
mod queries;
mod store;
mod tracked;

pub use overview::{AppListEntry, AppListPart, AttemptOverview, ClusterOverview, QueueUser};
pub use store::{RecoverySummary, RESTART_DIAGNOSTICS};

use std::collections::BTreeMap;

use spindle_common::ids::{ApplicationAttemptId, ApplicationId, ContainerId, NodeId};

use crate::acl::Acl;
use crate::cluster::nodes::NodeWork;
use crate::cluster::Cluster;
use crate::log_aggregation::{LogAggregationConf, LogAggregations};
use crate::model::access::AccessControl;
use crate::model::amrm::AllocateReply;
use crate::model::apps::AppTable;
use crate::model::attempts::{AppAttempts, Attempt};
use crate::model::delegation::{DelegationConf, DelegationTokens};
use crate::model::keys::TokenIssuer;
use crate::model::launch::{AmLaunchContext, Effect};
use crate::model::limits::Limits;
use crate::queue_files::QueueFile;
use crate::state::command::{Command, HeartbeatAnswer, Reply};
use crate::time::Now;
use tracked::Tracked;

/// Settings of the state that are read once at start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The RM's start time: ids' cluster timestamp.
    pub cluster_ts: i64,
    /// `yarn.acl.enable`: queue and application ACLs are checked (see
    /// [`crate::model::access`]).
    pub acl_enabled: bool,
    /// `yarn.cluster.max-application-priority` (default 0): submitted and
    /// updated application priorities above it are lowered to it
    /// (capacity scheduler; see [`QueueFile::application_priority`]);
    /// replaced by `refreshClusterMaxPriority`.
    pub max_application_priority: i32,
    /// `yarn.am.liveness-monitor.expiry-interval-ms`.
    pub am_expiry_ms: u64,
    /// Bounds on submissions, AM calls and diagnostics.
    pub limits: Limits,
    /// `yarn.resourcemanager.work-preserving-recovery.enabled` (read with
    /// the state store on): a restart keeps unfinished applications'
    /// current attempts and takes back what nodes still run for them.
    pub work_preserving: bool,
    /// `yarn.resourcemanager.work-preserving-recovery.scheduling-wait-ms`:
    /// after a work-preserving restart that recovered applications, nothing
    /// new is allocated for this long.
    pub scheduling_wait_ms: u64,
    /// Log aggregation status: `yarn.log-aggregation-enable` and its
    /// time-out (see [`crate::log_aggregation`]).
    pub log_aggregation: LogAggregationConf,
}

impl Settings {
    /// Hadoop's defaults.
    pub fn new(cluster_ts: i64) -> Settings {
        Settings {
            cluster_ts,
            acl_enabled: false,
            max_application_priority: 0,
            am_expiry_ms: 600_000,
            limits: Limits::default(),
            work_preserving: true,
            scheduling_wait_ms: 10_000,
            log_aggregation: LogAggregationConf::default(),
        }
    }
}

/// Everything the RM knows.
#[derive(Debug)]
pub struct RmState {
    settings: Settings,
    /// The wall-clock time of the latest command: what reports count an
    /// application's remaining lifetime from.
    last_wall_ms: u64,
    /// The nodes and the scheduler core, kept in step.
    cluster: Cluster,
    apps: AppTable,
    attempts: Tracked<ApplicationAttemptId, Attempt<AllocateReply>>,
    /// Per application: its AM launch context and attempt history.
    history: Tracked<ApplicationId, AppAttempts>,
    /// The queue configuration in force: the tree (also held by the
    /// scheduler), placement rules and ACLs; replaced by `refreshQueues`.
    queues: QueueFile,
    /// Who may do what: `yarn.acl.enable` and `yarn.admin.acl` (the latter
    /// replaced by `refreshAdminAcls`).
    access: AccessControl,
    tokens: TokenIssuer,
    /// RM delegation tokens (`getDelegationToken` and the rest).
    delegation: DelegationTokens,
    /// Heartbeat-borne instructions per node.
    node_work: BTreeMap<NodeId, NodeWork>,
    /// The last NORMAL heartbeat answer of each node, whole, for a node
    /// that repeats its heartbeat because the answer was lost: it must hear
    /// the same cleanups again (as Hadoop's `lastNodeHeartbeatResponse`).
    last_answers: BTreeMap<NodeId, HeartbeatAnswer>,
    /// Applications evicted from `apps` whose attempts are not all over
    /// yet; their records go once they are (see `forget_evicted`).
    evicted: Vec<ApplicationId>,
    /// Network work for the effect executor, handed out with each reply.
    outbox: Vec<Effect>,
    /// The state store's bookkeeping, when recovery is on (see `store.rs`).
    persist: Option<store::Persist>,
    /// Attempts that were running when the RM stopped and that recovery
    /// ended: their containers, reported by re-registering nodes, are
    /// orphans (killed, and kept from the scheduler until gone).
    restart_ended: std::collections::BTreeSet<ApplicationAttemptId>,
    /// Attempts a work-preserving restart kept: re-registering nodes'
    /// containers of theirs are taken back (see `heartbeat.rs`).
    recovered_attempts: std::collections::BTreeSet<ApplicationAttemptId>,
    /// Containers of recovered attempts that their AM released before a
    /// node reported them (Hadoop's pending-release cache): released as
    /// soon as they are taken back.
    pending_releases: std::collections::BTreeSet<ContainerId>,
    /// What NodeManagers report about aggregating applications' logs, per
    /// application and node (see `log_aggregation.rs` here and
    /// [`crate::log_aggregation`]); never stored.
    log_aggregation: LogAggregations,
    /// The first input the scheduler core refused: the RM sends only inputs
    /// its own records agree with, so a refusal means the two tables
    /// disagree (logged; [`RmState::check_invariants`] reports it).
    disagreement: Option<String>,
}

/// Whether an attempt that ends is its application's last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AppEnd {
    /// The application ends with it (finished, killed, attempts exhausted).
    Ends,
    /// Another attempt follows: the application stays on its nodes.
    Continues,
}

impl RmState {
    /// A state over `cluster` (normally without nodes yet) and `apps`
    /// (without applications), scheduling with `queues`; `admin_acl` is
    /// `yarn.admin.acl` as [`crate::acl::admin_acl`] reads it.
    pub fn new(
        settings: Settings,
        cluster: Cluster,
        apps: AppTable,
        queues: QueueFile,
        admin_acl: Acl,
        tokens: TokenIssuer,
    ) -> RmState {
        let access = AccessControl::new(settings.acl_enabled, admin_acl);
        let log_aggregation = LogAggregations::new(settings.log_aggregation);
        // Hadoop's settings, keys seeded from the cluster timestamp (a
        // simulation replays); the RM's build replaces it.
        let delegation = DelegationTokens::new(
            DelegationConf::default(),
            settings.cluster_ts,
            settings.cluster_ts as u64,
        );
        RmState {
            delegation,
            settings,
            cluster,
            apps,
            attempts: Tracked::default(),
            history: Tracked::default(),
            queues,
            access,
            tokens,
            node_work: BTreeMap::new(),
            last_answers: BTreeMap::new(),
            evicted: Vec::new(),
            outbox: Vec::new(),
            persist: None,
            restart_ended: Default::default(),
            recovered_attempts: Default::default(),
            pending_releases: Default::default(),
            log_aggregation,
            last_wall_ms: 0,
            disagreement: None,
        }
    }

    /// Performs `command` at `now`: the reply for the caller, and the
    /// network work it left for the effect executor.
    pub fn handle(&mut self, now: Now, command: Command) -> (Reply, Vec<Effect>) {
        self.last_wall_ms = self.last_wall_ms.max(now.wall_ms);
        let reply = match command {
            Command::NewApplication(_) => Reply::NewApplication(self.new_application()),
            Command::SubmitApplication(c) => {
                Reply::SubmitApplication(self.submit_application(now, c))
            }
            Command::KillApplication(c) => Reply::KillApplication(self.kill_application(now, c)),
            Command::UpdateApplicationPriority(c) => {
                Reply::UpdateApplicationPriority(self.update_application_priority(now, c))
            }
            Command::MoveApplication(c) => Reply::MoveApplication(self.move_application(now, c)),
            Command::UpdateApplicationTimeouts(c) => {
                Reply::UpdateApplicationTimeouts(self.update_application_timeouts(now, c))
            }
            Command::SignalContainer(c) => Reply::SignalContainer(self.signal_container(c)),
            Command::FailApplicationAttempt(c) => {
                Reply::FailApplicationAttempt(self.fail_application_attempt(now, c))
            }
            Command::RegisterApplicationMaster(c) => {
                Reply::RegisterApplicationMaster(self.register_application_master(now, c))
            }
            Command::Allocate(c) => Reply::Allocate(self.allocate(now, c)),
            Command::FinishApplicationMaster(c) => {
                Reply::FinishApplicationMaster(self.finish_application_master(now, c))
            }
            Command::RegisterNode(c) => Reply::RegisterNode(self.register_node(now, c)),
            Command::NodeHeartbeat(c) => Reply::NodeHeartbeat(self.node_heartbeat(now, c)),
            Command::UnregisterNode(c) => Reply::UnregisterNode(self.unregister_node(now, c)),
            Command::RefreshQueues(c) => Reply::RefreshQueues(self.refresh_queues(now, c)),
            Command::RefreshNodes(c) => {
                self.refresh_nodes(now, c);
                Reply::RefreshNodes
            }
            Command::RefreshAdminAcls(c) => {
                self.refresh_admin_acls(c);
                Reply::RefreshAdminAcls
            }
            Command::RefreshClusterMaxPriority(c) => {
                self.refresh_cluster_max_priority(c);
                Reply::RefreshClusterMaxPriority
            }
            Command::UpdateNodeResources(c) => {
                Reply::UpdateNodeResources(self.update_node_resources(now, c))
            }
            Command::Tick(_) => {
                self.tick(now);
                Reply::Tick
            }
            Command::GetDelegationToken(c) => {
                Reply::GetDelegationToken(self.get_delegation_token(now, c))
            }
            Command::RenewDelegationToken(c) => {
                Reply::RenewDelegationToken(self.renew_delegation_token(now, c))
            }
            Command::CancelDelegationToken(c) => {
                Reply::CancelDelegationToken(self.cancel_delegation_token(c))
            }
            Command::AmLaunched(c) => {
                self.am_launched(now, c.attempt);
                Reply::AmLaunched
            }
            Command::AmLaunchFailed(c) => {
                self.am_launch_failed(now, c);
                Reply::AmLaunchFailed
            }
        };
        self.forget_evicted();
        if self.persist.is_none() {
            // Nobody asks what changed without a store.
            self.take_changed();
        }
        (reply, std::mem::take(&mut self.outbox))
    }

    /// Drops the attempts and history of applications the application table
    /// evicted (past `yarn.resourcemanager.max-completed-applications`),
    /// once none of their attempts is still running: an unregistered AM's
    /// container may still be winding down, and its end must still reach
    /// its attempt.
    fn forget_evicted(&mut self) {
        let evicted = self.apps.take_evicted();
        for app in &evicted {
            // Hadoop's reports live in the RMApp, which goes with eviction.
            self.log_aggregation.forget(app);
        }
        self.evicted.extend(evicted);
        if self.evicted.is_empty() {
            return;
        }
        let attempts = &self.attempts;
        let history = &self.history;
        let done = |app: &ApplicationId| {
            history.get(app).is_none_or(|h| {
                h.ids
                    .iter()
                    .all(|a| attempts.get(a).is_none_or(|a| a.state.is_final()))
            })
        };
        let (gone, waiting): (Vec<_>, Vec<_>) = self.evicted.drain(..).partition(|a| done(a));
        self.evicted = waiting;
        for app in gone {
            if let Some(h) = self.history.remove(&app) {
                for attempt in h.ids {
                    self.attempts.remove(&attempt);
                }
            }
        }
    }

    /// Whether this RM knows the application: in the application table, or
    /// evicted from it while an attempt of it still winds down. Containers
    /// of applications it does not know are orphans (see `heartbeat.rs`).
    fn knows_app(&self, app: &ApplicationId) -> bool {
        self.apps.get(app).is_some() || self.history.contains_key(app)
    }

    /// The periodic tick: node liveness (lost nodes and timed-out graceful
    /// decommissions leave the scheduler), master keys that are due roll,
    /// AM liveness, the log aggregation time-out, a continuous-scheduling
    /// pass, then what ended applications no longer need is let go.
    fn tick(&mut self, now: Now) {
        let (_, decisions) = self.cluster.expire(now.mono_ms);
        self.apply(decisions, now);
        // What was kept for nodes that left (LOST, decommissioned, shut
        // down) goes; a node that comes back registers afresh.
        let nodes = self.cluster.nodes();
        let active = || {
            nodes
                .active()
                .filter(|n| n.state.is_active())
                .map(|n| &n.id)
        };
        retain_listed(&mut self.node_work, active());
        retain_listed(&mut self.last_answers, active());
        self.tokens.roll_due(now.mono_ms);
        self.delegation.tick(now.wall_ms as i64);
        self.expire_silent_ams(now);
        self.expire_lifetimes(now);
        self.log_aggregation.expire(now.mono_ms);
        self.schedule_pass(now);
        self.forget_ended();
        self.forget_recovered();
    }

    /// Lets go of the recovery bookkeeping of attempts that ended.
    fn forget_recovered(&mut self) {
        if self.recovered_attempts.is_empty() {
            return;
        }
        let attempts = &self.attempts;
        let live = |a: &ApplicationAttemptId| attempts.get(a).is_some_and(|a| !a.state.is_final());
        self.recovered_attempts.retain(live);
        let recovered = &self.recovered_attempts;
        self.pending_releases
            .retain(|c| recovered.contains(&c.attempt));
    }

    /// Lets go of the AM launch context of a finished application (only a
    /// new attempt would read it). The attempts and history of applications
    /// the table has forgotten go in `forget_evicted`.
    fn forget_ended(&mut self) {
        let apps = &self.apps;
        let ended: Vec<ApplicationId> = self
            .history
            .iter()
            .filter(|(id, history)| {
                apps.get(id).is_some_and(|a| a.state.is_final())
                    && history.launch != AmLaunchContext::default()
            })
            .map(|(id, _)| *id)
            .collect();
        for id in ended {
            if let Some(history) = self.history.get_mut(&id) {
                history.launch = AmLaunchContext::default();
            }
        }
    }
}

/// Keeps the entries of `map` whose keys `listed` yields, in one ordered
/// walk of both (`listed` must be ascending): with 10,000 nodes, a lookup
/// per entry made every tick a pause of milliseconds for the heartbeats
/// queued behind it.
fn retain_listed<'a, K: Ord + 'a, V>(
    map: &mut BTreeMap<K, V>,
    listed: impl Iterator<Item = &'a K>,
) {
    let mut listed = listed.peekable();
    map.retain(|key, _| {
        while listed.next_if(|l| *l < key).is_some() {}
        listed.peek().is_some_and(|l| *l == key)
    });
}

#[cfg(test)]
mod retain_tests {
    use std::collections::BTreeMap;

    #[test]
    fn retain_listed_keeps_exactly_the_listed_keys() {
        let mut map: BTreeMap<i32, ()> = [1, 2, 4, 7, 9, 12].into_iter().map(|k| (k, ())).collect();
        super::retain_listed(&mut map, [0, 2, 3, 4, 9, 13].iter());
        assert_eq!(map.keys().copied().collect::<Vec<_>>(), [2, 4, 9]);
        super::retain_listed(&mut map, [].iter());
        assert!(map.is_empty());
    }
}

#[cfg(test)]
pub(crate) mod test_support;

#[cfg(test)]
#[path = "lifecycle_tests.rs"]
mod lifecycle_tests;

#[cfg(test)]
#[path = "queue_tests.rs"]
mod queue_tests;

#[cfg(test)]
#[path = "moves_tests.rs"]
mod moves_tests;

#[cfg(test)]
#[path = "handle_tests.rs"]
mod handle_tests;

#[cfg(test)]
#[path = "access_tests.rs"]
mod access_tests;

#[cfg(test)]
#[path = "limits_tests.rs"]
mod limits_tests;

#[cfg(test)]
#[path = "store_tests.rs"]
mod store_tests;

#[cfg(test)]
#[path = "overview_tests.rs"]
mod overview_tests;

#[cfg(test)]
#[path = "log_aggregation_tests.rs"]
mod log_aggregation_tests;
