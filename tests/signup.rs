//! The demo sign-up service, black-box: the real app on port 0 with `mem://` storage (or a
//! SurrealKV directory for restarts), a manual clock the tests move, and a fake Twilio on loopback.

use std::collections::{BTreeSet, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use agora::admin::AdminRequest;
use agora::settings::SmsSender;
use agora_storage::DbSettings;
use agora_storage::time::Clock;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};

use crate::support::{TestApp, spawn_app_with, surrealkv, test_args};

const MINUTE: i64 = 60_000;
const HOUR: i64 = 3_600_000;
/// 2026-01-15T06:00:00Z: midnight in Chicago (CST), a plain 24-hour day.
const JAN15: i64 = 1_768_456_800_000;
/// 2026-03-08T06:00:00Z: midnight in Chicago on the day clocks spring forward (a 23-hour day).
const MAR8: i64 = 1_772_949_600_000;
/// 2026-03-09T05:00:00Z: the next Chicago midnight, now in CDT.
const MAR9: i64 = 1_773_032_400_000;

async fn app_at(ms: i64) -> (TestApp, Clock) {
    let clock = Clock::manual(ms);
    let mut args = test_args();
    args.clock = clock.clone();
    (spawn_app_with(DbSettings::memory(), None, args).await, clock)
}

/// An admin command on the app's own store (a `mem://` app has no admin socket; the socket path is
/// exercised by the restart test, on SurrealKV).
async fn admin(app: &TestApp, request: AdminRequest) -> Value {
    if app.running().admin_socket.is_some() {
        return app.admin(request).await;
    }
    agora::admin::execute(&app.running().store, request).await.expect("admin command")
}

async fn set_open(app: &TestApp, open: bool) {
    admin(app, AdminRequest::SignupSetOpen { open }).await;
}

async fn outbox(app: &TestApp) -> Vec<Value> {
    let out = admin(app, AdminRequest::SignupOutbox { limit: 1000 }).await;
    out["texts"].as_array().cloned().expect("texts array")
}

/// A client whose requests come from `ip` (any 127.x.y.z is this machine).
fn client_from(ip: [u8; 4]) -> reqwest::Client {
    reqwest::Client::builder().local_address(IpAddr::from(ip)).build().expect("client")
}

async fn start(app: &TestApp, phone: &str) -> reqwest::Response {
    start_from(&app.signup.http, app, phone).await
}

async fn start_from(http: &reqwest::Client, app: &TestApp, phone: &str) -> reqwest::Response {
    http.post(app.signup.url("/api/signups"))
        .json(&json!({ "first_name": "Ada", "phone": phone }))
        .send()
        .await
        .expect("POST /api/signups")
}

pub(crate) fn code_in(body: &str) -> String {
    let at = body.find("code is ").expect("the text names the code") + "code is ".len();
    let code = &body[at..at + 6];
    assert!(code.bytes().all(|b| b.is_ascii_digit()), "{body}");
    code.to_owned()
}

/// Asserts a problem document with every field of signup.md, and returns it.
async fn problem(res: reqwest::Response, status: u16, code: &str) -> Value {
    assert_eq!(res.status().as_u16(), status, "status of {}", res.url());
    assert_eq!(res.headers()["content-type"], "application/problem+json");
    let base = format!("{}://{}", res.url().scheme(), res.url().authority());
    let path = res.url().path().to_owned();
    let p: Value = res.json().await.expect("problem json");
    for field in
        ["type", "title", "status", "detail", "instance", "code", "resolution", "docs", "error", "message"]
    {
        assert!(p.get(field).is_some_and(|v| !v.is_null()), "problem lacks {field}: {p}");
    }
    assert_eq!(p["status"], status);
    assert_eq!(p["code"], code);
    assert_eq!(p["error"], code);
    assert_eq!(p["message"], p["detail"]);
    assert_eq!(p["instance"], path);
    assert_eq!(p["type"], format!("{base}/developers#error-{code}"));
    assert_eq!(p["docs"], format!("{base}/developers#errors"));
    p
}

async fn status_of(app: &TestApp, status_url: &str) -> Value {
    let res = app.signup.http.get(status_url).send().await.expect("status");
    assert_eq!(res.status(), 200);
    res.json().await.expect("status json")
}

async fn submit_code(app: &TestApp, confirm_url: &str, code: &str) -> (u16, String) {
    let res = app.signup.http.post(confirm_url).form(&[("code", code)]).send().await.expect("confirm");
    (res.status().as_u16(), res.text().await.expect("page"))
}

#[tokio::test]
async fn a_sign_up_is_started_texted_and_confirmed() {
    let (app, _clock) = app_at(JAN15).await;
    set_open(&app, true).await;

    let res = start(&app, "(312) 555-0234").await;
    assert_eq!(res.status(), 202);
    assert_eq!(res.headers()["content-type"], "application/json");
    let location = res.headers()["location"].to_str().expect("location").to_owned();
    let body: Value = res.json().await.expect("json");
    let fields: BTreeSet<&str> = body.as_object().expect("object").keys().map(String::as_str).collect();
    assert_eq!(
        fields,
        BTreeSet::from([
            "status",
            "message",
            "person_must_confirm",
            "confirm_url",
            "status_url",
            "expires_in_minutes"
        ])
    );
    assert_eq!(body["status"], "pending");
    assert_eq!(body["expires_in_minutes"], 15);
    let confirm_url = body["confirm_url"].as_str().expect("confirm_url");
    let status_url = body["status_url"].as_str().expect("status_url");
    let public_id =
        confirm_url.strip_prefix(&format!("{}/signup/", app.signup.base)).expect("confirm_url form");
    assert_eq!(status_url, format!("{}/api/signups/{public_id}", app.signup.base));
    assert_eq!(location, status_url);
    assert_eq!(public_id.len(), 22, "128 bits in base64url");

    assert_eq!(status_of(&app, status_url).await, json!({ "status": "pending" }));

    let texts = outbox(&app).await;
    assert_eq!(texts.len(), 1);
    assert_eq!(texts[0]["public_id"], public_id);
    assert_eq!(texts[0]["to_last4"], "0234");
    assert_eq!(texts[0]["at"], "2026-01-15T06:00:00.000Z");
    let body = texts[0]["body"].as_str().expect("body");
    assert!(body.contains(confirm_url) && body.contains("STOP") && body.contains("HELP"), "{body}");
    let code = code_in(body);

    // The page shows the form; the right code confirms.
    let page = app.signup.get(&format!("/signup/{public_id}")).send().await.expect("page");
    assert_eq!(page.status(), 200);
    assert!(page.headers()["content-type"].to_str().expect("ct").starts_with("text/html"));
    let html = page.text().await.expect("html");
    assert!(html.contains("<label for=\"code\">") && html.contains("id=\"code\""), "{html}");
    let (status, html) = submit_code(&app, confirm_url, &code).await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains("Sign-up confirmed"), "{html}");
    assert_eq!(status_of(&app, status_url).await, json!({ "status": "confirmed" }));

    // Form fields work as well as JSON.
    let res = app
        .signup
        .post("/api/signups")
        .form(&[
            ("first_name", "José"),
            ("phone", "+1 312.555.0235"),
            ("reason", "curious about the preview"),
        ])
        .send()
        .await
        .expect("form post");
    assert_eq!(res.status(), 202);
    assert_eq!(outbox(&app).await.len(), 2);
    assert_eq!(outbox(&app).await[0]["to_last4"], "0235", "newest first");
    app.shutdown().await;
}

#[tokio::test]
async fn the_202_is_the_same_whether_or_not_a_text_goes_out() {
    let (app, _clock) = app_at(JAN15).await;
    // Closed demo: only the invited tester gets a text.
    admin(&app, AdminRequest::SignupInvite { phone: "312-555-0240".into(), key: None }).await;
    // 0243 opts out by texting STOP (the log sender checks no signature).
    let stop = app
        .signup
        .post("/sms/inbound")
        .form(&[("From", "+13125550243"), ("Body", "stop"), ("To", "+13125550000")])
        .send()
        .await
        .expect("inbound");
    assert_eq!(stop.status(), 200);
    assert!(stop.text().await.expect("twiml").contains("opted out"));

    // invited and texted; not invited; opted out (and invited); a tester over 3 texts a day.
    admin(&app, AdminRequest::SignupInvite { phone: "312-555-0243".into(), key: None }).await;
    admin(&app, AdminRequest::SignupInvite { phone: "312-555-0244".into(), key: None }).await;
    let busy = client_from([127, 0, 0, 9]);
    for _ in 0..3 {
        assert_eq!(start_from(&busy, &app, "3125550244").await.status(), 202);
    }
    assert_eq!(outbox(&app).await.len(), 3);

    let mut seen = Vec::new();
    for (i, phone) in ["3125550240", "3125550241", "3125550243", "3125550244"].iter().enumerate() {
        // Each from its own address, so the RateLimit header reads the same.
        let http = client_from([127, 0, 1, i as u8 + 1]);
        let res = start_from(&http, &app, phone).await;
        let status = res.status().as_u16();
        let mut headers: Vec<(String, String)> = res
            .headers()
            .iter()
            .filter(|(k, _)| *k != "date" && *k != "location")
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or_default().to_owned()))
            .collect();
        headers.sort();
        let mut body: Value = res.json().await.expect("json");
        let public_id = body["confirm_url"].as_str().expect("url").rsplit('/').next().expect("id").to_owned();
        for url in ["confirm_url", "status_url"] {
            let u = body[url].as_str().expect("url").replace(&public_id, "<id>");
            body[url] = Value::String(u);
        }
        seen.push((status, headers, body));
    }
    for other in &seen[1..] {
        assert_eq!(other, &seen[0], "the answer must not tell whether a text went out");
    }
    assert_eq!(seen[0].0, 202);
    let texts = outbox(&app).await;
    assert_eq!(texts.len(), 4, "only the invited tester under the limit got a text");
    assert_eq!(texts[0]["to_last4"], "0240");
    app.shutdown().await;
}

#[tokio::test]
async fn a_sign_up_expires_after_15_minutes() {
    let (app, clock) = app_at(JAN15).await;
    set_open(&app, true).await;
    let body: Value = start(&app, "3125550234").await.json().await.expect("json");
    let status_url = body["status_url"].as_str().expect("status_url").to_owned();
    let confirm_url = body["confirm_url"].as_str().expect("confirm_url").to_owned();
    let code = code_in(outbox(&app).await[0]["body"].as_str().expect("body"));

    clock.advance(15 * MINUTE - 1);
    assert_eq!(status_of(&app, &status_url).await["status"], "pending");
    clock.advance(1);
    assert_eq!(status_of(&app, &status_url).await["status"], "expired");
    let page = app.signup.http.get(&confirm_url).send().await.expect("page").text().await.expect("html");
    assert!(page.contains("This code has expired"), "{page}");
    let (status, html) = submit_code(&app, &confirm_url, &code).await;
    assert_eq!(status, 410);
    assert!(html.contains("This code has expired"), "{html}");
    assert_eq!(
        status_of(&app, &status_url).await["status"],
        "expired",
        "the right code too late confirms nothing"
    );
    app.shutdown().await;
}

#[tokio::test]
async fn three_wrong_codes_lock_the_sign_up_for_15_minutes() {
    let (app, clock) = app_at(JAN15).await;
    set_open(&app, true).await;
    let body: Value = start(&app, "3125550234").await.json().await.expect("json");
    let status_url = body["status_url"].as_str().expect("status_url").to_owned();
    let confirm_url = body["confirm_url"].as_str().expect("confirm_url").to_owned();
    let code = code_in(outbox(&app).await[0]["body"].as_str().expect("body"));
    let wrong = if code == "000000" { "111111" } else { "000000" };

    let (status, html) = submit_code(&app, &confirm_url, "12ab").await;
    assert_eq!(status, 422);
    assert!(html.contains("6 digits") && html.contains("role=\"alert\""), "a typo is explained: {html}");
    let (status, html) = submit_code(&app, &confirm_url, wrong).await;
    assert_eq!(status, 422);
    assert!(html.contains("2 more tries"), "the typo did not count: {html}");
    clock.advance(MINUTE);
    let (_, html) = submit_code(&app, &confirm_url, wrong).await;
    assert!(html.contains("1 more try"), "{html}");
    let (status, html) = submit_code(&app, &confirm_url, wrong).await;
    assert_eq!(status, 429);
    assert!(html.contains("Too many wrong codes") && html.contains("06:16 UTC"), "{html}");

    // Locked: even the right code does nothing, the status stays pending, and the page says until when.
    clock.advance(5 * MINUTE);
    let (status, html) = submit_code(&app, &confirm_url, &code).await;
    assert_eq!(status, 429);
    assert!(html.contains("in 10 minutes"), "{html}");
    assert_eq!(status_of(&app, &status_url).await["status"], "pending");
    let page = app.signup.http.get(&confirm_url).send().await.expect("page").text().await.expect("html");
    assert!(page.contains("You can try again after 06:16 UTC"), "{page}");
    app.shutdown().await;
}

#[tokio::test]
async fn ten_requests_an_hour_per_address_with_ratelimit_headers() {
    let (app, clock) = app_at(JAN15).await;
    for i in 0..10 {
        // Invalid requests count too: the limit guards the service, not the texts.
        let res = if i % 2 == 0 {
            start(&app, "3125550234").await
        } else {
            app.signup.post("/api/signups").json(&json!({ "first_name": "A1" })).send().await.expect("post")
        };
        assert!(res.status() == 202 || res.status() == 422, "{}", res.status());
        assert_eq!(res.headers()["ratelimit-policy"], "\"per-address\";q=10;w=3600");
        assert_eq!(
            res.headers()["ratelimit"],
            format!("\"per-address\";r={};t={}", 9 - i, 3600 - i).as_str()
        );
        clock.advance(1000);
    }
    let res = start(&app, "3125550234").await;
    assert_eq!(res.headers()["retry-after"], "3590");
    assert_eq!(res.headers()["ratelimit"], "\"per-address\";r=0;t=3590");
    assert_eq!(res.headers()["ratelimit-policy"], "\"per-address\";q=10;w=3600");
    problem(res, 429, "rate_limited").await;

    // A millisecond before the first request leaves the hour, then at the boundary.
    clock.set(JAN15 + HOUR - 1);
    let res = start(&app, "3125550234").await;
    assert_eq!(res.headers()["retry-after"], "1");
    problem(res, 429, "rate_limited").await;
    clock.set(JAN15 + HOUR);
    let res = start(&app, "3125550234").await;
    assert_eq!(res.status(), 202);
    assert_eq!(res.headers()["ratelimit"], "\"per-address\";r=0;t=1");
    // Another address was never limited.
    assert_eq!(start_from(&client_from([127, 0, 0, 2]), &app, "3125550234").await.status(), 202);
    app.shutdown().await;
}

#[tokio::test]
async fn five_hundred_requests_an_hour_from_everyone() {
    let (app, clock) = app_at(JAN15).await;
    let send = |http: reqwest::Client, url: String| async move {
        http.post(url).json(&json!({ "first_name": "" })).send().await.expect("post").status().as_u16()
    };
    for a in 0..50u8 {
        let http = client_from([127, 0, 2, a + 1]);
        let all =
            futures::future::join_all((0..10).map(|_| send(http.clone(), app.signup.url("/api/signups"))))
                .await;
        assert!(all.iter().all(|&s| s == 422), "address {a}: {all:?}");
    }
    clock.advance(10 * MINUTE);
    let res = start_from(&client_from([127, 0, 3, 1]), &app, "3125550234").await;
    assert_eq!(res.headers()["retry-after"], "3000");
    assert_eq!(res.headers()["ratelimit"], "\"per-address\";r=10;t=0", "not counted against the address");
    let p = problem(res, 429, "rate_limited").await;
    assert!(p["detail"].as_str().expect("detail").contains("500"), "{p}");
    clock.set(JAN15 + HOUR);
    assert_eq!(start_from(&client_from([127, 0, 3, 1]), &app, "3125550234").await.status(), 202);
    app.shutdown().await;
}

#[tokio::test]
async fn fifty_texts_a_chicago_day_then_demo_full_across_daylight_saving() {
    // 2026-03-08 08:00Z is 03:00 CDT, just after the clocks sprang forward.
    let (app, clock) = app_at(MAR8 + 2 * HOUR).await;
    set_open(&app, true).await;
    for n in 0..50u32 {
        let http = client_from([127, 0, 4, (n / 10) as u8 + 1]);
        let res = start_from(&http, &app, &format!("312555{:04}", 2000 + n)).await;
        assert_eq!(res.status(), 202, "sign-up {n}");
    }
    assert_eq!(outbox(&app).await.len(), 50);

    let res = start_from(&client_from([127, 0, 4, 9]), &app, "3125559999").await;
    // To 2026-03-09 00:00 CDT = 05:00Z: 21 hours, not 22.
    assert_eq!(res.headers()["retry-after"], (21 * 3600).to_string().as_str());
    assert!(res.headers().contains_key("ratelimit"));
    problem(res, 503, "demo_full").await;

    clock.set(MAR9 - 1000);
    let res = start_from(&client_from([127, 0, 4, 9]), &app, "3125559999").await;
    assert_eq!(res.headers()["retry-after"], "1");
    problem(res, 503, "demo_full").await;
    clock.set(MAR9);
    assert_eq!(start_from(&client_from([127, 0, 4, 9]), &app, "3125559999").await.status(), 202);
    assert_eq!(outbox(&app).await.len(), 51, "a new Chicago day, a new allowance");
    app.shutdown().await;
}

#[tokio::test]
async fn three_texts_a_day_per_number_and_the_counters_survive_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = Clock::manual(JAN15 + 13 * HOUR);
    let args = || {
        let mut a = test_args();
        a.clock = clock.clone();
        a
    };
    let first = spawn_app_with(surrealkv(dir.path()), None, args()).await;
    set_open(&first, true).await;
    for _ in 0..3 {
        assert_eq!(start(&first, "3125550234").await.status(), 202);
    }
    assert_eq!(outbox(&first).await.len(), 3);
    first.shutdown().await;

    let second = spawn_app_with(surrealkv(dir.path()), None, args()).await;
    assert_eq!(start(&second, "3125550234").await.status(), 202);
    assert_eq!(
        outbox(&second).await.len(),
        3,
        "the fourth text of the day is not sent, even after a restart"
    );
    // Another number still gets its text, and the next Chicago day the first one does again.
    assert_eq!(start(&second, "3125550235").await.status(), 202);
    assert_eq!(outbox(&second).await.len(), 4);
    clock.set(JAN15 + 24 * HOUR);
    assert_eq!(start(&second, "3125550234").await.status(), 202);
    assert_eq!(outbox(&second).await.len(), 5);
    second.shutdown().await;
}

#[tokio::test]
async fn records_older_than_7_days_are_swept() {
    let (app, clock) = app_at(JAN15).await;
    set_open(&app, true).await;
    let old: Value = start(&app, "3125550234").await.json().await.expect("json");
    let old_status = old["status_url"].as_str().expect("url").to_owned();
    clock.advance(7 * 24 * HOUR - 1);
    assert_eq!(app.signup.http.get(&old_status).send().await.expect("get").status(), 200);
    clock.advance(1);
    assert_eq!(start(&app, "3125550235").await.status(), 202);
    problem(app.signup.http.get(&old_status).send().await.expect("get"), 404, "not_found").await;
    let texts = outbox(&app).await;
    assert_eq!(texts.len(), 1, "the old text went with its sign-up");
    assert_eq!(texts[0]["to_last4"], "0235");
    app.shutdown().await;
}

/// One request the fake Twilio got: path, `Authorization` header, form fields.
pub(crate) type TwilioRequest = (String, Option<String>, HashMap<String, String>);

/// A fake Twilio Messages API on loopback that records what it was sent.
#[derive(Clone, Default)]
pub(crate) struct FakeTwilio {
    got: Arc<Mutex<Vec<TwilioRequest>>>,
}

impl FakeTwilio {
    pub(crate) async fn start(&self) -> String {
        let me = self.clone();
        let router = axum::Router::new().route(
            "/2010-04-01/Accounts/{sid}/Messages.json",
            axum::routing::post(
                move |uri: axum::http::Uri,
                      headers: axum::http::HeaderMap,
                      axum::extract::Form(form): axum::extract::Form<HashMap<String, String>>| async move {
                    let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned);
                    me.got.lock().expect("lock").push((uri.path().to_owned(), auth, form));
                    (axum::http::StatusCode::CREATED, axum::Json(json!({ "sid": "SM123", "status": "queued" })))
                },
            ),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr: SocketAddr = listener.local_addr().expect("addr");
        tokio::spawn(async move { axum::serve(listener, router).await });
        format!("http://{addr}")
    }

    pub(crate) fn sent(&self) -> Vec<TwilioRequest> {
        self.got.lock().expect("lock").clone()
    }
}

pub(crate) fn twilio_signature(token: &str, url: &str, params: &[(&str, &str)]) -> String {
    let mut sorted = params.to_vec();
    sorted.sort();
    let mut data = url.to_owned();
    for (k, v) in sorted {
        data.push_str(k);
        data.push_str(v);
    }
    let mut mac = Hmac::<sha1::Sha1>::new_from_slice(token.as_bytes()).expect("key");
    mac.update(data.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

#[tokio::test]
async fn texts_go_through_twilio_and_its_signed_webhook_handles_stop_start_and_help() {
    let fake = FakeTwilio::default();
    let twilio_url = fake.start().await;
    let mut args = test_args();
    args.clock = Clock::manual(JAN15);
    args.sms = SmsSender::Twilio;
    args.twilio_base_url = twilio_url;
    args.twilio_account_sid = Some("ACtest".into());
    args.twilio_auth_token = Some("secret-token".into());
    args.twilio_from = Some("+13125550000".into());
    let app = spawn_app_with(DbSettings::memory(), None, args).await;
    set_open(&app, true).await;

    let body: Value = start(&app, "312 555 0234").await.json().await.expect("json");
    let sent = fake.sent();
    assert_eq!(sent.len(), 1);
    let (path, auth, form) = &sent[0];
    assert_eq!(path, "/2010-04-01/Accounts/ACtest/Messages.json");
    let basic = base64::engine::general_purpose::STANDARD.encode("ACtest:secret-token");
    assert_eq!(auth.as_deref(), Some(format!("Basic {basic}").as_str()));
    assert_eq!(form["To"], "+13125550234");
    assert_eq!(form["From"], "+13125550000");
    assert!(outbox(&app).await.is_empty(), "the log outbox is not used with Twilio");
    let code = code_in(&form["Body"]);
    let (status, _) = submit_code(&app, body["confirm_url"].as_str().expect("url"), &code).await;
    assert_eq!(status, 200);

    let inbound = app.signup.url("/sms/inbound");
    let stop = [("From", "+13125550234"), ("To", "+13125550000"), ("Body", "STOP"), ("MessageSid", "SM1")];
    // Unsigned or wrongly signed: refused, and the number is not opted out.
    let res = app.signup.http.post(&inbound).form(&stop).send().await.expect("inbound");
    problem(res, 403, "forbidden").await;
    let res = app
        .signup
        .http
        .post(&inbound)
        .header("x-twilio-signature", twilio_signature("wrong-token", &inbound, &stop))
        .form(&stop)
        .send()
        .await
        .expect("inbound");
    problem(res, 403, "forbidden").await;
    assert_eq!(start(&app, "3125550234").await.status(), 202);
    assert_eq!(fake.sent().len(), 2);

    let signed = |params: [(&'static str, &'static str); 4]| {
        let sig = twilio_signature("secret-token", &inbound, &params);
        app.signup.http.post(&inbound).header("x-twilio-signature", sig).form(&params).send()
    };
    let res = signed(stop).await.expect("inbound");
    assert_eq!(res.status(), 200);
    assert!(res.headers()["content-type"].to_str().expect("ct").starts_with("text/xml"));
    assert!(res.text().await.expect("twiml").contains("<Message>agora demo: you are opted out"));
    assert_eq!(start(&app, "3125550234").await.status(), 202);
    assert_eq!(fake.sent().len(), 2, "an opted-out number never gets a text");

    let help =
        signed([("From", "+13125550234"), ("To", "+13125550000"), ("Body", "help"), ("MessageSid", "SM2")]);
    let twiml = help.await.expect("help").text().await.expect("twiml");
    assert!(twiml.contains("911") && twiml.contains("STOP"), "{twiml}");

    let res =
        signed([("From", "+13125550234"), ("To", "+13125550000"), ("Body", "Start"), ("MessageSid", "SM3")]);
    assert_eq!(res.await.expect("start").status(), 200);
    assert_eq!(start(&app, "3125550234").await.status(), 202);
    assert_eq!(fake.sent().len(), 3, "opted back in");
    app.shutdown().await;
}

#[tokio::test]
async fn every_error_is_a_problem_document() {
    let (app, _clock) = app_at(JAN15).await;
    let s = &app.signup;
    let html = "text/html,application/xhtml+xml";

    let res = s.delete("/api/signups").header("accept", html).send().await.expect("delete");
    assert_eq!(res.headers()["allow"], "POST");
    problem(res, 405, "method_not_allowed").await;
    let res = s.get("/api/signups").send().await.expect("get");
    assert_eq!(res.headers()["allow"], "POST");
    problem(res, 405, "method_not_allowed").await;
    let res = s.post("/api/signups/AAAAAAAAAAAAAAAAAAAAAA").send().await.expect("post");
    assert!(res.headers()["allow"].to_str().expect("allow").contains("GET"));
    problem(res, 405, "method_not_allowed").await;
    problem(s.get("/api/records").header("accept", html).send().await.expect("get"), 404, "not_found").await;
    problem(s.get("/api/signups/a/b").send().await.expect("get"), 404, "not_found").await;
    problem(s.get("/api/signups/AAAAAAAAAAAAAAAAAAAAAA").send().await.expect("get"), 404, "not_found").await;
    problem(s.get("/api/signups/not-an-id").send().await.expect("get"), 404, "not_found").await;
    problem(s.get("/api/signups/%FF%FE").send().await.expect("get"), 404, "not_found").await;

    let bad_json = s.post("/api/signups").header("content-type", "application/json").body("{\"first_name\":");
    let p = problem(bad_json.send().await.expect("post"), 400, "bad_request").await;
    assert!(p["resolution"].as_str().expect("resolution").contains("application/json"));
    let p = problem(
        s.post("/api/signups")
            .json(&json!({ "first_name": "Ada", "phone": "312-555-023" }))
            .send()
            .await
            .expect("post"),
        422,
        "invalid_request",
    )
    .await;
    assert!(p["detail"].as_str().expect("detail").contains("phone"), "{p}");
    let p = problem(
        s.post("/api/signups")
            .json(&json!({ "first_name": "Ada", "phone": "3125550234", "symptoms": "cough" }))
            .send()
            .await
            .expect("post"),
        422,
        "invalid_request",
    )
    .await;
    assert!(p["detail"].as_str().expect("detail").contains("symptoms"), "{p}");
    let p = problem(
        s.post("/api/signups")
            .json(&json!({ "first_name": "A".repeat(41), "phone": "3125550234" }))
            .send()
            .await
            .expect("post"),
        422,
        "invalid_request",
    )
    .await;
    assert!(p["detail"].as_str().expect("detail").contains("first_name"), "{p}");
    let big = "x".repeat(20_000);
    problem(
        s.post("/api/signups").json(&json!({ "first_name": big })).send().await.expect("post"),
        413,
        "payload_too_large",
    )
    .await;

    let page = s.get("/signup/AAAAAAAAAAAAAAAAAAAAAA").send().await.expect("page");
    assert_eq!(page.status(), 404);
    assert!(page.headers()["content-type"].to_str().expect("ct").starts_with("text/html"));
    assert!(page.text().await.expect("html").contains("Sign-up not found"));

    // Nothing above was stored or texted.
    assert!(outbox(&app).await.is_empty());
    app.shutdown().await;
}

/// Every `$ref` in `doc` resolves to a node of `root`.
fn check_refs(root: &Value, node: &Value, count: &mut usize) {
    match node {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get("$ref") {
                let pointer = r.strip_prefix('#').expect("local ref");
                assert!(root.pointer(pointer).is_some(), "unresolved $ref {r}");
                *count += 1;
            }
            map.values().for_each(|v| check_refs(root, v, count));
        }
        Value::Array(items) => items.iter().for_each(|v| check_refs(root, v, count)),
        _ => {}
    }
}

#[tokio::test]
async fn the_api_is_published_and_the_openapi_document_is_valid() {
    let (app, _clock) = app_at(JAN15).await;
    let s = &app.signup;
    let base = &s.base;

    let res = s.get("/openapi.json").send().await.expect("openapi");
    assert_eq!(res.status(), 200);
    let doc: Value = res.json().await.expect("json");
    assert!(doc["openapi"].as_str().expect("version").starts_with("3.1"));
    assert_eq!(doc["info"]["version"], "1.0.0");
    assert_eq!(doc["servers"][0]["url"], base.as_str());
    let mut refs = 0;
    check_refs(&doc, &doc, &mut refs);
    assert!(refs > 10, "the document uses its components ({refs} refs)");

    // Every route of the router, with the spec's operationIds where the spec names them.
    let routes = [
        ("get", "/api", Some("getApiIndex")),
        ("post", "/api/signups", Some("startDemoSignup")),
        ("get", "/api/signups/{public_id}", Some("getDemoSignupStatus")),
        ("get", "/signup/{public_id}", None),
        ("post", "/signup/{public_id}", None),
        ("post", "/sms/inbound", None),
        ("get", "/openapi.json", None),
        ("get", "/openapi.yaml", None),
        ("get", "/.well-known/api-catalog", None),
        ("head", "/.well-known/api-catalog", None),
        ("get", "/llms.txt", None),
        ("get", "/agents.md", None),
        ("get", "/developers", None),
    ];
    let paths = doc["paths"].as_object().expect("paths");
    let mut documented = BTreeSet::new();
    for (path, item) in paths {
        for (method, op) in item.as_object().expect("path item") {
            documented.insert((method.clone(), path.clone()));
            assert!(op["operationId"].is_string(), "{method} {path} has no operationId");
        }
    }
    let expected: BTreeSet<(String, String)> =
        routes.iter().map(|(m, p, _)| (m.to_string(), p.to_string())).collect();
    assert_eq!(documented, expected, "the description and the router list the same routes");
    for (method, path, id) in routes {
        if let Some(id) = id {
            assert_eq!(paths[path][method]["operationId"], id, "{method} {path}");
        }
    }
    let ids: Vec<&str> = paths
        .values()
        .flat_map(|i| i.as_object().expect("item").values())
        .filter_map(|o| o["operationId"].as_str())
        .collect();
    assert_eq!(ids.len(), ids.iter().collect::<BTreeSet<_>>().len(), "operationIds are unique");

    // Every documented route answers (none is a 404 or 405 of the router).
    set_open(&app, true).await;
    let created: Value = start(&app, "3125550234").await.json().await.expect("json");
    let public_id = created["confirm_url"].as_str().expect("url").rsplit('/').next().expect("id").to_owned();
    for (method, path, _) in routes {
        let url = s.url(&path.replace("{public_id}", &public_id));
        let req = match method {
            "get" => s.http.get(&url),
            "head" => s.http.head(&url),
            _ => s.http.post(&url).form(&[("code", "000000")]),
        };
        let status = req.send().await.expect("request").status().as_u16();
        assert!(status != 404 && status != 405, "{method} {path} answered {status}");
    }

    // The YAML is the same document.
    let yaml = s.get("/openapi.yaml").send().await.expect("yaml");
    assert!(yaml.headers()["content-type"].to_str().expect("ct").contains("yaml"));
    let from_yaml: Value = serde_norway::from_str(&yaml.text().await.expect("text")).expect("valid YAML");
    assert_eq!(from_yaml, doc);

    // The API catalog (RFC 9727), and its Link header on HEAD.
    let catalog = s.get("/.well-known/api-catalog").send().await.expect("catalog");
    assert!(catalog.headers()["content-type"].to_str().expect("ct").starts_with("application/linkset+json"));
    let linkset: Value = catalog.json().await.expect("json");
    assert_eq!(linkset["linkset"][0]["service-desc"][0]["href"], format!("{base}/openapi.json"));
    let head = s.http.head(s.url("/.well-known/api-catalog")).send().await.expect("head");
    assert_eq!(head.status(), 200);
    assert_eq!(
        head.headers()["link"],
        format!("<{base}/.well-known/api-catalog>; rel=\"api-catalog\"").as_str()
    );

    let index: Value = s.get("/api").send().await.expect("index").json().await.expect("json");
    let listed: BTreeSet<&str> = index["endpoints"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|e| e["operationId"].as_str())
        .collect();
    assert_eq!(listed, BTreeSet::from(["getApiIndex", "startDemoSignup", "getDemoSignupStatus"]));
    assert_eq!(index["links"]["openapi"], format!("{base}/openapi.json"));
    assert_eq!(index["links"]["docs"], format!("{base}/developers"));

    let llms = s.get("/llms.txt").send().await.expect("llms").text().await.expect("text");
    assert!(llms.starts_with("# agora demo sign-up API\n\n> "), "{llms}");
    assert!(llms.contains(&format!("({base}/openapi.json)")));
    let agents = s.get("/agents.md").send().await.expect("agents").text().await.expect("text");
    assert!(agents.contains("Never ask for, read, relay or type the code"));

    // The developers page carries every anchor a problem points to, in HTML; Markdown on request.
    let page = s.get("/developers").header("accept", "text/html").send().await.expect("page");
    assert_eq!(page.headers()["vary"], "Accept");
    assert!(page.headers()["content-type"].to_str().expect("ct").starts_with("text/html"));
    let html = page.text().await.expect("html");
    let codes = doc["components"]["schemas"]["Problem"]["properties"]["code"]["enum"]
        .as_array()
        .expect("codes")
        .clone();
    assert!(codes.len() >= 7);
    assert!(html.contains("id=\"errors\""));
    for code in &codes {
        let code = code.as_str().expect("code");
        assert!(html.contains(&format!("id=\"error-{code}\"")), "no anchor for {code}");
    }
    let md = s.get("/developers").header("accept", "text/markdown").send().await.expect("md");
    assert!(md.headers()["content-type"].to_str().expect("ct").starts_with("text/markdown"));
    let md = md.text().await.expect("text");
    assert!(md.starts_with("# agora demo sign-up API"));
    assert!(md.contains("{#error-demo_full}"));
    app.shutdown().await;
}

/// Runs `node tests/js/signup_confirm.mjs` and returns what it printed (one JSON object).
fn run_browser(args: &[&str]) -> Value {
    let shots = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("signup-screenshots");
    std::fs::create_dir_all(&shots).expect("screenshot dir");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/js/signup_confirm.mjs");
    let out = std::process::Command::new("node")
        .arg(script)
        .arg(&shots)
        .args(args)
        .output()
        .expect("run node (is Node installed?)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "browser script failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or_default()).expect("the script prints JSON")
}

#[tokio::test]
async fn the_confirm_page_works_in_a_real_browser() {
    let (app, clock) = app_at(JAN15).await;
    set_open(&app, true).await;
    let mut started = Vec::new();
    for phone in ["3125550234", "3125550235", "3125550236"] {
        let body: Value = start(&app, phone).await.json().await.expect("json");
        let texts = outbox(&app).await;
        started.push((
            body["confirm_url"].as_str().expect("url").to_owned(),
            code_in(texts[0]["body"].as_str().expect("body")),
        ));
    }
    let wrong = |code: &str| if code == "000000" { "111111".to_owned() } else { "000000".to_owned() };

    // One wrong code, then the right one.
    let (url, code) = &started[0];
    let seen = tokio::task::spawn_blocking({
        let (url, code, w) = (url.clone(), code.clone(), wrong(code));
        move || run_browser(&["confirm", &url, &w, &code])
    })
    .await
    .expect("browser");
    assert_eq!(seen["label"], "Test code", "{seen}");
    assert!(seen["after_wrong"].as_str().expect("text").contains("not right"), "{seen}");
    assert_eq!(seen["invalid"], "true", "{seen}");
    assert!(seen["after_right"].as_str().expect("text").contains("Sign-up confirmed"), "{seen}");
    let status = app.signup.http.get(url.replace("/signup/", "/api/signups/")).send().await.expect("status");
    assert_eq!(status.json::<Value>().await.expect("json")["status"], "confirmed");

    // Three wrong codes lock it.
    let (url, code) = &started[1];
    let seen = tokio::task::spawn_blocking({
        let (url, w) = (url.clone(), wrong(code));
        move || run_browser(&["lock", &url, &w])
    })
    .await
    .expect("browser");
    assert!(seen["heading"].as_str().expect("h1").contains("Too many wrong codes"), "{seen}");
    assert!(seen["text"].as_str().expect("text").contains("try again after"), "{seen}");

    // Expired says so.
    clock.advance(15 * MINUTE);
    let (url, _) = &started[2];
    let seen = tokio::task::spawn_blocking({
        let url = url.clone();
        move || run_browser(&["view", &url])
    })
    .await
    .expect("browser");
    assert_eq!(seen["heading"], "This code has expired", "{seen}");
    app.shutdown().await;
}
