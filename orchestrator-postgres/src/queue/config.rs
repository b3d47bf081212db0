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
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self {
            depth: 10_000,
            publish_timeout: None,
            visibility: Duration::from_secs(30),
            poll: Duration::from_millis(250),
            batch: 64,
        }
    }
}
