//! `feed`: B bots, members of K channels, follow chat.md's cursor procedure while W writers post
//! in those channels. Each bot must see every acknowledged message exactly once (none skipped,
//! none repeated) and cursors must only move forward. Then one bot reads the whole stretch again
//! from its first cursor as fast as it can: the catch-up rate.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::{Value, json};
use tokio::sync::OnceCell;

use crate::common::{Client, Progress, merge, percentiles, record, round2};
use crate::post::post_load;

/// What one bot's reading found.
struct Read {
    ids: HashSet<String>,
    events: usize,
    repeated: usize,
    pages: usize,
    hist: hdrhistogram::Histogram<u64>,
    elapsed: Duration,
}

/// Follows the cursor procedure from `cursor` until `want` is set and every id in it was seen
/// (or 15 s have passed since it was set).
async fn follow(
    bot: &Client,
    mut cursor: String,
    want: &OnceCell<HashSet<String>>,
    progress: &Progress,
) -> anyhow::Result<Read> {
    let mut r = Read {
        ids: HashSet::new(),
        events: 0,
        repeated: 0,
        pages: 0,
        hist: crate::common::histogram(),
        elapsed: Duration::ZERO,
    };
    let started = Instant::now();
    let mut stopped_at: Option<Instant> = None;
    loop {
        // One round: read pages while next_cursor is set, then keep latest_cursor.
        let mut next = Some(cursor.clone());
        let mut new_items = 0usize;
        while let Some(c) = next {
            let t = Instant::now();
            let page = bot.get(&format!("/events?cursor={c}&limit=100")).await?;
            record(&mut r.hist, t.elapsed());
            r.pages += 1;
            let items = page["items"].as_array().context("items")?;
            for item in items {
                r.events += 1;
                new_items += 1;
                if item["kind"] == "message.created"
                    && let Some(id) = item["message"]["id"].as_str()
                    && !r.ids.insert(id.to_owned())
                {
                    r.repeated += 1;
                }
            }
            progress.add(0, items.len() as u64);
            cursor = page["latest_cursor"].as_str().context("latest_cursor")?.to_owned();
            next = page["next_cursor"].as_str().map(str::to_owned);
        }
        if let Some(want) = want.get() {
            if want.iter().all(|id| r.ids.contains(id)) {
                break;
            }
            if stopped_at.get_or_insert_with(Instant::now).elapsed() > Duration::from_secs(15) {
                break;
            }
        }
        if new_items == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    r.elapsed = started.elapsed();
    Ok(r)
}

pub async fn run(
    client: Arc<Client>,
    bots: usize,
    writers: usize,
    channels: usize,
    seconds: u64,
) -> anyhow::Result<Value> {
    let run = crate::common::now_nanos() % 1_000_000;
    let mut ids = Vec::new();
    for i in 0..channels.max(1) {
        ids.push(client.channel(&format!("feed-{run}-{i}")).await?);
    }
    let mut tokens = Vec::new();
    for b in 0..bots.max(1) {
        let made = client
            .post_json(
                "/bots",
                json!({ "name": format!("Feed bot {b}"), "handle": format!("feedbot{run}x{b}") }),
            )
            .await?;
        let bot_id = made["bot"]["id"].as_str().context("bot id")?.to_owned();
        for c in &ids {
            client.post_json(&format!("/channels/{c}/members"), json!({ "member_id": bot_id })).await?;
        }
        tokens.push(made["token"].as_str().context("bot token")?.to_owned());
    }
    // Step 1 of the procedure: each bot saves latest_cursor before the writers start.
    let mut bots_ = Vec::new();
    for t in &tokens {
        let bot = client.with_token(t);
        let start = bot.get("/events").await?["latest_cursor"].as_str().context("latest_cursor")?.to_owned();
        bots_.push((Arc::new(bot), start));
    }
    eprintln!(
        "feed: {} bots following, {writers} writers over {} channels for {seconds}s",
        bots_.len(),
        ids.len()
    );
    let acked_all: Arc<OnceCell<HashSet<String>>> = Arc::default();
    let progress = Progress::start("feed", &["events read"]);
    let ids = Arc::new(ids);
    let checked: Vec<_> = bots_
        .iter()
        .map(|(bot, start)| {
            let (bot, start, acked_all, progress) =
                (bot.clone(), start.clone(), acked_all.clone(), progress.clone());
            tokio::spawn(async move { follow(&bot, start, &acked_all, &progress).await })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let posted = post_load(client.clone(), ids.clone(), writers, Some(deadline), None).await?;
    let acked: HashSet<String> = posted.acked.iter().flatten().cloned().collect();
    let _ = acked_all.set(acked.clone());
    let (mut events, mut skipped, mut repeated, mut pages) = (0usize, 0usize, 0usize, 0usize);
    let mut hist = crate::common::histogram();
    let mut live_secs = 0.0f64;
    for c in checked {
        let r = c.await??;
        events += r.events;
        pages += r.pages;
        repeated += r.repeated;
        skipped += acked.iter().filter(|id| !r.ids.contains(*id)).count();
        hist.add(&r.hist)?;
        live_secs = live_secs.max(r.elapsed.as_secs_f64());
    }
    progress.stop();
    // Catch-up: bot 0 reads the whole stretch again from its first cursor, as fast as it can.
    let (bot, start) = &bots_[0];
    let quiet = Progress::start("catch-up", &["events read"]);
    let everything = OnceCell::new_with(Some(acked.clone()));
    let again = follow(bot, start.clone(), &everything, &quiet).await?;
    quiet.stop();
    let catchup_skipped = acked.iter().filter(|id| !again.ids.contains(*id)).count();
    let catchup_rate = again.events as f64 / again.elapsed.as_secs_f64().max(1e-3);
    Ok(merge(
        json!({
            "scenario": "feed", "bots": bots_.len(), "writers": writers, "channels": ids.len(),
            "seconds": seconds, "acknowledged_posts": acked.len(), "post_errors": posted.errors,
            "posts_per_second": (acked.len() as f64 / posted.elapsed.as_secs_f64()).round(),
            "events_read": events, "pages": pages,
            "events_per_second_live": (events as f64 / live_secs.max(1e-3)).round(),
            "skipped": skipped, "repeated": repeated,
            "catchup_events": again.events, "catchup_events_per_second": catchup_rate.round(),
            "catchup_seconds": round2(again.elapsed.as_secs_f64()),
            "catchup_skipped": catchup_skipped, "catchup_repeated": again.repeated,
            "ok": skipped == 0 && repeated == 0 && catchup_skipped == 0 && again.repeated == 0,
        }),
        percentiles(&hist),
    ))
}
