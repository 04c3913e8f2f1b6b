//! `fanout`: S sockets subscribed to one channel, P posters at R posts a second in all. Every
//! receiver records post-to-receive latency from the send time carried in the body; frames lost or
//! repeated are counted per socket; the server's CPU time gives deliveries per server CPU-second.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::common::{Progress, cpu_seconds, histogram, merge, now_nanos, percentiles, record, round2};
use crate::target::{Target, connect_measured};

pub struct Options {
    pub sockets: usize,
    pub posts: usize,
    pub rate: f64,
    pub posters: usize,
    pub concurrency: usize,
}

/// Reads `t=<unix nanos> i=<index>` out of a frame without parsing its JSON.
pub fn stamp(frame: &str) -> Option<(u128, usize)> {
    let at = frame.find("t=")? + 2;
    let rest = &frame[at..];
    let end = rest.find(|c: char| !c.is_ascii_digit())?;
    let sent = rest[..end].parse().ok()?;
    let rest = rest[end..].strip_prefix(" i=")?;
    let end = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
    Some((sent, rest[..end].parse().ok()?))
}

/// What every receiver found.
struct Received {
    hist: hdrhistogram::Histogram<u64>,
    delivered: usize,
    repeated: usize,
    disconnected: bool,
    last: Option<Instant>,
}

/// Runs the scenario against one target.
pub async fn run(target: Arc<Target>, o: &Options) -> anyhow::Result<Value> {
    let channel = target.channel().await?;
    eprintln!("fanout [{}]: connecting {} sockets, {} at a time", target.name, o.sockets, o.concurrency);
    let measured = connect_measured(&target, o.sockets, o.concurrency, Duration::from_secs(1)).await;
    let (kib_per_socket, kib_per_socket_total) = (measured.kib_per_socket(), measured.kib_per_socket_total());
    let connected = measured.connected;
    eprintln!(
        "  {} connected in {:.1}s, {} failed",
        connected.sockets.len(),
        connected.elapsed.as_secs_f64(),
        connected.failures
    );
    let n = connected.sockets.len();
    // Once posting ends: how many were acknowledged, so a receiver knows when it has them all.
    let acked_final = Arc::new(AtomicUsize::new(usize::MAX));
    let done_at: Arc<std::sync::Mutex<Option<Instant>>> = Arc::default();
    // While posting, a receiver only waits for frames (no timer per frame: the client's own cost
    // bounds what it can measure); once posting ends it is woken and waits with a timeout.
    let (done_tx, done_rx) = tokio::sync::watch::channel(false);
    let progress = Progress::start(target.name, &["posted", "delivered"]);
    let mut readers = Vec::with_capacity(n);
    let posts = o.posts;
    for mut ws in connected.sockets {
        let (acked_final, done_at, progress) = (acked_final.clone(), done_at.clone(), progress.clone());
        let mut done_rx = done_rx.clone();
        readers.push(tokio::spawn(async move {
            let mut r =
                Received { hist: histogram(), delivered: 0, repeated: 0, disconnected: false, last: None };
            let mut seen = vec![false; posts];
            loop {
                let expected = acked_final.load(Ordering::Relaxed).min(posts);
                if r.delivered >= expected {
                    break;
                }
                let next = if *done_rx.borrow() {
                    tokio::time::timeout(Duration::from_millis(500), ws.next()).await
                } else {
                    tokio::select! {
                        m = ws.next() => Ok(m),
                        _ = done_rx.changed() => continue,
                    }
                };
                match next {
                    Ok(Some(Ok(Message::Text(t)))) => {
                        let text = t.as_str();
                        let Some((sent, i)) = stamp(text) else {
                            if text.contains("\"disconnect\"") {
                                r.disconnected = true;
                                break;
                            }
                            continue;
                        };
                        let now = Instant::now();
                        let us = u64::try_from(now_nanos().saturating_sub(sent) / 1000).unwrap_or(u64::MAX);
                        record(&mut r.hist, Duration::from_micros(us));
                        r.last = Some(now);
                        match seen.get_mut(i) {
                            Some(s) if !*s => {
                                *s = true;
                                r.delivered += 1;
                                progress.add(1, 1);
                            }
                            _ => r.repeated += 1,
                        }
                    }
                    Ok(Some(Ok(_))) => {}
                    Ok(Some(Err(_)) | None) => {
                        r.disconnected = true;
                        break;
                    }
                    Err(_) => {
                        // Idle: after the last post, wait at most 10 s for what is still missing.
                        let done = done_at.lock().ok().and_then(|d| *d);
                        if done.is_some_and(|d| d.elapsed() > Duration::from_secs(10)) {
                            break;
                        }
                    }
                }
            }
            drop(ws);
            r
        }));
    }
    let cpu_before = target.pid.and_then(cpu_seconds);
    eprintln!("  posting {} at {}/s from {} posters", o.posts, o.rate, o.posters);
    let gap = Duration::from_secs_f64(1.0 / o.rate);
    let post_start = Instant::now();
    let mut posters = Vec::new();
    for p in 0..o.posters.max(1) {
        let mut poster = target.poster(channel.as_deref()).await?;
        let (progress, step) = (progress.clone(), o.posters.max(1));
        posters.push(tokio::spawn(async move {
            let (mut acked, mut errors, mut hist) = (0usize, 0usize, histogram());
            for i in (p..posts).step_by(step) {
                let due = post_start + gap.mul_f64(i as f64);
                tokio::time::sleep_until(due.into()).await;
                let t = Instant::now();
                match poster.post(&format!("t={} i={i}", now_nanos()), i).await {
                    Ok(()) => {
                        acked += 1;
                        record(&mut hist, t.elapsed());
                        progress.add(0, 1);
                    }
                    Err(e) => {
                        if errors < 3 {
                            eprintln!("  post {i} failed: {e:#}");
                        }
                        errors += 1;
                    }
                }
            }
            // The poster is returned, not dropped: a baseline poster socket holds unread frames,
            // and closing it then sends a reset that can discard its last posts at the server.
            (acked, errors, hist, poster)
        }));
    }
    let (mut acked, mut post_errors, mut post_hist) = (0usize, 0usize, histogram());
    let mut keep = Vec::new();
    for p in posters {
        let (a, e, h, poster) = p.await?;
        keep.push(poster);
        acked += a;
        post_errors += e;
        post_hist.add(&h)?;
    }
    if let Ok(mut d) = done_at.lock() {
        *d = Some(Instant::now());
    }
    acked_final.store(if post_errors == 0 { posts } else { acked }, Ordering::Relaxed);
    let _ = done_tx.send(true);
    let mut hist = histogram();
    let (mut delivered, mut repeated, mut disconnected, mut last) = (0usize, 0usize, 0usize, post_start);
    for r in readers {
        let r = r.await?;
        hist.add(&r.hist)?;
        delivered += r.delivered;
        repeated += r.repeated;
        disconnected += usize::from(r.disconnected);
        if let Some(l) = r.last {
            last = last.max(l);
        }
    }
    progress.stop();
    drop(keep);
    let cpu = match (cpu_before, target.pid.and_then(cpu_seconds)) {
        (Some(b), Some(a)) => Some(a - b),
        _ => None,
    };
    let span = last.duration_since(post_start).as_secs_f64().max(1e-3);
    // With failed posts the ids that failed are unknown to the receivers; count against the acked.
    let lost = (n * acked).saturating_sub(delivered);
    Ok(merge(
        json!({
            "target": target.name, "sockets": o.sockets, "connected": n, "connect_failures": connected.failures,
            "posts": o.posts, "acknowledged": acked, "post_errors": post_errors, "rate": o.rate, "posters": o.posters,
            "delivered": delivered, "lost": lost, "repeated": repeated, "disconnected": disconnected,
            "deliveries_per_second": (delivered as f64 / span).round(),
            "kib_per_idle_socket": kib_per_socket, "kib_per_idle_socket_total": kib_per_socket_total,
            "server_cpu_seconds": cpu.map(round2),
            "deliveries_per_cpu_second": cpu.filter(|c| *c > 0.0).map(|c| (delivered as f64 / c).round()),
            "post_ack_p50_ms": round2(crate::common::ms(post_hist.value_at_quantile(0.5))),
            "ok": lost == 0 && repeated == 0 && connected.failures == 0,
        }),
        percentiles(&hist),
    ))
}

#[cfg(test)]
mod tests {
    use super::stamp;

    #[test]
    fn reads_the_stamp_out_of_a_frame() {
        let frame = r#"{"identifier":"x","message":{"cursor":"9","message":{"body":"t=1700000000123456789 i=42","id":"c-1"}}}"#;
        assert_eq!(stamp(frame), Some((1_700_000_000_123_456_789, 42)));
        assert_eq!(stamp(r#"{"type":"ping","message":1700000000}"#), None);
    }
}
