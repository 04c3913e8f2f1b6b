//! agora's HTTP surface: one axum [`Router`](axum::Router) per service, each with its own wire format.
//!
//! # Layout
//! - [`chat`]: the chat API (`{error, message}` errors) and, later, the live socket at `/cable`.
//! - [`pages`]: the public pages site (HTML, Markdown on request).
//! - [`stats`]: the statistics service (RFC 9457 problems).
//! - [`signup`]: the demo sign-up API and its confirm page (RFC 9457 problems).
//! - [`problem`]: the RFC 9457 problem document shared by `stats` and `signup`.
//! - [`limits`]: the per-request deadline every listener wears.
//! - [`trace`]: the per-request span (method, matched path, status, latency).
//!
//! Handlers translate: they parse the request, call an actor or a storage read, and shape the
//! answer. They never write a SurrealDB query.

pub mod chat;
pub mod limits;
pub mod pages;
pub mod problem;
pub mod signup;
pub mod stats;
pub mod trace;
