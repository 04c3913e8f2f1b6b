//! The event log: the single writer of events.
//!
//! Every change that makes an event comes here. The log gives each event the next sequence number
//! and commits the change with its event; changes that arrive while a commit is in flight are
//! grouped into the next transaction (one fsync for the group). Because there is one writer and it
//! commits groups in order, commit order is sequence order: a reader that has seen event N has
//! seen every event before it.
//!
//! It is a task with a bounded queue rather than a ractor actor because grouping needs to take
//! every waiting change at once (`recv_many`), which a mailbox handled one message at a time
//! cannot do.

use agora_storage::chat::{Change, Event};
use agora_storage::time::Clock;
use agora_storage::{StorageError, Store};
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

/// How many changes wait for the log at most; a writer beyond that waits for room (back
/// pressure), it is never dropped.
const QUEUE: usize = 4096;
/// The most changes committed in one transaction.
const MAX_GROUP: usize = 512;
/// Attempts for a group that fails with a retryable conflict.
const ATTEMPTS: usize = 3;

struct Pending {
    change: Change,
    reply: oneshot::Sender<Result<Event, StorageError>>,
}

/// A handle to the event log; cheap to clone.
#[derive(Clone)]
pub struct EventLog {
    tx: mpsc::Sender<Pending>,
    committed: watch::Receiver<i64>,
}

impl EventLog {
    /// Starts the log after the last stored event. The task ends when every handle is dropped,
    /// after committing what was queued.
    ///
    /// Every committed group of events is handed to `fanout` in commit order; the log waits for
    /// room there (it is the live sockets' only source, so nothing may be dropped on the way).
    pub async fn start(
        store: Store,
        clock: Clock,
        fanout: mpsc::Sender<Arc<Vec<Event>>>,
    ) -> Result<(EventLog, JoinHandle<()>), StorageError> {
        let last = store.last_event_seq().await?;
        let (tx, rx) = mpsc::channel(QUEUE);
        let (committed_tx, committed) = watch::channel(last);
        let task = tokio::spawn(run(store, clock, rx, committed_tx, last, fanout));
        Ok((EventLog { tx, committed }, task))
    }

    /// Commits `change` with its event and returns the event once it is durable.
    pub async fn commit(&self, change: Change) -> Result<Event, StorageError> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(Pending { change, reply })
            .await
            .map_err(|_| StorageError::Corrupt("the event log has stopped".into()))?;
        answer.await.map_err(|_| StorageError::Corrupt("the event log has stopped".into()))?
    }

    /// The sequence number of the newest committed event, updated after every commit.
    pub fn committed(&self) -> watch::Receiver<i64> {
        self.committed.clone()
    }
}

async fn run(
    store: Store,
    clock: Clock,
    mut rx: mpsc::Receiver<Pending>,
    committed: watch::Sender<i64>,
    mut last: i64,
    fanout: mpsc::Sender<Arc<Vec<Event>>>,
) {
    let mut group: Vec<Pending> = Vec::with_capacity(MAX_GROUP);
    while rx.recv_many(&mut group, MAX_GROUP).await > 0 {
        let changes: Vec<Change> = group.iter().map(|p| p.change.clone()).collect();
        match commit_with_retry(&store, last + 1, clock.now_ms(), &changes).await {
            Ok(events) => {
                last += events.len() as i64;
                committed.send_replace(last);
                let _ = fanout.send(Arc::new(events.clone())).await;
                for (pending, event) in group.drain(..).zip(events) {
                    let _ = pending.reply.send(Ok(event));
                }
            }
            Err(group_error) => {
                // One bad change (a duplicate idempotency key, say) must not sink the others:
                // commit them one by one so each gets its own answer.
                if group.len() == 1 {
                    if let Some(p) = group.pop() {
                        let _ = p.reply.send(Err(group_error));
                    }
                } else {
                    for pending in group.drain(..) {
                        let one = std::slice::from_ref(&pending.change);
                        let result = commit_with_retry(&store, last + 1, clock.now_ms(), one).await;
                        if let Ok(events) = &result {
                            last += 1;
                            committed.send_replace(last);
                            let _ = fanout.send(Arc::new(events.clone())).await;
                        }
                        let _ = pending.reply.send(result.map(|mut events| events.remove(0)));
                    }
                }
            }
        }
    }
}

async fn commit_with_retry(
    store: &Store,
    first_seq: i64,
    at: i64,
    changes: &[Change],
) -> Result<Vec<Event>, StorageError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        match store.commit_changes(first_seq, at, changes).await {
            Err(e) if e.is_retryable() && attempt < ATTEMPTS => {
                tracing::debug!(attempt, "event log commit conflicted; retrying");
            }
            other => return other,
        }
    }
}
