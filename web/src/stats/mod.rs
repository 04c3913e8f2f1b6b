//! The statistics service: tracked sites, their metrics, snapshots, series and the fetch log.
//!
//! Reads need no credential; the admin operations need `Authorization: Bearer <token>` (the
//! configured `AGORA_STATS_ADMIN_TOKEN`, or one made by `agora admin stats-token`). Every error is
//! an RFC 9457 problem. Handlers parse (see [`params`]), call the fetcher supervisor or a storage
//! read, and shape the answer.

pub mod openapi;
pub mod params;

use std::collections::BTreeMap;

use agora_actors::stats::{Fetchers, StatsError};
use agora_storage::stats::{FetchEntry, MetricName, Site};
use agora_storage::time::{Clock, rfc3339};
use agora_storage::{StorageError, Store};
use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, OriginalUri, Path, RawQuery, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, patch, post};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::{Value, json};

use crate::problem::Problem;
use params::{BadRequest, Query};

#[derive(Clone)]
pub struct StatsState {
    pub store: Store,
    pub base_url: String,
    pub admin_token: Option<String>,
    /// The fetcher supervisor: every change to a site goes through it.
    pub fetchers: Fetchers,
    /// The time source (`now` of `last=` windows and sparklines).
    pub clock: Clock,
}

/// The largest request body accepted (a site is a few hundred bytes).
const MAX_BODY: usize = 64 * 1024;

/// The statistics service's router.
pub fn router(state: StatsState) -> Router {
    Router::new()
        .route("/", get(get_description))
        .route("/v1", get(get_description))
        .route("/up", get(up))
        .route("/openapi.json", get(get_openapi))
        .route("/v1/sites", get(list_sites).post(create_site))
        .route("/v1/sites/{slug}", patch(update_site).delete(delete_site))
        .route("/v1/sites/{slug}/fetch", post(fetch_site))
        .route("/v1/snapshot", get(get_snapshot))
        .route("/v1/series", get(get_series))
        .route("/v1/fetches", get(list_fetches))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(state)
        .layer(crate::trace::layer("stats"))
}

/// An error of a statistics handler, shaped into a problem with the request's path.
struct Failure(BadRequest);

impl From<BadRequest> for Failure {
    fn from(b: BadRequest) -> Failure {
        Failure(b)
    }
}

impl From<StorageError> for Failure {
    fn from(e: StorageError) -> Failure {
        tracing::error!(error = %e, "statistics storage error");
        Failure(BadRequest {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            code: "server_error",
            title: "Server error",
            detail: "the statistics service could not complete the request; try again".into(),
        })
    }
}

impl From<StatsError> for Failure {
    fn from(e: StatsError) -> Failure {
        let (status, code, title) = match &e {
            StatsError::NotFound(_) => (StatusCode::NOT_FOUND, "site_not_found", "No such site"),
            StatsError::Conflict(_) => (StatusCode::CONFLICT, "site_exists", "The site exists already"),
            StatsError::Disabled(_) => (StatusCode::CONFLICT, "site_disabled", "The site is disabled"),
            StatsError::Unavailable(_) => {
                (StatusCode::SERVICE_UNAVAILABLE, "unavailable", "Service unavailable")
            }
            StatsError::Storage(_) => return Failure::from(StorageError::Corrupt(e.to_string())),
        };
        Failure(BadRequest { status, code, title, detail: e.to_string() })
    }
}

fn resolution(code: &str) -> &'static str {
    match code {
        "unauthorized" => "Send Authorization: Bearer <token> with the statistics admin token.",
        "site_not_found" => "List the sites with GET /v1/sites.",
        "site_exists" => "Choose another slug, or change the site with PATCH /v1/sites/{slug}.",
        "site_disabled" => "Enable the site with PATCH /v1/sites/{slug} {\"enabled\": true}.",
        "server_error" | "unavailable" => "Try again shortly.",
        _ => "Fix the request as the detail says; the parameters are described at /openapi.json.",
    }
}

/// The body of an admin write, or the problem for one over the limit (`413`) or unreadable.
fn read_body(body: Result<Bytes, axum::extract::rejection::BytesRejection>) -> Result<Bytes, Failure> {
    body.map_err(|rejection| {
        let too_large = rejection.status() == StatusCode::PAYLOAD_TOO_LARGE;
        Failure(BadRequest {
            status: if too_large { StatusCode::PAYLOAD_TOO_LARGE } else { StatusCode::BAD_REQUEST },
            code: if too_large { "payload_too_large" } else { "bad_request" },
            title: if too_large { "Payload too large" } else { "Bad request" },
            detail: if too_large {
                format!("The request body is larger than {} KiB.", MAX_BODY / 1024)
            } else {
                "The request body could not be read.".into()
            },
        })
    })
}

/// Runs a handler body and shapes its failure into a problem for `uri`.
fn answer(state: &StatsState, uri: &http::Uri, result: Result<Response, Failure>) -> Response {
    match result {
        Ok(r) => r,
        Err(Failure(b)) => {
            let mut p = Problem::new(
                &state.base_url,
                b.status,
                b.code,
                b.title,
                b.detail,
                resolution(b.code),
                uri.path(),
            );
            if b.status == StatusCode::UNAUTHORIZED {
                p = p.with_header(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            p.into_response()
        }
    }
}

/// Checks the admin bearer token; `401` when it is missing or wrong.
async fn require_admin(state: &StatsState, headers: &HeaderMap) -> Result<(), Failure> {
    let unauthorized = |detail: &str| {
        Failure(BadRequest {
            status: StatusCode::UNAUTHORIZED,
            code: "unauthorized",
            title: "Admin token required",
            detail: detail.to_owned(),
        })
    };
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(str::trim)
        .filter(|t| !t.is_empty());
    let Some(token) = token else {
        return Err(unauthorized("this is an admin operation: send Authorization: Bearer <admin token>"));
    };
    if state.store.is_stats_admin(token, state.admin_token.as_deref()).await? {
        Ok(())
    } else {
        Err(unauthorized("the bearer token is not a statistics admin token"))
    }
}

fn time(ms: Option<i64>) -> Value {
    ms.map_or(Value::Null, |ms| Value::String(rfc3339(ms)))
}

fn site_json(s: &Site) -> Value {
    json!({
        "slug": s.slug,
        "name": s.name,
        "url": s.url,
        "enabled": s.enabled,
        "interval": s.interval,
        "timeout": s.timeout,
        "metrics": s.metrics,
        "created_at": rfc3339(s.created_at),
        "updated_at": rfc3339(s.updated_at),
        "as_of": time(s.as_of),
        "checked_at": time(s.checked_at),
        "last_fetch": s.last_fetch.as_ref().map(|l| json!({
            "id": l.id, "started_at": rfc3339(l.started_at), "ok": l.ok, "http_status": l.http_status, "error": l.error,
        })),
    })
}

fn fetch_json(f: &FetchEntry) -> Value {
    json!({
        "id": f.id,
        "site": f.site,
        "started_at": rfc3339(f.started_at),
        "duration_ms": f.duration_ms,
        "ok": f.ok,
        "http_status": f.http_status,
        "error": f.error,
        "metrics_seen": f.metrics_seen,
        "points_written": f.points_written,
    })
}

/// What `GET /` and `GET /v1` say about the service.
pub fn description() -> Value {
    let endpoints: BTreeMap<&str, &str> = [
        ("GET /", "this description"),
        ("GET /v1", "this description"),
        ("GET /up", "health check; answers ok"),
        ("GET /openapi.json", "the OpenAPI 3.1 description of this service"),
        ("GET /v1/sites", "every site, enabled or not, with its freshness and last fetch"),
        ("GET /v1/snapshot", "the latest value of every metric of every enabled site; spark=90d (0 omits, at most 400d) adds one value per UTC day"),
        ("GET /v1/series", "one site's metrics over time: site, metrics, last or from/to, every, agg (avg|sum|min|max|first|last|count), fill (null|none|zero|previous|linear)"),
        ("GET /v1/fetches", "the fetch log, newest first: site, last (a count, default 50, at most 1000)"),
        ("POST /v1/sites", "admin: create a site {slug, name, url, enabled?, interval?, timeout?, metrics?}"),
        ("PATCH /v1/sites/{slug}", "admin: change a site's name, url, enabled, interval, timeout or metrics"),
        ("DELETE /v1/sites/{slug}?confirm={slug}", "admin: delete a site with all its points and fetch log"),
        ("POST /v1/sites/{slug}/fetch", "admin: fetch the site now; answers the fetch-log entry"),
    ]
    .into_iter()
    .collect();
    json!({
        "name": "stats",
        "endpoints": endpoints,
        "freshness": "as_of is when the tracked site computed a number (the fetch time when the site does not say); checked_at is the last time a fetch confirmed the site still reports it. A new point is stored only when a value or its as_of changes.",
    })
}

/// # `GET /` and `GET /v1`
/// The description document: `{name, endpoints, freshness}`.
async fn get_description() -> Json<Value> {
    Json(description())
}

/// # `GET /up`
/// Health check: `ok` while the service answers.
async fn up() -> &'static str {
    "ok"
}

/// # `GET /openapi.json`
/// The OpenAPI 3.1 description of the statistics service.
async fn get_openapi(State(state): State<StatsState>) -> Json<Value> {
    Json(openapi::document(&state.base_url))
}

/// # `GET /v1/sites`
/// Every site, enabled or not, by slug: `{sites: [site]}`.
async fn list_sites(
    State(state): State<StatsState>,
    OriginalUri(uri): OriginalUri,
    RawQuery(raw): RawQuery,
) -> Response {
    let result: Result<Response, Failure> = async {
        Query::parse(raw.as_deref(), &[])?;
        let sites = state.store.sites().await?;
        Ok(Json(json!({ "sites": sites.iter().map(site_json).collect::<Vec<_>>() })).into_response())
    }
    .await;
    answer(&state, &uri, result)
}

/// # `POST /v1/sites`
/// Admin: creates a site and, when enabled, starts fetching it. `201` with the site.
async fn create_site(
    State(state): State<StatsState>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Response {
    let result: Result<Response, Failure> = async {
        require_admin(&state, &headers).await?;
        let body = read_body(body)?;
        let new = params::new_site(&body)?;
        let site = state.fetchers.create(new).await?;
        let location = format!("/v1/sites/{}", site.slug);
        let mut res = (StatusCode::CREATED, Json(site_json(&site))).into_response();
        if let Ok(v) = HeaderValue::from_str(&location) {
            res.headers_mut().insert(header::LOCATION, v);
        }
        Ok(res)
    }
    .await;
    answer(&state, &uri, result)
}

/// # `PATCH /v1/sites/{slug}`
/// Admin: changes a site; its fetcher restarts with the new settings, or stops when disabled.
async fn update_site(
    State(state): State<StatsState>,
    OriginalUri(uri): OriginalUri,
    Path(slug): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Response {
    let result: Result<Response, Failure> = async {
        require_admin(&state, &headers).await?;
        let body = read_body(body)?;
        let slug = params::slug(&slug).map_err(|_| StatsError::NotFound(slug.clone()))?;
        let patch = params::site_patch(&body)?;
        let site = state.fetchers.update(slug, patch).await?;
        Ok(Json(site_json(&site)).into_response())
    }
    .await;
    answer(&state, &uri, result)
}

/// # `DELETE /v1/sites/{slug}?confirm={slug}`
/// Admin: stops the site's fetcher and deletes the site with its metrics, points and fetch log.
/// `204`; `400` without a matching `confirm`; `404` for an unknown slug.
async fn delete_site(
    State(state): State<StatsState>,
    OriginalUri(uri): OriginalUri,
    Path(slug): Path<String>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
) -> Response {
    let result: Result<Response, Failure> = async {
        require_admin(&state, &headers).await?;
        let q = Query::parse(raw.as_deref(), &["confirm"])?;
        if q.get("confirm") != Some(slug.as_str()) {
            return Err(BadRequest::param(
                "confirm_required",
                format!("deleting removes the site with all its data: repeat its slug as ?confirm={slug}"),
            )
            .into());
        }
        let parsed = params::slug(&slug).map_err(|_| StatsError::NotFound(slug.clone()))?;
        if state.fetchers.delete(parsed).await? {
            Ok(StatusCode::NO_CONTENT.into_response())
        } else {
            Err(StatsError::NotFound(slug.clone()).into())
        }
    }
    .await;
    answer(&state, &uri, result)
}

/// # `POST /v1/sites/{slug}/fetch`
/// Admin: fetches the site now and answers `200` with the fetch-log entry (a failed fetch is still
/// a `200`: its entry says why). `409` when the site is disabled.
async fn fetch_site(
    State(state): State<StatsState>,
    OriginalUri(uri): OriginalUri,
    Path(slug): Path<String>,
    headers: HeaderMap,
) -> Response {
    let result: Result<Response, Failure> = async {
        require_admin(&state, &headers).await?;
        let parsed = params::slug(&slug).map_err(|_| StatsError::NotFound(slug.clone()))?;
        let entry = state.fetchers.fetch_now(parsed).await?;
        Ok(Json(fetch_json(&entry)).into_response())
    }
    .await;
    answer(&state, &uri, result)
}

/// # `GET /v1/snapshot`
/// Every enabled site with each metric's latest value, freshness and daily sparkline.
async fn get_snapshot(
    State(state): State<StatsState>,
    OriginalUri(uri): OriginalUri,
    RawQuery(raw): RawQuery,
) -> Response {
    let result: Result<Response, Failure> = async {
        let q = Query::parse(raw.as_deref(), &["spark"])?;
        let days = params::spark(&q)?;
        let now = state.clock.now_ms();
        let mut sites = Vec::new();
        for site in state.store.sites().await?.into_iter().filter(|s| s.enabled) {
            let slug = params::slug(&site.slug)?;
            let mut metrics = serde_json::Map::new();
            for m in state.store.metric_states(&slug).await? {
                let mut entry = json!({
                    "value": m.value, "as_of": rfc3339(m.as_of), "checked_at": rfc3339(m.checked_at),
                });
                if days.days() > 0 {
                    entry["spark"] = json!(state.store.spark(&slug, &m.name, now, days).await?);
                }
                metrics.insert(m.name, entry);
            }
            sites.push(json!({
                "slug": site.slug, "name": site.name, "as_of": time(site.as_of), "checked_at": time(site.checked_at),
                "metrics": metrics,
            }));
        }
        Ok(Json(json!({ "generated_at": rfc3339(now), "sites": sites })).into_response())
    }
    .await;
    answer(&state, &uri, result)
}

/// # `GET /v1/series`
/// One site's metrics in epoch-aligned buckets:
/// `{site, from, to, every, agg, fill, series: [{metric, points: [{t, v}]}]}`.
async fn get_series(
    State(state): State<StatsState>,
    OriginalUri(uri): OriginalUri,
    RawQuery(raw): RawQuery,
) -> Response {
    let result: Result<Response, Failure> = async {
        let q =
            Query::parse(raw.as_deref(), &["site", "metrics", "last", "from", "to", "every", "agg", "fill"])?;
        let req = params::series(&q, state.clock.now_ms())?;
        // The bucket count is checked before anything is read.
        agora_storage::series::Bucketer::new(req.window, &req.every).map_err(BadRequest::from)?;
        if state.store.site(&req.site).await?.is_none() {
            return Err(StatsError::NotFound(req.site.to_string()).into());
        }
        let known: Vec<MetricName> = state
            .store
            .metric_states(&req.site)
            .await?
            .into_iter()
            .filter_map(|m| MetricName::parse(&m.name).ok())
            .collect();
        let metrics = match &req.metrics {
            None => known.clone(),
            Some(asked) => {
                if let Some(unknown) = asked.iter().find(|m| !known.contains(m)) {
                    let names: Vec<&str> = known.iter().map(MetricName::as_str).collect();
                    return Err(BadRequest::param(
                        "unknown_metric",
                        format!(
                            "the site {} has no metric {:?}; it has: {}",
                            req.site,
                            unknown.as_str(),
                            names.join(", ")
                        ),
                    )
                    .into());
                }
                asked.clone()
            }
        };
        let mut series = Vec::with_capacity(metrics.len());
        for m in &metrics {
            let points = state
                .store
                .series(&req.site, m, req.window, &req.every, req.agg, req.fill)
                .await
                .map_err(|e| match e {
                    agora_storage::stats::SeriesQueryError::Series(e) => Failure::from(BadRequest::from(e)),
                    agora_storage::stats::SeriesQueryError::Storage(e) => Failure::from(e),
                })?;
            let points: Vec<Value> =
                points.into_iter().map(|(t, v)| json!({ "t": rfc3339(t), "v": v })).collect();
            series.push(json!({ "metric": m.as_str(), "points": points }));
        }
        Ok(Json(json!({
            "site": req.site.as_str(),
            "from": req.shown.0,
            "to": req.shown.1,
            "every": req.every.to_string(),
            "agg": req.agg.as_str(),
            "fill": req.fill.as_str(),
            "series": series,
        }))
        .into_response())
    }
    .await;
    answer(&state, &uri, result)
}

/// # `GET /v1/fetches`
/// The fetch log, newest first: `{fetches: [entry]}`; `site` narrows it to one site, `last` is a
/// count (default 50, at most 1000).
async fn list_fetches(
    State(state): State<StatsState>,
    OriginalUri(uri): OriginalUri,
    RawQuery(raw): RawQuery,
) -> Response {
    let result: Result<Response, Failure> = async {
        let q = Query::parse(raw.as_deref(), &["site", "last"])?;
        let last = params::fetch_count(&q)?;
        let site = q.get("site").map(params::slug).transpose()?;
        if let Some(s) = &site
            && state.store.site(s).await?.is_none()
        {
            return Err(StatsError::NotFound(s.to_string()).into());
        }
        let entries = state.store.fetches(site.as_ref(), last).await?;
        Ok(Json(json!({ "fetches": entries.iter().map(fetch_json).collect::<Vec<_>>() })).into_response())
    }
    .await;
    answer(&state, &uri, result)
}

async fn not_found(State(state): State<StatsState>, OriginalUri(uri): OriginalUri) -> Problem {
    Problem::not_found(&state.base_url, uri.path())
}

async fn method_not_allowed(State(state): State<StatsState>, OriginalUri(uri): OriginalUri) -> Problem {
    Problem::new(
        &state.base_url,
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "Method not allowed",
        format!("{} does not take this method", uri.path()),
        "See /openapi.json for the methods of each path.",
        uri.path(),
    )
}
