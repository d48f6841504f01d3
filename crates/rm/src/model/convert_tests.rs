use std::path::PathBuf;

use spindle_common::states::{AppState, AttemptState};
use spindle_scheduler::SchedulerError;

use super::*;
use crate::model::launch::AppAccess;

#[test]
fn missing_or_bad_ids_raise_the_java_exceptions_clients_expect() {
    let err = app_id_from_pb(None).expect_err("no id");
    assert_eq!(err.class_name, class::ILLEGAL_ARGUMENT);

    let no_app = pb::ApplicationAttemptIdProto {
        application_id: None,
        attempt_id: Some(1),
    };
    let err = attempt_id_from_pb(Some(&no_app)).expect_err("no application");
    assert_eq!(err.class_name, class::ILLEGAL_ARGUMENT);
    assert_eq!(
        err.message,
        "invalid application attempt id: ApplicationAttemptIdProto.application_id is missing"
    );

    let err = container_id_from_pb(&pb::ContainerIdProto::default()).expect_err("empty");
    assert_eq!(err.class_name, class::ILLEGAL_ARGUMENT);

    let bad_port = pb::NodeIdProto {
        host: Some("h".into()),
        port: Some(70_000),
    };
    let err = node_id_from_pb(Some(&bad_port)).expect_err("port");
    assert_eq!(err.class_name, class::YARN);
    assert!(err.message.contains("NodeIdProto.port"), "{}", err.message);
}

#[test]
fn ids_and_resources_round_trip() {
    let attempt = ApplicationAttemptId::new(ApplicationId::new(1_700_000_000_000, 3), 1);
    let c = ContainerId::with_epoch(attempt, 1, 5);
    assert_eq!(container_id_from_pb(&container_id_to_pb(&c)), Ok(c));
    assert_eq!(
        attempt_id_from_pb(Some(&attempt_id_to_pb(&attempt))),
        Ok(attempt)
    );
    let node = NodeId::new("n1", 45454);
    assert_eq!(node_id_from_pb(Some(&node_id_to_pb(&node))), Ok(node));
    let r = Resource::new(8192, 8);
    assert_eq!(resource_from_pb(Some(&resource_to_pb(r))), r);
    assert_eq!(resource_from_pb(None), Resource::default());
    assert_eq!(resource_types().len(), 2);
}

/// Every refusal's Java class and message, as Hadoop clients (and Spindle's
/// tests and CLIs) read them.
#[test]
fn refusals_raise_hadoops_exceptions_with_hadoops_messages() {
    let app = ApplicationId::new(1_700_000_000_000, 7);
    let attempt = ApplicationAttemptId::new(app, 2);
    let container = ContainerId::new(attempt, 3);
    let cases: Vec<(Refusal, &str, String)> = vec![
        (
            Refusal::ApplicationNotFound(app),
            class::APPLICATION_NOT_FOUND,
            "Application with id 'application_1700000000000_0007' doesn't exist in RM. \
             Please check that the job submission was successful."
                .into(),
        ),
        (
            Refusal::KillOfAbsentApplication(app),
            class::APPLICATION_NOT_FOUND,
            "Trying to kill an absent application application_1700000000000_0007".into(),
        ),
        (
            Refusal::AttemptNotFound(attempt),
            class::APPLICATION_ATTEMPT_NOT_FOUND,
            "ApplicationAttempt with id 'appattempt_1700000000000_0007_000002' doesn't exist in RM."
                .into(),
        ),
        (
            Refusal::ContainerNotFound(container),
            class::CONTAINER_NOT_FOUND,
            format!("Container with id '{container}' doesn't exist in RM."),
        ),
        (
            Refusal::UnknownApplicationId {
                id: app,
                cluster_ts: 5,
            },
            class::YARN,
            "Application application_1700000000000_0007 was not created by this ResourceManager \
             (cluster timestamp 5); call getNewApplication first"
                .into(),
        ),
        (
            Refusal::NegativeAmResource {
                requested: Resource::new(-1, 1),
            },
            class::INVALID_RESOURCE_REQUEST,
            format!(
                "Invalid resource request! Cannot allocate containers as requested resource is less \
                 than 0! Requested resource type=[memory-mb or vcores], Requested resource={}",
                Resource::new(-1, 1)
            ),
        ),
        (
            Refusal::AmResourceAboveMaximum {
                requested: Resource::new(16384, 1),
                maximum: Resource::new(8192, 4),
            },
            class::INVALID_RESOURCE_REQUEST,
            format!(
                "Invalid resource request! Cannot allocate containers as requested resource is greater \
                 than maximum allowed allocation. Requested resource={}, maximum allowed allocation={}, \
                 please note that maximum allowed allocation is calculated by scheduler based on maximum \
                 resource of registered NodeManagers, which might be less than configured maximum allocation={}",
                Resource::new(16384, 1),
                Resource::new(8192, 4),
                Resource::new(8192, 4)
            ),
        ),
        (
            Refusal::SubmitAccessDenied {
                user: "bob".into(),
                app,
                queue: "etl".into(),
            },
            class::YARN,
            "org.apache.hadoop.security.AccessControlException: User bob does not have permission \
             to submit application_1700000000000_0007 to queue etl"
                .into(),
        ),
        (
            Refusal::AppAccessDenied {
                user: "mallory".into(),
                access: AppAccess::Modify,
                app,
            },
            class::YARN,
            "java.security.AccessControlException: User mallory cannot perform \
             operation MODIFY_APP on application_1700000000000_0007"
                .into(),
        ),
        (
            Refusal::AppViewDenied {
                user: "mallory".into(),
                app,
            },
            class::YARN,
            "User mallory does not have privilege to see this application \
             application_1700000000000_0007"
                .into(),
        ),
        (
            Refusal::AttemptViewDenied {
                user: "mallory".into(),
                attempt,
            },
            class::YARN,
            "User mallory does not have privilege to see this attempt \
             appattempt_1700000000000_0007_000002"
                .into(),
        ),
        (
            Refusal::PriorityUpdateInState(AppState::NewSaving),
            class::YARN,
            "Application in NEW_SAVING state cannot update priority.".into(),
        ),
        (
            Refusal::NotCurrentAttempt(attempt),
            class::INVALID_APPLICATION_MASTER_REQUEST,
            "Application attempt appattempt_1700000000000_0007_000002 is not the current attempt \
             of its application"
                .into(),
        ),
        (
            Refusal::AmNotRegistered(attempt),
            class::APPLICATION_MASTER_NOT_REGISTERED,
            "AM is not registered for known application attempt: \
             appattempt_1700000000000_0007_000002 or RM had restarted after AM registered. \
             AM should re-register."
                .into(),
        ),
        (
            Refusal::AmAlreadyRegistered(app),
            class::INVALID_APPLICATION_MASTER_REQUEST,
            "Application Master is already registered : application_1700000000000_0007".into(),
        ),
        (
            Refusal::AttemptEnded {
                attempt,
                state: AttemptState::Killed,
            },
            class::INVALID_APPLICATION_MASTER_REQUEST,
            "Application attempt appattempt_1700000000000_0007_000002 has already ended (Killed)"
                .into(),
        ),
        (
            Refusal::InvalidResponseId {
                attempt,
                expected: 3,
                got: 7,
            },
            class::INVALID_APPLICATION_MASTER_REQUEST,
            "Invalid responseId in AllocateRequest from application attempt: \
             appattempt_1700000000000_0007_000002, expect responseId to be 3, but get 7"
                .into(),
        ),
        (
            Refusal::AsksRefused(SchedulerError::UnknownAttempt(attempt)),
            class::INVALID_RESOURCE_REQUEST,
            SchedulerError::UnknownAttempt(attempt).to_string(),
        ),
        (
            Refusal::QueuesRefused {
                source: Some(PathBuf::from("/etc/capacity-scheduler.xml")),
                error: SchedulerError::InvalidQueues("root.b holds applications".into()),
            },
            class::YARN,
            "/etc/capacity-scheduler.xml: queue configuration refused: root.b holds applications"
                .into(),
        ),
        (
            Refusal::NodesNotRunning(vec![NodeId::new("a", 1), NodeId::new("b", 2)]),
            class::YARN,
            "Resource update failed: nodes not running in the cluster: a:1, b:2".into(),
        ),
        (
            Refusal::AdminAccessDenied {
                user: "eve".into(),
                operation: "refreshNodes".into(),
            },
            class::ACCESS_CONTROL,
            "User eve doesn't have permission to call 'refreshNodes'".into(),
        ),
    ];
    for (refusal, class_name, message) in cases {
        let err = RpcError::from(refusal.clone());
        assert_eq!(
            (err.class_name.as_str(), err.message.as_str()),
            (class_name, message.as_str()),
            "{refusal:?}"
        );
    }
}

/// A submitted launch context goes to the NodeManager with only what the RM
/// changed changed.
#[test]
fn launch_contexts_keep_what_the_rm_only_forwards() {
    let clc = pb::ContainerLaunchContextProto {
        local_resources: vec![pb::StringLocalResourceMapProto {
            key: Some("app.jar".into()),
            value: None,
        }],
        tokens: Some(vec![1, 2, 3]),
        service_data: Vec::new(),
        environment: vec![
            pb::StringStringMapProto {
                key: Some("A".into()),
                value: Some("1".into()),
            },
            pb::StringStringMapProto {
                key: Some("B".into()),
                value: Some("2".into()),
            },
        ],
        command: vec!["java".into(), "Main".into()],
        application_ac_ls: vec![pb::ApplicationAclMapProto {
            access_type: Some(pb::ApplicationAccessTypeProto::AppaccessModifyApp as i32),
            acl: Some("alice".into()),
        }],
        container_retry_context: None,
        tokens_conf: Some(vec![9]),
    };
    let mut launch = launch_context_from_pb(clc.clone());
    assert_eq!(
        launch.environment,
        [("A".to_string(), "1".to_string()), ("B".into(), "2".into())]
    );
    assert_eq!(launch.tokens.as_deref(), Some(&[1u8, 2, 3][..]));
    assert_eq!(launch.acls, [(AppAccess::Modify, "alice".to_string())]);
    assert_eq!(launch_context_to_pb(&launch).ok(), Some(clc.clone()));

    launch.set_env("A", "changed".into());
    let sent = launch_context_to_pb(&launch).expect("decodes");
    assert_eq!(sent.command, clc.command);
    assert_eq!(sent.local_resources, clc.local_resources);
    assert_eq!(sent.tokens_conf, clc.tokens_conf);
    let env: Vec<_> = sent
        .environment
        .iter()
        .map(|e| {
            (
                e.key.clone().unwrap_or_default(),
                e.value.clone().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        env,
        [
            ("B".to_string(), "2".to_string()),
            ("A".into(), "changed".into())
        ]
    );
}

#[test]
fn container_reports_link_to_the_nodes_log_page() {
    let report = ContainerReport {
        id: "container_1700000000000_0001_01_000002"
            .parse()
            .expect("id"),
        node: NodeId::new("nm1", 45454),
        resource: Resource::new(1024, 1),
        priority: 0,
        created_ms: 5,
        node_http_address: Some("nm1:8042".into()),
        user: "alice".into(),
    };
    let pb = container_report_to_pb(&report);
    assert_eq!(pb.node_http_address.as_deref(), Some("http://nm1:8042"));
    assert_eq!(
        pb.log_url.as_deref(),
        Some("http://nm1:8042/node/containerlogs/container_1700000000000_0001_01_000002/alice")
    );
    // A node the RM no longer knows: neither.
    let gone = ContainerReport {
        node_http_address: None,
        ..report
    };
    let pb = container_report_to_pb(&gone);
    assert_eq!((pb.node_http_address, pb.log_url), (None, None));
}
