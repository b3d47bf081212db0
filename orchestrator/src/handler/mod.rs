//! Event handlers: anything that consumes the events addressed to its topic and returns the
//! events it produces (Arvo's `IArvoEventHandler`).
//!
//! The contract between a handler and whoever delivers events to it (a broker, a worker pool, a
//! test):
//!
//! * an event is delivered to the handler whose [`EventHandler::source`] equals the event's `to`;
//! * [`EventHandler::execute`] returns the produced events, which the caller publishes;
//! * a [`Violation`] is returned as an error and nothing is produced: the caller decides to retry,
//!   dead-letter or alert; ordinary failures of user code are *not* errors, they come back as
//!   `sys.<type>.error` events among the produced events.
//!
//! Implementations: [`ServiceHandler`] ([`service`]), the stateless contract-bound handler.
//! [`Answered`] wraps a handler so that its answer to each request is recorded and a redelivered
//! request gets it again without the handler running twice.

mod answered;
mod dynamic;
pub mod service;

use std::future::Future;

pub use answered::Answered;
pub(crate) use answered::MemoryAnswers;
pub use dynamic::DynEventHandler;
pub use service::{Emissions, Emit, ServiceHandler, ServiceHandlerBuilder, ServiceInput};

use crate::event::Event;
use crate::violation::Violation;

/// Consumes events addressed to [`EventHandler::source`] and returns the events it produces.
pub trait EventHandler: Send + Sync + 'static {
    /// The topic this handler listens on.
    fn source(&self) -> &str;

    /// Handles one event: the produced events, or a violation (nothing produced).
    fn execute(&self, event: &Event) -> impl Future<Output = Result<Vec<Event>, Violation>> + Send;
}
