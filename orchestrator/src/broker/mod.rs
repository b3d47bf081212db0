//! An in-process event broker: routes events to [`EventHandler`]s by their `to`, runs them on N
//! tokio workers with per-subject ordering, and publishes what they produce (Arvo's
//! `SimpleEventBroker`, made concurrent and without its pitfalls).
//!
//! It is the runtime's [`Dispatcher`](crate::runtime::Dispatcher) running N workers on an
//! [`InProcessTransport`], plus in-process extras
//! ([`Broker::resolve`], [`Broker::wait_idle`]).
//!
//! To run workflows, prefer a [`Node`](crate::runtime::Node): it wires the same dispatcher with
//! a store, the orchestrators and resumables over it, client topics to await completions on,
//! durable timers and (with `durable()`) the outbox, in one call, and checks that every service
//! a workflow calls has a handler. The broker is the by-hand wiring of handlers on one process.
//!
//! # Semantics
//!
//! * **Routing.** An event goes to the one handler whose [`EventHandler::source`] equals its
//!   `to`; registering two handlers on one topic is a build error.
//! * **Ordering.** Events with the same `to` and the same `subject` are handled one at a time,
//!   in publish order: an orchestrator never handles two events of one workflow at once, while
//!   the services a workflow calls in parallel, and different workflows, run in parallel on up to
//!   N workers. A worker takes the oldest queued event whose (handler, subject) lane is not busy,
//!   so one worker gives plain FIFO (Arvo drains LIFO).
//!   Nothing sleeps or polls: waiting is done with [`tokio::sync::Notify`].
//! * **Backpressure, not loss.** At most `capacity` events wait for a worker before publishers
//!   from outside wait: [`Broker::publish_wait`] waits for room (up to
//!   [`publish_timeout`](BrokerBuilder::publish_timeout), then [`BrokerError::QueueFull`]);
//!   [`Broker::publish`] never waits and fails with [`BrokerError::QueueFull`]. An event
//!   without `to` is refused with [`BrokerError::MissingTo`].
//! * **Products are never dropped.** Events a handler returns are published in order, behind
//!   the events already queued for their subjects, even over capacity (they are part of work
//!   already accepted; the queue exceeds capacity only by what in-flight work produces). Those
//!   with a `domain` are not published: they go to the
//!   [`on_domained`](BrokerBuilder::on_domained) callback, which may publish replies through
//!   its [`BrokerHandle`], or, without a callback, to [`Broker::take_domained`]. Handlers
//!   execute events whatever their domain.
//! * **Transient failures are retried.** A handler's transaction
//!   [`Violation`](crate::violation::Violation) (lock denied, store failing) puts the event back
//!   at the front of its lane after an exponential, fully jittered delay
//!   ([`RetryPolicy`], set with [`BrokerBuilder::retry`]), in this
//!   process, up to the retry limit; then it is a dead letter
//!   ([`DeadLetterReason::RetriesExhausted`]).
//! * **Permanent failures are dead letters.** An event with no handler (and no resolve
//!   collecting it), a contract, configuration or execution violation, and a panicking handler
//!   become [`DeadLetter`]s with a [`DeadLetterReason`]. Processing continues; only that branch
//!   of the workflow stops.
//! * **Dead letters are logged and bounded.** Each is logged with `tracing::warn!`, then sent
//!   to [`on_error`](BrokerBuilder::on_error), or kept for [`Broker::take_dead_letters`] in a
//!   buffer of [`dead_letter_capacity`](BrokerBuilder::dead_letter_capacity) (the oldest are
//!   dropped first and counted in [`BrokerStats::dead_letters_dropped`]).
//! * **Resolve.** [`Broker::resolve`] publishes one event, collects the events addressed to its
//!   `source` (they leave the broker), waits until the broker is idle and returns the last one.
//!   See its documentation for what "idle" means.
//! * **Shutdown.** [`Broker::shutdown`] refuses new events from outside, lets the workers
//!   finish everything queued (including what those events produce and pending retries) and
//!   stops them. Dropping the last [`Broker`] clone does the same without waiting.
//! * **Observation.** [`Broker::stats`] counts published, delivered, produced, retried,
//!   dead-lettered… events; [`BrokerBuilder::log`] records every accepted event (off by default).
//!
//! ```
//! # tokio::runtime::Builder::new_multi_thread().build().unwrap().block_on(async {
//! use orchestrator::broker::Broker;
//! use orchestrator::event::Event;
//! use orchestrator::handler::EventHandler;
//! use orchestrator::violation::Violation;
//! use serde_json::json;
//!
//! /// Doubles `n` and answers whoever asked (the `reply` field).
//! struct Doubler;
//! impl EventHandler for Doubler {
//!     fn source(&self) -> &str {
//!         "com.calc.double"
//!     }
//!     async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
//!         let n = event.data()["n"].as_i64().unwrap_or(0);
//!         let reply = event.data()["reply"].as_str().unwrap_or_default();
//!         let done = Event::builder()
//!             .source(self.source())
//!             .r#type("evt.calc.double.success")
//!             .to(reply)
//!             .subject(event.subject())
//!             .parentid(event.id())
//!             .data_json(json!({ "n": n * 2 }))
//!             .build()
//!             .map_err(|e| Violation::execution(e.to_string()))?;
//!         Ok(vec![done])
//!     }
//! }
//!
//! let broker = Broker::builder().handler(Doubler).workers(4).build()?;
//! let ask = Event::builder()
//!     .source("com.calc.client")
//!     .r#type("com.calc.double")
//!     .subject("job-1")
//!     .data_json(json!({ "n": 21, "reply": "com.calc.client" }))
//!     .build()?;
//! let answer = broker.resolve(ask).await?.expect("an answer");
//! assert_eq!(answer.data()["n"], 42);
//! broker.shutdown().await;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

mod as_transport;
mod builder;
mod error;
mod handle;
mod resolve;
mod stats;

/// The panic-catching future wrapper, kept at its old path for the lifecycle (it now lives in
/// `crate::util::panic`).
pub(crate) mod catch_panic {
    pub(crate) use crate::util::panic::CatchPanic;
}

use std::fmt;
use std::sync::{Arc, Mutex};

use tokio::task::JoinHandle;

pub use builder::BrokerBuilder;
pub use error::BrokerError;
pub use handle::BrokerHandle;
pub use stats::BrokerStats;

pub use crate::runtime::{DeadLetter, DeadLetterReason, DomainedEvent, RetryPolicy};
pub use crate::transport::DEFAULT_CAPACITY;

use crate::event::Event;
#[cfg(doc)]
use crate::handler::EventHandler;
use crate::transport::{InProcessTransport, Transport};
use crate::util::lock;
use handle::Shared;

/// An in-process broker (see the [module documentation](self)). Cloning is cheap and shares the
/// broker; when the last clone is dropped the broker closes and its workers stop once drained.
#[derive(Clone)]
pub struct Broker {
    core: Arc<Core>,
}

/// What the `Broker` clones share: dropping it closes the broker.
struct Core {
    handle: BrokerHandle,
    workers: Mutex<Vec<JoinHandle<()>>>,
    worker_count: usize,
}

impl Drop for Core {
    fn drop(&mut self) {
        self.handle.shared.transport.close();
    }
}

impl Broker {
    /// Starts configuring a broker.
    pub fn builder() -> BrokerBuilder {
        BrokerBuilder::default()
    }

    fn start(shared: Arc<Shared>, workers: Vec<JoinHandle<()>>) -> Self {
        let worker_count = workers.len();
        Self {
            core: Arc::new(Core {
                handle: BrokerHandle { shared },
                workers: Mutex::new(workers),
                worker_count,
            }),
        }
    }

    fn shared(&self) -> &Shared {
        &self.core.handle.shared
    }

    /// A publishing handle (it does not keep the broker open).
    pub fn handle(&self) -> BrokerHandle {
        self.core.handle.clone()
    }

    /// See [`BrokerHandle::publish`]: never waits; [`BrokerError::QueueFull`] when full.
    pub fn publish(&self, event: Event) -> Result<(), BrokerError> {
        self.core.handle.publish(event)
    }

    /// See [`BrokerHandle::publish_wait`]: waits while the queue is full.
    pub async fn publish_wait(&self, event: Event) -> Result<(), BrokerError> {
        self.core.handle.publish_wait(event).await
    }

    /// The broker's transport (to publish batches, or to subscribe other consumers).
    pub fn transport(&self) -> &InProcessTransport {
        &self.shared().transport
    }

    /// Publishes `event` and returns the last event addressed to `event.source()` once the
    /// broker is idle, or `None` if none came.
    ///
    /// While it runs, events whose `to` is `event.source()` are collected (they leave the broker
    /// and count as `collected`). The collector is removed when `resolve` returns, fails or is
    /// cancelled, so the same source can resolve again; concurrent resolves need distinct
    /// sources.
    ///
    /// **Idle** means the whole broker: nothing queued and nothing in flight (an event is in
    /// flight until its handler returned, its products were queued and its domained-events
    /// callbacks completed; a failed event waiting to be retried is in flight too). So a resolve also waits for unrelated work published meanwhile,
    /// and under a never-ending stream of events it does not return. Work started outside the
    /// broker (a task spawned by a callback that publishes later) is not waited for.
    ///
    /// Errors: [`BrokerError::SourceIsHandlerTopic`] (its answers would go to that handler),
    /// [`BrokerError::ResolveInProgress`], and those of [`Broker::publish_wait`] (it waits for
    /// room in the queue).
    pub async fn resolve(&self, event: Event) -> Result<Option<Event>, BrokerError> {
        resolve::resolve(&self.core.handle, event).await
    }

    /// Waits until nothing is queued and nothing is in flight (see [`Broker::resolve`]).
    pub async fn wait_idle(&self) {
        self.shared().transport.wait_idle().await;
    }

    /// Stops accepting events from outside (publishing fails with [`BrokerError::Closed`],
    /// also for replies a domained-events callback publishes through its handle), waits until
    /// everything queued and everything it produces has been handled, and stops the workers.
    /// Idempotent. It waits as long as the handlers take (wrap it in a timeout to bound it).
    pub async fn shutdown(&self) {
        let transport = &self.shared().transport;
        transport.close();
        transport.wait_idle().await;
        let workers = std::mem::take(&mut *lock(&self.core.workers));
        for worker in workers {
            // A worker only ends by returning; a `JoinError` would mean the runtime is shutting
            // down, and there is nothing left to drain then.
            let _ = worker.await;
        }
    }

    /// Whether the broker stopped accepting events.
    pub fn is_closed(&self) -> bool {
        self.shared().transport.is_closed()
    }

    /// The counters and gauges now.
    pub fn stats(&self) -> BrokerStats {
        self.shared().stats()
    }

    /// The dead letters kept so far, oldest first: at most the
    /// [`dead_letter_capacity`](BrokerBuilder::dead_letter_capacity) most recent (none are kept
    /// when an `on_error` callback is set).
    pub fn take_dead_letters(&self) -> Vec<DeadLetter> {
        self.shared().dispatcher.dead_letters().take()
    }

    /// How many dead letters were dropped from the full buffer so far.
    pub fn dead_letters_dropped(&self) -> u64 {
        self.shared().dispatcher.dead_letters().dropped()
    }

    /// The domained events kept so far (none are kept when an `on_domained` callback is set).
    pub fn take_domained(&self) -> Vec<DomainedEvent> {
        self.shared().dispatcher.take_domained()
    }

    /// Every event accepted since the last call, in acceptance order; empty unless
    /// [`BrokerBuilder::log`] is on.
    pub fn take_log(&self) -> Vec<Event> {
        self.shared().transport.take_log()
    }

    /// The handler topics.
    pub fn topics(&self) -> impl Iterator<Item = &str> {
        self.shared().dispatcher.topics()
    }

    /// The number of workers.
    pub fn workers(&self) -> usize {
        self.core.worker_count
    }

    /// The queue capacity.
    pub fn capacity(&self) -> usize {
        self.shared().transport.capacity()
    }
}

impl fmt::Debug for Broker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Broker")
            .field("topics", &self.topics().collect::<Vec<_>>())
            .field("workers", &self.workers())
            .field("capacity", &self.capacity())
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}
