//! HAServiceProtocol on the admin port (with HA): what `yarn rmadmin
//! -getServiceState`, `-getAllServiceState`, `-transitionToActive`,
//! `-transitionToStandby` and `-checkHealth` call, as Hadoop's
//! `AdminService` serves it. Every method checks the caller against
//! `yarn.admin.acl`; a transition asked by a user is refused while
//! automatic failover is enabled unless forced (`--forcemanual`), and one
//! asked by a failover controller is refused while it is not.

use std::sync::Arc;

use hadoop_protos::common as pb;
use pb::HaRequestSource;
use spindle_common::text::escaped;
use spindle_ipc::methods::ha_service::{
    GET_SERVICE_STATUS, MONITOR_HEALTH, TRANSITION_TO_ACTIVE, TRANSITION_TO_OBSERVER,
    TRANSITION_TO_STANDBY,
};
use spindle_ipc::{class, protocols, CallContext, RpcError, Service};
use tracing::{info, warn};

use crate::rpc::admin_service::authorize;
use crate::runtime::active::{RmControl, ServiceState};

const SERVICE_FAILED: &str = "org.apache.hadoop.ha.ServiceFailedException";
const HEALTH_CHECK_FAILED: &str = "org.apache.hadoop.ha.HealthCheckFailedException";

pub fn service(control: Arc<RmControl>) -> Service {
    Service::new(protocols::HA_SERVICE)
        .with_state(control)
        .handle(&MONITOR_HEALTH, monitor_health)
        .handle(&TRANSITION_TO_ACTIVE, transition_to_active)
        .handle(&TRANSITION_TO_STANDBY, transition_to_standby)
        .handle(&TRANSITION_TO_OBSERVER, transition_to_observer)
        .handle(&GET_SERVICE_STATUS, get_service_status)
        .into()
}

/// `AdminService.checkHaStateChange`.
fn check_ha_state_change(
    control: &RmControl,
    call: &CallContext,
    source: Option<i32>,
) -> Result<(), RpcError> {
    let automatic = control.ha().is_some_and(|h| h.automatic_failover);
    let source = source
        .and_then(|s| HaRequestSource::try_from(s).ok())
        .unwrap_or(HaRequestSource::RequestByUser);
    match source {
        HaRequestSource::RequestByUser if automatic => Err(RpcError::new(
            class::ACCESS_CONTROL,
            "Manual failover for this ResourceManager is disallowed, because automatic \
             failover is enabled.",
        )),
        HaRequestSource::RequestByUserForced if automatic => {
            warn!(
                user = %escaped(&call.user),
                "Allowing manual failover even though automatic failover is enabled, because \
                 the user specified the force flag"
            );
            Ok(())
        }
        HaRequestSource::RequestByZkfc if !automatic => Err(RpcError::new(
            class::ACCESS_CONTROL,
            "Request from ZK failover controller denied since automatic failover is not enabled",
        )),
        _ => Ok(()),
    }
}

async fn monitor_health(
    control: Arc<RmControl>,
    call: CallContext,
    _req: pb::MonitorHealthRequestProto,
) -> Result<pb::MonitorHealthResponseProto, RpcError> {
    let ctx = control.context();
    authorize(ctx, &call, MONITOR_HEALTH.name).await?;
    if control.service_state() == ServiceState::Active && ctx.core.query(|_| ()).await.is_err() {
        return Err(RpcError::new(
            HEALTH_CHECK_FAILED,
            "Active ResourceManager services are not running!",
        ));
    }
    Ok(pb::MonitorHealthResponseProto {})
}

async fn transition_to_active(
    control: Arc<RmControl>,
    call: CallContext,
    req: pb::TransitionToActiveRequestProto,
) -> Result<pb::TransitionToActiveResponseProto, RpcError> {
    authorize(control.context(), &call, TRANSITION_TO_ACTIVE.name).await?;
    check_ha_state_change(&control, &call, Some(req.req_info.req_source))?;
    if let Err(e) = control.transition_to_active().await {
        warn!(user = %escaped(&call.user), error = %e, "transition to active failed");
        return Err(RpcError::new(
            SERVICE_FAILED,
            format!("Error when transitioning to Active mode: {e}"),
        ));
    }
    info!(user = %escaped(&call.user), "transitioned to active");
    Ok(pb::TransitionToActiveResponseProto {})
}

async fn transition_to_standby(
    control: Arc<RmControl>,
    call: CallContext,
    req: pb::TransitionToStandbyRequestProto,
) -> Result<pb::TransitionToStandbyResponseProto, RpcError> {
    authorize(control.context(), &call, TRANSITION_TO_STANDBY.name).await?;
    check_ha_state_change(&control, &call, Some(req.req_info.req_source))?;
    if let Err(e) = control.transition_to_standby().await {
        return Err(RpcError::new(
            SERVICE_FAILED,
            format!("Error when transitioning to Standby mode: {e}"),
        ));
    }
    info!(user = %escaped(&call.user), "transitioned to standby");
    Ok(pb::TransitionToStandbyResponseProto {})
}

/// A ResourceManager has no observer state (AdminService refuses before
/// any check).
async fn transition_to_observer(
    _control: Arc<RmControl>,
    _call: CallContext,
    _req: pb::TransitionToObserverRequestProto,
) -> Result<pb::TransitionToObserverResponseProto, RpcError> {
    Err(RpcError::new(
        SERVICE_FAILED,
        "Does not support transition to Observer",
    ))
}

async fn get_service_status(
    control: Arc<RmControl>,
    call: CallContext,
    _req: pb::GetServiceStatusRequestProto,
) -> Result<pb::GetServiceStatusResponseProto, RpcError> {
    // Hadoop's AdminService checks this call as `getServiceState`, not by
    // the method's name.
    authorize(control.context(), &call, "getServiceState").await?;
    let state = match control.service_state() {
        ServiceState::Active => pb::HaServiceStateProto::Active,
        ServiceState::Standby => pb::HaServiceStateProto::Standby,
    };
    // An active or standby RM is ready to become active (AdminService).
    Ok(pb::GetServiceStatusResponseProto {
        state: state as i32,
        ready_to_become_active: Some(true),
        not_ready_reason: None,
    })
}
