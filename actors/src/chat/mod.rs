//! The chat's live state: the event log, one actor per channel, and [`Chat`], the handle the web
//! layer calls for every write.
//!
//! Reads do not come here: they go straight to storage.

pub mod channel;
pub mod event_log;
pub mod rules;
pub mod sessions;

use std::sync::Arc;
use std::time::Duration;

use agora_storage::chat::{Change, Channel, Member, Message, PrincipalKind, parse_message_id};
use agora_storage::ids::new_id;
use agora_storage::time::Clock;
use agora_storage::{StorageError, Store};
use ractor::ActorRef;
use ractor::rpc::CallResult;

use self::channel::{Added, ChannelMsg, ChannelPatch, ChannelRegistry, Deps, Posted};
use self::event_log::EventLog;
use self::rules::{Caller, MessageBody};

/// How long a handler waits for a channel actor before answering 500.
const CALL_TIMEOUT: Duration = Duration::from_secs(15);

/// Why a chat operation did not happen. The web layer turns each into its status and code.
#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    /// The thing does not exist, or the caller may not know it exists.
    #[error("{0} not found")]
    NotFound(&'static str),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{message}")]
    Invalid { field: &'static str, reason: &'static str, message: String },
    /// An actor did not answer in time or has stopped.
    #[error("{0}")]
    Unavailable(String),
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// The handle the web layer uses for every chat write. Cheap to clone.
#[derive(Clone)]
pub struct Chat {
    deps: Deps,
    sessions: Arc<sessions::Sessions>,
}

impl Chat {
    pub(crate) fn new(
        store: Store,
        event_log: EventLog,
        clock: Clock,
        registry: Arc<ChannelRegistry>,
        sessions: Arc<sessions::Sessions>,
    ) -> Chat {
        Chat { deps: Deps { store, event_log, clock, registry }, sessions }
    }

    /// The live socket sessions.
    pub fn sessions(&self) -> &Arc<sessions::Sessions> {
        &self.sessions
    }

    pub fn store(&self) -> &Store {
        &self.deps.store
    }

    pub fn clock(&self) -> &Clock {
        &self.deps.clock
    }

    pub fn event_log(&self) -> &EventLog {
        &self.deps.event_log
    }

    /// Sends a call to a channel's actor, starting it when needed. A call that finds the actor
    /// stopping (it went idle a moment ago) is sent once more to a fresh one.
    async fn call<T: Send + 'static>(
        &self,
        channel_id: &str,
        make: impl Fn(ractor::RpcReplyPort<Result<T, ChatError>>) -> ChannelMsg,
    ) -> Result<T, ChatError> {
        for _ in 0..2 {
            let actor: ActorRef<ChannelMsg> = self.deps.registry.get(channel_id, &self.deps).await?;
            match actor.call(&make, Some(CALL_TIMEOUT)).await {
                Ok(CallResult::Success(result)) => return result,
                Ok(CallResult::Timeout) => {
                    return Err(ChatError::Unavailable("the channel did not answer in time".into()));
                }
                Ok(CallResult::SenderError) | Err(_) => {
                    self.deps.registry.forget(channel_id, &actor).await;
                }
            }
        }
        Err(ChatError::Unavailable("the channel is restarting; try again".into()))
    }

    /// Posts a message; a repeated idempotency key returns the first message (`true`: replayed).
    pub async fn post_message(
        &self,
        caller: &Caller,
        channel_id: &str,
        body: MessageBody,
        idempotency_key: Option<String>,
    ) -> Result<Posted, ChatError> {
        self.call(channel_id, |reply| ChannelMsg::Post {
            caller: caller.clone(),
            body: body.clone(),
            key: idempotency_key.clone(),
            reply,
        })
        .await
    }

    fn locate(message_id: &str) -> Result<(String, i64), ChatError> {
        parse_message_id(message_id).ok_or(ChatError::NotFound("message"))
    }

    pub async fn edit_message(
        &self,
        caller: &Caller,
        message_id: &str,
        body: MessageBody,
    ) -> Result<Message, ChatError> {
        let (channel_id, seq) = Self::locate(message_id)?;
        self.call(&channel_id, |reply| ChannelMsg::Edit {
            caller: caller.clone(),
            seq,
            body: body.clone(),
            reply,
        })
        .await
        .map_err(channel_means_message)
    }

    pub async fn delete_message(&self, caller: &Caller, message_id: &str) -> Result<Message, ChatError> {
        let (channel_id, seq) = Self::locate(message_id)?;
        self.call(&channel_id, |reply| ChannelMsg::Delete { caller: caller.clone(), seq, reply })
            .await
            .map_err(channel_means_message)
    }

    /// Creates a channel with the caller as its first member.
    pub async fn create_channel(
        &self,
        caller: &Caller,
        name: String,
        topic: Option<String>,
        external: bool,
    ) -> Result<Channel, ChatError> {
        let now = self.deps.clock.now_ms();
        let channel = Channel {
            id: new_id("c_"),
            name,
            topic,
            external,
            created_at: now,
            created_by: caller.principal_id.clone(),
            last_seq: 0,
            member_count: 1,
        };
        let creator = Member {
            channel_id: channel.id.clone(),
            principal_id: caller.principal_id.clone(),
            kind: PrincipalKind::Person,
            handle: caller.handle.clone(),
            name: caller.name.clone(),
            added_at: now,
            last_read_seq: 0,
        };
        // A new random id has no actor and no other writer yet: commit directly.
        self.deps.event_log.commit(Change::CreateChannel { channel: channel.clone(), creator }).await?;
        Ok(channel)
    }

    pub async fn update_channel(
        &self,
        caller: &Caller,
        channel_id: &str,
        patch: ChannelPatch,
    ) -> Result<Channel, ChatError> {
        self.call(channel_id, |reply| ChannelMsg::Update {
            caller: caller.clone(),
            patch: patch.clone(),
            reply,
        })
        .await
    }

    pub async fn add_member(
        &self,
        caller: &Caller,
        channel_id: &str,
        principal_id: &str,
    ) -> Result<Added, ChatError> {
        self.call(channel_id, |reply| ChannelMsg::AddMember {
            caller: caller.clone(),
            principal_id: principal_id.to_owned(),
            reply,
        })
        .await
    }

    pub async fn remove_member(
        &self,
        caller: &Caller,
        channel_id: &str,
        principal_id: &str,
    ) -> Result<Member, ChatError> {
        self.call(channel_id, |reply| ChannelMsg::RemoveMember {
            caller: caller.clone(),
            principal_id: principal_id.to_owned(),
            reply,
        })
        .await
    }

    /// Moves the caller's read marker in a channel forward to a message (never back).
    pub async fn mark_read(
        &self,
        caller: &Caller,
        channel_id: &str,
        message_id: &str,
    ) -> Result<(), ChatError> {
        let store = &self.deps.store;
        let member =
            store.member(channel_id, &caller.principal_id).await?.ok_or(ChatError::NotFound("channel"))?;
        let invalid = || ChatError::Invalid {
            field: "message_id",
            reason: "unknown_message",
            message: "message_id is not a message of this channel".into(),
        };
        let (msg_channel, seq) = parse_message_id(message_id).ok_or_else(invalid)?;
        if msg_channel != member.channel_id || store.message(channel_id, seq).await?.is_none() {
            return Err(invalid());
        }
        store.mark_read(channel_id, &caller.principal_id, seq).await?;
        Ok(())
    }
}

/// For a message operation, a channel the caller cannot see means the message is not found.
fn channel_means_message(e: ChatError) -> ChatError {
    match e {
        ChatError::NotFound("channel") => ChatError::NotFound("message"),
        other => other,
    }
}
