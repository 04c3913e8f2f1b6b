//! agora's load generator: a black-box client of a running agora, recording latencies in
//! HdrHistogram and ending with a table and a JSON summary.
//!
//! This first version has the HTTP scenarios of the chat API:
//! - `post`: C concurrent posters over K channels for a while: acknowledged posts a second and
//!   latency percentiles; afterwards every channel is read back and every acknowledged message
//!   must be stored exactly once.
//! - `paging`: fills one channel with N messages, then walks it from newest to oldest, one page of
//!   100 at a time, and reports the time of pages near the newest end and near the oldest end.
//!
//! The socket scenarios (`fanout`, `connections`), `feed`, `signup` and the bare `baseline` server
//! arrive with the load-test issue. It depends on none of agora's crates, so it measures only what
//! a client sees. The server must allow the load (`--posts-per-minute`, `--reads-per-minute`).

use std::collections::HashSet;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::{Parser, Subcommand};
use hdrhistogram::Histogram;
use serde_json::{Value, json};
use tokio::sync::Mutex;

/// Drive a running agora and report rates and latencies.
#[derive(Debug, Parser)]
#[command(name = "agora-loadtest", version)]
struct Args {
    /// Base URL of the chat service.
    #[arg(long, global = true, default_value = "http://127.0.0.1:4000")]
    chat_url: String,
    /// A staff browser session token (`agora admin session --handle H`).
    #[arg(long, global = true, env = "AGORA_LOADTEST_TOKEN", default_value = "")]
    token: String,
    #[command(subcommand)]
    scenario: Scenario,
}

#[derive(Debug, Subcommand)]
enum Scenario {
    /// C concurrent posters over K channels: durable posts a second and latency.
    Post {
        #[arg(long, default_value_t = 32)]
        posters: usize,
        #[arg(long, default_value_t = 32)]
        channels: usize,
        /// Seconds to post for.
        #[arg(long, default_value_t = 10)]
        seconds: u64,
    },
    /// S sockets subscribed to one channel; posts at R a second: post-to-receive latency at every
    /// receiver, frames lost or repeated, and the server's memory per idle socket.
    Fanout {
        #[arg(long, default_value_t = 1000)]
        sockets: usize,
        #[arg(long, default_value_t = 100)]
        posts: usize,
        /// Posts a second.
        #[arg(long, default_value_t = 10.0)]
        rate: f64,
        /// The server's process id, to read its resident memory (Linux /proc).
        #[arg(long)]
        server_pid: Option<u32>,
        /// Target the bare `baseline` server at this ws:// address instead of agora.
        #[arg(long)]
        baseline_url: Option<String>,
    },
    /// A bare websocket broadcast server (no storage, no auth): every text frame a client sends
    /// goes to every client. The limit of the stack, for `fanout --baseline-url`.
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
}

struct Client {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Client {
    async fn send(&self, req: reqwest::RequestBuilder) -> anyhow::Result<Value> {
        let res = req.bearer_auth(&self.token).send().await?;
        let status = res.status();
        let body: Value = res.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            bail!("{status}: {body}");
        }
        Ok(body)
    }

    async fn post_json(&self, path: &str, body: Value) -> anyhow::Result<Value> {
        self.send(self.http.post(format!("{}{path}", self.base)).json(&body)).await
    }

    async fn get(&self, path: &str) -> anyhow::Result<Value> {
        self.send(self.http.get(format!("{}{path}", self.base))).await
    }

    async fn channel(&self, name: &str) -> anyhow::Result<String> {
        let c = self.post_json("/channels", json!({ "name": name })).await?;
        c["id"].as_str().map(str::to_owned).context("no channel id")
    }

    /// Every message id of a channel, walking it newest to oldest; with each page's latency.
    async fn walk(&self, channel: &str) -> anyhow::Result<(Vec<String>, Vec<Duration>)> {
        let mut ids = Vec::new();
        let mut times = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let path = match &cursor {
                None => format!("/channels/{channel}/messages?limit=100"),
                Some(c) => format!("/channels/{channel}/messages?limit=100&cursor={c}"),
            };
            let started = Instant::now();
            let page = self.get(&path).await?;
            times.push(started.elapsed());
            for m in page["items"].as_array().context("items")? {
                ids.push(m["id"].as_str().context("id")?.to_owned());
            }
            match page["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_owned()),
                None => return Ok((ids, times)),
            }
        }
    }
}

fn histogram() -> Histogram<u64> {
    // Microseconds, 1 µs to 60 s, 3 significant figures.
    #[allow(clippy::expect_used)] // constant, valid bounds
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("valid histogram bounds")
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// Posts from `posters` tasks over `channels` until `deadline` (or `total` posts); returns the
/// acknowledged ids per channel and the latency histogram.
async fn post_load(
    client: Arc<Client>,
    channels: Arc<Vec<String>>,
    posters: usize,
    deadline: Option<Instant>,
    total: Option<usize>,
) -> anyhow::Result<(Vec<Vec<String>>, Histogram<u64>, Duration, usize)> {
    let acked: Arc<Mutex<Vec<Vec<String>>>> = Arc::new(Mutex::new(vec![Vec::new(); channels.len()]));
    let hist = Arc::new(Mutex::new(histogram()));
    let remaining = Arc::new(std::sync::atomic::AtomicUsize::new(total.unwrap_or(usize::MAX)));
    let errors = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    // Idempotency keys unique to this run, so a second run never replays the first one's posts.
    let run =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let mut tasks = Vec::new();
    for p in 0..posters {
        let (client, channels, acked, hist, remaining, errors) = (
            client.clone(),
            channels.clone(),
            acked.clone(),
            hist.clone(),
            remaining.clone(),
            errors.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let slot = p % channels.len();
            let channel = &channels[slot];
            let mut n = 0u64;
            loop {
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    break;
                }
                if remaining
                    .fetch_update(
                        std::sync::atomic::Ordering::SeqCst,
                        std::sync::atomic::Ordering::SeqCst,
                        |r| r.checked_sub(1),
                    )
                    .is_err()
                {
                    break;
                }
                n += 1;
                let t = Instant::now();
                let body =
                    json!({ "body": format!("load p{p} n{n}"), "idempotency_key": format!("lt-{run}-{p}-{n}") });
                match client.post_json(&format!("/channels/{channel}/messages"), body).await {
                    Ok(m) => {
                        let us = u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX);
                        let _ = hist.lock().await.record(us.max(1));
                        if let Some(id) = m["id"].as_str() {
                            acked.lock().await[slot].push(id.to_owned());
                        }
                    }
                    Err(e) => {
                        if errors.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < 5 {
                            eprintln!("post failed: {e:#}");
                        }
                    }
                }
            }
        }));
    }
    let mut last_report = Instant::now();
    while tasks.iter().any(|t| !t.is_finished()) {
        tokio::time::sleep(Duration::from_millis(200)).await;
        if last_report.elapsed() >= Duration::from_secs(2) {
            let done: usize = acked.lock().await.iter().map(Vec::len).sum();
            eprintln!("  {:>6.1}s  {done} posts acknowledged", started.elapsed().as_secs_f64());
            last_report = Instant::now();
        }
    }
    for t in tasks {
        t.await?;
    }
    let elapsed = started.elapsed();
    let acked = Arc::try_unwrap(acked).map_err(|_| anyhow::anyhow!("posters still running"))?.into_inner();
    let hist = Arc::try_unwrap(hist).map_err(|_| anyhow::anyhow!("posters still running"))?.into_inner();
    Ok((acked, hist, elapsed, errors.load(std::sync::atomic::Ordering::SeqCst)))
}

async fn run(args: Args) -> anyhow::Result<Value> {
    let http = reqwest::Client::builder().pool_max_idle_per_host(256).build()?;
    let client =
        Arc::new(Client { http, base: args.chat_url.trim_end_matches('/').to_owned(), token: args.token });
    match args.scenario {
        Scenario::Post { posters, channels, seconds } => {
            let mut ids = Vec::new();
            for i in 0..channels.max(1) {
                ids.push(client.channel(&format!("load-{i}")).await?);
            }
            let ids = Arc::new(ids);
            eprintln!("post: {posters} posters over {} channels for {seconds}s", ids.len());
            let deadline = Instant::now() + Duration::from_secs(seconds);
            let (acked, hist, elapsed, errors) =
                post_load(client.clone(), ids.clone(), posters, Some(deadline), None).await?;
            let total: usize = acked.iter().map(Vec::len).sum();
            // Every acknowledged message is stored exactly once.
            let mut missing = 0usize;
            let mut duplicated = 0usize;
            for (channel, acked) in ids.iter().zip(&acked) {
                let (stored, _) = client.walk(channel).await?;
                let unique: HashSet<&String> = stored.iter().collect();
                duplicated += stored.len() - unique.len();
                missing += acked.iter().filter(|id| !unique.contains(id)).count();
            }
            let rate = total as f64 / elapsed.as_secs_f64();
            println!(
                "| posters | channels | acknowledged | posts/s | p50 ms | p90 ms | p99 ms | max ms | errors | missing | duplicated |"
            );
            println!("|---|---|---|---|---|---|---|---|---|---|---|");
            println!(
                "| {posters} | {} | {total} | {rate:.0} | {:.2} | {:.2} | {:.2} | {:.2} | {errors} | {missing} | {duplicated} |",
                ids.len(),
                ms(hist.value_at_quantile(0.5)),
                ms(hist.value_at_quantile(0.9)),
                ms(hist.value_at_quantile(0.99)),
                ms(hist.max())
            );
            Ok(json!({
                "scenario": "post", "posters": posters, "channels": ids.len(), "seconds": elapsed.as_secs_f64(),
                "acknowledged": total, "posts_per_second": rate, "errors": errors,
                "p50_ms": ms(hist.value_at_quantile(0.5)), "p90_ms": ms(hist.value_at_quantile(0.9)),
                "p99_ms": ms(hist.value_at_quantile(0.99)), "max_ms": ms(hist.max()),
                "missing": missing, "duplicated": duplicated,
            }))
        }
        Scenario::Fanout { sockets, posts, rate, server_pid, baseline_url } => {
            fanout(client, sockets, posts, rate, server_pid, baseline_url).await
        }
        Scenario::Baseline { listen } => baseline(&listen).await,
        Scenario::Paging { messages, posters } => {
            let channel = client.channel("paging").await?;
            eprintln!("paging: filling one channel with {messages} messages");
            let ids = Arc::new(vec![channel.clone()]);
            let (_, fill, elapsed, errors) =
                post_load(client.clone(), ids, posters, None, Some(messages)).await?;
            eprintln!(
                "  filled in {:.1}s ({:.0} posts/s, p50 {:.2} ms, {errors} errors)",
                elapsed.as_secs_f64(),
                fill.len() as f64 / elapsed.as_secs_f64(),
                ms(fill.value_at_quantile(0.5))
            );
            // Walk it twice; report the second walk (warm).
            client.walk(&channel).await?;
            let (stored, times) = client.walk(&channel).await?;
            let pages = times.len();
            let median = |slice: &[Duration]| {
                let mut v: Vec<Duration> = slice.to_vec();
                v.sort();
                v.get(v.len() / 2).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
            };
            let near_newest = median(&times[..pages.min(10)]);
            let near_oldest = median(&times[pages.saturating_sub(10)..]);
            let all = median(&times);
            println!(
                "| messages | pages of 100 | median page ms (all) | near the newest end | near the oldest end |"
            );
            println!("|---|---|---|---|---|");
            println!("| {} | {pages} | {all:.2} | {near_newest:.2} | {near_oldest:.2} |", stored.len());
            Ok(json!({
                "scenario": "paging", "messages": stored.len(), "pages": pages,
                "median_page_ms": all, "near_newest_ms": near_newest, "near_oldest_ms": near_oldest,
            }))
        }
    }
}

/// The server's resident memory in KiB, from /proc.
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn now_nanos() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0)
}

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Opens a socket with a fresh ticket and subscribes it to EventsChannel.
async fn subscribed_socket(client: &Client) -> anyhow::Result<Ws> {
    use futures::{SinkExt as _, StreamExt as _};
    use tokio_tungstenite::tungstenite::{Message, client::IntoClientRequest as _};
    let t = client.post_json("/stream_tickets", json!({})).await?;
    let mut req = t["url"].as_str().context("ticket url")?.into_client_request()?;
    req.headers_mut().insert("Sec-WebSocket-Protocol", "actioncable-v1-json".parse()?);
    let (mut ws, _) = tokio_tungstenite::connect_async(req).await?;
    let identifier = r#"{"channel":"EventsChannel"}"#;
    ws.send(Message::text(json!({ "command": "subscribe", "identifier": identifier }).to_string())).await?;
    loop {
        let Some(msg) = ws.next().await else { bail!("socket closed before confirmation") };
        if let Message::Text(t) = msg? {
            let v: Value = serde_json::from_str(t.as_str())?;
            if v["type"] == "confirm_subscription" {
                return Ok(ws);
            }
            if v["type"] == "disconnect" || v["type"] == "reject_subscription" {
                bail!("refused: {v}");
            }
        }
    }
}

/// Runs the bare broadcast server until the process is stopped.
async fn baseline(listen: &str) -> anyhow::Result<Value> {
    use futures::{SinkExt as _, StreamExt as _};
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
    let listener = tokio::net::TcpListener::bind(listen).await?;
    eprintln!("baseline: broadcasting on ws://{}", listener.local_addr()?);
    // Every client's queue; a full queue drops that client, as agora does.
    let clients: Arc<std::sync::RwLock<Vec<tokio::sync::mpsc::Sender<Arc<str>>>>> = Arc::default();
    loop {
        let (stream, _) = listener.accept().await?;
        let clients = clients.clone();
        tokio::spawn(async move {
            let config = WebSocketConfig::default().read_buffer_size(4 * 1024).write_buffer_size(8 * 1024);
            let Ok(ws) = tokio_tungstenite::accept_async_with_config(stream, Some(config)).await else {
                return;
            };
            let (mut sink, mut stream) = ws.split();
            let (tx, mut rx) = tokio::sync::mpsc::channel::<Arc<str>>(512);
            if let Ok(mut list) = clients.write() {
                list.push(tx);
            }
            let writer = tokio::spawn(async move {
                while let Some(frame) = rx.recv().await {
                    let mut batch = vec![frame];
                    while let Ok(f) = rx.try_recv() {
                        batch.push(f);
                    }
                    for f in batch {
                        if sink.feed(Message::text(f.to_string())).await.is_err() {
                            return;
                        }
                    }
                    if sink.flush().await.is_err() {
                        return;
                    }
                }
            });
            while let Some(Ok(msg)) = stream.next().await {
                if let Message::Text(t) = msg {
                    let frame: Arc<str> = Arc::from(t.as_str());
                    if let Ok(mut list) = clients.write() {
                        list.retain(|c| c.try_send(frame.clone()).is_ok());
                    }
                }
            }
            writer.abort();
        });
    }
}

async fn fanout(
    client: Arc<Client>,
    sockets: usize,
    posts: usize,
    rate: f64,
    server_pid: Option<u32>,
    baseline_url: Option<String>,
) -> anyhow::Result<Value> {
    use futures::{SinkExt as _, StreamExt as _};
    use tokio_tungstenite::tungstenite::Message;
    let channel = match &baseline_url {
        None => client.channel("fanout").await?,
        Some(_) => String::new(),
    };
    let before = server_pid.and_then(rss_kib);
    eprintln!("fanout: connecting {sockets} sockets");
    let mut conns = Vec::with_capacity(sockets);
    let started = Instant::now();
    for chunk in (0..sockets).collect::<Vec<_>>().chunks(100) {
        let mut batch = Vec::new();
        for _ in chunk {
            let client = client.clone();
            let baseline_url = baseline_url.clone();
            batch.push(tokio::spawn(async move {
                match baseline_url {
                    None => subscribed_socket(&client).await,
                    Some(url) => Ok(tokio_tungstenite::connect_async(url.as_str()).await?.0),
                }
            }));
        }
        for b in batch {
            conns.push(b.await??);
        }
    }
    eprintln!("  connected in {:.1}s", started.elapsed().as_secs_f64());
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = server_pid.and_then(rss_kib);
    let per_socket_kib = match (before, after) {
        (Some(b), Some(a)) => Some((a.saturating_sub(b)) as f64 / sockets as f64),
        _ => None,
    };
    // Every receiver records post-to-receive latency from the send time in the body.
    let deadline = Instant::now() + Duration::from_secs_f64(posts as f64 / rate + 30.0);
    let mut readers = Vec::with_capacity(sockets);
    for mut ws in conns {
        readers.push(tokio::spawn(async move {
            let mut hist = histogram();
            let mut seen: HashSet<String> = HashSet::new();
            let mut repeated = 0usize;
            while seen.len() < posts {
                let Ok(Some(Ok(msg))) = tokio::time::timeout_at(deadline.into(), ws.next()).await else {
                    break;
                };
                let Message::Text(t) = msg else { continue };
                let Ok(v) = serde_json::from_str::<Value>(t.as_str()) else { continue };
                let item = &v["message"];
                if item["kind"] != "message.created" {
                    continue;
                }
                let body = item["message"]["body"].as_str().unwrap_or_default();
                let Some(sent) = body.strip_prefix("t=").and_then(|n| n.parse::<u128>().ok()) else {
                    continue;
                };
                let us = u64::try_from(now_nanos().saturating_sub(sent) / 1000).unwrap_or(u64::MAX);
                let _ = hist.record(us.max(1));
                if !seen.insert(item["message"]["id"].as_str().unwrap_or_default().to_owned()) {
                    repeated += 1;
                }
            }
            (hist, seen.len(), repeated)
        }));
    }
    eprintln!("  posting {posts} at {rate}/s");
    let gap = Duration::from_secs_f64(1.0 / rate);
    let mut baseline_poster = match &baseline_url {
        Some(url) => Some(tokio_tungstenite::connect_async(url.as_str()).await?.0),
        None => None,
    };
    let post_start = Instant::now();
    for i in 0..posts {
        let due = post_start + gap * u32::try_from(i).unwrap_or(u32::MAX);
        tokio::time::sleep_until(due.into()).await;
        let body = format!("t={}", now_nanos());
        match &mut baseline_poster {
            // The same frame shape agora sends, so the receivers read both alike.
            Some(ws) => {
                let frame = json!({ "message": { "kind": "message.created", "message": { "id": i.to_string(), "body": body } } });
                ws.send(Message::text(frame.to_string())).await?;
            }
            None => {
                client.post_json(&format!("/channels/{channel}/messages"), json!({ "body": body })).await?;
            }
        }
    }
    let mut hist = histogram();
    let (mut delivered, mut repeated) = (0usize, 0usize);
    for r in readers {
        let (h, n, rep) = r.await?;
        hist.add(&h)?;
        delivered += n;
        repeated += rep;
    }
    let elapsed = post_start.elapsed().as_secs_f64();
    let lost = sockets * posts - delivered;
    println!(
        "| sockets | posts | p50 ms | p90 ms | p99 ms | max ms | deliveries/s | lost | repeated | KiB per idle socket |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    println!(
        "| {sockets} | {posts} | {:.2} | {:.2} | {:.2} | {:.2} | {:.0} | {lost} | {repeated} | {} |",
        ms(hist.value_at_quantile(0.5)),
        ms(hist.value_at_quantile(0.9)),
        ms(hist.value_at_quantile(0.99)),
        ms(hist.max()),
        delivered as f64 / elapsed,
        per_socket_kib.map_or("n/a".to_owned(), |k| format!("{k:.1}")),
    );
    Ok(json!({
        "scenario": "fanout", "sockets": sockets, "posts": posts, "rate": rate,
        "p50_ms": ms(hist.value_at_quantile(0.5)), "p90_ms": ms(hist.value_at_quantile(0.9)),
        "p99_ms": ms(hist.value_at_quantile(0.99)), "max_ms": ms(hist.max()),
        "delivered": delivered, "lost": lost, "repeated": repeated, "kib_per_idle_socket": per_socket_kib,
    }))
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    match run(args).await {
        Ok(summary) => {
            println!("{summary}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("agora-loadtest: {e:#}");
            ExitCode::FAILURE
        }
    }
}
