//! The HTTP scenarios of the chat API: `post` (durable posts a second, exactly once) and `paging`.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde_json::{Value, json};

use crate::common::{Client, Progress, histogram, merge, ms, percentiles, record, round2};

/// What [`post_load`] returns: the acknowledged ids per channel, the latency histogram, the time
/// it took and the number of failed posts.
pub struct Posted {
    pub acked: Vec<Vec<String>>,
    pub hist: Histogram<u64>,
    pub elapsed: Duration,
    pub errors: usize,
}

/// Posts from `posters` tasks over `channels` (poster p in channel p mod K) until `deadline` (or
/// `total` posts).
pub async fn post_load(
    client: Arc<Client>,
    channels: Arc<Vec<String>>,
    posters: usize,
    deadline: Option<Instant>,
    total: Option<usize>,
) -> anyhow::Result<Posted> {
    let progress = Progress::start("post", &["acknowledged", "errors"]);
    let remaining = Arc::new(AtomicUsize::new(total.unwrap_or(usize::MAX)));
    let started = Instant::now();
    // Idempotency keys unique to this run, so a second run never replays the first one's posts.
    let run = crate::common::now_nanos();
    let mut tasks = Vec::new();
    for p in 0..posters {
        let (client, channels, remaining, progress) =
            (client.clone(), channels.clone(), remaining.clone(), progress.clone());
        tasks.push(tokio::spawn(async move {
            let channel = &channels[p % channels.len()];
            let mut hist = histogram();
            let mut acked = Vec::new();
            let mut errors = 0usize;
            let mut n = 0u64;
            loop {
                if deadline.is_some_and(|d| Instant::now() >= d)
                    || remaining.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |r| r.checked_sub(1)).is_err()
                {
                    break;
                }
                n += 1;
                let t = Instant::now();
                let body = json!({ "body": format!("load p{p} n{n}"), "idempotency_key": format!("lt-{run}-{p}-{n}") });
                match client.post_json(&format!("/channels/{channel}/messages"), body).await {
                    Ok(m) => {
                        record(&mut hist, t.elapsed());
                        if let Some(id) = m["id"].as_str() {
                            acked.push(id.to_owned());
                        }
                        progress.add(0, 1);
                    }
                    Err(e) => {
                        errors += 1;
                        progress.add(1, 1);
                        if progress.get(1) <= 5 {
                            eprintln!("post failed: {e:#}");
                        }
                    }
                }
            }
            (p % channels.len(), acked, hist, errors)
        }));
    }
    let mut out = Posted {
        acked: vec![Vec::new(); channels.len()],
        hist: histogram(),
        elapsed: Duration::ZERO,
        errors: 0,
    };
    for t in tasks {
        let (slot, acked, hist, errors) = t.await?;
        out.acked[slot].extend(acked);
        out.hist.add(&hist)?;
        out.errors += errors;
    }
    out.elapsed = started.elapsed();
    progress.stop();
    Ok(out)
}

/// `post`: C posters over K channels for a while; then every channel is read back and every
/// acknowledged message must be stored exactly once.
pub async fn post(
    client: Arc<Client>,
    posters: usize,
    channels: usize,
    seconds: u64,
    server_pid: Option<u32>,
) -> anyhow::Result<Value> {
    let run = crate::common::now_nanos() % 1_000_000;
    let mut ids = Vec::new();
    for i in 0..channels.max(1) {
        ids.push(client.channel(&format!("load-{run}-{i}")).await?);
    }
    let ids = Arc::new(ids);
    eprintln!("post: {posters} posters over {} channels for {seconds}s", ids.len());
    let cpu_before = server_pid.and_then(crate::common::cpu_seconds);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let posted = post_load(client.clone(), ids.clone(), posters, Some(deadline), None).await?;
    let cpu = match (cpu_before, server_pid.and_then(crate::common::cpu_seconds)) {
        (Some(b), Some(a)) => Some(round2(a - b)),
        _ => None,
    };
    let total: usize = posted.acked.iter().map(Vec::len).sum();
    eprintln!("  checking that every acknowledged message is stored exactly once");
    let (mut missing, mut duplicated) = (0usize, 0usize);
    for (channel, acked) in ids.iter().zip(&posted.acked) {
        let (stored, _) = client.walk(channel).await?;
        let unique: HashSet<&String> = stored.iter().collect();
        duplicated += stored.len() - unique.len();
        missing += acked.iter().filter(|id| !unique.contains(id)).count();
    }
    let rate = total as f64 / posted.elapsed.as_secs_f64();
    Ok(merge(
        json!({
            "scenario": "post", "posters": posters, "channels": ids.len(),
            "seconds": round2(posted.elapsed.as_secs_f64()), "acknowledged": total,
            "posts_per_second": rate.round(), "errors": posted.errors,
            "missing": missing, "duplicated": duplicated, "server_cpu_seconds": cpu,
            "ok": missing == 0 && duplicated == 0,
        }),
        percentiles(&posted.hist),
    ))
}

/// `paging`: fills one channel with N messages, then walks it from newest to oldest.
pub async fn paging(client: Arc<Client>, messages: usize, posters: usize) -> anyhow::Result<Value> {
    let channel = client.channel(&format!("paging-{}", crate::common::now_nanos() % 1_000_000)).await?;
    eprintln!("paging: filling one channel with {messages} messages");
    let ids = Arc::new(vec![channel.clone()]);
    let fill = post_load(client.clone(), ids, posters, None, Some(messages)).await?;
    eprintln!(
        "  filled in {:.1}s ({:.0} posts/s, p50 {:.2} ms, {} errors)",
        fill.elapsed.as_secs_f64(),
        fill.hist.len() as f64 / fill.elapsed.as_secs_f64(),
        ms(fill.hist.value_at_quantile(0.5)),
        fill.errors
    );
    // Walk it twice; report the second walk (warm).
    client.walk(&channel).await?;
    let (stored, times) = client.walk(&channel).await?;
    let pages = times.len();
    let median = |slice: &[Duration]| {
        let mut v: Vec<Duration> = slice.to_vec();
        v.sort();
        v.get(v.len() / 2).map_or(0.0, |d| round2(d.as_secs_f64() * 1000.0))
    };
    Ok(json!({
        "scenario": "paging", "messages": stored.len(), "pages": pages,
        "median_page_ms": median(&times), "near_newest_ms": median(&times[..pages.min(10)]),
        "near_oldest_ms": median(&times[pages.saturating_sub(10)..]),
    }))
}
