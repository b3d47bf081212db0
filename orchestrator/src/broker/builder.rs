//! [`BrokerBuilder`]: handlers and settings of a [`Broker`].

use std::fmt;
use std::future::Future;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Duration;

use super::handle::Shared;
use super::{Broker, BrokerError, BrokerHandle, DeadLetter, DomainedEvent};
use crate::handler::{DynEventHandler, EventHandler};
use crate::runtime::{
    DEFAULT_DEAD_LETTER_CAPACITY, DeadLetters, Dispatcher, DispatcherError, DomainedFn, ErrorFn, RetryPolicy,
};
use crate::transport::{DEFAULT_CAPACITY, InProcessConfig, InProcessTransport, Topics};

/// Configures and builds a [`Broker`]. Defaults: one worker per available CPU,
/// [`DEFAULT_CAPACITY`], publishers wait as long as needed, [`RetryPolicy::default`], no log,
/// dead letters kept (the last [`DEFAULT_DEAD_LETTER_CAPACITY`]) and domained events kept.
#[must_use]
pub struct BrokerBuilder {
    handlers: Vec<Arc<dyn DynEventHandler>>,
    workers: usize,
    capacity: usize,
    publish_timeout: Option<Duration>,
    retry: RetryPolicy,
    dead_letter_capacity: usize,
    log: bool,
    on_error: Option<ErrorFn>,
    on_domained: Option<DomainedFn<BrokerHandle>>,
    max_event_bytes: usize,
}

impl Default for BrokerBuilder {
    fn default() -> Self {
        Self {
            handlers: Vec::new(),
            workers: std::thread::available_parallelism().map_or(1, NonZeroUsize::get),
            capacity: DEFAULT_CAPACITY,
            publish_timeout: None,
            retry: RetryPolicy::default(),
            dead_letter_capacity: DEFAULT_DEAD_LETTER_CAPACITY,
            log: false,
            on_error: None,
            on_domained: None,
            max_event_bytes: crate::event::DEFAULT_MAX_EVENT_BYTES,
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

    /// How many events may wait for a worker before publishers from outside wait (in-flight
    /// events do not count). At least 1. What handlers produce is always accepted, even over
    /// capacity, so the queue exceeds it only by what in-flight work produces.
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity;
        self
    }

    /// The largest event the broker lets in, once serialized (default
    /// [`DEFAULT_MAX_EVENT_BYTES`](crate::event::DEFAULT_MAX_EVENT_BYTES), the parsers' limit):
    /// a larger event is refused at publish with [`BrokerError::EventTooLarge`], and a handler
    /// that produces one is a dead letter
    /// ([`DeadLetterReason::EventTooLarge`](crate::runtime::DeadLetterReason::EventTooLarge)),
    /// none of its products published.
    pub fn max_event_bytes(mut self, max: usize) -> Self {
        self.max_event_bytes = max;
        self
    }

    /// How long [`Broker::publish_wait`] (and [`Broker::resolve`]) wait while the queue is
    /// full before failing with [`BrokerError::QueueFull`]; `None` (the default) waits as long
    /// as needed.
    pub fn publish_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.publish_timeout = timeout;
        self
    }

    /// How transient handler failures (transaction violations: lock denied, store failing) are
    /// retried before they become dead letters.
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// How many dead letters are kept for [`Broker::take_dead_letters`] when no
    /// [`on_error`](BrokerBuilder::on_error) callback takes them; the oldest are dropped first
    /// (counted in [`BrokerStats::dead_letters_dropped`](super::BrokerStats)).
    pub fn dead_letter_capacity(mut self, capacity: usize) -> Self {
        self.dead_letter_capacity = capacity;
        self
    }

    /// Records every accepted event, in acceptance order, for [`Broker::take_log`] (Arvo's
    /// `broker.events`). Off by default: the log grows until it is taken.
    pub fn log(mut self, on: bool) -> Self {
        self.log = on;
        self
    }

    /// Sends dead letters (no handler for `to`, a permanent violation, retries exhausted, a
    /// panic) to `f` instead of keeping them for [`Broker::take_dead_letters`]. They are logged
    /// with `tracing::warn!` either way. `f` runs on a worker: keep it short.
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
        let mut dispatcher = Dispatcher::new(self.handlers)
            .map_err(|DispatcherError::DuplicateHandler { topic }| BrokerError::DuplicateHandler { topic })?
            .with_retry(self.retry)
            .with_max_event_bytes(self.max_event_bytes)
            .with_dead_letters(match self.on_error {
                Some(on_error) => DeadLetters::callback(on_error),
                None => DeadLetters::kept(self.dead_letter_capacity),
            });
        if let Some(on_domained) = self.on_domained {
            dispatcher = dispatcher.with_on_domained(on_domained);
        }
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| BrokerError::NoRuntime)?;
        let transport = InProcessTransport::new(InProcessConfig {
            capacity: self.capacity,
            publish_timeout: self.publish_timeout,
            log: self.log,
            max_event_bytes: self.max_event_bytes,
        })
        .map_err(|_| BrokerError::InvalidConfig { message: "capacity must be at least 1" })?;
        let shared = Arc::new(Shared::new(transport, dispatcher));
        let workers = (0..self.workers)
            .map(|_| {
                let subscription = shared.transport.subscription(Topics::All);
                let handle = BrokerHandle { shared: Arc::clone(&shared) };
                runtime.spawn(async move {
                    handle.shared.dispatcher.run_worker(subscription, handle.clone()).await
                })
            })
            .collect();
        Ok(Broker::start(shared, workers))
    }
}

impl fmt::Debug for BrokerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BrokerBuilder")
            .field("topics", &self.handlers.iter().map(|h| h.source_dyn()).collect::<Vec<_>>())
            .field("workers", &self.workers)
            .field("capacity", &self.capacity)
            .field("publish_timeout", &self.publish_timeout)
            .field("retry", &self.retry)
            .field("dead_letter_capacity", &self.dead_letter_capacity)
            .field("log", &self.log)
            .field("on_error", &self.on_error.is_some())
            .field("on_domained", &self.on_domained.is_some())
            .field("max_event_bytes", &self.max_event_bytes)
            .finish()
    }
}
