//! Crash: the real binary is killed with SIGKILL while posters and bots run, restarted on the same
//! SurrealKV directory, and then every acknowledged post is stored exactly once, the feed goes on
//! from each bot's saved cursor with no gap or repeat, and used idempotency keys replay the first
//! message.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use serde_json::{Value, json};

use crate::foundation::{admin_json, agora_bin, wait_for_line};

/// Acknowledged posts (all posters together) before the kill.
const ACKED_BEFORE_KILL: usize = 150;
const POSTERS: usize = 4;

/// A running `agora serve` with only the chat service.
struct Server {
    child: Child,
    base: String,
}

fn start(db: &str) -> Server {
    let mut child = agora_bin()
        .args([
            "serve",
            "--db",
            db,
            "--services",
            "chat",
            "--chat-addr",
            "127.0.0.1:0",
            "--posts-per-minute",
            "1000000",
            "--reads-per-minute",
            "1000000",
        ])
        .env("RUST_LOG", "info,agora::http=warn,surrealdb=warn,surrealdb_core=warn,surrealkv=warn")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("start agora");
    let lines = wait_for_line(&mut child, "listening");
    let line = lines.iter().find(|l| l.contains("listening")).expect("agora came up");
    let addr = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("addr="))
        .unwrap_or_else(|| panic!("no addr in {line}"));
    Server { child, base: format!("http://{addr}") }
}

fn bootstrap(db: &str) -> String {
    let printed =
        admin_json(db, &["bootstrap", "--name", "Ada", "--handle", "ada", "--email", "ada@example.org"]);
    printed["session_token"].as_str().expect("session token").to_owned()
}

async fn call(
    http: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    token: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = http.request(method, url).bearer_auth(token);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let res = req.send().await.expect("request");
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

/// What a poster knows at the end: the posts acknowledged to it, and the one in flight when the
/// server died (if any), whose fate it does not know.
#[derive(Default)]
struct PosterLog {
    acked: Vec<(String, String, String)>, // (idempotency key, body, message id)
    in_doubt: Option<(String, String, String)>, // (key, body, channel)
}

async fn poster(
    http: reqwest::Client,
    base: String,
    token: String,
    channels: Vec<String>,
    p: usize,
    acked_total: Arc<AtomicUsize>,
) -> PosterLog {
    let mut log = PosterLog::default();
    for i in 0.. {
        let channel = channels[(p + i) % channels.len()].clone();
        let key = format!("crash-p{p}-{i}");
        let body = format!("poster {p} post {i}");
        let sent = http
            .post(format!("{base}/channels/{channel}/messages"))
            .bearer_auth(&token)
            .json(&json!({ "body": body, "idempotency_key": key }))
            .send()
            .await;
        let answer = match sent {
            Ok(res) if res.status() == 201 => res.json::<Value>().await.ok(),
            Ok(res) => panic!("post answered {}", res.status()),
            Err(_) => None,
        };
        match answer {
            Some(m) => {
                log.acked.push((key, body, m["id"].as_str().expect("id").to_owned()));
                acked_total.fetch_add(1, Ordering::SeqCst);
            }
            None => {
                log.in_doubt = Some((key, body, channel));
                return log;
            }
        }
    }
    log
}

/// A bot following `GET /events` by chat.md's procedure: every item it handled, and the cursor it
/// saved after the last page it handled.
async fn follow(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    cursor: &mut String,
    seen: &mut Vec<Value>,
    stop: &AtomicBool,
) {
    loop {
        let finished = stop.load(Ordering::SeqCst);
        loop {
            let Ok(res) =
                http.get(format!("{base}/events?cursor={cursor}&limit=23")).bearer_auth(token).send().await
            else {
                return;
            };
            if res.status() != 200 {
                panic!("events answered {}", res.status());
            }
            let Ok(page) = res.json::<Value>().await else { return };
            seen.extend(page["items"].as_array().expect("items").iter().cloned());
            match page["next_cursor"].as_str() {
                Some(next) => *cursor = next.to_owned(),
                None => {
                    *cursor = page["latest_cursor"].as_str().expect("latest_cursor").to_owned();
                    break;
                }
            }
        }
        if finished {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// Every message stored in a channel, oldest first (paging the channel's list to its start).
async fn all_messages(http: &reqwest::Client, base: &str, token: &str, channel: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut url = format!("{base}/channels/{channel}/messages?limit=100");
    loop {
        let (status, page) = call(http, reqwest::Method::GET, url.clone(), token, None).await;
        assert_eq!(status, 200, "{page}");
        out.extend(page["items"].as_array().expect("items").iter().cloned());
        match page["next_cursor"].as_str() {
            Some(next) => url = format!("{base}/channels/{channel}/messages?limit=100&cursor={next}"),
            None => break,
        }
    }
    out.reverse();
    out
}

fn kill9(child: &mut Child) {
    // `Child::kill` is SIGKILL on Unix: no shutdown code runs.
    child.kill().expect("SIGKILL");
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), None, "agora died of a signal, it did not exit: {status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigkill_under_load_loses_no_acknowledged_post_and_the_feed_goes_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = format!("surrealkv://{}", dir.path().join("agora").display());
    let http = reqwest::Client::new();
    let post = reqwest::Method::POST;

    let mut server = start(&db);
    let staff = bootstrap(&db);
    let base = server.base.clone();
    let mut channels = Vec::new();
    for name in ["crash-a", "crash-b", "crash-c"] {
        let (status, c) =
            call(&http, post.clone(), format!("{base}/channels"), &staff, Some(json!({ "name": name })))
                .await;
        assert_eq!(status, 201, "{c}");
        channels.push(c["id"].as_str().expect("id").to_owned());
    }
    // Two bots, each in two of the three channels.
    let subsets: [&[usize]; 2] = [&[0, 1], &[1, 2]];
    let mut bots = Vec::new();
    for (b, subset) in subsets.iter().enumerate() {
        let body = json!({ "name": format!("Follower {b}"), "handle": format!("follower-{b}") });
        let (status, made) = call(&http, post.clone(), format!("{base}/bots"), &staff, Some(body)).await;
        assert_eq!(status, 201, "{made}");
        let id = made["bot"]["id"].as_str().expect("bot id").to_owned();
        for &c in *subset {
            let url = format!("{base}/channels/{}/members", channels[c]);
            let (status, v) = call(&http, post.clone(), url, &staff, Some(json!({ "member_id": id }))).await;
            assert_eq!(status, 201, "{v}");
        }
        let token = made["token"].as_str().expect("bot token").to_owned();
        let (status, first) = call(&http, reqwest::Method::GET, format!("{base}/events"), &token, None).await;
        assert_eq!(status, 200);
        bots.push((token, first["latest_cursor"].as_str().expect("latest_cursor").to_owned()));
    }

    // Posters and bots run; the server is killed once enough posts were acknowledged.
    let acked_total = Arc::new(AtomicUsize::new(0));
    let posters: Vec<_> = (0..POSTERS)
        .map(|p| {
            tokio::spawn(poster(
                http.clone(),
                base.clone(),
                staff.clone(),
                channels.clone(),
                p,
                acked_total.clone(),
            ))
        })
        .collect();
    let never = Arc::new(AtomicBool::new(false));
    let followers: Vec<_> = bots
        .iter()
        .map(|(token, start)| {
            let (http, base, token, never) = (http.clone(), base.clone(), token.clone(), never.clone());
            let mut cursor = start.clone();
            tokio::spawn(async move {
                let mut seen = Vec::new();
                follow(&http, &base, &token, &mut cursor, &mut seen, &never).await;
                (cursor, seen)
            })
        })
        .collect();
    while acked_total.load(Ordering::SeqCst) < ACKED_BEFORE_KILL {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    kill9(&mut server.child);

    let mut logs = Vec::new();
    for p in posters {
        logs.push(p.await.expect("poster"));
    }
    let mut followed = Vec::new();
    for f in followers {
        followed.push(f.await.expect("follower"));
    }
    let acked: Vec<&(String, String, String)> = logs.iter().flat_map(|l| &l.acked).collect();
    assert!(acked.len() >= ACKED_BEFORE_KILL);
    let in_doubt = logs.iter().filter(|l| l.in_doubt.is_some()).count();
    let before: Vec<usize> = followed.iter().map(|(_, seen)| seen.len()).collect();
    eprintln!(
        "killed after {} acknowledged posts, {in_doubt} in flight; bots had seen {before:?} events",
        acked.len()
    );

    // Restart on the same directory (the lock died with the process).
    let server = start(&db);
    let base = server.base.clone();
    let mut server = server;

    // A used key replays the first message, whatever body comes with it.
    for (key, body, id) in &acked {
        let channel = id.rsplit_once('-').expect("message id").0;
        let (status, m) = call(
            &http,
            post.clone(),
            format!("{base}/channels/{channel}/messages"),
            &staff,
            Some(json!({ "body": "a different body", "idempotency_key": key })),
        )
        .await;
        assert_eq!(status, 200, "replay of {key}: {m}");
        assert_eq!(m["id"], id.as_str(), "replay of {key}");
        assert_eq!(m["body"], body.as_str(), "replay of {key}");
    }
    // A post in doubt is retried with its key, as a client would: it ends up stored once.
    let mut expected_bodies: HashSet<String> = acked.iter().map(|(_, b, _)| b.clone()).collect();
    for (key, body, channel) in logs.iter().filter_map(|l| l.in_doubt.as_ref()) {
        let (status, m) = call(
            &http,
            post.clone(),
            format!("{base}/channels/{channel}/messages"),
            &staff,
            Some(json!({ "body": body, "idempotency_key": key })),
        )
        .await;
        assert!(status == 200 || status == 201, "retry of {key}: {status} {m}");
        assert_eq!(m["body"], body.as_str());
        expected_bodies.insert(body.clone());
    }
    // And the posting goes on after the restart.
    for (i, channel) in channels.iter().enumerate() {
        let body = format!("after the restart {i}");
        let (status, m) = call(
            &http,
            post.clone(),
            format!("{base}/channels/{channel}/messages"),
            &staff,
            Some(json!({ "body": body, "idempotency_key": format!("after-{i}") })),
        )
        .await;
        assert_eq!(status, 201, "{m}");
        expected_bodies.insert(body);
    }

    // Every acknowledged post is stored exactly once; each channel's messages are numbered
    // 1, 2, 3... with no hole.
    let mut stored: HashMap<String, Vec<Value>> = HashMap::new();
    let mut bodies: BTreeMap<String, usize> = BTreeMap::new();
    for channel in &channels {
        let messages = all_messages(&http, &base, &staff, channel).await;
        let ids: Vec<String> = messages.iter().map(|m| m["id"].as_str().expect("id").to_owned()).collect();
        let numbered: Vec<String> = (1..=messages.len()).map(|n| format!("{channel}-{n}")).collect();
        assert_eq!(ids, numbered, "channel {channel} has a hole or a repeat");
        for m in &messages {
            *bodies.entry(m["body"].as_str().expect("body").to_owned()).or_default() += 1;
        }
        stored.insert(channel.clone(), messages);
    }
    for (_, body, id) in &acked {
        assert_eq!(
            bodies.get(body.as_str()),
            Some(&1),
            "acknowledged post {id} ({body}) is not stored exactly once"
        );
    }
    assert_eq!(
        bodies.keys().cloned().collect::<HashSet<_>>(),
        expected_bodies,
        "the store holds exactly the acknowledged posts, the retried ones and the new ones"
    );

    // Each bot resumes from the cursor it saved: what it saw before the crash and after it,
    // together, is every message of its channels, once each, in order.
    let stop = AtomicBool::new(true);
    for (b, (mut cursor, mut seen)) in followed.into_iter().enumerate() {
        let (token, _) = &bots[b];
        follow(&http, &base, token, &mut cursor, &mut seen, &stop).await;
        let positions: Vec<i64> =
            seen.iter().map(|e| crate::feed::decode(e["cursor"].as_str().expect("cursor"))).collect();
        assert!(positions.windows(2).all(|p| p[0] < p[1]), "bot {b} saw the feed out of order or twice");
        for &c in subsets[b] {
            let channel = &channels[c];
            let from_feed: Vec<&str> = seen
                .iter()
                .filter(|e| e["kind"] == "message.created" && e["message"]["channel_id"] == channel.as_str())
                .map(|e| e["message"]["id"].as_str().expect("id"))
                .collect();
            let from_store: Vec<&str> =
                stored[channel].iter().map(|m| m["id"].as_str().expect("id")).collect();
            assert_eq!(from_feed, from_store, "bot {b}'s feed of channel {channel} has a gap or a repeat");
        }
    }

    kill9(&mut server.child);
}
