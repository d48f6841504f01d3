//! Abuse experiment for the IPC server (issue S14, finding 5): what one local
//! process can do to a server's connection slots and memory.
//!
//! The server runs in a child process (this binary with `server`), so its
//! resident memory (`VmRSS` of `/proc/<pid>/status`) is not mixed with the
//! attacker's. Three scenarios:
//!
//! - `lockout [--conns N]`: N connections from 127.0.0.1 that send the
//!   preamble, a connection context and then only pings; afterwards a real
//!   call is tried from 127.0.0.1 and from 127.0.0.2.
//! - `frames [--conns N] [--frame-mib M]`: N connections each declare an
//!   M MiB frame and send all of it but the last byte; the server's RSS is
//!   read once the senders stall, and a real call is tried meanwhile.
//! - `handshakes [--conns N]`: N connections each make one call and stay
//!   open; RSS while they are open and after they have all closed.
//!
//! Run (debug build; memory figures, not speed):
//! `cargo test -p spindle-ipc --bench abuse -- frames --conns 4 --frame-mib 128`
//! (raise the open-file limit for `lockout`: it needs N + a few descriptors
//! on each side). Figures are printed, never asserted: see docs/benchmarks.md.

use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hadoop_protos::common::rpc_request_header_proto::OperationProto;
use hadoop_protos::common::{
    IpcConnectionContextProto, RequestHeaderProto, RpcKindProto, RpcRequestHeaderProto,
    UserInformationProto,
};
use hadoop_protos::yarn::{
    ApplicationReportProto, GetApplicationsRequestProto, GetApplicationsResponseProto,
};
use spindle_ipc::frame::{encode_frame, Preamble, AUTH_NONE};
use spindle_ipc::methods::application_client::GET_APPLICATIONS;
use spindle_ipc::{protocols, RpcError, RpcServer, ServerConfig, Service};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpSocket, TcpStream};

type Res<T> = Result<T, String>;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let result = rt.block_on(run(args));
    if let Err(e) = result {
        eprintln!("abuse: {e}");
        std::process::exit(1);
    }
}

fn flag(args: &[String], name: &str, default: usize) -> Res<usize> {
    match args.iter().position(|a| a == name) {
        None => Ok(default),
        Some(i) => args
            .get(i + 1)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("{name} needs a number")),
    }
}

async fn run(args: Vec<String>) -> Res<()> {
    let Some(cmd) = args.first() else {
        return Err("usage: abuse server | lockout | frames | handshakes [--conns N]".into());
    };
    match cmd.as_str() {
        "server" => serve().await,
        "lockout" => lockout(flag(&args, "--conns", 16_400)?).await,
        "frames" => frames(flag(&args, "--conns", 4)?, flag(&args, "--frame-mib", 128)?).await,
        "burst" => {
            burst(
                flag(&args, "--conns", 16)?,
                flag(&args, "--calls", 8)?,
                flag(&args, "--frame-kib", 4096)?,
            )
            .await
        }
        "handshakes" => {
            handshakes(flag(&args, "--conns", 5_000)?, flag(&args, "--rounds", 1)?).await
        }
        other => Err(format!("unknown scenario {other}")),
    }
}

// ---------------------------------------------------------------------------------------
// The server side
// ---------------------------------------------------------------------------------------

async fn serve() -> Res<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("SPINDLE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let service = Service::new(protocols::APPLICATION_CLIENT).handle(
        &GET_APPLICATIONS,
        |call, _req: GetApplicationsRequestProto| async move {
            Ok::<_, RpcError>(GetApplicationsResponseProto {
                applications: vec![ApplicationReportProto {
                    user: Some(call.user),
                    ..Default::default()
                }],
            })
        },
    );
    let config = ServerConfig {
        name: "abuse".into(),
        ..ServerConfig::default()
    };
    let addr: SocketAddr = "127.0.0.1:0".parse().map_err(|e| format!("{e}"))?;
    let server = RpcServer::bind(addr, vec![service], config)
        .await
        .map_err(|e| format!("bind: {e}"))?;
    println!("{}", server.local_addr());
    // Serve until the parent closes our standard input.
    let _ = tokio::task::spawn_blocking(|| {
        let mut sink = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink)
    })
    .await;
    Ok(())
}

struct Child {
    child: tokio::process::Child,
    pid: u32,
    addr: SocketAddr,
}

async fn start_server() -> Res<Child> {
    let exe = std::env::current_exe().map_err(|e| format!("current exe: {e}"))?;
    let mut child = tokio::process::Command::new(exe)
        .arg("server")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("spawn the server: {e}"))?;
    let pid = child.id().ok_or("the server exited at once")?;
    let stdout = child.stdout.take().ok_or("no server stdout")?;
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .await
        .map_err(|e| format!("server address: {e}"))?;
    let addr = line
        .trim()
        .parse()
        .map_err(|e| format!("server address {line:?}: {e}"))?;
    Ok(Child { child, pid, addr })
}

fn rss_mib(pid: u32) -> f64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse::<f64>().ok())
        .map(|kb| kb / 1024.0)
        .unwrap_or(f64::NAN)
}

// ---------------------------------------------------------------------------------------
// Wire helpers (hand-built frames, as a foreign client would send them)
// ---------------------------------------------------------------------------------------

const CLIENT_ID: [u8; 16] = *b"abuse-experiment";

fn rpc_header(call_id: i32) -> RpcRequestHeaderProto {
    RpcRequestHeaderProto {
        rpc_kind: Some(RpcKindProto::RpcProtocolBuffer as i32),
        rpc_op: Some(OperationProto::RpcFinalPacket as i32),
        call_id,
        client_id: CLIENT_ID.to_vec(),
        retry_count: Some(if call_id < 0 { -1 } else { 0 }),
        ..Default::default()
    }
}

fn hello(user: &str) -> Vec<u8> {
    let mut out = Preamble::encode(AUTH_NONE).to_vec();
    let ctx = IpcConnectionContextProto {
        user_info: Some(UserInformationProto {
            effective_user: Some(user.into()),
            real_user: None,
        }),
        protocol: Some(protocols::APPLICATION_CLIENT.into()),
    };
    out.extend_from_slice(&encode_frame(&[&rpc_header(-3), &ctx]));
    out
}

fn ping() -> Vec<u8> {
    encode_frame(&[&rpc_header(-4)]).to_vec()
}

fn call(call_id: i32) -> Vec<u8> {
    call_with_tag(call_id, String::new())
}

/// A getApplications call carrying `tag` (the server decodes it, so a large
/// tag costs the server the frame and a decoded copy).
fn call_with_tag(call_id: i32, tag: String) -> Vec<u8> {
    let header = RequestHeaderProto {
        method_name: GET_APPLICATIONS.name.into(),
        declaring_class_protocol_name: protocols::APPLICATION_CLIENT.into(),
        client_protocol_version: 1,
    };
    encode_frame(&[
        &rpc_header(call_id),
        &header,
        &GetApplicationsRequestProto {
            application_tags: if tag.is_empty() { vec![] } else { vec![tag] },
            ..Default::default()
        },
    ])
    .to_vec()
}

async fn connect_from(source: &str, addr: SocketAddr) -> Res<TcpStream> {
    let socket = TcpSocket::new_v4().map_err(|e| format!("socket: {e}"))?;
    let src: SocketAddr = format!("{source}:0").parse().map_err(|e| format!("{e}"))?;
    socket
        .bind(src)
        .map_err(|e| format!("bind {source}: {e}"))?;
    socket
        .connect(addr)
        .await
        .map_err(|e| format!("connect from {source}: {e}"))
}

/// One complete call on a fresh connection from `source`: "served" or why not.
async fn probe(source: &str, addr: SocketAddr) -> String {
    let attempt = async {
        let mut s = connect_from(source, addr).await?;
        let mut bytes = hello("probe");
        bytes.extend(call(0));
        s.write_all(&bytes)
            .await
            .map_err(|e| format!("write: {e}"))?;
        let mut len = [0u8; 4];
        s.read_exact(&mut len)
            .await
            .map_err(|e| format!("read: {e}"))?;
        Ok::<_, String>("served".to_string())
    };
    match tokio::time::timeout(Duration::from_secs(10), attempt).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => e,
        Err(_) => "no answer within 10 s".into(),
    }
}

// ---------------------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------------------

async fn lockout(n: usize) -> Res<()> {
    let server = start_server().await?;
    let rss0 = rss_mib(server.pid);
    // Every open connection, pinged every 5 s by one task (the server
    // closes a connection after 20 s without traffic).
    let conns: Arc<std::sync::Mutex<Vec<TcpStream>>> = Arc::default();
    let closed = Arc::new(AtomicUsize::new(0));
    let pinger = {
        let (conns, closed) = (conns.clone(), closed.clone());
        tokio::spawn(async move {
            let ping = ping();
            loop {
                tokio::time::sleep(Duration::from_secs(5)).await;
                let mut list = conns.lock().unwrap_or_else(|p| p.into_inner());
                list.retain(|s| {
                    let mut buf = [0u8; 16];
                    let gone = matches!(s.try_read(&mut buf), Ok(0))
                        || matches!(s.try_write(&ping),
                            Err(e) if e.kind() != std::io::ErrorKind::WouldBlock);
                    if gone {
                        closed.fetch_add(1, Ordering::Relaxed);
                    }
                    !gone
                });
            }
        })
    };
    // Open the flood 64 connections at a time; each sends the preamble and a
    // connection context.
    let limit = Arc::new(tokio::sync::Semaphore::new(64));
    let mut opening = tokio::task::JoinSet::new();
    for _ in 0..n {
        let permit = limit
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| format!("{e}"))?;
        let (addr, conns) = (server.addr, conns.clone());
        opening.spawn(async move {
            let mut s = connect_from("127.0.0.1", addr).await.ok()?;
            s.write_all(&hello("flood")).await.ok()?;
            drop(permit);
            conns.lock().unwrap_or_else(|p| p.into_inner()).push(s);
            Some(())
        });
    }
    let mut failed = 0;
    while let Some(r) = opening.join_next().await {
        if !matches!(r, Ok(Some(()))) {
            failed += 1;
        }
    }
    // Let the pinger see which connections the server closed.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let same = probe("127.0.0.1", server.addr).await;
    let other = probe("127.0.0.2", server.addr).await;
    let open = conns.lock().unwrap_or_else(|p| p.into_inner()).len();
    println!(
        "lockout: {n} connections from 127.0.0.1 (preamble, context, a ping every 5 s): \
         {failed} failed to connect, {} closed by the server, {open} open; \
         server RSS {rss0:.1} -> {:.1} MiB; a real call from 127.0.0.1: {same}; \
         from 127.0.0.2: {other}",
        closed.load(Ordering::Relaxed),
        rss_mib(server.pid),
    );
    pinger.abort();
    drop(server.child);
    Ok(())
}

async fn frames(n: usize, frame_mib: usize) -> Res<()> {
    let server = start_server().await?;
    let rss0 = rss_mib(server.pid);
    let len = frame_mib * 1024 * 1024 - 64;
    let sent = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..n {
        let addr = server.addr;
        let sent = sent.clone();
        tasks.push(tokio::spawn(async move {
            let Ok(mut s) = connect_from("127.0.0.1", addr).await else {
                return;
            };
            let mut head = hello("big");
            head.extend_from_slice(&(len as u32).to_be_bytes());
            if s.write_all(&head).await.is_err() {
                return;
            }
            let chunk = vec![0u8; 64 * 1024];
            let mut left = len - 1;
            while left > 0 {
                let k = left.min(chunk.len());
                if s.write_all(&chunk[..k]).await.is_err() {
                    return;
                }
                sent.fetch_add(k, Ordering::Relaxed);
                left -= k;
            }
            // Hold the connection (and the server's buffer) open.
            let mut buf = [0u8; 16];
            let _ = s.read(&mut buf).await;
        }));
    }
    // Wait until the senders stop making progress.
    let mut last = usize::MAX;
    let start = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let now = sent.load(Ordering::Relaxed);
        if now == last || start.elapsed() > Duration::from_secs(120) {
            break;
        }
        last = now;
    }
    let rss1 = rss_mib(server.pid);
    let meanwhile = probe("127.0.0.1", server.addr).await;
    for t in &tasks {
        t.abort();
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    println!(
        "frames: {n} connections declaring {frame_mib} MiB frames, {:.1} MiB of bodies sent; \
         server RSS {rss0:.1} -> {rss1:.1} MiB (+{:.1}); after they close {:.1} MiB; \
         a real call meanwhile: {meanwhile}",
        sent.load(Ordering::Relaxed) as f64 / 1048576.0,
        rss1 - rss0,
        rss_mib(server.pid),
    );
    drop(server.child);
    Ok(())
}

async fn burst(n: usize, calls: usize, frame_kib: usize) -> Res<()> {
    let server = start_server().await?;
    let rss0 = rss_mib(server.pid);
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..n {
        let addr = server.addr;
        let source = format!("127.0.0.{}", 1 + i / 200);
        tasks.spawn(async move {
            let mut s = connect_from(&source, addr).await?;
            s.write_all(&hello("burst"))
                .await
                .map_err(|e| format!("{e}"))?;
            for c in 0..calls {
                let frame = call_with_tag(c as i32, "x".repeat(frame_kib * 1024));
                s.write_all(&frame).await.map_err(|e| format!("{e}"))?;
                let mut len = [0u8; 4];
                s.read_exact(&mut len).await.map_err(|e| format!("{e}"))?;
                let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
                s.read_exact(&mut body).await.map_err(|e| format!("{e}"))?;
            }
            Ok::<_, String>(s)
        });
    }
    let mut max_rss = 0f64;
    let mut conns = Vec::new();
    let mut failed = 0;
    loop {
        tokio::select! {
            done = tasks.join_next() => match done {
                None => break,
                Some(Ok(Ok(s))) => conns.push(s),
                Some(_) => failed += 1,
            },
            _ = tokio::time::sleep(Duration::from_millis(50)) => {
                max_rss = max_rss.max(rss_mib(server.pid));
            }
        }
    }
    let rss1 = rss_mib(server.pid);
    drop(conns);
    tokio::time::sleep(Duration::from_secs(3)).await;
    println!(
        "burst: {n} connections x {calls} calls of {frame_kib} KiB ({failed} failed): \
         server RSS {rss0:.1} -> peak seen {max_rss:.1} MiB; {rss1:.1} MiB when done; \
         {:.1} MiB after they closed",
        rss_mib(server.pid)
    );
    drop(server.child);
    Ok(())
}

async fn handshakes(n: usize, rounds: usize) -> Res<()> {
    let server = start_server().await?;
    let rss0 = rss_mib(server.pid);
    for round in 1..=rounds {
        let mut conns = Vec::with_capacity(n);
        let mut failed = 0;
        // From 127.0.0.x, x = 1..: one address per 200 connections, so that a
        // per-address limit does not hide the per-connection cost.
        for i in 0..n {
            let source = format!("127.0.0.{}", 1 + i / 200);
            let attempt = async {
                let mut s = connect_from(&source, server.addr).await?;
                let mut bytes = hello("many");
                bytes.extend(call(0));
                s.write_all(&bytes).await.map_err(|e| format!("{e}"))?;
                let mut len = [0u8; 4];
                s.read_exact(&mut len).await.map_err(|e| format!("{e}"))?;
                let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
                s.read_exact(&mut body).await.map_err(|e| format!("{e}"))?;
                Ok::<_, String>(s)
            };
            match attempt.await {
                Ok(s) => conns.push(s),
                Err(_) => failed += 1,
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        let rss1 = rss_mib(server.pid);
        drop(conns);
        tokio::time::sleep(Duration::from_secs(3)).await;
        let rss2 = rss_mib(server.pid);
        println!(
            "handshakes round {round}: {n} connections after one call each ({failed} failed): \
             server RSS {rss0:.1} -> {rss1:.1} MiB (+{:.1}) while open; {rss2:.1} MiB after they closed",
            rss1 - rss0
        );
    }
    drop(server.child);
    Ok(())
}
