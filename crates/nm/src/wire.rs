//! Conversions between the agent's values and the ResourceTracker protocol
//! messages. This is the only place the NodeManager builds or reads them.

use hadoop_protos::yarn::{
    ApplicationAttemptIdProto, ApplicationIdProto, ContainerIdProto, ContainerStatusProto,
    MasterKeyProto, NodeHealthStatusProto, NodeIdProto, NodeStatusProto, ResourceProto,
};
use spindle_common::proto;
use spindle_common::{ApplicationAttemptId, ApplicationId, ContainerId, NodeId, Resource};

use crate::disks::NodeHealth;

/// A token-signing key the ResourceManager shares with its NodeManagers
/// (container-token and NM-token master keys).
pub use spindle_common::security::MasterKey;

/// The key in a registration or heartbeat answer; `None` (with a warning)
/// when the message carries no usable key.
pub fn master_key_from_proto(p: &MasterKeyProto) -> Option<MasterKey> {
    match MasterKey::from_proto(p) {
        Ok(k) => Some(k),
        Err(e) => {
            tracing::warn!(
                "ignoring a master key from the ResourceManager: {}",
                spindle_common::text::escaped(&e.to_string())
            );
            None
        }
    }
}

/// The container-token and NM-token master keys a registration or heartbeat
/// answer carries (each `None` when absent or unusable).
pub fn master_keys_from_proto(
    container: Option<&MasterKeyProto>,
    nm: Option<&MasterKeyProto>,
) -> (Option<MasterKey>, Option<MasterKey>) {
    (
        container.and_then(master_key_from_proto),
        nm.and_then(master_key_from_proto),
    )
}

// Ids and resources are converted by `spindle_common::proto`; these names
// are the agent's, and its readers answer `None` for a record that names
// nothing usable.

/// `None` (with a warning) when the node id has no host or a bad port.
pub fn node_id_from_proto(p: &NodeIdProto) -> Option<NodeId> {
    proto::node_id_from_pb(p)
        .map_err(|e| {
            tracing::warn!(
                "ignoring an unusable node id: {}",
                spindle_common::text::escaped(&e.to_string())
            )
        })
        .ok()
}

pub fn app_id_proto(id: &ApplicationId) -> ApplicationIdProto {
    proto::app_id_to_pb(id)
}

/// The application an id names. Absent fields read as 0, as in Java, so
/// this is always `Some`; the `Option` is kept for the agent's
/// `filter_map`s over lists of ids.
pub fn app_id_from_proto(p: &ApplicationIdProto) -> Option<ApplicationId> {
    Some(proto::app_id_from_pb(p))
}

pub fn attempt_id_proto(id: &ApplicationAttemptId) -> ApplicationAttemptIdProto {
    proto::attempt_id_to_pb(id)
}

/// `None` when the attempt id lacks its application id.
pub fn attempt_id_from_proto(p: &ApplicationAttemptIdProto) -> Option<ApplicationAttemptId> {
    proto::attempt_id_from_pb(p).ok()
}

/// A container id as Java writes it: the attempt and the 64-bit id, never
/// the deprecated `app_id`.
pub fn container_id_proto(id: &ContainerId) -> ContainerIdProto {
    proto::container_id_to_pb(id)
}

/// Reads `app_attempt_id` + `id`; an old writer's `app_id` alone is not
/// enough. `None` when the attempt (or its application) is missing.
pub fn container_id_from_proto(p: &ContainerIdProto) -> Option<ContainerId> {
    proto::container_id_from_pb(p).ok()
}

/// A container id for messages: its string form, or what is wrong with it.
pub fn describe_container_id(p: &ContainerIdProto) -> String {
    match proto::container_id_from_pb(p) {
        Ok(c) => c.to_string(),
        Err(e) => format!("<incomplete container id {p:?}: {e}>"),
    }
}

pub fn node_id_proto(id: &NodeId) -> NodeIdProto {
    proto::node_id_to_pb(id)
}

/// A resource as Java writes it: the scalar fields plus the same two
/// values in `resource_value_map` ("memory-mb" in "Mi", "vcores").
pub fn resource_proto(r: Resource) -> ResourceProto {
    proto::resource_to_pb(r)
}

/// Memory and vcores of a resource: the scalar fields, else the
/// resource-map entries, else 0.
pub fn resource_from_proto(p: &ResourceProto) -> Resource {
    proto::resource_from_pb(p)
}

pub fn health_proto(h: &NodeHealth) -> NodeHealthStatusProto {
    NodeHealthStatusProto {
        is_node_healthy: Some(h.healthy),
        health_report: Some(h.report.clone()),
        last_health_report_time: Some(h.last_report_time_ms),
    }
}

/// The node status of a heartbeat (or of a registration, with id 0), with
/// the statuses of the containers the ResourceManager should hear about.
pub fn node_status(
    id: &NodeId,
    response_id: i32,
    health: &NodeHealth,
    containers: Vec<ContainerStatusProto>,
) -> NodeStatusProto {
    NodeStatusProto {
        node_id: Some(node_id_proto(id)),
        response_id: Some(response_id),
        containers_statuses: containers,
        node_health_status: Some(health_proto(health)),
        keep_alive_applications: Vec::new(),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_round_trip_and_java_shape() {
        let p = resource_proto(Resource::new(4096, 3));
        assert_eq!(p.memory, Some(4096));
        assert_eq!(p.virtual_cores, Some(3));
        let keys: Vec<_> = p
            .resource_value_map
            .iter()
            .map(|i| (i.key.as_str(), i.value, i.units.as_deref()))
            .collect();
        assert_eq!(
            keys,
            vec![
                ("memory-mb", Some(4096), Some("Mi")),
                ("vcores", Some(3), Some(""))
            ]
        );
        assert_eq!(resource_from_proto(&p), Resource::new(4096, 3));
        assert_eq!(
            resource_from_proto(&ResourceProto::default()),
            Resource::ZERO
        );
        let map_only = ResourceProto {
            memory: None,
            virtual_cores: None,
            ..p
        };
        assert_eq!(resource_from_proto(&map_only), Resource::new(4096, 3));
    }

    #[test]
    fn master_keys_need_an_id_and_bytes() {
        assert_eq!(master_key_from_proto(&MasterKeyProto::default()), None);
        let k = master_key_from_proto(&MasterKeyProto {
            key_id: Some(7),
            bytes: Some(vec![1, 2, 3]),
        })
        .expect("has an id");
        assert_eq!(k.to_proto().bytes, Some(vec![1, 2, 3]));
        let shown = format!("{k:?}");
        assert!(!shown.contains("[1, 2, 3]"), "{shown}");
    }

    #[test]
    fn node_status_carries_health() {
        let health = NodeHealth {
            healthy: false,
            report: "1/1 local-dirs have errors".into(),
            last_report_time_ms: 99,
        };
        let s = node_status(&NodeId::new("h", 5), 4, &health, Vec::new());
        assert_eq!(s.response_id, Some(4));
        assert_eq!(
            s.node_id,
            Some(NodeIdProto {
                host: Some("h".into()),
                port: Some(5)
            })
        );
        let h = s.node_health_status.expect("health");
        assert_eq!(h.is_node_healthy, Some(false));
        assert_eq!(h.last_health_report_time, Some(99));
        assert!(s.containers_statuses.is_empty());
    }

    #[test]
    fn ids_round_trip_the_java_way() {
        let attempt = ApplicationAttemptId::new(ApplicationId::new(1_700_000_000_000, 7), 2);
        let c = ContainerId::with_epoch(attempt, 3, 12);
        let p = container_id_proto(&c);
        assert!(p.app_id.is_none(), "Java never writes app_id");
        assert_eq!(container_id_from_proto(&p), Some(c));
        assert_eq!(describe_container_id(&p), c.to_string());
        assert_eq!(
            container_id_from_proto(&ContainerIdProto {
                id: Some(1),
                ..Default::default()
            }),
            None
        );
        assert_eq!(
            node_id_from_proto(&node_id_proto(&NodeId::new("h", 9))),
            Some(NodeId::new("h", 9))
        );
        assert_eq!(node_id_from_proto(&NodeIdProto::default()), None);
        let attempt_only = ContainerIdProto {
            app_attempt_id: Some(attempt_id_proto(&attempt)),
            id: None,
            app_id: None,
        };
        assert_eq!(
            container_id_from_proto(&attempt_only),
            Some(ContainerId::new(attempt, 0)),
            "an absent id reads as Java's default"
        );
        let missing = ContainerIdProto {
            id: Some(1),
            ..Default::default()
        };
        assert!(
            describe_container_id(&missing).contains("ContainerIdProto.app_attempt_id is missing")
        );
        assert_eq!(
            app_id_from_proto(&app_id_proto(&attempt.app)),
            Some(attempt.app)
        );
        assert_eq!(
            attempt_id_from_proto(&ApplicationAttemptIdProto::default()),
            None
        );
    }
}
