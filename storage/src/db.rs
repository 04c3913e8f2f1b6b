//! The connection to SurrealDB: opening it, holding the data directory, and the migrations.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use surrealdb::Surreal;
use surrealdb::engine::any::Any;

use crate::error::{Result, StorageError};
use crate::time::now_ms;

/// Where the data lives and how to reach it.
#[derive(Debug, Clone)]
pub struct DbSettings {
    /// `surrealkv://<dir>`, `mem://` or `ws://host:port`.
    pub address: String,
    pub user: Option<String>,
    pub pass: Option<String>,
    pub namespace: String,
    pub database: String,
}

impl DbSettings {
    /// An empty in-memory database: what tests use.
    pub fn memory() -> DbSettings {
        DbSettings {
            address: "mem://".into(),
            user: None,
            pass: None,
            namespace: "agora".into(),
            database: "agora".into(),
        }
    }

    /// The embedded SurrealKV directory, when the address names one.
    pub fn data_dir(&self) -> Option<PathBuf> {
        self.address
            .strip_prefix("surrealkv://")
            .map(|rest| PathBuf::from(rest.split('?').next().unwrap_or(rest)))
    }
}

/// One versioned step of the schema. Applied in order, each once, each in its own transaction with
/// the record that says it was applied.
struct Migration {
    version: u32,
    name: &'static str,
    sql: &'static str,
}

const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "people, bots and credentials",
        sql: include_str!("migrations/0001_people.surql"),
    },
    Migration {
        version: 2,
        name: "channels, messages, mentions and events",
        sql: include_str!("migrations/0002_chat.surql"),
    },
    Migration {
        version: 3,
        name: "statistics: sites, metrics, points, rollups, fetch log",
        sql: include_str!("migrations/0003_stats.surql"),
    },
    Migration { version: 4, name: "demo sign-up", sql: include_str!("migrations/0004_signup.surql") },
    Migration {
        version: 5,
        name: "one-use sign-in links; invitations listed by age",
        sql: include_str!("migrations/0005_login_links.surql"),
    },
];

/// The open store. Cheap to clone: every clone shares one connection, one database session and
/// one directory lock.
#[derive(Clone)]
pub struct Store {
    /// Behind an `Arc` because cloning a `Surreal` handle opens a new session in the engine (about
    /// 64 KiB each, plus a message to the engine's session task to open and another to end it):
    /// a store is cloned for every request and held by every live socket. Every query binds its
    /// own variables and runs its transactions within one query text, so one session serves all.
    db: Arc<Surreal<Any>>,
    inner: Arc<Inner>,
}

struct Inner {
    /// The lock on the data directory, held for as long as any clone of the store lives; the OS
    /// releases it when the process ends, however it ends.
    _lock: Option<File>,
    data_dir: Option<PathBuf>,
    /// Credentials that authenticated, by token hash: a request's bearer token is checked without
    /// a storage read. Any write that touches a credential, a person or a bot empties it (see
    /// [`Store::execute`]), so a revocation takes effect on the very next request.
    pub(crate) principals: PrincipalCache,
}

/// The cache of authenticated principals. Bounded: past [`PrincipalCache::MAX`] entries it starts
/// over, so it holds at most the active credentials of the last while.
#[derive(Default)]
pub(crate) struct PrincipalCache {
    entries: std::sync::Mutex<(u64, std::collections::HashMap<String, crate::people::Principal>)>,
}

impl PrincipalCache {
    const MAX: usize = 50_000;

    /// The cached principal of `hash`, and the generation to hand back to [`Self::insert`].
    pub(crate) fn get(&self, hash: &str) -> (u64, Option<crate::people::Principal>) {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        (entries.0, entries.1.get(hash).cloned())
    }

    /// Caches what a storage read found, unless a write invalidated the cache since `generation`
    /// was read (the read may have seen the credential before its revocation).
    pub(crate) fn insert(&self, generation: u64, hash: String, principal: crate::people::Principal) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.0 != generation {
            return;
        }
        if entries.1.len() >= Self::MAX {
            entries.1.clear();
        }
        entries.1.insert(hash, principal);
    }

    pub(crate) fn remove(&self, hash: &str) {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).1.remove(hash);
    }

    fn invalidate(&self) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.0 += 1;
        entries.1.clear();
    }
}

/// Whether `sql` may change what authenticates: a write statement naming the credential, person
/// or bot tables. Deliberately broad (a false positive only costs a cache refill), so that a new
/// write path cannot forget to invalidate.
fn may_change_principals(sql: &str) -> bool {
    let lower = sql.to_ascii_lowercase();
    let writes = ["create", "update", "upsert", "delete", "insert", "relate", "remove"]
        .iter()
        .any(|w| lower.contains(w));
    writes && ["credential", "person", "bot"].iter().any(|t| lower.contains(t))
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("data_dir", &self.inner.data_dir).finish()
    }
}

impl Store {
    /// The cache in front of [`Store::authenticate`].
    pub(crate) fn principals(&self) -> &PrincipalCache {
        &self.inner.principals
    }

    /// Opens (creating when missing) the store and brings its schema up to date.
    pub async fn open(settings: &DbSettings) -> Result<Store> {
        let address = settings.address.trim();
        let (lock, data_dir) = if let Some(dir) = settings.data_dir() {
            std::fs::create_dir_all(&dir)?;
            (Some(lock_data_dir(&dir)?), Some(dir))
        } else if address.starts_with("mem://")
            || address.starts_with("ws://")
            || address.starts_with("wss://")
        {
            (None, None)
        } else {
            return Err(StorageError::BadAddress(settings.address.clone()));
        };
        let db = surrealdb::engine::any::connect(address).await?;
        if let (Some(user), Some(pass)) = (&settings.user, &settings.pass) {
            db.signin(surrealdb::opt::auth::Root { username: user.clone(), password: pass.clone() }).await?;
        }
        db.use_ns(settings.namespace.as_str()).use_db(settings.database.as_str()).await?;
        let store = Store {
            db: Arc::new(db),
            inner: Arc::new(Inner { _lock: lock, data_dir, principals: PrincipalCache::default() }),
        };
        store.migrate().await?;
        Ok(store)
    }

    /// Closes the store: drops this handle and, for an embedded store, waits (up to 10 s) until the
    /// storage engine has shut down and released its own lock, so the directory can be opened again
    /// at once. Other clones of the store must have been dropped first.
    pub async fn close(self) {
        let Store { db, inner } = self;
        drop(db);
        let Some(dir) = inner.data_dir.clone() else { return };
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
        for lock in engine_lock_files(&dir) {
            loop {
                let free = File::options().write(true).open(&lock).is_ok_and(|f| f.try_lock().is_ok());
                if free || tokio::time::Instant::now() >= deadline {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        }
        drop(inner);
    }

    /// The embedded data directory, if the store has one.
    pub fn data_dir(&self) -> Option<&Path> {
        self.inner.data_dir.as_deref()
    }

    /// The schema versions applied so far, in order.
    pub async fn applied_migrations(&self) -> Result<Vec<u32>> {
        let rows: Vec<Value> =
            self.query_rows("SELECT version FROM migration ORDER BY version", Value::Null).await?;
        let mut versions: Vec<u32> = rows
            .iter()
            .filter_map(|r| r.get("version").and_then(Value::as_u64))
            .filter_map(|v| u32::try_from(v).ok())
            .collect();
        versions.sort_unstable();
        Ok(versions)
    }

    async fn migrate(&self) -> Result<()> {
        // SurrealDB 3 refuses to read a table that was never defined: the ledger comes first.
        self.execute("DEFINE TABLE IF NOT EXISTS migration SCHEMALESS;", Value::Null).await?;
        let applied = self.applied_migrations().await?;
        for m in MIGRATIONS.iter().filter(|m| !applied.contains(&m.version)) {
            tracing::info!(version = m.version, name = m.name, "applying migration");
            let sql = format!(
                "BEGIN TRANSACTION;\n{}\n;CREATE type::record('migration', $version) CONTENT {{ version: $version, name: $name, applied_at: $now }};\nCOMMIT TRANSACTION;",
                m.sql
            );
            let vars = serde_json::json!({ "version": m.version, "name": m.name, "now": now_ms() });
            self.db.query(sql).bind(vars).await?.check()?;
        }
        Ok(())
    }

    /// Runs one statement (or several, taking the last) with `vars` bound, and returns its rows.
    /// Every record of every table, as one JSON text (table name, then its rows). For audits:
    /// the secrets test reads it to check that no token, code or phone number is stored in clear.
    pub async fn dump_all_tables(&self) -> Result<String> {
        let info = self.execute("INFO FOR DB", Value::Null).await?.pop().unwrap_or(Value::Null);
        let tables: Vec<String> = info
            .get("tables")
            .and_then(Value::as_object)
            .map(|t| t.keys().cloned().collect())
            .unwrap_or_default();
        let mut out = String::new();
        for table in tables {
            let rows =
                self.query_rows("SELECT * FROM type::table($t)", serde_json::json!({ "t": table })).await?;
            out.push_str(&table);
            out.push('\n');
            out.push_str(&serde_json::to_string(&rows).map_err(StorageError::corrupt)?);
            out.push('\n');
        }
        Ok(out)
    }

    pub(crate) async fn query_rows(&self, sql: &str, vars: Value) -> Result<Vec<Value>> {
        let last = self.execute(sql, vars).await?.pop().unwrap_or(Value::Null);
        Ok(match last {
            Value::Array(items) => items,
            Value::Null => Vec::new(),
            other => vec![other],
        })
    }

    /// Several records of `table` by key, in one round trip: one direct key lookup each. The
    /// answer has one entry per key, in order (`None` where there is no such record).
    pub(crate) async fn get_many(&self, table: &str, keys: &[Value]) -> Result<Vec<Option<Value>>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let mut sql = String::new();
        let mut vars = serde_json::Map::new();
        vars.insert("table".into(), Value::String(table.to_owned()));
        for (i, key) in keys.iter().enumerate() {
            sql.push_str(&format!("SELECT * FROM type::record($table, $k{i});\n"));
            vars.insert(format!("k{i}"), key.clone());
        }
        let results = self.execute(&sql, Value::Object(vars)).await?;
        Ok(results
            .into_iter()
            .map(|rows| match rows {
                Value::Array(rows) => rows.into_iter().next(),
                Value::Null => None,
                other => Some(other),
            })
            .collect())
    }

    /// Runs statements with `vars` bound, failing if any statement failed; returns every statement's
    /// result. When a transaction fails, the error returned is the statement that caused it, not
    /// the "not executed" of its neighbours.
    pub(crate) async fn execute(&self, sql: &str, vars: Value) -> Result<Vec<Value>> {
        let mut q = self.db.query(sql);
        if let Value::Object(_) = vars {
            q = q.bind(vars);
        }
        let changes_principals = may_change_principals(sql);
        let response = q.await;
        if changes_principals {
            // After the write (committed or not): a read that started before it cannot cache
            // what it saw, and the next request reads storage again.
            self.inner.principals.invalidate();
        }
        let mut response = response?;
        let mut errors: Vec<(usize, surrealdb::Error)> = response.take_errors().into_iter().collect();
        if !errors.is_empty() {
            errors.sort_by_key(|(i, _)| *i);
            let knock_on = |e: &surrealdb::Error| {
                matches!(
                    e.query_details(),
                    Some(surrealdb::types::QueryError::NotExecuted | surrealdb::types::QueryError::Cancelled)
                )
            };
            let pick = errors.iter().position(|(_, e)| !knock_on(e)).unwrap_or(0);
            return Err(errors.swap_remove(pick).1.into());
        }
        let n = response.num_statements();
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            out.push(response.take::<surrealdb::types::Value>(i)?.into_json_value());
        }
        Ok(out)
    }
}

/// The storage engine's own `LOCK` files inside the data directory (at most two levels down).
fn engine_lock_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![(dir.to_path_buf(), 0)];
    while let Some((d, depth)) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() && depth < 2 {
                dirs.push((path, depth + 1));
            } else if path.file_name().is_some_and(|n| n == "LOCK") {
                found.push(path);
            }
        }
    }
    found
}

/// Takes an exclusive lock on `<dir>.lock` beside the data directory. A second agora process on the
/// same directory fails here with a message instead of corrupting data or panicking inside the
/// storage engine.
fn lock_data_dir(dir: &Path) -> Result<File> {
    let mut lock_path = dir.as_os_str().to_owned();
    lock_path.push(".lock");
    let lock_path = PathBuf::from(lock_path);
    let file = File::options().create(true).truncate(false).write(true).open(&lock_path)?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(StorageError::Locked(dir.to_path_buf())),
        Err(std::fs::TryLockError::Error(e)) => Err(StorageError::Io(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_to_credentials_people_and_bots_invalidate_the_principal_cache() {
        assert!(may_change_principals("UPDATE credential SET revoked_at = $now WHERE pid = $pid"));
        assert!(may_change_principals("BEGIN; UPDATE type::record('bot', $id) SET deleted_at = 1; COMMIT;"));
        assert!(may_change_principals("CREATE type::record('person', $id) CONTENT $doc"));
        assert!(!may_change_principals("SELECT * FROM type::record('credential', $hash)"));
        assert!(!may_change_principals("CREATE type::record('msg', [$c0, $s0]) CONTENT $m0;"));
    }

    #[test]
    fn a_read_that_raced_an_invalidation_is_not_cached() {
        let cache = PrincipalCache::default();
        let (generation, found) = cache.get("h");
        assert!(found.is_none());
        cache.invalidate();
        let principal = crate::people::Principal {
            credential: serde_json::from_value(serde_json::json!({
                "pid": "k_1", "kind": "person_key", "person_id": "p_1", "scope": "write", "created_at": 1
            }))
            .expect("credential"),
            actor: crate::people::Actor::Bot(
                serde_json::from_value(serde_json::json!({
                    "id": "b_1", "name": "Bot", "handle": "bot", "created_by": "p_1", "created_at": 1
                }))
                .expect("bot"),
            ),
        };
        cache.insert(generation, "h".into(), principal.clone());
        assert!(cache.get("h").1.is_none(), "a read from before the revocation must not be cached");
        let (generation, _) = cache.get("h");
        cache.insert(generation, "h".into(), principal);
        assert!(cache.get("h").1.is_some());
    }

    #[tokio::test]
    async fn migrations_apply_once() {
        let store = Store::open(&DbSettings::memory()).await.expect("open");
        let versions = store.applied_migrations().await.expect("versions");
        assert_eq!(versions, MIGRATIONS.iter().map(|m| m.version).collect::<Vec<_>>());
        store.migrate().await.expect("second migrate");
        assert_eq!(store.applied_migrations().await.expect("versions"), versions);
    }

    #[tokio::test]
    async fn second_open_of_a_directory_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let settings = DbSettings {
            address: format!("surrealkv://{}", dir.path().join("db").display()),
            ..DbSettings::memory()
        };
        let _first = Store::open(&settings).await.expect("first open");
        let err = Store::open(&settings).await.expect_err("second open must fail");
        assert!(matches!(err, StorageError::Locked(_)), "{err}");
        assert!(err.to_string().contains("in use by another agora process"));
    }

    #[test]
    fn bad_address_is_refused() {
        let s = DbSettings { address: "postgres://x".into(), ..DbSettings::memory() };
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("rt");
        let err = rt.block_on(Store::open(&s)).expect_err("must fail");
        assert!(matches!(err, StorageError::BadAddress(_)));
    }
}
