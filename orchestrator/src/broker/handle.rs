//! [`BrokerHandle`]: the publishing side of a broker, cheap to clone and to hand to callbacks.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{BrokerError, BrokerStats};
use crate::event::Event;
use crate::runtime::Dispatcher;
use crate::transport::{InProcessTransport, Transport, TransportError};

/// What a broker's handles, workers and clones share.
pub(super) struct Shared {
    pub(super) transport: InProcessTransport,
    pub(super) dispatcher: Dispatcher<BrokerHandle>,
    rejected: AtomicU64,
}

impl Shared {
    pub(super) fn new(transport: InProcessTransport, dispatcher: Dispatcher<BrokerHandle>) -> Self {
        Self { transport, dispatcher, rejected: AtomicU64::new(0) }
    }

    /// Counts a refused publish and names it as a broker error.
    fn refused(&self, error: TransportError) -> BrokerError {
        self.rejected.fetch_add(1, Ordering::Relaxed);
        match error {
            TransportError::MissingTo { id } => BrokerError::MissingTo { id },
            TransportError::Full { capacity, .. } => BrokerError::QueueFull { capacity },
            TransportError::EventTooLarge(e) => BrokerError::EventTooLarge(e),
            // The in-process transport fails a publish with nothing else.
            TransportError::Closed
            | TransportError::InvalidConfig { .. }
            | TransportError::Backend { .. } => BrokerError::Closed,
        }
    }

    pub(super) fn stats(&self) -> BrokerStats {
        let transport = self.transport.stats();
        let dispatch = self.dispatcher.stats();
        BrokerStats {
            published: transport.published,
            delivered: dispatch.delivered,
            collected: dispatch.collected,
            produced: dispatch.produced,
            domained: dispatch.domained,
            retried: dispatch.retried,
            dead_lettered: dispatch.dead_lettered,
            dead_letters_dropped: self.dispatcher.dead_letters().dropped(),
            rejected: self.rejected.load(Ordering::Relaxed),
            queued: transport.queued,
            in_flight: transport.in_flight,
            delayed: transport.delayed,
        }
    }
}

/// Publishes into a broker. Domained-events callbacks get one to publish replies. It cannot
/// `resolve` (a callback runs inside the work a resolve waits for) and does not keep the workers
/// alive: once every [`Broker`](super::Broker) is dropped or shut down, publishing fails with
/// [`BrokerError::Closed`].
#[derive(Clone)]
pub struct BrokerHandle {
    pub(super) shared: Arc<Shared>,
}

impl BrokerHandle {
    /// Publishes an event without waiting: it is queued behind the events already queued for its
    /// subject and routed by its `to`. Fails, dropping the event, with
    /// [`BrokerError::MissingTo`] (no `to`), [`BrokerError::QueueFull`] (capacity events already
    /// wait for a worker; nothing is queued) or [`BrokerError::Closed`]. This is the `try_send`
    /// form; [`BrokerHandle::publish_wait`] is the waiting form. An event larger than the
    /// broker's limit ([`max_event_bytes`](super::BrokerBuilder::max_event_bytes)) is refused
    /// with [`BrokerError::EventTooLarge`].
    pub fn publish(&self, event: Event) -> Result<(), BrokerError> {
        event.check_size(self.shared.dispatcher.max_event_bytes())?;
        self.shared.transport.try_publish(vec![event]).map_err(|e| self.shared.refused(e))
    }

    /// Publishes an event, waiting while the queue is full (backpressure), for at most the
    /// [`publish_timeout`](super::BrokerBuilder::publish_timeout) (then
    /// [`BrokerError::QueueFull`]). Fails with [`BrokerError::MissingTo`] or
    /// [`BrokerError::Closed`] (also if the broker closes while waiting). Waiting publishers are
    /// not served in any particular order. Fails with [`BrokerError::EventTooLarge`] like
    /// [`BrokerHandle::publish`].
    pub async fn publish_wait(&self, event: Event) -> Result<(), BrokerError> {
        event.check_size(self.shared.dispatcher.max_event_bytes())?;
        self.shared.transport.publish(vec![event]).await.map_err(|e| self.shared.refused(e))
    }

    /// The broker's transport (to publish batches, or to subscribe other consumers).
    pub fn transport(&self) -> &InProcessTransport {
        &self.shared.transport
    }

    /// The counters and gauges now.
    pub fn stats(&self) -> BrokerStats {
        self.shared.stats()
    }

    /// Whether the broker stopped accepting events.
    pub fn is_closed(&self) -> bool {
        self.shared.transport.is_closed()
    }
}

impl fmt::Debug for BrokerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BrokerHandle").field("stats", &self.stats()).finish_non_exhaustive()
    }
}
