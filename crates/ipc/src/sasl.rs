//! The server side of Hadoop's SASL exchange (call id −33).
//!
//! A client that holds any token (every AM, every executor) opens *every* connection
//! with the SASL auth byte and a NEGOTIATE, even on an insecure cluster, so each port
//! must answer it. This module is a small state machine fed one `RpcSaslProto` at a
//! time. It speaks two methods:
//!
//! - SIMPLE: a server offering only SIMPLE answers NEGOTIATE with SUCCESS and no auths,
//!   which the Java client takes as "go ahead unauthenticated".
//! - TOKEN: DIGEST-MD5 (see [`crate::digest`]) over a token whose password the server
//!   can recompute through a [`TokenVerifier`]. The server announces TOKEN first, with
//!   its challenge inside the NEGOTIATE reply; the client answers with INITIATE carrying
//!   its digest-response (or an empty INITIATE, answered with CHALLENGE and then a
//!   RESPONSE); the server ends with SUCCESS carrying `rspauth=…`. The connection then
//!   belongs to the token's user (for YARN tokens, an attempt or container id).
//! - KERBEROS: GSSAPI with the server's keytab (see [`crate::kerberos`]),
//!   announced after TOKEN and before SIMPLE, as Hadoop orders them; the
//!   connection belongs to the client's principal, mapped to its short name.

use std::sync::Arc;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use hadoop_protos::common::rpc_sasl_proto::{SaslAuth, SaslState};
use hadoop_protos::common::RpcSaslProto;
use rand::RngCore;

use crate::digest::{self, DigestServer};
use crate::kerberos::{
    GssapiServer, KerberosIdentity, ServerReply, MECHANISM_GSSAPI, METHOD_KERBEROS,
};

/// The SaslAuth method names Hadoop uses.
pub const METHOD_SIMPLE: &str = "SIMPLE";
pub const METHOD_TOKEN: &str = "TOKEN";

/// How a connection authenticated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthMethod {
    /// Preamble with auth byte NONE, or SASL that settled on SIMPLE: the user is
    /// whatever the connection context claims.
    Simple,
    /// A token proved by DIGEST-MD5: the user is the token identifier's user.
    Token {
        kind: String,
        user: String,
        identifier: Vec<u8>,
        /// See [`VerifiedToken::real_user`].
        real_user: Option<String>,
    },
    /// A Kerberos ticket proved by GSSAPI: the client's principal and the
    /// short name it maps to, which is the connection's user.
    Kerberos { principal: String, user: String },
}

/// A token a [`TokenVerifier`] accepted: its password, recomputed by the server, and
/// the user the connection authenticates as.
#[derive(Clone, PartialEq, Eq)]
pub struct VerifiedToken {
    pub password: Vec<u8>,
    pub user: String,
    /// The user who authenticated for `user`, when the token was issued to
    /// an impersonator (an RM delegation token's real user).
    pub real_user: Option<String>,
}

impl std::fmt::Debug for VerifiedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerifiedToken")
            .field("user", &self.user)
            .field("real_user", &self.real_user)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// Recomputes token passwords for a server: the server side of a secret manager.
///
/// `verify` gets the raw identifier bytes the client presented and returns the password
/// the token must have (typically an HMAC of the identifier under the master key it
/// names) plus the user the identifier stands for, or a reason to refuse it (unknown or
/// expired key, wrong node, malformed identifier, ...). The reason is sent to the client.
/// DIGEST-MD5 then proves the client holds that password without sending it.
pub trait TokenVerifier: Send + Sync {
    /// The token kind, e.g. `YARN_AM_RM_TOKEN` or `NMToken`.
    fn kind(&self) -> &str;
    fn verify(&self, identifier: &[u8]) -> Result<VerifiedToken, String>;
    /// `Some(message)` while the server is a standby that holds no keys:
    /// negotiation then fails with `org.apache.hadoop.ipc.StandbyException`
    /// (as Hadoop's server sends a secret manager's StandbyException), so
    /// that clients fail over instead of giving up on a refused token.
    fn standby(&self) -> Option<String> {
        None
    }
}

/// The authentication methods a server offers, in preference order.
#[derive(Clone)]
pub enum Mechanism {
    /// Hadoop's SIMPLE method: no proof, the client names its user.
    Simple,
    /// Hadoop's TOKEN method (DIGEST-MD5) for tokens that `verifier` can check.
    /// Whatever the position in the list, TOKEN is announced before SIMPLE, as Hadoop
    /// does. Several verifiers share one announcement; a response is accepted by the
    /// first verifier whose password matches it.
    Token(Arc<dyn TokenVerifier>),
    /// Hadoop's KERBEROS method (GSSAPI) with this server's principal and keytab.
    Kerberos(Arc<KerberosIdentity>),
}

impl Mechanism {
    /// A TOKEN mechanism for `verifier`.
    pub fn token(verifier: impl TokenVerifier + 'static) -> Mechanism {
        Mechanism::Token(Arc::new(verifier))
    }

    /// The SaslAuth announcing this mechanism, without a challenge (the form a client
    /// echoes in INITIATE).
    fn auth(&self) -> SaslAuth {
        match self {
            Mechanism::Simple => SaslAuth {
                method: METHOD_SIMPLE.into(),
                mechanism: String::new(),
                protocol: None,
                server_id: None,
                challenge: None,
            },
            Mechanism::Token(_) => token_auth(None),
            Mechanism::Kerberos(identity) => kerberos_auth(identity),
        }
    }
}

/// The SaslAuth of Hadoop's KERBEROS method: GSSAPI, with the server's
/// principal split into protocol (`rm`) and server id (the host).
pub fn kerberos_auth(identity: &KerberosIdentity) -> SaslAuth {
    SaslAuth {
        method: METHOD_KERBEROS.into(),
        mechanism: MECHANISM_GSSAPI.into(),
        protocol: Some(identity.principal.primary.clone()),
        server_id: Some(identity.principal.instance.clone().unwrap_or_default()),
        challenge: None,
    }
}

/// The SaslAuth of Hadoop's TOKEN method: DIGEST-MD5, protocol "" and server id
/// "default" (so the digest-uri is "/default").
pub fn token_auth(challenge: Option<Vec<u8>>) -> SaslAuth {
    SaslAuth {
        method: METHOD_TOKEN.into(),
        mechanism: digest::MECHANISM.into(),
        protocol: Some(String::new()),
        server_id: Some(digest::HADOOP_REALM.into()),
        challenge,
    }
}

impl std::fmt::Debug for Mechanism {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Mechanism::Simple => f.write_str("Simple"),
            Mechanism::Token(v) => f.debug_tuple("Token").field(&v.kind()).finish(),
            Mechanism::Kerberos(identity) => f
                .debug_tuple("Kerberos")
                .field(&identity.principal.to_string())
                .finish(),
        }
    }
}

/// SIMPLE equals SIMPLE; two TOKEN mechanisms are equal when they share a verifier.
impl PartialEq for Mechanism {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Mechanism::Simple, Mechanism::Simple) => true,
            (Mechanism::Token(a), Mechanism::Token(b)) => {
                std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b))
            }
            (Mechanism::Kerberos(a), Mechanism::Kerberos(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for Mechanism {}

/// What to do after one SASL message.
#[derive(Debug, PartialEq)]
pub enum SaslStep {
    /// Send this reply and keep negotiating.
    Reply(RpcSaslProto),
    /// Send this reply (if any); authentication is complete.
    Done(Option<RpcSaslProto>, AuthMethod),
}

/// Why negotiation failed; goes out as FATAL_UNAUTHORIZED and closes the connection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SaslFailure(pub String);

/// One connection's negotiation.
#[derive(Debug)]
pub struct SaslServer {
    offered: Vec<Mechanism>,
    negotiated: bool,
    /// The DIGEST-MD5 server, created with a fresh nonce when TOKEN is offered.
    digest: Option<DigestServer>,
    /// A CHALLENGE went out; the next message must be the RESPONSE.
    awaiting_response: bool,
    /// Authentication finished (successfully); nothing more is accepted.
    finished: bool,
    /// The GSSAPI exchange, once the client chose KERBEROS.
    gss: Option<GssapiServer>,
}

impl SaslServer {
    pub fn new(offered: Vec<Mechanism>) -> Self {
        SaslServer {
            offered,
            negotiated: false,
            digest: None,
            awaiting_response: false,
            finished: false,
            gss: None,
        }
    }

    /// The first token verifier's standby message (see [`TokenVerifier::standby`]).
    pub fn standby(&self) -> Option<String> {
        self.verifiers().find_map(|v| v.standby())
    }

    fn verifiers(&self) -> impl Iterator<Item = &Arc<dyn TokenVerifier>> {
        self.offered.iter().filter_map(|m| match m {
            Mechanism::Token(v) => Some(v),
            Mechanism::Simple | Mechanism::Kerberos(_) => None,
        })
    }

    /// Whether `step(msg)` runs a GSSAPI step, which MIT's library does
    /// synchronously (keytab reads, the replay cache): the server runs it
    /// where blocking is allowed.
    pub fn blocks(&self, msg: &RpcSaslProto) -> bool {
        let state = SaslState::try_from(msg.state).ok();
        match state {
            Some(SaslState::Initiate) => msg
                .auths
                .first()
                .is_some_and(|a| a.method == METHOD_KERBEROS),
            Some(SaslState::Response) => self.gss.is_some(),
            _ => false,
        }
    }

    fn kerberos(&self) -> Option<Arc<KerberosIdentity>> {
        self.offered.iter().find_map(|m| match m {
            Mechanism::Kerberos(identity) => Some(identity.clone()),
            _ => None,
        })
    }

    fn offers_token(&self) -> bool {
        self.verifiers().next().is_some()
    }

    fn offers_simple(&self) -> bool {
        self.offered.contains(&Mechanism::Simple)
    }

    /// The DIGEST-MD5 server of this connection, created on first use.
    fn digest_server(&mut self) -> &DigestServer {
        self.digest
            .get_or_insert_with(|| DigestServer::hadoop(fresh_nonce()))
    }

    /// Feeds one client message.
    pub fn step(&mut self, msg: &RpcSaslProto) -> Result<SaslStep, SaslFailure> {
        let state = SaslState::try_from(msg.state)
            .map_err(|_| SaslFailure(format!("unknown SASL state {}", msg.state)))?;
        if self.finished {
            return Err(SaslFailure(format!(
                "SASL {state:?} after negotiation is already complete"
            )));
        }
        match state {
            SaslState::Negotiate => {
                if self.negotiated {
                    return Err(SaslFailure("NEGOTIATE sent twice".into()));
                }
                self.negotiated = true;
                if self.offered == [Mechanism::Simple] {
                    // SIMPLE only: SUCCESS without auths tells the Java client to
                    // continue with the connection context, unauthenticated.
                    self.finished = true;
                    return Ok(SaslStep::Done(
                        Some(sasl_message(SaslState::Success)),
                        AuthMethod::Simple,
                    ));
                }
                let mut reply = sasl_message(SaslState::Negotiate);
                if self.offers_token() {
                    let challenge = self.digest_server().challenge();
                    reply.auths.push(token_auth(Some(challenge)));
                }
                if let Some(identity) = self.kerberos() {
                    reply.auths.push(kerberos_auth(&identity));
                }
                if self.offers_simple() {
                    reply.auths.push(Mechanism::Simple.auth());
                }
                Ok(SaslStep::Reply(reply))
            }
            SaslState::Initiate => {
                if !self.negotiated {
                    return Err(SaslFailure("INITIATE before NEGOTIATE".into()));
                }
                if self.awaiting_response {
                    return Err(SaslFailure(
                        "INITIATE sent twice; expected the RESPONSE to the CHALLENGE".into(),
                    ));
                }
                let chosen = msg
                    .auths
                    .first()
                    .ok_or_else(|| SaslFailure("INITIATE names no auth method".into()))?;
                match chosen.method.as_str() {
                    METHOD_SIMPLE if self.offers_simple() => {
                        // The client does not wait for an answer to a SIMPLE initiate.
                        self.finished = true;
                        Ok(SaslStep::Done(None, AuthMethod::Simple))
                    }
                    METHOD_TOKEN if self.offers_token() => {
                        check_token_auth(chosen)?;
                        match msg.token.as_deref() {
                            None | Some([]) => {
                                // No challenge was taken from NEGOTIATE: send it now.
                                self.awaiting_response = true;
                                let mut reply = sasl_message(SaslState::Challenge);
                                reply.token = Some(self.digest_server().challenge());
                                Ok(SaslStep::Reply(reply))
                            }
                            Some(response) => self.authenticate(response),
                        }
                    }
                    METHOD_KERBEROS if self.kerberos().is_some() => {
                        let identity = self.kerberos().expect("offered");
                        check_kerberos_auth(chosen, &identity)?;
                        let server = GssapiServer::new(&identity).map_err(|detail| {
                            // The detail (keytab path, key versions) is for the
                            // operator's log, not for an unauthenticated peer.
                            tracing::warn!("{}", spindle_common::text::escaped(&detail));
                            SaslFailure(
                                "GSS initiate failed: the server cannot accept Kerberos tickets \
                                 (its log says why)"
                                    .into(),
                            )
                        })?;
                        self.gss = Some(server);
                        self.gss_step(&identity, msg.token.as_deref().unwrap_or_default())
                    }
                    other => Err(SaslFailure(format!(
                        "client selected auth method {other} ({}), which this server did not offer",
                        chosen.mechanism
                    ))),
                }
            }
            SaslState::Response if self.gss.is_some() => {
                let identity = self.kerberos().expect("offered");
                self.gss_step(&identity, msg.token.as_deref().unwrap_or_default())
            }
            SaslState::Response if self.awaiting_response => {
                self.awaiting_response = false;
                let response = msg.token.as_deref().unwrap_or_default();
                if response.is_empty() {
                    return Err(SaslFailure(
                        "DIGEST-MD5: the RESPONSE carries no digest-response".into(),
                    ));
                }
                self.authenticate(response)
            }
            SaslState::Response | SaslState::Challenge | SaslState::Success | SaslState::Wrap => {
                Err(SaslFailure(format!(
                    "unexpected SASL state {state:?} from client"
                )))
            }
        }
    }

    /// One client token of the GSSAPI exchange.
    fn gss_step(
        &mut self,
        identity: &KerberosIdentity,
        token: &[u8],
    ) -> Result<SaslStep, SaslFailure> {
        let server = self.gss.as_mut().expect("KERBEROS chosen");
        match server.step(token).map_err(SaslFailure)? {
            ServerReply::Challenge(token) => {
                let mut reply = sasl_message(SaslState::Challenge);
                reply.token = Some(token);
                Ok(SaslStep::Reply(reply))
            }
            ServerReply::Success(principal) => {
                // Hadoop.security.auth_to_local names the user.
                let user = identity
                    .names
                    .short_name(&principal.to_string())
                    .map_err(SaslFailure)?;
                self.finished = true;
                self.gss = None;
                Ok(SaslStep::Done(
                    Some(sasl_message(SaslState::Success)),
                    AuthMethod::Kerberos {
                        principal: principal.to_string(),
                        user,
                    },
                ))
            }
        }
    }

    /// Checks a digest-response: the identifier in the user name must be accepted by a
    /// verifier and the digest must match the password that verifier computes.
    fn authenticate(&mut self, response: &[u8]) -> Result<SaslStep, SaslFailure> {
        let server = self.digest_server().clone();
        let parsed = server
            .check_response(response)
            .map_err(|e| SaslFailure(e.to_string()))?;
        let identifier = BASE64.decode(parsed.username.as_bytes()).map_err(|_| {
            SaslFailure("DIGEST-MD5: the user name is not a Base64-encoded token identifier".into())
        })?;
        let mut refusal: Option<String> = None;
        let mut mismatched_kind: Option<String> = None;
        let verifiers: Vec<Arc<dyn TokenVerifier>> = self.verifiers().cloned().collect();
        for verifier in verifiers {
            let verified = match verifier.verify(&identifier) {
                Ok(v) => v,
                Err(reason) => {
                    refusal.get_or_insert(reason);
                    continue;
                }
            };
            let password = BASE64.encode(&verified.password);
            match server.verify_password(&parsed, &password) {
                Ok(rspauth) => {
                    let kind = verifier.kind().to_string();
                    self.finished = true;
                    let mut reply = sasl_message(SaslState::Success);
                    reply.token = Some(rspauth);
                    return Ok(SaslStep::Done(
                        Some(reply),
                        AuthMethod::Token {
                            kind,
                            user: verified.user,
                            identifier,
                            real_user: verified.real_user,
                        },
                    ));
                }
                Err(_) => {
                    mismatched_kind.get_or_insert_with(|| verifier.kind().to_string());
                }
            }
        }
        Err(SaslFailure(match (mismatched_kind, refusal) {
            (Some(kind), _) => format!(
                "DIGEST-MD5: digest response mismatch: the client does not hold the password \
                 of this {kind} token"
            ),
            (None, Some(reason)) => reason,
            (None, None) => "DIGEST-MD5: this server accepts no tokens".into(),
        }))
    }
}

/// The client's echoed TOKEN auth must be the one advertised: DIGEST-MD5, and when the
/// optional protocol and server id are present, "" and "default".
fn check_token_auth(auth: &SaslAuth) -> Result<(), SaslFailure> {
    if auth.mechanism != digest::MECHANISM {
        return Err(SaslFailure(format!(
            "TOKEN authentication is offered with {} only, not '{}'",
            digest::MECHANISM,
            auth.mechanism
        )));
    }
    if auth.protocol.as_deref().is_some_and(|p| !p.is_empty())
        || auth
            .server_id
            .as_deref()
            .is_some_and(|s| s != digest::HADOOP_REALM)
    {
        return Err(SaslFailure(format!(
            "client mechanism is malformed: TOKEN with protocol {:?} and server id {:?}; \
             the server offered protocol \"\" and server id \"{}\"",
            auth.protocol.as_deref().unwrap_or_default(),
            auth.server_id.as_deref().unwrap_or_default(),
            digest::HADOOP_REALM
        )));
    }
    Ok(())
}

/// The client's echoed KERBEROS auth must name GSSAPI and this server's
/// protocol and server id.
fn check_kerberos_auth(auth: &SaslAuth, identity: &KerberosIdentity) -> Result<(), SaslFailure> {
    let ours = kerberos_auth(identity);
    if auth.mechanism != MECHANISM_GSSAPI
        || auth.protocol.as_deref().unwrap_or_default()
            != ours.protocol.as_deref().unwrap_or_default()
        || auth.server_id.as_deref().unwrap_or_default()
            != ours.server_id.as_deref().unwrap_or_default()
    {
        return Err(SaslFailure(format!(
            "client mechanism is malformed: KERBEROS with {} {:?}/{:?}; the server offered \
             GSSAPI as {}",
            auth.mechanism,
            auth.protocol.as_deref().unwrap_or_default(),
            auth.server_id.as_deref().unwrap_or_default(),
            identity.principal
        )));
    }
    Ok(())
}

/// A DIGEST-MD5 nonce: 24 random bytes, Base64 (32 characters).
fn fresh_nonce() -> String {
    let mut bytes = [0u8; 24];
    rand::rng().fill_bytes(&mut bytes);
    BASE64.encode(bytes)
}

fn sasl_message(state: SaslState) -> RpcSaslProto {
    RpcSaslProto {
        version: None,
        state: state as i32,
        token: None,
        auths: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_only_answers_negotiate_with_success() {
        let mut s = SaslServer::new(vec![Mechanism::Simple]);
        let step = s
            .step(&sasl_message(SaslState::Negotiate))
            .expect("negotiate");
        match step {
            SaslStep::Done(Some(reply), AuthMethod::Simple) => {
                assert_eq!(reply.state, SaslState::Success as i32);
                assert!(reply.auths.is_empty());
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn out_of_order_messages_fail() {
        let mut s = SaslServer::new(vec![Mechanism::Simple]);
        assert!(s.step(&sasl_message(SaslState::Initiate)).is_err());
        assert!(s.step(&sasl_message(SaslState::Response)).is_err());
        let bad = RpcSaslProto {
            state: 42,
            ..sasl_message(SaslState::Negotiate)
        };
        assert!(s.step(&bad).is_err());
    }

    #[test]
    fn initiate_with_unoffered_method_fails() {
        let mut s = SaslServer::new(vec![Mechanism::Simple]);
        s.negotiated = true;
        let mut init = sasl_message(SaslState::Initiate);
        init.auths.push(SaslAuth {
            method: "KERBEROS".into(),
            mechanism: "GSSAPI".into(),
            protocol: None,
            server_id: None,
            challenge: None,
        });
        assert!(s.step(&init).is_err());
        init.auths[0].method = "SIMPLE".into();
        assert_eq!(s.step(&init), Ok(SaslStep::Done(None, AuthMethod::Simple)));
    }

    /// Accepts identifiers `b"good:<user>"` with password `pw-<user>`.
    struct TestVerifier;

    impl TokenVerifier for TestVerifier {
        fn kind(&self) -> &str {
            "TEST_TOKEN"
        }

        fn verify(&self, identifier: &[u8]) -> Result<VerifiedToken, String> {
            let text = std::str::from_utf8(identifier).map_err(|_| "not utf-8".to_string())?;
            let user = text
                .strip_prefix("good:")
                .ok_or_else(|| format!("unknown token identifier '{text}'"))?;
            Ok(VerifiedToken {
                real_user: None,
                password: format!("pw-{user}").into_bytes(),
                user: user.to_string(),
            })
        }
    }

    fn negotiate(s: &mut SaslServer) -> RpcSaslProto {
        match s.step(&sasl_message(SaslState::Negotiate)) {
            Ok(SaslStep::Reply(r)) => r,
            other => panic!("unexpected {other:?}"),
        }
    }

    fn initiate(token: Option<Vec<u8>>) -> RpcSaslProto {
        let mut m = sasl_message(SaslState::Initiate);
        m.token = token;
        m.auths.push(token_auth(None));
        m
    }

    fn client_for(identifier: &[u8], password: &[u8]) -> digest::DigestClient {
        digest::DigestClient::new(
            BASE64.encode(identifier),
            BASE64.encode(password),
            digest::HADOOP_DIGEST_URI,
            "Y2xpZW50LW5vbmNl",
        )
    }

    #[test]
    fn token_is_announced_first_with_a_challenge() {
        let mut s = SaslServer::new(vec![Mechanism::Simple, Mechanism::token(TestVerifier)]);
        let reply = negotiate(&mut s);
        assert_eq!(reply.state, SaslState::Negotiate as i32);
        assert_eq!(reply.auths.len(), 2);
        let token = &reply.auths[0];
        assert_eq!(token.method, "TOKEN");
        assert_eq!(token.mechanism, "DIGEST-MD5");
        assert_eq!(token.protocol.as_deref(), Some(""));
        assert_eq!(token.server_id.as_deref(), Some("default"));
        let challenge = String::from_utf8(token.challenge.clone().unwrap_or_default())
            .expect("challenge is text");
        assert!(
            challenge.starts_with("realm=\"default\",nonce=\""),
            "{challenge}"
        );
        assert!(
            challenge.ends_with("\",qop=\"auth\",charset=utf-8,algorithm=md5-sess"),
            "{challenge}"
        );
        assert_eq!(reply.auths[1].method, "SIMPLE");

        // Token only: no SIMPLE entry, and a SIMPLE initiate is refused.
        let mut s = SaslServer::new(vec![Mechanism::token(TestVerifier)]);
        let reply = negotiate(&mut s);
        assert_eq!(reply.auths.len(), 1);
        let mut simple = sasl_message(SaslState::Initiate);
        simple.auths.push(Mechanism::Simple.auth());
        assert!(s.step(&simple).is_err());

        // Each connection gets its own nonce.
        let mut other = SaslServer::new(vec![Mechanism::token(TestVerifier)]);
        assert_ne!(
            negotiate(&mut other).auths[0].challenge,
            reply.auths[0].challenge
        );
    }

    #[test]
    fn token_authentication_succeeds_with_rspauth() {
        let mut s = SaslServer::new(vec![Mechanism::token(TestVerifier), Mechanism::Simple]);
        let reply = negotiate(&mut s);
        let challenge = reply.auths[0].challenge.clone().unwrap_or_default();
        let mut client = client_for(
            b"good:appattempt_1_0001_000001",
            b"pw-appattempt_1_0001_000001",
        );
        let response = client.respond(&challenge).expect("respond");
        match s.step(&initiate(Some(response))) {
            Ok(SaslStep::Done(
                Some(done),
                AuthMethod::Token {
                    kind,
                    user,
                    identifier,
                    ..
                },
            )) => {
                assert_eq!(done.state, SaslState::Success as i32);
                assert_eq!(kind, "TEST_TOKEN");
                assert_eq!(user, "appattempt_1_0001_000001");
                assert_eq!(identifier, b"good:appattempt_1_0001_000001");
                client
                    .verify_rspauth(done.token.as_deref().unwrap_or_default())
                    .expect("rspauth verifies");
            }
            other => panic!("unexpected {other:?}"),
        }
        // Negotiation is over.
        assert!(s.step(&initiate(Some(b"x".to_vec()))).is_err());
    }

    #[test]
    fn empty_initiate_gets_a_challenge_then_response() {
        let mut s = SaslServer::new(vec![Mechanism::token(TestVerifier)]);
        let _ = negotiate(&mut s);
        let challenge = match s.step(&initiate(None)) {
            Ok(SaslStep::Reply(r)) => {
                assert_eq!(r.state, SaslState::Challenge as i32);
                r.token.unwrap_or_default()
            }
            other => panic!("unexpected {other:?}"),
        };
        let mut client = client_for(b"good:u1", b"pw-u1");
        let mut resp = sasl_message(SaslState::Response);
        resp.token = Some(client.respond(&challenge).expect("respond"));
        match s.step(&resp) {
            Ok(SaslStep::Done(Some(done), AuthMethod::Token { user, .. })) => {
                assert_eq!(user, "u1");
                client
                    .verify_rspauth(done.token.as_deref().unwrap_or_default())
                    .expect("rspauth");
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn wrong_password_and_unknown_identifier_fail() {
        let mut s = SaslServer::new(vec![Mechanism::token(TestVerifier)]);
        let challenge = negotiate(&mut s).auths[0]
            .challenge
            .clone()
            .unwrap_or_default();
        let mut client = client_for(b"good:u1", b"not-the-password");
        let err = s
            .step(&initiate(Some(
                client.respond(&challenge).expect("respond"),
            )))
            .expect_err("wrong password");
        assert!(
            err.0.starts_with("DIGEST-MD5: digest response mismatch"),
            "{err}"
        );

        let mut s = SaslServer::new(vec![Mechanism::token(TestVerifier)]);
        let challenge = negotiate(&mut s).auths[0]
            .challenge
            .clone()
            .unwrap_or_default();
        let mut client = client_for(b"forged", b"whatever");
        let err = s
            .step(&initiate(Some(
                client.respond(&challenge).expect("respond"),
            )))
            .expect_err("unknown identifier");
        assert_eq!(err.0, "unknown token identifier 'forged'");

        // A response computed for another connection's nonce is refused.
        let mut s = SaslServer::new(vec![Mechanism::token(TestVerifier)]);
        let _ = negotiate(&mut s);
        let mut client = client_for(b"good:u1", b"pw-u1");
        let stale = client
            .respond(br#"realm="default",nonce="old",qop="auth",charset=utf-8,algorithm=md5-sess"#)
            .expect("respond");
        assert!(s.step(&initiate(Some(stale))).is_err());
    }

    #[test]
    fn malformed_token_initiates_fail() {
        let mut s = SaslServer::new(vec![Mechanism::token(TestVerifier)]);
        let _ = negotiate(&mut s);
        let mut bad = initiate(Some(b"x=y".to_vec()));
        bad.auths[0].mechanism = "GSSAPI".into();
        assert!(s.step(&bad).is_err());
        let mut bad = initiate(Some(b"x=y".to_vec()));
        bad.auths[0].server_id = Some("nn".into());
        assert!(s.step(&bad).is_err());
        assert!(s
            .step(&initiate(Some(b"not a digest response".to_vec())))
            .is_err());
        let username_not_base64 = br#"username="***",realm="default",nonce="n",cnonce="c",nc=00000001,digest-uri="/default",response=00000000000000000000000000000000"#;
        let mut s = SaslServer::new(vec![Mechanism::token(TestVerifier)]);
        let _ = negotiate(&mut s);
        assert!(s
            .step(&initiate(Some(username_not_base64.to_vec())))
            .is_err());
        // A RESPONSE without a preceding CHALLENGE is out of order.
        let mut s = SaslServer::new(vec![Mechanism::token(TestVerifier)]);
        let _ = negotiate(&mut s);
        assert!(s.step(&sasl_message(SaslState::Response)).is_err());
    }

    #[test]
    fn several_verifiers_share_one_announcement() {
        struct Other;
        impl TokenVerifier for Other {
            fn kind(&self) -> &str {
                "OTHER"
            }
            fn verify(&self, identifier: &[u8]) -> Result<VerifiedToken, String> {
                Ok(VerifiedToken {
                    real_user: None,
                    password: b"other-pw".to_vec(),
                    user: format!("other:{}", identifier.len()),
                })
            }
        }
        let offered = vec![Mechanism::token(TestVerifier), Mechanism::token(Other)];
        let mut s = SaslServer::new(offered.clone());
        let reply = negotiate(&mut s);
        assert_eq!(reply.auths.len(), 1);
        let challenge = reply.auths[0].challenge.clone().unwrap_or_default();
        let mut client = client_for(b"xyz", b"other-pw");
        match s.step(&initiate(Some(
            client.respond(&challenge).expect("respond"),
        ))) {
            Ok(SaslStep::Done(_, AuthMethod::Token { kind, user, .. })) => {
                assert_eq!(kind, "OTHER");
                assert_eq!(user, "other:3");
            }
            other => panic!("unexpected {other:?}"),
        }
        // Mechanisms compare by verifier identity.
        assert_eq!(offered[0], offered[0].clone());
        assert_ne!(offered[0], offered[1]);
        assert_ne!(offered[0], Mechanism::Simple);
        assert_eq!(format!("{:?}", offered[1]), "Token(\"OTHER\")");
    }
}
