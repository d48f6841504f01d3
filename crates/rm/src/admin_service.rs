//! ResourceManagerAdministrationProtocol: `yarn rmadmin`.
//!
//! Every refresh re-reads the configuration directory, so an operator edits files and
//! asks for a refresh, as with Hadoop. A file that does not parse is refused with the
//! reason and the configuration in force stays.

use std::sync::Arc;

use hadoop_protos::yarn as pb;
use spindle_common::conf::Configuration;
use spindle_ipc::{class, protocols, CallContext, RpcError, Service};
use tracing::info;

use crate::acl::{groups_for_user, Acl};
use crate::convert::{node_id_from_pb, node_id_to_pb, resource_from_pb};
use crate::hosts::HostFiles;
use crate::nodes::{Decommission, NodeState};
use crate::RmContext;

const NODE_LABELS_DISABLED: &str =
    "Node-label-based scheduling is disabled. Please check yarn.node-labels.enabled";

/// Checks the caller against `yarn.admin.acl`.
async fn authorize(c: &RmContext, call: &CallContext, op: &str) -> Result<(), RpcError> {
    let acl = c.core.with(|s, _| s.admin_acl.clone()).await?;
    if acl.allows_everyone() {
        return Ok(());
    }
    let groups = groups_for_user(&call.user).await;
    if acl.allows(&call.user, &groups) {
        return Ok(());
    }
    info!(user = %call.user, %op, "admin call refused by yarn.admin.acl");
    Err(RpcError::new(
        class::ACCESS_CONTROL,
        format!("User {} doesn't have permission to call '{op}'", call.user),
    ))
}

/// Re-reads core-site.xml and yarn-site.xml from the configuration directory.
async fn reload_conf(c: &RmContext) -> Result<Configuration, RpcError> {
    let dir = c.conf_dir.clone();
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

pub(crate) fn host_files(conf: &Configuration) -> HostFiles {
    let path = |key: &str| {
        conf.get(key)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .map(Into::into)
    };
    HostFiles {
        include_path: path("yarn.resourcemanager.nodes.include-path"),
        exclude_path: path("yarn.resourcemanager.nodes.exclude-path"),
    }
}

/// Registers an admin method that checks the ACL and then runs `body`.
macro_rules! admin_method {
    ($svc:expr, $ctx:expr, $name:literal, $req:ty, |$c:ident, $call:ident, $r:ident| $body:expr) => {{
        let ctx = $ctx.clone();
        $svc.method($name, move |$call: CallContext, $r: $req| {
            let $c = ctx.clone();
            async move {
                authorize(&$c, &$call, $name).await?;
                $body
            }
        })
    }};
}

pub fn service(ctx: Arc<RmContext>) -> Service {
    let s = Service::new(protocols::RESOURCE_MANAGER_ADMINISTRATION);
    let s = admin_method!(
        s,
        ctx,
        "refreshQueues",
        pb::RefreshQueuesRequestProto,
        |c, call, _r| {
            let conf = reload_conf(&c).await?;
            let dir = c.conf_dir.clone();
            let kind = c.scheduler_kind;
            let queues = off_runtime(move || {
                crate::queue_files::load(kind, &conf, dir.as_deref())
                    .map_err(|e| RpcError::yarn(e.to_string()))
            })
            .await?;
            // The scheduler takes the new tree atomically or refuses it (a
            // queue holding applications removed, ...); the old one stays then.
            c.core
                .with(move |s, now| s.reconfigure_queues(queues, now))
                .await?
                .map_err(RpcError::yarn)?;
            info!(user = %call.user, "queues refreshed");
            Ok(pb::RefreshQueuesResponseProto {})
        }
    );
    let s = admin_method!(
        s,
        ctx,
        "refreshNodes",
        pb::RefreshNodesRequestProto,
        |c, call, r| {
            let conf = reload_conf(&c).await?;
            let files = host_files(&conf);
            let lists = off_runtime(move || files.read().map_err(RpcError::yarn)).await?;
            let mode = match r
                .decommission_type
                .and_then(|t| pb::DecommissionTypeProto::try_from(t).ok())
            {
                Some(pb::DecommissionTypeProto::Graceful) => Decommission::Graceful {
                    timeout_ms: r
                        .decommission_timeout
                        .filter(|t| *t >= 0)
                        .map(|t| t as u64 * 1000),
                },
                _ => Decommission::Normal,
            };
            c.core
                .with(move |s, now| s.nodes.refresh(lists, mode, now))
                .await?;
            info!(user = %call.user, ?mode, "nodes refreshed");
            Ok(pb::RefreshNodesResponseProto {})
        }
    );
    let s = admin_method!(
        s,
        ctx,
        "refreshAdminAcls",
        pb::RefreshAdminAclsRequestProto,
        |c, _call, _r| {
            let conf = reload_conf(&c).await?;
            let acl = Acl::parse(&conf.get("yarn.admin.acl").unwrap_or_else(|| "*".into()));
            c.core.with(move |s, _| s.admin_acl = acl).await?;
            Ok(pb::RefreshAdminAclsResponseProto {})
        }
    );
    // Spindle asks the OS for groups on every check and keeps no cache, and it does
    // not enforce service-level ACLs; these refreshes re-validate the configuration.
    let s = admin_method!(
        s,
        ctx,
        "refreshSuperUserGroupsConfiguration",
        pb::RefreshSuperUserGroupsConfigurationRequestProto,
        |c, _call, _r| {
            reload_conf(&c).await?;
            Ok(pb::RefreshSuperUserGroupsConfigurationResponseProto {})
        }
    );
    let s = admin_method!(
        s,
        ctx,
        "refreshUserToGroupsMappings",
        pb::RefreshUserToGroupsMappingsRequestProto,
        |c, _call, _r| {
            reload_conf(&c).await?;
            Ok(pb::RefreshUserToGroupsMappingsResponseProto {})
        }
    );
    let s = admin_method!(
        s,
        ctx,
        "refreshServiceAcls",
        pb::RefreshServiceAclsRequestProto,
        |c, _call, _r| {
            reload_conf(&c).await?;
            Ok(pb::RefreshServiceAclsResponseProto {})
        }
    );
    let s = admin_method!(
        s,
        ctx,
        "refreshClusterMaxPriority",
        pb::RefreshClusterMaxPriorityRequestProto,
        |c, _call, _r| {
            reload_conf(&c).await?;
            Ok(pb::RefreshClusterMaxPriorityResponseProto {})
        }
    );
    let s = admin_method!(
        s,
        ctx,
        "checkForDecommissioningNodes",
        pb::CheckForDecommissioningNodesRequestProto,
        |c, _call, _r| {
            let nodes = c
                .core
                .with(|s, _| {
                    s.nodes
                        .active()
                        .filter(|n| n.state == NodeState::Decommissioning)
                        .map(|n| node_id_to_pb(&n.id))
                        .collect::<Vec<_>>()
                })
                .await?;
            Ok(pb::CheckForDecommissioningNodesResponseProto {
                decommissioning_nodes: nodes,
            })
        }
    );
    let s = admin_method!(
        s,
        ctx,
        "updateNodeResource",
        pb::UpdateNodeResourceRequestProto,
        |c, _call, r| {
            let mut updates = Vec::new();
            for entry in &r.node_resource_map {
                let id = node_id_from_pb(entry.node_id.as_ref())?;
                let res = resource_from_pb(
                    entry
                        .resource_option
                        .as_ref()
                        .and_then(|o| o.resource.as_ref()),
                );
                updates.push((id, res));
            }
            let missing = c
                .core
                .with(move |s, _| {
                    updates
                        .into_iter()
                        .filter(|(id, res)| {
                            let ok = s.nodes.set_capability(id, *res);
                            if ok {
                                s.sync_node(id, s.scheduler.now_ms());
                            }
                            !ok
                        })
                        .map(|(id, _)| id.to_string())
                        .collect::<Vec<_>>()
                })
                .await?;
            if !missing.is_empty() {
                return Err(RpcError::yarn(format!(
                    "Resource update failed: nodes not running in the cluster: {}",
                    missing.join(", ")
                )));
            }
            Ok(pb::UpdateNodeResourceResponseProto {})
        }
    );
    // Group lookups are open to every caller, as in Hadoop.
    let s = s.method(
        "getGroupsForUser",
        |_call: CallContext, r: pb::GetGroupsForUserRequestProto| async move {
            Ok(pb::GetGroupsForUserResponseProto {
                groups: groups_for_user(&r.user).await,
            })
        },
    );
    // Node labels are not enabled in Spindle; Hadoop answers the same way when
    // yarn.node-labels.enabled is false.
    let s = s
        .method(
            "addToClusterNodeLabels",
            |_c: CallContext, _r: pb::AddToClusterNodeLabelsRequestProto| async {
                labels_disabled::<pb::AddToClusterNodeLabelsResponseProto>()
            },
        )
        .method(
            "removeFromClusterNodeLabels",
            |_c: CallContext, _r: pb::RemoveFromClusterNodeLabelsRequestProto| async {
                labels_disabled::<pb::RemoveFromClusterNodeLabelsResponseProto>()
            },
        )
        .method(
            "replaceLabelsOnNodes",
            |_c: CallContext, _r: pb::ReplaceLabelsOnNodeRequestProto| async {
                labels_disabled::<pb::ReplaceLabelsOnNodeResponseProto>()
            },
        );
    s.unsupported(&[
        "refreshNodesResources",
        "mapAttributesToNodes",
        "deregisterSubCluster",
        "saveFederationQueuePolicy",
        "batchSaveFederationQueuePolicies",
        "listFederationQueuePolicies",
        "deleteFederationApplication",
        "getFederationSubClusters",
        "deleteFederationPoliciesByQueues",
    ])
}

fn labels_disabled<T>() -> Result<T, RpcError> {
    Err(RpcError::io(NODE_LABELS_DISABLED))
}
