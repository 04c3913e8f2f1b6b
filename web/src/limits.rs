//! The deadline every listener wears: a request (its body upload included) that takes longer than
//! the deadline is answered `408` in its service's own format and its handler is dropped.
//!
//! The other limits live where they belong: request bodies are capped per service
//! (`DefaultBodyLimit`, the sign-up body reader), header reading and idle keep-alive are bounded
//! by the connection loop in `agora::serve`, and `/cable` caps frame size, queued frames and
//! commands per socket.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse as _, Response};
use http::{HeaderValue, StatusCode, header};

use crate::problem::Problem;

/// Builds the answer to a request that ran out of time, given its path.
pub type OnTimeout = Arc<dyn Fn(&str) -> Response + Send + Sync>;

/// Wraps `router` so that every request ends within `deadline`.
pub fn with_deadline(router: Router, deadline: Duration, on_timeout: OnTimeout) -> Router {
    router.layer(axum::middleware::from_fn(move |req: Request, next: Next| {
        let on_timeout = on_timeout.clone();
        async move {
            let path = req.uri().path().to_owned();
            match tokio::time::timeout(deadline, next.run(req)).await {
                Ok(res) => res,
                Err(_) => {
                    // Not the path: it can carry an invite code or a ticket.
                    tracing::info!("request timed out");
                    let mut res = on_timeout(&path);
                    res.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
                    res
                }
            }
        }
    }))
}

const DETAIL: &str = "The request was not received and answered in time.";

/// The chat service's `{error, message}` answer.
pub fn chat_timeout() -> OnTimeout {
    Arc::new(|_| {
        let mut res = crate::chat::ApiError::new(crate::chat::ErrorCode::BadRequest, DETAIL).into_response();
        *res.status_mut() = StatusCode::REQUEST_TIMEOUT;
        res
    })
}

/// The RFC 9457 problem of the statistics and sign-up services.
pub fn problem_timeout(base_url: String) -> OnTimeout {
    Arc::new(move |path| {
        Problem::new(
            &base_url,
            StatusCode::REQUEST_TIMEOUT,
            "request_timeout",
            "Request timeout",
            DETAIL,
            "Send the whole request at once, then wait for the answer.",
            path,
        )
        .into_response()
    })
}

/// The pages site's HTML answer.
pub fn page_timeout() -> OnTimeout {
    Arc::new(|_| {
        let html = "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Request timeout</title></head><body><h1>Request timeout</h1><p>The request was not received and answered in time.</p></body></html>";
        let mut res = (StatusCode::REQUEST_TIMEOUT, html).into_response();
        res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
        res
    })
}
