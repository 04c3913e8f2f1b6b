//! `connections`: N sockets, K at a time, each to its confirmed subscription (a connect storm when
//! K is large): failures and connect times; then, held idle, the server's resident memory per
//! socket: over the second half of the sockets (the cost of one more socket), and over all of them
//! ((RSS after - RSS before) / N, the server's one-time growth included).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{merge, percentiles, round2};
use crate::target::{Target, connect_measured};

pub async fn run(
    target: Arc<Target>,
    sockets: usize,
    concurrency: usize,
    hold: u64,
) -> anyhow::Result<Value> {
    eprintln!("connections [{}]: {sockets} sockets, {concurrency} at a time", target.name);
    let m = connect_measured(&target, sockets, concurrency, Duration::from_secs(hold)).await;
    let c = &m.connected;
    let n = c.sockets.len();
    eprintln!("  {n} connected in {:.1}s, {} failed", c.elapsed.as_secs_f64(), c.failures);
    let out = merge(
        json!({
            "target": target.name, "sockets": sockets, "concurrency": concurrency, "connected": n,
            "failures": c.failures,
            "seconds_to_connect_all": round2(c.elapsed.as_secs_f64()),
            "connects_per_second": (n as f64 / c.elapsed.as_secs_f64().max(1e-3)).round(),
            "rss_before_kib": m.rss_before_kib, "rss_after_kib": m.rss_after_kib,
            "kib_per_idle_socket": m.kib_per_socket(), "kib_per_idle_socket_total": m.kib_per_socket_total(),
            "ok": c.failures == 0,
        }),
        percentiles(&c.times),
    );
    drop(m);
    Ok(out)
}
