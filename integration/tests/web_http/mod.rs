//! A minimal HTTP/1.0 client for the web tests: one request per connection,
//! the body read until the server closes it (no chunked encoding to undo).

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// A reply: status, header lines (`name: value`, names lower-cased), body.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

impl std::fmt::Display for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "HTTP {} {:?}\n{}",
            self.status,
            self.headers,
            self.text()
        )
    }
}

/// `method path` on `addr` with extra header lines; panics on I/O errors.
#[track_caller]
pub fn request(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)]) -> Reply {
    match try_request(addr, method, path, headers) {
        Ok(r) => r,
        Err(e) => panic!("{method} http://{addr}{path}: {e}"),
    }
}

pub fn try_request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> std::io::Result<Reply> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(10))?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut req = format!("{method} {path} HTTP/1.0\r\nHost: {addr}\r\n");
    for (n, v) in headers {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes())?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("no end of headers"))?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let body = raw[split + 4..].to_vec();
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad status line in {head:?}")))?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Ok(Reply {
        status,
        headers,
        body,
    })
}

/// `GET path`.
#[track_caller]
pub fn get(addr: SocketAddr, path: &str) -> Reply {
    request(addr, "GET", path, &[])
}

/// `GET path` whose body must be JSON with status 200.
#[track_caller]
pub fn get_json(addr: SocketAddr, path: &str) -> serde_json::Value {
    let r = get(addr, path);
    assert_eq!(r.status, 200, "GET {path}: {r}");
    match serde_json::from_slice(&r.body) {
        Ok(v) => v,
        Err(e) => panic!("GET {path}: not JSON ({e}): {r}"),
    }
}

/// What a browser-like GET ([`browser_get`]) got: the status, the head as
/// sent (status line and headers) and the body as text.
pub struct Answer {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim().eq_ignore_ascii_case(name).then_some(v.trim())
        })
    }
}

/// A GET as a browser sends it (HTTP/1.0, so the answer ends with the
/// connection; `Accept: text/html`, which Spark's UI and the web proxy look
/// at); the read is bounded, so a hang fails the test.
#[track_caller]
pub fn browser_get(addr: SocketAddr, path: &str) -> Answer {
    let mut s = TcpStream::connect(addr).expect("connect to the web port");
    s.set_read_timeout(Some(Duration::from_secs(120)))
        .expect("read timeout");
    write!(
        s,
        "GET {path} HTTP/1.0\r\nHost: {addr}\r\nUser-Agent: spindle-test\r\nAccept: text/html\r\n\r\n"
    )
    .expect("send");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read the answer");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Answer {
        status,
        head: head.to_string(),
        body: body.to_string(),
    }
}
