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

use std::sync::Arc;

use hadoop_protos::yarn::{
    GetContainerStatusesRequestProto, GetContainerStatusesResponseProto,
    SignalContainerRequestProto, SignalContainerResponseProto, StartContainersRequestProto,
    StartContainersResponseProto, StopContainersRequestProto, StopContainersResponseProto,
};
use spindle_common::security::service_acl::{ServicePolicy, Subject};
use spindle_ipc::methods::container_management as cm;
use spindle_ipc::server::{ConnectionCaller, ServiceAuthorization};
use spindle_ipc::{protocols, CallContext, Mechanism, RpcError, RpcServer, Service};
use tracing::debug;

use crate::config::{resolve, NmConfig};
use crate::containers::ContainerManager;
use crate::error::NmError;
use crate::security::{NmTokenCaller, SharedNodeId, TokenSecrets};

#[doc(no_inline)]
pub use crate::security::NmTokenVerifier;

/// The start's step that binds the server on `yarn.nodemanager.address`
/// (before the node registers: the NodeId carries the port bound), serving
/// `containers`, with TOKEN (an NMToken for the node `node_id` will name,
/// its password from `secrets`) offered before SIMPLE.
pub async fn bind(
    cfg: &NmConfig,
    containers: &ContainerManager,
    node_id: SharedNodeId,
    secrets: Arc<dyn TokenSecrets>,
) -> Result<RpcServer, NmError> {
    let shown = format!("{}:{}", cfg.bind_host, cfg.bind_port);
    let addr = resolve(&cfg.bind_host, cfg.bind_port, &shown).await?;
    // Every call needs an NMToken; SIMPLE only lets a token-less client hear
    // Hadoop's "No NMToken sent", and goes under Kerberos, as Hadoop's
    // server offers TOKEN and KERBEROS there (a Kerberos caller would hear
    // the same refusal).
    let mut mechanisms = vec![Mechanism::token(NmTokenVerifier::new(node_id, secrets))];
    if cfg.kerberos.is_none() {
        mechanisms.push(Mechanism::Simple);
    }
    let mut server_config = cfg
        .ipc_limits
        .server_config("nm-container-manager", mechanisms);
    server_config.authorization = cfg
        .service_policy
        .clone()
        .map(|policy| Arc::new(NmServiceAuthorizer(policy)) as Arc<dyn ServiceAuthorization>);
    RpcServer::bind(addr, vec![service(containers.clone())], server_config)
        .await
        .map_err(|source| NmError::Bind {
            addr: shown,
            source,
        })
}

/// Service-level authorization of the container-management port
/// (`security.containermanagement.protocol.acl`). Its callers are
/// ApplicationMasters authenticated by NMTokens, whose users (attempt ids)
/// have no groups: the ACL is checked by user name.
#[derive(Debug)]
struct NmServiceAuthorizer(Arc<ServicePolicy>);

impl ServiceAuthorization for NmServiceAuthorizer {
    fn authorize<'a>(
        &'a self,
        caller: ConnectionCaller<'a>,
        protocol: &'a str,
        from: std::net::IpAddr,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send + 'a>> {
        Box::pin(async move {
            let (display, principal) = caller.ugi();
            let who = Subject {
                display: &display,
                principal: principal.as_deref(),
                short: caller.user,
                groups: &[],
            };
            // No protocol here names a client principal: nothing to resolve.
            self.0.check(protocol, &who, from, &|_, _| false)
        })
    }
}

fn caller(ctx: &CallContext) -> Result<NmTokenCaller, RpcError> {
    let c = NmTokenCaller::from_context(ctx);
    if let Err(e) = &c {
        debug!(peer = %ctx.peer, user = %ctx.user, method = %ctx.method, "refused: {}", e.message);
    }
    c
}

/// The container-management service backed by `manager`.
pub fn service(manager: ContainerManager) -> Service {
    Service::new(protocols::CONTAINER_MANAGEMENT)
        .with_state(Arc::new(manager))
        .handle(&cm::START_CONTAINERS, start_containers)
        .handle(&cm::STOP_CONTAINERS, stop_containers)
        .handle(&cm::GET_CONTAINER_STATUSES, get_container_statuses)
        .handle(&cm::SIGNAL_TO_CONTAINER, signal_to_container)
        .unsupported(&[
            cm::INCREASE_CONTAINERS_RESOURCE.name,
            cm::UPDATE_CONTAINER.name,
            cm::LOCALIZE.name,
            cm::RE_INITIALIZE_CONTAINER.name,
            cm::RESTART_CONTAINER.name,
            cm::ROLLBACK_LAST_RE_INITIALIZATION.name,
            cm::COMMIT_LAST_RE_INITIALIZATION.name,
            cm::GET_LOCALIZATION_STATUSES.name,
        ])
        .into()
}

async fn start_containers(
    manager: Arc<ContainerManager>,
    call: CallContext,
    req: StartContainersRequestProto,
) -> Result<StartContainersResponseProto, RpcError> {
    let resp = manager.start_containers(&caller(&call)?, req)?;
    // With recovery on, the accepted containers are recorded before the
    // answer leaves.
    manager.records_flushed().await;
    Ok(resp)
}

async fn stop_containers(
    manager: Arc<ContainerManager>,
    call: CallContext,
    req: StopContainersRequestProto,
) -> Result<StopContainersResponseProto, RpcError> {
    manager.stop_containers(&caller(&call)?, req)
}

async fn get_container_statuses(
    manager: Arc<ContainerManager>,
    call: CallContext,
    req: GetContainerStatusesRequestProto,
) -> Result<GetContainerStatusesResponseProto, RpcError> {
    manager.get_container_statuses(&caller(&call)?, req)
}

async fn signal_to_container(
    manager: Arc<ContainerManager>,
    call: CallContext,
    req: SignalContainerRequestProto,
) -> Result<SignalContainerResponseProto, RpcError> {
    manager.signal_to_container(&caller(&call)?, req)
}
