//! agora's load generator: a black-box client of a running agora (or of one it starts itself with
//! `--spawn`), of the bare `baseline` broadcast server and of the Rails ActionCable peer. It speaks
//! HTTP and ActionCable, records latencies in HdrHistogram, shows a progress line every second on
//! stderr, and ends with a table and a JSON summary.
//!
//! Scenarios: `post`, `paging`, `fanout`, `connections`, `feed`, `mix`, `signup`; `baseline` runs the bare
//! server; `summarize` turns the JSON summaries of several runs into medians. It depends on none
//! of agora's crates, so it measures only what a client sees.

mod baseline;
mod common;
mod connections;
mod fanout;
mod feed;
mod mix;
mod post;
mod report;
mod signup;
mod spawn;
mod target;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use serde_json::{Value, json};

use crate::common::Client;
use crate::target::{Kind, Target};

/// Drive agora (and the baseline and the Rails peer) and report rates, latencies and correctness.
#[derive(Debug, Parser)]
#[command(name = "agora-loadtest", version)]
struct Args {
    /// Base URL of agora's chat service (ignored with --spawn).
    #[arg(long, global = true, default_value = "http://127.0.0.1:4000")]
    chat_url: String,
    /// Base URL of agora's sign-up service (ignored with --spawn).
    #[arg(long, global = true, default_value = "http://127.0.0.1:4003")]
    signup_url: String,
    /// A staff browser session token (`agora admin session --handle H`; ignored with --spawn).
    #[arg(long, global = true, env = "AGORA_LOADTEST_TOKEN", default_value = "")]
    token: String,
    /// agora's process id, for its memory and CPU time (known by itself with --spawn).
    #[arg(long, global = true)]
    server_pid: Option<u32>,
    /// Start agora itself on a temporary SurrealKV directory, limits lifted, on free ports; stop it
    /// and remove the directory at the end.
    #[arg(long, global = true)]
    spawn: bool,
    /// The agora binary for --spawn (default: `agora` beside this executable).
    #[arg(long, global = true)]
    agora_bin: Option<PathBuf>,
    /// The socket cap of a spawned agora (`--max-sockets`).
    #[arg(long, global = true, default_value_t = 20_000)]
    max_sockets: usize,
    /// Pin spawned servers (agora, the baseline) to these CPUs (a taskset list: `0`, `0-1`).
    #[arg(long, global = true)]
    server_cpus: Option<String>,
    /// Pin this load generator to these CPUs.
    #[arg(long, global = true)]
    client_cpus: Option<String>,
    /// Also run the socket scenarios against the bare baseline, started as a separate process.
    #[arg(long, global = true)]
    spawn_baseline: bool,
    /// Also run the socket scenarios against a running baseline at this ws:// URL.
    #[arg(long, global = true)]
    baseline_url: Option<String>,
    /// The running baseline's process id.
    #[arg(long, global = true)]
    baseline_pid: Option<u32>,
    /// Also run the socket scenarios against the Rails ActionCable peer at this http:// base URL
    /// (`loadtest/peers/rails/run.sh`).
    #[arg(long, global = true)]
    peer_url: Option<String>,
    /// The Rails peer's process id (puma), for its memory and CPU time.
    #[arg(long, global = true)]
    peer_pid: Option<u32>,
    /// Leave agora out of the socket scenarios (only the baseline and/or the peer).
    #[arg(long, global = true)]
    no_agora: bool,
    /// Write the JSON summary to this file instead of stdout.
    #[arg(long, global = true)]
    json: Option<PathBuf>,
    #[command(subcommand)]
    scenario: Scenario,
}

#[derive(Debug, Subcommand)]
enum Scenario {
    /// C concurrent posters over K channels: durable posts a second, latency, each stored exactly once.
    Post {
        #[arg(long, default_value_t = 32)]
        posters: usize,
        #[arg(long, default_value_t = 32)]
        channels: usize,
        /// Seconds to post for.
        #[arg(long, default_value_t = 10)]
        seconds: u64,
    },
    /// S sockets subscribed to one channel, P posters at R posts a second in all: post-to-receive
    /// latency at every receiver, deliveries a second, frames lost or repeated, server CPU.
    Fanout {
        #[arg(long, default_value_t = 1000)]
        sockets: usize,
        #[arg(long, default_value_t = 100)]
        posts: usize,
        /// Posts a second, over all posters.
        #[arg(long, default_value_t = 10.0)]
        rate: f64,
        /// Concurrent posters (each waits for its post's answer: at most P posts in flight).
        #[arg(long, default_value_t = 8)]
        posters: usize,
        /// Sockets connecting at once.
        #[arg(long, default_value_t = 200)]
        concurrency: usize,
    },
    /// N sockets, K at a time, to confirmed subscription (a connect storm when K is large):
    /// failures, connect times, and the server's memory per idle socket.
    Connections {
        #[arg(long, default_value_t = 10_000)]
        sockets: usize,
        /// Sockets connecting at once.
        #[arg(long, default_value_t = 1000)]
        concurrency: usize,
        /// Seconds to hold the sockets idle before reading the server's memory.
        #[arg(long, default_value_t = 3)]
        hold: u64,
    },
    /// B bots following the cursor feed while W writers post: events read a second, none skipped
    /// or repeated; then the catch-up rate of one bot reading it all again.
    Feed {
        #[arg(long, default_value_t = 4)]
        bots: usize,
        #[arg(long, default_value_t = 16)]
        writers: usize,
        #[arg(long, default_value_t = 8)]
        channels: usize,
        #[arg(long, default_value_t = 10)]
        seconds: u64,
    },
    /// The chat mix: N clients (each its own bot) in rooms of 10 to 100, each posting in its room
    /// every 10 to 60 s: post-to-receive latency at every member, nothing lost or repeated.
    Mix {
        #[arg(long, default_value_t = 1000)]
        clients: usize,
        #[arg(long, default_value_t = 10)]
        room_min: usize,
        #[arg(long, default_value_t = 100)]
        room_max: usize,
        /// Shortest time between one client's posts, in seconds.
        #[arg(long, default_value_t = 10.0)]
        every_min: f64,
        /// Longest time between one client's posts, in seconds.
        #[arg(long, default_value_t = 60.0)]
        every_max: f64,
        /// Seconds to post for.
        #[arg(long, default_value_t = 60)]
        seconds: u64,
    },
    /// Bursts of sign-ups from many addresses and numbers: every limit answers as signup.md says.
    /// Needs a fresh server with the demo open (as --spawn makes it).
    Signup,
    /// A bare websocket broadcast server (no storage, no auth): every text frame a client sends
    /// goes to every client. The limit of the stack.
    Baseline {
        #[arg(long, default_value = "127.0.0.1:4900")]
        listen: String,
    },
    /// Fill one channel with N messages, then time its pages from newest to oldest.
    Paging {
        #[arg(long, default_value_t = 100_000)]
        messages: usize,
        /// Concurrent posters while filling.
        #[arg(long, default_value_t = 32)]
        posters: usize,
    },
    /// Medians over the JSON summaries of several runs (files of one summary per line).
    Summarize { files: Vec<PathBuf> },
}

/// The targets of a socket scenario, in the order they run.
async fn targets(
    args: &Args,
    client: &Arc<Client>,
    server_pid: Option<u32>,
    spawned: &mut Vec<spawn::Spawned>,
) -> anyhow::Result<Vec<Arc<Target>>> {
    let mut out = Vec::new();
    if !args.no_agora {
        out.push(Target {
            name: "agora",
            kind: Kind::Agora { client: client.clone(), tickets: Default::default() },
            pid: server_pid,
        });
    }
    if args.spawn_baseline {
        let (process, url) = spawn::baseline(args.server_cpus.as_deref()).await?;
        out.push(Target { name: "baseline", kind: Kind::Baseline { url }, pid: Some(process.pid) });
        spawned.push(process);
    } else if let Some(url) = &args.baseline_url {
        out.push(Target {
            name: "baseline",
            kind: Kind::Baseline { url: url.clone() },
            pid: args.baseline_pid,
        });
    }
    if let Some(base) = &args.peer_url {
        let http = reqwest::Client::builder().pool_max_idle_per_host(64).build()?;
        out.push(Target {
            name: "rails",
            kind: Kind::Peer { base: base.trim_end_matches('/').to_owned(), http },
            pid: args.peer_pid,
        });
    }
    Ok(out.into_iter().map(Arc::new).collect())
}

async fn run(args: Args) -> anyhow::Result<Value> {
    match &args.scenario {
        Scenario::Baseline { listen } => return baseline::run(listen).await,
        Scenario::Summarize { files } => return report::summarize(files),
        _ => {}
    }
    let agora = match args.spawn {
        true => Some(
            spawn::agora(
                spawn::agora_bin(args.agora_bin.clone())?,
                args.server_cpus.as_deref(),
                args.max_sockets,
            )
            .await?,
        ),
        false => None,
    };
    let (chat_url, token, signup_url, server_pid) = match &agora {
        Some(a) => (a.chat_url.clone(), a.token.clone(), a.signup_url.clone(), Some(a.process.pid)),
        None => (args.chat_url.clone(), args.token.clone(), args.signup_url.clone(), args.server_pid),
    };
    let client = Arc::new(Client::new(&chat_url, &token)?);
    let mut spawned = Vec::new();
    let outcome = async {
        Ok::<Value, anyhow::Error>(match &args.scenario {
            Scenario::Post { posters, channels, seconds } => {
                post::post(client.clone(), *posters, *channels, *seconds, server_pid).await?
            }
            Scenario::Paging { messages, posters } => {
                post::paging(client.clone(), *messages, *posters).await?
            }
            Scenario::Feed { bots, writers, channels, seconds } => {
                feed::run(client.clone(), *bots, *writers, *channels, *seconds).await?
            }
            Scenario::Mix { clients, room_min, room_max, every_min, every_max, seconds } => {
                let o = mix::Options {
                    clients: *clients,
                    room_min: (*room_min).max(1),
                    room_max: (*room_max).max((*room_min).max(1)),
                    every_min: *every_min,
                    every_max: every_max.max(*every_min),
                    seconds: *seconds,
                };
                mix::run(client.clone(), &o).await?
            }
            Scenario::Signup => {
                signup::run(&signup_url, agora.as_ref().map(|a| (a.bin.as_path(), a.db.as_str()))).await?
            }
            Scenario::Fanout { sockets, posts, rate, posters, concurrency } => {
                let o = fanout::Options {
                    sockets: *sockets,
                    posts: *posts,
                    rate: *rate,
                    posters: *posters,
                    concurrency: *concurrency,
                };
                let mut results = Vec::new();
                for t in targets(&args, &client, server_pid, &mut spawned).await? {
                    results.push(fanout::run(t, &o).await?);
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                }
                report::with_ratios("fanout", results)
            }
            Scenario::Connections { sockets, concurrency, hold } => {
                let mut results = Vec::new();
                for t in targets(&args, &client, server_pid, &mut spawned).await? {
                    results.push(connections::run(t, *sockets, *concurrency, *hold).await?);
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                }
                report::with_ratios("connections", results)
            }
            Scenario::Baseline { .. } | Scenario::Summarize { .. } => json!({}),
        })
    }
    .await;
    for s in spawned {
        s.stop().await;
    }
    if let Some(a) = agora {
        a.process.stop().await;
    }
    let mut summary = outcome?;
    if let Some(obj) = summary.as_object_mut() {
        obj.insert("machine".into(), report::machine(&args.server_cpus, &args.client_cpus));
    }
    Ok(summary)
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(cpus) = &args.client_cpus
        && let Err(e) = spawn::pin_self(cpus)
    {
        eprintln!("agora-loadtest: {e:#}");
        return ExitCode::FAILURE;
    }
    let json_file = args.json.clone();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("agora-loadtest: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(summary) => {
            if summary["scenario"] != "summarize" {
                report::table(&summary);
            }
            let line = summary.to_string();
            let written = match &json_file {
                Some(path) => std::fs::write(path, format!("{line}\n"))
                    .with_context(|| format!("writing {}", path.display())),
                None if summary["scenario"] == "summarize" => Ok(()),
                None => {
                    println!("{line}");
                    Ok(())
                }
            };
            if let Err(e) = written {
                eprintln!("agora-loadtest: {e:#}");
                return ExitCode::FAILURE;
            }
            // A run that found lost, repeated or missing messages fails.
            if summary["ok"] == false
                || summary["targets"].as_array().is_some_and(|t| t.iter().any(|t| t["ok"] == false))
            {
                eprintln!("agora-loadtest: the run found errors (see `ok` in the summary)");
                return ExitCode::from(2);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("agora-loadtest: {e:#}");
            ExitCode::FAILURE
        }
    }
}
