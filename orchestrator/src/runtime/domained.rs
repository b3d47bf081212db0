//! Domained events: produced events that carry a `domain` are not published but handed to a
//! callback (which gets a publisher to reply with), or kept for inspection.

use std::sync::{Arc, Mutex};

use super::BoxFuture;
use crate::event::Event;
use crate::util::lock;

/// A produced event that carries a domain: it is not published but handed to the
/// domained-events callback (or kept, see
/// [`Broker::take_domained`](crate::broker::Broker::take_domained)).
#[derive(Debug, Clone, PartialEq)]
pub struct DomainedEvent {
    /// The event's domain.
    pub domain: String,
    /// The event.
    pub event: Event,
}

/// The domained-events callback; `P` is what it publishes replies with (for the in-process
/// broker, a [`BrokerHandle`](crate::broker::BrokerHandle)).
pub type DomainedFn<P> = Arc<dyn Fn(DomainedEvent, P) -> BoxFuture<()> + Send + Sync>;

/// The domained-events callback, or the list kept in its absence.
pub(super) struct Domained<P> {
    pub(super) callback: Option<DomainedFn<P>>,
    kept: Mutex<Vec<DomainedEvent>>,
}

impl<P> Default for Domained<P> {
    fn default() -> Self {
        Self { callback: None, kept: Mutex::default() }
    }
}

impl<P> Domained<P> {
    pub(super) fn keep(&self, domained: DomainedEvent) {
        lock(&self.kept).push(domained);
    }

    pub(super) fn take(&self) -> Vec<DomainedEvent> {
        std::mem::take(&mut *lock(&self.kept))
    }
}
