//! Tracing: human-readable lines on standard error, filtered by `RUST_LOG`.

use std::io::IsTerminal as _;

use tracing_subscriber::EnvFilter;

/// What is logged when `RUST_LOG` is not set: agora's own info lines, and only warnings from the
/// storage engine, which is chatty at info (and warns at every close that it closes from a
/// thread without a runtime, after it has already flushed and closed).
const DEFAULT_FILTER: &str = "info,surrealdb=warn,surrealdb_core=warn,surrealkv=error";

/// Installs the global subscriber. Standard output stays free for command results.
pub fn init(default_filter: Option<&str>) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(default_filter.unwrap_or(DEFAULT_FILTER)));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .try_init();
}
