//! The root of the supervision tree.

use agora_storage::Store;
use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use tokio::task::JoinHandle;

/// The root supervisor. Every long-lived actor is spawned linked to it, so a crash is reported
/// here and stopping the root stops the tree.
pub struct RootSupervisor;

/// Messages of the root supervisor.
pub enum RootMsg {}

pub struct RootState {
    /// Kept for the children the root starts.
    pub store: Store,
}

impl Actor for RootSupervisor {
    type Msg = RootMsg;
    type State = RootState;
    type Arguments = Store;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        store: Store,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(RootState { store })
    }

    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<Self::Msg>,
        event: SupervisionEvent,
        _state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match event {
            SupervisionEvent::ActorFailed(who, err) => {
                tracing::error!(actor = %who.get_id(), error = %err, "actor failed");
            }
            SupervisionEvent::ActorTerminated(who, _, reason) => {
                tracing::debug!(actor = %who.get_id(), ?reason, "actor stopped");
            }
            _ => {}
        }
        Ok(())
    }
}

/// The running actor tree.
pub struct ActorSystem {
    root: ActorRef<RootMsg>,
    handle: JoinHandle<()>,
}

impl ActorSystem {
    /// Starts the root supervisor.
    pub async fn start(store: Store) -> Result<ActorSystem, ractor::SpawnErr> {
        let (root, handle) = Actor::spawn(None, RootSupervisor, store).await?;
        Ok(ActorSystem { root, handle })
    }

    /// The root supervisor's cell, for starting a service's actors linked under it.
    pub fn root_cell(&self) -> ractor::ActorCell {
        self.root.get_cell()
    }

    /// Stops every actor, children first, and waits for the root to finish.
    pub async fn stop(self) {
        self.root.stop_children_and_wait(None, Some(std::time::Duration::from_secs(10))).await;
        self.root.stop(None);
        let _ = self.handle.await;
    }
}
