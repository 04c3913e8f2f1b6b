//! `agora serve`: storage, actors, the four listeners and the admin socket, started in order and
//! stopped in reverse order.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use agora_actors::ActorSystem;
use agora_actors::signup::SmsConfig;
use agora_storage::{DbSettings, Store};
use agora_web::{chat, limits, pages, signup, stats};
use anyhow::Context as _;
use axum::Router;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::admin;
use crate::settings::{ServeArgs, Service, SmsSender};

/// A service that is up: where it listens and the base URL it writes into absolute links.
#[derive(Debug, Clone)]
pub struct Listening {
    pub addr: SocketAddr,
    pub base_url: String,
}

/// A running agora. Dropping it without [`Running::shutdown`] leaves the tasks running until the
/// runtime ends.
pub struct Running {
    pub chat: Option<Listening>,
    pub pages: Option<Listening>,
    pub stats: Option<Listening>,
    pub signup: Option<Listening>,
    /// The admin socket, when one is open.
    pub admin_socket: Option<PathBuf>,
    pub store: Store,
    shutdown: CancellationToken,
    tasks: JoinSet<anyhow::Result<()>>,
    actors: ActorSystem,
}

/// Opens storage, starts the actors, binds the listeners of the chosen services and the admin
/// socket, and serves until [`Running::shutdown`].
pub async fn start(
    db: DbSettings,
    admin_socket: Option<PathBuf>,
    args: ServeArgs,
) -> anyhow::Result<Running> {
    let store = Store::open(&db).await.with_context(|| format!("opening the store at {}", db.address))?;
    let actors = ActorSystem::start(store.clone(), args.clock.clone(), chat::render_event())
        .await
        .context("starting the actors")?;
    let shutdown = CancellationToken::new();
    let mut tasks = JoinSet::new();

    let wants = |s: Service| args.services.contains(&s);
    let deadline = Duration::from_secs(args.request_timeout.max(1));
    let header_timeout = Duration::from_secs(args.header_timeout.max(1));
    let chat = if wants(Service::Chat) {
        let (listener, up) = bind(Service::Chat, args.chat_addr, args.chat_base_url.as_deref()).await?;
        let limits = chat::auth::Limits::new(args.posts_per_minute, args.reads_per_minute);
        let state = chat::ChatState::new(actors.chat(), up.base_url.clone(), limits, args.max_sockets);
        let router = limits::with_deadline(chat::router(state), deadline, limits::chat_timeout());
        serve(&mut tasks, &shutdown, listener, router, header_timeout);
        Some(up)
    } else {
        None
    };
    let pages = if wants(Service::Pages) {
        let (listener, up) = bind(Service::Pages, args.pages_addr, args.pages_base_url.as_deref()).await?;
        let state = pages::PagesState::new(up.base_url.clone()).context("building the pages site")?;
        let router = limits::with_deadline(pages::router(state), deadline, limits::page_timeout());
        serve(&mut tasks, &shutdown, listener, router, header_timeout);
        Some(up)
    } else {
        None
    };
    let stats = if wants(Service::Stats) {
        let (listener, up) = bind(Service::Stats, args.stats_addr, args.stats_base_url.as_deref()).await?;
        let fetchers =
            agora_actors::stats::Fetchers::start(actors.root_cell(), store.clone(), args.clock.clone())
                .await
                .context("starting the statistics fetchers")?;
        let state = stats::StatsState {
            store: store.clone(),
            base_url: up.base_url.clone(),
            admin_token: args.stats_admin_token.clone(),
            fetchers,
            clock: args.clock.clone(),
        };
        let on_timeout = limits::problem_timeout(up.base_url.clone());
        let router = limits::with_deadline(stats::router(state), deadline, on_timeout);
        serve(&mut tasks, &shutdown, listener, router, header_timeout);
        Some(up)
    } else {
        None
    };
    let signup = if wants(Service::Signup) {
        let (listener, up) = bind(Service::Signup, args.signup_addr, args.signup_base_url.as_deref()).await?;
        let sms = match args.sms {
            SmsSender::Log => SmsConfig::Log,
            SmsSender::Twilio => {
                let need = |v: &Option<String>, name: &str| {
                    v.clone().with_context(|| format!("AGORA_SMS=twilio needs {name}"))
                };
                SmsConfig::Twilio {
                    base_url: args.twilio_base_url.clone(),
                    account_sid: need(&args.twilio_account_sid, "AGORA_TWILIO_ACCOUNT_SID")?,
                    auth_token: need(&args.twilio_auth_token, "AGORA_TWILIO_AUTH_TOKEN")?,
                    from: need(&args.twilio_from, "AGORA_TWILIO_FROM")?,
                }
            }
        };
        let state = signup::SignupState::start(signup::SignupConfig {
            store: store.clone(),
            base_url: up.base_url.clone(),
            clock: args.clock.clone(),
            key: args.signup_key.clone(),
            sms,
            supervisor: Some(actors.root_cell()),
        })
        .await
        .context("starting the sign-up service")?;
        let on_timeout = limits::problem_timeout(up.base_url.clone());
        let router = limits::with_deadline(signup::router(state), deadline, on_timeout);
        serve(&mut tasks, &shutdown, listener, router, header_timeout);
        Some(up)
    } else {
        None
    };

    let admin_socket = match admin::socket_path(&db, admin_socket) {
        Some(path) => {
            let chat_base_url = chat.as_ref().map(|up| up.base_url.clone());
            admin::serve_socket(&path, store.clone(), chat_base_url, shutdown.clone(), &mut tasks)
                .with_context(|| format!("opening the admin socket {}", path.display()))?;
            Some(path)
        }
        None => None,
    };

    for (service, up) in [("chat", &chat), ("pages", &pages), ("stats", &stats), ("signup", &signup)] {
        if let Some(up) = up {
            tracing::info!(service, addr = %up.addr, base_url = %up.base_url, "listening");
        }
    }
    Ok(Running { chat, pages, stats, signup, admin_socket, store, shutdown, tasks, actors })
}

async fn bind(
    service: Service,
    addr: SocketAddr,
    base_url: Option<&str>,
) -> anyhow::Result<(TcpListener, Listening)> {
    let listener =
        listen(addr).with_context(|| format!("listening on {addr} for the {} service", service.name()))?;
    let addr = listener.local_addr()?;
    let base_url =
        base_url.map(|u| u.trim_end_matches('/').to_owned()).unwrap_or_else(|| format!("http://{addr}"));
    Ok((listener, Listening { addr, base_url }))
}

/// The accept queue's length: the kernel caps it at `net.core.somaxconn` (4096 on Linux since 5.4).
/// tokio's default of 1,024 overflows in a connect storm (1,000 clients at once plus the ones
/// being upgraded), and a connection whose handshake finds the queue full waits a full second for
/// its SYN to be sent again.
const ACCEPT_BACKLOG: u32 = 4096;

fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket =
        if addr.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(ACCEPT_BACKLOG)
}

/// Serves `router` on `listener` until `shutdown`, then lets every connection finish its request.
///
/// The connection loop is ours rather than `axum::serve` because it sets a timer on hyper, which
/// turns on the header read timeout: a client that trickles its headers (slowloris) or holds an
/// idle keep-alive connection is closed after `header_timeout`. Upgraded connections (`/cable`)
/// leave the loop at the upgrade and are bounded by their own session.
fn serve(
    tasks: &mut JoinSet<anyhow::Result<()>>,
    shutdown: &CancellationToken,
    listener: TcpListener,
    router: Router,
    header_timeout: Duration,
) {
    let stop = shutdown.clone();
    tasks.spawn(async move {
        let closing = CancellationToken::new();
        let mut connections = JoinSet::new();
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
                accepted = listener.accept() => {
                    let (io, peer) = match accepted {
                        Ok(accepted) => accepted,
                        Err(e) => {
                            // Out of file descriptors, most likely: wait a moment rather than spin.
                            tracing::warn!("accept failed: {e}");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    };
                    let _ = io.set_nodelay(true);
                    connections.spawn(connection(io, peer, router.clone(), header_timeout, closing.clone()));
                }
            }
        }
        drop(listener);
        closing.cancel();
        while connections.join_next().await.is_some() {}
        Ok(())
    });
}

/// One HTTP/1.1 connection (upgrades included; agora serves no HTTP/2, as before), closed gracefully when `closing` is cancelled.
async fn connection(
    io: tokio::net::TcpStream,
    peer: SocketAddr,
    router: Router,
    header_timeout: Duration,
    closing: CancellationToken,
) {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use tower::ServiceExt as _;

    let service = hyper::service::service_fn(move |mut req: http::Request<hyper::body::Incoming>| {
        req.extensions_mut().insert(axum::extract::ConnectInfo(peer));
        router.clone().oneshot(req.map(axum::body::Body::new))
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .serve_connection(TokioIo::new(io), service)
        .with_upgrades();
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        () = closing.cancelled() => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
    }
}

impl Running {
    /// Stops accepting, lets in-flight requests finish, stops the actors and closes storage.
    pub async fn shutdown(mut self) -> anyhow::Result<()> {
        // Live sockets first: each is told `server_restart` (reconnect) and closed, so the
        // listeners are not kept waiting on upgraded connections.
        self.actors.chat().sessions().shutdown();
        self.shutdown.cancel();
        let mut first_error = None;
        while let Some(done) = self.tasks.join_next().await {
            if let Err(e) = done.map_err(anyhow::Error::from).and_then(|r| r) {
                tracing::error!("a listener ended with an error: {e:#}");
                first_error.get_or_insert(e);
            }
        }
        self.actors.stop().await;
        self.store.close().await;
        if let Some(path) = &self.admin_socket {
            let _ = std::fs::remove_file(path);
        }
        tracing::info!("stopped");
        first_error.map_or(Ok(()), Err)
    }
}

/// Waits for SIGINT or SIGTERM.
pub async fn wait_for_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}
