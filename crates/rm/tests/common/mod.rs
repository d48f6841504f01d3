//! Helpers shared by the RM's protocol-level tests.

// Each test binary compiles this module and uses only some of its helpers.
#![allow(dead_code)]

use hadoop_protos::yarn as pb;
use spindle_common::ids::ApplicationId;
use spindle_common::proto::app_id_to_pb;
use spindle_ipc::IpcClient;

/// Submits an application over ApplicationClientProtocol (getNewApplication, then
/// submitApplication): an unmanaged AM (no launch context, as UnmanagedAMLauncher
/// sends), or a managed one whose AM runs `true`.
pub async fn submit(client: &IpcClient, unmanaged: bool) -> ApplicationId {
    let new: pb::GetNewApplicationResponseProto = client
        .call("getNewApplication", &pb::GetNewApplicationRequestProto {})
        .await
        .expect("new application");
    let id = new.application_id.expect("id");
    let ctx = pb::ApplicationSubmissionContextProto {
        application_id: Some(id),
        application_name: Some("rm-protocol-test".into()),
        unmanaged_am: Some(unmanaged),
        am_container_spec: (!unmanaged).then(|| pb::ContainerLaunchContextProto {
            command: vec!["true".into()],
            ..Default::default()
        }),
        resource: Some(pb::ResourceProto {
            memory: Some(1024),
            virtual_cores: Some(1),
            resource_value_map: Vec::new(),
        }),
        ..Default::default()
    };
    let _: pb::SubmitApplicationResponseProto = client
        .call(
            "submitApplication",
            &pb::SubmitApplicationRequestProto {
                application_submission_context: Some(ctx),
            },
        )
        .await
        .expect("submit");
    ApplicationId::new(id.cluster_timestamp.unwrap_or(0), id.id.unwrap_or(0))
}

/// The application's report over ApplicationClientProtocol, as `client` sees it.
pub async fn report(client: &IpcClient, id: ApplicationId) -> pb::ApplicationReportProto {
    let resp: pb::GetApplicationReportResponseProto = client
        .call(
            "getApplicationReport",
            &pb::GetApplicationReportRequestProto {
                application_id: Some(app_id_to_pb(&id)),
            },
        )
        .await
        .expect("report");
    resp.application_report.expect("a report")
}
