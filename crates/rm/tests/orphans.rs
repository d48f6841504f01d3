//! An RM restarted without recovery, and a NodeManager that outlived it: the node
//! re-registers still running a container of an application the new RM does not
//! know. Through the real handlers of an in-process RM, with a stand-in NM: the
//! node is told to clean that application up, and nothing is placed on the
//! resources the orphan still holds until the node reports it gone.

use std::time::{Duration, Instant};

use hadoop_protos::yarn as pb;
use spindle_common::conf::Configuration;
use spindle_ipc::{protocols, ClientOptions, IpcClient};
use spindle_rm::ResourceManager;

mod common;
use common::{allocate, registered_unmanaged_am, write_yarn_site, FakeNm};

/// A container of application 7 of an RM that started at 1000 (not this one).
fn orphan_id() -> pb::ContainerIdProto {
    let app = pb::ApplicationIdProto {
        id: Some(7),
        cluster_timestamp: Some(1000),
    };
    pb::ContainerIdProto {
        app_id: Some(app),
        app_attempt_id: Some(pb::ApplicationAttemptIdProto {
            application_id: Some(app),
            attempt_id: Some(1),
        }),
        id: Some(2),
    }
}

fn resource(mb: i64) -> pb::ResourceProto {
    pb::ResourceProto {
        memory: Some(mb),
        virtual_cores: Some(1),
        resource_value_map: Vec::new(),
    }
}

/// The orphan as a heartbeat reports it, RUNNING or COMPLETE, holding 4 GB.
fn orphan_status(state: pb::ContainerStateProto) -> pb::ContainerStatusProto {
    pb::ContainerStatusProto {
        container_id: Some(orphan_id()),
        state: Some(state as i32),
        capability: Some(resource(4096)),
        exit_status: Some(if state == pb::ContainerStateProto::CComplete {
            -105
        } else {
            -1000
        }),
        ..Default::default()
    }
}

#[tokio::test]
async fn a_reregistering_node_cleans_up_unknown_applications_and_is_not_overcommitted() {
    tokio::time::timeout(Duration::from_secs(60), async {
        let dir = tempfile::tempdir().expect("temp dir");
        write_yarn_site(dir.path(), &[]);
        let conf = Configuration::load(Some(dir.path())).expect("configuration");
        let rm = ResourceManager::start(&conf, Some(dir.path().to_path_buf()))
            .await
            .expect("RM starts");
        let client = IpcClient::connect(
            &rm.addresses().client.to_string(),
            ClientOptions::new("alice", protocols::APPLICATION_CLIENT),
        )
        .await
        .expect("client connection");

        // A 4 GB node that still runs a 4 GB container of an application from
        // before the restart.
        let orphan_app = orphan_id().app_id.expect("app id");
        let mut nm = FakeNm::register_holding(
            rm.addresses().resource_tracker,
            "nm-survivor",
            4096,
            vec![pb::NmContainerStatusProto {
                container_id: Some(orphan_id()),
                container_state: Some(pb::ContainerStateProto::CRunning as i32),
                resource: Some(resource(4096)),
                ..Default::default()
            }],
            vec![orphan_app],
        )
        .await;
        let running = || vec![orphan_status(pb::ContainerStateProto::CRunning)];

        // The first heartbeat answer tells the node to clean the unknown
        // application up (and goes on doing so while the container runs).
        let answer = nm.heartbeat_statuses(running()).await;
        assert_eq!(answer.node_action, Some(pb::NodeActionProto::Normal as i32));
        assert_eq!(
            answer.applications_to_cleanup,
            vec![orphan_app],
            "the node must clean up the application the RM does not know: {answer:?}"
        );

        // An unmanaged AM asks for a 1 GB container: the node is full with the
        // orphan, so nothing is granted while it runs.
        let (_app, am) = registered_unmanaged_am(&rm, &client).await;
        let mut response_id = 0;
        let ask = vec![pb::ResourceRequestProto {
            priority: Some(pb::PriorityProto { priority: Some(1) }),
            resource_name: Some("*".into()),
            capability: Some(resource(1024)),
            num_containers: Some(1),
            relax_locality: Some(true),
            ..Default::default()
        }];
        let resp = allocate(&am, &mut response_id, ask).await;
        assert!(resp.allocated_containers.is_empty(), "{resp:?}");
        for _ in 0..5 {
            let answer = nm.heartbeat_statuses(running()).await;
            assert_eq!(answer.applications_to_cleanup, vec![orphan_app]);
            let resp = allocate(&am, &mut response_id, Vec::new()).await;
            assert!(
                resp.allocated_containers.is_empty(),
                "a container was placed on resources the orphan still holds: {resp:?}"
            );
        }

        // The node reports the orphan complete: the resources are free again
        // and the AM gets its container.
        let answer = nm
            .heartbeat_statuses(vec![orphan_status(pb::ContainerStateProto::CComplete)])
            .await;
        assert!(answer.applications_to_cleanup.is_empty(), "{answer:?}");
        let acked: Vec<_> = answer
            .containers_to_be_removed_from_nm
            .iter()
            .map(|c| (c.app_attempt_id, c.id))
            .collect();
        let orphan = orphan_id();
        assert_eq!(acked, vec![(orphan.app_attempt_id, orphan.id)]);
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            nm.heartbeat().await;
            let resp = allocate(&am, &mut response_id, Vec::new()).await;
            if !resp.allocated_containers.is_empty() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "no container once the orphan was gone"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("test timed out");
}
