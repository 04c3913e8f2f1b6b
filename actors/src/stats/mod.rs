//! The statistics service's live part: [`FetcherSupervisor`] keeps one [`FetcherActor`] per
//! enabled site and is the one place where sites are created, changed and deleted, so a change
//! takes effect at once: a new or enabled site starts fetching, a disabled or deleted one stops,
//! a changed one restarts with its new settings, and a fetcher that crashes is started again.
//!
//! [`Fetchers`] is the handle the web layer holds. Its calls wait with a timeout; admin calls are
//! few and each waits for its answer, so the supervisor's mailbox stays small.

pub mod fetcher;
pub mod reading;

use std::collections::HashMap;
use std::time::Duration;

use agora_storage::stats::{FetchEntry, NewSite, Site, SitePatch, Slug};
use agora_storage::time::Clock;
use agora_storage::{StorageError, Store};
use ractor::{Actor, ActorCell, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};

pub use fetcher::{FetchDeps, FetcherActor, FetcherArgs, FetcherMsg};

/// How long an admin call may wait: longer than the longest fetch timeout (60 s), since stopping
/// a fetcher waits for its fetch in flight and fetch-now waits for the fetch.
const CALL_TIMEOUT: Duration = Duration::from_secs(90);

/// The most time stopping one fetcher may take before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(70);

/// Why a statistics operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StatsError {
    #[error("there is no site {0}")]
    NotFound(String),
    #[error("a site {0} exists already")]
    Conflict(String),
    #[error("the site {0} is disabled; enable it to fetch")]
    Disabled(String),
    #[error("the statistics service is not answering: {0}")]
    Unavailable(String),
    #[error(transparent)]
    Storage(#[from] StorageError),
}

pub enum SupervisorMsg {
    Create(NewSite, RpcReplyPort<Result<Site, StatsError>>),
    Update(Slug, SitePatch, RpcReplyPort<Result<Site, StatsError>>),
    Delete(Slug, RpcReplyPort<Result<bool, StatsError>>),
    FetchNow(Slug, RpcReplyPort<Result<FetchEntry, StatsError>>),
    /// The slugs that have a running fetcher, sorted.
    Running(RpcReplyPort<Vec<String>>),
    #[cfg(test)]
    CrashFetcher(Slug),
}

pub struct FetcherSupervisor;

pub struct SupervisorState {
    deps: FetchDeps,
    /// The running fetchers by slug; at most one per site.
    fetchers: HashMap<String, ActorRef<FetcherMsg>>,
}

impl SupervisorState {
    async fn start_fetcher(&mut self, myself: &ActorRef<SupervisorMsg>, site: Site) {
        let slug = site.slug.clone();
        let args = FetcherArgs { site, deps: self.deps.clone() };
        match Actor::spawn_linked(None, FetcherActor, args, myself.get_cell()).await {
            Ok((actor, _)) => {
                self.fetchers.insert(slug, actor);
            }
            Err(e) => tracing::error!(site = %slug, error = %e, "could not start a fetcher"),
        }
    }

    async fn stop_fetcher(&mut self, slug: &str) {
        if let Some(actor) = self.fetchers.remove(slug)
            && actor.stop_and_wait(None, Some(STOP_TIMEOUT)).await.is_err()
        {
            actor.kill();
        }
    }

    /// Makes the running fetchers match the stored site: started when enabled (restarted, so it
    /// takes new settings), stopped when disabled or gone.
    async fn sync(&mut self, myself: &ActorRef<SupervisorMsg>, slug: &str, site: Option<Site>) {
        self.stop_fetcher(slug).await;
        if let Some(site) = site.filter(|s| s.enabled) {
            self.start_fetcher(myself, site).await;
        }
    }
}

impl Actor for FetcherSupervisor {
    type Msg = SupervisorMsg;
    type State = SupervisorState;
    type Arguments = FetchDeps;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        deps: FetchDeps,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(SupervisorState { deps, fetchers: HashMap::new() })
    }

    async fn post_start(
        &self,
        myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        for site in state.deps.store.sites().await? {
            if site.enabled {
                state.start_fetcher(&myself, site).await;
            }
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let slugs: Vec<String> = state.fetchers.keys().cloned().collect();
        for slug in slugs {
            state.stop_fetcher(&slug).await;
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let now = state.deps.clock.now_ms();
        match message {
            SupervisorMsg::Create(new, reply) => {
                let slug = new.slug.clone();
                let result = match state.deps.store.create_site(new, now).await {
                    Ok(site) => {
                        state.sync(&myself, &site.slug, Some(site.clone())).await;
                        Ok(site)
                    }
                    Err(StorageError::Conflict(_)) => Err(StatsError::Conflict(slug.to_string())),
                    Err(e) => Err(e.into()),
                };
                let _ = reply.send(result);
            }
            SupervisorMsg::Update(slug, patch, reply) => {
                let result = match state.deps.store.update_site(&slug, patch, now).await {
                    Ok(site) => {
                        state.sync(&myself, &site.slug, Some(site.clone())).await;
                        Ok(site)
                    }
                    Err(StorageError::NotFound(_)) => Err(StatsError::NotFound(slug.to_string())),
                    Err(e) => Err(e.into()),
                };
                let _ = reply.send(result);
            }
            SupervisorMsg::Delete(slug, reply) => {
                // The fetcher stops first, so nothing writes to the site while it is deleted.
                state.stop_fetcher(slug.as_str()).await;
                let result = state.deps.store.delete_site(&slug).await.map_err(StatsError::from);
                let _ = reply.send(result);
            }
            SupervisorMsg::FetchNow(slug, reply) => match state.fetchers.get(slug.as_str()) {
                // The fetcher answers the caller itself, so the supervisor is not held up by a slow site.
                Some(actor) => {
                    if let Err(ractor::MessagingErr::SendErr(FetcherMsg::FetchNow(reply))) =
                        actor.cast(FetcherMsg::FetchNow(reply))
                    {
                        let _ = reply.send(Err(StatsError::Unavailable("the site's fetcher stopped".into())));
                    }
                }
                None => {
                    let result = match state.deps.store.site(&slug).await {
                        Ok(Some(_)) => Err(StatsError::Disabled(slug.to_string())),
                        Ok(None) => Err(StatsError::NotFound(slug.to_string())),
                        Err(e) => Err(e.into()),
                    };
                    let _ = reply.send(result);
                }
            },
            SupervisorMsg::Running(reply) => {
                let mut slugs: Vec<String> = state.fetchers.keys().cloned().collect();
                slugs.sort();
                let _ = reply.send(slugs);
            }
            #[cfg(test)]
            SupervisorMsg::CrashFetcher(slug) => {
                if let Some(actor) = state.fetchers.get(slug.as_str()) {
                    let _ = actor.cast(FetcherMsg::Crash);
                }
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<Self::Msg>,
        event: SupervisionEvent,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        // The default would stop this supervisor whenever a fetcher exits; fetchers exit whenever a
        // site is disabled, so only a failure matters here: start that site's fetcher again.
        if let SupervisionEvent::ActorFailed(cell, err) = event {
            let slug =
                state.fetchers.iter().find(|(_, a)| a.get_id() == cell.get_id()).map(|(s, _)| s.clone());
            if let Some(slug) = slug {
                tracing::error!(site = %slug, error = %err, "fetcher failed; starting it again");
                state.fetchers.remove(&slug);
                let site = match Slug::parse(&slug) {
                    Ok(s) => state.deps.store.site(&s).await?,
                    Err(_) => None,
                };
                if let Some(site) = site.filter(|s| s.enabled) {
                    state.start_fetcher(&myself, site).await;
                }
            }
        }
        Ok(())
    }
}

/// The web layer's handle on the statistics actors.
#[derive(Clone)]
pub struct Fetchers {
    supervisor: ActorRef<SupervisorMsg>,
}

impl Fetchers {
    /// Starts the supervisor, linked under `parent` (the root supervisor), and a fetcher for each
    /// enabled site. Unnamed: actor names are global to the process, and tests run several apps
    /// in one.
    pub async fn start(parent: ActorCell, store: Store, clock: Clock) -> Result<Fetchers, StartError> {
        let http = reqwest::Client::builder()
            .user_agent(concat!("agora-stats/", env!("CARGO_PKG_VERSION")))
            .redirect(reqwest::redirect::Policy::limited(3))
            .build()
            .map_err(|e| StartError(e.to_string()))?;
        let deps = FetchDeps { store, clock, http };
        let (supervisor, _) = Actor::spawn_linked(None, FetcherSupervisor, deps, parent)
            .await
            .map_err(|e| StartError(e.to_string()))?;
        Ok(Fetchers { supervisor })
    }

    async fn call<T: Send + 'static>(
        &self,
        msg: impl FnOnce(RpcReplyPort<Result<T, StatsError>>) -> SupervisorMsg,
    ) -> Result<T, StatsError> {
        match self.supervisor.call(msg, Some(CALL_TIMEOUT)).await {
            Ok(ractor::rpc::CallResult::Success(result)) => result,
            Ok(_) => Err(StatsError::Unavailable("no answer in time".into())),
            Err(e) => Err(StatsError::Unavailable(e.to_string())),
        }
    }

    pub async fn create(&self, new: NewSite) -> Result<Site, StatsError> {
        self.call(|r| SupervisorMsg::Create(new, r)).await
    }

    pub async fn update(&self, slug: Slug, patch: SitePatch) -> Result<Site, StatsError> {
        self.call(|r| SupervisorMsg::Update(slug, patch, r)).await
    }

    /// Deletes a site and its data; `false` when there was none.
    pub async fn delete(&self, slug: Slug) -> Result<bool, StatsError> {
        self.call(|r| SupervisorMsg::Delete(slug, r)).await
    }

    pub async fn fetch_now(&self, slug: Slug) -> Result<FetchEntry, StatsError> {
        self.call(|r| SupervisorMsg::FetchNow(slug, r)).await
    }

    /// The slugs whose fetcher runs.
    pub async fn running(&self) -> Result<Vec<String>, StatsError> {
        match self.supervisor.call(SupervisorMsg::Running, Some(CALL_TIMEOUT)).await {
            Ok(ractor::rpc::CallResult::Success(slugs)) => Ok(slugs),
            Ok(_) => Err(StatsError::Unavailable("no answer in time".into())),
            Err(e) => Err(StatsError::Unavailable(e.to_string())),
        }
    }
}

/// The supervisor could not be started.
#[derive(Debug, thiserror::Error)]
#[error("starting the statistics fetchers: {0}")]
pub struct StartError(String);

#[cfg(test)]
mod tests {
    use super::*;
    use agora_storage::DbSettings;
    use agora_storage::stats::{SiteName, SiteUrl, parse_interval, parse_timeout};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A tracked site on loopback that answers `{"hits": n}` and counts its requests.
    async fn counting_site() -> (String, Arc<AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = hits.clone();
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = sock.read(&mut buf).await;
                    let body = format!("{{\"hits\": {n}}}");
                    let res = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = sock.write_all(res.as_bytes()).await;
                });
            }
        });
        (format!("http://{addr}/"), hits)
    }

    #[tokio::test]
    async fn a_crashed_fetcher_is_started_again() {
        let store = Store::open(&DbSettings::memory()).await.expect("store");
        let (root, _) = Actor::spawn(None, crate::system::RootSupervisor, ()).await.expect("root");
        let fetchers = Fetchers::start(root.get_cell(), store.clone(), Clock::system()).await.expect("start");
        let (url, hits) = counting_site().await;
        let site = NewSite {
            slug: Slug::parse("s").expect("slug"),
            name: SiteName::parse("S").expect("name"),
            url: SiteUrl::parse(&url).expect("url"),
            enabled: true,
            interval: parse_interval("1h").expect("interval"),
            timeout: parse_timeout("5s").expect("timeout"),
            metrics: None,
        };
        fetchers.create(site).await.expect("create");
        let before = fetchers.supervisor.get_children().len();
        assert_eq!(before, 1);
        let first_id = fetchers.supervisor.get_children()[0].get_id();

        fetchers.supervisor.cast(SupervisorMsg::CrashFetcher(Slug::parse("s").expect("slug"))).expect("cast");
        let mut restarted = false;
        for _ in 0..100 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let children = fetchers.supervisor.get_children();
            if children.len() == 1 && children[0].get_id() != first_id {
                restarted = true;
                break;
            }
        }
        assert!(restarted, "a new fetcher took the crashed one's place");
        assert_eq!(fetchers.running().await.expect("running"), vec!["s".to_owned()]);
        // The new fetcher works: fetch-now reaches the site and records the value.
        let seen = hits.load(Ordering::SeqCst);
        let entry = fetchers.fetch_now(Slug::parse("s").expect("slug")).await.expect("fetch");
        assert!(entry.ok, "{entry:?}");
        assert!(hits.load(Ordering::SeqCst) > seen);
        // The supervisor itself survived the crash and is still linked under the root.
        assert_eq!(root.get_children().len(), 1);
        root.stop_and_wait(None, Some(Duration::from_secs(5))).await.expect("stop");
    }
}
