//! The session protocol: newline-delimited JSON over one TCP port of the AM.
//!
//! A connection starts with a [`Hello`] line carrying the session secret.
//! A client then sends [`ClientRequest`] lines and gets one
//! [`ClientResponse`] line for each; a worker registers with its hello and
//! then receives [`AmToWorker`] lines and sends [`WorkerToAm`] lines for as
//! long as it runs. Every line is one JSON value, at most
//! [`MAX_LINE_BYTES`] long.
//!
//! - `messages.rs`: the messages, whose JSON is the protocol
//!   (`tests/wire_format.rs` pins it byte for byte);
//! - `convert.rs`: the session core's values (attempt ids, outcomes,
//!   assignments, statuses, counters) to and from their wire forms, the
//!   only place either is built from the other;
//! - here: the session secret and the line framing.

use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};

mod convert;
mod messages;

pub use messages::{
    AmToWorker, AttemptRef, ClientRequest, ClientResponse, Counters, DagStatusReport, GroupStatus,
    Hello, StatusReport, TaskAssignment, TaskInput, WireOutcome, WorkerStatus, WorkerToAm,
};

/// Longest line either side accepts (a DAG file travels in one line).
pub const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;

/// The environment variable holding the session secret (AM, workers, and
/// optionally clients).
pub const SECRET_ENV: &str = "SPINDLE_DAG_SECRET";

/// The header workers send the secret in when they fetch each other's
/// outputs.
pub const SECRET_HEADER: &str = "x-spindle-dag-secret";

/// A fresh random session secret (256 bits, hex).
pub fn new_secret() -> String {
    let bytes: [u8; 32] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Compares a presented secret with the session's in constant time.
pub fn secret_matches(expected: &str, presented: &str) -> bool {
    !expected.is_empty() && bool::from(expected.as_bytes().ct_eq(presented.as_bytes()))
}

/// Reads one line (without its `\n`); `Ok(None)` at a clean end of stream.
/// A line over `max` bytes or not UTF-8 is an error.
pub async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    max: usize,
) -> std::io::Result<Option<String>> {
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            if buf.is_empty() {
                return Ok(None);
            }
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the connection closed in the middle of a line",
            ));
        }
        let (take, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        if buf.len() + take > max + 1 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("a line is longer than {max} bytes"),
            ));
        }
        buf.extend_from_slice(&available[..take]);
        reader.consume(take);
        if done {
            buf.pop();
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            return String::from_utf8(buf).map(Some).map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::InvalidData, "a line is not UTF-8")
            });
        }
    }
}

/// Reads one JSON line; `Ok(None)` at a clean end of stream.
pub async fn read_json<R, T>(reader: &mut R) -> std::io::Result<Option<T>>
where
    R: AsyncBufRead + Unpin,
    T: for<'de> Deserialize<'de>,
{
    match read_line(reader, MAX_LINE_BYTES).await? {
        None => Ok(None),
        Some(line) => serde_json::from_str(&line).map(Some).map_err(|e| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("not a valid message: {e}"),
            )
        }),
    }
}

/// Writes one value as a JSON line and flushes.
pub async fn write_json<W, T>(writer: &mut W, value: &T) -> std::io::Result<()>
where
    W: AsyncWrite + Unpin,
    T: Serialize,
{
    let mut line = serde_json::to_vec(value)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()))?;
    line.push(b'\n');
    writer.write_all(&line).await?;
    writer.flush().await
}

#[cfg(test)]
mod tests {
    use spindle_dag::AttemptId;

    use super::*;

    #[tokio::test]
    async fn lines_are_bounded_and_split() {
        let data: &[u8] = b"{\"a\":1}\r\nsecond\npartial";
        let mut r = tokio::io::BufReader::with_capacity(3, data);
        assert_eq!(
            read_line(&mut r, 100).await.expect("line").as_deref(),
            Some("{\"a\":1}")
        );
        assert_eq!(
            read_line(&mut r, 100).await.expect("line").as_deref(),
            Some("second")
        );
        assert!(read_line(&mut r, 100).await.is_err(), "no newline at end");
        let mut long = tokio::io::BufReader::new(&b"0123456789\n"[..]);
        assert!(read_line(&mut long, 5).await.is_err());
        let mut empty = tokio::io::BufReader::new(&b""[..]);
        assert_eq!(read_line(&mut empty, 5).await.expect("eof"), None);
    }

    #[test]
    fn messages_have_a_stable_shape() {
        let m = WorkerToAm::Finished {
            attempt: AttemptRef {
                dag: 1,
                vertex: 0,
                task: 2,
                attempt: 1,
            },
            outcome: WireOutcome::Failed {
                reason: "exit 3".into(),
            },
        };
        let text = serde_json::to_string(&m).expect("json");
        assert_eq!(
            text,
            r#"{"type":"finished","attempt":{"dag":1,"vertex":0,"task":2,"attempt":1},"outcome":"failed","reason":"exit 3"}"#
        );
        let back: WorkerToAm = serde_json::from_str(&text).expect("parses");
        assert_eq!(back, m);
        let hello: Hello =
            serde_json::from_str(r#"{"role":"client","secret":"s","client":"me"}"#).expect("hello");
        assert!(matches!(hello, Hello::Client { .. }));
        assert_eq!(
            AttemptRef::from(m_attempt()).to_string(),
            "attempt_1_00_000002_1"
        );
    }

    fn m_attempt() -> AttemptId {
        AttemptRef {
            dag: 1,
            vertex: 0,
            task: 2,
            attempt: 1,
        }
        .into()
    }

    #[test]
    fn secrets_compare_exactly() {
        let s = new_secret();
        assert_eq!(s.len(), 64);
        assert!(secret_matches(&s, &s));
        assert!(!secret_matches(&s, &s[..63]));
        assert!(!secret_matches("", ""), "an empty secret never matches");
        assert_ne!(new_secret(), s);
    }
}
