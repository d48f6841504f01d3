//! HTTP/1.1 request heads and the shuffle's query, decoded as Hadoop's Netty pipeline does.
//!
//! Netty's `HttpRequestDecoder` (initial line up to 4096 bytes, headers up to 8192) feeds
//! `ShuffleHandler.Shuffle.messageReceived`, which checks, in this order: the method (405),
//! the `name`/`version` headers (400 "Incompatible shuffle request version"), the presence
//! of `job`, `map` and `reduce` (400 "Required param job, map and reduce"), one `job` and one
//! `reduce` (400 "Too many job/reduce parameters"), and an int `reduce` (400 "Bad reduce
//! parameter"). [`parse_query`] returns the same refusals.

/// `HttpRequestDecoder`'s default `maxInitialLineLength`.
pub const MAX_INITIAL_LINE: usize = 4096;
/// `HttpRequestDecoder`'s default `maxHeaderSize`.
pub const MAX_HEADER_SIZE: usize = 8192;
/// `HttpChunkAggregator(1 << 16)`: the largest request body the pipeline accepts.
pub const MAX_BODY: u64 = 1 << 16;

/// `ShuffleHeader.HTTP_HEADER_NAME` / `DEFAULT_HTTP_HEADER_NAME`.
pub const NAME_HEADER: &str = "name";
pub const NAME_VALUE: &str = "mapreduce";
/// `ShuffleHeader.HTTP_HEADER_VERSION` / `DEFAULT_HTTP_HEADER_VERSION`.
pub const VERSION_HEADER: &str = "version";
pub const VERSION_VALUE: &str = "1.0.0";

/// A refusal: the status, and the plain-text body Hadoop sends with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: u16,
    pub message: String,
}

impl Refusal {
    pub fn new(status: u16, message: impl Into<String>) -> Refusal {
        Refusal {
            status,
            message: message.into(),
        }
    }
}

/// A parsed request head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHead {
    pub method: String,
    /// The request target exactly as sent (Netty's `getUri()`).
    pub target: String,
    pub version: String,
    pub headers: Vec<(String, String)>,
}

impl RequestHead {
    /// The first value of a header, by case-insensitive name (Netty's `headers().get`).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body length the head announces. Chunked bodies are refused.
    pub fn body_length(&self) -> Result<u64, Refusal> {
        if let Some(te) = self.header("transfer-encoding") {
            if !te.trim().eq_ignore_ascii_case("identity") {
                return Err(Refusal::new(400, "Request bodies are not accepted"));
            }
        }
        match self.header("content-length") {
            None => Ok(0),
            Some(v) => v
                .trim()
                .parse::<u64>()
                .map_err(|_| Refusal::new(400, "Bad Content-Length")),
        }
    }

    /// The path and raw query as `java.net.URL` splits the target (`getPath`, `getQuery`):
    /// the fragment dropped, the query being what follows the first `?`.
    pub fn path_and_query(&self) -> (&str, Option<&str>) {
        let t = self.target.split('#').next().unwrap_or_default();
        match t.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (t, None),
        }
    }
}

/// What parsing the bytes read so far gave.
#[derive(Debug, PartialEq, Eq)]
pub enum HeadParse {
    /// The head is complete: it and the number of bytes it took.
    Complete(RequestHead, usize),
    /// More bytes are needed.
    Partial,
    /// The head is malformed or too long (Netty: 400, connection closed).
    Bad(String),
}

/// Parses a request head at the start of `buf` (CRLF or bare LF line ends).
pub fn parse_head(buf: &[u8]) -> HeadParse {
    // Netty skips empty lines before the request line.
    let start = buf
        .iter()
        .position(|b| *b != b'\r' && *b != b'\n')
        .unwrap_or(buf.len());
    let rest = &buf[start..];
    let end = find_head_end(rest);
    let Some((head_len, total_len)) = end else {
        let line_len = rest.iter().position(|b| *b == b'\n').unwrap_or(rest.len());
        if line_len > MAX_INITIAL_LINE {
            return HeadParse::Bad("request line too long".into());
        }
        if rest.len() > MAX_INITIAL_LINE + MAX_HEADER_SIZE {
            return HeadParse::Bad("request head too long".into());
        }
        return HeadParse::Partial;
    };
    let Ok(text) = std::str::from_utf8(&rest[..head_len]) else {
        return HeadParse::Bad("request head is not UTF-8".into());
    };
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let line = lines.next().unwrap_or_default();
    if line.len() > MAX_INITIAL_LINE {
        return HeadParse::Bad("request line too long".into());
    }
    let mut parts = line.split_ascii_whitespace();
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return HeadParse::Bad("malformed request line".into());
    };
    if !version.starts_with("HTTP/1.") {
        return HeadParse::Bad(format!("unsupported protocol {version}"));
    }
    let mut headers: Vec<(String, String)> = Vec::new();
    let mut header_bytes = 0usize;
    for l in lines {
        header_bytes += l.len() + 2;
        if header_bytes > MAX_HEADER_SIZE {
            return HeadParse::Bad("request headers too long".into());
        }
        if l.starts_with([' ', '\t']) {
            // A folded continuation line.
            match headers.last_mut() {
                Some((_, v)) => {
                    v.push(' ');
                    v.push_str(l.trim());
                    continue;
                }
                None => return HeadParse::Bad("malformed header line".into()),
            }
        }
        let Some((n, v)) = l.split_once(':') else {
            return HeadParse::Bad("malformed header line".into());
        };
        let n = n.trim();
        if n.is_empty() {
            return HeadParse::Bad("empty header name".into());
        }
        headers.push((n.to_string(), v.trim().to_string()));
    }
    HeadParse::Complete(
        RequestHead {
            method: method.to_string(),
            target: target.to_string(),
            version: version.to_string(),
            headers,
        },
        start + total_len,
    )
}

/// The end of the head: (bytes of the head without its empty line, bytes including it).
fn find_head_end(buf: &[u8]) -> Option<(usize, usize)> {
    let mut i = 0;
    while let Some(off) = buf[i..].iter().position(|b| *b == b'\n') {
        let nl = i + off;
        // Is the next line empty?
        match buf.get(nl + 1) {
            Some(b'\n') => return Some((nl, nl + 2)),
            Some(b'\r') if buf.get(nl + 2) == Some(&b'\n') => return Some((nl, nl + 3)),
            Some(_) => {}
            None => return None,
        }
        i = nl + 1;
    }
    None
}

/// A shuffle request's parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShuffleQuery {
    pub job: String,
    pub reduce: i32,
    pub maps: Vec<String>,
    /// The `keepAlive` parameter (only when given exactly once, `Boolean.valueOf`).
    pub keep_alive: bool,
}

/// `messageReceived`'s checks of a request head, in Hadoop's order.
pub fn check_request(head: &RequestHead) -> Result<ShuffleQuery, Refusal> {
    if head.method != "GET" {
        return Err(Refusal::new(405, ""));
    }
    if head.header(NAME_HEADER) != Some(NAME_VALUE)
        || head.header(VERSION_HEADER) != Some(VERSION_VALUE)
    {
        return Err(Refusal::new(400, "Incompatible shuffle request version"));
    }
    parse_query(&head.target)
}

/// Decodes the query as Netty's `QueryStringDecoder.getParameters` and checks it.
pub fn parse_query(target: &str) -> Result<ShuffleQuery, Refusal> {
    // Netty's decoder throws IllegalArgumentException on a bad escape, which reaches
    // `exceptionCaught`: 500 with an empty body.
    let params = decode_params(target).map_err(|_| Refusal::new(500, ""))?;
    let values = |name: &str| -> Vec<&str> {
        params
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    };
    let keep = values("keepAlive");
    let keep_alive = keep.len() == 1 && keep[0].eq_ignore_ascii_case("true");
    let map_values = values("map");
    let reduce_values = values("reduce");
    let job_values = values("job");
    if map_values.is_empty() || reduce_values.is_empty() || job_values.is_empty() {
        return Err(Refusal::new(400, "Required param job, map and reduce"));
    }
    if reduce_values.len() != 1 || job_values.len() != 1 {
        return Err(Refusal::new(400, "Too many job/reduce parameters"));
    }
    let reduce = parse_java_int(reduce_values[0])
        .ok_or_else(|| Refusal::new(400, "Bad reduce parameter"))?;
    let mut maps = Vec::new();
    for v in map_values {
        maps.extend(java_split_commas(v));
    }
    Ok(ShuffleQuery {
        job: job_values[0].to_string(),
        reduce,
        maps,
        keep_alive,
    })
}

/// `Integer.parseInt`: an optional sign, then ASCII digits, within an int.
fn parse_java_int(s: &str) -> Option<i32> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// `String.split(",")`: trailing empty strings dropped, except that an empty input is one
/// empty string.
fn java_split_commas(s: &str) -> Vec<String> {
    if s.is_empty() {
        return vec![String::new()];
    }
    let mut parts: Vec<String> = s.split(',').map(str::to_string).collect();
    while parts.last().is_some_and(String::is_empty) {
        parts.pop();
    }
    parts
}

/// Netty 3's `QueryStringDecoder`: parameters after the first `?`, split at `&` and `;`,
/// name and value split at the first `=`, each `%`-decoded with `+` as a space.
fn decode_params(target: &str) -> Result<Vec<(String, String)>, String> {
    let Some((_, query)) = target.split_once('?') else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for part in query.split(['&', ';']) {
        if part.is_empty() {
            continue;
        }
        let (n, v) = part.split_once('=').unwrap_or((part, ""));
        if n.is_empty() {
            continue;
        }
        out.push((decode_component(n)?, decode_component(v)?));
    }
    Ok(out)
}

fn decode_component(s: &str) -> Result<String, String> {
    if !s.contains(['%', '+']) {
        return Ok(s.to_string());
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = |c: u8| (c as char).to_digit(16);
                match (
                    b.get(i + 1).and_then(|c| hex(*c)),
                    b.get(i + 2).and_then(|c| hex(*c)),
                ) {
                    (Some(h), Some(l)) => out.push((h * 16 + l) as u8),
                    _ => return Err("Bad escape in the query".to_string()),
                }
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    // Decoded as UTF-8 with replacement, as Java's decoder does.
    Ok(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(text: &str) -> RequestHead {
        match parse_head(text.as_bytes()) {
            HeadParse::Complete(h, n) => {
                assert_eq!(n, text.len());
                h
            }
            other => panic!("{other:?}"),
        }
    }

    const GOOD: &str = "GET /mapOutput?job=job_1_0001&reduce=3&map=attempt_1_0001_m_000000_0,attempt_1_0001_m_000001_0 HTTP/1.1\r\nUrlHash: abc\r\nname: mapreduce\r\nversion: 1.0.0\r\nHost: x\r\n\r\n";

    #[test]
    fn parses_a_fetchers_request() {
        let h = head(GOOD);
        assert_eq!(h.method, "GET");
        assert_eq!(h.header("urlhash"), Some("abc"));
        let q = check_request(&h).expect("good request");
        assert_eq!(q.job, "job_1_0001");
        assert_eq!(q.reduce, 3);
        assert_eq!(
            q.maps,
            vec!["attempt_1_0001_m_000000_0", "attempt_1_0001_m_000001_0"]
        );
        assert!(!q.keep_alive);
        let (p, qs) = h.path_and_query();
        assert_eq!(p, "/mapOutput");
        assert!(qs.is_some_and(|q| q.starts_with("job=job_1_0001&")));
    }

    #[test]
    fn partial_heads_wait_and_long_heads_fail() {
        assert_eq!(
            parse_head(b"GET / HTTP/1.1\r\nname: x\r\n"),
            HeadParse::Partial
        );
        assert_eq!(parse_head(b""), HeadParse::Partial);
        let long = format!("GET /{} HTTP/1.1", "a".repeat(MAX_INITIAL_LINE + 10));
        assert!(matches!(parse_head(long.as_bytes()), HeadParse::Bad(_)));
        let many = format!("GET / HTTP/1.1\r\n{}\r\n", "x: y\r\n".repeat(3000));
        assert!(matches!(parse_head(many.as_bytes()), HeadParse::Bad(_)));
        assert!(matches!(parse_head(b"GARBAGE\r\n\r\n"), HeadParse::Bad(_)));
        assert!(matches!(
            parse_head(b"GET / SPDY/3\r\n\r\n"),
            HeadParse::Bad(_)
        ));
        assert!(matches!(
            parse_head(b"GET / HTTP/1.1\r\nno colon\r\n\r\n"),
            HeadParse::Bad(_)
        ));
        // Bare LFs and a second pipelined request.
        match parse_head(b"GET /a HTTP/1.1\nx: 1\n\nGET /b") {
            HeadParse::Complete(h, n) => {
                assert_eq!(h.target, "/a");
                assert_eq!(n, 22);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn refusals_in_hadoops_order() {
        let mut h = head(GOOD);
        h.method = "POST".into();
        assert_eq!(check_request(&h).map_err(|r| r.status), Err(405));
        let mut h = head(GOOD);
        h.headers.retain(|(n, _)| n != "version");
        assert_eq!(
            check_request(&h),
            Err(Refusal::new(400, "Incompatible shuffle request version"))
        );
        let mut h = head(GOOD);
        h.headers.retain(|(n, _)| n != "name");
        h.headers.push(("name".into(), "spark".into()));
        assert_eq!(check_request(&h).map_err(|r| r.status), Err(400));

        let required = Err(Refusal::new(400, "Required param job, map and reduce"));
        assert_eq!(parse_query("/mapOutput?job=j&reduce=1"), required);
        assert_eq!(parse_query("/mapOutput?job=j&map=a"), required);
        assert_eq!(parse_query("/mapOutput?reduce=1&map=a"), required);
        assert_eq!(parse_query("/mapOutput"), required);
        let too_many = Err(Refusal::new(400, "Too many job/reduce parameters"));
        assert_eq!(parse_query("/m?job=j&job=k&reduce=1&map=a"), too_many);
        assert_eq!(parse_query("/m?job=j&reduce=1&reduce=2&map=a"), too_many);
        let bad = Err(Refusal::new(400, "Bad reduce parameter"));
        assert_eq!(parse_query("/m?job=j&reduce=x&map=a"), bad);
        assert_eq!(parse_query("/m?job=j&reduce=99999999999&map=a"), bad);
        assert_eq!(parse_query("/m?job=j&reduce=&map=a"), bad);
        // '+' is a space, and Integer.parseInt(" 1") fails.
        assert_eq!(parse_query("/m?job=j&reduce=+1&map=a"), bad);
        // A bad escape: Netty's IllegalArgumentException, answered 500 by exceptionCaught.
        assert_eq!(
            parse_query("/m?job=j&reduce=1&map=%zz"),
            Err(Refusal::new(500, ""))
        );
        assert_eq!(
            parse_query("/m?job=j&reduce=1&map=a%2"),
            Err(Refusal::new(500, ""))
        );
        // Bytes that are not UTF-8 are replaced, not refused.
        let q = parse_query("/m?job=j&reduce=1&map=%ff").expect("lossy");
        assert_eq!(q.maps, vec!["\u{fffd}"]);
    }

    #[test]
    fn query_details_as_netty_and_java() {
        let q = parse_query("/m?job=j&reduce=-2&map=a,b,&map=c;keepAlive=TRUE").expect("ok");
        assert_eq!(q.reduce, -2);
        assert_eq!(q.maps, vec!["a", "b", "c"]);
        assert!(q.keep_alive);
        // keepAlive counts only when given once.
        let q = parse_query("/m?job=j&reduce=1&map=a&keepAlive=true&keepAlive=true").expect("ok");
        assert!(!q.keep_alive);
        let q = parse_query("/m?job=j%5F1&reduce=%2B1&map=").expect("ok");
        assert_eq!(q.job, "j_1");
        assert_eq!(q.reduce, 1);
        assert_eq!(q.maps, vec![""]);
        let q = parse_query("/m?job=j&reduce=0&map=,").expect("ok");
        assert!(q.maps.is_empty());
    }

    #[test]
    fn body_lengths() {
        let h = head("GET / HTTP/1.1\r\nContent-Length: 12\r\n\r\n");
        assert_eq!(h.body_length(), Ok(12));
        let h = head("GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert!(h.body_length().is_err());
        let h = head("GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n");
        assert!(h.body_length().is_err());
    }
}

#[cfg(test)]
mod hostile_input {
    use super::*;

    /// Deterministic noise (xorshift).
    fn noise(seed: u64, len: usize, alphabet: &[u8]) -> Vec<u8> {
        let mut x = seed | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                alphabet[(x % alphabet.len() as u64) as usize]
            })
            .collect()
    }

    #[test]
    fn random_heads_and_queries_never_panic() {
        let all: Vec<u8> = (0..=255).collect();
        let http = b"GET /mapOutput?job=&reduce=map,%+;:\r\n HTTP/1.1 name version 0123456789abc";
        for seed in 1..3000u64 {
            let len = (seed as usize * 37) % 9000;
            for alphabet in [&all[..], &http[..]] {
                let bytes = noise(seed, len, alphabet);
                if let HeadParse::Complete(head, used) = parse_head(&bytes) {
                    assert!(used <= bytes.len());
                    let _ = check_request(&head);
                    let _ = head.body_length();
                    let _ = head.path_and_query();
                }
                let text = String::from_utf8_lossy(&bytes);
                let _ = parse_query(&format!("/mapOutput?{text}"));
                let _ = crate::wire::ShuffleHeader::decode(&bytes);
                let _ = crate::wire::JobToken::decode(&bytes);
                let _ = crate::index::read_record(&bytes[..], bytes.len() as u64, 1, "n");
            }
        }
    }
}
