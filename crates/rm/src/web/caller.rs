//! Who a web request comes from, as Hadoop's pseudo authentication
//! (`PseudoAuthenticationHandler`) decides it: the `user.name` query
//! parameter names the user; a request without one is anonymous, allowed
//! while `hadoop.http.authentication.simple.anonymous.allowed` is true (its
//! default) and refused with 401 otherwise.
//!
//! An anonymous request acts as Hadoop's static web user
//! (`hadoop.http.staticuser.user`, default `dr.who`), as Hadoop's default
//! `StaticUserWebFilter` makes it: with `yarn.acl.enable` off everyone sees
//! everything; with it on, `dr.who` is an ordinary user, who sees other
//! users' applications with Hadoop's hidden fields. The REST API and the UI
//! ask as the same caller.

use axum::http::{HeaderMap, Uri};
use spindle_web::query::DecodeError;
use spindle_web::WebError;

use super::WebContext;
use crate::model::access::Caller;

/// `hadoop.http.authentication.simple.anonymous.allowed`.
pub const ANONYMOUS_ALLOWED_KEY: &str = "hadoop.http.authentication.simple.anonymous.allowed";

/// The user a request names with `user.name`; `None` when it names none
/// (absent or empty, as Hadoop's handler treats both). A `user.name` that
/// is not valid percent-encoded UTF-8 is a bad request.
pub fn user_name(uri: &Uri) -> Result<Option<String>, WebError> {
    user_in_query(uri.query())
}

/// [`user_name`] of a raw query string.
pub fn user_in_query(query: Option<&str>) -> Result<Option<String>, WebError> {
    let Some(query) = query else {
        return Ok(None);
    };
    for pair in query.split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if key == "user.name" {
            let user = decode(value)?;
            let user = user.trim();
            return Ok((!user.is_empty()).then(|| user.to_string()));
        }
    }
    Ok(None)
}

/// The named user of a request, or 401 when it names none and anonymous
/// requests are not allowed. `None`: an allowed anonymous request.
pub fn request_user(
    web: &WebContext,
    uri: &Uri,
    headers: &HeaderMap,
) -> Result<Option<String>, WebError> {
    let user = user_name(uri).map_err(|e| e.for_request(headers))?;
    if user.is_none() && !anonymous_allowed(web) {
        return Err(WebError::unauthorized(
            "Authentication required: anonymous requests are disallowed",
        )
        .for_request(headers));
    }
    Ok(user)
}

/// `hadoop.http.staticuser.user`.
pub const STATIC_USER_KEY: &str = "hadoop.http.staticuser.user";

/// Hadoop's default static web user.
pub const DEFAULT_STATIC_USER: &str = "dr.who";

/// The caller a read asks as: the named user with its groups, or for an
/// anonymous request the static web user (see the module documentation).
pub async fn read_caller(
    web: &WebContext,
    uri: &Uri,
    headers: &HeaderMap,
) -> Result<Caller, WebError> {
    let user = request_user(web, uri, headers)?;
    Ok(caller_for(web, user.as_deref()).await)
}

/// The caller of a request naming `user` (`None`: anonymous, the static
/// web user), with its groups.
pub async fn caller_for(web: &WebContext, user: Option<&str>) -> Caller {
    match user {
        Some(user) => web.rm().caller(user).await,
        None => web.rm().caller(&static_user(web)).await,
    }
}

/// `hadoop.http.staticuser.user`, `dr.who` by default.
pub fn static_user(web: &WebContext) -> String {
    web.conf
        .get_trimmed(STATIC_USER_KEY)
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| DEFAULT_STATIC_USER.to_string())
}

/// `hadoop.http.authentication.simple.anonymous.allowed` (default true).
pub fn anonymous_allowed(web: &WebContext) -> bool {
    web.conf
        .get_trimmed(ANONYMOUS_ALLOWED_KEY)
        .is_none_or(|v| !v.eq_ignore_ascii_case("false"))
}

/// Percent-decodes a query component (`+` is a space); a bad escape or
/// bytes that are not UTF-8 are a 400 with Hadoop's message.
pub fn decode(text: &str) -> Result<String, WebError> {
    spindle_web::query::decode_component(text).map_err(|e| match e {
        DecodeError::BadEscape => {
            WebError::bad_request(format!("Malformed escape pair in query: {text}"))
        }
        DecodeError::NotUtf8 => WebError::bad_request("The query is not valid UTF-8".to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uri(s: &str) -> Uri {
        s.parse().expect("uri")
    }

    #[test]
    fn reads_user_name_from_the_query() {
        let cases: &[(&str, Option<&str>)] = &[
            ("/ws/v1/cluster/apps", None),
            ("/ws/v1/cluster/apps?user.name=alice", Some("alice")),
            ("/ws/v1/cluster/apps?limit=1&user.name=bob&x=y", Some("bob")),
            ("/ws/v1/cluster/apps?user.name=", None),
            ("/ws/v1/cluster/apps?user.name=a%20b", Some("a b")),
            ("/ws/v1/cluster/apps?user=alice", None),
        ];
        for (u, want) in cases {
            assert_eq!(user_name(&uri(u)).expect("parses").as_deref(), *want, "{u}");
        }
    }

    #[test]
    fn bad_encoding_is_a_bad_request() {
        for u in ["/x?user.name=%zz", "/x?user.name=%ff%fe", "/x?user.name=%4"] {
            let e = user_name(&uri(u)).expect_err(u);
            assert_eq!(e.status, axum::http::StatusCode::BAD_REQUEST, "{u}");
        }
    }
}
