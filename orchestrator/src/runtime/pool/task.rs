//! Runs one task: the handler with its [`Toolkit`], heartbeats, the deadline and the worker's
//! abort, then settles the delivery through the dispatcher's one settlement rule.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

use super::events::{Events, FailureSettlement, LifecycleEvent, TaskError, TaskRef, WorkerId};
use super::toolkit::{Control, DynTaskHandler, Response, Toolkit, ToolkitError};
use crate::handler::DynEventHandler;
use crate::runtime::{Dispatcher, Heartbeat, Outcome, Settled};
use crate::transport::Delivery;
use crate::util::panic::{CatchPanic, catch};
use crate::violation::Violation;

/// What a pool runs on its deliveries.
#[derive(Clone)]
pub(crate) enum PoolHandler {
    /// One task handler for every delivery.
    Task(Arc<dyn DynTaskHandler>),
    /// The dispatcher's event handlers, routed by the event's `to` (no handler: collected by a
    /// waiting caller, or a dead letter).
    Routed,
}

/// What the tasks of one worker share.
pub(crate) struct TaskContext<P> {
    pub(crate) dispatcher: Arc<Dispatcher<P>>,
    pub(crate) publisher: P,
    pub(crate) handler: PoolHandler,
    pub(crate) events: Events,
    pub(crate) worker: WorkerId,
    pub(crate) heartbeat: Option<Heartbeat>,
    pub(crate) task_timeout: Option<Duration>,
    /// Fires when the worker stops: the handlers' cancellation tokens are its children.
    pub(crate) stop: CancellationToken,
    /// Fires when the stop's grace period is over: running handlers are dropped and their
    /// deliveries handed back.
    pub(crate) abort: CancellationToken,
}

/// How the handler's run ended.
enum End {
    /// It returned (`Err`: it panicked).
    Returned(Result<(), String>),
    /// It ran past its deadline.
    Deadline(Duration),
    /// The worker's grace period ran out.
    Aborted,
}

impl<P: Clone + Send + Sync + 'static> TaskContext<P> {
    fn emit(&self, event: impl FnOnce(WorkerId) -> LifecycleEvent) {
        self.events.emit(event(self.worker.clone()));
    }

    fn errored(&self, task: &TaskRef, error: TaskError) {
        self.emit(|worker| LifecycleEvent::TaskErrored { worker, task: task.clone(), error });
    }

    /// Runs one delivery to its settlement: `task:received`, then (for a routed delivery
    /// without a handler: collected or dead-lettered at once) `task:start`, the handler,
    /// `task:success`/`task:failure`/`task:errored`, and always `task:done` last.
    pub(crate) async fn run<D: Delivery>(&self, delivery: D) {
        let task = TaskRef::of(delivery.event(), delivery.attempt());
        self.emit(|worker| LifecycleEvent::TaskReceived { worker, task: task.clone() });
        self.run_task(delivery, &task).await;
        self.emit(|worker| LifecycleEvent::TaskDone { worker, task });
    }

    async fn run_task<D: Delivery>(&self, delivery: D, task: &TaskRef) {
        let work = match &self.handler {
            PoolHandler::Task(handler) => Work::Task(&**handler),
            PoolHandler::Routed => match self.dispatcher.route(delivery.event()) {
                // Through `&dyn`, not `&Arc<dyn>`: the `Arc` is itself a handler, one layer more.
                Some(handler) => Work::Event(&**handler),
                None => {
                    let settled = self.dispatcher.unrouted(delivery).await;
                    self.report(task, settled);
                    return;
                }
            },
        };
        self.dispatcher.begin();
        let cancel = self.stop.child_token();
        let deadline = self.task_timeout.map(|timeout| (Instant::now() + timeout, timeout));
        let (toolkit, mut control) = Toolkit::new(
            task.clone(),
            self.worker.clone(),
            self.events.clone(),
            cancel.clone(),
            deadline.map(|(at, _)| at),
        );
        self.emit(|worker| LifecycleEvent::TaskStart { worker, task: task.clone() });
        let running = Running { toolkit, control: &mut control, cancel: &cancel, deadline, task };
        let end = self.drive(&delivery, work, running).await;
        let response = control.take();
        let outcome: Option<Outcome> = match (end, response) {
            (End::Returned(Err(message)), response) => {
                self.errored(task, TaskError::Panicked(message.clone()));
                // A response given before the panic stands.
                Some(response.map_or(Err(message), into_outcome))
            }
            (_, Some(response)) => Some(into_outcome(response)),
            // Cancelled (the worker stops, or the lease is lost), the handler gave up: hand back.
            (End::Returned(Ok(())), None) if cancel.is_cancelled() => None,
            (End::Returned(Ok(())), None) => {
                self.errored(task, TaskError::NoResponse);
                Some(Ok(Err(Violation::execution(TaskError::NoResponse.to_string()))))
            }
            (End::Deadline(timeout), None) => {
                let error = TaskError::DeadlineExceeded(timeout);
                let violation = Violation::execution(error.to_string());
                self.errored(task, error);
                Some(Ok(Err(violation)))
            }
            (End::Aborted, None) => None,
        };
        let settled = match outcome {
            Some(outcome) => self.dispatcher.settle(delivery, outcome, &self.publisher).await,
            None => {
                self.errored(task, TaskError::HandedBack);
                self.dispatcher.hand_back(delivery).await
            }
        };
        self.report(task, settled);
    }

    /// Runs the handler until it returns, panics, passes its deadline or is aborted, answering
    /// manual heartbeats and extending the delivery at the configured interval meanwhile.
    async fn drive<D: Delivery>(&self, delivery: &D, work: Work<'_>, running: Running<'_>) -> End {
        let Running { toolkit, control, cancel, deadline, task } = running;
        let event = delivery.event();
        let started = match work {
            Work::Task(handler) => catch(|| handler.handle_dyn(event, toolkit)),
            Work::Event(handler) => catch(|| handler.execute_dyn(event)).map(|execution| {
                let run: BoxFuture<'_> = Box::pin(async move {
                    // A second response is impossible here: this is the only one.
                    let _ = toolkit.respond(execution.await);
                });
                run
            }),
        };
        let mut work = match started {
            // The handlers apply the runtime's event size limit to what they emit.
            Ok(future) => {
                CatchPanic(Box::pin(crate::event::under_limit(self.dispatcher.max_event_bytes(), future)))
            }
            Err(message) => return End::Returned(Err(message)),
        };
        let expiry = tokio::time::sleep_until(deadline.map_or_else(far_future, |(at, _)| at));
        tokio::pin!(expiry);
        let every =
            self.heartbeat.map_or(Duration::from_secs(3600), |h| h.every.max(Duration::from_millis(1)));
        let mut ticks = tokio::time::interval_at(Instant::now() + every, every);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                biased;
                out = &mut work => return End::Returned(out),
                () = self.abort.cancelled() => return End::Aborted,
                () = &mut expiry, if deadline.is_some() => {
                    return End::Deadline(deadline.map_or(Duration::ZERO, |(_, timeout)| timeout));
                }
                Some(reply) = control.heartbeats.recv() => {
                    let result = self.extend(delivery, cancel, task).await;
                    let _ = reply.send(result);
                }
                // Automatic heartbeats stop once the handler has responded.
                _ = ticks.tick(), if self.heartbeat.is_some() => {
                    if !control.responded() {
                        let _ = self.extend(delivery, cancel, task).await;
                    }
                }
            }
        }
    }

    /// Extends the delivery: `task:heartbeat`, or on failure `task:errored` and the task's
    /// cancellation token fires (the lease may be lost).
    async fn extend<D: Delivery>(
        &self,
        delivery: &D,
        cancel: &CancellationToken,
        task: &TaskRef,
    ) -> Result<(), ToolkitError> {
        let by = self.heartbeat.unwrap_or_default().extend_by;
        match delivery.extend(by).await {
            Ok(()) => {
                self.emit(|worker| LifecycleEvent::TaskHeartbeat { worker, task: task.clone() });
                Ok(())
            }
            Err(error) => {
                let message = error.to_string();
                self.errored(task, TaskError::HeartbeatFailed(message.clone()));
                cancel.cancel();
                Err(ToolkitError::Heartbeat(message))
            }
        }
    }

    /// The `task:*` event of a settlement.
    fn report(&self, task: &TaskRef, settled: Settled) {
        let task = task.clone();
        match settled {
            Settled::Acked => self.emit(|worker| LifecycleEvent::TaskSuccess { worker, task }),
            Settled::Retried(delay) => self.emit(|worker| LifecycleEvent::TaskFailure {
                worker,
                task,
                settlement: FailureSettlement::Retried(delay),
            }),
            Settled::DeadLettered => self.emit(|worker| LifecycleEvent::TaskFailure {
                worker,
                task,
                settlement: FailureSettlement::DeadLettered,
            }),
            // Reported as `task:errored` (HandedBack) before the nack.
            Settled::HandedBack => {}
            Settled::Failed { settlement, error } => {
                self.errored(&task, TaskError::SettleFailed { settlement, error });
            }
        }
    }
}

/// A task while its handler runs.
struct Running<'a> {
    toolkit: Toolkit,
    control: &'a mut Control,
    cancel: &'a CancellationToken,
    /// When the handler is stopped, and the timeout it came from.
    deadline: Option<(Instant, Duration)>,
    task: &'a TaskRef,
}

/// The handler a delivery runs.
enum Work<'a> {
    Task(&'a dyn DynTaskHandler),
    Event(&'a dyn DynEventHandler),
}

type BoxFuture<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>>;

fn into_outcome(response: Response) -> Outcome {
    match response {
        Response::Success(produced) => Ok(Ok(produced)),
        Response::Failure(violation) => Ok(Err(violation)),
    }
}

/// A deadline that never comes (about 30 years away).
fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86_400 * 365 * 30)
}
