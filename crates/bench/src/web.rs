//! Web load: GETs of chosen REST paths of the RM's web server at a fixed
//! aggregate rate, while the simulated NMs and AMs run, so that one run
//! shows both what the web answers cost and whether they slow heartbeats
//! and `allocate`.
//!
//! The load is open-loop: a request is started on schedule whether or not
//! earlier ones have been answered (up to [`MAX_IN_FLIGHT`]), so a slow
//! server shows as latency, not as a lower offered rate. Each request is a
//! fresh HTTP/1.1 connection (`Connection: close`), as monitoring scrapers
//! and scripts mostly make them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{watch, Semaphore};
use tokio::time::Instant;

use crate::{Histogram, Stats};

/// Most requests waiting for an answer at once; beyond it a scheduled
/// request is counted as an error (the server is not keeping up).
pub const MAX_IN_FLIGHT: usize = 64;

/// Largest reply read (a reply beyond it is an error).
const MAX_REPLY_BYTES: usize = 256 << 20;

/// What to request.
#[derive(Debug, Clone)]
pub struct WebLoad {
    /// `host:port` of the web server.
    pub addr: String,
    /// Paths requested in turn (with their query strings).
    pub paths: Vec<String>,
    /// Requests per second, summed over the paths.
    pub rate: f64,
    pub call_timeout: Duration,
}

/// Latencies and failures of one path.
#[derive(Debug, Default)]
pub struct PathStats {
    pub path: String,
    pub latency: Histogram,
    errors: AtomicU64,
    bytes: AtomicU64,
}

/// Every path's figures.
#[derive(Debug, Default)]
pub struct WebStats {
    pub paths: Vec<PathStats>,
}

impl WebStats {
    pub fn new(paths: &[String]) -> WebStats {
        WebStats {
            paths: paths
                .iter()
                .map(|p| PathStats {
                    path: p.clone(),
                    ..PathStats::default()
                })
                .collect(),
        }
    }

    /// One line per path for the report over a window of `secs`.
    pub fn report(&self, secs: f64) -> Vec<WebPathReport> {
        self.paths
            .iter()
            .map(|p| {
                let n = p.latency.count();
                WebPathReport {
                    path: p.path.clone(),
                    requests: n,
                    requests_per_sec: n as f64 / secs,
                    ms_p50: p.latency.quantile_ms(0.50),
                    ms_p99: p.latency.quantile_ms(0.99),
                    ms_max: p.latency.max_ms(),
                    errors: p.errors.load(Ordering::Relaxed),
                    mean_reply_bytes: p.bytes.load(Ordering::Relaxed).checked_div(n).unwrap_or(0),
                }
            })
            .collect()
    }
}

/// The figures of one path over the measured window.
#[derive(Debug, Clone, Serialize)]
pub struct WebPathReport {
    pub path: String,
    pub requests: u64,
    pub requests_per_sec: f64,
    pub ms_p50: Option<f64>,
    pub ms_p99: Option<f64>,
    pub ms_max: Option<f64>,
    pub errors: u64,
    pub mean_reply_bytes: u64,
}

/// Requests the paths in turn at the load's rate until `stop` turns true;
/// latencies are recorded only while `stats` measures.
pub async fn run(
    load: WebLoad,
    stats: Arc<Stats>,
    web: Arc<WebStats>,
    mut stop: watch::Receiver<bool>,
) -> Result<(), String> {
    if load.paths.is_empty() || load.rate <= 0.0 {
        return Ok(());
    }
    let period = Duration::from_secs_f64(1.0 / load.rate);
    let in_flight = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    let mut ticker = tokio::time::interval(period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut turn = 0usize;
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = stop.changed() => return Ok(()),
        }
        let index = turn % load.paths.len();
        turn += 1;
        let Ok(permit) = in_flight.clone().try_acquire_owned() else {
            if stats.measuring() {
                web.paths[index].errors.fetch_add(1, Ordering::Relaxed);
            }
            stats.note_error(format!(
                "the web server had {MAX_IN_FLIGHT} requests unanswered"
            ));
            continue;
        };
        let (load, stats, web) = (load.clone(), stats.clone(), web.clone());
        tokio::spawn(async move {
            let path = &web.paths[index];
            let started = Instant::now();
            let result = tokio::time::timeout(load.call_timeout, get(&load.addr, &path.path)).await;
            let elapsed = started.elapsed();
            drop(permit);
            let outcome = match result {
                Ok(r) => r,
                Err(_) => Err(format!("no answer within {:?}", load.call_timeout)),
            };
            match outcome {
                Ok(bytes) if stats.measuring() => {
                    path.latency.record(elapsed);
                    path.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
                }
                Ok(_) => {}
                Err(e) => {
                    if stats.measuring() {
                        path.errors.fetch_add(1, Ordering::Relaxed);
                    }
                    stats.note_error(format!("GET {}: {e}", path.path));
                }
            }
        });
    }
}

/// One GET on a fresh connection; answers the reply's size when its status
/// is 200.
async fn get(addr: &str, path: &str) -> Result<usize, String> {
    let mut stream = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connecting to {addr}: {e}"))?;
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json\r\nConnection: close\r\n\r\n"
    );
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| format!("sending: {e}"))?;
    let mut reply = Vec::new();
    (&mut stream)
        .take(MAX_REPLY_BYTES as u64 + 1)
        .read_to_end(&mut reply)
        .await
        .map_err(|e| format!("reading: {e}"))?;
    if reply.len() > MAX_REPLY_BYTES {
        return Err(format!("a reply over {MAX_REPLY_BYTES} bytes"));
    }
    let status = status_of(&reply).ok_or("an answer that is not HTTP")?;
    if status != 200 {
        return Err(format!("status {status}"));
    }
    Ok(reply.len())
}

/// The status code of an HTTP/1.x reply.
fn status_of(reply: &[u8]) -> Option<u16> {
    let line = reply.split(|b| *b == b'\n').next()?;
    let text = std::str::from_utf8(line).ok()?;
    let mut parts = text.split_whitespace();
    parts.next().filter(|v| v.starts_with("HTTP/1."))?;
    parts.next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines_are_read() {
        assert_eq!(status_of(b"HTTP/1.1 200 OK\r\nA: b\r\n\r\n{}"), Some(200));
        assert_eq!(status_of(b"HTTP/1.0 404 Not Found\r\n"), Some(404));
        assert_eq!(status_of(b"SSH-2.0-OpenSSH\r\n"), None);
        assert_eq!(status_of(b""), None);
    }

    #[tokio::test]
    async fn a_real_server_is_measured_and_a_closed_port_is_an_error() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 1024];
                    let _ = s.read(&mut buf).await;
                    let _ = s
                        .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
                        .await;
                });
            }
        });
        assert_eq!(get(&addr, "/ws/v1/cluster/metrics").await, Ok(40));
        let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let closed_addr = closed.local_addr().expect("addr").to_string();
        drop(closed);
        assert!(get(&closed_addr, "/").await.is_err());
    }
}
