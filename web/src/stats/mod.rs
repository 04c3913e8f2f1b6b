//! The statistics service: tracked sites, their metrics, snapshots, series and the fetch log.

use agora_storage::Store;
use axum::Router;
use axum::extract::{OriginalUri, State};
use axum::routing::get;

use crate::problem::Problem;

#[derive(Clone)]
pub struct StatsState {
    pub store: Store,
    pub base_url: String,
    pub admin_token: Option<String>,
}

/// The statistics service's router.
pub fn router(state: StatsState) -> Router {
    Router::new()
        .route("/up", get(up))
        .fallback(not_found)
        .with_state(state)
        .layer(crate::trace::layer("stats"))
}

/// # `GET /up`
/// Health check: `ok` while the service answers.
async fn up() -> &'static str {
    "ok"
}

async fn not_found(State(state): State<StatsState>, OriginalUri(uri): OriginalUri) -> Problem {
    Problem::not_found(&state.base_url, uri.path())
}
