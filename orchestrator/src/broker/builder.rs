//! [`BrokerBuilder`]: handlers and settings of a [`Broker`].

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt;
use std::future::Future;
use std::num::NonZeroUsize;
use std::sync::Arc;

use super::outlets::{DomainedFn, ErrorFn, Outlets};
use super::shared::Shared;
use super::{Broker, BrokerError, BrokerHandle, DeadLetter, DomainedEvent, worker};
use crate::handler::{DynEventHandler, EventHandler};

/// The default queue capacity (Arvo's `createSimpleEventBroker` uses the same).
pub const DEFAULT_CAPACITY: usize = 1000;

/// Configures and builds a [`Broker`]. Defaults: one worker per available CPU,
/// [`DEFAULT_CAPACITY`], no log, dead letters and domained events kept in lists.
#[must_use]
pub struct BrokerBuilder {
    handlers: Vec<Arc<dyn DynEventHandler>>,
    workers: usize,
    capacity: usize,
    log: bool,
    on_error: Option<ErrorFn>,
    on_domained: Option<DomainedFn>,
}

impl Default for BrokerBuilder {
    fn default() -> Self {
        Self {
            handlers: Vec::new(),
            workers: std::thread::available_parallelism().map_or(1, NonZeroUsize::get),
            capacity: DEFAULT_CAPACITY,
            log: false,
            on_error: None,
            on_domained: None,
        }
    }
}

impl BrokerBuilder {
    /// Registers a handler on its [`EventHandler::source`] topic. Two handlers on one topic make
    /// [`BrokerBuilder::build`] fail with [`BrokerError::DuplicateHandler`].
    pub fn handler(self, handler: impl EventHandler) -> Self {
        self.shared_handler(Arc::new(handler))
    }

    /// Registers a handler already held behind an `Arc` (see [`BrokerBuilder::handler`]).
    pub fn shared_handler(mut self, handler: Arc<dyn DynEventHandler>) -> Self {
        self.handlers.push(handler);
        self
    }

    /// How many events may be handled at once (each on its own subject). At least 1.
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers;
        self
    }

    /// How many events may wait for a worker (in-flight events do not count). At least 1. A
    /// produced event that finds the queue full becomes a dead letter
    /// ([`DeadLetterReason::Rejected`](super::DeadLetterReason::Rejected)), so size it for the
    /// peak fan-out.
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity;
        self
    }

    /// Records every accepted event, in acceptance order, for [`Broker::take_log`] (Arvo's
    /// `broker.events`). Off by default: the log grows until it is taken.
    pub fn log(mut self, on: bool) -> Self {
        self.log = on;
        self
    }

    /// Sends dead letters (no handler for `to`, a violation, a panic, a produced event that
    /// could not be published) to `f` instead of keeping them for
    /// [`Broker::take_dead_letters`]. `f` runs on a worker: keep it short.
    pub fn on_error(mut self, f: impl Fn(DeadLetter) + Send + Sync + 'static) -> Self {
        self.on_error = Some(Arc::new(f));
        self
    }

    /// Sends produced events that carry a domain to `f` (instead of keeping them for
    /// [`Broker::take_domained`]); they are never published. `f` gets a [`BrokerHandle`] to
    /// publish replies. The worker awaits the returned future before it releases the event's
    /// subject, so the broker is not idle (and a `resolve` keeps waiting) until it completes.
    pub fn on_domained<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(DomainedEvent, BrokerHandle) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.on_domained = Some(Arc::new(move |domained, handle| Box::pin(f(domained, handle))));
        self
    }

    /// Checks the settings and starts the workers on the current tokio runtime.
    pub fn build(self) -> Result<Broker, BrokerError> {
        if self.workers == 0 {
            return Err(BrokerError::InvalidConfig { message: "workers must be at least 1" });
        }
        if self.capacity == 0 {
            return Err(BrokerError::InvalidConfig { message: "capacity must be at least 1" });
        }
        let mut routes = HashMap::with_capacity(self.handlers.len());
        for handler in self.handlers {
            match routes.entry(topic_of(&*handler).to_owned()) {
                Entry::Occupied(entry) => {
                    return Err(BrokerError::DuplicateHandler { topic: entry.key().clone() });
                }
                Entry::Vacant(entry) => {
                    entry.insert(handler);
                }
            }
        }
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| BrokerError::NoRuntime)?;
        let outlets = Outlets::new(self.on_error, self.on_domained);
        let shared = Arc::new(Shared::new(routes, self.capacity, self.log, outlets));
        let workers = (0..self.workers).map(|_| runtime.spawn(worker::run(Arc::clone(&shared)))).collect();
        Ok(Broker::start(shared, workers))
    }
}

/// A handler's topic, called on the trait object itself (not on the `Arc`, which is a handler
/// too).
fn topic_of(handler: &dyn DynEventHandler) -> &str {
    handler.source_dyn()
}

impl fmt::Debug for BrokerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BrokerBuilder")
            .field("topics", &self.handlers.iter().map(|h| topic_of(&**h)).collect::<Vec<_>>())
            .field("workers", &self.workers)
            .field("capacity", &self.capacity)
            .field("log", &self.log)
            .field("on_error", &self.on_error.is_some())
            .field("on_domained", &self.on_domained.is_some())
            .finish()
    }
}
