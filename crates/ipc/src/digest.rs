//! DIGEST-MD5 (RFC 2831), the SASL mechanism Hadoop uses for token authentication.
//!
//! Only what Hadoop IPC needs is implemented: `algorithm=md5-sess` with quality of
//! protection `auth` (authentication only, so no integrity or privacy wrapping of later
//! frames). The module is transport-free: it turns challenges into responses and back,
//! and leaves the choice of user name, password and random values to the caller.
//!
//! Hadoop's conventions on top of the RFC (see `sasl.rs`): the SASL protocol is the empty
//! string and the server id is `default`, so the realm is `default` and the digest-uri is
//! `/default`; the user name is the Base64 of the token identifier and the password the
//! Base64 of the token password.

use md5::{Digest, Md5};
use subtle::ConstantTimeEq;

/// The SASL mechanism name.
pub const MECHANISM: &str = "DIGEST-MD5";
/// The realm (Hadoop's SASL server id) Hadoop servers announce.
pub const HADOOP_REALM: &str = "default";
/// The digest-uri of a Hadoop IPC connection: `<protocol>/<server id>` with an empty
/// protocol.
pub const HADOOP_DIGEST_URI: &str = "/default";
/// The only quality of protection supported.
pub const QOP_AUTH: &str = "auth";
/// The only algorithm RFC 2831 defines.
pub const ALGORITHM: &str = "md5-sess";

/// Longest challenge or response accepted. RFC 2831 caps challenges at 2048 bytes and
/// responses at 4096; token identifiers are small, so the response cap is generous.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;

/// A malformed, unsupported or wrong DIGEST-MD5 message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("DIGEST-MD5: {0}")]
pub struct DigestError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, DigestError> {
    Err(DigestError(msg.into()))
}

// ---------------------------------------------------------------------------------
// Directive lists

/// Splits a DIGEST-MD5 message into `name=value` directives, in order.
///
/// Names are returned in lower case (they are case-insensitive). Values are either
/// tokens or quoted strings; quotes are removed and `\x` escapes resolved, so commas
/// and `=` inside quotes are part of the value. Empty list elements and linear white
/// space around separators are allowed, as in RFC 2616's `#rule`.
pub fn parse_directives(input: &[u8]) -> Result<Vec<(String, String)>, DigestError> {
    if input.len() > MAX_MESSAGE_BYTES {
        return err(format!(
            "message of {} bytes exceeds the limit of {MAX_MESSAGE_BYTES}",
            input.len()
        ));
    }
    let text =
        std::str::from_utf8(input).map_err(|_| DigestError("message is not UTF-8".into()))?;
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let is_ws = |c: char| c == ' ' || c == '\t' || c == '\r' || c == '\n';
    loop {
        while i < chars.len() && (is_ws(chars[i]) || chars[i] == ',') {
            i += 1;
        }
        if i >= chars.len() {
            break;
        }
        let start = i;
        while i < chars.len() && !is_ws(chars[i]) && chars[i] != '=' && chars[i] != ',' {
            i += 1;
        }
        let name: String = chars[start..i].iter().collect();
        if name.is_empty() || name.contains('"') {
            return err(format!("malformed directive name at offset {start}"));
        }
        while i < chars.len() && is_ws(chars[i]) {
            i += 1;
        }
        if i >= chars.len() || chars[i] != '=' {
            return err(format!("directive '{name}' has no '=' and value"));
        }
        i += 1;
        while i < chars.len() && is_ws(chars[i]) {
            i += 1;
        }
        let mut value = String::new();
        if i < chars.len() && chars[i] == '"' {
            i += 1;
            let mut closed = false;
            while i < chars.len() {
                match chars[i] {
                    '"' => {
                        closed = true;
                        i += 1;
                        break;
                    }
                    '\\' if i + 1 < chars.len() => {
                        value.push(chars[i + 1]);
                        i += 2;
                    }
                    c => {
                        value.push(c);
                        i += 1;
                    }
                }
            }
            if !closed {
                return err(format!("unterminated quoted value of directive '{name}'"));
            }
        } else {
            while i < chars.len() && !is_ws(chars[i]) && chars[i] != ',' {
                if chars[i] == '"' {
                    return err(format!("stray quote in the value of directive '{name}'"));
                }
                value.push(chars[i]);
                i += 1;
            }
        }
        while i < chars.len() && is_ws(chars[i]) {
            i += 1;
        }
        if i < chars.len() && chars[i] != ',' {
            return err(format!(
                "expected ',' after the value of directive '{name}'"
            ));
        }
        out.push((name.to_ascii_lowercase(), value));
    }
    Ok(out)
}

/// Quotes a value for a directive list.
fn quote(value: &str) -> String {
    let mut s = String::with_capacity(value.len() + 2);
    s.push('"');
    for c in value.chars() {
        if c == '"' || c == '\\' {
            s.push('\\');
        }
        s.push(c);
    }
    s.push('"');
    s
}

/// Directives that may appear at most once, looked up by name.
struct Directives(Vec<(String, String)>);

impl Directives {
    fn parse(input: &[u8], single: &[&str]) -> Result<Directives, DigestError> {
        let list = parse_directives(input)?;
        for name in single {
            if list.iter().filter(|(n, _)| n == name).count() > 1 {
                return err(format!("directive '{name}' appears more than once"));
            }
        }
        Ok(Directives(list))
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn all(&self, name: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .collect()
    }

    fn required(&self, name: &str, what: &str) -> Result<String, DigestError> {
        self.get(name)
            .map(str::to_string)
            .ok_or_else(|| DigestError(format!("the {what} has no '{name}' directive")))
    }
}

// ---------------------------------------------------------------------------------
// The digest computation

/// Everything the response and rspauth values are computed from.
#[derive(Clone)]
pub struct DigestInputs<'a> {
    pub username: &'a str,
    pub realm: &'a str,
    pub password: &'a str,
    pub nonce: &'a str,
    pub cnonce: &'a str,
    /// The nonce count (Hadoop: always 1).
    pub nc: u32,
    pub qop: &'a str,
    pub digest_uri: &'a str,
    pub authzid: Option<&'a str>,
}

impl std::fmt::Debug for DigestInputs<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DigestInputs")
            .field("username", &self.username)
            .field("realm", &self.realm)
            .field("password", &"<redacted>")
            .field("nonce", &self.nonce)
            .field("cnonce", &self.cnonce)
            .field("nc", &self.nc)
            .field("qop", &self.qop)
            .field("digest_uri", &self.digest_uri)
            .field("authzid", &self.authzid)
            .finish()
    }
}

fn md5(parts: &[&[u8]]) -> [u8; 16] {
    let mut h = Md5::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    s
}

/// The nonce count as it appears on the wire: eight lower-case hex digits.
pub fn format_nc(nc: u32) -> String {
    format!("{nc:08x}")
}

impl DigestInputs<'_> {
    /// The `response` directive a client sends (A2 starts with `AUTHENTICATE`).
    pub fn response(&self) -> String {
        self.compute("AUTHENTICATE")
    }

    /// The `rspauth` value a server answers with (A2 has an empty method).
    pub fn rspauth(&self) -> String {
        self.compute("")
    }

    fn compute(&self, a2_method: &str) -> String {
        // A1 = H(username ":" realm ":" password) ":" nonce ":" cnonce [":" authzid]
        let user_hash = md5(&[
            self.username.as_bytes(),
            b":",
            self.realm.as_bytes(),
            b":",
            self.password.as_bytes(),
        ]);
        let mut a1: Vec<&[u8]> = vec![
            &user_hash,
            b":",
            self.nonce.as_bytes(),
            b":",
            self.cnonce.as_bytes(),
        ];
        if let Some(authzid) = self.authzid {
            a1.push(b":");
            a1.push(authzid.as_bytes());
        }
        let ha1 = hex(&md5(&a1));
        // A2 = method ":" digest-uri, plus a zero MD5 for the wrapping qops.
        let mut a2: Vec<&[u8]> = vec![a2_method.as_bytes(), b":", self.digest_uri.as_bytes()];
        if self.qop != QOP_AUTH {
            a2.push(b":00000000000000000000000000000000");
        }
        let ha2 = hex(&md5(&a2));
        let nc = format_nc(self.nc);
        hex(&md5(&[
            ha1.as_bytes(),
            b":",
            self.nonce.as_bytes(),
            b":",
            nc.as_bytes(),
            b":",
            self.cnonce.as_bytes(),
            b":",
            self.qop.as_bytes(),
            b":",
            ha2.as_bytes(),
        ]))
    }
}

/// Compares two digests without an early exit.
fn digests_equal(a: &str, b: &str) -> bool {
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

fn is_digest_hex(s: &str) -> bool {
    s.len() == 32 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

// ---------------------------------------------------------------------------------
// Challenge (server → client)

/// A server's digest-challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    /// Realms the server accepts (Hadoop: exactly `default`).
    pub realms: Vec<String>,
    pub nonce: String,
    /// Offered qops; `auth` when the directive is absent.
    pub qops: Vec<String>,
    /// The server said `charset=utf-8`.
    pub utf8: bool,
    pub maxbuf: Option<u32>,
}

impl Challenge {
    /// The challenge of a server that offers qop `auth` only, as Hadoop sends it:
    /// `realm="…",nonce="…",qop="auth",charset=utf-8,algorithm=md5-sess`.
    pub fn auth_only(realm: &str, nonce: &str) -> Vec<u8> {
        format!(
            "realm={},nonce={},qop={},charset=utf-8,algorithm={ALGORITHM}",
            quote(realm),
            quote(nonce),
            quote(QOP_AUTH)
        )
        .into_bytes()
    }

    pub fn parse(bytes: &[u8]) -> Result<Challenge, DigestError> {
        let d = Directives::parse(
            bytes,
            &["nonce", "qop", "charset", "algorithm", "maxbuf", "stale"],
        )?;
        let nonce = d.required("nonce", "challenge")?;
        let algorithm = d.required("algorithm", "challenge")?;
        if !algorithm.eq_ignore_ascii_case(ALGORITHM) {
            return err(format!(
                "the challenge names algorithm '{algorithm}'; only {ALGORITHM} is defined"
            ));
        }
        let qops = match d.get("qop") {
            None => vec![QOP_AUTH.to_string()],
            Some(list) => list
                .split(',')
                .map(|q| q.trim().to_ascii_lowercase())
                .filter(|q| !q.is_empty())
                .collect(),
        };
        let utf8 = match d.get("charset") {
            None => false,
            Some(c) if c.eq_ignore_ascii_case("utf-8") => true,
            Some(c) => return err(format!("the challenge names unknown charset '{c}'")),
        };
        let maxbuf = match d.get("maxbuf") {
            None => None,
            Some(m) => Some(
                m.parse::<u32>()
                    .map_err(|_| DigestError(format!("the challenge has a bad maxbuf '{m}'")))?,
            ),
        };
        Ok(Challenge {
            realms: d.all("realm"),
            nonce,
            qops,
            utf8,
            maxbuf,
        })
    }
}

// ---------------------------------------------------------------------------------
// Response (client → server)

/// A client's digest-response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DigestResponse {
    pub username: String,
    pub realm: Option<String>,
    pub nonce: String,
    pub cnonce: String,
    pub nc: u32,
    /// `auth` when the directive is absent.
    pub qop: String,
    pub digest_uri: String,
    /// 32 hex digits.
    pub response: String,
    pub authzid: Option<String>,
    pub utf8: bool,
    pub maxbuf: Option<u32>,
}

impl DigestResponse {
    pub fn parse(bytes: &[u8]) -> Result<DigestResponse, DigestError> {
        let d = Directives::parse(
            bytes,
            &[
                "username",
                "realm",
                "nonce",
                "cnonce",
                "nc",
                "qop",
                "digest-uri",
                "response",
                "authzid",
                "charset",
                "maxbuf",
                "cipher",
            ],
        )?;
        let nc_text = d.required("nc", "response")?;
        let nc = if nc_text.len() == 8 {
            u32::from_str_radix(&nc_text, 16).ok()
        } else {
            None
        }
        .ok_or_else(|| DigestError(format!("nonce count '{nc_text}' is not 8 hex digits")))?;
        let response = d.required("response", "response")?;
        if !is_digest_hex(&response) {
            return err("the 'response' directive is not 32 hex digits");
        }
        let utf8 = match d.get("charset") {
            None => false,
            Some(c) if c.eq_ignore_ascii_case("utf-8") => true,
            Some(c) => return err(format!("the response names unknown charset '{c}'")),
        };
        let maxbuf = match d.get("maxbuf") {
            None => None,
            Some(m) => Some(
                m.parse::<u32>()
                    .map_err(|_| DigestError(format!("the response has a bad maxbuf '{m}'")))?,
            ),
        };
        Ok(DigestResponse {
            username: d.required("username", "response")?,
            realm: d.get("realm").map(str::to_string),
            nonce: d.required("nonce", "response")?,
            cnonce: d.required("cnonce", "response")?,
            nc,
            qop: d.get("qop").unwrap_or(QOP_AUTH).to_ascii_lowercase(),
            digest_uri: d.required("digest-uri", "response")?,
            response: response.to_ascii_lowercase(),
            authzid: d.get("authzid").map(str::to_string),
            utf8,
            maxbuf,
        })
    }

    /// The wire form, with the directives in the order the JDK client writes them.
    pub fn encode(&self) -> Vec<u8> {
        let mut parts = Vec::with_capacity(11);
        if self.utf8 {
            parts.push("charset=utf-8".to_string());
        }
        parts.push(format!("username={}", quote(&self.username)));
        if let Some(realm) = &self.realm {
            parts.push(format!("realm={}", quote(realm)));
        }
        parts.push(format!("nonce={}", quote(&self.nonce)));
        parts.push(format!("nc={}", format_nc(self.nc)));
        parts.push(format!("cnonce={}", quote(&self.cnonce)));
        parts.push(format!("digest-uri={}", quote(&self.digest_uri)));
        if let Some(maxbuf) = self.maxbuf {
            parts.push(format!("maxbuf={maxbuf}"));
        }
        parts.push(format!("response={}", self.response));
        parts.push(format!("qop={}", self.qop));
        if let Some(authzid) = &self.authzid {
            parts.push(format!("authzid={}", quote(authzid)));
        }
        parts.join(",").into_bytes()
    }

    fn inputs<'a>(&'a self, password: &'a str) -> DigestInputs<'a> {
        DigestInputs {
            username: &self.username,
            realm: self.realm.as_deref().unwrap_or(""),
            password,
            nonce: &self.nonce,
            cnonce: &self.cnonce,
            nc: self.nc,
            qop: &self.qop,
            digest_uri: &self.digest_uri,
            authzid: self.authzid.as_deref(),
        }
    }
}

// ---------------------------------------------------------------------------------
// Server

/// The server side of one DIGEST-MD5 authentication.
///
/// Checking is split in two so the caller can look the password up from the user name
/// in between: [`DigestServer::check_response`] validates everything that does not
/// depend on the password, [`DigestServer::verify_password`] checks the digest.
#[derive(Debug, Clone)]
pub struct DigestServer {
    realm: String,
    digest_uri: String,
    nonce: String,
}

impl DigestServer {
    /// A server for `realm` and `digest_uri` that challenges with `nonce` (which must be
    /// fresh and unpredictable; the caller supplies it).
    pub fn new(
        realm: impl Into<String>,
        digest_uri: impl Into<String>,
        nonce: impl Into<String>,
    ) -> Self {
        DigestServer {
            realm: realm.into(),
            digest_uri: digest_uri.into(),
            nonce: nonce.into(),
        }
    }

    /// A server with Hadoop's realm and digest-uri.
    pub fn hadoop(nonce: impl Into<String>) -> Self {
        Self::new(HADOOP_REALM, HADOOP_DIGEST_URI, nonce)
    }

    pub fn nonce(&self) -> &str {
        &self.nonce
    }

    /// The digest-challenge to send.
    pub fn challenge(&self) -> Vec<u8> {
        Challenge::auth_only(&self.realm, &self.nonce)
    }

    /// Parses a digest-response and checks realm, nonce, nonce count, qop, digest-uri
    /// and authzid against this server. The password is not involved yet.
    pub fn check_response(&self, bytes: &[u8]) -> Result<DigestResponse, DigestError> {
        let resp = DigestResponse::parse(bytes)?;
        match resp.realm.as_deref() {
            Some(r) if r == self.realm => {}
            Some(r) => return err(format!("unknown realm '{r}'; expected '{}'", self.realm)),
            None => {
                return err(format!(
                    "the response names no realm; expected '{}'",
                    self.realm
                ))
            }
        }
        if resp.nonce != self.nonce {
            return err("the response's nonce is not the one this server issued");
        }
        if resp.nc != 1 {
            return err(format!(
                "nonce count {} is not 00000001 (nonces are single-use)",
                format_nc(resp.nc)
            ));
        }
        match resp.qop.as_str() {
            QOP_AUTH => {}
            q @ ("auth-int" | "auth-conf") => {
                return err(format!(
                    "qop '{q}' was not offered: only 'auth' is supported, without integrity \
                     or privacy wrapping (hadoop.rpc.protection=authentication)"
                ))
            }
            q => return err(format!("unknown qop '{q}'")),
        }
        if !resp.digest_uri.eq_ignore_ascii_case(&self.digest_uri) {
            return err(format!(
                "digest-uri '{}' does not match '{}'",
                resp.digest_uri, self.digest_uri
            ));
        }
        if let Some(authzid) = &resp.authzid {
            if authzid != &resp.username {
                return err(
                    "the authorization id differs from the user name; proxying is not allowed",
                );
            }
        }
        Ok(resp)
    }

    /// Checks the digest of a response that passed [`DigestServer::check_response`]
    /// against `password`. On success returns the final server message,
    /// `rspauth=<32 hex>`.
    pub fn verify_password(
        &self,
        resp: &DigestResponse,
        password: &str,
    ) -> Result<Vec<u8>, DigestError> {
        let inputs = resp.inputs(password);
        if !digests_equal(&inputs.response(), &resp.response) {
            return err("digest response mismatch");
        }
        Ok(format!("rspauth={}", inputs.rspauth()).into_bytes())
    }
}

// ---------------------------------------------------------------------------------
// Client

/// The client side of one DIGEST-MD5 authentication.
pub struct DigestClient {
    username: String,
    password: String,
    digest_uri: String,
    cnonce: String,
    /// The expected rspauth once the response has been sent.
    expected_rspauth: Option<String>,
    complete: bool,
}

impl std::fmt::Debug for DigestClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DigestClient")
            .field("username", &self.username)
            .field("digest_uri", &self.digest_uri)
            .field("complete", &self.complete)
            .finish_non_exhaustive()
    }
}

impl DigestClient {
    /// A client authenticating as `username` with `password` to `digest_uri`, using
    /// `cnonce` (fresh and unpredictable; the caller supplies it).
    pub fn new(
        username: impl Into<String>,
        password: impl Into<String>,
        digest_uri: impl Into<String>,
        cnonce: impl Into<String>,
    ) -> Self {
        DigestClient {
            username: username.into(),
            password: password.into(),
            digest_uri: digest_uri.into(),
            cnonce: cnonce.into(),
            expected_rspauth: None,
            complete: false,
        }
    }

    /// True once a response has been computed (the challenge was consumed).
    pub fn has_responded(&self) -> bool {
        self.expected_rspauth.is_some()
    }

    /// True once the server's rspauth has been verified.
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// Answers a digest-challenge with a digest-response.
    pub fn respond(&mut self, challenge: &[u8]) -> Result<Vec<u8>, DigestError> {
        if self.expected_rspauth.is_some() {
            return err("a second challenge arrived after the response was sent");
        }
        let ch = Challenge::parse(challenge)?;
        if !ch.qops.iter().any(|q| q == QOP_AUTH) {
            return err(format!(
                "the server offers qop {:?}; only 'auth' is supported (no wrapping)",
                ch.qops
            ));
        }
        let realm = ch.realms.first().cloned();
        let mut resp = DigestResponse {
            username: self.username.clone(),
            realm,
            nonce: ch.nonce,
            cnonce: self.cnonce.clone(),
            nc: 1,
            qop: QOP_AUTH.to_string(),
            digest_uri: self.digest_uri.clone(),
            response: String::new(),
            authzid: None,
            utf8: ch.utf8,
            maxbuf: None,
        };
        let inputs = resp.inputs(&self.password);
        let response = inputs.response();
        let rspauth = inputs.rspauth();
        resp.response = response;
        self.expected_rspauth = Some(rspauth);
        Ok(resp.encode())
    }

    /// Checks the server's final `rspauth=…` message: proof that the server knows the
    /// password too.
    pub fn verify_rspauth(&mut self, message: &[u8]) -> Result<(), DigestError> {
        let Some(expected) = self.expected_rspauth.as_deref() else {
            return err("the server finished before the client sent a response");
        };
        let d = Directives::parse(message, &["rspauth"])?;
        let got = d
            .get("rspauth")
            .ok_or_else(|| DigestError("the server's final message has no rspauth".into()))?;
        if !digests_equal(&got.to_ascii_lowercase(), expected) {
            return err("the server's rspauth does not match: it does not know the token password");
        }
        self.complete = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rfc_inputs() -> DigestInputs<'static> {
        DigestInputs {
            username: "chris",
            realm: "elwood.innosoft.com",
            password: "secret",
            nonce: "OA6MG9tEQGm2hh",
            cnonce: "OA6MHXh6VqTrRk",
            nc: 1,
            qop: "auth",
            digest_uri: "imap/elwood.innosoft.com",
            authzid: None,
        }
    }

    #[test]
    fn rfc_2831_example_vectors() {
        let i = rfc_inputs();
        assert_eq!(i.response(), "d388dad90d4bbd760a152321f2143af7");
        assert_eq!(i.rspauth(), "ea40f60335c427b5527b84dbabcdfffd");
    }

    #[test]
    fn inputs_change_the_digest() {
        let base = rfc_inputs().response();
        let mut i = rfc_inputs();
        i.password = "secreT";
        assert_ne!(i.response(), base);
        let mut i = rfc_inputs();
        i.authzid = Some("chris");
        assert_ne!(i.response(), base);
        let mut i = rfc_inputs();
        i.nc = 2;
        assert_ne!(i.response(), base);
        let mut i = rfc_inputs();
        i.qop = "auth-int";
        assert_ne!(i.response(), base);
    }

    #[test]
    fn rfc_exchange_through_server_and_client() {
        // The RFC's server challenge and client response, checked by the server type.
        let server = DigestServer::new(
            "elwood.innosoft.com",
            "imap/elwood.innosoft.com",
            "OA6MG9tEQGm2hh",
        );
        let response = br#"charset=utf-8,username="chris",realm="elwood.innosoft.com",nonce="OA6MG9tEQGm2hh",nc=00000001,cnonce="OA6MHXh6VqTrRk",digest-uri="imap/elwood.innosoft.com",response=d388dad90d4bbd760a152321f2143af7,qop=auth"#;
        let parsed = server.check_response(response).expect("valid response");
        assert_eq!(parsed.username, "chris");
        let fin = server
            .verify_password(&parsed, "secret")
            .expect("right password");
        assert_eq!(fin, b"rspauth=ea40f60335c427b5527b84dbabcdfffd");
        assert_eq!(
            server.verify_password(&parsed, "wrong"),
            Err(DigestError("digest response mismatch".into()))
        );
    }

    #[test]
    fn client_and_server_agree() {
        let server = DigestServer::hadoop("bm9uY2Vub25jZQ==");
        let challenge = server.challenge();
        assert_eq!(
            std::str::from_utf8(&challenge).ok(),
            Some(
                r#"realm="default",nonce="bm9uY2Vub25jZQ==",qop="auth",charset=utf-8,algorithm=md5-sess"#
            )
        );
        let mut client = DigestClient::new("aWRlbnQ=", "cGFzcw==", HADOOP_DIGEST_URI, "Y25vbmNl");
        let response = client.respond(&challenge).expect("respond");
        let text = String::from_utf8(response.clone()).expect("utf8");
        assert!(text.contains(r#"digest-uri="/default""#), "{text}");
        assert!(text.contains(r#"realm="default""#), "{text}");
        assert!(text.contains("nc=00000001"), "{text}");
        let parsed = server.check_response(&response).expect("check");
        let fin = server.verify_password(&parsed, "cGFzcw==").expect("verify");
        assert!(!client.is_complete());
        client.verify_rspauth(&fin).expect("rspauth");
        assert!(client.is_complete());

        // A server that does not know the password cannot produce the rspauth.
        let mut client = DigestClient::new("aWRlbnQ=", "cGFzcw==", HADOOP_DIGEST_URI, "Y25vbmNl");
        let response = client.respond(&challenge).expect("respond");
        let parsed = server.check_response(&response).expect("check");
        assert!(server.verify_password(&parsed, "b3RoZXI=").is_err());
        let forged = DigestResponse {
            response: String::new(),
            ..parsed
        }
        .inputs("b3RoZXI=")
        .rspauth();
        assert!(client
            .verify_rspauth(format!("rspauth={forged}").as_bytes())
            .is_err());
        assert!(!client.is_complete());
    }

    #[test]
    fn directive_parsing() {
        let d = parse_directives(
            br#" realm="a,b=c" , nonce=xyz,,qop="auth,auth-int", esc="q\"uo\\te",empty="" "#,
        )
        .expect("parse");
        assert_eq!(
            d,
            vec![
                ("realm".to_string(), "a,b=c".to_string()),
                ("nonce".to_string(), "xyz".to_string()),
                ("qop".to_string(), "auth,auth-int".to_string()),
                ("esc".to_string(), "q\"uo\\te".to_string()),
                ("empty".to_string(), String::new()),
            ]
        );
        assert_eq!(
            parse_directives(b"Realm=x").expect("parse"),
            vec![("realm".to_string(), "x".to_string())]
        );
        assert!(parse_directives(br#"realm="open"#).is_err());
        assert!(parse_directives(b"realm").is_err());
        assert!(parse_directives(b"realm=a b").is_err());
        assert!(parse_directives(b"=x").is_err());
        assert!(parse_directives(br#"a=b"c""#).is_err());
        assert!(parse_directives(&[0xff, 0xfe]).is_err());
        assert_eq!(parse_directives(b"").expect("empty"), vec![]);
        // The quoting used when writing round-trips through the parser.
        let q = quote("we\"ird\\,");
        let d = parse_directives(format!("x={q}").as_bytes()).expect("quoted");
        assert_eq!(d[0].1, "we\"ird\\,");
    }

    #[test]
    fn challenge_parsing() {
        let c = Challenge::parse(
            br#"realm="default",nonce="abc",qop="auth",charset=utf-8,algorithm=md5-sess"#,
        )
        .expect("parse");
        assert_eq!(c.realms, vec!["default".to_string()]);
        assert_eq!(c.nonce, "abc");
        assert_eq!(c.qops, vec!["auth".to_string()]);
        assert!(c.utf8);
        // qop defaults to auth; several realms are allowed.
        let c = Challenge::parse(b"realm=a,realm=b,nonce=n,algorithm=md5-sess").expect("parse");
        assert_eq!(c.realms.len(), 2);
        assert_eq!(c.qops, vec!["auth".to_string()]);
        assert!(
            Challenge::parse(b"nonce=n").is_err(),
            "algorithm is required"
        );
        assert!(
            Challenge::parse(b"algorithm=md5-sess").is_err(),
            "nonce is required"
        );
        assert!(Challenge::parse(b"nonce=a,nonce=b,algorithm=md5-sess").is_err());
        assert!(Challenge::parse(b"nonce=a,algorithm=md5").is_err());
    }

    #[test]
    fn client_refuses_wrapping_only_servers() {
        let mut client = DigestClient::new("u", "p", HADOOP_DIGEST_URI, "c");
        let e = client
            .respond(br#"realm="default",nonce="n",qop="auth-conf",algorithm=md5-sess"#)
            .expect_err("auth-conf only");
        assert!(e.0.contains("only 'auth'"), "{e}");
        assert!(client.verify_rspauth(b"rspauth=00").is_err());
    }

    fn hadoop_response(patch: impl FnOnce(&mut DigestResponse)) -> Vec<u8> {
        let mut r = DigestResponse {
            username: "dXNlcg==".into(),
            realm: Some("default".into()),
            nonce: "nonce1".into(),
            cnonce: "cnonce1".into(),
            nc: 1,
            qop: "auth".into(),
            digest_uri: "/default".into(),
            response: String::new(),
            authzid: None,
            utf8: true,
            maxbuf: Some(65536),
        };
        patch(&mut r);
        r.response = r.inputs("cGFzcw==").response();
        r.encode()
    }

    #[test]
    fn server_checks_each_directive() {
        let server = DigestServer::hadoop("nonce1");
        let ok = hadoop_response(|_| {});
        let parsed = server.check_response(&ok).expect("valid");
        assert_eq!(parsed.maxbuf, Some(65536));
        server
            .verify_password(&parsed, "cGFzcw==")
            .expect("verifies");

        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("realm", hadoop_response(|r| r.realm = Some("other".into()))),
            ("no realm", hadoop_response(|r| r.realm = None)),
            ("nonce", hadoop_response(|r| r.nonce = "stale".into())),
            ("nonce count", hadoop_response(|r| r.nc = 2)),
            ("auth-int", hadoop_response(|r| r.qop = "auth-int".into())),
            ("auth-conf", hadoop_response(|r| r.qop = "auth-conf".into())),
            (
                "digest-uri",
                hadoop_response(|r| r.digest_uri = "hdfs/default".into()),
            ),
            (
                "authzid",
                hadoop_response(|r| r.authzid = Some("root".into())),
            ),
        ];
        for (what, bytes) in cases {
            assert!(server.check_response(&bytes).is_err(), "{what} accepted");
        }
        // Same authzid as the user name is fine (and is part of A1).
        let same = hadoop_response(|r| r.authzid = Some("dXNlcg==".into()));
        let parsed = server.check_response(&same).expect("authzid = username");
        server
            .verify_password(&parsed, "cGFzcw==")
            .expect("verifies with authzid");

        // Missing required directives, duplicates and bad digests.
        for bad in [
            &br#"username="u",realm="default",nonce="nonce1",nc=00000001,digest-uri="/default",response=00000000000000000000000000000000"#[..],
            br#"realm="default",nonce="nonce1",cnonce="c",nc=00000001,digest-uri="/default",response=00000000000000000000000000000000"#,
            br#"username="u",username="v",realm="default",nonce="nonce1",cnonce="c",nc=00000001,digest-uri="/default",response=00000000000000000000000000000000"#,
            br#"username="u",realm="default",nonce="nonce1",cnonce="c",nc=1,digest-uri="/default",response=00000000000000000000000000000000"#,
            br#"username="u",realm="default",nonce="nonce1",cnonce="c",nc=00000001,digest-uri="/default",response=xyz"#,
            br#"username="u",realm="default",nonce="nonce1",cnonce="c",nc=00000001,response=00000000000000000000000000000000"#,
            br#"username="u",realm="default",nonce="nonce1",cnonce="c",nc=00000001,digest-uri="/default",charset=latin1,response=00000000000000000000000000000000"#,
        ] {
            assert!(
                server.check_response(bad).is_err(),
                "accepted {}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn jdk_style_response_is_accepted() {
        // Directive order and quoting as the JDK's DIGEST-MD5 client writes them.
        let server = DigestServer::hadoop("n0nce");
        let inputs = DigestInputs {
            username: "AAECAw==",
            realm: "default",
            password: "cGFzcw==",
            nonce: "n0nce",
            cnonce: "cn0nce",
            nc: 1,
            qop: "auth",
            digest_uri: "/default",
            authzid: None,
        };
        let text = format!(
            "charset=utf-8,username=\"AAECAw==\",realm=\"default\",nonce=\"n0nce\",nc=00000001,\
             cnonce=\"cn0nce\",digest-uri=\"/default\",maxbuf=65536,response={},qop=auth",
            inputs.response()
        );
        let parsed = server.check_response(text.as_bytes()).expect("check");
        let fin = server.verify_password(&parsed, "cGFzcw==").expect("verify");
        assert_eq!(fin, format!("rspauth={}", inputs.rspauth()).into_bytes());
    }
}
