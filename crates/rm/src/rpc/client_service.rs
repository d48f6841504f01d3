//! ApplicationClientProtocol: what `yarn application|node|queue|cluster` and
//! YarnClient (Spark's submitter) call on the RM's client port.
//!
//! One handler per method, named after it; each converts the request to
//! domain terms, sends a command or asks a query, and converts back.

use std::collections::BTreeSet;
use std::sync::Arc;

use hadoop_protos::yarn as pb;
use prost::Message;
use spindle_common::security::Token;
use spindle_ipc::methods::application_client as ac;
use spindle_ipc::sasl::AuthMethod;
use spindle_ipc::{class, protocols, CallContext, RpcError, Service};
use spindle_scheduler::{QueueRunState, SchedulerKind};
use tracing::warn;

use crate::cluster::nodes::NodeState;
use crate::model::apps::{AppFilter, AppScope};
use crate::model::convert::{
    app_id_from_pb, app_id_to_pb, app_report_to_pb, app_state_from_pb, attempt_id_from_pb,
    attempt_report_to_pb, container_id_from_pb, container_report_to_pb, container_signal_from_pb,
    launch_context_from_pb, node_report_to_pb, node_state_from_pb, resource_to_pb,
};
use crate::model::reports::{ClusterMetrics, QueueInfo};
use crate::model::tracking::WebAddresses;
use crate::runtime::context::RmContext;
use crate::state::command::{
    CancelDelegationToken, FailApplicationAttempt, GetDelegationToken, KillApplication,
    MoveApplication, NewApplication, RenewDelegationToken, SignalContainer, SubmitApplication,
    UpdateApplicationPriority, UpdateApplicationTimeouts,
};

/// Methods of Hadoop's ApplicationClientProtocol that Spindle does not serve yet.
const UNSUPPORTED: &[&str] = &[
    ac::GET_NEW_RESERVATION.name,
    ac::SUBMIT_RESERVATION.name,
    ac::UPDATE_RESERVATION.name,
    ac::DELETE_RESERVATION.name,
    ac::LIST_RESERVATIONS.name,
    ac::GET_RESOURCE_PROFILES.name,
    ac::GET_RESOURCE_PROFILE.name,
];

pub fn service(ctx: Arc<RmContext>) -> Service {
    Service::new(protocols::APPLICATION_CLIENT)
        .with_state(ctx)
        .handle(&ac::GET_NEW_APPLICATION, get_new_application)
        .handle(&ac::SUBMIT_APPLICATION, submit_application)
        .handle(&ac::GET_APPLICATION_REPORT, get_application_report)
        .handle(&ac::FORCE_KILL_APPLICATION, force_kill_application)
        .handle(
            &ac::UPDATE_APPLICATION_PRIORITY,
            update_application_priority,
        )
        .handle(
            &ac::MOVE_APPLICATION_ACROSS_QUEUES,
            move_application_across_queues,
        )
        .handle(
            &ac::UPDATE_APPLICATION_TIMEOUTS,
            update_application_timeouts,
        )
        .handle(&ac::SIGNAL_TO_CONTAINER, signal_to_container)
        .handle(&ac::FAIL_APPLICATION_ATTEMPT, fail_application_attempt)
        .handle(&ac::GET_DELEGATION_TOKEN, get_delegation_token)
        .handle(&ac::RENEW_DELEGATION_TOKEN, renew_delegation_token)
        .handle(&ac::CANCEL_DELEGATION_TOKEN, cancel_delegation_token)
        .handle(&ac::GET_APPLICATIONS, get_applications)
        .handle(&ac::GET_CLUSTER_METRICS, get_cluster_metrics)
        .handle(&ac::GET_CLUSTER_NODES, get_cluster_nodes)
        .handle(&ac::GET_QUEUE_INFO, get_queue_info)
        .handle(&ac::GET_QUEUE_USER_ACLS, get_queue_user_acls)
        .handle(&ac::GET_APPLICATION_ATTEMPTS, get_application_attempts)
        .handle(
            &ac::GET_APPLICATION_ATTEMPT_REPORT,
            get_application_attempt_report,
        )
        .handle(&ac::GET_CONTAINERS, get_containers)
        .handle(&ac::GET_CONTAINER_REPORT, get_container_report)
        .handle(&ac::GET_CLUSTER_NODE_LABELS, get_cluster_node_labels)
        .handle(&ac::GET_NODE_TO_LABELS, get_node_to_labels)
        .handle(&ac::GET_LABELS_TO_NODES, get_labels_to_nodes)
        .handle(
            &ac::GET_CLUSTER_NODE_ATTRIBUTES,
            get_cluster_node_attributes,
        )
        .handle(&ac::GET_ATTRIBUTES_TO_NODES, get_attributes_to_nodes)
        .handle(&ac::GET_NODES_TO_ATTRIBUTES, get_nodes_to_attributes)
        .handle(&ac::GET_RESOURCE_TYPE_INFO, get_resource_type_info)
        .unsupported(UNSUPPORTED)
        .into()
}

async fn get_new_application(
    ctx: Arc<RmContext>,
    _call: CallContext,
    _req: pb::GetNewApplicationRequestProto,
) -> Result<pb::GetNewApplicationResponseProto, RpcError> {
    let id = ctx.core.call(NewApplication).await?;
    Ok(pb::GetNewApplicationResponseProto {
        application_id: Some(app_id_to_pb(&id)),
        maximum_capability: Some(resource_to_pb(ctx.max_allocation)),
    })
}

async fn submit_application(
    ctx: Arc<RmContext>,
    call: CallContext,
    req: pb::SubmitApplicationRequestProto,
) -> Result<pb::SubmitApplicationResponseProto, RpcError> {
    let mut asc = req.application_submission_context.ok_or_else(|| {
        RpcError::yarn("submitApplication carries no application submission context")
    })?;
    let submission = crate::model::convert::submission_from_pb(&asc, ctx.min_allocation)?;
    let launch = launch_context_from_pb(asc.am_container_spec.take().unwrap_or_default());
    // Placement rules and ACLs may need the user's groups; the lookup runs
    // a process, so it happens here, off the core.
    let groups = ctx.groups.groups(&call.user).await;
    let submit = SubmitApplication {
        submission,
        launch,
        user: call.user,
        groups,
    };
    ctx.core.call(submit).await??;
    Ok(pb::SubmitApplicationResponseProto {})
}

async fn get_application_report(
    ctx: Arc<RmContext>,
    call: CallContext,
    req: pb::GetApplicationReportRequestProto,
) -> Result<pb::GetApplicationReportResponseProto, RpcError> {
    let id = app_id_from_pb(req.application_id.as_ref())?;
    let caller = ctx.caller(&call.user).await;
    let report = ctx
        .core
        .query(move |s| s.app_report(&id, &caller))
        .await??;
    Ok(pb::GetApplicationReportResponseProto {
        application_report: Some(app_report_to_pb(&report, &ctx.web)),
    })
}

async fn force_kill_application(
    ctx: Arc<RmContext>,
    call: CallContext,
    req: pb::KillApplicationRequestProto,
) -> Result<pb::KillApplicationResponseProto, RpcError> {
    let app = app_id_from_pb(req.application_id.as_ref())?;
    let caller = ctx.caller(&call.user).await;
    let kill = KillApplication {
        app,
        user: caller.user,
        groups: caller.groups,
        reason: req.diagnostics,
        from: Some(call.peer.ip()),
    };
    let done = ctx.core.call(kill).await??;
    Ok(pb::KillApplicationResponseProto {
        is_kill_completed: Some(done),
    })
}

async fn update_application_priority(
    ctx: Arc<RmContext>,
    call: CallContext,
    req: pb::UpdateApplicationPriorityRequestProto,
) -> Result<pb::UpdateApplicationPriorityResponseProto, RpcError> {
    // Both fields are `required` in Hadoop's proto.
    let app = app_id_from_pb(Some(&req.application_id))?;
    let priority = req.application_priority.priority.ok_or_else(|| {
        RpcError::new(
            class::ILLEGAL_ARGUMENT,
            "updateApplicationPriority carries no priority",
        )
    })?;
    let caller = ctx.caller(&call.user).await;
    let update = UpdateApplicationPriority {
        app,
        priority,
        user: caller.user,
        groups: caller.groups,
    };
    let priority = ctx.core.call(update).await??;
    Ok(pb::UpdateApplicationPriorityResponseProto {
        application_priority: Some(pb::PriorityProto {
            priority: Some(priority),
        }),
    })
}

async fn move_application_across_queues(
    ctx: Arc<RmContext>,
    call: CallContext,
    req: pb::MoveApplicationAcrossQueuesRequestProto,
) -> Result<pb::MoveApplicationAcrossQueuesResponseProto, RpcError> {
    // Both fields are `required` in Hadoop's proto.
    let app = app_id_from_pb(Some(&req.application_id))?;
    let caller = ctx.caller(&call.user).await;
    let mv = MoveApplication {
        app,
        queue: req.target_queue,
        user: caller.user,
        groups: caller.groups,
    };
    ctx.core.call(mv).await??;
    Ok(pb::MoveApplicationAcrossQueuesResponseProto {})
}

async fn update_application_timeouts(
    ctx: Arc<RmContext>,
    call: CallContext,
    req: pb::UpdateApplicationTimeoutsRequestProto,
) -> Result<pb::UpdateApplicationTimeoutsResponseProto, RpcError> {
    let app = app_id_from_pb(Some(&req.application_id))?;
    // LIFETIME is the one timeout type Hadoop 3.3 has; an entry without a
    // type is taken as it.
    let lifetime = req
        .application_timeouts
        .iter()
        .find(|t| {
            t.application_timeout_type.unwrap_or(1)
                == pb::ApplicationTimeoutTypeProto::AppTimeoutLifetime as i32
        })
        .map(|t| t.expire_time.clone().unwrap_or_default());
    let caller = ctx.caller(&call.user).await;
    let update = UpdateApplicationTimeouts {
        app,
        lifetime,
        user: caller.user,
        groups: caller.groups,
    };
    ctx.core.call(update).await??;
    // As Hadoop: the times asked for, as given.
    Ok(pb::UpdateApplicationTimeoutsResponseProto {
        application_timeouts: req.application_timeouts,
    })
}

async fn signal_to_container(
    ctx: Arc<RmContext>,
    call: CallContext,
    req: pb::SignalContainerRequestProto,
) -> Result<pb::SignalContainerResponseProto, RpcError> {
    let container = container_id_from_pb(&req.container_id)?;
    let signal = container_signal_from_pb(req.command)?;
    let caller = ctx.caller(&call.user).await;
    let signal = SignalContainer {
        container,
        signal,
        user: caller.user,
        groups: caller.groups,
    };
    ctx.core.call(signal).await??;
    Ok(pb::SignalContainerResponseProto {})
}

async fn fail_application_attempt(
    ctx: Arc<RmContext>,
    call: CallContext,
    req: pb::FailApplicationAttemptRequestProto,
) -> Result<pb::FailApplicationAttemptResponseProto, RpcError> {
    let attempt = attempt_id_from_pb(req.application_attempt_id.as_ref())?;
    let caller = ctx.caller(&call.user).await;
    let fail = FailApplicationAttempt {
        attempt,
        user: caller.user,
        groups: caller.groups,
    };
    ctx.core.call(fail).await??;
    Ok(pb::FailApplicationAttemptResponseProto {})
}

/// Who asks for a delegation-token operation, by full name, with the
/// impersonator's full name when there is one; refused, in Hadoop's words
/// with `what` ("issued", "renewed", "cancelled"), when Kerberos is on and
/// the connection did not authenticate by Kerberos (a token cannot beget
/// tokens).
fn delegation_caller(
    ctx: &RmContext,
    call: &CallContext,
    what: &str,
) -> Result<(String, Option<String>), RpcError> {
    if !ctx.kerberos {
        return Ok((call.user.clone(), call.real_user.clone()));
    }
    match &call.auth {
        AuthMethod::Kerberos { principal, .. } => Ok(match &call.real_user {
            Some(_) => (call.user.clone(), Some(principal.clone())),
            None => (principal.clone(), None),
        }),
        _ => Err(RpcError::yarn(format!(
            "java.io.IOException: Delegation Token can be {what} only with kerberos authentication"
        ))),
    }
}

async fn get_delegation_token(
    ctx: Arc<RmContext>,
    call: CallContext,
    req: hadoop_protos::common::GetDelegationTokenRequestProto,
) -> Result<hadoop_protos::common::GetDelegationTokenResponseProto, RpcError> {
    let (owner, real_user) = delegation_caller(&ctx, &call, "issued")?;
    // Hadoop keeps the renewer's short name.
    let renewer = if req.renewer.is_empty() {
        String::new()
    } else {
        ctx.names
            .short_name(&req.renewer)
            .map_err(|e| RpcError::yarn(format!("java.io.IOException: {e}")))?
    };
    let token = ctx
        .core
        .call(GetDelegationToken {
            owner,
            renewer,
            real_user,
        })
        .await?;
    Ok(hadoop_protos::common::GetDelegationTokenResponseProto {
        token: Some(token.token.to_proto()),
    })
}

async fn renew_delegation_token(
    ctx: Arc<RmContext>,
    call: CallContext,
    req: hadoop_protos::common::RenewDelegationTokenRequestProto,
) -> Result<hadoop_protos::common::RenewDelegationTokenResponseProto, RpcError> {
    delegation_caller(&ctx, &call, "renewed")?;
    let renew = RenewDelegationToken {
        token: Token::from_proto(req.token),
        renewer: call.user,
    };
    let expiry = ctx.core.call(renew).await??;
    Ok(hadoop_protos::common::RenewDelegationTokenResponseProto {
        new_expiry_time: expiry.max(0) as u64,
    })
}

async fn cancel_delegation_token(
    ctx: Arc<RmContext>,
    call: CallContext,
    req: hadoop_protos::common::CancelDelegationTokenRequestProto,
) -> Result<hadoop_protos::common::CancelDelegationTokenResponseProto, RpcError> {
    let (canceller, _) = delegation_caller(&ctx, &call, "cancelled")?;
    let cancel = CancelDelegationToken {
        token: Token::from_proto(req.token),
        canceller,
        short: call.user,
    };
    ctx.core.call(cancel).await??;
    Ok(hadoop_protos::common::CancelDelegationTokenResponseProto {})
}

async fn get_applications(
    ctx: Arc<RmContext>,
    call: CallContext,
    req: pb::GetApplicationsRequestProto,
) -> Result<pb::GetApplicationsResponseProto, RpcError> {
    let filter = filter_from_pb(&req);
    let caller = ctx.caller(&call.user).await;
    let reports = ctx
        .core
        .query(move |s| s.list_apps(&filter, &caller))
        .await?;
    let mut applications: Vec<_> = reports
        .iter()
        .map(|r| app_report_to_pb(r, &ctx.web))
        .collect();
    if let Some(budget) = ctx.max_reply_bytes {
        fit_reports(&mut [&mut applications], budget);
    }
    Ok(pb::GetApplicationsResponseProto { applications })
}

async fn get_cluster_metrics(
    ctx: Arc<RmContext>,
    _call: CallContext,
    _req: pb::GetClusterMetricsRequestProto,
) -> Result<pb::GetClusterMetricsResponseProto, RpcError> {
    let m = ctx.core.query(|s| s.cluster_metrics()).await?;
    Ok(pb::GetClusterMetricsResponseProto {
        cluster_metrics: Some(cluster_metrics_to_pb(m)),
    })
}

async fn get_cluster_nodes(
    ctx: Arc<RmContext>,
    _call: CallContext,
    req: pb::GetClusterNodesRequestProto,
) -> Result<pb::GetClusterNodesResponseProto, RpcError> {
    let mut states: BTreeSet<NodeState> = req
        .node_states
        .iter()
        .filter_map(|v| node_state_from_pb(*v))
        .collect();
    if req.node_states.is_empty() {
        // No filter means every state, as in Hadoop's ClientRMService.
        states = NodeState::ALL.into();
    }
    let reports = ctx.core.query(move |s| s.node_reports(&states)).await?;
    Ok(pb::GetClusterNodesResponseProto {
        node_reports: reports.iter().map(node_report_to_pb).collect(),
    })
}

async fn get_queue_info(
    ctx: Arc<RmContext>,
    call: CallContext,
    req: pb::GetQueueInfoRequestProto,
) -> Result<pb::GetQueueInfoResponseProto, RpcError> {
    let name = req.queue_name.clone().unwrap_or_else(|| "default".into());
    let with_apps = req.include_applications.unwrap_or(false);
    let with_children = req.include_child_queues.unwrap_or(false);
    let recursive = req.recursive.unwrap_or(false);
    let caller = ctx.caller(&call.user).await;
    let info = ctx
        .core
        .query(move |s| s.queue_info(&name, with_apps, with_children, recursive, &caller))
        .await?;
    // Like Hadoop, an unknown queue is an answer without queue info; the
    // CLI then prints that it cannot find the queue.
    let mut queue_info = info.as_ref().map(|q| queue_info_to_pb(q, &ctx.web));
    if let (Some(q), Some(budget)) = (queue_info.as_mut(), ctx.max_reply_bytes) {
        let mut lists = Vec::new();
        application_lists(q, &mut lists);
        fit_reports(&mut lists, budget);
    }
    Ok(pb::GetQueueInfoResponseProto { queue_info })
}

async fn get_queue_user_acls(
    ctx: Arc<RmContext>,
    call: CallContext,
    _req: pb::GetQueueUserAclsInfoRequestProto,
) -> Result<pb::GetQueueUserAclsInfoResponseProto, RpcError> {
    // Reported from the queue ACLs whatever yarn.acl.enable says, as
    // Hadoop's schedulers do, so the groups are always looked up.
    let caller =
        crate::model::access::Caller::new(call.user.as_str(), ctx.groups.groups(&call.user).await);
    let rights = ctx.core.query(move |s| s.queue_user_acls(&caller)).await?;
    let queue_user_acls = rights
        .into_iter()
        .map(|(queue, submit, administer)| pb::QueueUserAclInfoProto {
            queue_name: Some(queue),
            user_acls: [
                submit.then_some(pb::QueueAclProto::QaclSubmitApplications as i32),
                administer.then_some(pb::QueueAclProto::QaclAdministerQueue as i32),
            ]
            .into_iter()
            .flatten()
            .collect(),
        })
        .collect();
    Ok(pb::GetQueueUserAclsInfoResponseProto { queue_user_acls })
}

async fn get_application_attempts(
    ctx: Arc<RmContext>,
    call: CallContext,
    req: pb::GetApplicationAttemptsRequestProto,
) -> Result<pb::GetApplicationAttemptsResponseProto, RpcError> {
    let id = app_id_from_pb(req.application_id.as_ref())?;
    let caller = ctx.caller(&call.user).await;
    let reports = ctx
        .core
        .query(move |s| s.attempts_of(&id, &caller))
        .await??;
    Ok(pb::GetApplicationAttemptsResponseProto {
        application_attempts: reports
            .iter()
            .map(|r| attempt_report_to_pb(r, &ctx.web))
            .collect(),
    })
}

async fn get_application_attempt_report(
    ctx: Arc<RmContext>,
    call: CallContext,
    req: pb::GetApplicationAttemptReportRequestProto,
) -> Result<pb::GetApplicationAttemptReportResponseProto, RpcError> {
    let id = attempt_id_from_pb(req.application_attempt_id.as_ref())?;
    let caller = ctx.caller(&call.user).await;
    let report = ctx
        .core
        .query(move |s| s.attempt_report(&id, &caller))
        .await??;
    Ok(pb::GetApplicationAttemptReportResponseProto {
        application_attempt_report: Some(attempt_report_to_pb(&report, &ctx.web)),
    })
}

async fn get_containers(
    ctx: Arc<RmContext>,
    call: CallContext,
    req: pb::GetContainersRequestProto,
) -> Result<pb::GetContainersResponseProto, RpcError> {
    let id = attempt_id_from_pb(req.application_attempt_id.as_ref())?;
    let caller = ctx.caller(&call.user).await;
    let reports = ctx
        .core
        .query(move |s| s.containers_of(&id, &caller))
        .await??;
    Ok(pb::GetContainersResponseProto {
        containers: reports.iter().map(container_report_to_pb).collect(),
    })
}

async fn get_container_report(
    ctx: Arc<RmContext>,
    call: CallContext,
    req: pb::GetContainerReportRequestProto,
) -> Result<pb::GetContainerReportResponseProto, RpcError> {
    let id = req
        .container_id
        .as_ref()
        .ok_or_else(|| RpcError::new(class::ILLEGAL_ARGUMENT, "the request names no container id"))
        .and_then(container_id_from_pb)?;
    let caller = ctx.caller(&call.user).await;
    let report = ctx
        .core
        .query(move |s| s.container_report(&id, &caller))
        .await??;
    Ok(pb::GetContainerReportResponseProto {
        container_report: Some(container_report_to_pb(&report)),
    })
}

// Node labels and attributes: Spindle has none, so the answers are empty.

async fn get_cluster_node_labels(
    _ctx: Arc<RmContext>,
    _call: CallContext,
    _req: pb::GetClusterNodeLabelsRequestProto,
) -> Result<pb::GetClusterNodeLabelsResponseProto, RpcError> {
    Ok(Default::default())
}

async fn get_node_to_labels(
    _ctx: Arc<RmContext>,
    _call: CallContext,
    _req: pb::GetNodesToLabelsRequestProto,
) -> Result<pb::GetNodesToLabelsResponseProto, RpcError> {
    Ok(Default::default())
}

async fn get_labels_to_nodes(
    _ctx: Arc<RmContext>,
    _call: CallContext,
    _req: pb::GetLabelsToNodesRequestProto,
) -> Result<pb::GetLabelsToNodesResponseProto, RpcError> {
    Ok(Default::default())
}

async fn get_cluster_node_attributes(
    _ctx: Arc<RmContext>,
    _call: CallContext,
    _req: pb::GetClusterNodeAttributesRequestProto,
) -> Result<pb::GetClusterNodeAttributesResponseProto, RpcError> {
    Ok(Default::default())
}

async fn get_attributes_to_nodes(
    _ctx: Arc<RmContext>,
    _call: CallContext,
    _req: pb::GetAttributesToNodesRequestProto,
) -> Result<pb::GetAttributesToNodesResponseProto, RpcError> {
    Ok(Default::default())
}

async fn get_nodes_to_attributes(
    _ctx: Arc<RmContext>,
    _call: CallContext,
    _req: pb::GetNodesToAttributesRequestProto,
) -> Result<pb::GetNodesToAttributesResponseProto, RpcError> {
    Ok(Default::default())
}

async fn get_resource_type_info(
    _ctx: Arc<RmContext>,
    _call: CallContext,
    _req: pb::GetAllResourceTypeInfoRequestProto,
) -> Result<pb::GetAllResourceTypeInfoResponseProto, RpcError> {
    Ok(pb::GetAllResourceTypeInfoResponseProto {
        resource_type_info: crate::model::convert::resource_types(),
    })
}

// ---- replies within the client's limit ------------------------------------------

/// Diagnostics kept in a list reply that must shrink to fit (characters).
const LISTED_DIAGNOSTICS_CHARS: usize = 1024;

/// The encoded size of `report` as one element of a repeated field.
fn listed_len(report: &pb::ApplicationReportProto) -> usize {
    let len = report.encoded_len();
    1 + prost::encoding::encoded_len_varint(len as u64) + len
}

/// Keeps the application reports in `lists` (one reply's) within `budget`
/// encoded bytes, so that the client, which refuses a reply above its
/// `ipc.maximum.response.length`, can read it. Hadoop bounds neither the
/// fields nor the reply, so this is Spindle's own rule: when the reports do
/// not fit, every diagnostics longer than [`LISTED_DIAGNOSTICS_CHARS`] is cut
/// to that (its end kept, the cut said; the application's own report still
/// has it all); when they still do not fit, unfinished applications are kept
/// first, then finished ones newest first, and the rest are left out (each
/// list keeps its order). Logged when it happens.
fn fit_reports(lists: &mut [&mut Vec<pb::ApplicationReportProto>], budget: usize) {
    let total = |lists: &[&mut Vec<pb::ApplicationReportProto>]| -> usize {
        lists.iter().flat_map(|l| l.iter()).map(listed_len).sum()
    };
    if total(lists) <= budget {
        return;
    }
    let mut cut = 0usize;
    for report in lists.iter_mut().flat_map(|l| l.iter_mut()) {
        let Some(d) = report.diagnostics.as_mut() else {
            continue;
        };
        let chars = d.chars().count();
        if chars > LISTED_DIAGNOSTICS_CHARS {
            let tail: String = d.chars().skip(chars - LISTED_DIAGNOSTICS_CHARS).collect();
            *d = format!(
                "Diagnostics cut to their last {LISTED_DIAGNOSTICS_CHARS} of {chars} characters in this list:\n...{tail}"
            );
            cut += 1;
        }
    }
    let after_cut = total(lists);
    if after_cut <= budget {
        warn!(
            budget,
            cut, "application list above the reply limit: diagnostics cut"
        );
        return;
    }
    // Which reports stay: unfinished first, then finished newest first.
    let finished = |r: &pb::ApplicationReportProto| {
        r.yarn_application_state.is_some_and(|s| {
            [
                pb::YarnApplicationStateProto::Finished,
                pb::YarnApplicationStateProto::Failed,
                pb::YarnApplicationStateProto::Killed,
            ]
            .iter()
            .any(|f| *f as i32 == s)
        })
    };
    let id = |r: &pb::ApplicationReportProto| {
        r.application_id.as_ref().map_or((0, 0), |a| {
            (a.cluster_timestamp.unwrap_or(0), a.id.unwrap_or(0))
        })
    };
    // (finished, newest first, list, index): unfinished sort first.
    type Rank = (bool, std::cmp::Reverse<(i64, i32)>, usize, usize);
    let mut order: Vec<Rank> = Vec::new();
    for (l, list) in lists.iter().enumerate() {
        for (i, r) in list.iter().enumerate() {
            order.push((finished(r), std::cmp::Reverse(id(r)), l, i));
        }
    }
    order.sort();
    let mut keep: Vec<Vec<bool>> = lists.iter().map(|l| vec![false; l.len()]).collect();
    let mut used = 0usize;
    for (_, _, l, i) in order {
        let len = listed_len(&lists[l][i]);
        if used + len <= budget {
            used += len;
            keep[l][i] = true;
        }
    }
    let mut left_out = 0usize;
    for (list, keep) in lists.iter_mut().zip(keep) {
        let mut flags = keep.into_iter();
        list.retain(|_| {
            let kept = flags.next().unwrap_or(false);
            left_out += usize::from(!kept);
            kept
        });
    }
    warn!(
        budget,
        cut,
        left_out,
        "application list above the reply limit: diagnostics cut, applications left out"
    );
}

/// Every list of application reports in a queue's info and its children's.
fn application_lists<'a>(
    q: &'a mut pb::QueueInfoProto,
    lists: &mut Vec<&'a mut Vec<pb::ApplicationReportProto>>,
) {
    lists.push(&mut q.applications);
    for child in &mut q.child_queues {
        application_lists(child, lists);
    }
}

// ---- conversions of this protocol ------------------------------------------------

fn cluster_metrics_to_pb(m: ClusterMetrics) -> pb::YarnClusterMetricsProto {
    pb::YarnClusterMetricsProto {
        num_node_managers: Some(m.node_managers),
        num_decommissioned_nms: Some(m.decommissioned),
        num_active_nms: Some(m.active),
        num_lost_nms: Some(m.lost),
        num_unhealthy_nms: Some(m.unhealthy),
        num_rebooted_nms: Some(m.rebooted),
        num_decommissioning_nms: Some(m.decommissioning),
        num_shutdown_nms: Some(m.shutdown),
    }
}

/// A queue's info as `yarn queue -status` reads it.
fn queue_info_to_pb(info: &QueueInfo, web: &WebAddresses) -> pb::QueueInfoProto {
    let q = &info.queue;
    let st = &info.statistics;
    let statistics = pb::QueueStatisticsProto {
        num_apps_submitted: Some(st.submitted),
        num_apps_running: Some(st.running),
        num_apps_pending: Some(st.pending),
        num_apps_completed: Some(st.completed),
        num_apps_killed: Some(st.killed),
        num_apps_failed: Some(st.failed),
        allocated_memory_mb: Some(q.used.memory_mb),
        allocated_v_cores: Some(i64::from(q.used.vcores)),
        available_memory_mb: Some(st.available.memory_mb),
        available_v_cores: Some(i64::from(st.available.vcores)),
        ..Default::default()
    };
    pb::QueueInfoProto {
        queue_name: Some(q.name.clone()),
        queue_path: Some(q.path.clone()),
        capacity: Some(q.capacity as f32),
        maximum_capacity: Some(q.maximum_capacity as f32),
        current_capacity: Some(q.current_capacity as f32),
        state: Some(match q.state {
            QueueRunState::Running => pb::QueueStateProto::QRunning,
            QueueRunState::Stopped => pb::QueueStateProto::QStopped,
        } as i32),
        child_queues: info
            .children
            .iter()
            .map(|q| queue_info_to_pb(q, web))
            .collect(),
        applications: info.apps.iter().map(|r| app_report_to_pb(r, web)).collect(),
        accessible_node_labels: vec!["*".into()],
        default_node_label_expression: Some(String::new()),
        queue_statistics: Some(statistics),
        preemption_disabled: Some(true),
        intra_queue_preemption_disabled: Some(true),
        scheduler_type: Some(
            match info.scheduler {
                SchedulerKind::Capacity => "CapacityScheduler",
                SchedulerKind::Fair => "FairScheduler",
                SchedulerKind::Fifo => "FifoScheduler",
            }
            .into(),
        ),
        weight: Some(q.weight.map_or(-1.0, |w| w as f32)),
        max_parallel_apps: Some(
            q.max_running_apps
                .map_or(i32::MAX, |m| i32::try_from(m).unwrap_or(i32::MAX)),
        ),
        max_running_app: q
            .max_running_apps
            .map(|m| i32::try_from(m).unwrap_or(i32::MAX)),
        min_resource_memory: Some(q.min_share.memory_mb),
        min_resource_v_core: Some(q.min_share.vcores),
        max_resource_memory: Some(q.maximum.memory_mb),
        max_resource_v_core: Some(q.maximum.vcores),
        steady_fair_share_memory: Some(q.guaranteed.memory_mb),
        steady_fair_share_v_core: Some(q.guaranteed.vcores),
        ..Default::default()
    }
}

fn filter_from_pb(req: &pb::GetApplicationsRequestProto) -> AppFilter {
    let range = |lo: Option<i64>, hi: Option<i64>| match (lo, hi) {
        (None, None) => None,
        (lo, hi) => Some((
            lo.unwrap_or(0).max(0) as u64,
            hi.map_or(u64::MAX, |h| h.max(0) as u64),
        )),
    };
    let scope = match req
        .scope
        .and_then(|v| pb::ApplicationsRequestScopeProto::try_from(v).ok())
    {
        Some(pb::ApplicationsRequestScopeProto::Viewable) => AppScope::Viewable,
        Some(pb::ApplicationsRequestScopeProto::Own) => AppScope::Own,
        Some(pb::ApplicationsRequestScopeProto::All) | None => AppScope::All,
    };
    AppFilter {
        scope,
        states: req
            .application_states
            .iter()
            .filter_map(|v| app_state_from_pb(*v))
            .collect(),
        types: req.application_types.iter().cloned().collect(),
        queues: req.queues.iter().cloned().collect(),
        users: req.users.iter().cloned().collect(),
        tags: req.application_tags.iter().cloned().collect(),
        name: req.name.clone().filter(|n| !n.is_empty()),
        limit: req.limit.filter(|l| *l > 0).map(|l| l as usize),
        started: range(req.start_begin, req.start_end),
        finished: range(req.finish_begin, req.finish_end),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(
        id: i32,
        state: pb::YarnApplicationStateProto,
        diag_chars: usize,
    ) -> pb::ApplicationReportProto {
        pb::ApplicationReportProto {
            application_id: Some(pb::ApplicationIdProto {
                id: Some(id),
                cluster_timestamp: Some(1),
            }),
            yarn_application_state: Some(state as i32),
            diagnostics: Some("d".repeat(diag_chars)),
            name: Some(format!("app-{id}")),
            ..Default::default()
        }
    }

    fn ids(list: &[pb::ApplicationReportProto]) -> Vec<i32> {
        list.iter()
            .filter_map(|r| r.application_id.and_then(|a| a.id))
            .collect()
    }

    /// Reports that fit are left alone; when they do not, long diagnostics
    /// are cut first.
    #[test]
    fn a_list_over_the_reply_limit_cuts_diagnostics_first() {
        use pb::YarnApplicationStateProto::{Killed, Running};
        let mut small: Vec<_> = (1..=3).map(|i| report(i, Running, 10)).collect();
        let before = small.clone();
        fit_reports(&mut [&mut small], 1 << 20);
        assert_eq!(small, before);

        let mut big: Vec<_> = (1..=6).map(|i| report(i, Killed, 65_536)).collect();
        let budget = 128 * 1024;
        fit_reports(&mut [&mut big], budget);
        assert_eq!(ids(&big), [1, 2, 3, 4, 5, 6]);
        let listed: usize = big.iter().map(listed_len).sum();
        assert!(listed <= budget, "{listed}");
        let d = big[0].diagnostics.clone().unwrap_or_default();
        assert!(
            d.starts_with("Diagnostics cut to their last 1024 of 65536 characters in this list:"),
            "{}",
            &d[..80]
        );
        assert!(d.ends_with(&"d".repeat(1024)));
    }

    /// When cutting diagnostics is not enough, unfinished applications stay,
    /// then the newest finished ones, and every list keeps its order.
    #[test]
    fn a_list_still_over_the_limit_keeps_running_and_newest_applications() {
        use pb::YarnApplicationStateProto::{Finished, Running};
        let mut list: Vec<_> = (1..=100)
            .map(|i| {
                let mut r = report(i, if i % 10 == 0 { Running } else { Finished }, 0);
                r.name = Some("n".repeat(1000));
                r
            })
            .collect();
        let one = listed_len(&list[0]);
        fit_reports(&mut [&mut list], one * 15);
        // The ten running ones, then the five newest finished ones.
        assert_eq!(
            ids(&list),
            [10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 96, 97, 98, 99, 100]
        );
    }

    fn close(a: Option<f32>, b: f32) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-4)
    }

    fn names(infos: &[pb::QueueInfoProto]) -> Vec<String> {
        infos
            .iter()
            .map(|q| q.queue_name.clone().unwrap_or_default())
            .collect()
    }

    /// What `yarn queue -status` reads: capacities, usage, application
    /// counts and children, for a leaf, its parent and the root.
    #[test]
    fn queue_info_reports_capacities_usage_apps_and_children() {
        let (s, running, waiting) = crate::state::test_support::two_etl_apps();
        let info = |name: &str, apps: bool, children: bool, recursive: bool| {
            let q = s
                .queue_info(
                    name,
                    apps,
                    children,
                    recursive,
                    &crate::model::access::Caller::user("alice"),
                )
                .unwrap_or_else(|| panic!("no queue {name}"));
            queue_info_to_pb(&q, &WebAddresses::new("rm:8088".into(), None))
        };
        let etl = info("etl", true, false, false);
        assert_eq!(etl.queue_name.as_deref(), Some("etl"));
        assert_eq!(etl.queue_path.as_deref(), Some("root.eng.etl"));
        assert_eq!(etl.state, Some(pb::QueueStateProto::QRunning as i32));
        assert!(close(etl.capacity, 0.5), "{:?}", etl.capacity);
        assert!(
            close(etl.maximum_capacity, 1.0),
            "{:?}",
            etl.maximum_capacity
        );
        // 1 GB used of a 3 GB guarantee (10 GB × 60% × 50%).
        assert!(
            close(etl.current_capacity, 1.0 / 3.0),
            "{:?}",
            etl.current_capacity
        );
        assert!(etl.child_queues.is_empty());
        assert_eq!(etl.applications.len(), 2);
        let listed: Vec<_> = etl
            .applications
            .iter()
            .map(|a| a.application_id.and_then(|id| id.id))
            .collect();
        assert_eq!(listed, [Some(running.id), Some(waiting.id)]);
        assert_eq!(etl.scheduler_type.as_deref(), Some("CapacityScheduler"));
        let stats = etl.queue_statistics.expect("statistics");
        assert_eq!(stats.allocated_memory_mb, Some(1024));
        assert_eq!(stats.allocated_v_cores, Some(1));
        assert_eq!(stats.num_apps_submitted, Some(2));
        assert_eq!(stats.num_apps_running, Some(1));
        assert_eq!(stats.num_apps_pending, Some(1));
        assert_eq!(stats.num_apps_completed, Some(0));
        // The queue's maximum (eng's 80% of 10 GB) less what is used.
        assert_eq!(stats.available_memory_mb, Some(8192 - 1024));

        // Applications are listed only when asked for.
        assert!(info("etl", false, false, false).applications.is_empty());

        let eng = info("eng", false, true, false);
        assert_eq!(eng.queue_path.as_deref(), Some("root.eng"));
        assert!(close(eng.capacity, 0.6), "{:?}", eng.capacity);
        assert!(
            close(eng.maximum_capacity, 0.8),
            "{:?}",
            eng.maximum_capacity
        );
        assert_eq!(names(&eng.child_queues), ["etl", "adhoc"]);
        let eng_stats = eng.queue_statistics.expect("statistics");
        assert_eq!(eng_stats.allocated_memory_mb, Some(1024));
        assert_eq!(eng_stats.num_apps_running, Some(1));
        assert_eq!(eng_stats.num_apps_pending, Some(1));
        // A child's own counts come with it.
        let child_stats = eng.child_queues[0].queue_statistics.expect("stats");
        assert_eq!(child_stats.num_apps_running, Some(1));

        // Children without recursion stop one level down; with it the
        // whole subtree comes back.
        let root = info("root", false, true, false);
        assert_eq!(names(&root.child_queues), ["eng", "ops"]);
        assert!(root.child_queues[0].child_queues.is_empty());
        let ops = &root.child_queues[1];
        assert_eq!(ops.state, Some(pb::QueueStateProto::QStopped as i32));
        assert!(close(ops.capacity, 0.4), "{:?}", ops.capacity);
        assert_eq!(
            ops.queue_statistics
                .as_ref()
                .and_then(|q| q.allocated_memory_mb),
            Some(0)
        );
        let all = info("root", false, true, true);
        assert_eq!(names(&all.child_queues[0].child_queues), ["etl", "adhoc"]);
        let root_stats = all.queue_statistics.expect("statistics");
        assert_eq!(root_stats.num_apps_submitted, Some(2));
        assert_eq!(root_stats.allocated_memory_mb, Some(1024));
    }
}
