//! [`LifecycleEvent`]: what the workers of a pool report, in three groups (`worker:*`,
//! `polling:*`, `task:*`), on a bounded broadcast ([`Events`]) and as `tracing` events of the
//! same names.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast;

use crate::event::Event;

/// The default capacity of the lifecycle broadcast: a subscriber that falls this far behind
/// lags (it is told how many events it missed); workers never wait for it.
pub const DEFAULT_EVENTS_CAPACITY: usize = 1024;

/// Names one worker: its pool and its number in that pool (`"<pool>:<n>"`), never reused.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WorkerId {
    /// The pool's name.
    pub pool: Arc<str>,
    /// The worker's number in the pool, from 1, never reused.
    pub n: u64,
}

impl fmt::Display for WorkerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.pool, self.n)
    }
}

/// Names one task: one delivery of one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRef {
    /// The event's id.
    pub event_id: String,
    /// The event's type (its topic, `to`, for an event addressed to a handler).
    pub event_type: String,
    /// The delivery's attempt (1 for the first).
    pub attempt: u32,
}

impl TaskRef {
    pub(crate) fn of(event: &Event, attempt: u32) -> Self {
        Self { event_id: event.id().to_owned(), event_type: event.r#type().to_owned(), attempt }
    }
}

/// A failed poll (a subscription or a [`try_next`](crate::transport::Subscription::try_next)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PollError {
    /// Whether polling again may succeed ([`TransportError::is_transient`](crate::transport::TransportError::is_transient)).
    pub retryable: bool,
    /// The transport's error message.
    pub message: String,
}

/// Why a worker stopped: carried by [`LifecycleEvent::WorkerStopped`], emitted on every exit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExitReason {
    /// Asked to stop (the pool stopped or shrank).
    #[error("stopped on request")]
    Stopped,
    /// The transport is closed and drained: there is nothing more to receive.
    #[error("the transport is closed and drained")]
    Drained,
    /// A poll failed with an error that polling again cannot fix.
    #[error("fatal poll error: {0}")]
    FatalPoll(PollError),
    /// The polls failed `failures` times in a row, the configured threshold.
    #[error("{failures} consecutive poll failures, the last: {last}")]
    PollFailures {
        /// How many polls failed in a row.
        failures: u32,
        /// The last failure.
        last: PollError,
    },
    /// The worker's own loop panicked (not a handler: their panics are contained).
    #[error("the worker panicked: {0}")]
    Panicked(String),
}

impl ExitReason {
    /// Whether the worker failed (a pool restarts it after its restart interval), rather than
    /// being stopped or running out of work.
    pub fn is_failure(&self) -> bool {
        !matches!(self, Self::Stopped | Self::Drained)
    }
}

/// Why a task went wrong: carried by [`LifecycleEvent::TaskErrored`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TaskError {
    /// The handler returned without calling `success` or `failure`: reported as a failure.
    #[error("the handler returned without responding")]
    NoResponse,
    /// The handler panicked: reported as a failure (a dead letter).
    #[error("the handler panicked: {0}")]
    Panicked(String),
    /// The handler ran past its deadline: stopped, and reported as a failure.
    #[error("the handler exceeded its deadline of {0:?}")]
    DeadlineExceeded(Duration),
    /// The handler responded a second time: refused, the first response stands.
    #[error("the handler responded twice; the second response was refused")]
    SecondResponse,
    /// A heartbeat failed: the lease may be lost, the task's cancellation token fired.
    #[error("heartbeat failed, the lease may be lost: {0}")]
    HeartbeatFailed(String),
    /// The worker stopped before the handler responded: the delivery was handed back (nacked
    /// without delay) to be delivered again.
    #[error("cancelled by the worker's stop: handed back")]
    HandedBack,
    /// The transport failed to settle the delivery; it delivers the event again.
    #[error("the transport failed to {settlement}: {error}")]
    SettleFailed {
        /// `ack`, `nack` or `terminate`.
        settlement: &'static str,
        /// The transport's error.
        error: String,
    },
}

/// How a task's failure was settled: carried by [`LifecycleEvent::TaskFailure`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailureSettlement {
    /// Nacked, to be tried again after this delay (a transient failure).
    Retried(Duration),
    /// Reported as a dead letter.
    DeadLettered,
}

/// One lifecycle event of a worker. [`LifecycleEvent::name`] gives the model's name
/// (`worker:starting`, `polling:error`, `task:done`…), which is also the `event` field of the
/// `tracing` event emitted with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LifecycleEvent {
    /// `worker:starting`: the worker was spawned, before its loop runs.
    WorkerStarting {
        /// The worker.
        worker: WorkerId,
    },
    /// `worker:running`: the worker subscribed and is about to poll.
    WorkerRunning {
        /// The worker.
        worker: WorkerId,
    },
    /// `worker:stopping`: the worker stopped claiming and drains its tasks.
    WorkerStopping {
        /// The worker.
        worker: WorkerId,
    },
    /// `worker:stopped`: the worker ended; emitted on every exit, with its reason.
    WorkerStopped {
        /// The worker.
        worker: WorkerId,
        /// Why it stopped.
        reason: ExitReason,
    },
    /// `worker:error`: the worker failed (its exit reason follows in `worker:stopped`).
    WorkerError {
        /// The worker.
        worker: WorkerId,
        /// What failed.
        error: ExitReason,
    },
    /// `polling:starting`: a poll (or a subscription attempt) begins; retries included.
    PollingStarting {
        /// The worker.
        worker: WorkerId,
    },
    /// `polling:success`: a poll returned: a delivery, or `None` once the transport is
    /// drained.
    PollingSuccess {
        /// The worker.
        worker: WorkerId,
        /// The task received, if any.
        task: Option<TaskRef>,
    },
    /// `polling:error`: a poll failed.
    PollingError {
        /// The worker.
        worker: WorkerId,
        /// The failure, and whether it is retryable.
        error: PollError,
        /// How many polls failed in a row, this one included.
        attempts: u32,
    },
    /// `task:received`: a delivery came back from a poll.
    TaskReceived {
        /// The worker.
        worker: WorkerId,
        /// The task.
        task: TaskRef,
    },
    /// `task:start`: the handler is about to run.
    TaskStart {
        /// The worker.
        worker: WorkerId,
        /// The task.
        task: TaskRef,
    },
    /// `task:heartbeat`: the delivery was extended (manually or automatically).
    TaskHeartbeat {
        /// The worker.
        worker: WorkerId,
        /// The task.
        task: TaskRef,
    },
    /// `task:success`: the handler succeeded and the delivery was acknowledged.
    TaskSuccess {
        /// The worker.
        worker: WorkerId,
        /// The task.
        task: TaskRef,
    },
    /// `task:failure`: a failure (reported by the handler, or made explicit for a handler
    /// that panicked, did not respond or ran past its deadline) was settled.
    TaskFailure {
        /// The worker.
        worker: WorkerId,
        /// The task.
        task: TaskRef,
        /// How it was settled.
        settlement: FailureSettlement,
    },
    /// `task:errored`: the handler panicked, did not respond, ran past its deadline, responded
    /// twice, lost its lease, was handed back on stop, or the settlement failed.
    TaskErrored {
        /// The worker.
        worker: WorkerId,
        /// The task.
        task: TaskRef,
        /// What went wrong.
        error: TaskError,
    },
    /// `task:done`: the task is over, whatever happened; always the last event of a task.
    TaskDone {
        /// The worker.
        worker: WorkerId,
        /// The task.
        task: TaskRef,
    },
}

impl LifecycleEvent {
    /// The model's name: `worker:starting|running|stopping|stopped|error`,
    /// `polling:starting|success|error`,
    /// `task:received|start|heartbeat|success|failure|errored|done`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::WorkerStarting { .. } => "worker:starting",
            Self::WorkerRunning { .. } => "worker:running",
            Self::WorkerStopping { .. } => "worker:stopping",
            Self::WorkerStopped { .. } => "worker:stopped",
            Self::WorkerError { .. } => "worker:error",
            Self::PollingStarting { .. } => "polling:starting",
            Self::PollingSuccess { .. } => "polling:success",
            Self::PollingError { .. } => "polling:error",
            Self::TaskReceived { .. } => "task:received",
            Self::TaskStart { .. } => "task:start",
            Self::TaskHeartbeat { .. } => "task:heartbeat",
            Self::TaskSuccess { .. } => "task:success",
            Self::TaskFailure { .. } => "task:failure",
            Self::TaskErrored { .. } => "task:errored",
            Self::TaskDone { .. } => "task:done",
        }
    }

    /// The worker that emitted it.
    pub fn worker(&self) -> &WorkerId {
        match self {
            Self::WorkerStarting { worker }
            | Self::WorkerRunning { worker }
            | Self::WorkerStopping { worker }
            | Self::WorkerStopped { worker, .. }
            | Self::WorkerError { worker, .. }
            | Self::PollingStarting { worker }
            | Self::PollingSuccess { worker, .. }
            | Self::PollingError { worker, .. }
            | Self::TaskReceived { worker, .. }
            | Self::TaskStart { worker, .. }
            | Self::TaskHeartbeat { worker, .. }
            | Self::TaskSuccess { worker, .. }
            | Self::TaskFailure { worker, .. }
            | Self::TaskErrored { worker, .. }
            | Self::TaskDone { worker, .. } => worker,
        }
    }

    /// The task it is about, for a `task:*` event.
    pub fn task(&self) -> Option<&TaskRef> {
        match self {
            Self::TaskReceived { task, .. }
            | Self::TaskStart { task, .. }
            | Self::TaskHeartbeat { task, .. }
            | Self::TaskSuccess { task, .. }
            | Self::TaskFailure { task, .. }
            | Self::TaskErrored { task, .. }
            | Self::TaskDone { task, .. } => Some(task),
            _ => None,
        }
    }

    /// Emits it as a `tracing` event (target `orchestrator::pool`, field `event` = its name):
    /// failures at `warn`, the worker's lifecycle at `info`, polls and tasks at `debug`.
    fn trace(&self) {
        let name = self.name();
        let worker = self.worker();
        let event_id = self.task().map(|t| t.event_id.as_str());
        match self {
            Self::WorkerStopped { reason, .. } if reason.is_failure() => {
                tracing::warn!(target: "orchestrator::pool", event = name, %worker, %reason);
            }
            Self::WorkerStopped { reason, .. } => {
                tracing::info!(target: "orchestrator::pool", event = name, %worker, %reason);
            }
            Self::WorkerError { error, .. } => {
                tracing::warn!(target: "orchestrator::pool", event = name, %worker, %error);
            }
            Self::PollingError { error, attempts, .. } => {
                tracing::warn!(target: "orchestrator::pool", event = name, %worker, %error, retryable = error.retryable, attempts);
            }
            Self::TaskErrored { error, .. } => {
                tracing::warn!(target: "orchestrator::pool", event = name, %worker, event_id, %error);
            }
            Self::WorkerStarting { .. } | Self::WorkerRunning { .. } | Self::WorkerStopping { .. } => {
                tracing::info!(target: "orchestrator::pool", event = name, %worker);
            }
            _ => tracing::debug!(target: "orchestrator::pool", event = name, %worker, event_id),
        }
    }
}

/// The lifecycle events of a consumer's workers: a bounded [`broadcast`]. A subscriber that
/// falls behind lags (its next `recv` reports how many events it missed); workers never wait
/// for a subscriber. Cloning shares the channel.
#[derive(Debug, Clone)]
pub struct Events {
    sender: broadcast::Sender<LifecycleEvent>,
}

impl Default for Events {
    fn default() -> Self {
        Self::new(DEFAULT_EVENTS_CAPACITY)
    }
}

impl Events {
    /// A channel that keeps up to `capacity` events for its slowest subscriber (at least 1).
    pub fn new(capacity: usize) -> Self {
        Self { sender: broadcast::channel(capacity.max(1)).0 }
    }

    /// Receives every event emitted from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<LifecycleEvent> {
        self.sender.subscribe()
    }

    /// Emits `event` as a `tracing` event, then to the subscribers (if any).
    pub(crate) fn emit(&self, event: LifecycleEvent) {
        event.trace();
        // No subscriber is not an error: the tracing event was emitted.
        let _ = self.sender.send(event);
    }
}
