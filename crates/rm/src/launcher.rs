//! The effect executor: network work the RM state asks for, done off the owner task.
//!
//! Today that is starting AM containers: the RM connects to the NodeManager with the
//! attempt's NMToken (SASL DIGEST-MD5, as Hadoop's AMLauncher does) and calls
//! startContainers; the outcome goes back to the state as a command.

use std::time::Duration;

use hadoop_protos::yarn as pb;
use spindle_ipc::client::ClientToken;
use spindle_ipc::{protocols, ClientOptions, IpcClient};
use tokio::sync::mpsc;
use tracing::{debug, warn};

use crate::command::{AmLaunchFailed, AmLaunched};
use crate::convert::start_containers_request;
use crate::core::CoreHandle;
use crate::launch::Effect;

/// How long one AM launch may take before it counts as failed.
const LAUNCH_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs effects until the state's owner stops.
pub async fn run(core: CoreHandle, mut effects: mpsc::UnboundedReceiver<Effect>) {
    while let Some(effect) = effects.recv().await {
        let core = core.clone();
        tokio::spawn(async move {
            match effect {
                Effect::LaunchAm {
                    attempt,
                    node,
                    nm_token,
                    container_token,
                    launch: context,
                } => {
                    let result = match start_containers_request(&context, &container_token) {
                        Ok(request) => {
                            let outcome = tokio::time::timeout(
                                LAUNCH_TIMEOUT,
                                launch(&node.to_string(), &attempt.to_string(), nm_token, request),
                            )
                            .await;
                            match outcome {
                                Ok(r) => r,
                                Err(_) => Err(format!(
                                    "startContainers on {node} timed out after {} s",
                                    LAUNCH_TIMEOUT.as_secs()
                                )),
                            }
                        }
                        Err(e) => Err(format!("the AM launch context cannot be rebuilt: {e}")),
                    };
                    let _ = match result {
                        Ok(()) => {
                            debug!(%attempt, %node, "AM container started");
                            core.call(AmLaunched { attempt }).await
                        }
                        Err(reason) => {
                            warn!(%attempt, %node, %reason, "AM launch failed");
                            core.call(AmLaunchFailed { attempt, reason }).await
                        }
                    };
                }
            }
        });
    }
}

async fn launch(
    addr: &str,
    attempt: &str,
    nm_token: spindle_common::security::Token,
    request: pb::StartContainersRequestProto,
) -> Result<(), String> {
    let token = ClientToken {
        identifier: nm_token.identifier,
        password: nm_token.password,
        kind: nm_token.kind,
        service: nm_token.service,
    };
    let options = ClientOptions::new(attempt, protocols::CONTAINER_MANAGEMENT).with_token(token);
    let client = IpcClient::connect(addr, options)
        .await
        .map_err(|e| e.to_string())?;
    let resp: pb::StartContainersResponseProto = client
        .call("startContainers", &request)
        .await
        .map_err(|e| e.to_string())?;
    if let Some(failed) = resp.failed_requests.first() {
        let ex = failed.exception.clone().unwrap_or_default();
        return Err(format!(
            "{}: {}",
            ex.class_name.unwrap_or_default(),
            ex.message.unwrap_or_default()
        ));
    }
    if resp.succeeded_requests.is_empty() {
        return Err("the NodeManager reported neither success nor failure".into());
    }
    Ok(())
}
