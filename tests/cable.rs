//! The live socket: stream tickets and `/cable` over ActionCable, with a plain websocket client and
//! with Rails' own `@rails/actioncable` under Node.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt as _;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;

use crate::chat::World;

pub(crate) type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

pub(crate) async fn ticket(w: &World, token: &str) -> Value {
    let (status, t) = w.call("POST", "/stream_tickets", Some(token), None).await;
    assert_eq!(status, 201, "{t}");
    t
}

pub(crate) async fn connect(url: &str) -> Socket {
    let mut req = url.into_client_request().expect("request");
    req.headers_mut().insert(
        "Sec-WebSocket-Protocol",
        "actioncable-v1-json, actioncable-unsupported".parse().expect("header"),
    );
    let (socket, res) = tokio_tungstenite::connect_async(req).await.expect("connect");
    assert_eq!(res.headers()["sec-websocket-protocol"], "actioncable-v1-json");
    socket
}

/// The next frame that is not a ping, as JSON (None when the socket closes or 5 s pass).
pub(crate) async fn next(socket: &mut Socket) -> Option<Value> {
    next_within(socket, Duration::from_secs(5)).await
}

pub(crate) async fn next_within(socket: &mut Socket, wait: Duration) -> Option<Value> {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let msg = tokio::time::timeout_at(deadline, socket.next()).await.ok()??.ok()?;
        if let Message::Text(t) = msg {
            let v: Value = serde_json::from_str(t.as_str()).expect("json frame");
            if v["type"] != "ping" {
                return Some(v);
            }
        }
    }
}

/// A socket with a fresh ticket for `token`, welcomed and subscribed to EventsChannel.
pub(crate) async fn subscribed(w: &World, token: &str) -> Socket {
    let mut socket = connect(ticket(w, token).await["url"].as_str().expect("url")).await;
    assert_eq!(next(&mut socket).await, Some(json!({ "type": "welcome" })));
    subscribe(&mut socket).await;
    socket
}

const IDENTIFIER: &str = r#"{"channel":"EventsChannel"}"#;

pub(crate) async fn subscribe(socket: &mut Socket) {
    let cmd = json!({ "command": "subscribe", "identifier": IDENTIFIER }).to_string();
    socket.send(Message::text(cmd)).await.expect("send");
    let confirm = next(socket).await.expect("confirm");
    assert_eq!(confirm, json!({ "identifier": IDENTIFIER, "type": "confirm_subscription" }));
}

#[tokio::test]
async fn a_socket_receives_what_the_feed_shows_and_resumes_from_its_cursor() {
    let w = World::new().await;
    let ch = w.channel("general", false).await;
    let t = ticket(&w, &w.staff).await;
    assert!(t["url"].as_str().is_some_and(|u| u.starts_with("ws://") && u.contains("/cable?ticket=")));
    let mut socket = connect(t["url"].as_str().expect("url")).await;
    assert_eq!(next(&mut socket).await, Some(json!({ "type": "welcome" })));
    // An unknown channel is rejected, the socket stays open.
    let other = r#"{"channel":"ChatChannel"}"#;
    socket
        .send(Message::text(json!({ "command": "subscribe", "identifier": other }).to_string()))
        .await
        .expect("send");
    assert_eq!(next(&mut socket).await, Some(json!({ "identifier": other, "type": "reject_subscription" })));
    subscribe(&mut socket).await;
    // A repeated subscribe is ignored (Rails' client repeats until it hears back).
    socket
        .send(Message::text(json!({ "command": "subscribe", "identifier": IDENTIFIER }).to_string()))
        .await
        .expect("send");

    let posted = w.post(&ch, &w.staff, "over the socket").await;
    // Only what committed after the subscription: the channel's creation is not replayed.
    let frame = next(&mut socket).await.expect("event frame");
    assert_eq!(frame["identifier"], IDENTIFIER);
    assert!(frame.get("type").is_none());
    assert_eq!(frame["message"]["kind"], "message.created");
    assert_eq!(frame["message"]["message"], posted);
    let cursor = frame["message"]["cursor"].as_str().expect("cursor").to_owned();

    // The socket drops; meanwhile two more events commit; the feed from the last cursor has them.
    drop(socket);
    w.post(&ch, &w.staff, "missed one").await;
    w.post(&ch, &w.staff, "missed two").await;
    let page = w.ok("GET", &format!("/events?cursor={cursor}"), &w.staff, None).await;
    let bodies: Vec<&str> = page["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|e| e["message"]["body"].as_str())
        .collect();
    assert_eq!(bodies, vec!["missed one", "missed two"]);

    // A used ticket is refused the Rails way: upgrade, then the unauthorized disconnect.
    let mut again = connect(t["url"].as_str().expect("url")).await;
    assert_eq!(
        next(&mut again).await,
        Some(json!({ "type": "disconnect", "reason": "unauthorized", "reconnect": false }))
    );
    assert_eq!(next(&mut again).await, None, "and the socket closes");
    w.app.shutdown().await;
}

#[tokio::test]
async fn expired_tickets_revoked_credentials_and_removed_members_stop_delivery() {
    let clock = agora_storage::time::Clock::manual(1_800_000_000_000);
    let mut args = crate::support::test_args();
    args.clock = clock.clone();
    let w = World::start_with(
        crate::support::spawn_app_with(agora_storage::DbSettings::memory(), None, args).await,
    )
    .await;
    let ch = w.channel("general", false).await;

    let t = ticket(&w, &w.staff).await;
    clock.advance(61_000);
    let mut late = connect(t["url"].as_str().expect("url")).await;
    assert_eq!(
        next(&mut late).await,
        Some(json!({ "type": "disconnect", "reason": "unauthorized", "reconnect": false }))
    );

    // A bot in the channel: removed, it gets its removal and nothing after.
    let (bot_id, bot) = w.bot("Listener", "listener").await;
    w.add(&ch, &bot_id).await;
    let mut bot_socket = subscribed(&w, &bot).await;
    let (status, _) =
        w.call("DELETE", &format!("/channels/{ch}/members/{bot_id}"), Some(&w.staff), None).await;
    assert_eq!(status, 204);
    let removed = next(&mut bot_socket).await.expect("removal");
    assert_eq!(removed["message"]["kind"], "member.removed");
    w.post(&ch, &w.staff, "not for the bot").await;

    // A person key's socket: revoked, it is disconnected at once.
    let key = w.ok("POST", "/keys", &w.staff, Some(json!({ "name": "cli" }))).await;
    let key_token = key["token"].as_str().expect("token").to_owned();
    let mut key_socket = subscribed(&w, &key_token).await;
    let key_id = key["key"]["id"].as_str().expect("id");
    let (status, _) = w.call("DELETE", &format!("/keys/{key_id}"), Some(&w.staff), None).await;
    assert_eq!(status, 204);
    let mut got = next(&mut key_socket).await.expect("frame");
    while got.get("type").is_none() {
        got = next(&mut key_socket).await.expect("frame");
    }
    assert_eq!(got, json!({ "type": "disconnect", "reason": "unauthorized", "reconnect": false }));

    // Nothing more reached the removed bot.
    assert_eq!(
        next_within(&mut bot_socket, Duration::from_secs(1)).await,
        None,
        "no frame after the removal"
    );

    // Shutdown tells every socket to come back later.
    let mut staff_socket = subscribed(&w, &w.staff).await;
    let shutdown = tokio::spawn(async move { w.app.shutdown().await });
    assert_eq!(
        next(&mut staff_socket).await,
        Some(json!({ "type": "disconnect", "reason": "server_restart", "reconnect": true }))
    );
    shutdown.await.expect("shutdown");
}

#[tokio::test]
async fn rails_own_actioncable_client_connects_and_receives_a_posted_message() {
    let js = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/js");
    assert!(
        js.join("node_modules/@rails/actioncable").exists(),
        "tests/js/node_modules is missing: run `bash scripts/install-test-deps.sh`"
    );
    let w = World::new().await;
    let ch = w.channel("general", false).await;
    let t = ticket(&w, &w.staff).await;
    let (mut node, mut lines) = rails_client(&js, t["url"].as_str().expect("url"));
    let mut read = async || -> Value {
        let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .expect("node answered in time")
            .expect("read")
            .expect("a line");
        serde_json::from_str(&line).expect("json line")
    };
    assert_eq!(read().await, json!({ "event": "connected" }));
    let posted = w.post(&ch, &w.staff, "hello, Rails").await;
    let got = read().await;
    assert_eq!(got["event"], "received");
    assert_eq!(got["data"]["kind"], "message.created");
    assert_eq!(got["data"]["message"], posted);
    let _ = node.kill().await;

    // Rails' client with a used ticket hears `unauthorized` and stops for good.
    let (mut node, mut lines) = rails_client(&js, t["url"].as_str().expect("url"));
    let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("in time")
        .expect("read");
    assert_eq!(
        line.map(|l| serde_json::from_str::<Value>(&l).expect("json")),
        Some(json!({ "event": "disconnected" }))
    );
    let _ = node.kill().await;
    w.app.shutdown().await;
}

/// Starts `node tests/js/cable.mjs <url>` (Rails' own `@rails/actioncable` client); it prints one
/// JSON line per event it sees.
fn rails_client(
    js: &std::path::Path,
    url: &str,
) -> (tokio::process::Child, tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>) {
    let mut node = tokio::process::Command::new("node")
        .arg(js.join("cable.mjs"))
        .arg(url)
        .current_dir(js)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node runs");
    let lines = tokio::io::BufReader::new(node.stdout.take().expect("stdout")).lines();
    (node, lines)
}

#[tokio::test]
async fn a_socket_that_stops_reading_is_disconnected_and_others_keep_receiving() {
    let w = World::unlimited().await;
    let ch = w.channel("busy", false).await;
    let mut slow = subscribed(&w, &w.staff).await;
    let mut fast = subscribed(&w, &w.staff).await;

    // 20 MB of frames: far more than the queue (512 frames) and what the kernel buffers for a
    // client that never reads.
    const POSTS: usize = 2000;
    // How far the posters may run ahead of the fast reader: well inside its queue, so that on a
    // busy machine it is the slow socket, not a merely late one, that falls behind.
    const AHEAD: usize = 128;
    let received = Arc::new(AtomicUsize::new(0));
    let posted = Arc::new(AtomicUsize::new(0));
    // The fast reader counts every post it receives, while the slow one reads nothing.
    let counted = received.clone();
    let reader = tokio::spawn(async move {
        let mut got = 0;
        while got < POSTS {
            let Some(frame) = next_within(&mut fast, Duration::from_secs(30)).await else { break };
            if frame["message"]["kind"] == "message.created" {
                got += 1;
                counted.store(got, Ordering::SeqCst);
            }
        }
        // Done or given up: the posters must not wait for it any more.
        counted.store(usize::MAX / 2, Ordering::SeqCst);
        got
    });
    // Big messages fill the slow socket's queue and the kernel's buffers quickly.
    let big = "x".repeat(10_000);
    let mut posters = Vec::new();
    for p in 0..8 {
        let chat = w.chat().clone();
        let token = w.staff.clone();
        let path = format!("/channels/{ch}/messages");
        let big = big.clone();
        let (posted, received) = (posted.clone(), received.clone());
        posters.push(tokio::spawn(async move {
            for _ in 0..POSTS / 8 {
                while posted.load(Ordering::SeqCst) > received.load(Ordering::SeqCst) + AHEAD {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                posted.fetch_add(1, Ordering::SeqCst);
                let res = chat
                    .post(&path)
                    .bearer_auth(&token)
                    .json(&json!({ "body": big }))
                    .send()
                    .await
                    .expect("post");
                assert_eq!(res.status(), 201, "post {p}");
            }
        }));
    }
    for p in posters {
        p.await.expect("poster");
    }
    assert_eq!(reader.await.expect("reader"), POSTS, "the reading socket got every post meanwhile");
    // The slow socket, once it reads again, finds what was buffered, then the end: the disconnect
    // (`remote`, reconnect) when the server could still write it, and the close in any case.
    // Whether the disconnect frame fits depends on the kernel's buffers at that moment; the
    // close does not: a socket left open here would fail the test.
    let mut disconnect = None;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        // (Pings keep coming every 3 s to an open socket: one overall deadline, not per frame.)
        let read = tokio::time::timeout_at(deadline, slow.next()).await;
        let Ok(frame) = read else { panic!("the slow socket was left open") };
        match frame {
            Some(Ok(Message::Text(t))) => {
                let v: Value = serde_json::from_str(t.as_str()).expect("json frame");
                if v["type"] == "disconnect" {
                    disconnect = Some(v);
                }
            }
            Some(Ok(Message::Close(_))) | Some(Err(_)) | None => break,
            Some(Ok(_)) => {}
        }
    }
    if let Some(d) = disconnect {
        assert_eq!(d, json!({ "type": "disconnect", "reason": "remote", "reconnect": true }));
    }
    w.app.shutdown().await;
}

#[tokio::test]
async fn the_number_of_sockets_is_capped_by_a_setting() {
    let mut args = crate::support::test_args();
    args.max_sockets = 1;
    let w = World::start_with(
        crate::support::spawn_app_with(agora_storage::DbSettings::memory(), None, args).await,
    )
    .await;
    let mut first = connect(ticket(&w, &w.staff).await["url"].as_str().expect("url")).await;
    assert_eq!(next(&mut first).await, Some(json!({ "type": "welcome" })));
    let second = ticket(&w, &w.staff).await;
    let mut req = second["url"].as_str().expect("url").into_client_request().expect("request");
    req.headers_mut().insert("Sec-WebSocket-Protocol", "actioncable-v1-json".parse().expect("header"));
    let refused = tokio_tungstenite::connect_async(req).await;
    match refused {
        Err(tokio_tungstenite::tungstenite::Error::Http(res)) => {
            assert_eq!(
                res.status(),
                503,
                "{:?}",
                res.body().as_ref().map(|b| String::from_utf8_lossy(b).to_string())
            )
        }
        other => panic!("a second socket must be refused: {:?}", other.map(|_| ())),
    }
    drop(first);
    w.app.shutdown().await;
}
