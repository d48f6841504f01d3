//! Conversions between wire messages and the RM's domain types that more
//! than one protocol uses, and the one place where the state's refusals
//! become Java exceptions.
//!
//! Missing optional fields get Hadoop's defaults; fields Java dereferences without a
//! null check (application state, final status, …) are always set on the way out.
//! Conversions that belong to one protocol live beside its handlers.

use hadoop_protos::yarn as pb;
use prost::Message;
use spindle_common::ids::{ApplicationAttemptId, ApplicationId, ContainerId, NodeId};
use spindle_common::proto::{self, ProtoError};
use spindle_common::resource::Resource;
use spindle_common::security::Token;
use spindle_ipc::{class, RpcError};

use crate::cluster::nodes::{ContainerSignal, Health, NodeState};
use crate::log_aggregation::{AppLogReport, LogAggregationStatus};
use crate::model::launch::LaunchSizes;
use crate::model::launch::{AmLaunchContext, AppAccess};
use crate::model::limits::LimitExceeded;
use crate::model::refusal::Refusal;
use crate::model::reports::{AppReport, AttemptReport, ContainerReport, NodeReport};
use crate::model::submission::Submission;
use crate::model::tracking::WebAddresses;

// Ids, resources and the application states are converted by
// `spindle_common::proto`; the functions below only decide which Java
// exception a bad or missing id raises.
pub use spindle_common::proto::{
    app_id_to_pb, app_state_from_pb, app_state_to_pb, attempt_id_to_pb, attempt_state_to_pb,
    container_id_to_pb, final_status_from_pb, final_status_to_pb, node_id_to_pb, resource_to_pb,
};

// ---- errors -------------------------------------------------------------------------

/// The Java exception a Hadoop client expects for each refusal, with
/// Hadoop's message.
pub fn refusal_to_rpc(refusal: Refusal) -> RpcError {
    match refusal {
        // RPCUtil.getRemoteException(IOException): a YarnException whose
        // message is the cause's class and message.
        Refusal::DelegationToken(r) => RpcError::yarn(format!("{}: {}", r.class, r.message)),
        Refusal::ApplicationNotFound(id) => RpcError::new(
            class::APPLICATION_NOT_FOUND,
            format!("Application with id '{id}' doesn't exist in RM. Please check that the job submission was successful."),
        ),
        Refusal::KillOfAbsentApplication(id) => RpcError::new(
            class::APPLICATION_NOT_FOUND,
            format!("Trying to kill an absent application {id}"),
        ),
        Refusal::AttemptNotFound(id) => RpcError::new(
            class::APPLICATION_ATTEMPT_NOT_FOUND,
            format!("ApplicationAttempt with id '{id}' doesn't exist in RM."),
        ),
        Refusal::ContainerNotFound(id) => RpcError::new(
            class::CONTAINER_NOT_FOUND,
            format!("Container with id '{id}' doesn't exist in RM."),
        ),
        // RPCUtil.getRemoteException(String): a YarnException.
        Refusal::SignalOfAbsentContainer(id) => {
            RpcError::yarn(format!("Trying to signal an absent container {id}"))
        }
        Refusal::UnknownApplicationId { id, cluster_ts } => RpcError::yarn(format!(
            "Application {id} was not created by this ResourceManager (cluster timestamp {cluster_ts}); \
             call getNewApplication first"
        )),
        Refusal::NegativeAmResource { requested } => RpcError::new(
            class::INVALID_RESOURCE_REQUEST,
            format!(
                "Invalid resource request! Cannot allocate containers as requested resource is less \
                 than 0! Requested resource type=[memory-mb or vcores], Requested resource={requested}"
            ),
        ),
        Refusal::AmResourceAboveMaximum { requested, maximum } => RpcError::new(
            class::INVALID_RESOURCE_REQUEST,
            format!(
                "Invalid resource request! Cannot allocate containers as requested resource is greater \
                 than maximum allowed allocation. Requested resource={requested}, maximum allowed allocation={maximum}, \
                 please note that maximum allowed allocation is calculated by scheduler based on maximum \
                 resource of registered NodeManagers, which might be less than configured maximum allocation={maximum}"
            ),
        ),
        // Hadoop wraps these AccessControlExceptions in a YarnException.
        Refusal::SubmitAccessDenied { user, app, queue } => RpcError::yarn(format!(
            "{}: User {user} does not have permission to submit {app} to queue {queue}",
            class::ACCESS_CONTROL
        )),
        // ClientRMService wraps a java.security.AccessControlException (not
        // Hadoop's own) in a YarnException; the CLI prints both.
        Refusal::AppAccessDenied { user, access, app } => RpcError::yarn(format!(
            "java.security.AccessControlException: User {user} cannot perform operation {} on {app}",
            access.name()
        )),
        Refusal::AppViewDenied { user, app } => RpcError::yarn(format!(
            "User {user} does not have privilege to see this application {app}"
        )),
        Refusal::AttemptViewDenied { user, attempt } => RpcError::yarn(format!(
            "User {user} does not have privilege to see this attempt {attempt}"
        )),
        Refusal::PriorityUpdateInState(state) => RpcError::yarn(format!(
            "Application in {state} state cannot update priority."
        )),
        // ClientRMService: RPCUtil.getRemoteException(new
        // java.security.AccessControlException(..)).
        Refusal::MoveTargetDenied { user, queue, app } => RpcError::yarn(format!(
            "java.security.AccessControlException: User {user} cannot submit applications to \
             target queue or the target queue doesn't exist: {queue} while moving {app}"
        )),
        Refusal::MoveInState(state) => {
            RpcError::yarn(format!("App in {state} state cannot be moved."))
        }
        Refusal::MoveRefused(reason) => RpcError::yarn(reason),
        // CapacityScheduler: new YarnException(AccessControlException).
        Refusal::MoveQueueRefused(reason) => {
            RpcError::yarn(format!("{}: {reason}", class::ACCESS_CONTROL))
        }
        Refusal::NoTimeoutGiven => RpcError::yarn(
            "At least one ApplicationTimeoutType should be configured for updating timeouts.",
        ),
        Refusal::TimeoutUpdateInState(state) => RpcError::yarn(format!(
            "Application is in {state} state can not update timeout."
        )),
        // RMServerUtils.validateISO8601AndConvertToLocalTimeEpoch.
        Refusal::TimeoutNotIso8601(given) => RpcError::yarn(format!(
            "Expire time is not in ISO8601 format. ISO8601 supported format is \
             yyyy-MM-dd'T'HH:mm:ss.SSSZ. Configured timeout value is {given}"
        )),
        Refusal::TimeoutInThePast { now_ms, expiry_ms } => RpcError::yarn(format!(
            "Expire time is less than current time, current-time={} expire-time={}",
            crate::iso8601::format(now_ms),
            crate::iso8601::format(expiry_ms)
        )),
        Refusal::NotCurrentAttempt(attempt) => RpcError::new(
            class::INVALID_APPLICATION_MASTER_REQUEST,
            format!("Application attempt {attempt} is not the current attempt of its application"),
        ),
        Refusal::AmNotRegistered(attempt) => RpcError::new(
            class::APPLICATION_MASTER_NOT_REGISTERED,
            format!(
                "AM is not registered for known application attempt: {attempt} or RM had restarted \
                 after AM registered. AM should re-register."
            ),
        ),
        Refusal::AmAlreadyRegistered(app) => RpcError::new(
            class::INVALID_APPLICATION_MASTER_REQUEST,
            format!("Application Master is already registered : {app}"),
        ),
        Refusal::AttemptEnded { attempt, state } => RpcError::new(
            class::INVALID_APPLICATION_MASTER_REQUEST,
            format!("Application attempt {attempt} has already ended ({state:?})"),
        ),
        Refusal::InvalidResponseId {
            attempt,
            expected,
            got,
        } => RpcError::new(
            class::INVALID_APPLICATION_MASTER_REQUEST,
            format!(
                "Invalid responseId in AllocateRequest from application attempt: {attempt}, \
                 expect responseId to be {expected}, but get {got}"
            ),
        ),
        Refusal::AsksRefused(e) => RpcError::new(class::INVALID_RESOURCE_REQUEST, e.to_string()),
        Refusal::QueuesRefused { source, error } => {
            let source = source
                .map(|p| format!("{}: ", p.display()))
                .unwrap_or_default();
            RpcError::yarn(format!("{source}{error}"))
        }
        Refusal::NodesNotRunning(nodes) => {
            let names: Vec<String> = nodes.iter().map(NodeId::to_string).collect();
            RpcError::yarn(format!(
                "Resource update failed: nodes not running in the cluster: {}",
                names.join(", ")
            ))
        }
        Refusal::LimitExceeded { app, what } => limit_to_rpc(app, what),
        Refusal::AdminAccessDenied { user, operation } => RpcError::new(
            class::ACCESS_CONTROL,
            format!("User {user} doesn't have permission to call '{operation}'"),
        ),
    }
}

/// Hadoop's tag refusals are IllegalArgumentExceptions wrapped in a
/// YarnException (`RPCUtil.getRemoteException`); Spindle's own limits are
/// YarnExceptions naming the field, its size and the limit.
fn limit_to_rpc(app: Option<ApplicationId>, what: LimitExceeded) -> RpcError {
    let illegal = |m: String| RpcError::yarn(format!("{}: {m}", class::ILLEGAL_ARGUMENT));
    match what {
        LimitExceeded::TooManyTags { max } => illegal(format!(
            "Too many applicationTags, a maximum of only {max} are allowed!"
        )),
        LimitExceeded::TagTooLong { tag, max } => illegal(format!(
            "Tag {tag} is too long, maximum allowed length of a tag is {max}"
        )),
        LimitExceeded::TagNotAscii { tag } => illegal(format!(
            "A tag can only have ASCII characters! Invalid tag - {tag}"
        )),
        LimitExceeded::TokensConfTooLarge { max, actual } => RpcError::yarn(format!(
            "Exceed yarn.resourcemanager.delegation-token.max-conf-size-bytes = {max} bytes, \
             current conf size = {actual} bytes."
        )),
        LimitExceeded::Field {
            field,
            unit,
            max,
            actual,
        } => {
            let subject = match app {
                Some(app) => format!("Application {app} refused"),
                None => "Refused".to_string(),
            };
            RpcError::yarn(format!(
                "{subject}: its {field} has {actual} {unit}, more than the {max} allowed"
            ))
        }
    }
}

impl From<Refusal> for RpcError {
    fn from(refusal: Refusal) -> RpcError {
        refusal_to_rpc(refusal)
    }
}

/// A submission as `submitApplication` and the REST API's
/// `POST /ws/v1/cluster/apps` carry it: the AM's resource from field 9, or
/// from the AM resource request (field 17); no launch context refused
/// unless the AM is unmanaged.
pub fn submission_from_pb(
    asc: &pb::ApplicationSubmissionContextProto,
    min_allocation: Resource,
) -> Result<Submission, RpcError> {
    let id = app_id_from_pb(asc.application_id.as_ref())?;
    // The AM's resource comes in field 9, or (with an AM node label) in field 17.
    let am = match (&asc.resource, asc.am_container_resource_request.first()) {
        (Some(r), _) => resource_from_pb(Some(r)),
        (None, Some(rr)) => resource_from_pb(rr.capability.as_ref()),
        (None, None) => min_allocation,
    };
    if asc.am_container_spec.is_none() && !asc.unmanaged_am.unwrap_or(false) {
        return Err(RpcError::new(
            class::INVALID_RESOURCE_REQUEST,
            format!("Application {id} carries no AM container launch context"),
        ));
    }
    Ok(Submission {
        id,
        name: asc.application_name.clone().unwrap_or_else(|| "N/A".into()),
        queue: asc
            .queue
            .clone()
            .filter(|q| !q.is_empty())
            .unwrap_or_else(|| "default".into()),
        app_type: asc
            .application_type
            .clone()
            .unwrap_or_else(|| "YARN".into()),
        tags: asc.application_tags.iter().cloned().collect(),
        // Hadoop: an unset priority field means "none" (the queue's default
        // applies); a PriorityProto without a value reads as 0.
        priority: asc.priority.as_ref().map(|p| p.priority.unwrap_or(0)),
        am_resource: am,
        max_attempts: asc.max_app_attempts.unwrap_or(0),
        unmanaged_am: asc.unmanaged_am.unwrap_or(false),
        keep_containers: asc
            .keep_containers_across_application_attempts
            .unwrap_or(false),
    })
}

// ---- ids -----------------------------------------------------------------------------

/// An id the client sent that cannot be read, as Java's IllegalArgumentException.
fn illegal_argument(what: &str, e: ProtoError) -> RpcError {
    RpcError::new(class::ILLEGAL_ARGUMENT, format!("invalid {what}: {e}"))
}

pub fn app_id_from_pb(p: Option<&pb::ApplicationIdProto>) -> Result<ApplicationId, RpcError> {
    p.map(proto::app_id_from_pb).ok_or_else(|| {
        RpcError::new(
            class::ILLEGAL_ARGUMENT,
            "the request names no application id",
        )
    })
}

pub fn attempt_id_from_pb(
    p: Option<&pb::ApplicationAttemptIdProto>,
) -> Result<ApplicationAttemptId, RpcError> {
    let p = p.ok_or_else(|| {
        RpcError::new(
            class::ILLEGAL_ARGUMENT,
            "the request names no application attempt id",
        )
    })?;
    proto::attempt_id_from_pb(p).map_err(|e| illegal_argument("application attempt id", e))
}

pub fn container_id_from_pb(p: &pb::ContainerIdProto) -> Result<ContainerId, RpcError> {
    proto::container_id_from_pb(p).map_err(|e| illegal_argument("container id", e))
}

/// `SignalContainerCommandProto` as the domain's signal; an unknown number is
/// an IllegalArgumentException (Hadoop's proto would not parse it).
pub fn container_signal_from_pb(command: i32) -> Result<ContainerSignal, RpcError> {
    match pb::SignalContainerCommandProto::try_from(command) {
        Ok(pb::SignalContainerCommandProto::OutputThreadDump) => {
            Ok(ContainerSignal::OutputThreadDump)
        }
        Ok(pb::SignalContainerCommandProto::GracefulShutdown) => {
            Ok(ContainerSignal::GracefulShutdown)
        }
        Ok(pb::SignalContainerCommandProto::ForcefulShutdown) => {
            Ok(ContainerSignal::ForcefulShutdown)
        }
        Err(_) => Err(RpcError::new(
            class::ILLEGAL_ARGUMENT,
            format!("unknown signal command {command}"),
        )),
    }
}

/// The domain's signal as the heartbeat answer's `SignalContainerRequestProto`.
pub fn container_signal_to_pb(
    container: &ContainerId,
    signal: ContainerSignal,
) -> pb::SignalContainerRequestProto {
    let command = match signal {
        ContainerSignal::OutputThreadDump => pb::SignalContainerCommandProto::OutputThreadDump,
        ContainerSignal::GracefulShutdown => pb::SignalContainerCommandProto::GracefulShutdown,
        ContainerSignal::ForcefulShutdown => pb::SignalContainerCommandProto::ForcefulShutdown,
    };
    pb::SignalContainerRequestProto {
        container_id: container_id_to_pb(container),
        command: command as i32,
    }
}

pub fn node_id_from_pb(p: Option<&pb::NodeIdProto>) -> Result<NodeId, RpcError> {
    let p = p.ok_or_else(|| RpcError::yarn("the request names no node id"))?;
    proto::node_id_from_pb(p).map_err(|e| RpcError::yarn(format!("invalid node id: {e}")))
}

/// The resource types Spindle schedules (memory and vcores), as Hadoop describes them.
pub fn resource_types() -> Vec<pb::ResourceTypeInfoProto> {
    proto::resource_types_to_pb()
}

/// A resource the request may leave out: absent means none.
pub fn resource_from_pb(p: Option<&pb::ResourceProto>) -> Resource {
    p.map(proto::resource_from_pb).unwrap_or_default()
}

fn priority_to_pb(priority: i32) -> pb::PriorityProto {
    pb::PriorityProto {
        priority: Some(priority),
    }
}

// ---- nodes ---------------------------------------------------------------------------

pub fn node_state_to_pb(s: NodeState) -> pb::NodeStateProto {
    match s {
        NodeState::New => pb::NodeStateProto::NsNew,
        NodeState::Running => pb::NodeStateProto::NsRunning,
        NodeState::Unhealthy => pb::NodeStateProto::NsUnhealthy,
        NodeState::Decommissioned => pb::NodeStateProto::NsDecommissioned,
        NodeState::Lost => pb::NodeStateProto::NsLost,
        NodeState::Rebooted => pb::NodeStateProto::NsRebooted,
        NodeState::Decommissioning => pb::NodeStateProto::NsDecommissioning,
        NodeState::Shutdown => pb::NodeStateProto::NsShutdown,
    }
}

pub fn node_state_from_pb(v: i32) -> Option<NodeState> {
    Some(match pb::NodeStateProto::try_from(v).ok()? {
        pb::NodeStateProto::NsNew => NodeState::New,
        pb::NodeStateProto::NsRunning => NodeState::Running,
        pb::NodeStateProto::NsUnhealthy => NodeState::Unhealthy,
        pb::NodeStateProto::NsDecommissioned => NodeState::Decommissioned,
        pb::NodeStateProto::NsLost => NodeState::Lost,
        pb::NodeStateProto::NsRebooted => NodeState::Rebooted,
        pb::NodeStateProto::NsDecommissioning => NodeState::Decommissioning,
        pb::NodeStateProto::NsShutdown => NodeState::Shutdown,
    })
}

pub fn log_aggregation_status_to_pb(s: LogAggregationStatus) -> pb::LogAggregationStatusProto {
    use pb::LogAggregationStatusProto as P;
    match s {
        LogAggregationStatus::Disabled => P::LogDisabled,
        LogAggregationStatus::NotStart => P::LogNotStart,
        LogAggregationStatus::Running => P::LogRunning,
        LogAggregationStatus::RunningWithFailure => P::LogRunningWithFailure,
        LogAggregationStatus::Succeeded => P::LogSucceeded,
        LogAggregationStatus::Failed => P::LogFailed,
        LogAggregationStatus::TimeOut => P::LogTimeOut,
    }
}

/// A node's log aggregation report about an application; `None` when the
/// application id or the status cannot be read. An unset message is
/// `N/A`, the proto's default, as Hadoop reads it.
pub fn app_log_report_from_pb(r: &pb::LogAggregationReportProto) -> Option<AppLogReport> {
    use pb::LogAggregationStatusProto as P;
    let app = proto::app_id_from_pb(r.application_id.as_ref()?);
    let status = match P::try_from(r.log_aggregation_status?).ok()? {
        P::LogDisabled => LogAggregationStatus::Disabled,
        P::LogNotStart => LogAggregationStatus::NotStart,
        P::LogRunning => LogAggregationStatus::Running,
        P::LogRunningWithFailure => LogAggregationStatus::RunningWithFailure,
        P::LogSucceeded => LogAggregationStatus::Succeeded,
        P::LogFailed => LogAggregationStatus::Failed,
        P::LogTimeOut => LogAggregationStatus::TimeOut,
    };
    Some(AppLogReport {
        app,
        status,
        diagnostics: r.diagnostics().to_string(),
    })
}

pub fn health_from_pb(p: Option<&pb::NodeHealthStatusProto>) -> Health {
    match p {
        None => Health {
            healthy: true,
            report: String::new(),
            last_report_ms: 0,
        },
        Some(h) => Health {
            healthy: h.is_node_healthy.unwrap_or(true),
            report: h.health_report.clone().unwrap_or_default(),
            last_report_ms: h.last_health_report_time.unwrap_or(0),
        },
    }
}

pub fn node_report_to_pb(n: &NodeReport) -> pb::NodeReportProto {
    pb::NodeReportProto {
        node_id: Some(node_id_to_pb(&n.id)),
        http_address: Some(n.http_address.clone()),
        rack_name: Some(n.rack.clone()),
        used: Some(resource_to_pb(n.used)),
        capability: Some(resource_to_pb(n.capability)),
        num_containers: Some(n.num_containers),
        node_state: Some(node_state_to_pb(n.state) as i32),
        health_report: Some(n.health_report.clone()),
        last_health_report_time: Some(n.last_health_report_ms),
        node_labels: Vec::new(),
        containers_utilization: None,
        node_utilization: None,
        decommissioning_timeout: None,
        node_update_type: None,
        node_attributes: Vec::new(),
    }
}

// ---- reports -------------------------------------------------------------------------

/// Hadoop's `NodeLabel.NODE_LABEL_EXPRESSION_NOT_SET`.
const NODE_LABEL_EXPRESSION_NOT_SET: &str = "<Not set>";
/// Hadoop's `NodeLabel.DEFAULT_NODE_LABEL_PARTITION`.
const DEFAULT_NODE_LABEL_PARTITION: &str = "<DEFAULT_PARTITION>";

/// An application report with every field Java clients dereference set.
pub fn app_report_to_pb(r: &AppReport, web: &WebAddresses) -> pb::ApplicationReportProto {
    let a = &r.app;
    let pct = |used: i64, total: i64| {
        if total > 0 {
            used as f32 * 100.0 / total as f32
        } else {
            0.0
        }
    };
    let usage = if r.viewable {
        pb::ApplicationResourceUsageReportProto {
            num_used_containers: Some(r.used_containers),
            num_reserved_containers: Some(0),
            used_resources: Some(resource_to_pb(r.used)),
            reserved_resources: Some(resource_to_pb(Resource::default())),
            needed_resources: Some(resource_to_pb(Resource::default())),
            memory_seconds: Some(0),
            vcore_seconds: Some(0),
            queue_usage_percentage: Some(0.0),
            cluster_usage_percentage: Some(pct(r.used.memory_mb, r.cluster_capability.memory_mb)),
            preempted_memory_seconds: Some(0),
            preempted_vcore_seconds: Some(0),
            application_resource_usage_map: Vec::new(),
            application_preempted_resource_usage_map: Vec::new(),
        }
    } else {
        // RMServerUtils.DUMMY_APPLICATION_RESOURCE_USAGE_REPORT.
        let unknown = Resource::new(-1, -1);
        pb::ApplicationResourceUsageReportProto {
            num_used_containers: Some(-1),
            num_reserved_containers: Some(-1),
            used_resources: Some(resource_to_pb(unknown)),
            reserved_resources: Some(resource_to_pb(unknown)),
            needed_resources: Some(resource_to_pb(unknown)),
            memory_seconds: Some(0),
            vcore_seconds: Some(0),
            queue_usage_percentage: Some(0.0),
            cluster_usage_percentage: Some(0.0),
            preempted_memory_seconds: Some(0),
            preempted_vcore_seconds: Some(0),
            application_resource_usage_map: Vec::new(),
            application_preempted_resource_usage_map: Vec::new(),
        }
    };
    let urls = web.app_urls(r);
    pb::ApplicationReportProto {
        application_id: Some(app_id_to_pb(&a.id)),
        user: Some(a.user.clone()),
        queue: Some(a.queue.clone()),
        name: Some(a.name.clone()),
        host: Some(a.am_host.clone()),
        rpc_port: Some(a.am_rpc_port),
        client_to_am_token: None,
        yarn_application_state: Some(app_state_to_pb(a.state) as i32),
        tracking_url: Some(urls.tracking),
        diagnostics: Some(a.diagnostics.clone()),
        start_time: Some(a.start_ms as i64),
        finish_time: Some(a.finish_ms as i64),
        final_application_status: Some(final_status_to_pb(a.final_status) as i32),
        app_resource_usage: Some(usage),
        original_tracking_url: Some(urls.original),
        current_application_attempt_id: r.current_attempt.as_ref().map(attempt_id_to_pb),
        progress: Some(r.progress),
        application_type: Some(a.app_type.clone()),
        am_rm_token: r.amrm_token.as_ref().map(Token::to_proto),
        application_tags: a.tags.iter().cloned().collect(),
        log_aggregation_status: r
            .log_aggregation
            .map(|s| log_aggregation_status_to_pb(s) as i32),
        unmanaged_application: Some(a.unmanaged_am),
        priority: Some(priority_to_pb(a.priority)),
        // Hadoop's `RMAppImpl.getAppNodeLabelExpression` /
        // `getAmNodeLabelExpression` without node labels: the application's is
        // not set, a managed AM's request is on the default partition, an
        // unmanaged AM has none.
        app_node_label_expression: Some(NODE_LABEL_EXPRESSION_NOT_SET.to_owned()),
        am_node_label_expression: (!a.unmanaged_am)
            .then(|| DEFAULT_NODE_LABEL_PARTITION.to_owned()),
        // Hadoop reports LIFETIME UNLIMITED with an unknown (-1) remaining
        // time until a lifetime is set.
        app_timeouts: vec![pb::AppTimeoutsMapProto {
            application_timeout_type: Some(
                pb::ApplicationTimeoutTypeProto::AppTimeoutLifetime as i32,
            ),
            application_timeout: Some(pb::ApplicationTimeoutProto {
                application_timeout_type: pb::ApplicationTimeoutTypeProto::AppTimeoutLifetime
                    as i32,
                expire_time: Some(a.lifetime.map_or_else(
                    || "UNLIMITED".to_owned(),
                    |l| crate::iso8601::format(l.expiry_wall_ms),
                )),
                remaining_time: Some(r.lifetime_remaining_s),
            }),
        }],
        launch_time: Some(a.launch_ms as i64),
        submit_time: Some(a.submit_ms as i64),
        rm_cluster_id: None,
    }
}

pub fn attempt_report_to_pb(
    a: &AttemptReport,
    web: &WebAddresses,
) -> pb::ApplicationAttemptReportProto {
    let urls = web.attempt_urls(a);
    pb::ApplicationAttemptReportProto {
        application_attempt_id: Some(attempt_id_to_pb(&a.id)),
        host: Some(a.host.clone()),
        rpc_port: Some(a.rpc_port),
        tracking_url: Some(urls.tracking),
        diagnostics: Some(a.diagnostics.clone()),
        yarn_application_attempt_state: Some(attempt_state_to_pb(a.state) as i32),
        am_container_id: a.am_container.as_ref().map(container_id_to_pb),
        original_tracking_url: Some(urls.original),
        start_time: Some(a.start_ms as i64),
        finish_time: Some(a.finish_ms as i64),
    }
}

/// An allocated container's report (it is RUNNING as far as the RM knows).
/// As Hadoop's `RMContainerImpl.createContainerReport`: `nodeHttpAddress`
/// with the scheme (`http://host:port`), and `logUrl` the node's page of
/// the container's logs, `http://host:port/node/containerlogs/<id>/<user>`
/// (`WebAppUtils.getRunningLogURL`).
pub fn container_report_to_pb(c: &ContainerReport) -> pb::ContainerReportProto {
    let http = c
        .node_http_address
        .as_deref()
        .filter(|a| !a.is_empty())
        .map(|a| format!("http://{a}"));
    let log_url = http
        .as_ref()
        .filter(|_| !c.user.is_empty())
        .map(|h| format!("{h}/node/containerlogs/{}/{}", c.id, c.user));
    pb::ContainerReportProto {
        container_id: Some(container_id_to_pb(&c.id)),
        resource: Some(resource_to_pb(c.resource)),
        node_id: Some(node_id_to_pb(&c.node)),
        priority: Some(priority_to_pb(c.priority)),
        creation_time: Some(c.created_ms as i64),
        finish_time: Some(0),
        diagnostics_info: Some(String::new()),
        log_url,
        container_exit_status: Some(0),
        container_state: Some(pb::ContainerStateProto::CRunning as i32),
        node_http_address: http,
        execution_type: Some(pb::ExecutionTypeProto::Guaranteed as i32),
        exposed_ports: None,
    }
}

// ---- the AM launch context -----------------------------------------------------------

fn access_from_pb(v: Option<i32>) -> AppAccess {
    // An unset access type reads as the enum's first value, as in Java.
    match v.and_then(|v| pb::ApplicationAccessTypeProto::try_from(v).ok()) {
        Some(pb::ApplicationAccessTypeProto::AppaccessModifyApp) => AppAccess::Modify,
        Some(pb::ApplicationAccessTypeProto::AppaccessViewApp) | None => AppAccess::View,
    }
}

fn access_to_pb(a: AppAccess) -> pb::ApplicationAccessTypeProto {
    match a {
        AppAccess::View => pb::ApplicationAccessTypeProto::AppaccessViewApp,
        AppAccess::Modify => pb::ApplicationAccessTypeProto::AppaccessModifyApp,
    }
}

/// A submitted launch context: what the RM reads or changes taken out, the
/// rest kept encoded.
pub fn launch_context_from_pb(mut clc: pb::ContainerLaunchContextProto) -> AmLaunchContext {
    let sizes = LaunchSizes {
        command_bytes: clc.command.iter().map(String::len).sum(),
        local_resources: clc.local_resources.len(),
        tokens_conf_bytes: clc.tokens_conf.as_ref().map_or(0, Vec::len),
        encoded_bytes: clc.encoded_len(),
    };
    let environment = std::mem::take(&mut clc.environment)
        .into_iter()
        .map(|e| (e.key.unwrap_or_default(), e.value.unwrap_or_default()))
        .collect();
    let acls = std::mem::take(&mut clc.application_ac_ls)
        .into_iter()
        .map(|a| {
            let acl = a.acl.clone().unwrap_or_else(|| " ".to_string());
            (access_from_pb(a.access_type), acl)
        })
        .collect();
    let tokens = clc.tokens.take();
    AmLaunchContext {
        environment,
        tokens,
        acls,
        forwarded: clc.encode_to_vec(),
        sizes,
    }
}

/// The launch context as the NodeManager gets it.
pub fn launch_context_to_pb(
    launch: &AmLaunchContext,
) -> Result<pb::ContainerLaunchContextProto, prost::DecodeError> {
    let mut clc = pb::ContainerLaunchContextProto::decode(launch.forwarded.as_slice())?;
    clc.environment = launch
        .environment
        .iter()
        .map(|(k, v)| pb::StringStringMapProto {
            key: Some(k.clone()),
            value: Some(v.clone()),
        })
        .collect();
    clc.tokens = launch.tokens.clone();
    clc.application_ac_ls = launch
        .acls
        .iter()
        .map(|(access, acl)| pb::ApplicationAclMapProto {
            access_type: Some(access_to_pb(*access) as i32),
            acl: Some(acl.clone()),
        })
        .collect();
    Ok(clc)
}

/// The `startContainers` call that starts an AM container.
pub fn start_containers_request(
    launch: &AmLaunchContext,
    container_token: &Token,
) -> Result<pb::StartContainersRequestProto, prost::DecodeError> {
    Ok(pb::StartContainersRequestProto {
        start_container_request: vec![pb::StartContainerRequestProto {
            container_launch_context: Some(launch_context_to_pb(launch)?),
            container_token: Some(container_token.to_proto()),
        }],
    })
}

#[cfg(test)]
#[path = "convert_tests.rs"]
mod tests;
