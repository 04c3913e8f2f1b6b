//! `agora admin ...`: operator commands.
//!
//! Each command is an [`AdminRequest`] executed by [`execute`] against the store. The CLI sends it
//! to a running server through the server's admin socket (a Unix socket with owner-only
//! permissions, never a TCP port), or, when no server answers there, opens the store itself. Both
//! paths run the same [`execute`], so they cannot drift apart.
//!
//! The socket speaks one JSON line each way: the request, then `{"ok": true, "result": {...}}` or
//! `{"ok": false, "error": "..."}`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use agora_storage::ids::Handle;
use agora_storage::people::{CredentialKind, NewCredential, Role, Scope};
use agora_storage::signup::{DemoDay, PhoneNumber};
use agora_storage::time::now_ms;
use agora_storage::{DbSettings, StorageError, Store};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::settings::{AdminCommand, Cli, SignupCommand};

/// The chat service's base URL when neither the command nor a running server names one.
const DEFAULT_CHAT_BASE_URL: &str = "http://127.0.0.1:4000";

/// The web client's sign-in address for a login-link code: the page exchanges `login` for a
/// browser session (`POST /login_links/{code}/exchange`) and drops it from the address bar.
pub fn login_url(chat_base_url: &str, code: &str) -> String {
    format!("{chat_base_url}/app/?login={code}")
}

/// The largest request line the admin socket reads.
const MAX_REQUEST: usize = 64 * 1024;

/// One operator command, as it travels over the admin socket.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "snake_case")]
pub enum AdminRequest {
    Bootstrap {
        name: String,
        handle: String,
        email: String,
    },
    Session {
        handle: String,
    },
    /// A one-use sign-in link for the web client, valid 15 minutes. `base_url` is the chat
    /// service's public base URL; over the admin socket, a missing one is the server's own.
    LoginLink {
        handle: String,
        base_url: Option<String>,
    },
    /// Opens (`true`) or closes the sign-up demo.
    SignupSetOpen {
        open: bool,
    },
    SignupStatus,
    /// `key` is the server's `AGORA_SIGNUP_KEY` when set (the socket is owner-only).
    SignupInvite {
        phone: String,
        key: Option<String>,
    },
    SignupUninvite {
        phone: String,
        key: Option<String>,
    },
    SignupOutbox {
        limit: u32,
    },
    StatsToken,
}

/// Why an admin command failed: a message for the operator.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// Runs one admin request against the store and returns its JSON result.
pub async fn execute(store: &Store, request: AdminRequest) -> Result<Value, AdminError> {
    match request {
        AdminRequest::Bootstrap { name, handle, email } => {
            let handle = Handle::parse(&handle).map_err(|e| AdminError::Invalid(e.to_string()))?;
            let name = name.trim();
            if name.is_empty() || name.chars().count() > 100 {
                return Err(AdminError::Invalid("the name must be 1 to 100 characters".into()));
            }
            if !email.contains('@') || email.chars().count() > 254 {
                return Err(AdminError::Invalid(format!("{email:?} is not an e-mail address")));
            }
            if store.count_people().await? > 0 {
                return Err(AdminError::Invalid(
                    "this store already has people: bootstrap only creates the first staff person (use `agora admin session --handle H` for a new session)".into(),
                ));
            }
            let person = store.create_person(name, &handle, Some(&email), Role::Staff).await?;
            let (_, session_token) = store.issue_session(&person.id).await?;
            let (_, person_key) = store
                .issue_credential(NewCredential {
                    kind: CredentialKind::PersonKey,
                    person_id: Some(person.id.clone()),
                    bot_id: None,
                    name: Some("bootstrap".into()),
                    scope: Scope::Write,
                    expires_at: None,
                })
                .await?;
            Ok(json!({ "person_id": person.id, "session_token": session_token, "person_key": person_key }))
        }
        AdminRequest::Session { handle } => {
            let person = store
                .person_by_handle(&handle)
                .await?
                .ok_or_else(|| AdminError::Invalid(format!("no person has the handle @{handle}")))?;
            let (_, session_token) = store.issue_session(&person.id).await?;
            Ok(json!({ "session_token": session_token }))
        }
        AdminRequest::LoginLink { handle, base_url } => {
            let person = store
                .person_by_handle(&handle)
                .await?
                .ok_or_else(|| AdminError::Invalid(format!("no person has the handle @{handle}")))?;
            let (code, expires_at) = store.create_login_link(&person.id, now_ms()).await?;
            let base = base_url.as_deref().unwrap_or(DEFAULT_CHAT_BASE_URL).trim_end_matches('/');
            Ok(json!({
                "url": login_url(base, &code),
                "expires_at": agora_storage::time::rfc3339(expires_at),
            }))
        }
        AdminRequest::StatsToken => {
            let token = store.create_stats_token(agora_storage::time::now_ms()).await?;
            Ok(json!({ "token": token }))
        }
        AdminRequest::SignupSetOpen { open } => {
            store.set_demo_open(open).await?;
            Ok(json!({ "open": open }))
        }
        AdminRequest::SignupStatus => {
            let day = DemoDay::at(now_ms()).map_err(|e| AdminError::Invalid(e.to_string()))?;
            Ok(serde_json::to_value(store.demo_status(&day).await?).unwrap_or_default())
        }
        AdminRequest::SignupInvite { phone, key } => {
            let phone = PhoneNumber::parse(&phone).map_err(|e| AdminError::Invalid(e.to_string()))?;
            let hash = store.signup_key(key.as_deref()).await?.phone_hash(&phone);
            store.invite_tester(&hash, now_ms()).await?;
            Ok(json!({ "invited": true, "to_last4": phone.last4() }))
        }
        AdminRequest::SignupUninvite { phone, key } => {
            let phone = PhoneNumber::parse(&phone).map_err(|e| AdminError::Invalid(e.to_string()))?;
            let hash = store.signup_key(key.as_deref()).await?.phone_hash(&phone);
            let uninvited = store.uninvite_tester(&hash).await?;
            Ok(json!({ "uninvited": uninvited, "to_last4": phone.last4() }))
        }
        AdminRequest::SignupOutbox { limit } => Ok(json!({ "texts": store.outbox(limit.min(1000)).await? })),
    }
}

fn signup_request(command: &SignupCommand) -> (AdminRequest, bool) {
    match command {
        SignupCommand::Open { json } => (AdminRequest::SignupSetOpen { open: true }, *json),
        SignupCommand::Close { json } => (AdminRequest::SignupSetOpen { open: false }, *json),
        SignupCommand::Status { json } => (AdminRequest::SignupStatus, *json),
        SignupCommand::Invite { phone, signup_key, json } => {
            (AdminRequest::SignupInvite { phone: phone.clone(), key: signup_key.clone() }, *json)
        }
        SignupCommand::Uninvite { phone, signup_key, json } => {
            (AdminRequest::SignupUninvite { phone: phone.clone(), key: signup_key.clone() }, *json)
        }
        SignupCommand::Outbox { limit, json } => (AdminRequest::SignupOutbox { limit: *limit }, *json),
    }
}

/// Where the admin socket is: the setting, or `admin.sock` beside an embedded data directory.
pub fn socket_path(db: &DbSettings, explicit: Option<PathBuf>) -> Option<PathBuf> {
    explicit.or_else(|| {
        let dir = db.data_dir()?;
        let parent = dir.parent().map(Path::to_path_buf).unwrap_or_default();
        Some(parent.join("admin.sock"))
    })
}

/// Opens the admin socket (owner-only) and answers requests on it until `shutdown`.
pub fn serve_socket(
    path: &Path,
    store: Store,
    chat_base_url: Option<String>,
    shutdown: CancellationToken,
    tasks: &mut JoinSet<anyhow::Result<()>>,
) -> anyhow::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    // A socket file left by a process that died: the data-directory lock already proved that no
    // other server runs on this data, so the file is stale.
    if path.exists() {
        std::fs::remove_file(path)?;
    }
    let listener = UnixListener::bind(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    }
    tasks.spawn(async move {
        loop {
            tokio::select! {
                () = shutdown.cancelled() => break,
                accepted = listener.accept() => {
                    let Ok((stream, _)) = accepted else { continue };
                    let store = store.clone();
                    let chat_base_url = chat_base_url.clone();
                    tokio::spawn(async move {
                        if let Err(e) = answer(stream, &store, chat_base_url).await {
                            tracing::warn!("admin socket: {e}");
                        }
                    });
                }
            }
        }
        Ok(())
    });
    Ok(())
}

async fn answer(stream: UnixStream, store: &Store, chat_base_url: Option<String>) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut line = String::new();
    let mut reader = BufReader::new(read).take(MAX_REQUEST as u64);
    reader.read_line(&mut line).await?;
    let reply = match serde_json::from_str::<AdminRequest>(&line) {
        Ok(mut request) => {
            // A link names the address people reach this server at, unless the command said.
            if let AdminRequest::LoginLink { base_url: base_url @ None, .. } = &mut request {
                *base_url = chat_base_url;
            }
            match execute(store, request).await {
                Ok(result) => json!({ "ok": true, "result": result }),
                Err(e) => json!({ "ok": false, "error": e.to_string() }),
            }
        }
        Err(e) => json!({ "ok": false, "error": format!("bad admin request: {e}") }),
    };
    let mut bytes = serde_json::to_vec(&reply).unwrap_or_default();
    bytes.push(b'\n');
    write.write_all(&bytes).await?;
    write.shutdown().await
}

/// Sends a request to a running server. `Ok(None)` when no server answers at `path`.
async fn via_socket(path: &Path, request: &AdminRequest) -> anyhow::Result<Option<Result<Value, String>>> {
    let stream = match UnixStream::connect(path).await {
        Ok(s) => s,
        Err(e)
            if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused) =>
        {
            return Ok(None);
        }
        Err(e) => return Err(e.into()),
    };
    let (read, mut write) = stream.into_split();
    let mut bytes = serde_json::to_vec(request)?;
    bytes.push(b'\n');
    write.write_all(&bytes).await?;
    let mut line = String::new();
    BufReader::new(read).read_line(&mut line).await?;
    let reply: Value = serde_json::from_str(&line)?;
    if reply.get("ok").and_then(Value::as_bool) == Some(true) {
        Ok(Some(Ok(reply.get("result").cloned().unwrap_or(Value::Null))))
    } else {
        let error = reply.get("error").and_then(Value::as_str).unwrap_or("unknown error");
        Ok(Some(Err(error.to_owned())))
    }
}

/// Runs an admin command from the command line and prints its result.
pub async fn run(cli: &Cli, command: &AdminCommand) -> ExitCode {
    let (request, json_out) = match command {
        AdminCommand::Bootstrap { name, handle, email, json } => (
            AdminRequest::Bootstrap { name: name.clone(), handle: handle.clone(), email: email.clone() },
            *json,
        ),
        AdminCommand::Session { handle, json } => (AdminRequest::Session { handle: handle.clone() }, *json),
        AdminCommand::LoginLink { handle, chat_base_url, json } => {
            (AdminRequest::LoginLink { handle: handle.clone(), base_url: chat_base_url.clone() }, *json)
        }
        AdminCommand::StatsToken { json } => (AdminRequest::StatsToken, *json),
        AdminCommand::Signup(command) => signup_request(command),
    };
    let db = cli.db.to_settings();
    let outcome = match run_request(&db, cli.admin_socket.clone(), &request).await {
        Ok(outcome) => outcome,
        Err(e) => Err(format!("{e:#}")),
    };
    match outcome {
        Ok(result) => {
            if json_out {
                println!("{result}");
            } else {
                print_human(&request, &result);
            }
            ExitCode::SUCCESS
        }
        Err(message) => {
            if json_out {
                println!("{}", json!({ "error": message }));
            }
            eprintln!("agora admin: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Runs a request through the admin socket of a running server, or on the store when none runs.
pub async fn run_request(
    db: &DbSettings,
    explicit_socket: Option<PathBuf>,
    request: &AdminRequest,
) -> anyhow::Result<Result<Value, String>> {
    if let Some(path) = socket_path(db, explicit_socket)
        && let Some(reply) = via_socket(&path, request).await?
    {
        return Ok(reply);
    }
    let store = match Store::open(db).await {
        Ok(store) => store,
        Err(StorageError::Locked(dir)) => anyhow::bail!(
            "a server holds {} but its admin socket does not answer; pass --admin-socket (AGORA_ADMIN_SOCKET) with the socket that server uses",
            dir.display()
        ),
        Err(e) => return Err(e.into()),
    };
    let result = execute(&store, request.clone()).await.map_err(|e| e.to_string());
    store.close().await;
    Ok(result)
}

fn print_human(request: &AdminRequest, result: &Value) {
    let s = |k: &str| result.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
    match request {
        AdminRequest::Bootstrap { handle, .. } => {
            println!("Created staff person @{handle} ({}).", s("person_id"));
            println!("These tokens are shown once; keep them somewhere safe.");
            println!("  browser session: {}", s("session_token"));
            println!("  person key:      {}", s("person_key"));
        }
        AdminRequest::Session { handle } => {
            println!("New browser session for @{handle} (shown once):");
            println!("  {}", s("session_token"));
        }
        AdminRequest::LoginLink { handle, .. } => {
            println!("Sign-in link for @{handle} (one use, until {}):", s("expires_at"));
            println!("  {}", s("url"));
        }
        AdminRequest::StatsToken => {
            println!("New statistics admin token (shown once; send it as Authorization: Bearer <token>):");
            println!("  {}", s("token"));
        }
        AdminRequest::SignupSetOpen { open: true } => {
            println!("The demo is open: any valid number may get a code text.")
        }
        AdminRequest::SignupSetOpen { open: false } => {
            println!("The demo is closed: only invited testers get code texts.")
        }
        AdminRequest::SignupStatus => {
            let open = result.get("open").and_then(Value::as_bool).unwrap_or(false);
            println!("Demo: {}", if open { "open to anyone" } else { "invited testers only" });
            println!("Invited testers: {}", result.get("testers").and_then(Value::as_u64).unwrap_or(0));
            println!(
                "Texts on {} (Chicago): {}",
                s("day"),
                result.get("texts_today").and_then(Value::as_u64).unwrap_or(0)
            );
        }
        AdminRequest::SignupInvite { .. } => println!("Invited the tester at ***-***-{}.", s("to_last4")),
        AdminRequest::SignupUninvite { .. } => {
            if result.get("uninvited").and_then(Value::as_bool) == Some(true) {
                println!("Withdrew the invitation of ***-***-{}.", s("to_last4"));
            } else {
                println!("***-***-{} was not invited.", s("to_last4"));
            }
        }
        AdminRequest::SignupOutbox { .. } => {
            let texts = result.get("texts").and_then(Value::as_array).cloned().unwrap_or_default();
            if texts.is_empty() {
                println!("The outbox is empty.");
            }
            for t in texts {
                let f = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
                println!("{}  {}  to ***-***-{}\n  {}", f("at"), f("public_id"), f("to_last4"), f("body"));
            }
        }
    }
}
