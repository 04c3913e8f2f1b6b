//! The chat API: channels, messages, search, mentions and the staff operations.
//!
//! # Layout
//! - [`handlers`]: one handler per operation, `<verb>_<noun>`.
//! - [`auth`]: credential extractors per access level (`read`, `member`, `staff`) and the
//!   per-credential limits.
//! - [`body`]: JSON bodies, refusing unknown fields.
//! - [`wire`]: the JSON shapes and the opaque cursors.
//! - [`openapi`]: the OpenAPI 3.1 description, built from the same table of operations the tests
//!   check against the router.
//! - [`error`]: the `{error, message}` format.
//! - [`app`]: the web client's static files under `/app/`.

pub mod app;
pub mod auth;
pub mod body;
pub mod cable;
pub mod error;
pub mod handlers;
pub mod openapi;
pub mod wire;

use std::sync::Arc;

use agora_actors::chat::Chat;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{delete, get, patch, post};

pub use error::{ApiError, ErrorCode};

/// What every chat handler can reach.
#[derive(Clone)]
pub struct ChatState {
    pub chat: Chat,
    /// Public base URL of the chat service, e.g. `http://127.0.0.1:4000`.
    pub base_url: String,
    pub limits: Arc<auth::Limits>,
    pub tickets: Arc<cable::Tickets>,
    /// The most live sockets held at once.
    pub max_sockets: usize,
}

impl ChatState {
    pub fn new(chat: Chat, base_url: String, limits: Arc<auth::Limits>, max_sockets: usize) -> ChatState {
        ChatState { chat, base_url, limits, tickets: Arc::default(), max_sockets }
    }
}

/// How the fan-out renders an event for the live sockets: the same item `GET /events` shows.
pub fn render_event() -> agora_actors::chat::sessions::Render {
    Arc::new(|e| wire::event(e, wire::cursor::encode("ev1", &e.seq.to_string())))
}

/// The chat service's router.
pub fn router(state: ChatState) -> Router {
    use handlers as h;
    Router::new()
        .route("/openapi.json", get(h::openapi))
        .route("/me", get(h::get_me))
        .route("/channels", get(h::list_channels).post(h::create_channel))
        .route("/channels/{channel_id}", patch(h::update_channel))
        .route("/channels/{channel_id}/members", get(h::list_members).post(h::add_member))
        .route("/channels/{channel_id}/members/{member_id}", delete(h::remove_member))
        .route("/channels/{channel_id}/messages", get(h::list_messages).post(h::post_message))
        .route("/channels/{channel_id}/read", post(h::mark_read))
        .route("/messages/{id}", patch(h::edit_message).delete(h::delete_message))
        .route("/search", get(h::search))
        .route("/mentions", get(h::mentions))
        .route("/events", get(h::list_events))
        .route("/stream_tickets", post(cable::create_stream_ticket))
        .route("/cable", get(cable::cable))
        .route("/people", get(h::list_people))
        .route("/bots", get(h::list_bots).post(h::create_bot))
        .route("/bots/{id}", delete(h::delete_bot))
        .route("/keys", get(h::list_keys).post(h::create_key))
        .route("/keys/{id}", delete(h::revoke_key))
        .route("/connector_tokens", get(h::list_connector_tokens).post(h::create_connector_token))
        .route("/connector_tokens/{id}", delete(h::revoke_connector_token))
        .route("/invites", get(h::list_invites).post(h::create_invite))
        .route("/invites/{id}", delete(h::withdraw_invite))
        .route("/invites/{code}/accept", post(h::accept_invite))
        .route("/login_links/{code}/exchange", post(h::exchange_login_link))
        .route("/session", delete(h::sign_out))
        .route("/", get(app::redirect_to_app))
        .route("/app", get(app::redirect_to_app))
        .route("/app/", get(app::app_index))
        .route("/app/{*path}", get(app::app_file))
        .fallback(h::not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(body::MAX_BODY_BYTES))
        .with_state(state)
        .layer(crate::trace::layer("chat"))
}

/// A method the path does not take: `405`, in the chat error format.
async fn method_not_allowed() -> axum::response::Response {
    use axum::response::IntoResponse as _;
    let mut res =
        ApiError::bad_request("This endpoint does not take this method; see /openapi.json.").into_response();
    *res.status_mut() = http::StatusCode::METHOD_NOT_ALLOWED;
    res
}
