//! `signup`: bursts of `POST /api/signups` from many loopback addresses (the per-address limit
//! keys on the TCP peer address, so each client binds its own 127.0.0.x) and many numbers, checking
//! that every limit of signup.md answers exactly as it says, on a fresh server with the demo open:
//!
//! 1. one address, 12 requests at once: exactly 10 `202` (with `RateLimit` r = 9 ... 0), then
//!    `429 rate_limited` with `Retry-After` and `RateLimit-Policy`;
//! 2. one number, 5 requests at once from another address: five identical `202`s, and exactly 3
//!    texts in the outbox for that number;
//! 3. distinct numbers from 5 addresses, 50 at once: the demo reaches 50 texts, so exactly 37 more
//!    `202` and 13 `503 demo_full` with `Retry-After` up to the next Chicago midnight;
//! 4. invalid requests (they count, valid or not) from 45 more addresses, 450 at once: exactly 435
//!    answered (`422`), then `429 rate_limited` for everyone: 500 counted in the hour; one more from
//!    a fresh address is `429` too.

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::time::Instant;

use anyhow::Context as _;
use serde_json::{Value, json};

use crate::common::{histogram, merge, percentiles, record};

/// One answer, reduced to what the checks read.
#[derive(Debug, Clone)]
struct Answer {
    status: u16,
    code: String,
    retry_after: Option<u64>,
    ratelimit: Option<String>,
    policy: Option<String>,
    keys: Vec<String>,
}

fn client_from(addr: u8) -> anyhow::Result<reqwest::Client> {
    Ok(reqwest::Client::builder().local_address(IpAddr::V4(Ipv4Addr::new(127, 0, 1, addr))).build()?)
}

fn phone(n: usize) -> String {
    // 415-555-2000 and up: a valid NANP number, outside 555-01XX.
    format!("415555{:04}", 2000 + n)
}

/// Sends a burst: every (client, body) at once; the answers in order, and their times.
async fn burst(
    url: &str,
    requests: Vec<(reqwest::Client, Value)>,
    hist: &mut hdrhistogram::Histogram<u64>,
) -> Vec<Answer> {
    let mut tasks = Vec::new();
    for (client, body) in requests {
        let url = url.to_owned();
        tasks.push(tokio::spawn(async move {
            let t = Instant::now();
            let res = client.post(&url).json(&body).send().await;
            let took = t.elapsed();
            let res = match res {
                Ok(r) => r,
                Err(e) => {
                    return (
                        Answer {
                            status: 0,
                            code: format!("{e}"),
                            retry_after: None,
                            ratelimit: None,
                            policy: None,
                            keys: vec![],
                        },
                        took,
                    );
                }
            };
            let header = |n: &str| res.headers().get(n).and_then(|v| v.to_str().ok()).map(str::to_owned);
            let (retry_after, ratelimit, policy) = (
                header("retry-after").and_then(|v| v.parse().ok()),
                header("ratelimit"),
                header("ratelimit-policy"),
            );
            let status = res.status().as_u16();
            let body: Value = res.json().await.unwrap_or(Value::Null);
            let mut keys: Vec<String> =
                body.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default();
            keys.sort();
            let code = body["code"].as_str().unwrap_or_default().to_owned();
            (Answer { status, code, retry_after, ratelimit, policy, keys }, took)
        }));
    }
    let mut out = Vec::new();
    for t in tasks {
        if let Ok((a, took)) = t.await {
            record(hist, took);
            out.push(a);
        }
    }
    out
}

fn count(answers: &[Answer], status: u16) -> usize {
    answers.iter().filter(|a| a.status == status).count()
}

/// The remaining count `r=` of a `RateLimit` header.
fn remaining(a: &Answer) -> Option<u64> {
    let v = a.ratelimit.as_deref()?;
    let at = v.find("r=")? + 2;
    v[at..].split(';').next()?.trim().parse().ok()
}

pub async fn run(signup_url: &str, agora: Option<(&Path, &str)>) -> anyhow::Result<Value> {
    let url = format!("{}/api/signups", signup_url.trim_end_matches('/'));
    let mut hist = histogram();
    let mut checks: Vec<(String, bool, String)> = Vec::new();
    let mut check = |name: &str, ok: bool, detail: String| {
        eprintln!("  {} {name}: {detail}", if ok { "ok  " } else { "FAIL" });
        checks.push((name.to_owned(), ok, detail));
    };
    let valid = |n: usize| json!({ "first_name": "Load", "phone": phone(n) });
    let started = Instant::now();

    // 1. Per address: 12 at once from one address.
    eprintln!("signup: 1. 12 requests at once from one address");
    let a = client_from(2)?;
    let answers = burst(&url, (0..12).map(|n| (a.clone(), valid(n))).collect(), &mut hist).await;
    let limited: Vec<&Answer> = answers.iter().filter(|x| x.status == 429).collect();
    let rs: HashSet<u64> = answers.iter().filter(|x| x.status == 202).filter_map(remaining).collect();
    check("per-address: 10 accepted", count(&answers, 202) == 10, format!("{} × 202", count(&answers, 202)));
    check(
        "per-address: the rest 429 rate_limited with Retry-After",
        limited.len() == 2
            && limited.iter().all(|x| x.code == "rate_limited" && x.retry_after.is_some_and(|s| s > 0)),
        format!(
            "{:?}",
            limited.iter().map(|x| (x.status, x.code.clone(), x.retry_after)).collect::<Vec<_>>()
        ),
    );
    check("per-address: RateLimit r counts down 9..0", rs == (0..10).collect(), format!("r = {rs:?}"));
    check(
        "per-address: RateLimit-Policy on every answer",
        answers.iter().all(|x| x.policy.as_deref() == Some("\"per-address\";q=10;w=3600")),
        format!("{:?}", answers.first().and_then(|x| x.policy.clone())),
    );

    // 2. Per number: one number 5 times at once from another address.
    eprintln!("signup: 2. one number 5 times at once");
    let b = client_from(3)?;
    let answers = burst(&url, (0..5).map(|_| (b.clone(), valid(100))).collect(), &mut hist).await;
    let shapes: HashSet<Vec<String>> = answers.iter().map(|x| x.keys.clone()).collect();
    check(
        "per-number: every request gets the same 202",
        count(&answers, 202) == 5 && shapes.len() == 1,
        format!("{} × 202, {} answer shapes", count(&answers, 202), shapes.len()),
    );
    let texts = match agora {
        Some((bin, db)) => {
            let out = crate::spawn::admin(bin, db, &["signup", "outbox", "--limit", "200"]).await?;
            let texts = out["texts"].as_array().context("outbox texts")?.clone();
            let last4 = &phone(100)[6..];
            let to_number = texts.iter().filter(|t| t["to_last4"].as_str() == Some(last4)).count();
            check("per-number: exactly 3 texts to that number", to_number == 3, format!("{to_number} texts"));
            Some(texts.len())
        }
        None => {
            eprintln!("  (no --spawn: the outbox is not read, the per-number text count is not checked)");
            None
        }
    };

    // 3. The demo's 50 texts a day: 13 sent so far; 50 distinct numbers from 5 addresses.
    eprintln!("signup: 3. 50 distinct numbers at once from 5 addresses");
    let mut requests = Vec::new();
    for k in 0..5u8 {
        let c = client_from(10 + k)?;
        for j in 0..10 {
            requests.push((c.clone(), valid(200 + usize::from(k) * 10 + j)));
        }
    }
    let answers = burst(&url, requests, &mut hist).await;
    let full: Vec<&Answer> = answers.iter().filter(|x| x.status == 503).collect();
    check(
        "demo: 37 more accepted to reach 50 texts",
        count(&answers, 202) == 37,
        format!("{} × 202", count(&answers, 202)),
    );
    check(
        "demo: then 503 demo_full with Retry-After up to the next Chicago midnight",
        full.len() == 13
            && full
                .iter()
                .all(|x| x.code == "demo_full" && x.retry_after.is_some_and(|s| s > 0 && s <= 25 * 3600)),
        format!("{} × 503, Retry-After {:?}", full.len(), full.first().and_then(|x| x.retry_after)),
    );
    if let (Some((bin, db)), Some(_)) = (agora, texts) {
        let status = crate::spawn::admin(bin, db, &["signup", "status"]).await?;
        check(
            "demo: 50 texts today",
            status["texts_today"] == 50,
            format!("texts_today = {}", status["texts_today"]),
        );
    }

    // 4. Everyone's 500 an hour: 10 + 5 + 50 counted so far; 450 invalid requests from 45 addresses.
    eprintln!("signup: 4. 450 invalid requests at once from 45 addresses");
    let mut requests = Vec::new();
    for k in 0..45u8 {
        let c = client_from(20 + k)?;
        for _ in 0..10 {
            requests.push((c.clone(), json!({ "first_name": "L0ad", "phone": "1" })));
        }
    }
    let answers = burst(&url, requests, &mut hist).await;
    let global: Vec<&Answer> = answers.iter().filter(|x| x.status == 429).collect();
    check(
        "global: 435 more counted (422 invalid_request)",
        count(&answers, 422) == 435,
        format!("{} × 422", count(&answers, 422)),
    );
    check(
        "global: the rest 429 rate_limited with Retry-After",
        global.len() == 15
            && global.iter().all(|x| x.code == "rate_limited" && x.retry_after.is_some_and(|s| s > 0)),
        format!("{} × 429", global.len()),
    );
    let fresh = burst(&url, vec![(client_from(100)?, valid(999))], &mut hist).await;
    check(
        "global: a fresh address is refused too",
        fresh.first().is_some_and(|x| x.status == 429 && x.code == "rate_limited"),
        format!("{:?}", fresh.first().map(|x| x.status)),
    );

    let failed: Vec<&String> = checks.iter().filter(|c| !c.1).map(|c| &c.0).collect();
    let requests = hist.len();
    Ok(merge(
        json!({
            "scenario": "signup", "requests": requests, "seconds": crate::common::round2(started.elapsed().as_secs_f64()),
            "checks": checks.len(), "checks_failed": failed.len(), "failed": failed,
            "ok": failed.is_empty(),
        }),
        percentiles(&hist),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(ratelimit: &str) -> Answer {
        Answer {
            status: 202,
            code: String::new(),
            retry_after: None,
            ratelimit: Some(ratelimit.to_owned()),
            policy: None,
            keys: vec![],
        }
    }

    #[test]
    fn reads_what_is_left_from_the_ratelimit_header() {
        assert_eq!(remaining(&answer("\"per-address\";r=7;t=3600")), Some(7));
        assert_eq!(remaining(&answer("\"per-address\";t=3600")), None);
    }

    #[test]
    fn numbers_are_valid_and_distinct_in_their_last_four() {
        assert_eq!(phone(0), "4155552000");
        assert_ne!(phone(100)[6..], phone(200)[6..]);
    }
}
