//! A transport shared behind an [`Arc`] is a transport.

use std::sync::Arc;

use super::{Topics, Transport, TransportError};
use crate::event::Event;

impl<T: Transport> Transport for Arc<T> {
    type Subscription = T::Subscription;

    async fn publish(&self, events: Vec<Event>) -> Result<(), TransportError> {
        (**self).publish(events).await
    }

    async fn subscribe(&self, topics: Topics) -> Result<Self::Subscription, TransportError> {
        (**self).subscribe(topics).await
    }

    fn close(&self) {
        (**self).close();
    }

    fn queue_id(&self) -> Option<&str> {
        (**self).queue_id()
    }

    fn exclusive_lanes(&self) -> bool {
        (**self).exclusive_lanes()
    }

    fn stores_published(&self) -> bool {
        (**self).stores_published()
    }

    fn keeps_dead_letters(&self) -> bool {
        (**self).keeps_dead_letters()
    }
}
