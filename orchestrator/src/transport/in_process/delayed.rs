//! [`Delayed`]: nacked events waiting for their retry delay, earliest first (plain data: no
//! locking, no waking). Their lanes stay busy meanwhile, so per-subject order is kept.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::time::Duration;

use tokio::time::Instant;

use super::lanes::{Job, Lanes};

/// A job and when it is due again.
struct Entry {
    due: Instant,
    job: Job,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.due, self.job.entry.seq).cmp(&(other.due, other.job.entry.seq))
    }
}

/// The nacked jobs by due time.
#[derive(Default)]
pub(super) struct Delayed {
    heap: BinaryHeap<Reverse<Entry>>,
}

impl Delayed {
    /// Keeps `job` until `delay` has passed. A delay too large for the clock waits "forever"
    /// (about 30 years).
    pub(super) fn push(&mut self, job: Job, delay: Duration) {
        let now = Instant::now();
        let due = now
            .checked_add(delay)
            .or_else(|| now.checked_add(Duration::from_secs(30 * 365 * 24 * 3600)))
            .unwrap_or(now);
        self.heap.push(Reverse(Entry { due, job }));
    }

    /// Puts the jobs due now back at the front of their lanes. True if any was.
    pub(super) fn promote(&mut self, lanes: &mut Lanes) -> bool {
        if self.heap.is_empty() {
            return false;
        }
        let now = Instant::now();
        let mut promoted = false;
        while self.heap.peek().is_some_and(|Reverse(entry)| entry.due <= now) {
            if let Some(Reverse(entry)) = self.heap.pop() {
                promoted |= lanes.requeue(entry.job);
            }
        }
        promoted
    }

    /// When the earliest job is due.
    pub(super) fn next_due(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse(entry)| entry.due)
    }

    /// How many jobs wait.
    pub(super) fn len(&self) -> usize {
        self.heap.len()
    }
}
