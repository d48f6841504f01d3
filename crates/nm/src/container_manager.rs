//! The ContainerManagementProtocol server that ApplicationMasters and the
//! ResourceManager's AM launcher call on `yarn.nodemanager.address`.
//!
//! The server is bound before the node registers, because the NodeId the
//! ResourceManager knows the node by carries the port actually bound. In
//! this stage no container operation is served yet: every method of
//! Hadoop's `ContainerManagementProtocolService` answers a YarnException that
//! names the method, so a caller fails fast with a clear message instead of
//! waiting or seeing an unknown-method error.

use spindle_ipc::{protocols, Service};

/// Every rpc of Hadoop's `ContainerManagementProtocolService`, in the order
/// of `containermanagement_protocol.proto`.
pub const METHODS: [&str; 12] = [
    "startContainers",
    "stopContainers",
    "getContainerStatuses",
    "increaseContainersResource",
    "updateContainer",
    "signalToContainer",
    "localize",
    "reInitializeContainer",
    "restartContainer",
    "rollbackLastReInitialization",
    "commitLastReInitialization",
    "getLocalizationStatuses",
];

/// The container-management service as served now.
pub fn service() -> Service {
    Service::new(protocols::CONTAINER_MANAGEMENT).unsupported(&METHODS)
}
