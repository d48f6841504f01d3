//! The byte formats the shuffle shares with Hadoop's Java classes.
//!
//! - [`ShuffleHeader`]: `org.apache.hadoop.mapreduce.task.reduce.ShuffleHeader`, the Writable
//!   that precedes each map output in a reply (`Text.writeString(mapId)`, then
//!   `WritableUtils.writeVLong(compressedLength)`, `writeVLong(uncompressedLength)`,
//!   `writeVInt(forReduce)`).
//! - [`JobToken`]: `Token<JobTokenIdentifier>` as `Token.write` writes it (VInt-prefixed
//!   identifier and password bytes, then the kind and service as `Text`), read and written by
//!   `spindle_common`'s one codec of a token's Writable form. The identifier is a
//!   `JobTokenIdentifier`, itself one `Text` (the job id).
//! - [`job_id_of_app`]: `new JobID(Long.toString(appId.getClusterTimestamp()), appId.getId())`
//!   as a string, the name under which `ShuffleHandler` keeps a job's token.

use spindle_common::security::credentials::{read_vlong, write_text, write_vint, write_vlong};
use spindle_common::security::Token;
use spindle_common::ApplicationId;

/// `ShuffleHeader.MAX_ID_LENGTH`: `readStringSafely` refuses longer map ids.
pub const MAX_ID_LENGTH: usize = 1000;

/// A malformed Writable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct WireError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, WireError> {
    Err(WireError(msg.into()))
}

/// The header sent before each map output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShuffleHeader {
    pub map_id: String,
    pub compressed_length: i64,
    pub uncompressed_length: i64,
    pub for_reduce: i32,
}

impl ShuffleHeader {
    /// `ShuffleHeader.write`.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.map_id.len() + 24);
        write_text(&mut out, &self.map_id);
        write_vlong(&mut out, self.compressed_length);
        write_vlong(&mut out, self.uncompressed_length);
        write_vint(&mut out, self.for_reduce);
        out
    }

    /// `ShuffleHeader.readFields` (with `readStringSafely`'s length bound); returns the
    /// header and the number of bytes it took.
    pub fn decode(bytes: &[u8]) -> Result<(ShuffleHeader, usize), WireError> {
        let mut r = Cursor { buf: bytes, pos: 0 };
        let len = r.vint("map id length")?;
        if len < 0 || len as usize > MAX_ID_LENGTH {
            return err(format!(
                "map id length {len} is outside 0..={MAX_ID_LENGTH}"
            ));
        }
        let map_id = r.utf8(len as usize, "map id")?;
        let compressed_length = r.vlong("compressed length")?;
        let uncompressed_length = r.vlong("uncompressed length")?;
        let for_reduce = r.vint("reduce")?;
        Ok((
            ShuffleHeader {
                map_id,
                compressed_length,
                uncompressed_length,
                for_reduce,
            },
            r.pos,
        ))
    }
}

/// A `Token<JobTokenIdentifier>` from a job's service data, with the job id
/// its identifier names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobToken {
    /// The job id the identifier names (`JobTokenIdentifier.jobid`).
    pub job_id: String,
    /// The token as it came; its password is the HmacSHA1 key of the job's
    /// shuffle (`JobTokenSecretManager.createSecretKey`).
    pub token: Token,
}

impl JobToken {
    /// `Token.readFields` of `ShuffleHandler.deserializeServiceData`. Bytes after the token
    /// are ignored, as Java's reader ignores them.
    pub fn decode(bytes: &[u8]) -> Result<JobToken, WireError> {
        let (token, _) = Token::read_writable(bytes).or_else(|e| err(format!("job token: {e}")))?;
        if token.password.is_empty() {
            return err("the job token has an empty password");
        }
        // JobTokenIdentifier.readFields: one Text.
        let mut id = Cursor {
            buf: &token.identifier,
            pos: 0,
        };
        let job_id = id.text("job token identifier")?;
        Ok(JobToken { job_id, token })
    }

    /// `Token.write` (for tests and tools).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.token.write_writable(&mut out);
        out
    }

    /// A token as the MapReduce client makes one: `JobTokenIdentifier(job_id)`, kind
    /// `mapreduce.job`.
    pub fn new(job_id: &str, password: Vec<u8>) -> JobToken {
        let mut identifier = Vec::new();
        write_text(&mut identifier, job_id);
        JobToken {
            job_id: job_id.to_string(),
            token: Token::new(identifier, password, "mapreduce.job", ""),
        }
    }
}

/// The job id `ShuffleHandler` derives from an application id:
/// `job_<clusterTimestamp>_<id, at least 4 digits>`.
pub fn job_id_of_app(app: &ApplicationId) -> String {
    format!("job_{}_{:04}", app.cluster_timestamp, app.id)
}

/// The application id `ShuffleHandler.getBaseLocation` derives back from a job id.
pub fn app_id_of_job(job_id: &str) -> Option<ApplicationId> {
    let rest = job_id.strip_prefix("job_")?;
    let (ts, id) = rest.split_once('_')?;
    if ts.is_empty() || id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(ApplicationId::new(ts.parse().ok()?, id.parse().ok()?))
}

struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn vlong(&mut self, what: &str) -> Result<i64, WireError> {
        let rest = self.buf.get(self.pos..).unwrap_or_default();
        match read_vlong(rest) {
            Ok((v, n)) => {
                self.pos += n;
                Ok(v)
            }
            Err(e) => err(format!("{what}: {e}")),
        }
    }

    fn vint(&mut self, what: &str) -> Result<i32, WireError> {
        let v = self.vlong(what)?;
        i32::try_from(v).or_else(|_| err(format!("{what}: {v} does not fit in an int")))
    }

    fn bytes(&mut self, len: usize, what: &str) -> Result<&'a [u8], WireError> {
        let end = self.pos.checked_add(len).filter(|e| *e <= self.buf.len());
        match end {
            Some(end) => {
                let s = &self.buf[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => err(format!(
                "{what}: {len} bytes claimed, {} remain",
                self.buf.len() - self.pos
            )),
        }
    }

    fn utf8(&mut self, len: usize, what: &str) -> Result<String, WireError> {
        let b = self.bytes(len, what)?;
        String::from_utf8(b.to_vec()).or_else(|_| err(format!("{what} is not UTF-8")))
    }

    fn text(&mut self, what: &str) -> Result<String, WireError> {
        let n = self.vint(what)?;
        let n = usize::try_from(n).or_else(|_| err(format!("{what}: bad length {n}")))?;
        // Java's Text decoding replaces malformed input.
        Ok(String::from_utf8_lossy(self.bytes(n, what)?).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shuffle_header_bytes_are_hadoops() {
        let h = ShuffleHeader {
            map_id: "attempt_1_0001_m_000000_0".into(),
            compressed_length: 300,
            uncompressed_length: 5,
            for_reduce: 2,
        };
        let bytes = h.encode();
        let mut want = vec![25u8];
        want.extend_from_slice(b"attempt_1_0001_m_000000_0");
        // 300 = 0x012c: marker -114 (two bytes), then big-endian.
        want.extend_from_slice(&[0x8e, 0x01, 0x2c, 5, 2]);
        assert_eq!(bytes, want);
        let (back, n) = ShuffleHeader::decode(&bytes).expect("decodes");
        assert_eq!((back, n), (h, bytes.len()));
    }

    #[test]
    fn shuffle_header_refuses_long_or_truncated_ids() {
        let mut long = Vec::new();
        write_vint(&mut long, 1001);
        long.extend(std::iter::repeat_n(b'a', 1001));
        assert!(ShuffleHeader::decode(&long).is_err());
        assert!(ShuffleHeader::decode(&[5, b'a']).is_err());
        assert!(ShuffleHeader::decode(&[]).is_err());
    }

    #[test]
    fn job_token_round_trips_and_names_its_job() {
        let t = JobToken::new("job_1700000000000_0007", b"secret".to_vec());
        let bytes = t.encode();
        // identifier = Text(job id) = 22 + 1 bytes; password 6 bytes; kind 13; service 0.
        assert_eq!(bytes[0], 23);
        assert_eq!(bytes[1], 22);
        let back = JobToken::decode(&bytes).expect("decodes");
        assert_eq!(back, t);
        assert_eq!(back.job_id, "job_1700000000000_0007");
    }

    #[test]
    fn job_token_refuses_garbage() {
        assert!(JobToken::decode(&[]).is_err());
        assert!(JobToken::decode(&[0x05, 1, 2]).is_err());
        // A negative length (VInt -1).
        assert!(JobToken::decode(&[0xff]).is_err());
        // Empty password.
        let t = JobToken::new("job_1_0001", Vec::new());
        assert!(JobToken::decode(&t.encode()).is_err());
        // A huge claimed length fails without allocating it.
        let mut huge = Vec::new();
        write_vint(&mut huge, i32::MAX);
        assert!(JobToken::decode(&huge).is_err());
    }

    #[test]
    fn job_ids_follow_hadoops_jobid() {
        assert_eq!(
            job_id_of_app(&ApplicationId::new(1700000000000, 7)),
            "job_1700000000000_0007"
        );
        assert_eq!(
            job_id_of_app(&ApplicationId::new(5, 123456)),
            "job_5_123456"
        );
        assert_eq!(
            app_id_of_job("job_1700000000000_0007"),
            Some(ApplicationId::new(1700000000000, 7))
        );
        assert_eq!(app_id_of_job("job_x_1"), None);
        assert_eq!(app_id_of_job("job_1_"), None);
        assert_eq!(app_id_of_job("application_1_0001"), None);
    }
}
