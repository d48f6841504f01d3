//! Conversions between YARN wire records and Spindle's types for the
//! ApplicationMaster side.
//!
//! Ids and resources are converted by [`spindle_common::proto`] (Java's
//! shapes on the way out, Java's defaults on the way in); the functions here
//! add which record was being read, so that a refusal names it.

use hadoop_protos::yarn as pb;
use spindle_common::proto::{self, ProtoError};
use spindle_common::{ApplicationAttemptId, ApplicationId, ContainerId, NodeId, Resource};

use crate::error::AmError;

pub use spindle_common::proto::{
    app_id_to_pb, attempt_id_to_pb, container_id_to_pb, node_id_to_pb, resource_to_pb,
};

fn missing(what: &str, record: &str) -> AmError {
    AmError::Protocol(format!("{record} carries no {what}"))
}

fn invalid(what: &str, record: &str, e: ProtoError) -> AmError {
    AmError::Protocol(format!("{record} carries an unusable {what}: {e}"))
}

pub fn app_id_from_pb(
    p: Option<&pb::ApplicationIdProto>,
    record: &str,
) -> Result<ApplicationId, AmError> {
    p.map(proto::app_id_from_pb)
        .ok_or_else(|| missing("application id", record))
}

pub fn attempt_id_from_pb(
    p: Option<&pb::ApplicationAttemptIdProto>,
    record: &str,
) -> Result<ApplicationAttemptId, AmError> {
    let p = p.ok_or_else(|| missing("application attempt id", record))?;
    proto::attempt_id_from_pb(p).map_err(|e| invalid("application attempt id", record, e))
}

pub fn container_id_from_pb(
    p: Option<&pb::ContainerIdProto>,
    record: &str,
) -> Result<ContainerId, AmError> {
    let p = p.ok_or_else(|| missing("container id", record))?;
    proto::container_id_from_pb(p).map_err(|e| invalid("container id", record, e))
}

pub fn node_id_from_pb(p: Option<&pb::NodeIdProto>, record: &str) -> Result<NodeId, AmError> {
    let p = p.ok_or_else(|| missing("node id", record))?;
    proto::node_id_from_pb(p).map_err(|e| invalid("node id", record, e))
}

/// A resource the record may leave out: absent means none.
pub fn resource_from_pb(p: Option<&pb::ResourceProto>) -> Resource {
    p.map(proto::resource_from_pb).unwrap_or(Resource::ZERO)
}

pub fn priority_to_pb(priority: i32) -> pb::PriorityProto {
    pb::PriorityProto {
        priority: Some(priority),
    }
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
    fn refusals_name_the_record_and_the_field() {
        let err = container_id_from_pb(None, "ContainerStatusProto")
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("protocol error: ContainerStatusProto carries no container id")
        );
        let no_attempt = pb::ContainerIdProto {
            id: Some(1),
            ..Default::default()
        };
        let err = container_id_from_pb(Some(&no_attempt), "ContainerProto")
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some(
                "protocol error: ContainerProto carries an unusable container id: \
                 ContainerIdProto.app_attempt_id is missing"
            )
        );
        let no_host = pb::NodeIdProto {
            host: Some(String::new()),
            port: Some(1),
        };
        assert!(node_id_from_pb(Some(&no_host), "ContainerProto").is_err());
    }

    #[test]
    fn absent_resources_are_zero() {
        let p = resource_to_pb(Resource::new(2048, 3));
        assert_eq!(resource_from_pb(Some(&p)), Resource::new(2048, 3));
        assert_eq!(resource_from_pb(None), Resource::ZERO);
    }
}
