//! agora's load generator: a black-box client speaking HTTP and ActionCable, recording latencies.
//!
//! This is the skeleton: the command line is in place; the scenarios (`fanout`, `post`, `feed`,
//! `connections`, `signup`) and the bare `baseline` server arrive with the load-test issue. It
//! depends on none of agora's crates, so it measures only what a client sees.

use std::process::ExitCode;

use clap::{Parser, ValueEnum};

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Scenario {
    /// S sockets in one channel, P posters: post-to-receive latency.
    Fanout,
    /// C concurrent posters over K channels: durable posts a second.
    Post,
    /// B bots following the cursor feed while writers post.
    Feed,
    /// N idle sockets: resident memory per socket.
    Connections,
    /// Bursts against the sign-up API's limits.
    Signup,
}

/// Drive a running agora (or one it starts) and report latencies and rates.
#[derive(Debug, Parser)]
#[command(name = "agora-loadtest", version)]
struct Args {
    /// What to measure.
    #[arg(value_enum)]
    scenario: Scenario,
    /// Base URL of the chat service.
    #[arg(long, default_value = "http://127.0.0.1:4000")]
    chat_url: String,
}

fn main() -> ExitCode {
    let args = Args::parse();
    eprintln!(
        "agora-loadtest: the {:?} scenario against {} is not built yet (see the load-test issue)",
        args.scenario, args.chat_url
    );
    ExitCode::from(2)
}
