//! The live socket: stream tickets and `/cable`, speaking ActionCable (`actioncable-v1-json`) as
//! Rails' own JavaScript client expects it.
//!
//! A socket's life: the upgrade selects `actioncable-v1-json`; the server sends `welcome` (or, for
//! a bad, used or expired ticket, the `unauthorized` disconnect, and closes); a `ping` goes out
//! every 3 seconds; `subscribe` to `EventsChannel` is confirmed (any other channel is rejected)
//! and registers the session, which then gets every event the feed would show its credential.
//! Frames wait in a bounded queue and are written in batches, one flush per batch.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agora_actors::chat::rules::Caller;
use agora_actors::chat::sessions::{Closer, Disconnect, Frame, SessionHandle, Sessions};
use agora_storage::secret::{new_token, token_hash};
use agora_storage::time::rfc3339;
use agora_wire::cable::{Command, Malformed, parse_command};
use axum::extract::ws::{Message as WsMessage, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use futures::{SinkExt as _, StreamExt as _};
use http::StatusCode;
use serde_json::json;
use tokio::sync::mpsc;

use super::ChatState;
use super::auth::Reader;
use super::error::ApiError;

/// How long a stream ticket works.
pub const TICKET_LIFETIME_MS: i64 = 60_000;
/// The most unused tickets kept; beyond it, the oldest go first.
const MAX_TICKETS: usize = 100_000;
/// Frames a session may have waiting before it counts as too slow and is disconnected.
pub const SESSION_QUEUE: usize = 512;
const PING_EVERY: Duration = Duration::from_secs(3);
/// How long one write to a client may take before the client counts as gone.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest frame a client may send.
const MAX_CLIENT_FRAME: usize = 64 * 1024;
const EVENTS_CHANNEL: &str = "EventsChannel";
/// The most commands a client may send between two pings (3 s); more is a flood and closes the
/// socket (`invalid_request`). Rails' client sends a handful: `subscribe`, repeated until
/// confirmed, and `unsubscribe`.
const MAX_COMMANDS_PER_PING: u32 = 50;

struct Ticket {
    caller: Caller,
    expires_at: i64,
}

/// One-use stream tickets, by the SHA-256 of the ticket. In memory: they live 60 seconds, and a
/// client whose ticket was lost to a restart asks for a new one.
#[derive(Default)]
pub struct Tickets {
    by_hash: Mutex<HashMap<String, Ticket>>,
}

impl Tickets {
    fn issue(&self, caller: Caller, now: i64) -> (String, i64) {
        let ticket = new_token("st_");
        let expires_at = now + TICKET_LIFETIME_MS;
        if let Ok(mut map) = self.by_hash.lock() {
            // Expired tickets go each time the map doubles, not on every insert: a connect storm
            // stays linear, and the map stays within twice the live tickets (and the cap).
            if map.len() >= 1024 && map.len().is_power_of_two() {
                map.retain(|_, t| t.expires_at > now);
            }
            if map.len() >= MAX_TICKETS
                && let Some(oldest) = map.iter().min_by_key(|(_, t)| t.expires_at).map(|(k, _)| k.clone())
            {
                map.remove(&oldest);
            }
            map.insert(token_hash(&ticket), Ticket { caller, expires_at });
        }
        (ticket, expires_at)
    }

    /// Takes a ticket: it works once, until it expires.
    fn redeem(&self, ticket: &str, now: i64) -> Option<Caller> {
        let mut map = self.by_hash.lock().ok()?;
        let t = map.remove(&token_hash(ticket))?;
        (t.expires_at > now).then_some(t.caller)
    }
}

/// The socket address of the chat service: its base URL with `ws` for `http`.
pub(crate) fn ws_base(base_url: &str) -> String {
    if let Some(rest) = base_url.strip_prefix("https://") {
        format!("wss://{rest}")
    } else if let Some(rest) = base_url.strip_prefix("http://") {
        format!("ws://{rest}")
    } else {
        base_url.to_owned()
    }
}

/// # `POST /stream_tickets`
/// A one-use ticket for `/cable`, bound to the caller's credential, valid 60 seconds.
pub async fn create_stream_ticket(
    State(state): State<ChatState>,
    Reader(caller): Reader,
) -> Result<Response, ApiError> {
    let now = state.chat.clock().now_ms();
    let (ticket, expires_at) = state.tickets.issue(caller, now);
    let url = format!("{}/cable?ticket={ticket}", ws_base(&state.base_url));
    Ok((
        StatusCode::CREATED,
        axum::Json(json!({ "ticket": ticket, "expires_at": rfc3339(expires_at), "url": url })),
    )
        .into_response())
}

/// # `GET /cable?ticket=`
/// The live socket. A bad ticket still gets the upgrade, then the `unauthorized` disconnect: an
/// HTTP error here would leave Rails' client retrying silently forever.
pub async fn cable(
    State(state): State<ChatState>,
    Query(q): Query<HashMap<String, String>>,
    ws: Result<WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection>,
) -> Response {
    let Ok(ws) = ws else {
        return ApiError::bad_request(
            "/cable is a WebSocket (subprotocol actioncable-v1-json): open it with an upgrade.",
        )
        .into_response();
    };
    let sessions = state.chat.sessions().clone();
    let Some((id, closer)) = sessions.open(state.max_sockets) else {
        // Refused before the upgrade: the cap is a server condition, not a bad ticket.
        let mut res = ApiError::new(
            super::ErrorCode::ServerError,
            "The server holds as many sockets as it may; try again later.",
        )
        .into_response();
        *res.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
        res.headers_mut().insert(http::header::RETRY_AFTER, http::HeaderValue::from_static("5"));
        return res;
    };
    let now = state.chat.clock().now_ms();
    let caller = q.get("ticket").and_then(|t| state.tickets.redeem(t, now));
    ws.protocols(["actioncable-v1-json"])
        .read_buffer_size(4 * 1024)
        .write_buffer_size(8 * 1024)
        .max_message_size(MAX_CLIENT_FRAME)
        .max_frame_size(MAX_CLIENT_FRAME)
        .on_upgrade(move |socket| async move {
            let principal = caller.as_ref().map(|c| c.principal_id.clone());
            run_session(socket, state, caller, id, closer).await;
            sessions.close(id, principal.as_deref());
        })
}

fn text(frame: &str) -> WsMessage {
    WsMessage::Text(Utf8Bytes::from(frame))
}

async fn send(socket: &mut WebSocket, frame: &str) -> bool {
    matches!(tokio::time::timeout(WRITE_TIMEOUT, socket.send(text(frame))).await, Ok(Ok(())))
}

fn disconnect_frame(why: Disconnect) -> String {
    json!({ "type": "disconnect", "reason": why.reason, "reconnect": why.reconnect }).to_string()
}

async fn run_session(
    mut socket: WebSocket,
    state: ChatState,
    caller: Option<Caller>,
    id: u64,
    closer: Arc<Closer>,
) {
    // Still valid? The credential may have been revoked since the ticket was issued. The socket
    // is known as the credential's first, so a revocation after the check still closes it.
    if let Some(c) = &caller {
        state.chat.sessions().identify(id, &c.principal_id, &c.credential_id);
    }
    // A session expires: the socket closes at the first ping after its end (storage's own clock,
    // the one `authenticate` uses).
    let mut expires_at = None;
    let caller = match caller {
        Some(c) => match state.chat.store().credential(&c.credential_id).await {
            Ok(Some(cred))
                if cred.revoked_at.is_none()
                    && cred.expires_at.is_none_or(|at| at > agora_storage::time::now_ms()) =>
            {
                expires_at = cred.expires_at;
                Some(c)
            }
            _ => None,
        },
        None => None,
    };
    let Some(caller) = caller else {
        let _ = send(&mut socket, &disconnect_frame(Disconnect::UNAUTHORIZED)).await;
        let _ = socket.close().await;
        return;
    };
    if !send(&mut socket, r#"{"type":"welcome"}"#).await {
        return;
    }
    let (tx, mut rx) = mpsc::channel::<Frame>(SESSION_QUEUE);
    let (mut sink, mut stream) = socket.split();
    let mut subscribed: Option<Arc<str>> = None;
    let mut ping = tokio::time::interval(PING_EVERY);
    ping.tick().await;
    let sessions: &Sessions = state.chat.sessions();
    let watermark = state.chat.event_log().committed();
    let mut commands = 0u32;
    let why = loop {
        tokio::select! {
            why = closer.closed() => break Some(why),
            frame = rx.recv() => {
                let Some(frame) = frame else { break None };
                // Coalesce: everything already queued goes out with one flush.
                let mut batch = vec![frame];
                while batch.len() < 64 {
                    match rx.try_recv() {
                        Ok(f) => batch.push(f),
                        Err(_) => break,
                    }
                }
                let write = async {
                    for f in &batch {
                        sink.feed(text(f)).await?;
                    }
                    sink.flush().await
                };
                if !matches!(tokio::time::timeout(WRITE_TIMEOUT, write).await, Ok(Ok(()))) {
                    break None;
                }
            }
            _ = ping.tick() => {
                commands = 0;
                if expires_at.is_some_and(|at| at <= agora_storage::time::now_ms()) {
                    break Some(Disconnect::UNAUTHORIZED);
                }
                let now = state.chat.clock().now_ms() / 1000;
                let frame = format!(r#"{{"type":"ping","message":{now}}}"#);
                if !matches!(tokio::time::timeout(WRITE_TIMEOUT, sink.send(text(&frame))).await, Ok(Ok(()))) {
                    break None;
                }
            }
            incoming = stream.next() => {
                let message = match incoming {
                    None => break None,
                    Some(Ok(message)) => message,
                    // A protocol error: most often a frame over the size limit.
                    Some(Err(e)) => {
                        tracing::debug!("socket read failed: {e}");
                        break Some(Disconnect::INVALID);
                    }
                };
                let body = match message {
                    WsMessage::Text(body) => body,
                    WsMessage::Close(_) => break None,
                    WsMessage::Ping(_) | WsMessage::Pong(_) => continue,
                    // ActionCable speaks JSON text only.
                    WsMessage::Binary(_) => break Some(Disconnect::INVALID),
                };
                commands += 1;
                if commands > MAX_COMMANDS_PER_PING {
                    break Some(Disconnect::INVALID);
                }
                let session = Session { caller: &caller, sessions, id, tx: &tx, closer: &closer };
                let Ok(reply) = handle_command(body.as_str(), &session, &mut subscribed, &watermark) else {
                    break Some(Disconnect::INVALID);
                };
                if let Some(reply) = reply
                    && !matches!(tokio::time::timeout(WRITE_TIMEOUT, sink.send(text(&reply))).await, Ok(Ok(())))
                {
                    break None;
                }
            }
        }
    };
    if let Some(why) = why {
        let _ = tokio::time::timeout(WRITE_TIMEOUT, sink.send(text(&disconnect_frame(why)))).await;
        let _ = tokio::time::timeout(WRITE_TIMEOUT, sink.close()).await;
    }
    sessions.unsubscribe(&caller.principal_id, id);
}

/// What a command handler needs of its session.
struct Session<'a> {
    caller: &'a Caller,
    sessions: &'a Sessions,
    id: u64,
    tx: &'a mpsc::Sender<Frame>,
    closer: &'a Arc<Closer>,
}

/// Handles one client command; answers the frame to send back, if any. A subscription gets the
/// events committed after it (`watermark`: the event log's committed sequence number).
fn handle_command(
    body: &str,
    session: &Session<'_>,
    subscribed: &mut Option<Arc<str>>,
    watermark: &tokio::sync::watch::Receiver<i64>,
) -> Result<Option<String>, Malformed> {
    let Session { caller, sessions, id, tx, closer } = *session;
    // Not a JSON object with a string `command` and a string `identifier`: refused.
    let Command { verb, identifier, channel } = parse_command(body)?;
    let identifier = identifier.as_str();
    Ok(match verb.as_str() {
        "subscribe" => {
            if channel.as_deref() != Some(EVENTS_CHANNEL) {
                return Ok(Some(
                    json!({ "identifier": identifier, "type": "reject_subscription" }).to_string(),
                ));
            }
            if subscribed.is_some() {
                // Rails' client repeats `subscribe` until it hears back: a repeat is ignored.
                return Ok(None);
            }
            let identifier: Arc<str> = Arc::from(identifier);
            sessions.subscribe(&caller.principal_id, watermark, |after_seq| SessionHandle {
                id,
                credential_id: caller.credential_id.clone(),
                identifier: identifier.clone(),
                tx: tx.clone(),
                closer: closer.clone(),
                after_seq,
            });
            *subscribed = Some(identifier.clone());
            Some(json!({ "identifier": &*identifier, "type": "confirm_subscription" }).to_string())
        }
        "unsubscribe" => {
            if subscribed.as_deref() == Some(identifier) {
                sessions.unsubscribe(&caller.principal_id, id);
                *subscribed = None;
            }
            None
        }
        // EventsChannel has no actions; other commands are ignored, as Rails does.
        _ => None,
    })
}
