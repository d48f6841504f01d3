//! Helpers shared by the RM's protocol-level tests.

// Each test binary compiles this module and uses only some of its helpers.
#![allow(dead_code)]

use hadoop_protos::yarn as pb;
use spindle_common::ids::ApplicationId;
use spindle_common::proto::app_id_to_pb;
use spindle_ipc::methods::application_client::{
    GET_APPLICATION_REPORT, GET_NEW_APPLICATION, SUBMIT_APPLICATION,
};
use spindle_ipc::methods::application_master::{ALLOCATE, REGISTER_APPLICATION_MASTER};
use spindle_ipc::methods::resource_tracker::{NODE_HEARTBEAT, REGISTER_NODE_MANAGER};
use spindle_ipc::IpcClient;

/// Submits an application over ApplicationClientProtocol (getNewApplication, then
/// submitApplication): an unmanaged AM (no launch context, as UnmanagedAMLauncher
/// sends), or a managed one whose AM runs `true`.
pub async fn submit(client: &IpcClient, unmanaged: bool) -> ApplicationId {
    submit_with(client, |ctx| {
        ctx.application_name = Some("rm-protocol-test".into());
        ctx.unmanaged_am = Some(unmanaged);
        if unmanaged {
            ctx.am_container_spec = None;
        }
    })
    .await
}

/// Submits an application whose AM runs `true` (1 GiB, 1 vcore), its submission
/// context changed by `edit` first; answers its id.
pub async fn submit_with(
    client: &IpcClient,
    edit: impl FnOnce(&mut pb::ApplicationSubmissionContextProto),
) -> ApplicationId {
    let new: pb::GetNewApplicationResponseProto = client
        .call_method(&GET_NEW_APPLICATION, &pb::GetNewApplicationRequestProto {})
        .await
        .expect("new application");
    let id = new.application_id.expect("id");
    let mut ctx = pb::ApplicationSubmissionContextProto {
        application_id: Some(id),
        am_container_spec: Some(pb::ContainerLaunchContextProto {
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
    edit(&mut ctx);
    let _: pb::SubmitApplicationResponseProto = client
        .call_method(
            &SUBMIT_APPLICATION,
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
        .call_method(
            &GET_APPLICATION_REPORT,
            &pb::GetApplicationReportRequestProto {
                application_id: Some(app_id_to_pb(&id)),
            },
        )
        .await
        .expect("report");
    resp.application_report.expect("a report")
}

/// The five RM addresses on free loopback ports.
pub const RM_ADDRESS_KEYS: [&str; 5] = [
    "yarn.resourcemanager.address",
    "yarn.resourcemanager.scheduler.address",
    "yarn.resourcemanager.resource-tracker.address",
    "yarn.resourcemanager.admin.address",
    "yarn.resourcemanager.webapp.address",
];

/// Writes `yarn-site.xml` with `pairs` (and the RM on free loopback ports)
/// into `dir`, so that refreshes, which re-read the directory, see them.
pub fn write_yarn_site(dir: &std::path::Path, pairs: &[(&str, &str)]) {
    let mut xml = String::from("<?xml version=\"1.0\"?>\n<configuration>\n");
    let loopback: Vec<(&str, &str)> = RM_ADDRESS_KEYS
        .iter()
        .map(|k| (*k, "127.0.0.1:0"))
        .collect();
    for (k, v) in loopback.iter().chain(pairs) {
        xml.push_str(&format!(
            "  <property><name>{k}</name><value>{v}</value></property>\n"
        ));
    }
    xml.push_str("</configuration>\n");
    std::fs::write(dir.join("yarn-site.xml"), xml).expect("write yarn-site.xml");
}

/// A NodeManager stand-in: registers and heartbeats over the tracker port,
/// reporting the containers it is told to report as running.
pub struct FakeNm {
    pub client: IpcClient,
    pub node: pb::NodeIdProto,
    pub response_id: i32,
}

impl FakeNm {
    /// Registers `host`:45454 with `memory_mb` and 8 vcores; panics unless accepted.
    pub async fn register(tracker: std::net::SocketAddr, host: &str, memory_mb: i64) -> FakeNm {
        FakeNm::register_holding(tracker, host, memory_mb, Vec::new(), Vec::new()).await
    }

    /// Registers like [`FakeNm::register`], reporting `containers` it still
    /// holds and `running_apps` (as a NodeManager that outlived its RM does).
    pub async fn register_holding(
        tracker: std::net::SocketAddr,
        host: &str,
        memory_mb: i64,
        containers: Vec<pb::NmContainerStatusProto>,
        running_apps: Vec<pb::ApplicationIdProto>,
    ) -> FakeNm {
        let client = IpcClient::connect(
            &tracker.to_string(),
            spindle_ipc::ClientOptions::new("yarn", spindle_ipc::protocols::RESOURCE_TRACKER),
        )
        .await
        .expect("tracker connection");
        let node = pb::NodeIdProto {
            host: Some(host.into()),
            port: Some(45454),
        };
        let resp: pb::RegisterNodeManagerResponseProto = client
            .call_method(
                &REGISTER_NODE_MANAGER,
                &pb::RegisterNodeManagerRequestProto {
                    node_id: Some(node.clone()),
                    http_port: Some(8042),
                    resource: Some(pb::ResourceProto {
                        memory: Some(memory_mb),
                        virtual_cores: Some(8),
                        resource_value_map: Vec::new(),
                    }),
                    nm_version: Some("3.3.6".into()),
                    container_statuses: containers,
                    running_applications: running_apps,
                    ..Default::default()
                },
            )
            .await
            .expect("register");
        assert_eq!(resp.node_action, Some(pb::NodeActionProto::Normal as i32));
        FakeNm {
            client,
            node,
            response_id: 0,
        }
    }

    /// A heartbeat with nothing running.
    pub async fn heartbeat(&mut self) -> pb::NodeHeartbeatResponseProto {
        self.heartbeat_with(&[]).await
    }

    /// A heartbeat reporting `running` (1 GB, 1 vcore each) as RUNNING.
    pub async fn heartbeat_with(
        &mut self,
        running: &[pb::ContainerIdProto],
    ) -> pb::NodeHeartbeatResponseProto {
        let containers_statuses = running
            .iter()
            .map(|id| pb::ContainerStatusProto {
                container_id: Some(*id),
                state: Some(pb::ContainerStateProto::CRunning as i32),
                capability: Some(pb::ResourceProto {
                    memory: Some(1024),
                    virtual_cores: Some(1),
                    resource_value_map: Vec::new(),
                }),
                ..Default::default()
            })
            .collect();
        self.heartbeat_statuses(containers_statuses).await
    }

    /// A heartbeat reporting `containers_statuses` as they are.
    pub async fn heartbeat_statuses(
        &mut self,
        containers_statuses: Vec<pb::ContainerStatusProto>,
    ) -> pb::NodeHeartbeatResponseProto {
        let resp: pb::NodeHeartbeatResponseProto = self
            .client
            .call_method(
                &NODE_HEARTBEAT,
                &pb::NodeHeartbeatRequestProto {
                    node_status: Some(pb::NodeStatusProto {
                        node_id: Some(self.node.clone()),
                        response_id: Some(self.response_id),
                        containers_statuses,
                        node_health_status: Some(pb::NodeHealthStatusProto {
                            is_node_healthy: Some(true),
                            health_report: Some(String::new()),
                            last_health_report_time: Some(0),
                        }),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
            )
            .await
            .expect("heartbeat");
        self.response_id = resp.response_id.unwrap_or(0);
        resp
    }
}

/// The scheduler-port connection an AM opens with the AMRMToken its owner
/// read from the application report.
pub async fn am_client(
    rm: &spindle_rm::ResourceManager,
    token: &hadoop_protos::common::TokenProto,
) -> IpcClient {
    use spindle_common::security::{AmRmTokenIdentifier, Token};
    use spindle_ipc::{protocols, ClientOptions};
    let token = Token::from_proto(token.clone());
    let ident = AmRmTokenIdentifier::decode(&token.identifier).expect("an AMRMToken identifier");
    let options = ClientOptions::new(ident.attempt.to_string(), protocols::APPLICATION_MASTER)
        .with_token(Token {
            identifier: token.identifier,
            password: token.password,
            kind: token.kind,
            service: token.service,
        });
    IpcClient::connect(&rm.addresses().scheduler.to_string(), options)
        .await
        .expect("the token from the report authenticates")
}

/// An allocate call with `ask` and the next response id, which it advances.
pub async fn allocate(
    am: &IpcClient,
    response_id: &mut i32,
    ask: Vec<pb::ResourceRequestProto>,
) -> pb::AllocateResponseProto {
    let resp: pb::AllocateResponseProto = am
        .call_method(
            &ALLOCATE,
            &pb::AllocateRequestProto {
                ask,
                response_id: Some(*response_id),
                ..Default::default()
            },
        )
        .await
        .expect("allocate");
    *response_id = resp.response_id.expect("response id");
    resp
}

/// Submits an unmanaged application, connects its AM with the AMRMToken
/// from the owner's report, and registers it.
pub async fn registered_unmanaged_am(
    rm: &spindle_rm::ResourceManager,
    client: &IpcClient,
) -> (ApplicationId, IpcClient) {
    let app = submit(client, true).await;
    let token = report(client, app)
        .await
        .am_rm_token
        .expect("the owner's report carries the AMRMToken");
    let am = am_client(rm, &token).await;
    let _: pb::RegisterApplicationMasterResponseProto = am
        .call_method(
            &REGISTER_APPLICATION_MASTER,
            &pb::RegisterApplicationMasterRequestProto {
                host: Some("am".into()),
                rpc_port: Some(-1),
                tracking_url: Some(String::new()),
                placement_constraints: Vec::new(),
            },
        )
        .await
        .expect("register");
    (app, am)
}

/// An RM with every port on loopback port 0 and `extra` settings over the defaults.
pub async fn start_rm(extra: &[(&str, &str)]) -> spindle_rm::ResourceManager {
    let mut conf = spindle_common::conf::Configuration::with_defaults();
    for key in RM_ADDRESS_KEYS {
        conf.set(key, "127.0.0.1:0");
    }
    for (k, v) in extra {
        conf.set(k, *v);
    }
    spindle_rm::ResourceManager::start(&conf, None)
        .await
        .expect("RM starts")
}

/// A client-protocol connection to `rm` as `user` (SIMPLE authentication).
pub async fn client_as(rm: &spindle_rm::ResourceManager, user: &str) -> IpcClient {
    IpcClient::connect(
        &rm.addresses().client.to_string(),
        spindle_ipc::ClientOptions::new(user, spindle_ipc::protocols::APPLICATION_CLIENT),
    )
    .await
    .expect("client connection")
}
