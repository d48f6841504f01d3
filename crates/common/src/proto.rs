//! The one place YARN's id and resource records are converted to and from
//! this crate's domain types.
//!
//! Writing (`*_to_pb`) never fails and produces what Hadoop's Java writers
//! produce:
//!
//! * a `ContainerIdProto` carries `app_attempt_id` and the 64-bit `id` (RM
//!   epoch in bits 40 and up) but never the deprecated `app_id`;
//! * a `ResourceProto` carries the `memory` and `virtual_cores` scalars *and*
//!   the same two values in `resource_value_map` ("memory-mb" in "Mi",
//!   "vcores" with empty units).
//!
//! Reading (`*_from_pb`) follows Java's readers: an absent scalar reads as
//! the proto default (0), while a record without a nested record that an id
//! cannot be formed without (an attempt id without its application id, a
//! container id without its attempt id) is refused with a [`ProtoError`]
//! naming the field. Node ids are also checked: a host is required and the
//! port must be a TCP port.
//!
//! Whether an *outer* record carries an id at all is the caller's question:
//! the callers know the field (`ContainerStatusProto.container_id`, ...), and
//! [`required`] turns its absence into a [`ProtoError`].

use hadoop_protos::yarn as pb;

use crate::ids::{ApplicationAttemptId, ApplicationId, ContainerId, NodeId};
use crate::resource::Resource;
use crate::states::{AppState, AttemptState, FinalStatus};

/// The resource-map key of memory (the scalar `memory` field).
pub const MEMORY_MB: &str = "memory-mb";
/// The units Java writes for memory: mebibytes.
pub const MEMORY_MB_UNITS: &str = "Mi";
/// The resource-map key of virtual cores (the scalar `virtual_cores` field).
pub const VCORES: &str = "vcores";
/// Virtual cores are a plain count.
pub const VCORES_UNITS: &str = "";

/// A record that cannot be turned into the value it should describe.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtoError {
    /// A field that must be present is absent, e.g.
    /// `"ContainerIdProto.app_attempt_id"`.
    #[error("{0} is missing")]
    Missing(&'static str),
    /// A field is present but its value is unusable.
    #[error("{field} is invalid: {reason}")]
    Invalid { field: &'static str, reason: String },
}

impl ProtoError {
    /// The field the error is about, as `Record.field`.
    pub fn field(&self) -> &'static str {
        match self {
            ProtoError::Missing(field) => field,
            ProtoError::Invalid { field, .. } => field,
        }
    }
}

/// `value`, or [`ProtoError::Missing`] naming `field` when it is absent.
///
/// ```
/// use spindle_common::proto::{required, ProtoError};
///
/// let absent: Option<&i32> = None;
/// assert_eq!(
///     required(absent, "ContainerStatusProto.container_id"),
///     Err(ProtoError::Missing("ContainerStatusProto.container_id"))
/// );
/// ```
pub fn required<'a, T>(value: Option<&'a T>, field: &'static str) -> Result<&'a T, ProtoError> {
    value.ok_or(ProtoError::Missing(field))
}

// ---------------------------------------------------------------------------
// ids

pub fn app_id_to_pb(id: &ApplicationId) -> pb::ApplicationIdProto {
    pb::ApplicationIdProto {
        id: Some(id.id),
        cluster_timestamp: Some(id.cluster_timestamp),
    }
}

/// An application id. Both fields are plain scalars, so every record names
/// some id: like Java, absent fields read as 0 (which then names no
/// application that exists).
pub fn app_id_from_pb(p: &pb::ApplicationIdProto) -> ApplicationId {
    ApplicationId::new(p.cluster_timestamp.unwrap_or(0), p.id.unwrap_or(0))
}

pub fn attempt_id_to_pb(id: &ApplicationAttemptId) -> pb::ApplicationAttemptIdProto {
    pb::ApplicationAttemptIdProto {
        application_id: Some(app_id_to_pb(&id.app)),
        attempt_id: Some(id.attempt_id),
    }
}

/// An application attempt id; the application id is required, an absent
/// attempt number reads as 0.
pub fn attempt_id_from_pb(
    p: &pb::ApplicationAttemptIdProto,
) -> Result<ApplicationAttemptId, ProtoError> {
    let app = required(
        p.application_id.as_ref(),
        "ApplicationAttemptIdProto.application_id",
    )?;
    Ok(ApplicationAttemptId::new(
        app_id_from_pb(app),
        p.attempt_id.unwrap_or(0),
    ))
}

/// A container id as Java writes it: the attempt and the raw 64-bit id
/// (epoch included), never the deprecated `app_id`.
pub fn container_id_to_pb(id: &ContainerId) -> pb::ContainerIdProto {
    pb::ContainerIdProto {
        app_id: None,
        app_attempt_id: Some(attempt_id_to_pb(&id.attempt)),
        id: Some(id.id),
    }
}

/// A container id from `app_attempt_id` and `id`. The deprecated `app_id`
/// is ignored whether present or not (the attempt already names the
/// application); an absent `id` reads as 0.
pub fn container_id_from_pb(p: &pb::ContainerIdProto) -> Result<ContainerId, ProtoError> {
    let attempt = required(p.app_attempt_id.as_ref(), "ContainerIdProto.app_attempt_id")?;
    Ok(ContainerId::new(
        attempt_id_from_pb(attempt)?,
        p.id.unwrap_or(0),
    ))
}

pub fn node_id_to_pb(id: &NodeId) -> pb::NodeIdProto {
    pb::NodeIdProto {
        host: Some(id.host.to_string()),
        port: Some(id.port),
    }
}

/// A node id. The host must be present and non-empty (a node without one
/// cannot be reached or matched); an absent port reads as 0, a present one
/// must lie in 0..=65535.
pub fn node_id_from_pb(p: &pb::NodeIdProto) -> Result<NodeId, ProtoError> {
    let host = match p.host.as_deref() {
        None => return Err(ProtoError::Missing("NodeIdProto.host")),
        Some("") => {
            return Err(ProtoError::Invalid {
                field: "NodeIdProto.host",
                reason: "the host name is empty".to_string(),
            })
        }
        Some(h) => h,
    };
    let port = p.port.unwrap_or(0);
    if !(0..=65535).contains(&port) {
        return Err(ProtoError::Invalid {
            field: "NodeIdProto.port",
            reason: format!("{port} is outside 0..=65535"),
        });
    }
    Ok(NodeId::new(host, port))
}

// ---------------------------------------------------------------------------
// resources

fn resource_information(key: &str, value: i64, units: &str) -> pb::ResourceInformationProto {
    pb::ResourceInformationProto {
        key: key.to_string(),
        value: Some(value),
        units: Some(units.to_string()),
        r#type: Some(pb::ResourceTypesProto::Countable as i32),
        tags: Vec::new(),
        attributes: Vec::new(),
    }
}

/// Memory and vcores, as scalars and in the resource-value map.
pub fn resource_to_pb(r: Resource) -> pb::ResourceProto {
    pb::ResourceProto {
        memory: Some(r.memory_mb),
        virtual_cores: Some(r.vcores),
        resource_value_map: vec![
            resource_information(MEMORY_MB, r.memory_mb, MEMORY_MB_UNITS),
            resource_information(VCORES, i64::from(r.vcores), VCORES_UNITS),
        ],
    }
}

/// Memory and vcores of a resource. Each comes from its scalar field when
/// present (what Java readers use), else from its resource-map entry
/// (converted to the type's units, which an entry without units is taken
/// to be in, as Java does), else is 0. A map entry whose units are unknown
/// or whose value does not fit the field is ignored.
pub fn resource_from_pb(p: &pb::ResourceProto) -> Resource {
    let from_map = |key: &str, units: &str| {
        let entry = p.resource_value_map.iter().find(|e| e.key == key)?;
        let value = entry.value.unwrap_or(0);
        match entry.units.as_deref() {
            None => Some(value),
            Some(from) => convert_units(value, from, units),
        }
    };
    let memory_mb = p
        .memory
        .or_else(|| from_map(MEMORY_MB, MEMORY_MB_UNITS))
        .unwrap_or(0);
    let vcores = p
        .virtual_cores
        .or_else(|| from_map(VCORES, VCORES_UNITS).and_then(|v| i32::try_from(v).ok()))
        .unwrap_or(0);
    Resource::new(memory_mb, vcores)
}

/// The resource types Spindle schedules (memory and vcores), as Hadoop
/// describes them in `ResourceTypeInfoProto`s.
pub fn resource_types_to_pb() -> Vec<pb::ResourceTypeInfoProto> {
    let info = |name: &str, units: &str| pb::ResourceTypeInfoProto {
        name: name.to_string(),
        units: Some(units.to_string()),
        r#type: Some(pb::ResourceTypesProto::Countable as i32),
    };
    vec![info(MEMORY_MB, MEMORY_MB_UNITS), info(VCORES, VCORES_UNITS)]
}

/// An application state as `YarnApplicationStateProto`.
pub fn app_state_to_pb(s: AppState) -> pb::YarnApplicationStateProto {
    use pb::YarnApplicationStateProto as P;
    match s {
        AppState::New => P::New,
        AppState::NewSaving => P::NewSaving,
        AppState::Submitted => P::Submitted,
        AppState::Accepted => P::Accepted,
        AppState::Running => P::Running,
        AppState::Finished => P::Finished,
        AppState::Failed => P::Failed,
        AppState::Killed => P::Killed,
    }
}

/// A `YarnApplicationStateProto` value; `None` when it is not one.
pub fn app_state_from_pb(v: i32) -> Option<AppState> {
    use pb::YarnApplicationStateProto as P;
    Some(match P::try_from(v).ok()? {
        P::New => AppState::New,
        P::NewSaving => AppState::NewSaving,
        P::Submitted => AppState::Submitted,
        P::Accepted => AppState::Accepted,
        P::Running => AppState::Running,
        P::Finished => AppState::Finished,
        P::Failed => AppState::Failed,
        P::Killed => AppState::Killed,
    })
}

/// A final status as `FinalApplicationStatusProto`.
pub fn final_status_to_pb(s: FinalStatus) -> pb::FinalApplicationStatusProto {
    use pb::FinalApplicationStatusProto as P;
    match s {
        FinalStatus::Undefined => P::AppUndefined,
        FinalStatus::Succeeded => P::AppSucceeded,
        FinalStatus::Failed => P::AppFailed,
        FinalStatus::Killed => P::AppKilled,
        FinalStatus::Ended => P::AppEnded,
    }
}

/// A `FinalApplicationStatusProto` value; absent or unknown values read as
/// UNDEFINED, as Java's reader does.
pub fn final_status_from_pb(v: Option<i32>) -> FinalStatus {
    use pb::FinalApplicationStatusProto as P;
    match v.and_then(|v| P::try_from(v).ok()) {
        Some(P::AppSucceeded) => FinalStatus::Succeeded,
        Some(P::AppFailed) => FinalStatus::Failed,
        Some(P::AppKilled) => FinalStatus::Killed,
        Some(P::AppEnded) => FinalStatus::Ended,
        Some(P::AppUndefined) | None => FinalStatus::Undefined,
    }
}

/// An attempt state as `YarnApplicationAttemptStateProto`. Spindle's
/// attempts never rest in NEW, SUBMITTED or the saving states, so those are
/// not produced.
pub fn attempt_state_to_pb(s: AttemptState) -> pb::YarnApplicationAttemptStateProto {
    use pb::YarnApplicationAttemptStateProto as P;
    match s {
        AttemptState::Scheduled => P::AppAttemptScheduled,
        AttemptState::Allocated => P::AppAttemptAllocated,
        AttemptState::Launched => P::AppAttemptLaunched,
        AttemptState::Running => P::AppAttemptRunning,
        AttemptState::Finishing => P::AppAttemptFinishing,
        AttemptState::Finished => P::AppAttemptFinished,
        AttemptState::Failed => P::AppAttemptFailed,
        AttemptState::Killed => P::AppAttemptKilled,
    }
}

/// The size of one `unit` as a fraction (numerator, denominator) of the
/// plain unit "". These are the units Hadoop's resource types accept.
fn unit_scale(unit: &str) -> Option<(i128, i128)> {
    const K: i128 = 1000;
    const KI: i128 = 1024;
    Some(match unit {
        "p" => (1, K.pow(4)),
        "n" => (1, K.pow(3)),
        "u" => (1, K.pow(2)),
        "m" => (1, K),
        "" => (1, 1),
        "k" => (K, 1),
        "M" => (K.pow(2), 1),
        "G" => (K.pow(3), 1),
        "T" => (K.pow(4), 1),
        "P" => (K.pow(5), 1),
        "Ki" => (KI, 1),
        "Mi" => (KI.pow(2), 1),
        "Gi" => (KI.pow(3), 1),
        "Ti" => (KI.pow(4), 1),
        "Pi" => (KI.pow(5), 1),
        _ => return None,
    })
}

/// `value` in `from` units expressed in `to` units, truncated toward zero;
/// `None` for an unknown unit or a result outside i64.
fn convert_units(value: i64, from: &str, to: &str) -> Option<i64> {
    if from == to {
        return Some(value);
    }
    let (from_num, from_den) = unit_scale(from)?;
    let (to_num, to_den) = unit_scale(to)?;
    let scaled = i128::from(value)
        .checked_mul(from_num)?
        .checked_mul(to_den)?;
    // Both factors are at most 10^12 * 2^50: no overflow, never zero.
    i64::try_from(scaled / (from_den * to_num)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_round_trip_through_their_protos() {
        for s in AppState::ALL {
            assert_eq!(app_state_from_pb(app_state_to_pb(s) as i32), Some(s));
        }
        assert_eq!(app_state_from_pb(99), None);
        for s in FinalStatus::ALL {
            assert_eq!(final_status_from_pb(Some(final_status_to_pb(s) as i32)), s);
        }
        assert_eq!(final_status_from_pb(None), FinalStatus::Undefined);
        assert_eq!(final_status_from_pb(Some(42)), FinalStatus::Undefined);
        // The wire values Java reads.
        assert_eq!(app_state_to_pb(AppState::Running) as i32, 5);
        assert_eq!(app_state_from_pb(0), None);
        assert_eq!(final_status_from_pb(Some(1)), FinalStatus::Succeeded);
        assert_eq!(final_status_to_pb(FinalStatus::Failed) as i32, 2);
        assert_eq!(
            attempt_state_to_pb(AttemptState::Finishing),
            pb::YarnApplicationAttemptStateProto::AppAttemptFinishing
        );
    }

    fn attempt() -> ApplicationAttemptId {
        ApplicationAttemptId::new(ApplicationId::new(1_700_000_000_000, 7), 2)
    }

    #[test]
    fn ids_round_trip() {
        let app = ApplicationId::new(1_700_000_000_000, 42);
        assert_eq!(app_id_from_pb(&app_id_to_pb(&app)), app);
        let a = attempt();
        assert_eq!(attempt_id_from_pb(&attempt_id_to_pb(&a)), Ok(a));
        let node = NodeId::new("worker-3.example.internal", 8041);
        assert_eq!(node_id_from_pb(&node_id_to_pb(&node)), Ok(node));
        let edge = NodeId::new("h", 65535);
        assert_eq!(node_id_from_pb(&node_id_to_pb(&edge)), Ok(edge));
    }

    #[test]
    fn container_ids_keep_the_epoch_and_omit_app_id() {
        let c = ContainerId::with_epoch(attempt(), 3, 12);
        let p = container_id_to_pb(&c);
        assert_eq!(p.app_id, None, "Java never writes app_id");
        assert_eq!(p.id, Some((3 << 40) | 12));
        let back = container_id_from_pb(&p).expect("complete id");
        assert_eq!(back, c);
        assert_eq!(back.epoch(), 3);
        assert_eq!(
            back.to_string(),
            "container_e03_1700000000000_0007_02_000012"
        );
    }

    #[test]
    fn container_ids_tolerate_the_deprecated_app_id() {
        let c = ContainerId::with_epoch(attempt(), 0, 1);
        let mut p = container_id_to_pb(&c);
        p.app_id = Some(app_id_to_pb(&c.attempt.app));
        assert_eq!(container_id_from_pb(&p), Ok(c));
        // The attempt is authoritative; the deprecated field is not consulted.
        p.app_id = Some(pb::ApplicationIdProto {
            id: Some(999),
            cluster_timestamp: Some(1),
        });
        assert_eq!(container_id_from_pb(&p), Ok(c));
    }

    #[test]
    fn missing_nested_records_are_named() {
        let only_app_id = pb::ContainerIdProto {
            app_id: Some(app_id_to_pb(&attempt().app)),
            app_attempt_id: None,
            id: Some(1),
        };
        let err = container_id_from_pb(&only_app_id).expect_err("no attempt");
        assert_eq!(err, ProtoError::Missing("ContainerIdProto.app_attempt_id"));
        assert_eq!(
            err.to_string(),
            "ContainerIdProto.app_attempt_id is missing"
        );

        let no_app = pb::ContainerIdProto {
            app_attempt_id: Some(pb::ApplicationAttemptIdProto {
                application_id: None,
                attempt_id: Some(1),
            }),
            ..Default::default()
        };
        assert_eq!(
            container_id_from_pb(&no_app).map_err(|e| e.field()),
            Err("ApplicationAttemptIdProto.application_id")
        );
    }

    #[test]
    fn absent_scalars_read_as_java_defaults() {
        assert_eq!(
            app_id_from_pb(&pb::ApplicationIdProto::default()),
            ApplicationId::new(0, 0)
        );
        let p = pb::ContainerIdProto {
            app_attempt_id: Some(pb::ApplicationAttemptIdProto {
                application_id: Some(pb::ApplicationIdProto {
                    id: Some(5),
                    cluster_timestamp: Some(9),
                }),
                attempt_id: None,
            }),
            ..Default::default()
        };
        assert_eq!(
            container_id_from_pb(&p),
            Ok(ContainerId::new(
                ApplicationAttemptId::new(ApplicationId::new(9, 5), 0),
                0
            ))
        );
        let no_port = pb::NodeIdProto {
            host: Some("h".into()),
            port: None,
        };
        assert_eq!(node_id_from_pb(&no_port), Ok(NodeId::new("h", 0)));
    }

    #[test]
    fn node_ids_need_a_host_and_a_tcp_port() {
        let no_host = pb::NodeIdProto {
            host: None,
            port: Some(8041),
        };
        assert_eq!(
            node_id_from_pb(&no_host),
            Err(ProtoError::Missing("NodeIdProto.host"))
        );
        let empty_host = pb::NodeIdProto {
            host: Some(String::new()),
            port: Some(8041),
        };
        assert_eq!(
            node_id_from_pb(&empty_host).map_err(|e| e.field()),
            Err("NodeIdProto.host")
        );
        for port in [-1, 65536, i32::MAX] {
            let p = pb::NodeIdProto {
                host: Some("h".into()),
                port: Some(port),
            };
            let err = node_id_from_pb(&p).expect_err("port out of range");
            assert_eq!(
                err.to_string(),
                format!("NodeIdProto.port is invalid: {port} is outside 0..=65535")
            );
        }
    }

    #[test]
    fn resources_are_written_as_java_writes_them() {
        let p = resource_to_pb(Resource::new(4096, 3));
        assert_eq!(p.memory, Some(4096));
        assert_eq!(p.virtual_cores, Some(3));
        let entries: Vec<_> = p
            .resource_value_map
            .iter()
            .map(|e| (e.key.as_str(), e.value, e.units.as_deref(), e.r#type))
            .collect();
        let countable = Some(pb::ResourceTypesProto::Countable as i32);
        assert_eq!(
            entries,
            [
                ("memory-mb", Some(4096), Some("Mi"), countable),
                ("vcores", Some(3), Some(""), countable)
            ]
        );
        assert_eq!(resource_from_pb(&p), Resource::new(4096, 3));
    }

    #[test]
    fn resource_scalars_win_over_the_map() {
        let mut p = resource_to_pb(Resource::new(1024, 1));
        p.memory = Some(2048);
        p.virtual_cores = Some(2);
        assert_eq!(resource_from_pb(&p), Resource::new(2048, 2));
    }

    #[test]
    fn resource_map_fills_in_absent_scalars() {
        let map_only = pb::ResourceProto {
            memory: None,
            virtual_cores: None,
            resource_value_map: resource_to_pb(Resource::new(2048, 3)).resource_value_map,
        };
        assert_eq!(resource_from_pb(&map_only), Resource::new(2048, 3));

        // One scalar present, the other only in the map.
        let mixed = pb::ResourceProto {
            memory: Some(512),
            ..map_only.clone()
        };
        assert_eq!(resource_from_pb(&mixed), Resource::new(512, 3));

        // Units other than Mi are converted; absent units mean the default.
        let converted = pb::ResourceProto {
            memory: None,
            virtual_cores: None,
            resource_value_map: vec![
                resource_information(MEMORY_MB, 2, "Gi"),
                pb::ResourceInformationProto {
                    units: None,
                    ..resource_information(VCORES, 4, "")
                },
            ],
        };
        assert_eq!(resource_from_pb(&converted), Resource::new(2048, 4));

        // Neither a scalar nor a usable entry: 0.
        let unusable = pb::ResourceProto {
            memory: None,
            virtual_cores: None,
            resource_value_map: vec![
                resource_information(MEMORY_MB, 7, "furlongs"),
                resource_information(VCORES, i64::from(i32::MAX) + 1, ""),
                resource_information("yarn.io/gpu", 2, ""),
            ],
        };
        assert_eq!(resource_from_pb(&unusable), Resource::ZERO);
        assert_eq!(
            resource_from_pb(&pb::ResourceProto::default()),
            Resource::ZERO
        );
    }

    #[test]
    fn unit_conversion_truncates_and_refuses_overflow() {
        assert_eq!(convert_units(1536, "Ki", "Mi"), Some(1));
        assert_eq!(convert_units(3, "G", "Mi"), Some(2861));
        assert_eq!(convert_units(1, "Mi", "Mi"), Some(1));
        assert_eq!(convert_units(i64::MAX, "Pi", "Ki"), None);
        assert_eq!(convert_units(i64::MAX, "P", "p"), None);
        assert_eq!(convert_units(1, "Mi", "bogus"), None);
    }

    #[test]
    fn resource_types_name_memory_and_vcores() {
        let types: Vec<_> = resource_types_to_pb()
            .into_iter()
            .map(|t| (t.name, t.units))
            .collect();
        assert_eq!(
            types,
            [
                ("memory-mb".to_string(), Some("Mi".to_string())),
                ("vcores".to_string(), Some(String::new()))
            ]
        );
    }

    #[test]
    fn required_names_the_field() {
        let p = pb::ApplicationIdProto::default();
        assert_eq!(required(Some(&p), "X.y"), Ok(&p));
        let err = required::<pb::ApplicationIdProto>(None, "ContainerStatusProto.container_id")
            .expect_err("absent");
        assert_eq!(err.field(), "ContainerStatusProto.container_id");
        assert_eq!(
            err.to_string(),
            "ContainerStatusProto.container_id is missing"
        );
    }
}
