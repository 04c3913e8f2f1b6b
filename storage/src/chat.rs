//! Channels, memberships, messages, mentions and the event log, as stored.
//!
//! Writes that change what a feed reader sees are [`Change`]s committed by
//! [`Store::commit_changes`] together with their events, several changes in one transaction. Only
//! the event log actor calls it: it is the single writer that numbers events, so commit order is
//! sequence order. Reads are plain queries, each bounded: a page of messages is an exact key range
//! (`msg:[channel, lo]..=[channel, hi]`), never an open range with a `LIMIT`.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::db::Store;
use crate::error::{Result, StorageError};
use crate::people::{decode, is_duplicate};

/// Who wrote a message, as chat.md's `source` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Human,
    Agent,
    Bot,
    Imported,
    System,
}

/// The kind of principal a member or author is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrincipalKind {
    Person,
    Bot,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Channel {
    pub id: String,
    pub name: String,
    pub topic: Option<String>,
    pub external: bool,
    pub created_at: i64,
    pub created_by: String,
    /// The seq of the newest message (0 when there is none).
    pub last_seq: i64,
    pub member_count: i64,
}

/// A person or bot as shown in a member list or a member event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberRef {
    pub id: String,
    pub kind: PrincipalKind,
    pub handle: String,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    pub channel_id: String,
    pub principal_id: String,
    pub kind: PrincipalKind,
    pub handle: String,
    pub name: String,
    pub added_at: i64,
    /// The seq of the newest message this member has read (0: none).
    pub last_read_seq: i64,
}

impl Member {
    pub fn as_ref(&self) -> MemberRef {
        MemberRef {
            id: self.principal_id.clone(),
            kind: self.kind,
            handle: self.handle.clone(),
            name: self.name.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub channel_id: String,
    pub seq: i64,
    pub body: String,
    pub source: Source,
    pub actor_label: String,
    pub author_id: String,
    pub author_kind: PrincipalKind,
    pub author_handle: String,
    pub version: i64,
    pub created_at: i64,
    pub edited_at: Option<i64>,
    pub deleted: bool,
    pub deleted_at: Option<i64>,
    /// Handles of the people and bots the body mentions (`@handle`), lowercase, each once.
    pub mentions: Vec<String>,
}

impl Message {
    /// The public id: `<channel id>-<seq>`.
    pub fn id(&self) -> String {
        message_id(&self.channel_id, self.seq)
    }
}

/// The public id of message `seq` in `channel_id`.
pub fn message_id(channel_id: &str, seq: i64) -> String {
    format!("{channel_id}-{seq}")
}

/// Splits a public message id into channel id and seq; `None` for anything this server did not make.
pub fn parse_message_id(id: &str) -> Option<(String, i64)> {
    let (channel, seq) = id.rsplit_once('-')?;
    if !crate::ids::is_id(channel, "c_") {
        return None;
    }
    if seq.is_empty() || seq.len() > 18 || !seq.bytes().all(|b| b.is_ascii_digit()) || seq.starts_with('0') {
        return None;
    }
    let seq: i64 = seq.parse().ok()?;
    Some((channel.to_owned(), seq))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum EventKind {
    #[serde(rename = "message.created")]
    MessageCreated,
    #[serde(rename = "message.updated")]
    MessageUpdated,
    #[serde(rename = "message.deleted")]
    MessageDeleted,
    #[serde(rename = "member.added")]
    MemberAdded,
    #[serde(rename = "member.removed")]
    MemberRemoved,
    #[serde(rename = "channel.created")]
    ChannelCreated,
}

/// One entry of the event log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    pub seq: i64,
    pub kind: EventKind,
    pub at: i64,
    pub channel_id: String,
    pub message: Option<Message>,
    pub member: Option<MemberRef>,
    pub channel: Option<Channel>,
}

/// A change that makes an event. Each is committed with its event, atomically.
#[derive(Debug, Clone)]
pub enum Change {
    /// A new message; `idempotency_key` is recorded under the author.
    PostMessage {
        message: Message,
        idempotency_key: Option<String>,
    },
    /// An edit (`previous_mentions` are the handles whose mention rows go).
    EditMessage {
        message: Message,
        previous_mentions: Vec<String>,
    },
    /// A deletion: `message` is the tombstone.
    DeleteMessage {
        message: Message,
        previous_mentions: Vec<String>,
    },
    /// A new channel with its creator as the first member.
    CreateChannel {
        channel: Channel,
        creator: Member,
    },
    AddMember {
        member: Member,
    },
    RemoveMember {
        member: Member,
    },
}

impl Change {
    fn event(&self, seq: i64, at: i64) -> Event {
        let (kind, channel_id, message, member, channel) = match self {
            Change::PostMessage { message, .. } => {
                (EventKind::MessageCreated, &message.channel_id, Some(message.clone()), None, None)
            }
            Change::EditMessage { message, .. } => {
                (EventKind::MessageUpdated, &message.channel_id, Some(message.clone()), None, None)
            }
            Change::DeleteMessage { message, .. } => {
                (EventKind::MessageDeleted, &message.channel_id, Some(message.clone()), None, None)
            }
            Change::CreateChannel { channel, .. } => {
                (EventKind::ChannelCreated, &channel.id, None, None, Some(channel.clone()))
            }
            Change::AddMember { member } => {
                (EventKind::MemberAdded, &member.channel_id, None, Some(member.as_ref()), None)
            }
            Change::RemoveMember { member } => {
                (EventKind::MemberRemoved, &member.channel_id, None, Some(member.as_ref()), None)
            }
        };
        Event { seq, kind, at, channel_id: channel_id.clone(), message, member, channel }
    }

    /// Appends this change's statements to `sql`, naming its variables with suffix `i`.
    fn write_sql(&self, i: usize, sql: &mut String, vars: &mut serde_json::Map<String, Value>) -> Result<()> {
        let mut bind = |name: &str, v: Value| {
            vars.insert(format!("{name}{i}"), v);
        };
        match self {
            Change::PostMessage { message, idempotency_key } => {
                bind("c", json!(message.channel_id));
                bind("s", json!(message.seq));
                bind("a", json!(message.author_id));
                bind("m", to(message)?);
                let _ = writeln!(sql, "CREATE type::record('msg', [$c{i}, $s{i}]) CONTENT $m{i};");
                if let Some(key) = idempotency_key {
                    bind("k", json!(key));
                    let _ = writeln!(
                        sql,
                        "CREATE type::record('idem', [$a{i}, $k{i}]) CONTENT {{ channel_id: $c{i}, seq: $s{i} }};"
                    );
                }
                let _ = writeln!(sql, "UPDATE type::record('channel', $c{i}) SET last_seq = $s{i};");
                // Your own message is never unread.
                let _ = writeln!(
                    sql,
                    "UPDATE type::record('member', [$c{i}, $a{i}]) SET last_read_seq = $s{i} WHERE last_read_seq < $s{i};"
                );
                write_mentions(i, message, &[], sql, &mut bind);
            }
            Change::EditMessage { message, previous_mentions }
            | Change::DeleteMessage { message, previous_mentions } => {
                bind("c", json!(message.channel_id));
                bind("s", json!(message.seq));
                bind("m", to(message)?);
                let _ = writeln!(sql, "UPDATE type::record('msg', [$c{i}, $s{i}]) CONTENT $m{i};");
                write_mentions(i, message, previous_mentions, sql, &mut bind);
            }
            Change::CreateChannel { channel, creator } => {
                bind("c", json!(channel.id));
                bind("ch", to(channel)?);
                bind("p", json!(creator.principal_id));
                bind("mb", to(creator)?);
                let _ = writeln!(sql, "CREATE type::record('channel', $c{i}) CONTENT $ch{i};");
                let _ = writeln!(sql, "CREATE type::record('member', [$c{i}, $p{i}]) CONTENT $mb{i};");
            }
            Change::AddMember { member } => {
                bind("c", json!(member.channel_id));
                bind("p", json!(member.principal_id));
                bind("mb", to(member)?);
                let _ = writeln!(sql, "CREATE type::record('member', [$c{i}, $p{i}]) CONTENT $mb{i};");
                let _ = writeln!(sql, "UPDATE type::record('channel', $c{i}) SET member_count += 1;");
            }
            Change::RemoveMember { member } => {
                bind("c", json!(member.channel_id));
                bind("p", json!(member.principal_id));
                let _ = writeln!(sql, "DELETE type::record('member', [$c{i}, $p{i}]);");
                let _ = writeln!(sql, "UPDATE type::record('channel', $c{i}) SET member_count -= 1;");
            }
        }
        Ok(())
    }
}

/// Replaces the mention rows of `message`: removes those of `previous`, adds its current ones.
fn write_mentions(
    i: usize,
    message: &Message,
    previous: &[String],
    sql: &mut String,
    bind: &mut impl FnMut(&str, Value),
) {
    for (j, handle) in previous.iter().enumerate() {
        bind(&format!("oh{j}_"), json!(handle));
        let _ = writeln!(sql, "DELETE type::record('mention', [$oh{j}_{i}, $c{i}, $s{i}]);");
    }
    for (j, handle) in message.mentions.iter().enumerate() {
        bind(&format!("nh{j}_"), json!(handle));
        let _ = writeln!(
            sql,
            "UPSERT type::record('mention', [$nh{j}_{i}, $c{i}, $s{i}]) CONTENT {{ handle: $nh{j}_{i}, channel_id: $c{i}, seq: $s{i}, at: {at} }};",
            at = message.created_at
        );
    }
}

/// A stored type as JSON, with storage's error.
fn to<T: Serialize>(value: &T) -> Result<Value> {
    serde_json::to_value(value).map_err(StorageError::corrupt)
}

/// How far back a search or mention list may page.
pub const MAX_SEARCH_OFFSET: usize = 10_000;

impl Store {
    pub async fn channel(&self, id: &str) -> Result<Option<Channel>> {
        let rows = self.query_rows("SELECT * FROM type::record('channel', $id)", json!({ "id": id })).await?;
        rows.into_iter().next().map(decode).transpose()
    }

    /// Several channels by id, in the order asked (missing ones left out), in one round trip.
    pub async fn channels_by_id(&self, ids: &[String]) -> Result<Vec<Channel>> {
        let keys: Vec<Value> = ids.iter().map(|id| json!(id)).collect();
        self.get_many("channel", &keys).await?.into_iter().flatten().map(decode).collect()
    }

    /// Updates a channel's name, topic or external flag (no event: chat.md has none for it).
    pub async fn update_channel(&self, channel: &Channel) -> Result<()> {
        self.execute(
            "UPDATE type::record('channel', $id) MERGE { name: $name, topic: $topic, external: $external };",
            json!({ "id": channel.id, "name": channel.name, "topic": channel.topic, "external": channel.external }),
        )
        .await?;
        Ok(())
    }

    pub async fn member(&self, channel_id: &str, principal_id: &str) -> Result<Option<Member>> {
        let rows = self
            .query_rows(
                "SELECT * FROM type::record('member', [$c, $p])",
                json!({ "c": channel_id, "p": principal_id }),
            )
            .await?;
        rows.into_iter().next().map(decode).transpose()
    }

    /// Every member of a channel, ordered by principal id.
    pub async fn channel_members(&self, channel_id: &str) -> Result<Vec<Member>> {
        let rows = self
            .query_rows(
                "SELECT * FROM member WHERE channel_id = $c ORDER BY principal_id",
                json!({ "c": channel_id }),
            )
            .await?;
        rows.into_iter().map(decode).collect()
    }

    /// Every membership of every channel: what the fan-out starts from. One read at start-up,
    /// as large as the memberships of the whole server.
    pub async fn all_memberships(&self) -> Result<Vec<Member>> {
        let rows = self.query_rows("SELECT * FROM member", Value::Null).await?;
        rows.into_iter().map(decode).collect()
    }

    /// Every membership of a principal, ordered by channel id.
    pub async fn memberships(&self, principal_id: &str) -> Result<Vec<Member>> {
        let rows = self
            .query_rows(
                "SELECT * FROM member WHERE principal_id = $p ORDER BY channel_id",
                json!({ "p": principal_id }),
            )
            .await?;
        rows.into_iter().map(decode).collect()
    }

    /// Moves a member's read marker forward to `seq` (never back). False when not a member.
    pub async fn mark_read(&self, channel_id: &str, principal_id: &str, seq: i64) -> Result<bool> {
        let rows = self
            .query_rows(
                "UPDATE type::record('member', [$c, $p]) SET last_read_seq = math::max([last_read_seq, $s]) WHERE channel_id = $c RETURN AFTER",
                json!({ "c": channel_id, "p": principal_id, "s": seq }),
            )
            .await?;
        Ok(!rows.is_empty())
    }

    pub async fn message(&self, channel_id: &str, seq: i64) -> Result<Option<Message>> {
        let rows = self
            .query_rows("SELECT * FROM type::record('msg', [$c, $s])", json!({ "c": channel_id, "s": seq }))
            .await?;
        rows.into_iter().next().map(decode).transpose()
    }

    /// Messages `lo..=hi` of a channel, newest first: one bounded key range.
    pub async fn messages_between(&self, channel_id: &str, lo: i64, hi: i64) -> Result<Vec<Message>> {
        if hi < lo || hi < 1 {
            return Ok(Vec::new());
        }
        let rows = self
            .query_rows(
                "SELECT * FROM msg:[$c,$lo]..=[$c,$hi] ORDER BY seq DESC",
                json!({ "c": channel_id, "lo": lo.max(1), "hi": hi }),
            )
            .await?;
        rows.into_iter().map(decode).collect()
    }

    /// The message an author's idempotency key already made, if any.
    pub async fn idempotent_message(&self, author_id: &str, key: &str) -> Result<Option<Message>> {
        let rows = self
            .query_rows("SELECT * FROM type::record('idem', [$a, $k])", json!({ "a": author_id, "k": key }))
            .await?;
        let Some(row) = rows.into_iter().next() else { return Ok(None) };
        let channel = row.get("channel_id").and_then(Value::as_str).unwrap_or_default().to_owned();
        let seq = row.get("seq").and_then(Value::as_i64).unwrap_or_default();
        self.message(&channel, seq).await
    }

    /// Which of `handles` belong to a person or bot.
    pub async fn existing_handles(&self, handles: &[String]) -> Result<Vec<String>> {
        let keys: Vec<Value> = handles.iter().map(|h| json!(h)).collect();
        let found = self.get_many("handle", &keys).await?;
        Ok(handles.iter().zip(found).filter(|(_, row)| row.is_some()).map(|(h, _)| h.clone()).collect())
    }

    /// Full-text search over the live messages of `channel_ids`: every word must match (on
    /// stems, case-insensitive), newest first. Served by the `msg_body` full-text index.
    pub async fn search_messages(
        &self,
        channel_ids: &[String],
        query: &str,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<Message>> {
        if channel_ids.is_empty() {
            return Ok(Vec::new());
        }
        let rows = self
            .query_rows(
                "SELECT * FROM msg WHERE body @1,AND@ $q AND channel_id IN $channels AND deleted = false ORDER BY created_at DESC, seq DESC LIMIT $limit START $offset",
                json!({ "q": query, "channels": channel_ids, "limit": limit, "offset": offset }),
            )
            .await?;
        rows.into_iter().map(decode).collect()
    }

    /// Messages that mention `handle` in `channel_ids`, newest first, tombstones excluded.
    pub async fn mentions_of(
        &self,
        handle: &str,
        channel_ids: &[String],
        offset: usize,
        limit: usize,
    ) -> Result<Vec<Message>> {
        if channel_ids.is_empty() {
            return Ok(Vec::new());
        }
        let rows = self
            .query_rows(
                "SELECT channel_id, seq, at FROM mention WHERE handle = $h AND channel_id IN $channels ORDER BY at DESC, seq DESC LIMIT $limit START $offset",
                json!({ "h": handle, "channels": channel_ids, "limit": limit, "offset": offset }),
            )
            .await?;
        let keys: Vec<Value> = rows.iter().map(|r| json!([r.get("channel_id"), r.get("seq")])).collect();
        let messages: Vec<Message> =
            self.get_many("msg", &keys).await?.into_iter().flatten().map(decode).collect::<Result<_>>()?;
        Ok(messages.into_iter().filter(|m| !m.deleted).collect())
    }

    /// The sequence number of the newest event (0 when none).
    pub async fn last_event_seq(&self) -> Result<i64> {
        let rows = self.query_rows("SELECT n FROM counter:events", Value::Null).await?;
        Ok(rows.first().and_then(|r| r.get("n")).and_then(Value::as_i64).unwrap_or(0))
    }

    /// Events with seq in `lo..=hi`, oldest first: one bounded key range.
    pub async fn events_between(&self, lo: i64, hi: i64) -> Result<Vec<Event>> {
        if hi < lo {
            return Ok(Vec::new());
        }
        let rows = self
            .query_rows("SELECT * FROM event:[$lo]..=[$hi] ORDER BY seq", json!({ "lo": lo, "hi": hi }))
            .await?;
        rows.into_iter().map(decode).collect()
    }

    /// Commits changes, each with its event, in one transaction. `first_seq` numbers the first
    /// change's event; the rest follow in order. Returns the events.
    ///
    /// Fails as a whole: the caller (the event log) retries a failed group one change at a time,
    /// so that one bad change cannot sink the others.
    pub async fn commit_changes(&self, first_seq: i64, at: i64, changes: &[Change]) -> Result<Vec<Event>> {
        let mut sql = String::from("BEGIN TRANSACTION;\n");
        let mut vars = serde_json::Map::new();
        let mut events = Vec::with_capacity(changes.len());
        for (i, change) in changes.iter().enumerate() {
            let seq = first_seq + i as i64;
            change.write_sql(i, &mut sql, &mut vars)?;
            let event = change.event(seq, at);
            vars.insert(format!("ev{i}"), serde_json::to_value(&event).map_err(StorageError::corrupt)?);
            vars.insert(format!("es{i}"), json!(seq));
            let _ = writeln!(sql, "CREATE type::record('event', [$es{i}]) CONTENT $ev{i};");
            events.push(event);
        }
        let last = first_seq + changes.len() as i64 - 1;
        vars.insert("last_event".into(), json!(last));
        sql.push_str("UPSERT counter:events SET n = $last_event;\nCOMMIT TRANSACTION;");
        match self.execute(&sql, Value::Object(vars)).await {
            Ok(_) => Ok(events),
            Err(e) if is_duplicate(&e) => Err(StorageError::Conflict("a record of this change".into())),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_ids_round_trip() {
        let c = crate::ids::new_id("c_");
        let id = message_id(&c, 42);
        assert_eq!(parse_message_id(&id), Some((c.clone(), 42)));
        assert_eq!(parse_message_id(&format!("{c}-0")), None);
        assert_eq!(parse_message_id(&format!("{c}--1")), None);
        assert_eq!(parse_message_id(&format!("{c}-x")), None);
        assert_eq!(parse_message_id(&format!("{c}-+5")), None);
        assert_eq!(parse_message_id(&format!("{c}-05")), None);
        assert_eq!(parse_message_id("c_nope-1"), None);
        assert_eq!(parse_message_id("42"), None);
    }

    fn msg(channel: &str, seq: i64, body: &str, mentions: &[&str]) -> Message {
        Message {
            channel_id: channel.into(),
            seq,
            body: body.into(),
            source: Source::Human,
            actor_label: "Ada".into(),
            author_id: "p_ada".into(),
            author_kind: PrincipalKind::Person,
            author_handle: "ada".into(),
            version: 1,
            created_at: 1_000 + seq,
            edited_at: None,
            deleted: false,
            deleted_at: None,
            mentions: mentions.iter().map(|m| (*m).to_owned()).collect(),
        }
    }

    #[tokio::test]
    async fn changes_commit_with_their_events_and_read_back_in_bounded_ranges() {
        let store = Store::open(&crate::DbSettings::memory()).await.expect("open");
        let c = crate::ids::new_id("c_");
        let channel = Channel {
            id: c.clone(),
            name: "general".into(),
            topic: None,
            external: false,
            created_at: 1,
            created_by: "p_ada".into(),
            last_seq: 0,
            member_count: 1,
        };
        let creator = Member {
            channel_id: c.clone(),
            principal_id: "p_ada".into(),
            kind: PrincipalKind::Person,
            handle: "ada".into(),
            name: "Ada".into(),
            added_at: 1,
            last_read_seq: 0,
        };
        store.commit_changes(1, 1, &[Change::CreateChannel { channel, creator }]).await.expect("create");
        let posts: Vec<Change> = (1..=5)
            .map(|s| Change::PostMessage {
                message: msg(
                    &c,
                    s,
                    &format!("running tests number {s}"),
                    if s == 3 { &["bob"] } else { &[] },
                ),
                idempotency_key: Some(format!("k{s}")),
            })
            .collect();
        let events = store.commit_changes(2, 2, &posts).await.expect("posts");
        assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![2, 3, 4, 5, 6]);
        assert_eq!(store.last_event_seq().await.expect("last"), 6);
        assert_eq!(store.channel(&c).await.expect("channel").expect("exists").last_seq, 5);
        assert_eq!(store.member(&c, "p_ada").await.expect("m").expect("member").last_read_seq, 5);

        let page = store.messages_between(&c, 2, 4).await.expect("page");
        assert_eq!(page.iter().map(|m| m.seq).collect::<Vec<_>>(), vec![4, 3, 2]);
        let evs = store.events_between(3, 4).await.expect("events");
        assert_eq!(evs.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![3, 4]);
        assert_eq!(evs[0].kind, EventKind::MessageCreated);

        // A repeated idempotency key fails the whole group and changes nothing.
        let dup =
            Change::PostMessage { message: msg(&c, 6, "again", &[]), idempotency_key: Some("k1".into()) };
        let err = store.commit_changes(7, 3, &[dup]).await.expect_err("duplicate key");
        assert!(matches!(err, StorageError::Conflict(_)), "{err}");
        assert_eq!(store.last_event_seq().await.expect("last"), 6);
        assert!(store.message(&c, 6).await.expect("m").is_none());
        let first = store.idempotent_message("p_ada", "k1").await.expect("idem").expect("found");
        assert_eq!(first.seq, 1);

        let found = store.search_messages(std::slice::from_ref(&c), "RUN test", 0, 10).await.expect("search");
        assert_eq!(found.len(), 5, "stems match: run/running, test/tests");
        let none = store
            .search_messages(std::slice::from_ref(&c), "running elephants", 0, 10)
            .await
            .expect("search");
        assert!(none.is_empty(), "every word must match");

        let mentions = store.mentions_of("bob", std::slice::from_ref(&c), 0, 10).await.expect("mentions");
        assert_eq!(mentions.iter().map(|m| m.seq).collect::<Vec<_>>(), vec![3]);
        assert!(store.mark_read(&c, "p_ada", 2).await.expect("mark"));
        assert_eq!(
            store.member(&c, "p_ada").await.expect("m").expect("member").last_read_seq,
            5,
            "never back"
        );
        assert!(!store.mark_read(&c, "p_nobody", 2).await.expect("mark"));
    }

    #[test]
    fn event_kinds_have_the_wire_names() {
        let v = serde_json::to_value(EventKind::MemberRemoved).expect("json");
        assert_eq!(v, "member.removed");
    }
}
