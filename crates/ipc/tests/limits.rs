//! What one peer can take from a server: connection slots (per peer address and in
//! total) and memory (the byte budget of request frames, read buffers). Each test runs a
//! real server on loopback; a second peer is a socket bound to 127.0.0.2 (Linux routes
//! all of 127/8 to the loopback interface). Assertions are on the server's own
//! accounting (`RpcServer::stats`), never on RSS or timings.

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::*;
use hadoop_protos::common::rpc_response_header_proto::RpcErrorCodeProto;
use spindle_ipc::{ServerConfig, ServerStats};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

/// A connection to `addr` from `source` (an address on the loopback interface).
async fn connect_from(source: &str, addr: &str) -> TcpStream {
    let socket = TcpSocket::new_v4().expect("a socket");
    let src: SocketAddr = format!("{source}:0").parse().expect("source address");
    socket.bind(src).expect("bind the source address");
    let addr: SocketAddr = addr.parse().expect("server address");
    step("connect", socket.connect(addr))
        .await
        .expect("connect")
}

/// Sends a hello and a tagged call from `source` and asserts it is answered.
async fn served_from(source: &str, addr: &str, tag: &str) {
    let mut s = connect_from(source, addr).await;
    let mut bytes = preamble(0).to_vec();
    bytes.extend(context_frame(
        &RAW_CLIENT_ID,
        RAW_USER,
        spindle_ipc::protocols::APPLICATION_CLIENT,
    ));
    bytes.extend(call_frame(0, "getApplications", &tagged_apps_request(tag)));
    step("send a call", s.write_all(&bytes))
        .await
        .expect("send a call");
    let mut peer = RawPeer { stream: s };
    let reply = peer.reply().await;
    assert_tagged_success(&reply, 0, tag);
}

/// Waits (bounded) until `pred` holds for the server's counters.
async fn until(ts: &TestServer, what: &str, pred: impl Fn(&ServerStats) -> bool) -> ServerStats {
    let deadline = Instant::now() + STEP;
    loop {
        let stats = ts.server.stats();
        if pred(&stats) {
            return stats;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: never happened; {stats:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

// ---------------------------------------------------------------------------------------
// Connections per peer
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_peer_cannot_take_every_slot() {
    bounded(async {
        let ts = start(
            ServerConfig {
                max_connections_per_peer: 8,
                ..config()
            },
            Duration::ZERO,
        )
        .await;
        // 127.0.0.1 opens its 8 connections and holds them.
        let mut held = Vec::new();
        for i in 0..8 {
            let mut peer = RawPeer::hello(&ts.addr, RAW_USER).await;
            assert_call_works(&mut peer, 0, &format!("held {i}")).await;
            held.push(peer);
        }
        // Its next connections are closed at once, without an answer.
        for _ in 0..20 {
            let mut extra = RawPeer::connect(&ts.addr).await;
            let mut buf = [0u8; 64];
            match step("a refused connection closes", extra.stream.read(&mut buf)).await {
                Ok(0) | Err(_) => {}
                Ok(n) => panic!("a refused connection got {:02x?}", &buf[..n]),
            }
        }
        let stats = ts.server.stats();
        assert_eq!(stats.refused_peer_full, 20, "{stats:?}");
        assert_eq!(stats.refused_server_full, 0, "{stats:?}");
        // Another peer is served meanwhile.
        served_from("127.0.0.2", &ts.addr, "other peer").await;
        // The held connections are still served.
        for (i, peer) in held.iter_mut().enumerate() {
            assert_call_works(peer, 1, &format!("still held {i}")).await;
        }
        // A slot that frees is the peer's again.
        drop(held.pop());
        until(&ts, "the freed slot", |s| s.connections == 7).await;
        served_from("127.0.0.1", &ts.addr, "after a slot freed").await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_per_peer_limit_holds_under_a_flood() {
    bounded(async {
        // Spindle's defaults: 256 per peer, 16,384 in total.
        let ts = start(config(), Duration::ZERO).await;
        assert_eq!(config().max_connections_per_peer, 256);
        let mut flood = Vec::new();
        for _ in 0..300 {
            let mut s = connect_from("127.0.0.1", &ts.addr).await;
            // Preamble and context, then nothing: an idle connection.
            let mut hello = preamble(0).to_vec();
            hello.extend(context_frame(
                &RAW_CLIENT_ID,
                "flood",
                spindle_ipc::protocols::APPLICATION_CLIENT,
            ));
            let _ = s.write_all(&hello).await;
            flood.push(s);
        }
        let stats = until(&ts, "the flood is sorted", |s| {
            s.connections == 256 && s.refused_peer_full == 44
        })
        .await;
        assert_eq!(stats.refused_server_full, 0);
        served_from("127.0.0.2", &ts.addr, "while 127.0.0.1 floods").await;
    })
    .await;
}

// ---------------------------------------------------------------------------------------
// The byte budget
// ---------------------------------------------------------------------------------------

const MIB: usize = 1024 * 1024;

/// A frame header declaring a call frame of `len` bytes; what follows is whatever the
/// test sends.
fn declare(len: usize) -> Vec<u8> {
    (len as u32).to_be_bytes().to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_frames_wait_for_the_budget_and_ordinary_calls_go_on() {
    bounded(async {
        // A 4 MiB budget: 3 MiB for large frames, 1 MiB kept for small ones.
        let bench = Bench::new(ServerConfig {
            max_buffered_request_bytes: 4 * MIB,
            max_connections_per_peer: 0,
            ..config()
        })
        .await;
        let stats = bench.ts.server.stats();
        assert_eq!(stats.buffered_request_bytes_limit, 4 * MIB);
        // Eight connections each declare a 1 MiB frame and send half of it.
        let frame = MIB;
        let mut big = Vec::new();
        for _ in 0..8 {
            let mut peer = RawPeer::hello(&bench.ts.addr, RAW_USER).await;
            peer.send(&declare(frame)).await;
            // Half the body; the writes of a connection that waits for budget may
            // block once the socket buffers are full, so they go on in the background.
            let mut stream = peer.stream;
            big.push(tokio::spawn(async move {
                let half = vec![0u8; frame / 2];
                let _ = stream.write_all(&half).await;
                stream
            }));
        }
        // Three frames fit in the large share; the other five wait, having allocated
        // nothing.
        let stats = until(&bench.ts, "three frames admitted, five waiting", |s| {
            s.waiting_for_budget == 5
        })
        .await;
        assert_eq!(stats.buffered_request_bytes, 3 * frame, "{stats:?}");
        // A normal client is served meanwhile, on its old and on a new connection.
        bench.healthy("while large frames wait").await;
        let stats = bench.ts.server.stats();
        assert!(
            stats.peak_buffered_request_bytes <= 4 * MIB,
            "the budget was exceeded: {stats:?}"
        );
        assert!(
            stats.peak_buffered_request_bytes >= 3 * frame,
            "the large frames were not counted: {stats:?}"
        );
        // When the senders give up, every byte comes back.
        for t in big {
            drop(t.await.expect("sender task"));
        }
        let stats = until(&bench.ts, "the budget is given back", |s| {
            s.buffered_request_bytes == 0 && s.waiting_for_budget == 0
        })
        .await;
        assert!(stats.peak_buffered_request_bytes <= 4 * MIB, "{stats:?}");
        bench.healthy("after the large frames").await;
    })
    .await;
}

#[tokio::test]
async fn a_frame_the_budget_can_never_hold_is_refused_like_an_oversized_one() {
    bounded(async {
        let bench = Bench::new(ServerConfig {
            max_buffered_request_bytes: 4 * MIB,
            ..config()
        })
        .await;
        let mut peer = RawPeer::hello(&bench.ts.addr, RAW_USER).await;
        // More than the 3 MiB large share, less than ipc.maximum.data.length.
        peer.send(&declare(3 * MIB + 1)).await;
        let reply = peer.reply().await;
        reply.assert_fatal(
            CALL_ID_MINUS_1,
            spindle_ipc::class::RPC_SERVER,
            RpcErrorCodeProto::FatalInvalidRpcHeader,
            &["exceeds maximum data length"],
        );
        peer.expect_eof().await;
        assert_eq!(bench.ts.server.stats().buffered_request_bytes, 0);
        bench.healthy("after the refused frame").await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_holds_its_bytes_until_it_is_answered() {
    bounded(async {
        // The slow method answers after 600 ms.
        let bench = Bench::with_slow(config(), Duration::from_millis(600)).await;
        let mut peer = RawPeer::hello(&bench.ts.addr, RAW_USER).await;
        let call = call_frame(
            0,
            SLOW_METHOD,
            &hadoop_protos::yarn::GetNewApplicationRequestProto {},
        );
        let body_len = call.len() - 4;
        peer.send(&call).await;
        let stats = until(&bench.ts, "the call's bytes are counted", |s| {
            s.buffered_request_bytes == body_len
        })
        .await;
        assert_eq!(stats.buffered_request_bytes, body_len);
        let _ = peer.reply().await;
        until(&bench.ts, "the bytes come back", |s| {
            s.buffered_request_bytes == 0
        })
        .await;
    })
    .await;
}

// ---------------------------------------------------------------------------------------
// Buffers after bursts
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_hold_no_read_buffers() {
    bounded(async {
        let ts = start(config(), Duration::ZERO).await;
        let mut peers = Vec::new();
        for i in 0..50 {
            let mut peer = RawPeer::hello(&ts.addr, RAW_USER).await;
            assert_call_works(&mut peer, 0, &format!("small {i}")).await;
            peers.push(peer);
        }
        // A large call on one of them: its frame is not kept afterwards.
        let mut req = tagged_apps_request("large");
        req.queues = vec!["x".repeat(2 * MIB)];
        peers[0].call(1, "getApplications", &req).await;
        assert_tagged_success(&peers[0].reply().await, 1, "large");
        let stats = until(&ts, "every read buffer is released", |s| {
            s.connections == 50 && s.read_buffer_bytes == 0 && s.buffered_request_bytes == 0
        })
        .await;
        assert!(stats.peak_buffered_request_bytes >= 2 * MIB, "{stats:?}");
        // They are still usable.
        for (i, peer) in peers.iter_mut().enumerate() {
            assert_call_works(peer, 2, &format!("again {i}")).await;
        }
    })
    .await;
}

// ---------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------

#[test]
fn limits_come_from_hadoop_and_spindle_keys() {
    use spindle_common::conf::Configuration;
    use spindle_ipc::server::keys;

    // Unset: Spindle's defaults (Hadoop's own default for the total is "no limit").
    let defaults = ServerConfig::from_conf(&Configuration::empty(), "x").expect("defaults");
    assert_eq!(defaults.max_connections, 16_384);
    assert_eq!(defaults.max_connections_per_peer, 256);
    assert_eq!(defaults.max_buffered_request_bytes, 256 * MIB);
    assert_eq!(defaults.name, "x");

    let mut conf = Configuration::empty();
    conf.set(keys::MAX_CONNECTIONS, "0");
    conf.set(keys::MAX_CONNECTIONS_PER_PEER, "16");
    conf.set(keys::MAX_BUFFERED_REQUEST_BYTES, "33554432");
    conf.set(keys::MAX_DATA_LENGTH, "1048576");
    conf.set(keys::CONNECTION_MAXIDLETIME, "5000");
    let cfg = ServerConfig::from_conf(&conf, "rm-client").expect("valid limits");
    assert_eq!(cfg.max_connections, 0);
    assert_eq!(cfg.max_connections_per_peer, 16);
    assert_eq!(cfg.max_buffered_request_bytes, 32 * MIB);
    assert_eq!(cfg.max_frame_bytes, MIB);
    assert_eq!(cfg.idle_timeout, Duration::from_secs(10));

    conf.set(keys::MAX_CONNECTIONS_PER_PEER, "-1");
    let err = ServerConfig::from_conf(&conf, "x").expect_err("a negative limit");
    assert!(
        err.to_string().contains(keys::MAX_CONNECTIONS_PER_PEER),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zero_means_no_limit() {
    bounded(async {
        let ts = start(
            ServerConfig {
                max_connections: 0,
                max_connections_per_peer: 0,
                ..config()
            },
            Duration::ZERO,
        )
        .await;
        let mut peers = Vec::new();
        for i in 0..300 {
            let mut peer = RawPeer::hello(&ts.addr, RAW_USER).await;
            assert_call_works(&mut peer, 0, &format!("conn {i}")).await;
            peers.push(peer);
        }
        let stats = ts.server.stats();
        assert_eq!(stats.connections, 300, "{stats:?}");
        assert_eq!(stats.refused_peer_full + stats.refused_server_full, 0);
    })
    .await;
}
