//! Log aggregation status: what NodeManagers report about uploading an
//! application's container logs, and the one status its reports show, as
//! Hadoop's `RMAppLogAggregation` (3.3) computes them.
//!
//! Pure like `apps.rs`: no I/O, no clock (the monotonic time comes in as an
//! argument). Per application it keeps one report per node: a
//! `NOT_START` entry for each node the application ran a container on
//! (Hadoop's `RMAppRunningOnNodeEvent`: the AM container, containers an AM
//! took in an allocate answer, containers taken back after a restart, and
//! the applications a registering node says it runs), and whatever a node
//! reports in its heartbeats (or at registration). The entries go with the
//! application.
//!
//! The application's status, as `getLogAggregationStatusForAppReport`:
//!
//! - `DISABLED` when `yarn.log-aggregation-enable` is false;
//! - `NOT_START` while no node has a report, or all are `NOT_START`;
//! - once the application has ended and every node has a final report
//!   (`SUCCEEDED`, `FAILED`, or `TIME_OUT`): `FAILED` if any failed, else
//!   `TIME_OUT` if any timed out, else `SUCCEEDED`; that status is final and
//!   later reports change nothing;
//! - otherwise `RUNNING_WITH_FAILURE` if a node reports it, else `RUNNING`.
//!
//! `yarn.log-aggregation-status.time-out.ms` (default 10 minutes; zero or
//! less means the default) after the application ended, every node without a
//! final report is `TIME_OUT`, and so the application's status is final.
//!
//! Two differences of timing from Hadoop, which computes (and fixes) the
//! final status when somebody reads it: here it is fixed as soon as it can
//! be, after every change (as if a client read it after each), and the
//! time-out is applied by the RM's tick, so a report read in the tick's
//! interval after the deadline can still show the status from before it.
//! Two of what is taken: reports of an unhealthy node count (Hadoop's
//! `RMNodeImpl` drops them), and so do those a node that re-registers
//! hands in (Hadoop reads them only from a node it did not know). With
//! aggregation disabled nothing is kept (Hadoop keeps `DISABLED` entries).
//!
//! Nothing here is stored: after an RM restart an application starts over
//! without reports (`NOT_START` until nodes report again), as in Hadoop.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;

use spindle_common::conf::{ConfError, Configuration};
use spindle_common::ids::{ApplicationId, NodeId};

/// `yarn.log-aggregation-enable` (default false).
pub const ENABLED_KEY: &str = "yarn.log-aggregation-enable";
/// `yarn.log-aggregation-status.time-out.ms` (default 600000).
pub const STATUS_TIMEOUT_KEY: &str = "yarn.log-aggregation-status.time-out.ms";
/// `yarn.resourcemanager.max-log-aggregation-diagnostics-in-memory` (default 10).
pub const MAX_DIAGNOSTICS_KEY: &str =
    "yarn.resourcemanager.max-log-aggregation-diagnostics-in-memory";
/// Hadoop's `DEFAULT_LOG_AGGREGATION_STATUS_TIME_OUT_MS`.
pub const DEFAULT_STATUS_TIMEOUT_MS: u64 = 10 * 60 * 1000;
/// Hadoop's `DEFAULT_RM_MAX_LOG_AGGREGATION_DIAGNOSTICS_IN_MEMORY`.
pub const DEFAULT_MAX_DIAGNOSTICS: usize = 10;
/// Spindle's own bound on one diagnostic message a node reports (characters;
/// the rest is cut): Hadoop keeps them whole.
pub const MAX_DIAGNOSTIC_CHARS: usize = 4096;

/// Hadoop's `LogAggregationStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogAggregationStatus {
    Disabled,
    NotStart,
    Running,
    RunningWithFailure,
    Succeeded,
    Failed,
    TimeOut,
}

impl LogAggregationStatus {
    /// Hadoop's name, as `yarn application -status` prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            LogAggregationStatus::Disabled => "DISABLED",
            LogAggregationStatus::NotStart => "NOT_START",
            LogAggregationStatus::Running => "RUNNING",
            LogAggregationStatus::RunningWithFailure => "RUNNING_WITH_FAILURE",
            LogAggregationStatus::Succeeded => "SUCCEEDED",
            LogAggregationStatus::Failed => "FAILED",
            LogAggregationStatus::TimeOut => "TIME_OUT",
        }
    }

    /// A node's last word (`isLogAggregationFinishedForNM`).
    fn is_final_for_node(self) -> bool {
        matches!(
            self,
            LogAggregationStatus::Succeeded | LogAggregationStatus::Failed
        )
    }

    /// A node's report that counts as complete for the application.
    fn is_complete(self) -> bool {
        self.is_final_for_node() || self == LogAggregationStatus::TimeOut
    }
}

impl fmt::Display for LogAggregationStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One `LogAggregationReportProto` of a node: where it is with the
/// application's logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppLogReport {
    pub app: ApplicationId,
    pub status: LogAggregationStatus,
    pub diagnostics: String,
}

/// The settings, read once at start-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogAggregationConf {
    /// `yarn.log-aggregation-enable`.
    pub enabled: bool,
    /// `yarn.log-aggregation-status.time-out.ms`.
    pub status_timeout_ms: u64,
    /// `yarn.resourcemanager.max-log-aggregation-diagnostics-in-memory`:
    /// how many messages are kept per node and kind.
    pub max_diagnostics: usize,
}

impl Default for LogAggregationConf {
    /// Hadoop's defaults.
    fn default() -> Self {
        LogAggregationConf {
            enabled: false,
            status_timeout_ms: DEFAULT_STATUS_TIMEOUT_MS,
            max_diagnostics: DEFAULT_MAX_DIAGNOSTICS,
        }
    }
}

impl LogAggregationConf {
    /// The settings in `conf`; a time-out of zero or less means the default,
    /// as in Hadoop.
    pub fn from_conf(conf: &Configuration) -> Result<LogAggregationConf, ConfError> {
        let set = |key: &str| conf.get_trimmed(key).is_some_and(|v| !v.is_empty());
        let enabled = set(ENABLED_KEY) && conf.get_bool(ENABLED_KEY)?;
        let status_timeout_ms = if set(STATUS_TIMEOUT_KEY) {
            match conf.get_i64(STATUS_TIMEOUT_KEY)? {
                ms if ms > 0 => ms as u64,
                _ => DEFAULT_STATUS_TIMEOUT_MS,
            }
        } else {
            DEFAULT_STATUS_TIMEOUT_MS
        };
        let max_diagnostics = if set(MAX_DIAGNOSTICS_KEY) {
            conf.get_i64(MAX_DIAGNOSTICS_KEY)?.max(0) as usize
        } else {
            DEFAULT_MAX_DIAGNOSTICS
        };
        Ok(LogAggregationConf {
            enabled,
            status_timeout_ms,
            max_diagnostics,
        })
    }
}

/// One node's report as the RM keeps it (Hadoop's `LogAggregationReport`
/// in `getLogAggregationReportsForApp`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeLogReport {
    pub status: LogAggregationStatus,
    /// The node's message: its first report's, then the last
    /// `max_diagnostics` messages of its RUNNING reports, one a line.
    pub diagnostics: String,
}

#[derive(Debug, Clone)]
struct NodeLogs {
    report: NodeLogReport,
    /// Messages of RUNNING reports, the newest last.
    running: VecDeque<String>,
    /// Messages of RUNNING_WITH_FAILURE reports, the newest last.
    failures: VecDeque<String>,
}

#[derive(Debug, Clone, Default)]
struct AppLogs {
    /// When the application ended (monotonic; Hadoop's
    /// `logAggregationStartTime`); `None` while it runs.
    ended_ms: Option<u64>,
    /// The final status, once there is one.
    finished: Option<LogAggregationStatus>,
    nodes: BTreeMap<NodeId, NodeLogs>,
    /// Nodes whose report turned SUCCEEDED / FAILED after the application ended.
    succeeded: usize,
    failed: usize,
}

impl AppLogs {
    /// The status `getLogAggregationStatusForAppReport` gives (enabled).
    fn status(&self) -> LogAggregationStatus {
        use LogAggregationStatus as S;
        if let Some(done) = self.finished {
            return done;
        }
        let total = self.nodes.len();
        if total == 0 {
            return S::NotStart;
        }
        let count = |p: fn(S) -> bool| self.nodes.values().filter(|n| p(n.report.status)).count();
        if count(|s| s == S::NotStart) == total {
            return S::NotStart;
        }
        let ended = self.ended_ms.is_some();
        if count(S::is_complete) == total {
            if ended && count(|s| s == S::Failed) > 0 {
                return S::Failed;
            }
            if count(|s| s == S::TimeOut) > 0 {
                return S::TimeOut;
            }
            if ended {
                return S::Succeeded;
            }
        } else if count(|s| s == S::RunningWithFailure) > 0 {
            return S::RunningWithFailure;
        }
        S::Running
    }

    /// Fixes the status once it is final (what Hadoop does when the status
    /// is read); answers whether it is.
    fn settle(&mut self) -> bool {
        if self.finished.is_none() {
            let status = self.status();
            if status.is_complete() {
                self.finished = Some(status);
            }
        }
        self.finished.is_some()
    }
}

/// Every application's log aggregation reports.
#[derive(Debug, Clone, Default)]
pub struct LogAggregations {
    conf: LogAggregationConf,
    apps: BTreeMap<ApplicationId, AppLogs>,
    /// Ended applications without a final status: what the time-out watches.
    awaiting: BTreeSet<ApplicationId>,
}

impl LogAggregations {
    pub fn new(conf: LogAggregationConf) -> LogAggregations {
        LogAggregations {
            conf,
            apps: BTreeMap::new(),
            awaiting: BTreeSet::new(),
        }
    }

    pub fn conf(&self) -> LogAggregationConf {
        self.conf
    }

    /// The application ran a container on `node`: the node gets a
    /// `NOT_START` report unless it has one (Hadoop's
    /// `addReportIfNecessary`). Nothing once the application has ended.
    pub fn ran_on(&mut self, app: ApplicationId, node: &NodeId) {
        if !self.conf.enabled {
            return;
        }
        let logs = self.apps.entry(app).or_default();
        if logs.ended_ms.is_some() {
            return;
        }
        logs.nodes.entry(node.clone()).or_insert_with(|| NodeLogs {
            report: NodeLogReport {
                status: LogAggregationStatus::NotStart,
                diagnostics: String::new(),
            },
            running: VecDeque::new(),
            failures: VecDeque::new(),
        });
    }

    /// The application reached its final state at `now_ms` (monotonic): the
    /// time-out counts from here. Only the first call counts.
    pub fn app_ended(&mut self, app: ApplicationId, now_ms: u64) {
        if !self.conf.enabled {
            return;
        }
        let logs = self.apps.entry(app).or_default();
        if logs.ended_ms.is_some() {
            return;
        }
        logs.ended_ms = Some(now_ms);
        if !logs.settle() && !logs.nodes.is_empty() {
            self.awaiting.insert(app);
        }
    }

    /// A node's report about `app` (Hadoop's `aggregateLogReport`); the
    /// caller checks that the RM knows the application. Ignored when
    /// aggregation is disabled or the application's status is final.
    pub fn report(
        &mut self,
        app: ApplicationId,
        node: &NodeId,
        status: LogAggregationStatus,
        diagnostics: String,
    ) {
        use LogAggregationStatus as S;
        if !self.conf.enabled || status == S::Disabled {
            return;
        }
        let max = self.conf.max_diagnostics;
        let logs = self.apps.entry(app).or_default();
        if logs.finished.is_some() {
            return;
        }
        let diagnostics: String = diagnostics.chars().take(MAX_DIAGNOSTIC_CHARS).collect();
        let mut status = status;
        let mut became_final = false;
        match logs.nodes.get_mut(node) {
            None => {
                became_final = status.is_final_for_node();
                logs.nodes.insert(
                    node.clone(),
                    NodeLogs {
                        report: NodeLogReport {
                            status,
                            diagnostics: diagnostics.clone(),
                        },
                        running: VecDeque::new(),
                        failures: VecDeque::new(),
                    },
                );
            }
            Some(cur) => {
                if status.is_final_for_node() && !cur.report.status.is_final_for_node() {
                    became_final = true;
                }
                // A plain RUNNING does not hide an earlier failure.
                if status != S::Running || cur.report.status != S::RunningWithFailure {
                    if cur.report.status == S::TimeOut
                        && status == S::Running
                        && !cur.failures.is_empty()
                    {
                        status = S::RunningWithFailure;
                    }
                    cur.report.status = status;
                }
            }
        }
        if let Some(cur) = logs.nodes.get_mut(node) {
            if !diagnostics.is_empty() && max > 0 {
                match status {
                    S::Running => {
                        if cur.running.len() >= max {
                            cur.running.pop_front();
                        }
                        cur.running.push_back(diagnostics);
                        cur.report.diagnostics = Vec::from(cur.running.clone()).join("\n");
                    }
                    S::RunningWithFailure => {
                        if cur.failures.len() >= max {
                            cur.failures.pop_front();
                        }
                        cur.failures.push_back(diagnostics);
                    }
                    _ => {}
                }
            }
        }
        if logs.ended_ms.is_some() && became_final {
            Self::count_final(logs, node);
        }
        if logs.settle() {
            self.awaiting.remove(&app);
        } else if logs.ended_ms.is_some() {
            self.awaiting.insert(app);
        }
    }

    /// Hadoop's `updateLogAggregationStatus`: a node's report turned final
    /// after the application ended. When every node succeeded the reports
    /// are dropped; when every node is final and some failed, only the
    /// failed ones are kept.
    fn count_final(logs: &mut AppLogs, node: &NodeId) {
        match logs.nodes.get(node).map(|n| n.report.status) {
            Some(LogAggregationStatus::Succeeded) => logs.succeeded += 1,
            Some(LogAggregationStatus::Failed) => logs.failed += 1,
            _ => {}
        }
        let total = logs.nodes.len();
        if logs.succeeded == total {
            logs.finished = Some(LogAggregationStatus::Succeeded);
            logs.nodes.clear();
        } else if logs.succeeded + logs.failed == total {
            logs.finished = Some(LogAggregationStatus::Failed);
            logs.nodes
                .retain(|_, n| n.report.status != LogAggregationStatus::Succeeded);
            for n in logs.nodes.values_mut() {
                n.running.clear();
            }
        }
    }

    /// The time-out (part of the RM's tick): every node of an application
    /// that ended more than the time-out before `now_ms` and still has no
    /// final report is `TIME_OUT`, which makes the application's status
    /// final.
    pub fn expire(&mut self, now_ms: u64) {
        let timeout = self.conf.status_timeout_ms;
        let apps = &mut self.apps;
        self.awaiting.retain(|id| {
            let Some(logs) = apps.get_mut(id) else {
                return false;
            };
            let due = logs
                .ended_ms
                .is_some_and(|ended| now_ms > ended.saturating_add(timeout));
            if due && logs.finished.is_none() {
                for n in logs.nodes.values_mut() {
                    if !n.report.status.is_complete() {
                        n.report.status = LogAggregationStatus::TimeOut;
                    }
                }
            }
            // An application no node reports about has nothing to time
            // out (`NOT_START` for good, as in Hadoop) until one does.
            !logs.settle() && !logs.nodes.is_empty()
        });
    }

    /// The application's status for its report.
    pub fn status(&self, app: &ApplicationId) -> LogAggregationStatus {
        if !self.conf.enabled {
            return LogAggregationStatus::Disabled;
        }
        self.apps
            .get(app)
            .map_or(LogAggregationStatus::NotStart, AppLogs::status)
    }

    /// The reports the RM keeps for the application, by node (Hadoop's
    /// `getLogAggregationReportsForApp`).
    pub fn node_reports(&self, app: &ApplicationId) -> Vec<(NodeId, NodeLogReport)> {
        self.apps
            .get(app)
            .map(|logs| {
                logs.nodes
                    .iter()
                    .map(|(id, n)| (id.clone(), n.report.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The failure messages a node reported for the application (Hadoop's
    /// `getLogAggregationFailureMessagesForNM`), one a line.
    pub fn failure_messages(&self, app: &ApplicationId, node: &NodeId) -> String {
        self.apps
            .get(app)
            .and_then(|logs| logs.nodes.get(node))
            .map(|n| Vec::from(n.failures.clone()).join("\n"))
            .unwrap_or_default()
    }

    /// Lets go of everything about the application.
    pub fn forget(&mut self, app: &ApplicationId) {
        self.apps.remove(app);
        self.awaiting.remove(app);
    }

    /// How many applications have entries (for tests and bounds).
    pub fn len(&self) -> usize {
        self.apps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.apps.is_empty()
    }
}

#[cfg(test)]
#[path = "log_aggregation_tests.rs"]
mod tests;
