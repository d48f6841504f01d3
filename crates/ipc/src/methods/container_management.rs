//! `ContainerManagementProtocol`: what ApplicationMasters and the
//! ResourceManager's AM launcher call on a NodeManager, authenticated by an
//! NMToken.
//!
//! Hadoop marks none of its methods. Spindle's reading: a start repeated
//! after the node acted on it is refused ("already running"), so a start is
//! never sent twice; stopping a stopped container succeeds and a status
//! query changes nothing, so those two may be (and are marked
//! `Idempotent` here).

use hadoop_protos::yarn as pb;

use super::{Method, Signature};
use crate::protocols::CONTAINER_MANAGEMENT as PROTOCOL;

/// Starts containers, each with its launch context and container token.
pub const START_CONTAINERS: Method<
    pb::StartContainersRequestProto,
    pb::StartContainersResponseProto,
> = Method::not_idempotent(PROTOCOL, "startContainers");

/// Stops containers.
pub const STOP_CONTAINERS: Method<pb::StopContainersRequestProto, pb::StopContainersResponseProto> =
    Method::idempotent(PROTOCOL, "stopContainers");

/// Containers' statuses.
pub const GET_CONTAINER_STATUSES: Method<
    pb::GetContainerStatusesRequestProto,
    pb::GetContainerStatusesResponseProto,
> = Method::idempotent(PROTOCOL, "getContainerStatuses");

/// Grows containers' resources.
pub const INCREASE_CONTAINERS_RESOURCE: Method<
    pb::IncreaseContainersResourceRequestProto,
    pb::IncreaseContainersResourceResponseProto,
> = Method::not_idempotent(PROTOCOL, "increaseContainersResource");

/// Changes containers' resources.
pub const UPDATE_CONTAINER: Method<
    pb::ContainerUpdateRequestProto,
    pb::ContainerUpdateResponseProto,
> = Method::not_idempotent(PROTOCOL, "updateContainer");

/// Sends a signal to a container.
pub const SIGNAL_TO_CONTAINER: Method<
    pb::SignalContainerRequestProto,
    pb::SignalContainerResponseProto,
> = Method::not_idempotent(PROTOCOL, "signalToContainer");

/// Localizes more resources for a running container.
pub const LOCALIZE: Method<
    pb::ResourceLocalizationRequestProto,
    pb::ResourceLocalizationResponseProto,
> = Method::not_idempotent(PROTOCOL, "localize");

/// Restarts a container with a new launch context.
pub const RE_INITIALIZE_CONTAINER: Method<
    pb::ReInitializeContainerRequestProto,
    pb::ReInitializeContainerResponseProto,
> = Method::not_idempotent(PROTOCOL, "reInitializeContainer");

/// Restarts a container.
pub const RESTART_CONTAINER: Method<pb::ContainerIdProto, pb::RestartContainerResponseProto> =
    Method::not_idempotent(PROTOCOL, "restartContainer");

/// Undoes the last re-initialization.
pub const ROLLBACK_LAST_RE_INITIALIZATION: Method<pb::ContainerIdProto, pb::RollbackResponseProto> =
    Method::not_idempotent(PROTOCOL, "rollbackLastReInitialization");

/// Keeps the last re-initialization.
pub const COMMIT_LAST_RE_INITIALIZATION: Method<pb::ContainerIdProto, pb::CommitResponseProto> =
    Method::not_idempotent(PROTOCOL, "commitLastReInitialization");

/// Containers' localization statuses.
pub const GET_LOCALIZATION_STATUSES: Method<
    pb::GetLocalizationStatusesRequestProto,
    pb::GetLocalizationStatusesResponseProto,
> = Method::not_idempotent(PROTOCOL, "getLocalizationStatuses");

/// Every method of the protocol, in the order of its `.proto` service.
pub const ALL: &[Signature] = &[
    START_CONTAINERS.signature(),
    STOP_CONTAINERS.signature(),
    GET_CONTAINER_STATUSES.signature(),
    INCREASE_CONTAINERS_RESOURCE.signature(),
    UPDATE_CONTAINER.signature(),
    SIGNAL_TO_CONTAINER.signature(),
    LOCALIZE.signature(),
    RE_INITIALIZE_CONTAINER.signature(),
    RESTART_CONTAINER.signature(),
    ROLLBACK_LAST_RE_INITIALIZATION.signature(),
    COMMIT_LAST_RE_INITIALIZATION.signature(),
    GET_LOCALIZATION_STATUSES.signature(),
];
