//! One span per request, carrying the method, the matched route template, the status and the
//! latency. `RUST_LOG` filters it like any other span (target `agora::http`).

use std::time::Duration;

use axum::body::Body;
use axum::extract::MatchedPath;
use http::{Request, Response};
use tower_http::classify::{ServerErrorsAsFailures, SharedClassifier};
use tower_http::trace::TraceLayer;
use tracing::Span;

/// The tracing layer every service's router wears. `service` names the listener in each span.
#[allow(clippy::type_complexity)]
pub fn layer(
    service: &'static str,
) -> TraceLayer<
    SharedClassifier<ServerErrorsAsFailures>,
    impl Fn(&Request<Body>) -> Span + Clone,
    (),
    impl Fn(&Response<Body>, Duration, &Span) + Clone,
> {
    TraceLayer::new_for_http()
        .make_span_with(move |req: &Request<Body>| {
            // The template (`/channels/{channel_id}/messages`), never the raw path: paths can carry
            // ids and tickets, and templates keep the number of distinct span names small.
            let path = req
                .extensions()
                .get::<MatchedPath>()
                .map_or("<unmatched>", MatchedPath::as_str);
            tracing::info_span!(
                target: "agora::http",
                "request",
                service,
                method = %req.method(),
                path,
                status = tracing::field::Empty,
                latency_ms = tracing::field::Empty,
            )
        })
        .on_request(())
        .on_response(|res: &Response<Body>, latency: Duration, span: &Span| {
            span.record("status", res.status().as_u16());
            span.record("latency_ms", latency.as_secs_f64() * 1000.0);
            tracing::info!(target: "agora::http", status = res.status().as_u16(), latency_ms = latency.as_secs_f64() * 1000.0, "answered");
        })
}
