//! [`Shared`]: the state the broker's handles and workers share, and the wake-ups between them.
//!
//! One mutex guards the [`SubjectQueue`], the closed flag and the event log; it is held only for
//! a few map operations, never across an `await` or a user callback. Three [`Notify`]s replace
//! polling: `work` (a lane became ready, or the workers should stop), `idle` (nothing queued and
//! nothing in flight) and `space` (a queue slot was freed, for `publish_wait`). Every waiter
//! registers its `Notified` before it checks the state, so no wake-up is lost.

use std::collections::HashMap;
use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

use super::outlets::Outlets;
use super::queue::{Job, SubjectQueue};
use super::resolve::Collectors;
use super::stats::{BrokerStats, Counters, bump};
use super::{BrokerError, lock};
use crate::event::Event;
use crate::handler::DynEventHandler;

/// Who is publishing: outsiders are refused once the broker is closed, handlers' products are
/// not (they are part of the work being drained).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Origin {
    External,
    Produced,
}

/// A refused event, handed back with the reason.
pub(super) struct Refused {
    pub(super) error: BrokerError,
    pub(super) event: Box<Event>,
}

struct State {
    queue: SubjectQueue,
    closed: bool,
    /// Every accepted event, in acceptance order, when logging is on.
    log: Option<Vec<Event>>,
    /// Tasks in `enqueue_wait` waiting for a free slot.
    space_waiters: usize,
}

pub(super) struct Shared {
    state: Mutex<State>,
    work: Notify,
    idle: Notify,
    space: Notify,
    capacity: usize,
    routes: HashMap<String, Arc<dyn DynEventHandler>>,
    pub(super) collectors: Collectors,
    pub(super) outlets: Outlets,
    pub(super) counters: Counters,
}

impl Shared {
    pub(super) fn new(
        routes: HashMap<String, Arc<dyn DynEventHandler>>,
        capacity: usize,
        log: bool,
        outlets: Outlets,
    ) -> Self {
        Self {
            state: Mutex::new(State {
                queue: SubjectQueue::default(),
                closed: false,
                log: log.then(Vec::new),
                space_waiters: 0,
            }),
            work: Notify::new(),
            idle: Notify::new(),
            space: Notify::new(),
            capacity,
            routes,
            collectors: Collectors::default(),
            outlets,
            counters: Counters::default(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// The handler listening on `topic`.
    pub(super) fn route(&self, topic: &str) -> Option<&dyn DynEventHandler> {
        // Through `&dyn`, not `&Arc<dyn>`: the `Arc` is itself an `EventHandler` (hence a
        // `DynEventHandler`), and calling through it would add a layer of indirection.
        self.routes.get(topic).map(|handler| &**handler)
    }

    pub(super) fn is_handler_topic(&self, topic: &str) -> bool {
        self.routes.contains_key(topic)
    }

    pub(super) fn topics(&self) -> impl Iterator<Item = &str> {
        self.routes.keys().map(String::as_str)
    }

    pub(super) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Accepts an event into its subject's lane, or refuses it without waiting.
    pub(super) fn enqueue(&self, event: Event, origin: Origin) -> Result<(), Refused> {
        let state = self.state();
        let refusal = if event.to().is_none() {
            Some(BrokerError::MissingTo { id: event.id().to_owned() })
        } else if origin == Origin::External && state.closed {
            Some(BrokerError::Closed)
        } else if state.queue.queued() >= self.capacity {
            Some(BrokerError::QueueFull { capacity: self.capacity })
        } else {
            None
        };
        if let Some(error) = refusal {
            drop(state);
            bump(&self.counters.rejected);
            return Err(Refused { error, event: Box::new(event) });
        }
        self.accept(state, event);
        Ok(())
    }

    /// Like [`Shared::enqueue`] from outside, but waits while the queue is full.
    pub(super) async fn enqueue_wait(&self, event: Event) -> Result<(), BrokerError> {
        if event.to().is_none() {
            bump(&self.counters.rejected);
            return Err(BrokerError::MissingTo { id: event.id().to_owned() });
        }
        let mut waiting: Option<SpaceWaiter<'_>> = None;
        loop {
            let mut notified = pin!(self.space.notified());
            notified.as_mut().enable();
            {
                let mut state = self.state();
                if state.closed {
                    drop(state);
                    bump(&self.counters.rejected);
                    return Err(BrokerError::Closed);
                }
                if state.queue.queued() < self.capacity {
                    if let Some(waiter) = &mut waiting {
                        // Under the lock already: un-count here, not in `Drop`.
                        state.space_waiters -= 1;
                        waiter.counted = false;
                    }
                    self.accept(state, event);
                    return Ok(());
                }
                if waiting.is_none() {
                    state.space_waiters += 1;
                    waiting = Some(SpaceWaiter { shared: self, counted: true });
                }
            }
            notified.await;
        }
    }

    fn accept(&self, mut state: MutexGuard<'_, State>, event: Event) {
        if let Some(log) = &mut state.log {
            log.push(event.clone());
        }
        let ready = state.queue.push(event);
        drop(state);
        bump(&self.counters.published);
        if ready {
            self.work.notify_one();
        }
    }

    /// The next event for a worker, waiting for one; `None` once the broker is closed and idle.
    pub(super) async fn next_job(&self) -> Option<Job> {
        loop {
            let mut notified = pin!(self.work.notified());
            notified.as_mut().enable();
            {
                let mut state = self.state();
                if let Some(job) = state.queue.take() {
                    let more = state.queue.has_ready();
                    let space = state.space_waiters > 0;
                    drop(state);
                    if more {
                        // Pass the baton: another idle worker can take the next ready lane.
                        self.work.notify_one();
                    }
                    if space {
                        self.space.notify_one();
                    }
                    return Some(job);
                }
                if state.closed && state.queue.is_idle() {
                    return None;
                }
            }
            notified.await;
        }
    }

    /// Releases a job's lane (its products are already queued).
    pub(super) fn finish(&self, subject: &Arc<str>) {
        let mut state = self.state();
        let ready = state.queue.finish(subject);
        let idle = state.queue.is_idle();
        let closed = state.closed;
        drop(state);
        if ready {
            self.work.notify_one();
        }
        if idle {
            self.idle.notify_waiters();
            if closed {
                self.work.notify_waiters();
            }
        }
    }

    /// Waits until nothing is queued and nothing is in flight.
    pub(super) async fn wait_idle(&self) {
        loop {
            let mut notified = pin!(self.idle.notified());
            notified.as_mut().enable();
            if self.state().queue.is_idle() {
                return;
            }
            notified.await;
        }
    }

    /// Stops accepting events from outside; workers stop once the queue is drained.
    pub(super) fn close(&self) {
        let mut state = self.state();
        state.closed = true;
        let idle = state.queue.is_idle();
        drop(state);
        self.space.notify_waiters();
        if idle {
            self.work.notify_waiters();
        }
    }

    pub(super) fn is_closed(&self) -> bool {
        self.state().closed
    }

    pub(super) fn stats(&self) -> BrokerStats {
        let (queued, in_flight) = {
            let state = self.state();
            (state.queue.queued(), state.queue.in_flight())
        };
        self.counters.snapshot(queued, in_flight)
    }

    pub(super) fn take_log(&self) -> Vec<Event> {
        self.state().log.as_mut().map(std::mem::take).unwrap_or_default()
    }
}

/// Counts a task in `enqueue_wait` as waiting for space until it is dropped (also on
/// cancellation), so workers signal `space` only when someone listens.
struct SpaceWaiter<'a> {
    shared: &'a Shared,
    counted: bool,
}

impl Drop for SpaceWaiter<'_> {
    fn drop(&mut self) {
        if self.counted {
            self.shared.state().space_waiters -= 1;
        }
    }
}
