//! Simulated ApplicationMasters. Each is an application submitted as an
//! unmanaged AM: like Hadoop's UnmanagedAMLauncher it reads its AMRMToken
//! from the application report, registers over ApplicationMasterProtocol
//! (SASL DIGEST-MD5 with that token, through [`spindle_am::AmRmClient`]) and
//! then heartbeats with `allocate` at its share of the target rate: it keeps
//! a few containers asked for or held, "starts" each one it is granted on
//! its simulated node, and releases it after the hold time.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use hadoop_protos::yarn as pb;
use rand::Rng;
use spindle_am::{AmError, AmRmClient, AmRmConfig, ContainerRequest, FinalStatus};
use spindle_common::proto::{app_id_from_pb, app_id_to_pb};
use spindle_common::security::{kind, AmRmTokenIdentifier, Token};
use spindle_common::{ApplicationAttemptId, ApplicationId, ContainerId, Resource};
use spindle_ipc::methods::application_client::{
    GET_APPLICATION_REPORT, GET_NEW_APPLICATION, SUBMIT_APPLICATION,
};
use spindle_ipc::RpcProxy;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::nm::Cluster;
use crate::Stats;

/// How the simulated AMs behave.
#[derive(Debug, Clone)]
pub struct AmSettings {
    pub scheduler: String,
    pub queue: String,
    /// Time between one AM's allocate calls.
    pub period: Duration,
    /// Containers each AM keeps asked for or held.
    pub containers: usize,
    pub container: Resource,
    /// How long a granted container is held before it is released.
    pub hold: Duration,
    pub call_timeout: Duration,
    /// How long to wait for the application report to carry the token.
    pub setup_timeout: Duration,
}

/// The container priority of the simulated tasks.
const TASK_PRIORITY: i32 = 1;

/// Submits one unmanaged application named `name` and answers its id.
pub async fn submit(
    client: &RpcProxy,
    name: String,
    settings: &AmSettings,
) -> Result<ApplicationId, String> {
    let new = client
        .call(&GET_NEW_APPLICATION, &pb::GetNewApplicationRequestProto {})
        .await
        .map_err(|e| e.to_string())?;
    let id_pb = new
        .application_id
        .ok_or("getNewApplication answered without an application id")?;
    let app = app_id_from_pb(&id_pb);
    let ctx = pb::ApplicationSubmissionContextProto {
        application_id: Some(id_pb),
        application_name: Some(name),
        queue: Some(settings.queue.clone()),
        application_type: Some("SPINDLE-BENCH".into()),
        unmanaged_am: Some(true),
        max_app_attempts: Some(1),
        resource: Some(spindle_common::proto::resource_to_pb(settings.container)),
        // Empty, as Hadoop's UnmanagedAMLauncher sends it: Hadoop's RM fails a
        // submission without one (a NullPointerException in submitApplication).
        am_container_spec: Some(pb::ContainerLaunchContextProto::default()),
        ..Default::default()
    };
    client
        .call(
            &SUBMIT_APPLICATION,
            &pb::SubmitApplicationRequestProto {
                application_submission_context: Some(ctx),
            },
        )
        .await
        .map_err(|e| format!("{app}: {e}"))?;
    Ok(app)
}

/// Submits one unmanaged application and waits for its AMRMToken; returns
/// the attempt and the token (service set to the scheduler address).
pub async fn submit_unmanaged(
    client: &RpcProxy,
    index: usize,
    settings: &AmSettings,
) -> Result<(ApplicationAttemptId, Token), String> {
    let app = submit(client, format!("spindle-bench-am-{index}"), settings).await?;
    let deadline = Instant::now() + settings.setup_timeout;
    loop {
        let resp = client
            .call(
                &GET_APPLICATION_REPORT,
                &pb::GetApplicationReportRequestProto {
                    application_id: Some(app_id_to_pb(&app)),
                },
            )
            .await
            .map_err(|e| format!("{app}: {e}"))?;
        let report = resp
            .application_report
            .ok_or_else(|| format!("the report of {app} is empty"))?;
        if let Some(t) = report.am_rm_token {
            let mut token = Token::from_proto(t);
            let ident = AmRmTokenIdentifier::decode(&token.identifier)
                .map_err(|e| format!("the AMRMToken of {app} is unreadable: {e}"))?;
            token.kind = kind::AM_RM.to_string();
            token.service = settings.scheduler.clone();
            return Ok((ident.attempt, token));
        }
        let state = report
            .yarn_application_state
            .and_then(|s| pb::YarnApplicationStateProto::try_from(s).ok());
        if matches!(
            state,
            Some(
                pb::YarnApplicationStateProto::Failed
                    | pb::YarnApplicationStateProto::Killed
                    | pb::YarnApplicationStateProto::Finished
            )
        ) {
            return Err(format!(
                "{app} ended ({:?}) before its AM could start: {}",
                state,
                report.diagnostics.unwrap_or_default()
            ));
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "the report of {app} carried no AMRMToken within {} s (state {state:?}); \
                 does the ResourceManager support unmanaged AMs?",
                settings.setup_timeout.as_secs()
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Registers the AM of `attempt`.
pub async fn register(
    attempt: ApplicationAttemptId,
    token: Token,
    settings: &AmSettings,
) -> Result<AmRmClient, String> {
    let mut config = AmRmConfig::new(settings.scheduler.clone(), attempt, token);
    config.call_timeout = settings.call_timeout;
    config.connect_timeout = settings.call_timeout;
    config.max_wait = settings.call_timeout;
    config.retry_interval = Duration::from_secs(1);
    let mut client = AmRmClient::new(config);
    client
        .register("spindle-bench", -1, "")
        .await
        .map_err(|e| format!("registerApplicationMaster of {attempt}: {e}"))?;
    Ok(client)
}

/// Heartbeats until `stop`, then unregisters.
pub async fn run_am(
    mut client: AmRmClient,
    cluster: Arc<Cluster>,
    settings: AmSettings,
    stats: Arc<Stats>,
    mut stop: watch::Receiver<bool>,
) -> Result<(), String> {
    let attempt = client.attempt();
    let request = ContainerRequest::new(TASK_PRIORITY, settings.container);
    let mut held: VecDeque<(Instant, ContainerId)> = VecDeque::new();
    let mut outstanding = 0usize;
    let offset = settings.period.mul_f64(rand::rng().random_range(0.0..1.0));
    let mut next = Instant::now() + offset;
    loop {
        tokio::select! {
            _ = tokio::time::sleep_until(next) => {}
            _ = stop.changed() => break,
        }
        if *stop.borrow() {
            break;
        }
        let now = Instant::now();
        // Keep the schedule, but never burst to catch up after a slow call.
        next = (next + settings.period).max(now);
        while let Some((since, id)) = held.front().copied() {
            if now.duration_since(since) < settings.hold {
                break;
            }
            held.pop_front();
            client.release(id);
            stats.container_released();
        }
        let wanted = settings.containers.saturating_sub(held.len() + outstanding);
        for _ in 0..wanted {
            client
                .add_request(&request)
                .map_err(|e| format!("{attempt}: {e}"))?;
            outstanding += 1;
        }
        let started = Instant::now();
        let result = client.allocate(0.5).await;
        let elapsed = started.elapsed();
        let allocation = match result {
            Ok(a) => a,
            Err(e @ AmError::Shutdown { .. }) => return Err(format!("{attempt}: {e}")),
            Err(e) => {
                stats.allocate_failed(format!("allocate of {attempt}: {e}"));
                continue;
            }
        };
        stats.allocate_done(elapsed);
        for c in allocation.allocated {
            stats.container_allocated();
            if client.container_granted(&c).is_some() {
                outstanding = outstanding.saturating_sub(1);
                if cluster.start_container(&c.node, c.id, c.resource) {
                    held.push_back((Instant::now(), c.id));
                    continue;
                }
            }
            client.release(c.id);
            stats.container_released();
        }
        for done in allocation.completed {
            stats.container_completed();
            // A container the AM still held ended on its own (node lost...).
            held.retain(|(_, id)| *id != done.id);
        }
    }
    let finish = client.finish(FinalStatus::Succeeded, "spindle bench done", "");
    match tokio::time::timeout(settings.call_timeout, finish).await {
        Ok(Ok(())) => {
            stats.ams_finished.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }
        Ok(Err(e)) => Err(format!("finishApplicationMaster of {attempt}: {e}")),
        Err(_) => Err(format!(
            "finishApplicationMaster of {attempt} took longer than {} s",
            settings.call_timeout.as_secs()
        )),
    }
}
