//! Live socket sessions and the fan-out of committed events to them.
//!
//! The event log hands every committed group of events to the fan-out task, in commit order. The
//! task finds each event's readers (the channel's members, kept in a cache it updates from the
//! member events themselves, plus a removed member for its own removal), renders the event once,
//! and pushes the frame into each of their sessions' bounded queues. A session whose queue is full
//! is disconnected (`reconnect: true`): it catches up from `GET /events`, and it never slows
//! delivery to anyone else.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agora_storage::Store;
use agora_storage::chat::{Event, EventKind};
use dashmap::DashMap;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// One frame as it goes on the wire, shared by every session that gets it.
pub type Frame = Arc<str>;

/// Renders an event as the feed item (the web layer's wire format).
pub type Render = Arc<dyn Fn(&Event) -> serde_json::Value + Send + Sync>;

/// Why a session is being closed: the ActionCable disconnect reason and whether to reconnect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Disconnect {
    pub reason: &'static str,
    pub reconnect: bool,
}

impl Disconnect {
    pub const SLOW: Disconnect = Disconnect { reason: "remote", reconnect: true };
    pub const RESTART: Disconnect = Disconnect { reason: "server_restart", reconnect: true };
    pub const UNAUTHORIZED: Disconnect = Disconnect { reason: "unauthorized", reconnect: false };
    /// A frame the server cannot take (not a command, too large, or too many of them).
    pub const INVALID: Disconnect = Disconnect { reason: "invalid_request", reconnect: false };
}

/// Tells a session's task to close, and why (the first reason wins).
#[derive(Debug, Default)]
pub struct Closer {
    token: CancellationToken,
    reason: Mutex<Option<Disconnect>>,
}

impl Closer {
    pub fn close(&self, why: Disconnect) {
        if let Ok(mut reason) = self.reason.lock()
            && reason.is_none()
        {
            *reason = Some(why);
        }
        self.token.cancel();
    }

    pub async fn closed(&self) -> Disconnect {
        self.token.cancelled().await;
        self.reason.lock().ok().and_then(|r| *r).unwrap_or(Disconnect::RESTART)
    }
}

/// A subscribed session, as the registry holds it.
#[derive(Clone)]
pub struct SessionHandle {
    pub id: u64,
    pub credential_id: String,
    /// The subscription identifier, echoed byte for byte in every frame.
    pub identifier: Arc<str>,
    /// The session's outbound queue: bounded; full means the client is too slow.
    pub tx: mpsc::Sender<Frame>,
    pub closer: Arc<Closer>,
    /// The committed watermark when it subscribed: it gets the events after it, and no earlier
    /// one that the fan-out, running a moment behind the commits, has yet to hand out.
    pub after_seq: i64,
}

/// The registry of subscribed sessions by principal, read by every fan-out.
#[derive(Default)]
pub struct Sessions {
    /// Subscribed sessions by principal id. Bounded by the open sockets, which `--max-sockets`
    /// caps; a session leaves when its socket closes.
    by_principal: DashMap<String, Vec<SessionHandle>>,
    /// Open sockets (subscribed or not), for the cap.
    open: AtomicUsize,
    next_id: AtomicU64,
    /// Sockets opened after this is cancelled are told `server_restart` at once.
    shutting_down: CancellationToken,
    /// Every open socket: its closer, and whose it is once its ticket was redeemed (for
    /// shutdown and revocation, subscribed or not).
    all: DashMap<u64, OpenSocket>,
}

struct OpenSocket {
    closer: Arc<Closer>,
    /// (principal id, credential id).
    owner: Option<(String, String)>,
}

impl Sessions {
    pub fn new() -> Arc<Sessions> {
        Arc::new(Sessions::default())
    }

    /// Counts a new socket in, unless `max` are open. Returns its id and closer.
    pub fn open(&self, max: usize) -> Option<(u64, Arc<Closer>)> {
        let previous = self.open.fetch_add(1, Ordering::SeqCst);
        if previous >= max {
            self.open.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let closer = Arc::new(Closer::default());
        if self.shutting_down.is_cancelled() {
            closer.close(Disconnect::RESTART);
        }
        self.all.insert(id, OpenSocket { closer: closer.clone(), owner: None });
        Some((id, closer))
    }

    /// Records whose socket `id` is. Done before the credential is checked, so a revocation lands
    /// either before the check (which then fails) or after this (which then closes the socket).
    pub fn identify(&self, id: u64, principal_id: &str, credential_id: &str) {
        if let Some(mut open) = self.all.get_mut(&id) {
            open.owner = Some((principal_id.to_owned(), credential_id.to_owned()));
        }
    }

    /// Counts a socket out and removes its subscription.
    pub fn close(&self, id: u64, principal_id: Option<&str>) {
        if self.all.remove(&id).is_some() {
            self.open.fetch_sub(1, Ordering::SeqCst);
        }
        if let Some(p) = principal_id {
            self.unsubscribe(p, id);
        }
    }

    /// Registers a session. `make` builds its handle and is given the committed watermark, read
    /// while the principal's entry is locked: an event the fan-out hands out before the session is
    /// in is at or below that watermark (the feed has it), and every later one reaches the session.
    pub fn subscribe(
        &self,
        principal_id: &str,
        watermark: &tokio::sync::watch::Receiver<i64>,
        make: impl FnOnce(i64) -> SessionHandle,
    ) {
        let mut entry = self.by_principal.entry(principal_id.to_owned()).or_default();
        let after_seq = *watermark.borrow();
        entry.push(make(after_seq));
    }

    pub fn unsubscribe(&self, principal_id: &str, id: u64) {
        if let Some(mut list) = self.by_principal.get_mut(principal_id) {
            list.retain(|h| h.id != id);
        }
        self.by_principal.remove_if(principal_id, |_, list| list.is_empty());
    }

    /// Closes every socket of a credential (revoked), subscribed or not.
    pub fn disconnect_credential(&self, credential_id: &str) {
        for open in &self.all {
            if open.owner.as_ref().is_some_and(|(_, c)| c == credential_id) {
                open.closer.close(Disconnect::UNAUTHORIZED);
            }
        }
    }

    /// Closes every socket of a principal (a deleted bot), subscribed or not.
    pub fn disconnect_principal(&self, principal_id: &str) {
        for open in &self.all {
            if open.owner.as_ref().is_some_and(|(p, _)| p == principal_id) {
                open.closer.close(Disconnect::UNAUTHORIZED);
            }
        }
    }

    /// Tells every socket `server_restart`, and every later one at once.
    pub fn shutdown(&self) {
        self.shutting_down.cancel();
        for open in &self.all {
            open.closer.close(Disconnect::RESTART);
        }
    }

    /// Pushes `item` to every subscribed session of `principal_id`.
    fn deliver(&self, principal_id: &str, seq: i64, item: &str, frames: &mut HashMap<Arc<str>, Frame>) {
        let Some(list) = self.by_principal.get(principal_id) else { return };
        for h in list.iter().filter(|h| h.after_seq < seq) {
            let frame = frames
                .entry(h.identifier.clone())
                .or_insert_with(|| {
                    let identifier = serde_json::to_string(&*h.identifier).unwrap_or_default();
                    Arc::from(format!("{{\"identifier\":{identifier},\"message\":{item}}}"))
                })
                .clone();
            match h.tx.try_send(frame) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(_)) => h.closer.close(Disconnect::SLOW),
                Err(mpsc::error::TrySendError::Closed(_)) => {}
            }
        }
    }
}

/// Starts the fan-out task: it ends when the event log's sender is dropped.
///
/// It reads every membership first, before the event log accepts its first change, and from then
/// on keeps them current from the member events, which reach it in commit order with everything
/// else: so each event goes to exactly the members of its channel at that event, as the feed has it.
pub async fn start_fanout(
    store: Store,
    sessions: Arc<Sessions>,
    render: Render,
    mut rx: mpsc::Receiver<Arc<Vec<Event>>>,
) -> Result<tokio::task::JoinHandle<()>, agora_storage::StorageError> {
    // Members by channel. Bounded by the server's memberships.
    let mut members: HashMap<String, HashSet<String>> = HashMap::new();
    for m in store.all_memberships().await? {
        members.entry(m.channel_id).or_default().insert(m.principal_id);
    }
    Ok(tokio::spawn(async move {
        while let Some(events) = rx.recv().await {
            for event in events.iter() {
                let readers = members.entry(event.channel_id.clone()).or_default();
                let mut extra = None;
                match (&event.kind, &event.member) {
                    (EventKind::MemberAdded, Some(m)) => {
                        readers.insert(m.id.clone());
                    }
                    (EventKind::MemberRemoved, Some(m)) => {
                        readers.remove(&m.id);
                        extra = Some(m.id.clone());
                    }
                    (EventKind::ChannelCreated, _) => {
                        if let Some(c) = &event.channel {
                            readers.insert(c.created_by.clone());
                        }
                    }
                    _ => {}
                }
                if sessions.by_principal.is_empty() {
                    continue;
                }
                let item = render(event).to_string();
                let mut frames = HashMap::new();
                for principal in readers.iter().chain(extra.iter()) {
                    sessions.deliver(principal, event.seq, &item, &mut frames);
                }
            }
        }
    }))
}
