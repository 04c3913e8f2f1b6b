//! RFC 9457 problem documents, the error format of the sign-up and statistics services.
//!
//! Every problem carries the fields signup.md lists: `type`, `title`, `status`, `detail`,
//! `instance`, `code`, `resolution`, `docs`, and `error`/`message` repeating `code`/`detail` for
//! older clients. It is always `application/problem+json`, whatever `Accept` says.

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct Problem {
    #[serde(rename = "type")]
    pub type_url: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    pub instance: String,
    pub code: String,
    pub resolution: String,
    pub docs: String,
    pub error: String,
    pub message: String,
    /// Extra headers (`Retry-After`, `Allow`) sent with the problem.
    #[serde(skip)]
    pub headers: Vec<(header::HeaderName, HeaderValue)>,
}

impl Problem {
    /// A problem whose `type` and `docs` point into `{base_url}/developers`.
    pub fn new(
        base_url: &str,
        status: StatusCode,
        code: &str,
        title: &str,
        detail: impl Into<String>,
        resolution: &str,
        instance: &str,
    ) -> Problem {
        let base = base_url.trim_end_matches('/');
        let detail = detail.into();
        Problem {
            type_url: format!("{base}/developers#error-{code}"),
            title: title.to_owned(),
            status: status.as_u16(),
            detail: detail.clone(),
            instance: instance.to_owned(),
            code: code.to_owned(),
            resolution: resolution.to_owned(),
            docs: format!("{base}/developers#errors"),
            error: code.to_owned(),
            message: detail,
            headers: Vec::new(),
        }
    }

    pub fn not_found(base_url: &str, instance: &str) -> Problem {
        Problem::new(
            base_url,
            StatusCode::NOT_FOUND,
            "not_found",
            "Not found",
            format!("There is no endpoint at {instance}."),
            "Use the published description at /openapi.json.",
            instance,
        )
    }

    pub fn with_header(mut self, name: header::HeaderName, value: HeaderValue) -> Problem {
        self.headers.push((name, value));
        self
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = serde_json::to_vec(&self).unwrap_or_default();
        let mut res = (status, body).into_response();
        res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/problem+json"));
        for (name, value) in self.headers {
            res.headers_mut().insert(name, value);
        }
        res
    }
}
