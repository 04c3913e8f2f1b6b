//! People, bots and the credentials that act for them.
//!
//! A credential is stored under the SHA-256 of its token; the token itself is shown once, when it
//! is made, and never stored.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::db::Store;
use crate::error::{Result, StorageError};
use crate::ids::{Handle, new_id};
use crate::secret::{new_token, token_hash};
use crate::time::now_ms;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Staff,
    Guest,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Person {
    pub id: String,
    pub name: String,
    pub handle: String,
    pub email: Option<String>,
    pub role: Role,
    pub created_at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bot {
    pub id: String,
    pub name: String,
    pub handle: String,
    pub created_by: String,
    pub created_at: i64,
    #[serde(default)]
    pub deleted_at: Option<i64>,
}

/// The four kinds of credential of chat.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CredentialKind {
    /// A browser session (`chs_`): the web site, source `human`.
    Session,
    /// A person key (`chat_`): a staff member's agent, source `agent`.
    PersonKey,
    /// A bot token (`chatbot_`): source `bot`.
    Bot,
    /// A connector token (no prefix), `read` or `write` scope: source `agent`.
    Connector,
}

impl CredentialKind {
    pub fn prefix(self) -> &'static str {
        match self {
            CredentialKind::Session => "chs_",
            CredentialKind::PersonKey => "chat_",
            CredentialKind::Bot => "chatbot_",
            CredentialKind::Connector => "",
        }
    }

    fn id_prefix(self) -> &'static str {
        match self {
            CredentialKind::Session => "s_",
            CredentialKind::PersonKey => "k_",
            CredentialKind::Bot => "t_",
            CredentialKind::Connector => "x_",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    Read,
    Write,
}

/// A credential as stored: everything but the token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credential {
    /// The public id (`k_...` for a person key), used to list and revoke it.
    pub pid: String,
    pub kind: CredentialKind,
    pub person_id: Option<String>,
    pub bot_id: Option<String>,
    /// The key's name (person keys), shown in `actor_label`.
    pub name: Option<String>,
    pub scope: Scope,
    pub created_at: i64,
    pub expires_at: Option<i64>,
    pub revoked_at: Option<i64>,
}

/// Who stands behind a credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Actor {
    Person(Person),
    Bot(Bot),
}

/// A credential that authenticated, with the person or bot it acts for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub credential: Credential,
    pub actor: Actor,
}

/// What a new credential is for.
#[derive(Debug, Clone)]
pub struct NewCredential {
    pub kind: CredentialKind,
    pub person_id: Option<String>,
    pub bot_id: Option<String>,
    pub name: Option<String>,
    pub scope: Scope,
    pub expires_at: Option<i64>,
}

/// How long a browser session lasts.
pub const SESSION_LIFETIME_MS: i64 = 30 * 24 * 3600 * 1000;

/// The key part of a record id as SurrealDB renders it (`person:p_x`, `person:⟨p x⟩`, `person:`p x``).
pub(crate) fn record_key(id: &str) -> &str {
    let key = id.split_once(':').map_or(id, |(_, k)| k);
    let key = key.strip_prefix('⟨').and_then(|k| k.strip_suffix('⟩')).unwrap_or(key);
    key.strip_prefix('`').and_then(|k| k.strip_suffix('`')).unwrap_or(key)
}

/// Decodes a stored row, replacing its record id by the key part.
pub(crate) fn decode<T: serde::de::DeserializeOwned>(mut row: Value) -> Result<T> {
    if let Some(Value::String(id)) = row.get("id") {
        let key = record_key(id).to_owned();
        row["id"] = Value::String(key);
    }
    serde_json::from_value(row).map_err(StorageError::corrupt)
}

/// True when a database error says that a record or unique index entry exists already.
pub(crate) fn is_duplicate(e: &StorageError) -> bool {
    match e {
        // A duplicate record id is a typed error; a unique index violation is an internal error
        // that only its message tells apart.
        StorageError::Db(e) => e.is_already_exists() || e.message().contains("already contains"),
        _ => false,
    }
}

impl Store {
    /// Creates a person; the handle must be free across people and bots.
    pub async fn create_person(
        &self,
        name: &str,
        handle: &Handle,
        email: Option<&str>,
        role: Role,
    ) -> Result<Person> {
        let person = Person {
            id: new_id("p_"),
            name: name.to_owned(),
            handle: handle.as_str().to_owned(),
            email: email.map(str::to_owned),
            role,
            created_at: now_ms(),
        };
        let mut doc = serde_json::to_value(&person).map_err(StorageError::corrupt)?;
        if let Some(o) = doc.as_object_mut() {
            o.remove("id");
        }
        let sql = "BEGIN TRANSACTION;
            CREATE type::record('handle', $handle) CONTENT { owner: $id, kind: 'person' };
            CREATE type::record('person', $id) CONTENT $doc;
            COMMIT TRANSACTION;";
        let vars = json!({ "handle": person.handle, "id": person.id, "doc": doc });
        match self.execute(sql, vars).await {
            Ok(_) => Ok(person),
            Err(e) if is_duplicate(&e) => Err(StorageError::Conflict(format!("handle @{handle}"))),
            Err(e) => Err(e),
        }
    }

    /// The person with this id; `None` for an id this server never makes (an empty one too,
    /// which SurrealDB would refuse as a record key).
    pub async fn person(&self, id: &str) -> Result<Option<Person>> {
        if !crate::ids::is_id(id, "p_") {
            return Ok(None);
        }
        let rows = self.query_rows("SELECT * FROM type::record('person', $id)", json!({ "id": id })).await?;
        rows.into_iter().next().map(decode).transpose()
    }

    pub async fn person_by_handle(&self, handle: &str) -> Result<Option<Person>> {
        let rows = self
            .query_rows("SELECT * FROM person WHERE handle = $handle LIMIT 1", json!({ "handle": handle }))
            .await?;
        rows.into_iter().next().map(decode).transpose()
    }

    pub async fn count_people(&self) -> Result<u64> {
        let rows = self.query_rows("SELECT count() AS n FROM person GROUP ALL", Value::Null).await?;
        Ok(rows.first().and_then(|r| r.get("n")).and_then(Value::as_u64).unwrap_or(0))
    }

    /// The bot with this id; `None` for an id this server never makes.
    pub async fn bot(&self, id: &str) -> Result<Option<Bot>> {
        if !crate::ids::is_id(id, "b_") {
            return Ok(None);
        }
        let rows = self.query_rows("SELECT * FROM type::record('bot', $id)", json!({ "id": id })).await?;
        rows.into_iter().next().map(decode).transpose()
    }

    /// Makes a credential and returns it with its token; the token is not kept.
    pub async fn issue_credential(&self, new: NewCredential) -> Result<(Credential, String)> {
        let token = new_token(new.kind.prefix());
        let credential = Credential {
            pid: new_id(new.kind.id_prefix()),
            kind: new.kind,
            person_id: new.person_id,
            bot_id: new.bot_id,
            name: new.name,
            scope: new.scope,
            created_at: now_ms(),
            expires_at: new.expires_at,
            revoked_at: None,
        };
        let doc = serde_json::to_value(&credential).map_err(StorageError::corrupt)?;
        self.execute(
            "CREATE type::record('credential', $hash) CONTENT $doc",
            json!({ "hash": token_hash(&token), "doc": doc }),
        )
        .await?;
        Ok((credential, token))
    }

    /// A browser session for a person.
    pub async fn issue_session(&self, person_id: &str) -> Result<(Credential, String)> {
        self.issue_credential(NewCredential {
            kind: CredentialKind::Session,
            person_id: Some(person_id.to_owned()),
            bot_id: None,
            name: None,
            scope: Scope::Write,
            expires_at: Some(now_ms() + SESSION_LIFETIME_MS),
        })
        .await
    }

    /// Finds the live credential behind a token, with the person or bot it acts for. Unknown,
    /// revoked and expired tokens, and tokens of deleted bots, give `None`.
    ///
    /// Answered from a cache of recent answers when it can: every write to credentials, people or
    /// bots empties the cache, so a revoked credential fails on the next request all the same.
    pub async fn authenticate(&self, token: &str) -> Result<Option<Principal>> {
        let hash = token_hash(token);
        let cache = self.principals();
        let (generation, cached) = cache.get(&hash);
        if let Some(principal) = cached {
            if principal.credential.expires_at.is_some_and(|at| at <= now_ms()) {
                cache.remove(&hash);
                return Ok(None);
            }
            return Ok(Some(principal));
        }
        let rows = self
            .query_rows("SELECT * FROM type::record('credential', $hash)", json!({ "hash": &hash }))
            .await?;
        let Some(row) = rows.into_iter().next() else { return Ok(None) };
        let credential: Credential = decode(row)?;
        if credential.revoked_at.is_some() || credential.expires_at.is_some_and(|at| at <= now_ms()) {
            return Ok(None);
        }
        let actor = match (&credential.person_id, &credential.bot_id) {
            (Some(p), _) => self.person(p).await?.map(Actor::Person),
            (None, Some(b)) => self.bot(b).await?.filter(|b| b.deleted_at.is_none()).map(Actor::Bot),
            (None, None) => None,
        };
        let principal = actor.map(|actor| Principal { credential, actor });
        if let Some(p) = &principal {
            cache.insert(generation, hash, p.clone());
        }
        Ok(principal)
    }

    /// Revokes a credential by its public id; revoking twice is harmless.
    pub async fn revoke_credential(&self, pid: &str) -> Result<bool> {
        let rows = self
            .query_rows(
                "UPDATE credential SET revoked_at = $now WHERE pid = $pid AND !revoked_at RETURN AFTER",
                json!({ "pid": pid, "now": now_ms() }),
            )
            .await?;
        Ok(!rows.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::DbSettings;

    async fn store() -> Store {
        Store::open(&DbSettings::memory()).await.expect("open")
    }

    #[test]
    fn record_keys() {
        assert_eq!(record_key("person:p_abc"), "p_abc");
        assert_eq!(record_key("credential:⟨0abc⟩"), "0abc");
        assert_eq!(record_key("credential:`0abc`"), "0abc");
        assert_eq!(record_key("plain"), "plain");
    }

    #[tokio::test]
    async fn people_and_sessions() {
        let store = store().await;
        let ada = Handle::parse("ada").expect("handle");
        let p = store.create_person("Ada", &ada, Some("ada@example.org"), Role::Staff).await.expect("create");
        assert_eq!(store.person(&p.id).await.expect("get"), Some(p.clone()));
        assert_eq!(store.person_by_handle("ada").await.expect("by handle"), Some(p.clone()));
        assert_eq!(store.count_people().await.expect("count"), 1);

        let err = store.create_person("Other", &ada, None, Role::Guest).await.expect_err("dup");
        assert!(matches!(err, StorageError::Conflict(_)), "{err}");
        assert_eq!(store.count_people().await.expect("count"), 1);

        let (cred, token) = store.issue_session(&p.id).await.expect("session");
        assert!(token.starts_with("chs_"));
        let principal = store.authenticate(&token).await.expect("auth").expect("known");
        assert_eq!(principal.actor, Actor::Person(p.clone()));
        assert_eq!(principal.credential.pid, cred.pid);
        assert!(store.authenticate("chs_nope").await.expect("auth").is_none());

        assert!(store.revoke_credential(&cred.pid).await.expect("revoke"));
        assert!(store.authenticate(&token).await.expect("auth").is_none());
    }
}

/// An invitation for an outside guest: the code is shown once and stored as its SHA-256.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Invite {
    pub id: String,
    pub email: String,
    pub name: String,
    pub channel_ids: Vec<String>,
    pub created_by: String,
    pub created_at: i64,
    pub expires_at: i64,
    pub accepted_at: Option<i64>,
    pub person_id: Option<String>,
    /// Set when staff withdrew the invitation; it can no longer be accepted.
    #[serde(default)]
    pub revoked_at: Option<i64>,
}

/// How long an invitation can be accepted.
pub const INVITE_LIFETIME_MS: i64 = 7 * 24 * 3600 * 1000;

impl Store {
    /// People (ordered by id) after `after`, at most `limit`.
    pub async fn people_page(&self, after: Option<&str>, limit: usize) -> Result<Vec<Person>> {
        let rows = self
            .query_rows(
                "SELECT * FROM person WHERE $after = NONE OR $after = NULL OR id > type::record('person', $after) ORDER BY id LIMIT $limit",
                json!({ "after": after, "limit": limit }),
            )
            .await?;
        rows.into_iter().map(decode).collect()
    }

    /// Every bot that is not deleted, ordered by id.
    pub async fn bots(&self) -> Result<Vec<Bot>> {
        let rows = self.query_rows("SELECT * FROM bot ORDER BY id", Value::Null).await?;
        let bots: Vec<Bot> = rows.into_iter().map(decode).collect::<Result<_>>()?;
        Ok(bots.into_iter().filter(|b| b.deleted_at.is_none()).collect())
    }

    /// Creates a bot with a token; the handle must be free across people and bots.
    pub async fn create_bot(&self, name: &str, handle: &Handle, created_by: &str) -> Result<(Bot, String)> {
        let bot = Bot {
            id: new_id("b_"),
            name: name.to_owned(),
            handle: handle.as_str().to_owned(),
            created_by: created_by.to_owned(),
            created_at: now_ms(),
            deleted_at: None,
        };
        let mut doc = serde_json::to_value(&bot).map_err(StorageError::corrupt)?;
        if let Some(o) = doc.as_object_mut() {
            o.remove("id");
        }
        let sql = "BEGIN TRANSACTION;
            CREATE type::record('handle', $handle) CONTENT { owner: $id, kind: 'bot' };
            CREATE type::record('bot', $id) CONTENT $doc;
            COMMIT TRANSACTION;";
        match self.execute(sql, json!({ "handle": bot.handle, "id": bot.id, "doc": doc })).await {
            Ok(_) => {}
            Err(e) if is_duplicate(&e) => return Err(StorageError::Conflict(format!("handle @{handle}"))),
            Err(e) => return Err(e),
        }
        let (_, token) = self
            .issue_credential(NewCredential {
                kind: CredentialKind::Bot,
                person_id: None,
                bot_id: Some(bot.id.clone()),
                name: None,
                scope: Scope::Write,
                expires_at: None,
            })
            .await?;
        Ok((bot, token))
    }

    /// Marks a bot deleted and revokes its tokens at once. False when there is no such live bot.
    pub async fn delete_bot(&self, id: &str) -> Result<bool> {
        let now = now_ms();
        let rows = self
            .query_rows(
                "UPDATE type::record('bot', $id) SET deleted_at = $now WHERE !deleted_at RETURN AFTER",
                json!({ "id": id, "now": now }),
            )
            .await?;
        if rows.is_empty() {
            return Ok(false);
        }
        self.execute(
            "UPDATE credential SET revoked_at = $now WHERE bot_id = $id AND !revoked_at",
            json!({ "id": id, "now": now }),
        )
        .await?;
        Ok(true)
    }

    /// A person's credentials of one kind, newest first.
    pub async fn credentials_of(&self, person_id: &str, kind: CredentialKind) -> Result<Vec<Credential>> {
        let rows = self
            .query_rows(
                "SELECT * FROM credential WHERE person_id = $p AND kind = $k ORDER BY created_at DESC",
                json!({ "p": person_id, "k": kind }),
            )
            .await?;
        rows.into_iter().map(decode).collect()
    }

    /// Every credential of one kind, newest first.
    pub async fn credentials_of_kind(&self, kind: CredentialKind) -> Result<Vec<Credential>> {
        let rows = self
            .query_rows(
                "SELECT * FROM credential WHERE kind = $k ORDER BY created_at DESC",
                json!({ "k": kind }),
            )
            .await?;
        rows.into_iter().map(decode).collect()
    }

    pub async fn credential(&self, pid: &str) -> Result<Option<Credential>> {
        let rows =
            self.query_rows("SELECT * FROM credential WHERE pid = $pid", json!({ "pid": pid })).await?;
        rows.into_iter().next().map(decode).transpose()
    }

    /// Records an invitation under the hash of its code; returns the code.
    pub async fn create_invite(&self, invite: &Invite) -> Result<String> {
        let code = new_token("");
        let mut doc = serde_json::to_value(invite).map_err(StorageError::corrupt)?;
        // The record id is the code's hash; the invitation's own id is kept beside it.
        if let Some(o) = doc.as_object_mut()
            && let Some(id) = o.remove("id")
        {
            o.insert("invite_id".into(), id);
        }
        self.execute(
            "CREATE type::record('invite', $hash) CONTENT $doc",
            json!({ "hash": token_hash(&code), "doc": doc }),
        )
        .await?;
        Ok(code)
    }

    pub async fn invite_by_code(&self, code: &str) -> Result<Option<Invite>> {
        let rows = self
            .query_rows("SELECT * FROM type::record('invite', $hash)", json!({ "hash": token_hash(code) }))
            .await?;
        let Some(mut row) = rows.into_iter().next() else { return Ok(None) };
        if let Some(o) = row.as_object_mut() {
            let id = o.remove("invite_id").unwrap_or_default();
            o.insert("id".into(), id);
        }
        serde_json::from_value(row).map(Some).map_err(StorageError::corrupt)
    }

    /// Marks an invitation accepted by `person_id`; false when it was accepted already (a race).
    pub async fn accept_invite(&self, code: &str, person_id: &str) -> Result<bool> {
        let rows = self
            .query_rows(
                "UPDATE type::record('invite', $hash) SET accepted_at = $now, person_id = $p WHERE !accepted_at AND !revoked_at RETURN AFTER",
                json!({ "hash": token_hash(code), "now": now_ms(), "p": person_id }),
            )
            .await?;
        Ok(!rows.is_empty())
    }

    /// A free handle derived from `wish` (`ada`, else `ada2`, `ada3`...).
    pub async fn free_handle(&self, wish: &str) -> Result<Handle> {
        let mut base: String = wish
            .to_ascii_lowercase()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') { c } else { '-' })
            .collect();
        base = base.trim_start_matches(['_', '.', '-']).chars().take(28).collect();
        if base.is_empty() {
            base = "guest".into();
        }
        for n in 1..1000 {
            let candidate = if n == 1 { base.clone() } else { format!("{base}{n}") };
            let Ok(handle) = Handle::parse(&candidate) else { continue };
            let taken = self
                .query_rows("SELECT * FROM type::record('handle', $h)", json!({ "h": handle.as_str() }))
                .await?;
            if taken.is_empty() {
                return Ok(handle);
            }
        }
        Err(StorageError::Conflict(format!("every handle like @{base}")))
    }
}

impl Store {
    /// Every invitation, newest first.
    pub async fn invites(&self) -> Result<Vec<Invite>> {
        let rows = self.query_rows("SELECT * FROM invite ORDER BY created_at DESC", Value::Null).await?;
        rows.into_iter()
            .map(|mut row| {
                if let Some(o) = row.as_object_mut() {
                    let id = o.remove("invite_id").unwrap_or_default();
                    o.insert("id".into(), id);
                }
                serde_json::from_value(row).map_err(StorageError::corrupt)
            })
            .collect()
    }

    /// Withdraws an invitation that is still open; false when there is none by that id (or it
    /// was accepted or withdrawn already).
    pub async fn withdraw_invite(&self, invite_id: &str, now: i64) -> Result<bool> {
        let rows = self
            .query_rows(
                "UPDATE invite SET revoked_at = $now WHERE invite_id = $id AND !accepted_at AND !revoked_at RETURN AFTER",
                json!({ "id": invite_id, "now": now }),
            )
            .await?;
        Ok(!rows.is_empty())
    }

    /// Records which guest an accepted invitation made.
    pub async fn accept_invite_person(&self, code: &str, person_id: &str) -> Result<()> {
        self.execute(
            "UPDATE type::record('invite', $hash) SET person_id = $p",
            json!({ "hash": token_hash(code), "p": person_id }),
        )
        .await?;
        Ok(())
    }
}

/// How long a sign-in link works (`agora admin login-link`).
pub const LOGIN_LINK_LIFETIME_MS: i64 = 15 * 60 * 1000;

impl Store {
    /// A one-use sign-in link for a person, valid [`LOGIN_LINK_LIFETIME_MS`] from `now`. Returns
    /// the code (shown once; only its SHA-256 is kept) and when it expires.
    pub async fn create_login_link(&self, person_id: &str, now: i64) -> Result<(String, i64)> {
        let code = new_token("");
        let expires_at = now + LOGIN_LINK_LIFETIME_MS;
        self.execute(
            "CREATE type::record('login_link', $hash) CONTENT { person_id: $p, created_at: $now, expires_at: $exp, used_at: NONE }",
            json!({ "hash": token_hash(&code), "p": person_id, "now": now, "exp": expires_at }),
        )
        .await?;
        Ok((code, expires_at))
    }

    /// Uses a sign-in link: the person it was made for, once, before it expires. A second use, an
    /// expired link or an unknown code give `None`. The check and the marking are one statement,
    /// so of two racing uses only one wins.
    pub async fn use_login_link(&self, code: &str, now: i64) -> Result<Option<String>> {
        let rows = self
            .query_rows(
                "UPDATE type::record('login_link', $hash) SET used_at = $now WHERE !used_at AND expires_at > $now RETURN AFTER",
                json!({ "hash": token_hash(code), "now": now }),
            )
            .await?;
        Ok(rows
            .into_iter()
            .next()
            .and_then(|r| r.get("person_id").and_then(Value::as_str).map(str::to_owned)))
    }
}

#[cfg(test)]
mod login_link_tests {
    use super::*;
    use crate::db::DbSettings;

    #[tokio::test]
    async fn a_login_link_works_once_and_only_before_it_expires() {
        let store = Store::open(&DbSettings::memory()).await.expect("open");
        let ada = Handle::parse("ada").expect("handle");
        let p = store.create_person("Ada", &ada, None, Role::Staff).await.expect("create");
        let now = now_ms();
        let (code, expires_at) = store.create_login_link(&p.id, now).await.expect("link");
        assert_eq!(expires_at, now + LOGIN_LINK_LIFETIME_MS);
        assert_eq!(store.use_login_link(&code, now + 1).await.expect("use"), Some(p.id.clone()));
        assert_eq!(store.use_login_link(&code, now + 2).await.expect("again"), None, "one use");

        let (late, _) = store.create_login_link(&p.id, now).await.expect("link");
        assert_eq!(store.use_login_link(&late, expires_at).await.expect("late"), None, "expired");
        assert_eq!(store.use_login_link("nope", now).await.expect("unknown"), None);
        let stored = store.query_rows("SELECT * FROM login_link", Value::Null).await.expect("rows");
        assert!(!stored.iter().any(|r| r.to_string().contains(&code)), "only the hash is kept");
    }
}
