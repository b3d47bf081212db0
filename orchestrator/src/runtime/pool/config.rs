//! [`PoolConfig`] and [`PollingConfig`]: every setting of a pool, each one honoured.

use std::sync::Arc;
use std::time::Duration;

use super::backoff::Backoff;
use crate::runtime::Heartbeat;
use crate::transport::Topics;

/// How a worker polls: the backoff after a failed poll, and how many failures in a row stop
/// it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PollingConfig {
    /// The wait after a failed poll (default [`Backoff::default`]).
    pub backoff: Backoff,
    /// How many retryable poll failures in a row stop the worker, with
    /// [`ExitReason::PollFailures`](super::ExitReason::PollFailures) (default 5; 0 counts as
    /// 1). A fatal failure stops it at once. A successful poll resets the count.
    pub max_consecutive_failures: u32,
}

impl Default for PollingConfig {
    fn default() -> Self {
        Self { backoff: Backoff::default(), max_consecutive_failures: 5 }
    }
}

/// The settings of one pool: what it consumes, how many workers and slots, and how its
/// workers poll, keep tasks alive and stop. Build it with [`PoolConfig::new`] and the
/// setters; every field is public too.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolConfig {
    /// The pool's name: worker ids are `"<name>:<n>"`.
    pub name: Arc<str>,
    /// What its workers subscribe to: the topic of a service contract or an orchestrator
    /// ([`PoolConfig::new`]), or several.
    pub topics: Topics,
    /// How many workers run (default 1). [`Pool::resize`](super::Pool::resize) changes it
    /// while the pool runs; 0 leaves the pool idle.
    pub workers: usize,
    /// How many tasks one worker runs at once (default 1; 0 counts as 1). A worker claims a
    /// delivery only when one of its slots is free: it never holds a delivery it cannot run.
    pub slots: usize,
    /// How long after a worker failed (poll failures, a panic of its loop) it is replaced
    /// (default 2 s).
    pub restart_interval: Duration,
    /// How workers poll (default [`PollingConfig::default`]).
    pub polling: PollingConfig,
    /// How deliveries are kept claimed while their handlers run: extended by
    /// [`Heartbeat::extend_by`] every [`Heartbeat::every`] (default `None`: never
    /// automatically; [`Heartbeat::from_lease`] derives one from the transport's visibility
    /// timeout). A failed extension cancels the task's token: the lease may be lost.
    pub heartbeat: Option<Heartbeat>,
    /// How long one handler may run (default `None`: no deadline). Past it the handler is
    /// dropped and the task reported as failed.
    pub task_timeout: Option<Duration>,
    /// On stop, how long a poll already waiting may still return a delivery, which is handed
    /// back (default 100 ms); after that the poll is abandoned (polls are cancel-safe).
    pub poll_grace: Duration,
    /// On stop, how long running tasks may take to finish (default 30 s); those still running
    /// then are cancelled and their deliveries handed back, to be delivered again.
    pub grace: Duration,
}

impl PoolConfig {
    /// A pool named after `topic` that consumes it, with the defaults.
    pub fn new(topic: impl Into<String>) -> Self {
        let topic = topic.into();
        Self::with_topics(topic.as_str(), Topics::Only(vec![topic.clone()]))
    }

    /// A pool named `name` that consumes `topics`, with the defaults.
    pub fn with_topics(name: impl Into<Arc<str>>, topics: Topics) -> Self {
        Self {
            name: name.into(),
            topics,
            workers: 1,
            slots: 1,
            restart_interval: Duration::from_secs(2),
            polling: PollingConfig::default(),
            heartbeat: None,
            task_timeout: None,
            poll_grace: Duration::from_millis(100),
            grace: Duration::from_secs(30),
        }
    }

    /// Sets [`PoolConfig::workers`].
    #[must_use]
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers;
        self
    }

    /// Sets [`PoolConfig::slots`].
    #[must_use]
    pub fn slots(mut self, slots: usize) -> Self {
        self.slots = slots;
        self
    }

    /// Sets [`PoolConfig::restart_interval`].
    #[must_use]
    pub fn restart_interval(mut self, interval: Duration) -> Self {
        self.restart_interval = interval;
        self
    }

    /// Sets [`PoolConfig::polling`].
    #[must_use]
    pub fn polling(mut self, polling: PollingConfig) -> Self {
        self.polling = polling;
        self
    }

    /// Sets [`PoolConfig::heartbeat`].
    #[must_use]
    pub fn heartbeat(mut self, heartbeat: Option<Heartbeat>) -> Self {
        self.heartbeat = heartbeat;
        self
    }

    /// Sets [`PoolConfig::task_timeout`].
    #[must_use]
    pub fn task_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.task_timeout = timeout;
        self
    }

    /// Sets [`PoolConfig::poll_grace`].
    #[must_use]
    pub fn poll_grace(mut self, grace: Duration) -> Self {
        self.poll_grace = grace;
        self
    }

    /// Sets [`PoolConfig::grace`].
    #[must_use]
    pub fn grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }
}
