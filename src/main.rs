//! The `agora` binary: reads settings, starts tracing, and runs `serve` or an `admin` command.

use std::process::ExitCode;

use agora::settings::{Cli, Command};
use clap::Parser;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(ref args) => {
            agora::telemetry::init(None);
            let running =
                match agora::start(cli.db.to_settings(), cli.admin_socket.clone(), (**args).clone()).await {
                    Ok(running) => running,
                    Err(e) => {
                        tracing::error!("agora could not start: {e:#}");
                        eprintln!("agora: {e:#}");
                        return ExitCode::FAILURE;
                    }
                };
            agora::serve::wait_for_signal().await;
            tracing::info!("shutting down");
            match running.shutdown().await {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("agora: shutdown: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Admin(ref command) => {
            agora::telemetry::init(Some("warn,surrealdb=error,surrealdb_core=error,surrealkv=error"));
            agora::admin::run(&cli, command).await
        }
    }
}
