//! The runtime: what runs handlers on the deliveries of a [`Transport`](crate::transport::Transport),
//! the same for every transport.
//!
//! * [`Dispatcher`] routes each delivery to the handler of its `to`, runs it with panics
//!   contained, and settles the delivery by [`Settlement::classify`], the one settlement rule:
//!   success → the products are published by the ack; a transient failure (a transaction
//!   violation: lock denied, store failing) → nack, tried again after an exponential, fully
//!   jittered delay ([`RetryPolicy`]) up to a limit, then a dead letter
//!   ([`DeadLetterReason::RetriesExhausted`]); a permanent failure (contract, configuration or
//!   execution violation, a panic, no handler) → a dead letter with its reason.
//! * [`DeadLetters`] logs every dead letter with `tracing::warn!`, then hands it to a callback
//!   or keeps it in a bounded buffer (the oldest dropped first, and counted).
//! * While a handler runs, the dispatcher extends its delivery now and then ([`Heartbeat`]), so
//!   that a transport with visibility deadlines does not hand a long step to someone else.
//! * Produced events with a `domain` are not published: they go to a callback with a
//!   publisher to reply with ([`DomainedFn`]), or are kept ([`DomainedEvent`]).
//!
//! * [`pool`]: worker pools on any transport: a [`Consumer`](pool::Consumer) of
//!   [`Pool`](pool::Pool)s of workers that claim only what their slots can run, give each
//!   handler a [`Toolkit`](pool::Toolkit), report their lifecycle and stop in two phases; they
//!   settle through this dispatcher. A [`Node`] runs its handlers in pools.
//!
//! The in-process [`Broker`](crate::broker::Broker) is this dispatcher on an
//! [`InProcessTransport`](crate::transport::InProcessTransport).

pub(crate) mod collectors;
mod dead_letters;
mod dispatcher;
mod domained;
mod heartbeat;
pub mod node;
pub mod pool;
mod retry;
mod settlement;

use std::future::Future;
use std::pin::Pin;

pub use dead_letters::{DEFAULT_DEAD_LETTER_CAPACITY, DeadLetter, DeadLetterReason, DeadLetters, ErrorFn};
pub use dispatcher::{DispatchStats, Dispatcher, DispatcherError, Settled};
pub use domained::{DomainedEvent, DomainedFn};
pub use heartbeat::Heartbeat;
pub use node::{
    DEFAULT_WORKERS, MissingService, NODE_POOL, Node, NodeBuilder, NodeError, SIGNAL_SOURCE, TimerSettings,
    ViewError, WorkflowStatus, WorkflowView,
};
pub use retry::RetryPolicy;
pub use settlement::{Outcome, Settlement, is_transient};

/// A boxed `Send` future.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;
