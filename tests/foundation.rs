//! The foundation: the four listeners, storage that survives a restart, the data-directory lock,
//! the admin commands (through the socket and on the store), settings and graceful shutdown.

use std::process::Stdio;
use std::time::Duration;

use agora::admin::AdminRequest;
use serde_json::Value;

use crate::support::{spawn_app, spawn_app_on, surrealkv, test_args};

#[tokio::test]
async fn every_listener_is_up_in_its_own_format() {
    let app = spawn_app().await;

    let up = app.stats.get("/up").send().await.expect("stats /up");
    assert_eq!(up.status(), 200);
    assert_eq!(up.text().await.expect("body"), "ok");

    let chat = app.chat.get("/no/such/thing").send().await.expect("chat");
    assert_eq!(chat.status(), 404);
    let body: Value = chat.json().await.expect("chat json");
    assert_eq!(body["error"], "not_found");
    assert!(body["message"].as_str().is_some_and(|m| !m.is_empty()));

    let signup = app.signup.get("/api/nothing-here").send().await.expect("signup");
    assert_eq!(signup.status(), 404);
    assert_eq!(signup.headers()["content-type"], "application/problem+json");
    let problem: Value = signup.json().await.expect("problem json");
    for field in
        ["type", "title", "status", "detail", "instance", "code", "resolution", "docs", "error", "message"]
    {
        assert!(problem.get(field).is_some(), "problem lacks {field}: {problem}");
    }
    assert_eq!(problem["status"], 404);
    assert_eq!(problem["code"], "not_found");
    assert_eq!(problem["instance"], "/api/nothing-here");
    assert_eq!(problem["type"], format!("{}/developers#error-not_found", app.signup.base));

    let stats_missing = app.stats.get("/v9/none").send().await.expect("stats 404");
    assert_eq!(stats_missing.status(), 404);
    assert_eq!(stats_missing.headers()["content-type"], "application/problem+json");

    let page = app.pages.get("/no-such-page").send().await.expect("pages");
    assert_eq!(page.status(), 404);
    assert!(page.headers()["content-type"].to_str().expect("ct").starts_with("text/html"));

    app.shutdown().await;
}

#[tokio::test]
async fn services_flag_picks_a_subset() {
    let mut args = test_args();
    args.services = vec![agora::settings::Service::Stats];
    let app = crate::support::spawn_app_with(agora_storage::DbSettings::memory(), None, args).await;
    assert!(app.running().chat.is_none());
    assert!(app.running().pages.is_none());
    assert!(app.running().signup.is_none());
    let up = app.stats.get("/up").send().await.expect("stats /up");
    assert_eq!(up.text().await.expect("body"), "ok");
    app.shutdown().await;
}

#[tokio::test]
async fn data_survives_a_restart_and_admin_commands_use_the_socket() {
    let dir = tempfile::tempdir().expect("tempdir");

    let first = spawn_app_on(dir.path()).await;
    let socket = first.running().admin_socket.clone().expect("admin socket");
    assert_eq!(socket, dir.path().join("admin.sock"));
    let mode = std::fs::metadata(&socket).map(|m| {
        use std::os::unix::fs::PermissionsExt as _;
        m.permissions().mode() & 0o777
    });
    assert_eq!(mode.expect("socket metadata"), 0o600, "the admin socket is owner-only");

    let boot = first
        .admin(AdminRequest::Bootstrap {
            name: "Ada Lovelace".into(),
            handle: "ada".into(),
            email: "ada@example.org".into(),
        })
        .await;
    let session = boot["session_token"].as_str().expect("session token").to_owned();
    let key = boot["person_key"].as_str().expect("person key").to_owned();
    assert!(session.starts_with("chs_"), "{session}");
    assert!(key.starts_with("chat_"), "{key}");
    // While the server runs, the store is locked: the command must have gone through the socket.
    let who = first.running().store.authenticate(&session).await.expect("auth").expect("known session");
    let migrations = first.running().store.applied_migrations().await.expect("migrations");
    assert!(!migrations.is_empty());
    assert!(matches!(who.actor, agora_storage::people::Actor::Person(ref p) if p.handle == "ada"));
    first.shutdown().await;

    // A second run on the same directory finds everything and changes nothing in the schema.
    let second = spawn_app_on(dir.path()).await;
    let store = &second.running().store;
    assert_eq!(store.applied_migrations().await.expect("migrations"), migrations);
    assert!(store.authenticate(&session).await.expect("auth").is_some(), "session survives restart");
    assert!(store.authenticate(&key).await.expect("auth").is_some(), "person key survives restart");
    let again = second.admin(AdminRequest::Session { handle: "ada".into() }).await;
    let new_session = again["session_token"].as_str().expect("session token");
    assert!(store.authenticate(new_session).await.expect("auth").is_some());
    second.shutdown().await;

    // With no server running, the admin command opens the store itself.
    let direct = agora::admin::run_request(
        &surrealkv(dir.path()),
        None,
        &AdminRequest::Session { handle: "ada".into() },
    )
    .await
    .expect("ran")
    .expect("succeeded");
    assert!(direct["session_token"].as_str().is_some_and(|t| t.starts_with("chs_")));
}

#[tokio::test]
async fn a_second_server_on_the_same_data_is_refused_clearly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = spawn_app_on(dir.path()).await;
    let Err(err) =
        agora::start(surrealkv(dir.path()), Some(dir.path().join("other.sock")), test_args()).await
    else {
        panic!("a second server on the same data must not start");
    };
    let text = format!("{err:#}");
    assert!(text.contains("in use by another agora process"), "{text}");
    first.shutdown().await;
}

#[tokio::test]
async fn bootstrap_refuses_bad_input_and_a_second_bootstrap() {
    let app = spawn_app().await;
    let store = app.running().store.clone();
    let bad = agora::admin::execute(
        &store,
        AdminRequest::Bootstrap {
            name: "Ada".into(),
            handle: "Not Valid".into(),
            email: "ada@example.org".into(),
        },
    )
    .await;
    assert!(bad.is_err());
    let ok = agora::admin::execute(
        &store,
        AdminRequest::Bootstrap { name: "Ada".into(), handle: "ada".into(), email: "ada@example.org".into() },
    )
    .await;
    assert!(ok.is_ok());
    let twice = agora::admin::execute(
        &store,
        AdminRequest::Bootstrap { name: "Bob".into(), handle: "bob".into(), email: "bob@example.org".into() },
    )
    .await;
    assert!(twice.is_err(), "bootstrap only creates the first staff person");
    assert_eq!(store.count_people().await.expect("count"), 1);
    app.shutdown().await;
}

pub(crate) fn agora_bin() -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_agora"));
    for (k, _) in std::env::vars() {
        if k.starts_with("AGORA_") {
            cmd.env_remove(k);
        }
    }
    cmd
}

/// Runs `agora admin <args> --db <db> --json` (through the running server's socket when one runs
/// on `db`) and returns the one JSON object it printed.
pub(crate) fn admin_json(db: &str, args: &[&str]) -> Value {
    let out = agora_bin().arg("admin").args(args).args(["--db", db, "--json"]).output().expect("agora admin");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

#[test]
fn help_documents_every_setting_and_its_variable() {
    let out = agora_bin().args(["serve", "--help"]).output().expect("run agora");
    let help = String::from_utf8_lossy(&out.stdout);
    for var in [
        "AGORA_DB",
        "AGORA_SERVICES",
        "AGORA_CHAT_ADDR",
        "AGORA_PAGES_ADDR",
        "AGORA_STATS_ADDR",
        "AGORA_SIGNUP_ADDR",
        "AGORA_CHAT_BASE_URL",
        "AGORA_PAGES_BASE_URL",
        "AGORA_STATS_BASE_URL",
        "AGORA_SIGNUP_BASE_URL",
        "AGORA_STATS_ADMIN_TOKEN",
        "AGORA_SMS",
        "AGORA_TWILIO_BASE_URL",
        "AGORA_TWILIO_ACCOUNT_SID",
        "AGORA_TWILIO_AUTH_TOKEN",
        "AGORA_TWILIO_FROM",
        "AGORA_SIGNUP_KEY",
        "AGORA_ADMIN_SOCKET",
        "AGORA_DB_USER",
        "AGORA_DB_PASS",
        "AGORA_HEADER_TIMEOUT",
        "AGORA_REQUEST_TIMEOUT",
    ] {
        assert!(help.contains(var), "`agora serve --help` does not mention {var}:\n{help}");
    }
    let top = agora_bin().arg("--help").output().expect("run agora");
    let top = String::from_utf8_lossy(&top.stdout);
    assert!(top.contains("serve") && top.contains("admin"), "{top}");
}

/// Reads the child's stderr until a line contains `needle`, or gives up after 60 s.
pub(crate) fn wait_for_line(child: &mut std::process::Child, needle: &str) -> Vec<String> {
    use std::io::BufRead as _;
    let stderr = child.stderr.take().expect("stderr piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // Keep draining after the test stops listening, so the server never writes into a closed pipe.
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("agora> {line}");
            let _ = tx.send(line);
        }
    });
    let mut seen = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(line) => {
                let done = line.contains(needle);
                seen.push(line);
                if done {
                    break;
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(_) => break,
        }
    }
    seen
}

#[test]
fn the_binary_serves_refuses_a_second_process_and_stops_cleanly_on_sigterm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = format!("surrealkv://{}", dir.path().join("agora").display());
    let mut server = agora_bin()
        .args(["serve", "--db", &db, "--services", "stats", "--stats-addr", "127.0.0.1:0"])
        .env("RUST_LOG", "info,surrealdb=warn,surrealdb_core=warn,surrealkv=warn")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("start agora");
    let lines = wait_for_line(&mut server, "listening");
    assert!(lines.iter().any(|l| l.contains("listening")), "server did not come up: {lines:?}");

    // Admin command through the running server's socket.
    let printed =
        admin_json(&db, &["bootstrap", "--name", "Ada", "--handle", "ada", "--email", "ada@example.org"]);
    assert!(printed["person_id"].as_str().is_some_and(|p| p.starts_with("p_")));
    assert!(printed["session_token"].as_str().is_some_and(|t| t.starts_with("chs_")));
    assert!(printed["person_key"].as_str().is_some_and(|t| t.starts_with("chat_")));

    // A second server on the same data exits with a message, not a panic.
    let second = agora_bin()
        .args(["serve", "--db", &db, "--services", "stats", "--stats-addr", "127.0.0.1:0"])
        .output()
        .expect("second agora");
    assert!(!second.status.success());
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(err.contains("in use by another agora process"), "{err}");
    assert!(!err.contains("panicked"), "{err}");

    let pid = server.id().to_string();
    let killed = std::process::Command::new("kill").args(["-TERM", &pid]).status().expect("kill");
    assert!(killed.success());
    let status = server.wait().expect("wait");
    assert_eq!(status.code(), Some(0), "SIGTERM ends agora with exit code 0");
    assert!(!dir.path().join("admin.sock").exists(), "the admin socket is removed at shutdown");

    // And the data written through the socket is there with no server running.
    let printed = admin_json(&db, &["session", "--handle", "ada"]);
    assert!(printed["session_token"].as_str().is_some_and(|t| t.starts_with("chs_")));
}
