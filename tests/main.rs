//! Black-box tests: the real app on port 0 with `mem://` storage (or a temporary SurrealKV
//! directory), talked to over real HTTP as a client would. One test binary, because every binary
//! links all of SurrealDB.

mod abuse;
mod cable;
mod chat;
mod crash;
mod feed;
mod foundation;
mod pages;
mod secrets;
mod signup;
mod stats;
mod support;
mod webapp;
