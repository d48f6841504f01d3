//! The framed protocol between the NodeManager and its Java aux-service
//! host (`java/aux-host`), over the JVM's stdin (requests) and stdout
//! (replies); the JVM's stderr carries its log.
//!
//! A frame is a 4-byte big-endian length, then that many bytes (at most
//! [`MAX_FRAME`]). A request is an opcode byte and its fields; a reply is a
//! status byte (0 ok, 1 error) and the fields of the answer, or the error
//! message. Fields: `u8`; `u32`/`i64` big-endian; a byte string as a `u32`
//! length and the bytes; a text as a byte string of UTF-8; an optional byte
//! string as a `u8` flag (0 absent, 1 present) and the byte string. One
//! request is outstanding at a time: replies come in order. The Java side
//! (`java/aux-host/src/main/java/spindle/auxhost/AuxHost.java`) writes and
//! reads the same layout.

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The largest frame either side accepts (service data and meta data are
/// small; a node's configuration is well below this).
pub const MAX_FRAME: usize = 16 << 20;

/// `HELLO props` → ok: the node's configuration, once, first.
pub const OP_HELLO: u8 = 1;
/// `INIT name class classpath system_classes recovery_path props` → ok.
pub const OP_INIT: u8 = 2;
/// `START name` → ok `optional meta`.
pub const OP_START: u8 = 3;
/// `APP_INIT name user app data` → ok.
pub const OP_APP_INIT: u8 = 4;
/// `APP_STOP name app` → ok.
pub const OP_APP_STOP: u8 = 5;
/// `CONTAINER_INIT name user container memory_mb vcores type` → ok.
pub const OP_CONTAINER_INIT: u8 = 6;
/// `CONTAINER_STOP name user container memory_mb vcores type` → ok.
pub const OP_CONTAINER_STOP: u8 = 7;
/// `STOP name` → ok.
pub const OP_STOP: u8 = 8;

/// Why a frame could not be read or understood.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("a frame of {0} bytes is larger than the limit of {MAX_FRAME}")]
    TooLarge(usize),
    #[error("a bad frame: {0}")]
    Bad(String),
}

/// Writes the fields of one frame.
#[derive(Debug, Default)]
pub struct FrameWriter {
    buf: Vec<u8>,
}

impl FrameWriter {
    pub fn new(first: u8) -> FrameWriter {
        FrameWriter { buf: vec![first] }
    }
    pub fn u8(mut self, v: u8) -> Self {
        self.buf.push(v);
        self
    }
    pub fn u32(mut self, v: u32) -> Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn i64(mut self, v: i64) -> Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn bytes(self, v: &[u8]) -> Self {
        let len = u32::try_from(v.len()).unwrap_or(u32::MAX);
        let mut s = self.u32(len);
        s.buf.extend_from_slice(v);
        s
    }
    pub fn str(self, v: &str) -> Self {
        self.bytes(v.as_bytes())
    }
    pub fn opt_bytes(self, v: Option<&[u8]>) -> Self {
        match v {
            Some(b) => self.u8(1).bytes(b),
            None => self.u8(0),
        }
    }
    pub fn pairs(self, v: &[(String, String)]) -> Self {
        let mut s = self.u32(u32::try_from(v.len()).unwrap_or(u32::MAX));
        for (k, val) in v {
            s = s.str(k).str(val);
        }
        s
    }
    /// The payload; fails when it is over [`MAX_FRAME`].
    pub fn finish(self) -> Result<Vec<u8>, FrameError> {
        if self.buf.len() > MAX_FRAME {
            return Err(FrameError::TooLarge(self.buf.len()));
        }
        Ok(self.buf)
    }
}

/// Reads the fields of one frame; every length is checked against what is
/// left.
#[derive(Debug)]
pub struct FrameReader<'a> {
    buf: &'a [u8],
}

impl<'a> FrameReader<'a> {
    pub fn new(buf: &'a [u8]) -> FrameReader<'a> {
        FrameReader { buf }
    }
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], FrameError> {
        if self.buf.len() < n {
            return Err(FrameError::Bad(format!(
                "{what} needs {n} bytes, {} left",
                self.buf.len()
            )));
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }
    pub fn u8(&mut self) -> Result<u8, FrameError> {
        Ok(self.take(1, "a byte")?[0])
    }
    pub fn u32(&mut self) -> Result<u32, FrameError> {
        let b = self.take(4, "an int")?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub fn bytes(&mut self) -> Result<&'a [u8], FrameError> {
        let n = self.u32()? as usize;
        self.take(n, "a byte string")
    }
    pub fn str(&mut self) -> Result<String, FrameError> {
        let b = self.bytes()?;
        String::from_utf8(b.to_vec()).map_err(|_| FrameError::Bad("a text is not UTF-8".into()))
    }
    pub fn opt_bytes(&mut self) -> Result<Option<Vec<u8>>, FrameError> {
        match self.u8()? {
            0 => Ok(None),
            1 => Ok(Some(self.bytes()?.to_vec())),
            f => Err(FrameError::Bad(format!("optional flag {f}"))),
        }
    }
    pub fn end(&self) -> Result<(), FrameError> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(FrameError::Bad(format!(
                "{} bytes after the last field",
                self.buf.len()
            )))
        }
    }
}

/// Writes one frame.
pub async fn write_frame<W: AsyncWrite + Unpin>(
    w: &mut W,
    payload: &[u8],
) -> Result<(), FrameError> {
    if payload.len() > MAX_FRAME {
        return Err(FrameError::TooLarge(payload.len()));
    }
    let len = u32::try_from(payload.len()).map_err(|_| FrameError::TooLarge(payload.len()))?;
    w.write_all(&len.to_be_bytes()).await?;
    w.write_all(payload).await?;
    w.flush().await?;
    Ok(())
}

/// Reads one frame; its length is checked before anything is allocated.
pub async fn read_frame<R: AsyncRead + Unpin>(r: &mut R) -> Result<Vec<u8>, FrameError> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len).await?;
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(FrameError::TooLarge(len));
    }
    let mut buf = vec![0u8; len];
    r.read_exact(&mut buf).await?;
    Ok(buf)
}

/// A reply: the answer's fields, or the host's error message.
pub fn parse_reply(frame: &[u8]) -> Result<Result<FrameReader<'_>, String>, FrameError> {
    let mut r = FrameReader::new(frame);
    match r.u8()? {
        0 => Ok(Ok(r)),
        1 => {
            let msg = r.str()?;
            r.end()?;
            Ok(Err(msg))
        }
        s => Err(FrameError::Bad(format!("reply status {s}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_round_trip_and_bad_ones_are_errors() {
        let payload = FrameWriter::new(0)
            .opt_bytes(Some(&[0, 0, 0x34, 0xba]))
            .str("é")
            .i64(-2)
            .finish()
            .expect("small");
        let mut wire = Vec::new();
        write_frame(&mut wire, &payload).await.expect("write");
        let mut slice = wire.as_slice();
        let back = read_frame(&mut slice).await.expect("read");
        let mut r = parse_reply(&back).expect("frame").expect("ok");
        assert_eq!(r.opt_bytes().expect("meta"), Some(vec![0, 0, 0x34, 0xba]));
        assert_eq!(r.str().expect("text"), "é");
        assert_eq!(r.take(8, "long").expect("long"), (-2i64).to_be_bytes());
        r.end().expect("end");

        // A length over the limit is refused before any allocation.
        let mut huge: &[u8] = &[0xff, 0xff, 0xff, 0xff];
        assert!(matches!(
            read_frame(&mut huge).await,
            Err(FrameError::TooLarge(_))
        ));
        // A short frame, a string longer than its frame, a bad status.
        let mut short: &[u8] = &[0, 0, 0, 9, 1];
        assert!(matches!(
            read_frame(&mut short).await,
            Err(FrameError::Io(_))
        ));
        assert!(FrameReader::new(&[0, 0, 0, 5, b'a']).str().is_err());
        assert!(parse_reply(&[7]).is_err());
        assert!(FrameReader::new(&[2]).opt_bytes().is_err());
        let err = FrameWriter::new(1).str("boom").finish().expect("small");
        assert_eq!(
            parse_reply(&err).expect("frame").err().as_deref(),
            Some("boom")
        );
        assert!(FrameReader::new(&[1]).end().is_err());
    }
}
