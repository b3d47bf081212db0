//! [`Collectors`]: topics a caller waits on (the in-process broker's `resolve`). An event
//! addressed to such a topic, which no handler takes, is collected instead of dead-lettered.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::event::Event;
use crate::util::lock;

/// The topics being collected, each with the last event collected for it.
#[derive(Default)]
pub(crate) struct Collectors {
    slots: Mutex<HashMap<String, Option<Event>>>,
}

impl Collectors {
    /// Starts collecting events addressed to `topic`; `None` if that topic is collected already.
    pub(crate) fn register(&self, topic: &str) -> Option<Collector<'_>> {
        let mut slots = lock(&self.slots);
        if slots.contains_key(topic) {
            return None;
        }
        slots.insert(topic.to_owned(), None);
        Some(Collector { collectors: self, topic: topic.to_owned() })
    }

    /// Collects (a copy of) the event if someone waits on its `to`; false otherwise.
    pub(crate) fn collect(&self, event: &Event) -> bool {
        let mut slots = lock(&self.slots);
        match event.to().and_then(|to| slots.get_mut(to)) {
            Some(slot) => {
                *slot = Some(event.clone());
                true
            }
            None => false,
        }
    }
}

/// A registered collector; unregisters itself when dropped.
pub(crate) struct Collector<'a> {
    collectors: &'a Collectors,
    topic: String,
}

impl Collector<'_> {
    /// Unregisters and returns the last event collected.
    pub(crate) fn finish(self) -> Option<Event> {
        lock(&self.collectors.slots).remove(&self.topic).flatten()
    }
}

impl Drop for Collector<'_> {
    fn drop(&mut self) {
        lock(&self.collectors.slots).remove(&self.topic);
    }
}
