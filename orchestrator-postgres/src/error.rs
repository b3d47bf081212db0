//! Errors: opening a store, and how PostgreSQL failures map to [`MemoryError`].

use orchestrator::memory::MemoryError;
use tokio_postgres::error::SqlState;

/// Why [`PgStore::open`](crate::PgStore::open) failed.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The connection URL could not be parsed.
    #[error("invalid PostgreSQL URL: {0}")]
    Url(#[source] tokio_postgres::Error),
    /// The connection pool could not be built or gave no connection.
    #[error("PostgreSQL connection pool failed: {0}")]
    Pool(String),
    /// Creating or migrating the schema, or freeing this node's previous leases, failed.
    #[error("PostgreSQL migration failed: {0}")]
    Migration(#[source] tokio_postgres::Error),
    /// The database was written by a newer version of this crate.
    #[error("the database schema is at version {found}, newer than {supported} (this crate's)")]
    NewerSchema {
        /// The version found in the database.
        found: i32,
        /// The newest version this crate knows.
        supported: i32,
    },
}

/// What went wrong in the backend, as the source of a [`MemoryError::Backend`].
#[derive(Debug, thiserror::Error)]
pub enum PgError {
    /// A PostgreSQL error.
    #[error(transparent)]
    Postgres(#[from] tokio_postgres::Error),
    /// No connection could be had from the pool.
    #[error("connection pool: {0}")]
    Pool(String),
    /// The store's committers stopped (the store is being dropped): the write was not made.
    #[error("the store's committers stopped")]
    CommittersStopped,
    /// A group of writes was sent in one transaction and its commit was not answered (the
    /// connection was lost): whether it was applied is unknown. Trying again is safe: the
    /// writes are idempotent or fenced.
    #[error("the commit of a group of writes was not answered: {0}")]
    Unanswered(String),
    /// A stored value could not be decoded or encoded.
    #[error("cannot encode or decode {what}: {source}")]
    Codec {
        /// What.
        what: &'static str,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// A journal row's encoded value is corrupt (see
    /// [`orchestrator::memory::journal_codec`]).
    #[error("corrupt {what} in the journal{}: {source}", version.map(|v| format!(" at version {v}")).unwrap_or_default())]
    Journal {
        /// What.
        what: &'static str,
        /// The row's version, when known.
        version: Option<i64>,
        /// Why.
        #[source]
        source: orchestrator::memory::journal_codec::CodecError,
    },
    /// A queue delivery's claim is no longer its own: its visibility deadline passed and
    /// another consumer claimed the event, or it was settled already.
    #[error("the claim on event `{event_id}` was lost (its visibility deadline passed, or it was settled)")]
    ClaimLost {
        /// The event's id.
        event_id: String,
    },
    /// A row that was there a moment ago is gone (deleted meanwhile): trying again sees where
    /// things stand now.
    #[error("{what} was deleted while it was being read")]
    Vanished {
        /// What.
        what: &'static str,
    },
    /// A stored number is out of range.
    #[error("invalid {what}: {value}")]
    Invalid {
        /// What.
        what: &'static str,
        /// The value.
        value: i64,
    },
}

impl PgError {
    /// Whether trying again later may succeed: connection failures, serialization failures,
    /// deadlocks, shutdowns and pool timeouts; not decoding errors or constraint violations.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Postgres(e) => postgres_is_transient(e),
            Self::Pool(_) | Self::CommittersStopped | Self::Unanswered(_) | Self::Vanished { .. } => true,
            Self::Codec { .. } | Self::Journal { .. } | Self::Invalid { .. } | Self::ClaimLost { .. } => {
                false
            }
        }
    }
}

fn postgres_is_transient(e: &tokio_postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    match e.code() {
        Some(code) => {
            *code == SqlState::T_R_SERIALIZATION_FAILURE
                || *code == SqlState::T_R_DEADLOCK_DETECTED
                || *code == SqlState::ADMIN_SHUTDOWN
                || *code == SqlState::CRASH_SHUTDOWN
                || *code == SqlState::CANNOT_CONNECT_NOW
                || *code == SqlState::TOO_MANY_CONNECTIONS
                || *code == SqlState::LOCK_NOT_AVAILABLE
                || *code == SqlState::QUERY_CANCELED
                || code.code().starts_with("08")
        }
        // No SQLSTATE: an I/O or protocol failure of the connection.
        None => e.as_db_error().is_none(),
    }
}

/// A [`MemoryError::Backend`] for workflow `id`.
pub(crate) fn backend(id: &str, e: impl Into<PgError>) -> MemoryError {
    let e = e.into();
    MemoryError::Backend { id: id.to_owned(), transient: e.is_transient(), source: Box::new(e) }
}

impl From<deadpool_postgres::PoolError> for PgError {
    fn from(e: deadpool_postgres::PoolError) -> Self {
        match e {
            deadpool_postgres::PoolError::Backend(e) => Self::Postgres(e),
            other => Self::Pool(other.to_string()),
        }
    }
}
