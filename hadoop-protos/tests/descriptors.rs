//! Descriptor-level checks of the compiled `.proto` files: file names (they are the
//! import paths Hadoop uses), packages, Java options, and every service and rpc the
//! ResourceManager and NodeManager serve, with their exact request/response types.
//! The rpc name is what clients put in `RequestHeaderProto.methodName`, so a typo here
//! would make a real client's call fail with "no such method".

use std::collections::{BTreeMap, BTreeSet};
use std::error::Error;

use prost::Message;
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{
    DescriptorProto, FieldDescriptorProto, FileDescriptorProto, FileDescriptorSet,
    ServiceDescriptorProto,
};

type TestResult = Result<(), Box<dyn Error>>;

fn descriptor_set() -> Result<FileDescriptorSet, prost::DecodeError> {
    FileDescriptorSet::decode(hadoop_protos::FILE_DESCRIPTOR_SET)
}

fn files_by_name(set: &FileDescriptorSet) -> BTreeMap<&str, &FileDescriptorProto> {
    set.file
        .iter()
        .map(|f| (f.name.as_deref().unwrap_or_default(), f))
        .collect()
}

/// (file, package, java_package, java_outer_classname)
const FILES: &[(&str, &str, &str, &str)] = &[
    (
        "RpcHeader.proto",
        "hadoop.common",
        "org.apache.hadoop.ipc.protobuf",
        "RpcHeaderProtos",
    ),
    (
        "IpcConnectionContext.proto",
        "hadoop.common",
        "org.apache.hadoop.ipc.protobuf",
        "IpcConnectionContextProtos",
    ),
    (
        "ProtobufRpcEngine2.proto",
        "hadoop.common",
        "org.apache.hadoop.ipc.protobuf",
        "ProtobufRpcEngine2Protos",
    ),
    (
        "Security.proto",
        "hadoop.common",
        "org.apache.hadoop.security.proto",
        "SecurityProtos",
    ),
    (
        "GetUserMappingsProtocol.proto",
        "hadoop.common",
        "org.apache.hadoop.tools.proto",
        "GetUserMappingsProtocolProtos",
    ),
    (
        "RefreshUserMappingsProtocol.proto",
        "hadoop.common",
        "org.apache.hadoop.security.proto",
        "RefreshUserMappingsProtocolProtos",
    ),
    (
        "RefreshAuthorizationPolicyProtocol.proto",
        "hadoop.common",
        "org.apache.hadoop.security.proto",
        "RefreshAuthorizationPolicyProtocolProtos",
    ),
    (
        "HAServiceProtocol.proto",
        "hadoop.common",
        "org.apache.hadoop.ha.proto",
        "HAServiceProtocolProtos",
    ),
    (
        "yarn_protos.proto",
        "hadoop.yarn",
        "org.apache.hadoop.yarn.proto",
        "YarnProtos",
    ),
    (
        "yarn_service_protos.proto",
        "hadoop.yarn",
        "org.apache.hadoop.yarn.proto",
        "YarnServiceProtos",
    ),
    (
        "applicationclient_protocol.proto",
        "hadoop.yarn",
        "org.apache.hadoop.yarn.proto",
        "ApplicationClientProtocol",
    ),
    (
        "applicationmaster_protocol.proto",
        "hadoop.yarn",
        "org.apache.hadoop.yarn.proto",
        "ApplicationMasterProtocol",
    ),
    (
        "containermanagement_protocol.proto",
        "hadoop.yarn",
        "org.apache.hadoop.yarn.proto",
        "ContainerManagementProtocol",
    ),
    (
        "server/resourcemanager_administration_protocol.proto",
        "hadoop.yarn",
        "org.apache.hadoop.yarn.proto",
        "ResourceManagerAdministrationProtocol",
    ),
    (
        "server/yarn_server_resourcemanager_service_protos.proto",
        "hadoop.yarn",
        "org.apache.hadoop.yarn.proto",
        "YarnServerResourceManagerServiceProtos",
    ),
    (
        "yarn_security_token.proto",
        "hadoop.yarn",
        "org.apache.hadoop.yarn.proto",
        "YarnSecurityTokenProtos",
    ),
    (
        "yarn_server_common_protos.proto",
        "hadoop.yarn",
        "org.apache.hadoop.yarn.proto",
        "YarnServerCommonProtos",
    ),
    (
        "yarn_server_common_service_protos.proto",
        "hadoop.yarn",
        "org.apache.hadoop.yarn.proto",
        "YarnServerCommonServiceProtos",
    ),
    (
        "ResourceTracker.proto",
        "hadoop.yarn",
        "org.apache.hadoop.yarn.proto",
        "ResourceTracker",
    ),
];

#[test]
fn every_hadoop_file_is_present_with_its_options() -> TestResult {
    let set = descriptor_set()?;
    let files = files_by_name(&set);
    assert_eq!(
        files.len(),
        set.file.len(),
        "a file name appears twice in the set"
    );

    let expected: BTreeSet<&str> = FILES.iter().map(|f| f.0).collect();
    let actual: BTreeSet<&str> = files.keys().copied().collect();
    assert_eq!(actual, expected);

    for &(name, package, java_package, outer) in FILES {
        let file = files[name];
        assert_eq!(file.package.as_deref(), Some(package), "{name}: package");
        // Descriptors leave `syntax` unset for proto2 files.
        assert!(
            matches!(file.syntax.as_deref(), None | Some("proto2")),
            "{name}: syntax {:?}",
            file.syntax
        );
        let options = file.options.as_ref().ok_or(format!("{name}: no options"))?;
        assert_eq!(
            options.java_package.as_deref(),
            Some(java_package),
            "{name}"
        );
        assert_eq!(
            options.java_outer_classname.as_deref(),
            Some(outer),
            "{name}"
        );
        // Deprecated in protobuf, but Hadoop still sets it on every file.
        #[allow(deprecated)]
        let equals_and_hash = options.java_generate_equals_and_hash;
        assert_eq!(equals_and_hash, Some(true), "{name}");
        for dep in &file.dependency {
            assert!(
                files.contains_key(dep.as_str()),
                "{name} imports unknown {dep}"
            );
        }
    }
    // Only one of Hadoop's two identical RequestHeaderProto definitions is compiled.
    assert!(!files.contains_key("ProtobufRpcEngine.proto"));
    Ok(())
}

/// (rpc name, request type, response type); short type names are in `hadoop.yarn`.
type Rpc = (&'static str, &'static str, &'static str);

const APPLICATION_CLIENT_RPCS: &[Rpc] = &[
    (
        "getNewApplication",
        "GetNewApplicationRequestProto",
        "GetNewApplicationResponseProto",
    ),
    (
        "getApplicationReport",
        "GetApplicationReportRequestProto",
        "GetApplicationReportResponseProto",
    ),
    (
        "submitApplication",
        "SubmitApplicationRequestProto",
        "SubmitApplicationResponseProto",
    ),
    (
        "failApplicationAttempt",
        "FailApplicationAttemptRequestProto",
        "FailApplicationAttemptResponseProto",
    ),
    (
        "forceKillApplication",
        "KillApplicationRequestProto",
        "KillApplicationResponseProto",
    ),
    (
        "getClusterMetrics",
        "GetClusterMetricsRequestProto",
        "GetClusterMetricsResponseProto",
    ),
    (
        "getApplications",
        "GetApplicationsRequestProto",
        "GetApplicationsResponseProto",
    ),
    (
        "getClusterNodes",
        "GetClusterNodesRequestProto",
        "GetClusterNodesResponseProto",
    ),
    (
        "getQueueInfo",
        "GetQueueInfoRequestProto",
        "GetQueueInfoResponseProto",
    ),
    (
        "getQueueUserAcls",
        "GetQueueUserAclsInfoRequestProto",
        "GetQueueUserAclsInfoResponseProto",
    ),
    (
        "getDelegationToken",
        ".hadoop.common.GetDelegationTokenRequestProto",
        ".hadoop.common.GetDelegationTokenResponseProto",
    ),
    (
        "renewDelegationToken",
        ".hadoop.common.RenewDelegationTokenRequestProto",
        ".hadoop.common.RenewDelegationTokenResponseProto",
    ),
    (
        "cancelDelegationToken",
        ".hadoop.common.CancelDelegationTokenRequestProto",
        ".hadoop.common.CancelDelegationTokenResponseProto",
    ),
    (
        "moveApplicationAcrossQueues",
        "MoveApplicationAcrossQueuesRequestProto",
        "MoveApplicationAcrossQueuesResponseProto",
    ),
    (
        "getApplicationAttemptReport",
        "GetApplicationAttemptReportRequestProto",
        "GetApplicationAttemptReportResponseProto",
    ),
    (
        "getApplicationAttempts",
        "GetApplicationAttemptsRequestProto",
        "GetApplicationAttemptsResponseProto",
    ),
    (
        "getContainerReport",
        "GetContainerReportRequestProto",
        "GetContainerReportResponseProto",
    ),
    (
        "getContainers",
        "GetContainersRequestProto",
        "GetContainersResponseProto",
    ),
    (
        "getNewReservation",
        "GetNewReservationRequestProto",
        "GetNewReservationResponseProto",
    ),
    (
        "submitReservation",
        "ReservationSubmissionRequestProto",
        "ReservationSubmissionResponseProto",
    ),
    (
        "updateReservation",
        "ReservationUpdateRequestProto",
        "ReservationUpdateResponseProto",
    ),
    (
        "deleteReservation",
        "ReservationDeleteRequestProto",
        "ReservationDeleteResponseProto",
    ),
    (
        "listReservations",
        "ReservationListRequestProto",
        "ReservationListResponseProto",
    ),
    (
        "getNodeToLabels",
        "GetNodesToLabelsRequestProto",
        "GetNodesToLabelsResponseProto",
    ),
    (
        "getLabelsToNodes",
        "GetLabelsToNodesRequestProto",
        "GetLabelsToNodesResponseProto",
    ),
    (
        "getClusterNodeLabels",
        "GetClusterNodeLabelsRequestProto",
        "GetClusterNodeLabelsResponseProto",
    ),
    (
        "updateApplicationPriority",
        "UpdateApplicationPriorityRequestProto",
        "UpdateApplicationPriorityResponseProto",
    ),
    (
        "signalToContainer",
        "SignalContainerRequestProto",
        "SignalContainerResponseProto",
    ),
    (
        "updateApplicationTimeouts",
        "UpdateApplicationTimeoutsRequestProto",
        "UpdateApplicationTimeoutsResponseProto",
    ),
    (
        "getResourceProfiles",
        "GetAllResourceProfilesRequestProto",
        "GetAllResourceProfilesResponseProto",
    ),
    (
        "getResourceProfile",
        "GetResourceProfileRequestProto",
        "GetResourceProfileResponseProto",
    ),
    (
        "getResourceTypeInfo",
        "GetAllResourceTypeInfoRequestProto",
        "GetAllResourceTypeInfoResponseProto",
    ),
    (
        "getClusterNodeAttributes",
        "GetClusterNodeAttributesRequestProto",
        "GetClusterNodeAttributesResponseProto",
    ),
    (
        "getAttributesToNodes",
        "GetAttributesToNodesRequestProto",
        "GetAttributesToNodesResponseProto",
    ),
    (
        "getNodesToAttributes",
        "GetNodesToAttributesRequestProto",
        "GetNodesToAttributesResponseProto",
    ),
];

const APPLICATION_MASTER_RPCS: &[Rpc] = &[
    (
        "registerApplicationMaster",
        "RegisterApplicationMasterRequestProto",
        "RegisterApplicationMasterResponseProto",
    ),
    (
        "finishApplicationMaster",
        "FinishApplicationMasterRequestProto",
        "FinishApplicationMasterResponseProto",
    ),
    ("allocate", "AllocateRequestProto", "AllocateResponseProto"),
];

const CONTAINER_MANAGEMENT_RPCS: &[Rpc] = &[
    (
        "startContainers",
        "StartContainersRequestProto",
        "StartContainersResponseProto",
    ),
    (
        "stopContainers",
        "StopContainersRequestProto",
        "StopContainersResponseProto",
    ),
    (
        "getContainerStatuses",
        "GetContainerStatusesRequestProto",
        "GetContainerStatusesResponseProto",
    ),
    (
        "increaseContainersResource",
        "IncreaseContainersResourceRequestProto",
        "IncreaseContainersResourceResponseProto",
    ),
    (
        "updateContainer",
        "ContainerUpdateRequestProto",
        "ContainerUpdateResponseProto",
    ),
    (
        "signalToContainer",
        "SignalContainerRequestProto",
        "SignalContainerResponseProto",
    ),
    (
        "localize",
        "ResourceLocalizationRequestProto",
        "ResourceLocalizationResponseProto",
    ),
    (
        "reInitializeContainer",
        "ReInitializeContainerRequestProto",
        "ReInitializeContainerResponseProto",
    ),
    (
        "restartContainer",
        "ContainerIdProto",
        "RestartContainerResponseProto",
    ),
    (
        "rollbackLastReInitialization",
        "ContainerIdProto",
        "RollbackResponseProto",
    ),
    (
        "commitLastReInitialization",
        "ContainerIdProto",
        "CommitResponseProto",
    ),
    (
        "getLocalizationStatuses",
        "GetLocalizationStatusesRequestProto",
        "GetLocalizationStatusesResponseProto",
    ),
];

const ADMIN_RPCS: &[Rpc] = &[
    (
        "refreshQueues",
        "RefreshQueuesRequestProto",
        "RefreshQueuesResponseProto",
    ),
    (
        "refreshNodes",
        "RefreshNodesRequestProto",
        "RefreshNodesResponseProto",
    ),
    (
        "refreshSuperUserGroupsConfiguration",
        "RefreshSuperUserGroupsConfigurationRequestProto",
        "RefreshSuperUserGroupsConfigurationResponseProto",
    ),
    (
        "refreshUserToGroupsMappings",
        "RefreshUserToGroupsMappingsRequestProto",
        "RefreshUserToGroupsMappingsResponseProto",
    ),
    (
        "refreshAdminAcls",
        "RefreshAdminAclsRequestProto",
        "RefreshAdminAclsResponseProto",
    ),
    (
        "refreshServiceAcls",
        "RefreshServiceAclsRequestProto",
        "RefreshServiceAclsResponseProto",
    ),
    (
        "getGroupsForUser",
        "GetGroupsForUserRequestProto",
        "GetGroupsForUserResponseProto",
    ),
    (
        "updateNodeResource",
        "UpdateNodeResourceRequestProto",
        "UpdateNodeResourceResponseProto",
    ),
    (
        "refreshNodesResources",
        "RefreshNodesResourcesRequestProto",
        "RefreshNodesResourcesResponseProto",
    ),
    (
        "addToClusterNodeLabels",
        "AddToClusterNodeLabelsRequestProto",
        "AddToClusterNodeLabelsResponseProto",
    ),
    (
        "removeFromClusterNodeLabels",
        "RemoveFromClusterNodeLabelsRequestProto",
        "RemoveFromClusterNodeLabelsResponseProto",
    ),
    (
        "replaceLabelsOnNodes",
        "ReplaceLabelsOnNodeRequestProto",
        "ReplaceLabelsOnNodeResponseProto",
    ),
    (
        "checkForDecommissioningNodes",
        "CheckForDecommissioningNodesRequestProto",
        "CheckForDecommissioningNodesResponseProto",
    ),
    (
        "refreshClusterMaxPriority",
        "RefreshClusterMaxPriorityRequestProto",
        "RefreshClusterMaxPriorityResponseProto",
    ),
    (
        "mapAttributesToNodes",
        "NodesToAttributesMappingRequestProto",
        "NodesToAttributesMappingResponseProto",
    ),
    (
        "deregisterSubCluster",
        "DeregisterSubClusterRequestProto",
        "DeregisterSubClusterResponseProto",
    ),
    (
        "saveFederationQueuePolicy",
        "SaveFederationQueuePolicyRequestProto",
        "SaveFederationQueuePolicyResponseProto",
    ),
    (
        "batchSaveFederationQueuePolicies",
        "BatchSaveFederationQueuePoliciesRequestProto",
        "BatchSaveFederationQueuePoliciesResponseProto",
    ),
    (
        "listFederationQueuePolicies",
        "QueryFederationQueuePoliciesRequestProto",
        "QueryFederationQueuePoliciesResponseProto",
    ),
    (
        "deleteFederationApplication",
        "DeleteFederationApplicationRequestProto",
        "DeleteFederationApplicationResponseProto",
    ),
    (
        "getFederationSubClusters",
        "GetSubClustersRequestProto",
        "GetSubClustersResponseProto",
    ),
    (
        "deleteFederationPoliciesByQueues",
        "DeleteFederationQueuePoliciesRequestProto",
        "DeleteFederationQueuePoliciesResponseProto",
    ),
];

const RESOURCE_TRACKER_RPCS: &[Rpc] = &[
    (
        "registerNodeManager",
        "RegisterNodeManagerRequestProto",
        "RegisterNodeManagerResponseProto",
    ),
    (
        "nodeHeartbeat",
        "NodeHeartbeatRequestProto",
        "NodeHeartbeatResponseProto",
    ),
    (
        "unRegisterNodeManager",
        "UnRegisterNodeManagerRequestProto",
        "UnRegisterNodeManagerResponseProto",
    ),
];

const HA_RPCS: &[Rpc] = &[
    (
        "monitorHealth",
        ".hadoop.common.MonitorHealthRequestProto",
        ".hadoop.common.MonitorHealthResponseProto",
    ),
    (
        "transitionToActive",
        ".hadoop.common.TransitionToActiveRequestProto",
        ".hadoop.common.TransitionToActiveResponseProto",
    ),
    (
        "transitionToStandby",
        ".hadoop.common.TransitionToStandbyRequestProto",
        ".hadoop.common.TransitionToStandbyResponseProto",
    ),
    (
        "transitionToObserver",
        ".hadoop.common.TransitionToObserverRequestProto",
        ".hadoop.common.TransitionToObserverResponseProto",
    ),
    (
        "getServiceStatus",
        ".hadoop.common.GetServiceStatusRequestProto",
        ".hadoop.common.GetServiceStatusResponseProto",
    ),
];

fn qualified(name: &str) -> String {
    if name.starts_with('.') {
        name.to_owned()
    } else {
        format!(".hadoop.yarn.{name}")
    }
}

fn find_service<'a>(
    set: &'a FileDescriptorSet,
    file: &str,
    service: &str,
) -> Result<&'a ServiceDescriptorProto, String> {
    let file_desc = set
        .file
        .iter()
        .find(|f| f.name.as_deref() == Some(file))
        .ok_or_else(|| format!("file {file} missing"))?;
    file_desc
        .service
        .iter()
        .find(|s| s.name.as_deref() == Some(service))
        .ok_or_else(|| format!("service {service} missing from {file}"))
}

fn check_service(file: &str, service: &str, expected: &[Rpc]) -> TestResult {
    let set = descriptor_set()?;
    let svc = find_service(&set, file, service)?;
    let actual: Vec<(String, String, String)> = svc
        .method
        .iter()
        .map(|m| {
            (
                m.name.clone().unwrap_or_default(),
                m.input_type.clone().unwrap_or_default(),
                m.output_type.clone().unwrap_or_default(),
            )
        })
        .collect();
    let wanted: Vec<(String, String, String)> = expected
        .iter()
        .map(|&(name, req, resp)| (name.to_owned(), qualified(req), qualified(resp)))
        .collect();
    assert_eq!(actual, wanted, "{service}");
    for m in &svc.method {
        assert!(
            m.client_streaming.is_none_or(|s| !s) && m.server_streaming.is_none_or(|s| !s),
            "Hadoop rpcs are unary"
        );
    }
    Ok(())
}

#[test]
fn application_client_protocol_has_all_35_rpcs() -> TestResult {
    assert_eq!(APPLICATION_CLIENT_RPCS.len(), 35);
    check_service(
        "applicationclient_protocol.proto",
        "ApplicationClientProtocolService",
        APPLICATION_CLIENT_RPCS,
    )
}

#[test]
fn application_master_protocol_has_its_3_rpcs() -> TestResult {
    check_service(
        "applicationmaster_protocol.proto",
        "ApplicationMasterProtocolService",
        APPLICATION_MASTER_RPCS,
    )
}

#[test]
fn container_management_protocol_has_its_12_rpcs() -> TestResult {
    assert_eq!(CONTAINER_MANAGEMENT_RPCS.len(), 12);
    check_service(
        "containermanagement_protocol.proto",
        "ContainerManagementProtocolService",
        CONTAINER_MANAGEMENT_RPCS,
    )
}

#[test]
fn admin_protocol_has_the_3_4_rpc_set() -> TestResult {
    assert_eq!(ADMIN_RPCS.len(), 22);
    check_service(
        "server/resourcemanager_administration_protocol.proto",
        "ResourceManagerAdministrationProtocolService",
        ADMIN_RPCS,
    )
}

#[test]
fn resource_tracker_has_its_3_rpcs() -> TestResult {
    check_service(
        "ResourceTracker.proto",
        "ResourceTrackerService",
        RESOURCE_TRACKER_RPCS,
    )
}

#[test]
fn ha_service_protocol_has_its_5_rpcs() -> TestResult {
    check_service(
        "HAServiceProtocol.proto",
        "HAServiceProtocolService",
        HA_RPCS,
    )
}

fn find_message<'a>(set: &'a FileDescriptorSet, path: &str) -> Result<&'a DescriptorProto, String> {
    let mut parts = path.split('.');
    let top = parts.next().unwrap_or_default();
    let mut msg = set
        .file
        .iter()
        .flat_map(|f| f.message_type.iter())
        .find(|m| m.name.as_deref() == Some(top))
        .ok_or_else(|| format!("message {top} missing"))?;
    for nested in parts {
        msg = msg
            .nested_type
            .iter()
            .find(|m| m.name.as_deref() == Some(nested))
            .ok_or_else(|| format!("nested message {nested} missing in {path}"))?;
    }
    Ok(msg)
}

fn field<'a>(msg: &'a DescriptorProto, name: &str) -> Result<&'a FieldDescriptorProto, String> {
    msg.field
        .iter()
        .find(|f| f.name.as_deref() == Some(name))
        .ok_or_else(|| format!("field {name} missing in {:?}", msg.name))
}

/// (message path, field, number, label, type, default)
type FieldSpec = (
    &'static str,
    &'static str,
    i32,
    Label,
    Type,
    Option<&'static str>,
);

/// Fields whose encoding is easy to get subtly wrong, or that recent clients rely on.
const SENSITIVE_FIELDS: &[FieldSpec] = &[
    (
        "RpcRequestHeaderProto",
        "callId",
        3,
        Label::Required,
        Type::Sint32,
        None,
    ),
    (
        "RpcRequestHeaderProto",
        "clientId",
        4,
        Label::Required,
        Type::Bytes,
        None,
    ),
    (
        "RpcRequestHeaderProto",
        "retryCount",
        5,
        Label::Optional,
        Type::Sint32,
        Some("-1"),
    ),
    (
        "RpcRequestHeaderProto",
        "callerContext",
        7,
        Label::Optional,
        Type::Message,
        None,
    ),
    (
        "RpcRequestHeaderProto",
        "stateId",
        8,
        Label::Optional,
        Type::Int64,
        None,
    ),
    (
        "RpcRequestHeaderProto",
        "routerFederatedState",
        9,
        Label::Optional,
        Type::Bytes,
        None,
    ),
    (
        "RpcResponseHeaderProto",
        "callId",
        1,
        Label::Required,
        Type::Uint32,
        None,
    ),
    (
        "RpcResponseHeaderProto",
        "status",
        2,
        Label::Required,
        Type::Enum,
        None,
    ),
    (
        "RpcResponseHeaderProto",
        "retryCount",
        8,
        Label::Optional,
        Type::Sint32,
        Some("-1"),
    ),
    (
        "RpcResponseHeaderProto",
        "routerFederatedState",
        10,
        Label::Optional,
        Type::Bytes,
        None,
    ),
    (
        "RpcSaslProto",
        "state",
        2,
        Label::Required,
        Type::Enum,
        None,
    ),
    (
        "RpcSaslProto.SaslAuth",
        "challenge",
        5,
        Label::Optional,
        Type::Bytes,
        None,
    ),
    (
        "IpcConnectionContextProto",
        "userInfo",
        2,
        Label::Optional,
        Type::Message,
        None,
    ),
    (
        "IpcConnectionContextProto",
        "protocol",
        3,
        Label::Optional,
        Type::String,
        None,
    ),
    (
        "RequestHeaderProto",
        "clientProtocolVersion",
        3,
        Label::Required,
        Type::Uint64,
        None,
    ),
    (
        "TokenProto",
        "service",
        4,
        Label::Required,
        Type::String,
        None,
    ),
    (
        "ContainerIdProto",
        "id",
        3,
        Label::Optional,
        Type::Int64,
        None,
    ),
    (
        "ResourceProto",
        "memory",
        1,
        Label::Optional,
        Type::Int64,
        None,
    ),
    (
        "ContainerStatusProto",
        "exit_status",
        4,
        Label::Optional,
        Type::Int32,
        Some("-1000"),
    ),
    (
        "ContainerProto",
        "allocation_request_id",
        8,
        Label::Optional,
        Type::Int64,
        Some("-1"),
    ),
    (
        "ApplicationReportProto",
        "diagnostics",
        10,
        Label::Optional,
        Type::String,
        Some("N/A"),
    ),
    (
        "ApplicationReportProto",
        "rmClusterId",
        29,
        Label::Optional,
        Type::String,
        None,
    ),
    (
        "ApplicationSubmissionContextProto",
        "queue",
        3,
        Label::Optional,
        Type::String,
        Some("default"),
    ),
    (
        "ApplicationSubmissionContextProto",
        "applicationType",
        10,
        Label::Optional,
        Type::String,
        Some("YARN"),
    ),
    (
        "ApplicationSubmissionContextProto",
        "cancel_tokens_when_complete",
        6,
        Label::Optional,
        Type::Bool,
        Some("true"),
    ),
    (
        "QueueInfoProto",
        "maxRunningApp",
        27,
        Label::Optional,
        Type::Int32,
        None,
    ),
    (
        "AllocateResponseProto",
        "enhanced_headroom",
        19,
        Label::Optional,
        Type::Message,
        None,
    ),
    (
        "GetQueueInfoRequestProto",
        "subClusterId",
        5,
        Label::Optional,
        Type::String,
        None,
    ),
    (
        "GetApplicationsRequestProto",
        "application_states",
        2,
        Label::Repeated,
        Type::Enum,
        None,
    ),
    (
        "GetApplicationsRequestProto",
        "scope",
        11,
        Label::Optional,
        Type::Enum,
        Some("ALL"),
    ),
    (
        "KillApplicationResponseProto",
        "is_kill_completed",
        1,
        Label::Optional,
        Type::Bool,
        Some("false"),
    ),
    (
        "FinishApplicationMasterResponseProto",
        "isUnregistered",
        1,
        Label::Optional,
        Type::Bool,
        Some("false"),
    ),
    (
        "RegisterNodeManagerRequestProto",
        "http_port",
        3,
        Label::Optional,
        Type::Int32,
        None,
    ),
    (
        "NodeHeartbeatResponseProto",
        "tokenSequenceNo",
        19,
        Label::Optional,
        Type::Int64,
        None,
    ),
    (
        "ContainerTokenIdentifierProto",
        "masterKeyId",
        6,
        Label::Optional,
        Type::Int32,
        Some("-1"),
    ),
    (
        "AMRMTokenIdentifierProto",
        "keyId",
        2,
        Label::Optional,
        Type::Int32,
        Some("-1"),
    ),
    (
        "RefreshNodesRequestProto",
        "decommissionType",
        1,
        Label::Optional,
        Type::Enum,
        Some("NORMAL"),
    ),
];

#[test]
fn wire_sensitive_fields_have_hadoop_types() -> TestResult {
    let set = descriptor_set()?;
    for &(path, name, number, label, ty, default) in SENSITIVE_FIELDS {
        let f = field(find_message(&set, path)?, name)?;
        assert_eq!(f.number, Some(number), "{path}.{name} number");
        assert_eq!(f.label(), label, "{path}.{name} label");
        assert_eq!(f.r#type(), ty, "{path}.{name} type");
        assert_eq!(f.default_value.as_deref(), default, "{path}.{name} default");
        // proto2 repeated scalars are unpacked on the wire, as the Java client sends them.
        let packed = f.options.as_ref().and_then(|o| o.packed);
        assert_ne!(packed, Some(true), "{path}.{name} must not be packed");
    }
    Ok(())
}

#[test]
fn sasl_states_include_wrap() -> TestResult {
    let set = descriptor_set()?;
    let sasl = find_message(&set, "RpcSaslProto")?;
    let state = sasl
        .enum_type
        .iter()
        .find(|e| e.name.as_deref() == Some("SaslState"))
        .ok_or("SaslState missing")?;
    let values: Vec<(&str, i32)> = state
        .value
        .iter()
        .map(|v| {
            (
                v.name.as_deref().unwrap_or_default(),
                v.number.unwrap_or(-1),
            )
        })
        .collect();
    assert_eq!(
        values,
        [
            ("SUCCESS", 0),
            ("NEGOTIATE", 1),
            ("INITIATE", 2),
            ("CHALLENGE", 3),
            ("RESPONSE", 4),
            ("WRAP", 5),
        ]
    );
    Ok(())
}
