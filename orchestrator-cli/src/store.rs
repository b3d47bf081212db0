//! The stores `history`, `replay` and `workflows` read: a SQLite file, or a PostgreSQL server by
//! URL.

use std::path::Path;

use orchestrator::memory::{
    Catalog, Definition, Journal, JournalRecord, MemoryError, Page, Recorded, WorkflowFilter, WorkflowIndex,
    WorkflowSummary,
};
use orchestrator::orchestration::WorkflowRecord;
use orchestrator_postgres::{PgConfig, PgStore};
use orchestrator_sqlite::SqliteMemory;

use crate::error::CliError;

/// A journal store named on the command line.
pub(crate) enum Store {
    /// A SQLite file.
    Sqlite(Box<SqliteMemory<WorkflowRecord>>),
    /// A PostgreSQL schema.
    Postgres(Box<PgStore<WorkflowRecord>>),
}

impl Store {
    /// Opens `location`: a `postgres://` or `postgresql://` URL (the tables in `schema`), else a
    /// SQLite file (`sqlite:PATH`, `sqlite://PATH` or a plain path), which must exist (it is not
    /// created).
    pub(crate) async fn open(location: &str, schema: &str) -> Result<Self, CliError> {
        if location.starts_with("postgres://") || location.starts_with("postgresql://") {
            let config = PgConfig { schema: schema.to_owned(), ..PgConfig::new(location) };
            let store = PgStore::open(config)
                .await
                .map_err(|e| CliError::Input(format!("cannot open the PostgreSQL store: {e}")))?;
            return Ok(Self::Postgres(Box::new(store)));
        }
        let file = location
            .strip_prefix("sqlite://")
            .or_else(|| location.strip_prefix("sqlite:"))
            .unwrap_or(location);
        let path = Path::new(file);
        if !path.exists() {
            return Err(CliError::Input(format!("{file}: no such store: the SQLite file does not exist")));
        }
        if !path.is_file() {
            return Err(CliError::Input(format!("{file}: not a SQLite store: it is not a file")));
        }
        SqliteMemory::open_path(path)
            .map(|store| Self::Sqlite(Box::new(store)))
            .map_err(|e| CliError::Input(format!("cannot open {file}: {e}")))
    }
}

impl Catalog for Store {
    async fn record(&self, definitions: &[Definition]) -> Result<(), MemoryError> {
        match self {
            Self::Sqlite(store) => store.record(definitions).await,
            Self::Postgres(store) => store.record(definitions).await,
        }
    }

    async fn definitions(&self) -> Result<Vec<Recorded>, MemoryError> {
        match self {
            Self::Sqlite(store) => store.definitions().await,
            Self::Postgres(store) => store.definitions().await,
        }
    }
}

impl WorkflowIndex for Store {
    async fn list(&self, filter: &WorkflowFilter) -> Result<Page<WorkflowSummary>, MemoryError> {
        match self {
            Self::Sqlite(store) => store.list(filter).await,
            Self::Postgres(store) => store.list(filter).await,
        }
    }

    async fn count(&self, filter: &WorkflowFilter) -> Result<u64, MemoryError> {
        match self {
            Self::Sqlite(store) => store.count(filter).await,
            Self::Postgres(store) => store.count(filter).await,
        }
    }
}

impl Journal<WorkflowRecord> for Store {
    async fn history(
        &self,
        id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<JournalRecord<WorkflowRecord>>, MemoryError> {
        match self {
            Self::Sqlite(store) => store.history(id, after, limit).await,
            Self::Postgres(store) => store.history(id, after, limit).await,
        }
    }

    async fn entry(
        &self,
        id: &str,
        version: u64,
    ) -> Result<Option<JournalRecord<WorkflowRecord>>, MemoryError> {
        match self {
            Self::Sqlite(store) => store.entry(id, version).await,
            Self::Postgres(store) => store.entry(id, version).await,
        }
    }

    async fn children(&self, id: &str) -> Result<Vec<String>, MemoryError> {
        match self {
            Self::Sqlite(store) => store.children(id).await,
            Self::Postgres(store) => store.children(id).await,
        }
    }

    async fn parent(&self, id: &str) -> Result<Option<String>, MemoryError> {
        match self {
            Self::Sqlite(store) => store.parent(id).await,
            Self::Postgres(store) => store.parent(id).await,
        }
    }
}
