//! A [`BrokerHandle`] is a [`Transport`]: publishing through it is publishing into the broker's
//! in-process transport, so the transport-generic helpers ([`outbox::redeliver`],
//! [`Timers::spawn`]) take a broker handle as they take any transport.
//!
//! [`outbox::redeliver`]: crate::outbox::redeliver
//! [`Timers::spawn`]: crate::orchestration::timers::Timers::spawn

use super::BrokerHandle;
use crate::event::Event;
use crate::transport::{InProcessTransport, Topics, Transport, TransportError};

impl Transport for BrokerHandle {
    type Subscription = <InProcessTransport as Transport>::Subscription;

    async fn publish(&self, events: Vec<Event>) -> Result<(), TransportError> {
        self.transport().publish(events).await
    }

    async fn subscribe(&self, topics: Topics) -> Result<Self::Subscription, TransportError> {
        self.transport().subscribe(topics).await
    }

    fn close(&self) {
        self.transport().close();
    }

    /// True, as for the [`InProcessTransport`] it publishes into.
    fn exclusive_lanes(&self) -> bool {
        self.transport().exclusive_lanes()
    }
}
