//! The chat API's error format: `{error, message}`, plus `reason` and `field` where they help.

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde::Serialize;

/// The stable error codes of chat.md, each with its status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    BadRequest,
    Unauthorized,
    Forbidden,
    NotFound,
    Conflict,
    PayloadTooLarge,
    Unprocessable,
    RateLimited,
    ServerError,
}

impl ErrorCode {
    pub fn status(self) -> StatusCode {
        match self {
            ErrorCode::BadRequest => StatusCode::BAD_REQUEST,
            ErrorCode::Unauthorized => StatusCode::UNAUTHORIZED,
            ErrorCode::Forbidden => StatusCode::FORBIDDEN,
            ErrorCode::NotFound => StatusCode::NOT_FOUND,
            ErrorCode::Conflict => StatusCode::CONFLICT,
            ErrorCode::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::Unprocessable => StatusCode::UNPROCESSABLE_ENTITY,
            ErrorCode::RateLimited => StatusCode::TOO_MANY_REQUESTS,
            ErrorCode::ServerError => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

/// An error answer of the chat API. Its message is written for the client and never carries
/// internal details; the cause of a `server_error` goes to the log only.
#[derive(Debug, Clone, Serialize)]
pub struct ApiError {
    pub error: ErrorCode,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// Seconds, for `rate_limited`.
    #[serde(skip)]
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(error: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError { error, message: message.into(), reason: None, field: None, retry_after: None }
    }

    pub fn reason(mut self, reason: &str) -> ApiError {
        self.reason = Some(reason.to_owned());
        self
    }

    pub fn field(mut self, field: &str) -> ApiError {
        self.field = Some(field.to_owned());
        self
    }

    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::BadRequest, message)
    }

    pub fn unauthorized() -> ApiError {
        ApiError::new(
            ErrorCode::Unauthorized,
            "A valid credential is required: send Authorization: Bearer <token>.",
        )
    }

    pub fn forbidden(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::Forbidden, message)
    }

    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::NotFound, message)
    }

    /// `404` for something the caller cannot see: worded the same whether it does not exist or
    /// the caller may not know it exists.
    pub fn no_such(what: &str) -> ApiError {
        ApiError::not_found(format!("No such {what}, or you cannot see it."))
    }

    pub fn unprocessable(field: &str, reason: &str, message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::Unprocessable, message).reason(reason).field(field)
    }

    pub fn rate_limited(retry_after_secs: u64) -> ApiError {
        let mut e = ApiError::new(
            ErrorCode::RateLimited,
            format!("Too many requests; try again in {retry_after_secs} seconds."),
        );
        e.retry_after = Some(retry_after_secs);
        e
    }

    /// A fault on our side. `cause` is logged, never sent.
    pub fn internal(cause: &dyn std::fmt::Display) -> ApiError {
        tracing::error!(error = %cause, "server error");
        ApiError::new(ErrorCode::ServerError, "Something went wrong on our side; try again shortly.")
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.error.status();
        let retry_after = self.retry_after;
        let mut res = (status, axum::Json(self)).into_response();
        if let Some(secs) = retry_after {
            res.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        res
    }
}

impl From<agora_actors::chat::ChatError> for ApiError {
    fn from(e: agora_actors::chat::ChatError) -> ApiError {
        use agora_actors::chat::ChatError;
        match e {
            ChatError::NotFound(what) => {
                ApiError::not_found(format!("No such {what}, or you cannot see it."))
            }
            ChatError::Forbidden(m) => ApiError::forbidden(m),
            ChatError::Conflict(m) => ApiError::new(ErrorCode::Conflict, m),
            ChatError::Invalid { field, reason, message } => ApiError::unprocessable(field, reason, message),
            ChatError::Unavailable(m) => ApiError::internal(&m),
            ChatError::Storage(e) => ApiError::from(e),
        }
    }
}

impl From<agora_storage::StorageError> for ApiError {
    fn from(e: agora_storage::StorageError) -> ApiError {
        match e {
            agora_storage::StorageError::Conflict(what) => {
                ApiError::new(ErrorCode::Conflict, format!("{what} already exists."))
            }
            other => ApiError::internal(&other),
        }
    }
}
