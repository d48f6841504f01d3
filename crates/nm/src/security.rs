//! Token checks of the container-management protocol.
//!
//! Two tokens guard a container start, both signed by the ResourceManager
//! with keys it shares with the node (registration and heartbeat answers):
//!
//! - the **NMToken** authenticates the caller. The IPC layer proves it with
//!   DIGEST-MD5 through [`NmTokenVerifier`]; the connection then belongs to
//!   the token's application attempt and carries the raw identifier, which
//!   [`NmTokenCaller::from_context`] reads back for every call;
//! - the **ContainerToken** travels inside each start request and authorises
//!   that one container: [`ContainerTokenChecker::verify`] recomputes its
//!   password and checks the node, expiry, ResourceManager identity, owning
//!   application and replays.
//!
//! Passwords are `HmacSHA1(master key, identifier bytes)`
//! ([`spindle_common::security::secret`]). Where the keys live is behind
//! [`TokenSecrets`], so another secret manager can replace
//! [`SessionSecrets`] (the node's own keys from [`RmSession`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use hadoop_protos::common::TokenProto;
use spindle_common::security::secret::{self, passwords_equal};
use spindle_common::security::{kind, ContainerTokenIdentifier, NmTokenIdentifier};
use spindle_common::{ContainerId, NodeId};
use spindle_ipc::sasl::{AuthMethod, TokenVerifier, VerifiedToken};
use spindle_ipc::{class, CallContext, RpcError};
use tokio::sync::watch;

use crate::session::RmSession;

/// Token kind of the token that authenticates callers of the node.
pub const NM_TOKEN_KIND: &str = kind::NM;
/// Token kind of the per-container start authorisation.
pub const CONTAINER_TOKEN_KIND: &str = kind::CONTAINER;

/// Java class of a token whose password or key does not check out.
pub const INVALID_TOKEN_CLASS: &str = "org.apache.hadoop.security.token.SecretManager$InvalidToken";
/// Java class for "the node is not registered yet".
pub const NM_NOT_YET_READY_CLASS: &str = "org.apache.hadoop.yarn.exceptions.NMNotYetReadyException";

/// What a call without an NMToken is told (Hadoop's wording).
pub const NO_NM_TOKEN_MESSAGE: &str = "No NMToken sent";

/// Which master key signed a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyPurpose {
    /// `container_token_master_key`.
    ContainerToken,
    /// `nm_token_master_key`.
    NmToken,
}

impl std::fmt::Display for KeyPurpose {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            KeyPurpose::ContainerToken => "container-token",
            KeyPurpose::NmToken => "NM-token",
        })
    }
}

/// The seam to the secret manager: the password a token must carry.
///
/// `key_id` is the master key the identifier names; implementations accept
/// the ResourceManager's current key and the one before it (tokens issued
/// just before a key roll stay valid). `Err` explains why no password can
/// be computed (typically an unknown key id); it reaches the caller.
pub trait TokenSecrets: Send + Sync + 'static {
    fn password(
        &self,
        purpose: KeyPurpose,
        key_id: i32,
        identifier: &[u8],
    ) -> Result<Vec<u8>, String>;
}

/// [`TokenSecrets`] over the master keys the node received from the
/// ResourceManager: the current and the previous key of each kind, as kept
/// in [`RmSession`].
pub struct SessionSecrets {
    session: watch::Receiver<RmSession>,
}

impl SessionSecrets {
    pub fn new(session: watch::Receiver<RmSession>) -> SessionSecrets {
        SessionSecrets { session }
    }
}

impl TokenSecrets for SessionSecrets {
    fn password(
        &self,
        purpose: KeyPurpose,
        key_id: i32,
        identifier: &[u8],
    ) -> Result<Vec<u8>, String> {
        let session = self.session.borrow();
        let (current, previous) = match purpose {
            KeyPurpose::ContainerToken => (
                &session.container_token_master_key,
                &session.previous_container_token_master_key,
            ),
            KeyPurpose::NmToken => (
                &session.nm_token_master_key,
                &session.previous_nm_token_master_key,
            ),
        };
        let key = [current, previous]
            .into_iter()
            .flatten()
            .find(|k| k.key_id == key_id);
        match key {
            Some(k) => Ok(secret::password(identifier, k)),
            None => Err(match current {
                None => format!(
                    "no {purpose} master key is known yet (the node has not registered with the \
                     ResourceManager)"
                ),
                Some(c) => format!(
                    "the {purpose} master key {key_id} is neither the current key ({}) nor the \
                     previous one{}",
                    c.key_id,
                    previous
                        .as_ref()
                        .map(|p| format!(" ({})", p.key_id))
                        .unwrap_or_default()
                ),
            }),
        }
    }
}

/// The node identity a token must name; set once the server port is known.
pub(crate) type SharedNodeId = Arc<std::sync::OnceLock<NodeId>>;

/// Verifies NMTokens for the IPC server's DIGEST-MD5 (TOKEN) authentication.
///
/// The identifier must parse as `NMTokenIdentifierProto`, name this node and
/// a known NM-token master key; the password is then recomputed through
/// [`TokenSecrets`] and the connection user is the application attempt id.
pub struct NmTokenVerifier {
    node_id: SharedNodeId,
    secrets: Arc<dyn TokenSecrets>,
}

impl NmTokenVerifier {
    pub(crate) fn new(node_id: SharedNodeId, secrets: Arc<dyn TokenSecrets>) -> NmTokenVerifier {
        NmTokenVerifier { node_id, secrets }
    }
}

impl TokenVerifier for NmTokenVerifier {
    fn kind(&self) -> &str {
        NM_TOKEN_KIND
    }

    fn verify(&self, identifier: &[u8]) -> Result<VerifiedToken, String> {
        let parsed = NmTokenIdentifier::decode(identifier).map_err(|e| e.to_string())?;
        let Some(node) = self.node_id.get() else {
            return Err("the NodeManager is still starting".to_string());
        };
        if parsed.node != *node {
            return Err(format!(
                "the NMToken of {} is for node {} but this is {node}",
                parsed.attempt, parsed.node
            ));
        }
        let password = self
            .secrets
            .password(KeyPurpose::NmToken, parsed.key_id, identifier)
            .map_err(|e| format!("the NMToken of {} cannot be checked: {e}", parsed.attempt))?;
        Ok(VerifiedToken {
            real_user: None,
            password,
            user: parsed.user(),
        })
    }
}

/// Who is calling the container manager: an application attempt proven by
/// an NMToken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NmTokenCaller {
    pub identity: NmTokenIdentifier,
}

impl NmTokenCaller {
    /// The caller of an IPC call. The token itself was proven during the
    /// SASL exchange; here the identity is read back. A connection without
    /// an NMToken gets Hadoop's "No NMToken sent".
    pub fn from_context(ctx: &CallContext) -> Result<NmTokenCaller, RpcError> {
        match &ctx.auth {
            AuthMethod::Token {
                kind,
                user,
                identifier,
                ..
            } if kind == NM_TOKEN_KIND => {
                let identity = NmTokenIdentifier::decode(identifier)
                    .map_err(|e| RpcError::yarn(e.to_string()))?;
                if identity.user() != *user {
                    return Err(RpcError::yarn(format!(
                        "expected application attempt {user} but the NMToken names {}",
                        identity.attempt
                    )));
                }
                Ok(NmTokenCaller { identity })
            }
            AuthMethod::Token { kind, .. } => Err(RpcError::yarn(format!(
                "{NO_NM_TOKEN_MESSAGE} (the connection authenticated with a {kind} token)"
            ))),
            AuthMethod::Simple | AuthMethod::Kerberos { .. } => {
                Err(RpcError::yarn(NO_NM_TOKEN_MESSAGE))
            }
        }
    }

    /// A caller whose NMToken was proven by other means (the node's own
    /// tools, tests).
    pub fn new(identity: NmTokenIdentifier) -> NmTokenCaller {
        NmTokenCaller { identity }
    }
}

/// A refused container token or request: the Java class and message a
/// client re-raises.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub class_name: String,
    pub message: String,
}

impl Rejection {
    pub fn new(class_name: &str, message: impl Into<String>) -> Rejection {
        Rejection {
            class_name: class_name.to_string(),
            message: message.into(),
        }
    }

    pub fn yarn(message: impl Into<String>) -> Rejection {
        Rejection::new(class::YARN, message)
    }

    pub fn invalid_token(message: impl Into<String>) -> Rejection {
        Rejection::new(INVALID_TOKEN_CLASS, message)
    }
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.class_name, self.message)
    }
}

/// Checks container tokens for one node and remembers started containers
/// until their tokens expire, so a start cannot be replayed.
pub struct ContainerTokenChecker {
    node_id: SharedNodeId,
    secrets: Arc<dyn TokenSecrets>,
    /// Started containers and the expiry of the token that started them.
    started: Mutex<HashMap<ContainerId, i64>>,
}

impl ContainerTokenChecker {
    pub(crate) fn new(node_id: SharedNodeId, secrets: Arc<dyn TokenSecrets>) -> Self {
        ContainerTokenChecker {
            node_id,
            secrets,
            started: Mutex::new(HashMap::new()),
        }
    }

    /// Verifies `token` for a start by `caller` at `now_ms`, given the
    /// registration's ResourceManager identifier. Nothing is recorded: call
    /// [`record_start`](Self::record_start) once the container is accepted.
    pub fn verify(
        &self,
        caller: &NmTokenCaller,
        token: &TokenProto,
        rm_identifier: i64,
        now_ms: i64,
    ) -> Result<ContainerTokenIdentifier, Rejection> {
        let node = self
            .node_id
            .get()
            .ok_or_else(|| Rejection::yarn("the NodeManager is still starting"))?;
        if token.identifier.is_empty() {
            return Err(Rejection::invalid_token(
                "the start request carries no container token",
            ));
        }
        if !token.kind.is_empty() && token.kind != CONTAINER_TOKEN_KIND {
            return Err(Rejection::invalid_token(format!(
                "the container token has kind '{}', expected '{CONTAINER_TOKEN_KIND}'",
                token.kind
            )));
        }
        let id = ContainerTokenIdentifier::decode(&token.identifier)
            .map_err(|e| Rejection::invalid_token(e.to_string()))?;
        let container_id = id.container;

        // Signature and node (Hadoop checks both when it retrieves the password).
        if id.nm_host_addr != node.to_string() {
            return Err(Rejection::invalid_token(format!(
                "the container token of {container_id} is for node '{}' but this NodeManager \
                 is {node}",
                id.nm_host_addr
            )));
        }
        let expected = self
            .secrets
            .password(
                KeyPurpose::ContainerToken,
                id.master_key_id,
                &token.identifier,
            )
            .map_err(|e| {
                Rejection::invalid_token(format!(
                    "the container token of {container_id} cannot be checked: {e}"
                ))
            })?;
        if !passwords_equal(&expected, &token.password) {
            return Err(Rejection::invalid_token(format!(
                "invalid container token used for starting container {container_id} on {node}: \
                 the password does not match"
            )));
        }

        // Authorisation.
        let caller_attempt = caller.identity.attempt;
        if caller_attempt.app != container_id.app() {
            return Err(Rejection::yarn(format!(
                "Unauthorized request to start container.\nNMToken for application attempt \
                 {caller_attempt} was used for starting container {container_id} of \
                 application attempt {}",
                container_id.attempt
            )));
        }
        if self.was_started(&container_id, now_ms) {
            return Err(Rejection::yarn(format!(
                "Unauthorized request to start container.\nAttempt to relaunch the same \
                 container with id {container_id}."
            )));
        }
        if id.expiry_time_ms < now_ms {
            return Err(Rejection::yarn(format!(
                "Unauthorized request to start container.\nThe container token of \
                 {container_id} expired at {}; the time here is {now_ms}.\nNote: the \
                 clocks of the ResourceManager and this node may be out of sync.",
                id.expiry_time_ms
            )));
        }
        if id.rm_identifier != rm_identifier {
            return Err(Rejection::new(
                class::INVALID_CONTAINER,
                format!(
                    "Container {container_id} rejected as it is allocated by a previous \
                     ResourceManager (token rm identifier {}, registered with {rm_identifier})",
                    id.rm_identifier
                ),
            ));
        }
        Ok(id)
    }

    fn was_started(&self, id: &ContainerId, now_ms: i64) -> bool {
        let mut started = self.started.lock().unwrap_or_else(|p| p.into_inner());
        started.retain(|_, expiry| *expiry >= now_ms);
        started.contains_key(id)
    }

    /// Remembers that `grant` started a container. Returns false when it
    /// had already been started (a concurrent duplicate start).
    pub fn record_start(&self, grant: &ContainerTokenIdentifier) -> bool {
        let mut started = self.started.lock().unwrap_or_else(|p| p.into_inner());
        started
            .insert(grant.container, grant.expiry_time_ms)
            .is_none()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use hadoop_protos::yarn::ContainerTypeProto;
    use spindle_common::security::MasterKey;
    use spindle_common::{ApplicationAttemptId, ApplicationId, Resource};

    const NOW: i64 = 1_700_000_000_000;
    const RM_ID: i64 = 1_690_000_000_000;

    /// An NMToken for `identity`, signed with `key`.
    pub(crate) fn nm_token(identity: &NmTokenIdentifier, key: &MasterKey) -> TokenProto {
        let identifier = identity.encode();
        TokenProto {
            password: secret::password(&identifier, key),
            identifier,
            kind: NM_TOKEN_KIND.into(),
            service: String::new(),
        }
    }

    /// A container token for `id`, signed with `key`.
    pub(crate) fn container_token(id: &ContainerTokenIdentifier, key: &MasterKey) -> TokenProto {
        let identifier = id.encode();
        TokenProto {
            password: secret::password(&identifier, key),
            identifier,
            kind: CONTAINER_TOKEN_KIND.into(),
            service: String::new(),
        }
    }

    fn node() -> NodeId {
        NodeId::new("nm1.example", 45454)
    }

    fn attempt(app: i32) -> ApplicationAttemptId {
        ApplicationAttemptId::new(ApplicationId::new(RM_ID, app), 1)
    }

    fn container_key() -> MasterKey {
        MasterKey::new(7, vec![1, 2, 3, 4, 5, 6, 7, 8])
    }

    fn old_container_key() -> MasterKey {
        MasterKey::new(6, vec![9; 8])
    }

    fn nm_key() -> MasterKey {
        MasterKey::new(3, vec![0x4e; 8])
    }

    fn session() -> watch::Receiver<RmSession> {
        let (tx, rx) = watch::channel(RmSession {
            rm_identifier: Some(RM_ID),
            container_token_master_key: Some(container_key()),
            previous_container_token_master_key: Some(old_container_key()),
            nm_token_master_key: Some(nm_key()),
            ..RmSession::default()
        });
        // The receiver keeps the last value after the sender is gone.
        drop(tx);
        rx
    }

    fn checker() -> ContainerTokenChecker {
        let node_id: SharedNodeId = Arc::new(std::sync::OnceLock::new());
        let _ = node_id.set(node());
        ContainerTokenChecker::new(node_id, Arc::new(SessionSecrets::new(session())))
    }

    fn identity(app: i32) -> NmTokenIdentifier {
        NmTokenIdentifier::new(attempt(app), node(), "alice", nm_key().key_id)
    }

    fn caller(app: i32) -> NmTokenCaller {
        NmTokenCaller::new(identity(app))
    }

    fn spec(app: i32, key: &MasterKey) -> ContainerTokenIdentifier {
        ContainerTokenIdentifier::new(
            ContainerId::new(attempt(app), 2),
            node().to_string(),
            "alice",
            Resource::new(1024, 1),
            NOW + 600_000,
            key.key_id,
            RM_ID,
            0,
            NOW,
            ContainerTypeProto::Task,
        )
    }

    fn token(app: i32) -> TokenProto {
        container_token(&spec(app, &container_key()), &container_key())
    }

    #[test]
    fn a_good_token_is_granted_once() {
        let c = checker();
        let token = token(1);
        let grant = c.verify(&caller(1), &token, RM_ID, NOW).expect("valid");
        assert_eq!(grant.container, spec(1, &container_key()).container);
        assert_eq!(grant.app_submitter, "alice");
        assert_eq!(grant.resource, Resource::new(1024, 1));
        assert!(c.record_start(&grant));
        assert!(!c.record_start(&grant), "a second record is a duplicate");
        let replay = c
            .verify(&caller(1), &token, RM_ID, NOW)
            .expect_err("replay");
        assert_eq!(replay.class_name, class::YARN);
        assert!(
            replay.message.contains("relaunch the same container"),
            "{replay}"
        );
        // Once the token has expired, the replay record is dropped, and the
        // expiry check refuses it instead.
        let later = c
            .verify(&caller(1), &token, RM_ID, NOW + 700_000)
            .expect_err("expired");
        assert!(later.message.contains("expired"), "{later}");
    }

    #[test]
    fn the_previous_key_still_verifies() {
        let old = container_token(&spec(1, &old_container_key()), &old_container_key());
        checker()
            .verify(&caller(1), &old, RM_ID, NOW)
            .expect("previous key accepted");
        let unknown = MasterKey::new(99, vec![1; 8]);
        let token = container_token(&spec(1, &unknown), &unknown);
        let err = checker()
            .verify(&caller(1), &token, RM_ID, NOW)
            .expect_err("unknown key");
        assert_eq!(err.class_name, INVALID_TOKEN_CLASS);
        assert!(err.message.contains("master key 99"), "{err}");
    }

    #[test]
    fn a_forged_password_is_refused() {
        let mut forged = token(1);
        forged.password[0] ^= 0xff;
        let err = checker()
            .verify(&caller(1), &forged, RM_ID, NOW)
            .expect_err("forged");
        assert_eq!(err.class_name, INVALID_TOKEN_CLASS);
        assert!(err.message.contains("password does not match"), "{err}");

        // The right password for another identifier (a bigger container).
        let mut bigger = spec(1, &container_key());
        bigger.resource = Resource::new(65536, 32);
        let tampered = TokenProto {
            identifier: bigger.encode(),
            ..token(1)
        };
        let err = checker()
            .verify(&caller(1), &tampered, RM_ID, NOW)
            .expect_err("tampered");
        assert_eq!(err.class_name, INVALID_TOKEN_CLASS);

        let garbage = TokenProto {
            identifier: vec![0xff, 0xff, 0xff],
            ..token(1)
        };
        assert!(checker().verify(&caller(1), &garbage, RM_ID, NOW).is_err());
    }

    #[test]
    fn a_token_for_another_node_is_refused() {
        let mut s = spec(1, &container_key());
        s.nm_host_addr = "nm2.example:45454".into();
        let token = container_token(&s, &container_key());
        let err = checker()
            .verify(&caller(1), &token, RM_ID, NOW)
            .expect_err("wrong node");
        assert_eq!(err.class_name, INVALID_TOKEN_CLASS);
        assert!(
            err.message.contains("nm2.example:45454") && err.message.contains("nm1.example:45454"),
            "{err}"
        );
    }

    #[test]
    fn an_expired_token_is_refused() {
        let mut s = spec(1, &container_key());
        s.expiry_time_ms = NOW - 1;
        let token = container_token(&s, &container_key());
        let err = checker()
            .verify(&caller(1), &token, RM_ID, NOW)
            .expect_err("expired");
        assert_eq!(err.class_name, class::YARN);
        assert!(err.message.contains("expired"), "{err}");
    }

    #[test]
    fn another_applications_nm_token_is_refused() {
        let err = checker()
            .verify(&caller(2), &token(1), RM_ID, NOW)
            .expect_err("wrong app");
        assert!(err.message.starts_with("Unauthorized request"), "{err}");
        assert!(err.message.contains("_0002_000001"), "{err}");
    }

    #[test]
    fn a_token_from_a_previous_rm_is_refused() {
        let err = checker()
            .verify(&caller(1), &token(1), RM_ID + 1, NOW)
            .expect_err("old RM");
        assert_eq!(err.class_name, class::INVALID_CONTAINER);
        assert!(err.message.contains("previous ResourceManager"), "{err}");
    }

    #[test]
    fn nm_token_verifier_checks_node_and_key() {
        let node_id: SharedNodeId = Arc::new(std::sync::OnceLock::new());
        let v = NmTokenVerifier::new(node_id.clone(), Arc::new(SessionSecrets::new(session())));
        let token = nm_token(&identity(1), &nm_key());
        assert!(
            v.verify(&token.identifier).is_err(),
            "node id not known yet"
        );
        let _ = node_id.set(node());
        let ok = v.verify(&token.identifier).expect("valid");
        assert_eq!(ok.user, attempt(1).to_string());
        assert_eq!(ok.password, token.password);

        let mut elsewhere = identity(1);
        elsewhere.node = NodeId::new("other", 1);
        let token = nm_token(&elsewhere, &nm_key());
        assert!(v
            .verify(&token.identifier)
            .expect_err("other node")
            .contains("other:1"));

        let mut wrong_key = identity(1);
        wrong_key.key_id = container_key().key_id;
        let token = nm_token(&wrong_key, &container_key());
        assert!(v.verify(&token.identifier).is_err(), "wrong key id");
        assert!(v.verify(b"\xff\xff garbage").is_err());
    }

    fn ctx(auth: AuthMethod) -> CallContext {
        CallContext {
            user: "someone".into(),
            real_user: None,
            auth,
            protocol: spindle_ipc::protocols::CONTAINER_MANAGEMENT.into(),
            method: spindle_ipc::methods::container_management::START_CONTAINERS
                .name
                .into(),
            peer: "127.0.0.1:1".parse().expect("addr"),
            call_id: 0,
        }
    }

    #[test]
    fn callers_need_an_nm_token() {
        let err = NmTokenCaller::from_context(&ctx(AuthMethod::Simple)).expect_err("simple");
        assert_eq!(err.class_name, class::YARN);
        assert_eq!(err.message, NO_NM_TOKEN_MESSAGE);

        let err = NmTokenCaller::from_context(&ctx(AuthMethod::Token {
            kind: "YARN_AM_RM_TOKEN".into(),
            user: "appattempt_1_0001_000001".into(),
            identifier: vec![],
            real_user: None,
        }))
        .expect_err("other kind");
        assert!(err.message.contains("YARN_AM_RM_TOKEN"), "{}", err.message);

        let token = nm_token(&identity(1), &nm_key());
        let ok = NmTokenCaller::from_context(&ctx(AuthMethod::Token {
            kind: NM_TOKEN_KIND.into(),
            user: attempt(1).to_string(),
            identifier: token.identifier.clone(),
            real_user: None,
        }))
        .expect("nm token");
        assert_eq!(ok.identity, identity(1));

        let err = NmTokenCaller::from_context(&ctx(AuthMethod::Token {
            kind: NM_TOKEN_KIND.into(),
            user: "appattempt_1_0009_000001".into(),
            identifier: token.identifier,
            real_user: None,
        }))
        .expect_err("user mismatch");
        assert!(err.message.contains("appattempt_1_0009_000001"));
    }
}
