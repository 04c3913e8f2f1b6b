//! The statistics service, black-box: the real app on port 0 with `mem://` storage, talking to
//! tracked sites that are real HTTP servers on loopback whose answers each test controls.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agora::admin::AdminRequest;
use agora_storage::DbSettings;
use agora_storage::time::{Clock, parse_rfc3339, rfc3339};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::Mutex;

use crate::support::{ServiceClient, TestApp, spawn_app_with, test_args};

const ADMIN: &str = "test-admin-token";

/// What the fake tracked site answers next.
#[derive(Clone)]
enum Answer {
    Json(Value),
    Status(u16),
    Text(&'static str),
    /// Waits this long before answering.
    Slow(Duration),
    /// A valid JSON object of this many bytes.
    Huge(usize),
}

/// A tracked site on loopback: it answers what the test last set, and counts requests.
#[derive(Clone)]
struct FakeSite {
    url: String,
    answer: Arc<Mutex<Answer>>,
    hits: Arc<AtomicUsize>,
}

impl FakeSite {
    async fn start(first: Answer) -> FakeSite {
        let answer = Arc::new(Mutex::new(first));
        let hits = Arc::new(AtomicUsize::new(0));
        async fn serve(State((answer, hits)): State<(Arc<Mutex<Answer>>, Arc<AtomicUsize>)>) -> Response {
            hits.fetch_add(1, Ordering::SeqCst);
            let a = answer.lock().await.clone();
            match a {
                Answer::Json(v) => axum::Json(v).into_response(),
                Answer::Status(s) => {
                    (axum::http::StatusCode::from_u16(s).expect("status"), "upstream trouble").into_response()
                }
                Answer::Text(t) => t.into_response(),
                Answer::Slow(d) => {
                    tokio::time::sleep(d).await;
                    axum::Json(json!({ "late": 1 })).into_response()
                }
                Answer::Huge(n) => {
                    let body = format!("{{\"pad\":\"{}\",\"x\":1}}", "a".repeat(n));
                    ([("content-type", "application/json")], body).into_response()
                }
            }
        }
        let app = axum::Router::new()
            .route("/stats", axum::routing::get(serve))
            .with_state((answer.clone(), hits.clone()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind fake site");
        let url = format!("http://{}/stats", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeSite { url, answer, hits }
    }

    async fn set(&self, a: Answer) {
        *self.answer.lock().await = a;
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

/// 2024-05-01T00:00:00Z.
const T0: i64 = 1_714_521_600_000;
const MIN: i64 = 60_000;
const HOUR: i64 = 3_600_000;

async fn app_with_clock(clock: &Clock) -> TestApp {
    let mut args = test_args();
    args.services = vec![agora::settings::Service::Stats];
    args.stats_admin_token = Some(ADMIN.into());
    args.clock = clock.clone();
    spawn_app_with(DbSettings::memory(), None, args).await
}

fn admin(req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    req.bearer_auth(ADMIN)
}

async fn json_of(res: reqwest::Response, status: u16) -> Value {
    let got = res.status().as_u16();
    let text = res.text().await.expect("body");
    assert_eq!(got, status, "{text}");
    serde_json::from_str(&text).expect("json body")
}

/// Asserts a problem document with this status and code.
async fn problem(res: reqwest::Response, status: u16, code: &str) -> Value {
    assert_eq!(res.headers()["content-type"], "application/problem+json");
    let p = json_of(res, status).await;
    assert_eq!(p["code"], code, "{p}");
    assert_eq!(p["status"], status);
    assert!(p["detail"].as_str().is_some_and(|d| !d.is_empty()), "{p}");
    p
}

async fn create(stats: &ServiceClient, body: Value) -> Value {
    json_of(admin(stats.post("/v1/sites")).json(&body).send().await.expect("create"), 201).await
}

async fn fetch_now(stats: &ServiceClient, slug: &str) -> Value {
    json_of(admin(stats.post(&format!("/v1/sites/{slug}/fetch"))).send().await.expect("fetch"), 200).await
}

async fn fetch_log(stats: &ServiceClient, slug: &str) -> Vec<Value> {
    let log =
        json_of(stats.get(&format!("/v1/fetches?site={slug}&last=1000")).send().await.expect("log"), 200)
            .await;
    log["fetches"].as_array().expect("fetches").clone()
}

/// Waits (polling, up to 10 s) until the site's fetch log has at least `n` entries.
async fn wait_for_fetches(stats: &ServiceClient, slug: &str, n: usize) -> Vec<Value> {
    for _ in 0..200 {
        let log = fetch_log(stats, slug).await;
        if log.len() >= n {
            return log;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the site {slug} was not fetched {n} times");
}

#[tokio::test]
async fn description_health_and_openapi() {
    let clock = Clock::manual(T0);
    let app = app_with_clock(&clock).await;
    let root = json_of(app.stats.get("/").send().await.expect("/"), 200).await;
    let v1 = json_of(app.stats.get("/v1").send().await.expect("/v1"), 200).await;
    assert_eq!(root, v1);
    assert_eq!(root["name"], "stats");
    assert!(root["freshness"].as_str().is_some_and(|f| f.contains("as_of") && f.contains("checked_at")));
    let endpoints = root["endpoints"].as_object().expect("endpoints");
    for op in [
        "GET /v1/series",
        "GET /v1/snapshot",
        "POST /v1/sites/{slug}/fetch",
        "DELETE /v1/sites/{slug}?confirm={slug}",
    ] {
        assert!(endpoints.contains_key(op), "{op}");
    }
    let up = app.stats.get("/up").send().await.expect("up");
    assert_eq!(up.text().await.expect("text"), "ok");
    let doc = json_of(app.stats.get("/openapi.json").send().await.expect("openapi"), 200).await;
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["servers"][0]["url"], app.stats.base);
    assert!(doc["paths"]["/v1/series"]["get"]["parameters"].as_array().is_some_and(|p| p.len() == 8));
    app.shutdown().await;
}

#[tokio::test]
async fn admin_operations_need_the_token() {
    let clock = Clock::manual(T0);
    let app = app_with_clock(&clock).await;
    let body = json!({ "slug": "a", "name": "A", "url": "http://127.0.0.1:9/stats", "enabled": false });
    let s = &app.stats;
    let p = problem(s.post("/v1/sites").json(&body).send().await.expect("post"), 401, "unauthorized").await;
    assert_eq!(p["instance"], "/v1/sites");
    problem(
        s.post("/v1/sites").bearer_auth("wrong").json(&body).send().await.expect("post"),
        401,
        "unauthorized",
    )
    .await;
    problem(
        s.patch("/v1/sites/a").json(&json!({"enabled": true})).send().await.expect("patch"),
        401,
        "unauthorized",
    )
    .await;
    problem(s.delete("/v1/sites/a?confirm=a").send().await.expect("delete"), 401, "unauthorized").await;
    problem(s.post("/v1/sites/a/fetch").send().await.expect("fetch"), 401, "unauthorized").await;
    // Nothing was created by the refused requests.
    let sites = json_of(s.get("/v1/sites").send().await.expect("sites"), 200).await;
    assert_eq!(sites["sites"], json!([]));

    // A token made by `agora admin stats-token` works as well as the configured one.
    // (The admin command's own code, run on this app's store: a `mem://` app has no admin socket.)
    let made =
        agora::admin::execute(&app.running().store, AdminRequest::StatsToken).await.expect("stats-token");
    let token = made["token"].as_str().expect("token").to_owned();
    let res = s.post("/v1/sites").bearer_auth(&token).json(&body).send().await.expect("post");
    let site = json_of(res, 201).await;
    assert_eq!(site["slug"], "a");
    assert_eq!((site["interval"].as_str(), site["timeout"].as_str()), (Some("15m"), Some("10s")));
    assert_eq!(site["metrics"], Value::Null);
    assert_eq!((site["as_of"].clone(), site["checked_at"].clone()), (Value::Null, Value::Null));
    problem(admin(s.post("/v1/sites")).json(&body).send().await.expect("again"), 409, "site_exists").await;
    // A disabled site is not fetched on request.
    problem(admin(s.post("/v1/sites/a/fetch")).send().await.expect("fetch"), 409, "site_disabled").await;
    problem(admin(s.post("/v1/sites/zz/fetch")).send().await.expect("fetch"), 404, "site_not_found").await;
    // Bad bodies.
    let bad = json!({ "slug": "b", "name": "B", "url": "ftp://x", "colour": "red" });
    problem(admin(s.post("/v1/sites")).json(&bad).send().await.expect("bad"), 422, "unknown_field").await;
    let bad = json!({ "slug": "b", "name": "B", "url": "ftp://x" });
    let p =
        problem(admin(s.post("/v1/sites")).json(&bad).send().await.expect("bad"), 422, "invalid_field").await;
    assert!(p["detail"].as_str().is_some_and(|d| d.contains("url")), "{p}");
    problem(
        admin(s.patch("/v1/sites/a")).json(&json!({ "interval": "1x" })).send().await.expect("bad"),
        422,
        "invalid_field",
    )
    .await;
    problem(
        admin(s.patch("/v1/sites/nope")).json(&json!({ "enabled": true })).send().await.expect("patch"),
        404,
        "site_not_found",
    )
    .await;
    app.shutdown().await;
}

#[tokio::test]
async fn fetches_write_points_only_on_change_and_keep_freshness() {
    let clock = Clock::manual(T0 + 10 * MIN);
    let app = app_with_clock(&clock).await;
    let s = &app.stats;
    let site = FakeSite::start(Answer::Json(json!({
        "as_of": "2024-05-01T00:05:00Z",
        "metrics": { "users": 10, "ratio": 0.5, "label": "not a number" },
    })))
    .await;
    create(s, json!({ "slug": "shop", "name": "Shop", "url": site.url, "interval": "1h", "timeout": "2s" }))
        .await;
    // Created enabled: its fetcher runs once at once, then waits an hour.
    let log = wait_for_fetches(s, "shop", 1).await;
    assert_eq!(log[0]["ok"], true, "{}", log[0]);
    assert_eq!((log[0]["metrics_seen"].as_u64(), log[0]["points_written"].as_u64()), (Some(2), Some(2)));
    assert_eq!(log[0]["http_status"], 200);

    // The same numbers again, later: confirmed (checked_at moves), no new point, as_of stays.
    clock.advance(5 * MIN);
    let e = fetch_now(s, "shop").await;
    assert_eq!((e["ok"].as_bool(), e["points_written"].as_u64()), (Some(true), Some(0)), "{e}");
    assert_eq!(e["started_at"], rfc3339(T0 + 15 * MIN));
    let snap = json_of(s.get("/v1/snapshot").send().await.expect("snapshot"), 200).await;
    let shop = &snap["sites"][0];
    assert_eq!(shop["slug"], "shop");
    assert_eq!(shop["as_of"], "2024-05-01T00:05:00.000Z");
    assert_eq!(shop["checked_at"], "2024-05-01T00:15:00.000Z");
    assert_eq!(shop["metrics"]["users"]["value"], 10.0);
    assert_eq!(shop["metrics"]["users"]["as_of"], "2024-05-01T00:05:00.000Z");
    assert_eq!(shop["metrics"]["users"]["checked_at"], "2024-05-01T00:15:00.000Z");
    assert!(shop["metrics"].get("label").is_none(), "a value that is not a number is ignored");
    let spark = shop["metrics"]["users"]["spark"].as_array().expect("spark");
    assert_eq!(spark.len(), 90);
    assert_eq!(spark[89], 10.0);
    assert_eq!(spark[88], Value::Null);

    // One value changes, as_of moves: a point for each metric (ratio's as_of changed too).
    site.set(Answer::Json(
        json!({ "as_of": "2024-05-01T00:20:00Z", "metrics": { "users": 12, "ratio": 0.5 } }),
    ))
    .await;
    clock.advance(10 * MIN);
    let e = fetch_now(s, "shop").await;
    assert_eq!(e["points_written"], 2);

    // The flat form without as_of: the fetch time is the as_of; only the changed value is new.
    site.set(Answer::Json(json!({ "users": 12, "ratio": 0.75 }))).await;
    clock.advance(10 * MIN);
    let e = fetch_now(s, "shop").await;
    assert_eq!((e["metrics_seen"].as_u64(), e["points_written"].as_u64()), (Some(2), Some(2)));
    // users: its value did not change but its as_of (now the fetch time) did.
    let sites = json_of(s.get("/v1/sites").send().await.expect("sites"), 200).await;
    let listed = &sites["sites"][0];
    assert_eq!(listed["as_of"], "2024-05-01T00:35:00.000Z");
    assert_eq!(listed["checked_at"], "2024-05-01T00:35:00.000Z");
    assert_eq!(listed["last_fetch"]["ok"], true);

    // The points, as a user reads them: every point in 5-minute buckets, no fill.
    let q = "/v1/series?site=shop&metrics=users,ratio&from=2024-05-01T00:00:00Z&to=2024-05-01T01:00:00Z&every=5m&agg=last&fill=none";
    let series = json_of(s.get(q).send().await.expect("series"), 200).await;
    assert_eq!(series["every"], "5m");
    assert_eq!(series["from"], "2024-05-01T00:00:00.000Z");
    let points = |metric: &str| -> Vec<(String, Value)> {
        let one = series["series"]
            .as_array()
            .expect("series")
            .iter()
            .find(|x| x["metric"] == metric)
            .expect("metric");
        one["points"]
            .as_array()
            .expect("points")
            .iter()
            .map(|p| (p["t"].as_str().expect("t").to_owned(), p["v"].clone()))
            .collect()
    };
    assert_eq!(
        points("users"),
        vec![
            ("2024-05-01T00:05:00.000Z".to_owned(), json!(10.0)),
            ("2024-05-01T00:20:00.000Z".to_owned(), json!(12.0)),
            ("2024-05-01T00:35:00.000Z".to_owned(), json!(12.0)),
        ]
    );
    assert_eq!(points("ratio").len(), 3);
    app.shutdown().await;
}

#[tokio::test]
async fn failed_fetches_are_logged_and_change_no_data() {
    let clock = Clock::manual(T0);
    let app = app_with_clock(&clock).await;
    let s = &app.stats;
    let site = FakeSite::start(Answer::Json(json!({ "users": 7 }))).await;
    create(
        s,
        json!({ "slug": "flaky", "name": "Flaky", "url": site.url, "interval": "1h", "timeout": "1s" }),
    )
    .await;
    wait_for_fetches(s, "flaky", 1).await;

    let cases = [
        (Answer::Status(503), Some(503u64), "HTTP 503"),
        (Answer::Text("<html>oops</html>"), Some(200), "not JSON"),
        (Answer::Json(json!([1, 2, 3])), Some(200), "not a JSON object"),
        (Answer::Json(json!({ "as_of": "last tuesday", "metrics": { "users": 1 } })), Some(200), "RFC 3339"),
        (Answer::Huge(2 * 1024 * 1024), Some(200), "larger than 1 MiB"),
        (Answer::Slow(Duration::from_secs(3)), None, "timed out"),
    ];
    for (answer, status, error) in cases {
        site.set(answer).await;
        clock.advance(MIN);
        let e = fetch_now(s, "flaky").await;
        assert_eq!(e["ok"], false, "{e}");
        assert_eq!(e["http_status"].as_u64(), status, "{e}");
        assert!(e["error"].as_str().is_some_and(|m| m.contains(error)), "{error}: {e}");
        assert_eq!(e["points_written"], 0);
    }
    // A big answer under the cap is fine.
    site.set(Answer::Huge(900 * 1024)).await;
    let e = fetch_now(s, "flaky").await;
    assert_eq!((e["ok"].as_bool(), e["metrics_seen"].as_u64()), (Some(true), Some(1)), "{e}");

    let log = fetch_log(s, "flaky").await;
    assert_eq!(log.len(), 8);
    let times: Vec<i64> =
        log.iter().map(|e| parse_rfc3339(e["started_at"].as_str().expect("t")).expect("time")).collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "newest first: {times:?}");
    let limited = json_of(s.get("/v1/fetches?site=flaky&last=2").send().await.expect("log"), 200).await;
    assert_eq!(limited["fetches"].as_array().map(Vec::len), Some(2));
    // The failures left the stored value and its freshness as the last good fetch set them.
    let snap = json_of(s.get("/v1/snapshot?spark=0").send().await.expect("snapshot"), 200).await;
    let users = &snap["sites"][0]["metrics"]["users"];
    assert_eq!(users["value"], 7.0);
    assert_eq!(users["as_of"], rfc3339(T0));
    assert!(users.get("spark").is_none(), "spark=0 omits it");
    let sites = json_of(s.get("/v1/sites").send().await.expect("sites"), 200).await;
    assert_eq!(sites["sites"][0]["last_fetch"]["ok"], true);
    problem(s.get("/v1/fetches?last=0").send().await.expect("log"), 400, "bad_count").await;
    problem(s.get("/v1/fetches?last=1001").send().await.expect("log"), 400, "bad_count").await;
    problem(s.get("/v1/fetches?site=none").send().await.expect("log"), 404, "site_not_found").await;
    app.shutdown().await;
}

#[tokio::test]
async fn sites_start_stop_and_go_away_without_a_restart() {
    let clock = Clock::system();
    let app = app_with_clock(&clock).await;
    let s = &app.stats;
    let site = FakeSite::start(Answer::Json(json!({ "n": 1 }))).await;
    create(s, json!({ "slug": "live", "name": "Live", "url": site.url, "interval": "1s", "timeout": "1s" }))
        .await;
    // It fetches on its interval by itself.
    wait_for_fetches(s, "live", 3).await;

    // Disabled: the fetcher stops; it is no longer in the snapshot.
    let res =
        admin(s.patch("/v1/sites/live")).json(&json!({ "enabled": false })).send().await.expect("patch");
    assert_eq!(json_of(res, 200).await["enabled"], false);
    let stopped_at = site.hits();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(site.hits(), stopped_at, "a disabled site is not fetched");
    let snap = json_of(s.get("/v1/snapshot").send().await.expect("snapshot"), 200).await;
    assert_eq!(snap["sites"], json!([]));
    let sites = json_of(s.get("/v1/sites").send().await.expect("sites"), 200).await;
    assert_eq!(sites["sites"][0]["enabled"], false, "disabled sites are still listed");

    // Enabled again: fetching resumes.
    admin(s.patch("/v1/sites/live")).json(&json!({ "enabled": true })).send().await.expect("patch");
    let before = fetch_log(s, "live").await.len();
    wait_for_fetches(s, "live", before + 2).await;

    // Deleting needs the slug repeated.
    problem(admin(s.delete("/v1/sites/live")).send().await.expect("delete"), 400, "confirm_required").await;
    problem(
        admin(s.delete("/v1/sites/live?confirm=other")).send().await.expect("delete"),
        400,
        "confirm_required",
    )
    .await;
    problem(
        admin(s.delete("/v1/sites/ghost?confirm=ghost")).send().await.expect("delete"),
        404,
        "site_not_found",
    )
    .await;
    let res = admin(s.delete("/v1/sites/live?confirm=live")).send().await.expect("delete");
    assert_eq!(res.status(), 204);
    let gone_at = site.hits();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(site.hits(), gone_at, "a deleted site is not fetched");
    // Its points and log went with it; a new site with the same slug starts empty.
    problem(s.get("/v1/fetches?site=live").send().await.expect("log"), 404, "site_not_found").await;
    problem(s.get("/v1/series?site=live").send().await.expect("series"), 404, "site_not_found").await;
    let all = json_of(s.get("/v1/fetches").send().await.expect("log"), 200).await;
    assert_eq!(all["fetches"], json!([]));
    create(s, json!({ "slug": "live", "name": "Live", "url": site.url, "interval": "1h", "enabled": false }))
        .await;
    let series = json_of(s.get("/v1/series?site=live&last=1d").send().await.expect("series"), 200).await;
    assert_eq!(series["series"], json!([]), "no metric survived the delete");
    app.shutdown().await;
}

#[tokio::test]
async fn series_buckets_aggregations_and_fills() {
    let clock = Clock::manual(T0);
    let app = app_with_clock(&clock).await;
    let s = &app.stats;
    let site = FakeSite::start(Answer::Json(json!({ "v": 1 }))).await;
    create(s, json!({ "slug": "m", "name": "M", "url": site.url, "interval": "1h" })).await;
    wait_for_fetches(s, "m", 1).await; // v=1 at 00:00
    // Values at 00:10 (3), 00:20 (5), then nothing until 03:30 (10).
    for (at, v) in [(10 * MIN, 3), (20 * MIN, 5), (3 * HOUR + 30 * MIN, 10)] {
        site.set(Answer::Json(json!({ "v": v }))).await;
        clock.set(T0 + at);
        assert_eq!(fetch_now(s, "m").await["points_written"], 1);
    }
    let get = |q: String| {
        let s = s.clone();
        async move {
            let body = json_of(s.get(&q).send().await.expect("series"), 200).await;
            body["series"][0]["points"]
                .as_array()
                .expect("points")
                .iter()
                .map(|p| p["v"].as_f64())
                .collect::<Vec<Option<f64>>>()
        }
    };
    let w = "site=m&metrics=v&from=2024-05-01T00:00:00Z&to=2024-05-01T04:00:00Z&every=1h";
    assert_eq!(
        get(format!("/v1/series?{w}")).await,
        vec![Some(3.0), None, None, Some(10.0)],
        "avg, fill null"
    );
    assert_eq!(
        get(format!("/v1/series?{w}&agg=sum&fill=zero")).await,
        vec![Some(9.0), Some(0.0), Some(0.0), Some(10.0)]
    );
    assert_eq!(
        get(format!("/v1/series?{w}&agg=max&fill=previous")).await,
        vec![Some(5.0), Some(5.0), Some(5.0), Some(10.0)]
    );
    assert_eq!(
        get(format!("/v1/series?{w}&agg=first&fill=linear")).await,
        vec![Some(1.0), Some(4.0), Some(7.0), Some(10.0)]
    );
    assert_eq!(get(format!("/v1/series?{w}&agg=min&fill=none")).await, vec![Some(1.0), Some(10.0)]);
    assert_eq!(
        get(format!("/v1/series?{w}&agg=count&fill=none")).await,
        vec![Some(3.0), Some(0.0), Some(0.0), Some(1.0)]
    );
    // `last` ends now (03:30 inclusive); without `every`, 1m buckets for 2h.
    let body =
        json_of(s.get("/v1/series?site=m&last=2h&agg=last&fill=none").send().await.expect("series"), 200)
            .await;
    assert_eq!((body["every"].as_str(), body["to"].as_str()), (Some("1m"), Some("2024-05-01T03:30:00.000Z")));
    assert_eq!(body["series"][0]["points"], json!([{ "t": "2024-05-01T03:30:00.000Z", "v": 10.0 }]));
    // Whole-day buckets (served from daily rollups) agree with the points.
    let day = json_of(
        s.get("/v1/series?site=m&metrics=v&last=3d&every=1d&agg=sum").send().await.expect("day"),
        200,
    )
    .await;
    // (now - 3d, now] touches four UTC days.
    assert_eq!(day["series"][0]["points"].as_array().map(Vec::len), Some(4));
    assert_eq!(day["series"][0]["points"][0], json!({ "t": "2024-04-28T00:00:00.000Z", "v": null }));
    assert_eq!(day["series"][0]["points"][3], json!({ "t": "2024-05-01T00:00:00.000Z", "v": 19.0 }));

    // Every bad parameter is a clear 400 problem.
    for (q, code) in [
        ("site=m&last=1y", "bad_duration"),
        ("site=m&last=0d", "bad_duration"),
        ("site=m&last=1d&from=2024-05-01T00:00:00Z&to=2024-05-02T00:00:00Z", "conflicting_window"),
        ("site=m&from=2024-05-02T00:00:00Z&to=2024-05-01T00:00:00Z", "bad_window"),
        ("site=m&from=2024-05-01&to=2024-05-02T00:00:00Z", "bad_time"),
        ("site=m&agg=median", "bad_agg"),
        ("site=m&fill=backward", "bad_fill"),
        ("site=m&last=30d&every=1m", "too_many_buckets"),
        ("site=m&metrics=nope", "unknown_metric"),
        ("site=m&colour=red", "unknown_parameter"),
        ("metrics=v", "missing_parameter"),
    ] {
        let p = problem(s.get(&format!("/v1/series?{q}")).send().await.expect("series"), 400, code).await;
        assert!(p["instance"] == "/v1/series", "{p}");
    }
    problem(s.get("/v1/series?site=nosuch").send().await.expect("series"), 404, "site_not_found").await;
    for bad in ["401d", "1w", "90", "-1d"] {
        problem(
            s.get(&format!("/v1/snapshot?spark={bad}")).send().await.expect("snapshot"),
            400,
            "bad_spark",
        )
        .await;
    }
    let snap = json_of(s.get("/v1/snapshot?spark=400d").send().await.expect("snapshot"), 200).await;
    assert_eq!(snap["sites"][0]["metrics"]["v"]["spark"].as_array().map(Vec::len), Some(400));
    assert_eq!(snap["generated_at"], "2024-05-01T03:30:00.000Z");
    app.shutdown().await;
}

/// The measurement of PERFORMANCE.md: one metric with a year of one-minute points, asked for
/// `last=365d&every=1d&agg=avg`. Not a pass/fail test (speed is never asserted): run it with
/// `cargo test --test main stats::measure_a_year_of_minutes -- --ignored --nocapture`.
#[tokio::test]
#[ignore = "a measurement: loads 525,600 points"]
async fn measure_a_year_of_minutes() {
    let now = T0;
    let clock = Clock::manual(now);
    let app = app_with_clock(&clock).await;
    let s = &app.stats;
    create(s, json!({ "slug": "year", "name": "Year", "url": "http://127.0.0.1:9/", "enabled": false }))
        .await;
    let store = app.running().store.clone();
    let slug = agora_storage::stats::Slug::parse("year").expect("slug");
    let metric = agora_storage::stats::MetricName::parse("m").expect("metric");
    let points: Vec<(i64, f64)> =
        (0..525_600).map(|i| (now - 525_600 * MIN + (i + 1) * MIN, (i % 1440) as f64)).collect();
    let t = std::time::Instant::now();
    store.load_points(&slug, &metric, &points).await.expect("load");
    eprintln!("loaded {} points in {:.1} s", points.len(), t.elapsed().as_secs_f64());
    let mut times = Vec::new();
    for _ in 0..7 {
        let t = std::time::Instant::now();
        let body = json_of(
            s.get("/v1/series?site=year&metrics=m&last=365d&every=1d&agg=avg").send().await.expect("series"),
            200,
        )
        .await;
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        let points = body["series"][0]["points"].as_array().expect("points");
        assert_eq!(points.len(), 366);
        assert!(points[1..365].iter().all(|p| p["v"] == 719.5), "every whole day averages 0..1439");
    }
    times.sort_by(f64::total_cmp);
    eprintln!(
        "last=365d&every=1d&agg=avg: median {:.1} ms, min {:.1} ms, max {:.1} ms",
        times[3], times[0], times[6]
    );
    app.shutdown().await;
}
