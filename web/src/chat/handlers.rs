//! The chat API's handlers. Each parses its request, calls [`Chat`](agora_actors::chat::Chat) for a
//! write or storage for a read, and shapes the answer.

use std::collections::{HashMap, HashSet};

use agora_actors::chat::channel::ChannelPatch;
use agora_actors::chat::rules::{Caller, MessageBody};
use agora_storage::chat::Message;
use agora_storage::ids::{Handle, is_id};
use agora_storage::people::{CredentialKind, INVITE_LIFETIME_MS, Invite, NewCredential, Role, Scope};
use axum::Json;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode};
use serde_json::{Value, json};

use super::ChatState;
use super::auth::{Reader, Staff, Writer};
use super::body::JsonObject;
use super::error::{ApiError, ErrorCode};
use super::wire::{self, cursor, parse_limit};

type Params = Query<HashMap<String, String>>;
type ApiResult = Result<Response, ApiError>;

fn ok(value: Value) -> ApiResult {
    Ok(Json(value).into_response())
}

fn created(value: Value) -> ApiResult {
    Ok((StatusCode::CREATED, Json(value)).into_response())
}

fn no_content() -> ApiResult {
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// A channel the caller is in, with the caller's membership; `404` otherwise, exactly as for a
/// channel that does not exist.
async fn my_channel(
    state: &ChatState,
    caller: &Caller,
    channel_id: &str,
) -> Result<(agora_storage::chat::Channel, agora_storage::chat::Member), ApiError> {
    let not_found = || ApiError::no_such("channel");
    if !is_id(channel_id, "c_") {
        return Err(not_found());
    }
    let store = state.chat.store();
    let member = store.member(channel_id, &caller.principal_id).await?.ok_or_else(not_found)?;
    let channel = store.channel(channel_id).await?.ok_or_else(not_found)?;
    Ok((channel, member))
}

/// # `GET /me`
pub async fn get_me(State(state): State<ChatState>, Reader(caller): Reader) -> ApiResult {
    let email = if caller.is_staff() || caller.kind == agora_storage::chat::PrincipalKind::Person {
        state.chat.store().person(&caller.principal_id).await?.and_then(|p| p.email)
    } else {
        None
    };
    ok(wire::me(&caller, email.as_deref()))
}

/// # `GET /channels`
/// The channels the caller is in, ordered by id, with unread counts.
pub async fn list_channels(
    State(state): State<ChatState>,
    Reader(caller): Reader,
    Query(q): Params,
) -> ApiResult {
    let limit = parse_limit(q.get("limit").map(String::as_str))?;
    let after = q.get("cursor").map(|c| cursor::decode("ch1", c)).transpose()?;
    let store = state.chat.store();
    let memberships: Vec<_> = store
        .memberships(&caller.principal_id)
        .await?
        .into_iter()
        .filter(|m| after.as_deref().is_none_or(|a| m.channel_id.as_str() > a))
        .take(limit + 1)
        .collect();
    let more = memberships.len() > limit;
    let page = &memberships[..memberships.len().min(limit)];
    let ids: Vec<String> = page.iter().map(|m| m.channel_id.clone()).collect();
    let channels = store.channels_by_id(&ids).await?;
    let items = channels
        .iter()
        .filter_map(|c| page.iter().find(|m| m.channel_id == c.id).map(|m| wire::channel_item(c, m)))
        .collect();
    let next = more.then(|| page.last().map(|m| cursor::encode("ch1", &m.channel_id))).flatten();
    ok(wire::list(items, next))
}

/// A name: trimmed, 1 to `max` characters, no control characters; `422 invalid_name` otherwise.
fn name_field(raw: String, max: usize) -> Result<String, ApiError> {
    let name = raw.trim().to_owned();
    if name.is_empty() || name.chars().count() > max || name.chars().any(char::is_control) {
        return Err(ApiError::unprocessable(
            "name",
            "invalid_name",
            format!("name must be 1 to {max} characters of text"),
        ));
    }
    Ok(name)
}

fn channel_name(raw: String) -> Result<String, ApiError> {
    name_field(raw, 80)
}

fn channel_topic(raw: Option<String>) -> Result<Option<String>, ApiError> {
    match raw {
        None => Ok(None),
        Some(t) if t.chars().count() > 250 || t.chars().any(|c| c.is_control() && c != '\n') => Err(
            ApiError::unprocessable("topic", "invalid_topic", "topic must be at most 250 characters of text"),
        ),
        Some(t) if t.trim().is_empty() => Ok(None),
        Some(t) => Ok(Some(t)),
    }
}

/// # `POST /channels`
pub async fn create_channel(
    State(state): State<ChatState>,
    Staff(caller): Staff,
    body: JsonObject,
) -> ApiResult {
    let f = body.only(&["name", "external", "topic"])?;
    let name = channel_name(f.string("name")?)?;
    let topic = channel_topic(f.opt_string("topic")?)?;
    let external = f.opt_bool("external")?.unwrap_or(false);
    let channel = state.chat.create_channel(&caller, name, topic, external).await?;
    created(wire::channel(&channel))
}

/// # `PATCH /channels/{channel_id}`
pub async fn update_channel(
    State(state): State<ChatState>,
    Staff(caller): Staff,
    Path(channel_id): Path<String>,
    body: JsonObject,
) -> ApiResult {
    let f = body.only(&["name", "external", "topic"])?;
    // The channel's actor checks membership: a channel the caller is not in is `404` there.
    let patch = ChannelPatch {
        name: f.opt_string("name")?.map(channel_name).transpose()?,
        topic: f.nullable_string("topic")?.map(channel_topic).transpose()?,
        external: f.opt_bool("external")?,
    };
    let channel = state.chat.update_channel(&caller, &channel_id, patch).await?;
    ok(wire::channel(&channel))
}

/// # `GET /channels/{channel_id}/members`
pub async fn list_members(
    State(state): State<ChatState>,
    Staff(caller): Staff,
    Path(channel_id): Path<String>,
) -> ApiResult {
    my_channel(&state, &caller, &channel_id).await?;
    let members = state.chat.store().channel_members(&channel_id).await?;
    ok(wire::list(members.iter().map(wire::member).collect(), None))
}

/// # `POST /channels/{channel_id}/members`
pub async fn add_member(
    State(state): State<ChatState>,
    Staff(caller): Staff,
    Path(channel_id): Path<String>,
    body: JsonObject,
) -> ApiResult {
    let f = body.only(&["member_id"])?;
    let member_id = f.string("member_id")?;
    let (member, new) = state.chat.add_member(&caller, &channel_id, &member_id).await?;
    if new { created(wire::member(&member)) } else { ok(wire::member(&member)) }
}

/// # `DELETE /channels/{channel_id}/members/{member_id}`
pub async fn remove_member(
    State(state): State<ChatState>,
    Staff(caller): Staff,
    Path((channel_id, member_id)): Path<(String, String)>,
) -> ApiResult {
    state.chat.remove_member(&caller, &channel_id, &member_id).await?;
    no_content()
}

/// # `GET /channels/{channel_id}/messages`
/// Newest first; `next_cursor` goes back in time. Each page is one bounded key range.
pub async fn list_messages(
    State(state): State<ChatState>,
    Reader(caller): Reader,
    Path(channel_id): Path<String>,
    Query(q): Params,
) -> ApiResult {
    let limit = parse_limit(q.get("limit").map(String::as_str))?;
    let (channel, _) = my_channel(&state, &caller, &channel_id).await?;
    // The cursor is "messages before seq N" in this channel.
    let before = match q.get("cursor") {
        None => channel.last_seq + 1,
        Some(c) => {
            let payload = cursor::decode("m1", c)?;
            let (cid, seq) = payload.rsplit_once(':').unwrap_or_default();
            let seq: i64 = seq
                .parse()
                .map_err(|_| ApiError::bad_request("This cursor was not issued by this server."))?;
            if cid != channel_id || seq < 1 || seq > channel.last_seq + 1 {
                return Err(ApiError::bad_request(
                    "This cursor was not issued by this server for this channel.",
                ));
            }
            seq
        }
    };
    let hi = before - 1;
    let lo = (before - limit as i64).max(1);
    let messages = state.chat.store().messages_between(&channel_id, lo, hi).await?;
    let next = (lo > 1).then(|| cursor::encode("m1", &format!("{channel_id}:{lo}")));
    ok(wire::list(messages.iter().map(wire::message).collect(), next))
}

/// # `POST /channels/{channel_id}/messages`
/// `201` with the message; a repeated `idempotency_key` answers `200` with the first message and
/// `Idempotent-Replayed: true`, whatever the repeat's body.
pub async fn post_message(
    State(state): State<ChatState>,
    Writer(caller): Writer,
    Path(channel_id): Path<String>,
    body: JsonObject,
) -> ApiResult {
    let f = body.only(&["body", "idempotency_key"])?;
    let key = f.opt_string("idempotency_key")?;
    if let Some(k) = &key
        && (k.is_empty() || k.chars().count() > 255)
    {
        return Err(ApiError::unprocessable(
            "idempotency_key",
            "invalid_idempotency_key",
            "idempotency_key must be 1 to 255 characters",
        ));
    }
    let text = f.string("body")?;
    let parsed =
        MessageBody::parse(text).map_err(|b| ApiError::unprocessable("body", b.reason(), b.message()))?;
    if !is_id(&channel_id, "c_") {
        return Err(ApiError::no_such("channel"));
    }
    state.limits.post(&caller.credential_id)?;
    let (message, replayed) = state.chat.post_message(&caller, &channel_id, parsed, key).await?;
    let mut res = if replayed {
        Json(wire::message(&message)).into_response()
    } else {
        (StatusCode::CREATED, Json(wire::message(&message))).into_response()
    };
    if replayed {
        res.headers_mut().insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    Ok(res)
}

/// # `POST /channels/{channel_id}/read`
/// Moves the caller's read marker forward to `message_id`; never back. `204`.
pub async fn mark_read(
    State(state): State<ChatState>,
    Writer(caller): Writer,
    Path(channel_id): Path<String>,
    body: JsonObject,
) -> ApiResult {
    let f = body.only(&["message_id"])?;
    let message_id = f.string("message_id")?;
    state.chat.mark_read(&caller, &channel_id, &message_id).await?;
    no_content()
}

/// # `PATCH /messages/{id}`
pub async fn edit_message(
    State(state): State<ChatState>,
    Writer(caller): Writer,
    Path(id): Path<String>,
    body: JsonObject,
) -> ApiResult {
    let f = body.only(&["body"])?;
    let parsed = MessageBody::parse(f.string("body")?)
        .map_err(|b| ApiError::unprocessable("body", b.reason(), b.message()))?;
    let message = state.chat.edit_message(&caller, &id, parsed).await?;
    ok(wire::message(&message))
}

/// # `DELETE /messages/{id}`
/// Leaves a tombstone and answers it.
pub async fn delete_message(
    State(state): State<ChatState>,
    Writer(caller): Writer,
    Path(id): Path<String>,
) -> ApiResult {
    let message = state.chat.delete_message(&caller, &id).await?;
    ok(wire::message(&message))
}

/// The channel ids the caller is in, optionally narrowed to one (which must be one of them).
async fn searchable_channels(
    state: &ChatState,
    caller: &Caller,
    only: Option<&String>,
) -> Result<Vec<String>, ApiError> {
    let mine: Vec<String> = state
        .chat
        .store()
        .memberships(&caller.principal_id)
        .await?
        .into_iter()
        .map(|m| m.channel_id)
        .collect();
    match only {
        None => Ok(mine),
        Some(c) if mine.contains(c) => Ok(vec![c.clone()]),
        Some(_) => Err(ApiError::no_such("channel")),
    }
}

fn offset_page(q: &HashMap<String, String>, kind: &str) -> Result<(usize, usize), ApiError> {
    let limit = parse_limit(q.get("limit").map(String::as_str))?;
    let offset = match q.get("cursor") {
        None => 0,
        Some(c) => usize::try_from(cursor::decode_number(kind, c)?).unwrap_or(usize::MAX),
    };
    if offset > agora_storage::chat::MAX_SEARCH_OFFSET {
        return Err(ApiError::bad_request("This cursor was not issued by this server for this list."));
    }
    Ok((offset, limit))
}

fn offset_list(messages: Vec<Message>, offset: usize, limit: usize, kind: &str) -> Value {
    let more = messages.len() > limit;
    let items = messages.iter().take(limit).map(wire::message).collect();
    let next = (more && offset + limit <= agora_storage::chat::MAX_SEARCH_OFFSET)
        .then(|| cursor::encode(kind, &(offset + limit).to_string()));
    wire::list(items, next)
}

/// # `GET /search`
/// Every word of `q` must match (on stems, case-insensitive); newest first.
pub async fn search(State(state): State<ChatState>, Reader(caller): Reader, Query(q): Params) -> ApiResult {
    let text = q.get("q").map(|s| s.trim().to_owned()).unwrap_or_default();
    if text.is_empty() || text.chars().count() > 200 {
        return Err(ApiError::unprocessable("q", "invalid_query", "q must be 1 to 200 characters"));
    }
    let (offset, limit) = offset_page(&q, "s1")?;
    let channels = searchable_channels(&state, &caller, q.get("channel_id")).await?;
    let found = state.chat.store().search_messages(&channels, &text, offset, limit + 1).await?;
    ok(offset_list(found, offset, limit, "s1"))
}

/// # `GET /mentions`
/// Messages that mention the caller's `@handle` (a key's or connector's person), newest first.
pub async fn mentions(State(state): State<ChatState>, Reader(caller): Reader, Query(q): Params) -> ApiResult {
    let (offset, limit) = offset_page(&q, "mn1")?;
    let channels = searchable_channels(&state, &caller, None).await?;
    let found = state.chat.store().mentions_of(&caller.handle, &channels, offset, limit + 1).await?;
    ok(offset_list(found, offset, limit, "mn1"))
}

/// # `GET /people`
/// People of the organization and its guests. Guests may not list people; only staff see e-mail
/// addresses.
pub async fn list_people(
    State(state): State<ChatState>,
    Reader(caller): Reader,
    Query(q): Params,
) -> ApiResult {
    if caller.is_guest() {
        return Err(ApiError::forbidden("Guests cannot list people."));
    }
    let limit = parse_limit(q.get("limit").map(String::as_str))?;
    let after = q.get("cursor").map(|c| cursor::decode("pp1", c)).transpose()?;
    let mut people = state.chat.store().people_page(after.as_deref(), limit + 1).await?;
    let more = people.len() > limit;
    people.truncate(limit);
    let next = more.then(|| people.last().map(|p| cursor::encode("pp1", &p.id))).flatten();
    let show_email = caller.is_staff();
    ok(wire::list(people.iter().map(|p| wire::person(p, show_email)).collect(), next))
}

/// # `POST /bots`
/// The answer carries the bot's token, once.
pub async fn create_bot(State(state): State<ChatState>, Staff(caller): Staff, body: JsonObject) -> ApiResult {
    let f = body.only(&["name", "handle"])?;
    let name = name_field(f.string("name")?, 80)?;
    let handle = Handle::parse(&f.string("handle")?)
        .map_err(|e| ApiError::unprocessable("handle", "invalid_handle", e.to_string()))?;
    let (bot, token) = state.chat.store().create_bot(&name, &handle, &caller.principal_id).await?;
    created(json!({ "bot": wire::bot(&bot), "token": token }))
}

/// # `DELETE /bots/{id}`
/// Revokes its tokens at once and takes it out of its channels.
pub async fn delete_bot(
    State(state): State<ChatState>,
    Staff(_caller): Staff,
    Path(id): Path<String>,
) -> ApiResult {
    let store = state.chat.store();
    if !is_id(&id, "b_") || !store.delete_bot(&id).await? {
        return Err(ApiError::not_found("No such bot."));
    }
    state.chat.sessions().disconnect_principal(&id);
    let system = Caller::system();
    for membership in store.memberships(&id).await? {
        state.chat.remove_member(&system, &membership.channel_id, &id).await?;
    }
    no_content()
}

/// # `POST /keys`
/// A person key for the caller (a staff person, from a browser session); the token once.
pub async fn create_key(State(state): State<ChatState>, Staff(caller): Staff, body: JsonObject) -> ApiResult {
    let f = body.only(&["name"])?;
    let name = name_field(f.string("name")?, 60)?;
    let (key, token) = state
        .chat
        .store()
        .issue_credential(NewCredential {
            kind: CredentialKind::PersonKey,
            person_id: Some(caller.principal_id.clone()),
            bot_id: None,
            name: Some(name),
            scope: Scope::Write,
            expires_at: None,
        })
        .await?;
    created(json!({ "key": wire::key(&key), "token": token }))
}

/// # `GET /keys`
/// The caller's person keys, revoked ones included, newest first.
pub async fn list_keys(State(state): State<ChatState>, Staff(caller): Staff) -> ApiResult {
    let keys = state.chat.store().credentials_of(&caller.principal_id, CredentialKind::PersonKey).await?;
    ok(wire::list(keys.iter().map(wire::key).collect(), None))
}

/// # `DELETE /keys/{id}`
pub async fn revoke_key(
    State(state): State<ChatState>,
    Staff(caller): Staff,
    Path(id): Path<String>,
) -> ApiResult {
    let store = state.chat.store();
    let key = store
        .credential(&id)
        .await?
        .filter(|k| {
            k.kind == CredentialKind::PersonKey
                && k.person_id.as_deref() == Some(caller.principal_id.as_str())
        })
        .ok_or_else(|| ApiError::not_found("No such key."))?;
    store.revoke_credential(&key.pid).await?;
    state.chat.sessions().disconnect_credential(&key.pid);
    no_content()
}

/// # `POST /connector_tokens`
/// A token for the organization's connector, acting for one person; `read` or `write` scope.
pub async fn create_connector_token(
    State(state): State<ChatState>,
    Staff(_caller): Staff,
    body: JsonObject,
) -> ApiResult {
    let f = body.only(&["person_id", "scope"])?;
    let person_id = f.string("person_id")?;
    let scope = match f.string("scope")?.as_str() {
        "read" => Scope::Read,
        "write" => Scope::Write,
        _ => {
            return Err(ApiError::unprocessable("scope", "invalid_scope", "scope must be `read` or `write`"));
        }
    };
    let store = state.chat.store();
    if !is_id(&person_id, "p_") || store.person(&person_id).await?.is_none() {
        return Err(ApiError::unprocessable("person_id", "unknown_person", "no person has this id"));
    }
    let (token_record, token) = store
        .issue_credential(NewCredential {
            kind: CredentialKind::Connector,
            person_id: Some(person_id),
            bot_id: None,
            name: None,
            scope,
            expires_at: None,
        })
        .await?;
    created(json!({ "connector_token": wire::connector_token(&token_record), "token": token }))
}

/// # `GET /connector_tokens`
pub async fn list_connector_tokens(State(state): State<ChatState>, Staff(_caller): Staff) -> ApiResult {
    let tokens = state.chat.store().credentials_of_kind(CredentialKind::Connector).await?;
    ok(wire::list(tokens.iter().map(wire::connector_token).collect(), None))
}

/// # `DELETE /connector_tokens/{id}`
pub async fn revoke_connector_token(
    State(state): State<ChatState>,
    Staff(_caller): Staff,
    Path(id): Path<String>,
) -> ApiResult {
    let store = state.chat.store();
    let token = store
        .credential(&id)
        .await?
        .filter(|k| k.kind == CredentialKind::Connector)
        .ok_or_else(|| ApiError::not_found("No such connector token."))?;
    store.revoke_credential(&token.pid).await?;
    state.chat.sessions().disconnect_credential(&token.pid);
    no_content()
}

/// # `POST /invites`
/// Invites an outside guest to external channels; answers the one-use `code` and its `url`.
pub async fn create_invite(
    State(state): State<ChatState>,
    Staff(caller): Staff,
    body: JsonObject,
) -> ApiResult {
    let f = body.only(&["email", "name", "channel_ids"])?;
    let email = f.string("email")?.trim().to_owned();
    if !email.contains('@') || email.chars().count() > 254 || email.chars().any(char::is_whitespace) {
        return Err(ApiError::unprocessable("email", "invalid_email", "email must be an e-mail address"));
    }
    let name = name_field(f.string("name")?, 80)?;
    let channel_ids = f.opt_string_list("channel_ids")?.unwrap_or_default();
    for id in &channel_ids {
        let (channel, _) = my_channel(&state, &caller, id).await.map_err(|_| {
            ApiError::unprocessable(
                "channel_ids",
                "unknown_channel",
                format!("{id} is not a channel you are in"),
            )
        })?;
        if !channel.external {
            return Err(ApiError::unprocessable(
                "channel_ids",
                "internal_channel",
                format!("{id} is not external: guests can only join external channels"),
            ));
        }
    }
    let now = state.chat.clock().now_ms();
    let invite = Invite {
        id: agora_storage::ids::new_id("i_"),
        email,
        name,
        channel_ids,
        created_by: caller.principal_id.clone(),
        created_at: now,
        expires_at: now + INVITE_LIFETIME_MS,
        accepted_at: None,
        person_id: None,
        revoked_at: None,
    };
    let code = state.chat.store().create_invite(&invite).await?;
    let url = format!("{}/app/?invite={code}", state.base_url);
    created(json!({ "invite": wire::invite(&invite), "code": code, "url": url }))
}

/// # `GET /invites`
/// Every invitation, newest first, with whether it was accepted or withdrawn.
pub async fn list_invites(State(state): State<ChatState>, Staff(_caller): Staff) -> ApiResult {
    let invites = state.chat.store().invites().await?;
    ok(wire::list(invites.iter().map(wire::invite).collect(), None))
}

/// # `DELETE /invites/{id}`
/// Withdraws an invitation that was not accepted yet: its link stops working.
pub async fn withdraw_invite(
    State(state): State<ChatState>,
    Staff(_caller): Staff,
    Path(id): Path<String>,
) -> ApiResult {
    let now = state.chat.clock().now_ms();
    if !is_id(&id, "i_") || !state.chat.store().withdraw_invite(&id, now).await? {
        return Err(ApiError::not_found("No open invitation has this id."));
    }
    no_content()
}

/// # `POST /invites/{code}/accept`
/// No credential: the code is the credential. Creates the guest, adds them to the invite's
/// channels, and answers a browser session token, once.
pub async fn accept_invite(State(state): State<ChatState>, Path(code): Path<String>) -> ApiResult {
    let store = state.chat.store();
    let not_found = || ApiError::not_found("No such invitation, or it was used or has expired.");
    if code.len() > 100 {
        return Err(not_found());
    }
    let invite = store.invite_by_code(&code).await?.ok_or_else(not_found)?;
    if invite.accepted_at.is_some()
        || invite.revoked_at.is_some()
        || invite.expires_at <= state.chat.clock().now_ms()
    {
        return Err(not_found());
    }
    let wish = invite.email.split('@').next().unwrap_or("guest");
    let handle = store.free_handle(wish).await?;
    // Claim the invitation first: of two racing accepts, only one creates a guest.
    if !store.accept_invite(&code, "pending").await? {
        return Err(not_found());
    }
    let person = store.create_person(&invite.name, &handle, Some(&invite.email), Role::Guest).await?;
    store.accept_invite_person(&code, &person.id).await?;
    let system = Caller::system();
    for channel_id in &invite.channel_ids {
        if let Err(e) = state.chat.add_member(&system, channel_id, &person.id).await {
            tracing::warn!(channel_id, error = %e, "an invited guest could not join a channel");
        }
    }
    let (_, token) = store.issue_session(&person.id).await?;
    created(json!({ "person": wire::person(&person, true), "token": token }))
}

/// The most events one feed request looks through before answering with what it found so far.
const MAX_FEED_SCAN: i64 = 20_000;

/// # `GET /events`
/// The cursor feed, oldest first. Without `cursor`: only `{latest_cursor}`. With it:
/// `{items, next_cursor, latest_cursor}`. Only committed events are shown (the event log's
/// watermark), so a reader never steps over an event that can still commit.
pub async fn list_events(
    State(state): State<ChatState>,
    Reader(caller): Reader,
    Query(q): Params,
) -> ApiResult {
    let limit = parse_limit(q.get("limit").map(String::as_str))?;
    let watermark = *state.chat.event_log().committed().borrow();
    let Some(raw) = q.get("cursor") else {
        return ok(json!({ "latest_cursor": cursor::encode("ev1", &watermark.to_string()) }));
    };
    let after = cursor::decode_number("ev1", raw)?;
    if after > watermark {
        return Err(ApiError::bad_request("This cursor was not issued by this server."));
    }
    let store = state.chat.store();
    let mine: HashSet<String> =
        store.memberships(&caller.principal_id).await?.into_iter().map(|m| m.channel_id).collect();
    let mut items = Vec::new();
    let mut scanned_to = after;
    let mut full = false;
    // The first window is one page: a reader in every busy channel (a bot, usually) fills its
    // page from it. Windows grow fourfold while the caller's events are sparse.
    let mut window = limit as i64;
    while !full && scanned_to < watermark && scanned_to - after < MAX_FEED_SCAN {
        let lo = scanned_to + 1;
        let hi = watermark.min(lo + window - 1);
        window = (window * 4).min(MAX_FEED_SCAN);
        for event in store.events_between(lo, hi).await? {
            let visible = mine.contains(&event.channel_id)
                || (event.kind == agora_storage::chat::EventKind::MemberRemoved
                    && event.member.as_ref().is_some_and(|m| m.id == caller.principal_id));
            scanned_to = event.seq;
            if visible {
                items.push(wire::event(&event, cursor::encode("ev1", &event.seq.to_string())));
                if items.len() == limit {
                    full = true;
                    break;
                }
            }
        }
        if !full {
            scanned_to = hi;
        }
    }
    let more = scanned_to < watermark;
    let position = if more { scanned_to } else { items_last_seq(&items).unwrap_or(after) };
    let next = more.then(|| cursor::encode("ev1", &scanned_to.to_string()));
    let latest = if more { watermark } else { position };
    ok(
        json!({ "items": items, "next_cursor": next, "latest_cursor": cursor::encode("ev1", &latest.to_string()) }),
    )
}

fn items_last_seq(items: &[Value]) -> Option<i64> {
    let last = items.last()?;
    cursor::decode_number("ev1", last["cursor"].as_str()?).ok()
}

/// # `GET /openapi.json`
pub async fn openapi(State(state): State<ChatState>) -> Response {
    Json(super::openapi::document(&state.base_url)).into_response()
}

/// The JSON 404 of every path the chat API does not have.
pub async fn not_found(uri: axum::extract::OriginalUri) -> ApiError {
    ApiError::new(ErrorCode::NotFound, format!("There is no chat API endpoint at {}.", uri.path()))
}

/// # `POST /login_links/{code}/exchange`
/// No credential: the code of a sign-in link (`agora admin login-link`) is the credential. Works
/// once, within 15 minutes; answers a new browser session token, once.
pub async fn exchange_login_link(State(state): State<ChatState>, Path(code): Path<String>) -> ApiResult {
    let store = state.chat.store();
    let not_found = || ApiError::not_found("No such sign-in link, or it was used or has expired.");
    if code.is_empty() || code.len() > 100 {
        return Err(not_found());
    }
    let person_id = store.use_login_link(&code, state.chat.clock().now_ms()).await?.ok_or_else(not_found)?;
    let person = store.person(&person_id).await?.ok_or_else(not_found)?;
    let (_, token) = store.issue_session(&person.id).await?;
    created(json!({ "person": wire::person(&person, true), "token": token }))
}

/// # `DELETE /session`
/// Signs out: revokes the browser session that makes the call; its sockets close at once.
pub async fn sign_out(State(state): State<ChatState>, Reader(caller): Reader) -> ApiResult {
    if caller.credential != CredentialKind::Session {
        return Err(ApiError::forbidden(
            "Only a browser session signs out here; revoke keys and tokens in the staff pages.",
        ));
    }
    state.chat.store().revoke_credential(&caller.credential_id).await?;
    state.chat.sessions().disconnect_credential(&caller.credential_id);
    no_content()
}

/// # `GET /bots`
/// The bots that are not deleted, ordered by id.
pub async fn list_bots(State(state): State<ChatState>, Staff(_caller): Staff) -> ApiResult {
    let bots = state.chat.store().bots().await?;
    ok(wire::list(bots.iter().map(wire::bot).collect(), None))
}
