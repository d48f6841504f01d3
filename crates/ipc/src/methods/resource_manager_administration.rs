//! `ResourceManagerAdministrationProtocol`: `yarn rmadmin` on the
//! ResourceManager's admin port.
//!
//! Hadoop marks every method `@Idempotent`: each refresh re-reads its files
//! and sets what they say, each query changes nothing.

use hadoop_protos::yarn as pb;

use super::{Method, Signature};
use crate::protocols::RESOURCE_MANAGER_ADMINISTRATION as PROTOCOL;

/// Re-reads the scheduler's queue configuration.
pub const REFRESH_QUEUES: Method<pb::RefreshQueuesRequestProto, pb::RefreshQueuesResponseProto> =
    Method::idempotent(PROTOCOL, "refreshQueues");

/// Re-reads the include and exclude host files (decommissioning, gracefully or not).
pub const REFRESH_NODES: Method<pb::RefreshNodesRequestProto, pb::RefreshNodesResponseProto> =
    Method::idempotent(PROTOCOL, "refreshNodes");

/// Re-reads the proxy-user settings.
pub const REFRESH_SUPER_USER_GROUPS_CONFIGURATION: Method<
    pb::RefreshSuperUserGroupsConfigurationRequestProto,
    pb::RefreshSuperUserGroupsConfigurationResponseProto,
> = Method::idempotent(PROTOCOL, "refreshSuperUserGroupsConfiguration");

/// Forgets the cached users' groups.
pub const REFRESH_USER_TO_GROUPS_MAPPINGS: Method<
    pb::RefreshUserToGroupsMappingsRequestProto,
    pb::RefreshUserToGroupsMappingsResponseProto,
> = Method::idempotent(PROTOCOL, "refreshUserToGroupsMappings");

/// Re-reads `yarn.admin.acl`.
pub const REFRESH_ADMIN_ACLS: Method<
    pb::RefreshAdminAclsRequestProto,
    pb::RefreshAdminAclsResponseProto,
> = Method::idempotent(PROTOCOL, "refreshAdminAcls");

/// Re-reads the service-level ACLs.
pub const REFRESH_SERVICE_ACLS: Method<
    pb::RefreshServiceAclsRequestProto,
    pb::RefreshServiceAclsResponseProto,
> = Method::idempotent(PROTOCOL, "refreshServiceAcls");

/// A user's groups, as the ResourceManager sees them.
pub const GET_GROUPS_FOR_USER: Method<
    pb::GetGroupsForUserRequestProto,
    pb::GetGroupsForUserResponseProto,
> = Method::idempotent(PROTOCOL, "getGroupsForUser");

/// Changes nodes' resources.
pub const UPDATE_NODE_RESOURCE: Method<
    pb::UpdateNodeResourceRequestProto,
    pb::UpdateNodeResourceResponseProto,
> = Method::idempotent(PROTOCOL, "updateNodeResource");

/// Re-reads nodes' resources from `dynamic-resources.xml`.
pub const REFRESH_NODES_RESOURCES: Method<
    pb::RefreshNodesResourcesRequestProto,
    pb::RefreshNodesResourcesResponseProto,
> = Method::idempotent(PROTOCOL, "refreshNodesResources");

/// Adds node labels to the cluster.
pub const ADD_TO_CLUSTER_NODE_LABELS: Method<
    pb::AddToClusterNodeLabelsRequestProto,
    pb::AddToClusterNodeLabelsResponseProto,
> = Method::idempotent(PROTOCOL, "addToClusterNodeLabels");

/// Removes node labels from the cluster.
pub const REMOVE_FROM_CLUSTER_NODE_LABELS: Method<
    pb::RemoveFromClusterNodeLabelsRequestProto,
    pb::RemoveFromClusterNodeLabelsResponseProto,
> = Method::idempotent(PROTOCOL, "removeFromClusterNodeLabels");

/// Replaces nodes' labels.
pub const REPLACE_LABELS_ON_NODES: Method<
    pb::ReplaceLabelsOnNodeRequestProto,
    pb::ReplaceLabelsOnNodeResponseProto,
> = Method::idempotent(PROTOCOL, "replaceLabelsOnNodes");

/// The nodes being decommissioned.
pub const CHECK_FOR_DECOMMISSIONING_NODES: Method<
    pb::CheckForDecommissioningNodesRequestProto,
    pb::CheckForDecommissioningNodesResponseProto,
> = Method::idempotent(PROTOCOL, "checkForDecommissioningNodes");

/// Re-reads the cluster's maximum application priority.
pub const REFRESH_CLUSTER_MAX_PRIORITY: Method<
    pb::RefreshClusterMaxPriorityRequestProto,
    pb::RefreshClusterMaxPriorityResponseProto,
> = Method::idempotent(PROTOCOL, "refreshClusterMaxPriority");

/// Changes nodes' attributes.
pub const MAP_ATTRIBUTES_TO_NODES: Method<
    pb::NodesToAttributesMappingRequestProto,
    pb::NodesToAttributesMappingResponseProto,
> = Method::idempotent(PROTOCOL, "mapAttributesToNodes");

/// Federation: marks a sub-cluster lost.
pub const DEREGISTER_SUB_CLUSTER: Method<
    pb::DeregisterSubClusterRequestProto,
    pb::DeregisterSubClusterResponseProto,
> = Method::idempotent(PROTOCOL, "deregisterSubCluster");

/// Federation: saves a queue's policy.
pub const SAVE_FEDERATION_QUEUE_POLICY: Method<
    pb::SaveFederationQueuePolicyRequestProto,
    pb::SaveFederationQueuePolicyResponseProto,
> = Method::idempotent(PROTOCOL, "saveFederationQueuePolicy");

/// Federation: saves queue policies.
pub const BATCH_SAVE_FEDERATION_QUEUE_POLICIES: Method<
    pb::BatchSaveFederationQueuePoliciesRequestProto,
    pb::BatchSaveFederationQueuePoliciesResponseProto,
> = Method::idempotent(PROTOCOL, "batchSaveFederationQueuePolicies");

/// Federation: lists queue policies.
pub const LIST_FEDERATION_QUEUE_POLICIES: Method<
    pb::QueryFederationQueuePoliciesRequestProto,
    pb::QueryFederationQueuePoliciesResponseProto,
> = Method::idempotent(PROTOCOL, "listFederationQueuePolicies");

/// Federation: deletes an application.
pub const DELETE_FEDERATION_APPLICATION: Method<
    pb::DeleteFederationApplicationRequestProto,
    pb::DeleteFederationApplicationResponseProto,
> = Method::idempotent(PROTOCOL, "deleteFederationApplication");

/// Federation: lists sub-clusters.
pub const GET_FEDERATION_SUB_CLUSTERS: Method<
    pb::GetSubClustersRequestProto,
    pb::GetSubClustersResponseProto,
> = Method::idempotent(PROTOCOL, "getFederationSubClusters");

/// Federation: deletes queues' policies.
pub const DELETE_FEDERATION_POLICIES_BY_QUEUES: Method<
    pb::DeleteFederationQueuePoliciesRequestProto,
    pb::DeleteFederationQueuePoliciesResponseProto,
> = Method::idempotent(PROTOCOL, "deleteFederationPoliciesByQueues");

/// Every method of the protocol, in the order of its `.proto` service.
pub const ALL: &[Signature] = &[
    REFRESH_QUEUES.signature(),
    REFRESH_NODES.signature(),
    REFRESH_SUPER_USER_GROUPS_CONFIGURATION.signature(),
    REFRESH_USER_TO_GROUPS_MAPPINGS.signature(),
    REFRESH_ADMIN_ACLS.signature(),
    REFRESH_SERVICE_ACLS.signature(),
    GET_GROUPS_FOR_USER.signature(),
    UPDATE_NODE_RESOURCE.signature(),
    REFRESH_NODES_RESOURCES.signature(),
    ADD_TO_CLUSTER_NODE_LABELS.signature(),
    REMOVE_FROM_CLUSTER_NODE_LABELS.signature(),
    REPLACE_LABELS_ON_NODES.signature(),
    CHECK_FOR_DECOMMISSIONING_NODES.signature(),
    REFRESH_CLUSTER_MAX_PRIORITY.signature(),
    MAP_ATTRIBUTES_TO_NODES.signature(),
    DEREGISTER_SUB_CLUSTER.signature(),
    SAVE_FEDERATION_QUEUE_POLICY.signature(),
    BATCH_SAVE_FEDERATION_QUEUE_POLICIES.signature(),
    LIST_FEDERATION_QUEUE_POLICIES.signature(),
    DELETE_FEDERATION_APPLICATION.signature(),
    GET_FEDERATION_SUB_CLUSTERS.signature(),
    DELETE_FEDERATION_POLICIES_BY_QUEUES.signature(),
];
