//! What the socket scenarios drive: agora, the bare baseline, or the Rails ActionCable peer. Each
//! opens subscribed sockets and posts a message that comes back to every subscriber as an
//! ActionCable-shaped frame `{"message": {"kind": "message.created", "message": {"body": ...}}}`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use futures::{SinkExt as _, StreamExt as _};
use hdrhistogram::Histogram;
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;

use crate::common::{
    Client, Progress, Ws, connect_ws, histogram, record, round2, rss_kib, source_ip, subscribe,
};

pub enum Kind {
    /// agora: sockets of the staff caller, who is a member of the channel posts go to.
    Agora { client: Arc<Client>, tickets: std::sync::Mutex<Vec<String>> },
    /// The bare broadcast server at this ws:// URL: a frame sent is a post.
    Baseline { url: String },
    /// The Rails peer at this http:// base: sockets at `/cable`, posts to `POST /post`.
    Peer { base: String, http: reqwest::Client },
}

pub struct Target {
    pub name: &'static str,
    pub kind: Kind,
    /// The server's process, for its memory and CPU time.
    pub pid: Option<u32>,
}

/// Where a poster sends its posts.
pub enum Poster {
    Http { client: Arc<Client>, path: String },
    Peer { http: reqwest::Client, url: String },
    Ws(Box<Ws>),
}

impl Poster {
    /// Posts `body` (which carries its send time and index).
    pub async fn post(&mut self, body: &str, index: usize) -> anyhow::Result<()> {
        match self {
            Poster::Http { client, path } => {
                client.post_json(path, json!({ "body": body })).await?;
            }
            Poster::Peer { http, url } => {
                let res = http.post(url.as_str()).json(&json!({ "body": body, "id": index })).send().await?;
                if !res.status().is_success() {
                    bail!("the peer answered {}", res.status());
                }
            }
            Poster::Ws(ws) => {
                // The frame shape agora sends, so the receivers read every target alike.
                let frame = json!({ "message": { "kind": "message.created", "message": { "id": index.to_string(), "body": body } } });
                ws.send(Message::text(frame.to_string())).await?;
            }
        }
        Ok(())
    }
}

impl Target {
    /// Prepares a run: for agora, a fresh channel (its id), else nothing.
    pub async fn channel(&self) -> anyhow::Result<Option<String>> {
        match &self.kind {
            Kind::Agora { client, .. } => {
                Ok(Some(client.channel(&format!("fanout-{}", crate::common::now_nanos() % 1_000_000)).await?))
            }
            _ => Ok(None),
        }
    }

    /// For agora: fetches `n` stream tickets (valid 60 s) over a few HTTP connections before the
    /// sockets open, so the server's memory growth counts sockets only (not the idle HTTP
    /// connections of a thousand concurrent ticket requests) and connect times are the socket's.
    pub async fn prefetch_tickets(&self, n: usize) -> anyhow::Result<()> {
        let Kind::Agora { client, tickets } = &self.kind else { return Ok(()) };
        let mut fetched = Vec::with_capacity(n);
        let mut pending = futures::stream::iter(0..n)
            .map(|_| client.post_json("/stream_tickets", json!({})))
            .buffer_unordered(16);
        while let Some(t) = pending.next().await {
            fetched.push(t?["url"].as_str().context("ticket url")?.to_owned());
        }
        if let Ok(mut t) = tickets.lock() {
            *t = fetched;
        }
        Ok(())
    }

    /// Opens socket `i` of `n` (from its loopback source address) and waits for the subscription.
    pub async fn open(&self, i: usize, n: usize) -> anyhow::Result<Ws> {
        let source = source_ip(i, n);
        match &self.kind {
            Kind::Agora { client, tickets } => {
                let url = match tickets.lock().ok().and_then(|mut t| t.pop()) {
                    Some(url) => url,
                    None => client.post_json("/stream_tickets", json!({})).await?["url"]
                        .as_str()
                        .context("ticket url")?
                        .to_owned(),
                };
                let mut ws = connect_ws(&url, source, true).await?;
                subscribe(&mut ws).await?;
                Ok(ws)
            }
            Kind::Baseline { url } => connect_ws(url, source, false).await,
            Kind::Peer { base, .. } => {
                let url = format!("{}/cable", base.replacen("http://", "ws://", 1));
                let mut ws = connect_ws(&url, source, true).await?;
                subscribe(&mut ws).await?;
                Ok(ws)
            }
        }
    }

    pub async fn poster(&self, channel: Option<&str>) -> anyhow::Result<Poster> {
        Ok(match &self.kind {
            Kind::Agora { client, .. } => Poster::Http {
                client: client.clone(),
                path: format!("/channels/{}/messages", channel.context("no channel")?),
            },
            Kind::Baseline { url } => {
                Poster::Ws(Box::new(connect_ws(url, std::net::Ipv4Addr::LOCALHOST.into(), false).await?))
            }
            Kind::Peer { base, http } => Poster::Peer { http: http.clone(), url: format!("{base}/post") },
        })
    }
}

/// Sockets opened by [`connect_all`], with the time each took to its confirmed subscription.
pub struct Connected {
    pub sockets: Vec<Ws>,
    pub failures: usize,
    pub times: Histogram<u64>,
    pub elapsed: Duration,
}

/// Sockets opened in two halves, with the server's memory before, between and after.
pub struct Measured {
    pub connected: Connected,
    pub rss_before_kib: Option<u64>,
    pub rss_half_kib: Option<u64>,
    pub rss_after_kib: Option<u64>,
}

impl Measured {
    /// KiB per socket over the second half only: the cost of one more socket once the server's
    /// one-time growth (threads, allocator arenas, buffers) is paid by the first half.
    pub fn kib_per_socket(&self) -> Option<f64> {
        let n = self.connected.sockets.len();
        match (self.rss_half_kib, self.rss_after_kib) {
            (Some(h), Some(a)) if n > 1 => Some(round2(a.saturating_sub(h) as f64 / (n - n / 2) as f64)),
            _ => None,
        }
    }

    /// KiB per socket over all of them: (RSS after - RSS before) / N, one-time growth included.
    pub fn kib_per_socket_total(&self) -> Option<f64> {
        let n = self.connected.sockets.len();
        match (self.rss_before_kib, self.rss_after_kib) {
            (Some(b), Some(a)) if n > 0 => Some(round2(a.saturating_sub(b) as f64 / n as f64)),
            _ => None,
        }
    }
}

/// Opens `n` sockets in two halves (each `concurrency` at a time), reading the server's resident
/// memory before, between (after `settle`) and after (after `settle` again).
pub async fn connect_measured(
    target: &Arc<Target>,
    n: usize,
    concurrency: usize,
    settle: Duration,
) -> Measured {
    let prefetch = |count: usize| async move {
        if let Err(e) = target.prefetch_tickets(count).await {
            eprintln!("  fetching stream tickets failed ({e:#}); each socket fetches its own");
        }
    };
    // Tickets live 60 s: fetched for each half just before it.
    prefetch(n / 2).await;
    let rss_before_kib = target.pid.and_then(rss_kib);
    let mut connected = connect_all(target, 0, n / 2, n, concurrency).await;
    tokio::time::sleep(settle).await;
    prefetch(n - n / 2).await;
    let rss_half_kib = target.pid.and_then(rss_kib);
    let second = connect_all(target, n / 2, n, n, concurrency).await;
    tokio::time::sleep(settle).await;
    let rss_after_kib = target.pid.and_then(rss_kib);
    connected.sockets.extend(second.sockets);
    connected.failures += second.failures;
    let _ = connected.times.add(&second.times);
    connected.elapsed += second.elapsed;
    Measured { connected, rss_before_kib, rss_half_kib, rss_after_kib }
}

/// Opens sockets `from..to` of `n`, `concurrency` at a time, each to its confirmed subscription.
pub async fn connect_all(
    target: &Arc<Target>,
    from: usize,
    to: usize,
    n: usize,
    concurrency: usize,
) -> Connected {
    let progress = Progress::start(target.name, &["connected", "failed"]);
    let permits = Arc::new(tokio::sync::Semaphore::new(concurrency.max(1)));
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(to - from);
    for i in from..to {
        let (target, permits, progress) = (target.clone(), permits.clone(), progress.clone());
        tasks.push(tokio::spawn(async move {
            let _permit = permits.acquire_owned().await.ok()?;
            let t = Instant::now();
            match tokio::time::timeout(Duration::from_secs(30), target.open(i, n)).await {
                Ok(Ok(ws)) => {
                    progress.add(0, 1);
                    Some((ws, t.elapsed()))
                }
                failed => {
                    if progress.get(1) < 5 {
                        match failed {
                            Ok(Err(e)) => eprintln!("  socket {i} failed: {e:#}"),
                            _ => eprintln!("  socket {i} timed out after 30 s"),
                        }
                    }
                    progress.add(1, 1);
                    None
                }
            }
        }));
    }
    let mut out = Connected {
        sockets: Vec::with_capacity(n),
        failures: 0,
        times: histogram(),
        elapsed: Duration::ZERO,
    };
    for t in tasks {
        match t.await {
            Ok(Some((ws, took))) => {
                record(&mut out.times, took);
                out.sockets.push(ws);
            }
            _ => out.failures += 1,
        }
    }
    out.elapsed = started.elapsed();
    progress.stop();
    out
}
