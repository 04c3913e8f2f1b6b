//! The harness every black-box test uses: [`spawn_app`] starts the real app in-process on port 0
//! for every service with a fresh `mem://` database.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use agora::Running;
use agora::settings::{ServeArgs, Service};
use agora_storage::DbSettings;
use serde_json::Value;

/// A client for one service: its base URL and a shared HTTP client.
#[derive(Clone)]
pub struct ServiceClient {
    pub base: String,
    pub http: reqwest::Client,
}

impl ServiceClient {
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.http.get(self.url(path))
    }

    pub fn post(&self, path: &str) -> reqwest::RequestBuilder {
        self.http.post(self.url(path))
    }

    pub fn patch(&self, path: &str) -> reqwest::RequestBuilder {
        self.http.patch(self.url(path))
    }

    pub fn delete(&self, path: &str) -> reqwest::RequestBuilder {
        self.http.delete(self.url(path))
    }
}

/// A running app and a client for each of its services.
pub struct TestApp {
    pub running: Option<Running>,
    pub db: DbSettings,
    pub chat: ServiceClient,
    pub pages: ServiceClient,
    pub stats: ServiceClient,
    pub signup: ServiceClient,
}

impl TestApp {
    pub fn running(&self) -> &Running {
        self.running.as_ref().expect("app is running")
    }

    /// Stops the app the way SIGTERM does.
    pub async fn shutdown(mut self) {
        if let Some(running) = self.running.take() {
            running.shutdown().await.expect("clean shutdown");
        }
    }

    /// Runs an admin command through the app's admin socket (or on the store when it has none).
    pub async fn admin(&self, request: agora::admin::AdminRequest) -> Value {
        let socket = self.running().admin_socket.clone();
        agora::admin::run_request(&self.db, socket, &request)
            .await
            .expect("admin request ran")
            .expect("admin request succeeded")
    }
}

/// Settings for a test: every service on 127.0.0.1:0.
pub fn test_args() -> ServeArgs {
    let any = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    ServeArgs {
        services: Service::ALL.to_vec(),
        chat_addr: any,
        pages_addr: any,
        stats_addr: any,
        signup_addr: any,
        ..ServeArgs::defaults()
    }
}

/// The real app, in process, with a fresh in-memory database.
pub async fn spawn_app() -> TestApp {
    spawn_app_with(DbSettings::memory(), None, test_args()).await
}

/// The real app on an embedded SurrealKV directory, with its admin socket beside it.
pub async fn spawn_app_on(dir: &Path) -> TestApp {
    spawn_app_with(surrealkv(dir), None, test_args()).await
}

pub fn surrealkv(dir: &Path) -> DbSettings {
    DbSettings { address: format!("surrealkv://{}", dir.join("agora").display()), ..DbSettings::memory() }
}

pub async fn spawn_app_with(db: DbSettings, admin_socket: Option<PathBuf>, args: ServeArgs) -> TestApp {
    init_tracing();
    let running = agora::start(db.clone(), admin_socket, args).await.expect("app starts");
    let http = reqwest::Client::builder().build().expect("http client");
    let client = |l: &Option<agora::serve::Listening>| ServiceClient {
        base: l.as_ref().map(|l| l.base_url.clone()).unwrap_or_default(),
        http: http.clone(),
    };
    TestApp {
        chat: client(&running.chat),
        pages: client(&running.pages),
        stats: client(&running.stats),
        signup: client(&running.signup),
        running: Some(running),
        db,
    }
}

fn init_tracing() {
    // Quiet unless RUST_LOG asks; the test harness captures what is printed.
    if std::env::var_os("RUST_LOG").is_some() {
        agora::telemetry::init(None);
    }
}
