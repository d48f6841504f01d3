//! The SASL exchange (auth byte 0xDF, call id −33) on a server that offers SIMPLE.

mod common;

use std::time::Duration;

use common::*;
use hadoop_protos::common::rpc_response_header_proto::{RpcErrorCodeProto, RpcStatusProto};
use hadoop_protos::common::rpc_sasl_proto::{SaslAuth, SaslState};
use hadoop_protos::common::{
    IpcConnectionContextProto, RpcRequestHeaderProto, RpcSaslProto, UserInformationProto,
};
use prost::Message;
use spindle_ipc::sasl::AuthMethod;
use spindle_ipc::{class, protocols, ServerConfig};

/// A SASL frame as the Java client sends it: callId −33, empty client id, retry −1.
fn sasl_frame(msg: &RpcSaslProto) -> Vec<u8> {
    let header = RpcRequestHeaderProto {
        retry_count: Some(-1),
        ..rpc_header(-33, &[])
    };
    frame_of(&[&header.encode_to_vec(), &msg.encode_to_vec()])
}

fn sasl(state: SaslState) -> RpcSaslProto {
    RpcSaslProto {
        version: None,
        state: state as i32,
        token: None,
        auths: Vec::new(),
    }
}

/// Opens a SASL connection and completes NEGOTIATE, checking the reply.
async fn negotiated(addr: &str) -> RawPeer {
    let mut peer = RawPeer::connect(addr).await;
    let mut bytes = preamble(0xDF).to_vec();
    bytes.extend(sasl_frame(&sasl(SaslState::Negotiate)));
    peer.send(&bytes).await;

    let reply = peer.reply().await;
    let h = &reply.header;
    assert_eq!(h.call_id, CALL_ID_SASL);
    assert_eq!(h.status, RpcStatusProto::Success as i32);
    assert_eq!(h.server_ipc_version_num, Some(9));
    assert_eq!(h.exception_class_name, None);
    // Hadoop answers SASL with an empty client id and retry count −1.
    assert_eq!(h.client_id.as_deref(), Some(&[][..]));
    assert_eq!(h.retry_count, Some(-1));
    // −33 as uint32 is a 5-byte varint: df ff ff ff 0f.
    assert!(
        reply
            .header_bytes()
            .starts_with(&[0x08, 0xdf, 0xff, 0xff, 0xff, 0x0f]),
        "{:02x?}",
        reply.raw
    );
    let answer: RpcSaslProto = reply.body();
    assert_eq!(answer.state, SaslState::Success as i32, "{answer:?}");
    assert!(
        answer.auths.is_empty(),
        "SIMPLE-only servers offer no auths"
    );
    assert_eq!(answer.token, None);
    peer
}

#[tokio::test]
async fn negotiate_gets_success_then_context_and_calls_work() {
    bounded(async {
        let bench = Bench::new(config()).await;
        let mut peer = negotiated(&bench.ts.addr).await;
        bench.healthy("after NEGOTIATE").await;
        peer.send(&context_frame(
            &RAW_CLIENT_ID,
            RAW_USER,
            protocols::APPLICATION_CLIENT,
        ))
        .await;
        assert_call_works(&mut peer, 0, "over SASL").await;
        assert_call_works(&mut peer, 1, "over SASL again").await;

        let calls = bench.raw_calls();
        assert_eq!(calls.len(), 2);
        assert!(calls.iter().all(|c| c.user == RAW_USER));
        assert!(calls.iter().all(|c| c.auth == AuthMethod::Simple));
        bench.healthy("after SASL calls").await;
    })
    .await;
}

#[tokio::test]
async fn initiate_before_negotiate_is_fatal() {
    bounded(async {
        let bench = Bench::new(config()).await;
        let mut peer = RawPeer::connect(&bench.ts.addr).await;
        let mut init = sasl(SaslState::Initiate);
        init.auths.push(SaslAuth {
            method: "SIMPLE".into(),
            mechanism: String::new(),
            protocol: None,
            server_id: None,
            challenge: None,
        });
        let mut bytes = preamble(0xDF).to_vec();
        bytes.extend(sasl_frame(&init));
        peer.send(&bytes).await;
        let reply = peer.reply().await;
        reply.assert_fatal(
            CALL_ID_SASL,
            class::ACCESS_CONTROL,
            RpcErrorCodeProto::FatalUnauthorized,
            &["INITIATE before NEGOTIATE"],
        );
        peer.expect_eof().await;
        bench.healthy("after a premature INITIATE").await;
    })
    .await;
}

#[tokio::test]
async fn context_before_sasl_finishes_is_fatal() {
    bounded(async {
        let bench = Bench::new(config()).await;
        let mut peer = RawPeer::connect(&bench.ts.addr).await;
        let mut bytes = preamble(0xDF).to_vec();
        bytes.extend(context_frame(
            &RAW_CLIENT_ID,
            RAW_USER,
            protocols::APPLICATION_CLIENT,
        ));
        peer.send(&bytes).await;
        let reply = peer.reply().await;
        reply.assert_fatal(
            (-3i32) as u32,
            class::ACCESS_CONTROL,
            RpcErrorCodeProto::FatalUnauthorized,
            &["SASL"],
        );
        peer.expect_eof().await;
        bench.healthy("after skipping SASL").await;
    })
    .await;
}

#[tokio::test]
async fn sasl_after_authentication_is_fatal() {
    bounded(async {
        let bench = Bench::new(config()).await;
        let mut peer = negotiated(&bench.ts.addr).await;
        peer.send(&sasl_frame(&sasl(SaslState::Negotiate))).await;
        let reply = peer.reply().await;
        reply.assert_fatal(
            CALL_ID_SASL,
            class::ACCESS_CONTROL,
            RpcErrorCodeProto::FatalUnauthorized,
            &["SASL"],
        );
        peer.expect_eof().await;
        bench.healthy("after a second NEGOTIATE").await;
    })
    .await;
}

#[tokio::test]
async fn sasl_on_a_plain_connection_is_fatal() {
    bounded(async {
        let bench = Bench::new(config()).await;
        let mut peer = RawPeer::hello(&bench.ts.addr, RAW_USER).await;
        peer.send(&sasl_frame(&sasl(SaslState::Negotiate))).await;
        let reply = peer.reply().await;
        reply.assert_fatal(
            CALL_ID_SASL,
            class::ACCESS_CONTROL,
            RpcErrorCodeProto::FatalUnauthorized,
            &["SASL"],
        );
        peer.expect_eof().await;
        bench.healthy("after SASL without the SASL auth byte").await;
    })
    .await;
}

#[tokio::test]
async fn plain_connection_is_refused_when_simple_is_not_offered() {
    bounded(async {
        let ts = start(
            ServerConfig {
                mechanisms: Vec::new(),
                ..config()
            },
            Duration::ZERO,
        )
        .await;
        let mut peer = RawPeer::connect(&ts.addr).await;
        peer.send(&preamble(0)).await;
        let reply = peer.reply().await;
        reply.assert_fatal(
            CALL_ID_MINUS_1,
            class::ACCESS_CONTROL,
            RpcErrorCodeProto::FatalUnauthorized,
            &["SIMPLE authentication is not enabled"],
        );
        peer.expect_eof().await;
    })
    .await;
}

/// A refused client may still be writing: its context, then its calls.
/// The server half-closes after its FATAL and takes the client's input for
/// a while before it closes: a server that closed outright answered the
/// next write with a reset, and a real client busy writing its first call
/// then failed with "connection is closed" before it had read the refusal
/// (seen under load in CI). Here a closed-outright server makes the second
/// write fail with a broken pipe.
#[tokio::test]
async fn a_refused_client_gets_the_fatal_and_a_clean_close_whatever_it_sent() {
    bounded(async {
        let ts = start(
            ServerConfig {
                mechanisms: Vec::new(),
                ..config()
            },
            Duration::ZERO,
        )
        .await;
        for _ in 0..20 {
            let mut peer = RawPeer::connect(&ts.addr).await;
            let mut bytes = preamble(0).to_vec();
            bytes.extend(context_frame(
                &RAW_CLIENT_ID,
                RAW_USER,
                protocols::APPLICATION_CLIENT,
            ));
            peer.send(&bytes).await;
            // The server refuses; the client, not reading yet, sends its call.
            tokio::time::sleep(Duration::from_millis(50)).await;
            let call = call_frame(
                0,
                "getApplications",
                &hadoop_protos::yarn::GetApplicationsRequestProto::default(),
            );
            peer.send(&call).await;
            tokio::time::sleep(Duration::from_millis(50)).await;
            // A server that closed outright has answered that call with a
            // reset, and this write fails ("broken pipe").
            peer.send(&call).await;
            let reply = peer.reply().await;
            reply.assert_fatal(
                CALL_ID_MINUS_1,
                class::ACCESS_CONTROL,
                RpcErrorCodeProto::FatalUnauthorized,
                &["SIMPLE authentication is not enabled"],
            );
            peer.expect_eof().await;
        }
    })
    .await;
}

// ---------------------------------------------------------------------------------------
// Identity from the connection context
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn context_users_reach_the_handler() {
    bounded(async {
        let bench = Bench::new(config()).await;
        let mut peer = RawPeer::connect(&bench.ts.addr).await;
        let ctx = IpcConnectionContextProto {
            user_info: Some(UserInformationProto {
                effective_user: Some(RAW_USER.into()),
                real_user: Some("oozie".into()),
            }),
            protocol: Some(protocols::APPLICATION_CLIENT.into()),
        };
        let mut bytes = preamble(0).to_vec();
        bytes.extend(frame_of(&[
            &rpc_header(-3, &RAW_CLIENT_ID).encode_to_vec(),
            &ctx.encode_to_vec(),
        ]));
        peer.send(&bytes).await;
        assert_call_works(&mut peer, 0, "proxied").await;
        let calls = bench.raw_calls();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].user, RAW_USER);
        assert_eq!(calls[0].real_user.as_deref(), Some("oozie"));
        assert_eq!(calls[0].auth, AuthMethod::Simple);
        assert_eq!(calls[0].call_id, 0);
        assert_eq!(calls[0].protocol, protocols::APPLICATION_CLIENT);
    })
    .await;
}
