//! Secrets: the real binary runs a full scenario at `RUST_LOG=debug` (every kind of token, a
//! stream ticket, an invite code, a sign-up with its texted code and phone number, a signed
//! inbound text), then everything it logged and everything it stored is searched for each secret
//! it used. None may appear.

use std::process::Stdio;
use std::time::Duration;

use futures::SinkExt as _;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::foundation::{admin_json, agora_bin};
use crate::signup::{FakeTwilio, code_in, twilio_signature};

/// Waits until the log file shows every service listening; answers their base URLs by service.
fn wait_for_listeners(log: &std::path::Path) -> std::collections::HashMap<String, String> {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let mut found = std::collections::HashMap::new();
        for line in text.lines().filter(|l| l.contains(" listening")) {
            let field = |name: &str| {
                line.split_whitespace()
                    .find_map(|w| w.strip_prefix(&format!("{name}=")))
                    .map(|v| v.trim_matches('"').to_owned())
            };
            if let (Some(service), Some(addr)) = (field("service"), field("addr")) {
                found.insert(service, format!("http://{addr}"));
            }
        }
        if found.len() == 4 {
            return found;
        }
        assert!(std::time::Instant::now() < deadline, "agora did not come up:\n{text}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_token_code_or_phone_number_is_logged_or_stored_in_clear() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = format!("surrealkv://{}", dir.path().join("agora").display());
    let log_path = dir.path().join("agora.log");
    let fake = FakeTwilio::default();
    let twilio = fake.start().await;
    let stats_admin = format!("stats-admin-{}", std::process::id());
    let signup_key = format!("signup-hmac-key-{}", std::process::id());
    let twilio_token = format!("twilio-auth-{}", std::process::id());

    let log = std::fs::File::create(&log_path).expect("log file");
    let mut server = agora_bin()
        .args(["serve", "--db", &db])
        .args(["--chat-addr", "127.0.0.1:0", "--pages-addr", "127.0.0.1:0"])
        .args(["--stats-addr", "127.0.0.1:0", "--signup-addr", "127.0.0.1:0"])
        .args(["--stats-admin-token", &stats_admin, "--signup-key", &signup_key])
        .args(["--sms", "twilio", "--twilio-base-url", &twilio, "--twilio-account-sid", "ACsecrets"])
        .args(["--twilio-auth-token", &twilio_token, "--twilio-from", "+13125550000"])
        .env("RUST_LOG", "debug")
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .spawn()
        .expect("start agora");
    let urls = wait_for_listeners(&log_path);
    let (chat, stats, signup) = (&urls["chat"], &urls["stats"], &urls["signup"]);
    let http = reqwest::Client::new();
    let mut secrets: Vec<(&str, String)> = vec![
        ("stats admin token", stats_admin.clone()),
        ("sign-up key", signup_key.clone()),
        ("twilio auth token", twilio_token.clone()),
    ];

    // Chat: every kind of credential, an invite, a stream ticket and a live socket.
    let boot =
        admin_json(&db, &["bootstrap", "--name", "Ada", "--handle", "ada", "--email", "ada@example.org"]);
    let staff = boot["session_token"].as_str().expect("session").to_owned();
    secrets.push(("staff session", staff.clone()));
    secrets.push(("person key", boot["person_key"].as_str().expect("key").to_owned()));
    let second = admin_json(&db, &["session", "--handle", "ada"]);
    secrets.push(("second session", second["session_token"].as_str().expect("session").to_owned()));
    let call = |method: reqwest::Method, path: &str, token: Option<&str>, body: Option<Value>| {
        let mut req = http.request(method, format!("{chat}{path}"));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let path = path.to_owned();
        async move {
            let res = req.send().await.expect("request");
            assert!(res.status().is_success(), "{path}: {}", res.status());
            res.json::<Value>().await.unwrap_or(Value::Null)
        }
    };
    use reqwest::Method;
    let ch =
        call(Method::POST, "/channels", Some(&staff), Some(json!({ "name": "general", "external": true })))
            .await;
    let ch = ch["id"].as_str().expect("id").to_owned();
    let key = call(Method::POST, "/keys", Some(&staff), Some(json!({ "name": "cli" }))).await;
    let key_token = key["token"].as_str().expect("token").to_owned();
    secrets.push(("person key (API)", key_token.clone()));
    let bot =
        call(Method::POST, "/bots", Some(&staff), Some(json!({ "name": "Bot", "handle": "bot" }))).await;
    let bot_token = bot["token"].as_str().expect("token").to_owned();
    secrets.push(("bot token", bot_token.clone()));
    let conn = call(
        Method::POST,
        "/connector_tokens",
        Some(&staff),
        Some(json!({ "person_id": boot["person_id"], "scope": "write" })),
    )
    .await;
    let conn_token = conn["token"].as_str().expect("token").to_owned();
    secrets.push(("connector token", conn_token.clone()));
    let invite = call(
        Method::POST,
        "/invites",
        Some(&staff),
        Some(json!({ "email": "grace@example.org", "name": "Grace", "channel_ids": [ch] })),
    )
    .await;
    let code = invite["code"].as_str().expect("code").to_owned();
    secrets.push(("invite code", code.clone()));
    let guest = call(Method::POST, &format!("/invites/{code}/accept"), None, None).await;
    let guest_token = guest["token"].as_str().expect("token").to_owned();
    secrets.push(("guest session", guest_token.clone()));
    for token in [&staff, &key_token, &conn_token, &guest_token] {
        call(Method::POST, &format!("/channels/{ch}/messages"), Some(token), Some(json!({ "body": "hi" })))
            .await;
    }
    call(Method::GET, "/events", Some(&bot_token), None).await;
    let ticket = call(Method::POST, "/stream_tickets", Some(&guest_token), None).await;
    let ticket_token = ticket["ticket"].as_str().expect("ticket").to_owned();
    secrets.push(("stream ticket", ticket_token.clone()));
    let mut req = tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(
        ticket["url"].as_str().expect("url"),
    )
    .expect("request");
    req.headers_mut().insert("Sec-WebSocket-Protocol", "actioncable-v1-json".parse().expect("header"));
    let (mut socket, _) = tokio_tungstenite::connect_async(req).await.expect("socket");
    let identifier = r#"{"channel":"EventsChannel"}"#;
    socket
        .send(Message::text(json!({ "command": "subscribe", "identifier": identifier }).to_string()))
        .await
        .expect("subscribe");
    // A used ticket, a wrong token: refused, and not logged either.
    let (mut reused, _) =
        tokio_tungstenite::connect_async(ticket["url"].as_str().expect("url")).await.expect("ws");
    let _ = reused.close(None).await;
    let wrong = format!("chs_{}", "Z".repeat(40));
    secrets.push(("a wrong token", wrong.clone()));
    let res = http.get(format!("{chat}/me")).bearer_auth(&wrong).send().await.expect("me");
    assert_eq!(res.status(), 401);
    let key_id = key["key"]["id"].as_str().expect("id");
    call(Method::DELETE, &format!("/keys/{key_id}"), Some(&staff), None).await;

    // Statistics: the configured admin token and a stored one (made by the admin command), each
    // on an admin route.
    let stored_token = admin_json(&db, &["stats-token"])["token"].as_str().expect("stats token").to_owned();
    secrets.push(("stored stats admin token", stored_token.clone()));
    for token in [&stats_admin, &stored_token] {
        let res = http.get(format!("{stats}/v1/sites")).bearer_auth(token).send().await.expect("sites");
        assert_eq!(res.status(), 200);
    }

    // Sign-up: a number texted a code through the fake Twilio, confirmed, then an inbound text.
    admin_json(&db, &["signup", "open"]);
    let phone_digits = "3125550234";
    secrets.push(("phone (E.164)", "+13125550234".into()));
    secrets.push(("phone (digits)", phone_digits.into()));
    secrets.push(("phone (as typed)", "(312) 555-0234".into()));
    secrets.push(("phone (local part)", "555-0234".into()));
    let res = http
        .post(format!("{signup}/api/signups"))
        .json(&json!({ "first_name": "Ada", "phone": "(312) 555-0234" }))
        .send()
        .await
        .expect("sign-up");
    assert_eq!(res.status(), 202);
    let started: Value = res.json().await.expect("json");
    let texts = fake.sent();
    assert_eq!(texts.len(), 1, "one text went out");
    let sms_code = code_in(&texts[0].2["Body"]);
    secrets.push(("texted code", sms_code.clone()));
    let confirm_url = started["confirm_url"].as_str().expect("confirm url");
    let res = http.post(confirm_url).form(&[("code", sms_code.as_str())]).send().await.expect("confirm");
    assert_eq!(res.status(), 200);
    let inbound = format!("{signup}/sms/inbound");
    let params = [("From", "+13125550234"), ("To", "+13125550000"), ("Body", "HELP"), ("MessageSid", "SM9")];
    let res = http
        .post(&inbound)
        .header("x-twilio-signature", twilio_signature(&twilio_token, &inbound, &params))
        .form(&params)
        .send()
        .await
        .expect("inbound");
    assert_eq!(res.status(), 200);
    drop(socket);

    // Stop the server (SIGTERM), then read what it logged and what it stored.
    let pid = server.id().to_string();
    assert!(std::process::Command::new("kill").args(["-TERM", &pid]).status().expect("kill").success());
    assert_eq!(server.wait().expect("wait").code(), Some(0));
    let logged = std::fs::read_to_string(&log_path).expect("log");
    assert!(logged.contains("DEBUG"), "the scenario ran at debug level");
    assert!(logged.lines().count() > 50, "the scenario logged: {} lines", logged.lines().count());
    for (what, secret) in &secrets {
        assert!(!logged.contains(secret.as_str()), "the log shows the {what}");
    }

    let store = agora_storage::Store::open(&crate::support::surrealkv(dir.path())).await.expect("store");
    let stored = store.dump_all_tables().await.expect("dump");
    store.close().await;
    assert!(stored.contains("credential") && stored.contains("signup"), "the dump covers the tables");
    // A control: what is not secret is found, so the search would find a secret stored the same way.
    assert!(stored.contains("ada@example.org") && stored.contains("grace@example.org"));
    for (what, secret) in &secrets {
        assert!(!stored.contains(secret.as_str()), "the store holds the {what} in clear");
    }
    // The engine's own files, byte for byte, too.
    let mut files = vec![dir.path().join("agora")];
    let mut control = false;
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(std::fs::read_dir(&path).expect("dir").map(|e| e.expect("entry").path()));
            continue;
        }
        let bytes = std::fs::read(&path).expect("file");
        control |= bytes.windows(15).any(|w| w == b"ada@example.org");
        for (what, secret) in &secrets {
            let found = bytes.windows(secret.len()).any(|w| w == secret.as_bytes());
            assert!(!found, "{} holds the {what}", path.display());
        }
    }
    assert!(control, "the engine's files hold plain text the search can find");
}
