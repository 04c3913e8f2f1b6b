//! The root of the supervision tree, and the start and orderly stop of everything under it.

use std::sync::Arc;

use agora_storage::Store;
use agora_storage::time::Clock;
use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use tokio::task::JoinHandle;

use crate::chat::Chat;
use crate::chat::channel::ChannelRegistry;
use crate::chat::event_log::EventLog;
use crate::chat::sessions::{Render, Sessions, start_fanout};

/// The root supervisor. Every long-lived actor is spawned linked to it, so a crash is reported
/// here and stopping the root stops the tree. A failed child is not restarted here: the registry
/// that owns it starts a fresh one, with state read from storage, on its next use.
pub struct RootSupervisor;

/// The root supervisor takes no messages: it only supervises.
pub enum RootMsg {}

impl Actor for RootSupervisor {
    type Msg = RootMsg;
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _myself: ActorRef<Self::Msg>, _: ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<Self::Msg>,
        event: SupervisionEvent,
        _state: &mut (),
    ) -> Result<(), ActorProcessingErr> {
        match event {
            SupervisionEvent::ActorFailed(who, err) => {
                tracing::error!(actor = %who.get_id(), error = %err, "actor failed; it is replaced on next use");
            }
            SupervisionEvent::ActorTerminated(who, _, reason) => {
                tracing::debug!(actor = %who.get_id(), ?reason, "actor stopped");
            }
            _ => {}
        }
        Ok(())
    }
}

/// The running actor tree and the event log.
pub struct ActorSystem {
    root: ActorRef<RootMsg>,
    root_task: JoinHandle<()>,
    event_log_task: JoinHandle<()>,
    fanout_task: JoinHandle<()>,
    chat: Chat,
}

/// Groups of committed events waiting for the fan-out; the event log waits when it is full.
const FANOUT_QUEUE: usize = 1024;

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("starting the root supervisor: {0}")]
    Spawn(#[from] ractor::SpawnErr),
    #[error("starting the event log: {0}")]
    Storage(#[from] agora_storage::StorageError),
}

impl ActorSystem {
    /// Starts the root supervisor, the event log, and the fan-out of committed events to the
    /// live sessions (rendered by `render`).
    pub async fn start(store: Store, clock: Clock, render: Render) -> Result<ActorSystem, StartError> {
        let (root, root_task) = Actor::spawn(None, RootSupervisor, ()).await?;
        let sessions = Sessions::new();
        let (fanout_tx, fanout_rx) = tokio::sync::mpsc::channel(FANOUT_QUEUE);
        let fanout_task = start_fanout(store.clone(), sessions.clone(), render, fanout_rx).await?;
        let (event_log, event_log_task) = EventLog::start(store.clone(), clock.clone(), fanout_tx).await?;
        let registry = Arc::new(ChannelRegistry::new(root.get_cell()));
        let chat = Chat::new(store, event_log, clock, registry, sessions);
        Ok(ActorSystem { root, root_task, event_log_task, fanout_task, chat })
    }

    /// The chat handle the web layer uses.
    pub fn chat(&self) -> Chat {
        self.chat.clone()
    }

    /// The root supervisor's cell, for starting a service's actors linked under it.
    pub fn root_cell(&self) -> ractor::ActorCell {
        self.root.get_cell()
    }

    /// Stops every actor, children first, then lets the event log commit what is queued.
    /// Call it after the listeners have stopped, so nothing new arrives.
    pub async fn stop(self) {
        let ActorSystem { root, root_task, event_log_task, fanout_task, chat } = self;
        root.stop_children_and_wait(None, Some(std::time::Duration::from_secs(10))).await;
        root.stop(None);
        let _ = root_task.await;
        // The log's task ends once every handle to it is gone: the channel actors' went with
        // them, this is the last.
        drop(chat);
        let _ = event_log_task.await;
        let _ = fanout_task.await;
    }
}
