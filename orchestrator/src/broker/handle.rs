//! [`BrokerHandle`]: the publishing side of a broker, cheap to clone and to hand to callbacks.

use std::fmt;
use std::sync::Arc;

use super::shared::{Origin, Shared};
use super::{BrokerError, BrokerStats};
use crate::event::Event;

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
    /// form; [`BrokerHandle::publish_wait`] is the waiting form.
    pub fn publish(&self, event: Event) -> Result<(), BrokerError> {
        self.shared.enqueue(event, Origin::External).map_err(|refused| refused.error)
    }

    /// Publishes an event, waiting while the queue is full (backpressure). Fails with
    /// [`BrokerError::MissingTo`] or [`BrokerError::Closed`] (also if the broker closes while
    /// waiting). Waiting publishers are not served in any particular order.
    pub async fn publish_wait(&self, event: Event) -> Result<(), BrokerError> {
        self.shared.enqueue_wait(event).await
    }

    /// The counters and gauges now.
    pub fn stats(&self) -> BrokerStats {
        self.shared.stats()
    }

    /// Whether the broker stopped accepting events.
    pub fn is_closed(&self) -> bool {
        self.shared.is_closed()
    }
}

impl fmt::Debug for BrokerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BrokerHandle").field("stats", &self.stats()).finish_non_exhaustive()
    }
}
