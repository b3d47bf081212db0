//! Where events go that no handler takes: dead letters and domained events, each either handed
//! to a user callback or kept in an inspectable list. Nothing is dropped silently.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use super::BrokerError;
use super::handle::BrokerHandle;
use super::lock;
use super::stats::{Counters, bump};
use crate::event::Event;
use crate::violation::Violation;

/// An event the broker could not deliver or that its handler rejected, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct DeadLetter {
    /// The event.
    pub event: Event,
    /// Why it is a dead letter.
    pub reason: DeadLetterReason,
}

/// Why an event became a [`DeadLetter`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DeadLetterReason {
    /// No handler listens on the event's `to` (and no `resolve` collects it).
    #[error("no handler registered for `to` = `{to}`")]
    NoHandler {
        /// The event's `to`.
        to: String,
    },
    /// The handler returned a violation; the event produced nothing.
    #[error("the handler returned a violation: {0}")]
    Violation(Violation),
    /// The handler panicked; the event produced nothing.
    #[error("the handler panicked: {message}")]
    Panicked {
        /// The panic message.
        message: String,
    },
    /// A produced event could not be published (`MissingTo`, `QueueFull`).
    #[error("the produced event could not be published: {0}")]
    Rejected(BrokerError),
    /// The domained-events callback panicked while handling this domained event.
    #[error("the domained-events callback panicked: {message}")]
    CallbackPanicked {
        /// The panic message.
        message: String,
    },
}

/// A produced event that carries a domain: it is not published but handed to the
/// domained-events callback (or kept for [`take_domained`](super::Broker::take_domained)).
#[derive(Debug, Clone, PartialEq)]
pub struct DomainedEvent {
    /// The event's domain.
    pub domain: String,
    /// The event.
    pub event: Event,
}

/// A boxed `Send` future.
pub(super) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;
/// The dead-letter callback.
pub(super) type ErrorFn = Arc<dyn Fn(DeadLetter) + Send + Sync>;
/// The domained-events callback.
pub(super) type DomainedFn = Arc<dyn Fn(DomainedEvent, BrokerHandle) -> BoxFuture<()> + Send + Sync>;

/// The callbacks, or the lists kept in their absence.
pub(super) struct Outlets {
    on_error: Option<ErrorFn>,
    on_domained: Option<DomainedFn>,
    dead_letters: Mutex<Vec<DeadLetter>>,
    domained: Mutex<Vec<DomainedEvent>>,
}

impl Outlets {
    pub(super) fn new(on_error: Option<ErrorFn>, on_domained: Option<DomainedFn>) -> Self {
        Self { on_error, on_domained, dead_letters: Mutex::default(), domained: Mutex::default() }
    }

    /// Reports a dead letter to `on_error`, or keeps it. A panic in `on_error` is contained (the
    /// panic hook has reported it) so the worker carries on.
    pub(super) fn dead_letter(&self, counters: &Counters, event: Event, reason: DeadLetterReason) {
        bump(&counters.dead_lettered);
        let letter = DeadLetter { event, reason };
        match &self.on_error {
            Some(on_error) => {
                let _ = catch_unwind(AssertUnwindSafe(|| on_error(letter)));
            }
            None => lock(&self.dead_letters).push(letter),
        }
    }

    /// The domained-events callback, if one was configured.
    pub(super) fn on_domained(&self) -> Option<&DomainedFn> {
        self.on_domained.as_ref()
    }

    /// Keeps a domained event (no callback configured).
    pub(super) fn keep_domained(&self, domained: DomainedEvent) {
        lock(&self.domained).push(domained);
    }

    pub(super) fn take_dead_letters(&self) -> Vec<DeadLetter> {
        std::mem::take(&mut *lock(&self.dead_letters))
    }

    pub(super) fn take_domained(&self) -> Vec<DomainedEvent> {
        std::mem::take(&mut *lock(&self.domained))
    }
}
