//! ResourceManagerAdministrationProtocol: `yarn rmadmin`.
//!
//! Every refresh re-reads the configuration directory, so an operator edits files and
//! asks for a refresh, as with Hadoop. A file that does not parse is refused with the
//! reason and the configuration in force stays. Every method but the group lookup
//! and the (disabled) node-label methods checks the caller against
//! `yarn.admin.acl` first.

use std::sync::Arc;

use hadoop_protos::yarn as pb;
use spindle_common::conf::Configuration;
use spindle_common::security::proxy_users::ProxyUsers;
use spindle_common::text::escaped;
use spindle_ipc::methods::resource_manager_administration as admin;
use spindle_ipc::{class, protocols, CallContext, RpcError, Service};
use tracing::info;

use crate::acl::{admin_acl, groups_for_user};
use crate::cluster::nodes::Decommission;
use crate::hosts::HostFiles;
use crate::model::convert::{node_id_from_pb, node_id_to_pb, resource_from_pb};
use crate::model::refusal::Refusal;
use crate::runtime::context::RmContext;
use crate::runtime::core::CoreStopped;
use crate::state::command::{
    RefreshAdminAcls, RefreshClusterMaxPriority, RefreshNodes, RefreshQueues, UpdateNodeResources,
};

const NODE_LABELS_DISABLED: &str =
    "Node-label-based scheduling is disabled. Please check yarn.node-labels.enabled";

pub fn service(ctx: Arc<RmContext>) -> Service {
    Service::new(protocols::RESOURCE_MANAGER_ADMINISTRATION)
        .with_state(ctx)
        .handle(&admin::REFRESH_QUEUES, refresh_queues)
        .handle(&admin::REFRESH_NODES, refresh_nodes)
        .handle(&admin::REFRESH_ADMIN_ACLS, refresh_admin_acls)
        .handle(
            &admin::REFRESH_SUPER_USER_GROUPS_CONFIGURATION,
            refresh_super_user_groups_configuration,
        )
        .handle(
            &admin::REFRESH_USER_TO_GROUPS_MAPPINGS,
            refresh_user_to_groups_mappings,
        )
        .handle(&admin::REFRESH_SERVICE_ACLS, refresh_service_acls)
        .handle(
            &admin::REFRESH_CLUSTER_MAX_PRIORITY,
            refresh_cluster_max_priority,
        )
        .handle(
            &admin::CHECK_FOR_DECOMMISSIONING_NODES,
            check_for_decommissioning_nodes,
        )
        .handle(&admin::UPDATE_NODE_RESOURCE, update_node_resource)
        .handle(&admin::GET_GROUPS_FOR_USER, get_groups_for_user)
        .handle(
            &admin::ADD_TO_CLUSTER_NODE_LABELS,
            add_to_cluster_node_labels,
        )
        .handle(
            &admin::REMOVE_FROM_CLUSTER_NODE_LABELS,
            remove_from_cluster_node_labels,
        )
        .handle(&admin::REPLACE_LABELS_ON_NODES, replace_labels_on_nodes)
        .unsupported(&[
            admin::REFRESH_NODES_RESOURCES.name,
            admin::MAP_ATTRIBUTES_TO_NODES.name,
            admin::DEREGISTER_SUB_CLUSTER.name,
            admin::SAVE_FEDERATION_QUEUE_POLICY.name,
            admin::BATCH_SAVE_FEDERATION_QUEUE_POLICIES.name,
            admin::LIST_FEDERATION_QUEUE_POLICIES.name,
            admin::DELETE_FEDERATION_APPLICATION.name,
            admin::GET_FEDERATION_SUB_CLUSTERS.name,
            admin::DELETE_FEDERATION_POLICIES_BY_QUEUES.name,
        ])
        .into()
}

/// Checks the caller against `yarn.admin.acl`; `op` names the operation in
/// the refusal, as Hadoop's `AdminService` names it (the method's name, but
/// `getServiceState` for `getServiceStatus`). A standby checks the ACL it
/// keeps while no state exists.
pub(crate) async fn authorize(
    ctx: &RmContext,
    call: &CallContext,
    op: &str,
) -> Result<(), RpcError> {
    let acl = match ctx.core.query(|s| s.admin_acl().clone()).await {
        Ok(acl) => acl,
        Err(CoreStopped::Standby(_)) => ctx.standby_admin_acl(),
        Err(e) => return Err(e.into()),
    };
    if acl.allows_everyone() {
        return Ok(());
    }
    let groups = ctx.groups.groups(&call.user).await;
    if acl.allows(&call.user, &groups) {
        return Ok(());
    }
    info!(user = %escaped(&call.user), %op, "admin call refused by yarn.admin.acl");
    Err(Refusal::AdminAccessDenied {
        user: call.user.clone(),
        operation: op.to_string(),
    }
    .into())
}

/// `AdminService.checkRMStatus`: a standby refuses the refreshes with a
/// StandbyException (the methods that reach the state refuse by themselves).
fn check_active(ctx: &RmContext) -> Result<(), RpcError> {
    if ctx.core.is_serving() {
        Ok(())
    } else {
        Err(ctx.core.standby_refusal().into())
    }
}

/// Re-reads core-site.xml and yarn-site.xml from the configuration directory.
async fn reload_conf(ctx: &RmContext) -> Result<Configuration, RpcError> {
    let dir = ctx.conf_dir.clone();
    off_runtime(move || {
        Configuration::load(dir.as_deref()).map_err(|e| RpcError::yarn(e.to_string()))
    })
    .await
}

/// Runs file reading off the async runtime's worker threads.
async fn off_runtime<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, RpcError> + Send + 'static,
) -> Result<T, RpcError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| RpcError::io(format!("configuration reload failed: {e}")))?
}

async fn refresh_queues(
    ctx: Arc<RmContext>,
    call: CallContext,
    _req: pb::RefreshQueuesRequestProto,
) -> Result<pb::RefreshQueuesResponseProto, RpcError> {
    authorize(&ctx, &call, admin::REFRESH_QUEUES.name).await?;
    check_active(&ctx)?;
    let conf = reload_conf(&ctx).await?;
    let dir = ctx.conf_dir.clone();
    let kind = ctx.scheduler_kind;
    let queues = off_runtime(move || {
        // Hadoop's AdminService wraps the scheduler's IOException: the
        // client prints `refreshQueues: java.io.IOException: Failed to
        // re-init queues : <reason>`.
        crate::queue_files::load(kind, &conf, dir.as_deref()).map_err(|e| {
            RpcError::yarn(format!(
                "java.io.IOException: Failed to re-init queues : {e}"
            ))
        })
    })
    .await?;
    // The scheduler takes the new tree atomically or refuses it (a
    // queue holding applications removed, ...); the old one stays then.
    ctx.core.call(RefreshQueues { queues }).await??;
    info!(user = %escaped(&call.user), "queues refreshed");
    Ok(pb::RefreshQueuesResponseProto {})
}

async fn refresh_nodes(
    ctx: Arc<RmContext>,
    call: CallContext,
    req: pb::RefreshNodesRequestProto,
) -> Result<pb::RefreshNodesResponseProto, RpcError> {
    authorize(&ctx, &call, admin::REFRESH_NODES.name).await?;
    check_active(&ctx)?;
    let conf = reload_conf(&ctx).await?;
    let files = HostFiles::from_conf(&conf);
    let hosts = off_runtime(move || files.read().map_err(RpcError::yarn)).await?;
    let mode = match req
        .decommission_type
        .and_then(|t| pb::DecommissionTypeProto::try_from(t).ok())
    {
        Some(pb::DecommissionTypeProto::Graceful) => Decommission::Graceful {
            timeout_ms: req
                .decommission_timeout
                .filter(|t| *t >= 0)
                .map(|t| t as u64 * 1000),
        },
        _ => Decommission::Normal,
    };
    ctx.core.call(RefreshNodes { hosts, mode }).await?;
    info!(user = %escaped(&call.user), ?mode, "nodes refreshed");
    Ok(pb::RefreshNodesResponseProto {})
}

async fn refresh_admin_acls(
    ctx: Arc<RmContext>,
    call: CallContext,
    _req: pb::RefreshAdminAclsRequestProto,
) -> Result<pb::RefreshAdminAclsResponseProto, RpcError> {
    authorize(&ctx, &call, admin::REFRESH_ADMIN_ACLS.name).await?;
    check_active(&ctx)?;
    let conf = reload_conf(&ctx).await?;
    let acl = admin_acl(
        conf.get("yarn.admin.acl").as_deref(),
        ctx.daemon_user.as_deref(),
    );
    ctx.core.call(RefreshAdminAcls { acl }).await?;
    Ok(pb::RefreshAdminAclsResponseProto {})
}

// Spindle keeps users' groups for hadoop.security.groups.cache.secs
// (refreshUserToGroupsMappings forgets them) and does not enforce service-level
// ACLs; these refreshes re-validate the configuration, and the super-users'
// refresh puts the re-read hadoop.proxyuser.* rules in force.

async fn refresh_super_user_groups_configuration(
    ctx: Arc<RmContext>,
    call: CallContext,
    _req: pb::RefreshSuperUserGroupsConfigurationRequestProto,
) -> Result<pb::RefreshSuperUserGroupsConfigurationResponseProto, RpcError> {
    authorize(
        &ctx,
        &call,
        admin::REFRESH_SUPER_USER_GROUPS_CONFIGURATION.name,
    )
    .await?;
    check_active(&ctx)?;
    let conf = reload_conf(&ctx).await?;
    let rules = ProxyUsers::from_conf(&conf).map_err(|e| RpcError::new(class::IO_EXCEPTION, e))?;
    ctx.set_proxy_users(rules);
    Ok(pb::RefreshSuperUserGroupsConfigurationResponseProto {})
}

async fn refresh_user_to_groups_mappings(
    ctx: Arc<RmContext>,
    call: CallContext,
    _req: pb::RefreshUserToGroupsMappingsRequestProto,
) -> Result<pb::RefreshUserToGroupsMappingsResponseProto, RpcError> {
    authorize(&ctx, &call, admin::REFRESH_USER_TO_GROUPS_MAPPINGS.name).await?;
    check_active(&ctx)?;
    reload_conf(&ctx).await?;
    ctx.groups.clear();
    Ok(pb::RefreshUserToGroupsMappingsResponseProto {})
}

async fn refresh_service_acls(
    ctx: Arc<RmContext>,
    call: CallContext,
    _req: pb::RefreshServiceAclsRequestProto,
) -> Result<pb::RefreshServiceAclsResponseProto, RpcError> {
    authorize(&ctx, &call, admin::REFRESH_SERVICE_ACLS.name).await?;
    check_active(&ctx)?;
    let conf = reload_conf(&ctx).await?;
    // As Hadoop's AdminService: only with authorization on (turning it on
    // or off takes a restart, as in Hadoop, whose servers read it once).
    if ctx.service_policy().is_none() {
        return Err(RpcError::yarn(format!(
            "java.io.IOException: Service Authorization ({}) not enabled.",
            spindle_common::conf::keys::HADOOP_SECURITY_AUTHORIZATION
        )));
    }
    let dir = ctx.conf_dir.clone();
    let policy = off_runtime(move || {
        crate::runtime::service_authz::read_policy(&conf, dir.as_deref())
            .map_err(|e| RpcError::new(class::IO_EXCEPTION, e))
    })
    .await?;
    *ctx.service_policy
        .write()
        .unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(policy));
    Ok(pb::RefreshServiceAclsResponseProto {})
}

async fn refresh_cluster_max_priority(
    ctx: Arc<RmContext>,
    call: CallContext,
    _req: pb::RefreshClusterMaxPriorityRequestProto,
) -> Result<pb::RefreshClusterMaxPriorityResponseProto, RpcError> {
    authorize(&ctx, &call, admin::REFRESH_CLUSTER_MAX_PRIORITY.name).await?;
    check_active(&ctx)?;
    let conf = reload_conf(&ctx).await?;
    let max_priority = crate::model::limits::max_application_priority(&conf)
        .map_err(|e| RpcError::yarn(e.to_string()))?;
    ctx.core
        .call(RefreshClusterMaxPriority { max_priority })
        .await?;
    info!(user = %escaped(&call.user), max_priority, "cluster maximum application priority refreshed");
    Ok(pb::RefreshClusterMaxPriorityResponseProto {})
}

async fn check_for_decommissioning_nodes(
    ctx: Arc<RmContext>,
    call: CallContext,
    _req: pb::CheckForDecommissioningNodesRequestProto,
) -> Result<pb::CheckForDecommissioningNodesResponseProto, RpcError> {
    authorize(&ctx, &call, admin::CHECK_FOR_DECOMMISSIONING_NODES.name).await?;
    let nodes = ctx.core.query(|s| s.decommissioning_nodes()).await?;
    Ok(pb::CheckForDecommissioningNodesResponseProto {
        decommissioning_nodes: nodes.iter().map(node_id_to_pb).collect(),
    })
}

async fn update_node_resource(
    ctx: Arc<RmContext>,
    call: CallContext,
    req: pb::UpdateNodeResourceRequestProto,
) -> Result<pb::UpdateNodeResourceResponseProto, RpcError> {
    authorize(&ctx, &call, admin::UPDATE_NODE_RESOURCE.name).await?;
    let mut nodes = Vec::new();
    for entry in &req.node_resource_map {
        let id = node_id_from_pb(entry.node_id.as_ref())?;
        let resource = resource_from_pb(
            entry
                .resource_option
                .as_ref()
                .and_then(|o| o.resource.as_ref()),
        );
        nodes.push((id, resource));
    }
    ctx.core.call(UpdateNodeResources { nodes }).await??;
    Ok(pb::UpdateNodeResourceResponseProto {})
}

/// Group lookups are open to every caller, as in Hadoop.
async fn get_groups_for_user(
    _ctx: Arc<RmContext>,
    _call: CallContext,
    req: pb::GetGroupsForUserRequestProto,
) -> Result<pb::GetGroupsForUserResponseProto, RpcError> {
    Ok(pb::GetGroupsForUserResponseProto {
        groups: groups_for_user(&req.user).await,
    })
}

// Node labels are not enabled in Spindle; Hadoop answers the same way when
// yarn.node-labels.enabled is false.

async fn add_to_cluster_node_labels(
    _ctx: Arc<RmContext>,
    _call: CallContext,
    _req: pb::AddToClusterNodeLabelsRequestProto,
) -> Result<pb::AddToClusterNodeLabelsResponseProto, RpcError> {
    Err(RpcError::io(NODE_LABELS_DISABLED))
}

async fn remove_from_cluster_node_labels(
    _ctx: Arc<RmContext>,
    _call: CallContext,
    _req: pb::RemoveFromClusterNodeLabelsRequestProto,
) -> Result<pb::RemoveFromClusterNodeLabelsResponseProto, RpcError> {
    Err(RpcError::io(NODE_LABELS_DISABLED))
}

async fn replace_labels_on_nodes(
    _ctx: Arc<RmContext>,
    _call: CallContext,
    _req: pb::ReplaceLabelsOnNodeRequestProto,
) -> Result<pb::ReplaceLabelsOnNodeResponseProto, RpcError> {
    Err(RpcError::io(NODE_LABELS_DISABLED))
}
