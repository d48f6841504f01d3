//! Everything that changes the RM's state: one closed set of commands.
//!
//! Each protocol operation that changes state has a variant, and so do the
//! periodic tick and the outcomes of the effects the state asked for (an AM
//! container started or not). `RmState::handle` takes a [`Command`] and
//! performs every step of the operation in one method per variant; reading
//! the state goes through its named queries instead.
//!
//! Commands carry plain domain data, and everything their outcome depends
//! on besides the state itself: the caller's user and groups, a node's
//! resolved rack, a re-read queue file or host list, and (passed beside the
//! command) the time. The one exception is the token master keys, which
//! are random when they roll. [`Command::is_durable`] names the commands
//! whose effect on applications must outlive a restart; they are not a
//! replay log by themselves (a durable command's outcome can depend on
//! non-durable ones, such as the heartbeat that placed an AM container), so
//! a state store records what they changed.
//!
//! Each variant's payload is its own type implementing [`Request`], which
//! names the payload's reply: `CoreHandle::call(payload)` wraps it into a
//! command and hands back that reply, typed.

use spindle_common::ids::{ApplicationAttemptId, ApplicationId, ContainerId, NodeId};
use spindle_common::resource::Resource;
use spindle_common::security::{MasterKey, Token};
use spindle_common::states::FinalStatus;

use crate::acl::Acl;
use crate::cluster::nodes::{
    ContainerSignal, ContainerStatus, Decommission, Heartbeat, HeartbeatReply, NodeWork,
    Registration,
};
use crate::hosts::HostLists;
use crate::log_aggregation::AppLogReport;
use crate::model::amrm::{AllocateReply, AllocateRequest, RegisterReply};
use crate::model::delegation::IssuedToken;
use crate::model::keys::NmMasterKeys;
use crate::model::launch::AmLaunchContext;
use crate::model::refusal::Refusal;
use crate::model::submission::Submission;
use crate::queue_files::QueueFile;

/// What can happen to the RM.
///
/// (A submission's launch context makes one variant much larger than the
/// others; the owner task's channel carries commands boxed, so the size of
/// the enum costs nothing there.)
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)]
pub enum Command {
    // ApplicationClientProtocol
    NewApplication(NewApplication),
    SubmitApplication(SubmitApplication),
    KillApplication(KillApplication),
    UpdateApplicationPriority(UpdateApplicationPriority),
    MoveApplication(MoveApplication),
    UpdateApplicationTimeouts(UpdateApplicationTimeouts),
    SignalContainer(SignalContainer),
    FailApplicationAttempt(FailApplicationAttempt),
    GetDelegationToken(GetDelegationToken),
    RenewDelegationToken(RenewDelegationToken),
    CancelDelegationToken(CancelDelegationToken),
    // ApplicationMasterProtocol
    RegisterApplicationMaster(RegisterApplicationMaster),
    Allocate(Allocate),
    FinishApplicationMaster(FinishApplicationMaster),
    // ResourceTracker
    RegisterNode(RegisterNode),
    NodeHeartbeat(NodeHeartbeat),
    UnregisterNode(UnregisterNode),
    // ResourceManagerAdministrationProtocol
    RefreshQueues(RefreshQueues),
    RefreshNodes(RefreshNodes),
    RefreshAdminAcls(RefreshAdminAcls),
    RefreshClusterMaxPriority(RefreshClusterMaxPriority),
    UpdateNodeResources(UpdateNodeResources),
    // Time
    Tick(Tick),
    // Outcomes of effects
    AmLaunched(AmLaunched),
    AmLaunchFailed(AmLaunchFailed),
}

impl Command {
    /// Whether the command records part of an application's own history,
    /// which nothing but a store can give back after a restart: the ids
    /// handed out, submissions, kills, priority changes, moves between
    /// queues, lifetimes, attempts failed by a
    /// user, an AM's
    /// registration and unregistration, and whether its container started.
    ///
    /// The others are not durable by themselves. NodeManagers re-register
    /// and report their containers after a restart, and AMs re-register and
    /// send their whole request table again (as Hadoop's AMRMClient does on
    /// resync), so heartbeats and allocate calls need not be kept; queues,
    /// host lists, the admin ACL, the cluster's maximum priority and node
    /// resources are read from the configuration files at start (and re-read
    /// on refreshes); ticks are the passage of time. Some of them can still
    /// end an attempt or an application as a consequence (a
    /// heartbeat reporting that an AM container exited, a tick expiring a
    /// silent AM): a store that keeps attempt outcomes records those as
    /// changes of the state, not by keeping these commands.
    pub fn is_durable(&self) -> bool {
        match self {
            Command::NewApplication(_)
            | Command::SubmitApplication(_)
            | Command::KillApplication(_)
            | Command::UpdateApplicationPriority(_)
            | Command::MoveApplication(_)
            | Command::UpdateApplicationTimeouts(_)
            | Command::FailApplicationAttempt(_)
            | Command::GetDelegationToken(_)
            | Command::RenewDelegationToken(_)
            | Command::CancelDelegationToken(_)
            | Command::RegisterApplicationMaster(_)
            | Command::FinishApplicationMaster(_)
            | Command::AmLaunched(_)
            | Command::AmLaunchFailed(_) => true,
            Command::Allocate(_)
            | Command::SignalContainer(_)
            | Command::RegisterNode(_)
            | Command::NodeHeartbeat(_)
            | Command::UnregisterNode(_)
            | Command::RefreshQueues(_)
            | Command::RefreshNodes(_)
            | Command::RefreshAdminAcls(_)
            | Command::RefreshClusterMaxPriority(_)
            | Command::UpdateNodeResources(_)
            | Command::Tick(_) => false,
        }
    }

    /// The command's name, for logs.
    pub fn name(&self) -> &'static str {
        match self {
            Command::NewApplication(_) => "NewApplication",
            Command::SubmitApplication(_) => "SubmitApplication",
            Command::KillApplication(_) => "KillApplication",
            Command::UpdateApplicationPriority(_) => "UpdateApplicationPriority",
            Command::MoveApplication(_) => "MoveApplication",
            Command::UpdateApplicationTimeouts(_) => "UpdateApplicationTimeouts",
            Command::SignalContainer(_) => "SignalContainer",
            Command::FailApplicationAttempt(_) => "FailApplicationAttempt",
            Command::GetDelegationToken(_) => "GetDelegationToken",
            Command::RenewDelegationToken(_) => "RenewDelegationToken",
            Command::CancelDelegationToken(_) => "CancelDelegationToken",
            Command::RegisterApplicationMaster(_) => "RegisterApplicationMaster",
            Command::Allocate(_) => "Allocate",
            Command::FinishApplicationMaster(_) => "FinishApplicationMaster",
            Command::RegisterNode(_) => "RegisterNode",
            Command::NodeHeartbeat(_) => "NodeHeartbeat",
            Command::UnregisterNode(_) => "UnregisterNode",
            Command::RefreshQueues(_) => "RefreshQueues",
            Command::RefreshNodes(_) => "RefreshNodes",
            Command::RefreshAdminAcls(_) => "RefreshAdminAcls",
            Command::RefreshClusterMaxPriority(_) => "RefreshClusterMaxPriority",
            Command::UpdateNodeResources(_) => "UpdateNodeResources",
            Command::Tick(_) => "Tick",
            Command::AmLaunched(_) => "AmLaunched",
            Command::AmLaunchFailed(_) => "AmLaunchFailed",
        }
    }
}

/// The answer to a command: the variant of the same name (commands that
/// answer nothing but their completion have a variant without data).
#[derive(Debug)]
pub enum Reply {
    NewApplication(ApplicationId),
    SubmitApplication(Result<(), Refusal>),
    KillApplication(Result<bool, Refusal>),
    UpdateApplicationPriority(Result<i32, Refusal>),
    MoveApplication(Result<(), Refusal>),
    UpdateApplicationTimeouts(Result<(), Refusal>),
    SignalContainer(Result<(), Refusal>),
    FailApplicationAttempt(Result<(), Refusal>),
    GetDelegationToken(IssuedToken),
    RenewDelegationToken(Result<i64, Refusal>),
    CancelDelegationToken(Result<(), Refusal>),
    RegisterApplicationMaster(Result<RegisterReply, Refusal>),
    Allocate(Result<AllocateReply, Refusal>),
    FinishApplicationMaster(Result<bool, Refusal>),
    RegisterNode(NodeRegistration),
    NodeHeartbeat(HeartbeatAnswer),
    UnregisterNode(bool),
    RefreshQueues(Result<(), Refusal>),
    RefreshNodes,
    RefreshAdminAcls,
    RefreshClusterMaxPriority,
    UpdateNodeResources(Result<(), Refusal>),
    Tick,
    AmLaunched,
    AmLaunchFailed,
}

/// A command's payload, and what it answers.
pub trait Request: Into<Command> + Send + 'static {
    type Reply: Send + 'static;

    /// This payload's reply out of the command's reply; `None` for another
    /// command's (which `RmState::handle` never gives).
    fn reply(reply: Reply) -> Option<Self::Reply>;
}

/// `Command::$variant($variant)` answered by `Reply::$variant($reply)`, or
/// by the bare `Reply::$variant` when it answers `()`.
macro_rules! request {
    ($variant:ident => ()) => {
        request!(@from $variant);

        impl Request for $variant {
            type Reply = ();

            fn reply(reply: Reply) -> Option<()> {
                matches!(reply, Reply::$variant).then_some(())
            }
        }
    };
    ($variant:ident => $reply:ty) => {
        request!(@from $variant);

        impl Request for $variant {
            type Reply = $reply;

            fn reply(reply: Reply) -> Option<$reply> {
                match reply {
                    Reply::$variant(r) => Some(r),
                    _ => None,
                }
            }
        }
    };
    (@from $variant:ident) => {
        impl From<$variant> for Command {
            fn from(payload: $variant) -> Command {
                Command::$variant(payload)
            }
        }
    };
}

request!(NewApplication => ApplicationId);
request!(SubmitApplication => Result<(), Refusal>);
request!(KillApplication => Result<bool, Refusal>);
request!(UpdateApplicationPriority => Result<i32, Refusal>);
request!(MoveApplication => Result<(), Refusal>);
request!(UpdateApplicationTimeouts => Result<(), Refusal>);
request!(SignalContainer => Result<(), Refusal>);
request!(FailApplicationAttempt => Result<(), Refusal>);
request!(GetDelegationToken => IssuedToken);
request!(RenewDelegationToken => Result<i64, Refusal>);
request!(CancelDelegationToken => Result<(), Refusal>);
request!(RegisterApplicationMaster => Result<RegisterReply, Refusal>);
request!(Allocate => Result<AllocateReply, Refusal>);
request!(FinishApplicationMaster => Result<bool, Refusal>);
request!(RegisterNode => NodeRegistration);
request!(NodeHeartbeat => HeartbeatAnswer);
request!(UnregisterNode => bool);
request!(RefreshQueues => Result<(), Refusal>);
request!(RefreshNodes => ());
request!(RefreshAdminAcls => ());
request!(RefreshClusterMaxPriority => ());
request!(UpdateNodeResources => Result<(), Refusal>);
request!(Tick => ());
request!(AmLaunched => ());
request!(AmLaunchFailed => ());

// ---- ApplicationClientProtocol ------------------------------------------------

/// `getDelegationToken` by `owner` (its full name, a Kerberos principal),
/// for `renewer` (a short name), `real_user` when the owner is
/// impersonated. Answers the token (its service empty, as Hadoop's RM)
/// with its dates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GetDelegationToken {
    pub owner: String,
    pub renewer: String,
    pub real_user: Option<String>,
}

/// `renewDelegationToken` by `renewer` (the caller's short name). Answers
/// the token's new expiry (wall ms).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenewDelegationToken {
    pub token: Token,
    pub renewer: String,
}

/// `cancelDelegationToken` by `canceller` (its full name), whose short name
/// is `short`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CancelDelegationToken {
    pub token: Token,
    pub canceller: String,
    pub short: String,
}

/// `getNewApplication`: the next application id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewApplication;

/// `submitApplication` by `user` (with `groups`, for placement rules and
/// queue ACLs). Answers once the application is recorded, ACCEPTED or
/// FAILED by its queue; refused outright (nothing recorded) when the id is
/// not this RM's, the AM resource is out of bounds, or the user may not
/// submit to the queue.
#[derive(Debug, Clone, PartialEq)]
pub struct SubmitApplication {
    pub submission: Submission,
    pub launch: AmLaunchContext,
    pub user: String,
    pub groups: Vec<String>,
}

/// `forceKillApplication` by `user` (with `groups`, for ACLs), with the
/// reason the client gave, from the client's address (`None` when the kill
/// did not come over RPC, as Hadoop's `Server.getRemoteIp()`). Answers
/// whether the kill is complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KillApplication {
    pub app: ApplicationId,
    pub user: String,
    pub groups: Vec<String>,
    pub reason: Option<String>,
    pub from: Option<std::net::IpAddr>,
}

/// `updateApplicationPriority` by `user`. Answers the effective priority.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateApplicationPriority {
    pub app: ApplicationId,
    pub priority: i32,
    pub user: String,
    pub groups: Vec<String>,
}

/// `moveApplicationAcrossQueues` by `user` (with `groups`, for ACLs):
/// `queue` is the target queue as the client named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoveApplication {
    pub app: ApplicationId,
    pub queue: String,
    pub user: String,
    pub groups: Vec<String>,
}

/// `updateApplicationTimeouts` by `user`: `lifetime` is the new LIFETIME
/// expiry time as the client wrote it (Hadoop's ISO 8601 form), `None` when
/// the request named no timeout. Answers once the timeout is in force (the
/// client is told the times it asked for, as Hadoop echoes them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateApplicationTimeouts {
    pub app: ApplicationId,
    pub lifetime: Option<String>,
    pub user: String,
    pub groups: Vec<String>,
}

/// `signalToContainer` by `user`: the signal goes to the container's node
/// with its next heartbeat answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignalContainer {
    pub container: ContainerId,
    pub signal: ContainerSignal,
    pub user: String,
    pub groups: Vec<String>,
}

/// `failApplicationAttempt` by `user` (`yarn applicationattempt -fail`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailApplicationAttempt {
    pub attempt: ApplicationAttemptId,
    pub user: String,
    pub groups: Vec<String>,
}

// ---- ApplicationMasterProtocol ------------------------------------------------

/// `registerApplicationMaster` of the attempt named by the AMRMToken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisterApplicationMaster {
    pub attempt: ApplicationAttemptId,
    pub host: String,
    pub rpc_port: i32,
    pub tracking_url: String,
}

/// `allocate` of the attempt named by the AMRMToken; `amrm_key_id` is the
/// master key that token was made with.
#[derive(Debug, Clone, PartialEq)]
pub struct Allocate {
    pub attempt: ApplicationAttemptId,
    pub amrm_key_id: i32,
    pub request: AllocateRequest,
}

/// `finishApplicationMaster` of the attempt named by the AMRMToken.
/// Answers whether the AM is unregistered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FinishApplicationMaster {
    pub attempt: ApplicationAttemptId,
    pub status: FinalStatus,
    pub diagnostics: String,
    pub tracking_url: String,
}

// ---- ResourceTracker ----------------------------------------------------------

/// `registerNodeManager`, with the node's rack already resolved, the
/// containers the node still holds, the applications it runs and the log
/// aggregation reports it kept from before.
#[derive(Debug, Clone)]
pub struct RegisterNode {
    pub registration: Registration,
    pub containers: Vec<ContainerStatus>,
    pub running_apps: Vec<ApplicationId>,
    pub log_reports: Vec<AppLogReport>,
}

/// The answer to a registration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeRegistration {
    /// The node is in, and verifies tokens with these keys.
    Accepted(NmMasterKeys),
    /// The NodeManager must shut down, for this reason.
    Rejected(String),
}

/// `nodeHeartbeat`: the node's status, its containers, its log aggregation
/// reports, and the ids of the master keys it already has.
#[derive(Debug, Clone)]
pub struct NodeHeartbeat {
    pub heartbeat: Heartbeat,
    pub containers: Vec<ContainerStatus>,
    /// Where the node is with aggregating applications' logs.
    pub log_reports: Vec<AppLogReport>,
    pub known_container_token_key: Option<i32>,
    pub known_nm_token_key: Option<i32>,
}

/// The answer to a heartbeat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatAnswer {
    pub reply: HeartbeatReply,
    /// Containers and applications to clean up, completions taken note of;
    /// empty unless the node may carry on (NORMAL).
    pub work: NodeWork,
    /// Keys the node does not have yet (NORMAL answers only).
    pub container_token_key: Option<MasterKey>,
    pub nm_token_key: Option<MasterKey>,
}

/// `unRegisterNodeManager`. Answers whether the node was active.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnregisterNode {
    pub node: NodeId,
}

// ---- ResourceManagerAdministrationProtocol ------------------------------------

/// `refreshQueues`, with the queue files as re-read from the configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct RefreshQueues {
    pub queues: QueueFile,
}

/// `refreshNodes`, with the include/exclude lists as re-read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefreshNodes {
    pub hosts: HostLists,
    pub mode: Decommission,
}

/// `refreshAdminAcls`, with `yarn.admin.acl` as re-read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefreshAdminAcls {
    pub acl: Acl,
}

/// `refreshClusterMaxPriority`, with `yarn.cluster.max-application-priority`
/// as re-read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefreshClusterMaxPriority {
    pub max_priority: i32,
}

/// `updateNodeResource`: new capabilities for active nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateNodeResources {
    pub nodes: Vec<(NodeId, Resource)>,
}

// ---- time and effects ----------------------------------------------------------

/// The periodic tick: node and AM liveness, key rolling, a scheduling pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tick;

/// The AM container's NodeManager accepted the start request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AmLaunched {
    pub attempt: ApplicationAttemptId,
}

/// Starting the AM container failed, for `reason`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AmLaunchFailed {
    pub attempt: ApplicationAttemptId,
    pub reason: String,
}
