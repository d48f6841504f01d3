//! The effect executor: network work the RM state asks for, done off the owner task.
//!
//! Today that is starting AM containers: the RM connects to the NodeManager with the
//! attempt's NMToken (SASL DIGEST-MD5, as Hadoop's AMLauncher does) and calls
//! startContainers; the outcome goes back to the state as a command. The connection
//! follows Hadoop's NMProxy rules (`yarn.client.nodemanager-connect.*`): an unreachable
//! NodeManager is retried until the wait runs out, and then the launch fails.

use std::sync::Arc;

use hadoop_protos::yarn as pb;
use spindle_common::conf::{ConfError, Configuration};
use spindle_common::text::escaped;
use spindle_ipc::methods::container_management::START_CONTAINERS;
use spindle_ipc::{protocols, yarn_conf, ProxyConfig, RpcProxy};
use tokio::sync::mpsc;
use tracing::{debug, warn};

use crate::model::convert::start_containers_request;
use crate::model::launch::Effect;
use crate::runtime::core::CoreHandle;
use crate::state::command::{AmLaunchFailed, AmLaunched};

/// How the launcher reaches NodeManagers: the configuration the NMProxy
/// settings are read from, checked once at start-up.
#[derive(Clone)]
pub struct Launcher {
    conf: Arc<Configuration>,
}

impl Launcher {
    /// Fails when the `yarn.client.nodemanager-connect.*` or `ipc.client.*`
    /// settings are invalid, so that a bad value stops the RM at start-up
    /// rather than failing every AM launch.
    pub fn new(conf: &Configuration) -> Result<Launcher, ConfError> {
        Launcher::proxy_config(conf, "localhost:0", "check")?;
        Ok(Launcher {
            conf: Arc::new(conf.clone()),
        })
    }

    fn proxy_config(
        conf: &Configuration,
        addr: &str,
        attempt: &str,
    ) -> Result<ProxyConfig, ConfError> {
        yarn_conf::nm_client(conf, addr, attempt, protocols::CONTAINER_MANAGEMENT)
    }

    /// Runs effects until the state's owner stops.
    pub async fn run(self, core: CoreHandle, mut effects: mpsc::UnboundedReceiver<Effect>) {
        while let Some(effect) = effects.recv().await {
            let core = core.clone();
            let launcher = self.clone();
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
                                launcher
                                    .launch(
                                        &node.to_string(),
                                        &attempt.to_string(),
                                        nm_token,
                                        request,
                                    )
                                    .await
                            }
                            Err(e) => Err(format!("the AM launch context cannot be rebuilt: {e}")),
                        };
                        let _ = match result {
                            Ok(()) => {
                                debug!(%attempt, node = %escaped(&node.to_string()), "AM container started");
                                core.call(AmLaunched { attempt }).await
                            }
                            Err(reason) => {
                                warn!(%attempt, node = %escaped(&node.to_string()), reason = %escaped(&reason), "AM launch failed");
                                core.call(AmLaunchFailed { attempt, reason }).await
                            }
                        };
                    }
                }
            });
        }
    }

    async fn launch(
        &self,
        addr: &str,
        attempt: &str,
        nm_token: spindle_common::security::Token,
        request: pb::StartContainersRequestProto,
    ) -> Result<(), String> {
        let config = Launcher::proxy_config(&self.conf, addr, attempt)
            .map_err(|e| e.to_string())?
            .with_token(nm_token);
        let proxy = RpcProxy::new(config);
        let resp = proxy
            .call(&START_CONTAINERS, &request)
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
}
