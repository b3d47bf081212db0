//! The [`Outbox`] implementation of [`SqliteMemory`]: the events in flight, in the same file
//! (a commit with an `OutboxStep` takes the same step in its own transaction).

use orchestrator::event::Event;
use orchestrator::memory::MemoryError;
use orchestrator::outbox::{Outbox, Pending};

use crate::SqliteMemory;
use crate::ops;
use crate::reads::{self, read};
use crate::store::encode;

impl<R: Send + Sync> Outbox for SqliteMemory<R> {
    async fn advance(&self, consumed: Option<&str>, produced: &[Event]) -> Result<(), MemoryError> {
        let key = consumed.unwrap_or("(outbox)");
        let produced = produced
            .iter()
            .map(|e| Ok((e.id().to_owned(), encode(e.id(), "outbox event", e)?)))
            .collect::<Result<Vec<_>, MemoryError>>()?;
        let op = ops::AdvanceOp { consumed: consumed.map(str::to_owned).into_iter().collect(), produced };
        // The events' buffers come back to be freed here (see `Memory::commit`).
        let op = self.writer.submit(key, move |conn, now| ops::advance(conn, &op, now).map(|()| op)).await?;
        drop(op);
        Ok(())
    }

    async fn release(&self, ids: &[&str]) -> Result<(), MemoryError> {
        let Some(first) = ids.first() else { return Ok(()) };
        let op = ops::AdvanceOp {
            consumed: ids.iter().map(|id| (*id).to_owned()).collect(),
            produced: Vec::new(),
        };
        self.writer.submit(first, move |conn, now| ops::advance(conn, &op, now)).await
    }

    async fn pending(&self, after: u64, limit: usize) -> Result<Vec<Pending>, MemoryError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        read(&self.readers, "(outbox)", move |conn, _| reads::pending(conn, after, limit)).await
    }
}
