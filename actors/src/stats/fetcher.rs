//! [`FetcherActor`]: one per enabled site. It fetches on the site's interval (with jitter), backs
//! off after failures, fetches at once when asked, and is the only writer of its site's points.
//!
//! Its mailbox holds at most one pending `Tick` (each fetch schedules the next, and a stale one is
//! recognised by its generation and dropped) plus the admin's `FetchNow` calls, each of which waits
//! for its answer: nothing lets the mailbox grow without bound.

use std::time::{Duration, Instant};

use agora_storage::Store;
use agora_storage::secret::random_bytes;
use agora_storage::stats::{FetchEntry, FetchResult, Site, Slug};
use agora_storage::time::Clock;
use ractor::{Actor, ActorProcessingErr, ActorRef, MessagingErr, RpcReplyPort};
use tokio::task::JoinHandle;

use super::StatsError;
use super::reading::parse_reading;

/// The largest answer a site may give.
pub const MAX_BODY: usize = 1024 * 1024;

/// The longest wait between two fetches after failures (unless the interval itself is longer).
const MAX_BACKOFF: Duration = Duration::from_secs(3600);

/// What every fetcher shares.
#[derive(Clone)]
pub struct FetchDeps {
    pub store: Store,
    pub clock: Clock,
    pub http: reqwest::Client,
}

pub struct FetcherActor;

pub struct FetcherArgs {
    pub site: Site,
    pub deps: FetchDeps,
}

pub enum FetcherMsg {
    /// The timer: fetch if `generation` is still the current one.
    Tick(u64),
    /// Fetch now and answer with the fetch-log entry.
    FetchNow(RpcReplyPort<Result<FetchEntry, StatsError>>),
    /// Fails the actor, as a bug would: lets tests see the supervisor restart it.
    #[cfg(test)]
    Crash,
}

pub struct FetcherState {
    site: Site,
    slug: Slug,
    deps: FetchDeps,
    /// Failed fetches in a row; 0 after a success.
    failures: u32,
    generation: u64,
    timer: Option<JoinHandle<Result<(), MessagingErr<FetcherMsg>>>>,
}

impl FetcherState {
    fn schedule(&mut self, myself: &ActorRef<FetcherMsg>, after: Duration) {
        if let Some(t) = self.timer.take() {
            t.abort();
        }
        self.generation += 1;
        let generation = self.generation;
        self.timer = Some(myself.send_after(after, move || FetcherMsg::Tick(generation)));
    }

    /// The wait before the next fetch: the interval, or after `failures` failures in a row, the
    /// interval doubled for each (up to an hour, or the interval when that is longer); always
    /// with up to ±10% of jitter so sites started together drift apart.
    fn next_delay(&self) -> Duration {
        let interval = Duration::from_millis(u64::try_from(self.site.interval_ms).unwrap_or(900_000));
        let base = if self.failures == 0 {
            interval
        } else {
            let factor = 1u32 << self.failures.min(16);
            interval.saturating_mul(factor).min(MAX_BACKOFF.max(interval))
        };
        jitter(base, 0.1)
    }

    async fn fetch(&mut self) -> Result<FetchEntry, StatsError> {
        let result = fetch_once(&self.deps.http, &self.site, &self.deps.clock).await;
        let entry = self.deps.store.record_fetch(&self.slug, result).await?;
        if entry.ok {
            self.failures = 0;
        } else {
            self.failures = self.failures.saturating_add(1);
            tracing::info!(site = %self.slug, error = ?entry.error, failures = self.failures, "fetch failed");
        }
        Ok(entry)
    }
}

/// `base` moved by a random amount of up to `spread` of itself either way.
fn jitter(base: Duration, spread: f64) -> Duration {
    let r = u64::from_le_bytes(random_bytes::<8>()) as f64 / u64::MAX as f64; // 0..=1
    base.mul_f64(1.0 + spread * (2.0 * r - 1.0))
}

impl Actor for FetcherActor {
    type Msg = FetcherMsg;
    type State = FetcherState;
    type Arguments = FetcherArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        args: FetcherArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        let slug = Slug::parse(&args.site.slug)?;
        Ok(FetcherState { site: args.site, slug, deps: args.deps, failures: 0, generation: 0, timer: None })
    }

    async fn post_start(
        &self,
        myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        // The first fetch comes soon, spread over up to a second (a tenth of the interval when
        // that is shorter) so that many sites starting together do not fetch at the same instant.
        let spread = Duration::from_millis(u64::try_from(state.site.interval_ms / 10).unwrap_or(0).min(1000));
        let first = spread.mul_f64(u64::from_le_bytes(random_bytes::<8>()) as f64 / u64::MAX as f64);
        state.schedule(&myself, first);
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(t) = state.timer.take() {
            t.abort();
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            FetcherMsg::Tick(generation) if generation == state.generation => {
                if let Err(e) = state.fetch().await {
                    // The fetch could not even be recorded (storage trouble): try again later.
                    state.failures = state.failures.saturating_add(1);
                    tracing::warn!(site = %state.slug, error = %e, "recording a fetch failed");
                }
                let delay = state.next_delay();
                state.schedule(&myself, delay);
            }
            FetcherMsg::Tick(_) => {}
            FetcherMsg::FetchNow(reply) => {
                let result = state.fetch().await;
                let _ = reply.send(result);
                let delay = state.next_delay();
                state.schedule(&myself, delay);
            }
            #[cfg(test)]
            FetcherMsg::Crash => return Err("asked to crash".into()),
        }
        Ok(())
    }
}

/// Fetches a site once: the timeout covers connecting, the headers and the whole body, and a body
/// over [`MAX_BODY`] fails the fetch without being read further.
pub async fn fetch_once(http: &reqwest::Client, site: &Site, clock: &Clock) -> FetchResult {
    let started_at = clock.now_ms();
    let t0 = Instant::now();
    let timeout = Duration::from_millis(u64::try_from(site.timeout_ms).unwrap_or(10_000));
    let mut http_status = None;
    let outcome = match tokio::time::timeout(timeout, get(http, &site.url, timeout, &mut http_status)).await {
        Ok(Ok(body)) => parse_reading(&body).map(|(as_of, readings)| {
            let readings = readings.into_iter().filter(|(n, _)| site.tracks(n)).collect();
            (as_of, readings)
        }),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(format!("timed out after {}", site.timeout)),
    };
    FetchResult {
        started_at,
        duration_ms: i64::try_from(t0.elapsed().as_millis()).unwrap_or(i64::MAX),
        http_status,
        outcome,
    }
}

async fn get(
    http: &reqwest::Client,
    url: &str,
    timeout: Duration,
    status_out: &mut Option<u16>,
) -> Result<Vec<u8>, String> {
    let describe = |e: reqwest::Error| {
        if e.is_timeout() {
            "timed out".to_owned()
        } else if e.is_connect() {
            format!("could not connect: {}", e.without_url())
        } else {
            // Without the URL: it may carry a key, and the fetch log is public.
            e.without_url().to_string()
        }
    };
    let mut response = http.get(url).timeout(timeout).send().await.map_err(describe)?;
    let status = response.status();
    *status_out = Some(status.as_u16());
    if !status.is_success() {
        return Err(format!("HTTP {status}"));
    }
    if response.content_length().is_some_and(|n| n > MAX_BODY as u64) {
        return Err("the answer is larger than 1 MiB".into());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(describe)? {
        if body.len() + chunk.len() > MAX_BODY {
            return Err("the answer is larger than 1 MiB".into());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_stays_within_its_spread() {
        let base = Duration::from_secs(100);
        for _ in 0..200 {
            let d = jitter(base, 0.1);
            assert!(d >= Duration::from_secs(90) && d <= Duration::from_secs(110), "{d:?}");
        }
    }
}
