//! [`BrokerStats`]: what the broker has done so far, for tests, benchmarks and monitoring.

use std::sync::atomic::{AtomicU64, Ordering};

/// A snapshot of the broker's counters (totals since it was built) and gauges (now).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BrokerStats {
    /// Events accepted into the queue: published from outside and produced by handlers, not
    /// counting domained events (they are not published) or refused ones.
    pub published: u64,
    /// Events handed to a handler.
    pub delivered: u64,
    /// Events collected by a [`resolve`](super::Broker::resolve) (they left the broker).
    pub collected: u64,
    /// Events returned by handlers, domained or not.
    pub produced: u64,
    /// Produced events that carried a domain (handed to the domained-events callback or kept).
    pub domained: u64,
    /// Events reported as dead letters (to `on_error` or the dead-letter list).
    pub dead_lettered: u64,
    /// Publishes refused with an error (`QueueFull`, `MissingTo`, `Closed`).
    pub rejected: u64,
    /// Events waiting for a worker now.
    pub queued: usize,
    /// Events being handled now.
    pub in_flight: usize,
}

/// The counters behind [`BrokerStats`]. Relaxed atomics: readers that need exact values wait for
/// the broker to be idle first, which orders them after every increment.
#[derive(Debug, Default)]
pub(super) struct Counters {
    pub(super) published: AtomicU64,
    pub(super) delivered: AtomicU64,
    pub(super) collected: AtomicU64,
    pub(super) produced: AtomicU64,
    pub(super) domained: AtomicU64,
    pub(super) dead_lettered: AtomicU64,
    pub(super) rejected: AtomicU64,
}

/// Adds one to a counter.
pub(super) fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

impl Counters {
    /// The counters, with the gauges given.
    pub(super) fn snapshot(&self, queued: usize, in_flight: usize) -> BrokerStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        BrokerStats {
            published: get(&self.published),
            delivered: get(&self.delivered),
            collected: get(&self.collected),
            produced: get(&self.produced),
            domained: get(&self.domained),
            dead_lettered: get(&self.dead_lettered),
            rejected: get(&self.rejected),
            queued,
            in_flight,
        }
    }
}
