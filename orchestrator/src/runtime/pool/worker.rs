//! One worker: subscribes, polls only when a slot is free, runs each delivery as a task, and
//! stops in two phases.

use std::sync::{Arc, OnceLock};

use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::config::PoolConfig;
use super::events::{ExitReason, LifecycleEvent, PollError, TaskRef, WorkerId};
use super::task::TaskContext;
use crate::transport::{Delivery, Subscription, Transport, TransportError};

/// Where a worker stands, published on its own [`watch`] channel: starting and stopping wait on
/// *this* worker's state, never on another worker's events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum WorkerState {
    /// Spawned, subscribing.
    Starting,
    /// Polling and running tasks.
    Running,
    /// No longer claiming; draining its tasks.
    Stopping,
    /// Ended (its exit reason is in `worker:stopped`).
    Stopped,
}

/// The manager's handle on a worker.
pub(crate) struct WorkerHandle {
    pub(crate) id: WorkerId,
    pub(crate) stop: CancellationToken,
    pub(crate) started: Started,
}

/// How a worker's start went: its state, and why it stopped if it never ran.
#[derive(Clone)]
pub(crate) struct Started {
    state: watch::Receiver<WorkerState>,
    unsubscribed: Arc<OnceLock<ExitReason>>,
}

impl Started {
    /// Waits until the worker runs, or has stopped; `Err` with its exit reason if it stopped
    /// without ever running (its subscription failed).
    pub(crate) async fn ran(mut self) -> Result<(), ExitReason> {
        let _ = self.state.wait_for(|s| *s >= WorkerState::Running).await;
        match self.unsubscribed.get() {
            Some(reason) => Err(reason.clone()),
            None => Ok(()),
        }
    }
}

/// A worker's loop.
pub(crate) struct Worker<T, P> {
    transport: Arc<T>,
    config: Arc<PoolConfig>,
    ctx: Arc<TaskContext<P>>,
    state: watch::Sender<WorkerState>,
    unsubscribed: Arc<OnceLock<ExitReason>>,
}

impl<T: Transport, P: Clone + Send + Sync + 'static> Worker<T, P> {
    /// A worker that will run tasks with `ctx` (which holds its id and stop token); emits
    /// `worker:starting`.
    pub(crate) fn new(
        transport: Arc<T>,
        config: Arc<PoolConfig>,
        ctx: TaskContext<P>,
    ) -> (Self, WorkerHandle) {
        let (state, receiver) = watch::channel(WorkerState::Starting);
        let unsubscribed = Arc::new(OnceLock::new());
        let started = Started { state: receiver, unsubscribed: Arc::clone(&unsubscribed) };
        let handle = WorkerHandle { id: ctx.worker.clone(), stop: ctx.stop.clone(), started };
        ctx.events.emit(LifecycleEvent::WorkerStarting { worker: ctx.worker.clone() });
        (Self { transport, config, ctx: Arc::new(ctx), state, unsubscribed }, handle)
    }

    fn emit(&self, event: impl FnOnce(WorkerId) -> LifecycleEvent) {
        self.ctx.events.emit(event(self.ctx.worker.clone()));
    }

    fn stop(&self) -> &CancellationToken {
        &self.ctx.stop
    }

    /// Runs until stopped, drained or failed; on every exit emits `worker:stopped` with the
    /// reason, which it returns.
    pub(crate) async fn run(self) -> ExitReason {
        let reason = self.run_loop().await;
        self.state.send_replace(WorkerState::Stopped);
        self.emit(|worker| LifecycleEvent::WorkerStopped { worker, reason: reason.clone() });
        reason
    }

    async fn run_loop(&self) -> ExitReason {
        let mut tasks = JoinSet::new();
        // The subscription lives until the tasks are drained.
        let mut subscription = None;
        let reason = match self.subscribe().await {
            Ok(sub) => {
                self.state.send_replace(WorkerState::Running);
                self.emit(|worker| LifecycleEvent::WorkerRunning { worker });
                self.poll(subscription.insert(sub), &mut tasks).await
            }
            Err(reason) => {
                // Before the state moves on: a start waiting on it sees why.
                let _ = self.unsubscribed.set(reason.clone());
                reason
            }
        };
        if reason.is_failure() {
            self.emit(|worker| LifecycleEvent::WorkerError { worker, error: reason.clone() });
        }
        self.state.send_replace(WorkerState::Stopping);
        self.emit(|worker| LifecycleEvent::WorkerStopping { worker });
        let drained = reason == ExitReason::Drained;
        if !drained {
            // The handlers' cancellation tokens fire.
            self.stop().cancel();
        }
        self.drain(tasks, drained).await;
        drop(subscription);
        reason
    }

    /// Subscribes, retrying transient failures with backoff (each counts as a failed poll).
    async fn subscribe(&self) -> Result<T::Subscription, ExitReason> {
        let mut failures = 0;
        loop {
            let subscribed = tokio::select! {
                biased;
                () = self.stop().cancelled() => return Err(ExitReason::Stopped),
                subscribed = self.transport.subscribe(self.config.topics.clone()) => subscribed,
            };
            match subscribed {
                Ok(subscription) => return Ok(subscription),
                Err(error) => {
                    failures += 1;
                    if let Some(reason) = self.failed(error, failures).await {
                        return Err(reason);
                    }
                }
            }
        }
    }

    /// Reports a failed poll (`polling:error`); returns why the worker stops (a fatal error, the
    /// threshold reached, or a stop during the backoff), else waits out the backoff.
    async fn failed(&self, error: TransportError, failures: u32) -> Option<ExitReason> {
        let error = PollError { retryable: error.is_transient(), message: error.to_string() };
        self.emit(|worker| LifecycleEvent::PollingError { worker, error: error.clone(), attempts: failures });
        if !error.retryable {
            return Some(ExitReason::FatalPoll(error));
        }
        if failures >= self.config.polling.max_consecutive_failures.max(1) {
            return Some(ExitReason::PollFailures { failures, last: error });
        }
        let delay = self.config.polling.backoff.delay(failures);
        tokio::select! {
            biased;
            () = self.stop().cancelled() => Some(ExitReason::Stopped),
            () = tokio::time::sleep(delay) => None,
        }
    }

    /// The poll loop: waits for a free slot, polls, runs what it gets as a task holding that
    /// slot. On stop, a poll in flight may still return for [`PoolConfig::poll_grace`]: what it
    /// returns is handed back (never stranded), then the poll is abandoned (cancel-safe).
    async fn poll(&self, subscription: &mut T::Subscription, tasks: &mut JoinSet<()>) -> ExitReason {
        let slots = Arc::new(Semaphore::new(self.config.slots.max(1)));
        let mut failures = 0;
        loop {
            while let Some(joined) = tasks.try_join_next() {
                reaped(joined);
            }
            let permit = tokio::select! {
                biased;
                () = self.stop().cancelled() => return ExitReason::Stopped,
                permit = Arc::clone(&slots).acquire_owned() => match permit {
                    Ok(permit) => permit,
                    Err(_) => return ExitReason::Stopped,
                },
            };
            self.emit(|worker| LifecycleEvent::PollingStarting { worker });
            let polled = {
                let next = subscription.try_next();
                tokio::pin!(next);
                tokio::select! {
                    biased;
                    () = self.stop().cancelled() => {
                        self.last_poll(&mut next).await;
                        return ExitReason::Stopped;
                    }
                    polled = &mut next => polled,
                }
            };
            match polled {
                Ok(Some(delivery)) => {
                    failures = 0;
                    let task = TaskRef::of(delivery.event(), delivery.attempt());
                    self.emit(|worker| LifecycleEvent::PollingSuccess { worker, task: Some(task) });
                    let ctx = Arc::clone(&self.ctx);
                    tasks.spawn(async move {
                        // The slot is free again once the task is settled.
                        let _permit = permit;
                        ctx.run(delivery).await;
                    });
                }
                Ok(None) => {
                    self.emit(|worker| LifecycleEvent::PollingSuccess { worker, task: None });
                    return ExitReason::Drained;
                }
                Err(error) => {
                    drop(permit);
                    failures += 1;
                    if let Some(reason) = self.failed(error, failures).await {
                        return reason;
                    }
                }
            }
        }
    }

    /// Phase one of a stop: lets the poll in flight return for the poll grace, and hands back
    /// what it got.
    async fn last_poll<F, D>(&self, next: &mut std::pin::Pin<&mut F>)
    where
        F: Future<Output = Result<Option<D>, TransportError>>,
        D: Delivery,
    {
        if let Ok(Ok(Some(delivery))) = tokio::time::timeout(self.config.poll_grace, next.as_mut()).await {
            tracing::debug!(
                target: "orchestrator::pool",
                worker = %self.ctx.worker,
                event_id = delivery.event().id(),
                "claimed while stopping: handed back"
            );
            self.ctx.dispatcher.hand_back(delivery).await;
        }
    }

    /// Phase two: waits for the running tasks, up to the grace period unless the transport is
    /// drained (then they finish); those still running after it are aborted, and hand their
    /// deliveries back.
    async fn drain(&self, mut tasks: JoinSet<()>, wait_all: bool) {
        if !wait_all && !tasks.is_empty() {
            let deadline = Instant::now() + self.config.grace;
            loop {
                tokio::select! {
                    biased;
                    joined = tasks.join_next() => match joined {
                        Some(joined) => reaped(joined),
                        None => return,
                    },
                    () = tokio::time::sleep_until(deadline) => break,
                }
            }
            self.ctx.abort.cancel();
        }
        while let Some(joined) = tasks.join_next().await {
            reaped(joined);
        }
    }
}

/// Logs a task whose runner itself failed (handlers' panics are contained before this).
fn reaped(joined: Result<(), tokio::task::JoinError>) {
    if let Err(error) = joined {
        tracing::error!(target: "orchestrator::pool", %error, "a task runner failed");
    }
}
