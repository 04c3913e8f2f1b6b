//! Abuse of every listener and of `/cable`: bodies over the limit, slow headers, slow bodies,
//! malformed and oversized frames, subscribe floods, thousands of sockets, revocation of the
//! credential behind an open socket, and the health route answering under load.

use std::net::SocketAddr;
use std::time::Duration;

use futures::SinkExt as _;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio_tungstenite::tungstenite::Message;

use crate::cable::{Socket, connect, next, next_within, subscribed, ticket};
use crate::chat::World;
use crate::support::{spawn_app_with, test_args};

const STATS_ADMIN: &str = "stats-admin-token-for-abuse";

/// A world whose listeners give up on headers after 1 s and on requests after 2 s.
async fn impatient() -> World {
    let mut args = test_args();
    args.header_timeout = 1;
    args.request_timeout = 2;
    args.posts_per_minute = 1_000_000;
    args.reads_per_minute = 1_000_000;
    args.stats_admin_token = Some(STATS_ADMIN.into());
    World::start_with(spawn_app_with(agora_storage::DbSettings::memory(), None, args).await).await
}

/// Sends `bytes` on a fresh connection, then reads until the server closes it. Panics if the
/// server keeps the connection open for a minute (it must close it on its own).
async fn send_and_wait_for_close(addr: SocketAddr, bytes: &[u8]) -> String {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream.write_all(bytes).await.expect("write");
    let mut out = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(60), stream.read_to_end(&mut out)).await;
    assert!(read.is_ok(), "the server left a stalled connection open: {}", String::from_utf8_lossy(&out));
    String::from_utf8_lossy(&out).into_owned()
}

fn addrs(w: &World) -> [(&'static str, SocketAddr); 4] {
    let r = w.app.running();
    let addr = |l: &Option<agora::serve::Listening>| l.as_ref().expect("listening").addr;
    [
        ("chat", addr(&r.chat)),
        ("pages", addr(&r.pages)),
        ("stats", addr(&r.stats)),
        ("signup", addr(&r.signup)),
    ]
}

#[tokio::test]
async fn every_listener_closes_slow_header_and_idle_connections_and_still_serves() {
    let w = impatient().await;
    for (service, addr) in addrs(&w) {
        // Headers that never end (slowloris), and a connection that never sends anything.
        let partial = send_and_wait_for_close(addr, b"GET / HTTP/1.1\r\nHost: agora\r\nX-Slow: 1").await;
        assert!(!partial.contains("200 OK"), "{service} answered a request whose headers never ended");
        send_and_wait_for_close(addr, b"").await;
        // A keep-alive connection left idle after a request is closed too.
        let served =
            send_and_wait_for_close(addr, b"GET /openapi.json HTTP/1.1\r\nHost: agora\r\n\r\n").await;
        assert!(served.starts_with("HTTP/1.1 200"), "{service}: {served}");
    }
    let up = w.app.stats.get("/up").send().await.expect("stats /up");
    assert_eq!(up.status(), 200);
    w.app.shutdown().await;
}

/// A request whose body never arrives in full: `408` in the service's own format.
async fn slow_body(addr: SocketAddr, path: &str, auth: Option<&str>) -> (String, String) {
    let auth = auth.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: agora\r\n{auth}Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"na"
    );
    let answer = send_and_wait_for_close(addr, head.as_bytes()).await;
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    (head.to_owned(), body.to_owned())
}

#[tokio::test]
async fn a_body_that_never_arrives_is_answered_408_in_each_format() {
    let w = impatient().await;
    let [(_, chat), _, (_, stats), (_, signup)] = addrs(&w);

    let (head, body) = slow_body(chat, "/channels", Some(&w.staff)).await;
    assert!(head.starts_with("HTTP/1.1 408"), "{head}");
    let v: Value = serde_json::from_str(&body).expect("chat error json");
    assert_eq!(v["error"], "bad_request", "{v}");
    assert!(v["message"].as_str().is_some_and(|m| !m.is_empty()));

    for (addr, path, auth) in [(stats, "/v1/sites", Some(STATS_ADMIN)), (signup, "/api/signups", None)] {
        let (head, body) = slow_body(addr, path, auth).await;
        assert!(head.starts_with("HTTP/1.1 408"), "{path}: {head}");
        assert!(head.to_ascii_lowercase().contains("content-type: application/problem+json"), "{head}");
        let p: Value = serde_json::from_str(&body).expect("problem json");
        assert_eq!(p["status"], 408);
        assert_eq!(p["code"], "request_timeout");
        assert_eq!(p["instance"], path);
    }
    // Nothing half-received was stored.
    let channels = w.ok("GET", "/channels", &w.staff, None).await;
    assert_eq!(channels["items"], json!([]));
    w.app.shutdown().await;
}

#[tokio::test]
async fn every_listener_refuses_a_body_over_its_limit_in_its_own_format() {
    let w = impatient().await;
    let big = "x".repeat(200 * 1024);

    let res = w
        .chat()
        .post("/channels")
        .bearer_auth(&w.staff)
        .header("content-type", "application/json")
        .body(format!("{{\"name\":\"{big}\"}}"))
        .send()
        .await
        .expect("chat");
    assert_eq!(res.status(), 413);
    assert_eq!(res.json::<Value>().await.expect("json")["error"], "payload_too_large");

    for (client, path, auth) in
        [(&w.app.stats, "/v1/sites", Some(STATS_ADMIN)), (&w.app.signup, "/api/signups", None)]
    {
        let mut req = client.post(path).header("content-type", "application/json").body(big.clone());
        if let Some(t) = auth {
            req = req.bearer_auth(t);
        }
        let res = req.send().await.expect("post");
        assert_eq!(res.status(), 413, "{path}");
        assert_eq!(res.headers()["content-type"], "application/problem+json");
        assert_eq!(res.json::<Value>().await.expect("json")["code"], "payload_too_large");
    }
    // The pages site takes no body at all: a POST is refused, as HTML.
    let res = w.app.pages.post("/").body(big.clone()).send().await.expect("pages");
    assert!(res.status().is_client_error(), "{}", res.status());
    assert!(res.headers()["content-type"].to_str().expect("ct").starts_with("text/html"));
    w.app.shutdown().await;
}

/// The frame after the welcome and any confirmation: the disconnect, then the close.
async fn refused(socket: &mut Socket) {
    let mut got = next(socket).await;
    while got.as_ref().is_some_and(|f| f.get("type") != Some(&json!("disconnect"))) {
        got = next(socket).await;
    }
    assert_eq!(got, Some(json!({ "type": "disconnect", "reason": "invalid_request", "reconnect": false })));
    assert_eq!(next_within(socket, Duration::from_secs(10)).await, None, "the socket is closed after it");
}

#[tokio::test]
async fn malformed_binary_and_oversized_frames_close_the_socket_and_the_server_goes_on() {
    let w = World::unlimited().await;
    let ch = w.channel("general", false).await;
    let bad: Vec<Message> = vec![
        Message::text("this is not json"),
        Message::text("[1,2,3]"),
        Message::text(r#"{"command":"subscribe"}"#),
        Message::text(r#"{"command":42,"identifier":"{}"}"#),
        Message::binary(vec![0u8, 159, 146, 150]),
        Message::text(format!(
            r#"{{"command":"subscribe","identifier":"{{\"channel\":\"EventsChannel\",\"pad\":\"{}\"}}"}}"#,
            "x".repeat(100 * 1024)
        )),
    ];
    for frame in bad {
        let mut socket = subscribed(&w, &w.staff).await;
        socket.send(frame).await.expect("send");
        refused(&mut socket).await;
    }
    // A fresh socket still works.
    let mut good = subscribed(&w, &w.staff).await;
    w.post(&ch, &w.staff, "still here").await;
    let got = next(&mut good).await.expect("event");
    assert_eq!(got["message"]["message"]["body"], "still here");
    w.app.shutdown().await;
}

#[tokio::test]
async fn a_subscribe_flood_closes_the_socket_and_leaves_one_subscription() {
    let w = World::unlimited().await;
    let ch = w.channel("general", false).await;
    let mut flood = connect(ticket(&w, &w.staff).await["url"].as_str().expect("url")).await;
    assert_eq!(next(&mut flood).await, Some(json!({ "type": "welcome" })));
    let identifier = r#"{"channel":"EventsChannel"}"#;
    for _ in 0..500 {
        let cmd = json!({ "command": "subscribe", "identifier": identifier }).to_string();
        if flood.send(Message::text(cmd)).await.is_err() {
            break;
        }
    }
    let confirm = next(&mut flood).await.expect("confirm");
    assert_eq!(confirm["type"], "confirm_subscription");
    refused(&mut flood).await;

    // Another socket of the same person receives each post once: the flood left nothing behind.
    let mut other = subscribed(&w, &w.staff).await;
    for i in 0..3 {
        w.post(&ch, &w.staff, &format!("post {i}")).await;
    }
    for i in 0..3 {
        let got = next(&mut other).await.expect("event");
        assert_eq!(got["message"]["message"]["body"], format!("post {i}"));
    }
    assert_eq!(next_within(&mut other, Duration::from_millis(500)).await, None, "no repeat");
    w.app.shutdown().await;
}

#[tokio::test]
async fn revoked_credentials_close_open_sockets_subscribed_or_not_and_fail_on_http_at_once() {
    let w = World::new().await;
    let ch = w.channel("general", false).await;

    // A person key whose socket is open but not subscribed.
    let key = w.ok("POST", "/keys", &w.staff, Some(json!({ "name": "cli" }))).await;
    let key_token = key["token"].as_str().expect("token").to_owned();
    let mut idle = connect(ticket(&w, &key_token).await["url"].as_str().expect("url")).await;
    assert_eq!(next(&mut idle).await, Some(json!({ "type": "welcome" })));
    let key_id = key["key"]["id"].as_str().expect("id");
    let (status, _) = w.call("DELETE", &format!("/keys/{key_id}"), Some(&w.staff), None).await;
    assert_eq!(status, 204);
    assert_eq!(
        next(&mut idle).await,
        Some(json!({ "type": "disconnect", "reason": "unauthorized", "reconnect": false }))
    );
    let (status, _) = w.call("GET", "/me", Some(&key_token), None).await;
    assert_eq!(status, 401, "a revoked key fails on HTTP at once");

    // A bot, subscribed, then deleted.
    let (bot_id, bot) = w.bot("Doomed", "doomed").await;
    w.add(&ch, &bot_id).await;
    let mut bot_socket = subscribed(&w, &bot).await;
    let (status, _) = w.call("DELETE", &format!("/bots/{bot_id}"), Some(&w.staff), None).await;
    assert_eq!(status, 204);
    let mut got = next(&mut bot_socket).await.expect("frame");
    while got.get("type").is_none() {
        got = next(&mut bot_socket).await.expect("frame");
    }
    assert_eq!(got, json!({ "type": "disconnect", "reason": "unauthorized", "reconnect": false }));
    let (status, _) = w.call("GET", "/events", Some(&bot), None).await;
    assert_eq!(status, 401, "a deleted bot's token fails on HTTP at once");

    // A connector token, subscribed, then revoked.
    let conn = w
        .ok("POST", "/connector_tokens", &w.staff, Some(json!({ "person_id": w.staff_id, "scope": "write" })))
        .await;
    let conn_token = conn["token"].as_str().expect("token").to_owned();
    let conn_id = conn["connector_token"]["id"].as_str().expect("connector token id");
    let mut conn_socket = subscribed(&w, &conn_token).await;
    let (status, v) = w.call("DELETE", &format!("/connector_tokens/{conn_id}"), Some(&w.staff), None).await;
    assert_eq!(status, 204, "{v}");
    assert_eq!(
        next(&mut conn_socket).await,
        Some(json!({ "type": "disconnect", "reason": "unauthorized", "reconnect": false }))
    );
    let (status, _) = w
        .call("POST", &format!("/channels/{ch}/messages"), Some(&conn_token), Some(json!({ "body": "x" })))
        .await;
    assert_eq!(status, 401, "a revoked connector token fails on HTTP at once");
    // And a ticket issued before the revocation no longer opens a socket.
    let key2 = w.ok("POST", "/keys", &w.staff, Some(json!({ "name": "cli2" }))).await;
    let key2_token = key2["token"].as_str().expect("token").to_owned();
    let t = ticket(&w, &key2_token).await;
    let key2_id = key2["key"]["id"].as_str().expect("id");
    w.call("DELETE", &format!("/keys/{key2_id}"), Some(&w.staff), None).await;
    let mut late = connect(t["url"].as_str().expect("url")).await;
    assert_eq!(
        next(&mut late).await,
        Some(json!({ "type": "disconnect", "reason": "unauthorized", "reconnect": false }))
    );
    w.app.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_thousand_sockets_each_get_a_post_while_the_health_route_answers() {
    const SOCKETS: usize = 2000;
    let w = World::unlimited().await;
    // The sockets are a bot's, in one channel; the load goes to another channel it is not in, so
    // the sockets (which read nothing until the end) are not flooded by it.
    let ch = w.channel("crowd", false).await;
    let busy = w.channel("busy", false).await;
    let (bot_id, bot) = w.bot("Crowd", "crowd").await;
    w.add(&ch, &bot_id).await;
    // Load on the chat service while the sockets come: posters posting all along.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut load = Vec::new();
    for p in 0..4 {
        let (chat, token, stop) = (w.chat().clone(), w.staff.clone(), stop.clone());
        let path = format!("/channels/{busy}/messages");
        load.push(tokio::spawn(async move {
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let res = chat
                    .post(&path)
                    .bearer_auth(&token)
                    .json(&json!({ "body": format!("load {p} {n}") }))
                    .send()
                    .await;
                assert_eq!(res.expect("post").status(), 201);
                n += 1;
            }
        }));
    }
    let mut tickets = Vec::new();
    for _ in 0..SOCKETS {
        tickets.push(ticket(&w, &bot).await["url"].as_str().expect("url").to_owned());
    }
    let mut sockets = Vec::with_capacity(SOCKETS);
    for batch in tickets.chunks(100) {
        let opened = futures::future::join_all(batch.iter().map(|url| async move {
            let mut s = connect(url).await;
            assert_eq!(next(&mut s).await, Some(json!({ "type": "welcome" })));
            crate::cable::subscribe(&mut s).await;
            s
        }))
        .await;
        sockets.extend(opened);
        // The health route answers while the load runs.
        let up = w.app.stats.get("/up").send().await.expect("stats /up");
        assert_eq!(up.status(), 200);
        assert_eq!(up.text().await.expect("body"), "ok");
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    for l in load {
        l.await.expect("poster");
    }
    w.post(&ch, &w.staff, "to everyone").await;
    let received = futures::future::join_all(sockets.iter_mut().map(|s| async move {
        loop {
            let Some(frame) = next_within(s, Duration::from_secs(60)).await else { return false };
            if frame["message"]["message"]["body"] == "to everyone" {
                return true;
            }
        }
    }))
    .await;
    assert_eq!(received.iter().filter(|r| **r).count(), SOCKETS, "every socket got the post");
    drop(sockets);
    w.app.shutdown().await;
}

/// Found by schemathesis: an empty `member_id` reached the store as a record key and answered 500.
#[tokio::test]
async fn ids_the_server_never_makes_are_refused_not_failed() {
    let w = World::new().await;
    let ch = w.channel("general", false).await;
    for id in ["", "p_", "b_x", "p_ABCDEFGHJKMNPQRS", "person:ada", "p_0000000000000000\u{0}"] {
        let (status, v) = w
            .call(
                "POST",
                &format!("/channels/{ch}/members"),
                Some(&w.staff),
                Some(json!({ "member_id": id })),
            )
            .await;
        assert_eq!(status, 422, "member_id {id:?}: {v}");
        assert_eq!(v["error"], "unprocessable", "{v}");
    }
    w.app.shutdown().await;
}

/// A browser session that expires while its socket is open: the socket is closed at the next ping
/// (every 3 s), and the token fails on HTTP.
#[tokio::test]
async fn a_session_that_expires_closes_its_open_socket() {
    use agora_storage::people::{CredentialKind, NewCredential, Scope};
    let w = World::new().await;
    let (_, token) = w
        .app
        .running()
        .store
        .issue_credential(NewCredential {
            kind: CredentialKind::Session,
            person_id: Some(w.staff_id.clone()),
            bot_id: None,
            name: None,
            scope: Scope::Write,
            expires_at: Some(agora_storage::time::now_ms() + 2_000),
        })
        .await
        .expect("a short session");
    let mut socket = subscribed(&w, &token).await;
    let mut got = next_within(&mut socket, Duration::from_secs(30)).await;
    while got.as_ref().is_some_and(|f| f.get("type").is_none()) {
        got = next_within(&mut socket, Duration::from_secs(30)).await;
    }
    assert_eq!(got, Some(json!({ "type": "disconnect", "reason": "unauthorized", "reconnect": false })));
    let (status, _) = w.call("GET", "/me", Some(&token), None).await;
    assert_eq!(status, 401);
    w.app.shutdown().await;
}
