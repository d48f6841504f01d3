//! Hadoop's credentials storage format ("HDTS"): the bytes of
//! `ContainerLaunchContext.tokens` and of the `container_tokens` file a container's
//! `HADOOP_TOKEN_FILE_LOCATION` points to.
//!
//! Layout: the magic `HDTS`, one format byte, then the content:
//!
//! * format 0, WRITABLE (what Hadoop 3.3/3.4 write, and what [`Credentials::to_bytes`]
//!   writes): VInt token count; per token a Text alias and the token (VInt length +
//!   identifier, VInt length + password, Text kind, Text service); VInt secret count;
//!   per secret a Text alias, VInt length and the bytes. A Text is a VInt byte length
//!   and UTF-8. VInts are Hadoop's `WritableUtils` encoding (see [`write_vlong`]).
//! * format 1, PROTOBUF: one varint-delimited `hadoop.common.CredentialsProto`.
//!
//! Anything after the content is ignored: Spark hands executors a buffer with trailing
//! zero bytes. Readers check every length against the bytes that remain before
//! allocating, so hostile input costs nothing and never panics.
//!
//! The Writable primitives here ([`write_vlong`], [`read_vlong`], [`write_text`]) and a
//! token's Writable form ([`Token::write_writable`], [`Token::read_writable`]) are the
//! ones every Writable Spindle shares with Hadoop is written with (the shuffle's
//! headers, job tokens and recovery records too).

use std::fmt;

use hadoop_protos::common::{CredentialsKvProto, CredentialsProto};
use prost::Message;

use super::tokens::Token;

/// The first four bytes of every credentials blob.
pub const MAGIC: &[u8; 4] = b"HDTS";
/// Format byte of the Writable layout.
pub const FORMAT_WRITABLE: u8 = 0;
/// Format byte of the protobuf layout.
pub const FORMAT_PROTOBUF: u8 = 1;

/// Why a credentials blob could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CredentialsError {
    #[error("bad header in token storage: expected 'HDTS', found {0:02x?}")]
    BadMagic(Vec<u8>),
    #[error("unknown version {0} in token storage (expected 0 = WRITABLE or 1 = PROTOBUF)")]
    UnknownFormat(u8),
    #[error("token storage is truncated: {0}")]
    Truncated(String),
    #[error("token storage is corrupt: {0}")]
    Corrupt(String),
}

fn truncated<T>(what: impl fmt::Display) -> Result<T, CredentialsError> {
    Err(CredentialsError::Truncated(what.to_string()))
}

fn corrupt<T>(what: impl fmt::Display) -> Result<T, CredentialsError> {
    Err(CredentialsError::Corrupt(what.to_string()))
}

// ---------------------------------------------------------------------------------
// WritableUtils variable-length integers

/// Appends `value` in Hadoop's `WritableUtils.writeVLong` encoding.
///
/// -112..=127 is one byte holding the value. Otherwise a marker byte gives the sign
/// and the number of magnitude bytes that follow, big-endian: -113..=-120 for 1..=8
/// bytes of a non-negative value, -121..=-128 for 1..=8 bytes of a negative value
/// stored as its ones' complement.
pub fn write_vlong(out: &mut Vec<u8>, value: i64) {
    if (-112..=127).contains(&value) {
        out.push(value as u8);
        return;
    }
    let (magnitude, base) = if value < 0 {
        (!value, -120i32)
    } else {
        (value, -112i32)
    };
    let len = (64 - magnitude.leading_zeros()).div_ceil(8) as i32;
    out.push((base - len) as u8);
    for i in (0..len).rev() {
        out.push((magnitude >> (8 * i)) as u8);
    }
}

/// Appends an int in the same encoding (`WritableUtils.writeVInt`).
pub fn write_vint(out: &mut Vec<u8>, value: i32) {
    write_vlong(out, i64::from(value));
}

/// A cursor over a byte slice with checked reads.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn byte(&mut self, what: &str) -> Result<u8, CredentialsError> {
        match self.buf.get(self.pos) {
            Some(b) => {
                self.pos += 1;
                Ok(*b)
            }
            None => truncated(format!("end of data at offset {} reading {what}", self.pos)),
        }
    }

    fn bytes(&mut self, len: usize, what: &str) -> Result<&'a [u8], CredentialsError> {
        if len > self.remaining() {
            return truncated(format!(
                "{what} claims {len} bytes at offset {} but only {} remain",
                self.pos,
                self.remaining()
            ));
        }
        let s = &self.buf[self.pos..self.pos + len];
        self.pos += len;
        Ok(s)
    }

    fn vlong(&mut self, what: &str) -> Result<i64, CredentialsError> {
        let first = self.byte(what)? as i8;
        if first >= -112 {
            return Ok(i64::from(first));
        }
        let (len, negative) = if first < -120 {
            (-120 - i32::from(first), true)
        } else {
            (-112 - i32::from(first), false)
        };
        let mut value: i64 = 0;
        for _ in 0..len {
            value = (value << 8) | i64::from(self.byte(what)?);
        }
        Ok(if negative { !value } else { value })
    }

    fn vint(&mut self, what: &str) -> Result<i32, CredentialsError> {
        let v = self.vlong(what)?;
        i32::try_from(v).or_else(|_| corrupt(format!("{what}: value {v} does not fit in an int")))
    }

    /// A non-negative VInt length whose bytes must all still be there.
    fn length(&mut self, what: &str) -> Result<usize, CredentialsError> {
        let at = self.pos;
        let n = self.vint(what)?;
        if n < 0 {
            return corrupt(format!("negative length {n} for {what} at offset {at}"));
        }
        Ok(n as usize)
    }

    /// A VInt-length-prefixed byte string.
    fn blob(&mut self, what: &str) -> Result<Vec<u8>, CredentialsError> {
        let n = self.length(what)?;
        Ok(self.bytes(n, what)?.to_vec())
    }

    /// A Hadoop Text. Invalid UTF-8 is replaced, as Java's decoder does.
    fn text(&mut self, what: &str) -> Result<String, CredentialsError> {
        let n = self.length(what)?;
        Ok(String::from_utf8_lossy(self.bytes(n, what)?).into_owned())
    }

    /// A token in its Writable form; `name` says which in errors.
    fn token(&mut self, name: &str) -> Result<Token, CredentialsError> {
        Ok(Token {
            identifier: self.blob(&format!("the identifier of {name}"))?,
            password: self.blob(&format!("the password of {name}"))?,
            kind: self.text(&format!("the kind of {name}"))?,
            service: self.text(&format!("the service of {name}"))?,
        })
    }

    /// A count of entries, each at least `min_entry_bytes` long.
    fn count(&mut self, what: &str, min_entry_bytes: usize) -> Result<usize, CredentialsError> {
        let n = self.length(what)?;
        if n.saturating_mul(min_entry_bytes) > self.remaining() {
            return truncated(format!(
                "{n} {what} cannot fit in the {} bytes that remain",
                self.remaining()
            ));
        }
        Ok(n)
    }
}

/// Reads one VLong from the start of `bytes`; returns it and the bytes consumed.
pub fn read_vlong(bytes: &[u8]) -> Result<(i64, usize), CredentialsError> {
    let mut r = Reader::new(bytes);
    let v = r.vlong("VLong")?;
    Ok((v, r.pos))
}

/// Appends `bytes` after their VInt length (`WritableUtils.writeVInt` then
/// the bytes, as `Token.write` writes its identifier and password).
fn write_blob(out: &mut Vec<u8>, bytes: &[u8]) {
    write_vint(out, len_i32(bytes.len()));
    out.extend_from_slice(bytes);
}

/// Appends a Hadoop `Text` (`Text.writeString`): its UTF-8 byte length as
/// a VInt, then the bytes.
pub fn write_text(out: &mut Vec<u8>, text: &str) {
    write_blob(out, text.as_bytes());
}

fn len_i32(len: usize) -> i32 {
    // Java arrays cannot be longer; nothing Spindle builds comes close.
    i32::try_from(len).unwrap_or(i32::MAX)
}

// ---------------------------------------------------------------------------------
// Token's Writable form

impl Token {
    /// Appends the token as Hadoop's `Token.write` writes it: VInt length
    /// and identifier bytes, VInt length and password bytes, the kind and
    /// the service as `Text`s. This is a token's form inside WRITABLE
    /// credentials and in a job's shuffle service data.
    pub fn write_writable(&self, out: &mut Vec<u8>) {
        write_blob(out, &self.identifier);
        write_blob(out, &self.password);
        write_text(out, &self.kind);
        write_text(out, &self.service);
    }

    /// Reads a token written by [`Token::write_writable`] (Hadoop's
    /// `Token.readFields`) from the start of `bytes`; returns it and the
    /// number of bytes it took. Every length is checked against what
    /// remains before anything is allocated.
    pub fn read_writable(bytes: &[u8]) -> Result<(Token, usize), CredentialsError> {
        let mut r = Reader::new(bytes);
        let token = r.token("token")?;
        Ok((token, r.pos))
    }
}

// ---------------------------------------------------------------------------------
// Credentials

/// Tokens and secret keys by alias, in insertion order.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Credentials {
    pub tokens: Vec<(String, Token)>,
    pub secrets: Vec<(String, Vec<u8>)>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("tokens", &self.tokens)
            .field(
                "secrets",
                &self
                    .secrets
                    .iter()
                    .map(|(a, _)| a.as_str())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Credentials {
    pub fn new() -> Credentials {
        Credentials::default()
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty() && self.secrets.is_empty()
    }

    /// Adds `token` under `alias`, replacing a token already stored under it.
    pub fn add_token(&mut self, alias: impl Into<String>, token: Token) {
        let alias = alias.into();
        match self.tokens.iter_mut().find(|(a, _)| *a == alias) {
            Some(slot) => slot.1 = token,
            None => self.tokens.push((alias, token)),
        }
    }

    pub fn token(&self, alias: &str) -> Option<&Token> {
        self.tokens.iter().find(|(a, _)| a == alias).map(|(_, t)| t)
    }

    pub fn remove_token(&mut self, alias: &str) -> Option<Token> {
        let i = self.tokens.iter().position(|(a, _)| a == alias)?;
        Some(self.tokens.remove(i).1)
    }

    /// Tokens of one kind, in order.
    pub fn tokens_of_kind<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Token> + 'a {
        self.tokens
            .iter()
            .map(|(_, t)| t)
            .filter(move |t| t.kind == kind)
    }

    /// Adds a secret key under `alias`, replacing one already stored under it.
    pub fn add_secret(&mut self, alias: impl Into<String>, secret: Vec<u8>) {
        let alias = alias.into();
        match self.secrets.iter_mut().find(|(a, _)| *a == alias) {
            Some(slot) => slot.1 = secret,
            None => self.secrets.push((alias, secret)),
        }
    }

    pub fn secret(&self, alias: &str) -> Option<&[u8]> {
        self.secrets
            .iter()
            .find(|(a, _)| a == alias)
            .map(|(_, s)| s.as_slice())
    }

    /// Copies everything from `other`, overwriting entries with the same alias
    /// (Hadoop's `addAll`).
    pub fn add_all(&mut self, other: &Credentials) {
        for (alias, token) in &other.tokens {
            self.add_token(alias.clone(), token.clone());
        }
        for (alias, secret) in &other.secrets {
            self.add_secret(alias.clone(), secret.clone());
        }
    }

    /// Copies from `other` only the aliases not present here (Hadoop's `mergeAll`).
    pub fn merge_all(&mut self, other: &Credentials) {
        for (alias, token) in &other.tokens {
            if self.token(alias).is_none() {
                self.tokens.push((alias.clone(), token.clone()));
            }
        }
        for (alias, secret) in &other.secrets {
            if self.secret(alias).is_none() {
                self.secrets.push((alias.clone(), secret.clone()));
            }
        }
    }

    /// The WRITABLE form (format byte 0), which Hadoop 3.3/3.4 write and every Hadoop
    /// version reads.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64);
        out.extend_from_slice(MAGIC);
        out.push(FORMAT_WRITABLE);
        write_vint(&mut out, len_i32(self.tokens.len()));
        for (alias, token) in &self.tokens {
            write_text(&mut out, alias);
            token.write_writable(&mut out);
        }
        write_vint(&mut out, len_i32(self.secrets.len()));
        for (alias, secret) in &self.secrets {
            write_text(&mut out, alias);
            write_blob(&mut out, secret);
        }
        out
    }

    /// The PROTOBUF form (format byte 1).
    pub fn to_protobuf_bytes(&self) -> Vec<u8> {
        let proto = CredentialsProto {
            tokens: self
                .tokens
                .iter()
                .map(|(alias, token)| CredentialsKvProto {
                    alias: alias.clone(),
                    token: Some(token.to_proto()),
                    secret: None,
                })
                .collect(),
            secrets: self
                .secrets
                .iter()
                .map(|(alias, secret)| CredentialsKvProto {
                    alias: alias.clone(),
                    token: None,
                    secret: Some(secret.clone()),
                })
                .collect(),
        };
        let mut out = Vec::with_capacity(MAGIC.len() + 1 + proto.encoded_len() + 5);
        out.extend_from_slice(MAGIC);
        out.push(FORMAT_PROTOBUF);
        // Writing into a Vec cannot run out of space.
        if let Err(e) = proto.encode_length_delimited(&mut out) {
            unreachable!("encoding into a Vec failed: {e}");
        }
        out
    }

    /// Reads either format. Bytes after the content are ignored. Later entries with
    /// an alias seen before replace the earlier ones, as in Hadoop's maps.
    pub fn from_bytes(bytes: &[u8]) -> Result<Credentials, CredentialsError> {
        let mut r = Reader::new(bytes);
        let magic = r
            .bytes(MAGIC.len(), "the HDTS magic")
            .map_err(|_| CredentialsError::BadMagic(bytes.iter().take(4).copied().collect()))?;
        if magic != MAGIC {
            return Err(CredentialsError::BadMagic(magic.to_vec()));
        }
        match r.byte("the format byte")? {
            FORMAT_WRITABLE => Self::read_writable(&mut r),
            FORMAT_PROTOBUF => Self::read_protobuf(&bytes[r.pos..]),
            other => Err(CredentialsError::UnknownFormat(other)),
        }
    }

    fn read_writable(r: &mut Reader<'_>) -> Result<Credentials, CredentialsError> {
        let mut creds = Credentials::new();
        // A token is at least five one-byte lengths; a secret at least two.
        let n = r.count("tokens", 5)?;
        for i in 0..n {
            let alias = r.text(&format!("the alias of token {i}"))?;
            let token = r.token(&format!("token '{alias}'"))?;
            creds.add_token(alias, token);
        }
        let n = r.count("secrets", 2)?;
        for i in 0..n {
            let alias = r.text(&format!("the alias of secret {i}"))?;
            let secret = r.blob(&format!("secret '{alias}'"))?;
            creds.add_secret(alias, secret);
        }
        Ok(creds)
    }

    fn read_protobuf(mut rest: &[u8]) -> Result<Credentials, CredentialsError> {
        // prost checks the length prefix against the remaining bytes and leaves
        // anything after the message unread.
        let proto = CredentialsProto::decode_length_delimited(&mut rest)
            .or_else(|e| corrupt(format!("undecodable CredentialsProto: {e}")))?;
        let mut creds = Credentials::new();
        for kv in proto.tokens {
            let token = kv.token.ok_or_else(|| {
                CredentialsError::Corrupt(format!("token entry '{}' has no token", kv.alias))
            })?;
            creds.add_token(kv.alias, Token::from_proto(token));
        }
        for kv in proto.secrets {
            creds.add_secret(kv.alias, kv.secret.unwrap_or_default());
        }
        Ok(creds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::tokens::kind;

    fn vlong_bytes(v: i64) -> Vec<u8> {
        let mut out = Vec::new();
        write_vlong(&mut out, v);
        out
    }

    #[test]
    fn vlong_encoding_at_the_boundaries() {
        let cases: &[(i64, &[u8])] = &[
            (0, &[0x00]),
            (1, &[0x01]),
            (-1, &[0xff]),
            (-112, &[0x90]),
            (-113, &[0x87, 0x70]),
            (127, &[0x7f]),
            (128, &[0x8f, 0x80]),
            (255, &[0x8f, 0xff]),
            (256, &[0x8e, 0x01, 0x00]),
            (-256, &[0x87, 0xff]),
            (-257, &[0x86, 0x01, 0x00]),
            (65535, &[0x8e, 0xff, 0xff]),
            (65536, &[0x8d, 0x01, 0x00, 0x00]),
            (i64::from(i32::MAX), &[0x8c, 0x7f, 0xff, 0xff, 0xff]),
            (i64::from(i32::MIN), &[0x84, 0x7f, 0xff, 0xff, 0xff]),
            (
                i64::MAX,
                &[0x88, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
            ),
            (
                i64::MIN,
                &[0x80, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
            ),
        ];
        for (value, expected) in cases {
            assert_eq!(&vlong_bytes(*value), expected, "encoding {value}");
            assert_eq!(
                read_vlong(expected),
                Ok((*value, expected.len())),
                "decoding {value}"
            );
        }
    }

    #[test]
    fn vlong_round_trips_across_the_range() {
        let mut v: i64 = 1;
        let mut samples = vec![0i64, i64::MAX, i64::MIN];
        for _ in 0..63 {
            samples.extend([v, v - 1, v + 1, -v, -v - 1, -v + 1]);
            v = v.wrapping_mul(2);
        }
        for s in samples {
            let b = vlong_bytes(s);
            assert_eq!(read_vlong(&b), Ok((s, b.len())), "value {s}");
        }
        // Truncated multi-byte values are errors, not panics.
        assert!(read_vlong(&[0x8e, 0x01]).is_err());
        assert!(read_vlong(&[]).is_err());
    }

    fn sample() -> Credentials {
        let mut c = Credentials::new();
        c.add_token(
            "",
            Token::new(vec![0x0a, 0x02, 0x08, 0x01], vec![9; 20], kind::AM_RM, ""),
        );
        c.add_token(
            "hdfs",
            Token::new(
                vec![1; 300],
                vec![2; 20],
                "HDFS_DELEGATION_TOKEN",
                "10.0.0.1:8020",
            ),
        );
        c.add_secret("spark.secret", b"\x00\x01secret".to_vec());
        c
    }

    #[test]
    fn empty_credentials_bytes() {
        let empty = Credentials::new().to_bytes();
        assert_eq!(empty, [0x48, 0x44, 0x54, 0x53, 0x00, 0x00, 0x00]);
        assert_eq!(Credentials::from_bytes(&empty), Ok(Credentials::new()));
        assert!(Credentials::new().is_empty());
    }

    #[test]
    fn writable_round_trip_and_layout() {
        let c = sample();
        let bytes = c.to_bytes();
        assert_eq!(&bytes[..5], b"HDTS\x00");
        assert_eq!(bytes[5], 2, "token count");
        // First token: alias "" (0), identifier length 4, the identifier.
        assert_eq!(&bytes[6..12], &[0x00, 0x04, 0x0a, 0x02, 0x08, 0x01]);
        assert_eq!(Credentials::from_bytes(&bytes), Ok(c));
    }

    #[test]
    fn a_single_token_encodes_exactly() {
        let mut c = Credentials::new();
        c.add_token("a", Token::new(vec![7], vec![8, 9], "K", "S"));
        assert_eq!(
            c.to_bytes(),
            b"HDTS\x00\x01\x01a\x01\x07\x02\x08\x09\x01K\x01S\x00".to_vec()
        );
    }

    /// A token's Writable form on its own is exactly the bytes it has inside
    /// WRITABLE credentials, and reads back whole with the bytes it took.
    #[test]
    fn a_token_alone_is_its_bytes_inside_credentials() {
        let t = Token::new(vec![7], vec![8, 9], "K", "S");
        let mut alone = Vec::new();
        t.write_writable(&mut alone);
        assert_eq!(alone, b"\x01\x07\x02\x08\x09\x01K\x01S".to_vec());
        let mut c = Credentials::new();
        c.add_token("a", t.clone());
        assert!(c.to_bytes().windows(alone.len()).any(|w| w == alone));
        let mut more = alone.clone();
        more.extend_from_slice(b"rest");
        assert_eq!(Token::read_writable(&more), Ok((t, alone.len())));
        for cut in 0..alone.len() {
            assert!(Token::read_writable(&alone[..cut]).is_err(), "{cut} bytes");
        }
        // A claimed length beyond the data fails before anything is allocated.
        let mut huge = Vec::new();
        write_vint(&mut huge, i32::MAX);
        assert!(matches!(
            Token::read_writable(&huge),
            Err(CredentialsError::Truncated(_))
        ));
    }

    #[test]
    fn trailing_bytes_are_ignored() {
        let c = sample();
        let mut bytes = c.to_bytes();
        bytes.extend(std::iter::repeat_n(0u8, 1000));
        assert_eq!(Credentials::from_bytes(&bytes), Ok(c.clone()));
        let mut bytes = c.to_protobuf_bytes();
        bytes.extend([0u8; 37]);
        assert_eq!(Credentials::from_bytes(&bytes), Ok(c));
    }

    #[test]
    fn protobuf_round_trip() {
        let c = sample();
        let bytes = c.to_protobuf_bytes();
        assert_eq!(&bytes[..5], b"HDTS\x01");
        assert_eq!(Credentials::from_bytes(&bytes), Ok(c));
        let empty = Credentials::new().to_protobuf_bytes();
        assert_eq!(empty, b"HDTS\x01\x00");
        assert_eq!(Credentials::from_bytes(&empty), Ok(Credentials::new()));
    }

    #[test]
    fn add_token_replaces_and_merges() {
        let mut c = sample();
        c.add_token(
            "",
            Token::new(vec![5], vec![6], kind::AM_RM, "10.1.1.1:8030"),
        );
        assert_eq!(c.tokens.len(), 2);
        assert_eq!(c.tokens[0].1.identifier, vec![5]);
        assert_eq!(c.tokens_of_kind(kind::AM_RM).count(), 1);
        assert_eq!(
            c.token("hdfs").map(|t| t.kind.as_str()),
            Some("HDFS_DELEGATION_TOKEN")
        );

        let mut other = Credentials::new();
        other.add_token("", Token::new(vec![1], vec![1], kind::AM_RM, ""));
        other.add_token("new", Token::new(vec![2], vec![2], kind::NM, ""));
        let mut merged = c.clone();
        merged.merge_all(&other);
        assert_eq!(
            merged.token("").map(|t| t.identifier.clone()),
            Some(vec![5])
        );
        assert!(merged.token("new").is_some());
        let mut added = c.clone();
        added.add_all(&other);
        assert_eq!(added.token("").map(|t| t.identifier.clone()), Some(vec![1]));
        assert_eq!(
            added.remove_token("new").map(|t| t.kind),
            Some("NMToken".to_string())
        );
        assert!(added.token("new").is_none());

        // Duplicate aliases on the wire: the last one wins.
        let mut dup = b"HDTS\x00\x02".to_vec();
        dup.extend_from_slice(b"\x01a\x01\x01\x01\x01\x01K\x00");
        dup.extend_from_slice(b"\x01a\x01\x02\x01\x02\x01K\x00");
        dup.push(0);
        let read = Credentials::from_bytes(&dup).expect("duplicates");
        assert_eq!(read.tokens.len(), 1);
        assert_eq!(read.tokens[0].1.identifier, vec![2]);
    }

    #[test]
    fn corrupt_input_is_an_error() {
        let good = sample().to_bytes();
        assert_eq!(
            Credentials::from_bytes(b"HDT"),
            Err(CredentialsError::BadMagic(b"HDT".to_vec()))
        );
        assert!(matches!(
            Credentials::from_bytes(b"XDTS\x00\x00\x00"),
            Err(CredentialsError::BadMagic(_))
        ));
        assert_eq!(
            Credentials::from_bytes(b"HDTS\x02\x00\x00"),
            Err(CredentialsError::UnknownFormat(2))
        );
        assert!(Credentials::from_bytes(b"HDTS").is_err());
        // Every truncation of a valid blob fails cleanly.
        for cut in 0..good.len() {
            assert!(
                Credentials::from_bytes(&good[..cut]).is_err(),
                "accepted a blob cut at {cut}"
            );
        }
        // A huge count or length is refused before anything is allocated.
        let mut huge_count = b"HDTS\x00".to_vec();
        write_vint(&mut huge_count, i32::MAX);
        assert!(matches!(
            Credentials::from_bytes(&huge_count),
            Err(CredentialsError::Truncated(_))
        ));
        let mut huge_len = b"HDTS\x00\x01".to_vec();
        write_vint(&mut huge_len, i32::MAX);
        huge_len.extend([0u8; 16]);
        assert!(matches!(
            Credentials::from_bytes(&huge_len),
            Err(CredentialsError::Truncated(_))
        ));
        // Negative lengths and counts.
        let mut negative = b"HDTS\x00\x01".to_vec();
        write_vint(&mut negative, -5);
        negative.extend([0u8; 16]);
        assert!(matches!(
            Credentials::from_bytes(&negative),
            Err(CredentialsError::Corrupt(_))
        ));
        assert!(Credentials::from_bytes(b"HDTS\x00\xff").is_err());
        // A VLong that does not fit an int.
        let mut wide = b"HDTS\x00".to_vec();
        write_vlong(&mut wide, i64::from(i32::MAX) + 1);
        assert!(matches!(
            Credentials::from_bytes(&wide),
            Err(CredentialsError::Corrupt(_))
        ));
        // Protobuf: a length beyond the data, and garbage.
        assert!(Credentials::from_bytes(b"HDTS\x01\x7f\x0a").is_err());
        assert!(Credentials::from_bytes(b"HDTS\x01\x03\xff\xff\xff").is_err());
        // A protobuf token entry without its token.
        let proto = CredentialsProto {
            tokens: vec![CredentialsKvProto {
                alias: "x".into(),
                token: None,
                secret: None,
            }],
            secrets: vec![],
        };
        let mut bytes = b"HDTS\x01".to_vec();
        bytes.extend(proto.encode_length_delimited_to_vec());
        assert!(matches!(
            Credentials::from_bytes(&bytes),
            Err(CredentialsError::Corrupt(_))
        ));
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        // A cheap deterministic fuzz: mutate a valid blob byte by byte.
        let good = sample().to_bytes();
        let mut state: u32 = 0x1234_5678;
        for _ in 0..5000 {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            let mut b = good.clone();
            let i = 5 + (state as usize) % (b.len() - 5);
            b[i] = (state >> 8) as u8;
            let _ = Credentials::from_bytes(&b);
        }
    }

    #[test]
    fn invalid_utf8_text_is_replaced_not_rejected() {
        let bytes = b"HDTS\x00\x01\x01\xff\x00\x00\x01K\x00\x00";
        let c = Credentials::from_bytes(bytes).expect("lossy text");
        assert_eq!(c.tokens[0].0, "\u{fffd}");
    }
}
