//! The REST resources of `RMWebServices` that change applications, each
//! through the command its RPC twin sends (so the same access rules
//! decide):
//!
//! | resource | command | answer |
//! |---|---|---|
//! | `PUT /ws/v1/cluster/apps/{id}/state` `{"state":"KILLED"}` | `KillApplication` | 200 with the state once killed (202 with `Location` while a kill is in progress); 403 `Unauthorized attempt to kill appid <id> by remote user <user>` without MODIFY_APP; 400 `Only 'KILLED' is allowed as a target state.` |
//! | `PUT /ws/v1/cluster/apps/{id}/priority` `{"priority":N}` | `UpdateApplicationPriority` | 200 with the effective priority; 403 `Unauthorized attempt to change priority of appid <id> by remote user <user>`; 400 in a state that cannot change it |
//! | `PUT /ws/v1/cluster/apps/{id}/queue` `{"queue":"q"}` | `MoveApplication` (none when `q` is the current queue) | 200 with the application's queue after the move; 403 `Unauthorized attempt to move appid <id> by remote user <user>` without MODIFY_APP or the target queue's submit ACL; 400 `App in <STATE> state cannot be moved.`; the scheduler's refusals a 500 (Hadoop's `UndeclaredThrowableException`) with the RPC's message |
//! | `PUT /ws/v1/cluster/apps/{id}/timeout` `{"timeout":{"type":"LIFETIME","expiryTime":"<ISO 8601>"}}` | `UpdateApplicationTimeouts` | 200 with the application's `timeout` (type, expiry time, seconds left); 400 `Timeout type or ExpiryTime is null.`, or the ISO 8601 refusal; 403 `Unauthorized attempt to change timeout of app <id> by remote user <user>`; other refusals a 500 with the RPC's message |
//! | `POST /ws/v1/cluster/containers/{id}/signal/{command}` | `SignalContainer` | 200, empty; 400 `Invalid command: <C>, valid commands are: [OUTPUT_THREAD_DUMP, GRACEFUL_SHUTDOWN, FORCEFUL_SHUTDOWN]`; any refusal a 500 with the RPC's message, as `RMWebServices.signalToContainer` |
//! | `POST /ws/v1/cluster/apps/new-application` | `NewApplication` | `{"application-id", "maximum-resource-capability"}` |
//! | `POST /ws/v1/cluster/apps` (Hadoop's `ApplicationSubmissionContextInfo` JSON) | `SubmitApplication` (the submission the RPC builds) | 202 with `Location: .../apps/<id>`; a refusal is a 400 with the RPC's message |
//! | `POST /ws/v1/cluster/delegation-token` `{"renewer": r}`, `POST .../delegation-token/expiration`, `DELETE .../delegation-token` (the token in the `Hadoop-YARN-RM-Delegation-Token` header, Hadoop's URL string) | `GetDelegationToken`, `RenewDelegationToken`, `CancelDelegationToken` | for a SPNEGO caller (`spindle_web::spnego`): the token `{"token", "renewer", "owner", "kind", "expiration-time", "max-validity"}`, `{"expiration-time"}`, 200; an invalid token a 400, a caller without the right a 403 with Hadoop's message. Any other caller: 403 `Delegation token operations can only be carried out on a Kerberos authenticated channel. Expected auth type is kerberos, got type <simple or null>` |
//!
//! The caller is Hadoop's pseudo-authentication user, the `user.name` query
//! parameter, else the static web user (`dr.who`, see `web::caller`); with
//! anonymous requests disallowed, a write without one is refused with 401
//! "Unable to obtain user name, user not authenticated", as `RMWebServices`
//! refuses a request without a principal. Bodies are JSON or XML (by `Content-Type`); one
//! that does not parse is a 400, another media type a 415. An unknown
//! application is a 404 `app with id: <id> not found`, an id that does not
//! parse a 400. Like Hadoop, the refusals of a kill or a priority change
//! are plain-text bodies; the other errors are `RemoteException` JSON/XML.
//!
//! REST submission takes the AM's commands, environment and resource, the
//! name, queue, type, tags, priority, attempts and the unmanaged and
//! keep-containers flags; a submission with `local-resources` or
//! `credentials` is refused (400) for now. `yarn.webapp.enable-rest-app-submissions`
//! set to false refuses every submission (403).

use axum::body::Bytes;
use axum::extract::{Extension, Path, RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{post, put};
use axum::Router;
use base64::Engine as _;
use serde_json::{json, Value};
use spindle_common::ids::{ApplicationId, ContainerId};
use spindle_common::security::Token;
use spindle_web::spnego::Authenticated;
use spindle_web::{Format, WebError};

use super::{caller, WebContext};
use crate::cluster::nodes::ContainerSignal;
use crate::model::apps::AppState;
use crate::model::convert::refusal_to_rpc;
use crate::model::delegation::refusal_class;
use crate::model::refusal::Refusal;
use crate::model::reports::ProxyTarget;
use crate::state::command::{
    CancelDelegationToken, GetDelegationToken, KillApplication, MoveApplication, NewApplication,
    RenewDelegationToken, SignalContainer, SubmitApplication, UpdateApplicationPriority,
    UpdateApplicationTimeouts,
};

pub fn routes() -> Router<WebContext> {
    Router::new()
        .route("/ws/v1/cluster/apps/{appid}/state", put(put_state))
        .route("/ws/v1/cluster/apps/{appid}/priority", put(put_priority))
        .route("/ws/v1/cluster/apps/{appid}/queue", put(put_queue))
        .route("/ws/v1/cluster/apps/{appid}/timeout", put(put_timeout))
        .route(
            "/ws/v1/cluster/containers/{containerid}/signal/{command}",
            post(post_signal),
        )
        .route("/ws/v1/cluster/apps/new-application", post(new_application))
        .route("/ws/v1/cluster/apps", post(submit_application))
        .route(
            "/ws/v1/cluster/delegation-token",
            post(post_delegation_token).delete(delete_delegation_token),
        )
        .route(
            "/ws/v1/cluster/delegation-token/expiration",
            post(post_delegation_token_expiration),
        )
}

/// The header that carries a token to renew or cancel (Hadoop's
/// `RMWebServices.DELEGATION_TOKEN_HEADER`).
const TOKEN_HEADER: &str = "Hadoop-YARN-RM-Delegation-Token";

/// `RMWebServices`' delegation-token resources are for Kerberos (SPNEGO)
/// callers only: anyone else is refused as Hadoop's
/// `createKerberosUserGroupInformation` refuses another authentication
/// type (a caller without a user first gets the 401 every write gets).
fn kerberos_caller(
    web: &WebContext,
    query: Option<&str>,
    headers: &HeaderMap,
    auth: Option<Authenticated>,
) -> Result<Authenticated, Box<Response>> {
    if let Some(auth) = auth {
        return Ok(auth);
    }
    require_user(web, query, headers)?;
    let auth_type = match caller::user_in_query(query) {
        Ok(Some(_)) => "simple",
        _ => "null",
    };
    Err(Box::new(plain(
        StatusCode::FORBIDDEN,
        format!(
            "Delegation token operations can only be carried out on a Kerberos authenticated \
             channel. Expected auth type is kerberos, got type {auth_type}"
        ),
    )))
}

/// Hadoop's `Token.encodeToUrlString`: the Writable token, URL-safe base64.
fn token_to_url(token: &Token) -> String {
    let mut bytes = Vec::new();
    token.write_writable(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The token a renewal or cancellation names in its header.
fn token_of(headers: &HeaderMap) -> Result<Token, Box<Response>> {
    let Some(text) = headers.get(TOKEN_HEADER).and_then(|v| v.to_str().ok()) else {
        return Err(fail(
            WebError::bad_request(format!(
                "Header '{TOKEN_HEADER}' containing encoded token not found"
            )),
            headers,
        ));
    };
    let text = text.trim().trim_end_matches('=');
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text)
        .ok()
        .and_then(|bytes| Token::read_writable(&bytes).ok())
        .map(|(token, _)| token)
        .ok_or_else(|| {
            fail(
                WebError::bad_request("Couldn't decode delegation token from header"),
                headers,
            )
        })
}

/// The SPNEGO caller of a renewal or cancellation and the token it names.
fn caller_and_token(
    web: &WebContext,
    query: Option<&str>,
    headers: &HeaderMap,
    auth: Option<Extension<Authenticated>>,
) -> Result<(Authenticated, Token), Box<Response>> {
    let auth = kerberos_caller(web, query, headers, auth.map(|a| a.0))?;
    Ok((auth, token_of(headers)?))
}

/// A renewal's or cancellation's refusal as Hadoop answers it: an invalid
/// token a 400, a caller without the right a 403 with the message.
fn token_refused(refusal: Refusal, headers: &HeaderMap) -> Response {
    match refusal {
        Refusal::DelegationToken(r) if r.class == refusal_class::ACCESS_CONTROL => {
            plain(StatusCode::FORBIDDEN, r.message)
        }
        Refusal::DelegationToken(r) => *fail(WebError::bad_request(r.message), headers),
        other => *undeclared(other, headers),
    }
}

/// `POST /ws/v1/cluster/delegation-token` `{"renewer": …}`: a token for the
/// caller's principal.
async fn post_delegation_token(
    State(web): State<WebContext>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    auth: Option<Extension<Authenticated>>,
    body: Bytes,
) -> Response {
    let auth = match kerberos_caller(&web, query.as_deref(), &headers, auth.map(|a| a.0)) {
        Ok(a) => a,
        Err(r) => return *r,
    };
    let renewer = match body_field(&headers, &body, "renewer") {
        Ok(r) => r.unwrap_or_default(),
        Err(r) => return *r,
    };
    let rm = web.rm();
    let short = if renewer.is_empty() {
        String::new()
    } else {
        match rm.names.short_name(&renewer) {
            Ok(s) => s,
            Err(e) => return *fail(WebError::bad_request(e), &headers),
        }
    };
    let issued = match rm
        .core
        .call(GetDelegationToken {
            owner: auth.principal.clone(),
            renewer: short,
            real_user: None,
        })
        .await
    {
        Ok(t) => t,
        Err(e) => return *fail(WebError::unavailable(e.to_string()), &headers),
    };
    answer(
        &headers,
        StatusCode::OK,
        "delegation-token",
        json!({
            "token": token_to_url(&issued.token),
            "renewer": renewer,
            "owner": auth.principal,
            "kind": issued.token.kind,
            "expiration-time": issued.renew_date_ms,
            "max-validity": issued.max_date_ms,
        }),
    )
}

/// `POST /ws/v1/cluster/delegation-token/expiration`: the caller renews
/// the token of the header.
async fn post_delegation_token_expiration(
    State(web): State<WebContext>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    auth: Option<Extension<Authenticated>>,
) -> Response {
    let (auth, token) = match caller_and_token(&web, query.as_deref(), &headers, auth) {
        Ok(found) => found,
        Err(r) => return *r,
    };
    let renew = RenewDelegationToken {
        token,
        renewer: auth.user,
    };
    match web.rm().core.call(renew).await {
        Ok(Ok(expiry)) => answer(
            &headers,
            StatusCode::OK,
            "delegation-token",
            json!({ "expiration-time": expiry }),
        ),
        Ok(Err(refusal)) => token_refused(refusal, &headers),
        Err(e) => *fail(WebError::unavailable(e.to_string()), &headers),
    }
}

/// `DELETE /ws/v1/cluster/delegation-token`: the caller cancels the token
/// of the header.
async fn delete_delegation_token(
    State(web): State<WebContext>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    auth: Option<Extension<Authenticated>>,
) -> Response {
    let (auth, token) = match caller_and_token(&web, query.as_deref(), &headers, auth) {
        Ok(found) => found,
        Err(r) => return *r,
    };
    let cancel = CancelDelegationToken {
        token,
        canceller: auth.principal,
        short: auth.user,
    };
    match web.rm().core.call(cancel).await {
        Ok(Ok(())) => StatusCode::OK.into_response(),
        Ok(Err(refusal)) => token_refused(refusal, &headers),
        Err(e) => *fail(WebError::unavailable(e.to_string()), &headers),
    }
}

type WebResult = Result<Response, Box<Response>>;

fn fail(e: WebError, headers: &HeaderMap) -> Box<Response> {
    Box::new(e.for_request(headers).into_response())
}

/// The user a write acts as (see `web::caller`): the one `user.name` names,
/// else the static web user while anonymous requests are allowed; otherwise
/// 401, as `RMWebServices` refuses a request without a principal.
fn require_user(
    web: &WebContext,
    query: Option<&str>,
    headers: &HeaderMap,
) -> Result<String, Box<Response>> {
    match caller::user_in_query(query).map_err(|e| fail(e, headers))? {
        Some(user) => Ok(user),
        None if caller::anonymous_allowed(web) => Ok(caller::static_user(web)),
        None => Err(fail(
            WebError::unauthorized("Unable to obtain user name, user not authenticated"),
            headers,
        )),
    }
}

/// 404 "app with id: <id> not found", as `getRMAppForAppId`.
fn app_not_found(id: &str, headers: &HeaderMap) -> Box<Response> {
    fail(
        WebError::not_found(format!("app with id: {id} not found")),
        headers,
    )
}

/// A refusal `RMWebServices` does not catch: it escapes as Hadoop's
/// `UndeclaredThrowableException`, a 500 carrying the RPC's message.
fn undeclared(refusal: Refusal, headers: &HeaderMap) -> Box<Response> {
    fail(
        WebError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "java.lang.reflect.UndeclaredThrowableException",
            refusal_to_rpc(refusal).message,
        ),
        headers,
    )
}

/// `WebAppUtils.parseApplicationId` + `getRMAppForAppId`: the id and what
/// the RM has of the application.
async fn app_of(
    web: &WebContext,
    id: &str,
    headers: &HeaderMap,
) -> Result<(ApplicationId, ProxyTarget), Box<Response>> {
    let parsed = id.parse::<ApplicationId>().map_err(|_| {
        fail(
            WebError::bad_request(format!(
                "java.lang.IllegalArgumentException: Invalid ApplicationId: {id}"
            )),
            headers,
        )
    })?;
    let found = web
        .rm()
        .core
        .query(move |s| s.proxy_target(&parsed))
        .await
        .map_err(|e| fail(WebError::unavailable(e.to_string()), headers))?;
    found
        .map(|target| (parsed, target))
        .ok_or_else(|| app_not_found(id, headers))
}

/// One field of a JSON or XML body (`<root><field>v</field></root>`).
fn body_field(
    headers: &HeaderMap,
    body: &[u8],
    field: &str,
) -> Result<Option<String>, Box<Response>> {
    let media = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let bad = |what: String| fail(WebError::bad_request(what), headers);
    let text =
        std::str::from_utf8(body).map_err(|_| bad("The request body is not UTF-8".into()))?;
    match media.as_str() {
        "application/json" | "text/json" | "" => {
            let v: Value = serde_json::from_str(text)
                .map_err(|e| bad(format!("The request body is not valid JSON: {e}")))?;
            let obj = v
                .as_object()
                .ok_or_else(|| bad("The request body is not a JSON object".into()))?;
            Ok(obj.get(field).and_then(|f| match f {
                Value::String(s) => Some(s.clone()),
                Value::Null => None,
                other => Some(other.to_string()),
            }))
        }
        "application/xml" | "text/xml" => {
            let doc = roxmltree::Document::parse(text)
                .map_err(|e| bad(format!("The request body is not valid XML: {e}")))?;
            Ok(doc
                .root_element()
                .children()
                .find(|n| n.is_element() && n.tag_name().name() == field)
                .map(|n| n.text().unwrap_or("").trim().to_string()))
        }
        other => Err(Box::new(
            (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!("Unsupported media type {other}"),
            )
                .into_response(),
        )),
    }
}

/// A DAO answer: JSON without the root element (Hadoop's unwrapped JSON
/// for these types), XML with it.
fn answer(headers: &HeaderMap, status: StatusCode, root: &str, inner: Value) -> Response {
    let format = Format::of(headers);
    let body = match format {
        Format::Json => inner.to_string(),
        Format::Xml => format.render(&json!({ root: inner })),
    };
    (
        status,
        [(header::CONTENT_TYPE, format.content_type())],
        body,
    )
        .into_response()
}

/// A plain-text refusal, as `Response.status(..).entity(msg)`.
fn plain(status: StatusCode, msg: String) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain;charset=utf-8"),
        )],
        msg,
    )
        .into_response()
}

async fn put_state(
    State(web): State<WebContext>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    put_state_inner(web, id, query, uri, headers, body)
        .await
        .unwrap_or_else(|r| *r)
}

async fn put_state_inner(
    web: WebContext,
    id: String,
    query: Option<String>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> WebResult {
    let target = body_field(&headers, &body, "state")?.unwrap_or_default();
    let diagnostics = body_field(&headers, &body, "diagnostics")?;
    let user = require_user(&web, query.as_deref(), &headers)?;
    let (app_id, app) = app_of(&web, &id, &headers).await?;
    if app.state.as_str() == target {
        return Ok(answer(
            &headers,
            StatusCode::OK,
            "appstate",
            json!({"state": app.state.as_str()}),
        ));
    }
    if target != AppState::Killed.as_str() {
        return Ok(plain(
            StatusCode::BAD_REQUEST,
            "Only 'KILLED' is allowed as a target state.".into(),
        ));
    }
    let rm = web.rm();
    let caller = rm.caller(&user).await;
    let kill = KillApplication {
        app: app_id,
        user: caller.user,
        groups: caller.groups,
        reason: diagnostics,
        from: None,
    };
    let done = match rm.core.call(kill).await {
        Ok(Ok(done)) => done,
        Ok(Err(Refusal::AppAccessDenied { .. })) => {
            return Ok(plain(
                StatusCode::FORBIDDEN,
                format!("Unauthorized attempt to kill appid {id} by remote user {user}"),
            ))
        }
        Ok(Err(Refusal::KillOfAbsentApplication(_) | Refusal::ApplicationNotFound(_))) => {
            return Err(app_not_found(&id, &headers))
        }
        Ok(Err(other)) => return Err(fail(WebError::bad_request(format!("{other:?}")), &headers)),
        Err(e) => return Err(fail(WebError::unavailable(e.to_string()), &headers)),
    };
    let (_, now) = app_of(&web, &id, &headers).await?;
    let state = json!({"state": now.state.as_str()});
    if done {
        Ok(answer(&headers, StatusCode::OK, "appstate", state))
    } else {
        let mut resp = answer(&headers, StatusCode::ACCEPTED, "appstate", state);
        if let Ok(v) = HeaderValue::from_str(&uri.to_string()) {
            resp.headers_mut().insert(header::LOCATION, v);
        }
        Ok(resp)
    }
}

async fn put_priority(
    State(web): State<WebContext>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    put_priority_inner(web, id, query, headers, body)
        .await
        .unwrap_or_else(|r| *r)
}

async fn put_priority_inner(
    web: WebContext,
    id: String,
    query: Option<String>,
    headers: HeaderMap,
    body: Bytes,
) -> WebResult {
    let bad = |m: &str| fail(WebError::bad_request(m.to_string()), &headers);
    let priority = body_field(&headers, &body, "priority")?
        .ok_or_else(|| bad("Target Priority cannot be null"))?
        .trim()
        .parse::<i32>()
        .map_err(|_| bad("The priority is not an integer"))?;
    let user = require_user(&web, query.as_deref(), &headers)?;
    let (app_id, app) = app_of(&web, &id, &headers).await?;
    if app.priority == priority {
        return Ok(answer(
            &headers,
            StatusCode::OK,
            "applicationpriority",
            json!({"priority": priority}),
        ));
    }
    let rm = web.rm();
    let caller = rm.caller(&user).await;
    let update = UpdateApplicationPriority {
        app: app_id,
        priority,
        user: caller.user,
        groups: caller.groups,
    };
    match rm.core.call(update).await {
        Ok(Ok(effective)) => Ok(answer(
            &headers,
            StatusCode::OK,
            "applicationpriority",
            json!({"priority": effective}),
        )),
        Ok(Err(Refusal::AppAccessDenied { .. })) => Ok(plain(
            StatusCode::FORBIDDEN,
            format!("Unauthorized attempt to change priority of appid {id} by remote user {user}"),
        )),
        Ok(Err(Refusal::PriorityUpdateInState(state))) => Ok(plain(
            StatusCode::BAD_REQUEST,
            format!("Application in {state} state cannot update priority."),
        )),
        Ok(Err(Refusal::ApplicationNotFound(_))) => Err(app_not_found(&id, &headers)),
        Ok(Err(other)) => Err(fail(WebError::bad_request(format!("{other:?}")), &headers)),
        Err(e) => Err(fail(WebError::unavailable(e.to_string()), &headers)),
    }
}

async fn post_signal(
    State(web): State<WebContext>,
    Path((container, command)): Path<(String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    post_signal_inner(web, container, command, query, headers)
        .await
        .unwrap_or_else(|r| *r)
}

/// `RMWebServices.signalToContainer`: the caller first (401 without one), then the
/// command (400, plain text), then everything the RPC checks, whose refusals (and a
/// container id that does not parse) are 500s carrying the message, as Hadoop
/// answers any exception of `ClientRMService.signalToContainer`.
async fn post_signal_inner(
    web: WebContext,
    container: String,
    command: String,
    query: Option<String>,
    headers: HeaderMap,
) -> WebResult {
    // Hadoop asks for the caller first (`initForWritableEndpoints`), then checks the command.
    let user = require_user(&web, query.as_deref(), &headers)?;
    let signal = match command.to_ascii_uppercase().as_str() {
        "OUTPUT_THREAD_DUMP" => ContainerSignal::OutputThreadDump,
        "GRACEFUL_SHUTDOWN" => ContainerSignal::GracefulShutdown,
        "FORCEFUL_SHUTDOWN" => ContainerSignal::ForcefulShutdown,
        other => {
            return Ok(plain(
                StatusCode::BAD_REQUEST,
                format!(
                    "Invalid command: {other}, valid commands are: \
                     [OUTPUT_THREAD_DUMP, GRACEFUL_SHUTDOWN, FORCEFUL_SHUTDOWN]"
                ),
            ))
        }
    };
    let Ok(id) = container.parse::<ContainerId>() else {
        return Ok(plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("Invalid ContainerId: {container}"),
        ));
    };
    let rm = web.rm();
    let caller = rm.caller(&user).await;
    let signal = SignalContainer {
        container: id,
        signal,
        user: caller.user,
        groups: caller.groups,
    };
    match rm.core.call(signal).await {
        Ok(Ok(())) => Ok(StatusCode::OK.into_response()),
        Ok(Err(refusal)) => Ok(plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            refusal_to_rpc(refusal).message,
        )),
        Err(e) => Err(fail(WebError::unavailable(e.to_string()), &headers)),
    }
}

async fn put_queue(
    State(web): State<WebContext>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    put_queue_inner(web, id, query, headers, body)
        .await
        .unwrap_or_else(|r| *r)
}

async fn put_queue_inner(
    web: WebContext,
    id: String,
    query: Option<String>,
    headers: HeaderMap,
    body: Bytes,
) -> WebResult {
    let target = body_field(&headers, &body, "queue")?.unwrap_or_default();
    let user = require_user(&web, query.as_deref(), &headers)?;
    let (app_id, app) = app_of(&web, &id, &headers).await?;
    let short = app.queue.rsplit('.').next().unwrap_or(&app.queue);
    if target == app.queue || target == short {
        return Ok(answer(
            &headers,
            StatusCode::OK,
            "appqueue",
            json!({"queue": app.queue}),
        ));
    }
    let rm = web.rm();
    let caller = rm.caller(&user).await;
    let mv = MoveApplication {
        app: app_id,
        queue: target,
        user: caller.user,
        groups: caller.groups,
    };
    // RMWebServices.moveApp: an AccessControlException (MODIFY_APP, or the
    // target queue's submit ACL) is a 403 and a state that cannot move a
    // 400, both plain text; any other refusal escapes as Hadoop's
    // UndeclaredThrowableException, a 500.
    match rm.core.call(mv).await {
        Ok(Ok(())) => {
            let (_, app) = app_of(&web, &id, &headers).await?;
            Ok(answer(
                &headers,
                StatusCode::OK,
                "appqueue",
                json!({"queue": app.queue}),
            ))
        }
        Ok(Err(Refusal::AppAccessDenied { .. } | Refusal::MoveTargetDenied { .. })) => Ok(plain(
            StatusCode::FORBIDDEN,
            format!("Unauthorized attempt to move appid {app_id} by remote user {user}"),
        )),
        Ok(Err(Refusal::MoveInState(state))) => Ok(plain(
            StatusCode::BAD_REQUEST,
            format!("App in {state} state cannot be moved."),
        )),
        Ok(Err(Refusal::ApplicationNotFound(_))) => Err(app_not_found(&id, &headers)),
        Ok(Err(other)) => Err(undeclared(other, &headers)),
        Err(e) => Err(fail(WebError::unavailable(e.to_string()), &headers)),
    }
}

async fn put_timeout(
    State(web): State<WebContext>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    put_timeout_inner(web, id, query, headers, body)
        .await
        .unwrap_or_else(|r| *r)
}

/// The `type` and `expiryTime` of an `AppTimeoutInfo` body: JSON keeps its
/// root (`{"timeout": {...}}`, Hadoop's JAXB context does not unwrap this
/// type; a bare object is taken too), XML is `<timeout>...</timeout>`.
fn timeout_fields(
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(Option<String>, Option<String>), Box<Response>> {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_none_or(|v| v.to_ascii_lowercase().contains("json"));
    if !json {
        return Ok((
            body_field(headers, body, "type")?,
            body_field(headers, body, "expiryTime")?,
        ));
    }
    let bad = |what: String| fail(WebError::bad_request(what), headers);
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| bad(format!("The request body is not valid JSON: {e}")))?;
    let inner = v.get("timeout").unwrap_or(&v);
    let field = |name: &str| inner.get(name).and_then(Value::as_str).map(str::to_string);
    Ok((field("type"), field("expiryTime")))
}

/// `RMWebServices.updateApplicationTimeout`: the caller (401 without one),
/// the application (404), both fields (400 "Timeout type or ExpiryTime is
/// null.", also for a type other than LIFETIME, which Hadoop's JAXB reads
/// as none), then the RPC's checks: 403 without MODIFY_APP, 400 with the
/// message for a time not in ISO 8601 form, any other refusal a 500 (Hadoop's
/// `UndeclaredThrowableException`). Answers the application's LIFETIME
/// timeout, wrapped in `timeout` in JSON as in XML.
async fn put_timeout_inner(
    web: WebContext,
    id: String,
    query: Option<String>,
    headers: HeaderMap,
    body: Bytes,
) -> WebResult {
    let user = require_user(&web, query.as_deref(), &headers)?;
    let (app_id, _) = app_of(&web, &id, &headers).await?;
    let (kind, expiry) = timeout_fields(&headers, &body)?;
    let (Some("LIFETIME"), Some(expiry)) = (kind.as_deref(), expiry) else {
        return Ok(plain(
            StatusCode::BAD_REQUEST,
            "Timeout type or ExpiryTime is null.".to_string(),
        ));
    };
    let rm = web.rm();
    let caller = rm.caller(&user).await;
    let update = UpdateApplicationTimeouts {
        app: app_id,
        lifetime: Some(expiry),
        user: caller.user.clone(),
        groups: caller.groups.clone(),
    };
    match rm.core.call(update).await {
        Ok(Ok(())) => {}
        Ok(Err(Refusal::AppAccessDenied { .. })) => {
            return Ok(plain(
                StatusCode::FORBIDDEN,
                format!(
                    "Unauthorized attempt to change timeout of app {app_id} by remote user {user}"
                ),
            ))
        }
        Ok(Err(r @ Refusal::TimeoutNotIso8601(_))) => {
            return Ok(plain(StatusCode::BAD_REQUEST, refusal_to_rpc(r).message))
        }
        Ok(Err(Refusal::ApplicationNotFound(_))) => return Err(app_not_found(&id, &headers)),
        Ok(Err(other)) => return Err(undeclared(other, &headers)),
        Err(e) => return Err(fail(WebError::unavailable(e.to_string()), &headers)),
    }
    let report = rm
        .core
        .query(move |s| s.app_report(&app_id, &caller))
        .await
        .map_err(|e| fail(WebError::unavailable(e.to_string()), &headers))?
        .map_err(|_| app_not_found(&id, &headers))?;
    let timeout = json!({
        "type": "LIFETIME",
        "expiryTime": report
            .app
            .lifetime
            .map_or_else(|| "UNLIMITED".to_string(), |l| crate::iso8601::format(l.expiry_wall_ms)),
        "remainingTimeInSeconds": report.lifetime_remaining_s,
    });
    let inner = match Format::of(&headers) {
        Format::Json => json!({ "timeout": timeout }),
        Format::Xml => timeout,
    };
    Ok(answer(&headers, StatusCode::OK, "timeout", inner))
}

async fn new_application(
    State(web): State<WebContext>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    if let Err(r) = require_user(&web, query.as_deref(), &headers) {
        return *r;
    }
    let rm = web.rm();
    match rm.core.call(NewApplication).await {
        Ok(id) => answer(
            &headers,
            StatusCode::OK,
            "NewApplication",
            json!({
                "application-id": id.to_string(),
                "maximum-resource-capability": {
                    "memory": rm.max_allocation.memory_mb,
                    "vCores": rm.max_allocation.vcores,
                },
            }),
        ),
        Err(e) => *fail(WebError::unavailable(e.to_string()), &headers),
    }
}

/// Entries of a JAXB map or list in JSON: one object or an array of them
/// under `name` (`{"entry": [...]}`, `{"command": "..."}`).
fn entries<'a>(v: Option<&'a Value>, name: &str) -> Vec<&'a Value> {
    match v.and_then(|v| v.get(name)) {
        Some(Value::Array(items)) => items.iter().collect(),
        Some(Value::Null) | None => Vec::new(),
        Some(one) => vec![one],
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Hadoop's `ApplicationSubmissionContextInfo` as the RPC's submission
/// context.
fn submission_context(
    v: &Value,
) -> Result<hadoop_protos::yarn::ApplicationSubmissionContextProto, String> {
    use hadoop_protos::yarn as pb;
    let obj = v
        .as_object()
        .ok_or("The request body is not a JSON object")?;
    let str_of = |k: &str| obj.get(k).filter(|v| !v.is_null()).map(text);
    let int_of = |k: &str| -> Result<Option<i64>, String> {
        match obj.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => text(v)
                .trim()
                .parse::<i64>()
                .map(Some)
                .map_err(|_| format!("{k} is not a number")),
        }
    };
    let bool_of = |k: &str| obj.get(k).and_then(Value::as_bool);
    let id: ApplicationId = str_of("application-id")
        .ok_or("application-id is missing")?
        .parse()
        .map_err(|_| "application-id is not an application id".to_string())?;
    for unsupported in ["local-resources", "credentials"] {
        let given = obj
            .get("am-container-spec")
            .and_then(|s| s.get(unsupported))
            .is_some_and(|r| !entries(Some(r), "entry").is_empty());
        if given {
            return Err(format!(
                "{unsupported} in REST submissions are not supported by Spindle yet"
            ));
        }
    }
    let spec = obj.get("am-container-spec");
    let commands = entries(
        spec.and_then(|s| s.get("commands")).map(|c| c as &Value),
        "command",
    )
    .into_iter()
    .map(text)
    .collect();
    let environment = entries(spec.and_then(|s| s.get("environment")), "entry")
        .into_iter()
        .map(|e| pb::StringStringMapProto {
            key: e.get("key").map(text),
            value: e.get("value").map(text),
        })
        .collect();
    let resource = match obj.get("resource") {
        Some(r) if !r.is_null() => Some(pb::ResourceProto {
            memory: r.get("memory").and_then(|m| text(m).parse().ok()),
            virtual_cores: r.get("vCores").and_then(|c| text(c).parse().ok()),
            resource_value_map: Vec::new(),
        }),
        _ => None,
    };
    let unmanaged = bool_of("unmanaged-AM").unwrap_or(false);
    let max_attempts = int_of("max-app-attempts")?
        .map(|n| i32::try_from(n).map_err(|_| "max-app-attempts is too large".to_string()))
        .transpose()?;
    let priority = int_of("priority")?
        .map(|n| i32::try_from(n).map_err(|_| "priority is too large".to_string()))
        .transpose()?;
    Ok(pb::ApplicationSubmissionContextProto {
        application_id: Some(pb::ApplicationIdProto {
            id: Some(id.id),
            cluster_timestamp: Some(id.cluster_timestamp),
        }),
        application_name: str_of("application-name"),
        queue: str_of("queue"),
        priority: priority.map(|p| pb::PriorityProto { priority: Some(p) }),
        am_container_spec: (!unmanaged || spec.is_some()).then(|| {
            pb::ContainerLaunchContextProto {
                command: commands,
                environment,
                ..Default::default()
            }
        }),
        unmanaged_am: Some(unmanaged),
        max_app_attempts: max_attempts,
        resource,
        application_type: str_of("application-type"),
        keep_containers_across_application_attempts: bool_of(
            "keep-containers-across-application-attempts",
        ),
        application_tags: entries(obj.get("application-tags"), "tag")
            .into_iter()
            .map(text)
            .collect(),
        ..Default::default()
    })
}

async fn submit_application(
    State(web): State<WebContext>,
    RawQuery(query): RawQuery,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    submit_inner(web, query, uri, headers, body)
        .await
        .unwrap_or_else(|r| *r)
}

async fn submit_inner(
    web: WebContext,
    query: Option<String>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> WebResult {
    let bad = |m: String| fail(WebError::bad_request(m), &headers);
    let value: Value = serde_json::from_slice(&body)
        .map_err(|e| bad(format!("The request body is not valid JSON: {e}")))?;
    let user = require_user(&web, query.as_deref(), &headers)?;
    let enabled = web
        .conf
        .get_trimmed("yarn.webapp.enable-rest-app-submissions")
        .is_none_or(|v| !v.eq_ignore_ascii_case("false"));
    if !enabled {
        return Err(fail(
            WebError::forbidden("REST app submissions are disabled."),
            &headers,
        ));
    }
    let mut asc = submission_context(&value).map_err(bad)?;
    let rm = web.rm();
    let submission = crate::model::convert::submission_from_pb(&asc, rm.min_allocation)
        .map_err(|e| bad(e.message))?;
    let id = submission.id;
    let launch = crate::model::convert::launch_context_from_pb(
        asc.am_container_spec.take().unwrap_or_default(),
    );
    let groups = rm.groups.groups(&user).await;
    let submit = SubmitApplication {
        submission,
        launch,
        user,
        groups,
    };
    match rm.core.call(submit).await {
        Ok(Ok(_)) => {
            let mut resp = StatusCode::ACCEPTED.into_response();
            // Hadoop's `getRequestURL() + "/" + id`.
            let host = headers
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .map(str::to_string)
                .unwrap_or_else(|| web.bound.to_string());
            let url = format!("http://{host}{}/{id}", uri.path());
            if let Ok(v) = HeaderValue::from_str(&url) {
                resp.headers_mut().insert(header::LOCATION, v);
            }
            Ok(resp)
        }
        Ok(Err(refusal)) => Err(bad(crate::model::convert::refusal_to_rpc(refusal).message)),
        Err(e) => Err(fail(WebError::unavailable(e.to_string()), &headers)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_in_json_and_xml() {
        let mut h = HeaderMap::new();
        assert_eq!(
            body_field(&h, br#"{"state":"KILLED"}"#, "state")
                .ok()
                .flatten()
                .as_deref(),
            Some("KILLED")
        );
        assert_eq!(
            body_field(&h, br#"{"priority":3}"#, "priority")
                .ok()
                .flatten()
                .as_deref(),
            Some("3")
        );
        assert!(body_field(&h, b"{not json", "state").is_err());
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/xml"),
        );
        assert_eq!(
            body_field(&h, b"<appstate><state>KILLED</state></appstate>", "state")
                .ok()
                .flatten()
                .as_deref(),
            Some("KILLED")
        );
        assert!(body_field(&h, b"<appstate>", "state").is_err());
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        let refused = body_field(&h, b"KILLED", "state").err().map(|r| r.status());
        assert_eq!(refused, Some(StatusCode::UNSUPPORTED_MEDIA_TYPE));
    }
}
