//! Durable timers: a machine's `after` transitions and delayed sends, delivered when due, also
//! after a restart.
//!
//! # How it works
//!
//! * Each execution reads the time from the orchestrator's [`Clock`](crate::clock::Clock). A machine's clock is
//!   anchored to the wall clock when the workflow starts (its snapshot keeps that
//!   [`epoch_ms`](crate::machine::MachineInstance::epoch_ms)), and before an event is handled
//!   every timer due by then fires, in due order.
//! * The execution writes the workflow's next due time with its record
//!   ([`WriteMeta::wake_at`](crate::memory::WriteMeta::wake_at), indexed by the backend, and
//!   [`WorkflowRecord::wake_at_ms`](super::WorkflowRecord::wake_at_ms)), in the same write as the
//!   state, so a timer is exactly as durable as the state.
//! * [`Timers`] claims from the store the workflows that are due by the store's own clock
//!   ([`Memory::claim_due`]) and publishes a **wake-up event** for each ([`wake_event`]: type
//!   `<orchestrator>.wake`, addressed to the orchestrator, on the workflow's subject). It goes
//!   through the same delivery path, ordering and lifecycle as every other event: acquire, fire
//!   the due timers, commit, emit. A claimed wake-up is not handed to another caller until its
//!   claim lapses ([`Timers::with_resend_after`]), so several nodes over one store do not all
//!   publish it; if its delivery was lost, it is published again then.
//! * Wake-ups are idempotent: one that arrives early, twice, or after the timer fired is ignored
//!   without a write. A [`Node`](crate::runtime::Node) runs [`Timers`] for you.
//! * A restarted process that runs [`Timers`] over the same store delivers the timers that fell
//!   due while it was down, at once. A late timer fires at the time it is delivered: the
//!   timers its transition starts count from then (a 2 s timeout entered after an outage runs
//!   for 2 s, it is not already over).
//!
//! Precision is the [`Timers`] tick (default 50 ms) plus the delivery latency.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use std::sync::Arc;
//! use orchestrator::memory::InMemory;
//! use orchestrator::orchestration::{WorkflowRecord, timers::Timers};
//! let memory = Arc::new(InMemory::<WorkflowRecord>::default());
//! let timers = Timers::new(Arc::clone(&memory));
//! let mut published = Vec::new();
//! // Nothing is due in an empty memory.
//! assert_eq!(timers.fire_due(|event| { published.push(event); Ok::<(), ()>(()) }).await?, 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::json;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::{WorkflowRecord, wake_type};
use crate::event::{Event, EventError};
use crate::memory::{Memory, MemoryError};
use crate::subject::{Subject, SubjectError};
use crate::transport::{Transport, TransportError};

/// Why a wake-up could not be made or published.
#[derive(Debug, thiserror::Error)]
pub enum TimerError {
    /// The memory could not list the due workflows.
    #[error("cannot list the due workflows: {0}")]
    Memory(#[from] MemoryError),
    /// The transport refused the wake-ups.
    #[error("cannot publish the wake-ups: {0}")]
    Transport(#[from] TransportError),
    /// A due workflow's id is not an orchestration subject.
    #[error("workflow {id:?} has a timer but its id is not an orchestration subject: {source}")]
    Subject {
        /// The workflow id.
        id: String,
        /// Why it does not parse.
        #[source]
        source: SubjectError,
    },
    /// The wake-up event could not be built.
    #[error("cannot build the wake-up event of workflow {id:?}: {source}")]
    Event {
        /// The workflow id.
        id: String,
        /// Why.
        #[source]
        source: EventError,
    },
}

/// The wake-up event of workflow `subject`, due at `due`: type `<orchestrator>.wake`, source and
/// `to` the orchestrator named by the subject, data `{"dueAt": <RFC 3339>}`.
pub fn wake_event(subject: &str, due: SystemTime) -> Result<Event, TimerError> {
    let parsed =
        Subject::parse(subject).map_err(|source| TimerError::Subject { id: subject.to_owned(), source })?;
    let orchestrator = parsed.orchestrator_name();
    let due_at = crate::event::time::format_utc(due);
    Event::builder()
        .source(orchestrator)
        .r#type(wake_type(orchestrator))
        .to(orchestrator)
        .subject(subject)
        .data_json(json!({ "dueAt": due_at }))
        .build()
        .map_err(|source| TimerError::Event { id: subject.to_owned(), source })
}

/// Publishes the wake-ups of due workflows (see the [module documentation](self)).
pub struct Timers<M> {
    memory: M,
    batch: usize,
    tick: Duration,
    resend_after: Duration,
}

impl<M> fmt::Debug for Timers<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Timers")
            .field("batch", &self.batch)
            .field("tick", &self.tick)
            .field("resend_after", &self.resend_after)
            .finish_non_exhaustive()
    }
}

impl<M: Memory<WorkflowRecord> + 'static> Timers<M> {
    /// Timers over `memory`, checking every 50 ms, at most 256 wake-ups per pass, publishing a
    /// wake-up again when it is still due 5 s later (a lost delivery). Due times are judged by
    /// the store's clock, and each wake-up is claimed in the store while it is in flight
    /// ([`Memory::claim_due`]), so several nodes over one store do not all publish it.
    pub fn new(memory: M) -> Self {
        Self { memory, batch: 256, tick: Duration::from_millis(50), resend_after: Duration::from_secs(5) }
    }

    /// Sets how often [`Timers::spawn`] checks for due workflows.
    #[must_use]
    pub fn with_tick(mut self, tick: Duration) -> Self {
        self.tick = tick;
        self
    }

    /// Sets the most wake-ups published per pass (at least 1).
    #[must_use]
    pub fn with_batch(mut self, batch: usize) -> Self {
        self.batch = batch.max(1);
        self
    }

    /// Sets after how long a wake-up that is still due is published again (the claim's length).
    #[must_use]
    pub fn with_resend_after(mut self, after: Duration) -> Self {
        self.resend_after = after;
        self
    }

    /// One pass: claims the workflows due now and publishes, through `publish`, a wake-up for
    /// each. Returns how many were published. Stops early (without error) when `publish` fails,
    /// e.g. on a full queue: the rest are claimed, and published again once their claim lapses.
    pub async fn fire_due<E>(
        &self,
        mut publish: impl FnMut(Event) -> Result<(), E>,
    ) -> Result<usize, TimerError> {
        let due = self.memory.claim_due(self.batch, self.resend_after).await?;
        let mut published = 0;
        for wake in due {
            let event = wake_event(&wake.id, wake.at)?;
            if publish(event).is_err() {
                break;
            }
            published += 1;
        }
        Ok(published)
    }

    /// Runs passes every tick in a tokio task, publishing to `transport`, until
    /// [`TimerTask::stop`]. A failed pass is reported to `on_error` and retried at the next tick
    /// (a wake-up the transport refused is published again once its claim lapses).
    pub fn spawn<T: Transport>(
        self,
        transport: T,
        on_error: impl Fn(TimerError) + Send + Sync + 'static,
    ) -> TimerTask {
        let stop = Arc::new(Notify::new());
        let stopped = Arc::clone(&stop);
        let join = tokio::spawn(async move {
            loop {
                let mut due = Vec::new();
                let pass = self.fire_due(|event| {
                    due.push(event);
                    Ok::<(), ()>(())
                });
                match pass.await {
                    Ok(_) if !due.is_empty() => {
                        if let Err(e) = transport.publish(due).await {
                            on_error(TimerError::Transport(e));
                        }
                    }
                    Ok(_) => {}
                    Err(e) => on_error(e),
                }
                tokio::select! {
                    () = stopped.notified() => break,
                    () = tokio::time::sleep(self.tick) => {}
                }
            }
        });
        TimerTask { stop, join }
    }
}

/// The task of [`Timers::spawn`].
#[derive(Debug)]
pub struct TimerTask {
    stop: Arc<Notify>,
    join: JoinHandle<()>,
}

impl TimerTask {
    /// Asks the task to stop after its current pass, without waiting.
    pub fn signal_stop(&self) {
        self.stop.notify_one();
    }

    /// Stops the task and waits for it to end.
    pub async fn stop(self) {
        self.stop.notify_one();
        let _ = self.join.await;
    }
}
