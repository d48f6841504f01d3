//! Golden-byte tests against bytes captured from the Hadoop 3.3.4 Java client
//! (see `tests/data/README.md`).

mod common;

use std::time::Duration;

use common::*;
use hadoop_protos::common::rpc_response_header_proto::RpcStatusProto;
use hadoop_protos::common::{
    IpcConnectionContextProto, RequestHeaderProto, RpcCallerContextProto, RpcRequestHeaderProto,
    RpcResponseHeaderProto,
};
use hadoop_protos::yarn::{
    GetApplicationsRequestProto, GetApplicationsResponseProto, GetClusterNodesRequestProto,
    GetClusterNodesResponseProto, NodeStateProto, YarnApplicationStateProto,
};
use prost::Message;
use spindle_ipc::frame::{self, decode_delimited, encode_frame_raw, take_delimited};
use spindle_ipc::sasl::AuthMethod;
use spindle_ipc::{protocols, ClientOptions, IpcClient, RpcError, RpcServer, Service};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const APPLICATION_LIST: &str = "application-list.bin";
const NODE_LIST: &str = "node-list.bin";
const STUB_REPLY: &str = "stub-cli.conn0.s2c.bin";

/// The request the `yarn application -list` capture carries, per its `.decoded.txt`.
fn captured_apps_request() -> GetApplicationsRequestProto {
    GetApplicationsRequestProto {
        application_states: vec![
            YarnApplicationStateProto::Submitted as i32,
            YarnApplicationStateProto::Accepted as i32,
            YarnApplicationStateProto::Running as i32,
        ],
        ..Default::default()
    }
}

/// The request the `yarn node -list` capture carries.
fn captured_nodes_request() -> GetClusterNodesRequestProto {
    GetClusterNodesRequestProto {
        node_states: vec![NodeStateProto::NsRunning as i32],
    }
}

/// The client id of a capture's first call frame.
fn capture_client_id(capture: &Capture) -> Vec<u8> {
    let parts = frame_parts(&capture.frames[1]);
    decode::<RpcRequestHeaderProto>(&parts[0]).client_id
}

/// The response header a Hadoop server sends for a successful call 0 of a capture.
fn success_header(client_id: &[u8]) -> RpcResponseHeaderProto {
    RpcResponseHeaderProto {
        call_id: 0,
        status: RpcStatusProto::Success as i32,
        server_ipc_version_num: Some(9),
        client_id: Some(client_id.to_vec()),
        retry_count: Some(0),
        ..Default::default()
    }
}

/// Replaces every occurrence of `from` in `bytes` with `to` (same length).
fn replace_all(bytes: &mut [u8], from: &[u8], to: &[u8]) -> usize {
    assert_eq!(from.len(), to.len());
    let mut count = 0;
    let mut i = 0;
    while i + from.len() <= bytes.len() {
        if &bytes[i..i + from.len()] == from {
            bytes[i..i + from.len()].copy_from_slice(to);
            count += 1;
            i += from.len();
        } else {
            i += 1;
        }
    }
    count
}

#[test]
fn captures_have_the_documented_shape() {
    for name in [APPLICATION_LIST, NODE_LIST] {
        let capture = Capture::parse(&data(name));
        assert_eq!(&capture.preamble, b"hrpc\x09\x00\x00", "{name}");
        assert_eq!(capture.frames.len(), 2, "{name}: context + one call");
        let ctx = frame_parts(&capture.frames[0]);
        let call = frame_parts(&capture.frames[1]);
        assert_eq!(ctx.len(), 2, "{name}: header + context");
        assert_eq!(call.len(), 3, "{name}: header + request header + request");
        // prost re-encodes the Java headers byte for byte, so comparing decoded values
        // below is as strict as comparing bytes.
        let h: RpcRequestHeaderProto = decode(&ctx[0]);
        assert_eq!(h.encode_to_vec(), ctx[0], "{name}");
        assert_eq!(h.call_id, -3);
        let h: RpcRequestHeaderProto = decode(&call[0]);
        assert_eq!(h.encode_to_vec(), call[0], "{name}");
        assert_eq!(h.call_id, 0);
    }
}

// ---------------------------------------------------------------------------------------
// Replaying the Java client's bytes to the server
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn replayed_application_list_is_answered_like_hadoop() {
    bounded(async {
        let ts = start(config(), Duration::ZERO).await;
        let bytes = data(APPLICATION_LIST);
        let capture = Capture::parse(&bytes);
        let client_id = capture_client_id(&capture);
        assert_eq!(client_id.len(), 16);

        let mut peer = RawPeer::connect(&ts.addr).await;
        peer.send(&bytes).await;
        let reply = peer.reply().await;

        assert_eq!(reply.header, success_header(&client_id));
        let resp: GetApplicationsResponseProto = reply.body();
        assert_eq!(
            resp.applications,
            vec![app_report("root", &captured_apps_request())]
        );
        // Nothing is sent for the connection context, and the connection stays open.
        peer.expect_quiet(Duration::from_millis(200)).await;

        let calls = ts.probe.calls();
        assert_eq!(calls.len(), 1);
        let call = &calls[0];
        assert_eq!(call.user, "root");
        assert_eq!(call.real_user, None);
        assert_eq!(call.auth, AuthMethod::Simple);
        assert_eq!(call.protocol, protocols::APPLICATION_CLIENT);
        assert_eq!(call.method, "getApplications");
        assert_eq!(call.call_id, 0);
        assert_eq!(
            decode::<GetApplicationsRequestProto>(&call.request),
            captured_apps_request()
        );
    })
    .await;
}

#[tokio::test]
async fn replayed_node_list_is_answered_like_hadoop() {
    bounded(async {
        let ts = start(config(), Duration::ZERO).await;
        let bytes = data(NODE_LIST);
        let capture = Capture::parse(&bytes);
        let client_id = capture_client_id(&capture);

        let mut peer = RawPeer::connect(&ts.addr).await;
        peer.send(&bytes).await;
        let reply = peer.reply().await;

        assert_eq!(reply.header, success_header(&client_id));
        let resp: GetClusterNodesResponseProto = reply.body();
        assert_eq!(
            resp.node_reports,
            vec![node_report(&captured_nodes_request())]
        );
        assert_eq!(
            resp.node_reports[0].node_state,
            Some(NodeStateProto::NsRunning as i32)
        );
        peer.expect_quiet(Duration::from_millis(200)).await;

        let calls = ts.probe.calls();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].user, "root");
        assert_eq!(calls[0].method, "getClusterNodes");
        assert_eq!(
            decode::<GetClusterNodesRequestProto>(&calls[0].request),
            captured_nodes_request()
        );
    })
    .await;
}

#[tokio::test]
async fn replay_split_into_single_bytes_is_answered_the_same() {
    // The server must not depend on how TCP segments the stream.
    bounded(async {
        let ts = start(config(), Duration::ZERO).await;
        let bytes = data(NODE_LIST);
        let client_id = capture_client_id(&Capture::parse(&bytes));
        let mut peer = RawPeer::connect(&ts.addr).await;
        for b in &bytes {
            peer.send(std::slice::from_ref(b)).await;
        }
        let reply = peer.reply().await;
        assert_eq!(reply.header, success_header(&client_id));
        let resp: GetClusterNodesResponseProto = reply.body();
        assert_eq!(resp.node_reports.len(), 1);
    })
    .await;
}

// ---------------------------------------------------------------------------------------
// The reply the Java client accepted
// ---------------------------------------------------------------------------------------

#[test]
fn stub_reply_is_reproduced_by_the_frame_encoder() {
    let stub = data(STUB_REPLY);
    let parsed = Reply::parse(stub.clone());
    let client_id = parsed
        .header
        .client_id
        .clone()
        .expect("the stub reply echoes a client id");
    assert_eq!(client_id.len(), 16);
    assert_eq!(parsed.header, success_header(&client_id));

    let ours = encode_frame_raw(&success_header(&client_id), Some(&[]));
    assert_eq!(
        &ours[..],
        &stub[..],
        "encode_frame_raw of the stub's header"
    );
}

#[tokio::test]
async fn stub_reply_decodes_with_the_client_side_functions() {
    let stub = data(STUB_REPLY);
    let mut reader = &stub[..];
    let mut body = frame::read_frame(&mut reader, frame::DEFAULT_MAX_FRAME_BYTES)
        .await
        .expect("one frame");
    assert!(reader.is_empty(), "the capture is exactly one frame");
    let header: RpcResponseHeaderProto = decode_delimited(&mut body).expect("header");
    assert_eq!(header.call_id, 0);
    assert_eq!(header.status, RpcStatusProto::Success as i32);
    assert_eq!(header.server_ipc_version_num, Some(9));
    assert_eq!(header.retry_count, Some(0));
    let payload = take_delimited(&mut body).expect("an (empty) delimited body");
    assert!(payload.is_empty());
    assert!(body.is_empty(), "nothing after the body");
    let resp = GetApplicationsResponseProto::decode(payload).expect("empty message decodes");
    assert!(resp.applications.is_empty());
}

#[tokio::test]
async fn server_encodes_an_empty_reply_exactly_like_the_stub() {
    // A service whose getApplications returns an empty message; the capture's client id
    // is replaced by the stub reply's so the whole reply frame can be compared.
    bounded(async {
        let service = Service::new(protocols::APPLICATION_CLIENT).method(
            "getApplications",
            |_ctx, _req: GetApplicationsRequestProto| async {
                Ok::<_, RpcError>(GetApplicationsResponseProto::default())
            },
        );
        let server = RpcServer::bind(
            "127.0.0.1:0".parse().expect("address"),
            vec![service],
            config(),
        )
        .await
        .expect("bind");

        let stub = data(STUB_REPLY);
        let stub_client_id = Reply::parse(stub.clone())
            .header
            .client_id
            .expect("stub client id");
        let mut bytes = data(APPLICATION_LIST);
        let java_client_id = capture_client_id(&Capture::parse(&bytes));
        assert_eq!(replace_all(&mut bytes, &java_client_id, &stub_client_id), 2);

        let mut peer = RawPeer::connect(&server.local_addr().to_string()).await;
        peer.send(&bytes).await;
        let reply = peer.reply().await;
        assert_eq!(
            reply.raw, stub,
            "server reply vs. the reply the Java client accepted"
        );
    })
    .await;
}

#[tokio::test]
async fn ipc_client_accepts_the_stub_reply() {
    bounded(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        let client = step(
            "connect",
            IpcClient::connect(
                &addr,
                ClientOptions::new("root", protocols::APPLICATION_CLIENT),
            ),
        )
        .await
        .expect("connect");
        let (mut sock, _) = step("accept", listener.accept()).await.expect("accept");
        let mut preamble = [0u8; 7];
        step("preamble", sock.read_exact(&mut preamble))
            .await
            .expect("preamble");
        let _context = read_raw_frame(&mut sock).await;

        let call = tokio::spawn(async move {
            client
                .call::<_, GetApplicationsResponseProto>(
                    "getApplications",
                    &captured_apps_request(),
                )
                .await
        });
        let call_frame = read_raw_frame(&mut sock).await;
        let header: RpcRequestHeaderProto = decode(&frame_parts(&call_frame)[0]);
        assert_eq!(header.call_id, 0);

        // The stub bytes, with our client's id in place of the captured one.
        let mut reply = data(STUB_REPLY);
        let stub_id = Reply::parse(reply.clone())
            .header
            .client_id
            .expect("stub client id");
        assert_eq!(replace_all(&mut reply, &stub_id, &header.client_id), 1);
        step("write reply", sock.write_all(&reply))
            .await
            .expect("write reply");

        let resp = step("call result", call)
            .await
            .expect("call task")
            .expect("the client accepts the stub reply");
        assert_eq!(resp, GetApplicationsResponseProto::default());
    })
    .await;
}

// ---------------------------------------------------------------------------------------
// What IpcClient sends, compared with the Java client
// ---------------------------------------------------------------------------------------

async fn read_raw_frame(sock: &mut TcpStream) -> Vec<u8> {
    let mut len = [0u8; 4];
    step("frame length", sock.read_exact(&mut len))
        .await
        .expect("frame length");
    let n = u32::from_be_bytes(len) as usize;
    assert!(n < 1 << 20, "implausible frame length {n}");
    let mut frame = len.to_vec();
    frame.resize(4 + n, 0);
    step("frame body", sock.read_exact(&mut frame[4..]))
        .await
        .expect("frame body");
    frame
}

/// Asserts that our RPC request header is the Java one except for the client id value
/// and the caller context, which the `yarn` CLI sets to "CLI" and a library client does not.
fn assert_header_like_java(ours_raw: &[u8], java_raw: &[u8]) -> Vec<u8> {
    let ours: RpcRequestHeaderProto = decode(ours_raw);
    let java: RpcRequestHeaderProto = decode(java_raw);
    assert_eq!(
        java.caller_context,
        Some(RpcCallerContextProto {
            context: "CLI".into(),
            signature: None
        })
    );
    assert_eq!(ours.client_id.len(), 16, "client id is a 16-byte UUID");
    assert_ne!(ours.client_id, vec![0u8; 16]);
    let expected = RpcRequestHeaderProto {
        client_id: ours.client_id.clone(),
        caller_context: None,
        ..java
    };
    assert_eq!(ours, expected);
    assert_eq!(ours_raw, &expected.encode_to_vec()[..], "header bytes");
    ours.client_id
}

async fn client_frames_match_capture<Req, Resp>(
    capture_file: &str,
    method: &str,
    request: Req,
    response: Resp,
) where
    Req: Message + Send + Sync + 'static,
    Resp: Message + Default + PartialEq + Clone + std::fmt::Debug + 'static,
{
    let java = Capture::parse(&data(capture_file));
    let java_ctx = frame_parts(&java.frames[0]);
    let java_call = frame_parts(&java.frames[1]);

    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let client = step(
        "connect",
        IpcClient::connect(
            &addr,
            ClientOptions::new("root", protocols::APPLICATION_CLIENT),
        ),
    )
    .await
    .expect("connect");
    let (mut sock, _) = step("accept", listener.accept()).await.expect("accept");

    // Preamble: 'hrpc', version 9, service class 0, auth NONE — like the Java client.
    let mut preamble = [0u8; 7];
    step("preamble", sock.read_exact(&mut preamble))
        .await
        .expect("preamble");
    assert_eq!(&preamble, b"hrpc\x09\x00\x00");
    assert_eq!(preamble, java.preamble);

    // Connection context frame.
    let ctx_frame = read_raw_frame(&mut sock).await;
    let ours_ctx = frame_parts(&ctx_frame);
    assert_eq!(
        ours_ctx.len(),
        2,
        "context frame: header + context, nothing else"
    );
    // rpcKind=2, rpcOp=0, callId=-3 (zig-zag 5), then a 16-byte client id.
    assert!(
        ours_ctx[0].starts_with(&[0x08, 0x02, 0x10, 0x00, 0x18, 0x05, 0x22, 0x10]),
        "context header bytes {:02x?}",
        ours_ctx[0]
    );
    let ctx_client_id = assert_header_like_java(&ours_ctx[0], &java_ctx[0]);
    assert_eq!(ours_ctx[1], java_ctx[1], "connection context bytes");
    let ctx: IpcConnectionContextProto = decode(&ours_ctx[1]);
    assert_eq!(ctx.protocol.as_deref(), Some(protocols::APPLICATION_CLIENT));
    assert_eq!(
        ctx.user_info.and_then(|u| u.effective_user).as_deref(),
        Some("root")
    );

    // First call frame.
    let method_owned = method.to_string();
    let call = tokio::spawn(async move { client.call::<Req, Resp>(&method_owned, &request).await });
    let call_frame = read_raw_frame(&mut sock).await;
    let ours_call = frame_parts(&call_frame);
    assert_eq!(
        ours_call.len(),
        3,
        "call frame: header, request header, request"
    );
    let call_client_id = assert_header_like_java(&ours_call[0], &java_call[0]);
    assert_eq!(
        call_client_id, ctx_client_id,
        "one client id per connection"
    );
    assert_eq!(ours_call[1], java_call[1], "RequestHeaderProto bytes");
    let req_header: RequestHeaderProto = decode(&ours_call[1]);
    assert_eq!(req_header.method_name, method);
    assert_eq!(
        req_header.declaring_class_protocol_name,
        protocols::APPLICATION_CLIENT
    );
    assert_eq!(req_header.client_protocol_version, 1);
    assert_eq!(ours_call[2], java_call[2], "request message bytes");

    // Answer like a Hadoop server; the client must hand back the response.
    let reply = encode_frame_raw(
        &success_header(&call_client_id),
        Some(&response.encode_to_vec()),
    );
    step("write reply", sock.write_all(&reply))
        .await
        .expect("write reply");
    let got = step("call result", call)
        .await
        .expect("call task")
        .expect("call succeeds");
    assert_eq!(got, response);
}

#[tokio::test]
async fn ipc_client_frames_match_the_java_application_list() {
    bounded(client_frames_match_capture(
        APPLICATION_LIST,
        "getApplications",
        captured_apps_request(),
        GetApplicationsResponseProto {
            applications: vec![app_report("root", &captured_apps_request())],
        },
    ))
    .await;
}

#[tokio::test]
async fn ipc_client_frames_match_the_java_node_list() {
    bounded(client_frames_match_capture(
        NODE_LIST,
        "getClusterNodes",
        captured_nodes_request(),
        GetClusterNodesResponseProto {
            node_reports: vec![node_report(&captured_nodes_request())],
        },
    ))
    .await;
}
