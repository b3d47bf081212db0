//! [`QueueConfig`]: how a [`PgQueue`](super::PgQueue) claims, waits and pushes back.

use std::time::Duration;

/// How a [`PgQueue`](super::PgQueue) behaves. [`QueueConfig::default`] suits most uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueConfig {
    /// How many events may wait unclaimed before [`publish`](orchestrator::transport::Transport::publish)
    /// waits (default 10,000). Products of an ack are admitted over it.
    pub depth: usize,
    /// How long a publisher waits for room before [`TransportError::Full`](orchestrator::transport::TransportError::Full);
    /// `None` (the default) waits as long as needed.
    pub publish_timeout: Option<Duration>,
    /// How long a claim lasts unless extended (default 30 s, judged by the database clock):
    /// a delivery not settled by then is delivered again, to anyone.
    pub visibility: Duration,
    /// How often an idle consumer looks for work when nothing woke it (default 250 ms).
    pub poll: Duration,
    /// The most rows one claim takes (default 64): a process's poller claims as many rows as
    /// its consumers wait for, up to this, in one statement.
    pub batch: usize,
    /// How many deliveries of one event are allowed before it becomes a dead letter instead of
    /// being delivered again (default 100; `None`: no limit). Each claim is a delivery, whatever
    /// ended the one before: a nack, a claim that lapsed, a consumer that crashed. It is the
    /// last guard against an event that crashes its consumer every time (the runtime's retry
    /// policy, 10 attempts by default, dead-letters ordinary failures long before).
    pub max_deliveries: Option<u32>,
    /// The largest event [`publish`](orchestrator::transport::Transport::publish) takes, serialized
    /// (default 1 MiB, the parsers' limit): a larger one refuses its batch with
    /// [`TransportError::EventTooLarge`](orchestrator::transport::TransportError::EventTooLarge)
    /// instead of being stored for consumers that could not parse it.
    pub max_event_bytes: usize,
    /// Vacuum the queue's table after this many rows claimed by this process (default 2,000;
    /// `None`: leave it to autovacuum). A busy queue leaves a dead row version behind for every
    /// event; autovacuum comes by once a minute at most, and in between each claim walks past
    /// the dead rows and the table grows (BENCHMARKS.md, session 11).
    pub vacuum_every: Option<u64>,
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self {
            depth: 10_000,
            publish_timeout: None,
            visibility: Duration::from_secs(30),
            poll: Duration::from_millis(250),
            batch: 64,
            max_deliveries: Some(100),
            max_event_bytes: orchestrator::event::DEFAULT_MAX_EVENT_BYTES,
            vacuum_every: Some(2_000),
        }
    }
}
