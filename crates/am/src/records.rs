//! Typed views of the YARN records an ApplicationMaster and a submitting
//! client work with: application states and reports, containers and their
//! statuses.

use hadoop_protos::yarn as pb;
use spindle_common::security::Token;
use spindle_common::{ApplicationAttemptId, ApplicationId, ContainerId, NodeId, Resource};

use crate::convert::{
    app_id_from_pb, attempt_id_from_pb, container_id_from_pb, container_id_to_pb, node_id_from_pb,
    node_id_to_pb, priority_to_pb, resource_from_pb, resource_to_pb,
};
use crate::error::AmError;

// Application states and final statuses are shared with the RM.
pub use spindle_common::states::{AppState, FinalStatus};

/// What `getApplicationReport` says about an application.
#[derive(Debug, Clone, PartialEq)]
pub struct AppReport {
    pub id: ApplicationId,
    pub name: String,
    pub app_type: String,
    pub user: String,
    pub queue: String,
    pub state: AppState,
    pub final_status: FinalStatus,
    pub diagnostics: String,
    /// Where the ApplicationMaster registered from (`N/A` before it did).
    pub host: String,
    pub rpc_port: i32,
    /// The RM's proxy URL for the AM's UI.
    pub tracking_url: String,
    /// The URL the AM registered.
    pub original_tracking_url: String,
    /// 0.0 ..= 1.0, as the AM last reported it.
    pub progress: f32,
    pub start_time_ms: i64,
    pub launch_time_ms: i64,
    pub finish_time_ms: i64,
    pub current_attempt: Option<ApplicationAttemptId>,
}

impl AppReport {
    pub fn from_pb(p: &pb::ApplicationReportProto) -> Result<AppReport, AmError> {
        const RECORD: &str = "ApplicationReportProto";
        let id = app_id_from_pb(p.application_id.as_ref(), RECORD)?;
        let state = p
            .yarn_application_state
            .and_then(spindle_common::proto::app_state_from_pb)
            .ok_or_else(|| {
                AmError::Protocol(format!(
                    "the report of {id} has no valid application state ({:?})",
                    p.yarn_application_state
                ))
            })?;
        Ok(AppReport {
            id,
            name: p.name.clone().unwrap_or_default(),
            app_type: p.application_type.clone().unwrap_or_default(),
            user: p.user.clone().unwrap_or_default(),
            queue: p.queue.clone().unwrap_or_default(),
            state,
            final_status: spindle_common::proto::final_status_from_pb(p.final_application_status),
            diagnostics: p.diagnostics.clone().unwrap_or_default(),
            host: p.host.clone().unwrap_or_default(),
            rpc_port: p.rpc_port.unwrap_or(-1),
            tracking_url: p.tracking_url.clone().unwrap_or_default(),
            original_tracking_url: p.original_tracking_url.clone().unwrap_or_default(),
            progress: p.progress.unwrap_or(0.0),
            start_time_ms: p.start_time.unwrap_or(0),
            launch_time_ms: p.launch_time.unwrap_or(0),
            finish_time_ms: p.finish_time.unwrap_or(0),
            current_attempt: p
                .current_application_attempt_id
                .as_ref()
                .and_then(|a| attempt_id_from_pb(Some(a), RECORD).ok()),
        })
    }
}

/// A container the ResourceManager granted (Hadoop's `Container`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Container {
    pub id: ContainerId,
    /// The NodeManager to start it on.
    pub node: NodeId,
    /// The NodeManager's web address, `host:port`.
    pub node_http_address: String,
    pub resource: Resource,
    pub priority: i32,
    /// The RM's authorisation for the NodeManager to start this container.
    pub token: Option<Token>,
    pub allocation_request_id: i64,
}

impl Container {
    pub fn from_pb(p: &pb::ContainerProto) -> Result<Container, AmError> {
        const RECORD: &str = "ContainerProto";
        Ok(Container {
            id: container_id_from_pb(p.id.as_ref(), RECORD)?,
            node: node_id_from_pb(p.node_id.as_ref(), RECORD)?,
            node_http_address: p.node_http_address.clone().unwrap_or_default(),
            resource: resource_from_pb(p.resource.as_ref()),
            priority: p.priority.as_ref().and_then(|x| x.priority).unwrap_or(0),
            token: p.container_token.as_ref().map(Token::from),
            allocation_request_id: p.allocation_request_id.unwrap_or(-1),
        })
    }

    pub fn to_pb(&self) -> pb::ContainerProto {
        pb::ContainerProto {
            id: Some(container_id_to_pb(&self.id)),
            node_id: Some(node_id_to_pb(&self.node)),
            node_http_address: Some(self.node_http_address.clone()),
            resource: Some(resource_to_pb(self.resource)),
            priority: Some(priority_to_pb(self.priority)),
            container_token: self.token.as_ref().map(Token::to_proto),
            execution_type: Some(pb::ExecutionTypeProto::Guaranteed as i32),
            allocation_request_id: Some(self.allocation_request_id),
            version: Some(0),
            allocation_tags: Vec::new(),
            exposed_ports: None,
        }
    }
}

/// `ContainerState`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ContainerState {
    New,
    Running,
    Complete,
}

impl ContainerState {
    fn from_pb(v: Option<i32>) -> Option<ContainerState> {
        match pb::ContainerStateProto::try_from(v?).ok()? {
            pb::ContainerStateProto::CNew => Some(ContainerState::New),
            pb::ContainerStateProto::CRunning => Some(ContainerState::Running),
            pb::ContainerStateProto::CComplete => Some(ContainerState::Complete),
        }
    }
}

/// Exit statuses YARN itself assigns (Hadoop's `ContainerExitStatus`).
pub use spindle_common::exit_status;

/// A container's state as the RM or a NodeManager reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerStatus {
    pub id: ContainerId,
    pub state: ContainerState,
    /// [`exit_status::INVALID`] until the container has completed.
    pub exit_status: i32,
    pub diagnostics: String,
    pub capability: Resource,
}

impl ContainerStatus {
    pub fn from_pb(p: &pb::ContainerStatusProto) -> Result<ContainerStatus, AmError> {
        const RECORD: &str = "ContainerStatusProto";
        let id = container_id_from_pb(p.container_id.as_ref(), RECORD)?;
        let state = ContainerState::from_pb(p.state).ok_or_else(|| {
            AmError::Protocol(format!(
                "the status of {id} has no valid container state ({:?})",
                p.state
            ))
        })?;
        Ok(ContainerStatus {
            id,
            state,
            exit_status: p.exit_status.unwrap_or(exit_status::INVALID),
            diagnostics: p.diagnostics.clone().unwrap_or_default(),
            capability: resource_from_pb(p.capability.as_ref()),
        })
    }
}

/// A node whose state changed, from an allocate answer's `updated_nodes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeUpdate {
    pub node: NodeId,
    /// Hadoop's node state name (`RUNNING`, `DECOMMISSIONING`, `LOST`, ...).
    pub state: String,
    pub http_address: String,
    pub rack: String,
}

impl NodeUpdate {
    pub fn from_pb(p: &pb::NodeReportProto) -> Result<NodeUpdate, AmError> {
        let state = p
            .node_state
            .and_then(|s| pb::NodeStateProto::try_from(s).ok())
            .map(|s| {
                s.as_str_name()
                    .strip_prefix("NS_")
                    .unwrap_or(s.as_str_name())
                    .to_string()
            })
            .unwrap_or_else(|| "UNKNOWN".to_string());
        Ok(NodeUpdate {
            node: node_id_from_pb(p.node_id.as_ref(), "NodeReportProto")?,
            state,
            http_address: p.http_address.clone().unwrap_or_default(),
            rack: p.rack_name.clone().unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_without_a_state_is_refused() {
        let p = pb::ApplicationReportProto {
            application_id: Some(crate::convert::app_id_to_pb(&ApplicationId::new(5, 1))),
            ..Default::default()
        };
        let err = AppReport::from_pb(&p).err().map(|e| e.to_string());
        assert!(
            err.as_deref()
                .is_some_and(|e| e.contains("no valid application state")),
            "{err:?}"
        );
    }

    #[test]
    fn containers_round_trip() {
        let attempt = ApplicationAttemptId::new(ApplicationId::new(9, 3), 1);
        let c = Container {
            id: ContainerId::new(attempt, 2),
            node: NodeId::new("n1", 45454),
            node_http_address: "n1:8042".into(),
            resource: Resource::new(512, 1),
            priority: 4,
            token: Some(Token::new(
                b"id".to_vec(),
                b"pw".to_vec(),
                "ContainerToken",
                "n1:45454",
            )),
            allocation_request_id: -1,
        };
        assert_eq!(Container::from_pb(&c.to_pb()).ok(), Some(c));
    }
}
