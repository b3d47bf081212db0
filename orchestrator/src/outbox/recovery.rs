//! Publishing through the outbox, and redelivering what it holds after a restart.

use super::Outbox;
use crate::event::Event;
use crate::memory::MemoryError;
use crate::transport::{Transport, TransportError};

/// Why [`publish`] or [`redeliver`] failed.
#[derive(Debug, thiserror::Error)]
pub enum RecoveryError {
    /// The outbox could not be read or written.
    #[error("outbox: {0}")]
    Outbox(#[from] MemoryError),
    /// The transport refused an event (closed, or the event has no `to`). The event stays in
    /// the outbox.
    #[error("the transport refused event {id}: {source}")]
    Transport {
        /// The event's id.
        id: String,
        /// Why.
        #[source]
        source: TransportError,
    },
}

/// Publishes `event` durably: adds it to `outbox`, then publishes it on `transport` (waiting
/// while it is full). A crash in between is repaired by [`redeliver`].
pub async fn publish<O: Outbox, T: Transport>(
    outbox: &O,
    transport: &T,
    event: Event,
) -> Result<(), RecoveryError> {
    outbox.advance(None, std::slice::from_ref(&event)).await?;
    let id = event.id().to_owned();
    transport.publish(vec![event]).await.map_err(|source| RecoveryError::Transport { id, source })
}

/// Every event in `outbox`, oldest first, read `page` at a time.
pub async fn in_flight<O: Outbox>(outbox: &O, page: usize) -> Result<Vec<Event>, MemoryError> {
    let page = page.max(1);
    let mut events = Vec::new();
    let mut after = 0;
    loop {
        let batch = outbox.pending(after, page).await?;
        let full = batch.len() == page;
        if let Some(last) = batch.last() {
            after = last.seq;
        }
        events.extend(batch.into_iter().map(|p| p.event));
        if !full {
            return Ok(events);
        }
    }
}

/// Publishes every event in `outbox`, oldest first; returns how many. Call it once at start-up,
/// before publishing anything else: the events in the outbox then are exactly those a previous
/// run left in flight. It reads them all (`page` at a time) before publishing the first, so what
/// the redelivered events produce meanwhile is not published twice.
pub async fn redeliver<O: Outbox, T: Transport>(
    outbox: &O,
    transport: &T,
    page: usize,
) -> Result<usize, RecoveryError> {
    let events = in_flight(outbox, page).await?;
    let published = events.len();
    for event in events {
        let id = event.id().to_owned();
        transport.publish(vec![event]).await.map_err(|source| RecoveryError::Transport { id, source })?;
    }
    Ok(published)
}
