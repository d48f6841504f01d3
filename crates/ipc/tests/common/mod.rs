//! Fixtures shared by the spindle-ipc integration tests.
//!
//! - a small `ApplicationClientProtocol` service built from real YARN messages, with a
//!   slow method, a panicking method and an unsupported one;
//! - a launcher for an `RpcServer` on 127.0.0.1:0;
//! - [`RawPeer`], a hand-written wire peer: it encodes requests and decodes replies with
//!   its own code (only prost), so the server is never tested against its own encoder;
//! - helpers to split the golden captures in `tests/data/` into frames and messages.
//!
//! Every wait is bounded: single I/O waits by [`STEP`], whole tests by [`bounded`].

// Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use hadoop_protos::common::rpc_request_header_proto::OperationProto;
use hadoop_protos::common::rpc_response_header_proto::{RpcErrorCodeProto, RpcStatusProto};
use hadoop_protos::common::{
    IpcConnectionContextProto, RequestHeaderProto, RpcKindProto, RpcRequestHeaderProto,
    RpcResponseHeaderProto, UserInformationProto,
};
use hadoop_protos::yarn::{
    ApplicationIdProto, ApplicationReportProto, GetApplicationsRequestProto,
    GetApplicationsResponseProto, GetClusterNodesRequestProto, GetClusterNodesResponseProto,
    GetNewApplicationRequestProto, GetNewApplicationResponseProto, GetQueueInfoRequestProto,
    GetQueueInfoResponseProto, NodeIdProto, NodeReportProto, NodeStateProto,
    YarnApplicationStateProto,
};
use prost::Message;
use spindle_ipc::sasl::AuthMethod;
use spindle_ipc::{protocols, CallContext, ClientOptions, IpcClient, RpcError, RpcServer};
use spindle_ipc::{ServerConfig, Service};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Upper bound for any single wait on the network.
pub const STEP: Duration = Duration::from_secs(5);
/// Upper bound for a whole test.
pub const TEST_LIMIT: Duration = Duration::from_secs(60);

/// Runs a test body under [`TEST_LIMIT`], so a server bug shows up as a failure, not a hang.
pub async fn bounded<F: Future>(fut: F) -> F::Output {
    tokio::time::timeout(TEST_LIMIT, fut)
        .await
        .expect("the test did not finish within its time limit")
}

/// Awaits `fut` for at most [`STEP`], naming `what` if it does not complete.
pub async fn step<F: Future>(what: &str, fut: F) -> F::Output {
    match tokio::time::timeout(STEP, fut).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: nothing happened within {} ms", STEP.as_millis()),
    }
}

// ---------------------------------------------------------------------------------------
// The test service
// ---------------------------------------------------------------------------------------

/// Cluster timestamp of the application ids the test service hands out.
pub const CLUSTER_TS: i64 = 1_700_000_000_000;
/// Sleeps for the configured delay before answering.
pub const SLOW_METHOD: &str = "getNewApplication";
/// Panics unless the request's queue name is [`CALM_QUEUE`].
pub const PANIC_METHOD: &str = "getQueueInfo";
pub const CALM_QUEUE: &str = "calm";
/// Registered with `Service::unsupported`.
pub const UNSUPPORTED_METHOD: &str = "moveApplicationAcrossQueues";
/// A method that exists in Hadoop's protocol but is not registered at all.
pub const UNREGISTERED_METHOD: &str = "getClusterMetrics";

/// One call as a handler saw it.
#[derive(Debug, Clone)]
pub struct SeenCall {
    pub user: String,
    pub real_user: Option<String>,
    pub auth: AuthMethod,
    pub protocol: String,
    pub method: String,
    pub call_id: i32,
    /// The decoded request, re-encoded.
    pub request: Vec<u8>,
}

/// Records what the handlers were called with, and how many slow calls
/// have been answered.
#[derive(Debug, Default)]
pub struct Probe {
    calls: Mutex<Vec<SeenCall>>,
    slow_answered: AtomicUsize,
}

impl Probe {
    fn record(&self, ctx: &CallContext, request: &impl Message) {
        let seen = SeenCall {
            user: ctx.user.clone(),
            real_user: ctx.real_user.clone(),
            auth: ctx.auth.clone(),
            protocol: ctx.protocol.clone(),
            method: ctx.method.clone(),
            call_id: ctx.call_id,
            request: request.encode_to_vec(),
        };
        self.calls.lock().expect("probe lock poisoned").push(seen);
    }

    pub fn calls(&self) -> Vec<SeenCall> {
        self.calls.lock().expect("probe lock poisoned").clone()
    }

    /// How many calls of [`SLOW_METHOD`] have ended their wait and are being
    /// answered (their reply goes out right after).
    pub fn slow_answered(&self) -> usize {
        self.slow_answered.load(Ordering::SeqCst)
    }
}

/// The single report `getApplications` answers: it echoes the caller's user, the last
/// requested state and the requested tags, so tests can match answers to requests.
pub fn app_report(user: &str, req: &GetApplicationsRequestProto) -> ApplicationReportProto {
    ApplicationReportProto {
        application_id: Some(ApplicationIdProto {
            id: Some(1),
            cluster_timestamp: Some(CLUSTER_TS),
        }),
        user: Some(user.to_string()),
        queue: Some("default".into()),
        name: Some("spindle-ipc-test".into()),
        yarn_application_state: Some(
            req.application_states
                .last()
                .copied()
                .unwrap_or(YarnApplicationStateProto::Running as i32),
        ),
        application_type: Some("SPARK".into()),
        application_tags: req.application_tags.clone(),
        ..Default::default()
    }
}

/// The single report `getClusterNodes` answers, in the first requested state.
pub fn node_report(req: &GetClusterNodesRequestProto) -> NodeReportProto {
    NodeReportProto {
        node_id: Some(NodeIdProto {
            host: Some("node-1.test".into()),
            port: Some(45454),
        }),
        http_address: Some("node-1.test:8042".into()),
        rack_name: Some("/default-rack".into()),
        num_containers: Some(0),
        node_state: Some(
            req.node_states
                .first()
                .copied()
                .unwrap_or(NodeStateProto::NsRunning as i32),
        ),
        ..Default::default()
    }
}

pub fn test_service(probe: Arc<Probe>, slow: Duration) -> Service {
    let apps_probe = probe.clone();
    let nodes_probe = probe.clone();
    let slow_probe = probe.clone();
    let panic_probe = probe;
    Service::new(protocols::APPLICATION_CLIENT)
        .method(
            "getApplications",
            move |ctx: CallContext, req: GetApplicationsRequestProto| {
                let probe = apps_probe.clone();
                async move {
                    probe.record(&ctx, &req);
                    Ok::<_, RpcError>(GetApplicationsResponseProto {
                        applications: vec![app_report(&ctx.user, &req)],
                    })
                }
            },
        )
        .method(
            "getClusterNodes",
            move |ctx: CallContext, req: GetClusterNodesRequestProto| {
                let probe = nodes_probe.clone();
                async move {
                    probe.record(&ctx, &req);
                    Ok::<_, RpcError>(GetClusterNodesResponseProto {
                        node_reports: vec![node_report(&req)],
                    })
                }
            },
        )
        .method(
            SLOW_METHOD,
            move |ctx: CallContext, req: GetNewApplicationRequestProto| {
                let probe = slow_probe.clone();
                async move {
                    probe.record(&ctx, &req);
                    tokio::time::sleep(slow).await;
                    probe.slow_answered.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, RpcError>(GetNewApplicationResponseProto {
                        application_id: Some(ApplicationIdProto {
                            id: Some(2),
                            cluster_timestamp: Some(CLUSTER_TS),
                        }),
                        maximum_capability: None,
                    })
                }
            },
        )
        .method(
            PANIC_METHOD,
            move |ctx: CallContext, req: GetQueueInfoRequestProto| {
                let probe = panic_probe.clone();
                async move {
                    probe.record(&ctx, &req);
                    if req.queue_name.as_deref() != Some(CALM_QUEUE) {
                        panic!("deliberate panic in the {PANIC_METHOD} test handler");
                    }
                    Ok::<_, RpcError>(GetQueueInfoResponseProto::default())
                }
            },
        )
        .unsupported(&[UNSUPPORTED_METHOD])
}

pub struct TestServer {
    pub server: RpcServer,
    pub probe: Arc<Probe>,
    pub addr: String,
}

/// A server config for tests: Spindle's defaults with a recognisable name.
pub fn config() -> ServerConfig {
    ServerConfig {
        name: "ipc-test".into(),
        ..ServerConfig::default()
    }
}

/// Starts the test service on 127.0.0.1:0.
pub async fn start(config: ServerConfig, slow: Duration) -> TestServer {
    let probe = Arc::new(Probe::default());
    let addr = "127.0.0.1:0".parse().expect("loopback address parses");
    let server = RpcServer::bind(addr, vec![test_service(probe.clone(), slow)], config)
        .await
        .expect("bind the test server");
    let addr = server.local_addr().to_string();
    TestServer {
        server,
        probe,
        addr,
    }
}

// ---------------------------------------------------------------------------------------
// A well-behaved client
// ---------------------------------------------------------------------------------------

pub const GOOD_USER: &str = "alice";

pub async fn good_client(addr: &str) -> IpcClient {
    step(
        "connecting the well-behaved client",
        IpcClient::connect(
            addr,
            ClientOptions::new(GOOD_USER, protocols::APPLICATION_CLIENT),
        ),
    )
    .await
    .expect("the well-behaved client connects")
}

/// Asserts that `client` is served: a `getApplications` call tagged `tag` comes back with
/// the tag echoed.
pub async fn assert_served(client: &IpcClient, tag: &str) {
    let req = GetApplicationsRequestProto {
        application_tags: vec![tag.to_string()],
        ..Default::default()
    };
    let resp: GetApplicationsResponseProto = step(
        &format!("well-behaved call '{tag}'"),
        client.call("getApplications", &req),
    )
    .await
    .unwrap_or_else(|e| panic!("well-behaved call '{tag}' failed: {e}"));
    assert_eq!(resp.applications.len(), 1, "call '{tag}'");
    assert_eq!(resp.applications[0].application_tags, vec![tag.to_string()]);
    assert_eq!(resp.applications[0].user.as_deref(), Some(GOOD_USER));
}

// ---------------------------------------------------------------------------------------
// Hand-written wire encoding
// ---------------------------------------------------------------------------------------

/// The client id the raw peer uses (any 16 bytes will do).
pub const RAW_CLIENT_ID: [u8; 16] = *b"raw-peer-client!";

/// `bytes` preceded by their varint length.
pub fn delimited(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() + 5);
    prost::encode_length_delimiter(bytes.len(), &mut out).expect("a Vec grows as needed");
    out.extend_from_slice(bytes);
    out
}

/// A frame: 4-byte big-endian length, then the parts, each varint-delimited.
pub fn frame_of(parts: &[&[u8]]) -> Vec<u8> {
    let body: Vec<u8> = parts.iter().flat_map(|p| delimited(p)).collect();
    let len = u32::try_from(body.len()).expect("test frames are small");
    let mut out = len.to_be_bytes().to_vec();
    out.extend_from_slice(&body);
    out
}

/// An RPC request header as Hadoop's client builds it.
pub fn rpc_header(call_id: i32, client_id: &[u8]) -> RpcRequestHeaderProto {
    RpcRequestHeaderProto {
        rpc_kind: Some(RpcKindProto::RpcProtocolBuffer as i32),
        rpc_op: Some(OperationProto::RpcFinalPacket as i32),
        call_id,
        client_id: client_id.to_vec(),
        retry_count: Some(if call_id < 0 { -1 } else { 0 }),
        ..Default::default()
    }
}

pub fn context_frame(client_id: &[u8], user: &str, protocol: &str) -> Vec<u8> {
    let ctx = IpcConnectionContextProto {
        user_info: Some(UserInformationProto {
            effective_user: Some(user.to_string()),
            real_user: None,
        }),
        protocol: Some(protocol.to_string()),
    };
    frame_of(&[
        &rpc_header(-3, client_id).encode_to_vec(),
        &ctx.encode_to_vec(),
    ])
}

/// A call frame carrying an already-encoded request body.
pub fn call_frame_raw(
    call_id: i32,
    client_id: &[u8],
    protocol: &str,
    method: &str,
    body: &[u8],
) -> Vec<u8> {
    let req_header = RequestHeaderProto {
        method_name: method.to_string(),
        declaring_class_protocol_name: protocol.to_string(),
        client_protocol_version: 1,
    };
    frame_of(&[
        &rpc_header(call_id, client_id).encode_to_vec(),
        &req_header.encode_to_vec(),
        body,
    ])
}

pub fn call_frame(call_id: i32, method: &str, body: &impl Message) -> Vec<u8> {
    call_frame_raw(
        call_id,
        &RAW_CLIENT_ID,
        protocols::APPLICATION_CLIENT,
        method,
        &body.encode_to_vec(),
    )
}

/// `hrpc`, version 9, service class 0, the given auth byte.
pub fn preamble(auth: u8) -> [u8; 7] {
    [b'h', b'r', b'p', b'c', 9, 0, auth]
}

/// A getApplications request that the test service echoes back as a tag.
pub fn tagged_apps_request(tag: &str) -> GetApplicationsRequestProto {
    GetApplicationsRequestProto {
        application_tags: vec![tag.to_string()],
        ..Default::default()
    }
}

// ---------------------------------------------------------------------------------------
// Raw peer
// ---------------------------------------------------------------------------------------

/// One response frame as it came off the wire.
#[derive(Debug)]
pub struct Reply {
    /// The whole frame, length prefix included.
    pub raw: Vec<u8>,
    pub header: RpcResponseHeaderProto,
    /// What follows the delimited header.
    pub rest: Vec<u8>,
}

impl Reply {
    pub fn parse(raw: Vec<u8>) -> Reply {
        assert!(raw.len() >= 4, "a frame has a 4-byte length");
        let len = u32::from_be_bytes([raw[0], raw[1], raw[2], raw[3]]) as usize;
        assert_eq!(len, raw.len() - 4, "frame length prefix");
        let mut body = &raw[4..];
        let header = RpcResponseHeaderProto::decode_length_delimited(&mut body)
            .expect("the response header decodes");
        let rest = body.to_vec();
        Reply { raw, header, rest }
    }

    /// The encoded response header, as it was on the wire.
    pub fn header_bytes(&self) -> &[u8] {
        let mut body = &self.raw[4..];
        let n = prost::decode_length_delimiter(&mut body).expect("header length");
        &body[..n]
    }

    /// The delimited response message that must make up the rest of the frame.
    pub fn body<M: Message + Default>(&self) -> M {
        let mut rest = &self.rest[..];
        let msg = M::decode_length_delimited(&mut rest).expect("the response body decodes");
        assert!(
            rest.is_empty(),
            "{} bytes after the response body",
            rest.len()
        );
        msg
    }

    pub fn assert_success(&self, call_id: u32, client_id: &[u8]) {
        let h = &self.header;
        assert_eq!(h.call_id, call_id, "call id of {h:?}");
        assert_eq!(h.status, RpcStatusProto::Success as i32, "status of {h:?}");
        assert_eq!(h.server_ipc_version_num, Some(9), "version of {h:?}");
        assert_eq!(
            h.client_id.as_deref(),
            Some(client_id),
            "client id of {h:?}"
        );
        assert_eq!(h.exception_class_name, None);
        assert_eq!(h.error_msg, None);
        assert_eq!(h.error_detail, None);
    }

    fn assert_failure(
        &self,
        status: RpcStatusProto,
        call_id: u32,
        class: &str,
        code: RpcErrorCodeProto,
        message_parts: &[&str],
    ) {
        let h = &self.header;
        assert_eq!(h.status, status as i32, "status of {h:?}");
        assert_eq!(h.call_id, call_id, "call id of {h:?}");
        assert_eq!(h.server_ipc_version_num, Some(9), "version of {h:?}");
        assert_eq!(
            h.exception_class_name.as_deref(),
            Some(class),
            "class of {h:?}"
        );
        assert_eq!(h.error_detail, Some(code as i32), "error code of {h:?}");
        let msg = h.error_msg.as_deref().unwrap_or_default();
        for part in message_parts {
            assert!(
                msg.contains(part),
                "error message {msg:?} should mention {part:?}"
            );
        }
        assert!(
            self.rest.is_empty(),
            "a failed call has no body: {:?}",
            self.rest
        );
    }

    pub fn assert_error(
        &self,
        call_id: u32,
        class: &str,
        code: RpcErrorCodeProto,
        message_parts: &[&str],
    ) {
        self.assert_failure(RpcStatusProto::Error, call_id, class, code, message_parts);
    }

    pub fn assert_fatal(
        &self,
        call_id: u32,
        class: &str,
        code: RpcErrorCodeProto,
        message_parts: &[&str],
    ) {
        self.assert_failure(RpcStatusProto::Fatal, call_id, class, code, message_parts);
    }
}

/// A client that writes whatever bytes a test wants.
pub struct RawPeer {
    pub stream: TcpStream,
}

impl RawPeer {
    pub async fn connect(addr: &str) -> RawPeer {
        let stream = step("raw connect", TcpStream::connect(addr))
            .await
            .expect("raw connect");
        stream.set_nodelay(true).expect("set TCP_NODELAY");
        RawPeer { stream }
    }

    /// Connects, sends the NONE preamble and a connection context for `user`.
    pub async fn hello(addr: &str, user: &str) -> RawPeer {
        let mut peer = RawPeer::connect(addr).await;
        let mut bytes = preamble(0).to_vec();
        bytes.extend(context_frame(
            &RAW_CLIENT_ID,
            user,
            protocols::APPLICATION_CLIENT,
        ));
        peer.send(&bytes).await;
        peer
    }

    pub async fn send(&mut self, bytes: &[u8]) {
        step("raw write", self.stream.write_all(bytes))
            .await
            .expect("raw write");
    }

    pub async fn call(&mut self, call_id: i32, method: &str, body: &impl Message) {
        self.send(&call_frame(call_id, method, body)).await;
    }

    /// Reads one response frame.
    pub async fn reply(&mut self) -> Reply {
        let mut len = [0u8; 4];
        step("reading a reply length", self.stream.read_exact(&mut len))
            .await
            .expect("a reply frame (the connection ended instead)");
        let n = u32::from_be_bytes(len) as usize;
        assert!(n < 1 << 20, "implausible reply length {n}");
        let mut raw = len.to_vec();
        raw.resize(4 + n, 0);
        step(
            "reading a reply body",
            self.stream.read_exact(&mut raw[4..]),
        )
        .await
        .expect("the rest of the reply frame");
        Reply::parse(raw)
    }

    /// Asserts that the server closes the connection cleanly with nothing (more) to say.
    pub async fn expect_eof(&mut self) {
        let mut buf = [0u8; 256];
        match step(
            "waiting for the server to close",
            self.stream.read(&mut buf),
        )
        .await
        {
            Ok(0) => {}
            Ok(n) => panic!("expected the connection to close, got {:02x?}", &buf[..n]),
            Err(e) => panic!("expected a clean close, got {e}"),
        }
    }

    /// Asserts that nothing arrives, and the connection is not closed, for `quiet`.
    pub async fn expect_quiet(&mut self, quiet: Duration) {
        let mut buf = [0u8; 256];
        match tokio::time::timeout(quiet, self.stream.read(&mut buf)).await {
            Err(_) => {}
            Ok(Ok(0)) => panic!("the server closed a connection that should stay open"),
            Ok(Ok(n)) => panic!("expected silence, got {:02x?}", &buf[..n]),
            Ok(Err(e)) => panic!("expected silence, got {e}"),
        }
    }

    /// Everything the server sends until it closes.
    pub async fn read_to_end(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        step("reading until close", self.stream.read_to_end(&mut out))
            .await
            .expect("read until close");
        out
    }
}

// ---------------------------------------------------------------------------------------
// Golden captures
// ---------------------------------------------------------------------------------------

pub fn data(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

/// A client → server capture: preamble, then frames.
pub struct Capture {
    pub preamble: [u8; 7],
    /// Each frame with its length prefix.
    pub frames: Vec<Vec<u8>>,
}

impl Capture {
    pub fn parse(bytes: &[u8]) -> Capture {
        let preamble: [u8; 7] = bytes[..7].try_into().expect("7-byte preamble");
        let mut frames = Vec::new();
        let mut pos = 7;
        while pos < bytes.len() {
            let len = u32::from_be_bytes(
                bytes[pos..pos + 4]
                    .try_into()
                    .expect("4-byte length prefix"),
            ) as usize;
            let end = pos + 4 + len;
            assert!(end <= bytes.len(), "capture frame at {pos} is truncated");
            frames.push(bytes[pos..end].to_vec());
            pos = end;
        }
        Capture { preamble, frames }
    }
}

/// The varint-delimited parts of a frame (length prefix included in `frame`), raw.
pub fn frame_parts(frame: &[u8]) -> Vec<Vec<u8>> {
    let len = u32::from_be_bytes(frame[..4].try_into().expect("length prefix")) as usize;
    assert_eq!(len, frame.len() - 4, "frame length prefix");
    let mut rest = &frame[4..];
    let mut parts = Vec::new();
    while !rest.is_empty() {
        let n = prost::decode_length_delimiter(&mut rest).expect("a part length");
        assert!(
            n <= rest.len(),
            "part claims {n} bytes, {} left",
            rest.len()
        );
        parts.push(rest[..n].to_vec());
        rest = &rest[n..];
    }
    parts
}

pub fn decode<M: Message + Default>(bytes: &[u8]) -> M {
    M::decode(Bytes::copy_from_slice(bytes)).expect("message decodes")
}

// ---------------------------------------------------------------------------------------
// A server with a well-behaved client watching it
// ---------------------------------------------------------------------------------------

/// The user raw peers claim in their connection context.
pub const RAW_USER: &str = "bob";
/// Call id −1 as the uint32 of a response header.
pub const CALL_ID_MINUS_1: u32 = u32::MAX;
/// Call id −33 (SASL) as the uint32 of a response header.
pub const CALL_ID_SASL: u32 = 4_294_967_263;

/// A server plus a well-behaved client that is checked around each misbehaviour.
pub struct Bench {
    pub ts: TestServer,
    pub good: IpcClient,
}

impl Bench {
    pub async fn new(config: ServerConfig) -> Bench {
        Bench::with_slow(config, Duration::from_millis(200)).await
    }

    pub async fn with_slow(config: ServerConfig, slow: Duration) -> Bench {
        let ts = start(config, slow).await;
        let good = good_client(&ts.addr).await;
        assert_served(&good, "before").await;
        Bench { ts, good }
    }

    /// Calls the handlers saw from anyone but the well-behaved client.
    pub fn raw_calls(&self) -> Vec<SeenCall> {
        self.ts
            .probe
            .calls()
            .into_iter()
            .filter(|c| c.user != GOOD_USER)
            .collect()
    }

    /// The existing good connection and a brand-new one are both served.
    pub async fn healthy(&self, label: &str) {
        assert_served(&self.good, label).await;
        let fresh = good_client(&self.ts.addr).await;
        assert_served(&fresh, &format!("{label} (new connection)")).await;
    }
}

/// Sends a tagged getApplications as call `cid` and asserts it succeeds on this connection.
pub async fn assert_call_works(peer: &mut RawPeer, cid: i32, tag: &str) {
    peer.call(cid, "getApplications", &tagged_apps_request(tag))
        .await;
    let reply = peer.reply().await;
    assert_tagged_success(&reply, cid, tag);
}

/// Asserts `reply` is the successful answer to a tagged getApplications call `cid` from a
/// raw peer.
pub fn assert_tagged_success(reply: &Reply, cid: i32, tag: &str) {
    reply.assert_success(cid as u32, &RAW_CLIENT_ID);
    assert_eq!(reply.header.retry_count, Some(0));
    let resp: GetApplicationsResponseProto = reply.body();
    assert_eq!(resp.applications.len(), 1);
    assert_eq!(resp.applications[0].application_tags, vec![tag.to_string()]);
    assert_eq!(resp.applications[0].user.as_deref(), Some(RAW_USER));
}
