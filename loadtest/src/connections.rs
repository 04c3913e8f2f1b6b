//! `connections`: N sockets, K at a time, each to its confirmed subscription (a connect storm when
//! K is large): failures and connect times; then, held idle, the server's resident memory per
//! socket = (RSS after - RSS before) / N.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{merge, percentiles, round2, rss_kib};
use crate::target::{Target, connect_all};

pub async fn run(
    target: Arc<Target>,
    sockets: usize,
    concurrency: usize,
    hold: u64,
) -> anyhow::Result<Value> {
    let rss_before = target.pid.and_then(rss_kib);
    eprintln!("connections [{}]: {sockets} sockets, {concurrency} at a time", target.name);
    let c = connect_all(&target, sockets, concurrency).await;
    let n = c.sockets.len();
    eprintln!(
        "  {n} connected in {:.1}s, {} failed; holding them idle {hold}s",
        c.elapsed.as_secs_f64(),
        c.failures
    );
    tokio::time::sleep(Duration::from_secs(hold)).await;
    let rss_after = target.pid.and_then(rss_kib);
    drop(c.sockets);
    let kib = match (rss_before, rss_after) {
        (Some(b), Some(a)) if n > 0 => Some(round2(a.saturating_sub(b) as f64 / n as f64)),
        _ => None,
    };
    Ok(merge(
        json!({
            "target": target.name, "sockets": sockets, "concurrency": concurrency, "connected": n,
            "failures": c.failures,
            "seconds_to_connect_all": round2(c.elapsed.as_secs_f64()),
            "connects_per_second": (n as f64 / c.elapsed.as_secs_f64().max(1e-3)).round(),
            "rss_before_kib": rss_before, "rss_after_kib": rss_after, "kib_per_idle_socket": kib,
            "ok": c.failures == 0,
        }),
        percentiles(&c.times),
    ))
}
