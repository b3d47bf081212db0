//! Dead letters: the events the runtime gave up on, and where they go. Each is logged with
//! `tracing::warn!`, then handed to the user's callback, or kept in a bounded buffer (the
//! oldest dropped first, and counted).

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::event::Event;
use crate::util::lock;
use crate::violation::Violation;

/// How many dead letters are kept, by default, when no callback takes them.
pub const DEFAULT_DEAD_LETTER_CAPACITY: usize = 10_000;

/// An event the runtime could not deliver, or that its handler could not handle, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct DeadLetter {
    /// The event.
    pub event: Event,
    /// Why it is a dead letter.
    pub reason: DeadLetterReason,
}

/// Why an event became a [`DeadLetter`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DeadLetterReason {
    /// No handler listens on the event's `to` (and no `resolve` collects it).
    #[error("no handler registered for `to` = `{to}`")]
    NoHandler {
        /// The event's `to`.
        to: String,
    },
    /// The handler returned a permanent violation (contract, configuration, execution); the
    /// event produced nothing.
    #[error("the handler returned a violation: {0}")]
    Violation(Violation),
    /// The handler kept failing with a transient violation (a transaction violation: lock
    /// denied, store failing) until the retry limit.
    #[error("the handler still failed after {attempts} attempts: {violation}")]
    RetriesExhausted {
        /// How many times the event was tried.
        attempts: u32,
        /// The last violation.
        violation: Violation,
    },
    /// The handler panicked; the event produced nothing.
    #[error("the handler panicked: {message}")]
    Panicked {
        /// The panic message.
        message: String,
    },
    /// A handler produced this event without a `to` (and without a domain), so it cannot be
    /// routed. The handler's other products were published.
    #[error("the produced event has no `to` and no domain: it cannot be routed")]
    MissingTo,
    /// The handler produced an event larger than the node's limit
    /// ([`NodeBuilder::max_event_bytes`](crate::runtime::NodeBuilder::max_event_bytes)): none of
    /// its products were published, and the event that it handled is the dead letter.
    #[error("the handler produced an event too large to publish: {0}")]
    EventTooLarge(crate::event::EventTooLarge),
    /// The domained-events callback panicked while handling this domained event.
    #[error("the domained-events callback panicked: {message}")]
    CallbackPanicked {
        /// The panic message.
        message: String,
    },
}

/// The dead-letter callback.
pub type ErrorFn = Arc<dyn Fn(DeadLetter) + Send + Sync>;

/// Where dead letters go: logged, then to a callback, or kept in a bounded buffer.
pub struct DeadLetters {
    on_error: Option<ErrorFn>,
    kept: Mutex<VecDeque<DeadLetter>>,
    capacity: usize,
    reported: AtomicU64,
    dropped: AtomicU64,
}

impl DeadLetters {
    /// Keeps up to `capacity` dead letters (the oldest are dropped first); 0 keeps none.
    pub fn kept(capacity: usize) -> Self {
        Self {
            on_error: None,
            kept: Mutex::new(VecDeque::new()),
            capacity,
            reported: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        }
    }

    /// Hands every dead letter to `on_error` (nothing is kept). `on_error` runs on a worker: keep
    /// it short. A panic in it is contained.
    pub fn callback(on_error: ErrorFn) -> Self {
        Self { on_error: Some(on_error), ..Self::kept(0) }
    }

    /// Logs a dead letter, then hands it to the callback or keeps it.
    pub fn report(&self, event: Event, reason: DeadLetterReason) {
        tracing::warn!(
            event_id = event.id(),
            event_type = event.r#type(),
            to = event.to().unwrap_or_default(),
            subject = event.subject(),
            %reason,
            "dead letter"
        );
        self.reported.fetch_add(1, Ordering::Relaxed);
        let letter = DeadLetter { event, reason };
        match &self.on_error {
            Some(on_error) => {
                // The panic hook has reported the panic; the worker carries on.
                let _ = catch_unwind(AssertUnwindSafe(|| on_error(letter)));
            }
            None => {
                let mut kept = lock(&self.kept);
                kept.push_back(letter);
                let excess = kept.len().saturating_sub(self.capacity);
                kept.drain(..excess);
                drop(kept);
                if excess > 0 {
                    self.dropped.fetch_add(excess as u64, Ordering::Relaxed);
                }
            }
        }
    }

    /// The dead letters kept so far, oldest first (none when a callback takes them).
    pub fn take(&self) -> Vec<DeadLetter> {
        lock(&self.kept).drain(..).collect()
    }

    /// How many dead letters were reported so far.
    pub fn reported(&self) -> u64 {
        self.reported.load(Ordering::Relaxed)
    }

    /// How many kept dead letters were dropped so far to respect the capacity.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// How many dead letters are kept at most.
    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

impl Default for DeadLetters {
    fn default() -> Self {
        Self::kept(DEFAULT_DEAD_LETTER_CAPACITY)
    }
}

impl std::fmt::Debug for DeadLetters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeadLetters")
            .field("callback", &self.on_error.is_some())
            .field("capacity", &self.capacity)
            .field("reported", &self.reported())
            .field("dropped", &self.dropped())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn ev(n: usize) -> Event {
        Event::builder()
            .source("com.test.client")
            .r#type("com.test.x")
            .subject("s")
            .data_json(json!({ "n": n }))
            .build()
            .unwrap()
    }

    #[test]
    fn the_buffer_keeps_the_newest_and_counts_the_dropped() {
        let letters = DeadLetters::kept(10);
        for n in 0..50 {
            letters.report(ev(n), DeadLetterReason::MissingTo);
        }
        let kept = letters.take();
        assert_eq!(kept.len(), 10);
        assert_eq!(kept[0].event.data()["n"], 40, "the oldest were dropped");
        assert_eq!((letters.reported(), letters.dropped()), (50, 40));
        assert!(letters.take().is_empty(), "taken");
    }

    #[test]
    fn a_callback_takes_them_all_and_may_panic() {
        let seen = Arc::new(AtomicU64::new(0));
        let letters = DeadLetters::callback(Arc::new({
            let seen = Arc::clone(&seen);
            move |_| {
                if seen.fetch_add(1, Ordering::Relaxed) == 0 {
                    panic!("the first one");
                }
            }
        }));
        for n in 0..3 {
            letters.report(ev(n), DeadLetterReason::MissingTo);
        }
        assert_eq!(seen.load(Ordering::Relaxed), 3);
        assert!(letters.take().is_empty());
        assert_eq!((letters.reported(), letters.dropped()), (3, 0));
    }
}
