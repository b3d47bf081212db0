//! [`Outboxed`]: a handler whose events move through an [`Outbox`].

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

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
/// A failed outbox step may have been applied all the same (the store committed it, then the
/// connection was lost before the answer came back). So that its produced events are not left
/// behind in the outbox, never published, while a second run adds others, `Outboxed` keeps what
/// the handler produced for an event whose step failed transiently (up to
/// [`UNSETTLED_CAPACITY`] events, the oldest forgotten first), and the retry of that event (same
/// source and id) takes the step again with the same events, without running the handler again
/// (adding an event already in the outbox is a no-op). A retry delivered to another process
/// (over a shared transport) runs the handler again.
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
    unsettled: Arc<Unsettled>,
}

/// How many events whose outbox step failed an [`Outboxed`] remembers the products of, for
/// their retry.
pub const UNSETTLED_CAPACITY: usize = 10_000;

/// The events produced for consumed events whose outbox step failed, by the consumed event's
/// `(source, id)`, oldest first.
#[derive(Debug, Default)]
pub(crate) struct Unsettled(Mutex<UnsettledInner>);

#[derive(Debug, Default)]
struct UnsettledInner {
    produced: HashMap<(String, String), Vec<Event>>,
    order: VecDeque<(String, String)>,
}

impl Unsettled {
    pub(crate) fn take(&self, key: &(String, String)) -> Option<Vec<Event>> {
        let mut inner = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let produced = inner.produced.remove(key)?;
        inner.order.retain(|k| k != key);
        Some(produced)
    }

    pub(crate) fn keep(&self, key: (String, String), produced: Vec<Event>) {
        let mut inner = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if inner.produced.insert(key.clone(), produced).is_none() {
            inner.order.push_back(key);
        }
        while inner.order.len() > UNSETTLED_CAPACITY {
            if let Some(oldest) = inner.order.pop_front() {
                inner.produced.remove(&oldest);
            }
        }
    }
}

impl<H, O> Outboxed<H, O> {
    /// `inner`, moving its events through `outbox`.
    pub fn new(inner: H, outbox: O) -> Self {
        Self { inner, outbox, unsettled: Arc::default() }
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
        let key = (event.source().to_owned(), event.id().to_owned());
        let result = match self.unsettled.take(&key) {
            // The retry of an event whose outbox step failed: the same products, once.
            Some(produced) => Ok(produced),
            None => self.inner.execute(event).await,
        };
        let in_flight: Vec<Event> = match &result {
            Ok(produced) => super::travelling(produced),
            // Transient: keep the event, to be handled again after a restart.
            Err(violation) if violation.transaction_cause().is_some() => return result,
            Err(_) => Vec::new(),
        };
        if let Err(e) = self.outbox.advance(Some(event.id()), &in_flight).await {
            // The step may have been applied all the same: its retry must add the same events.
            if let Ok(produced) = result
                && e.is_transient()
            {
                self.unsettled.keep(key, produced);
            }
            return Err(Violation::transaction(
                TransactionCause::WriteFailure,
                format!("Error moving event (id={}) forward in the outbox: {e}", event.id()),
            ));
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use super::*;
    use crate::memory::MemoryError;
    use crate::outbox::{InMemoryOutbox, Pending};

    /// Answers each request with a fresh reply (a new id each run), counting its runs.
    #[derive(Default)]
    struct Echo {
        runs: AtomicUsize,
    }

    impl EventHandler for Echo {
        fn source(&self) -> &str {
            "com.demo.echo"
        }

        async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
            self.runs.fetch_add(1, Ordering::Relaxed);
            let reply = Event::builder()
                .source("com.demo.echo")
                .r#type("evt.demo.echo")
                .to("com.demo.client")
                .subject(event.subject())
                .parentid(event.id())
                .data_json(serde_json::json!({}))
                .build()
                .map_err(|e| Violation::execution(e.to_string()))?;
            Ok(vec![reply])
        }
    }

    /// An outbox whose next step is applied, then reported as a transient failure (a lost
    /// answer), when `lose_next` is set.
    #[derive(Default)]
    struct LosingAnswers {
        inner: InMemoryOutbox,
        lose_next: AtomicBool,
    }

    impl Outbox for LosingAnswers {
        async fn advance(&self, consumed: Option<&str>, produced: &[Event]) -> Result<(), MemoryError> {
            self.inner.advance(consumed, produced).await?;
            if self.lose_next.swap(false, Ordering::Relaxed) {
                return Err(MemoryError::Backend {
                    id: String::new(),
                    transient: true,
                    source: "connection lost before the answer".into(),
                });
            }
            Ok(())
        }

        async fn pending(&self, after: u64, limit: usize) -> Result<Vec<Pending>, MemoryError> {
            self.inner.pending(after, limit).await
        }
    }

    fn request() -> Event {
        Event::builder()
            .source("com.demo.client")
            .r#type("com.demo.echo")
            .subject("s-1")
            .data_json(serde_json::json!({}))
            .build()
            .expect("a request")
    }

    #[tokio::test]
    async fn a_retry_after_an_applied_but_failed_step_takes_it_again_with_the_same_events() {
        let outbox = Arc::new(LosingAnswers::default());
        let echo = Outboxed::new(Echo::default(), Arc::clone(&outbox));
        let ask = request();
        outbox.advance(None, std::slice::from_ref(&ask)).await.expect("published");
        outbox.lose_next.store(true, Ordering::Relaxed);
        let failed = echo.execute(&ask).await.expect_err("the step's answer was lost");
        assert_eq!(failed.transaction_cause(), Some(TransactionCause::WriteFailure));
        let replies = echo.execute(&ask).await.expect("the retry");
        assert_eq!(echo.inner().runs.load(Ordering::Relaxed), 1, "the handler ran once");
        let pending = outbox.pending(0, 10).await.expect("pending");
        let ids: Vec<&str> = pending.iter().map(|p| p.event.id()).collect();
        assert_eq!(ids, [replies[0].id()], "only the reply returned is in flight");

        // Settled: the next delivery of the same event runs the handler again, as before.
        echo.execute(&ask).await.expect("a redelivery");
        assert_eq!(echo.inner().runs.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn the_products_kept_are_bounded() {
        let unsettled = Unsettled::default();
        for i in 0..UNSETTLED_CAPACITY + 5 {
            unsettled.keep(("s".to_owned(), i.to_string()), Vec::new());
        }
        assert!(unsettled.take(&("s".to_owned(), "0".to_owned())).is_none(), "the oldest forgotten");
        assert!(unsettled.take(&("s".to_owned(), (UNSETTLED_CAPACITY + 4).to_string())).is_some());
        assert!(
            unsettled.take(&("s".to_owned(), (UNSETTLED_CAPACITY + 4).to_string())).is_none(),
            "taken once"
        );
    }
}
