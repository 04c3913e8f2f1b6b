//! The text senders behind the [`TextSender`] trait: [`LogSender`] (the default: a stored outbox,
//! so a demo runs with no SMS account) and [`TwilioSender`] (Twilio's Messages API at a base URL
//! that tests point at a fake on loopback).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use agora_storage::Store;
use agora_storage::signup::{PhoneNumber, PublicId};

/// A future a sender returns; boxed so the desk can hold either sender behind one trait object.
pub type SendFuture<'a> = Pin<Box<dyn Future<Output = Result<(), SendError>> + Send + 'a>>;

/// One code text on its way out.
#[derive(Debug, Clone)]
pub struct OutgoingText {
    /// When it was sent, by the desk's clock (ms).
    pub at: i64,
    pub public_id: PublicId,
    pub to: PhoneNumber,
    /// Holds the code: never logged.
    pub body: String,
}

#[derive(Debug, thiserror::Error)]
pub enum SendError {
    #[error("the outbox could not be written: {0}")]
    Outbox(#[from] agora_storage::StorageError),
    #[error("the SMS provider could not be reached: {0}")]
    Unreachable(#[from] reqwest::Error),
    #[error("the SMS provider refused the text with HTTP status {0}")]
    Refused(u16),
}

/// Something that delivers a text. The desk is its only caller.
pub trait TextSender: Send + Sync + 'static {
    fn send<'a>(&'a self, text: &'a OutgoingText) -> SendFuture<'a>;
}

/// How texts are sent, as the operator configured it.
#[derive(Debug, Clone)]
pub enum SmsConfig {
    /// The stored outbox.
    Log,
    /// Twilio's Messages API.
    Twilio { base_url: String, account_sid: String, auth_token: String, from: String },
}

/// Writes texts to the stored outbox (`agora admin signup outbox`) and logs a line without the code.
pub struct LogSender {
    pub store: Store,
}

impl TextSender for LogSender {
    fn send<'a>(&'a self, text: &'a OutgoingText) -> SendFuture<'a> {
        Box::pin(async move {
            self.store.add_outbox_text(text.at, &text.public_id, text.to.last4(), &text.body).await?;
            tracing::info!(public_id = %text.public_id, to_last4 = text.to.last4(), "code text written to the outbox");
            Ok(())
        })
    }
}

/// Sends through Twilio: `POST {base}/2010-04-01/Accounts/{sid}/Messages.json` with basic auth
/// and the form fields `To`, `From`, `Body`.
pub struct TwilioSender {
    http: reqwest::Client,
    base_url: String,
    account_sid: String,
    auth_token: String,
    from: String,
}

impl TwilioSender {
    pub fn new(
        base_url: &str,
        account_sid: &str,
        auth_token: &str,
        from: &str,
    ) -> Result<TwilioSender, SendError> {
        // A hung provider must not hold the desk (its one caller) for long.
        let http = reqwest::Client::builder().timeout(Duration::from_secs(10)).build()?;
        Ok(TwilioSender {
            http,
            base_url: base_url.trim_end_matches('/').to_owned(),
            account_sid: account_sid.to_owned(),
            auth_token: auth_token.to_owned(),
            from: from.to_owned(),
        })
    }
}

impl TextSender for TwilioSender {
    fn send<'a>(&'a self, text: &'a OutgoingText) -> SendFuture<'a> {
        Box::pin(async move {
            let url = format!("{}/2010-04-01/Accounts/{}/Messages.json", self.base_url, self.account_sid);
            let to = text.to.e164();
            let res = self
                .http
                .post(url)
                .basic_auth(&self.account_sid, Some(&self.auth_token))
                .form(&[("To", to.as_str()), ("From", self.from.as_str()), ("Body", text.body.as_str())])
                .send()
                .await?;
            if !res.status().is_success() {
                return Err(SendError::Refused(res.status().as_u16()));
            }
            tracing::info!(public_id = %text.public_id, to_last4 = text.to.last4(), "code text sent through Twilio");
            Ok(())
        })
    }
}
