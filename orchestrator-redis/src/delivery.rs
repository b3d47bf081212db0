//! [`RedisDelivery`]: one delivered stream entry, settled with Lua scripts.

use std::sync::Arc;
use std::time::Duration;

use orchestrator::event::Event;
use orchestrator::transport::{Delivery, TransportError};

use crate::feed::Arrived;
use crate::shared::Shared;

/// One delivery of a [`RedisTransport`](crate::RedisTransport): an entry of a topic's stream,
/// pending for the subscription's consumer until settled, or until the visibility timeout
/// passes and another consumer takes it over. Dropped unsettled, it is put back at once (a nack
/// without delay).
///
/// * [`Delivery::ack`] adds the products to their streams, then acknowledges and deletes the
///   entry, in one script: atomically.
/// * [`Delivery::nack`] puts the event back (a new entry carrying the deliveries counted so
///   far): at once at the end of its stream, or after the delay in the topic's delayed set,
///   from where a feed moves it back; on the last delivery allowed
///   ([`RedisConfig::max_deliveries`](crate::RedisConfig::max_deliveries)) it becomes a dead
///   letter instead.
/// * [`Delivery::extend`] restarts the visibility timeout (`XCLAIM` of the entry to its own
///   consumer; the timeout is the configured one, whatever `by` asks).
/// * [`Delivery::terminate`] adds the entry with its reason to the dead-letter stream, then
///   acknowledges and deletes it, in one script.
pub struct RedisDelivery {
    shared: Arc<Shared>,
    consumer: Arc<str>,
    topic: String,
    /// `None` once settled.
    id: Option<String>,
    event: Event,
    attempt: u32,
}

impl std::fmt::Debug for RedisDelivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisDelivery")
            .field("topic", &self.topic)
            .field("entry", &self.id)
            .field("event", &self.event.id())
            .field("attempt", &self.attempt)
            .finish_non_exhaustive()
    }
}

impl RedisDelivery {
    pub(crate) fn new(shared: Arc<Shared>, consumer: Arc<str>, arrived: Arrived) -> Self {
        Self {
            shared,
            consumer,
            topic: arrived.topic,
            id: Some(arrived.id),
            event: arrived.event,
            attempt: arrived.attempt,
        }
    }

    /// The stream entry's id (`<ms>-<seq>`).
    pub fn entry_id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// Moves the entry to the dead letters with `reason`.
    async fn dead_letter(&mut self, reason: &str) -> Result<(), TransportError> {
        let Some(id) = self.id.as_deref() else { return Ok(()) };
        self.shared.dead_letter(&self.topic, id, &self.consumer, self.attempt, reason).await?;
        self.id = None;
        Ok(())
    }
}

impl Delivery for RedisDelivery {
    fn event(&self) -> &Event {
        &self.event
    }

    fn attempt(&self) -> u32 {
        self.attempt
    }

    async fn ack(mut self, produced: Vec<Event>) -> Result<(), TransportError> {
        // Refused products leave the delivery unsettled: dropped, it is delivered again...
        let outgoing = match self.shared.encode(&produced) {
            Ok(outgoing) => outgoing,
            Err(e @ TransportError::MissingTo { .. }) => return Err(e),
            Err(e) => {
                // ...except products no retry can cure (larger than max_body): the event
                // becomes a dead letter with the reason.
                self.dead_letter(&format!("its products were refused: {e}")).await?;
                return Err(e);
            }
        };
        let Some(id) = self.id.as_deref() else { return Ok(()) };
        // Products of work already accepted: never refused for capacity (capacity 0).
        self.shared.publish_through_outage(&outgoing, 0, Some((&self.topic, id))).await?;
        self.id = None;
        Ok(())
    }

    async fn nack(mut self, delay: Duration) -> Result<(), TransportError> {
        let max = self.shared.config.max_deliveries;
        if self.attempt >= max {
            let reason =
                format!("not handled on delivery {} of at most {max} (max_deliveries)", self.attempt);
            return self.dead_letter(&reason).await;
        }
        let Some(id) = self.id.take() else { return Ok(()) };
        let put_back = self.shared.put_back(&self.topic, &id, &self.consumer, self.attempt, delay).await;
        if put_back.is_err() {
            // Not settled: dropped, it is tried once more.
            self.id = Some(id);
        }
        put_back.map(|_| ())
    }

    async fn extend(&self, _by: Duration) -> Result<(), TransportError> {
        let Some(id) = self.id.as_deref() else { return Ok(()) };
        if !self.shared.keep(&self.topic, id, &self.consumer).await? {
            tracing::debug!(topic = self.topic, id, "extend: the delivery was taken over or settled already");
        }
        Ok(())
    }

    async fn terminate(mut self, reason: String) -> Result<(), TransportError> {
        self.dead_letter(&reason).await
    }
}

impl Drop for RedisDelivery {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let (shared, consumer, topic, attempt) = (
            Arc::clone(&self.shared),
            Arc::clone(&self.consumer),
            std::mem::take(&mut self.topic),
            self.attempt,
        );
        tokio::spawn(async move {
            if let Err(e) = shared.put_back(&topic, &id, &consumer, attempt, Duration::ZERO).await {
                tracing::debug!(error = %e, "putting back a dropped delivery failed; it comes back after the visibility timeout");
            }
        });
    }
}
