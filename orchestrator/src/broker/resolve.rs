//! [`Broker::resolve`](super::Broker::resolve): publish one event and wait for the answer that
//! comes back to its source.
//!
//! While a resolve runs, events addressed to its event's `source` are *collected* instead of
//! being dead-lettered: they leave the broker, and the last one is the answer. The collector is
//! removed when the resolve returns, fails or is cancelled, so the same source can resolve again.

use std::collections::HashMap;
use std::sync::Mutex;

use super::shared::{Origin, Shared};
use super::{BrokerError, lock};
use crate::event::Event;

/// The sources currently being resolved, each with the last event collected for it.
#[derive(Default)]
pub(super) struct Collectors {
    slots: Mutex<HashMap<String, Option<Event>>>,
}

impl Collectors {
    /// Starts collecting events addressed to `topic`.
    fn register(&self, topic: &str) -> Result<Collector<'_>, BrokerError> {
        let mut slots = lock(&self.slots);
        if slots.contains_key(topic) {
            return Err(BrokerError::ResolveInProgress { topic: topic.to_owned() });
        }
        slots.insert(topic.to_owned(), None);
        Ok(Collector { collectors: self, topic: topic.to_owned() })
    }

    /// Collects the event if a resolve waits on its `to` (`None`); gives it back otherwise.
    pub(super) fn deliver(&self, event: Event) -> Option<Event> {
        let mut slots = lock(&self.slots);
        match event.to().and_then(|to| slots.get_mut(to)) {
            Some(slot) => {
                *slot = Some(event);
                None
            }
            None => Some(event),
        }
    }
}

/// A registered collector; unregisters itself when dropped.
struct Collector<'a> {
    collectors: &'a Collectors,
    topic: String,
}

impl Collector<'_> {
    /// Unregisters and returns the last event collected.
    fn finish(self) -> Option<Event> {
        lock(&self.collectors.slots).remove(&self.topic).flatten()
    }
}

impl Drop for Collector<'_> {
    fn drop(&mut self) {
        lock(&self.collectors.slots).remove(&self.topic);
    }
}

/// See [`Broker::resolve`](super::Broker::resolve).
pub(super) async fn resolve(shared: &Shared, event: Event) -> Result<Option<Event>, BrokerError> {
    if shared.is_handler_topic(event.source()) {
        return Err(BrokerError::SourceIsHandlerTopic { topic: event.source().to_owned() });
    }
    let collector = shared.collectors.register(event.source())?;
    shared.enqueue(event, Origin::External).map_err(|refused| refused.error)?;
    shared.wait_idle().await;
    Ok(collector.finish())
}
