//! ApplicationClientProtocol: what `yarn application|node|queue|cluster` and
//! YarnClient (Spark's submitter) call on the RM's client port.

use std::collections::BTreeSet;
use std::sync::Arc;

use hadoop_protos::yarn as pb;
use spindle_ipc::{class, protocols, CallContext, RpcError, Service};

use crate::apps::{AppFilter, AppState, Submission, SubmitError};
use crate::convert::{
    app_id_from_pb, app_id_to_pb, app_state_from_pb, attempt_id_from_pb, attempt_report,
    container_id_from_pb, node_report, node_state_from_pb, resource_from_pb, resource_to_pb,
};
use crate::nodes::NodeState;
use spindle_scheduler::{QueueReport, QueueRunState, SchedulerKind};

use crate::core::{PriorityUpdateError, RmState};
use crate::RmContext;

/// Methods of Hadoop's ApplicationClientProtocol that Spindle does not serve yet.
const UNSUPPORTED: &[&str] = &[
    "failApplicationAttempt",
    "getDelegationToken",
    "renewDelegationToken",
    "cancelDelegationToken",
    "moveApplicationAcrossQueues",
    "getNewReservation",
    "submitReservation",
    "updateReservation",
    "deleteReservation",
    "listReservations",
    "signalToContainer",
    "updateApplicationTimeouts",
    "getResourceProfiles",
    "getResourceProfile",
];

fn not_found(id: &impl std::fmt::Display) -> RpcError {
    RpcError::new(
        class::APPLICATION_NOT_FOUND,
        format!("Application with id '{id}' doesn't exist in RM. Please check that the job submission was successful."),
    )
}

pub fn service(ctx: Arc<RmContext>) -> Service {
    let c = ctx.clone();
    let s = Service::new(protocols::APPLICATION_CLIENT).method(
        "getNewApplication",
        move |_call: CallContext, _req: pb::GetNewApplicationRequestProto| {
            let c = c.clone();
            async move {
                let max = c.max_allocation;
                let id = c.core.with(|s, _| s.apps.new_id()).await?;
                Ok(pb::GetNewApplicationResponseProto {
                    application_id: Some(app_id_to_pb(&id)),
                    maximum_capability: Some(resource_to_pb(max)),
                })
            }
        },
    );
    let c = ctx.clone();
    let s = s.method(
        "submitApplication",
        move |call: CallContext, req: pb::SubmitApplicationRequestProto| {
            let c = c.clone();
            async move {
                let asc = req.application_submission_context.ok_or_else(|| {
                    RpcError::yarn("submitApplication carries no application submission context")
                })?;
                let sub = submission_from_pb(&asc, c.min_allocation)?;
                let clc = asc.am_container_spec.clone().unwrap_or_default();
                let user = call.user.clone();
                // Placement rules and ACLs may need the user's groups; the
                // lookup runs a process, so it happens here, off the core.
                let groups = crate::acl::groups_for_user(&user).await;
                let result = c
                    .core
                    .with(move |s, now| s.submit(sub, clc, &user, &groups, now))
                    .await?;
                match result {
                    Ok(_) => Ok(pb::SubmitApplicationResponseProto {}),
                    Err(SubmitError::ResourceTooLarge(m)) => {
                        Err(RpcError::new(class::INVALID_RESOURCE_REQUEST, m))
                    }
                    Err(SubmitError::UnknownId(m)) | Err(SubmitError::Invalid(m)) => {
                        Err(RpcError::yarn(m))
                    }
                    // Hadoop wraps the AccessControlException in a YarnException.
                    Err(SubmitError::AccessDenied(m)) => {
                        Err(RpcError::yarn(format!("{}: {m}", class::ACCESS_CONTROL)))
                    }
                }
            }
        },
    );
    let c = ctx.clone();
    let s = s.method(
        "getApplicationReport",
        move |call: CallContext, req: pb::GetApplicationReportRequestProto| {
            let c = c.clone();
            async move {
                let id = app_id_from_pb(req.application_id.as_ref())?;
                let caller = call.user;
                let report = c
                    .core
                    .with(move |s, _| s.apps.get(&id).map(|a| s.report_for(a, &caller)))
                    .await?
                    .ok_or_else(|| not_found(&id))?;
                Ok(pb::GetApplicationReportResponseProto {
                    application_report: Some(report),
                })
            }
        },
    );
    let c = ctx.clone();
    let s = s.method(
        "forceKillApplication",
        move |call: CallContext, req: pb::KillApplicationRequestProto| {
            let c = c.clone();
            async move {
                let id = app_id_from_pb(req.application_id.as_ref())?;
                let diagnostics = req
                    .diagnostics
                    .filter(|d| !d.is_empty())
                    .map(|d| format!("Application killed by user {}: {d}", call.user))
                    .unwrap_or_else(|| format!("Application killed by user {}.", call.user));
                let done = c
                    .core
                    .with(move |s, now| s.kill_app(id, diagnostics, now))
                    .await?
                    .ok_or_else(|| {
                        RpcError::new(
                            class::APPLICATION_NOT_FOUND,
                            format!("Trying to kill an absent application {id}"),
                        )
                    })?;
                Ok(pb::KillApplicationResponseProto {
                    is_kill_completed: Some(done),
                })
            }
        },
    );
    let c = ctx.clone();
    let s = s.method(
        "updateApplicationPriority",
        move |call: CallContext, req: pb::UpdateApplicationPriorityRequestProto| {
            let c = c.clone();
            async move {
                // Both fields are `required` in Hadoop's proto.
                let id = app_id_from_pb(Some(&req.application_id))?;
                let requested = req.application_priority.priority.ok_or_else(|| {
                    RpcError::new(
                        class::ILLEGAL_ARGUMENT,
                        "updateApplicationPriority carries no priority",
                    )
                })?;
                let user = call.user.clone();
                let groups = crate::acl::groups_for_user(&user).await;
                let result = c
                    .core
                    .with(move |s, now| s.update_app_priority(id, requested, &user, &groups, now))
                    .await?;
                match result {
                    Ok(priority) => Ok(pb::UpdateApplicationPriorityResponseProto {
                        application_priority: Some(pb::PriorityProto {
                            priority: Some(priority),
                        }),
                    }),
                    Err(PriorityUpdateError::NotFound) => Err(not_found(&id)),
                    // Hadoop wraps the AccessControlException in a YarnException.
                    Err(PriorityUpdateError::AccessDenied(m)) => {
                        Err(RpcError::yarn(format!("{}: {m}", class::ACCESS_CONTROL)))
                    }
                    Err(PriorityUpdateError::WrongState(m)) => Err(RpcError::yarn(m)),
                }
            }
        },
    );
    let c = ctx.clone();
    let s = s.method(
        "getApplications",
        move |call: CallContext, req: pb::GetApplicationsRequestProto| {
            let c = c.clone();
            async move {
                let filter = filter_from_pb(&req);
                let caller = call.user;
                let reports = c
                    .core
                    .with(move |s, _| {
                        s.apps
                            .list(&filter)
                            .into_iter()
                            .map(|a| s.report_for(a, &caller))
                            .collect::<Vec<_>>()
                    })
                    .await?;
                Ok(pb::GetApplicationsResponseProto {
                    applications: reports,
                })
            }
        },
    );
    let c = ctx.clone();
    let s = s.method(
        "getClusterMetrics",
        move |_call: CallContext, _req: pb::GetClusterMetricsRequestProto| {
            let c = c.clone();
            async move {
                let m = c
                    .core
                    .with(|s, _| {
                        let n = |st| s.nodes.count(st) as i32;
                        pb::YarnClusterMetricsProto {
                            num_node_managers: Some(s.nodes.active().count() as i32),
                            num_decommissioned_nms: Some(n(NodeState::Decommissioned)),
                            num_active_nms: Some(n(NodeState::Running)),
                            num_lost_nms: Some(n(NodeState::Lost)),
                            num_unhealthy_nms: Some(n(NodeState::Unhealthy)),
                            num_rebooted_nms: Some(n(NodeState::Rebooted)),
                            num_decommissioning_nms: Some(n(NodeState::Decommissioning)),
                            num_shutdown_nms: Some(n(NodeState::Shutdown)),
                        }
                    })
                    .await?;
                Ok(pb::GetClusterMetricsResponseProto {
                    cluster_metrics: Some(m),
                })
            }
        },
    );
    let c = ctx.clone();
    let s = s.method(
        "getClusterNodes",
        move |_call: CallContext, req: pb::GetClusterNodesRequestProto| {
            let c = c.clone();
            async move {
                let mut states: BTreeSet<NodeState> = req
                    .node_states
                    .iter()
                    .filter_map(|v| node_state_from_pb(*v))
                    .collect();
                if req.node_states.is_empty() {
                    // No filter means every state, as in Hadoop's ClientRMService.
                    states = [
                        NodeState::New,
                        NodeState::Running,
                        NodeState::Unhealthy,
                        NodeState::Decommissioned,
                        NodeState::Lost,
                        NodeState::Rebooted,
                        NodeState::Decommissioning,
                        NodeState::Shutdown,
                    ]
                    .into();
                }
                let reports = c
                    .core
                    .with(move |s, _| {
                        s.nodes
                            .all()
                            .filter(|n| states.contains(&n.state))
                            .map(node_report)
                            .collect::<Vec<_>>()
                    })
                    .await?;
                Ok(pb::GetClusterNodesResponseProto {
                    node_reports: reports,
                })
            }
        },
    );
    let c = ctx.clone();
    let s = s.method(
        "getQueueInfo",
        move |_call: CallContext, req: pb::GetQueueInfoRequestProto| {
            let c = c.clone();
            async move {
                let name = req.queue_name.clone().unwrap_or_else(|| "default".into());
                let with_apps = req.include_applications.unwrap_or(false);
                let with_children = req.include_child_queues.unwrap_or(false);
                let recursive = req.recursive.unwrap_or(false);
                let info = c
                    .core
                    .with(move |s, _| {
                        let q = s.scheduler.queue(&name)?;
                        Some(queue_info_tree(s, &q, with_apps, with_children, recursive))
                    })
                    .await?;
                // Like Hadoop, an unknown queue is an answer without queue info; the
                // CLI then prints that it cannot find the queue.
                Ok(pb::GetQueueInfoResponseProto { queue_info: info })
            }
        },
    );
    let c = ctx.clone();
    let s = s.method(
        "getQueueUserAcls",
        move |_call: CallContext, _req: pb::GetQueueUserAclsInfoRequestProto| {
            let c = c.clone();
            async move {
                let names = c
                    .core
                    .with(|s, _| {
                        s.scheduler
                            .queues()
                            .into_iter()
                            .map(|q| q.name)
                            .collect::<Vec<_>>()
                    })
                    .await?;
                // Every user is reported with both rights; when yarn.acl.enable
                // is on, submissions are checked against the queues' ACLs.
                let acls = vec![
                    pb::QueueAclProto::QaclSubmitApplications as i32,
                    pb::QueueAclProto::QaclAdministerQueue as i32,
                ];
                let queue_user_acls = names
                    .into_iter()
                    .map(|q| pb::QueueUserAclInfoProto {
                        queue_name: Some(q),
                        user_acls: acls.clone(),
                    })
                    .collect();
                Ok(pb::GetQueueUserAclsInfoResponseProto { queue_user_acls })
            }
        },
    );
    let c = ctx.clone();
    let s = s.method(
        "getApplicationAttempts",
        move |_call: CallContext, req: pb::GetApplicationAttemptsRequestProto| {
            let c = c.clone();
            async move {
                let id = app_id_from_pb(req.application_id.as_ref())?;
                let reports = c
                    .core
                    .with(move |s, _| {
                        s.apps.get(&id)?;
                        let ids = s
                            .launch
                            .get(&id)
                            .map(|l| l.attempts.clone())
                            .unwrap_or_default();
                        Some(
                            ids.iter()
                                .filter_map(|a| s.attempts.get(a))
                                .map(attempt_report)
                                .collect::<Vec<_>>(),
                        )
                    })
                    .await?
                    .ok_or_else(|| not_found(&id))?;
                Ok(pb::GetApplicationAttemptsResponseProto {
                    application_attempts: reports,
                })
            }
        },
    );
    let c = ctx.clone();
    let s = s.method(
        "getApplicationAttemptReport",
        move |_call: CallContext, req: pb::GetApplicationAttemptReportRequestProto| {
            let c = c.clone();
            async move {
                let id = attempt_id_from_pb(req.application_attempt_id.as_ref())?;
                let report = c
                    .core
                    .with(move |s, _| s.attempts.get(&id).map(attempt_report))
                    .await?;
                let report = report.ok_or_else(|| attempt_not_found(&id))?;
                Ok(pb::GetApplicationAttemptReportResponseProto {
                    application_attempt_report: Some(report),
                })
            }
        },
    );
    let c = ctx.clone();
    let s = s.method(
        "getContainers",
        move |_call: CallContext, req: pb::GetContainersRequestProto| {
            let c = c.clone();
            async move {
                let id = attempt_id_from_pb(req.application_attempt_id.as_ref())?;
                let reports = c
                    .core
                    .with(move |s, _| {
                        let a = s.attempts.get(&id)?;
                        Some(
                            a.live
                                .keys()
                                .filter_map(|cid| s.container_report(cid))
                                .collect::<Vec<_>>(),
                        )
                    })
                    .await?
                    .ok_or_else(|| attempt_not_found(&id))?;
                Ok(pb::GetContainersResponseProto {
                    containers: reports,
                })
            }
        },
    );
    let c = ctx.clone();
    let s = s.method(
        "getContainerReport",
        move |_call: CallContext, req: pb::GetContainerReportRequestProto| {
            let c = c.clone();
            async move {
                let cid = req
                    .container_id
                    .as_ref()
                    .ok_or_else(|| {
                        RpcError::new(class::ILLEGAL_ARGUMENT, "the request names no container id")
                    })
                    .and_then(container_id_from_pb)?;
                let report = c.core.with(move |s, _| s.container_report(&cid)).await?;
                let report = report.ok_or_else(|| {
                    RpcError::new(
                        class::CONTAINER_NOT_FOUND,
                        format!("Container with id '{cid}' doesn't exist in RM."),
                    )
                })?;
                Ok(pb::GetContainerReportResponseProto {
                    container_report: Some(report),
                })
            }
        },
    );
    // Node labels and attributes: Spindle has none, so the answers are empty.
    let s = s
        .method(
            "getClusterNodeLabels",
            |_c: CallContext, _r: pb::GetClusterNodeLabelsRequestProto| async {
                Ok(pb::GetClusterNodeLabelsResponseProto::default())
            },
        )
        .method(
            "getNodeToLabels",
            |_c: CallContext, _r: pb::GetNodesToLabelsRequestProto| async {
                Ok(pb::GetNodesToLabelsResponseProto::default())
            },
        )
        .method(
            "getLabelsToNodes",
            |_c: CallContext, _r: pb::GetLabelsToNodesRequestProto| async {
                Ok(pb::GetLabelsToNodesResponseProto::default())
            },
        )
        .method(
            "getClusterNodeAttributes",
            |_c: CallContext, _r: pb::GetClusterNodeAttributesRequestProto| async {
                Ok(pb::GetClusterNodeAttributesResponseProto::default())
            },
        )
        .method(
            "getAttributesToNodes",
            |_c: CallContext, _r: pb::GetAttributesToNodesRequestProto| async {
                Ok(pb::GetAttributesToNodesResponseProto::default())
            },
        )
        .method(
            "getNodesToAttributes",
            |_c: CallContext, _r: pb::GetNodesToAttributesRequestProto| async {
                Ok(pb::GetNodesToAttributesResponseProto::default())
            },
        )
        .method(
            "getResourceTypeInfo",
            |_c: CallContext, _r: pb::GetAllResourceTypeInfoRequestProto| async {
                Ok(pb::GetAllResourceTypeInfoResponseProto {
                    resource_type_info: crate::convert::resource_types(),
                })
            },
        );
    s.unsupported(UNSUPPORTED)
}

fn attempt_not_found(id: &impl std::fmt::Display) -> RpcError {
    RpcError::new(
        class::APPLICATION_ATTEMPT_NOT_FOUND,
        format!("ApplicationAttempt with id '{id}' doesn't exist in RM."),
    )
}

/// A queue's info as `yarn queue -status` reads it, with its children
/// (and theirs when `recursive`) and applications when asked.
fn queue_info_tree(
    s: &RmState,
    q: &QueueReport,
    with_apps: bool,
    with_children: bool,
    recursive: bool,
) -> pb::QueueInfoProto {
    let in_queue = |a: &&crate::apps::App| {
        q.leaf && s.queues.same_leaf(&a.queue, &q.path)
            || !q.leaf
                && s.queues
                    .tree
                    .resolve_leaf(&a.queue)
                    .is_some_and(|leaf| leaf.starts_with(&format!("{}.", q.path)))
    };
    let apps: Vec<&crate::apps::App> = s.apps.all().filter(in_queue).collect();
    let count =
        |pred: &dyn Fn(&crate::apps::App) -> bool| apps.iter().filter(|a| pred(a)).count() as i64;
    let pending = count(&|a| {
        matches!(
            a.state,
            AppState::New | AppState::NewSaving | AppState::Submitted | AppState::Accepted
        )
    });
    let running = count(&|a| a.state == AppState::Running);
    let statistics = pb::QueueStatisticsProto {
        num_apps_submitted: Some(apps.len() as i64),
        num_apps_running: Some(running),
        num_apps_pending: Some(pending),
        num_apps_completed: Some(count(&|a| a.state == AppState::Finished)),
        num_apps_killed: Some(count(&|a| a.state == AppState::Killed)),
        num_apps_failed: Some(count(&|a| a.state == AppState::Failed)),
        allocated_memory_mb: Some(q.used.memory_mb),
        allocated_v_cores: Some(i64::from(q.used.vcores)),
        available_memory_mb: Some((q.maximum.memory_mb - q.used.memory_mb).max(0)),
        available_v_cores: Some(i64::from((q.maximum.vcores - q.used.vcores).max(0))),
        ..Default::default()
    };
    let children = if with_children || recursive {
        q.children
            .iter()
            .filter_map(|path| s.scheduler.queue(path))
            .map(|child| queue_info_tree(s, &child, with_apps && recursive, recursive, recursive))
            .collect()
    } else {
        Vec::new()
    };
    let kind = s.queues.tree.kind;
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
        child_queues: children,
        applications: if with_apps && q.leaf {
            apps.iter().map(|a| s.report(a)).collect()
        } else {
            Vec::new()
        },
        accessible_node_labels: vec!["*".into()],
        default_node_label_expression: Some(String::new()),
        queue_statistics: Some(statistics),
        preemption_disabled: Some(true),
        intra_queue_preemption_disabled: Some(true),
        scheduler_type: Some(
            match kind {
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
    AppFilter {
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

fn submission_from_pb(
    asc: &pb::ApplicationSubmissionContextProto,
    min_allocation: spindle_common::resource::Resource,
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

#[cfg(test)]
mod tests {
    use spindle_common::resource::Resource;

    use super::*;
    use crate::test_support::{add_node, capacity_queues, run_ams, state_with, submit_to};

    fn close(a: Option<f32>, b: f32) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-4)
    }

    fn info(
        s: &RmState,
        name: &str,
        apps: bool,
        children: bool,
        recursive: bool,
    ) -> pb::QueueInfoProto {
        let q = s
            .scheduler
            .queue(name)
            .unwrap_or_else(|| panic!("no queue {name}"));
        queue_info_tree(s, &q, apps, children, recursive)
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
        let mut s = state_with(capacity_queues(&[
            ("root.queues", "eng,ops"),
            ("root.eng.capacity", "60"),
            ("root.eng.maximum-capacity", "80"),
            ("root.eng.queues", "etl,adhoc"),
            ("root.eng.etl.capacity", "50"),
            ("root.eng.adhoc.capacity", "50"),
            ("root.ops.capacity", "40"),
            ("root.ops.state", "STOPPED"),
        ]));
        add_node(&mut s, "h1", Resource::new(10240, 10), 0);
        // The first AM fits etl's AM limit and runs; the second waits.
        let running = submit_to(&mut s, "etl", "alice", None, 1);
        assert_eq!(run_ams(&mut s, 2).len(), 1);
        let waiting = submit_to(&mut s, "etl", "bob", None, 3);
        assert!(s.outbox.is_empty(), "the second AM is held back");
        assert_eq!(
            s.apps.get(&running).map(|a| a.state),
            Some(AppState::Running)
        );
        assert_eq!(
            s.apps.get(&waiting).map(|a| a.state),
            Some(AppState::Accepted)
        );

        let etl = info(&s, "etl", true, false, false);
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
        assert!(info(&s, "etl", false, false, false).applications.is_empty());

        let eng = info(&s, "eng", false, true, false);
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
        let root = info(&s, "root", false, true, false);
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
        let all = info(&s, "root", false, true, true);
        assert_eq!(names(&all.child_queues[0].child_queues), ["etl", "adhoc"]);
        let root_stats = all.queue_statistics.expect("statistics");
        assert_eq!(root_stats.num_apps_submitted, Some(2));
        assert_eq!(root_stats.allocated_memory_mb, Some(1024));
    }
}
