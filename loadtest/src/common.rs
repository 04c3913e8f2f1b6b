//! What every scenario shares: the HTTP client of the chat API, histograms, /proc readings,
//! the progress line, and sockets opened from a chosen loopback source address.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use hdrhistogram::Histogram;
use serde_json::{Value, json};

/// A client of agora's chat API with one bearer token.
pub struct Client {
    pub http: reqwest::Client,
    pub base: String,
    pub token: String,
}

impl Client {
    pub fn new(base: &str, token: &str) -> anyhow::Result<Client> {
        let http = reqwest::Client::builder().pool_max_idle_per_host(256).build()?;
        Ok(Client { http, base: base.trim_end_matches('/').to_owned(), token: token.to_owned() })
    }

    /// The same server with another token, sharing the connection pool.
    pub fn with_token(&self, token: &str) -> Client {
        Client { http: self.http.clone(), base: self.base.clone(), token: token.to_owned() }
    }

    pub async fn send(&self, req: reqwest::RequestBuilder) -> anyhow::Result<Value> {
        let res = req.bearer_auth(&self.token).send().await?;
        let status = res.status();
        let body: Value = res.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            bail!("{status}: {body}");
        }
        Ok(body)
    }

    pub async fn post_json(&self, path: &str, body: Value) -> anyhow::Result<Value> {
        self.send(self.http.post(format!("{}{path}", self.base)).json(&body)).await
    }

    pub async fn get(&self, path: &str) -> anyhow::Result<Value> {
        self.send(self.http.get(format!("{}{path}", self.base))).await
    }

    /// Creates a channel (the caller becomes a member) and returns its id.
    pub async fn channel(&self, name: &str) -> anyhow::Result<String> {
        let c = self.post_json("/channels", json!({ "name": name })).await?;
        c["id"].as_str().map(str::to_owned).context("no channel id")
    }

    /// Every message id of a channel, walking it newest to oldest; with each page's latency.
    pub async fn walk(&self, channel: &str) -> anyhow::Result<(Vec<String>, Vec<Duration>)> {
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

/// A latency histogram in microseconds, 1 µs to 60 s, 3 significant figures.
pub fn histogram() -> Histogram<u64> {
    #[allow(clippy::expect_used)] // constant, valid bounds
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("valid histogram bounds")
}

pub fn record(hist: &mut Histogram<u64>, elapsed: Duration) {
    let us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
    let _ = hist.record(us.clamp(1, 60_000_000));
}

pub fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// p50, p90, p95, p99 and max of a histogram, in milliseconds, as JSON fields.
pub fn percentiles(hist: &Histogram<u64>) -> Value {
    if hist.is_empty() {
        return json!({ "p50_ms": null, "p90_ms": null, "p95_ms": null, "p99_ms": null, "max_ms": null });
    }
    json!({
        "p50_ms": round2(ms(hist.value_at_quantile(0.5))),
        "p90_ms": round2(ms(hist.value_at_quantile(0.9))),
        "p95_ms": round2(ms(hist.value_at_quantile(0.95))),
        "p99_ms": round2(ms(hist.value_at_quantile(0.99))),
        "max_ms": round2(ms(hist.max())),
    })
}

pub fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Adds the fields of `extra` (an object) to `base` (an object).
pub fn merge(mut base: Value, extra: Value) -> Value {
    if let (Some(b), Value::Object(e)) = (base.as_object_mut(), extra) {
        b.extend(e);
    }
    base
}

pub fn now_nanos() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0)
}

/// A process's resident memory in KiB, from /proc.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A process's CPU time (user + system) in seconds, from /proc (100 clock ticks a second).
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces; the fields after it are plain.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name and state.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) as f64 / 100.0)
}

/// Counters shown once a second on stderr while a scenario runs.
pub struct Progress {
    names: Vec<&'static str>,
    counters: Vec<AtomicU64>,
    done: AtomicBool,
}

impl Progress {
    /// Starts the progress line; it stops when the returned handle is dropped or [`Progress::stop`] is called.
    pub fn start(label: &str, names: &[&'static str]) -> Arc<Progress> {
        let p = Arc::new(Progress {
            names: names.to_vec(),
            counters: names.iter().map(|_| AtomicU64::new(0)).collect(),
            done: AtomicBool::new(false),
        });
        let shown = p.clone();
        let label = label.to_owned();
        tokio::spawn(async move {
            let started = Instant::now();
            let mut last: Vec<u64> = vec![0; shown.names.len()];
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            tick.tick().await;
            loop {
                tick.tick().await;
                if shown.done.load(Ordering::Relaxed) {
                    return;
                }
                let mut line = format!("  [{label} {:>5.1}s]", started.elapsed().as_secs_f64());
                for (i, name) in shown.names.iter().enumerate() {
                    let now = shown.counters[i].load(Ordering::Relaxed);
                    line.push_str(&format!(" {name} {now} (+{}/s)", now.saturating_sub(last[i])));
                    last[i] = now;
                }
                eprintln!("{line}");
            }
        });
        p
    }

    pub fn add(&self, i: usize, n: u64) {
        if let Some(c) = self.counters.get(i) {
            c.fetch_add(n, Ordering::Relaxed);
        }
    }

    pub fn get(&self, i: usize) -> u64 {
        self.counters.get(i).map_or(0, |c| c.load(Ordering::Relaxed))
    }

    pub fn stop(&self) {
        self.done.store(true, Ordering::Relaxed);
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
    }
}

pub type Ws = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

/// The loopback source address for the `i`th of `n` client sockets: one address per 10,000
/// sockets (127.0.0.1, 127.0.0.2, ...), so a large run is not held by the ~28k ephemeral ports of
/// one source address.
pub fn source_ip(i: usize, n: usize) -> IpAddr {
    let addresses = n.div_ceil(10_000).max(1);
    let k = u8::try_from(i % addresses).unwrap_or(0);
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1 + k))
}

/// Opens a websocket to `url` from `source`, with ActionCable's subprotocol when asked.
pub async fn connect_ws(url: &str, source: IpAddr, actioncable: bool) -> anyhow::Result<Ws> {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;
    let mut req = url.into_client_request()?;
    if actioncable {
        req.headers_mut().insert("Sec-WebSocket-Protocol", "actioncable-v1-json".parse()?);
    }
    let host = req.uri().host().context("no host in the socket URL")?.to_owned();
    let port = req.uri().port_u16().unwrap_or(80);
    let addr: SocketAddr =
        tokio::net::lookup_host((host.as_str(), port)).await?.next().context("no address")?;
    let socket =
        if addr.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    // 127.0.0.1 is left to connect(), which picks a port free for this destination (ports in
    // TIME_WAIT from an earlier run to another server port stay usable); other addresses are bound
    // first, with SO_REUSEADDR for the same reason.
    if addr.is_ipv4() && source.is_ipv4() && source != IpAddr::V4(Ipv4Addr::LOCALHOST) {
        socket.set_reuseaddr(true)?;
        socket.bind(SocketAddr::new(source, 0))?;
    }
    let stream = socket.connect(addr).await?;
    stream.set_nodelay(true)?;
    // Small buffers: 10k client sockets with the 128 KiB default read buffer would take 1.3 GB.
    let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .read_buffer_size(4 * 1024)
        .write_buffer_size(4 * 1024);
    let (ws, _) = tokio_tungstenite::client_async_with_config(req, stream, Some(config)).await?;
    Ok(ws)
}

/// Waits for ActionCable's welcome, subscribes to EventsChannel and waits for the confirmation.
pub async fn subscribe(ws: &mut Ws) -> anyhow::Result<()> {
    use futures::{SinkExt as _, StreamExt as _};
    use tokio_tungstenite::tungstenite::Message;
    // Wait for `welcome` first, as Rails' own client does: Rails may drop a command that arrives
    // before the connection is open.
    loop {
        let Some(msg) = ws.next().await else { bail!("socket closed before welcome") };
        if let Message::Text(t) = msg? {
            if t.as_str().contains("\"welcome\"") {
                break;
            }
            if t.as_str().contains("\"disconnect\"") {
                bail!("refused: {}", t.as_str());
            }
        }
    }
    let identifier = r#"{"channel":"EventsChannel"}"#;
    ws.send(Message::text(json!({ "command": "subscribe", "identifier": identifier }).to_string())).await?;
    loop {
        let Some(msg) = ws.next().await else { bail!("socket closed before confirmation") };
        if let Message::Text(t) = msg? {
            let t = t.as_str();
            if t.contains("confirm_subscription") {
                return Ok(());
            }
            if t.contains("\"disconnect\"") || t.contains("reject_subscription") {
                bail!("refused: {t}");
            }
        }
    }
}

/// Median of a list of numbers (the middle one, or the mean of the two middle ones).
pub fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 { values[n / 2] } else { (values[n / 2 - 1] + values[n / 2]) / 2.0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&mut []), None);
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), Some(2.5));
    }

    #[test]
    fn one_source_address_per_ten_thousand_sockets() {
        let lo = IpAddr::V4(Ipv4Addr::LOCALHOST);
        assert!((0..10_000).all(|i| source_ip(i, 10_000) == lo));
        assert_eq!(source_ip(0, 19_000), lo);
        assert_eq!(source_ip(1, 19_000), IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)));
        assert_eq!(source_ip(2, 19_000), lo);
    }

    #[test]
    fn reads_cpu_time_of_this_process() {
        assert!(cpu_seconds(std::process::id()).is_some_and(|s| s >= 0.0));
        assert!(rss_kib(std::process::id()).is_some_and(|k| k > 0));
    }
}
