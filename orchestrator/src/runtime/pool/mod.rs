//! Worker pools, on any [`Transport`](crate::transport::Transport): a [`Consumer`] owns the
//! process's pools; a [`Pool`] (the pool manager) runs N workers for one topic (a service
//! contract or an orchestrator); each worker polls only when one of its slots is free and runs
//! each delivery as a task with a [`Toolkit`].
//!
//! * **Settlement.** Every task is settled by the pool's [`Dispatcher`](crate::runtime::Dispatcher)
//!   and its one [`Settlement`](crate::runtime::Settlement) rule: success → ack with the
//!   products; a transient failure → nack with the retry delay (then a dead letter); a permanent
//!   failure, a panic, a handler that returned without responding or ran past its deadline → a
//!   dead letter with its reason. Nothing is stranded.
//! * **Slots.** A worker with `slots` slots holds at most that many deliveries: it calls
//!   [`Subscription::try_next`](crate::transport::Subscription::try_next) only once a slot is
//!   free, so no prefetched delivery waits (and lets its lease expire) behind busy slots.
//! * **Resizing and restarts.** [`Pool::resize`] grows or shrinks the pool while it runs
//!   (retired workers finish their tasks); a worker that failed (its polls failed, its loop
//!   panicked) is replaced after [`PoolConfig::restart_interval`]. The manager is one task that
//!   applies each request in turn: there is no "resize in progress" state to get stuck in.
//! * **Polling.** A failed poll is retryable or fatal
//!   ([`TransportError::is_transient`](crate::transport::TransportError::is_transient)); a
//!   retryable one is retried after an exponential, fully jittered, capped [`Backoff`], up to
//!   [`PollingConfig::max_consecutive_failures`] in a row; then, or at once for a fatal one, the
//!   worker stops with that [`ExitReason`].
//! * **Heartbeats and deadlines.** While a handler runs, its delivery is extended every
//!   [`Heartbeat::every`](crate::runtime::Heartbeat::every) (and when the handler calls
//!   [`Toolkit::heartbeat`]); a failed extension fires the task's cancellation token. A
//!   [`PoolConfig::task_timeout`] bounds each handler.
//! * **Two-phase stop.** [`Consumer::stop`] / [`Pool::stop`]: the workers stop claiming and
//!   the handlers' cancellation tokens fire; a poll already waiting may still return for
//!   [`PoolConfig::poll_grace`], and what it returns is handed back (nacked without delay); the
//!   running tasks have [`PoolConfig::grace`] to finish; the rest are dropped and their
//!   deliveries handed back, to be delivered again.
//! * **Lifecycle.** Every worker reports `worker:*`, `polling:*` and `task:*` events
//!   ([`LifecycleEvent`]) on a bounded broadcast ([`Consumer::subscribe`]; a slow subscriber
//!   lags, workers never wait) and as `tracing` events of the same names. `worker:stopped`
//!   carries the [`ExitReason`] and is emitted on every exit. Starting and stopping wait on
//!   each worker's own state, never on events.
//!
//! ```
//! # tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap().block_on(async {
//! use std::sync::Arc;
//! use orchestrator::prelude::*;
//! use orchestrator::runtime::pool::{handler_fn, ConsumerBuilder, LifecycleEvent, PoolConfig};
//! use orchestrator::transport::{InProcessConfig, InProcessTransport, Transport};
//!
//! let transport = Arc::new(InProcessTransport::new(InProcessConfig::default())?);
//! let builder = ConsumerBuilder::on(Arc::clone(&transport)).pool(
//!     PoolConfig::new("com.example.greet").workers(2).slots(4),
//!     handler_fn(|event: Event, kit| async move {
//!         let _ = event.subject();
//!         kit.success(Vec::new()).expect("the first response");
//!     }),
//! );
//! let mut events = builder.subscribe();
//! let consumer = builder.start().await?;
//! let greet = Event::builder()
//!     .source("com.example.client")
//!     .r#type("com.example.greet")
//!     .subject("s1")
//!     .data_json(serde_json::json!({}))
//!     .build()?;
//! transport.publish(vec![greet]).await?;
//! loop {
//!     if let LifecycleEvent::TaskSuccess { .. } = events.recv().await? {
//!         break;
//!     }
//! }
//! consumer.stop().await;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

mod backoff;
mod config;
mod consumer;
mod error;
mod events;
mod manager;
mod task;
mod toolkit;
mod worker;

pub use backoff::Backoff;
pub use config::{PollingConfig, PoolConfig};
pub use consumer::{Consumer, ConsumerBuilder};
pub use error::PoolError;
pub use events::{
    DEFAULT_EVENTS_CAPACITY, Events, ExitReason, FailureSettlement, LifecycleEvent, PollError, TaskError,
    TaskRef, WorkerId,
};
pub use manager::{Pool, PoolState};
pub use tokio_util::sync::CancellationToken;
pub use toolkit::{DynTaskHandler, FnHandler, TaskHandler, Toolkit, ToolkitError, handler_fn};
pub use worker::WorkerState;
