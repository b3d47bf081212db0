//! [`Lanes`]: the per-(topic, subject) FIFO scheduler of the in-process transport (plain data:
//! no locking, no waking, no clock).
//!
//! Every accepted event gets a sequence number and waits in the *lane* of its `to` topic and
//! subject. A lane is *busy* while one of its events is delivered and not yet settled (and while
//! a nacked event waits for its retry delay), and a busy lane hands out nothing: the events of
//! one `(topic, subject)` are delivered one at a time, in order. The lanes that are not busy and
//! have an event waiting are *ready*, ordered by the sequence number of their first event:
//! [`Lanes::take`] hands out the oldest event whose lane is free (and whose topic the caller
//! listens on). With one consumer this is plain FIFO; with more, FIFO among the free lanes.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use crate::event::Event;
use crate::transport::Topics;

/// An event in a lane, with its sequence number and how many times it was delivered.
pub(super) struct Entry {
    pub(super) seq: u64,
    pub(super) attempt: u32,
    pub(super) event: Event,
}

/// An event handed out; its lane stays busy until [`Lanes::release`] or [`Lanes::requeue`].
pub(super) struct Job {
    /// The lane: the event's `to` and subject.
    pub(super) lane: Arc<str>,
    pub(super) entry: Entry,
}

/// One lane's waiting events, and whether one of its events is out.
struct Lane {
    pending: VecDeque<Entry>,
    busy: bool,
}

/// Per-lane FIFOs plus the ready list. Invariants: a lane exists iff it is busy or has waiting
/// events; a lane is in `ready` (keyed by its first event's sequence number) iff it is not busy
/// and has waiting events.
#[derive(Default)]
pub(super) struct Lanes {
    lanes: HashMap<Arc<str>, Lane>,
    ready: BTreeMap<u64, Arc<str>>,
    queued: usize,
    out: usize,
    next_seq: u64,
}

/// The lane of an event: its `to` topic and its subject. `to` is a properly encoded URI, so it
/// holds no raw newline and the pair is unambiguous.
fn lane_key(event: &Event) -> String {
    let to = event.to().unwrap_or_default();
    let mut key = String::with_capacity(to.len() + 1 + event.subject().len());
    key.push_str(to);
    key.push('\n');
    key.push_str(event.subject());
    key
}

/// The topic of a lane key.
pub(super) fn topic_of(lane: &str) -> &str {
    lane.split_once('\n').map_or(lane, |(topic, _)| topic)
}

impl Lanes {
    /// Appends an event (delivered for the first time) to its lane. The lane if that made it
    /// ready.
    pub(super) fn push(&mut self, event: Event) -> Option<Arc<str>> {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.queued += 1;
        let entry = Entry { seq, attempt: 0, event };
        let key = lane_key(&entry.event);
        if let Some(lane) = self.lanes.get_mut(key.as_str()) {
            // Busy, or already ready behind an older event of the same lane.
            lane.pending.push_back(entry);
            return None;
        }
        let lane: Arc<str> = Arc::from(key);
        self.ready.insert(seq, Arc::clone(&lane));
        self.lanes.insert(Arc::clone(&lane), Lane { pending: VecDeque::from([entry]), busy: false });
        Some(lane)
    }

    /// Hands out the oldest event of a free lane whose topic is in `topics`, marks its lane busy
    /// and counts one more delivery of it. `Topics::Only` scans the ready lanes in order.
    pub(super) fn take(&mut self, topics: &Topics) -> Option<Job> {
        let lane = match topics {
            Topics::All => self.ready.pop_first()?.1,
            Topics::Only(_) => {
                let seq = *self.ready.iter().find(|(_, lane)| topics.contains(topic_of(lane)))?.0;
                self.ready.remove(&seq)?
            }
        };
        let state = self.lanes.get_mut(&lane)?;
        let mut entry = state.pending.pop_front()?;
        state.busy = true;
        entry.attempt = entry.attempt.saturating_add(1);
        self.queued -= 1;
        self.out += 1;
        Some(Job { lane, entry })
    }

    /// Puts an event handed out back at the front of its (still busy) lane and frees the lane.
    /// True if the lane is ready (it is).
    pub(super) fn requeue(&mut self, job: Job) -> bool {
        self.out -= 1;
        self.queued += 1;
        let Job { lane, entry } = job;
        let seq = entry.seq;
        match self.lanes.get_mut(&lane) {
            Some(state) => {
                state.busy = false;
                state.pending.push_front(entry);
            }
            None => {
                self.lanes.insert(Arc::clone(&lane), Lane { pending: VecDeque::from([entry]), busy: false });
            }
        }
        // The entry's sequence number is older than every other event of its lane, and left
        // `ready` when it was taken, so it is free.
        self.ready.insert(seq, lane);
        true
    }

    /// Marks an event handed out as settled for good. True if its lane is ready again.
    pub(super) fn release(&mut self, lane: &Arc<str>) -> bool {
        self.out -= 1;
        let Some(state) = self.lanes.get_mut(lane) else { return false };
        state.busy = false;
        match state.pending.front() {
            Some(entry) => {
                self.ready.insert(entry.seq, Arc::clone(lane));
                true
            }
            None => {
                self.lanes.remove(lane);
                false
            }
        }
    }

    /// Events waiting in their lanes.
    pub(super) fn queued(&self) -> usize {
        self.queued
    }

    /// Events handed out and not settled, or waiting for their retry delay.
    pub(super) fn out(&self) -> usize {
        self.out
    }

    /// Whether some event (of any topic) can be handed out now.
    pub(super) fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    /// Nothing waiting and nothing out.
    pub(super) fn is_idle(&self) -> bool {
        self.queued == 0 && self.out == 0
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn ev(subject: &str, n: i64) -> Event {
        Event::builder()
            .source("com.test.client")
            .r#type("com.test.event")
            .subject(subject)
            .data_json(json!({ "n": n }))
            .build()
            .unwrap()
    }

    fn n(job: &Job) -> i64 {
        job.entry.event.data()["n"].as_i64().unwrap()
    }

    #[test]
    fn one_consumer_sees_global_fifo() {
        let mut q = Lanes::default();
        for (i, s) in ["a", "a", "b", "a", "c"].into_iter().enumerate() {
            q.push(ev(s, i as i64));
        }
        let mut order = vec![];
        while let Some(job) = q.take(&Topics::All) {
            order.push(n(&job));
            q.release(&job.lane);
        }
        assert_eq!(order, [0, 1, 2, 3, 4]);
        assert!(q.is_idle());
        assert!(q.lanes.is_empty() && q.ready.is_empty());
    }

    #[test]
    fn a_busy_lane_hands_out_nothing_but_others_proceed() {
        let mut q = Lanes::default();
        assert!(q.push(ev("a", 0)).is_some());
        assert!(q.push(ev("a", 1)).is_none());
        assert!(q.push(ev("b", 2)).is_some());
        let a0 = q.take(&Topics::All).unwrap();
        assert_eq!(n(&a0), 0);
        let b2 = q.take(&Topics::All).unwrap();
        assert_eq!(n(&b2), 2, "a is busy, so b goes next");
        assert!(q.take(&Topics::All).is_none(), "a1 waits for a0");
        assert_eq!((q.queued(), q.out()), (1, 2));
        assert!(q.release(&a0.lane), "a is ready again");
        assert_eq!(n(&q.take(&Topics::All).unwrap()), 1);
        assert!(!q.release(&b2.lane));
    }

    #[test]
    fn a_requeued_event_goes_first_with_one_more_attempt() {
        let mut q = Lanes::default();
        q.push(ev("a", 0));
        q.push(ev("a", 1));
        let first = q.take(&Topics::All).unwrap();
        assert_eq!(first.entry.attempt, 1);
        assert!(q.requeue(first));
        let again = q.take(&Topics::All).unwrap();
        assert_eq!((n(&again), again.entry.attempt), (0, 2));
        q.release(&again.lane);
        let next = q.take(&Topics::All).unwrap();
        assert_eq!((n(&next), next.entry.attempt), (1, 1));
    }

    #[test]
    fn only_hands_out_its_topics() {
        let mut q = Lanes::default();
        q.push(ev("a", 0)); // `to` defaults to the type: com.test.event
        assert!(q.take(&Topics::Only(vec!["com.other".to_owned()])).is_none());
        assert!(q.take(&Topics::Only(vec!["com.test.event".to_owned()])).is_some());
    }
}
