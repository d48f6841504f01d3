//! The server side of Hadoop's SASL exchange (call id −33).
//!
//! A client that holds any token (every AM, every executor) opens *every* connection
//! with the SASL auth byte and a NEGOTIATE, even on an insecure cluster, so each port
//! must answer it. This module is a small state machine fed one `RpcSaslProto` at a
//! time. Today it speaks SIMPLE: NEGOTIATE is answered with SUCCESS and no auths,
//! which the Java client takes as "go ahead unauthenticated". Token authentication
//! (DIGEST-MD5) plugs in as another [`Mechanism`].

use hadoop_protos::common::rpc_sasl_proto::{SaslAuth, SaslState};
use hadoop_protos::common::RpcSaslProto;

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
    },
}

/// The authentication methods a server offers, in preference order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mechanism {
    /// Hadoop's SIMPLE method: no proof, the client names its user.
    Simple,
}

impl Mechanism {
    fn auth(&self) -> SaslAuth {
        match self {
            Mechanism::Simple => SaslAuth {
                method: "SIMPLE".into(),
                mechanism: String::new(),
                protocol: None,
                server_id: None,
                challenge: None,
            },
        }
    }
}

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
}

impl SaslServer {
    pub fn new(offered: Vec<Mechanism>) -> Self {
        SaslServer {
            offered,
            negotiated: false,
        }
    }

    /// Feeds one client message.
    pub fn step(&mut self, msg: &RpcSaslProto) -> Result<SaslStep, SaslFailure> {
        let state = SaslState::try_from(msg.state)
            .map_err(|_| SaslFailure(format!("unknown SASL state {}", msg.state)))?;
        match state {
            SaslState::Negotiate => {
                if self.negotiated {
                    return Err(SaslFailure("NEGOTIATE sent twice".into()));
                }
                self.negotiated = true;
                if self.offered == [Mechanism::Simple] {
                    // SIMPLE only: SUCCESS without auths tells the Java client to
                    // continue with the connection context, unauthenticated.
                    return Ok(SaslStep::Done(
                        Some(sasl_message(SaslState::Success)),
                        AuthMethod::Simple,
                    ));
                }
                let mut reply = sasl_message(SaslState::Negotiate);
                reply.auths = self.offered.iter().map(Mechanism::auth).collect();
                Ok(SaslStep::Reply(reply))
            }
            SaslState::Initiate => {
                if !self.negotiated {
                    return Err(SaslFailure("INITIATE before NEGOTIATE".into()));
                }
                let chosen = msg
                    .auths
                    .first()
                    .ok_or_else(|| SaslFailure("INITIATE names no auth method".into()))?;
                match chosen.method.as_str() {
                    "SIMPLE" if self.offered.contains(&Mechanism::Simple) => {
                        // The client does not wait for an answer to a SIMPLE initiate.
                        Ok(SaslStep::Done(None, AuthMethod::Simple))
                    }
                    other => Err(SaslFailure(format!(
                        "client selected auth method {other} ({}), which this server did not offer",
                        chosen.mechanism
                    ))),
                }
            }
            SaslState::Response | SaslState::Challenge | SaslState::Success | SaslState::Wrap => {
                Err(SaslFailure(format!(
                    "unexpected SASL state {state:?} from client"
                )))
            }
        }
    }
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
}
