//! [`Outboxed`]: a handler whose events move through an [`Outbox`].

use super::Outbox;
use crate::event::Event;
use crate::handler::EventHandler;
use crate::violation::{TransactionCause, Violation};

/// Wraps handler `H` so that each event it handles is moved forward in outbox `O`: once `H` has
/// handled an event, [`Outbox::advance`] removes it and adds what `H` produced (except events
/// with a domain, which leave the broker), and only then are the produced events returned to
/// the broker. See the [module documentation](super).
///
/// A violation settles the event too (handling it again would give the same violation), except a
/// *transaction* violation (lock denied, memory unreachable…), which is transient: the event
/// stays in the outbox and is redelivered after a restart. If the outbox step itself fails, the
/// event stays, nothing produced is returned, and the handler answers with a
/// [`TransactionCause::WriteFailure`] violation.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use std::sync::Arc;
/// use orchestrator::handler::EventHandler;
/// use orchestrator::outbox::{InMemoryOutbox, Outbox, Outboxed};
/// use orchestrator::prelude::*;
///
/// /// Answers every `com.demo.echo` request.
/// struct Echo;
/// impl EventHandler for Echo {
///     fn source(&self) -> &str { "com.demo.echo" }
///     async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
///         let reply = Event::builder().source("com.demo.echo").r#type("evt.demo.echo").to("com.demo.client")
///             .subject(event.subject()).parentid(event.id()).data_json(serde_json::json!({}))
///             .build().map_err(|e| Violation::execution(e.to_string()))?;
///         Ok(vec![reply])
///     }
/// }
///
/// let outbox = Arc::new(InMemoryOutbox::new());
/// let echo = Outboxed::new(Echo, Arc::clone(&outbox));
/// let ask = Event::builder().source("com.demo.client").r#type("com.demo.echo").subject("s-1")
///     .data_json(serde_json::json!({})).build()?;
/// outbox.advance(None, std::slice::from_ref(&ask)).await?; // published durably
/// let replies = echo.execute(&ask).await?;
/// // The request is done with; its reply is now the event in flight.
/// let pending = outbox.pending(0, 10).await?;
/// assert_eq!(pending.len(), 1);
/// assert_eq!(pending[0].event.id(), replies[0].id());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct Outboxed<H, O> {
    inner: H,
    outbox: O,
}

impl<H, O> Outboxed<H, O> {
    /// `inner`, moving its events through `outbox`.
    pub fn new(inner: H, outbox: O) -> Self {
        Self { inner, outbox }
    }

    /// The wrapped handler.
    pub fn inner(&self) -> &H {
        &self.inner
    }

    /// The outbox.
    pub fn outbox(&self) -> &O {
        &self.outbox
    }
}

impl<H: EventHandler, O: Outbox + 'static> EventHandler for Outboxed<H, O> {
    fn source(&self) -> &str {
        self.inner.source()
    }

    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        let result = self.inner.execute(event).await;
        let in_flight: Vec<Event> = match &result {
            Ok(produced) => super::travelling(produced),
            // Transient: keep the event, to be handled again after a restart.
            Err(violation) if violation.transaction_cause().is_some() => return result,
            Err(_) => Vec::new(),
        };
        self.outbox.advance(Some(event.id()), &in_flight).await.map_err(|e| {
            Violation::transaction(
                TransactionCause::WriteFailure,
                format!("Error moving event (id={}) forward in the outbox: {e}", event.id()),
            )
        })?;
        result
    }
}
