//! The chat API over HTTP, as its clients see it: every credential kind, labels, permissions,
//! idempotency, validation, paging, search, mentions, read markers, limits and the OpenAPI
//! description.

use std::collections::{HashMap, HashSet};

use agora::admin::{AdminRequest, execute};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{ServiceClient, TestApp, spawn_app};

/// A running app with a staff person (Ada) and helpers to make everything else.
pub struct World {
    pub app: TestApp,
    pub staff: String,
    pub staff_id: String,
    pub staff_key: String,
}

impl World {
    pub async fn new() -> World {
        World::start(spawn_app().await).await
    }

    /// A world whose server lets one credential post and read without limit (for load in tests).
    pub async fn unlimited() -> World {
        let mut args = crate::support::test_args();
        args.posts_per_minute = 1_000_000;
        args.reads_per_minute = 1_000_000;
        World::start(crate::support::spawn_app_with(agora_storage::DbSettings::memory(), None, args).await)
            .await
    }

    pub async fn start_with(app: TestApp) -> World {
        World::start(app).await
    }

    async fn start(app: TestApp) -> World {
        let boot = execute(
            &app.running().store,
            AdminRequest::Bootstrap {
                name: "Ada".into(),
                handle: "ada".into(),
                email: "ada@example.org".into(),
            },
        )
        .await
        .expect("bootstrap");
        World {
            staff: boot["session_token"].as_str().expect("session").to_owned(),
            staff_id: boot["person_id"].as_str().expect("id").to_owned(),
            staff_key: boot["person_key"].as_str().expect("key").to_owned(),
            app,
        }
    }

    pub fn chat(&self) -> &ServiceClient {
        &self.app.chat
    }

    pub async fn call(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let c = self.chat();
        let mut req = match method {
            "GET" => c.get(path),
            "POST" => c.post(path),
            "PATCH" => c.patch(path),
            "DELETE" => c.delete(path),
            "PUT" => c.http.put(c.url(path)),
            other => panic!("method {other}"),
        };
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req.send().await.expect("request");
        let status = res.status();
        let text = res.text().await.expect("body");
        let value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        (status, value)
    }

    pub async fn ok(&self, method: &str, path: &str, token: &str, body: Option<Value>) -> Value {
        let (status, value) = self.call(method, path, Some(token), body).await;
        assert!(status.is_success(), "{method} {path}: {status} {value}");
        value
    }

    pub async fn channel(&self, name: &str, external: bool) -> String {
        let c = self
            .ok("POST", "/channels", &self.staff, Some(json!({ "name": name, "external": external })))
            .await;
        c["id"].as_str().expect("channel id").to_owned()
    }

    pub async fn add(&self, channel: &str, member: &str) {
        self.ok(
            "POST",
            &format!("/channels/{channel}/members"),
            &self.staff,
            Some(json!({ "member_id": member })),
        )
        .await;
    }

    /// A bot: (id, token).
    pub async fn bot(&self, name: &str, handle: &str) -> (String, String) {
        let b = self.ok("POST", "/bots", &self.staff, Some(json!({ "name": name, "handle": handle }))).await;
        (b["bot"]["id"].as_str().expect("id").to_owned(), b["token"].as_str().expect("token").to_owned())
    }

    pub async fn connector(&self, person: &str, scope: &str) -> String {
        let t = self
            .ok(
                "POST",
                "/connector_tokens",
                &self.staff,
                Some(json!({ "person_id": person, "scope": scope })),
            )
            .await;
        t["token"].as_str().expect("token").to_owned()
    }

    /// A guest invited into `channels`: (id, session token).
    pub async fn guest(&self, name: &str, email: &str, channels: &[&str]) -> (String, String) {
        let inv = self
            .ok(
                "POST",
                "/invites",
                &self.staff,
                Some(json!({ "email": email, "name": name, "channel_ids": channels })),
            )
            .await;
        let code = inv["code"].as_str().expect("code");
        assert!(inv["url"].as_str().is_some_and(|u| u.contains(code)));
        let (status, acc) = self.call("POST", &format!("/invites/{code}/accept"), None, None).await;
        assert_eq!(status, StatusCode::CREATED, "{acc}");
        (
            acc["person"]["id"].as_str().expect("id").to_owned(),
            acc["token"].as_str().expect("token").to_owned(),
        )
    }

    /// A second staff person with a session.
    pub async fn staff_person(&self, name: &str, handle: &str) -> (String, String) {
        let store = &self.app.running().store;
        let h = agora_storage::ids::Handle::parse(handle).expect("handle");
        let p = store
            .create_person(
                name,
                &h,
                Some(&format!("{handle}@example.org")),
                agora_storage::people::Role::Staff,
            )
            .await
            .expect("person");
        let (_, token) = store.issue_session(&p.id).await.expect("session");
        (p.id, token)
    }

    pub async fn post(&self, channel: &str, token: &str, body: &str) -> Value {
        let (status, v) = self
            .call(
                "POST",
                &format!("/channels/{channel}/messages"),
                Some(token),
                Some(json!({ "body": body })),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{v}");
        v
    }
}

#[tokio::test]
async fn every_credential_posts_with_the_servers_labels() {
    let w = World::new().await;
    let ch = w.channel("general", false).await;
    let (bot_id, bot) = w.bot("Build Bot", "build-bot").await;
    w.add(&ch, &bot_id).await;
    let key = w.ok("POST", "/keys", &w.staff, Some(json!({ "name": "laptop" }))).await;
    let key_token = key["token"].as_str().expect("token");
    assert!(key_token.starts_with("chat_"));
    let conn = w.connector(&w.staff_id, "write").await;

    let cases = [
        (&w.staff, "human", "Ada"),
        (&key_token.to_owned(), "agent", "Ada's agent (laptop)"),
        (&conn, "agent", "Ada via connector"),
        (&bot, "bot", "Build Bot"),
    ];
    for (token, source, label) in cases {
        let m = w.post(&ch, token, &format!("hello from {label}")).await;
        assert_eq!(m["source"], source, "{m}");
        assert_eq!(m["actor_label"], label, "{m}");
        assert_eq!(m["version"], 1);
        assert_eq!(m["deleted"], false);
        assert_eq!(m["channel_id"], ch.as_str());
        assert!(m["created_at"].as_str().is_some_and(|t| t.ends_with('Z') && t.len() == 24), "{m}");
    }
    let me = w.ok("GET", "/me", key_token, None).await;
    assert_eq!(me["actor_label"], "Ada's agent (laptop)");
    assert_eq!(me["staff"], false, "a person key never has staff powers");
    let me = w.ok("GET", "/me", &bot, None).await;
    assert_eq!(me["kind"], "bot");
    assert_eq!(me["handle"], "build-bot");
    w.app.shutdown().await;
}

#[tokio::test]
async fn caller_cannot_choose_source_author_or_any_unknown_field() {
    let w = World::new().await;
    let ch = w.channel("general", false).await;
    let path = format!("/channels/{ch}/messages");
    for field in ["source", "author", "from", "as", "bot", "colour"] {
        let (status, v) =
            w.call("POST", &path, Some(&w.staff), Some(json!({ "body": "hi", field: "system" }))).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{field}: {v}");
        assert_eq!(v["error"], "unprocessable");
        assert_eq!(v["reason"], "unknown_field");
        assert_eq!(v["field"], field);
    }
    // Malformed JSON, a body that is not an object, a body over 64 KiB.
    let raw = w
        .chat()
        .post(&path)
        .bearer_auth(&w.staff)
        .header("content-type", "application/json")
        .body("{\"body\": ");
    let res = raw.send().await.expect("send");
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    assert_eq!(res.json::<Value>().await.expect("json")["error"], "bad_request");
    let (status, _) = w.call("POST", &path, Some(&w.staff), Some(json!(["body"]))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let huge = json!({ "body": "x".repeat(70 * 1024) });
    let (status, v) = w.call("POST", &path, Some(&w.staff), Some(huge)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{v}");
    assert_eq!(v["error"], "payload_too_large");

    // Characters, not bytes: 10,000 two-byte characters pass, 10,001 do not; empty fails.
    let (status, _) =
        w.call("POST", &path, Some(&w.staff), Some(json!({ "body": "é".repeat(10_000) }))).await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, v) =
        w.call("POST", &path, Some(&w.staff), Some(json!({ "body": "é".repeat(10_001) }))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(v["field"], "body");
    let (status, v) = w.call("POST", &path, Some(&w.staff), Some(json!({ "body": "" }))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(v["field"], "body");
    let (status, v) = w.call("POST", &path, Some(&w.staff), Some(json!({ "body": 5 }))).await;
    assert_eq!((status, v["field"].clone()), (StatusCode::UNPROCESSABLE_ENTITY, json!("body")));
    let (status, _) = w
        .call("POST", &path, Some(&w.staff), Some(json!({ "body": "x", "idempotency_key": "k".repeat(256) })))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);

    // Nothing refused was stored: one message only.
    let list = w.ok("GET", &path, &w.staff, None).await;
    assert_eq!(list["items"].as_array().map(Vec::len), Some(1));

    // limit and cursor.
    for bad in ["0", "-1", "ten"] {
        let (status, v) = w.call("GET", &format!("{path}?limit={bad}"), Some(&w.staff), None).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "limit={bad}: {v}");
    }
    let (status, _) = w.call("GET", &format!("{path}?limit=1000"), Some(&w.staff), None).await;
    assert_eq!(status, StatusCode::OK, "a limit above 100 is treated as 100");
    let (status, v) = w.call("GET", &format!("{path}?cursor=made-up"), Some(&w.staff), None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{v}");
    w.app.shutdown().await;
}

#[tokio::test]
async fn concurrent_posts_with_one_idempotency_key_make_one_message() {
    let w = World::new().await;
    let ch = w.channel("general", false).await;
    let path = format!("/channels/{ch}/messages");
    let mut tasks = Vec::new();
    for i in 0..24 {
        let c = w.chat().clone();
        let path = path.clone();
        let token = w.staff.clone();
        tasks.push(tokio::spawn(async move {
            let res = c
                .post(&path)
                .bearer_auth(token)
                .json(&json!({ "body": format!("attempt {i}"), "idempotency_key": "order-42" }))
                .send()
                .await
                .expect("send");
            let replayed =
                res.headers().get("idempotent-replayed").map(|v| v.to_str().unwrap_or("").to_owned());
            (res.status(), replayed, res.json::<Value>().await.expect("json"))
        }));
    }
    let mut ids = HashSet::new();
    let mut created = 0;
    for t in tasks {
        let (status, replayed, body) = t.await.expect("task");
        ids.insert(body["id"].as_str().expect("id").to_owned());
        match status {
            StatusCode::CREATED => {
                created += 1;
                assert_eq!(replayed, None);
            }
            StatusCode::OK => assert_eq!(replayed.as_deref(), Some("true")),
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert_eq!(created, 1, "exactly one post creates");
    assert_eq!(ids.len(), 1, "every answer carries the same message");
    let list = w.ok("GET", &path, &w.staff, None).await;
    assert_eq!(list["items"].as_array().map(Vec::len), Some(1));
    // The key is the author's: another author may use it.
    let (bot_id, bot) = w.bot("B", "bee").await;
    w.add(&ch, &bot_id).await;
    let (status, _) = w
        .call("POST", &path, Some(&bot), Some(json!({ "body": "mine", "idempotency_key": "order-42" })))
        .await;
    assert_eq!(status, StatusCode::CREATED);
    w.app.shutdown().await;
}

#[tokio::test]
async fn edits_raise_version_and_deletes_leave_tombstones() {
    let w = World::new().await;
    let ch = w.channel("general", false).await;
    let m = w.post(&ch, &w.staff, "first draft").await;
    let id = m["id"].as_str().expect("id");
    let e =
        w.ok("PATCH", &format!("/messages/{id}"), &w.staff, Some(json!({ "body": "second draft" }))).await;
    assert_eq!(e["version"], 2);
    assert_eq!(e["body"], "second draft");
    assert!(e["edited_at"].is_string());
    let d = w.ok("DELETE", &format!("/messages/{id}"), &w.staff, None).await;
    assert_eq!(d["deleted"], true);
    assert_eq!(d["body"], "");
    assert_eq!(d["version"], 3);
    assert!(d["deleted_at"].is_string());
    let list = w.ok("GET", &format!("/channels/{ch}/messages"), &w.staff, None).await;
    assert_eq!(list["items"][0]["id"], id);
    assert_eq!(list["items"][0]["deleted"], true, "the tombstone stays in the list");
    let (status, v) =
        w.call("PATCH", &format!("/messages/{id}"), Some(&w.staff), Some(json!({ "body": "x" }))).await;
    assert_eq!(status, StatusCode::CONFLICT, "{v}");
    let (status, _) =
        w.call("PATCH", "/messages/nonsense", Some(&w.staff), Some(json!({ "body": "x" }))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    w.app.shutdown().await;
}

#[tokio::test]
async fn paging_back_has_no_gaps_or_repeats_while_messages_arrive() {
    let w = World::new().await;
    let ch = w.channel("general", false).await;
    for i in 1..=23 {
        w.post(&ch, &w.staff, &format!("m{i}")).await;
    }
    let mut seen: Vec<String> = Vec::new();
    let mut cursor: Option<String> = None;
    let mut extra = 0;
    loop {
        let path = match &cursor {
            None => format!("/channels/{ch}/messages?limit=5"),
            Some(c) => format!("/channels/{ch}/messages?limit=5&cursor={c}"),
        };
        let page = w.ok("GET", &path, &w.staff, None).await;
        for item in page["items"].as_array().expect("items") {
            seen.push(item["body"].as_str().expect("body").to_owned());
        }
        // New messages arrive between pages; they must not disturb the older pages.
        extra += 1;
        w.post(&ch, &w.staff, &format!("late{extra}")).await;
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    let expected: Vec<String> = (1..=23).rev().map(|i| format!("m{i}")).collect();
    assert_eq!(seen, expected);
    w.app.shutdown().await;
}

#[tokio::test]
async fn search_mentions_and_read_markers() {
    let w = World::new().await;
    let ch = w.channel("general", false).await;
    let other = w.channel("secret", false).await;
    let (bob_id, bob) = w.staff_person("Bob", "bob").await;
    w.add(&ch, &bob_id).await;
    w.post(&ch, &w.staff, "The deployment is running late, @bob").await;
    w.post(&ch, &w.staff, "Deployments finished").await;
    let doomed = w.post(&ch, &w.staff, "deploying again @bob").await;
    w.post(&other, &w.staff, "deploy the secret thing @bob").await;
    w.ok("DELETE", &format!("/messages/{}", doomed["id"].as_str().expect("id")), &w.staff, None).await;

    let found = w.ok("GET", "/search?q=DEPLOYMENT", &bob, None).await;
    let bodies: Vec<&str> =
        found["items"].as_array().expect("items").iter().filter_map(|m| m["body"].as_str()).collect();
    assert_eq!(
        bodies,
        vec!["Deployments finished", "The deployment is running late, @bob"],
        "stems, newest first, own channels only, no tombstones"
    );
    let both = w.ok("GET", "/search?q=deployment%20late", &bob, None).await;
    assert_eq!(both["items"].as_array().map(Vec::len), Some(1), "every word must match");
    let (status, _) = w.call("GET", &format!("/search?q=deploy&channel_id={other}"), Some(&bob), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "a channel bob is not in");
    let (status, _) = w.call("GET", "/search?q=", Some(&bob), None).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);

    let mentions = w.ok("GET", "/mentions", &bob, None).await;
    let items = mentions["items"].as_array().expect("items");
    assert_eq!(items.len(), 1, "tombstones and channels bob is not in are left out: {mentions}");
    assert_eq!(items[0]["mentions"], json!(["bob"]));

    let channels = w.ok("GET", "/channels", &bob, None).await;
    let general = &channels["items"][0];
    assert_eq!(general["id"], ch.as_str());
    assert_eq!(general["unread_count"], 3);
    assert_eq!(general["last_read_id"], Value::Null);
    let newest = w.ok("GET", &format!("/channels/{ch}/messages?limit=1"), &bob, None).await;
    let newest_id = newest["items"][0]["id"].as_str().expect("id").to_owned();
    let (status, _) = w
        .call("POST", &format!("/channels/{ch}/read"), Some(&bob), Some(json!({ "message_id": newest_id })))
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let channels = w.ok("GET", "/channels", &bob, None).await;
    assert_eq!(channels["items"][0]["unread_count"], 0);
    assert_eq!(channels["items"][0]["last_read_id"], newest_id.as_str());
    // Ada posted everything: her own messages are never unread.
    let mine = w.ok("GET", "/channels", &w.staff, None).await;
    assert!(mine["items"].as_array().expect("items").iter().all(|c| c["unread_count"] == 0), "{mine}");
    w.app.shutdown().await;
}

#[tokio::test]
async fn posting_is_limited_per_credential() {
    let w = World::new().await;
    let ch = w.channel("general", false).await;
    let path = format!("/channels/{ch}/messages");
    for i in 0..60 {
        let (status, v) =
            w.call("POST", &path, Some(&w.staff_key), Some(json!({ "body": format!("n{i}") }))).await;
        assert_eq!(status, StatusCode::CREATED, "post {i}: {v}");
    }
    let res = w
        .chat()
        .post(&path)
        .bearer_auth(&w.staff_key)
        .json(&json!({ "body": "one too many" }))
        .send()
        .await
        .expect("send");
    assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = res.headers()["retry-after"].to_str().expect("ascii").parse().expect("seconds");
    assert!((1..=60).contains(&retry), "{retry}");
    assert_eq!(res.json::<Value>().await.expect("json")["error"], "rate_limited");
    // Another credential of the same person is not affected.
    w.post(&ch, &w.staff, "still here").await;
    w.app.shutdown().await;
}

/// The six credentials of the permission table, in one channel each may see.
struct Cast {
    w: World,
    ch: String,
    creds: HashMap<&'static str, String>,
    ids: HashMap<&'static str, String>,
}

async fn cast() -> Cast {
    let w = World::new().await;
    let ch = w.channel("general", true).await;
    let (bot_id, bot) = w.bot("Build Bot", "build-bot").await;
    w.add(&ch, &bot_id).await;
    let (guest_id, guest) = w.guest("Gus Guest", "gus@outside.example", &[&ch]).await;
    let mut creds = HashMap::new();
    creds.insert("staff session", w.staff.clone());
    creds.insert("guest session", guest);
    creds.insert("person key", w.staff_key.clone());
    creds.insert("bot", bot);
    creds.insert("connector read", w.connector(&w.staff_id, "read").await);
    creds.insert("connector write", w.connector(&w.staff_id, "write").await);
    let mut ids = HashMap::new();
    ids.insert("bot", bot_id);
    ids.insert("guest", guest_id);
    Cast { w, ch, creds, ids }
}

#[tokio::test]
async fn permissions_of_every_credential_on_every_operation() {
    let Cast { w, ch, creds, ids } = cast().await;
    let other = w.channel("staff-only", false).await;
    let human_msg = w.post(&ch, &w.staff, "typed by Ada").await;
    let human_id = human_msg["id"].as_str().expect("id").to_owned();

    // (operation, expected status per credential: staff session, guest session, person key, bot,
    // connector read, connector write).
    type Row = (&'static str, &'static str, String, Option<Value>, [u16; 6]);
    let rows: Vec<Row> = vec![
        ("GET", "me", "/me".into(), None, [200, 200, 200, 200, 200, 200]),
        ("GET", "channels", "/channels".into(), None, [200, 200, 200, 200, 200, 200]),
        ("GET", "messages", format!("/channels/{ch}/messages"), None, [200, 200, 200, 200, 200, 200]),
        (
            "GET",
            "messages of a channel not joined",
            format!("/channels/{other}/messages"),
            None,
            [200, 404, 200, 404, 200, 200],
        ),
        ("GET", "search", "/search?q=typed".into(), None, [200, 200, 200, 200, 200, 200]),
        ("GET", "mentions", "/mentions".into(), None, [200, 200, 200, 200, 200, 200]),
        (
            "POST",
            "post",
            format!("/channels/{ch}/messages"),
            Some(json!({ "body": "hello" })),
            [201, 201, 201, 201, 403, 201],
        ),
        (
            "POST",
            "post where not a member",
            format!("/channels/{other}/messages"),
            Some(json!({ "body": "hello" })),
            [201, 404, 201, 404, 403, 201],
        ),
        (
            "POST",
            "mark read",
            format!("/channels/{ch}/read"),
            Some(json!({ "message_id": human_id })),
            [204, 204, 204, 204, 403, 204],
        ),
        (
            "PATCH",
            "edit a message a person typed",
            format!("/messages/{human_id}"),
            Some(json!({ "body": "changed" })),
            [200, 403, 403, 403, 403, 403],
        ),
        ("GET", "people", "/people".into(), None, [200, 403, 200, 200, 200, 200]),
        ("GET", "members", format!("/channels/{ch}/members"), None, [200, 403, 403, 403, 403, 403]),
        (
            "POST",
            "create channel",
            "/channels".into(),
            Some(json!({ "name": "x" })),
            [201, 403, 403, 403, 403, 403],
        ),
        (
            "PATCH",
            "update channel",
            format!("/channels/{ch}"),
            Some(json!({ "topic": "t" })),
            [200, 403, 403, 403, 403, 403],
        ),
        (
            "POST",
            "create bot",
            "/bots".into(),
            Some(json!({ "name": "n", "handle": "n" })),
            [201, 403, 403, 403, 403, 403],
        ),
        ("GET", "keys", "/keys".into(), None, [200, 403, 403, 403, 403, 403]),
        ("POST", "create key", "/keys".into(), Some(json!({ "name": "k" })), [201, 403, 403, 403, 403, 403]),
        ("GET", "connector tokens", "/connector_tokens".into(), None, [200, 403, 403, 403, 403, 403]),
        (
            "POST",
            "invite",
            "/invites".into(),
            Some(json!({ "email": "x@y.z", "name": "X" })),
            [201, 403, 403, 403, 403, 403],
        ),
    ];
    let order = ["staff session", "guest session", "person key", "bot", "connector read", "connector write"];
    let mut failures = Vec::new();
    for (method, name, path, body, expected) in &rows {
        for (who, want) in order.iter().zip(expected) {
            let token = &creds[who];
            // Unique names, so repeated creations do not collide.
            let body = body.clone().map(|mut b| {
                if b.get("handle").is_some() {
                    let h = format!("h{}", who.len() * 7 + name.len());
                    b["handle"] = json!(format!("{h}{}", who.replace(' ', "")));
                }
                b
            });
            let (status, v) = w.call(method, path, Some(token), body).await;
            if status.as_u16() != *want {
                failures.push(format!("{name} as {who}: want {want}, got {status} {v}"));
            }
        }
    }
    assert!(failures.is_empty(), "permission table mismatches:\n{}", failures.join("\n"));

    // Guests cannot see e-mail addresses; staff can; keys and connectors cannot.
    let (_, staff_view) = w.call("GET", "/people", Some(&creds["staff session"]), None).await;
    assert!(staff_view["items"].as_array().expect("items").iter().all(|p| p.get("email").is_some()));
    let (_, key_view) = w.call("GET", "/people", Some(&creds["person key"]), None).await;
    assert!(key_view["items"].as_array().expect("items").iter().all(|p| p.get("email").is_none()));

    // A channel the caller is not in answers exactly like one that does not exist.
    let guest = &creds["guest session"];
    let (s1, b1) = w.call("GET", &format!("/channels/{other}/messages"), Some(guest), None).await;
    let (s2, b2) = w.call("GET", "/channels/c_0000000000000000/messages", Some(guest), None).await;
    assert_eq!((s1, b1), (s2, b2));

    // Delete: author or staff; a bot never deletes what a person wrote.
    let bot_msg = w.post(&ch, &creds["bot"], "bot says").await;
    let bot_msg_id = bot_msg["id"].as_str().expect("id");
    let (status, _) = w.call("DELETE", &format!("/messages/{human_id}"), Some(&creds["bot"]), None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = w.call("DELETE", &format!("/messages/{bot_msg_id}"), Some(guest), None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "a guest deletes only their own");
    let (status, _) = w
        .call(
            "PATCH",
            &format!("/messages/{bot_msg_id}"),
            Some(&creds["bot"]),
            Some(json!({ "body": "bot edits own" })),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) =
        w.call("DELETE", &format!("/messages/{bot_msg_id}"), Some(&creds["staff session"]), None).await;
    assert_eq!(status, StatusCode::OK, "staff delete any message");

    // Revoked credentials fail at once.
    let keys = w.ok("GET", "/keys", &w.staff, None).await;
    let key_id = keys["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|k| k["name"] == "bootstrap")
        .expect("key")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let (status, _) = w.call("DELETE", &format!("/keys/{key_id}"), Some(&w.staff), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, v) = w.call("GET", "/me", Some(&creds["person key"]), None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{v}");
    assert_eq!(v["error"], "unauthorized");
    let (status, _) = w.call("DELETE", &format!("/bots/{}", ids["bot"]), Some(&w.staff), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = w.call("GET", "/me", Some(&creds["bot"]), None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = w.call("GET", "/me", None, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = w.call("GET", "/me", Some("chs_made_up"), None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    w.app.shutdown().await;
}

#[tokio::test]
async fn guests_only_join_external_channels_and_staff_manage_members() {
    let w = World::new().await;
    let internal = w.channel("internal", false).await;
    let external = w.channel("partners", true).await;
    let (status, v) = w
        .call(
            "POST",
            "/invites",
            Some(&w.staff),
            Some(json!({ "email": "g@x.example", "name": "G", "channel_ids": [internal] })),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    let (guest_id, guest) = w.guest("Gail", "gail@x.example", &[&external]).await;
    let me = w.ok("GET", "/me", &guest, None).await;
    assert_eq!(me["role"], "guest");
    assert_eq!(me["handle"], "gail");
    let (status, v) = w
        .call(
            "POST",
            &format!("/channels/{internal}/members"),
            Some(&w.staff),
            Some(json!({ "member_id": guest_id })),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{v}");
    let (status, _) = w
        .call("PATCH", &format!("/channels/{external}"), Some(&w.staff), Some(json!({ "external": false })))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "a channel with guests cannot become internal");
    let members = w.ok("GET", &format!("/channels/{external}/members"), &w.staff, None).await;
    assert_eq!(members["items"].as_array().map(Vec::len), Some(2));
    let (status, _) =
        w.call("DELETE", &format!("/channels/{external}/members/{guest_id}"), Some(&w.staff), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = w.call("GET", &format!("/channels/{external}/messages"), Some(&guest), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "removed: the channel is gone for the guest");
    let list = w.ok("GET", "/channels", &w.staff, None).await;
    let ext = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|c| c["id"] == external.as_str())
        .expect("channel")
        .clone();
    assert_eq!(ext["member_count"], 1);
    w.app.shutdown().await;
}

#[tokio::test]
async fn openapi_document_and_routes_agree() {
    let w = World::new().await;
    let doc = w.ok("GET", "/openapi.json", &w.staff, None).await;
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["servers"][0]["url"], w.chat().base.as_str());
    let paths = doc["paths"].as_object().expect("paths");
    let methods = ["get", "post", "patch", "delete", "put"];
    let mut checked = 0;
    for (path, item) in paths {
        let concrete = path
            .replace("{channel_id}", "c_0000000000000000")
            .replace("{member_id}", "p_0000000000000000")
            .replace("{id}", "x")
            .replace("{code}", "nope");
        for method in methods {
            let documented = item.get(method);
            let (status, v) = w.call(&method.to_uppercase(), &concrete, None, None).await;
            match documented {
                Some(op) => {
                    checked += 1;
                    let access = op["x-agora-access"].as_str().expect("x-agora-access on every operation");
                    assert!(["read", "member", "staff", "public"].contains(&access));
                    assert!(op["operationId"].is_string());
                    if access == "public" {
                        assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
                        assert_ne!(status, StatusCode::UNAUTHORIZED, "{method} {path}");
                    } else {
                        assert_eq!(
                            status,
                            StatusCode::UNAUTHORIZED,
                            "{method} {path} is routed and needs a credential: {v}"
                        );
                    }
                }
                None if method != "put" => {
                    assert_eq!(
                        status,
                        StatusCode::METHOD_NOT_ALLOWED,
                        "{method} {path} is not documented, so not routed"
                    );
                }
                None => {}
            }
        }
    }
    assert!(checked >= 25, "{checked} operations");
    // Every $ref resolves.
    let text = doc.to_string();
    let schemas = doc["components"]["schemas"].as_object().expect("schemas");
    for part in text.split("#/components/schemas/").skip(1) {
        let name: String = part.chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
        assert!(schemas.contains_key(&name), "unresolved $ref {name}");
    }
    w.app.shutdown().await;
}
