//! [`Inner`]: the shared state of an [`InProcessTransport`](super::InProcessTransport) and the
//! waiting around it.
//!
//! One mutex guards the [`Lanes`], the retry heap, the closed flag and the log; it is held only
//! for a few map operations, never across an `await` or a user callback. [`Notify`]s replace
//! polling: the consumers' [`Waiters`] (a lane became ready, a retry became due earlier, or the
//! consumers should stop), `idle` (nothing queued, nothing out) and `space` (a queue slot was
//! freed, for waiting publishers). Every waiter registers its `Notified` before it checks the
//! state, so no wake-up is lost. Retries wait in a heap ordered by due time; a consumer waiting in `next`
//! sleeps until the earliest one is due and moves the due ones back to the front of their lanes.

use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;

use super::delayed::Delayed;
use super::lanes::{Job, Lanes, topic_of};
use super::waiters::Waiters;
use super::{InProcessConfig, TransportStats};
use crate::event::Event;
use crate::transport::{Topics, TransportError, check_batch};
use crate::util::lock;

struct State {
    lanes: Lanes,
    /// Nacked events by due time. They count in `lanes.out()`.
    delayed: Delayed,
    closed: bool,
    /// Every accepted event, in acceptance order, when logging is on.
    log: Option<Vec<Event>>,
    /// Tasks in `publish` waiting for a free slot.
    space_waiters: usize,
}

#[derive(Default)]
struct Counters {
    published: AtomicU64,
    acked: AtomicU64,
    nacked: AtomicU64,
    terminated: AtomicU64,
}

fn bump(counter: &AtomicU64, by: usize) {
    counter.fetch_add(u64::try_from(by).unwrap_or(u64::MAX), Ordering::Relaxed);
}

pub(super) struct Inner {
    state: Mutex<State>,
    work: Waiters,
    idle: Notify,
    space: Notify,
    pub(super) capacity: usize,
    publish_timeout: Option<Duration>,
    max_event_bytes: usize,
    counters: Counters,
}

impl Inner {
    pub(super) fn new(config: &InProcessConfig) -> Self {
        Self {
            state: Mutex::new(State {
                lanes: Lanes::default(),
                delayed: Delayed::default(),
                closed: false,
                log: config.log.then(Vec::new),
                space_waiters: 0,
            }),
            work: Waiters::default(),
            idle: Notify::new(),
            space: Notify::new(),
            capacity: config.capacity,
            publish_timeout: config.publish_timeout,
            max_event_bytes: config.max_event_bytes,
            counters: Counters::default(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Adds a consumer of `topics`: the [`Notify`] it waits on in [`next`](Self::next).
    pub(super) fn subscribe(&self, topics: &Topics) -> Arc<Notify> {
        self.work.join(topics)
    }

    pub(super) fn unsubscribe(&self, topics: &Topics) {
        self.work.leave(topics);
    }

    /// Puts accepted events in their lanes (and the log), and wakes consumers.
    fn admit(&self, mut state: MutexGuard<'_, State>, events: Vec<Event>) {
        let count = events.len();
        if let Some(log) = &mut state.log {
            log.extend(events.iter().cloned());
        }
        // The lanes made ready, one per topic (mostly one: a step's products go to one handler).
        let mut ready: Vec<Arc<str>> = Vec::new();
        for event in events {
            if let Some(lane) = state.lanes.push(event)
                && !ready.iter().any(|r| topic_of(r) == topic_of(&lane))
            {
                ready.push(lane);
            }
        }
        drop(state);
        bump(&self.counters.published, count);
        for lane in &ready {
            self.work.ready(topic_of(lane));
        }
    }

    /// Publishes from outside without waiting: [`TransportError::Full`] when `capacity` events
    /// already wait.
    pub(super) fn try_publish(&self, events: Vec<Event>) -> Result<(), TransportError> {
        check_batch(&events, self.max_event_bytes)?;
        let state = self.state();
        if state.closed {
            return Err(TransportError::Closed);
        }
        if state.lanes.queued() >= self.capacity {
            return Err(TransportError::Full { capacity: self.capacity, waited: Duration::ZERO });
        }
        self.admit(state, events);
        Ok(())
    }

    /// Publishes from outside, waiting while `capacity` events wait (up to the publish timeout).
    pub(super) async fn publish(&self, events: Vec<Event>) -> Result<(), TransportError> {
        check_batch(&events, self.max_event_bytes)?;
        match self.publish_timeout {
            None => self.publish_waiting(events).await,
            Some(limit) => tokio::time::timeout(limit, self.publish_waiting(events))
                .await
                .unwrap_or(Err(TransportError::Full { capacity: self.capacity, waited: limit })),
        }
    }

    async fn publish_waiting(&self, events: Vec<Event>) -> Result<(), TransportError> {
        let mut waiting: Option<SpaceWaiter<'_>> = None;
        loop {
            let mut notified = pin!(self.space.notified());
            notified.as_mut().enable();
            {
                let mut state = self.state();
                if state.closed {
                    return Err(TransportError::Closed);
                }
                if state.lanes.queued() < self.capacity {
                    if let Some(waiter) = &mut waiting {
                        // Under the lock already: un-count here, not in `Drop`.
                        state.space_waiters -= 1;
                        waiter.counted = false;
                    }
                    let more = state.space_waiters > 0 && state.lanes.queued() + events.len() < self.capacity;
                    self.admit(state, events);
                    if more {
                        // Room is left: pass it on to another waiting publisher.
                        self.space.notify_one();
                    }
                    return Ok(());
                }
                if waiting.is_none() {
                    state.space_waiters += 1;
                    waiting = Some(SpaceWaiter { inner: self, counted: true });
                }
            }
            notified.await;
        }
    }

    /// Publishes what a settled delivery produced: over capacity and after `close` too.
    pub(super) fn admit_products(&self, events: Vec<Event>) -> Result<(), TransportError> {
        check_batch(&events, usize::MAX)?;
        if !events.is_empty() {
            self.admit(self.state(), events);
        }
        Ok(())
    }

    /// The next event of `topics`, waiting for one on `work` (what [`subscribe`](Self::subscribe)
    /// gave); `None` once closed and drained.
    pub(super) async fn next(&self, topics: &Topics, work: &Notify) -> Option<Job> {
        loop {
            let mut notified = pin!(work.notified());
            notified.as_mut().enable();
            let next_due = {
                let mut state = self.state();
                let promoted = {
                    let State { delayed, lanes, .. } = &mut *state;
                    delayed.promote(lanes)
                };
                if let Some(job) = state.lanes.take(topics) {
                    let more = promoted || state.lanes.has_ready();
                    let space = state.space_waiters > 0;
                    drop(state);
                    if more {
                        // Pass the baton: another idle consumer can take the next ready lane.
                        self.work.one_each();
                    }
                    if space {
                        self.space.notify_one();
                    }
                    return Some(job);
                }
                if promoted {
                    // Ready for another topic's consumers.
                    self.work.one_each();
                }
                if state.closed && state.lanes.is_idle() {
                    return None;
                }
                state.delayed.next_due()
            };
            match next_due {
                Some(due) => {
                    tokio::select! {
                        () = notified => {}
                        () = tokio::time::sleep_until(due) => {}
                    }
                }
                None => notified.await,
            }
        }
    }

    /// Settles a job for good (acked or terminated).
    pub(super) fn release(&self, job: &Job, acked: bool) {
        let mut state = self.state();
        let ready = state.lanes.release(&job.lane).then_some(&*job.lane);
        self.after_settle(state, ready);
        bump(if acked { &self.counters.acked } else { &self.counters.terminated }, 1);
    }

    /// Puts a job back: at once (`delay` zero) or once `delay` has passed.
    pub(super) fn retry(&self, job: Job, delay: Duration, counted: bool) {
        if counted {
            bump(&self.counters.nacked, 1);
        }
        let mut state = self.state();
        if delay.is_zero() {
            let lane = Arc::clone(&job.lane);
            let ready = state.lanes.requeue(job).then_some(&*lane);
            self.after_settle(state, ready);
            return;
        }
        state.delayed.push(job, delay);
        drop(state);
        // A consumer may be sleeping until a later due time: let one of each group recompute.
        self.work.one_each();
    }

    /// After a settlement: wakes a consumer of `ready`'s topic (the lane, when it is ready again).
    fn after_settle(&self, state: MutexGuard<'_, State>, ready: Option<&str>) {
        let idle = state.lanes.is_idle();
        let closed = state.closed;
        drop(state);
        if let Some(lane) = ready {
            self.work.ready(topic_of(lane));
        }
        if idle {
            self.idle.notify_waiters();
            if closed {
                self.work.all();
            }
        }
    }

    /// Waits until nothing is queued, nothing delivered and unsettled, no retry pending.
    pub(super) async fn wait_idle(&self) {
        loop {
            let mut notified = pin!(self.idle.notified());
            notified.as_mut().enable();
            if self.state().lanes.is_idle() {
                return;
            }
            notified.await;
        }
    }

    pub(super) fn close(&self) {
        let mut state = self.state();
        state.closed = true;
        let idle = state.lanes.is_idle();
        drop(state);
        self.space.notify_waiters();
        if idle {
            self.work.all();
        }
    }

    pub(super) fn is_closed(&self) -> bool {
        self.state().closed
    }

    pub(super) fn stats(&self) -> TransportStats {
        let (queued, out, delayed) = {
            let state = self.state();
            (state.lanes.queued(), state.lanes.out(), state.delayed.len())
        };
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        TransportStats {
            queued,
            in_flight: out.saturating_sub(delayed),
            delayed,
            published: get(&self.counters.published),
            acked: get(&self.counters.acked),
            nacked: get(&self.counters.nacked),
            terminated: get(&self.counters.terminated),
        }
    }

    pub(super) fn take_log(&self) -> Vec<Event> {
        self.state().log.as_mut().map(std::mem::take).unwrap_or_default()
    }
}

/// Counts a task in `publish` as waiting for space until it is dropped (also on cancellation
/// and timeout), so consumers signal `space` only when someone listens.
struct SpaceWaiter<'a> {
    inner: &'a Inner,
    counted: bool,
}

impl Drop for SpaceWaiter<'_> {
    fn drop(&mut self) {
        if self.counted {
            self.inner.state().space_waiters -= 1;
        }
    }
}
