//! The transactional outbox: events in flight survive a crash of the process that carries them.
//!
//! The in-process [`Broker`](crate::broker::Broker) keeps its queue in memory, so a crash loses
//! the events it was carrying, even though the workflows that produced them were persisted. An
//! [`Outbox`] is a durable set of the events *in flight*: every event that has been produced (or
//! published from outside) and whose consumer has not finished with it yet.
//!
//! A [`Node`](crate::runtime::Node) built with
//! [`NodeBuilder::durable`](crate::runtime::NodeBuilder::durable) does all of this by itself: it
//! wraps every handler, publishes its init events through the outbox, commits each orchestrator
//! step's outbox step with its state, and redelivers what a previous run left in flight when it
//! starts. The pieces below are what it uses; call them directly only when wiring a broker by
//! hand:
//!
//! * A handler wrapped in [`Outboxed`] moves its event forward in one atomic step once it has
//!   handled it: [`Outbox::advance`] removes the consumed event and adds the events it produced,
//!   *before* they are handed to the broker. A crash before that step leaves the consumed event
//!   in the outbox (it will be handled again); a crash after it leaves the produced ones.
//! * [`publish`] adds an event from outside (a workflow's init) to the outbox before publishing.
//! * After a restart, [`redeliver`] publishes every event still in the outbox, oldest first.
//!
//! Exactly once, end to end: a service handled again after a crash produces its answer again,
//! which is harmless because its first answer was never delivered (it was not in the outbox yet).
//! A service whose outbox step failed although the store applied it (the answer to the commit was
//! lost with the connection) is not run again on the retry: [`Outboxed`] takes the step again
//! with the events it produced the first time.
//! An orchestrator that consumed an event, persisted its state and crashed before its outbox step
//! gets that event again: the journal answers with the events it produced the first time, with
//! the same ids, without stepping the workflow twice ([`Memory::produced`](crate::memory::Memory::produced)).
//! A crash test (`orchestrator-sqlite/tests/crash.rs`) kills a process running 400 workflows at
//! random moments and checks that every workflow completes exactly once.
//!
//! Leases: a killed process's leases lapse only after their TTL, so the events redelivered for
//! the workflows it held would be refused until then (they stay in the outbox). A store that
//! knows who held them can free them at once: `orchestrator_sqlite::SqliteConfig::owner`.
//!
//! What stays outside: events with a `domain` (they leave the broker for the domained-events
//! callback and are not added), and events consumed by a handler that is not wrapped (they stay
//! until [`Outbox::advance`] is called for them; a durable node wraps them all). [`redeliver`]
//! assumes that no other process is carrying the same outbox's events: with several processes on
//! one store, use a shared transport.
//!
//! On a transport that stores what it accepts (a broker such as NATS JetStream:
//! [`Transport::stores_published`](crate::transport::Transport::stores_published)), a durable
//! node lets events leave the outbox as soon as the transport has them ([`Outbox::release`]), not
//! when they are handled: the outbox then bridges only the gap between a step's commit and the
//! broker's acknowledgement, and the events may be handled by processes over other stores.

mod in_memory;
mod outboxed;
mod recovery;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

use std::future::Future;
use std::sync::Arc;

pub use in_memory::InMemoryOutbox;
pub(crate) use outboxed::Unsettled;
pub use outboxed::{Outboxed, UNSETTLED_CAPACITY};
pub use recovery::{RecoveryError, in_flight, publish, redeliver};

use crate::event::Event;
use crate::memory::MemoryError;

/// The events of `produced` that travel through the outbox: all but those with a `domain`
/// (they leave the transport for the domained-events callback) and those without a `to` (the
/// dispatcher reports them as dead letters: no transport takes them).
pub(crate) fn travelling(produced: &[Event]) -> Vec<Event> {
    produced.iter().filter(|e| e.domain().is_none() && e.to().is_some()).cloned().collect()
}

/// An event waiting in an [`Outbox`], with its position (positions grow and are never reused).
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    /// The position: later events have larger ones.
    pub seq: u64,
    /// The event.
    pub event: Event,
}

/// A durable set of the events in flight (see the [module documentation](self)).
pub trait Outbox: Send + Sync {
    /// In one atomic step: removes the event with id `consumed` (if given and present) and adds
    /// `produced` in order (an event whose id is already present is not added twice). Returns
    /// once the step is durable.
    fn advance(
        &self,
        consumed: Option<&str>,
        produced: &[Event],
    ) -> impl Future<Output = Result<(), MemoryError>> + Send;

    /// Up to `limit` events in the outbox with a position above `after`, oldest first.
    fn pending(
        &self,
        after: u64,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<Pending>, MemoryError>> + Send;

    /// When this outbox is also a transport's queue (a database queue), its identity: see
    /// [`Transport::queue_id`](crate::transport::Transport::queue_id). `None` by default.
    fn queue_id(&self) -> Option<&str> {
        None
    }

    /// Removes the events with these ids (ids not present are skipped) in one atomic step, and
    /// returns once that is durable: a durable transport stored them
    /// ([`Transport::stores_published`](crate::transport::Transport::stores_published)), so
    /// they no longer need the outbox. By default, one [`advance`](Outbox::advance) per id.
    fn release(&self, ids: &[&str]) -> impl Future<Output = Result<(), MemoryError>> + Send {
        async move {
            for id in ids {
                self.advance(Some(id), &[]).await?;
            }
            Ok(())
        }
    }
}

/// A boxed `Send` future.
type BoxFuture<'a, T> = std::pin::Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Object-safe [`Outbox`]: every [`Outbox`] is a `DynOutbox`, so an outbox can be held as
/// `Arc<dyn DynOutbox>` (see [`Lifecycle::with_outbox`](crate::orchestration::Lifecycle::with_outbox)).
pub trait DynOutbox: Send + Sync {
    /// See [`Outbox::advance`].
    fn advance_dyn<'a>(
        &'a self,
        consumed: Option<&'a str>,
        produced: &'a [Event],
    ) -> BoxFuture<'a, Result<(), MemoryError>>;
    /// See [`Outbox::pending`].
    fn pending_dyn(&self, after: u64, limit: usize) -> BoxFuture<'_, Result<Vec<Pending>, MemoryError>>;
    /// See [`Outbox::queue_id`].
    fn queue_id_dyn(&self) -> Option<&str>;
    /// See [`Outbox::release`].
    fn release_dyn<'a>(&'a self, ids: &'a [&'a str]) -> BoxFuture<'a, Result<(), MemoryError>>;
}

impl std::fmt::Debug for dyn DynOutbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("dyn DynOutbox")
    }
}

impl<O: Outbox> DynOutbox for O {
    fn advance_dyn<'a>(
        &'a self,
        consumed: Option<&'a str>,
        produced: &'a [Event],
    ) -> BoxFuture<'a, Result<(), MemoryError>> {
        Box::pin(self.advance(consumed, produced))
    }
    fn pending_dyn(&self, after: u64, limit: usize) -> BoxFuture<'_, Result<Vec<Pending>, MemoryError>> {
        Box::pin(self.pending(after, limit))
    }
    fn queue_id_dyn(&self) -> Option<&str> {
        self.queue_id()
    }
    fn release_dyn<'a>(&'a self, ids: &'a [&'a str]) -> BoxFuture<'a, Result<(), MemoryError>> {
        Box::pin(self.release(ids))
    }
}

impl Outbox for Arc<dyn DynOutbox> {
    async fn advance(&self, consumed: Option<&str>, produced: &[Event]) -> Result<(), MemoryError> {
        (**self).advance_dyn(consumed, produced).await
    }

    async fn pending(&self, after: u64, limit: usize) -> Result<Vec<Pending>, MemoryError> {
        (**self).pending_dyn(after, limit).await
    }

    fn queue_id(&self) -> Option<&str> {
        (**self).queue_id_dyn()
    }

    async fn release(&self, ids: &[&str]) -> Result<(), MemoryError> {
        (**self).release_dyn(ids).await
    }
}

impl<O: Outbox> Outbox for Arc<O> {
    async fn advance(&self, consumed: Option<&str>, produced: &[Event]) -> Result<(), MemoryError> {
        (**self).advance(consumed, produced).await
    }

    async fn pending(&self, after: u64, limit: usize) -> Result<Vec<Pending>, MemoryError> {
        (**self).pending(after, limit).await
    }

    fn queue_id(&self) -> Option<&str> {
        (**self).queue_id()
    }

    async fn release(&self, ids: &[&str]) -> Result<(), MemoryError> {
        (**self).release(ids).await
    }
}
