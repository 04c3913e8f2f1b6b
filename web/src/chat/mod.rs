//! The chat API: channels, messages, search, mentions, staff operations, and the live socket.

pub mod error;

use agora_storage::Store;
use axum::Router;
use axum::extract::OriginalUri;

pub use error::{ApiError, ErrorCode};

/// What every chat handler can reach.
#[derive(Clone)]
pub struct ChatState {
    pub store: Store,
    /// Public base URL of the chat service, e.g. `http://127.0.0.1:4000`.
    pub base_url: String,
}

/// The chat service's router.
pub fn router(state: ChatState) -> Router {
    Router::new().fallback(not_found).with_state(state).layer(crate::trace::layer("chat"))
}

async fn not_found(OriginalUri(uri): OriginalUri) -> ApiError {
    ApiError::not_found(format!("There is no chat API endpoint at {}.", uri.path()))
}
