//! Helpers shared by the RM's protocol-level tests.

use hadoop_protos::yarn as pb;
use spindle_common::ids::ApplicationId;
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
