//! The seed streams of each port.
//!
//! The ResourceManager's client and admin ports start from real captures of the Hadoop
//! 3.3.4 CLI (`captures/`), plus one multi-call stream each. The other ports have no
//! capture (a Hadoop NodeManager or Java ApplicationMaster does not run here); their
//! seeds are the requests Hadoop's clients send there (the NodeManager's registration
//! and heartbeat, an ApplicationMaster's SASL DIGEST-MD5 login, an NMClient's container
//! calls), encoded with the same framing as the captures.

use hadoop_protos::common::rpc_request_header_proto::OperationProto;
use hadoop_protos::common::rpc_sasl_proto::{SaslAuth, SaslState};
use hadoop_protos::common::{
    IpcConnectionContextProto, RequestHeaderProto, RpcKindProto, RpcRequestHeaderProto,
    RpcSaslProto, TokenProto, UserInformationProto,
};
use hadoop_protos::yarn as pb;
use prost::Message;
use spindle_ipc::frame::{AUTH_NONE, AUTH_SASL};
use spindle_ipc::methods::{
    application_client as ac, application_master as am, container_management as cm,
    resource_manager_administration as admin, resource_tracker as rt,
};
use spindle_ipc::{protocols, Method};

use crate::Stream;

/// The ports the fuzzer covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Port {
    /// ApplicationClientProtocol (`yarn.resourcemanager.address`).
    Client,
    /// ResourceManagerAdministrationProtocol (`yarn.resourcemanager.admin.address`).
    Admin,
    /// ResourceTracker (`yarn.resourcemanager.resource-tracker.address`).
    Tracker,
    /// ApplicationMasterProtocol (`yarn.resourcemanager.scheduler.address`), TOKEN only.
    Scheduler,
    /// ContainerManagementProtocol (`yarn.nodemanager.address`).
    ContainerManager,
}

impl Port {
    pub const ALL: [Port; 5] = [
        Port::Client,
        Port::Admin,
        Port::Tracker,
        Port::Scheduler,
        Port::ContainerManager,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Port::Client => "rm-client",
            Port::Admin => "rm-admin",
            Port::Tracker => "rm-tracker",
            Port::Scheduler => "rm-scheduler",
            Port::ContainerManager => "nm-container-manager",
        }
    }
}

const CLIENT_ID: [u8; 16] = [
    0xd9, 0x8e, 0xa8, 0xb1, 0x92, 0x26, 0x4b, 0xd6, 0xad, 0x6f, 0x95, 0x5d, 0xfc, 0xfc, 0x3b, 0x24,
];

fn header(call_id: i32) -> RpcRequestHeaderProto {
    RpcRequestHeaderProto {
        rpc_kind: Some(RpcKindProto::RpcProtocolBuffer as i32),
        rpc_op: Some(OperationProto::RpcFinalPacket as i32),
        call_id,
        client_id: CLIENT_ID.to_vec(),
        retry_count: Some(if call_id < 0 { -1 } else { 0 }),
        ..Default::default()
    }
}

/// A frame of delimited messages with its length prefix.
fn frame(parts: &[Vec<u8>]) -> Vec<u8> {
    let mut body = Vec::new();
    for p in parts {
        // A Vec grows as needed: encoding the delimiter cannot fail.
        let _ = prost::encode_length_delimiter(p.len(), &mut body);
        body.extend_from_slice(p);
    }
    let mut out = (body.len() as u32).to_be_bytes().to_vec();
    out.extend(body);
    out
}

fn context(user: &str, protocol: &str) -> Vec<u8> {
    let ctx = IpcConnectionContextProto {
        user_info: Some(UserInformationProto {
            effective_user: Some(user.into()),
            real_user: None,
        }),
        protocol: Some(protocol.into()),
    };
    frame(&[header(-3).encode_to_vec(), ctx.encode_to_vec()])
}

/// A call frame of `method` with its request, as a Java client encodes it.
fn call<Req: Message, Resp>(call_id: i32, method: &Method<Req, Resp>, body: &Req) -> Vec<u8> {
    let req = RequestHeaderProto {
        method_name: method.name.into(),
        declaring_class_protocol_name: method.protocol.into(),
        client_protocol_version: 1,
    };
    frame(&[
        header(call_id).encode_to_vec(),
        req.encode_to_vec(),
        body.encode_to_vec(),
    ])
}

fn stream(name: &str, auth: u8, frames: Vec<Vec<u8>>) -> Stream {
    Stream {
        name: name.into(),
        preamble: vec![b'h', b'r', b'p', b'c', 9, 0, auth],
        frames,
    }
}

fn node_id() -> pb::NodeIdProto {
    pb::NodeIdProto {
        host: Some("fuzz-node.example".into()),
        port: Some(45454),
    }
}

fn app_id() -> pb::ApplicationIdProto {
    pb::ApplicationIdProto {
        id: Some(1),
        cluster_timestamp: Some(1_795_326_004_599),
    }
}

fn container_id() -> pb::ContainerIdProto {
    pb::ContainerIdProto {
        app_id: Some(app_id()),
        app_attempt_id: Some(pb::ApplicationAttemptIdProto {
            application_id: Some(app_id()),
            attempt_id: Some(1),
        }),
        id: Some(2),
    }
}

fn resource(mb: i64, vcores: i32) -> pb::ResourceProto {
    pb::ResourceProto {
        memory: Some(mb),
        virtual_cores: Some(vcores),
        resource_value_map: Vec::new(),
    }
}

/// Parses the captures `files` (name, bytes); a capture that does not parse is a bug
/// of this crate, found by the unit tests.
fn parse_all(files: &[(&str, &[u8])]) -> Vec<Stream> {
    files
        .iter()
        .filter_map(|(name, bytes)| Stream::parse(name, bytes).ok())
        .collect()
}

/// The real captures of the client port.
pub fn captures() -> Vec<Stream> {
    parse_all(&[
        (
            "application-list",
            include_bytes!("../captures/application-list.bin"),
        ),
        ("node-list", include_bytes!("../captures/node-list.bin")),
        (
            "application-status",
            include_bytes!("../captures/application-status.bin"),
        ),
        (
            "queue-status",
            include_bytes!("../captures/queue-status.bin"),
        ),
        (
            "applicationattempt-list",
            include_bytes!("../captures/applicationattempt-list.bin"),
        ),
    ])
}

/// The real captures of the admin port.
pub fn admin_captures() -> Vec<Stream> {
    parse_all(&[
        (
            "rmadmin-refresh-queues",
            include_bytes!("../captures/rmadmin-refresh-queues.bin"),
        ),
        (
            "rmadmin-refresh-nodes",
            include_bytes!("../captures/rmadmin-refresh-nodes.bin"),
        ),
        (
            "rmadmin-get-groups",
            include_bytes!("../captures/rmadmin-get-groups.bin"),
        ),
        (
            "rmadmin-refresh-admin-acls",
            include_bytes!("../captures/rmadmin-refresh-admin-acls.bin"),
        ),
    ])
}

fn client() -> Vec<Stream> {
    let mut seeds = captures();
    let p = protocols::APPLICATION_CLIENT;
    // What `yarn application -status` and `-kill` send after their context.
    seeds.push(stream(
        "application-status-kill",
        AUTH_NONE,
        vec![
            context("alice", p),
            call(
                0,
                &ac::GET_APPLICATION_REPORT,
                &pb::GetApplicationReportRequestProto {
                    application_id: Some(app_id()),
                },
            ),
            call(
                1,
                &ac::FORCE_KILL_APPLICATION,
                &pb::KillApplicationRequestProto {
                    application_id: Some(app_id()),
                    diagnostics: Some("killed by the fuzzer".into()),
                },
            ),
            call(
                2,
                &ac::GET_CLUSTER_METRICS,
                &pb::GetClusterMetricsRequestProto {},
            ),
        ],
    ));
    seeds
}

fn admin() -> Vec<Stream> {
    let p = protocols::RESOURCE_MANAGER_ADMINISTRATION;
    let mut seeds = admin_captures();
    seeds.push(stream(
        "rmadmin",
        AUTH_NONE,
        vec![
            context("root", p),
            call(
                0,
                &admin::REFRESH_QUEUES,
                &pb::RefreshQueuesRequestProto::default(),
            ),
            call(
                1,
                &admin::REFRESH_NODES,
                &pb::RefreshNodesRequestProto {
                    decommission_type: Some(0),
                    ..Default::default()
                },
            ),
            call(
                2,
                &admin::GET_GROUPS_FOR_USER,
                &pb::GetGroupsForUserRequestProto {
                    user: "alice".into(),
                },
            ),
            call(
                3,
                &admin::REFRESH_ADMIN_ACLS,
                &pb::RefreshAdminAclsRequestProto::default(),
            ),
        ],
    ));
    seeds
}

fn tracker() -> Vec<Stream> {
    let p = protocols::RESOURCE_TRACKER;
    let status = pb::NodeStatusProto {
        node_id: Some(node_id()),
        response_id: Some(0),
        node_health_status: Some(pb::NodeHealthStatusProto {
            is_node_healthy: Some(true),
            health_report: Some(String::new()),
            last_health_report_time: Some(1_795_326_004_599),
        }),
        containers_statuses: vec![pb::ContainerStatusProto {
            container_id: Some(container_id()),
            state: Some(pb::ContainerStateProto::CRunning as i32),
            diagnostics: Some(String::new()),
            exit_status: Some(-1000),
            ..Default::default()
        }],
        ..Default::default()
    };
    vec![stream(
        "node-manager",
        AUTH_NONE,
        vec![
            context("yarn", p),
            call(
                0,
                &rt::REGISTER_NODE_MANAGER,
                &pb::RegisterNodeManagerRequestProto {
                    node_id: Some(node_id()),
                    http_port: Some(8042),
                    resource: Some(resource(4096, 4)),
                    nm_version: Some("3.3.4".into()),
                    physical_resource: Some(resource(8192, 8)),
                    ..Default::default()
                },
            ),
            call(
                1,
                &rt::NODE_HEARTBEAT,
                &pb::NodeHeartbeatRequestProto {
                    node_status: Some(status.clone()),
                    ..Default::default()
                },
            ),
            call(
                2,
                &rt::UN_REGISTER_NODE_MANAGER,
                &pb::UnRegisterNodeManagerRequestProto {
                    node_id: Some(node_id()),
                },
            ),
        ],
    )]
}

fn sasl(state: SaslState, token: Option<&[u8]>, auths: Vec<SaslAuth>) -> Vec<u8> {
    let msg = RpcSaslProto {
        version: None,
        state: state as i32,
        token: token.map(<[u8]>::to_vec),
        auths,
    };
    frame(&[header(-33).encode_to_vec(), msg.encode_to_vec()])
}

fn scheduler() -> Vec<Stream> {
    let p = protocols::APPLICATION_MASTER;
    let token_auth = SaslAuth {
        method: "TOKEN".into(),
        mechanism: "DIGEST-MD5".into(),
        protocol: Some(String::new()),
        server_id: Some("default".into()),
        challenge: None,
    };
    let response = b"charset=utf-8,username=\"AAAAAQAAAAEAAAABAAAAAQ==\",realm=\"default\",\
nonce=\"eK3nV9yQ0y1u7Jw0HUoMmNSfyPVqjK0M\",nc=00000001,cnonce=\"Zm9vYmFyYmF6\",\
digest-uri=\"/default\",maxbuf=65536,response=6a9d1bcb3a5e4d4f5a3b2c1d0e9f8a7b,qop=auth";
    vec![stream(
        "application-master-login",
        AUTH_SASL,
        vec![
            sasl(SaslState::Negotiate, None, vec![]),
            sasl(SaslState::Initiate, None, vec![token_auth.clone()]),
            sasl(SaslState::Response, Some(response), vec![]),
            context("appattempt_1795326004599_0001_000001", p),
            call(
                0,
                &am::REGISTER_APPLICATION_MASTER,
                &pb::RegisterApplicationMasterRequestProto {
                    host: Some("am-host".into()),
                    rpc_port: Some(0),
                    tracking_url: Some(String::new()),
                    ..Default::default()
                },
            ),
            call(
                1,
                &am::ALLOCATE,
                &pb::AllocateRequestProto {
                    ask: vec![pb::ResourceRequestProto {
                        priority: Some(pb::PriorityProto { priority: Some(1) }),
                        resource_name: Some("*".into()),
                        capability: Some(resource(1024, 1)),
                        num_containers: Some(2),
                        relax_locality: Some(true),
                        ..Default::default()
                    }],
                    response_id: Some(0),
                    progress: Some(0.1),
                    ..Default::default()
                },
            ),
        ],
    )]
}

fn container_manager() -> Vec<Stream> {
    let p = protocols::CONTAINER_MANAGEMENT;
    let launch = pb::ContainerLaunchContextProto {
        command: vec!["/bin/true".into()],
        environment: vec![pb::StringStringMapProto {
            key: Some("CLASSPATH".into()),
            value: Some("{{PWD}}<CPS>*".into()),
        }],
        ..Default::default()
    };
    let token = TokenProto {
        identifier: vec![0x0a, 0x0c, 0x08, 0x02, 0x12, 0x08, 0x08, 0x01, 0x10, 0x01],
        password: vec![0x55; 20],
        kind: "ContainerToken".into(),
        service: "127.0.0.1:45454".into(),
    };
    vec![stream(
        "node-manager-client",
        AUTH_NONE,
        vec![
            context("appattempt_1795326004599_0001_000001", p),
            call(
                0,
                &cm::START_CONTAINERS,
                &pb::StartContainersRequestProto {
                    start_container_request: vec![pb::StartContainerRequestProto {
                        container_launch_context: Some(launch),
                        container_token: Some(token),
                    }],
                },
            ),
            call(
                1,
                &cm::GET_CONTAINER_STATUSES,
                &pb::GetContainerStatusesRequestProto {
                    container_id: vec![container_id()],
                },
            ),
            call(
                2,
                &cm::STOP_CONTAINERS,
                &pb::StopContainersRequestProto {
                    container_id: vec![container_id()],
                },
            ),
        ],
    )]
}

/// Every port with its seeds.
pub fn all() -> Vec<(Port, Vec<Stream>)> {
    vec![
        (Port::Client, client()),
        (Port::Admin, admin()),
        (Port::Tracker, tracker()),
        (Port::Scheduler, scheduler()),
        (Port::ContainerManager, container_manager()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_capture_loads() {
        let caps = captures();
        assert_eq!(caps.len(), 5);
        let admin = admin_captures();
        assert_eq!(admin.len(), 4);
        for c in caps.iter().chain(&admin) {
            assert_eq!(&c.preamble[..4], b"hrpc");
            assert_eq!(c.frames.len(), 2, "{}: context and one call", c.name);
        }
    }
}
