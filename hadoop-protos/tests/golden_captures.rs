//! Golden-byte tests: frames captured from the real Hadoop 3.3 `yarn` CLI (and a reply it
//! accepted) must decode into the generated types with the expected values, and
//! re-encoding every message must reproduce the captured bytes exactly.

use std::error::Error;

use hadoop_protos::common::{
    rpc_request_header_proto::OperationProto, rpc_response_header_proto::RpcStatusProto,
    IpcConnectionContextProto, RequestHeaderProto, RpcKindProto, RpcRequestHeaderProto,
    RpcResponseHeaderProto,
};
use hadoop_protos::yarn::{
    GetApplicationsRequestProto, GetClusterNodesRequestProto, GetClusterNodesResponseProto,
    NodeStateProto, YarnApplicationStateProto,
};
use prost::Message;

type TestResult = Result<(), Box<dyn Error>>;

const APPLICATION_LIST: &[u8] = include_bytes!("data/application-list.bin");
const NODE_LIST: &[u8] = include_bytes!("data/node-list.bin");
const STUB_REPLY: &[u8] = include_bytes!("data/stub-cli.conn0.s2c.bin");

const CLIENT_PROTOCOL: &str = "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB";

/// Splits a byte stream into 4-byte big-endian length-prefixed frame bodies.
fn split_frames(mut stream: &[u8]) -> Result<Vec<&[u8]>, String> {
    let mut frames = Vec::new();
    while !stream.is_empty() {
        let (len_bytes, rest) = stream
            .split_first_chunk::<4>()
            .ok_or_else(|| format!("truncated frame length: {} trailing bytes", stream.len()))?;
        let len = usize::try_from(u32::from_be_bytes(*len_bytes))
            .map_err(|e| format!("frame length does not fit usize: {e}"))?;
        if rest.len() < len {
            return Err(format!("frame says {len} bytes, only {} left", rest.len()));
        }
        let (body, tail) = rest.split_at(len);
        frames.push(body);
        stream = tail;
    }
    Ok(frames)
}

/// Walks the varint-delimited messages of one frame body, checking that each
/// message re-encodes to exactly the bytes it was decoded from.
struct FrameReader<'a> {
    rest: &'a [u8],
}

impl<'a> FrameReader<'a> {
    fn new(body: &'a [u8]) -> Self {
        Self { rest: body }
    }

    fn next<M: Message + Default>(&mut self, what: &str) -> Result<M, Box<dyn Error>> {
        let before = self.rest;
        let msg = M::decode_length_delimited(&mut self.rest)
            .map_err(|e| format!("decoding {what}: {e}"))?;
        let original = &before[..before.len() - self.rest.len()];
        let reencoded = msg.encode_length_delimited_to_vec();
        assert_eq!(
            reencoded, original,
            "{what} does not re-encode to the captured bytes"
        );
        Ok(msg)
    }

    fn finish(self) {
        assert!(
            self.rest.is_empty(),
            "{} unexpected trailing bytes in frame",
            self.rest.len()
        );
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Checks the header fields every frame of a CLI connection carries.
fn check_request_header(
    header: &RpcRequestHeaderProto,
    call_id: i32,
    retry_count: i32,
    client_id_hex: &str,
) {
    assert_eq!(header.rpc_kind(), RpcKindProto::RpcProtocolBuffer);
    assert!(header.rpc_kind.is_some(), "rpcKind must be present");
    assert_eq!(header.rpc_op(), OperationProto::RpcFinalPacket);
    assert!(header.rpc_op.is_some(), "rpcOp must be present");
    assert_eq!(header.call_id, call_id);
    assert_eq!(hex(&header.client_id), client_id_hex);
    assert_eq!(header.retry_count, Some(retry_count));
    let caller = header.caller_context.as_ref().map(|c| c.context.as_str());
    assert_eq!(caller, Some("CLI"));
    assert!(header.trace_info.is_none());
    assert!(header.state_id.is_none());
}

/// Decodes the preamble, the connection-context frame and the header part of the
/// call frame of a one-call CLI capture; returns the request payload reader.
fn check_cli_capture<'a>(
    capture: &'a [u8],
    client_id_hex: &str,
    method: &str,
) -> Result<FrameReader<'a>, Box<dyn Error>> {
    let (preamble, stream) = capture
        .split_first_chunk::<7>()
        .ok_or("capture shorter than the connection preamble")?;
    // "hrpc", version 9, service class 0, auth protocol NONE.
    assert_eq!(preamble, b"hrpc\x09\x00\x00");

    let frames = split_frames(stream)?;
    assert_eq!(frames.len(), 2, "expected connection context + one call");

    let mut context_frame = FrameReader::new(frames[0]);
    let header: RpcRequestHeaderProto = context_frame.next("context RpcRequestHeaderProto")?;
    check_request_header(&header, -3, -1, client_id_hex);
    let context: IpcConnectionContextProto = context_frame.next("IpcConnectionContextProto")?;
    context_frame.finish();
    let user = context.user_info.as_ref().ok_or("userInfo missing")?;
    assert_eq!(user.effective_user(), "root");
    assert!(user.real_user.is_none());
    assert_eq!(context.protocol(), CLIENT_PROTOCOL);

    let mut call_frame = FrameReader::new(frames[1]);
    let header: RpcRequestHeaderProto = call_frame.next("call RpcRequestHeaderProto")?;
    check_request_header(&header, 0, 0, client_id_hex);
    let request_header: RequestHeaderProto = call_frame.next("RequestHeaderProto")?;
    assert_eq!(request_header.method_name, method);
    assert_eq!(
        request_header.declaring_class_protocol_name,
        CLIENT_PROTOCOL
    );
    assert_eq!(request_header.client_protocol_version, 1);
    Ok(call_frame)
}

#[test]
fn application_list_capture_round_trips() -> TestResult {
    let mut call = check_cli_capture(
        APPLICATION_LIST,
        "d98ea8b192264bd6ad6f955dfcfc3b24",
        "getApplications",
    )?;
    let request: GetApplicationsRequestProto = call.next("GetApplicationsRequestProto")?;
    call.finish();

    let states: Vec<_> = request.application_states().collect();
    assert_eq!(
        states,
        [
            YarnApplicationStateProto::Submitted,
            YarnApplicationStateProto::Accepted,
            YarnApplicationStateProto::Running,
        ]
    );
    assert!(request.application_types.is_empty());
    assert!(request.users.is_empty());
    assert!(request.queues.is_empty());
    assert!(request.application_tags.is_empty());
    assert_eq!(request.limit, None);
    assert_eq!(request.scope, None);
    Ok(())
}

#[test]
fn node_list_capture_round_trips() -> TestResult {
    let mut call = check_cli_capture(
        NODE_LIST,
        "680e45a03d4f459b965191a78694adca",
        "getClusterNodes",
    )?;
    let request: GetClusterNodesRequestProto = call.next("GetClusterNodesRequestProto")?;
    call.finish();

    let states: Vec<_> = request.node_states().collect();
    assert_eq!(states, [NodeStateProto::NsRunning]);
    Ok(())
}

#[test]
fn accepted_server_reply_round_trips() -> TestResult {
    let frames = split_frames(STUB_REPLY)?;
    assert_eq!(frames.len(), 1);
    let mut reply = FrameReader::new(frames[0]);
    let header: RpcResponseHeaderProto = reply.next("RpcResponseHeaderProto")?;
    assert_eq!(header.call_id, 0);
    assert_eq!(header.status(), RpcStatusProto::Success);
    assert_eq!(header.server_ipc_version_num, Some(9));
    assert_eq!(header.client_id.as_deref().map(<[u8]>::len), Some(16));
    assert_eq!(header.retry_count, Some(0));
    assert!(header.exception_class_name.is_none());
    // An empty response message still travels as a single zero length byte.
    let body: GetClusterNodesResponseProto = reply.next("empty response body")?;
    assert!(body.node_reports.is_empty());
    reply.finish();
    Ok(())
}

#[test]
fn special_call_ids_use_hadoop_encodings() {
    // Request headers zig-zag the call id: -33 (SASL) is one byte 0x41.
    let request = RpcRequestHeaderProto {
        call_id: -33,
        client_id: Vec::new(),
        ..Default::default()
    };
    let bytes = request.encode_to_vec();
    assert_eq!(bytes, [0x18, 0x41, 0x22, 0x00]);

    // Response headers carry the same id as a plain uint32: a five-byte varint.
    let response = RpcResponseHeaderProto {
        call_id: u32::from_ne_bytes((-33i32).to_ne_bytes()),
        status: RpcStatusProto::Success as i32,
        ..Default::default()
    };
    let bytes = response.encode_to_vec();
    assert_eq!(bytes, [0x08, 0xdf, 0xff, 0xff, 0xff, 0x0f, 0x10, 0x00]);

    // Unset retryCount reads back as Hadoop's default of -1.
    assert_eq!(request.retry_count(), -1);
    assert_eq!(response.retry_count(), -1);
}
