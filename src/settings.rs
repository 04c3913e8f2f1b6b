//! Command line and environment settings: every setting is a flag with an `AGORA_*` variable behind it.

use std::net::SocketAddr;
use std::path::PathBuf;

use agora_storage::DbSettings;
use agora_storage::time::Clock;
use clap::{Args, Parser, Subcommand, ValueEnum};

/// agora: a real-time chat server where people, outside guests, bots and AI agents share channels,
/// with a public pages site, a statistics service and a demo sign-up API beside it.
#[derive(Debug, Parser)]
#[command(name = "agora", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub db: DbArgs,

    /// The local admin socket (a Unix socket, owner-only). Default: `admin.sock` beside the data
    /// directory (for `surrealkv://data/agora`, `data/admin.sock`); none for `mem://` and `ws://`
    /// unless set.
    #[arg(long, env = "AGORA_ADMIN_SOCKET", global = true)]
    pub admin_socket: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the services, each on its own listener, until SIGINT or SIGTERM.
    Serve(Box<ServeArgs>),
    /// Operator commands. They reach a running server through its admin socket, or open the store
    /// directly when no server runs.
    #[command(subcommand)]
    Admin(AdminCommand),
}

/// Where the data lives.
#[derive(Debug, Clone, Args)]
pub struct DbArgs {
    /// SurrealDB address: `surrealkv://<dir>` (embedded, on disk), `mem://` (in memory, for tests)
    /// or `ws://host:port` (a SurrealDB server).
    #[arg(long = "db", env = "AGORA_DB", default_value = "surrealkv://data/agora", global = true)]
    pub address: String,
    /// User for a `ws://` SurrealDB server (root user).
    #[arg(long = "db-user", env = "AGORA_DB_USER", global = true)]
    pub user: Option<String>,
    /// Password for a `ws://` SurrealDB server.
    #[arg(long = "db-pass", env = "AGORA_DB_PASS", global = true, hide_env_values = true)]
    pub pass: Option<String>,
    /// SurrealDB namespace.
    #[arg(long = "db-namespace", env = "AGORA_DB_NAMESPACE", default_value = "agora", global = true)]
    pub namespace: String,
    /// SurrealDB database.
    #[arg(long = "db-database", env = "AGORA_DB_DATABASE", default_value = "agora", global = true)]
    pub database: String,
}

impl DbArgs {
    pub fn to_settings(&self) -> DbSettings {
        DbSettings {
            address: self.address.clone(),
            user: self.user.clone(),
            pass: self.pass.clone(),
            namespace: self.namespace.clone(),
            database: self.database.clone(),
        }
    }
}

/// The four services agora runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ValueEnum)]
pub enum Service {
    /// The chat API and the live socket (`/cable`).
    Chat,
    /// The public pages site.
    Pages,
    /// The statistics service.
    Stats,
    /// The demo sign-up API and its confirm page.
    Signup,
}

impl Service {
    pub const ALL: [Service; 4] = [Service::Chat, Service::Pages, Service::Stats, Service::Signup];

    pub fn name(self) -> &'static str {
        match self {
            Service::Chat => "chat",
            Service::Pages => "pages",
            Service::Stats => "stats",
            Service::Signup => "signup",
        }
    }
}

/// How text messages of the sign-up demo are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum SmsSender {
    /// Texts go to a stored outbox (`agora admin signup outbox`); nothing leaves the machine.
    #[default]
    Log,
    /// Twilio's Messages API.
    Twilio,
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Which services to run, comma-separated.
    #[arg(long, env = "AGORA_SERVICES", value_delimiter = ',', default_value = "chat,pages,stats,signup")]
    pub services: Vec<Service>,

    /// Listen address of the chat API and live socket.
    #[arg(long, env = "AGORA_CHAT_ADDR", default_value = "127.0.0.1:4000")]
    pub chat_addr: SocketAddr,
    /// Listen address of the public pages site.
    #[arg(long, env = "AGORA_PAGES_ADDR", default_value = "127.0.0.1:4001")]
    pub pages_addr: SocketAddr,
    /// Listen address of the statistics service.
    #[arg(long, env = "AGORA_STATS_ADDR", default_value = "127.0.0.1:4002")]
    pub stats_addr: SocketAddr,
    /// Listen address of the demo sign-up API.
    #[arg(long, env = "AGORA_SIGNUP_ADDR", default_value = "127.0.0.1:4003")]
    pub signup_addr: SocketAddr,

    /// Public base URL of the chat service (default: `http://` + its listen address).
    #[arg(long, env = "AGORA_CHAT_BASE_URL")]
    pub chat_base_url: Option<String>,
    /// Public base URL of the pages site (default: `http://` + its listen address).
    #[arg(long, env = "AGORA_PAGES_BASE_URL")]
    pub pages_base_url: Option<String>,
    /// Public base URL of the statistics service (default: `http://` + its listen address).
    #[arg(long, env = "AGORA_STATS_BASE_URL")]
    pub stats_base_url: Option<String>,
    /// Public base URL of the sign-up service (default: `http://` + its listen address).
    #[arg(long, env = "AGORA_SIGNUP_BASE_URL")]
    pub signup_base_url: Option<String>,

    /// The statistics admin token (Bearer). Tokens made with `agora admin stats-token` work too.
    #[arg(long, env = "AGORA_STATS_ADMIN_TOKEN", hide_env_values = true)]
    pub stats_admin_token: Option<String>,

    /// How sign-up texts are sent.
    #[arg(long, env = "AGORA_SMS", value_enum, default_value_t = SmsSender::Log)]
    pub sms: SmsSender,
    /// Base URL of Twilio's API (tests point it at a fake on loopback).
    #[arg(long, env = "AGORA_TWILIO_BASE_URL", default_value = "https://api.twilio.com")]
    pub twilio_base_url: String,
    /// Twilio account SID.
    #[arg(long, env = "AGORA_TWILIO_ACCOUNT_SID")]
    pub twilio_account_sid: Option<String>,
    /// Twilio auth token.
    #[arg(long, env = "AGORA_TWILIO_AUTH_TOKEN", hide_env_values = true)]
    pub twilio_auth_token: Option<String>,
    /// The number texts are sent from.
    #[arg(long, env = "AGORA_TWILIO_FROM")]
    pub twilio_from: Option<String>,
    /// HMAC key for phone numbers and codes; when unset one is generated once and stored.
    #[arg(long, env = "AGORA_SIGNUP_KEY", hide_env_values = true)]
    pub signup_key: Option<String>,

    /// Messages one credential may post per minute (chat.md: 60). Raise it only for load tests.
    #[arg(long, env = "AGORA_POSTS_PER_MINUTE", default_value_t = 60)]
    pub posts_per_minute: u32,
    /// Reads one credential may make per minute.
    #[arg(long, env = "AGORA_READS_PER_MINUTE", default_value_t = 1200)]
    pub reads_per_minute: u32,

    /// The most live sockets (`/cable`) held at once; more are refused with 503.
    #[arg(long, env = "AGORA_MAX_SOCKETS", default_value_t = 20_000)]
    pub max_sockets: usize,

    /// Seconds a connection may take to send a request's headers (and may sit idle between
    /// requests) before it is closed: the guard against slow-header (slowloris) clients.
    #[arg(long, env = "AGORA_HEADER_TIMEOUT", default_value_t = 10)]
    pub header_timeout: u64,
    /// Seconds a request may take, body upload included, before it is answered `408`.
    #[arg(long, env = "AGORA_REQUEST_TIMEOUT", default_value_t = 30)]
    pub request_timeout: u64,

    /// The time source: the system clock, except in tests, which pass a manual one.
    #[arg(skip)]
    pub clock: Clock,
}

impl ServeArgs {
    /// The settings as they are with no flags and no environment: what tests start from.
    pub fn defaults() -> ServeArgs {
        ServeArgs {
            services: Service::ALL.to_vec(),
            chat_addr: SocketAddr::from(([127, 0, 0, 1], 4000)),
            pages_addr: SocketAddr::from(([127, 0, 0, 1], 4001)),
            stats_addr: SocketAddr::from(([127, 0, 0, 1], 4002)),
            signup_addr: SocketAddr::from(([127, 0, 0, 1], 4003)),
            chat_base_url: None,
            pages_base_url: None,
            stats_base_url: None,
            signup_base_url: None,
            stats_admin_token: None,
            sms: SmsSender::Log,
            twilio_base_url: "https://api.twilio.com".into(),
            twilio_account_sid: None,
            twilio_auth_token: None,
            twilio_from: None,
            signup_key: None,
            posts_per_minute: 60,
            reads_per_minute: 1200,
            max_sockets: 20_000,
            header_timeout: 10,
            request_timeout: 30,
            clock: Clock::system(),
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Create the first staff person; prints a browser session token and a person key, once.
    Bootstrap {
        /// The person's display name.
        #[arg(long)]
        name: String,
        /// The person's handle (`^[a-z0-9][a-z0-9_.-]{0,31}$`), used for `@mentions`.
        #[arg(long)]
        handle: String,
        /// The person's e-mail address.
        #[arg(long)]
        email: String,
        /// Print one JSON object: `{"person_id", "session_token", "person_key"}`.
        #[arg(long)]
        json: bool,
    },
    /// Print a new statistics admin token, once; only its hash is kept.
    StatsToken {
        /// Print one JSON object: `{"token"}`.
        #[arg(long)]
        json: bool,
    },
    /// Print a new browser session token for a person.
    Session {
        /// The person's handle.
        #[arg(long)]
        handle: String,
        /// Print one JSON object: `{"session_token"}`.
        #[arg(long)]
        json: bool,
    },
    /// Print a one-use sign-in link for the web client, valid 15 minutes; only its hash is kept.
    LoginLink {
        /// The person's handle.
        #[arg(long)]
        handle: String,
        /// The chat service's public base URL the link starts with (default: the running
        /// server's, else `http://127.0.0.1:4000`).
        #[arg(long, env = "AGORA_CHAT_BASE_URL")]
        chat_base_url: Option<String>,
        /// Print one JSON object: `{"url", "expires_at"}`.
        #[arg(long)]
        json: bool,
    },
    /// The demo sign-up: open or close the demo, invite testers, read the outbox.
    #[command(subcommand)]
    Signup(SignupCommand),
}

/// `agora admin signup ...`.
#[derive(Debug, Subcommand)]
pub enum SignupCommand {
    /// Open the demo to anyone: every valid number may get a code text (within the limits).
    Open {
        /// Print one JSON object: `{"open": true}`.
        #[arg(long)]
        json: bool,
    },
    /// Close the demo: only invited testers get code texts (the default).
    Close {
        /// Print one JSON object: `{"open": false}`.
        #[arg(long)]
        json: bool,
    },
    /// Show whether the demo is open, how many testers are invited and today's texts.
    Status {
        /// Print one JSON object: `{"open", "testers", "day", "texts_today"}`.
        #[arg(long)]
        json: bool,
    },
    /// Invite a tester: their number gets code texts while the demo is closed. Only its keyed hash
    /// is stored.
    Invite {
        /// The tester's US mobile number.
        #[arg(long)]
        phone: String,
        /// The HMAC key the server uses, when it is set by the environment.
        #[arg(long, env = "AGORA_SIGNUP_KEY", hide_env_values = true)]
        signup_key: Option<String>,
        /// Print one JSON object: `{"invited": true, "to_last4"}`.
        #[arg(long)]
        json: bool,
    },
    /// Withdraw a tester's invitation.
    Uninvite {
        /// The tester's US mobile number.
        #[arg(long)]
        phone: String,
        /// The HMAC key the server uses, when it is set by the environment.
        #[arg(long, env = "AGORA_SIGNUP_KEY", hide_env_values = true)]
        signup_key: Option<String>,
        /// Print one JSON object: `{"uninvited": bool, "to_last4"}`.
        #[arg(long)]
        json: bool,
    },
    /// Print the texts of the `log` sender, newest first (the bodies hold the codes).
    Outbox {
        /// How many texts, at most.
        #[arg(long, default_value_t = 50)]
        limit: u32,
        /// Print one JSON object: `{"texts": [{"at", "public_id", "to_last4", "body"}]}`.
        #[arg(long)]
        json: bool,
    },
}
