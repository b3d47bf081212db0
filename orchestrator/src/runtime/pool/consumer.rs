//! [`Consumer`]: the lifecycle of a process's pools: declared with a [`ConsumerBuilder`],
//! started together, observed through one stream of lifecycle events, stopped together.

use std::sync::Arc;

use tokio::sync::broadcast;

use super::config::PoolConfig;
use super::error::PoolError;
use super::events::{Events, LifecycleEvent};
use super::manager::{Pool, Shared};
use super::task::PoolHandler;
use super::toolkit::TaskHandler;
use crate::runtime::Dispatcher;
use crate::transport::Transport;

/// Declares a [`Consumer`]: its transport, the dispatcher that settles its deliveries (and,
/// for routed pools, holds their handlers), and its pools. Nothing runs before
/// [`ConsumerBuilder::start`].
#[must_use]
pub struct ConsumerBuilder<T, P> {
    transport: Arc<T>,
    dispatcher: Arc<Dispatcher<P>>,
    publisher: P,
    events: Events,
    pools: Vec<(PoolConfig, PoolHandler)>,
}

impl<T, P> std::fmt::Debug for ConsumerBuilder<T, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsumerBuilder")
            .field("pools", &self.pools.iter().map(|(c, _)| &c.name).collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl<T: Transport, P: Clone + Send + Sync + 'static> ConsumerBuilder<T, P> {
    /// A consumer on `transport` whose deliveries are settled by `dispatcher` (its retry policy,
    /// dead letters and domained-events outlet; `publisher` is what its domained-events callback
    /// replies with).
    pub fn new(transport: Arc<T>, dispatcher: Arc<Dispatcher<P>>, publisher: P) -> Self {
        Self { transport, dispatcher, publisher, events: Events::default(), pools: Vec::new() }
    }

    /// Keeps up to `capacity` lifecycle events for the slowest subscriber (default
    /// [`DEFAULT_EVENTS_CAPACITY`](super::DEFAULT_EVENTS_CAPACITY)). Subscribers taken
    /// before this call stay on the previous channel.
    pub fn events_capacity(mut self, capacity: usize) -> Self {
        self.events = Events::new(capacity);
        self
    }

    /// Receives the lifecycle events of every worker from now on (`worker:starting`
    /// included).
    pub fn subscribe(&self) -> broadcast::Receiver<LifecycleEvent> {
        self.events.subscribe()
    }

    /// Adds a pool running `handler` on every delivery of its topics.
    pub fn pool(mut self, config: PoolConfig, handler: impl TaskHandler) -> Self {
        self.pools.push((config, PoolHandler::Task(Arc::new(handler))));
        self
    }

    /// Adds a pool running the dispatcher's event handlers, each delivery routed by its `to`
    /// (as [`Dispatcher::dispatch`] does: no handler, it is collected by a waiting caller or
    /// dead-lettered).
    pub fn routed_pool(mut self, config: PoolConfig) -> Self {
        self.pools.push((config, PoolHandler::Routed));
        self
    }

    /// Starts every pool with its configured number of workers, and returns once each worker
    /// is running. Fails if two pools share a name, outside a Tokio runtime, or when a worker
    /// could not subscribe ([`PoolError::NotStarted`]: a fatal error, or
    /// [`PollingConfig::max_consecutive_failures`](super::PollingConfig::max_consecutive_failures)
    /// retryable ones in a row); the pools started are then stopped.
    pub async fn start(self) -> Result<Consumer, PoolError> {
        tokio::runtime::Handle::try_current().map_err(|_| PoolError::NoRuntime)?;
        for (i, (config, _)) in self.pools.iter().enumerate() {
            if self.pools[..i].iter().any(|(other, _)| other.name == config.name) {
                return Err(PoolError::DuplicatePool { name: config.name.to_string() });
            }
        }
        let mut pools = Vec::with_capacity(self.pools.len());
        let mut sizes = Vec::with_capacity(self.pools.len());
        for (config, handler) in self.pools {
            sizes.push(config.workers);
            let shared = Shared {
                transport: Arc::clone(&self.transport),
                dispatcher: Arc::clone(&self.dispatcher),
                publisher: self.publisher.clone(),
                handler,
                events: self.events.clone(),
            };
            pools.push(Pool::spawn(config, shared));
        }
        let consumer = Consumer { pools, events: self.events };
        for (pool, size) in consumer.pools.iter().zip(sizes) {
            if let Err(error) = pool.resize(size).await {
                consumer.stop().await;
                return Err(error);
            }
        }
        Ok(consumer)
    }
}

impl<T: Transport> ConsumerBuilder<T, ()> {
    /// A consumer on `transport` whose deliveries are settled by a dispatcher with the defaults
    /// ([`Dispatcher::new`] without handlers: add pools with [`ConsumerBuilder::pool`]).
    pub fn on(transport: Arc<T>) -> Self {
        let dispatcher =
            Dispatcher::new(Vec::new()).unwrap_or_else(|_| unreachable!("no handler, no duplicate"));
        Self::new(transport, Arc::new(dispatcher), ())
    }
}

/// The running pools of a process (see the [module documentation](super)). Dropping it does
/// not stop them: they run on until the transport is closed and drained.
#[derive(Debug)]
pub struct Consumer {
    pools: Vec<Pool>,
    events: Events,
}

impl Consumer {
    /// The pool named `name`.
    pub fn pool(&self, name: &str) -> Option<&Pool> {
        self.pools.iter().find(|p| p.name() == name)
    }

    /// Every pool, in the order they were added.
    pub fn pools(&self) -> &[Pool] {
        &self.pools
    }

    /// Receives the lifecycle events of every worker from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<LifecycleEvent> {
        self.events.subscribe()
    }

    /// Stops every pool at once, gracefully (see [`Pool::stop`]), and returns once every
    /// worker has stopped. Idempotent.
    pub async fn stop(&self) {
        for pool in &self.pools {
            pool.begin_stop();
        }
        self.join().await;
    }

    /// Waits until every pool has ended (stopped, or the transport closed and drained).
    pub async fn join(&self) {
        for pool in &self.pools {
            pool.join().await;
        }
    }
}
