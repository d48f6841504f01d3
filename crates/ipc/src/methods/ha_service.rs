//! `HAServiceProtocol`: what `yarn rmadmin -getServiceState`,
//! `-transitionToActive`, `-transitionToStandby`, `-checkHealth` and a
//! failover controller call on a ResourceManager's admin port with HA.
//!
//! Hadoop marks every method `@Idempotent`: a transition to the state a
//! server is already in does nothing.

use hadoop_protos::common as hc;

use super::{Method, Signature};
use crate::protocols::HA_SERVICE as PROTOCOL;

/// Fails unless the server is healthy.
pub const MONITOR_HEALTH: Method<hc::MonitorHealthRequestProto, hc::MonitorHealthResponseProto> =
    Method::idempotent(PROTOCOL, "monitorHealth");

/// Makes the server the active one.
pub const TRANSITION_TO_ACTIVE: Method<
    hc::TransitionToActiveRequestProto,
    hc::TransitionToActiveResponseProto,
> = Method::idempotent(PROTOCOL, "transitionToActive");

/// Makes the server a standby.
pub const TRANSITION_TO_STANDBY: Method<
    hc::TransitionToStandbyRequestProto,
    hc::TransitionToStandbyResponseProto,
> = Method::idempotent(PROTOCOL, "transitionToStandby");

/// Makes the server an observer (a ResourceManager refuses).
pub const TRANSITION_TO_OBSERVER: Method<
    hc::TransitionToObserverRequestProto,
    hc::TransitionToObserverResponseProto,
> = Method::idempotent(PROTOCOL, "transitionToObserver");

/// The server's HA state and whether it could become active.
pub const GET_SERVICE_STATUS: Method<
    hc::GetServiceStatusRequestProto,
    hc::GetServiceStatusResponseProto,
> = Method::idempotent(PROTOCOL, "getServiceStatus");

/// Every method of the protocol, in the order of its `.proto` service.
pub const ALL: &[Signature] = &[
    MONITOR_HEALTH.signature(),
    TRANSITION_TO_ACTIVE.signature(),
    TRANSITION_TO_STANDBY.signature(),
    TRANSITION_TO_OBSERVER.signature(),
    GET_SERVICE_STATUS.signature(),
];
