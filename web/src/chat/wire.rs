//! The chat API's JSON shapes, and its opaque cursors.

use agora_actors::chat::rules::Caller;
use agora_storage::chat::{Channel, Member, MemberRef, Message};
use agora_storage::people::{Bot, Credential, Invite, Person};
use agora_storage::time::rfc3339;
use serde_json::{Value, json};

use super::error::ApiError;

pub fn message(m: &Message) -> Value {
    let mut v = json!({
        "id": m.id(),
        "channel_id": m.channel_id,
        "body": m.body,
        "source": m.source,
        "actor_label": m.actor_label,
        "author": { "id": m.author_id, "kind": m.author_kind, "handle": m.author_handle },
        "version": m.version,
        "created_at": rfc3339(m.created_at),
        "edited_at": m.edited_at.map(rfc3339),
        "deleted": m.deleted,
        "mentions": m.mentions,
    });
    if let Some(at) = m.deleted_at {
        v["deleted_at"] = json!(rfc3339(at));
    }
    v
}

pub fn channel(c: &Channel) -> Value {
    json!({
        "id": c.id,
        "name": c.name,
        "topic": c.topic,
        "external": c.external,
        "created_at": rfc3339(c.created_at),
        "member_count": c.member_count,
    })
}

/// An item of `GET /channels`: the channel with the caller's unread count and read marker.
pub fn channel_item(c: &Channel, me: &Member) -> Value {
    let mut v = channel(c);
    v["unread_count"] = json!((c.last_seq - me.last_read_seq).max(0));
    v["last_read_id"] = if me.last_read_seq > 0 {
        json!(agora_storage::chat::message_id(&c.id, me.last_read_seq))
    } else {
        Value::Null
    };
    v
}

pub fn member(m: &Member) -> Value {
    json!({
        "id": m.principal_id,
        "kind": m.kind,
        "handle": m.handle,
        "name": m.name,
        "added_at": rfc3339(m.added_at),
    })
}

pub fn member_ref(m: &MemberRef) -> Value {
    json!({ "id": m.id, "kind": m.kind, "handle": m.handle, "name": m.name })
}

/// A person; the e-mail address only when `show_email`.
pub fn person(p: &Person, show_email: bool) -> Value {
    let mut v = json!({
        "id": p.id,
        "kind": "person",
        "name": p.name,
        "handle": p.handle,
        "role": p.role,
        "created_at": rfc3339(p.created_at),
    });
    if show_email {
        v["email"] = json!(p.email);
    }
    v
}

pub fn bot(b: &Bot) -> Value {
    json!({
        "id": b.id,
        "kind": "bot",
        "name": b.name,
        "handle": b.handle,
        "created_at": rfc3339(b.created_at),
        "created_by": b.created_by,
    })
}

pub fn key(c: &Credential) -> Value {
    json!({
        "id": c.pid,
        "name": c.name,
        "created_at": rfc3339(c.created_at),
        "revoked_at": c.revoked_at.map(rfc3339),
    })
}

pub fn invite(i: &Invite) -> Value {
    json!({
        "id": i.id,
        "email": i.email,
        "name": i.name,
        "channel_ids": i.channel_ids,
        "created_at": rfc3339(i.created_at),
        "expires_at": rfc3339(i.expires_at),
        "accepted_at": i.accepted_at.map(rfc3339),
        "revoked_at": i.revoked_at.map(rfc3339),
    })
}

pub fn connector_token(c: &Credential) -> Value {
    json!({
        "id": c.pid,
        "person_id": c.person_id,
        "scope": c.scope,
        "created_at": rfc3339(c.created_at),
        "revoked_at": c.revoked_at.map(rfc3339),
    })
}

/// `GET /me`: who the caller is, and how what it posts will be labelled.
pub fn me(caller: &Caller, email: Option<&str>) -> Value {
    let mut v = json!({
        "id": caller.principal_id,
        "kind": caller.kind,
        "name": caller.name,
        "handle": caller.handle,
        "role": caller.role,
        "credential": {
            "id": caller.credential_id,
            "kind": caller.credential,
            "scope": caller.scope,
            "name": caller.key_name,
        },
        "source": caller.source(),
        "actor_label": caller.actor_label(),
        "staff": caller.is_staff(),
        "may_write": caller.may_write(),
    });
    if let Some(email) = email {
        v["email"] = json!(email);
    }
    v
}

/// A feed item: `{cursor, kind, at, channel_id, message?, member?, channel?}`. The same item is a
/// socket frame's `message`, so a client can resume the feed from the last frame's `cursor`.
pub fn event(e: &agora_storage::chat::Event, cursor: String) -> Value {
    let mut v = json!({
        "cursor": cursor,
        "kind": e.kind,
        "at": rfc3339(e.at),
        "channel_id": e.channel_id,
    });
    if let Some(m) = &e.message {
        v["message"] = message(m);
    }
    if let Some(m) = &e.member {
        v["member"] = member_ref(m);
    }
    if let Some(c) = &e.channel {
        v["channel"] = channel(c);
    }
    v
}

/// The list envelope: `{items, next_cursor}`.
pub fn list(items: Vec<Value>, next_cursor: Option<String>) -> Value {
    json!({ "items": items, "next_cursor": next_cursor })
}

/// Opaque cursors (parsed in `agora_wire::cursor`, which is fuzzed): anything this server did not
/// make is `400 bad_request`.
pub mod cursor {
    use super::ApiError;

    pub use agora_wire::cursor::encode;

    fn bad(_: agora_wire::cursor::BadCursor) -> ApiError {
        ApiError::bad_request("This cursor was not issued by this server for this list.")
    }

    pub fn decode(kind: &str, cursor: &str) -> Result<String, ApiError> {
        agora_wire::cursor::decode(kind, cursor).map_err(bad)
    }

    /// A cursor whose payload is a non-negative number.
    pub fn decode_number(kind: &str, cursor: &str) -> Result<i64, ApiError> {
        agora_wire::cursor::decode_number(kind, cursor).map_err(bad)
    }
}

/// `limit`: default 50; above 100 is 100; below 1 or not a number is `422`.
pub fn parse_limit(raw: Option<&str>) -> Result<usize, ApiError> {
    let Some(raw) = raw else { return Ok(50) };
    let bad =
        || ApiError::unprocessable("limit", "invalid_limit", "limit must be a whole number from 1 to 100");
    let n: i64 = raw.trim().parse().map_err(|_| bad())?;
    if n < 1 {
        return Err(bad());
    }
    Ok(usize::try_from(n.min(100)).unwrap_or(100))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits() {
        assert_eq!(parse_limit(None).ok(), Some(50));
        assert_eq!(parse_limit(Some("1")).ok(), Some(1));
        assert_eq!(parse_limit(Some("100")).ok(), Some(100));
        assert_eq!(parse_limit(Some("1000")).ok(), Some(100));
        assert!(parse_limit(Some("0")).is_err());
        assert!(parse_limit(Some("-3")).is_err());
        assert!(parse_limit(Some("ten")).is_err());
        assert!(parse_limit(Some("")).is_err());
    }
}
