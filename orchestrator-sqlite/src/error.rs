//! Errors: [`OpenError`] when opening a store, [`SqliteError`] inside `MemoryError::Backend`.

use std::path::PathBuf;
use std::sync::Arc;

use orchestrator::memory::MemoryError;

/// Why [`crate::SqliteMemory::open`] failed.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// SQLite could not open or set up the file.
    #[error("cannot open the SQLite database {path}: {source}")]
    Open {
        /// The database file.
        path: PathBuf,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// The file cannot be put in WAL mode (an in-memory database, a read-only medium…).
    #[error("the SQLite database {path} cannot use WAL mode (journal mode is {mode:?})")]
    NoWal {
        /// The database file.
        path: PathBuf,
        /// The journal mode SQLite kept.
        mode: String,
    },
    /// The file was written by a newer version of this library: its schema is unknown here.
    #[error(
        "the SQLite database {path} has schema version {found}, newer than version {supported} known to \
         this orchestrator-sqlite; upgrade the library (or use another file)"
    )]
    NewerSchema {
        /// The database file.
        path: PathBuf,
        /// Its `PRAGMA user_version`.
        found: i64,
        /// The latest schema version this library knows.
        supported: i64,
    },
    /// The file's `PRAGMA user_version` is not one this library ever writes.
    #[error("the SQLite database {path} has an invalid schema version {found}")]
    InvalidSchema {
        /// The database file.
        path: PathBuf,
        /// Its `PRAGMA user_version`.
        found: i64,
    },
    /// A migration step failed; the file is left at the version before it.
    #[error("migrating the SQLite database {path} to schema version {version} failed: {source}")]
    Migration {
        /// The database file.
        path: PathBuf,
        /// The version the failed step leads to.
        version: i64,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// The writer thread could not be started.
    #[error("cannot start the SQLite writer thread: {0}")]
    Thread(#[source] std::io::Error),
}

/// The cause inside [`MemoryError::Backend`] for this backend.
#[derive(Debug, thiserror::Error)]
pub enum SqliteError {
    /// A statement failed.
    #[error("SQLite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The group transaction the operation was part of could not begin or commit: nothing of it
    /// was stored.
    #[error("could not {stage} the group transaction (nothing was stored): {source}")]
    Group {
        /// `begin`, `commit`…
        stage: &'static str,
        /// SQLite's error, shared by every operation of the group.
        #[source]
        source: Arc<rusqlite::Error>,
    },
    /// A value could not be encoded as JSON.
    #[error("cannot encode the {what} as JSON: {source}")]
    Encode {
        /// What was encoded.
        what: &'static str,
        /// serde_json's error.
        #[source]
        source: serde_json::Error,
    },
    /// A stored value could not be decoded: the row is corrupt or of another record type.
    #[error("the stored {what} at version {version} is corrupt or not of the expected type: {source}")]
    Decode {
        /// What was decoded.
        what: &'static str,
        /// The version of the row.
        version: i64,
        /// serde_json's error.
        #[source]
        source: serde_json::Error,
    },
    /// A stored column holds a value out of range.
    #[error("the stored {what} holds an invalid value {value}")]
    Invalid {
        /// The column.
        what: &'static str,
        /// The value.
        value: i64,
    },
    /// The writer thread has stopped (the store is being dropped, or it panicked).
    #[error("the SQLite writer thread has stopped")]
    WriterGone,
    /// A blocking read task failed (panicked or was cancelled).
    #[error("a SQLite read task failed: {0}")]
    ReadTask(String),
}

/// `MemoryError::Backend` for workflow `id`.
pub(crate) fn backend(id: &str, source: impl Into<SqliteError>) -> MemoryError {
    MemoryError::Backend { id: id.to_owned(), source: Box::new(source.into()) }
}

/// Rejects ids no backend can store (as `orchestrator`'s own backends do).
pub(crate) fn check_id(id: &str) -> Result<(), MemoryError> {
    if id.is_empty() {
        return Err(MemoryError::InvalidId { id: id.to_owned(), reason: "it is empty" });
    }
    Ok(())
}
