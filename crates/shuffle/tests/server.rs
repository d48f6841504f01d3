//! The shuffle server over real sockets: replies, refusals, keep-alive, limits, and that no
//! request hurts another. (Interop with Hadoop's own Java classes is
//! `integration/tests/shuffle_wire.rs`.)

use std::path::Path;
use std::time::{Duration, Instant};

use spindle_shuffle::hash::{generate_hash, hmac_sha1};
use spindle_shuffle::index::{encode_index, IndexRecord};
use spindle_shuffle::wire::{JobToken, ShuffleHeader};
use spindle_shuffle::{ShuffleConfig, ShuffleServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const APP_A: &str = "application_1700000000000_0001";
const JOB_A: &str = "job_1700000000000_0001";
const APP_B: &str = "application_1700000000000_0002";
const JOB_B: &str = "job_1700000000000_0002";
const SECRET_A: &[u8] = b"secret-of-job-a";
const SECRET_B: &[u8] = b"secret-of-job-b";
const REDUCES: usize = 3;
/// Larger than what loopback socket buffers hold, so an abandoned transfer must fail.
const BIG: usize = 24 << 20;

fn map_a(i: usize) -> String {
    format!("attempt_1700000000000_0001_m_{i:06}_0")
}

fn map_b(i: usize) -> String {
    format!("attempt_1700000000000_0002_m_{i:06}_0")
}

/// The bytes of partition `reduce` of map `map`: distinct per map and partition.
fn partition_bytes(map: &str, reduce: usize, len: usize) -> Vec<u8> {
    let seed = map.bytes().fold(reduce as u32 * 31 + 7, |a, b| {
        a.wrapping_mul(16777619) ^ u32::from(b)
    });
    (0..len)
        .map(|i| (seed.wrapping_add(i as u32).wrapping_mul(2654435761) >> 13) as u8)
        .collect()
}

fn write_map_output(local_dir: &Path, app: &str, map: &str, sizes: [usize; REDUCES]) {
    let dir = local_dir.join(format!("usercache/alice/appcache/{app}/output/{map}"));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let mut data = Vec::new();
    let mut records = Vec::new();
    for (r, size) in sizes.iter().enumerate() {
        let bytes = partition_bytes(map, r, *size);
        records.push(IndexRecord {
            start_offset: data.len() as i64,
            raw_length: *size as i64 + 100,
            part_length: *size as i64,
        });
        data.extend_from_slice(&bytes);
    }
    std::fs::write(dir.join("file.out"), data).expect("data");
    std::fs::write(dir.join("file.out.index"), encode_index(&records)).expect("index");
}

struct Fixture {
    dirs: Vec<tempfile::TempDir>,
    server: ShuffleServer,
}

async fn fixture(tune: impl FnOnce(&mut ShuffleConfig)) -> Fixture {
    let d1 = tempfile::tempdir().expect("tmp");
    let d2 = tempfile::tempdir().expect("tmp");
    write_map_output(d1.path(), APP_A, &map_a(0), [10, 0, 300]);
    write_map_output(d2.path(), APP_A, &map_a(1), [1, 2, 3]);
    write_map_output(d1.path(), APP_A, &map_a(2), [60_000, 5, 6]);
    write_map_output(d2.path(), APP_B, &map_b(0), [7, 8, 9]);
    let mut config = ShuffleConfig::new(vec![d1.path().to_path_buf(), d2.path().to_path_buf()]);
    config.bind_host = "127.0.0.1".into();
    config.port = 0;
    tune(&mut config);
    let server = ShuffleServer::start(config).await.expect("start");
    server
        .add_application(
            APP_A,
            "alice",
            &JobToken::new(JOB_A, SECRET_A.to_vec()).encode(),
        )
        .expect("add a");
    server
        .add_application(
            APP_B,
            "alice",
            &JobToken::new(JOB_B, SECRET_B.to_vec()).encode(),
        )
        .expect("add b");
    Fixture {
        dirs: vec![d1, d2],
        server,
    }
}

fn target(job: &str, reduce: usize, maps: &[String]) -> String {
    format!(
        "/mapOutput?job={job}&reduce={reduce}&map={}",
        maps.join(",")
    )
}

/// A fetcher's request, hashed with `secret` as `SecureShuffleUtils` would.
fn request(port: u16, target: &str, secret: &[u8]) -> String {
    let hash = generate_hash(secret, format!("{port}{target}").as_bytes());
    format!(
        "GET {target} HTTP/1.1\r\nUrlHash: {hash}\r\nname: mapreduce\r\nversion: 1.0.0\r\nHost: 127.0.0.1:{port}\r\n\r\n"
    )
}

#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Reads one reply: the body by Content-Length when there is one, else to the end.
async fn read_reply(stream: &mut TcpStream, pending: &mut Vec<u8>) -> Reply {
    let head_end = loop {
        if let Some(i) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let mut chunk = [0u8; 8192];
        let n = stream.read(&mut chunk).await.expect("read head");
        assert!(n > 0, "connection closed before a reply head");
        pending.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8(pending[..head_end].to_vec()).expect("utf8 head");
    pending.drain(..head_end + 4);
    let mut lines = head.split("\r\n");
    let status_line = lines.next().expect("status line");
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status");
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (n, v) = l.split_once(':').expect("header");
            (n.trim().to_string(), v.trim().to_string())
        })
        .collect();
    let mut reply = Reply {
        status,
        headers,
        body: Vec::new(),
    };
    match reply
        .header("Content-Length")
        .map(|v| v.parse::<usize>().expect("length"))
    {
        Some(len) => {
            while pending.len() < len {
                let mut chunk = vec![0u8; 1 << 16];
                let n = stream.read(&mut chunk).await.expect("read body");
                assert!(n > 0, "body ended early");
                pending.extend_from_slice(&chunk[..n]);
            }
            reply.body = pending.drain(..len).collect();
        }
        None => {
            stream.read_to_end(pending).await.expect("read to end");
            reply.body = std::mem::take(pending);
        }
    }
    reply
}

async fn exchange(port: u16, text: &str) -> Reply {
    let mut stream = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    stream.write_all(text.as_bytes()).await.expect("send");
    read_reply(&mut stream, &mut Vec::new()).await
}

/// Splits a body into (header, bytes) per map output.
fn outputs_of(mut body: &[u8]) -> Vec<(ShuffleHeader, Vec<u8>)> {
    let mut out = Vec::new();
    while !body.is_empty() {
        let (h, n) = ShuffleHeader::decode(body).expect("shuffle header");
        let len = h.compressed_length as usize;
        out.push((h, body[n..n + len].to_vec()));
        body = &body[n + len..];
    }
    out
}

async fn assert_good_fetch(port: u16) {
    let maps = [map_a(0), map_a(1)];
    let t = target(JOB_A, 2, &maps);
    let reply = exchange(port, &request(port, &t, SECRET_A)).await;
    assert_eq!(reply.status, 200, "{reply:?}");
    let outputs = outputs_of(&reply.body);
    assert_eq!(outputs.len(), 2);
    assert_eq!(outputs[0].1, partition_bytes(&maps[0], 2, 300));
    assert_eq!(outputs[1].1, partition_bytes(&maps[1], 2, 3));
}

#[tokio::test]
async fn serves_map_outputs_as_hadoop_frames_them() {
    // With `sendfile`, Hadoop's default (mapreduce.shuffle.transferTo.allowed).
    serves_as_hadoop(|c| assert!(c.transfer_to)).await;
}

#[tokio::test]
async fn serves_map_outputs_through_the_buffer_when_transfer_to_is_off() {
    serves_as_hadoop(|c| {
        c.transfer_to = false;
        c.transfer_buffer_size = 4096;
    })
    .await;
}

async fn serves_as_hadoop(tune: impl FnOnce(&mut ShuffleConfig)) {
    let f = fixture(tune).await;
    let port = f.server.port();
    assert_eq!(f.server.meta_data(), i32::from(port).to_be_bytes().to_vec());
    let maps = [map_a(0), map_a(1), map_a(2)];
    for reduce in 0..REDUCES {
        let t = target(JOB_A, reduce, &maps);
        let text = request(port, &t, SECRET_A);
        let reply = exchange(port, &text).await;
        assert_eq!(reply.status, 200, "{reply:?}");
        assert_eq!(reply.header("name"), Some("mapreduce"));
        assert_eq!(reply.header("version"), Some("1.0.0"));
        assert_eq!(reply.header("Connection"), Some("close"));
        assert_eq!(reply.header("Content-Length"), None);
        // ReplyHash = HMAC of the UrlHash string.
        let url_hash = generate_hash(SECRET_A, format!("{port}{t}").as_bytes());
        assert_eq!(
            reply.header("ReplyHash"),
            Some(generate_hash(SECRET_A, url_hash.as_bytes()).as_str())
        );
        let outputs = outputs_of(&reply.body);
        assert_eq!(outputs.len(), 3);
        for (i, (h, bytes)) in outputs.iter().enumerate() {
            assert_eq!(h.map_id, maps[i]);
            assert_eq!(h.for_reduce, reduce as i32);
            assert_eq!(h.uncompressed_length, h.compressed_length + 100);
            assert_eq!(bytes, &partition_bytes(&maps[i], reduce, bytes.len()));
        }
    }
    let stats = f.server.stats();
    assert_eq!(stats.outputs_ok, 9);
    assert_eq!(stats.refused, 0);
    // The hash is unrelated to any other key.
    assert_ne!(hmac_sha1(SECRET_A, b"x"), hmac_sha1(SECRET_B, b"x"));
}

#[tokio::test]
async fn keep_alive_serves_several_requests_on_one_connection() {
    let f = fixture(|_| {}).await;
    let port = f.server.port();
    let mut stream = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let mut pending = Vec::new();
    for reduce in [0, 2, 1] {
        let t = format!(
            "{}&keepAlive=true",
            target(JOB_A, reduce, &[map_a(1), map_a(0)])
        );
        stream
            .write_all(request(port, &t, SECRET_A).as_bytes())
            .await
            .expect("send");
        let reply = read_reply(&mut stream, &mut pending).await;
        assert_eq!(reply.status, 200, "{reply:?}");
        assert_eq!(reply.header("Connection"), Some("Keep-Alive"));
        assert_eq!(reply.header("Keep-Alive"), Some("timeout=5"));
        let outputs = outputs_of(&reply.body);
        assert_eq!(
            outputs[0].1,
            partition_bytes(&map_a(1), reduce, outputs[0].1.len())
        );
        assert_eq!(outputs[1].0.map_id, map_a(0));
    }
    // With keep-alive configured, a request without the parameter is kept alive too.
    let f = fixture(|c| {
        c.keep_alive_enabled = true;
        c.keep_alive_timeout = Duration::from_secs(1);
    })
    .await;
    let port = f.server.port();
    let mut stream = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let mut pending = Vec::new();
    let t = target(JOB_A, 0, &[map_a(0)]);
    stream
        .write_all(request(port, &t, SECRET_A).as_bytes())
        .await
        .expect("send");
    let reply = read_reply(&mut stream, &mut pending).await;
    assert_eq!(reply.header("Keep-Alive"), Some("timeout=1"));
    // An idle kept-alive connection is closed after the timeout.
    let mut rest = Vec::new();
    let n = tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut rest))
        .await
        .expect("closed by the server")
        .expect("read");
    assert_eq!(n, 0);
}

#[tokio::test]
async fn refusals_use_hadoops_statuses_and_others_go_on() {
    let f = fixture(|_| {}).await;
    let port = f.server.port();
    let good_target = target(JOB_A, 0, &[map_a(0)]);

    let post = request(port, &good_target, SECRET_A).replacen("GET", "POST", 1);
    assert_eq!(exchange(port, &post).await.status, 405);

    let old = request(port, &good_target, SECRET_A).replace("version: 1.0.0", "version: 0.9");
    let r = exchange(port, &old).await;
    assert_eq!(
        (r.status, r.body.as_slice()),
        (400, &b"Incompatible shuffle request version"[..])
    );
    assert_eq!(r.header("name"), Some("mapreduce"));
    assert_eq!(r.header("Content-Type"), Some("text/plain; charset=UTF-8"));

    let r = exchange(port, &request(port, "/mapOutput?job=x&reduce=0", SECRET_A)).await;
    assert_eq!(
        (r.status, r.body.as_slice()),
        (400, &b"Required param job, map and reduce"[..])
    );

    let r = exchange(
        port,
        &request(port, &target("job_9_0009", 0, &[map_a(0)]), SECRET_A),
    )
    .await;
    assert_eq!(
        (r.status, r.body.as_slice()),
        (401, &b"Can't find job token for job job_9_0009 !!"[..])
    );

    let no_hash = request(port, &good_target, SECRET_A)
        .split("\r\n")
        .filter(|l| !l.starts_with("UrlHash"))
        .collect::<Vec<_>>()
        .join("\r\n");
    let r = exchange(port, &no_hash).await;
    assert_eq!(
        (r.status, r.body.as_slice()),
        (401, &b"fetcher cannot be authenticated"[..])
    );

    // Forged: hashed with another job's key, or for another URL.
    let r = exchange(port, &request(port, &good_target, SECRET_B)).await;
    assert_eq!(
        (r.status, r.body.as_slice()),
        (401, &b"Verification of the hashReply failed"[..])
    );
    assert_eq!(r.header("ReplyHash"), None);
    let other = target(JOB_A, 1, &[map_a(0)]);
    let replayed = request(port, &good_target, SECRET_A).replacen(&good_target, &other, 1);
    assert_eq!(exchange(port, &replayed).await.status, 401);

    // Job B's token, job B's query, but job A's map: refused before any file is read.
    let r = exchange(
        port,
        &request(port, &target(JOB_B, 0, &[map_b(0), map_a(0)]), SECRET_B),
    )
    .await;
    assert_eq!(r.status, 500, "{r:?}");
    assert!(String::from_utf8_lossy(&r.body).contains("is not a map attempt of"));
    // Path tricks in a map id.
    let sneaky = format!("{}/../../{APP_A}/output/{}", map_b(0), map_a(0));
    let r = exchange(port, &request(port, &target(JOB_B, 0, &[sneaky]), SECRET_B)).await;
    assert_eq!(r.status, 500);
    // A map this job does not have.
    let r = exchange(
        port,
        &request(port, &target(JOB_A, 0, &[map_a(7)]), SECRET_A),
    )
    .await;
    assert_eq!(r.status, 500);
    assert!(
        String::from_utf8_lossy(&r.body).starts_with("Could not find usercache/alice/appcache/")
    );
    // A partition the index does not have.
    let r = exchange(
        port,
        &request(port, &target(JOB_A, 3, &[map_a(0)]), SECRET_A),
    )
    .await;
    assert_eq!(r.status, 500);

    // Garbage and oversized heads.
    assert_eq!(exchange(port, "HELLO\r\n\r\n").await.status, 400);
    let huge = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(20000));
    assert_eq!(exchange(port, &huge).await.status, 400);

    assert_eq!(f.server.stats().refused, 13);
    assert_good_fetch(port).await;

    // A stopped application's token no longer works.
    f.server.remove_application(APP_A);
    let r = exchange(port, &request(port, &good_target, SECRET_A)).await;
    assert_eq!(r.status, 401);
}

#[tokio::test]
async fn connections_beyond_the_maximum_get_429_and_retry_after() {
    let f = fixture(|c| c.max_connections = 2).await;
    let port = f.server.port();
    let idle1 = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let idle2 = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    // Both idle connections are counted once the server has accepted them.
    let deadline = Instant::now() + Duration::from_secs(30);
    while f.server.stats().connections < 2 {
        assert!(Instant::now() < deadline, "connections not accepted");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let good = request(port, &target(JOB_A, 0, &[map_a(0)]), SECRET_A);
    let r = exchange(port, &good).await;
    assert_eq!(r.status, 429);
    assert_eq!(r.header("Retry-After"), Some("1000"));
    drop(idle1);
    // Once a slot is free again, fetches are served.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = exchange(port, &good).await;
        if r.status == 200 {
            break;
        }
        assert_eq!(r.status, 429);
        assert!(Instant::now() < deadline, "the freed slot never came back");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(idle2);
}

#[tokio::test]
async fn a_reducer_leaving_mid_transfer_hurts_nobody() {
    let f = fixture(|c| c.transfer_buffer_size = 8192).await;
    write_map_output(f.dirs[0].path(), APP_A, &map_a(2), [BIG, 5, 6]);
    let port = f.server.port();
    // Several reducers read a little of the big output, then vanish.
    for _ in 0..4 {
        let mut stream = TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("connect");
        let t = target(JOB_A, 0, &[map_a(2)]);
        stream
            .write_all(request(port, &t, SECRET_A).as_bytes())
            .await
            .expect("send");
        let mut some = [0u8; 1000];
        stream.read_exact(&mut some).await.expect("first bytes");
        drop(stream);
    }
    // Meanwhile and afterwards, whole fetches succeed.
    assert_good_fetch(port).await;
    let t = target(JOB_A, 0, &[map_a(2)]);
    let reply = exchange(port, &request(port, &t, SECRET_A)).await;
    let outputs = outputs_of(&reply.body);
    assert_eq!(outputs[0].1.len(), BIG);
    assert_eq!(outputs[0].1, partition_bytes(&map_a(2), 0, BIG));
    // The abandoned transfers end (as failures) rather than holding their connections.
    let deadline = Instant::now() + Duration::from_secs(60);
    while f.server.stats().connections > 0 || f.server.stats().outputs_failed < 1 {
        assert!(Instant::now() < deadline, "stats: {:?}", f.server.stats());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_silent_connection_is_closed_at_the_request_deadline() {
    let f = fixture(|c| c.request_timeout = Duration::from_millis(200)).await;
    let port = f.server.port();
    let mut silent = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    silent
        .write_all(b"GET /mapOutput?job=")
        .await
        .expect("half a line");
    let mut rest = Vec::new();
    let n = tokio::time::timeout(Duration::from_secs(30), silent.read_to_end(&mut rest))
        .await
        .expect("closed by the server")
        .unwrap_or(0);
    assert_eq!(n, 0);
    assert_good_fetch(port).await;
}

#[tokio::test]
async fn bad_service_data_and_ids_are_refused() {
    let f = fixture(|_| {}).await;
    assert!(f
        .server
        .add_application(
            "application_x",
            "alice",
            &JobToken::new(JOB_A, b"k".to_vec()).encode()
        )
        .is_err());
    assert!(f
        .server
        .add_application(
            APP_A,
            "../root",
            &JobToken::new(JOB_A, b"k".to_vec()).encode()
        )
        .is_err());
    assert!(f
        .server
        .add_application(APP_A, "alice", b"\x05abc")
        .is_err());
    assert!(f.server.add_application(APP_A, "alice", &[]).is_err());
    // The earlier registration still stands.
    assert_good_fetch(f.server.port()).await;
    // Unknown ids are ignored on stop.
    f.server.remove_application("nonsense");
    f.server.remove_application("application_1_0042");
    assert_good_fetch(f.server.port()).await;
}

#[tokio::test]
async fn dropping_the_server_closes_its_connections_and_port() {
    let f = fixture(|c| c.keep_alive_enabled = true).await;
    let port = f.server.port();
    let mut stream = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let t = target(JOB_A, 0, &[map_a(0)]);
    stream
        .write_all(request(port, &t, SECRET_A).as_bytes())
        .await
        .expect("send");
    let reply = read_reply(&mut stream, &mut Vec::new()).await;
    assert_eq!(reply.status, 200);
    let Fixture { dirs, server } = f;
    drop(server);
    // The kept-alive connection ends.
    let mut rest = Vec::new();
    let n = tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut rest))
        .await
        .expect("closed when the server is dropped")
        .unwrap_or(0);
    assert_eq!(n, 0);
    // The port is free again.
    let mut config = ShuffleConfig::new(vec![dirs[0].path().to_path_buf()]);
    config.bind_host = "127.0.0.1".into();
    config.port = port;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match ShuffleServer::start(config.clone()).await {
            Ok(again) => {
                assert_eq!(again.port(), port);
                break;
            }
            Err(e) => {
                assert!(Instant::now() < deadline, "port still taken: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

#[tokio::test]
async fn a_reducer_that_stops_reading_is_dropped_and_frees_the_only_buffer() {
    let f = fixture(|c| {
        c.transfer_buffer_size = 8192;
        c.max_buffer_bytes = 8192;
        c.write_timeout = Duration::from_millis(500);
    })
    .await;
    write_map_output(f.dirs[0].path(), APP_A, &map_a(2), [BIG, 5, 6]);
    let port = f.server.port();
    // This reducer asks for the big output and never reads: it holds the one buffer until
    // its writes stall past the deadline.
    let mut stuck = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let t = target(JOB_A, 0, &[map_a(2)]);
    stuck
        .write_all(request(port, &t, SECRET_A).as_bytes())
        .await
        .expect("send");
    let deadline = Instant::now() + Duration::from_secs(30);
    while f.server.stats().output_bytes == 0 {
        assert!(
            Instant::now() < deadline,
            "the stuck transfer never started"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Another reducer is served once the stuck one is dropped.
    tokio::time::timeout(Duration::from_secs(60), assert_good_fetch(port))
        .await
        .expect("served after the stalled transfer was dropped");
    assert!(
        f.server.stats().outputs_failed >= 1,
        "{:?}",
        f.server.stats()
    );
    drop(stuck);
}

#[tokio::test]
async fn tokens_survive_a_restart_with_a_recovery_dir() {
    let state = tempfile::tempdir().expect("state");
    let recovery = state.path().join("mapreduce_shuffle");
    let f = fixture(|c| c.recovery_dir = Some(recovery.clone())).await;
    assert_good_fetch(f.server.port()).await;
    // Job B ends before the restart: its token must not come back.
    f.server.remove_application(APP_B);
    let Fixture { dirs, server } = f;
    drop(server);
    let mut config = ShuffleConfig::new(dirs.iter().map(|d| d.path().to_path_buf()).collect());
    config.bind_host = "127.0.0.1".into();
    config.port = 0;
    config.recovery_dir = Some(recovery.clone());
    let restarted = ShuffleServer::start(config.clone()).await.expect("restart");
    let port = restarted.port();
    assert_good_fetch(port).await;
    let r = exchange(
        port,
        &request(port, &target(JOB_B, 0, &[map_b(0)]), SECRET_B),
    )
    .await;
    assert_eq!(r.status, 401);
    // Without the recovery dir nothing is remembered.
    config.recovery_dir = None;
    let forgetful = ShuffleServer::start(config).await.expect("start");
    let port = forgetful.port();
    let r = exchange(
        port,
        &request(port, &target(JOB_A, 0, &[map_a(0)]), SECRET_A),
    )
    .await;
    assert_eq!(r.status, 401);
}

#[tokio::test]
async fn a_taken_port_is_a_clear_start_error() {
    fn shareable<T: Send + Sync + 'static>(_: &T) {}
    let f = fixture(|_| {}).await;
    shareable(&f.server);
    let mut config = ShuffleConfig::new(Vec::new());
    config.bind_host = "127.0.0.1".into();
    config.port = f.server.port();
    let e = ShuffleServer::start(config).await.expect_err("port in use");
    let text = e.to_string();
    assert!(
        text.contains(&format!("127.0.0.1:{}", f.server.port())),
        "{text}"
    );
}
