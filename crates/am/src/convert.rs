//! Conversions between YARN wire records and Spindle's id and resource types.
//!
//! Outgoing records are written the way Java writers write them (a
//! `ContainerIdProto` without the deprecated `app_id`, a `ResourceProto` with
//! both the scalar fields and the resource-value map). Incoming records are
//! read leniently where Hadoop is lenient and refused, with a message naming
//! the record, where a required field is missing.

use hadoop_protos::common::TokenProto;
use hadoop_protos::yarn as pb;
use spindle_common::security::Token;
use spindle_common::{ApplicationAttemptId, ApplicationId, ContainerId, NodeId, Resource};

use crate::error::AmError;

fn missing(what: &str, record: &str) -> AmError {
    AmError::Protocol(format!("{record} carries no {what}"))
}

pub fn app_id_to_pb(id: &ApplicationId) -> pb::ApplicationIdProto {
    pb::ApplicationIdProto {
        id: Some(id.id),
        cluster_timestamp: Some(id.cluster_timestamp),
    }
}

pub fn app_id_from_pb(
    p: Option<&pb::ApplicationIdProto>,
    record: &str,
) -> Result<ApplicationId, AmError> {
    let p = p.ok_or_else(|| missing("application id", record))?;
    match (p.cluster_timestamp, p.id) {
        (Some(ts), Some(id)) => Ok(ApplicationId::new(ts, id)),
        _ => Err(missing("complete application id", record)),
    }
}

pub fn attempt_id_to_pb(id: &ApplicationAttemptId) -> pb::ApplicationAttemptIdProto {
    pb::ApplicationAttemptIdProto {
        application_id: Some(app_id_to_pb(&id.app)),
        attempt_id: Some(id.attempt_id),
    }
}

pub fn attempt_id_from_pb(
    p: Option<&pb::ApplicationAttemptIdProto>,
    record: &str,
) -> Result<ApplicationAttemptId, AmError> {
    let p = p.ok_or_else(|| missing("application attempt id", record))?;
    let app = app_id_from_pb(p.application_id.as_ref(), record)?;
    let attempt = p
        .attempt_id
        .ok_or_else(|| missing("attempt number", record))?;
    Ok(ApplicationAttemptId::new(app, attempt))
}

/// Like Java's `ContainerIdPBImpl`: the attempt and the 64-bit id only.
pub fn container_id_to_pb(id: &ContainerId) -> pb::ContainerIdProto {
    pb::ContainerIdProto {
        app_id: None,
        app_attempt_id: Some(attempt_id_to_pb(&id.attempt)),
        id: Some(id.id),
    }
}

pub fn container_id_from_pb(
    p: Option<&pb::ContainerIdProto>,
    record: &str,
) -> Result<ContainerId, AmError> {
    let p = p.ok_or_else(|| missing("container id", record))?;
    let attempt = attempt_id_from_pb(p.app_attempt_id.as_ref(), record)?;
    let id = p.id.ok_or_else(|| missing("container number", record))?;
    Ok(ContainerId::new(attempt, id))
}

pub fn node_id_to_pb(id: &NodeId) -> pb::NodeIdProto {
    pb::NodeIdProto {
        host: Some(id.host.clone()),
        port: Some(id.port),
    }
}

pub fn node_id_from_pb(p: Option<&pb::NodeIdProto>, record: &str) -> Result<NodeId, AmError> {
    let p = p.ok_or_else(|| missing("node id", record))?;
    let host = p
        .host
        .clone()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| missing("node host", record))?;
    let port = p.port.ok_or_else(|| missing("node port", record))?;
    Ok(NodeId::new(host, port))
}

/// The resource-value map keys and units Java writes for the two built-in types.
const MEMORY_KEY: &str = "memory-mb";
const MEMORY_UNITS: &str = "Mi";
const VCORES_KEY: &str = "vcores";

/// Memory and vcores, as scalars and in the resource-value map (as Java writes them).
pub fn resource_to_pb(r: Resource) -> pb::ResourceProto {
    let info = |key: &str, value: i64, units: &str| pb::ResourceInformationProto {
        key: key.to_string(),
        value: Some(value),
        units: Some(units.to_string()),
        r#type: Some(pb::ResourceTypesProto::Countable as i32),
        tags: Vec::new(),
        attributes: Vec::new(),
    };
    pb::ResourceProto {
        memory: Some(r.memory_mb),
        virtual_cores: Some(r.vcores),
        resource_value_map: vec![
            info(MEMORY_KEY, r.memory_mb, MEMORY_UNITS),
            info(VCORES_KEY, i64::from(r.vcores), ""),
        ],
    }
}

/// The scalar fields win; the map fills in a scalar that is absent. Memory in
/// the map is assumed to be in MB ("Mi"), the only unit Java writes for it.
pub fn resource_from_pb(p: Option<&pb::ResourceProto>) -> Resource {
    let Some(p) = p else {
        return Resource::ZERO;
    };
    let from_map = |key: &str| {
        p.resource_value_map
            .iter()
            .find(|i| i.key == key)
            .and_then(|i| i.value)
    };
    let memory_mb = p.memory.or_else(|| from_map(MEMORY_KEY)).unwrap_or(0);
    let vcores = p
        .virtual_cores
        .or_else(|| from_map(VCORES_KEY).and_then(|v| i32::try_from(v).ok()))
        .unwrap_or(0);
    Resource::new(memory_mb, vcores)
}

pub fn priority_to_pb(priority: i32) -> pb::PriorityProto {
    pb::PriorityProto {
        priority: Some(priority),
    }
}

pub fn token_from_pb(p: &TokenProto) -> Token {
    Token::from_proto(p.clone())
}

pub fn string_map(pairs: &[(String, String)]) -> Vec<pb::StringStringMapProto> {
    pairs
        .iter()
        .map(|(k, v)| pb::StringStringMapProto {
            key: Some(k.clone()),
            value: Some(v.clone()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_container_ids_omit_app_id() {
        let attempt = ApplicationAttemptId::new(ApplicationId::new(1_700_000_000_000, 7), 2);
        let cid = ContainerId::with_epoch(attempt, 3, 12);
        let p = container_id_to_pb(&cid);
        assert!(p.app_id.is_none());
        assert_eq!(container_id_from_pb(Some(&p), "test").ok(), Some(cid));
        let node = NodeId::new("h1", 8041);
        assert_eq!(
            node_id_from_pb(Some(&node_id_to_pb(&node)), "test").ok(),
            Some(node)
        );
    }

    #[test]
    fn missing_fields_are_named() {
        let err = container_id_from_pb(None, "ContainerStatusProto")
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("protocol error: ContainerStatusProto carries no container id")
        );
        let no_host = pb::NodeIdProto {
            host: Some(String::new()),
            port: Some(1),
        };
        assert!(node_id_from_pb(Some(&no_host), "ContainerProto").is_err());
    }

    #[test]
    fn resources_carry_scalars_and_the_value_map() {
        let p = resource_to_pb(Resource::new(2048, 3));
        assert_eq!(p.memory, Some(2048));
        assert_eq!(p.virtual_cores, Some(3));
        let keys: Vec<_> = p
            .resource_value_map
            .iter()
            .map(|i| i.key.as_str())
            .collect();
        assert_eq!(keys, ["memory-mb", "vcores"]);
        assert_eq!(resource_from_pb(Some(&p)), Resource::new(2048, 3));
        // A writer that only fills the map is still understood.
        let map_only = pb::ResourceProto {
            memory: None,
            virtual_cores: None,
            resource_value_map: p.resource_value_map.clone(),
        };
        assert_eq!(resource_from_pb(Some(&map_only)), Resource::new(2048, 3));
        assert_eq!(resource_from_pb(None), Resource::ZERO);
    }
}
