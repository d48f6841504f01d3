//! SPNEGO on a daemon's web server (`hadoop.http.authentication.type=kerberos`),
//! as Hadoop's `AuthenticationFilter` with its `KerberosAuthenticationHandler`:
//! a request without credentials gets `401` and `WWW-Authenticate: Negotiate`;
//! one with `Authorization: Negotiate <token>` is accepted with the daemon's
//! HTTP principal and keytab (the acceptor is given: MIT's GSSAPI through
//! `spindle_ipc::kerberos`), answered with a signed `hadoop.auth` cookie
//! that lets the client's next requests in until it expires, and served as
//! the caller's short name.
//!
//! Handlers read the caller from the `user.name` query parameter (Hadoop's
//! pseudo authentication): here the authenticated name replaces whatever the
//! request gave there, so no handler can be told another name.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha1::Sha1;

/// Accepts a client's SPNEGO token: its Kerberos principal and the token to
/// send back, if any; or why not.
pub type Acceptor = dyn Fn(&[u8]) -> Result<(String, Option<Vec<u8>>), String> + Send + Sync;
/// A principal's short name (`hadoop.security.auth_to_local`).
pub type ShortName = dyn Fn(&str) -> Result<String, String> + Send + Sync;

/// Hadoop's cookie name.
pub const COOKIE: &str = "hadoop.auth";

/// Who a request authenticated as by SPNEGO (or its cookie): put in the
/// request's extensions for the handlers that need more than `user.name`
/// (delegation tokens are issued only to Kerberos callers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authenticated {
    /// The short name.
    pub user: String,
    /// The Kerberos principal.
    pub principal: String,
}

const TYPE: &str = "kerberos";

/// One web server's SPNEGO settings.
pub struct Spnego {
    pub accept: Arc<Acceptor>,
    pub short_name: Arc<ShortName>,
    /// Signs the cookie (`hadoop.http.authentication.signature.secret.file`,
    /// else random per start).
    pub secret: Vec<u8>,
    /// `hadoop.http.authentication.token.validity`, in milliseconds.
    pub validity_ms: u64,
    /// `hadoop.http.authentication.cookie.domain`.
    pub cookie_domain: Option<String>,
    /// The wall clock, in epoch milliseconds.
    pub now_ms: fn() -> u64,
}

impl std::fmt::Debug for Spnego {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spnego")
            .field("validity_ms", &self.validity_ms)
            .field("cookie_domain", &self.cookie_domain)
            .finish()
    }
}

impl Spnego {
    /// The SPNEGO of a daemon's web server from its configuration when
    /// `hadoop.http.authentication.type=kerberos` (`None` otherwise); see
    /// `spindle_ipc::kerberos::http_identity` for the keys. Also
    /// `hadoop.http.authentication.token.validity` (seconds, 36000),
    /// `….signature.secret.file` (else a random secret per start) and
    /// `….cookie.domain`.
    pub fn from_conf(
        conf: &spindle_common::conf::Configuration,
        principal_key: &str,
        keytab_key: &str,
        host: &str,
        now_ms: fn() -> u64,
    ) -> Result<Option<Arc<Spnego>>, String> {
        let Some(identity) =
            spindle_ipc::kerberos::http_identity(conf, principal_key, keytab_key, host)?
        else {
            return Ok(None);
        };
        let validity_key = "hadoop.http.authentication.token.validity";
        let validity_s = conf
            .get_trimmed(validity_key)
            .map_or(Ok(36_000), |v| v.parse::<u64>())
            .map_err(|_| format!("{validity_key} is not a number of seconds"))?;
        let secret_key = "hadoop.http.authentication.signature.secret.file";
        // A configured file that is not there: a random secret, as Hadoop's
        // AuthenticationFilter falls back to its random provider (Hadoop's
        // own default names a file under the user's home).
        let configured = conf.get_trimmed(secret_key).filter(|f| !f.is_empty());
        let file = configured
            .clone()
            .filter(|f| std::path::Path::new(f).exists());
        if let (Some(missing), None) = (&configured, &file) {
            tracing::warn!(
                file = %missing,
                "{secret_key}: no such file; the hadoop.auth cookie is signed with a random \
                 secret of this start"
            );
        }
        let secret = match file {
            Some(file) => std::fs::read(&file).map_err(|e| {
                format!("{secret_key}: cannot read the signature secret {file}: {e}")
            })?,
            None => {
                let mut bytes = vec![0u8; 32];
                rand::RngCore::fill_bytes(&mut rand::rng(), &mut bytes);
                bytes
            }
        };
        let names = identity.names.clone();
        let identity = Arc::new(identity);
        Ok(Some(Arc::new(Spnego {
            accept: Arc::new(move |token: &[u8]| {
                spindle_ipc::kerberos::accept_spnego(&identity, token)
            }),
            short_name: Arc::new(move |principal: &str| names.short_name(principal)),
            secret,
            validity_ms: validity_s.saturating_mul(1000),
            cookie_domain: conf
                .get_trimmed("hadoop.http.authentication.cookie.domain")
                .filter(|d| !d.is_empty()),
            now_ms,
        })))
    }

    fn signature(&self, payload: &str) -> String {
        let mut mac =
            Hmac::<Sha1>::new_from_slice(&self.secret).expect("HMAC takes a key of any length");
        mac.update(payload.as_bytes());
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    }

    /// The cookie value for `user` (`principal`), valid until `expires`.
    pub fn token(&self, user: &str, principal: &str, expires_ms: u64) -> String {
        let payload = format!("u={user}&p={principal}&t={TYPE}&e={expires_ms}");
        let s = self.signature(&payload);
        format!("{payload}&s={s}")
    }

    /// The user and principal of a cookie value this server signed and that
    /// has not expired.
    pub fn user_of(&self, token: &str, now_ms: u64) -> Option<(String, String)> {
        let token = token.trim_matches('"');
        let (payload, signature) = token.rsplit_once("&s=")?;
        let expected = self.signature(payload);
        // In constant time, as token passwords are compared.
        if !spindle_common::security::secret::passwords_equal(
            expected.as_bytes(),
            signature.as_bytes(),
        ) {
            return None;
        }
        let mut user = None;
        let mut principal = None;
        let mut expires = None;
        let mut kind = None;
        for part in payload.split('&') {
            match part.split_once('=') {
                Some(("u", u)) => user = Some(u.to_string()),
                Some(("p", p)) => principal = Some(p.to_string()),
                Some(("e", e)) => expires = e.parse::<u64>().ok(),
                Some(("t", t)) => kind = Some(t.to_string()),
                _ => {}
            }
        }
        let user = user.filter(|u| !u.is_empty())?;
        (kind.as_deref() == Some(TYPE) && expires? > now_ms)
            .then(|| (user, principal.unwrap_or_default()))
    }
}

fn cookie_value(request: &Request) -> Option<String> {
    for value in request.headers().get_all(header::COOKIE) {
        let Ok(text) = value.to_str() else { continue };
        for pair in text.split(';') {
            if let Some((name, v)) = pair.trim().split_once('=') {
                if name == COOKIE {
                    return Some(v.to_string());
                }
            }
        }
    }
    None
}

fn negotiate_token(request: &Request) -> Option<Result<Vec<u8>, String>> {
    let value = request
        .headers()
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let token = value.strip_prefix("Negotiate ")?;
    Some(
        base64::engine::general_purpose::STANDARD
            .decode(token.trim())
            .map_err(|e| format!("the Negotiate token is not base64: {e}")),
    )
}

fn challenge(message: &str) -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [
            (
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Negotiate"),
            ),
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain;charset=utf-8"),
            ),
        ],
        message.to_string(),
    )
        .into_response()
}

/// Whether the request names a user to act for (`doAs`, any case).
fn asks_do_as(uri: &Uri) -> bool {
    uri.query().unwrap_or_default().split('&').any(|p| {
        p.split('=')
            .next()
            .is_some_and(|name| name.eq_ignore_ascii_case("doas"))
    })
}

/// The request's URI with `user.name` set to `user` (and any `user.name`
/// the client gave removed).
fn with_user(uri: &Uri, user: &str) -> Option<Uri> {
    let mut query: Vec<String> = uri
        .query()
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
        .filter(|p| {
            let name = p.split('=').next().unwrap_or_default();
            !name.eq_ignore_ascii_case("user.name")
        })
        .map(str::to_string)
        .collect();
    let encoded: String = user
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    query.push(format!("user.name={encoded}"));
    let path = uri.path();
    format!("{path}?{}", query.join("&")).parse().ok()
}

/// The middleware: `axum::middleware::from_fn_with_state(Arc<Spnego>, authenticate)`.
pub async fn authenticate(
    State(spnego): State<Arc<Spnego>>,
    mut request: Request,
    next: Next,
) -> Response {
    let now = (spnego.now_ms)();
    let mut set_cookie = None;
    let mut reply_token = None;
    let from_cookie = cookie_value(&request).and_then(|c| spnego.user_of(&c, now));
    let (user, principal) = match from_cookie {
        Some(found) => found,
        None => match negotiate_token(&request) {
            None => return challenge("Authentication required"),
            Some(Err(why)) => return challenge(&why),
            Some(Ok(token)) => {
                let accept = spnego.accept.clone();
                // MIT's library blocks (keytab, replay cache).
                let accepted = tokio::task::spawn_blocking(move || accept(&token))
                    .await
                    .map_err(|e| e.to_string())
                    .and_then(|r| r);
                let (principal, out) = match accepted {
                    Ok(a) => a,
                    Err(why) => {
                        tracing::info!(why = %spindle_common::text::escaped(&why), "SPNEGO refused");
                        return challenge("GSSException: the Negotiate token was refused");
                    }
                };
                let user = match (spnego.short_name)(&principal) {
                    Ok(u) => u,
                    Err(why) => return (StatusCode::FORBIDDEN, why).into_response(),
                };
                let mut cookie = format!(
                    "{COOKIE}=\"{}\"; Path=/; HttpOnly",
                    spnego.token(&user, &principal, now + spnego.validity_ms)
                );
                if let Some(domain) = &spnego.cookie_domain {
                    cookie.push_str(&format!("; Domain={domain}"));
                }
                set_cookie = HeaderValue::from_str(&cookie).ok();
                reply_token = out.and_then(|t| {
                    HeaderValue::from_str(&format!(
                        "Negotiate {}",
                        base64::engine::general_purpose::STANDARD.encode(t)
                    ))
                    .ok()
                });
                (user, principal)
            }
        },
    };
    request.extensions_mut().insert(Authenticated {
        user: user.clone(),
        principal,
    });
    // Hadoop's filter lets a proxy user act for another with `doAs`
    // (hadoop.proxyuser.*); Spindle's web does not serve it yet, and must
    // not serve such a request as the caller instead.
    if asks_do_as(request.uri()) {
        return (
            StatusCode::FORBIDDEN,
            format!(
                "doAs is not served by Spindle's web yet: {user} may not act for another \
                 user here (the RPC ports serve proxy users)"
            ),
        )
            .into_response();
    }
    match with_user(request.uri(), &user) {
        Some(uri) => *request.uri_mut() = uri,
        None => return (StatusCode::BAD_REQUEST, "malformed request URI").into_response(),
    }
    let mut response = next.run(request).await;
    if let Some(cookie) = set_cookie {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    if let Some(token) = reply_token {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, token);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spnego() -> Spnego {
        Spnego {
            accept: Arc::new(|t: &[u8]| {
                if t == b"good" {
                    Ok(("alice@EXAMPLE.COM".to_string(), Some(b"mutual".to_vec())))
                } else {
                    Err("bad token".to_string())
                }
            }),
            short_name: Arc::new(|p: &str| Ok(p.split('@').next().unwrap_or_default().into())),
            secret: b"secret".to_vec(),
            validity_ms: 1000,
            cookie_domain: None,
            now_ms: || 5_000,
        }
    }

    #[test]
    fn a_signed_cookie_names_its_user_until_it_expires_and_a_forged_one_nobody() {
        let s = spnego();
        let token = s.token("alice", "alice@EXAMPLE.COM", 6_000);
        let alice = Some(("alice".to_string(), "alice@EXAMPLE.COM".to_string()));
        assert_eq!(s.user_of(&token, 5_999), alice);
        assert_eq!(s.user_of(&format!("\"{token}\""), 5_999), alice);
        assert_eq!(s.user_of(&token, 6_000), None, "expired");
        let forged = token.replace("u=alice", "u=root");
        assert_eq!(s.user_of(&forged, 5_000), None);
        let other = Spnego {
            secret: b"another".to_vec(),
            ..spnego()
        };
        assert_eq!(
            other.user_of(&token, 5_000),
            None,
            "another server's secret"
        );
    }

    #[test]
    fn the_authenticated_user_replaces_any_user_name_given() {
        let uri: Uri = "/ws/v1/cluster/apps?user.name=root&states=RUNNING&USER.NAME=x"
            .parse()
            .expect("uri");
        let out = with_user(&uri, "alice").expect("uri");
        assert_eq!(
            out.to_string(),
            "/ws/v1/cluster/apps?states=RUNNING&user.name=alice"
        );
        let bare: Uri = "/cluster".parse().expect("uri");
        assert_eq!(
            with_user(&bare, "a b").expect("uri").to_string(),
            "/cluster?user.name=a%20b"
        );
    }

    #[tokio::test]
    async fn requests_are_challenged_accepted_or_refused() {
        use axum::body::Body;
        use axum::routing::get;
        use tower::ServiceExt;

        let app = axum::Router::new()
            .route(
                "/who",
                get(|uri: Uri| async move { uri.query().unwrap_or_default().to_string() }),
            )
            .layer(axum::middleware::from_fn_with_state(
                Arc::new(spnego()),
                authenticate,
            ));
        let send = |req: axum::http::Request<Body>| {
            let app = app.clone();
            async move { app.oneshot(req).await.expect("served") }
        };
        let get_with = |name: &str, value: String| {
            axum::http::Request::get("/who?user.name=root")
                .header(name, value)
                .body(Body::empty())
                .expect("request")
        };
        let none = send(
            axum::http::Request::get("/who")
                .body(Body::empty())
                .expect("req"),
        )
        .await;
        assert_eq!(none.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(none.headers()[header::WWW_AUTHENTICATE], "Negotiate");
        let bad = send(get_with("authorization", "Negotiate YmFk".into())).await;
        assert_eq!(bad.status(), StatusCode::UNAUTHORIZED);
        let good = send(get_with(
            "authorization",
            format!(
                "Negotiate {}",
                base64::engine::general_purpose::STANDARD.encode("good")
            ),
        ))
        .await;
        assert_eq!(good.status(), StatusCode::OK);
        let cookie = good.headers()[header::SET_COOKIE]
            .to_str()
            .expect("ascii")
            .to_string();
        assert!(
            cookie.starts_with("hadoop.auth=\"u=alice&p=alice@EXAMPLE.COM&t=kerberos&e=6000&s="),
            "{cookie}"
        );
        assert_eq!(
            good.headers()[header::WWW_AUTHENTICATE],
            "Negotiate bXV0dWFs"
        );
        let body = axum::body::to_bytes(good.into_body(), 1 << 16)
            .await
            .expect("body");
        assert_eq!(&body[..], b"user.name=alice");
        // The cookie alone lets the next request in.
        let value = cookie
            .trim_start_matches("hadoop.auth=")
            .split(';')
            .next()
            .unwrap_or_default()
            .to_string();
        let again = send(get_with("cookie", format!("hadoop.auth={value}"))).await;
        assert_eq!(again.status(), StatusCode::OK);
        // doAs is refused, not served as the caller.
        let do_as = send(
            axum::http::Request::get("/who?doAs=root")
                .header("cookie", format!("hadoop.auth={value}"))
                .body(Body::empty())
                .expect("request"),
        )
        .await;
        assert_eq!(do_as.status(), StatusCode::FORBIDDEN);
    }
}
