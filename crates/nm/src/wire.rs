//! Conversions between the agent's values and the ResourceTracker protocol
//! messages. This is the only place the NodeManager builds or reads them.

use hadoop_protos::yarn::{
    MasterKeyProto, NodeHealthStatusProto, NodeIdProto, NodeStatusProto, ResourceInformationProto,
    ResourceProto, ResourceTypesProto,
};
use spindle_common::{NodeId, Resource};

use crate::disks::NodeHealth;

/// A token-signing key the ResourceManager shares with its NodeManagers
/// (container-token and NM-token master keys).
#[derive(Clone, PartialEq, Eq)]
pub struct MasterKey {
    pub key_id: i32,
    pub bytes: Vec<u8>,
}

impl std::fmt::Debug for MasterKey {
    /// Key material stays out of logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MasterKey")
            .field("key_id", &self.key_id)
            .field("bytes", &format_args!("<{} bytes>", self.bytes.len()))
            .finish()
    }
}

impl MasterKey {
    /// `None` when the message carries no key id (the RM sends a key only
    /// when it rolls one).
    pub fn from_proto(p: &MasterKeyProto) -> Option<MasterKey> {
        Some(MasterKey {
            key_id: p.key_id?,
            bytes: p.bytes.clone().unwrap_or_default(),
        })
    }

    pub fn to_proto(&self) -> MasterKeyProto {
        MasterKeyProto {
            key_id: Some(self.key_id),
            bytes: Some(self.bytes.clone()),
        }
    }
}

pub fn node_id_proto(id: &NodeId) -> NodeIdProto {
    NodeIdProto {
        host: Some(id.host.clone()),
        port: Some(id.port),
    }
}

/// A resource as Java writes it: the scalar fields plus the same two
/// values in `resource_value_map` ("memory-mb" in "Mi", "vcores").
pub fn resource_proto(r: Resource) -> ResourceProto {
    let info = |key: &str, value: i64, units: &str| ResourceInformationProto {
        key: key.to_string(),
        value: Some(value),
        units: Some(units.to_string()),
        r#type: Some(ResourceTypesProto::Countable as i32),
        tags: Vec::new(),
        attributes: Vec::new(),
    };
    ResourceProto {
        memory: Some(r.memory_mb),
        virtual_cores: Some(r.vcores),
        resource_value_map: vec![
            info("memory-mb", r.memory_mb, "Mi"),
            info("vcores", i64::from(r.vcores), ""),
        ],
    }
}

/// Memory and vcores of a resource; absent fields count as 0.
pub fn resource_from_proto(p: &ResourceProto) -> Resource {
    Resource::new(p.memory.unwrap_or(0), p.virtual_cores.unwrap_or(0))
}

pub fn health_proto(h: &NodeHealth) -> NodeHealthStatusProto {
    NodeHealthStatusProto {
        is_node_healthy: Some(h.healthy),
        health_report: Some(h.report.clone()),
        last_health_report_time: Some(h.last_report_time_ms),
    }
}

/// The node status of a heartbeat (or of a registration, with id 0). No
/// containers run on this node yet, so there is nothing to report about them.
pub fn node_status(id: &NodeId, response_id: i32, health: &NodeHealth) -> NodeStatusProto {
    NodeStatusProto {
        node_id: Some(node_id_proto(id)),
        response_id: Some(response_id),
        containers_statuses: Vec::new(),
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
    }

    #[test]
    fn master_key_needs_an_id_and_hides_its_bytes() {
        assert_eq!(MasterKey::from_proto(&MasterKeyProto::default()), None);
        let k = MasterKey::from_proto(&MasterKeyProto {
            key_id: Some(7),
            bytes: Some(vec![1, 2, 3]),
        })
        .expect("has an id");
        assert_eq!(k.to_proto().bytes, Some(vec![1, 2, 3]));
        let shown = format!("{k:?}");
        assert!(
            shown.contains("<3 bytes>") && !shown.contains("[1, 2, 3]"),
            "{shown}"
        );
    }

    #[test]
    fn node_status_carries_health() {
        let health = NodeHealth {
            healthy: false,
            report: "1/1 local-dirs have errors".into(),
            last_report_time_ms: 99,
        };
        let s = node_status(&NodeId::new("h", 5), 4, &health);
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
}
