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
