//! ApplicationMasterProtocol on the scheduler port.
//!
//! Requests carry no attempt id: the attempt is the one named by the AMRMToken that
//! authenticated the connection (SASL DIGEST-MD5), as in Hadoop. The port offers
//! only TOKEN authentication, so a client without a valid AMRMToken never gets a call
//! through.

use std::sync::Arc;

use hadoop_protos::yarn as pb;
use spindle_common::ids::ApplicationAttemptId;
use spindle_common::security::AmRmTokenIdentifier;
use spindle_ipc::{class, protocols, AuthMethod, CallContext, RpcError, Service};

use crate::apps::FinalStatus;
use crate::RmContext;

/// The attempt an AMRMToken-authenticated call belongs to.
fn attempt_of(call: &CallContext) -> Result<ApplicationAttemptId, RpcError> {
    token_of(call).map(|t| t.attempt)
}

/// The AMRMToken that authenticated the call.
fn token_of(call: &CallContext) -> Result<AmRmTokenIdentifier, RpcError> {
    match &call.auth {
        AuthMethod::Token { identifier, .. } => {
            AmRmTokenIdentifier::decode(identifier).map_err(|e| {
                RpcError::new(
                    class::ACCESS_CONTROL,
                    format!("bad AMRMToken identifier: {e}"),
                )
            })
        }
        AuthMethod::Simple => Err(RpcError::new(
            class::ACCESS_CONTROL,
            format!("No AMRMToken found for user {}", call.user),
        )),
    }
}

fn final_status_from_pb(v: Option<i32>) -> FinalStatus {
    match v.and_then(|v| pb::FinalApplicationStatusProto::try_from(v).ok()) {
        Some(pb::FinalApplicationStatusProto::AppSucceeded) => FinalStatus::Succeeded,
        Some(pb::FinalApplicationStatusProto::AppFailed) => FinalStatus::Failed,
        Some(pb::FinalApplicationStatusProto::AppKilled) => FinalStatus::Killed,
        Some(pb::FinalApplicationStatusProto::AppEnded) => FinalStatus::Ended,
        _ => FinalStatus::Undefined,
    }
}

pub fn service(ctx: Arc<RmContext>) -> Service {
    let c = ctx.clone();
    let s = Service::new(protocols::APPLICATION_MASTER).method(
        "registerApplicationMaster",
        move |call: CallContext, req: pb::RegisterApplicationMasterRequestProto| {
            let c = c.clone();
            async move {
                let attempt = attempt_of(&call)?;
                let host = req.host.unwrap_or_default();
                let port = req.rpc_port.unwrap_or(-1);
                let url = req.tracking_url.unwrap_or_default();
                c.core
                    .with(move |s, now| s.register_am(attempt, host, port, url, now))
                    .await?
            }
        },
    );
    let c = ctx.clone();
    let s = s.method(
        "allocate",
        move |call: CallContext, req: pb::AllocateRequestProto| {
            let c = c.clone();
            async move {
                let token = token_of(&call)?;
                c.core
                    .with(move |s, now| s.allocate(token.attempt, token.key_id, req, now))
                    .await?
            }
        },
    );
    let c = ctx;
    s.method(
        "finishApplicationMaster",
        move |call: CallContext, req: pb::FinishApplicationMasterRequestProto| {
            let c = c.clone();
            async move {
                let attempt = attempt_of(&call)?;
                let status = final_status_from_pb(req.final_application_status);
                let diag = req.diagnostics.unwrap_or_default();
                let url = req.tracking_url.unwrap_or_default();
                let done = c
                    .core
                    .with(move |s, now| s.finish_am(attempt, status, diag, url, now))
                    .await??;
                Ok(pb::FinishApplicationMasterResponseProto {
                    is_unregistered: Some(done),
                })
            }
        },
    )
}
