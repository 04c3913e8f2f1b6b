//! agora's live state: everything that changes data runs here, in ractor actors under one
//! supervision tree.
//!
//! # Layout
//! - [`system`]: [`ActorSystem`], the root supervisor that every other actor is linked under, and
//!   its orderly stop at shutdown.
//! - [`chat`]: the event log (the single writer of events), one `ChannelActor` per channel, the
//!   chat rules, and [`chat::Chat`], the handle for every chat write.
//! - [`stats`]: the statistics fetchers: one `FetcherActor` per enabled site under the
//!   `FetcherSupervisor`.
//! - [`signup`]: the `SignupDesk`, which decides whether a code text goes out, and its text senders.
//!
//! Actors depend on `agora-storage` for persistence and know nothing of HTTP.

pub mod chat;
pub mod signup;
pub mod stats;
pub mod system;

pub use system::ActorSystem;
