//! `ApplicationClientProtocol` (with `ApplicationBaseProtocol`): what clients
//! (`yarn application|node|queue|cluster`, `YarnClient`) call on the
//! ResourceManager's client port.
//!
//! Every method of `ApplicationBaseProtocol` (reports, lists, delegation
//! tokens) is `@Idempotent`, as are most of `ApplicationClientProtocol`'s:
//! a repeated submission is recognised by its application id, a repeated
//! kill, move, priority or timeout change finds the work done. Hadoop marks
//! neither failing an attempt (a repeat fails the next attempt), signalling
//! a container, updating or deleting a reservation, nor its newer read-only
//! calls (node labels, attributes, resource profiles and types).

use hadoop_protos::common as hc;
use hadoop_protos::yarn as pb;

use super::{Method, Signature};
use crate::protocols::APPLICATION_CLIENT as PROTOCOL;

/// A new application id, and the largest container a request may ask for.
pub const GET_NEW_APPLICATION: Method<
    pb::GetNewApplicationRequestProto,
    pb::GetNewApplicationResponseProto,
> = Method::idempotent(PROTOCOL, "getNewApplication");

/// An application's report.
pub const GET_APPLICATION_REPORT: Method<
    pb::GetApplicationReportRequestProto,
    pb::GetApplicationReportResponseProto,
> = Method::idempotent(PROTOCOL, "getApplicationReport");

/// Submits an application under an id from `getNewApplication`.
pub const SUBMIT_APPLICATION: Method<
    pb::SubmitApplicationRequestProto,
    pb::SubmitApplicationResponseProto,
> = Method::idempotent(PROTOCOL, "submitApplication");

/// Fails an application's current attempt (`yarn applicationattempt -fail`).
pub const FAIL_APPLICATION_ATTEMPT: Method<
    pb::FailApplicationAttemptRequestProto,
    pb::FailApplicationAttemptResponseProto,
> = Method::not_idempotent(PROTOCOL, "failApplicationAttempt");

/// Kills an application.
pub const FORCE_KILL_APPLICATION: Method<
    pb::KillApplicationRequestProto,
    pb::KillApplicationResponseProto,
> = Method::idempotent(PROTOCOL, "forceKillApplication");

/// The cluster's node and application counts.
pub const GET_CLUSTER_METRICS: Method<
    pb::GetClusterMetricsRequestProto,
    pb::GetClusterMetricsResponseProto,
> = Method::idempotent(PROTOCOL, "getClusterMetrics");

/// The reports of the applications a filter selects.
pub const GET_APPLICATIONS: Method<
    pb::GetApplicationsRequestProto,
    pb::GetApplicationsResponseProto,
> = Method::idempotent(PROTOCOL, "getApplications");

/// The reports of the nodes in the given states.
pub const GET_CLUSTER_NODES: Method<
    pb::GetClusterNodesRequestProto,
    pb::GetClusterNodesResponseProto,
> = Method::idempotent(PROTOCOL, "getClusterNodes");

/// A queue, optionally with its children and applications.
pub const GET_QUEUE_INFO: Method<pb::GetQueueInfoRequestProto, pb::GetQueueInfoResponseProto> =
    Method::idempotent(PROTOCOL, "getQueueInfo");

/// The caller's operations on each queue.
pub const GET_QUEUE_USER_ACLS: Method<
    pb::GetQueueUserAclsInfoRequestProto,
    pb::GetQueueUserAclsInfoResponseProto,
> = Method::idempotent(PROTOCOL, "getQueueUserAcls");

/// A ResourceManager delegation token.
pub const GET_DELEGATION_TOKEN: Method<
    hc::GetDelegationTokenRequestProto,
    hc::GetDelegationTokenResponseProto,
> = Method::idempotent(PROTOCOL, "getDelegationToken");

/// Renews a delegation token.
pub const RENEW_DELEGATION_TOKEN: Method<
    hc::RenewDelegationTokenRequestProto,
    hc::RenewDelegationTokenResponseProto,
> = Method::idempotent(PROTOCOL, "renewDelegationToken");

/// Cancels a delegation token.
pub const CANCEL_DELEGATION_TOKEN: Method<
    hc::CancelDelegationTokenRequestProto,
    hc::CancelDelegationTokenResponseProto,
> = Method::idempotent(PROTOCOL, "cancelDelegationToken");

/// Moves an application to another leaf queue.
pub const MOVE_APPLICATION_ACROSS_QUEUES: Method<
    pb::MoveApplicationAcrossQueuesRequestProto,
    pb::MoveApplicationAcrossQueuesResponseProto,
> = Method::idempotent(PROTOCOL, "moveApplicationAcrossQueues");

/// An application attempt's report.
pub const GET_APPLICATION_ATTEMPT_REPORT: Method<
    pb::GetApplicationAttemptReportRequestProto,
    pb::GetApplicationAttemptReportResponseProto,
> = Method::idempotent(PROTOCOL, "getApplicationAttemptReport");

/// The reports of an application's attempts.
pub const GET_APPLICATION_ATTEMPTS: Method<
    pb::GetApplicationAttemptsRequestProto,
    pb::GetApplicationAttemptsResponseProto,
> = Method::idempotent(PROTOCOL, "getApplicationAttempts");

/// A container's report.
pub const GET_CONTAINER_REPORT: Method<
    pb::GetContainerReportRequestProto,
    pb::GetContainerReportResponseProto,
> = Method::idempotent(PROTOCOL, "getContainerReport");

/// The reports of an attempt's containers.
pub const GET_CONTAINERS: Method<pb::GetContainersRequestProto, pb::GetContainersResponseProto> =
    Method::idempotent(PROTOCOL, "getContainers");

/// A new reservation id.
pub const GET_NEW_RESERVATION: Method<
    pb::GetNewReservationRequestProto,
    pb::GetNewReservationResponseProto,
> = Method::idempotent(PROTOCOL, "getNewReservation");

/// Submits a reservation.
pub const SUBMIT_RESERVATION: Method<
    pb::ReservationSubmissionRequestProto,
    pb::ReservationSubmissionResponseProto,
> = Method::idempotent(PROTOCOL, "submitReservation");

/// Changes a reservation.
pub const UPDATE_RESERVATION: Method<
    pb::ReservationUpdateRequestProto,
    pb::ReservationUpdateResponseProto,
> = Method::not_idempotent(PROTOCOL, "updateReservation");

/// Deletes a reservation.
pub const DELETE_RESERVATION: Method<
    pb::ReservationDeleteRequestProto,
    pb::ReservationDeleteResponseProto,
> = Method::not_idempotent(PROTOCOL, "deleteReservation");

/// A plan's reservations.
pub const LIST_RESERVATIONS: Method<
    pb::ReservationListRequestProto,
    pb::ReservationListResponseProto,
> = Method::not_idempotent(PROTOCOL, "listReservations");

/// The node labels of each node.
pub const GET_NODE_TO_LABELS: Method<
    pb::GetNodesToLabelsRequestProto,
    pb::GetNodesToLabelsResponseProto,
> = Method::not_idempotent(PROTOCOL, "getNodeToLabels");

/// The nodes of each node label.
pub const GET_LABELS_TO_NODES: Method<
    pb::GetLabelsToNodesRequestProto,
    pb::GetLabelsToNodesResponseProto,
> = Method::not_idempotent(PROTOCOL, "getLabelsToNodes");

/// The cluster's node labels.
pub const GET_CLUSTER_NODE_LABELS: Method<
    pb::GetClusterNodeLabelsRequestProto,
    pb::GetClusterNodeLabelsResponseProto,
> = Method::not_idempotent(PROTOCOL, "getClusterNodeLabels");

/// Changes an application's priority.
pub const UPDATE_APPLICATION_PRIORITY: Method<
    pb::UpdateApplicationPriorityRequestProto,
    pb::UpdateApplicationPriorityResponseProto,
> = Method::idempotent(PROTOCOL, "updateApplicationPriority");

/// Sends a signal to a container through its node.
pub const SIGNAL_TO_CONTAINER: Method<
    pb::SignalContainerRequestProto,
    pb::SignalContainerResponseProto,
> = Method::not_idempotent(PROTOCOL, "signalToContainer");

/// Changes an application's lifetime.
pub const UPDATE_APPLICATION_TIMEOUTS: Method<
    pb::UpdateApplicationTimeoutsRequestProto,
    pb::UpdateApplicationTimeoutsResponseProto,
> = Method::idempotent(PROTOCOL, "updateApplicationTimeouts");

/// Every resource profile.
pub const GET_RESOURCE_PROFILES: Method<
    pb::GetAllResourceProfilesRequestProto,
    pb::GetAllResourceProfilesResponseProto,
> = Method::not_idempotent(PROTOCOL, "getResourceProfiles");

/// One resource profile.
pub const GET_RESOURCE_PROFILE: Method<
    pb::GetResourceProfileRequestProto,
    pb::GetResourceProfileResponseProto,
> = Method::not_idempotent(PROTOCOL, "getResourceProfile");

/// The resource types the cluster knows.
pub const GET_RESOURCE_TYPE_INFO: Method<
    pb::GetAllResourceTypeInfoRequestProto,
    pb::GetAllResourceTypeInfoResponseProto,
> = Method::not_idempotent(PROTOCOL, "getResourceTypeInfo");

/// The cluster's node attributes.
pub const GET_CLUSTER_NODE_ATTRIBUTES: Method<
    pb::GetClusterNodeAttributesRequestProto,
    pb::GetClusterNodeAttributesResponseProto,
> = Method::not_idempotent(PROTOCOL, "getClusterNodeAttributes");

/// The nodes of each node attribute.
pub const GET_ATTRIBUTES_TO_NODES: Method<
    pb::GetAttributesToNodesRequestProto,
    pb::GetAttributesToNodesResponseProto,
> = Method::not_idempotent(PROTOCOL, "getAttributesToNodes");

/// The node attributes of each node.
pub const GET_NODES_TO_ATTRIBUTES: Method<
    pb::GetNodesToAttributesRequestProto,
    pb::GetNodesToAttributesResponseProto,
> = Method::not_idempotent(PROTOCOL, "getNodesToAttributes");

/// Every method of the protocol, in the order of its `.proto` service.
pub const ALL: &[Signature] = &[
    GET_NEW_APPLICATION.signature(),
    GET_APPLICATION_REPORT.signature(),
    SUBMIT_APPLICATION.signature(),
    FAIL_APPLICATION_ATTEMPT.signature(),
    FORCE_KILL_APPLICATION.signature(),
    GET_CLUSTER_METRICS.signature(),
    GET_APPLICATIONS.signature(),
    GET_CLUSTER_NODES.signature(),
    GET_QUEUE_INFO.signature(),
    GET_QUEUE_USER_ACLS.signature(),
    GET_DELEGATION_TOKEN.signature(),
    RENEW_DELEGATION_TOKEN.signature(),
    CANCEL_DELEGATION_TOKEN.signature(),
    MOVE_APPLICATION_ACROSS_QUEUES.signature(),
    GET_APPLICATION_ATTEMPT_REPORT.signature(),
    GET_APPLICATION_ATTEMPTS.signature(),
    GET_CONTAINER_REPORT.signature(),
    GET_CONTAINERS.signature(),
    GET_NEW_RESERVATION.signature(),
    SUBMIT_RESERVATION.signature(),
    UPDATE_RESERVATION.signature(),
    DELETE_RESERVATION.signature(),
    LIST_RESERVATIONS.signature(),
    GET_NODE_TO_LABELS.signature(),
    GET_LABELS_TO_NODES.signature(),
    GET_CLUSTER_NODE_LABELS.signature(),
    UPDATE_APPLICATION_PRIORITY.signature(),
    SIGNAL_TO_CONTAINER.signature(),
    UPDATE_APPLICATION_TIMEOUTS.signature(),
    GET_RESOURCE_PROFILES.signature(),
    GET_RESOURCE_PROFILE.signature(),
    GET_RESOURCE_TYPE_INFO.signature(),
    GET_CLUSTER_NODE_ATTRIBUTES.signature(),
    GET_ATTRIBUTES_TO_NODES.signature(),
    GET_NODES_TO_ATTRIBUTES.signature(),
];
