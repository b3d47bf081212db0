//! [`Broker::resolve`](super::Broker::resolve): publish one event and wait for the answer that
//! comes back to its source.
//!
//! While a resolve runs, events addressed to its event's `source` are *collected* instead of
//! being dead-lettered: they leave the broker, and the last one is the answer. The collector is
//! removed when the resolve returns, fails or is cancelled, so the same source can resolve again.

use super::{BrokerError, BrokerHandle};
use crate::event::Event;

/// See [`Broker::resolve`](super::Broker::resolve).
pub(super) async fn resolve(handle: &BrokerHandle, event: Event) -> Result<Option<Event>, BrokerError> {
    let shared = &handle.shared;
    let topic = event.source();
    if shared.dispatcher.handles(topic) {
        return Err(BrokerError::SourceIsHandlerTopic { topic: topic.to_owned() });
    }
    let collector = shared
        .dispatcher
        .collectors()
        .register(topic)
        .ok_or_else(|| BrokerError::ResolveInProgress { topic: topic.to_owned() })?;
    handle.publish_wait(event).await?;
    shared.transport.wait_idle().await;
    Ok(collector.finish())
}
