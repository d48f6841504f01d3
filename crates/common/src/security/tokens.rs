//! Tokens and the YARN token identifiers.
//!
//! A token is an opaque identifier plus a password that is an HMAC of exactly those
//! identifier bytes (see [`super::secret`]). YARN identifiers are protobuf messages
//! encoded *without* a length prefix. Whoever verifies a token must compute the HMAC
//! over the bytes as received, never over a re-encoding, so the types here only
//! describe what an identifier says; the bytes travel separately.
//!
//! | kind | identifier | authenticates as |
//! |---|---|---|
//! | [`kind::AM_RM`] | [`AmRmTokenIdentifier`] | the application attempt id |
//! | [`kind::NM`] | [`NmTokenIdentifier`] | the application attempt id |
//! | [`kind::CONTAINER`] | [`ContainerTokenIdentifier`] | the container id |

use std::fmt;

use hadoop_protos::common::TokenProto;
use hadoop_protos::yarn::{
    AmrmTokenIdentifierProto, ApplicationAttemptIdProto, ContainerIdProto,
    ContainerTokenIdentifierProto, ContainerTypeProto, ExecutionTypeProto,
    LogAggregationContextProto, NmTokenIdentifierProto, NodeIdProto, PriorityProto,
    YarnDelegationTokenIdentifierProto,
};
use prost::Message;

use crate::ids::{ApplicationAttemptId, ContainerId, NodeId};
use crate::proto;
use crate::resource::Resource;

/// Token kinds (Hadoop's `Token.kind`, a Text).
pub mod kind {
    /// Lets an ApplicationMaster attempt call the scheduler (ApplicationMasterProtocol).
    pub const AM_RM: &str = "YARN_AM_RM_TOKEN";
    /// Lets an ApplicationMaster attempt call one NodeManager (ContainerManagementProtocol).
    pub const NM: &str = "NMToken";
    /// The RM's authorisation to start one container on one node.
    pub const CONTAINER: &str = "ContainerToken";
    /// Lets its owner (or whoever it was handed to) call the RM's client port
    /// without a Kerberos ticket (ApplicationClientProtocol).
    pub const RM_DELEGATION: &str = "RM_DELEGATION_TOKEN";
}

/// A token: identifier bytes, password bytes, kind and service (Hadoop's
/// `Token`), the one type every crate holds a token in: read from the wire
/// and written back with [`Token::from_proto`] and [`Token::to_proto`]
/// (`TokenProto`), and in Hadoop's Writable form (credentials, a job's
/// shuffle service data) with `write_writable` and `read_writable`, beside
/// the Writable primitives in [`super::credentials`]. The IPC client
/// presents it as it is.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Token {
    pub identifier: Vec<u8>,
    pub password: Vec<u8>,
    pub kind: String,
    /// The address the token is for (`ip:port`), or empty.
    pub service: String,
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Token")
            .field("kind", &self.kind)
            .field("service", &self.service)
            .field("identifier_len", &self.identifier.len())
            .field("password", &"<redacted>")
            .finish()
    }
}

impl Token {
    pub fn new(
        identifier: Vec<u8>,
        password: Vec<u8>,
        kind: impl Into<String>,
        service: impl Into<String>,
    ) -> Token {
        Token {
            identifier,
            password,
            kind: kind.into(),
            service: service.into(),
        }
    }

    pub fn to_proto(&self) -> TokenProto {
        TokenProto {
            identifier: self.identifier.clone(),
            password: self.password.clone(),
            kind: self.kind.clone(),
            service: self.service.clone(),
        }
    }

    pub fn from_proto(proto: TokenProto) -> Token {
        Token {
            identifier: proto.identifier,
            password: proto.password,
            kind: proto.kind,
            service: proto.service,
        }
    }
}

impl From<TokenProto> for Token {
    fn from(proto: TokenProto) -> Token {
        Token::from_proto(proto)
    }
}

impl From<&TokenProto> for Token {
    /// A copy of a token in a record the caller keeps (a container's, an
    /// NMToken in an allocate response).
    fn from(proto: &TokenProto) -> Token {
        Token::from_proto(proto.clone())
    }
}

impl From<&Token> for TokenProto {
    fn from(token: &Token) -> TokenProto {
        token.to_proto()
    }
}

/// An identifier that cannot be decoded or lacks a required field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("malformed {kind} identifier: {reason}")]
    Malformed { kind: &'static str, reason: String },
    #[error("{kind} identifier has no {field}")]
    Missing {
        kind: &'static str,
        field: &'static str,
    },
    #[error("unsupported token kind '{0}'")]
    UnknownKind(String),
}

// ---------------------------------------------------------------------------------
// The ids inside identifiers (the conversions themselves live in `crate::proto`)

/// The attempt id of a `kind` identifier, which it must carry.
fn attempt_from(
    p: Option<&ApplicationAttemptIdProto>,
    kind: &'static str,
) -> Result<ApplicationAttemptId, TokenError> {
    let p = p.ok_or(TokenError::Missing {
        kind,
        field: "application attempt id",
    })?;
    proto::attempt_id_from_pb(p).map_err(|e| malformed(kind, e))
}

fn container_from(
    p: Option<&ContainerIdProto>,
    kind: &'static str,
) -> Result<ContainerId, TokenError> {
    let p = p.ok_or(TokenError::Missing {
        kind,
        field: "container id",
    })?;
    proto::container_id_from_pb(p).map_err(|e| malformed(kind, e))
}

fn node_from(p: Option<&NodeIdProto>, kind: &'static str) -> Result<NodeId, TokenError> {
    let p = p.ok_or(TokenError::Missing {
        kind,
        field: "node id",
    })?;
    proto::node_id_from_pb(p).map_err(|e| malformed(kind, e))
}

/// A nested id the identifier cannot be read without.
fn malformed(kind: &'static str, e: proto::ProtoError) -> TokenError {
    match e {
        proto::ProtoError::Missing(field) => TokenError::Missing { kind, field },
        invalid @ proto::ProtoError::Invalid { .. } => TokenError::Malformed {
            kind,
            reason: invalid.to_string(),
        },
    }
}

fn decode<M: Message + Default>(kind: &'static str, bytes: &[u8]) -> Result<M, TokenError> {
    M::decode(bytes).map_err(|e| TokenError::Malformed {
        kind,
        reason: e.to_string(),
    })
}

// ---------------------------------------------------------------------------------
// AMRMToken

/// The identifier of an AMRMToken (`AMRMTokenIdentifierProto`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AmRmTokenIdentifier {
    pub attempt: ApplicationAttemptId,
    /// The id of the master key the password was made with.
    pub key_id: i32,
}

impl AmRmTokenIdentifier {
    const KIND: &'static str = "AMRMToken";

    pub fn new(attempt: ApplicationAttemptId, key_id: i32) -> Self {
        AmRmTokenIdentifier { attempt, key_id }
    }

    pub fn to_proto(&self) -> AmrmTokenIdentifierProto {
        AmrmTokenIdentifierProto {
            app_attempt_id: Some(proto::attempt_id_to_pb(&self.attempt)),
            key_id: Some(self.key_id),
        }
    }

    pub fn from_proto(p: &AmrmTokenIdentifierProto) -> Result<Self, TokenError> {
        Ok(AmRmTokenIdentifier {
            attempt: attempt_from(p.app_attempt_id.as_ref(), Self::KIND)?,
            key_id: p.key_id(),
        })
    }

    /// The identifier bytes (the proto, not length-delimited).
    pub fn encode(&self) -> Vec<u8> {
        self.to_proto().encode_to_vec()
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, TokenError> {
        Self::from_proto(&decode(Self::KIND, bytes)?)
    }

    /// The user a connection authenticated with this token acts as.
    pub fn user(&self) -> String {
        self.attempt.to_string()
    }
}

// ---------------------------------------------------------------------------------
// RM delegation token

/// The identifier of an RM delegation token (Hadoop's
/// `RMDelegationTokenIdentifier`, written as `YARNDelegationTokenIdentifierProto`
/// without a length prefix).
///
/// `owner` is the full name of the user it was issued to (a Kerberos
/// principal, as Hadoop's `UserGroupInformation.getUserName`), `renewer` the
/// short name of who may renew it (empty: nobody), `real_user` the
/// authenticated user when the owner was impersonated.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct RmDelegationTokenIdentifier {
    pub owner: String,
    pub renewer: String,
    pub real_user: String,
    /// Wall-clock milliseconds.
    pub issue_date: i64,
    /// Wall-clock milliseconds after which no renewal extends it.
    pub max_date: i64,
    pub sequence_number: i32,
    pub master_key_id: i32,
}

impl RmDelegationTokenIdentifier {
    pub fn to_proto(&self) -> YarnDelegationTokenIdentifierProto {
        YarnDelegationTokenIdentifierProto {
            owner: Some(self.owner.clone()),
            renewer: Some(self.renewer.clone()),
            // Hadoop leaves a missing real user out.
            real_user: Some(self.real_user.clone()).filter(|r| !r.is_empty()),
            issue_date: Some(self.issue_date),
            max_date: Some(self.max_date),
            sequence_number: Some(self.sequence_number),
            master_key_id: Some(self.master_key_id),
        }
    }

    pub fn from_proto(p: &YarnDelegationTokenIdentifierProto) -> Self {
        RmDelegationTokenIdentifier {
            owner: p.owner().to_string(),
            renewer: p.renewer().to_string(),
            real_user: p.real_user().to_string(),
            issue_date: p.issue_date(),
            max_date: p.max_date(),
            sequence_number: p.sequence_number(),
            master_key_id: p.master_key_id(),
        }
    }

    /// The identifier bytes (the proto, not length-delimited).
    pub fn encode(&self) -> Vec<u8> {
        self.to_proto().encode_to_vec()
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, TokenError> {
        Ok(Self::from_proto(&decode(kind::RM_DELEGATION, bytes)?))
    }

    /// The impersonating user, when the owner was impersonated: a token
    /// whose real user is empty or the owner itself has none.
    pub fn real_user(&self) -> Option<&str> {
        Some(self.real_user.as_str()).filter(|r| !r.is_empty() && *r != self.owner)
    }
}

/// Hadoop's words for a delegation token in its messages
/// (`AbstractDelegationTokenSecretManager.formatTokenId` over
/// `YARNDelegationTokenIdentifier.toString`): every field, in parentheses.
impl fmt::Display for RmDelegationTokenIdentifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "(owner={}, renewer={}, realUser={}, issueDate={}, maxDate={}, \
             sequenceNumber={}, masterKeyId={})",
            self.owner,
            self.renewer,
            self.real_user,
            self.issue_date,
            self.max_date,
            self.sequence_number,
            self.master_key_id
        )
    }
}

// ---------------------------------------------------------------------------------
// NMToken

/// The identifier of an NMToken (`NMTokenIdentifierProto`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NmTokenIdentifier {
    pub attempt: ApplicationAttemptId,
    /// The node the token is valid for.
    pub node: NodeId,
    /// The user who submitted the application.
    pub app_submitter: String,
    pub key_id: i32,
}

impl NmTokenIdentifier {
    const KIND: &'static str = "NMToken";

    pub fn new(
        attempt: ApplicationAttemptId,
        node: NodeId,
        app_submitter: impl Into<String>,
        key_id: i32,
    ) -> Self {
        NmTokenIdentifier {
            attempt,
            node,
            app_submitter: app_submitter.into(),
            key_id,
        }
    }

    pub fn to_proto(&self) -> NmTokenIdentifierProto {
        NmTokenIdentifierProto {
            app_attempt_id: Some(proto::attempt_id_to_pb(&self.attempt)),
            node_id: Some(proto::node_id_to_pb(&self.node)),
            app_submitter: Some(self.app_submitter.clone()),
            key_id: Some(self.key_id),
        }
    }

    pub fn from_proto(p: &NmTokenIdentifierProto) -> Result<Self, TokenError> {
        Ok(NmTokenIdentifier {
            attempt: attempt_from(p.app_attempt_id.as_ref(), Self::KIND)?,
            node: node_from(p.node_id.as_ref(), Self::KIND)?,
            app_submitter: p.app_submitter.clone().unwrap_or_default(),
            key_id: p.key_id(),
        })
    }

    pub fn encode(&self) -> Vec<u8> {
        self.to_proto().encode_to_vec()
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, TokenError> {
        Self::from_proto(&decode(Self::KIND, bytes)?)
    }

    /// The user a connection authenticated with this token acts as.
    pub fn user(&self) -> String {
        self.attempt.to_string()
    }
}

// ---------------------------------------------------------------------------------
// ContainerToken

/// Whether a container token is for an AM container or a task's (the
/// identifier's `containerType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContainerKind {
    ApplicationMaster,
    Task,
}

impl From<ContainerKind> for ContainerTypeProto {
    fn from(kind: ContainerKind) -> ContainerTypeProto {
        match kind {
            ContainerKind::ApplicationMaster => ContainerTypeProto::ApplicationMaster,
            ContainerKind::Task => ContainerTypeProto::Task,
        }
    }
}

/// The identifier of a ContainerToken (`ContainerTokenIdentifierProto`).
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerTokenIdentifier {
    pub container: ContainerId,
    /// The NodeId (`host:port`) of the node that may start the container.
    pub nm_host_addr: String,
    pub app_submitter: String,
    pub resource: Resource,
    /// Milliseconds since the epoch after which the container may not be started.
    pub expiry_time_ms: i64,
    pub master_key_id: i32,
    /// The RM incarnation (its start time) that issued the token.
    pub rm_identifier: i64,
    pub priority: i32,
    pub creation_time_ms: i64,
    pub log_aggregation_context: Option<LogAggregationContextProto>,
    pub node_label_expression: Option<String>,
    /// `None` when the issuer did not say (Java then reports null).
    pub container_type: Option<ContainerTypeProto>,
    pub execution_type: ExecutionTypeProto,
    /// The container's update version (0 for a fresh allocation).
    pub version: i32,
    pub allocation_request_id: i64,
    pub allocation_tags: Vec<String>,
}

impl ContainerTokenIdentifier {
    const KIND: &'static str = "ContainerToken";

    /// A fresh (version 0) guaranteed container's identifier, with no log aggregation
    /// context, node label expression, allocation request id or tags.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        container: ContainerId,
        nm_host_addr: impl Into<String>,
        app_submitter: impl Into<String>,
        resource: Resource,
        expiry_time_ms: i64,
        master_key_id: i32,
        rm_identifier: i64,
        priority: i32,
        creation_time_ms: i64,
        container_type: ContainerTypeProto,
    ) -> Self {
        ContainerTokenIdentifier {
            container,
            nm_host_addr: nm_host_addr.into(),
            app_submitter: app_submitter.into(),
            resource,
            expiry_time_ms,
            master_key_id,
            rm_identifier,
            priority,
            creation_time_ms,
            log_aggregation_context: None,
            node_label_expression: None,
            container_type: Some(container_type),
            execution_type: ExecutionTypeProto::Guaranteed,
            version: 0,
            allocation_request_id: -1,
            allocation_tags: Vec::new(),
        }
    }

    pub fn to_proto(&self) -> ContainerTokenIdentifierProto {
        ContainerTokenIdentifierProto {
            container_id: Some(proto::container_id_to_pb(&self.container)),
            nm_host_addr: Some(self.nm_host_addr.clone()),
            app_submitter: Some(self.app_submitter.clone()),
            resource: Some(proto::resource_to_pb(self.resource)),
            expiry_time_stamp: Some(self.expiry_time_ms),
            master_key_id: Some(self.master_key_id),
            rm_identifier: Some(self.rm_identifier),
            priority: Some(PriorityProto {
                priority: Some(self.priority),
            }),
            creation_time: Some(self.creation_time_ms),
            log_aggregation_context: self.log_aggregation_context.clone(),
            node_label_expression: self.node_label_expression.clone(),
            container_type: self.container_type.map(|t| t as i32),
            execution_type: Some(self.execution_type as i32),
            version: Some(self.version),
            allocation_request_id: Some(self.allocation_request_id),
            allocation_tags: self.allocation_tags.clone(),
        }
    }

    pub fn from_proto(p: &ContainerTokenIdentifierProto) -> Result<Self, TokenError> {
        let resource = p.resource.as_ref().ok_or(TokenError::Missing {
            kind: Self::KIND,
            field: "resource",
        })?;
        let container_type = match p.container_type {
            None => None,
            Some(v) => {
                Some(
                    ContainerTypeProto::try_from(v).map_err(|_| TokenError::Malformed {
                        kind: Self::KIND,
                        reason: format!("unknown container type {v}"),
                    })?,
                )
            }
        };
        let execution_type = match p.execution_type {
            None => ExecutionTypeProto::Guaranteed,
            Some(v) => ExecutionTypeProto::try_from(v).map_err(|_| TokenError::Malformed {
                kind: Self::KIND,
                reason: format!("unknown execution type {v}"),
            })?,
        };
        Ok(ContainerTokenIdentifier {
            container: container_from(p.container_id.as_ref(), Self::KIND)?,
            nm_host_addr: p.nm_host_addr.clone().ok_or(TokenError::Missing {
                kind: Self::KIND,
                field: "NM host address",
            })?,
            app_submitter: p.app_submitter.clone().unwrap_or_default(),
            resource: proto::resource_from_pb(resource),
            expiry_time_ms: p.expiry_time_stamp.unwrap_or(0),
            master_key_id: p.master_key_id(),
            rm_identifier: p.rm_identifier.unwrap_or(0),
            priority: p.priority.as_ref().and_then(|x| x.priority).unwrap_or(0),
            creation_time_ms: p.creation_time.unwrap_or(0),
            log_aggregation_context: p.log_aggregation_context.clone(),
            node_label_expression: p.node_label_expression.clone(),
            container_type,
            execution_type,
            version: p.version(),
            allocation_request_id: p.allocation_request_id(),
            allocation_tags: p.allocation_tags.clone(),
        })
    }

    pub fn encode(&self) -> Vec<u8> {
        self.to_proto().encode_to_vec()
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, TokenError> {
        Self::from_proto(&decode(Self::KIND, bytes)?)
    }

    /// The user a connection authenticated with this token acts as.
    pub fn user(&self) -> String {
        self.container.to_string()
    }
}

// ---------------------------------------------------------------------------------
// Any YARN identifier

/// A decoded identifier of one of the YARN token kinds.
#[derive(Debug, Clone, PartialEq)]
pub enum TokenIdentifier {
    AmRm(AmRmTokenIdentifier),
    Nm(NmTokenIdentifier),
    /// Boxed: a container identifier is much larger than the others.
    Container(Box<ContainerTokenIdentifier>),
}

impl TokenIdentifier {
    /// Decodes `identifier` as the identifier of a token of `kind`.
    pub fn decode(kind: &str, identifier: &[u8]) -> Result<TokenIdentifier, TokenError> {
        match kind {
            kind::AM_RM => AmRmTokenIdentifier::decode(identifier).map(TokenIdentifier::AmRm),
            kind::NM => NmTokenIdentifier::decode(identifier).map(TokenIdentifier::Nm),
            kind::CONTAINER => ContainerTokenIdentifier::decode(identifier)
                .map(|i| TokenIdentifier::Container(Box::new(i))),
            other => Err(TokenError::UnknownKind(other.to_string())),
        }
    }

    /// The token kind this identifier belongs to.
    pub fn kind(&self) -> &'static str {
        match self {
            TokenIdentifier::AmRm(_) => kind::AM_RM,
            TokenIdentifier::Nm(_) => kind::NM,
            TokenIdentifier::Container(_) => kind::CONTAINER,
        }
    }

    /// The id of the master key the token's password was made with.
    pub fn key_id(&self) -> i32 {
        match self {
            TokenIdentifier::AmRm(i) => i.key_id,
            TokenIdentifier::Nm(i) => i.key_id,
            TokenIdentifier::Container(i) => i.master_key_id,
        }
    }

    /// The user a connection authenticated with this token acts as.
    pub fn user(&self) -> String {
        match self {
            TokenIdentifier::AmRm(i) => i.user(),
            TokenIdentifier::Nm(i) => i.user(),
            TokenIdentifier::Container(i) => i.user(),
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        match self {
            TokenIdentifier::AmRm(i) => i.encode(),
            TokenIdentifier::Nm(i) => i.encode(),
            TokenIdentifier::Container(i) => i.encode(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::ApplicationId;

    fn attempt() -> ApplicationAttemptId {
        ApplicationAttemptId::new(ApplicationId::new(1_700_000_000_000, 1), 1)
    }

    #[test]
    fn amrm_identifier_round_trip_and_bytes() {
        let id = AmRmTokenIdentifier::new(attempt(), 42);
        let bytes = id.encode();
        // Field 1 (attempt: app {id=1, ts}, attempt=1), field 2 (key id 42), no prefix.
        assert_eq!(bytes[0], 0x0a, "starts with field 1, not a length prefix");
        assert_eq!(*bytes.last().unwrap_or(&0), 42);
        assert_eq!(AmRmTokenIdentifier::decode(&bytes), Ok(id));
        assert_eq!(id.user(), "appattempt_1700000000000_0001_000001");
        let any = TokenIdentifier::decode(kind::AM_RM, &bytes).expect("decode");
        assert_eq!(any.key_id(), 42);
        assert_eq!(any.kind(), "YARN_AM_RM_TOKEN");
        assert_eq!(any.encode(), bytes);
    }

    #[test]
    fn nm_identifier_round_trip() {
        let id = NmTokenIdentifier::new(attempt(), NodeId::new("node1", 8041), "alice", -7);
        let bytes = id.encode();
        let back = NmTokenIdentifier::decode(&bytes).expect("decode");
        assert_eq!(back, id);
        assert_eq!(back.user(), "appattempt_1700000000000_0001_000001");
        assert_eq!(
            TokenIdentifier::decode(kind::NM, &bytes).map(|i| i.user()),
            Ok("appattempt_1700000000000_0001_000001".to_string())
        );
    }

    #[test]
    fn container_identifier_round_trip() {
        let container = ContainerId::with_epoch(attempt(), 0, 1);
        let mut id = ContainerTokenIdentifier::new(
            container,
            "node1:8041",
            "alice",
            Resource::new(2048, 2),
            1_700_000_600_000,
            9,
            1_700_000_000_000,
            0,
            1_700_000_000_500,
            ContainerTypeProto::ApplicationMaster,
        );
        id.allocation_tags = vec!["spark".into()];
        id.node_label_expression = Some("gpu".into());
        let p = id.to_proto();
        // Java's writer puts memory and vcores in the resource map too.
        let keys: Vec<_> = p
            .resource
            .iter()
            .flat_map(|r| r.resource_value_map.iter().map(|e| e.key.as_str()))
            .collect();
        assert_eq!(keys, ["memory-mb", "vcores"]);
        assert_eq!(p.container_id.and_then(|c| c.app_id), None);
        let bytes = id.encode();
        let back = ContainerTokenIdentifier::decode(&bytes).expect("decode");
        assert_eq!(back, id);
        assert_eq!(back.user(), "container_1700000000000_0001_01_000001");
        assert_eq!(
            TokenIdentifier::decode(kind::CONTAINER, &bytes).map(|i| i.key_id()),
            Ok(9)
        );
    }

    #[test]
    fn defaults_follow_the_proto() {
        // An AMRM identifier without a key id has Hadoop's default key id -1.
        let p = AmrmTokenIdentifierProto {
            app_attempt_id: Some(proto::attempt_id_to_pb(&attempt())),
            key_id: None,
        };
        let id = AmRmTokenIdentifier::decode(&p.encode_to_vec()).expect("decode");
        assert_eq!(id.key_id, -1);
        // A container identifier without execution type is GUARANTEED, without
        // container type is None.
        let mut p = ContainerTokenIdentifier::new(
            ContainerId::with_epoch(attempt(), 3, 2),
            "h:1",
            "u",
            Resource::new(1, 1),
            0,
            1,
            0,
            1,
            0,
            ContainerTypeProto::Task,
        )
        .to_proto();
        p.execution_type = None;
        p.container_type = None;
        let id = ContainerTokenIdentifier::decode(&p.encode_to_vec()).expect("decode");
        assert_eq!(id.execution_type, ExecutionTypeProto::Guaranteed);
        assert_eq!(id.container_type, None);
        assert_eq!(id.user(), "container_e03_1700000000000_0001_01_000002");
    }

    #[test]
    fn bad_identifiers_are_errors() {
        assert!(matches!(
            AmRmTokenIdentifier::decode(&[0xff, 0xff, 0xff]),
            Err(TokenError::Malformed { .. })
        ));
        // Valid proto, but no attempt.
        let empty = AmrmTokenIdentifierProto::default().encode_to_vec();
        assert_eq!(
            AmRmTokenIdentifier::decode(&empty),
            Err(TokenError::Missing {
                kind: "AMRMToken",
                field: "application attempt id"
            })
        );
        let nm_without_node = NmTokenIdentifierProto {
            app_attempt_id: Some(proto::attempt_id_to_pb(&attempt())),
            ..Default::default()
        };
        assert!(NmTokenIdentifier::decode(&nm_without_node.encode_to_vec()).is_err());
        // Nested ids are checked by `crate::proto`, which names the field.
        let nm_with_empty_host = NmTokenIdentifierProto {
            node_id: Some(NodeIdProto {
                host: Some(String::new()),
                port: Some(8041),
            }),
            ..nm_without_node
        };
        assert!(matches!(
            NmTokenIdentifier::decode(&nm_with_empty_host.encode_to_vec()),
            Err(TokenError::Malformed { kind: "NMToken", reason }) if reason.contains("NodeIdProto.host")
        ));
        let amrm_without_app = AmrmTokenIdentifierProto {
            app_attempt_id: Some(ApplicationAttemptIdProto {
                application_id: None,
                attempt_id: Some(1),
            }),
            key_id: Some(1),
        };
        assert_eq!(
            AmRmTokenIdentifier::decode(&amrm_without_app.encode_to_vec()),
            Err(TokenError::Missing {
                kind: "AMRMToken",
                field: "ApplicationAttemptIdProto.application_id"
            })
        );
        let bad_type = ContainerTokenIdentifierProto {
            container_type: Some(9),
            ..ContainerTokenIdentifier::new(
                ContainerId::with_epoch(attempt(), 0, 1),
                "h:1",
                "u",
                Resource::new(1, 1),
                0,
                1,
                0,
                1,
                0,
                ContainerTypeProto::Task,
            )
            .to_proto()
        };
        assert!(ContainerTokenIdentifier::decode(&bad_type.encode_to_vec()).is_err());
        assert_eq!(
            TokenIdentifier::decode("HDFS_DELEGATION_TOKEN", &[]),
            Err(TokenError::UnknownKind("HDFS_DELEGATION_TOKEN".into()))
        );
    }

    #[test]
    fn token_debug_hides_the_password() {
        let t = Token::new(vec![1, 2], b"s3cret".to_vec(), kind::NM, "10.0.0.1:8041");
        let text = format!("{t:?}");
        assert!(!text.contains("115"), "{text}");
        assert!(text.contains("<redacted>"));
        assert_eq!(Token::from_proto(t.to_proto()), t);
    }
}
