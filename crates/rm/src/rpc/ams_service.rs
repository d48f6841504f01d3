//! ApplicationMasterProtocol on the scheduler port.
//!
//! Requests carry no attempt id: the attempt is the one named by the AMRMToken that
//! authenticated the connection (SASL DIGEST-MD5), as in Hadoop. The port offers
//! only TOKEN authentication, so a client without a valid AMRMToken never gets a call
//! through.

use std::sync::Arc;

use hadoop_protos::yarn as pb;
use spindle_common::security::AmRmTokenIdentifier;
use spindle_ipc::methods::application_master::{
    ALLOCATE, FINISH_APPLICATION_MASTER, REGISTER_APPLICATION_MASTER,
};
use spindle_ipc::{class, protocols, AuthMethod, CallContext, RpcError, Service};
use spindle_scheduler::{ResourceAsk, ANY};

use crate::model::amrm::{
    AllocateReply, AllocateRequest, AllocatedContainer, NmTokenGrant, RegisterReply,
};
use crate::model::convert::{
    container_id_from_pb, container_id_to_pb, final_status_from_pb, node_id_to_pb,
    node_report_to_pb, resource_from_pb, resource_to_pb,
};
use crate::runtime::context::RmContext;
use crate::state::command::{Allocate, FinishApplicationMaster, RegisterApplicationMaster};

pub fn service(ctx: Arc<RmContext>) -> Service {
    Service::new(protocols::APPLICATION_MASTER)
        .with_state(ctx)
        .handle(&REGISTER_APPLICATION_MASTER, register_application_master)
        .handle(&ALLOCATE, allocate)
        .handle(&FINISH_APPLICATION_MASTER, finish_application_master)
        .into()
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
        AuthMethod::Simple | AuthMethod::Kerberos { .. } => Err(RpcError::new(
            class::ACCESS_CONTROL,
            format!("No AMRMToken found for user {}", call.user),
        )),
    }
}

async fn register_application_master(
    ctx: Arc<RmContext>,
    call: CallContext,
    req: pb::RegisterApplicationMasterRequestProto,
) -> Result<pb::RegisterApplicationMasterResponseProto, RpcError> {
    let register = RegisterApplicationMaster {
        attempt: token_of(&call)?.attempt,
        host: req.host.unwrap_or_default(),
        rpc_port: req.rpc_port.unwrap_or(-1),
        tracking_url: req.tracking_url.unwrap_or_default(),
    };
    let reply = ctx.core.call(register).await??;
    Ok(register_reply_to_pb(reply))
}

async fn allocate(
    ctx: Arc<RmContext>,
    call: CallContext,
    req: pb::AllocateRequestProto,
) -> Result<pb::AllocateResponseProto, RpcError> {
    let token = token_of(&call)?;
    let allocate = Allocate {
        attempt: token.attempt,
        amrm_key_id: token.key_id,
        request: allocate_request_from_pb(req),
    };
    let reply = ctx.core.call(allocate).await??;
    Ok(allocate_reply_to_pb(reply))
}

async fn finish_application_master(
    ctx: Arc<RmContext>,
    call: CallContext,
    req: pb::FinishApplicationMasterRequestProto,
) -> Result<pb::FinishApplicationMasterResponseProto, RpcError> {
    let finish = FinishApplicationMaster {
        attempt: token_of(&call)?.attempt,
        status: final_status_from_pb(req.final_application_status),
        diagnostics: req.diagnostics.unwrap_or_default(),
        tracking_url: req.tracking_url.unwrap_or_default(),
    };
    let done = ctx.core.call(finish).await??;
    Ok(pb::FinishApplicationMasterResponseProto {
        is_unregistered: Some(done),
    })
}

// ---- conversions of this protocol ------------------------------------------------

/// An allocate call in domain terms. Releases whose ids cannot be read are
/// left out.
fn allocate_request_from_pb(req: pb::AllocateRequestProto) -> AllocateRequest {
    let asks = req
        .ask
        .iter()
        .map(|r| {
            ResourceAsk::new(
                r.priority.as_ref().and_then(|p| p.priority).unwrap_or(0),
                r.resource_name.clone().unwrap_or_else(|| ANY.to_string()),
                resource_from_pb(r.capability.as_ref()),
                r.num_containers.unwrap_or(0),
            )
            .relax(r.relax_locality.unwrap_or(true))
            .with_allocation_request_id(r.allocation_request_id.unwrap_or(-1))
        })
        .collect();
    let releases = req
        .release
        .iter()
        .filter_map(|c| container_id_from_pb(c).ok())
        .collect();
    let blacklist = req.blacklist_request.unwrap_or_default();
    AllocateRequest {
        response_id: req.response_id.unwrap_or(0),
        progress: req.progress,
        tracking_url: req.tracking_url.filter(|u| !u.is_empty()),
        asks,
        releases,
        blacklist_add: blacklist.blacklist_additions,
        blacklist_remove: blacklist.blacklist_removals,
    }
}

fn allocated_container_to_pb(c: AllocatedContainer) -> pb::ContainerProto {
    pb::ContainerProto {
        id: Some(container_id_to_pb(&c.id)),
        node_id: Some(node_id_to_pb(&c.node)),
        node_http_address: Some(c.node_http_address),
        resource: Some(resource_to_pb(c.resource)),
        priority: Some(pb::PriorityProto {
            priority: Some(c.priority),
        }),
        container_token: Some(c.token.to_proto()),
        execution_type: Some(pb::ExecutionTypeProto::Guaranteed as i32),
        allocation_request_id: Some(c.allocation_request_id),
        version: Some(0),
        allocation_tags: Vec::new(),
        exposed_ports: None,
    }
}

fn nm_token_to_pb(t: NmTokenGrant) -> pb::NmTokenProto {
    pb::NmTokenProto {
        node_id: Some(node_id_to_pb(&t.node)),
        token: Some(t.token.to_proto()),
    }
}

fn register_reply_to_pb(r: RegisterReply) -> pb::RegisterApplicationMasterResponseProto {
    pb::RegisterApplicationMasterResponseProto {
        maximum_capability: Some(resource_to_pb(r.maximum_capability)),
        queue: Some(r.queue),
        scheduler_resource_types: vec![pb::SchedulerResourceTypes::Memory as i32],
        resource_types: crate::model::convert::resource_types(),
        containers_from_previous_attempts: r
            .previous_containers
            .into_iter()
            .map(allocated_container_to_pb)
            .collect(),
        nm_tokens_from_previous_attempts: r
            .previous_nm_tokens
            .into_iter()
            .map(nm_token_to_pb)
            .collect(),
        ..Default::default()
    }
}

fn allocate_reply_to_pb(r: AllocateReply) -> pb::AllocateResponseProto {
    let completed = r
        .completed
        .into_iter()
        .map(|f| pb::ContainerStatusProto {
            container_id: Some(container_id_to_pb(&f.container)),
            state: Some(pb::ContainerStateProto::CComplete as i32),
            diagnostics: Some(f.diagnostics),
            exit_status: Some(f.exit_status),
            capability: Some(resource_to_pb(f.resource)),
            ..Default::default()
        })
        .collect();
    pb::AllocateResponseProto {
        a_m_command: r.shutdown.then_some(pb::AmCommandProto::AmShutdown as i32),
        response_id: Some(r.response_id),
        updated_nodes: r.updated_nodes.iter().map(node_report_to_pb).collect(),
        am_rm_token: r.amrm_token.map(|t| t.to_proto()),
        allocated_containers: r
            .allocated
            .into_iter()
            .map(allocated_container_to_pb)
            .collect(),
        completed_container_statuses: completed,
        limit: r.cluster.map(|c| resource_to_pb(c.headroom)),
        num_cluster_nodes: r.cluster.map(|c| c.running_nodes),
        nm_tokens: r.nm_tokens.into_iter().map(nm_token_to_pb).collect(),
        application_priority: r
            .application_priority
            .map(|p| pb::PriorityProto { priority: Some(p) }),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use spindle_common::ids::{ApplicationAttemptId, ApplicationId, ContainerId, NodeId};
    use spindle_common::resource::Resource;
    use spindle_common::security::Token;

    use super::*;
    use crate::model::amrm::ClusterView;

    fn attempt() -> ApplicationAttemptId {
        ApplicationAttemptId::new(ApplicationId::new(1_700_000_000_000, 1), 1)
    }

    fn container(seq: i64) -> AllocatedContainer {
        AllocatedContainer {
            id: ContainerId::new(attempt(), seq),
            node: NodeId::new("h1", 4040),
            node_http_address: "h1:8042".into(),
            resource: Resource::new(2048, 1),
            priority: 1,
            allocation_request_id: -1,
            token: Token::new(vec![1], vec![2], "ContainerToken", "h1:4040"),
        }
    }

    /// Asks keep Hadoop's defaults for what the AM leaves out; releases
    /// that cannot be read and an empty tracking URL are left out.
    #[test]
    fn allocate_requests_take_hadoops_defaults() {
        let req = pb::AllocateRequestProto {
            ask: vec![pb::ResourceRequestProto {
                priority: Some(pb::PriorityProto { priority: Some(3) }),
                capability: Some(resource_to_pb(Resource::new(1024, 1))),
                num_containers: Some(2),
                ..Default::default()
            }],
            release: vec![
                container_id_to_pb(&ContainerId::new(attempt(), 4)),
                pb::ContainerIdProto::default(),
            ],
            response_id: Some(6),
            tracking_url: Some(String::new()),
            ..Default::default()
        };
        let r = allocate_request_from_pb(req);
        assert_eq!(
            r.asks,
            [ResourceAsk::new(3, ANY, Resource::new(1024, 1), 2)]
        );
        assert!(r.asks[0].relax_locality);
        assert_eq!(r.asks[0].allocation_request_id, -1);
        assert_eq!(r.releases, [ContainerId::new(attempt(), 4)]);
        assert_eq!((r.response_id, r.tracking_url), (6, None));
    }

    /// Every field Java's AllocateResponse and Container read is set.
    #[test]
    fn allocate_answers_carry_what_java_reads() {
        let reply = AllocateReply {
            response_id: 2,
            shutdown: false,
            allocated: vec![container(2), container(3)],
            completed: Vec::new(),
            updated_nodes: Vec::new(),
            cluster: Some(ClusterView {
                headroom: Resource::new(4096, 4),
                running_nodes: 1,
            }),
            nm_tokens: vec![NmTokenGrant {
                node: NodeId::new("h1", 4040),
                token: Token::new(vec![3], vec![4], "NMToken", "h1:4040"),
            }],
            amrm_token: None,
            application_priority: Some(3),
        };
        let pb = allocate_reply_to_pb(reply);
        // MapReduce's AM dereferences it on every heartbeat.
        assert_eq!(
            pb.application_priority,
            Some(pb::PriorityProto { priority: Some(3) })
        );
        assert_eq!(pb.response_id, Some(2));
        assert_eq!(pb.a_m_command, None);
        assert_eq!(pb.allocated_containers.len(), 2);
        for c in &pb.allocated_containers {
            assert!(
                c.priority.is_some()
                    && c.node_http_address.is_some()
                    && c.container_token.is_some()
            );
        }
        assert_eq!(pb.limit, Some(resource_to_pb(Resource::new(4096, 4))));
        assert_eq!(pb.num_cluster_nodes, Some(1));
        assert_eq!(pb.nm_tokens.len(), 1);

        let shutdown = allocate_reply_to_pb(AllocateReply::shutdown(5));
        assert_eq!(
            shutdown,
            pb::AllocateResponseProto {
                a_m_command: Some(pb::AmCommandProto::AmShutdown as i32),
                response_id: Some(5),
                ..Default::default()
            }
        );
    }

    #[test]
    fn register_answers_name_the_memory_scheduler_and_kept_containers() {
        let pb = register_reply_to_pb(RegisterReply {
            maximum_capability: Resource::new(8192, 4),
            queue: "default".into(),
            previous_containers: vec![container(2)],
            previous_nm_tokens: Vec::new(),
        });
        assert_eq!(pb.queue.as_deref(), Some("default"));
        assert_eq!(
            pb.scheduler_resource_types,
            [pb::SchedulerResourceTypes::Memory as i32]
        );
        assert_eq!(pb.containers_from_previous_attempts.len(), 1);
        assert_eq!(pb.resource_types.len(), 2);
    }
}
