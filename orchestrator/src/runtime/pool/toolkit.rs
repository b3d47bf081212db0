//! [`TaskHandler`] and its per-task [`Toolkit`]: respond once (`success` or `failure`),
//! heartbeat, notice cancellation, read the deadline.

use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::events::{Events, LifecycleEvent, TaskError, TaskRef, WorkerId};
use crate::event::Event;
use crate::violation::Violation;

/// What a pool's workers run on each delivery: the user's function, given the event and a
/// [`Toolkit`] to respond with. It must call [`Toolkit::success`] or [`Toolkit::failure`]
/// exactly once; returning without a response, panicking or running past the deadline is
/// reported as a failure (never a stranded delivery).
pub trait TaskHandler: Send + Sync + 'static {
    /// Handles `event`, responding through `toolkit`.
    fn handle(&self, event: &Event, toolkit: Toolkit) -> impl Future<Output = ()> + Send;
}

/// Object-safe [`TaskHandler`].
pub trait DynTaskHandler: Send + Sync + 'static {
    /// See [`TaskHandler::handle`].
    fn handle_dyn<'a>(&'a self, event: &'a Event, toolkit: Toolkit) -> BoxFuture<'a, ()>;
}

/// The boxed future of a borrowed handler.
type BoxFuture<'a, T> = std::pin::Pin<Box<dyn Future<Output = T> + Send + 'a>>;

impl<H: TaskHandler> DynTaskHandler for H {
    fn handle_dyn<'a>(&'a self, event: &'a Event, toolkit: Toolkit) -> BoxFuture<'a, ()> {
        Box::pin(self.handle(event, toolkit))
    }
}

/// A [`TaskHandler`] made of a closure given a copy of the event (see [`handler_fn`]).
pub struct FnHandler<F>(F);

impl<F> fmt::Debug for FnHandler<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FnHandler")
    }
}

/// A [`TaskHandler`] from a closure: `handler_fn(|event, kit| async move { … })`.
pub fn handler_fn<F, Fut>(f: F) -> FnHandler<F>
where
    F: Fn(Event, Toolkit) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    FnHandler(f)
}

impl<F, Fut> TaskHandler for FnHandler<F>
where
    F: Fn(Event, Toolkit) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    fn handle(&self, event: &Event, toolkit: Toolkit) -> impl Future<Output = ()> + Send {
        (self.0)(event.clone(), toolkit)
    }
}

/// Why a [`Toolkit`] call was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolkitError {
    /// The task already has its response; the first one stands.
    #[error("the task already has a response; the first one stands")]
    AlreadyResponded,
    /// The task is over (settled, or handed back): nothing more can be done with it.
    #[error("the task is over")]
    TaskEnded,
    /// The transport failed to extend the delivery: the lease may be lost, and the task's
    /// cancellation token fired.
    #[error("heartbeat failed, the lease may be lost: {0}")]
    Heartbeat(String),
}

/// The response recorded for a task.
#[derive(Debug)]
pub(super) enum Response {
    Success(Vec<Event>),
    Failure(Violation),
}

#[derive(Debug)]
enum Slot {
    /// No response yet.
    Open,
    /// Responded, not yet settled.
    Responded(Response),
    /// The task is over; whether it had a response.
    Closed { responded: bool },
}

/// A manual heartbeat request, answered by the task's runner.
pub(super) type HeartbeatRequest = oneshot::Sender<Result<(), ToolkitError>>;

struct Shared {
    task: TaskRef,
    worker: WorkerId,
    events: Events,
    slot: Mutex<Slot>,
    cancel: CancellationToken,
    deadline: Option<Instant>,
    heartbeats: mpsc::Sender<HeartbeatRequest>,
}

/// What a [`TaskHandler`] responds with, for one task. Cloning shares it.
///
/// * [`success`](Toolkit::success) / [`failure`](Toolkit::failure): exactly one response;
///   the first is recorded under a lock, so of two concurrent calls exactly one wins, and the
///   other gets [`ToolkitError::AlreadyResponded`]. The delivery is settled by the pool's
///   dispatcher (its one settlement rule) once the handler returns.
/// * [`heartbeat`](Toolkit::heartbeat): extends the delivery now (the pool also does it on
///   its own at [`PoolConfig::heartbeat`](super::PoolConfig::heartbeat)).
/// * [`cancellation`](Toolkit::cancellation): fires when the worker stops or the lease is lost
///   (a heartbeat failed). A handler that returns without responding after it fired has its
///   delivery handed back, to be delivered again, rather than failed.
/// * [`deadline`](Toolkit::deadline): when the handler will be stopped and failed, if the
///   pool has a [`task_timeout`](super::PoolConfig::task_timeout).
#[derive(Clone)]
pub struct Toolkit {
    shared: Arc<Shared>,
}

impl fmt::Debug for Toolkit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Toolkit")
            .field("task", &self.shared.task)
            .field("worker", &self.shared.worker)
            .field("deadline", &self.shared.deadline)
            .finish_non_exhaustive()
    }
}

/// The runner's side of a toolkit: takes the response and answers heartbeat requests.
pub(super) struct Control {
    shared: Arc<Shared>,
    pub(super) heartbeats: mpsc::Receiver<HeartbeatRequest>,
}

impl Control {
    /// Whether the handler has responded.
    pub(super) fn responded(&self) -> bool {
        Toolkit { shared: Arc::clone(&self.shared) }.responded()
    }

    /// Closes the task and returns its response, if any: later responses get
    /// [`ToolkitError::AlreadyResponded`] or [`ToolkitError::TaskEnded`].
    pub(super) fn take(&self) -> Option<Response> {
        let mut slot = self.shared.slot.lock().unwrap_or_else(PoisonError::into_inner);
        match std::mem::replace(&mut *slot, Slot::Closed { responded: false }) {
            Slot::Responded(response) => {
                *slot = Slot::Closed { responded: true };
                Some(response)
            }
            Slot::Open => None,
            closed @ Slot::Closed { .. } => {
                *slot = closed;
                None
            }
        }
    }
}

impl Toolkit {
    pub(super) fn new(
        task: TaskRef,
        worker: WorkerId,
        events: Events,
        cancel: CancellationToken,
        deadline: Option<Instant>,
    ) -> (Self, Control) {
        let (sender, receiver) = mpsc::channel(4);
        let shared = Arc::new(Shared {
            task,
            worker,
            events,
            slot: Mutex::new(Slot::Open),
            cancel,
            deadline,
            heartbeats: sender,
        });
        (Self { shared: Arc::clone(&shared) }, Control { shared, heartbeats: receiver })
    }

    /// The task: its event's id and type, and the attempt.
    pub fn task(&self) -> &TaskRef {
        &self.shared.task
    }

    /// The worker running it.
    pub fn worker(&self) -> &WorkerId {
        &self.shared.worker
    }

    /// Responds with success: the delivery is acknowledged with `produced`, which the transport
    /// publishes. Refused if the task already has a response, or is over.
    pub fn success(&self, produced: Vec<Event>) -> Result<(), ToolkitError> {
        self.record(Response::Success(produced))
    }

    /// Responds with a failure: a transient one (a transaction violation) is retried after the
    /// dispatcher's retry delay, any other is a dead letter. Refused if the task already has a
    /// response, or is over.
    pub fn failure(&self, violation: Violation) -> Result<(), ToolkitError> {
        self.record(Response::Failure(violation))
    }

    /// [`success`](Toolkit::success) or [`failure`](Toolkit::failure), from a handler's result.
    pub fn respond(&self, result: Result<Vec<Event>, Violation>) -> Result<(), ToolkitError> {
        match result {
            Ok(produced) => self.success(produced),
            Err(violation) => self.failure(violation),
        }
    }

    /// Whether the task has its response.
    pub fn responded(&self) -> bool {
        let slot = self.shared.slot.lock().unwrap_or_else(PoisonError::into_inner);
        matches!(*slot, Slot::Responded(_) | Slot::Closed { responded: true })
    }

    fn record(&self, response: Response) -> Result<(), ToolkitError> {
        let mut slot = self.shared.slot.lock().unwrap_or_else(PoisonError::into_inner);
        match &*slot {
            Slot::Open => {
                *slot = Slot::Responded(response);
                Ok(())
            }
            Slot::Responded(_) | Slot::Closed { responded: true } => {
                drop(slot);
                self.shared.events.emit(LifecycleEvent::TaskErrored {
                    worker: self.shared.worker.clone(),
                    task: self.shared.task.clone(),
                    error: TaskError::SecondResponse,
                });
                Err(ToolkitError::AlreadyResponded)
            }
            Slot::Closed { responded: false } => Err(ToolkitError::TaskEnded),
        }
    }

    /// Extends the delivery now. Fails with [`ToolkitError::Heartbeat`] if the transport
    /// refused (the cancellation token then fires), [`ToolkitError::TaskEnded`] once the task is
    /// over.
    pub async fn heartbeat(&self) -> Result<(), ToolkitError> {
        let (reply, answer) = oneshot::channel();
        self.shared.heartbeats.send(reply).await.map_err(|_| ToolkitError::TaskEnded)?;
        answer.await.unwrap_or(Err(ToolkitError::TaskEnded))
    }

    /// The task's cancellation token: fires when the worker stops, or when the lease is lost
    /// (a heartbeat failed). Await [`CancellationToken::cancelled`] to notice it.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.shared.cancel
    }

    /// Whether the cancellation token fired.
    pub fn is_cancelled(&self) -> bool {
        self.shared.cancel.is_cancelled()
    }

    /// When the handler will be stopped and the task failed, if the pool sets a
    /// [`task_timeout`](super::PoolConfig::task_timeout).
    pub fn deadline(&self) -> Option<Instant> {
        self.shared.deadline
    }
}
