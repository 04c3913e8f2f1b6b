//! The demo sign-up API, its confirm page and the inbound text webhook.

use agora_storage::Store;
use axum::Router;
use axum::extract::{OriginalUri, State};

use crate::problem::Problem;

#[derive(Clone)]
pub struct SignupState {
    pub store: Store,
    pub base_url: String,
}

/// The sign-up service's router.
pub fn router(state: SignupState) -> Router {
    Router::new().fallback(not_found).with_state(state).layer(crate::trace::layer("signup"))
}

async fn not_found(State(state): State<SignupState>, OriginalUri(uri): OriginalUri) -> Problem {
    Problem::not_found(&state.base_url, uri.path())
}
