//! The one error type of the storage layer.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// Another process holds the data directory.
    #[error(
        "the data directory {0} is in use by another agora process; stop it first, or use `agora admin ...` while it runs"
    )]
    Locked(PathBuf),
    /// The address in `AGORA_DB` is not one agora understands.
    #[error("unsupported database address {0:?}: use surrealkv://<dir>, mem:// or ws://host:port")]
    BadAddress(String),
    /// A record that must be unique exists already (a handle, an idempotency key...).
    #[error("{0} already exists")]
    Conflict(String),
    /// The record asked for does not exist.
    #[error("{0} not found")]
    NotFound(String),
    /// A value read back from storage did not have the expected shape.
    #[error("stored data has an unexpected shape: {0}")]
    Corrupt(String),
    #[error("database error: {0}")]
    Db(#[from] surrealdb::Error),
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
}

impl StorageError {
    /// True for the write conflicts SurrealDB says can be retried: a typed transaction conflict,
    /// or an internal error whose message says so.
    pub fn is_retryable(&self) -> bool {
        match self {
            StorageError::Db(e) => {
                matches!(e.query_details(), Some(surrealdb::types::QueryError::TransactionConflict))
                    || e.message().contains("can be retried")
            }
            _ => false,
        }
    }

    pub(crate) fn corrupt(e: impl std::fmt::Display) -> StorageError {
        StorageError::Corrupt(e.to_string())
    }
}

pub type Result<T, E = StorageError> = std::result::Result<T, E>;
