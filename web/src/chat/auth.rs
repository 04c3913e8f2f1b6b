//! Credentials and limits: who is calling, what they may do, and how often.
//!
//! Every chat operation has one access level (`x-agora-access` in the OpenAPI description):
//! `read` (any valid credential), `member` (a credential that may write) or `staff` (a staff
//! person's browser session). The extractors here enforce them: a missing, unknown, revoked or
//! expired credential is `401`; a known one without the right is `403`.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use agora_actors::chat::rules::Caller;
use axum::extract::{FromRef, FromRequestParts};
use governor::clock::{Clock as _, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use http::request::Parts;

use super::ChatState;
use super::error::ApiError;

/// Per-credential limits (GCRA). The keyed state grows with the credentials seen; a sweeper drops
/// entries that have been idle long enough to be full again, so it stays bounded by the active ones.
pub struct Limits {
    posts: DefaultKeyedRateLimiter<String>,
    reads: DefaultKeyedRateLimiter<String>,
}

impl Limits {
    /// `posts` a minute (chat.md: 60) and `reads` a minute (generous: there to stop a runaway
    /// loop) per credential.
    pub fn new(posts: u32, reads: u32) -> Arc<Limits> {
        let per_minute = |n: u32| Quota::per_minute(NonZeroU32::new(n).unwrap_or(NonZeroU32::MIN));
        let limits = Arc::new(Limits {
            posts: RateLimiter::keyed(per_minute(posts)),
            reads: RateLimiter::keyed(per_minute(reads)),
        });
        let weak = Arc::downgrade(&limits);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(60));
            loop {
                tick.tick().await;
                let Some(limits) = weak.upgrade() else { break };
                limits.posts.retain_recent();
                limits.reads.retain_recent();
            }
        });
        limits
    }

    fn check(limiter: &DefaultKeyedRateLimiter<String>, key: &str) -> Result<(), ApiError> {
        limiter.check_key(&key.to_owned()).map_err(|not_until| {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            ApiError::rate_limited(wait.as_secs() + u64::from(wait.subsec_nanos() > 0))
        })
    }

    /// Counts one post by `credential`; `429` with `Retry-After` past 60 a minute.
    pub fn post(&self, credential: &str) -> Result<(), ApiError> {
        Self::check(&self.posts, credential)
    }

    pub fn read(&self, credential: &str) -> Result<(), ApiError> {
        Self::check(&self.reads, credential)
    }
}

/// The bearer token of a request, if it carries one.
fn bearer(parts: &Parts) -> Option<&str> {
    let value = parts.headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim()).filter(|t| !t.is_empty())
}

async fn authenticate(parts: &Parts, state: &ChatState) -> Result<Caller, ApiError> {
    let token = bearer(parts).ok_or_else(ApiError::unauthorized)?;
    if token.len() > 512 {
        return Err(ApiError::unauthorized());
    }
    let principal = state.chat.store().authenticate(token).await?.ok_or_else(ApiError::unauthorized)?;
    Ok(Caller::from_principal(&principal))
}

/// The access levels of `x-agora-access`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Read,
    Member,
    Staff,
}

/// Authenticates the request and checks it against `level`.
async fn admit(parts: &Parts, state: &ChatState, level: Level) -> Result<Caller, ApiError> {
    let caller = authenticate(parts, state).await?;
    match level {
        Level::Read => {
            if parts.method == http::Method::GET {
                state.limits.read(&caller.credential_id)?;
            }
        }
        Level::Member if !caller.may_write() => {
            return Err(ApiError::forbidden("This credential has read scope: it cannot write."));
        }
        Level::Staff if !caller.is_staff() => {
            return Err(ApiError::forbidden(
                "Only staff, signed in to the web site, may do this (person keys and connectors never get staff powers).",
            ));
        }
        Level::Member | Level::Staff => {}
    }
    Ok(caller)
}

/// Access level `read`: any valid credential.
pub struct Reader(pub Caller);

/// Access level `member`: any credential that may write.
pub struct Writer(pub Caller);

/// Access level `staff`: a staff person's browser session.
pub struct Staff(pub Caller);

macro_rules! access_extractor {
    ($name:ident, $level:expr) => {
        impl<S> FromRequestParts<S> for $name
        where
            ChatState: FromRef<S>,
            S: Send + Sync,
        {
            type Rejection = ApiError;

            async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
                admit(parts, &ChatState::from_ref(state), $level).await.map($name)
            }
        }
    };
}

access_extractor!(Reader, Level::Read);
access_extractor!(Writer, Level::Member);
access_extractor!(Staff, Level::Staff);
