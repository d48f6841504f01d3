//! `IpcClient` error handling: remote exceptions, closed connections, timeouts, and
//! malformed replies from a scripted server.

mod common;

use std::time::{Duration, Instant};

use common::*;
use hadoop_protos::common::rpc_response_header_proto::{RpcErrorCodeProto, RpcStatusProto};
use hadoop_protos::common::{RpcRequestHeaderProto, RpcResponseHeaderProto};
use hadoop_protos::yarn::{
    GetApplicationsRequestProto, GetApplicationsResponseProto, GetNewApplicationRequestProto,
    GetNewApplicationResponseProto, GetQueueInfoRequestProto, GetQueueInfoResponseProto,
    MoveApplicationAcrossQueuesRequestProto, MoveApplicationAcrossQueuesResponseProto,
};
use prost::Message;
use spindle_ipc::frame::encode_frame_raw;
use spindle_ipc::{class, protocols, ClientOptions, IpcClient, IpcError, ServerConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[tokio::test]
async fn remote_errors_carry_class_and_message() {
    bounded(async {
        let ts = start(config(), Duration::ZERO).await;
        let client = good_client(&ts.addr).await;

        let err = step(
            "unsupported call",
            client.call::<_, MoveApplicationAcrossQueuesResponseProto>(
                UNSUPPORTED_METHOD,
                &MoveApplicationAcrossQueuesRequestProto::default(),
            ),
        )
        .await
        .expect_err("an unsupported method fails");
        match &err {
            IpcError::Remote {
                class_name,
                message,
            } => {
                assert_eq!(class_name, class::YARN);
                assert!(message.contains(UNSUPPORTED_METHOD), "{message}");
            }
            other => panic!("expected a remote exception, got {other:?}"),
        }
        assert_eq!(err.remote_class(), Some(class::YARN));
        assert!(err.to_string().contains(class::YARN), "{err}");

        let err = step(
            "unregistered call",
            client.call::<_, GetApplicationsResponseProto>(
                UNREGISTERED_METHOD,
                &GetApplicationsRequestProto::default(),
            ),
        )
        .await
        .expect_err("an unknown method fails");
        assert_eq!(err.remote_class(), Some(class::NO_SUCH_METHOD), "{err:?}");

        let err = step(
            "panicking call",
            client.call::<_, GetQueueInfoResponseProto>(
                PANIC_METHOD,
                &GetQueueInfoRequestProto::default(),
            ),
        )
        .await
        .expect_err("a panicking handler fails");
        assert_eq!(err.remote_class(), Some(class::RPC_SERVER), "{err:?}");

        // Remote errors do not break the connection.
        assert!(client.is_open());
        assert_served(&client, "after remote errors").await;
    })
    .await;
}

#[tokio::test]
async fn calling_after_the_server_closed_the_connection_is_closed() {
    bounded(async {
        let ts = start(
            ServerConfig {
                idle_timeout: Duration::from_millis(200),
                ..config()
            },
            Duration::ZERO,
        )
        .await;
        let client = good_client(&ts.addr).await;
        assert_served(&client, "before the close").await;
        // The server closes the idle connection; the client notices on its own.
        let deadline = Instant::now() + STEP;
        while client.is_open() {
            assert!(Instant::now() < deadline, "the client never saw the close");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let err = step(
            "call on a closed connection",
            client.call::<_, GetApplicationsResponseProto>(
                "getApplications",
                &GetApplicationsRequestProto::default(),
            ),
        )
        .await
        .expect_err("a closed connection cannot call");
        // `step` bounds the wait; failing with Closed (not a timeout) is failing fast.
        assert!(matches!(err, IpcError::Closed { .. }), "{err:?}");
        assert_eq!(err.remote_class(), None);
    })
    .await;
}

/// A scripted server: accepts one connection and consumes the preamble and context.
async fn scripted() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    (listener, addr)
}

async fn accept_hello(listener: &TcpListener) -> TcpStream {
    let (mut sock, _) = step("accept", listener.accept()).await.expect("accept");
    let mut preamble = [0u8; 7];
    step("preamble", sock.read_exact(&mut preamble))
        .await
        .expect("preamble");
    assert_eq!(&preamble, b"hrpc\x09\x00\x00");
    let _context = read_frame_header(&mut sock).await;
    sock
}

/// Reads one request frame and returns its RPC header.
async fn read_frame_header(sock: &mut TcpStream) -> RpcRequestHeaderProto {
    let mut len = [0u8; 4];
    step("frame length", sock.read_exact(&mut len))
        .await
        .expect("frame length");
    let n = u32::from_be_bytes(len) as usize;
    assert!(n < 1 << 20, "implausible frame length {n}");
    let mut body = vec![0u8; n];
    step("frame body", sock.read_exact(&mut body))
        .await
        .expect("frame body");
    let mut rest = &body[..];
    RpcRequestHeaderProto::decode_length_delimited(&mut rest).expect("request header")
}

fn reply_header(call_id: i32, client_id: &[u8], status: RpcStatusProto) -> RpcResponseHeaderProto {
    RpcResponseHeaderProto {
        call_id: call_id as u32,
        status: status as i32,
        server_ipc_version_num: Some(9),
        client_id: Some(client_id.to_vec()),
        retry_count: Some(0),
        ..Default::default()
    }
}

fn connect_options() -> ClientOptions {
    ClientOptions::new("carol", protocols::APPLICATION_CLIENT)
}

#[tokio::test]
async fn in_flight_call_fails_closed_when_the_connection_drops() {
    bounded(async {
        let (listener, addr) = scripted().await;
        let client = step("connect", IpcClient::connect(&addr, connect_options()))
            .await
            .expect("connect");
        let mut sock = accept_hello(&listener).await;
        let caller = client.clone();
        let call = tokio::spawn(async move {
            caller
                .call::<_, GetApplicationsResponseProto>(
                    "getApplications",
                    &GetApplicationsRequestProto::default(),
                )
                .await
        });
        let _ = read_frame_header(&mut sock).await;
        drop(sock);
        let err = step("the pending call", call)
            .await
            .expect("call task")
            .expect_err("the connection dropped");
        assert!(matches!(err, IpcError::Closed { .. }), "{err:?}");
        assert!(!client.is_open());
        let again = step(
            "a later call",
            client.call::<_, GetApplicationsResponseProto>(
                "getApplications",
                &GetApplicationsRequestProto::default(),
            ),
        )
        .await
        .expect_err("closed");
        assert!(matches!(again, IpcError::Closed { .. }), "{again:?}");
    })
    .await;
}

#[tokio::test]
async fn call_timeout_fails_the_call_but_not_the_connection() {
    bounded(async {
        // The handler answers long after the call's timeout, so the call ends with
        // Timeout however loaded the machine is; no upper bound on the wait is needed.
        let slow = Duration::from_millis(3000);
        let ts = start(config(), slow).await;
        let options = ClientOptions {
            call_timeout: Duration::from_millis(200),
            ..ClientOptions::new(GOOD_USER, protocols::APPLICATION_CLIENT)
        };
        let client = step("connect", IpcClient::connect(&ts.addr, options))
            .await
            .expect("connect");
        let started = Instant::now();
        let err = step(
            "timed-out call",
            client.call::<_, GetNewApplicationResponseProto>(
                SLOW_METHOD,
                &GetNewApplicationRequestProto {},
            ),
        )
        .await
        .expect_err("the call outlasts its timeout");
        let waited = started.elapsed();
        match &err {
            IpcError::Timeout {
                method, timeout_ms, ..
            } => {
                assert_eq!(method, SLOW_METHOD);
                assert_eq!(*timeout_ms, 200);
            }
            other => panic!("expected a timeout, got {other:?}"),
        }
        assert!(
            waited >= Duration::from_millis(190),
            "gave up after {waited:?}"
        );

        // The connection is still good, before and after the late reply arrives.
        assert!(client.is_open());
        assert_served(&client, "after a timeout").await;
        // The handler is done: its late reply goes out before the answer to any
        // call made from now on, so the next call's answer comes after it.
        let deadline = Instant::now() + slow + STEP;
        while ts.probe.slow_answered() == 0 {
            assert!(
                Instant::now() < deadline,
                "the slow call was never answered"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_served(&client, "after the late reply").await;
        assert!(client.is_open());
    })
    .await;
}

#[tokio::test]
async fn replies_are_matched_by_call_id() {
    bounded(async {
        let (listener, addr) = scripted().await;
        let client = step("connect", IpcClient::connect(&addr, connect_options()))
            .await
            .expect("connect");
        let mut sock = accept_hello(&listener).await;
        let mut calls = Vec::new();
        for tag in ["first", "second"] {
            let caller = client.clone();
            calls.push(tokio::spawn(async move {
                caller
                    .call::<_, GetApplicationsResponseProto>(
                        "getApplications",
                        &tagged_apps_request(tag),
                    )
                    .await
            }));
            // Keep the call order deterministic.
            let header = read_frame_header(&mut sock).await;
            assert_eq!(header.call_id, if tag == "first" { 0 } else { 1 });
            assert_eq!(header.retry_count, Some(0));
        }
        let client_id = read_client_id(&client, &mut sock).await;
        // A reply for an id nobody waits for, then the replies in reverse order.
        let mut out = Vec::new();
        for (cid, tag) in [(7, "stray"), (1, "second"), (0, "first")] {
            let body = GetApplicationsResponseProto {
                applications: vec![app_report("carol", &tagged_apps_request(tag))],
            };
            out.extend_from_slice(&encode_frame_raw(
                &reply_header(cid, &client_id, RpcStatusProto::Success),
                Some(&body.encode_to_vec()),
            ));
        }
        step("write replies", sock.write_all(&out))
            .await
            .expect("write replies");
        for (handle, tag) in calls.into_iter().zip(["first", "second"]) {
            let resp = step("reply", handle)
                .await
                .expect("call task")
                .expect("call succeeds");
            assert_eq!(resp.applications[0].application_tags, vec![tag.to_string()]);
        }
        assert!(client.is_open());
    })
    .await;
}

/// Makes one more call and returns the client id it carries (the scripted server needs it
/// to echo). The call is answered so nothing is left pending.
async fn read_client_id(client: &IpcClient, sock: &mut TcpStream) -> Vec<u8> {
    let caller = client.clone();
    let probe = tokio::spawn(async move {
        caller
            .call::<_, GetApplicationsResponseProto>(
                "getApplications",
                &GetApplicationsRequestProto::default(),
            )
            .await
    });
    let header = read_frame_header(sock).await;
    let reply = encode_frame_raw(
        &reply_header(header.call_id, &header.client_id, RpcStatusProto::Success),
        Some(&[]),
    );
    step("write probe reply", sock.write_all(&reply))
        .await
        .expect("write probe reply");
    step("probe call", probe)
        .await
        .expect("probe task")
        .expect("probe call");
    header.client_id
}

#[tokio::test]
async fn fatal_reply_fails_the_call_with_the_server_reason_and_closes() {
    bounded(async {
        let (listener, addr) = scripted().await;
        let client = step("connect", IpcClient::connect(&addr, connect_options()))
            .await
            .expect("connect");
        let mut sock = accept_hello(&listener).await;
        let caller = client.clone();
        let call = tokio::spawn(async move {
            caller
                .call::<_, GetApplicationsResponseProto>(
                    "getApplications",
                    &GetApplicationsRequestProto::default(),
                )
                .await
        });
        let header = read_frame_header(&mut sock).await;
        let mut fatal = reply_header(header.call_id, &header.client_id, RpcStatusProto::Fatal);
        fatal.exception_class_name = Some(class::RPC_SERVER.into());
        fatal.error_msg = Some("scripted fatal failure".into());
        fatal.error_detail = Some(RpcErrorCodeProto::FatalInvalidRpcHeader as i32);
        step(
            "write fatal",
            sock.write_all(&encode_frame_raw(&fatal, None)),
        )
        .await
        .expect("write fatal");
        let err = step("the call", call)
            .await
            .expect("call task")
            .expect_err("a FATAL reply fails the call");
        let text = err.to_string();
        assert!(text.contains(class::RPC_SERVER), "{text}");
        assert!(text.contains("scripted fatal failure"), "{text}");
        // FATAL means the connection is over, even though the socket is still open.
        assert!(!client.is_open());
        let again = client
            .call::<_, GetApplicationsResponseProto>(
                "getApplications",
                &GetApplicationsRequestProto::default(),
            )
            .await
            .expect_err("closed after FATAL");
        assert!(matches!(again, IpcError::Closed { .. }), "{again:?}");
    })
    .await;
}

#[tokio::test]
async fn undecodable_response_is_a_protocol_error() {
    bounded(async {
        let (listener, addr) = scripted().await;
        let client = step("connect", IpcClient::connect(&addr, connect_options()))
            .await
            .expect("connect");
        let mut sock = accept_hello(&listener).await;
        let caller = client.clone();
        let call = tokio::spawn(async move {
            caller
                .call::<_, GetApplicationsResponseProto>(
                    "getApplications",
                    &GetApplicationsRequestProto::default(),
                )
                .await
        });
        let header = read_frame_header(&mut sock).await;
        // Field 1 with the non-existent wire type 7.
        let reply = encode_frame_raw(
            &reply_header(header.call_id, &header.client_id, RpcStatusProto::Success),
            Some(&[0x0f]),
        );
        step("write reply", sock.write_all(&reply))
            .await
            .expect("write reply");
        let err = step("the call", call)
            .await
            .expect("call task")
            .expect_err("an undecodable reply fails the call");
        match &err {
            IpcError::Protocol { detail, .. } => {
                assert!(detail.contains("getApplications"), "{detail}");
            }
            other => panic!("expected a protocol error, got {other:?}"),
        }
    })
    .await;
}

#[tokio::test]
async fn connecting_to_a_closed_port_is_an_io_error() {
    bounded(async {
        // Bind then drop, so the port is (almost certainly) closed.
        let addr = {
            let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            l.local_addr().expect("addr").to_string()
        };
        let err = match step("connect", IpcClient::connect(&addr, connect_options())).await {
            Ok(_) => panic!("connected to a closed port"),
            Err(e) => e,
        };
        assert!(matches!(err, IpcError::Io { .. }), "{err:?}");
        assert!(err.to_string().contains(&addr), "{err}");
    })
    .await;
}
