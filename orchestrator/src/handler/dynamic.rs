//! The object-safe form of [`EventHandler`], to hold handlers of different types together.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::EventHandler;
use crate::event::Event;
use crate::violation::Violation;

/// A boxed `Send` future.
type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Object-safe [`EventHandler`]: every handler is one, and `Arc<dyn DynEventHandler>` is an
/// [`EventHandler`] again.
pub trait DynEventHandler: Send + Sync + 'static {
    /// See [`EventHandler::source`].
    fn source_dyn(&self) -> &str;
    /// See [`EventHandler::execute`].
    fn execute_dyn<'a>(&'a self, event: &'a Event) -> BoxFuture<'a, Result<Vec<Event>, Violation>>;
}

impl<H: EventHandler> DynEventHandler for H {
    fn source_dyn(&self) -> &str {
        self.source()
    }
    fn execute_dyn<'a>(&'a self, event: &'a Event) -> BoxFuture<'a, Result<Vec<Event>, Violation>> {
        Box::pin(self.execute(event))
    }
}

impl EventHandler for Arc<dyn DynEventHandler> {
    // `(**self)`: the `Arc` is itself a `DynEventHandler` (through the blanket impl), so
    // `self.source_dyn()` would call back into this impl forever.
    fn source(&self) -> &str {
        (**self).source_dyn()
    }
    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        (**self).execute_dyn(event).await
    }
}
