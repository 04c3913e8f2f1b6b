//! One `ChannelActor` per channel: the one writer of that channel's messages and members.
//!
//! The actor holds the channel, its members and its newest seq, so the checks a write needs
//! (membership, authorship, the next seq) cost no query. It is spawned on first use by the
//! [`ChannelRegistry`], linked under the root supervisor, and stops itself when idle. A crashed
//! actor is replaced on the next use, its state read again from storage.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use agora_storage::chat::{Change, Channel, Member, MemberRef, Message, PrincipalKind};
use agora_storage::people::Role;
use agora_storage::time::Clock;
use agora_storage::{StorageError, Store};
use ractor::{Actor, ActorCell, ActorProcessingErr, ActorRef, ActorStatus, RpcReplyPort};
use tokio::sync::Mutex;

use super::ChatError;
use super::event_log::EventLog;
use super::rules::{Caller, MessageBody, may_delete, may_edit, parse_mentions};

/// How long a channel actor lives without work before it stops.
const IDLE_AFTER: Duration = Duration::from_secs(120);

/// A message posted: the message and whether it is a replay of an idempotency key.
pub type Posted = (Message, bool);

/// A member added: the member and whether it is new.
pub type Added = (Member, bool);

/// What a channel's fields may change to (`None`: unchanged).
#[derive(Debug, Clone, Default)]
pub struct ChannelPatch {
    pub name: Option<String>,
    pub topic: Option<Option<String>>,
    pub external: Option<bool>,
}

pub enum ChannelMsg {
    Post {
        caller: Caller,
        body: MessageBody,
        key: Option<String>,
        reply: RpcReplyPort<Result<Posted, ChatError>>,
    },
    Edit {
        caller: Caller,
        seq: i64,
        body: MessageBody,
        reply: RpcReplyPort<Result<Message, ChatError>>,
    },
    Delete {
        caller: Caller,
        seq: i64,
        reply: RpcReplyPort<Result<Message, ChatError>>,
    },
    AddMember {
        caller: Caller,
        principal_id: String,
        reply: RpcReplyPort<Result<Added, ChatError>>,
    },
    RemoveMember {
        caller: Caller,
        principal_id: String,
        reply: RpcReplyPort<Result<Member, ChatError>>,
    },
    Update {
        caller: Caller,
        patch: ChannelPatch,
        reply: RpcReplyPort<Result<Channel, ChatError>>,
    },
    /// Sent to itself on a timer: stop when there has been no work for [`IDLE_AFTER`].
    IdleCheck,
}

pub struct ChannelActor;

pub struct ChannelArgs {
    pub channel: Channel,
    pub deps: Deps,
}

/// What every channel actor uses.
#[derive(Clone)]
pub struct Deps {
    pub store: Store,
    pub event_log: EventLog,
    pub clock: Clock,
    pub registry: Arc<ChannelRegistry>,
}

pub struct ChannelState {
    channel: Channel,
    members: HashMap<String, Member>,
    deps: Deps,
    last_work: tokio::time::Instant,
}

impl Actor for ChannelActor {
    type Msg = ChannelMsg;
    type State = ChannelState;
    type Arguments = ChannelArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: ChannelArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        let members = args.deps.store.channel_members(&args.channel.id).await?;
        let members = members.into_iter().map(|m| (m.principal_id.clone(), m)).collect();
        myself.send_interval(IDLE_AFTER / 4, || ChannelMsg::IdleCheck);
        Ok(ChannelState {
            channel: args.channel,
            members,
            deps: args.deps,
            last_work: tokio::time::Instant::now(),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        if !matches!(message, ChannelMsg::IdleCheck) {
            state.last_work = tokio::time::Instant::now();
        }
        match message {
            ChannelMsg::Post { caller, body, key, reply } => {
                let _ = reply.send(state.post(&caller, body, key).await);
            }
            ChannelMsg::Edit { caller, seq, body, reply } => {
                let _ = reply.send(state.edit(&caller, seq, body).await);
            }
            ChannelMsg::Delete { caller, seq, reply } => {
                let _ = reply.send(state.delete(&caller, seq).await);
            }
            ChannelMsg::AddMember { caller, principal_id, reply } => {
                let _ = reply.send(state.add_member(&caller, &principal_id).await);
            }
            ChannelMsg::RemoveMember { caller, principal_id, reply } => {
                let _ = reply.send(state.remove_member(&caller, &principal_id).await);
            }
            ChannelMsg::Update { caller, patch, reply } => {
                let _ = reply.send(state.update(&caller, patch).await);
            }
            ChannelMsg::IdleCheck => {
                if state.last_work.elapsed() >= IDLE_AFTER {
                    // Leave the registry first, so no new caller gets this actor; then finish
                    // what is already queued and stop.
                    state.deps.registry.forget(&state.channel.id, &myself).await;
                    let _ = myself.drain();
                }
            }
        }
        Ok(())
    }
}

impl ChannelState {
    /// A caller who is not a member sees the channel as missing.
    fn check_member(&self, caller: &Caller) -> Result<(), ChatError> {
        if caller.is_system() || self.members.contains_key(&caller.principal_id) {
            Ok(())
        } else {
            Err(ChatError::NotFound("channel"))
        }
    }

    async fn post(
        &mut self,
        caller: &Caller,
        body: MessageBody,
        key: Option<String>,
    ) -> Result<Posted, ChatError> {
        self.check_member(caller)?;
        let store = &self.deps.store;
        // No read of the idempotency key first: the key is part of a record id, so the commit
        // itself refuses a used key (a conflict, answered below with the first message). A
        // first post, the common case, costs no storage read at all.
        let mentions = store.existing_handles(&parse_mentions(body.as_str())).await?;
        let message = Message {
            channel_id: self.channel.id.clone(),
            seq: self.channel.last_seq + 1,
            body: body.into_string(),
            source: caller.source(),
            actor_label: caller.actor_label(),
            author_id: caller.principal_id.clone(),
            author_kind: caller.kind,
            author_handle: caller.handle.clone(),
            version: 1,
            created_at: self.deps.clock.now_ms(),
            edited_at: None,
            deleted: false,
            deleted_at: None,
            mentions,
        };
        match self.deps.event_log.commit(Change::PostMessage { message, idempotency_key: key.clone() }).await
        {
            Ok(event) => {
                self.channel.last_seq += 1;
                if let Some(me) = self.members.get_mut(&caller.principal_id) {
                    me.last_read_seq = self.channel.last_seq;
                }
                let message = event.message.ok_or(ChatError::Storage(StorageError::Corrupt(
                    "a message event without its message".into(),
                )))?;
                Ok((message, false))
            }
            // The key was used before (a retry), or by the same author in another channel at the
            // same moment: the first post stands and is answered again.
            Err(StorageError::Conflict(_)) if key.is_some() => {
                let key = key.unwrap_or_default();
                let first = store.idempotent_message(&caller.principal_id, &key).await?;
                first.map(|m| (m, true)).ok_or(ChatError::Conflict("the idempotency key is in use".into()))
            }
            Err(e) => Err(e.into()),
        }
    }

    async fn load_message(&self, seq: i64) -> Result<Message, ChatError> {
        if seq > self.channel.last_seq {
            return Err(ChatError::NotFound("message"));
        }
        self.deps.store.message(&self.channel.id, seq).await?.ok_or(ChatError::NotFound("message"))
    }

    async fn edit(&mut self, caller: &Caller, seq: i64, body: MessageBody) -> Result<Message, ChatError> {
        self.check_member(caller)?;
        let current = self.load_message(seq).await?;
        may_edit(caller, &current).map_err(|r| ChatError::Forbidden(r.message("edit")))?;
        if current.deleted {
            return Err(ChatError::Conflict("the message was deleted".into()));
        }
        let mentions = self.deps.store.existing_handles(&parse_mentions(body.as_str())).await?;
        let previous_mentions = current.mentions.clone();
        let message = Message {
            body: body.into_string(),
            version: current.version + 1,
            edited_at: Some(self.deps.clock.now_ms()),
            mentions,
            ..current
        };
        let event = self.deps.event_log.commit(Change::EditMessage { message, previous_mentions }).await?;
        event.message.ok_or(ChatError::Storage(StorageError::Corrupt("an event without its message".into())))
    }

    async fn delete(&mut self, caller: &Caller, seq: i64) -> Result<Message, ChatError> {
        self.check_member(caller)?;
        let current = self.load_message(seq).await?;
        may_delete(caller, &current).map_err(|r| ChatError::Forbidden(r.message("delete")))?;
        if current.deleted {
            return Ok(current);
        }
        let previous_mentions = current.mentions.clone();
        let tombstone = Message {
            body: String::new(),
            mentions: Vec::new(),
            deleted: true,
            deleted_at: Some(self.deps.clock.now_ms()),
            version: current.version + 1,
            ..current
        };
        let event = self
            .deps
            .event_log
            .commit(Change::DeleteMessage { message: tombstone, previous_mentions })
            .await?;
        event.message.ok_or(ChatError::Storage(StorageError::Corrupt("an event without its message".into())))
    }

    async fn add_member(&mut self, caller: &Caller, principal_id: &str) -> Result<Added, ChatError> {
        self.check_member(caller)?;
        if let Some(existing) = self.members.get(principal_id) {
            return Ok((existing.clone(), false));
        }
        let store = &self.deps.store;
        let (who, guest) = if let Some(p) = store.person(principal_id).await? {
            (
                MemberRef { id: p.id, kind: PrincipalKind::Person, handle: p.handle, name: p.name },
                p.role == Role::Guest,
            )
        } else if let Some(b) = store.bot(principal_id).await?.filter(|b| b.deleted_at.is_none()) {
            (MemberRef { id: b.id, kind: PrincipalKind::Bot, handle: b.handle, name: b.name }, false)
        } else {
            return Err(ChatError::Invalid {
                field: "member_id",
                reason: "unknown_member",
                message: "no person or bot has this id".into(),
            });
        };
        if guest && !self.channel.external {
            return Err(ChatError::Conflict(
                "guests can only join external channels; make the channel external first".into(),
            ));
        }
        let member = Member {
            channel_id: self.channel.id.clone(),
            principal_id: who.id.clone(),
            kind: who.kind,
            handle: who.handle,
            name: who.name,
            added_at: self.deps.clock.now_ms(),
            last_read_seq: 0,
        };
        self.deps.event_log.commit(Change::AddMember { member: member.clone() }).await?;
        self.channel.member_count += 1;
        self.members.insert(member.principal_id.clone(), member.clone());
        Ok((member, true))
    }

    async fn remove_member(&mut self, caller: &Caller, principal_id: &str) -> Result<Member, ChatError> {
        self.check_member(caller)?;
        let member = self.members.get(principal_id).cloned().ok_or(ChatError::NotFound("member"))?;
        self.deps.event_log.commit(Change::RemoveMember { member: member.clone() }).await?;
        self.channel.member_count -= 1;
        self.members.remove(principal_id);
        Ok(member)
    }

    async fn update(&mut self, caller: &Caller, patch: ChannelPatch) -> Result<Channel, ChatError> {
        self.check_member(caller)?;
        let mut next = self.channel.clone();
        if let Some(name) = patch.name {
            next.name = name;
        }
        if let Some(topic) = patch.topic {
            next.topic = topic;
        }
        if let Some(external) = patch.external {
            if !external && self.channel.external {
                let mut guests = 0;
                for m in self.members.values().filter(|m| m.kind == PrincipalKind::Person) {
                    if self.deps.store.person(&m.principal_id).await?.is_some_and(|p| p.role == Role::Guest) {
                        guests += 1;
                    }
                }
                if guests > 0 {
                    return Err(ChatError::Conflict(format!(
                        "{guests} guest(s) are members: remove them before making the channel internal"
                    )));
                }
            }
            next.external = external;
        }
        self.deps.store.update_channel(&next).await?;
        self.channel = next.clone();
        Ok(next)
    }
}

/// Finds or starts the actor of a channel.
pub struct ChannelRegistry {
    /// Live channel actors by channel id. Bounded by the channels in use: idle actors leave.
    actors: Mutex<HashMap<String, ActorRef<ChannelMsg>>>,
    supervisor: ActorCell,
}

impl ChannelRegistry {
    pub fn new(supervisor: ActorCell) -> ChannelRegistry {
        ChannelRegistry { actors: Mutex::new(HashMap::new()), supervisor }
    }

    /// The live actor of `channel_id`, started when there is none. `NotFound` when the channel
    /// does not exist.
    pub async fn get(&self, channel_id: &str, deps: &Deps) -> Result<ActorRef<ChannelMsg>, ChatError> {
        let mut actors = self.actors.lock().await;
        if let Some(actor) = actors.get(channel_id)
            && matches!(
                actor.get_status(),
                ActorStatus::Running | ActorStatus::Starting | ActorStatus::Unstarted
            )
        {
            return Ok(actor.clone());
        }
        let channel = deps.store.channel(channel_id).await?.ok_or(ChatError::NotFound("channel"))?;
        let args = ChannelArgs { channel, deps: deps.clone() };
        let (actor, _) = Actor::spawn_linked(None, ChannelActor, args, self.supervisor.clone())
            .await
            .map_err(|e| ChatError::Unavailable(format!("starting the channel actor: {e}")))?;
        actors.insert(channel_id.to_owned(), actor.clone());
        Ok(actor)
    }

    /// Removes `actor` (only if it is still the one registered for the channel).
    pub async fn forget(&self, channel_id: &str, actor: &ActorRef<ChannelMsg>) {
        let mut actors = self.actors.lock().await;
        if actors.get(channel_id).is_some_and(|a| a.get_id() == actor.get_id()) {
            actors.remove(channel_id);
        }
    }
}
