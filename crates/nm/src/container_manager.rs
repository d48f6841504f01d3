//! The ContainerManagementProtocol server that ApplicationMasters and the
//! ResourceManager's AM launcher call on `yarn.nodemanager.address`.
//!
//! The server is bound before the node registers, because the NodeId the
//! ResourceManager knows the node by carries the port actually bound. It
//! offers TOKEN (DIGEST-MD5 over an NMToken, checked by
//! [`NmTokenVerifier`]) before SIMPLE, as Hadoop does; every served method
//! requires an NMToken-authenticated caller ([`NmTokenCaller`]) and then
//! delegates to [`ContainerManager`]:
//!
//! - `startContainers`, `stopContainers`, `getContainerStatuses`,
//!   `signalToContainer` are served;
//! - the other methods of Hadoop's `ContainerManagementProtocolService`
//!   answer a YarnException that names the method, so a caller fails fast
//!   with a clear message.

use hadoop_protos::yarn::{
    GetContainerStatusesRequestProto, SignalContainerRequestProto, StartContainersRequestProto,
    StopContainersRequestProto,
};
use spindle_ipc::{protocols, CallContext, RpcError, Service};
use tracing::debug;

use crate::containers::ContainerManager;
use crate::security::NmTokenCaller;

#[doc(no_inline)]
pub use crate::security::NmTokenVerifier;

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

/// The methods served; the rest of [`METHODS`] answer "not supported".
pub const SERVED: [&str; 4] = [
    "startContainers",
    "stopContainers",
    "getContainerStatuses",
    "signalToContainer",
];

fn caller(ctx: &CallContext) -> Result<NmTokenCaller, RpcError> {
    let c = NmTokenCaller::from_context(ctx);
    if let Err(e) = &c {
        debug!(peer = %ctx.peer, user = %ctx.user, method = %ctx.method, "refused: {}", e.message);
    }
    c
}

/// The container-management service backed by `manager`.
pub fn service(manager: ContainerManager) -> Service {
    let unsupported: Vec<&str> = METHODS
        .iter()
        .copied()
        .filter(|m| !SERVED.contains(m))
        .collect();
    let (m1, m2, m3, m4) = (manager.clone(), manager.clone(), manager.clone(), manager);
    Service::new(protocols::CONTAINER_MANAGEMENT)
        .method(
            "startContainers",
            move |ctx: CallContext, req: StartContainersRequestProto| {
                let m = m1.clone();
                async move { m.start_containers(&caller(&ctx)?, req) }
            },
        )
        .method(
            "stopContainers",
            move |ctx: CallContext, req: StopContainersRequestProto| {
                let m = m2.clone();
                async move { m.stop_containers(&caller(&ctx)?, req) }
            },
        )
        .method(
            "getContainerStatuses",
            move |ctx: CallContext, req: GetContainerStatusesRequestProto| {
                let m = m3.clone();
                async move { m.get_container_statuses(&caller(&ctx)?, req) }
            },
        )
        .method(
            "signalToContainer",
            move |ctx: CallContext, req: SignalContainerRequestProto| {
                let m = m4.clone();
                async move { m.signal_to_container(&caller(&ctx)?, req) }
            },
        )
        .unsupported(&unsupported)
}
