//! Connection-level framing: the 7-byte preamble, length-prefixed frames and the
//! varint-delimited protobuf messages inside them.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use prost::Message;
use tokio::io::{AsyncRead, AsyncReadExt};

/// `hrpc`, the first four bytes a client sends.
pub const MAGIC: &[u8; 4] = b"hrpc";
/// The only IPC version Hadoop 2.x/3.x speak.
pub const IPC_VERSION: u8 = 9;
/// Auth protocol byte for "no SASL" (plain SIMPLE).
pub const AUTH_NONE: u8 = 0x00;
/// Auth protocol byte for SASL (−33 as a signed byte).
pub const AUTH_SASL: u8 = 0xDF;
/// Default for `ipc.maximum.data.length` (Hadoop 3.3 core-default: 128 MiB).
pub const DEFAULT_MAX_FRAME_BYTES: usize = 128 * 1024 * 1024;

/// Call ids with a special meaning (Hadoop's RpcConstants).
pub mod call_id {
    /// Connection-level failure before any call (bad version, refused auth).
    pub const AUTHORIZATION_FAILED: i32 = -1;
    /// The connection context that follows the preamble or SASL.
    pub const CONNECTION_CONTEXT: i32 = -3;
    /// Keep-alive from a client that waits for a long call.
    pub const PING: i32 = -4;
    /// Every SASL message.
    pub const SASL: i32 = -33;
}

/// What the first seven bytes of a connection said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preamble {
    /// A Hadoop IPC client: service class and auth protocol byte.
    Hadoop { service_class: u8, auth: u8 },
    /// The right magic with another version.
    WrongVersion(u8),
    /// Someone speaking HTTP to the IPC port.
    Http,
    /// Anything else.
    Garbage,
}

impl Preamble {
    pub fn parse(bytes: &[u8; 7]) -> Preamble {
        if &bytes[..4] == MAGIC {
            if bytes[4] == IPC_VERSION {
                Preamble::Hadoop {
                    service_class: bytes[5],
                    auth: bytes[6],
                }
            } else {
                Preamble::WrongVersion(bytes[4])
            }
        } else if bytes.starts_with(b"GET ") || bytes.starts_with(b"POST ") {
            Preamble::Http
        } else {
            Preamble::Garbage
        }
    }

    /// The preamble a client sends.
    pub fn encode(auth: u8) -> [u8; 7] {
        [b'h', b'r', b'p', b'c', IPC_VERSION, 0, auth]
    }
}

/// The text Hadoop answers when a browser hits the IPC port.
pub const HTTP_ON_IPC_PORT: &str = "HTTP/1.1 404 Not Found\r\nContent-type: text/plain\r\n\r\n\
It looks like you are making an HTTP request to a Hadoop IPC port. \
This is not the correct port for the web interface on this daemon.\r\n";

/// Why reading a frame failed.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("RPC data length of {len} exceeds maximum data length of {max}")]
    TooLong { len: u64, max: usize },
    #[error("negative RPC data length {0}")]
    Negative(i32),
    #[error("connection closed")]
    Eof,
    #[error("connection closed in the middle of a {expected}-byte frame")]
    Truncated { expected: usize },
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The body length a frame's 4-byte big-endian prefix claims, refused when
/// negative or above `max` (Hadoop's `ipc.maximum.data.length` check), so
/// that every reader checks a claim the same way before allocating for it.
pub(crate) fn frame_len(prefix: [u8; 4], max: usize) -> Result<usize, FrameError> {
    let len = i32::from_be_bytes(prefix);
    let Ok(len) = usize::try_from(len) else {
        return Err(FrameError::Negative(len));
    };
    if len > max {
        return Err(FrameError::TooLong {
            len: len as u64,
            max,
        });
    }
    Ok(len)
}

/// Reads one length-prefixed frame. The length is checked against `max` before any
/// buffer is allocated, so an oversized claim costs nothing.
pub async fn read_frame<R: AsyncRead + Unpin>(r: &mut R, max: usize) -> Result<Bytes, FrameError> {
    let mut len_buf = [0u8; 4];
    match r.read_exact(&mut len_buf).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Err(FrameError::Eof),
        Err(e) => return Err(FrameError::Io(e)),
    }
    let len = frame_len(len_buf, max)?;
    let mut body = vec![0u8; len];
    match r.read_exact(&mut body).await {
        Ok(_) => Ok(Bytes::from(body)),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            Err(FrameError::Truncated { expected: len })
        }
        Err(e) => Err(FrameError::Io(e)),
    }
}

/// Builds a frame: 4-byte big-endian length, then each message varint-delimited.
/// An empty message is still written (as its single zero length byte).
pub fn encode_frame(parts: &[&dyn DynMessage]) -> Bytes {
    let body_len: usize = parts.iter().map(|m| m.delimited_len()).sum();
    let mut buf = BytesMut::with_capacity(4 + body_len);
    buf.put_u32(body_len as u32);
    for part in parts {
        part.encode_delimited_into(&mut buf);
    }
    buf.freeze()
}

/// Builds a frame from a delimited header followed by an already-encoded message body
/// (written delimited as well).
pub fn encode_frame_raw(header: &dyn DynMessage, body: Option<&[u8]>) -> Bytes {
    let mut body_len = header.delimited_len();
    if let Some(b) = body {
        body_len += prost::length_delimiter_len(b.len()) + b.len();
    }
    let mut buf = BytesMut::with_capacity(4 + body_len);
    buf.put_u32(body_len as u32);
    header.encode_delimited_into(&mut buf);
    if let Some(b) = body {
        // Writing into a BytesMut cannot fail: it grows on demand.
        let _ = prost::encode_length_delimiter(b.len(), &mut buf);
        buf.put_slice(b);
    }
    buf.freeze()
}

/// Object-safe view of a prost message, so frames can mix message types.
pub trait DynMessage {
    fn delimited_len(&self) -> usize;
    fn encode_delimited_into(&self, buf: &mut BytesMut);
}

impl<M: Message> DynMessage for M {
    fn delimited_len(&self) -> usize {
        let len = self.encoded_len();
        prost::length_delimiter_len(len) + len
    }
    fn encode_delimited_into(&self, buf: &mut BytesMut) {
        // BytesMut grows as needed, so encoding cannot run out of space.
        let _ = self.encode_length_delimited(buf);
    }
}

/// Why a delimited message could not be taken from a frame.
#[derive(Debug, thiserror::Error)]
pub enum DelimitedError {
    #[error(transparent)]
    Decode(#[from] prost::DecodeError),
    #[error("delimited message claims {claimed} bytes but only {remaining} remain in the frame")]
    Short { claimed: usize, remaining: usize },
}

/// Splits the next varint-delimited message off the front of a frame body.
pub fn take_delimited(body: &mut Bytes) -> Result<Bytes, DelimitedError> {
    let len = prost::decode_length_delimiter(&mut *body)?;
    if len > body.remaining() {
        return Err(DelimitedError::Short {
            claimed: len,
            remaining: body.remaining(),
        });
    }
    Ok(body.split_to(len))
}

/// Decodes the next varint-delimited message of type `M`.
pub fn decode_delimited<M: Message + Default>(body: &mut Bytes) -> Result<M, DelimitedError> {
    let part = take_delimited(body)?;
    Ok(M::decode(part)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hadoop_protos::common::RpcResponseHeaderProto;

    /// Both frame readers (this module's and the server's budgeted one)
    /// check a claimed length here: up to `max` passes, one more or a
    /// negative claim is refused.
    #[test]
    fn frame_lengths_are_checked_before_allocating() {
        assert_eq!(frame_len(10i32.to_be_bytes(), 10).ok(), Some(10));
        assert_eq!(frame_len(0i32.to_be_bytes(), 0).ok(), Some(0));
        assert!(matches!(
            frame_len(11i32.to_be_bytes(), 10),
            Err(FrameError::TooLong { len: 11, max: 10 })
        ));
        assert!(matches!(
            frame_len((-1i32).to_be_bytes(), 10),
            Err(FrameError::Negative(-1))
        ));
    }

    #[test]
    fn preamble_kinds() {
        assert_eq!(
            Preamble::parse(b"hrpc\x09\x00\x00"),
            Preamble::Hadoop {
                service_class: 0,
                auth: 0
            }
        );
        assert_eq!(
            Preamble::parse(b"hrpc\x07\x00\x00"),
            Preamble::WrongVersion(7)
        );
        assert_eq!(Preamble::parse(b"GET / H"), Preamble::Http);
        assert_eq!(
            Preamble::parse(b"\x00\x01\x02\x03\x04\x05\x06"),
            Preamble::Garbage
        );
        assert_eq!(Preamble::encode(AUTH_SASL), *b"hrpc\x09\x00\xdf");
    }

    #[tokio::test]
    async fn oversized_frame_is_refused_before_reading_body() {
        // Claims 1 GiB but sends nothing more: must fail on the length alone.
        let data = (1u32 << 30).to_be_bytes();
        let mut r = &data[..];
        match read_frame(&mut r, DEFAULT_MAX_FRAME_BYTES).await {
            Err(FrameError::TooLong { len, .. }) => assert_eq!(len, 1 << 30),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[tokio::test]
    async fn truncated_and_negative_frames() {
        let mut data = 10u32.to_be_bytes().to_vec();
        data.extend_from_slice(b"abc");
        let mut r = &data[..];
        assert!(matches!(
            read_frame(&mut r, 100).await,
            Err(FrameError::Truncated { expected: 10 })
        ));
        let neg = (-5i32).to_be_bytes();
        let mut r = &neg[..];
        assert!(matches!(
            read_frame(&mut r, 100).await,
            Err(FrameError::Negative(-5))
        ));
        let mut r: &[u8] = &[];
        assert!(matches!(
            read_frame(&mut r, 100).await,
            Err(FrameError::Eof)
        ));
    }

    #[test]
    fn delimited_claim_larger_than_frame_is_an_error() {
        let mut b = Bytes::from_static(&[0x05, 0x01, 0x02]);
        assert!(take_delimited(&mut b).is_err());
    }

    #[test]
    fn empty_body_is_still_written() {
        let header = RpcResponseHeaderProto::default();
        let frame = encode_frame_raw(&header, Some(&[]));
        // length, header delimiter (header encodes call_id + status = 4 bytes), body delimiter 0
        assert_eq!(*frame.last().unwrap_or(&0xff), 0);
    }
}
