//! A bounded, seeded mutation fuzzer for Spindle's IPC servers.
//!
//! Each case takes a seed stream of one port (a real client's capture, or a stream built
//! from the requests real clients send, see [`seeds`]), applies one to three mutations
//! ([`mutate`]: bit flips, byte inserts and deletes, frame and delimiter length tweaks,
//! interesting bytes, splices with frames of other seeds, truncation, duplicated, dropped
//! and swapped frames), sends the result on a fresh connection, half-closes it and reads
//! until the server closes ([`play`]). Everything is derived from one 64-bit seed, so a
//! run is reproducible case by case.
//!
//! The test `tests/ipc_fuzz.rs` replays the cases against a real ResourceManager and a
//! real NodeManager in its own process and checks, after every batch, that nothing has
//! panicked, that resident memory stays under a bound and that real requests are still
//! served. See `docs/fuzzing.md`.

pub mod seeds;

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A small deterministic generator (SplitMix64): the same seed gives the same cases on
/// every machine and with every version of the project's dependencies.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The generator of case `index` of `port` in a run seeded with `seed`.
    pub fn for_case(seed: u64, port: usize, index: u64) -> Rng {
        let mut r = Rng(seed ^ (port as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        r.0 ^= index.wrapping_mul(0xbf58_476d_1ce4_e5b9);
        r.next_u64();
        r
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    pub fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }

    pub fn byte(&mut self) -> u8 {
        self.next_u64() as u8
    }
}

/// A client → server stream: the 7-byte preamble, then frames, each with its 4-byte
/// length prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stream {
    pub name: String,
    pub preamble: Vec<u8>,
    pub frames: Vec<Vec<u8>>,
}

impl Stream {
    /// Splits a capture into the preamble and its frames.
    pub fn parse(name: &str, bytes: &[u8]) -> Result<Stream, String> {
        if bytes.len() < 7 {
            return Err(format!("{name}: shorter than a preamble"));
        }
        let mut frames = Vec::new();
        let mut pos = 7;
        while pos < bytes.len() {
            let head: [u8; 4] = bytes
                .get(pos..pos + 4)
                .and_then(|h| h.try_into().ok())
                .ok_or_else(|| format!("{name}: a frame length is cut off at {pos}"))?;
            let end = pos + 4 + u32::from_be_bytes(head) as usize;
            if end > bytes.len() {
                return Err(format!("{name}: the frame at {pos} is cut off"));
            }
            frames.push(bytes[pos..end].to_vec());
            pos = end;
        }
        Ok(Stream {
            name: name.to_string(),
            preamble: bytes[..7].to_vec(),
            frames,
        })
    }

    /// The bytes on the wire.
    pub fn bytes(&self) -> Vec<u8> {
        let mut out = self.preamble.clone();
        for f in &self.frames {
            out.extend_from_slice(f);
        }
        out
    }
}

/// Rewrites a frame's length prefix to match its body.
fn fix_length(frame: &mut Vec<u8>) {
    if frame.len() < 4 {
        frame.resize(4, 0);
    }
    let len = (frame.len() - 4) as u32;
    frame[..4].copy_from_slice(&len.to_be_bytes());
}

/// What one case did to its seed, for the failure message of a case that breaks
/// something.
#[derive(Debug, Clone)]
pub struct Case {
    pub seed: String,
    pub mutations: Vec<String>,
    pub bytes: Vec<u8>,
}

/// The length values the length tweaks choose from (besides ±1 and doubling).
const INTERESTING_LENGTHS: [u32; 8] = [
    0,
    1,
    0x7f,
    0x3fff,
    0x0010_0000,
    128 * 1024 * 1024,
    128 * 1024 * 1024 + 1,
    0x7fff_ffff,
];

/// Applies one to three mutations to a copy of `seed`; `others` are the seeds of every
/// port, for splices.
pub fn mutate(seed: &Stream, others: &[Stream], rng: &mut Rng) -> Case {
    let mut s = seed.clone();
    let mut done = Vec::new();
    let rounds = 1 + rng.below(3);
    for _ in 0..rounds {
        done.push(mutate_once(&mut s, others, rng));
    }
    Case {
        seed: seed.name.clone(),
        mutations: done,
        bytes: s.bytes(),
    }
    .truncated_maybe(rng)
}

impl Case {
    /// One case in eight also cuts the whole stream short.
    fn truncated_maybe(mut self, rng: &mut Rng) -> Case {
        if rng.chance(8) && !self.bytes.is_empty() {
            let at = rng.below(self.bytes.len());
            self.bytes.truncate(at);
            self.mutations.push(format!("truncate the stream at {at}"));
        }
        self
    }
}

fn mutate_once(s: &mut Stream, others: &[Stream], rng: &mut Rng) -> String {
    if s.frames.is_empty() || rng.chance(40) {
        // The preamble: its version, service class or auth byte.
        let i = 4 + rng.below(3);
        let v = rng.byte();
        if let Some(b) = s.preamble.get_mut(i) {
            *b = v;
        }
        return format!("preamble byte {i} := {v:#04x}");
    }
    let i = rng.below(s.frames.len());
    let body_len = s.frames[i].len().saturating_sub(4);
    match rng.below(10) {
        0 | 1 => {
            let flips = 1 + rng.below(8);
            for _ in 0..flips {
                if body_len > 0 {
                    let at = 4 + rng.below(body_len);
                    s.frames[i][at] ^= 1 << rng.below(8);
                }
            }
            format!("frame {i}: {flips} bit flips")
        }
        2 => {
            let n = 1 + rng.below(16);
            let at = 4 + rng.below(body_len + 1);
            let bytes: Vec<u8> = (0..n).map(|_| rng.byte()).collect();
            s.frames[i].splice(at..at, bytes);
            let fixed = rng.chance(2);
            if fixed {
                fix_length(&mut s.frames[i]);
            }
            format!("frame {i}: insert {n} bytes at {at} (length fixed: {fixed})")
        }
        3 => {
            if body_len == 0 {
                return format!("frame {i}: nothing to delete");
            }
            let at = 4 + rng.below(body_len);
            let n = (1 + rng.below(16)).min(s.frames[i].len() - at);
            s.frames[i].drain(at..at + n);
            let fixed = rng.chance(2);
            if fixed {
                fix_length(&mut s.frames[i]);
            }
            format!("frame {i}: delete {n} bytes at {at} (length fixed: {fixed})")
        }
        4 => {
            let old = body_len as u32;
            let new = match rng.below(4) {
                0 => old.wrapping_add(1),
                1 => old.wrapping_sub(1),
                2 => old.wrapping_mul(2),
                _ => INTERESTING_LENGTHS[rng.below(INTERESTING_LENGTHS.len())],
            };
            let new = if rng.chance(10) {
                new | 0x8000_0000
            } else {
                new
            };
            s.frames[i][..4].copy_from_slice(&new.to_be_bytes());
            format!("frame {i}: length {old} := {new}")
        }
        5 => {
            // The varint length of one of the delimited messages inside the frame.
            if body_len == 0 {
                return format!("frame {i}: no delimiter");
            }
            let at = 4 + rng.below(body_len.min(64));
            let v = match rng.below(3) {
                0 => 0x7f,
                1 => 0x80 | rng.byte(),
                _ => rng.byte() & 0x7f,
            };
            s.frames[i][at] = v;
            format!("frame {i}: byte {at} := {v:#04x} (a delimiter, maybe)")
        }
        6 => {
            let at = 4 + rng.below(body_len.max(1));
            let v = [0x00, 0xff, 0x7f, 0x80, 0x01, 0xfe][rng.below(6)];
            if let Some(b) = s.frames[i].get_mut(at) {
                *b = v;
            }
            format!("frame {i}: byte {at} := {v:#04x}")
        }
        7 => {
            // Splice: this frame's head with another seed frame's tail.
            let other = &others[rng.below(others.len())];
            if other.frames.is_empty() {
                return format!("frame {i}: no frame to splice from {}", other.name);
            }
            let j = rng.below(other.frames.len());
            let donor = &other.frames[j];
            let cut = 4 + rng.below(body_len + 1);
            let from = 4 + rng.below(donor.len().saturating_sub(4) + 1);
            let mut frame = s.frames[i][..cut].to_vec();
            frame.extend_from_slice(donor.get(from..).unwrap_or_default());
            fix_length(&mut frame);
            s.frames[i] = frame;
            format!(
                "frame {i}: head to {cut}, then {}'s frame {j} from {from}",
                other.name
            )
        }
        8 => {
            // A whole frame of another seed in place of this one.
            let other = &others[rng.below(others.len())];
            match other.frames.get(rng.below(other.frames.len().max(1))) {
                Some(f) => {
                    s.frames[i] = f.clone();
                    format!("frame {i} := a frame of {}", other.name)
                }
                None => format!("frame {i}: {} has no frames", other.name),
            }
        }
        _ => match rng.below(3) {
            0 => {
                let f = s.frames[i].clone();
                s.frames.insert(i, f);
                format!("frame {i} twice")
            }
            1 => {
                s.frames.remove(i);
                format!("frame {i} dropped")
            }
            _ => {
                let j = rng.below(s.frames.len());
                s.frames.swap(i, j);
                format!("frames {i} and {j} swapped")
            }
        },
    }
}

/// How the server treated one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The server answered (or not) and closed the connection after ours was half-closed.
    Closed { reply_bytes: usize },
    /// The server refused the connection or reset it.
    Reset,
    /// The server neither closed nor reset the connection in time.
    Hung,
}

/// Sends `bytes` on a new connection to `addr`, half-closes it and reads until the
/// server closes; each step is bounded by `limit`.
pub async fn play(addr: SocketAddr, bytes: &[u8], limit: Duration) -> Outcome {
    let Ok(Ok(mut stream)) = tokio::time::timeout(limit, TcpStream::connect(addr)).await else {
        return Outcome::Reset;
    };
    // A server that stops reading (a frame waiting for budget, a FATAL already sent)
    // may leave part of the stream unwritten: that is fine, the read tells the rest.
    let _ = tokio::time::timeout(limit, stream.write_all(bytes)).await;
    let _ = stream.shutdown().await;
    let mut got = 0usize;
    let mut buf = vec![0u8; 16 * 1024];
    let read_all = async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) => return Outcome::Closed { reply_bytes: got },
                Ok(n) => got += n,
                Err(_) => return Outcome::Reset,
            }
        }
    };
    tokio::time::timeout(limit, read_all)
        .await
        .unwrap_or(Outcome::Hung)
}

/// Resident memory of this process in MiB (`VmRSS` of `/proc/self/status`).
pub fn rss_mib() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kb / 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Stream> {
        seeds::all()
            .into_iter()
            .flat_map(|(_, streams)| streams)
            .collect()
    }

    #[test]
    fn captures_parse_back_to_their_bytes() {
        for s in sample() {
            let bytes = s.bytes();
            assert_eq!(
                Stream::parse(&s.name, &bytes).as_ref(),
                Ok(&s),
                "{}",
                s.name
            );
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_cases() {
        let all = sample();
        for index in 0..200 {
            let mut a = Rng::for_case(7, 1, index);
            let mut b = Rng::for_case(7, 1, index);
            let seed = &all[index as usize % all.len()];
            let ca = mutate(seed, &all, &mut a);
            let cb = mutate(seed, &all, &mut b);
            assert_eq!(ca.bytes, cb.bytes);
            assert_eq!(ca.mutations, cb.mutations);
        }
        let mut a = Rng::for_case(7, 1, 0);
        let mut b = Rng::for_case(8, 1, 0);
        assert_ne!(a.next_u64(), b.next_u64());
    }

    #[test]
    fn most_cases_change_their_seed() {
        let all = sample();
        let mut changed = 0;
        for index in 0..500u64 {
            let seed = &all[index as usize % all.len()];
            let case = mutate(seed, &all, &mut Rng::for_case(1, 0, index));
            if case.bytes != seed.bytes() {
                changed += 1;
            }
        }
        assert!(
            changed > 450,
            "only {changed} of 500 cases differ from their seed"
        );
    }
}
