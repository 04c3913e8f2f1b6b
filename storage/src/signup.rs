//! The demo sign-up's records: sign-ups (keyed by their public id), the outbox of the `log` text
//! sender, the stored daily text counters, the demo's openness, the invited testers and the
//! opted-out numbers.
//!
//! A phone number is never stored: numbers are known by their keyed hash ([`SignupKey`]), and a
//! code only by its keyed hash bound to its sign-up. State over time (expired, locked) is derived
//! from stored timestamps by [`Signup::state`], so a restart loses nothing.

mod types;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub use types::{Code, DemoDay, FieldError, FirstName, PhoneNumber, PublicId, Reason, SignupKey, TzError};

use crate::db::Store;
use crate::error::{Result, StorageError};
use crate::ids::new_id;
use crate::people::decode;
use crate::secret::random_bytes;

/// How long a sign-up may be confirmed.
pub const LIFETIME_MS: i64 = 15 * 60 * 1000;
/// How long three wrong codes lock a sign-up.
pub const LOCK_MS: i64 = 15 * 60 * 1000;
/// Wrong codes that lock a sign-up.
pub const MAX_WRONG_CODES: u32 = 3;
/// How long records are kept.
pub const RETENTION_MS: i64 = 7 * 24 * 3600 * 1000;
/// Code texts one number may get in a Chicago day.
pub const TEXTS_PER_NUMBER_PER_DAY: u32 = 3;
/// Code texts the whole demo may send in a Chicago day.
pub const TEXTS_PER_DEMO_PER_DAY: u32 = 50;

/// One sign-up as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signup {
    /// The public id (the record key).
    pub id: String,
    pub phone_hash: String,
    pub code_mac: String,
    pub created_at: i64,
    #[serde(default)]
    pub wrong_codes: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locked_until: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed_at: Option<i64>,
}

/// What the API reports: `pending`, `confirmed` or `expired`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pending,
    Confirmed,
    Expired,
}

/// The full state of a sign-up at one moment, as the confirm page needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignupState {
    Pending {
        expires_at: i64,
        tries_left: u32,
    },
    /// Three wrong codes; still reported as `pending` (DECISIONS.md).
    Locked {
        until: i64,
    },
    Confirmed,
    Expired,
}

impl Signup {
    pub fn expires_at(&self) -> i64 {
        self.created_at + LIFETIME_MS
    }

    /// Confirmed is final; expiry comes next (a lock that outlives the sign-up changes nothing a
    /// person can do); then the lock.
    pub fn state(&self, now: i64) -> SignupState {
        if self.confirmed_at.is_some() {
            SignupState::Confirmed
        } else if now >= self.expires_at() {
            SignupState::Expired
        } else if let Some(until) = self.locked_until.filter(|&u| now < u) {
            SignupState::Locked { until }
        } else {
            SignupState::Pending {
                expires_at: self.expires_at(),
                tries_left: MAX_WRONG_CODES.saturating_sub(self.wrong_codes),
            }
        }
    }

    pub fn status(&self, now: i64) -> Status {
        match self.state(now) {
            SignupState::Confirmed => Status::Confirmed,
            SignupState::Expired => Status::Expired,
            SignupState::Pending { .. } | SignupState::Locked { .. } => Status::Pending,
        }
    }
}

/// A text in the `log` sender's outbox: what `agora admin signup outbox` prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutboxText {
    /// RFC 3339.
    pub at: String,
    pub public_id: String,
    pub to_last4: String,
    pub body: String,
}

/// Texts already sent today: by the whole demo, and to one number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TextCounts {
    pub demo: u32,
    pub number: u32,
}

/// The demo's settings and figures, for `agora admin signup status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DemoStatus {
    pub open: bool,
    pub testers: u64,
    pub day: String,
    pub texts_today: u32,
}

fn count_of(rows: &[Value]) -> u64 {
    rows.first().and_then(|r| r.get("n")).and_then(Value::as_u64).unwrap_or(0)
}

impl Store {
    /// The HMAC key: `configured` when the operator set one, else the one stored here, made once
    /// from the OS generator on first use.
    pub async fn signup_key(&self, configured: Option<&str>) -> Result<SignupKey> {
        if let Some(k) = configured.filter(|k| !k.is_empty()) {
            return Ok(SignupKey::new(k.as_bytes().to_vec()));
        }
        let read = "SELECT VALUE hex FROM type::record('signup_setting', 'key')";
        if let Some(Value::String(hex)) = self.query_rows(read, Value::Null).await?.into_iter().next() {
            return hex::decode(hex).map(SignupKey::new).map_err(StorageError::corrupt);
        }
        let fresh = hex::encode(random_bytes::<32>());
        let create = "CREATE type::record('signup_setting', 'key') CONTENT { hex: $hex }";
        match self.execute(create, json!({ "hex": fresh })).await {
            Ok(_) => hex::decode(fresh).map(SignupKey::new).map_err(StorageError::corrupt),
            // Another process made it first: use theirs.
            Err(e) if crate::people::is_duplicate(&e) => Box::pin(self.signup_key(None)).await,
            Err(e) => Err(e),
        }
    }

    /// Stores a new sign-up. When `text` is given (a code text goes out), the day's counters of the
    /// demo and of the number go up in the same transaction.
    pub async fn create_signup(&self, signup: &Signup, text: Option<&DemoDay>) -> Result<()> {
        let mut doc = serde_json::to_value(signup).map_err(StorageError::corrupt)?;
        if let Some(o) = doc.as_object_mut() {
            o.remove("id");
        }
        let mut sql = String::from("BEGIN TRANSACTION;\nCREATE type::record('signup', $id) CONTENT $doc;\n");
        let mut vars = json!({ "id": signup.id, "doc": doc });
        if let Some(day) = text {
            // Counters are kept a day past their own, then swept.
            sql.push_str(
                "UPSERT type::record('signup_count', ['demo', $day]) SET n = (n ?? 0) + 1, expires_at = $exp;
                 UPSERT type::record('signup_count', ['number', $day, $hash]) SET n = (n ?? 0) + 1, expires_at = $exp;\n",
            );
            vars["day"] = json!(day.date);
            vars["hash"] = json!(signup.phone_hash);
            vars["exp"] = json!(day.next_start_ms + 24 * 3600 * 1000);
        }
        sql.push_str("COMMIT TRANSACTION;");
        self.execute(&sql, vars).await?;
        Ok(())
    }

    /// The code texts sent on `day`, by the demo and to the number with `phone_hash`.
    pub async fn text_counts(&self, day: &DemoDay, phone_hash: &str) -> Result<TextCounts> {
        let sql = "SELECT VALUE n FROM type::record('signup_count', ['demo', $day]);
                   SELECT VALUE n FROM type::record('signup_count', ['number', $day, $hash]);";
        let out = self.execute(sql, json!({ "day": day.date, "hash": phone_hash })).await?;
        let n = |i: usize| {
            out.get(i)
                .and_then(|v| v.as_array().and_then(|a| a.first()).and_then(Value::as_u64))
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(0)
        };
        Ok(TextCounts { demo: n(0), number: n(1) })
    }

    pub async fn signup(&self, id: &PublicId) -> Result<Option<Signup>> {
        let rows = self
            .query_rows("SELECT * FROM type::record('signup', $id)", json!({ "id": id.as_str() }))
            .await?;
        rows.into_iter().next().map(decode).transpose()
    }

    /// Saves the outcome of a wrong code: the count, and the lock when it is reached.
    pub async fn record_wrong_code(
        &self,
        id: &PublicId,
        wrong_codes: u32,
        locked_until: Option<i64>,
    ) -> Result<()> {
        self.execute(
            "UPDATE type::record('signup', $id) SET wrong_codes = $n, locked_until = $until",
            json!({ "id": id.as_str(), "n": wrong_codes, "until": locked_until }),
        )
        .await?;
        Ok(())
    }

    pub async fn confirm_signup(&self, id: &PublicId, at: i64) -> Result<()> {
        self.execute(
            "UPDATE type::record('signup', $id) SET confirmed_at = $at",
            json!({ "id": id.as_str(), "at": at }),
        )
        .await?;
        Ok(())
    }

    /// Adds a text to the outbox of the `log` sender.
    pub async fn add_outbox_text(
        &self,
        at: i64,
        public_id: &PublicId,
        to_last4: &str,
        body: &str,
    ) -> Result<()> {
        self.execute(
            "CREATE type::record('signup_text', $id) CONTENT { at: $at, public_id: $pid, to_last4: $last4, body: $body, written: time::now() }",
            json!({ "id": new_id("x_"), "at": at, "pid": public_id.as_str(), "last4": to_last4, "body": body }),
        )
        .await?;
        Ok(())
    }

    /// The outbox, newest first, at most `limit` texts.
    pub async fn outbox(&self, limit: u32) -> Result<Vec<OutboxText>> {
        let rows = self
            .query_rows(
                "SELECT at, written, public_id, to_last4, body FROM signup_text ORDER BY at DESC, written DESC LIMIT $limit",
                json!({ "limit": limit }),
            )
            .await?;
        rows.into_iter()
            .map(|r| {
                let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
                let at = r
                    .get("at")
                    .and_then(Value::as_i64)
                    .ok_or_else(|| StorageError::corrupt("text without at"))?;
                Ok(OutboxText {
                    at: crate::time::rfc3339(at),
                    public_id: s("public_id"),
                    to_last4: s("to_last4"),
                    body: s("body"),
                })
            })
            .collect()
    }

    /// Whether the demo texts anyone (open) or only invited testers (closed, the default).
    pub async fn demo_open(&self) -> Result<bool> {
        let rows = self
            .query_rows("SELECT VALUE open FROM type::record('signup_setting', 'demo')", Value::Null)
            .await?;
        Ok(rows.first().and_then(Value::as_bool).unwrap_or(false))
    }

    pub async fn set_demo_open(&self, open: bool) -> Result<()> {
        self.execute(
            "UPSERT type::record('signup_setting', 'demo') SET open = $open",
            json!({ "open": open }),
        )
        .await?;
        Ok(())
    }

    /// Invites a tester by the hash of their number; inviting twice is harmless.
    pub async fn invite_tester(&self, phone_hash: &str, at: i64) -> Result<()> {
        self.execute(
            "UPSERT type::record('signup_tester', $hash) SET invited_at = $at",
            json!({ "hash": phone_hash, "at": at }),
        )
        .await?;
        Ok(())
    }

    /// Withdraws an invitation; `false` when there was none.
    pub async fn uninvite_tester(&self, phone_hash: &str) -> Result<bool> {
        let rows = self
            .query_rows(
                "DELETE type::record('signup_tester', $hash) RETURN BEFORE",
                json!({ "hash": phone_hash }),
            )
            .await?;
        Ok(!rows.is_empty())
    }

    pub async fn is_tester(&self, phone_hash: &str) -> Result<bool> {
        self.exists("signup_tester", phone_hash).await
    }

    /// Opts a number out (STOP): it gets no text again until it opts back in.
    pub async fn opt_out(&self, phone_hash: &str, at: i64) -> Result<()> {
        self.execute(
            "UPSERT type::record('signup_optout', $hash) SET at = $at",
            json!({ "hash": phone_hash, "at": at }),
        )
        .await?;
        Ok(())
    }

    /// Opts a number back in (START); `false` when it was not opted out.
    pub async fn opt_in(&self, phone_hash: &str) -> Result<bool> {
        let rows = self
            .query_rows(
                "DELETE type::record('signup_optout', $hash) RETURN BEFORE",
                json!({ "hash": phone_hash }),
            )
            .await?;
        Ok(!rows.is_empty())
    }

    pub async fn is_opted_out(&self, phone_hash: &str) -> Result<bool> {
        self.exists("signup_optout", phone_hash).await
    }

    async fn exists(&self, table: &str, key: &str) -> Result<bool> {
        let rows = self
            .query_rows(
                "SELECT VALUE record::id(id) FROM type::record($table, $key)",
                json!({ "table": table, "key": key }),
            )
            .await?;
        Ok(!rows.is_empty())
    }

    /// Openness, invited testers and today's texts.
    pub async fn demo_status(&self, day: &DemoDay) -> Result<DemoStatus> {
        let testers = count_of(
            &self.query_rows("SELECT count() AS n FROM signup_tester GROUP ALL", Value::Null).await?,
        );
        Ok(DemoStatus {
            open: self.demo_open().await?,
            testers,
            day: day.date.clone(),
            texts_today: self.text_counts(day, "").await?.demo,
        })
    }

    /// Deletes sign-ups older than the retention (with their outbox texts, written at the same
    /// moment) and the counters of past days. Returns how many sign-ups went.
    pub async fn sweep_signups(&self, now: i64) -> Result<u64> {
        let sql = "BEGIN TRANSACTION;
            DELETE signup_text WHERE at <= $cutoff;
            DELETE signup_count WHERE expires_at <= $now;
            DELETE signup WHERE created_at <= $cutoff RETURN BEFORE;
            COMMIT TRANSACTION;";
        let out = self.execute(sql, json!({ "cutoff": now - RETENTION_MS, "now": now })).await?;
        Ok(out.get(3).and_then(Value::as_array).map_or(0, |a| a.len() as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::DbSettings;

    async fn store() -> Store {
        Store::open(&DbSettings::memory()).await.expect("open")
    }

    fn signup(key: &SignupKey, phone: &str, created_at: i64) -> (Signup, Code) {
        let id = PublicId::random();
        let code = Code::random();
        let phone = PhoneNumber::parse(phone).expect("phone");
        let s = Signup {
            id: id.as_str().to_owned(),
            phone_hash: key.phone_hash(&phone),
            code_mac: key.code_mac(&id, &code),
            created_at,
            wrong_codes: 0,
            locked_until: None,
            confirmed_at: None,
        };
        (s, code)
    }

    #[test]
    fn state_follows_the_clock() {
        let key = SignupKey::new(b"k".to_vec());
        let (mut s, _) = signup(&key, "2025550234", 1_000);
        assert_eq!(s.state(1_000), SignupState::Pending { expires_at: 1_000 + LIFETIME_MS, tries_left: 3 });
        assert_eq!(s.status(1_000 + LIFETIME_MS - 1), Status::Pending);
        assert_eq!(s.status(1_000 + LIFETIME_MS), Status::Expired);
        s.locked_until = Some(5_000);
        assert_eq!(s.state(4_999), SignupState::Locked { until: 5_000 });
        assert_eq!(s.status(4_999), Status::Pending);
        assert!(matches!(s.state(5_000), SignupState::Pending { .. }));
        s.confirmed_at = Some(2_000);
        assert_eq!(s.status(1_000 + LIFETIME_MS * 10), Status::Confirmed);
    }

    #[tokio::test]
    async fn signups_counters_and_sweep() {
        let store = store().await;
        let key = store.signup_key(None).await.expect("key");
        let again = store.signup_key(None).await.expect("key again");
        let p = PhoneNumber::parse("2025550234").expect("phone");
        assert_eq!(key.phone_hash(&p), again.phone_hash(&p), "the generated key is stored once");

        let now = 1_768_456_800_000;
        let day = DemoDay::at(now).expect("tz");
        let (s, _) = signup(&key, "2025550234", now);
        store.create_signup(&s, Some(&day)).await.expect("create");
        let (t, _) = signup(&key, "2025550234", now);
        store.create_signup(&t, Some(&day)).await.expect("create");
        let (u, _) = signup(&key, "3125550234", now);
        store.create_signup(&u, None).await.expect("create without text");
        assert_eq!(
            store.text_counts(&day, &s.phone_hash).await.expect("counts"),
            TextCounts { demo: 2, number: 2 }
        );
        assert_eq!(store.text_counts(&day, &u.phone_hash).await.expect("counts").number, 0);

        let id = PublicId::parse(&s.id).expect("id");
        assert_eq!(store.signup(&id).await.expect("read"), Some(s.clone()));
        store.record_wrong_code(&id, 3, Some(now + LOCK_MS)).await.expect("wrong");
        store.confirm_signup(&id, now + 1).await.expect("confirm");
        let read = store.signup(&id).await.expect("read").expect("exists");
        assert_eq!(
            (read.wrong_codes, read.locked_until, read.confirmed_at),
            (3, Some(now + LOCK_MS), Some(now + 1))
        );

        store.add_outbox_text(now, &id, "0123", "first").await.expect("text");
        store.add_outbox_text(now, &id, "0123", "second").await.expect("text");
        let texts = store.outbox(10).await.expect("outbox");
        assert_eq!(texts.iter().map(|t| t.body.as_str()).collect::<Vec<_>>(), ["second", "first"]);

        assert_eq!(store.sweep_signups(now + RETENTION_MS - 1).await.expect("sweep"), 0);
        assert!(store.signup(&id).await.expect("read").is_some());
        assert_eq!(store.sweep_signups(now + RETENTION_MS).await.expect("sweep"), 3);
        assert!(store.signup(&id).await.expect("read").is_none());
        assert!(store.outbox(10).await.expect("outbox").is_empty());
        assert_eq!(store.text_counts(&day, &s.phone_hash).await.expect("counts"), TextCounts::default());
    }

    #[tokio::test]
    async fn openness_testers_and_opt_outs() {
        let store = store().await;
        assert!(!store.demo_open().await.expect("open"), "closed by default");
        store.set_demo_open(true).await.expect("open");
        assert!(store.demo_open().await.expect("open"));
        store.set_demo_open(false).await.expect("close");
        assert!(!store.demo_open().await.expect("open"));

        assert!(!store.is_tester("h1").await.expect("tester"));
        store.invite_tester("h1", 1).await.expect("invite");
        store.invite_tester("h1", 2).await.expect("invite twice");
        assert!(store.is_tester("h1").await.expect("tester"));
        let day = DemoDay::at(0).expect("tz");
        assert_eq!(store.demo_status(&day).await.expect("status").testers, 1);
        assert!(store.uninvite_tester("h1").await.expect("uninvite"));
        assert!(!store.uninvite_tester("h1").await.expect("uninvite twice"));

        store.opt_out("h2", 1).await.expect("stop");
        assert!(store.is_opted_out("h2").await.expect("opted out"));
        assert!(store.opt_in("h2").await.expect("start"));
        assert!(!store.is_opted_out("h2").await.expect("opted in"));
    }
}
