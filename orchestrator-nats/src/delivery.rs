//! [`NatsDelivery`]: one delivered message, settled with JetStream acknowledgements.

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::{self, AckKind};
use orchestrator::event::Event;
use orchestrator::transport::{Delivery, TransportError};

use crate::error::NatsError;
use crate::feed::{Arrived, give_back};
use crate::shared::Shared;

/// One delivery of a [`NatsTransport`](crate::NatsTransport): a message of a topic's durable
/// consumer, held until settled or until the consumer's ack wait passes. Dropped unsettled, it
/// is given back at once (a nak without delay).
///
/// * [`Delivery::ack`] publishes the products and waits until the stream has stored them, then
///   acknowledges the message (confirmed by the server): **at least once**. A crash between
///   the two delivers the event again, and the handler runs again; the store's fencing and
///   idempotency (and the server's duplicate window, for products that are the same events)
///   make that harmless.
/// * [`Delivery::nack`] is a `-NAK` with the delay; on the last delivery allowed
///   ([`NatsConfig::max_deliver`](crate::NatsConfig::max_deliver)) the event becomes a dead
///   letter instead.
/// * [`Delivery::extend`] is a progress acknowledgement (`+WPI`): the ack wait starts again
///   (the consumer's `ack_wait`, whatever `by` asks).
/// * [`Delivery::terminate`] publishes the event with its reason to the dead-letter stream,
///   then terminates the delivery (`+TERM`).
pub struct NatsDelivery {
    shared: Arc<Shared>,
    /// `None` once settled.
    message: Option<jetstream::Message>,
    event: Event,
    attempt: u32,
}

impl std::fmt::Debug for NatsDelivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsDelivery")
            .field("event", &self.event.id())
            .field("attempt", &self.attempt)
            .field("settled", &self.message.is_none())
            .finish_non_exhaustive()
    }
}

fn settle_error(source: async_nats::Error) -> TransportError {
    NatsError::Settle { source }.into()
}

impl NatsDelivery {
    pub(crate) fn new(shared: Arc<Shared>, arrived: Arrived) -> Self {
        Self { shared, message: Some(arrived.message), event: arrived.event, attempt: arrived.attempt }
    }

    /// The message, taken: the delivery counts as settled from now on.
    fn take(&mut self) -> Option<jetstream::Message> {
        self.message.take()
    }

    /// Moves the message to the dead letters with `reason`.
    async fn dead_letter(&mut self, reason: &str) -> Result<(), TransportError> {
        let Some(message) = self.message.as_ref() else { return Ok(()) };
        let result = self.shared.dead_letter(message, self.attempt, reason).await;
        if result.is_ok() {
            self.take();
        }
        result
    }
}

impl Delivery for NatsDelivery {
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
                // ...except products no retry can cure (larger than the server takes): the
                // event becomes a dead letter with the reason.
                self.dead_letter(&format!("its products were refused: {e}")).await?;
                return Err(e);
            }
        };
        // Products of work already accepted: never refused for capacity.
        self.shared.publish(outgoing).await?;
        let Some(message) = self.take() else { return Ok(()) };
        message.double_ack().await.map_err(settle_error)
    }

    async fn nack(mut self, delay: Duration) -> Result<(), TransportError> {
        let max = self.shared.config.max_deliver;
        if self.attempt >= max {
            let reason = format!("not handled on delivery {} of at most {max} (max_deliver)", self.attempt);
            return self.dead_letter(&reason).await;
        }
        let Some(message) = self.take() else { return Ok(()) };
        let delay = (!delay.is_zero()).then_some(delay);
        message.ack_with(AckKind::Nak(delay)).await.map_err(settle_error)
    }

    async fn extend(&self, _by: Duration) -> Result<(), TransportError> {
        let Some(message) = self.message.as_ref() else { return Ok(()) };
        message.ack_with(AckKind::Progress).await.map_err(settle_error)
    }

    async fn terminate(mut self, reason: String) -> Result<(), TransportError> {
        self.dead_letter(&reason).await
    }
}

impl Drop for NatsDelivery {
    fn drop(&mut self) {
        let Some(message) = self.message.take() else { return };
        if tokio::runtime::Handle::try_current().is_ok() {
            tokio::spawn(async move { give_back(&message).await });
        }
    }
}
