//! The `SignupDesk`: the one place that decides whether a code text goes out, and that changes a
//! sign-up's state.
//!
//! It owns the per-number and per-demo daily counters (kept in storage, so they survive a restart),
//! reads the opt-out list, the demo's openness and the invited testers from storage on each
//! decision (so `agora admin signup ...` takes effect at once, with or without a server), and holds
//! the text sender. Because one actor handles every start and every code attempt in turn, a
//! counter or a wrong-code count is never raced. Its mailbox is unbounded (ractor's), but every
//! message comes from a request that passed the per-address and global limits of the web layer.
//!
//! A sweeper deletes records older than 7 days: every 10 minutes of real time, and on a start when
//! an hour has passed by the desk's clock since the last sweep (so tests that move the clock see it).

pub mod sender;

use std::sync::Arc;
use std::time::Duration;

use agora_storage::secret::constant_time_eq;
use agora_storage::signup::{
    Code, DemoDay, FirstName, LOCK_MS, MAX_WRONG_CODES, PhoneNumber, PublicId, Reason, Signup, SignupKey,
    SignupState, TEXTS_PER_DEMO_PER_DAY, TEXTS_PER_NUMBER_PER_DAY, TzError,
};
use agora_storage::time::Clock;
use agora_storage::{StorageError, Store};
use ractor::{Actor, ActorCell, ActorProcessingErr, ActorRef, RpcReplyPort};

pub use sender::{LogSender, OutgoingText, SendError, SmsConfig, TextSender, TwilioSender};

/// The longest a caller waits for the desk: a start may wait on the SMS provider (10 s at most).
const CALL_TIMEOUT: Duration = Duration::from_secs(20);
/// Real-time period of the sweeper.
const SWEEP_EVERY: Duration = Duration::from_secs(600);
/// By the desk's clock, the least time between two sweeps triggered by traffic.
const SWEEP_AFTER_MS: i64 = 3_600_000;

/// What the help keyword answers, and what the desk texts nobody on its own.
pub const HELP_TEXT: &str = "agora demo: test codes for a preview system that holds made-up patients only; it gives no medical care or advice. Msg&data rates may apply. Reply STOP to opt out, START to opt back in. If you need help now, call 911.";
pub const STOP_TEXT: &str =
    "agora demo: you are opted out and will get no more texts from this demo. Reply START to opt back in.";
pub const START_TEXT: &str = "agora demo: you are opted back in. Reply STOP to opt out, HELP for help.";

#[derive(Debug, thiserror::Error)]
pub enum DeskError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    TimeZone(#[from] TzError),
    #[error("the sign-up desk did not answer: {0}")]
    Unavailable(String),
    #[error("the sign-up desk could not start: {0}")]
    Config(String),
}

/// A valid sign-up request.
#[derive(Debug, Clone)]
pub struct NewSignup {
    pub first_name: FirstName,
    pub phone: PhoneNumber,
    /// Checked and not kept: nothing the demo does needs it, and it must not hold health details.
    pub reason: Option<Reason>,
}

/// The answer to a start. Whether a text went out is deliberately not in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartOutcome {
    Accepted {
        public_id: PublicId,
    },
    /// The demo sent its texts for the Chicago day; try again in this many seconds.
    DemoFull {
        retry_after_secs: i64,
    },
}

/// The outcome of a code typed on the confirm page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfirmOutcome {
    Confirmed,
    AlreadyConfirmed,
    WrongCode {
        tries_left: u32,
    },
    /// Locked until this time (ms), by this or earlier wrong codes.
    Locked {
        until: i64,
    },
    Expired,
    NotFound,
}

/// A keyword texted to the demo's number, as Twilio's opt-out handling knows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keyword {
    Stop,
    Start,
    Help,
}

impl Keyword {
    /// The whole message, trimmed and in any case, must be one keyword; anything else is no keyword.
    pub fn parse(body: &str) -> Option<Keyword> {
        match body.trim().to_ascii_uppercase().as_str() {
            "STOP" | "STOPALL" | "UNSUBSCRIBE" | "CANCEL" | "END" | "QUIT" => Some(Keyword::Stop),
            "START" | "UNSTOP" => Some(Keyword::Start),
            "HELP" | "INFO" => Some(Keyword::Help),
            _ => None,
        }
    }

    /// The reply texted back.
    pub fn reply(self) -> &'static str {
        match self {
            Keyword::Stop => STOP_TEXT,
            Keyword::Start => START_TEXT,
            Keyword::Help => HELP_TEXT,
        }
    }
}

pub enum DeskMsg {
    Start(NewSignup, RpcReplyPort<Result<StartOutcome, DeskError>>),
    Confirm(PublicId, Code, RpcReplyPort<Result<ConfirmOutcome, DeskError>>),
    Inbound(PhoneNumber, Keyword, RpcReplyPort<Result<(), DeskError>>),
    Sweep,
}

/// What the desk starts from.
pub struct DeskArgs {
    pub store: Store,
    pub clock: Clock,
    pub key: SignupKey,
    pub sender: Box<dyn TextSender>,
    /// Written into the text: `{base_url}/signup/<public_id>`.
    pub base_url: String,
}

pub struct DeskState {
    args: DeskArgs,
    last_sweep: Option<i64>,
}

pub struct SignupDesk;

impl Actor for SignupDesk {
    type Msg = DeskMsg;
    type State = DeskState;
    type Arguments = DeskArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<DeskMsg>,
        args: DeskArgs,
    ) -> Result<DeskState, ActorProcessingErr> {
        // Stops by itself when the actor stops.
        myself.send_interval(SWEEP_EVERY, || DeskMsg::Sweep);
        Ok(DeskState { args, last_sweep: None })
    }

    async fn handle(
        &self,
        _me: ActorRef<DeskMsg>,
        msg: DeskMsg,
        state: &mut DeskState,
    ) -> Result<(), ActorProcessingErr> {
        // Errors go back to the caller; the desk itself keeps running.
        match msg {
            DeskMsg::Start(new, reply) => {
                let _ = reply.send(state.start(new).await);
            }
            DeskMsg::Confirm(id, code, reply) => {
                let _ = reply.send(state.confirm(&id, &code).await);
            }
            DeskMsg::Inbound(from, keyword, reply) => {
                let _ = reply.send(state.inbound(&from, keyword).await);
            }
            DeskMsg::Sweep => {
                let now = state.args.clock.now_ms();
                state.sweep(now).await;
            }
        }
        Ok(())
    }
}

impl DeskState {
    async fn sweep(&mut self, now: i64) {
        self.last_sweep = Some(now);
        match self.args.store.sweep_signups(now).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(deleted = n, "swept sign-ups older than 7 days"),
            Err(e) => tracing::warn!("sign-up sweep failed: {e}"),
        }
    }

    async fn start(&mut self, new: NewSignup) -> Result<StartOutcome, DeskError> {
        let now = self.args.clock.now_ms();
        if self.last_sweep.is_none_or(|at| now - at >= SWEEP_AFTER_MS) {
            self.sweep(now).await;
        }
        let store = &self.args.store;
        let day = DemoDay::at(now)?;
        let phone_hash = self.args.key.phone_hash(&new.phone);
        let counts = store.text_counts(&day, &phone_hash).await?;
        if counts.demo >= TEXTS_PER_DEMO_PER_DAY {
            return Ok(StartOutcome::DemoFull { retry_after_secs: day.seconds_left(now) });
        }
        let send = counts.number < TEXTS_PER_NUMBER_PER_DAY
            && !store.is_opted_out(&phone_hash).await?
            && (store.demo_open().await? || store.is_tester(&phone_hash).await?);

        let public_id = PublicId::random();
        let code = Code::random();
        let signup = Signup {
            id: public_id.as_str().to_owned(),
            code_mac: self.args.key.code_mac(&public_id, &code),
            phone_hash,
            created_at: now,
            wrong_codes: 0,
            locked_until: None,
            confirmed_at: None,
        };
        store.create_signup(&signup, send.then_some(&day)).await?;
        if send {
            let confirm_url = format!("{}/signup/{public_id}", self.args.base_url);
            let body = format!(
                "agora demo: {}, your test code is {}. Enter it within 15 minutes at {confirm_url} . Msg&data rates may apply. Reply STOP to opt out, HELP for help.",
                new.first_name.as_str(),
                code.reveal()
            );
            let text = OutgoingText { at: now, public_id: public_id.clone(), to: new.phone, body };
            // The sign-up stands whether or not the provider takes the text: the answer must not
            // differ by number, and the person can start again.
            if let Err(e) = self.args.sender.send(&text).await {
                tracing::warn!(public_id = %public_id, "code text not sent: {e}");
            }
        }
        Ok(StartOutcome::Accepted { public_id })
    }

    async fn confirm(&mut self, id: &PublicId, code: &Code) -> Result<ConfirmOutcome, DeskError> {
        let now = self.args.clock.now_ms();
        let store = &self.args.store;
        let Some(signup) = store.signup(id).await? else { return Ok(ConfirmOutcome::NotFound) };
        Ok(match signup.state(now) {
            SignupState::Confirmed => ConfirmOutcome::AlreadyConfirmed,
            SignupState::Expired => ConfirmOutcome::Expired,
            SignupState::Locked { until } => ConfirmOutcome::Locked { until },
            SignupState::Pending { .. } => {
                let mac = self.args.key.code_mac(id, code);
                if constant_time_eq(mac.as_bytes(), signup.code_mac.as_bytes()) {
                    store.confirm_signup(id, now).await?;
                    ConfirmOutcome::Confirmed
                } else {
                    let wrong = signup.wrong_codes + 1;
                    if wrong >= MAX_WRONG_CODES {
                        // The count starts again once the lock is over.
                        store.record_wrong_code(id, 0, Some(now + LOCK_MS)).await?;
                        ConfirmOutcome::Locked { until: now + LOCK_MS }
                    } else {
                        store.record_wrong_code(id, wrong, signup.locked_until).await?;
                        ConfirmOutcome::WrongCode { tries_left: MAX_WRONG_CODES - wrong }
                    }
                }
            }
        })
    }

    async fn inbound(&mut self, from: &PhoneNumber, keyword: Keyword) -> Result<(), DeskError> {
        let hash = self.args.key.phone_hash(from);
        match keyword {
            Keyword::Stop => {
                self.args.store.opt_out(&hash, self.args.clock.now_ms()).await?;
                tracing::info!(to_last4 = from.last4(), "number opted out of demo texts");
            }
            Keyword::Start => {
                if self.args.store.opt_in(&hash).await? {
                    tracing::info!(to_last4 = from.last4(), "number opted back in to demo texts");
                }
            }
            Keyword::Help => {}
        }
        Ok(())
    }
}

/// Stops the desk when the last [`Desk`] handle goes (when the service's router is dropped at
/// shutdown), so it never outlives the store it writes to.
struct StopOnDrop(ActorCell);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.stop(Some("the sign-up service stopped".into()));
    }
}

/// What the web layer holds: a cheap, cloneable handle on the running desk.
#[derive(Clone)]
pub struct Desk {
    actor: ActorRef<DeskMsg>,
    _stop: Arc<StopOnDrop>,
}

/// Everything the desk needs to start.
pub struct DeskConfig {
    pub store: Store,
    pub clock: Clock,
    /// `AGORA_SIGNUP_KEY`; when unset, the key stored in the database (made once).
    pub key: Option<String>,
    pub sms: SmsConfig,
    pub base_url: String,
    /// The supervisor to link the desk under (the root); `None` runs it alone.
    pub supervisor: Option<ractor::ActorCell>,
}

impl Desk {
    /// Resolves the key and the sender and starts the desk (unnamed, so several apps can run in
    /// one process, as the tests do).
    pub async fn start(config: DeskConfig) -> Result<Desk, DeskError> {
        let key = config.store.signup_key(config.key.as_deref()).await?;
        let sender: Box<dyn TextSender> = match &config.sms {
            SmsConfig::Log => Box::new(LogSender { store: config.store.clone() }),
            SmsConfig::Twilio { base_url, account_sid, auth_token, from } => Box::new(
                TwilioSender::new(base_url, account_sid, auth_token, from)
                    .map_err(|e| DeskError::Config(e.to_string()))?,
            ),
        };
        let args =
            DeskArgs { store: config.store, clock: config.clock, key, sender, base_url: config.base_url };
        let spawned = match config.supervisor {
            Some(supervisor) => Actor::spawn_linked(None, SignupDesk, args, supervisor).await,
            None => Actor::spawn(None, SignupDesk, args).await,
        };
        let (actor, _) = spawned.map_err(|e| DeskError::Config(e.to_string()))?;
        let stop = Arc::new(StopOnDrop(actor.get_cell()));
        Ok(Desk { actor, _stop: stop })
    }

    pub async fn start_signup(&self, new: NewSignup) -> Result<StartOutcome, DeskError> {
        self.call(|reply| DeskMsg::Start(new, reply)).await
    }

    pub async fn confirm(&self, id: PublicId, code: Code) -> Result<ConfirmOutcome, DeskError> {
        self.call(|reply| DeskMsg::Confirm(id, code, reply)).await
    }

    pub async fn inbound(&self, from: PhoneNumber, keyword: Keyword) -> Result<(), DeskError> {
        self.call(|reply| DeskMsg::Inbound(from, keyword, reply)).await
    }

    async fn call<T: Send + 'static>(
        &self,
        msg: impl FnOnce(RpcReplyPort<Result<T, DeskError>>) -> DeskMsg,
    ) -> Result<T, DeskError> {
        match self.actor.call(msg, Some(CALL_TIMEOUT)).await {
            Ok(ractor::rpc::CallResult::Success(result)) => result,
            Ok(ractor::rpc::CallResult::Timeout) => Err(DeskError::Unavailable("timed out".into())),
            Ok(ractor::rpc::CallResult::SenderError) => Err(DeskError::Unavailable("no reply".into())),
            Err(e) => Err(DeskError::Unavailable(e.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_are_whole_messages_in_any_case() {
        for (body, kw) in [
            ("STOP", Keyword::Stop),
            (" stop ", Keyword::Stop),
            ("Unsubscribe", Keyword::Stop),
            ("stopall", Keyword::Stop),
            ("cancel", Keyword::Stop),
            ("END", Keyword::Stop),
            ("quit", Keyword::Stop),
            ("start", Keyword::Start),
            ("UNSTOP", Keyword::Start),
            ("help", Keyword::Help),
            ("Info", Keyword::Help),
        ] {
            assert_eq!(Keyword::parse(body), Some(kw), "{body}");
        }
        for other in ["", "stop please", "hello", "STOP!", "yes"] {
            assert_eq!(Keyword::parse(other), None, "{other}");
        }
        assert!(Keyword::Help.reply().contains("911"));
    }
}
