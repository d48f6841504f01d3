//! `YarnClient`: submitting and watching applications on the
//! ResourceManager's client port (ApplicationClientProtocol), as Hadoop's
//! `YarnClientImpl` does it.
//!
//! The connection is plain SIMPLE authentication as the current user
//! ([`spindle_common::current_user`]: `HADOOP_USER_NAME`, else the OS user);
//! the ResourceManager makes that user the application's owner. Calls go
//! through the client proxy with `ClientRMProxy`'s rules
//! ([`spindle_ipc::yarn_conf::rm_client`]): retried while the
//! ResourceManager is unreachable, for `yarn.resourcemanager.connect.max-wait.ms`,
//! and with RM HA failed over across `yarn.resourcemanager.ha.rm-ids`.

use std::time::{Duration, Instant};

use hadoop_protos::yarn as pb;
use spindle_common::conf::{keys, Configuration};
use spindle_common::security::Credentials;
use spindle_common::{current_user, ApplicationId, Resource};
use spindle_ipc::methods::application_client::{
    FORCE_KILL_APPLICATION, GET_APPLICATIONS, GET_APPLICATION_REPORT, GET_NEW_APPLICATION,
    SUBMIT_APPLICATION,
};
use spindle_ipc::{class, protocols, yarn_conf, Method, ProxyConfig, RpcProxy};
use tracing::{debug, info};

use crate::convert::{app_id_from_pb, app_id_to_pb, priority_to_pb, resource_to_pb};
use crate::error::AmError;
use crate::launch::LaunchContext;
use crate::records::{AppReport, AppState};

/// How often the client re-asks while waiting for an asynchronous operation
/// (submission, kill) to take effect. Hadoop's default is 200 ms.
pub const POLL_INTERVAL_KEY: &str = "yarn.client.application-client-protocol.poll-interval-ms";
/// How long it waits in total; negative means forever (Hadoop's default, −1).
pub const POLL_TIMEOUT_KEY: &str = "yarn.client.application-client-protocol.poll-timeout-ms";
const DEFAULT_POLL_INTERVAL_MS: i64 = 200;
const DEFAULT_POLL_TIMEOUT_MS: i64 = -1;

/// An integer setting that may be absent from the configuration (and from
/// Spindle's built-in defaults): its value if set, else `default`. A value
/// that is set but not an integer is an error naming where it came from.
pub(crate) fn conf_i64(conf: &Configuration, key: &str, default: i64) -> Result<i64, AmError> {
    match conf.get_trimmed(key).filter(|v| !v.is_empty()) {
        Some(_) => Ok(conf.get_i64(key)?),
        None => Ok(default),
    }
}

/// `host:port` of a configured address, with IPv6 hosts in brackets.
pub(crate) fn conf_addr(conf: &Configuration, key: &str) -> Result<String, AmError> {
    let (host, port) = conf.get_socket_addr(key)?;
    Ok(yarn_conf::join_host_port(&host, port))
}

/// Everything needed to submit an application (Hadoop's
/// `ApplicationSubmissionContext`).
#[derive(Debug, Clone)]
pub struct ApplicationSubmission {
    pub name: String,
    /// The queue; "default" unless set.
    pub queue: String,
    /// The application type shown by `yarn application -list`; "YARN" unless set.
    pub app_type: String,
    /// Memory and cores of the ApplicationMaster's container.
    pub am_resource: Resource,
    /// What the ApplicationMaster container runs: commands, environment,
    /// local resources and tokens. The ResourceManager adds the AMRMToken to
    /// the tokens.
    pub am: LaunchContext,
    /// How many attempts the application gets; `None` for the cluster's
    /// `yarn.resourcemanager.am.max-attempts`.
    pub max_attempts: Option<i32>,
    pub tags: Vec<String>,
    pub priority: Option<i32>,
    /// Keep running containers when an AM attempt fails.
    pub keep_containers_across_attempts: bool,
}

impl ApplicationSubmission {
    pub fn new(name: impl Into<String>, am_resource: Resource, am: LaunchContext) -> Self {
        ApplicationSubmission {
            name: name.into(),
            queue: "default".into(),
            app_type: "YARN".into(),
            am_resource,
            am,
            max_attempts: None,
            tags: Vec::new(),
            priority: None,
            keep_containers_across_attempts: false,
        }
    }

    /// Adds `tokens` to the ApplicationMaster's credentials.
    pub fn with_tokens(mut self, tokens: &Credentials) -> Self {
        self.am
            .tokens
            .get_or_insert_with(Credentials::new)
            .add_all(tokens);
        self
    }

    pub fn to_pb(&self, id: ApplicationId) -> pb::ApplicationSubmissionContextProto {
        pb::ApplicationSubmissionContextProto {
            application_id: Some(app_id_to_pb(&id)),
            application_name: Some(self.name.clone()),
            queue: Some(self.queue.clone()),
            priority: self.priority.map(priority_to_pb),
            am_container_spec: Some(self.am.to_pb()),
            cancel_tokens_when_complete: Some(true),
            unmanaged_am: Some(false),
            max_app_attempts: Some(self.max_attempts.unwrap_or(0)),
            resource: Some(resource_to_pb(self.am_resource)),
            application_type: Some(self.app_type.clone()),
            keep_containers_across_application_attempts: Some(self.keep_containers_across_attempts),
            application_tags: self.tags.clone(),
            attempt_failures_validity_interval: Some(-1),
            ..Default::default()
        }
    }
}

/// A connection to the ResourceManager's client port.
#[derive(Clone)]
pub struct YarnClient {
    ipc: RpcProxy,
    user: String,
    poll_interval: Duration,
    /// `None`: wait forever.
    poll_timeout: Option<Duration>,
}

impl std::fmt::Debug for YarnClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("YarnClient")
            .field("rm", &self.ipc.addr())
            .field("servers", &self.ipc.config().servers)
            .field("user", &self.user)
            .finish()
    }
}

impl YarnClient {
    /// Connects to `yarn.resourcemanager.address` (with RM HA, to the
    /// active one of `yarn.resourcemanager.address.<rm-id>`) as the current
    /// user, retrying and failing over as Hadoop's `ClientRMProxy` does.
    pub async fn connect(conf: &Configuration) -> Result<YarnClient, AmError> {
        let user = current_user();
        let config =
            yarn_conf::rm_client(conf, keys::RM_ADDRESS, &user, protocols::APPLICATION_CLIENT)?;
        let mut client = YarnClient::connect_with(config).await?;
        client.poll_interval = Duration::from_millis(
            conf_i64(conf, POLL_INTERVAL_KEY, DEFAULT_POLL_INTERVAL_MS)?.max(1) as u64,
        );
        let timeout_ms = conf_i64(conf, POLL_TIMEOUT_KEY, DEFAULT_POLL_TIMEOUT_MS)?;
        client.poll_timeout = (timeout_ms >= 0).then(|| Duration::from_millis(timeout_ms as u64));
        Ok(client)
    }

    /// Connects to the client port at `addr` (`host:port`) as `user`, with
    /// Hadoop's default poll interval and no poll timeout. A failure is
    /// returned at once: no retries.
    pub async fn connect_to(addr: &str, user: &str) -> Result<YarnClient, AmError> {
        YarnClient::connect_with(ProxyConfig::new(addr, user, protocols::APPLICATION_CLIENT)).await
    }

    /// Connects with the proxy settings `config` (servers, user, timeouts,
    /// retry policy), with Hadoop's default poll interval and no poll timeout.
    pub async fn connect_with(config: ProxyConfig) -> Result<YarnClient, AmError> {
        let user = config.user.clone();
        let ipc = RpcProxy::new(config);
        ipc.connect().await?;
        Ok(YarnClient {
            ipc,
            user,
            poll_interval: Duration::from_millis(DEFAULT_POLL_INTERVAL_MS as u64),
            poll_timeout: None,
        })
    }

    /// The user the connection acts as.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The address of the ResourceManager in use.
    pub fn addr(&self) -> String {
        self.ipc.addr()
    }

    async fn call<Req, Resp>(&self, method: &Method<Req, Resp>, req: &Req) -> Result<Resp, AmError>
    where
        Req: prost::Message,
        Resp: prost::Message + Default,
    {
        Ok(self.ipc.call(method, req).await?)
    }

    /// `getNewApplication`: a fresh application id and the largest container
    /// the cluster grants.
    pub async fn create_application(&self) -> Result<(ApplicationId, Resource), AmError> {
        let resp = self
            .call(&GET_NEW_APPLICATION, &pb::GetNewApplicationRequestProto {})
            .await?;
        let id = app_id_from_pb(
            resp.application_id.as_ref(),
            "GetNewApplicationResponseProto",
        )?;
        let max = resp.maximum_capability.as_ref().ok_or_else(|| {
            AmError::Protocol(format!(
                "the ResourceManager gave {id} without a maximum capability"
            ))
        })?;
        Ok((id, crate::convert::resource_from_pb(Some(max))))
    }

    /// `submitApplication`, then waits (like `YarnClientImpl`) until the
    /// application has left NEW, NEW_SAVING and SUBMITTED, re-submitting if
    /// the ResourceManager does not know it (it may have failed over).
    /// Returns the first report outside those states; an application that
    /// is already FAILED or KILLED is an error carrying its diagnostics.
    pub async fn submit(
        &self,
        id: ApplicationId,
        submission: &ApplicationSubmission,
    ) -> Result<AppReport, AmError> {
        let req = pb::SubmitApplicationRequestProto {
            application_submission_context: Some(submission.to_pb(id)),
        };
        self.call(&SUBMIT_APPLICATION, &req).await?;
        info!(app = %id, queue = %submission.queue, "submitted application");
        let started = Instant::now();
        loop {
            match self.report(id).await {
                Ok(report) => match report.state {
                    AppState::New | AppState::NewSaving | AppState::Submitted => {
                        debug!(app = %id, state = %report.state, "waiting for the application to be accepted");
                    }
                    AppState::Failed | AppState::Killed => {
                        return Err(AmError::Protocol(format!(
                            "Failed to submit {id} to YARN: the application is {}: {}",
                            report.state, report.diagnostics
                        )));
                    }
                    _ => return Ok(report),
                },
                Err(e) if e.remote_class() == Some(class::APPLICATION_NOT_FOUND) => {
                    info!(app = %id, "the ResourceManager does not know the application; submitting it again");
                    self.call(&SUBMIT_APPLICATION, &req).await?;
                }
                Err(e) => return Err(e),
            }
            if let Some(limit) = self.poll_timeout {
                if started.elapsed() >= limit {
                    return Err(AmError::Timeout(format!(
                        "Timed out while waiting for application {id} to be submitted successfully ({POLL_TIMEOUT_KEY} = {} ms)",
                        limit.as_millis()
                    )));
                }
            }
            tokio::time::sleep(self.poll_interval).await;
        }
    }

    /// `getApplicationReport`.
    pub async fn report(&self, id: ApplicationId) -> Result<AppReport, AmError> {
        let resp = self
            .call(
                &GET_APPLICATION_REPORT,
                &pb::GetApplicationReportRequestProto {
                    application_id: Some(app_id_to_pb(&id)),
                },
            )
            .await?;
        let report = resp.application_report.as_ref().ok_or_else(|| {
            AmError::Protocol(format!("the ResourceManager sent no report for {id}"))
        })?;
        AppReport::from_pb(report)
    }

    /// `forceKillApplication`, repeated every poll interval until the
    /// ResourceManager says the kill has completed (within the poll timeout,
    /// if one is configured).
    pub async fn kill(&self, id: ApplicationId, diagnostics: Option<&str>) -> Result<(), AmError> {
        let req = pb::KillApplicationRequestProto {
            application_id: Some(app_id_to_pb(&id)),
            diagnostics: diagnostics.map(str::to_string),
        };
        let started = Instant::now();
        loop {
            let resp = self.call(&FORCE_KILL_APPLICATION, &req).await?;
            if resp.is_kill_completed.unwrap_or(false) {
                info!(app = %id, "killed application");
                return Ok(());
            }
            if let Some(limit) = self.poll_timeout {
                if started.elapsed() >= limit {
                    return Err(AmError::Timeout(format!(
                        "Timed out while waiting for application {id} to be killed ({POLL_TIMEOUT_KEY} = {} ms)",
                        limit.as_millis()
                    )));
                }
            }
            debug!(app = %id, "waiting for the kill to complete");
            tokio::time::sleep(self.poll_interval).await;
        }
    }

    /// `getApplications` in the given states (all states if empty).
    pub async fn list(&self, states: &[AppState]) -> Result<Vec<AppReport>, AmError> {
        let req = pb::GetApplicationsRequestProto {
            application_states: states
                .iter()
                .map(|s| spindle_common::proto::app_state_to_pb(*s) as i32)
                .collect(),
            ..Default::default()
        };
        let resp = self.call(&GET_APPLICATIONS, &req).await?;
        resp.applications.iter().map(AppReport::from_pb).collect()
    }
}
