//! The public pages site: Markdown content built into the binary, served as HTML or Markdown.

use axum::Router;
use axum::response::{Html, IntoResponse, Response};
use http::StatusCode;

#[derive(Clone)]
pub struct PagesState {
    pub base_url: String,
}

/// The pages site's router.
pub fn router(state: PagesState) -> Router {
    Router::new().fallback(not_found).with_state(state).layer(crate::trace::layer("pages"))
}

async fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        Html("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Page not found</title></head><body><main><h1>Page not found</h1><p>There is no page at this address. <a href=\"/\">Go to the homepage</a>.</p></main></body></html>"),
    )
        .into_response()
}
