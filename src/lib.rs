//! agora: a real-time chat server where people, outside guests, bots and AI agents share channels,
//! with a public pages site, a statistics service and a demo sign-up API beside it.
//!
//! This is the thin library behind the `agora` binary, so that tests start the same app `main` does.
//!
//! # Layout
//! - [`settings`]: the command line and its `AGORA_*` environment variables.
//! - [`serve`]: `agora serve`: opens storage, starts the actors, binds the four listeners and the
//!   admin socket, and shuts all of it down in order.
//! - [`admin`]: `agora admin ...`: the operator commands, run through a server's admin socket or
//!   on the store directly.
//! - [`telemetry`]: tracing setup (`RUST_LOG`).
//!
//! Dependencies point one way: this crate → `agora-web` → `agora-actors` → `agora-storage`.

pub mod admin;
pub mod serve;
pub mod settings;
pub mod telemetry;

pub use serve::{Running, start};
