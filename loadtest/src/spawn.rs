//! Processes the load generator starts itself: agora on a temporary SurrealKV directory, and the
//! bare `baseline` broadcast server; and pinning to CPUs with `taskset`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde_json::Value;
use tokio::process::{Child, Command};

/// Pins this process (and the threads it starts afterwards) to `cpus` (a taskset list, `1` or `0-1`).
pub fn pin_self(cpus: &str) -> anyhow::Result<()> {
    let status = std::process::Command::new("taskset")
        .args(["-p", "-c", cpus, &std::process::id().to_string()])
        .stdout(Stdio::null())
        .status()
        .context("taskset (util-linux) is needed for --client-cpus")?;
    if !status.success() {
        bail!("taskset -p -c {cpus} failed");
    }
    Ok(())
}

/// A command, behind `taskset -c cpus` when pinned.
fn command(program: &Path, cpus: Option<&str>) -> Command {
    match cpus {
        Some(cpus) => {
            let mut c = Command::new("taskset");
            c.arg("-c").arg(cpus).arg(program);
            c
        }
        None => Command::new(program),
    }
}

/// A free TCP port on 127.0.0.1 (bound, then released for the server to take).
pub fn free_port() -> anyhow::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

/// Where the `agora` binary is: the option, or beside this executable.
pub fn agora_bin(explicit: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    if let Some(p) = explicit {
        return Ok(p);
    }
    let me = std::env::current_exe()?;
    let beside = me.with_file_name("agora");
    if beside.exists() {
        return Ok(beside);
    }
    bail!(
        "no agora binary beside {} (build it with `cargo build --release -p agora`, or pass --agora-bin)",
        me.display()
    )
}

/// A running server this process started; stopped (SIGTERM, then SIGKILL) on [`Spawned::stop`] or drop.
pub struct Spawned {
    pub child: Child,
    pub pid: u32,
    dir: Option<PathBuf>,
}

impl Spawned {
    pub async fn stop(mut self) {
        let _ = std::process::Command::new("kill").arg("-TERM").arg(self.pid.to_string()).status();
        if tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await.is_err() {
            let _ = self.child.kill().await;
        }
        if let Some(dir) = self.dir.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        if let Some(dir) = self.dir.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// A spawned agora: its URLs, a staff session token and its data directory.
pub struct Agora {
    pub process: Spawned,
    pub chat_url: String,
    pub signup_url: String,
    pub token: String,
    pub db: String,
    pub bin: PathBuf,
}

/// Runs `agora admin <args> --json` against `db` and returns its JSON answer.
pub async fn admin(bin: &Path, db: &str, args: &[&str]) -> anyhow::Result<Value> {
    let out = Command::new(bin)
        .arg("admin")
        .args(args)
        .arg("--json")
        .env("AGORA_DB", db)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .output()
        .await
        .with_context(|| format!("running {}", bin.display()))?;
    if !out.status.success() {
        bail!("agora admin {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
    }
    serde_json::from_slice(&out.stdout).context("agora admin answered no JSON")
}

/// Starts agora on a fresh temporary SurrealKV directory with the chat and sign-up services on
/// free ports, the post and read limits lifted, the socket cap at `max_sockets`; bootstraps a
/// staff person (and opens the sign-up demo) before it starts; waits until it answers.
pub async fn agora(bin: PathBuf, cpus: Option<&str>, max_sockets: usize) -> anyhow::Result<Agora> {
    let dir = std::env::temp_dir().join(format!(
        "agora-loadtest-{}-{}",
        std::process::id(),
        crate::common::now_nanos()
    ));
    std::fs::create_dir_all(&dir)?;
    let db = format!("surrealkv://{}/agora", dir.display());
    let boot = admin(
        &bin,
        &db,
        &["bootstrap", "--name", "Load Test", "--handle", "loadtest", "--email", "load@example.com"],
    )
    .await?;
    let token = boot["session_token"].as_str().context("bootstrap gave no session_token")?.to_owned();
    admin(&bin, &db, &["signup", "open"]).await?;
    let (chat_port, signup_port) = (free_port()?, free_port()?);
    let child = command(&bin, cpus)
        .arg("serve")
        .args(["--services", "chat,signup"])
        .arg("--chat-addr")
        .arg(format!("127.0.0.1:{chat_port}"))
        .arg("--signup-addr")
        .arg(format!("127.0.0.1:{signup_port}"))
        .args(["--posts-per-minute", "100000000", "--reads-per-minute", "100000000"])
        .arg("--max-sockets")
        .arg(max_sockets.to_string())
        .env("AGORA_DB", &db)
        // One log line per request costs a quarter of the post rate (README): warnings only.
        .env("RUST_LOG", std::env::var("AGORA_LOADTEST_SERVER_LOG").unwrap_or_else(|_| "warn".into()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))?;
    let pid = child.id().context("agora exited at once")?;
    let process = Spawned { child, pid, dir: Some(dir) };
    let chat_url = format!("http://127.0.0.1:{chat_port}");
    let signup_url = format!("http://127.0.0.1:{signup_port}");
    let client = crate::common::Client::new(&chat_url, &token)?;
    let started = Instant::now();
    loop {
        if client.get("/me").await.is_ok() {
            break;
        }
        if started.elapsed() > Duration::from_secs(60) {
            bail!("agora did not answer at {chat_url} within 60 s");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!("spawned agora (pid {pid}) at {chat_url}, sign-up at {signup_url}, data in {db}");
    Ok(Agora { process, chat_url, signup_url, token, db, bin })
}

/// Starts this executable's `baseline` subcommand as a separate process on a free port and waits
/// until it accepts connections; returns it and its ws:// URL.
pub async fn baseline(cpus: Option<&str>) -> anyhow::Result<(Spawned, String)> {
    let me = std::env::current_exe()?;
    let port = free_port()?;
    let listen = format!("127.0.0.1:{port}");
    let child = command(&me, cpus)
        .args(["baseline", "--listen", &listen])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let pid = child.id().context("baseline exited at once")?;
    let started = Instant::now();
    while tokio::net::TcpStream::connect(&listen).await.is_err() {
        if started.elapsed() > Duration::from_secs(10) {
            bail!("the baseline did not listen on {listen}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    eprintln!("spawned baseline (pid {pid}) at ws://{listen}");
    Ok((Spawned { child, pid, dir: None }, format!("ws://{listen}")))
}
