//! [`Pool`]: the pool manager, one task that owns N workers of one topic, restarts failed ones
//! after an interval and applies resizes one at a time (no flag that could stay set).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::{Id, JoinSet};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::config::PoolConfig;
use super::error::PoolError;
use super::events::{Events, ExitReason, LifecycleEvent, WorkerId};
use super::task::{PoolHandler, TaskContext};
use super::worker::{Started, Worker, WorkerHandle};
use crate::runtime::Dispatcher;
use crate::transport::Transport;

/// Where a pool stands, as its manager last published it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolState {
    /// How many workers it should run.
    pub desired: usize,
    /// Workers running or starting (not asked to stop).
    pub workers: usize,
    /// Workers asked to stop (the pool shrank or stops), still draining their tasks.
    pub retiring: usize,
    /// Failed workers waiting for their restart interval before they are replaced.
    pub awaiting_restart: usize,
    /// Workers started to replace failed ones so far.
    pub restarts: u64,
    /// The transport is closed and drained: no worker is started any more.
    pub drained: bool,
    /// The manager has ended: every worker has stopped.
    pub stopped: bool,
}

enum Command {
    /// Sets the desired size; replies with the handles' states of the workers started.
    Resize(usize, oneshot::Sender<Vec<(WorkerId, Started)>>),
    /// Stops every worker, then the manager.
    Stop,
}

/// A running pool (see the [module documentation](super)): a handle on its manager. Cheap to
/// clone.
#[derive(Clone)]
pub struct Pool {
    name: Arc<str>,
    commands: mpsc::UnboundedSender<Command>,
    state: watch::Receiver<PoolState>,
}

impl fmt::Debug for Pool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool").field("name", &self.name).field("state", &*self.state.borrow()).finish()
    }
}

/// What every worker of a pool shares.
pub(crate) struct Shared<T, P> {
    pub(crate) transport: Arc<T>,
    pub(crate) dispatcher: Arc<Dispatcher<P>>,
    pub(crate) publisher: P,
    pub(crate) handler: PoolHandler,
    pub(crate) events: Events,
}

impl Pool {
    /// Spawns the manager of a pool with no worker yet; [`Pool::resize`] starts them.
    pub(crate) fn spawn<T: Transport, P: Clone + Send + Sync + 'static>(
        config: PoolConfig,
        shared: Shared<T, P>,
    ) -> Self {
        let name = Arc::clone(&config.name);
        let (commands, receiver) = mpsc::unbounded_channel();
        let (state, state_receiver) = watch::channel(PoolState::default());
        let manager = Manager {
            config: Arc::new(config),
            shared,
            commands: receiver,
            state,
            desired: 0,
            next_id: 0,
            workers: BTreeMap::new(),
            retiring: BTreeMap::new(),
            tasks: HashMap::new(),
            exits: JoinSet::new(),
            awaiting: VecDeque::new(),
            restarts: 0,
            drained: false,
            stopping: false,
        };
        tokio::spawn(manager.run());
        Self { name, commands, state: state_receiver }
    }

    /// The pool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where the pool stands now.
    pub fn state(&self) -> PoolState {
        *self.state.borrow()
    }

    /// How many workers run now (started and not asked to stop).
    pub fn workers(&self) -> usize {
        self.state.borrow().workers
    }

    /// Sets how many workers run, while the pool runs. Growing starts workers and returns once
    /// each is running; shrinking asks the newest workers to stop and returns at once (they
    /// drain their tasks: none is lost). Fails once the pool is stopping or stopped, and with
    /// [`PoolError::NotStarted`] when a new worker could not subscribe (the pool replaces it
    /// after its restart interval, as any failed worker).
    pub async fn resize(&self, workers: usize) -> Result<(), PoolError> {
        let stopped = || PoolError::Stopped { pool: self.name.to_string() };
        let (reply, started) = oneshot::channel();
        self.commands.send(Command::Resize(workers, reply)).map_err(|_| stopped())?;
        let started = started.await.map_err(|_| stopped())?;
        let mut failed = None;
        for (worker, started) in started {
            // This worker's own state, not any worker's event.
            if let Err(reason) = started.ran().await {
                failed.get_or_insert(PoolError::NotStarted { worker: worker.to_string(), reason });
            }
        }
        failed.map_or(Ok(()), Err)
    }

    /// Stops the pool gracefully: every worker stops claiming, hands back what a poll in flight
    /// returns, lets its tasks finish for the grace period, then cancels the rest and hands
    /// their deliveries back. Returns once every worker has stopped. Idempotent.
    pub async fn stop(&self) {
        self.begin_stop();
        self.join().await;
    }

    /// Asks the manager to stop, without waiting.
    pub(crate) fn begin_stop(&self) {
        let _ = self.commands.send(Command::Stop);
    }

    /// Waits until the pool has ended: stopped, or every worker ended because the transport is
    /// closed and drained.
    pub async fn join(&self) {
        let mut state = self.state.clone();
        let _ = state.wait_for(|s| s.stopped).await;
    }
}

struct Manager<T, P> {
    config: Arc<PoolConfig>,
    shared: Shared<T, P>,
    commands: mpsc::UnboundedReceiver<Command>,
    state: watch::Sender<PoolState>,
    desired: usize,
    next_id: u64,
    /// Running or starting workers, by number (the newest are retired first).
    workers: BTreeMap<u64, WorkerHandle>,
    /// Workers asked to stop, still draining.
    retiring: BTreeMap<u64, WorkerHandle>,
    /// The worker of each spawned task.
    tasks: HashMap<Id, u64>,
    exits: JoinSet<ExitReason>,
    /// When each failed worker may be replaced.
    awaiting: VecDeque<Instant>,
    restarts: u64,
    drained: bool,
    stopping: bool,
}

impl<T: Transport, P: Clone + Send + Sync + 'static> Manager<T, P> {
    async fn run(mut self) {
        let mut commands_open = true;
        loop {
            let restart_due = self.awaiting.front().copied();
            tokio::select! {
                command = self.commands.recv(), if commands_open => match command {
                    Some(Command::Resize(workers, reply)) => {
                        let started = if self.stopping {
                            Vec::new()
                        } else {
                            self.desired = workers;
                            self.reconcile()
                        };
                        // Published before the reply: `resize` returns with the new count.
                        self.publish(false);
                        let _ = reply.send(started);
                    }
                    Some(Command::Stop) => self.begin_stop(),
                    // Every handle is gone: the pool runs on, detached, until the transport is
                    // closed and drained (as a dropped `JoinHandle` leaves its task running).
                    None => commands_open = false,
                },
                Some(joined) = self.exits.join_next_with_id(), if !self.exits.is_empty() => {
                    self.exited(joined);
                    self.reconcile();
                }
                () = tokio::time::sleep_until(restart_due.unwrap_or_else(Instant::now)), if restart_due.is_some() => {
                    self.awaiting.pop_front();
                    let before = self.next_id;
                    self.reconcile();
                    self.restarts += self.next_id - before;
                }
            }
            self.publish(false);
            if (self.stopping || self.drained) && self.workers.is_empty() && self.retiring.is_empty() {
                break;
            }
        }
        self.publish(true);
    }

    fn publish(&self, stopped: bool) {
        self.state.send_replace(PoolState {
            desired: self.desired,
            workers: self.workers.len(),
            retiring: self.retiring.len(),
            awaiting_restart: self.awaiting.len(),
            restarts: self.restarts,
            drained: self.drained,
            stopped,
        });
    }

    fn begin_stop(&mut self) {
        self.stopping = true;
        self.desired = 0;
        self.awaiting.clear();
        // Every worker at once: each drains in parallel with the others.
        while let Some((n, worker)) = self.workers.pop_first() {
            worker.stop.cancel();
            self.retiring.insert(n, worker);
        }
    }

    /// Brings the number of workers to the desired size: retires the newest surplus workers,
    /// forgets restarts no longer needed, starts workers for the rest of the gap (failed ones
    /// are replaced once their restart interval has passed). Returns the started workers'
    /// states.
    fn reconcile(&mut self) -> Vec<(WorkerId, Started)> {
        if self.stopping || self.drained {
            return Vec::new();
        }
        while self.workers.len() > self.desired {
            if let Some((n, worker)) = self.workers.pop_last() {
                worker.stop.cancel();
                self.retiring.insert(n, worker);
            }
        }
        while self.workers.len() + self.awaiting.len() > self.desired {
            self.awaiting.pop_back();
        }
        let mut started = Vec::new();
        while self.workers.len() + self.awaiting.len() < self.desired {
            started.push(self.start_worker());
        }
        started
    }

    fn start_worker(&mut self) -> (WorkerId, Started) {
        self.next_id += 1;
        let n = self.next_id;
        let id = WorkerId { pool: Arc::clone(&self.config.name), n };
        let ctx = TaskContext {
            dispatcher: Arc::clone(&self.shared.dispatcher),
            publisher: self.shared.publisher.clone(),
            handler: self.shared.handler.clone(),
            events: self.shared.events.clone(),
            worker: id,
            heartbeat: self.config.heartbeat,
            task_timeout: self.config.task_timeout,
            stop: CancellationToken::new(),
            abort: CancellationToken::new(),
        };
        let (worker, handle) = Worker::new(Arc::clone(&self.shared.transport), Arc::clone(&self.config), ctx);
        let started = (handle.id.clone(), handle.started.clone());
        let task = self.exits.spawn(worker.run());
        self.tasks.insert(task.id(), n);
        self.workers.insert(n, handle);
        started
    }

    /// A worker ended: forgets it; a failed one is replaced after the restart interval; one
    /// that found the transport drained means no more workers are needed.
    fn exited(&mut self, joined: Result<(Id, ExitReason), tokio::task::JoinError>) {
        let (task, reason) = match joined {
            Ok((task, reason)) => (task, reason),
            Err(error) => {
                let task = error.id();
                let reason = if error.is_panic() {
                    ExitReason::Panicked(crate::util::panic::message(error.into_panic()))
                } else {
                    ExitReason::Stopped
                };
                (task, reason)
            }
        };
        let Some(n) = self.tasks.remove(&task) else { return };
        let handle = self.workers.remove(&n).or_else(|| self.retiring.remove(&n));
        // The worker's own loop panicked: it could not report its end, so the manager does.
        if let (ExitReason::Panicked(_), Some(handle)) = (&reason, &handle) {
            let events = &self.shared.events;
            events.emit(LifecycleEvent::WorkerError { worker: handle.id.clone(), error: reason.clone() });
            events.emit(LifecycleEvent::WorkerStopped { worker: handle.id.clone(), reason: reason.clone() });
        }
        match reason {
            ExitReason::Drained => self.drained = true,
            reason if reason.is_failure() && !self.stopping => {
                self.awaiting.push_back(Instant::now() + self.config.restart_interval);
            }
            _ => {}
        }
    }
}
