//! The server's side of a connection's input: frames read against the byte
//! budget, with no buffer held while the connection is idle.
//!
//! Bytes are read from the socket into a small read buffer (1 KiB when
//! it is empty, at most [`READ_CHUNK`] at a time) only to find the next frame's length; a frame's
//! body gets its own allocation of exactly its length, made after the length
//! has been checked against the limit and taken from the byte budget, and
//! filled from the read buffer and then straight from the socket. The read
//! buffer is released whenever it is empty, so a connection waiting for its
//! next frame holds no buffer, and nothing stays at the size of the largest
//! frame the connection has sent.

use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::AsyncReadExt;
use tokio::net::tcp::OwnedReadHalf;

use crate::frame::{self, FrameError};
use crate::limits::{Budget, Counters, Hold};

/// How much the read buffer asks the socket for at a time.
pub const READ_CHUNK: usize = 4096;

/// What an empty read buffer is first allocated with. Most calls (a
/// heartbeat, an allocate) fit in it, and an allocation this small comes
/// from the allocator's per-thread cache; a 4 KiB buffer made and dropped
/// for every frame of every connection cost the RM about a tenth of its
/// CPU at 10,000 NodeManagers. A larger frame's body is read straight from
/// the socket anyway (see [`FrameReader::read_frame`]).
const FIRST_CHUNK: usize = 1024;

/// One connection's input.
pub struct FrameReader {
    half: OwnedReadHalf,
    buf: BytesMut,
    /// The read buffer's capacity as last reported to `counters`.
    reported: usize,
    counters: Arc<Counters>,
}

impl FrameReader {
    pub fn new(half: OwnedReadHalf, counters: Arc<Counters>) -> FrameReader {
        FrameReader {
            half,
            buf: BytesMut::new(),
            reported: 0,
            counters,
        }
    }

    fn report(&mut self) {
        let now = self.buf.capacity();
        if now != self.reported {
            if now > self.reported {
                self.counters
                    .read_buffer_bytes
                    .fetch_add(now - self.reported, Ordering::Relaxed);
            } else {
                self.counters
                    .read_buffer_bytes
                    .fetch_sub(self.reported - now, Ordering::Relaxed);
            }
            self.reported = now;
        }
    }

    /// Drops the read buffer's allocation if nothing is in it.
    fn release_if_empty(&mut self) {
        if self.buf.is_empty() && self.buf.capacity() > 0 {
            self.buf = BytesMut::new();
            self.report();
        }
    }

    /// Reads what the socket has into the read buffer, waiting until it has
    /// something: the number of bytes read, 0 at end of stream. The buffer
    /// is allocated only once there is something to read.
    async fn fill(&mut self) -> io::Result<usize> {
        loop {
            self.half.readable().await?;
            if self.buf.capacity() == 0 {
                self.buf.reserve(FIRST_CHUNK);
                self.report();
            } else if self.buf.capacity() - self.buf.len() < READ_CHUNK {
                self.buf.reserve(READ_CHUNK);
                self.report();
            }
            match self.half.try_read_buf(&mut self.buf) {
                Ok(n) => {
                    if n == 0 {
                        self.release_if_empty();
                    }
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.release_if_empty();
                    continue;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Reads and drops what the peer still sends, until it closes, `limit`
    /// bytes have come or `deadline` passes: a server that refused the
    /// connection does this after its FATAL reply and its half-close, so
    /// the socket is not closed over unread input (which makes the kernel
    /// reset the connection, and the peer may lose the FATAL before it
    /// reads it).
    pub async fn drain(&mut self, limit: usize, deadline: std::time::Duration) {
        let mut seen = 0usize;
        let _ = tokio::time::timeout(deadline, async {
            while seen < limit {
                match self.fill().await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        seen += n;
                        self.buf.clear();
                    }
                }
            }
        })
        .await;
        self.buf.clear();
        self.release_if_empty();
    }

    /// Waits until the next frame starts: `false` if the peer closed the
    /// connection instead. Holds no buffer while it waits.
    pub async fn next_frame_starts(&mut self) -> io::Result<bool> {
        if !self.buf.is_empty() {
            return Ok(true);
        }
        self.release_if_empty();
        Ok(self.fill().await? > 0)
    }

    /// Reads exactly `out.len()` bytes (for the preamble).
    pub async fn read_exact(&mut self, out: &mut [u8]) -> Result<(), FrameError> {
        let mut filled = 0;
        while filled < out.len() {
            if self.buf.is_empty() && self.fill().await? == 0 {
                return Err(if filled == 0 {
                    FrameError::Eof
                } else {
                    FrameError::Truncated {
                        expected: out.len(),
                    }
                });
            }
            let n = (out.len() - filled).min(self.buf.len());
            out[filled..filled + n].copy_from_slice(&self.buf[..n]);
            self.buf.advance(n);
            filled += n;
        }
        self.release_if_empty();
        Ok(())
    }

    /// Reads one frame: its 4-byte length, checked against `max` before
    /// anything is allocated, then its body, allocated only once its length
    /// has been taken from `budget`. The body comes back with the budget it
    /// holds.
    pub async fn read_frame(
        &mut self,
        max: usize,
        budget: &Arc<Budget>,
    ) -> Result<(Bytes, Hold), FrameError> {
        let mut len_buf = [0u8; 4];
        self.read_exact(&mut len_buf).await?;
        let len = frame::frame_len(len_buf, max)?;
        let hold = budget.take(len).await;
        let mut body: Vec<u8> = Vec::with_capacity(len);
        let from_buf = len.min(self.buf.len());
        body.extend_from_slice(&self.buf[..from_buf]);
        self.buf.advance(from_buf);
        self.release_if_empty();
        while body.len() < len {
            let want = (len - body.len()) as u64;
            // Reads into the body's spare capacity, never past its end.
            let n = (&mut self.half).take(want).read_buf(&mut body).await?;
            if n == 0 {
                return Err(FrameError::Truncated { expected: len });
            }
        }
        Ok((Bytes::from(body), hold))
    }
}

impl Drop for FrameReader {
    fn drop(&mut self) {
        self.counters
            .read_buffer_bytes
            .fetch_sub(self.reported, Ordering::Relaxed);
    }
}
