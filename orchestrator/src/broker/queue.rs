//! [`SubjectQueue`]: the per-(handler, subject) FIFO scheduler (plain data: no locking, no
//! waking).
//!
//! Every accepted event gets a sequence number and waits in the *lane* of its `to` topic and
//! subject. A lane is *busy* while one of its events is being handled, and a busy lane hands out
//! nothing, so the events one handler receives for one subject are handled one at a time, in
//! order: an orchestrator never sees two events of one workflow at once, while the services a
//! workflow calls in parallel do run in parallel. The lanes that are not busy and have an event
//! waiting are *ready*, ordered by the sequence number of their first event:
//! [`SubjectQueue::take`] hands out the oldest event whose lane is free. With one worker this is
//! plain FIFO; with more, it is FIFO among the free lanes.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use crate::event::Event;

/// One subject's waiting events, and whether one of its events is being handled.
struct Lane {
    pending: VecDeque<(u64, Event)>,
    busy: bool,
}

/// An event handed to a worker; its lane stays busy until [`SubjectQueue::finish`].
pub(super) struct Job {
    /// The lane: the event's `to` and subject.
    pub(super) subject: Arc<str>,
    pub(super) event: Event,
}

/// Per-subject FIFO lanes plus the ready list. Invariants: a lane exists iff it is busy or has
/// waiting events; a lane is in `ready` (keyed by its first event's sequence number) iff it is
/// not busy and has waiting events.
#[derive(Default)]
pub(super) struct SubjectQueue {
    lanes: HashMap<Arc<str>, Lane>,
    ready: BTreeMap<u64, Arc<str>>,
    queued: usize,
    in_flight: usize,
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

impl SubjectQueue {
    /// Appends an event to its subject's lane. True if that made a lane ready (a worker should
    /// be woken).
    pub(super) fn push(&mut self, event: Event) -> bool {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.queued += 1;
        let key = lane_key(&event);
        if let Some(lane) = self.lanes.get_mut(key.as_str()) {
            // Busy, or already ready behind an older event of the same lane.
            lane.pending.push_back((seq, event));
            return false;
        }
        let subject: Arc<str> = Arc::from(key);
        self.ready.insert(seq, Arc::clone(&subject));
        self.lanes.insert(subject, Lane { pending: VecDeque::from([(seq, event)]), busy: false });
        true
    }

    /// Hands out the oldest event whose subject is not busy, and marks its lane busy.
    pub(super) fn take(&mut self) -> Option<Job> {
        let (_, subject) = self.ready.pop_first()?;
        let lane = self.lanes.get_mut(&subject)?;
        let (_, event) = lane.pending.pop_front()?;
        lane.busy = true;
        self.queued -= 1;
        self.in_flight += 1;
        Some(Job { subject, event })
    }

    /// Marks a subject's event as handled. True if its lane is ready again.
    pub(super) fn finish(&mut self, subject: &Arc<str>) -> bool {
        self.in_flight -= 1;
        let Some(lane) = self.lanes.get_mut(subject) else { return false };
        lane.busy = false;
        match lane.pending.front() {
            Some(&(seq, _)) => {
                self.ready.insert(seq, Arc::clone(subject));
                true
            }
            None => {
                self.lanes.remove(subject);
                false
            }
        }
    }

    /// Events waiting for a worker.
    pub(super) fn queued(&self) -> usize {
        self.queued
    }

    /// Events being handled.
    pub(super) fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Whether some event can be handed out now.
    pub(super) fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    /// Nothing waiting and nothing being handled.
    pub(super) fn is_idle(&self) -> bool {
        self.queued == 0 && self.in_flight == 0
    }
}

#[cfg(test)]
mod tests {
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
        job.event.data()["n"].as_i64().unwrap()
    }

    #[test]
    fn one_worker_sees_global_fifo() {
        let mut q = SubjectQueue::default();
        for (i, s) in ["a", "a", "b", "a", "c"].into_iter().enumerate() {
            q.push(ev(s, i as i64));
        }
        let mut order = vec![];
        while let Some(job) = q.take() {
            order.push(n(&job));
            q.finish(&job.subject);
        }
        assert_eq!(order, [0, 1, 2, 3, 4]);
        assert!(q.is_idle());
        assert!(q.lanes.is_empty() && q.ready.is_empty());
    }

    #[test]
    fn a_busy_subject_hands_out_nothing_but_others_proceed() {
        let mut q = SubjectQueue::default();
        assert!(q.push(ev("a", 0)));
        assert!(!q.push(ev("a", 1)));
        assert!(q.push(ev("b", 2)));
        let a0 = q.take().unwrap();
        assert_eq!(n(&a0), 0);
        let b2 = q.take().unwrap();
        assert_eq!(n(&b2), 2, "a is busy, so b goes next");
        assert!(q.take().is_none(), "a1 waits for a0");
        assert_eq!((q.queued(), q.in_flight()), (1, 2));
        assert!(q.finish(&a0.subject), "a is ready again");
        assert_eq!(n(&q.take().unwrap()), 1);
        assert!(!q.finish(&b2.subject));
    }
}
