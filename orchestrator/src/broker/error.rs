//! [`BrokerError`]: why the broker refused a request.

/// Why the broker refused to build, to publish or to resolve. Every message names what was
/// wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BrokerError {
    /// The event has no `to`, and the broker routes by `to`.
    #[error("event `{id}` has no `to`: the broker routes every event by its `to`")]
    MissingTo {
        /// The id of the event.
        id: String,
    },
    /// The event is larger than the broker's limit
    /// ([`BrokerBuilder::max_event_bytes`](super::BrokerBuilder::max_event_bytes)); nothing is
    /// queued.
    #[error(transparent)]
    EventTooLarge(#[from] crate::event::EventTooLarge),
    /// The queue already holds `capacity` events waiting for a worker.
    #[error("the event queue is full (capacity {capacity})")]
    QueueFull {
        /// The configured capacity.
        capacity: usize,
    },
    /// The broker was shut down (or dropped) and accepts no more events.
    #[error("the broker is shut down and accepts no more events")]
    Closed,
    /// Two handlers were registered on one topic.
    #[error("two handlers listen on topic `{topic}`: a broker needs exactly one handler per topic")]
    DuplicateHandler {
        /// The topic.
        topic: String,
    },
    /// `resolve` was given an event whose `source` is a handler topic: the replies would be
    /// routed to that handler, not collected.
    #[error(
        "cannot resolve an event whose source `{topic}` is a handler topic (its replies would go to that handler)"
    )]
    SourceIsHandlerTopic {
        /// The event's source.
        topic: String,
    },
    /// Another `resolve` from the same source is still running.
    #[error(
        "another resolve from source `{topic}` is in progress; use a distinct source per concurrent resolve"
    )]
    ResolveInProgress {
        /// The event's source.
        topic: String,
    },
    /// `build` was called outside a tokio runtime (the broker spawns its workers there).
    #[error("the broker must be built inside a tokio runtime: it spawns its workers there")]
    NoRuntime,
    /// A setting is out of range.
    #[error("invalid broker setting: {message}")]
    InvalidConfig {
        /// What was wrong.
        message: &'static str,
    },
}
