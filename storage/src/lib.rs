//! agora's storage layer: the SurrealDB connection, its versioned migrations, one store per aggregate,
//! and the domain newtypes that every layer above shares.
//!
//! # Layout
//! - [`db`]: [`Store`], opening `surrealkv://`, `mem://` or `ws://`, the data-directory lock, and
//!   the migrations that build the schema.
//! - [`error`]: [`StorageError`], the one error type of this crate.
//! - [`ids`]: random identifiers and the validated [`ids::Handle`].
//! - [`secret`]: tokens (prefix + 32 random bytes) and their SHA-256 hashes; only hashes are stored.
//! - [`time`]: milliseconds since the epoch and their RFC 3339 form.
//! - [`people`]: people, bots and credentials.
//! - [`chat`]: channels, members, messages, mentions and the event log; [`chat::Change`] is what
//!   the event log commits, each change with its event.
//! - [`series`]: the series rules (durations, windows, buckets, `agg`, `fill`, sparklines), pure;
//!   they live in `agora_wire` (fuzzed) and are re-exported here.
//! - [`stats`]: tracked sites, metrics, points and their daily rollups, the fetch log.
//! - [`signup`]: the demo sign-up: sign-ups, texts, daily counters, testers, opt-outs; its newtypes.
//!
//! This crate knows nothing of HTTP or actors.

pub mod chat;
pub mod db;
pub mod error;
pub mod ids;
pub mod people;
pub mod secret;
pub use agora_wire::series;
pub mod signup;
pub mod stats;
pub mod time;

pub use db::{DbSettings, Store};
pub use error::StorageError;
