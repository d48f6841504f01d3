//! The shuffle's request authentication, as `SecureShuffleUtils` does it.
//!
//! The reducer sends `UrlHash: base64(HmacSHA1(jobTokenPassword, msg))` where `msg` is
//! `SecureShuffleUtils.buildMsgFrom(url)`: the port, the URL's path, `?`, and its raw query.
//! The server checks it (in constant time here; Java compares byte by byte) and answers
//! `ReplyHash: base64(HmacSHA1(jobTokenPassword, <the UrlHash string's bytes>))`.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha1::Sha1;
use subtle::ConstantTimeEq;

type HmacSha1 = Hmac<Sha1>;

/// `SecureShuffleUtils.HTTP_HEADER_URL_HASH`.
pub const URL_HASH_HEADER: &str = "UrlHash";
/// `SecureShuffleUtils.HTTP_HEADER_REPLY_URL_HASH`.
pub const REPLY_HASH_HEADER: &str = "ReplyHash";

/// `JobTokenSecretManager.computeHash`: HmacSHA1 keyed by the token's password.
pub fn hmac_sha1(key: &[u8], msg: &[u8]) -> [u8; 20] {
    #[allow(clippy::expect_used)]
    let mut mac = HmacSha1::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(msg);
    mac.finalize().into_bytes().into()
}

/// `SecureShuffleUtils.generateHash`: base64 of the HMAC.
pub fn generate_hash(key: &[u8], msg: &[u8]) -> String {
    STANDARD.encode(hmac_sha1(key, msg))
}

/// `SecureShuffleUtils.buildMsgFrom(URL)`: `port + path + "?" + query`, the query as sent
/// (not decoded), `null` when the URL has none.
pub fn build_msg(port: u16, path: &str, query: Option<&str>) -> String {
    format!("{port}{path}?{}", query.unwrap_or("null"))
}

/// `SecureShuffleUtils.verifyReply`: does `base64_hash` hold the HMAC of `msg`? The
/// comparison takes the same time wherever the first difference is.
pub fn verify(key: &[u8], base64_hash: &str, msg: &[u8]) -> bool {
    let Ok(given) = STANDARD.decode(base64_hash.trim().as_bytes()) else {
        return false;
    };
    let want = hmac_sha1(key, msg);
    want.ct_eq(given.as_slice()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_sha1_matches_rfc_2202() {
        // RFC 2202 test case 2.
        let mac = hmac_sha1(b"Jefe", b"what do ya want for nothing?");
        let hex: String = mac.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79");
    }

    #[test]
    fn message_is_port_path_and_raw_query() {
        assert_eq!(
            build_msg(13562, "/mapOutput", Some("job=job_1_0001&reduce=0&map=a,b")),
            "13562/mapOutput?job=job_1_0001&reduce=0&map=a,b"
        );
        assert_eq!(build_msg(1, "/x", None), "1/x?null");
    }

    #[test]
    fn verify_accepts_only_the_right_hash() {
        let key = b"password";
        let msg = b"13562/mapOutput?job=job_1_0001&reduce=0&map=a";
        let good = generate_hash(key, msg);
        assert!(verify(key, &good, msg));
        assert!(!verify(b"other", &good, msg));
        assert!(!verify(
            key,
            &good,
            b"13562/mapOutput?job=job_1_0001&reduce=1&map=a"
        ));
        assert!(!verify(key, "not base64!", msg));
        assert!(!verify(key, "", msg));
        // A prefix of the right hash is not the hash.
        let short = STANDARD.encode(&hmac_sha1(key, msg)[..10]);
        assert!(!verify(key, &short, msg));
    }
}
