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
    /// A stored journal value could not be decoded (see
    /// [`orchestrator::memory::journal_codec`]): the row is corrupt.
    #[error("the stored {what} at version {version} is corrupt: {source}")]
    Journal {
        /// What was decoded.
        what: &'static str,
        /// The version of the row.
        version: i64,
        /// The codec's error.
        #[source]
        source: orchestrator::memory::journal_codec::CodecError,
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

impl SqliteError {
    /// Whether trying again later may succeed: a busy or locked database, a full disk, an I/O
    /// error, a group rolled back because of another operation, a stopped writer or a failed
    /// read task. Encoding and decoding errors, invalid stored values and other SQLite errors
    /// (constraints, corruption, misuse) are permanent.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Sqlite(error) => transient_sqlite(error),
            Self::Group { source, .. } => transient_sqlite(source),
            Self::WriterGone | Self::ReadTask(_) => true,
            Self::Encode { .. } | Self::Decode { .. } | Self::Journal { .. } | Self::Invalid { .. } => false,
        }
    }
}

fn transient_sqlite(error: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode;
    match error {
        rusqlite::Error::SqliteFailure(e, _) => matches!(
            e.code,
            ErrorCode::DatabaseBusy
                | ErrorCode::DatabaseLocked
                | ErrorCode::DiskFull
                | ErrorCode::SystemIoFailure
                | ErrorCode::OutOfMemory
                | ErrorCode::CannotOpen
                // A group rolled back because another of its operations failed midway.
                | ErrorCode::OperationAborted
        ),
        _ => false,
    }
}

/// `MemoryError::Backend` for workflow `id`, transient or not as its cause says.
pub(crate) fn backend(id: &str, source: impl Into<SqliteError>) -> MemoryError {
    let source = source.into();
    MemoryError::Backend { id: id.to_owned(), transient: source.is_transient(), source: Box::new(source) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(code: std::ffi::c_int) -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None)
    }

    #[test]
    fn busy_full_and_io_errors_are_transient_decoding_and_constraints_are_not() {
        for code in [rusqlite::ffi::SQLITE_BUSY, rusqlite::ffi::SQLITE_LOCKED, rusqlite::ffi::SQLITE_FULL] {
            assert!(backend("wf", failure(code)).is_transient(), "{code}");
        }
        assert!(backend("wf", failure(rusqlite::ffi::SQLITE_IOERR_WRITE)).is_transient());
        assert!(backend("wf", SqliteError::WriterGone).is_transient());
        let group =
            SqliteError::Group { stage: "commit", source: Arc::new(failure(rusqlite::ffi::SQLITE_BUSY)) };
        assert!(backend("wf", group).is_transient());
        assert!(!backend("wf", failure(rusqlite::ffi::SQLITE_CONSTRAINT)).is_transient());
        assert!(!backend("wf", failure(rusqlite::ffi::SQLITE_CORRUPT)).is_transient());
        let decode = serde_json::from_str::<u8>("x").unwrap_err();
        assert!(
            !backend("wf", SqliteError::Decode { what: "record", version: 1, source: decode }).is_transient()
        );
    }
}
