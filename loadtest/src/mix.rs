//! `mix`: the chat mix of PERFORMANCE.md. N clients, each a bot of its own (so each socket gets
//! only its room's events), in rooms of 10 to 100 members; each posts in its room every 10 to 60
//! seconds (uniformly at random) for a while. Every receiver records post-to-receive latency;
//! every post must reach every member of its room once.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use futures::StreamExt as _;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::common::{
    Client, Progress, connect_ws, histogram, merge, now_nanos, percentiles, record, round2, source_ip,
    subscribe,
};

pub struct Options {
    pub clients: usize,
    pub room_min: usize,
    pub room_max: usize,
    pub every_min: f64,
    pub every_max: f64,
    pub seconds: u64,
}

/// A small deterministic generator (xorshift), so a run's rooms and timings can be repeated.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn between(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * (self.next() % 1_000_000) as f64 / 1_000_000.0
    }
}

pub async fn run(staff: Arc<Client>, o: &Options) -> anyhow::Result<Value> {
    let run = now_nanos() % 1_000_000;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    // Rooms: sizes drawn from room_min..=room_max until every client has one.
    let mut sizes = Vec::new();
    let mut left = o.clients;
    while left > 0 {
        let size = (o.room_min + (rng.next() as usize) % (o.room_max - o.room_min + 1)).min(left);
        sizes.push(size);
        left -= size;
    }
    eprintln!("mix: {} clients in {} rooms; creating rooms, bots and memberships", o.clients, sizes.len());
    let mut rooms = Vec::new();
    for r in 0..sizes.len() {
        rooms.push(staff.channel(&format!("mix-{run}-{r}")).await?);
    }
    let mut room_of = Vec::with_capacity(o.clients);
    for (r, size) in sizes.iter().enumerate() {
        room_of.extend(std::iter::repeat_n(r, *size));
    }
    let setup = Progress::start("mix setup", &["bots"]);
    let rooms = Arc::new(rooms);
    let made: Vec<anyhow::Result<(usize, String)>> = futures::stream::iter(0..o.clients)
        .map(|i| {
            let (staff, rooms, room, setup) = (staff.clone(), rooms.clone(), room_of[i], setup.clone());
            async move {
                let bot = staff
                    .post_json(
                        "/bots",
                        json!({ "name": format!("Mix {i}"), "handle": format!("mix{run}x{i}") }),
                    )
                    .await?;
                let id = bot["bot"]["id"].as_str().context("bot id")?;
                staff
                    .post_json(&format!("/channels/{}/members", rooms[room]), json!({ "member_id": id }))
                    .await?;
                setup.add(0, 1);
                Ok((i, bot["token"].as_str().context("bot token")?.to_owned()))
            }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    setup.stop();
    let mut tokens = vec![String::new(); o.clients];
    for m in made {
        let (i, t) = m?;
        tokens[i] = t;
    }
    let bots: Vec<Arc<Client>> = tokens.iter().map(|t| Arc::new(staff.with_token(t))).collect();

    // Sockets, 200 at a time.
    let connecting = Progress::start("mix connect", &["connected"]);
    let n = o.clients;
    let opened: Vec<anyhow::Result<(usize, crate::common::Ws)>> = futures::stream::iter(0..n)
        .map(|i| {
            let (bot, connecting) = (bots[i].clone(), connecting.clone());
            async move {
                let t = bot.post_json("/stream_tickets", json!({})).await?;
                let mut ws =
                    connect_ws(t["url"].as_str().context("ticket url")?, source_ip(i, n), true).await?;
                subscribe(&mut ws).await?;
                connecting.add(0, 1);
                Ok((i, ws))
            }
        })
        .buffer_unordered(200)
        .collect()
        .await;
    connecting.stop();
    let mut sockets = Vec::new();
    let mut connect_failures = 0usize;
    for s in opened {
        match s {
            Ok(s) => sockets.push(s),
            Err(e) => {
                if connect_failures < 3 {
                    eprintln!("  a socket failed: {e:#}");
                }
                connect_failures += 1;
            }
        }
    }
    let mut members = vec![0usize; sizes.len()];
    for (i, _) in &sockets {
        members[room_of[*i]] += 1;
    }

    let progress = Progress::start("mix", &["posted", "delivered"]);
    let delivered_total = Arc::new(AtomicUsize::new(0));
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut readers = Vec::new();
    for (_, mut ws) in sockets {
        let (progress, delivered_total, mut stop_rx) =
            (progress.clone(), delivered_total.clone(), stop_rx.clone());
        readers.push(tokio::spawn(async move {
            let (mut hist, mut seen, mut repeated) = (histogram(), HashSet::new(), 0usize);
            loop {
                let msg = tokio::select! {
                    m = ws.next() => m,
                    _ = stop_rx.changed() => break,
                };
                let Some(Ok(Message::Text(t))) = msg else {
                    if matches!(msg, Some(Ok(_))) {
                        continue;
                    }
                    break;
                };
                let Some((sent, i)) = crate::fanout::stamp(t.as_str()) else { continue };
                let us = u64::try_from(now_nanos().saturating_sub(sent) / 1000).unwrap_or(u64::MAX);
                record(&mut hist, Duration::from_micros(us));
                if seen.insert(i) {
                    delivered_total.fetch_add(1, Ordering::Relaxed);
                    progress.add(1, 1);
                } else {
                    repeated += 1;
                }
            }
            (hist, seen.len(), repeated)
        }));
    }

    // Posters: each client posts every every_min..every_max seconds, from a random first moment.
    eprintln!(
        "  posting for {}s: each client every {}-{} s (about {:.0} posts/s)",
        o.seconds,
        o.every_min,
        o.every_max,
        o.clients as f64 * 2.0 / (o.every_min + o.every_max)
    );
    let index = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let end = started + Duration::from_secs(o.seconds);
    let mut posters = Vec::new();
    for (i, bot) in bots.iter().enumerate() {
        let (bot, index, progress) = (bot.clone(), index.clone(), progress.clone());
        let (room, path) = (room_of[i], format!("/channels/{}/messages", rooms[room_of[i]]));
        let mut r = Rng(0x2545_F491_4F6C_DD1D ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9));
        let (lo, hi) = (o.every_min, o.every_max);
        posters.push(tokio::spawn(async move {
            let (mut acked, mut errors, mut hist) = (0usize, 0usize, histogram());
            let mut at = started + Duration::from_secs_f64(r.between(0.0, hi));
            while at < end {
                tokio::time::sleep_until(at.into()).await;
                let k = index.fetch_add(1, Ordering::Relaxed);
                let t = Instant::now();
                match bot.post_json(&path, json!({ "body": format!("t={} i={k}", now_nanos()) })).await {
                    Ok(_) => {
                        acked += 1;
                        record(&mut hist, t.elapsed());
                        progress.add(0, 1);
                    }
                    Err(_) => errors += 1,
                }
                at += Duration::from_secs_f64(r.between(lo, hi));
            }
            (room, acked, errors, hist)
        }));
    }
    let mut acked_per_room = vec![0usize; sizes.len()];
    let (mut post_errors, mut post_hist) = (0usize, histogram());
    for p in posters {
        let (room, a, e, h) = p.await?;
        acked_per_room[room] += a;
        post_errors += e;
        post_hist.add(&h)?;
    }
    let expected: usize = acked_per_room.iter().zip(&members).map(|(a, m)| a * m).sum();
    let waited = Instant::now();
    while delivered_total.load(Ordering::Relaxed) < expected && waited.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = stop_tx.send(true);
    let (mut hist, mut delivered, mut repeated) = (histogram(), 0usize, 0usize);
    for r in readers {
        let (h, d, rep) = r.await?;
        hist.add(&h)?;
        delivered += d;
        repeated += rep;
    }
    progress.stop();
    let posted: usize = acked_per_room.iter().sum();
    let lost = expected.saturating_sub(delivered);
    Ok(merge(
        json!({
            "scenario": "mix", "clients": o.clients, "rooms": sizes.len(), "connect_failures": connect_failures,
            "seconds": o.seconds, "posts": posted, "post_errors": post_errors,
            "posts_per_second": round2(posted as f64 / o.seconds as f64),
            "post_p99_ms": round2(crate::common::ms(post_hist.value_at_quantile(0.99))),
            "expected_deliveries": expected, "delivered": delivered, "lost": lost, "repeated": repeated,
            "ok": lost == 0 && repeated == 0 && connect_failures == 0 && post_errors == 0,
        }),
        percentiles(&hist),
    ))
}
