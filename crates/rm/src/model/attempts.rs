//! Application attempts: one run of an application's ApplicationMaster.
//!
//! An attempt is SCHEDULED until the scheduler grants its AM container, ALLOCATED
//! until the NodeManager has started it, LAUNCHED until the AM registers, RUNNING
//! while it heartbeats, FINISHING once it has unregistered (until its container
//! exits) and then FINISHED; FAILED and KILLED end it early. An unmanaged AM's
//! attempt has no AM container: it is LAUNCHED at once and FINISHED as soon as the
//! AM unregisters. Pure state like `apps`: time is an argument, the allocate
//! answer kept for replay is a type parameter.

use std::collections::{BTreeMap, BTreeSet};

use spindle_common::ids::{ApplicationAttemptId, ContainerId, NodeId};
use spindle_common::resource::Resource;
pub use spindle_common::states::AttemptState;
use spindle_common::states::FinalStatus;

use crate::model::launch::AmLaunchContext;
use crate::time::Now;

/// A container granted to the attempt, not yet handed to the AM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Granted {
    pub container: ContainerId,
    pub node: NodeId,
    pub resource: Resource,
    pub priority: i32,
    pub allocation_request_id: i64,
}

/// A container that ended, not yet reported to the AM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    pub container: ContainerId,
    pub exit_status: i32,
    pub diagnostics: String,
    pub resource: Resource,
}

/// A container of the attempt that holds resources: where, and since when
/// (wall clock, for container reports).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveContainer {
    pub node: NodeId,
    pub allocated_wall_ms: u64,
}

/// One attempt. `R` is the remembered allocate answer, replayed when the AM repeats
/// a call whose answer it did not see.
#[derive(Debug, Clone)]
pub struct Attempt<R> {
    pub id: ApplicationAttemptId,
    pub state: AttemptState,
    pub am_resource: Resource,
    pub am_container: Option<ContainerId>,
    pub am_node: Option<NodeId>,
    pub host: String,
    pub rpc_port: i32,
    pub tracking_url: String,
    pub original_tracking_url: String,
    pub final_status: FinalStatus,
    pub diagnostics: String,
    /// Wall clock, as reported.
    pub start_ms: u64,
    /// Wall clock, as reported.
    pub finish_ms: u64,
    /// Last time the AM called in (register or allocate), monotonic; for liveness.
    pub last_contact_ms: u64,
    pub progress: f32,
    /// Response id of the last allocate answer; −1 before registration.
    pub last_response_id: i32,
    pub last_response: Option<R>,
    pub granted: Vec<Granted>,
    pub finished: Vec<Finished>,
    /// Nodes this attempt already has an NMToken for.
    pub nm_tokens_sent: BTreeSet<NodeId>,
    /// Containers of this attempt that hold resources.
    pub live: BTreeMap<ContainerId, LiveContainer>,
    /// The last node change this AM was told about (`updated_nodes`).
    pub node_changes_seen: u64,
}

/// How an allocate call's response id relates to the last answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseIdCheck {
    /// A new call: answer with this response id.
    Next(i32),
    /// The AM repeats the call it made before the last answer: replay it.
    Duplicate,
    /// Out of sequence.
    Invalid { expected: i32 },
}

impl<R> Attempt<R> {
    pub fn new(id: ApplicationAttemptId, am_resource: Resource, now: Now) -> Self {
        Attempt {
            id,
            state: AttemptState::Scheduled,
            am_resource,
            am_container: None,
            am_node: None,
            host: "N/A".into(),
            rpc_port: -1,
            tracking_url: String::new(),
            original_tracking_url: String::new(),
            final_status: FinalStatus::Undefined,
            diagnostics: String::new(),
            start_ms: now.wall_ms,
            finish_ms: 0,
            last_contact_ms: now.mono_ms,
            progress: 0.0,
            last_response_id: -1,
            last_response: None,
            granted: Vec::new(),
            finished: Vec::new(),
            nm_tokens_sent: BTreeSet::new(),
            live: BTreeMap::new(),
            node_changes_seen: 0,
        }
    }

    /// Hadoop's allocate sequencing: the AM sends the id of the last answer it saw.
    pub fn check_response_id(&self, request_id: i32) -> ResponseIdCheck {
        let next = |id: i32| id.wrapping_add(1) & i32::MAX;
        if next(request_id) == self.last_response_id && self.last_response.is_some() {
            ResponseIdCheck::Duplicate
        } else if request_id == self.last_response_id {
            ResponseIdCheck::Next(next(self.last_response_id))
        } else {
            ResponseIdCheck::Invalid {
                expected: self.last_response_id,
            }
        }
    }

    pub fn is_registered(&self) -> bool {
        matches!(self.state, AttemptState::Running | AttemptState::Finishing)
    }

    /// Ends the attempt at `wall_ms`.
    pub fn end(&mut self, state: AttemptState, diagnostics: String, wall_ms: u64) {
        debug_assert!(state.is_final());
        if self.state.is_final() {
            return;
        }
        self.state = state;
        if !diagnostics.is_empty() {
            self.diagnostics = diagnostics;
        }
        self.finish_ms = wall_ms;
        // An ended attempt's AM is told to shut down, never answered again.
        self.last_response = None;
    }

    /// The nodes its containers (and its AM container) are on.
    pub fn nodes(&self) -> BTreeSet<NodeId> {
        let mut nodes: BTreeSet<NodeId> = self.live.values().map(|c| c.node.clone()).collect();
        nodes.extend(self.am_node.clone());
        nodes
    }
}

/// Per application: its AM launch context and its attempts.
#[derive(Debug, Clone)]
pub struct AppAttempts {
    pub launch: AmLaunchContext,
    /// When the application was submitted (wall clock; the AM's
    /// `APP_SUBMIT_TIME_ENV`).
    pub submit_wall_ms: u64,
    /// Failed attempts that count towards the maximum.
    pub failed: i32,
    /// Every attempt, oldest first; the last one is current.
    pub ids: Vec<ApplicationAttemptId>,
    /// Failed attempts whose containers were kept for the next attempt
    /// (keep-containers-across-application-attempts).
    pub retained: BTreeSet<ApplicationAttemptId>,
    /// Every node any of its containers was placed on (Hadoop's `ranNodes`):
    /// they are told to clean the application up when it ends.
    pub ran_on: BTreeSet<NodeId>,
}

impl AppAttempts {
    pub fn new(launch: AmLaunchContext, submit_wall_ms: u64) -> AppAttempts {
        AppAttempts {
            launch,
            submit_wall_ms,
            failed: 0,
            ids: Vec::new(),
            retained: BTreeSet::new(),
            ran_on: BTreeSet::new(),
        }
    }

    /// The current (latest) attempt.
    pub fn current(&self) -> Option<ApplicationAttemptId> {
        self.ids.last().copied()
    }
}

/// Exit statuses that are not the application's fault: an attempt that fails with one
/// of them does not count towards the maximum attempts (as in Hadoop).
pub fn counts_towards_max_attempts(exit_status: i32) -> bool {
    use spindle_scheduler::exit_status as s;
    !matches!(
        exit_status,
        s::PREEMPTED | s::ABORTED | s::DISKS_FAILED | s::KILLED_BY_RESOURCEMANAGER
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use spindle_common::ids::ApplicationId;

    fn attempt() -> Attempt<u32> {
        let id = ApplicationAttemptId::new(ApplicationId::new(1, 1), 1);
        Attempt::new(id, Resource::new(1024, 1), Now::at(0))
    }

    #[test]
    fn response_ids_follow_hadoop() {
        let mut a = attempt();
        // Before registration nothing is valid.
        assert_eq!(
            a.check_response_id(0),
            ResponseIdCheck::Invalid { expected: -1 }
        );
        a.last_response_id = 0; // registered
        assert_eq!(a.check_response_id(0), ResponseIdCheck::Next(1));
        a.last_response_id = 1;
        a.last_response = Some(7);
        assert_eq!(a.check_response_id(1), ResponseIdCheck::Next(2));
        assert_eq!(a.check_response_id(0), ResponseIdCheck::Duplicate);
        assert_eq!(
            a.check_response_id(5),
            ResponseIdCheck::Invalid { expected: 1 }
        );
        a.last_response_id = i32::MAX;
        assert_eq!(a.check_response_id(i32::MAX), ResponseIdCheck::Next(0));
    }

    #[test]
    fn ending_is_final_once() {
        let mut a = attempt();
        a.end(AttemptState::Failed, "boom".into(), 5);
        a.end(AttemptState::Killed, "later".into(), 9);
        assert_eq!(
            (a.state, a.diagnostics.as_str(), a.finish_ms),
            (AttemptState::Failed, "boom", 5)
        );
    }

    #[test]
    fn lost_nodes_do_not_count() {
        assert!(!counts_towards_max_attempts(-100));
        assert!(!counts_towards_max_attempts(-102));
        assert!(counts_towards_max_attempts(1));
        assert!(counts_towards_max_attempts(-104));
    }
}
