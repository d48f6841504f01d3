//! YARN identifiers and their string forms.
//!
//! `Display` produces exactly what Hadoop's `toString()` produces and
//! `FromStr` accepts what Hadoop's `fromString()` accepts, so ids can be
//! exchanged with Java clients, shown in logs and used in paths:
//!
//! | type | form |
//! |---|---|
//! | [`ApplicationId`] | `application_<clusterTimestamp>_<id, at least 4 digits>` |
//! | [`ApplicationAttemptId`] | `appattempt_<ts>_<app id, ≥4 digits>_<attempt, ≥6 digits>` |
//! | [`ContainerId`] | `container_[e<epoch, ≥2 digits>_]<ts>_<app, ≥4>_<attempt, ≥2>_<sequence, ≥6>` |
//! | [`NodeId`] | `host:port` |
//!
//! Parsing accepts any number of digits (and a sign) in each numeric field,
//! as Java's `Integer.parseInt`/`Long.parseLong` do.
//!
//! Ordering matches Hadoop's `compareTo`: by cluster timestamp, then
//! application number, then attempt, then container id; nodes by host, then
//! port.

use std::fmt;
use std::str::FromStr;

const APPLICATION_PREFIX: &str = "application_";
const APP_ATTEMPT_PREFIX: &str = "appattempt_";
const CONTAINER_PREFIX: &str = "container_";
const EPOCH_PREFIX: &str = "e";

/// Bits of a container id that hold the per-attempt sequence number; the
/// bits above hold the RM epoch.
pub const CONTAINER_SEQUENCE_BITS: u32 = 40;
const CONTAINER_SEQUENCE_MASK: i64 = (1 << CONTAINER_SEQUENCE_BITS) - 1;

/// Why an id string was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {kind} '{input}': {reason}")]
pub struct IdParseError {
    kind: &'static str,
    input: String,
    reason: String,
}

impl IdParseError {
    fn new(kind: &'static str, input: &str, reason: impl Into<String>) -> IdParseError {
        IdParseError {
            kind,
            input: input.to_string(),
            reason: reason.into(),
        }
    }

    /// Which id type was being parsed ("ApplicationId", "NodeId", ...).
    pub fn kind(&self) -> &'static str {
        self.kind
    }
}

/// Writes `value` with at least `min_digits` digits, zero-padded after the
/// sign (so -1 with 4 digits is `-0001`, as Hadoop formats it).
fn write_padded(f: &mut fmt::Formatter<'_>, value: i64, min_digits: usize) -> fmt::Result {
    if value < 0 {
        f.write_str("-")?;
    }
    write!(f, "{:0width$}", value.unsigned_abs(), width = min_digits)
}

/// Splits `s` at `_` into exactly `n` fields.
fn fields<'a>(
    kind: &'static str,
    input: &str,
    s: &'a str,
    n: usize,
) -> Result<Vec<&'a str>, IdParseError> {
    let parts: Vec<&str> = s.splitn(n, '_').collect();
    if parts.len() != n {
        return Err(IdParseError::new(
            kind,
            input,
            format!("expected {n} '_'-separated numbers after the prefix"),
        ));
    }
    Ok(parts)
}

fn number<T: FromStr>(
    kind: &'static str,
    input: &str,
    what: &str,
    field: &str,
) -> Result<T, IdParseError> {
    field
        .parse::<T>()
        .map_err(|_| IdParseError::new(kind, input, format!("{what} '{field}' is not a number")))
}

// ---------------------------------------------------------------------------

/// An application, unique within a cluster incarnation: the RM's start
/// time (`cluster_timestamp`, ms since the epoch) and a counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ApplicationId {
    pub cluster_timestamp: i64,
    pub id: i32,
}

impl ApplicationId {
    pub fn new(cluster_timestamp: i64, id: i32) -> ApplicationId {
        ApplicationId {
            cluster_timestamp,
            id,
        }
    }
}

impl fmt::Display for ApplicationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{APPLICATION_PREFIX}{}_", self.cluster_timestamp)?;
        write_padded(f, i64::from(self.id), 4)
    }
}

impl FromStr for ApplicationId {
    type Err = IdParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        const KIND: &str = "ApplicationId";
        let rest = s.strip_prefix(APPLICATION_PREFIX).ok_or_else(|| {
            IdParseError::new(KIND, s, format!("expected prefix '{APPLICATION_PREFIX}'"))
        })?;
        let f = fields(KIND, s, rest, 2)?;
        Ok(ApplicationId {
            cluster_timestamp: number(KIND, s, "cluster timestamp", f[0])?,
            id: number(KIND, s, "application number", f[1])?,
        })
    }
}

// ---------------------------------------------------------------------------

/// One attempt (one ApplicationMaster run) of an application; attempts
/// count from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ApplicationAttemptId {
    pub app: ApplicationId,
    pub attempt_id: i32,
}

impl ApplicationAttemptId {
    pub fn new(app: ApplicationId, attempt_id: i32) -> ApplicationAttemptId {
        ApplicationAttemptId { app, attempt_id }
    }
}

impl fmt::Display for ApplicationAttemptId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{APP_ATTEMPT_PREFIX}{}_", self.app.cluster_timestamp)?;
        write_padded(f, i64::from(self.app.id), 4)?;
        f.write_str("_")?;
        write_padded(f, i64::from(self.attempt_id), 6)
    }
}

impl FromStr for ApplicationAttemptId {
    type Err = IdParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        const KIND: &str = "ApplicationAttemptId";
        let rest = s.strip_prefix(APP_ATTEMPT_PREFIX).ok_or_else(|| {
            IdParseError::new(KIND, s, format!("expected prefix '{APP_ATTEMPT_PREFIX}'"))
        })?;
        let f = fields(KIND, s, rest, 3)?;
        Ok(ApplicationAttemptId {
            app: ApplicationId {
                cluster_timestamp: number(KIND, s, "cluster timestamp", f[0])?,
                id: number(KIND, s, "application number", f[1])?,
            },
            attempt_id: number(KIND, s, "attempt number", f[2])?,
        })
    }
}

// ---------------------------------------------------------------------------

/// A container of an application attempt.
///
/// `id` holds the RM epoch in bits 40 and up and a per-attempt sequence
/// number (from 1; the AM container is 1) in the low 40 bits, exactly as
/// Hadoop's `ContainerId.getContainerId()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContainerId {
    pub attempt: ApplicationAttemptId,
    pub id: i64,
}

impl ContainerId {
    /// A container id from its raw 64-bit value.
    pub fn new(attempt: ApplicationAttemptId, id: i64) -> ContainerId {
        ContainerId { attempt, id }
    }

    /// A container id from an RM epoch and a sequence number. The sequence
    /// is truncated to its 40 bits.
    pub fn with_epoch(attempt: ApplicationAttemptId, epoch: i64, sequence: i64) -> ContainerId {
        ContainerId {
            attempt,
            id: (epoch << CONTAINER_SEQUENCE_BITS) | (sequence & CONTAINER_SEQUENCE_MASK),
        }
    }

    /// The RM epoch (restart count) the container was allocated in.
    pub fn epoch(&self) -> i64 {
        self.id >> CONTAINER_SEQUENCE_BITS
    }

    /// The per-attempt sequence number (low 40 bits).
    pub fn sequence(&self) -> i64 {
        self.id & CONTAINER_SEQUENCE_MASK
    }

    /// The application the container belongs to.
    pub fn app(&self) -> ApplicationId {
        self.attempt.app
    }
}

impl fmt::Display for ContainerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(CONTAINER_PREFIX)?;
        let epoch = self.epoch();
        if epoch > 0 {
            f.write_str(EPOCH_PREFIX)?;
            write_padded(f, epoch, 2)?;
            f.write_str("_")?;
        }
        write!(f, "{}_", self.attempt.app.cluster_timestamp)?;
        write_padded(f, i64::from(self.attempt.app.id), 4)?;
        f.write_str("_")?;
        write_padded(f, i64::from(self.attempt.attempt_id), 2)?;
        f.write_str("_")?;
        write_padded(f, self.sequence(), 6)
    }
}

impl FromStr for ContainerId {
    type Err = IdParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        const KIND: &str = "ContainerId";
        let mut rest = s.strip_prefix(CONTAINER_PREFIX).ok_or_else(|| {
            IdParseError::new(KIND, s, format!("expected prefix '{CONTAINER_PREFIX}'"))
        })?;
        let mut epoch: i64 = 0;
        if let Some(after_e) = rest.strip_prefix(EPOCH_PREFIX) {
            let (epoch_text, after) = after_e
                .split_once('_')
                .ok_or_else(|| IdParseError::new(KIND, s, "expected '_' after the epoch"))?;
            let e: i32 = number(KIND, s, "epoch", epoch_text)?;
            if e < 0 {
                return Err(IdParseError::new(KIND, s, "epoch must not be negative"));
            }
            epoch = i64::from(e);
            rest = after;
        }
        let f = fields(KIND, s, rest, 4)?;
        let app = ApplicationId {
            cluster_timestamp: number(KIND, s, "cluster timestamp", f[0])?,
            id: number(KIND, s, "application number", f[1])?,
        };
        let attempt = ApplicationAttemptId {
            app,
            attempt_id: number(KIND, s, "attempt number", f[2])?,
        };
        let sequence: i64 = number(KIND, s, "container number", f[3])?;
        Ok(ContainerId {
            attempt,
            id: (epoch << CONTAINER_SEQUENCE_BITS) | sequence,
        })
    }
}

// ---------------------------------------------------------------------------

/// A NodeManager: the host it registered with and the port of its
/// container-management server.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId {
    pub host: HostName,
    pub port: i32,
}

impl NodeId {
    pub fn new(host: impl Into<String>, port: i32) -> NodeId {
        NodeId {
            host: HostName::new(host.into()),
            port,
        }
    }
}

/// A node's host name: text that compares as text, with its first 16 bytes
/// also kept inline.
///
/// Node-keyed ordered maps are searched several times per heartbeat, and
/// with a plain `String` every comparison of a search reads the stored key's
/// text from its own heap allocation: at 10,000 nodes that was one cache miss
/// per comparison, and a tenth of the ResourceManager's CPU. Comparing the
/// inline heads first settles nearly every comparison inside the map's own
/// node; the texts are read only when the heads are equal (host names that
/// share their first 16 bytes, or the key searched for). The order is the
/// text's order: the head is the text's first 16 bytes, big-endian, padded
/// with zeros, so heads order as those bytes do, and equal heads fall back
/// to the whole text.
#[derive(Clone)]
pub struct HostName {
    head: u128,
    text: String,
}

impl HostName {
    pub fn new(text: String) -> HostName {
        let mut head = [0u8; 16];
        let n = text.len().min(16);
        head[..n].copy_from_slice(&text.as_bytes()[..n]);
        HostName {
            head: u128::from_be_bytes(head),
            text,
        }
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl std::ops::Deref for HostName {
    type Target = str;

    fn deref(&self) -> &str {
        &self.text
    }
}

impl AsRef<str> for HostName {
    fn as_ref(&self) -> &str {
        &self.text
    }
}

impl std::borrow::Borrow<str> for HostName {
    fn borrow(&self) -> &str {
        &self.text
    }
}

impl From<String> for HostName {
    fn from(text: String) -> HostName {
        HostName::new(text)
    }
}

impl From<&str> for HostName {
    fn from(text: &str) -> HostName {
        HostName::new(text.to_string())
    }
}

impl From<HostName> for String {
    fn from(host: HostName) -> String {
        host.text
    }
}

impl PartialEq for HostName {
    fn eq(&self, other: &HostName) -> bool {
        self.head == other.head && self.text == other.text
    }
}

impl Eq for HostName {}

impl PartialOrd for HostName {
    fn partial_cmp(&self, other: &HostName) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for HostName {
    fn cmp(&self, other: &HostName) -> std::cmp::Ordering {
        self.head
            .cmp(&other.head)
            .then_with(|| self.text.cmp(&other.text))
    }
}

impl std::hash::Hash for HostName {
    /// As the text hashes, so that a map keyed by host names can be asked
    /// with a `&str` (see the `Borrow<str>` impl).
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.text.hash(state)
    }
}

impl PartialEq<str> for HostName {
    fn eq(&self, other: &str) -> bool {
        self.text == other
    }
}

impl PartialEq<&str> for HostName {
    fn eq(&self, other: &&str) -> bool {
        self.text == *other
    }
}

impl PartialEq<String> for HostName {
    fn eq(&self, other: &String) -> bool {
        &self.text == other
    }
}

impl fmt::Debug for HostName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.text, f)
    }
}

impl fmt::Display for HostName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

impl FromStr for NodeId {
    type Err = IdParseError;

    /// `host:port` with exactly one `:`; the host is trimmed. Unlike Hadoop,
    /// an empty host is rejected.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        const KIND: &str = "NodeId";
        let mut parts = s.split(':');
        let (Some(host), Some(port), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(IdParseError::new(KIND, s, "expected host:port"));
        };
        let host = host.trim();
        if host.is_empty() {
            return Err(IdParseError::new(KIND, s, "empty host"));
        }
        Ok(NodeId {
            host: HostName::new(host.to_string()),
            port: number(KIND, s, "port", port)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_order_and_compare_as_their_text() {
        let texts = [
            "",
            "a",
            "ab",
            "ab\0",
            "abc",
            "127.1.39.16",
            "127.1.39.160",
            "127.1.39.2",
            "worker-0001.rack1.example.com",
            "worker-0001.rack1.example.co",
            "worker-0001.rack2",
            "worker-0001.rack1",
            "worker-0001.rack1.",
            "0123456789abcdef",
            "0123456789abcdef0",
            "0123456789abcdeg",
            "\u{e9}t\u{e9}",
            "\u{10348}",
        ];
        for a in texts {
            for b in texts {
                let (ha, hb) = (HostName::from(a), HostName::from(b));
                assert_eq!(ha.cmp(&hb), a.cmp(b), "{a:?} vs {b:?}");
                assert_eq!(ha == hb, a == b, "{a:?} vs {b:?}");
                let (na, nb) = (NodeId::new(a, 2), NodeId::new(b, 1));
                assert_eq!(na.cmp(&nb), a.cmp(b).then(2.cmp(&1)), "{a:?}:2 vs {b:?}:1");
            }
        }
        let mut map = std::collections::BTreeMap::new();
        for t in texts {
            map.insert(HostName::from(t), t.len());
        }
        assert_eq!(map.get("abc"), Some(&3), "looked up by &str");
        assert_eq!(
            format!("{:?}", NodeId::new("h", 1)),
            r#"NodeId { host: "h", port: 1 }"#
        );
    }

    fn parse<T: FromStr<Err = IdParseError>>(s: &str) -> T {
        match s.parse::<T>() {
            Ok(v) => v,
            Err(e) => panic!("{s}: {e}"),
        }
    }

    #[test]
    fn application_id_format_and_parse() {
        let id = ApplicationId::new(1_700_000_000_000, 7);
        assert_eq!(id.to_string(), "application_1700000000000_0007");
        assert_eq!(parse::<ApplicationId>("application_1700000000000_0007"), id);
        assert_eq!(
            ApplicationId::new(1, 123_456).to_string(),
            "application_1_123456"
        );
        assert_eq!(
            parse::<ApplicationId>("application_1_7"),
            ApplicationId::new(1, 7)
        );
        assert_eq!(ApplicationId::new(5, -1).to_string(), "application_5_-0001");
        assert_eq!(
            parse::<ApplicationId>("application_5_-0001"),
            ApplicationId::new(5, -1)
        );
    }

    #[test]
    fn application_id_errors() {
        for bad in [
            "",
            "application",
            "application_",
            "application_1",
            "application_x_1",
            "application_1_x",
            "application_1_2_3",
            "app_1_1",
            "application_1_99999999999",
        ] {
            let err = bad.parse::<ApplicationId>();
            assert!(err.is_err(), "{bad} parsed as {err:?}");
        }
        let msg = "application_1_x"
            .parse::<ApplicationId>()
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            msg.as_deref(),
            Some("invalid ApplicationId 'application_1_x': application number 'x' is not a number")
        );
    }

    #[test]
    fn attempt_id_format_and_parse() {
        let id = ApplicationAttemptId::new(ApplicationId::new(1_700_000_000_000, 3), 1);
        assert_eq!(id.to_string(), "appattempt_1700000000000_0003_000001");
        assert_eq!(parse::<ApplicationAttemptId>(&id.to_string()), id);
        assert!("appattempt_1_2".parse::<ApplicationAttemptId>().is_err());
        assert!("application_1_2_3".parse::<ApplicationAttemptId>().is_err());
    }

    #[test]
    fn container_id_without_epoch() {
        let attempt = ApplicationAttemptId::new(ApplicationId::new(1_700_000_000_000, 3), 1);
        let c = ContainerId::new(attempt, 1);
        assert_eq!(c.to_string(), "container_1700000000000_0003_01_000001");
        assert_eq!(parse::<ContainerId>(&c.to_string()), c);
        assert_eq!(c.epoch(), 0);
        assert_eq!(c.sequence(), 1);
        assert_eq!(c.app(), attempt.app);
    }

    #[test]
    fn container_id_with_epoch() {
        let attempt = ApplicationAttemptId::new(ApplicationId::new(1_700_000_000_000, 3), 2);
        let c = ContainerId::with_epoch(attempt, 1, 42);
        assert_eq!(c.id, (1_i64 << 40) | 42);
        assert_eq!(c.to_string(), "container_e01_1700000000000_0003_02_000042");
        assert_eq!(parse::<ContainerId>(&c.to_string()), c);
        assert_eq!(c.epoch(), 1);
        assert_eq!(c.sequence(), 42);

        let big = ContainerId::with_epoch(attempt, 123, 1_234_567);
        assert_eq!(
            big.to_string(),
            "container_e123_1700000000000_0003_02_1234567"
        );
        assert_eq!(parse::<ContainerId>(&big.to_string()), big);
    }

    #[test]
    fn container_id_parse_is_lenient_on_widths_like_hadoop() {
        let c = parse::<ContainerId>("container_e5_10_1_1_1");
        assert_eq!(c.epoch(), 5);
        assert_eq!(c.sequence(), 1);
        assert_eq!(c.attempt.app, ApplicationId::new(10, 1));
        assert_eq!(c.to_string(), "container_e05_10_0001_01_000001");
    }

    #[test]
    fn container_id_errors() {
        for bad in [
            "container_",
            "container_1_2_3",
            "container_e1",
            "container_ex_1_2_3_4",
            "container_e-1_1_2_3_4",
            "container_1_2_3_x",
            "container_1_2_3_4_5",
            "containe_1_2_3_4",
        ] {
            assert!(
                bad.parse::<ContainerId>().is_err(),
                "{bad} should not parse"
            );
        }
    }

    #[test]
    fn node_id_format_and_parse() {
        let n = NodeId::new("worker-1.example.internal", 45454);
        assert_eq!(n.to_string(), "worker-1.example.internal:45454");
        assert_eq!(parse::<NodeId>("worker-1.example.internal:45454"), n);
        assert_eq!(parse::<NodeId>(" h :1"), NodeId::new("h", 1));
        for bad in ["h", "h:", ":1", "h:1:2", "h:x", "h: 1", "[::1]:80"] {
            assert!(bad.parse::<NodeId>().is_err(), "{bad} should not parse");
        }
    }

    #[test]
    fn ordering_matches_hadoop() {
        let a = ApplicationId::new(1, 9);
        let b = ApplicationId::new(2, 1);
        assert!(a < b);
        assert!(ApplicationId::new(1, 1) < a);
        let n1 = NodeId::new("a", 9);
        let n2 = NodeId::new("a", 10);
        let n3 = NodeId::new("b", 1);
        assert!(n1 < n2 && n2 < n3);
        let att = ApplicationAttemptId::new(a, 1);
        assert!(ContainerId::new(att, 2) < ContainerId::with_epoch(att, 1, 1));
    }
}
