//! [`BrokerStats`]: what the broker has done so far, for tests, benchmarks and monitoring.

/// A snapshot of the broker's counters (totals since it was built) and gauges (now).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BrokerStats {
    /// Events accepted into the queue: published from outside and produced by handlers, not
    /// counting domained events (they are not published) or refused ones.
    pub published: u64,
    /// Deliveries handed to a handler (a retried event counts once per attempt).
    pub delivered: u64,
    /// Events collected by a [`resolve`](super::Broker::resolve) (they left the broker).
    pub collected: u64,
    /// Events returned by handlers, domained or not.
    pub produced: u64,
    /// Produced events that carried a domain (handed to the domained-events callback or kept).
    pub domained: u64,
    /// Deliveries that failed transiently and were scheduled to be tried again.
    pub retried: u64,
    /// Events reported as dead letters (to `on_error` or the dead-letter buffer).
    pub dead_lettered: u64,
    /// Dead letters dropped from the full dead-letter buffer (the oldest go first).
    pub dead_letters_dropped: u64,
    /// Publishes refused with an error (`QueueFull`, `MissingTo`, `Closed`).
    pub rejected: u64,
    /// Events waiting for a worker now.
    pub queued: usize,
    /// Events being handled now.
    pub in_flight: usize,
    /// Events waiting for their retry delay now.
    pub delayed: usize,
}
