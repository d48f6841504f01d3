//! Hadoop's error replies: what `GenericExceptionHandler` writes for an
//! exception a web service throws, `{"RemoteException": {"exception",
//! "message", "javaClassName"}}` (or the same as XML).

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::render::{respond, Format};

/// A failed web request, as Hadoop reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebError {
    pub status: StatusCode,
    /// The Java class of the exception, fully qualified.
    pub java_class: &'static str,
    pub message: String,
    /// The representation the client asked for.
    pub format: Format,
}

impl WebError {
    pub fn new(status: StatusCode, java_class: &'static str, message: impl Into<String>) -> Self {
        WebError {
            status,
            java_class,
            message: message.into(),
            format: Format::Json,
        }
    }

    /// 404 `NotFoundException` (Hadoop's webapp one).
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "org.apache.hadoop.yarn.webapp.NotFoundException",
            message,
        )
    }

    /// 400 `BadRequestException`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "org.apache.hadoop.yarn.webapp.BadRequestException",
            message,
        )
    }

    /// 403 `ForbiddenException`.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::FORBIDDEN,
            "org.apache.hadoop.yarn.webapp.ForbiddenException",
            message,
        )
    }

    /// 401 `AuthorizationException`, for a request without a user where
    /// one is needed.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "org.apache.hadoop.security.authorize.AuthorizationException",
            message,
        )
    }

    /// 503 for a daemon that cannot answer now (a standby RM, a stopping one).
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "org.apache.hadoop.ipc.StandbyException",
            message,
        )
    }

    /// The same error in the representation `headers` ask for.
    pub fn for_request(mut self, headers: &HeaderMap) -> Self {
        self.format = Format::of(headers);
        self
    }

    /// The simple class name, Hadoop's `exception` field.
    pub fn exception(&self) -> &'static str {
        self.java_class
            .rsplit('.')
            .next()
            .unwrap_or(self.java_class)
    }
}

impl std::fmt::Display for WebError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.status, self.exception(), self.message)
    }
}

impl std::error::Error for WebError {}

impl IntoResponse for WebError {
    fn into_response(self) -> Response {
        let body = json!({"RemoteException": {
            "exception": self.exception(),
            "message": self.message,
            "javaClassName": self.java_class,
        }});
        respond(self.status, self.format, &body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_simple_class() {
        let e = WebError::not_found("app with id: application_1_0001 not found");
        assert_eq!(e.exception(), "NotFoundException");
        assert_eq!(e.status, StatusCode::NOT_FOUND);
    }
}
