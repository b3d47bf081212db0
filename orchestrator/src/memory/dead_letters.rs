//! Dead letters kept in the store: the events a [`Node`](crate::runtime::Node) gave up on, with
//! why, where tools (`orchestrator serve`, a user's own) can find them after the process ended.
//!
//! A transport that keeps its dead letters itself (the PostgreSQL queue's table, the NATS and
//! Redis dead-letter streams: [`Transport::keeps_dead_letters`]) needs none of this. Over a
//! transport that does not (the in-process one), a node whose store keeps dead letters
//! ([`Memory::dead_letter_store`](super::Memory::dead_letter_store)) *buries* each one there
//! before it lets the delivery go: the event leaves the store's outbox and enters its dead
//! letters in one transaction, so a crash loses neither. A bury that fails transiently leaves
//! the delivery to be tried again.
//!
//! [`Transport::keeps_dead_letters`]: crate::transport::Transport::keeps_dead_letters

use std::future::Future;
use std::time::SystemTime;

use super::MemoryError;
use super::dynamic::BoxFuture;
use crate::event::Event;

/// A dead letter as a store keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct Buried {
    /// Its position: dead letters are listed in the order they were buried.
    pub seq: u64,
    /// When it was buried.
    pub at: SystemTime,
    /// The event.
    pub event: Event,
    /// Why the runtime gave up on it (a [`DeadLetterReason`](crate::runtime::DeadLetterReason),
    /// as text).
    pub reason: String,
    /// The delivery attempt that gave up (1 for the first).
    pub attempt: u32,
}

/// A store that keeps dead letters (see the [module documentation](self)).
pub trait DeadLetterStore: Send + Sync {
    /// Keeps `event` as a dead letter with `reason`, and removes it from the store's outbox
    /// (when the store has one), in one transaction. Burying an event again (same id) keeps the
    /// first burial and still removes it from the outbox.
    fn bury(
        &self,
        event: &Event,
        reason: &str,
        attempt: u32,
    ) -> impl Future<Output = Result<(), MemoryError>> + Send;

    /// The dead letters buried after position `after` (0: from the first), oldest first, at most
    /// `limit`; only those of workflow `subject` when given.
    fn buried(
        &self,
        subject: Option<&str>,
        after: u64,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<Buried>, MemoryError>> + Send;
}

/// [`DeadLetterStore`] as a trait object (what [`Memory::dead_letter_store`](super::Memory::dead_letter_store)
/// returns).
pub trait DynDeadLetterStore: Send + Sync {
    /// See [`DeadLetterStore::bury`].
    fn bury_dyn<'a>(
        &'a self,
        event: &'a Event,
        reason: &'a str,
        attempt: u32,
    ) -> BoxFuture<'a, Result<(), MemoryError>>;
    /// See [`DeadLetterStore::buried`].
    fn buried_dyn<'a>(
        &'a self,
        subject: Option<&'a str>,
        after: u64,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Buried>, MemoryError>>;
}

impl<S: DeadLetterStore> DynDeadLetterStore for S {
    fn bury_dyn<'a>(
        &'a self,
        event: &'a Event,
        reason: &'a str,
        attempt: u32,
    ) -> BoxFuture<'a, Result<(), MemoryError>> {
        Box::pin(self.bury(event, reason, attempt))
    }

    fn buried_dyn<'a>(
        &'a self,
        subject: Option<&'a str>,
        after: u64,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Buried>, MemoryError>> {
        Box::pin(self.buried(subject, after, limit))
    }
}

/// The [`DeadLetterStore`] of a store known as a [`Memory`](super::Memory) (whose
/// [`dead_letter_store`](super::Memory::dead_letter_store) may be `None`: every call then fails
/// with [`MemoryError::Unsupported`]), owned, for the runtime.
pub(crate) struct GraveyardOf<M, R> {
    store: std::sync::Arc<M>,
    _record: std::marker::PhantomData<fn() -> R>,
}

impl<M, R> GraveyardOf<M, R> {
    pub(crate) fn new(store: std::sync::Arc<M>) -> Self {
        Self { store, _record: std::marker::PhantomData }
    }
}

const UNSUPPORTED: MemoryError = MemoryError::Unsupported { what: "dead letters" };

impl<R: Send + Sync + 'static, M: super::Memory<R>> DeadLetterStore for GraveyardOf<M, R> {
    async fn bury(&self, event: &Event, reason: &str, attempt: u32) -> Result<(), MemoryError> {
        match self.store.dead_letter_store() {
            Some(store) => store.bury_dyn(event, reason, attempt).await,
            None => Err(UNSUPPORTED),
        }
    }

    async fn buried(
        &self,
        subject: Option<&str>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Buried>, MemoryError> {
        match self.store.dead_letter_store() {
            Some(store) => store.buried_dyn(subject, after, limit).await,
            None => Err(UNSUPPORTED),
        }
    }
}
