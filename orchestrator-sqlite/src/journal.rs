//! The [`Journal`] and [`WorkflowIndex`] implementations of [`SqliteMemory`]: reads on the read
//! pool.

use orchestrator::memory::{
    Journal, JournalRecord, MemoryError, Page, WorkflowFilter, WorkflowIndex, WorkflowSummary, check_id,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::SqliteMemory;
use crate::reads::{self, Tables, read};

impl<R> Journal<R> for SqliteMemory<R>
where
    R: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    async fn history(
        &self,
        id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<JournalRecord<R>>, MemoryError> {
        check_id(id)?;
        read(&self.readers, id, move |conn, id| reads::history(conn, id, after, limit, Tables::Live)).await
    }

    async fn entry(&self, id: &str, version: u64) -> Result<Option<JournalRecord<R>>, MemoryError> {
        check_id(id)?;
        read(&self.readers, id, move |conn, id| reads::entry(conn, id, version)).await
    }

    async fn children(&self, id: &str) -> Result<Vec<String>, MemoryError> {
        check_id(id)?;
        read(&self.readers, id, reads::children).await
    }

    async fn parent(&self, id: &str) -> Result<Option<String>, MemoryError> {
        check_id(id)?;
        read(&self.readers, id, reads::parent).await
    }
}

/// Lists on a read connection, with the indexes of schema version 6 (see [`crate::SCHEMA_VERSION`]).
impl<R: Send + Sync> WorkflowIndex for SqliteMemory<R> {
    async fn list(&self, filter: &WorkflowFilter) -> Result<Page<WorkflowSummary>, MemoryError> {
        let filter = filter.clone();
        read(&self.readers, "(workflows)", move |conn, _| reads::list_workflows(conn, &filter)).await
    }

    async fn count(&self, filter: &WorkflowFilter) -> Result<u64, MemoryError> {
        let filter = filter.clone();
        read(&self.readers, "(workflows)", move |conn, _| reads::count_workflows(conn, &filter)).await
    }
}
