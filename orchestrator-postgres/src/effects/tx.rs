//! [`EffectTx`]: the transaction a transactional handler writes its effects in.

use std::sync::Arc;

use deadpool_postgres::Object;
use tokio::sync::RwLock;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

tokio::task_local! {
    /// The transaction of the transactional handler running on this task.
    static CURRENT: EffectTx;
}

/// Why a statement of an [`EffectTx`] failed.
#[derive(Debug, thiserror::Error)]
pub enum EffectError {
    /// PostgreSQL refused or failed the statement. The transaction is then aborted: the step
    /// that runs the handler rolls it back (the handler's writes with it) unless the handler
    /// fails itself (an error answer rolls back to before its writes, see
    /// [`Transactional`](super::Transactional)).
    #[error("effect statement failed: {0}")]
    Postgres(#[from] tokio_postgres::Error),
    /// The transaction is over (committed or rolled back): the handler that held it returned.
    #[error("the effect transaction is over: its handler returned")]
    Finished,
    /// [`EffectTx::current`] was asked outside a transactional handler.
    #[error("no effect transaction: the handler does not run through PgStore::transactional")]
    Outside,
}

/// The open transaction of a transactional handler (see [`Transactional`](super::Transactional)):
/// what the handler writes here commits in the same transaction as its recorded answer and,
/// for a delivery of the store's queue, the settlement of that delivery with the events it
/// produced; or not at all.
///
/// Cheap to clone (every clone is the same transaction); statements of clones may run at once
/// (they are pipelined on the one connection). Once its handler returned, the transaction is
/// over and every statement fails with [`EffectError::Finished`]: never keep it in a task that
/// outlives the handler.
#[derive(Clone)]
pub struct EffectTx {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for EffectTx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EffectTx").finish_non_exhaustive()
    }
}

/// The connection, while the transaction is open.
struct Inner {
    client: RwLock<Option<Object>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Never finished (its handler's future was dropped): the connection leaves the pool and
        // closes, so PostgreSQL rolls the transaction back.
        if let Some(client) = self.client.get_mut().take() {
            drop(Object::take(client));
        }
    }
}

/// How an [`EffectTx`] ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum End {
    Commit,
    Rollback,
}

impl EffectTx {
    /// The transaction of the transactional handler running on this task:
    /// [`EffectError::Outside`] when none runs (the handler was not wrapped by
    /// [`PgStore::transactional`](crate::PgStore::transactional)).
    pub fn current() -> Result<Self, EffectError> {
        CURRENT.try_with(Clone::clone).map_err(|_| EffectError::Outside)
    }

    /// Runs `sql` (one statement, with `$1`… parameters) in the transaction; the rows changed.
    pub async fn execute(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64, EffectError> {
        let client = self.inner.client.read().await;
        let client = client.as_ref().ok_or(EffectError::Finished)?;
        Ok(client.execute(sql, params).await?)
    }

    /// Runs query `sql` in the transaction; its rows.
    pub async fn query(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, EffectError> {
        let client = self.inner.client.read().await;
        let client = client.as_ref().ok_or(EffectError::Finished)?;
        Ok(client.query(sql, params).await?)
    }

    /// Runs query `sql` in the transaction; its one row, if any (more than one is an error).
    pub async fn query_opt(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, EffectError> {
        let client = self.inner.client.read().await;
        let client = client.as_ref().ok_or(EffectError::Finished)?;
        Ok(client.query_opt(sql, params).await?)
    }

    /// Opens a transaction on `client` (which must have none open), with a savepoint before
    /// the handler's writes.
    pub(super) async fn begin(client: Object) -> Result<Self, tokio_postgres::Error> {
        client.batch_execute("BEGIN; SAVEPOINT effect").await?;
        Ok(Self { inner: Arc::new(Inner { client: RwLock::new(Some(client)) }) })
    }

    /// Runs `future` with this transaction as [`EffectTx::current`].
    pub(super) async fn scope<F: std::future::Future>(&self, future: F) -> F::Output {
        CURRENT.scope(self.clone(), future).await
    }

    /// Undoes what the handler wrote (back to the savepoint taken at the start).
    pub(super) async fn undo_effects(&self) -> Result<(), EffectError> {
        let client = self.inner.client.read().await;
        let client = client.as_ref().ok_or(EffectError::Finished)?;
        Ok(client.batch_execute("ROLLBACK TO SAVEPOINT effect").await?)
    }

    /// Runs a statement of the step itself (the answer and the settlement), prepared once per
    /// connection.
    pub(super) async fn step(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, EffectError> {
        let client = self.inner.client.read().await;
        let client = client.as_ref().ok_or(EffectError::Finished)?;
        let statement = client.prepare_cached(sql).await?;
        Ok(client.query(&statement, params).await?)
    }

    /// Ends the transaction. The connection goes back to the pool if it ended cleanly, else it
    /// is closed (PostgreSQL rolls back what a closed connection left open).
    pub(super) async fn end(&self, end: End) -> Result<(), EffectError> {
        let Some(client) = self.inner.client.write().await.take() else {
            return Err(EffectError::Finished);
        };
        let sql = match end {
            End::Commit => "COMMIT",
            End::Rollback => "ROLLBACK",
        };
        match client.batch_execute(sql).await {
            Ok(()) => Ok(()),
            Err(e) => {
                drop(Object::take(client));
                Err(e.into())
            }
        }
    }
}
