//! Why the RM refuses a command or cannot answer a query, in domain terms.
//!
//! The state returns these; the protocol handlers turn each into the Java
//! exception class and message a Hadoop client expects, in one place
//! (`convert::refusal_to_rpc`).

use std::path::PathBuf;

use spindle_common::ids::{ApplicationAttemptId, ApplicationId, ContainerId, NodeId};
use spindle_common::resource::Resource;
use spindle_common::states::{AppState, AttemptState};
use spindle_scheduler::SchedulerError;

use crate::model::launch::AppAccess;
use crate::model::limits::LimitExceeded;

/// A refused command or an unanswerable query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A delegation-token renewal or cancellation refused, with Hadoop's
    /// exception and message (sent inside a YarnException, as Hadoop's
    /// ClientRMService does).
    DelegationToken(crate::model::delegation::DelegationRefusal),
    /// No such application (reports, attempts, priority updates).
    ApplicationNotFound(ApplicationId),
    /// `forceKillApplication` of an application the RM does not know.
    KillOfAbsentApplication(ApplicationId),
    /// No such application attempt.
    AttemptNotFound(ApplicationAttemptId),
    /// No container with this id is allocated.
    ContainerNotFound(ContainerId),
    /// `signalToContainer` of a container that is not allocated, or of an
    /// application the RM does not know.
    SignalOfAbsentContainer(ContainerId),
    /// A submission whose id this RM did not hand out (`getNewApplication`
    /// first); `cluster_ts` is this RM's cluster timestamp.
    UnknownApplicationId { id: ApplicationId, cluster_ts: i64 },
    /// A submission whose AM asks for a negative resource.
    NegativeAmResource { requested: Resource },
    /// A submission whose AM asks for more than one container may have.
    AmResourceAboveMaximum {
        requested: Resource,
        maximum: Resource,
    },
    /// The user may not submit to the queue (`yarn.acl.enable`); `queue`
    /// is the queue the submission named.
    SubmitAccessDenied {
        user: String,
        app: ApplicationId,
        queue: String,
    },
    /// The caller lacks `access` to the application (`yarn.acl.enable`; see
    /// [`crate::model::access`]): a kill or priority change without MODIFY_APP.
    AppAccessDenied {
        user: String,
        access: AppAccess,
        app: ApplicationId,
    },
    /// The caller may not see the application's attempts or containers
    /// (no VIEW_APP).
    AppViewDenied { user: String, app: ApplicationId },
    /// The caller may not see the attempt's report (no VIEW_APP).
    AttemptViewDenied {
        user: String,
        attempt: ApplicationAttemptId,
    },
    /// `updateApplicationPriority` of an application that is neither
    /// ACCEPTED nor RUNNING (nor finished).
    PriorityUpdateInState(AppState),
    /// `moveApplicationAcrossQueues` with ACLs on, to a queue that does not
    /// exist or that the caller may not submit to.
    MoveTargetDenied {
        user: String,
        queue: String,
        app: ApplicationId,
    },
    /// `moveApplicationAcrossQueues` of an application that is neither
    /// ACCEPTED nor RUNNING.
    MoveInState(AppState),
    /// The scheduler refused the move, for this reason (a YarnException).
    MoveRefused(String),
    /// The target queue refused the application as it would a submission
    /// (stopped, full): Hadoop's AccessControlException in a YarnException.
    MoveQueueRefused(String),
    /// `updateApplicationTimeouts` naming no timeout.
    NoTimeoutGiven,
    /// `updateApplicationTimeouts` of an application in a state that
    /// cannot change them (neither running nor finished).
    TimeoutUpdateInState(AppState),
    /// A timeout that is not in Hadoop's ISO 8601 form, as given.
    TimeoutNotIso8601(String),
    /// A timeout before the current time (both in epoch milliseconds).
    TimeoutInThePast { now_ms: u64, expiry_ms: u64 },
    /// The AMRMToken names an attempt that is not its application's current one.
    NotCurrentAttempt(ApplicationAttemptId),
    /// The AM must register (again) before it allocates or unregisters.
    AmNotRegistered(ApplicationAttemptId),
    /// A second `registerApplicationMaster` of the same attempt.
    AmAlreadyRegistered(ApplicationId),
    /// `registerApplicationMaster` of an attempt that has ended.
    AttemptEnded {
        attempt: ApplicationAttemptId,
        state: AttemptState,
    },
    /// An allocate call out of the response-id sequence.
    InvalidResponseId {
        attempt: ApplicationAttemptId,
        expected: i32,
        got: i32,
    },
    /// The scheduler refused an allocate call's asks, releases or blacklist.
    AsksRefused(SchedulerError),
    /// The scheduler refused a new queue configuration (read from `source`);
    /// the old one stays in force.
    QueuesRefused {
        source: Option<PathBuf>,
        error: SchedulerError,
    },
    /// `updateNodeResource` named nodes that are not active.
    NodesNotRunning(Vec<NodeId>),
    /// A submission (`app`) or an AM call with a field past its bound (see
    /// [`crate::model::limits`]).
    LimitExceeded {
        app: Option<ApplicationId>,
        what: LimitExceeded,
    },
    /// The caller is not in `yarn.admin.acl`.
    AdminAccessDenied { user: String, operation: String },
}
