//! The web client: plain HTML, CSS and ES modules from `web/app/`, built into the binary and
//! served under `/app/` (`/` and `/app` redirect there). No build step and no framework.
//!
//! Every answer carries a strict Content-Security-Policy (scripts and styles from this origin
//! only, no inline code, sockets to this service), `Referrer-Policy: no-referrer` (a sign-in or
//! invitation code in the address must not leak), and an `ETag` with `Cache-Control: no-cache`:
//! a browser keeps the files but asks each time, so a new binary is picked up at once.

use std::sync::LazyLock;

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use sha2::{Digest, Sha256};

use super::ChatState;
use super::error::{ApiError, ErrorCode};

/// One embedded file: its path under `/app/`, content type and bytes.
struct Asset {
    path: &'static str,
    content_type: &'static str,
    body: &'static str,
}

macro_rules! asset {
    ($path:literal, $type:expr) => {
        Asset { path: $path, content_type: $type, body: include_str!(concat!("../../app/", $path)) }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

const ASSETS: &[Asset] = &[
    asset!("index.html", "text/html; charset=utf-8"),
    asset!("app.css", "text/css; charset=utf-8"),
    asset!("favicon.svg", "image/svg+xml"),
    asset!("js/app.js", JS),
    asset!("js/api.js", JS),
    asset!("js/cable.js", JS),
    asset!("js/dom.js", JS),
    asset!("js/messages.js", JS),
    asset!("js/views/channel.js", JS),
    asset!("js/views/results.js", JS),
    asset!("js/views/staff.js", JS),
];

/// The ETag of every asset, computed once.
static ETAGS: LazyLock<Vec<String>> = LazyLock::new(|| {
    ASSETS.iter().map(|a| format!("\"{}\"", &hex::encode(Sha256::digest(a.body.as_bytes()))[..32])).collect()
});

/// `/` and `/app`: the client lives under `/app/`.
pub async fn redirect_to_app() -> Redirect {
    Redirect::to("/app/")
}

/// # `GET /app/`
pub async fn app_index(State(state): State<ChatState>, headers: HeaderMap) -> Response {
    serve(&state, &headers, "index.html")
}

/// # `GET /app/{*path}`
pub async fn app_file(
    State(state): State<ChatState>,
    headers: HeaderMap,
    Path(path): Path<String>,
) -> Response {
    serve(&state, &headers, &path)
}

fn serve(state: &ChatState, headers: &HeaderMap, path: &str) -> Response {
    let Some(i) = ASSETS.iter().position(|a| a.path == path) else {
        return ApiError::new(ErrorCode::NotFound, format!("There is no file /app/{path}.")).into_response();
    };
    let asset = &ASSETS[i];
    let etag = &ETAGS[i];
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag));
    let mut res = if fresh { StatusCode::NOT_MODIFIED.into_response() } else { asset.body.into_response() };
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(asset.content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(v) = HeaderValue::from_str(etag) {
        h.insert(header::ETAG, v);
    }
    if let Ok(v) = HeaderValue::from_str(&content_security_policy(&state.base_url)) {
        h.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    res
}

/// Scripts, styles and images from this origin only, no inline code; requests and sockets to
/// this service.
fn content_security_policy(base_url: &str) -> String {
    format!(
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
         connect-src 'self' {}; manifest-src 'self'; base-uri 'none'; form-action 'none'; \
         frame-ancestors 'none'",
        super::cable::ws_base(base_url)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_asset_is_embedded_once_and_not_empty() {
        for (i, a) in ASSETS.iter().enumerate() {
            assert!(!a.body.trim().is_empty(), "{} is empty", a.path);
            assert!(ASSETS.iter().skip(i + 1).all(|b| b.path != a.path), "{} twice", a.path);
        }
        assert_eq!(ETAGS.len(), ASSETS.len());
    }

    #[test]
    fn the_policy_allows_this_service_socket_and_nothing_inline() {
        let csp = content_security_policy("https://chat.example.org");
        assert!(csp.contains("connect-src 'self' wss://chat.example.org;"));
        assert!(!csp.contains("unsafe-inline"));
    }
}
