//! [`Answered`]: a handler whose answer to each request is recorded, so that a redelivered
//! request gets the recorded answer without the handler running again.

use std::marker::PhantomData;
use std::sync::Arc;

use super::EventHandler;
use crate::event::Event;
use crate::memory::{AnswerKey, Answers, Memory, MemoryError};
use crate::outbox::Unsettled;
use crate::violation::{TransactionCause, Violation};

/// Wraps handler `H` so that its answer to each request is recorded in `A` (see
/// [`crate::memory::Answers`]), keyed by the handler's topic and the request's `(source, id)`:
///
/// 1. the recorded answer is looked up first: if there is one, it is returned as is (the same
///    events, with the same ids) and `H` does not run;
/// 2. else `H` runs; a [`Violation`] is returned as is and nothing is recorded (the request is
///    retried or dead-lettered, as for any handler);
/// 3. else its products are recorded (the first record of a request wins: when two deliveries of
///    one request ran at once, both return the answer recorded first) and returned, to be settled
///    with the delivery.
///
/// An error answer (the `sys.<type>.error` events a [`ServiceHandler`](super::ServiceHandler)
/// emits when its function fails) is an answer like any other: it is recorded and returned again.
///
/// # What is guaranteed
///
/// * Once a request's answer is recorded, `H` never runs for it again, in any process over the
///   same store, and every delivery of it settles with the same events.
/// * Before the record, `H` may run more than once: a process that dies after `H`'s effect
///   and before the record (or a record whose answer was lost with the connection, then refused
///   on the retry) leaves the request unanswered, and its redelivery runs `H` again. An effect
///   outside the store (an HTTP call, a payment) therefore needs its own idempotency key (the
///   request's id is a good one) to be applied once. An effect written in the same transaction
///   as the record is applied exactly once: `orchestrator_postgres`'s transactional handlers do
///   that.
/// * Where the store is also the transport's queue (PostgreSQL), a record made while this
///   process holds the request's delivery settles that delivery with the answer's events in
///   the same statement; elsewhere the delivery is settled after the record.
/// * A record that failed transiently keeps the products in this process (up to
///   [`UNSETTLED_CAPACITY`](crate::outbox::UNSETTLED_CAPACITY) requests): its retry here records
///   them without running `H` again.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use orchestrator::handler::{Answered, EventHandler};
/// use orchestrator::memory::InMemory;
/// use orchestrator::prelude::*;
///
/// /// Charges a card: an effect to run once per request.
/// #[derive(Default)]
/// struct Charge { runs: AtomicUsize }
/// impl EventHandler for Charge {
///     fn source(&self) -> &str { "com.shop.charge" }
///     async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
///         self.runs.fetch_add(1, Ordering::Relaxed);
///         let receipt = Event::builder().source("com.shop.charge").r#type("evt.shop.charge.success")
///             .to(event.source()).subject(event.subject()).parentid(event.id())
///             .data_json(serde_json::json!({"charged": true}))
///             .build().map_err(|e| Violation::execution(e.to_string()))?;
///         Ok(vec![receipt])
///     }
/// }
///
/// let store = Arc::new(InMemory::<String>::default());
/// let charge = Answered::new(Charge::default(), Arc::clone(&store));
/// let request = Event::builder().source("com.shop.client").r#type("com.shop.charge").subject("s-1")
///     .data_json(serde_json::json!({}))
///     .build()?;
/// let first = charge.execute(&request).await?;
/// let again = charge.execute(&request).await?; // a redelivery
/// assert_eq!(again, first, "the same events, with the same ids");
/// assert_eq!(charge.inner().runs.load(Ordering::Relaxed), 1, "charged once");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct Answered<H, A> {
    inner: H,
    answers: A,
    unsettled: Unsettled,
}

impl<H, A> Answered<H, A> {
    /// `inner`, its answers recorded in `answers`.
    pub fn new(inner: H, answers: A) -> Self {
        Self { inner, answers, unsettled: Unsettled::default() }
    }

    /// The wrapped handler.
    pub fn inner(&self) -> &H {
        &self.inner
    }
}

impl<H: EventHandler, A: Answers + 'static> EventHandler for Answered<H, A> {
    fn source(&self) -> &str {
        self.inner.source()
    }

    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        let key = AnswerKey::of(self.inner.source(), event);
        match self.answers.answer(key).await {
            Ok(Some(recorded)) => return Ok(recorded),
            Ok(None) => {}
            Err(e) => {
                return Err(violation(TransactionCause::ReadFailure, "reading the answer to", event, &e));
            }
        }
        let retried = (event.source().to_owned(), event.id().to_owned());
        let produced = match self.unsettled.take(&retried) {
            Some(produced) => produced,
            None => self.inner.execute(event).await?,
        };
        match self.answers.record_answer(key, &produced).await {
            Ok(recorded) => Ok(recorded),
            Err(e) => {
                if e.is_transient() {
                    // The record may have been applied: its retry records the same products.
                    self.unsettled.keep(retried, produced);
                }
                Err(violation(TransactionCause::WriteFailure, "recording the answer to", event, &e))
            }
        }
    }
}

/// The violation for a failed lookup or record: transient when the store's error is (the
/// request is retried), else an execution violation (a dead letter).
fn violation(cause: TransactionCause, doing: &str, event: &Event, e: &MemoryError) -> Violation {
    let message = format!("Error {doing} event (source={}, id={}): {e}", event.source(), event.id());
    if e.is_transient() { Violation::transaction(cause, message) } else { Violation::execution(message) }
}

/// The [`Answers`] of a store known only as a [`Memory`] (whose [`Memory::answers`] may be
/// `None`: every call then fails with [`MemoryError::Unsupported`]).
pub(crate) struct MemoryAnswers<M, R> {
    store: Arc<M>,
    _record: PhantomData<fn() -> R>,
}

impl<M, R> MemoryAnswers<M, R> {
    pub(crate) fn new(store: Arc<M>) -> Self {
        Self { store, _record: PhantomData }
    }
}

const UNSUPPORTED: MemoryError = MemoryError::Unsupported { what: "recorded answers" };

impl<R: Send + Sync + 'static, M: Memory<R>> Answers for MemoryAnswers<M, R> {
    async fn answer(&self, key: AnswerKey<'_>) -> Result<Option<Vec<Event>>, MemoryError> {
        match self.store.answers() {
            Some(answers) => answers.answer_dyn(key).await,
            None => Err(UNSUPPORTED),
        }
    }

    async fn record_answer(&self, key: AnswerKey<'_>, produced: &[Event]) -> Result<Vec<Event>, MemoryError> {
        match self.store.answers() {
            Some(answers) => answers.record_answer_dyn(key, produced).await,
            None => Err(UNSUPPORTED),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use super::*;
    use crate::memory::InMemory;

    /// Answers each request with a fresh reply (a new id each run), counting its runs; fails
    /// with a permanent violation when `refuse` is set.
    #[derive(Default)]
    struct Effect {
        runs: AtomicUsize,
        refuse: AtomicBool,
    }

    impl EventHandler for Effect {
        fn source(&self) -> &str {
            "com.demo.effect"
        }

        async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
            if self.refuse.load(Ordering::Relaxed) {
                return Err(Violation::contract("refused"));
            }
            self.runs.fetch_add(1, Ordering::Relaxed);
            let reply = Event::builder()
                .source("com.demo.effect")
                .r#type("evt.demo.effect")
                .to(event.source())
                .subject(event.subject())
                .parentid(event.id())
                .data_json(serde_json::json!({"run": self.runs.load(Ordering::Relaxed)}))
                .build()
                .map_err(|e| Violation::execution(e.to_string()))?;
            Ok(vec![reply])
        }
    }

    /// Answers whose next record is applied, then reported as a transient failure.
    #[derive(Default)]
    struct LosingAnswers {
        inner: InMemory<String>,
        lose_next: AtomicBool,
    }

    impl Answers for LosingAnswers {
        async fn answer(&self, key: AnswerKey<'_>) -> Result<Option<Vec<Event>>, MemoryError> {
            // A lost record is not seen by the lookup either (another replica, say).
            if self.lose_next.load(Ordering::Relaxed) {
                return Ok(None);
            }
            self.inner.answer(key).await
        }

        async fn record_answer(
            &self,
            key: AnswerKey<'_>,
            produced: &[Event],
        ) -> Result<Vec<Event>, MemoryError> {
            let recorded = self.inner.record_answer(key, produced).await?;
            if self.lose_next.swap(false, Ordering::Relaxed) {
                return Err(MemoryError::Backend {
                    id: String::new(),
                    transient: true,
                    source: "connection lost before the answer".into(),
                });
            }
            Ok(recorded)
        }
    }

    fn request(source: &str, id: &str) -> Event {
        Event::builder()
            .id(id)
            .source(source)
            .r#type("com.demo.effect")
            .subject("s-1")
            .data_json(serde_json::json!({}))
            .build()
            .expect("a request")
    }

    #[tokio::test]
    async fn a_redelivered_request_gets_the_recorded_answer_without_running_again() {
        let store = Arc::new(InMemory::<String>::default());
        let effect = Answered::new(Effect::default(), Arc::clone(&store));
        let ask = request("com.demo.client", "r-1");
        let first = effect.execute(&ask).await.expect("first");
        for _ in 0..3 {
            assert_eq!(effect.execute(&ask).await.expect("again"), first, "the same events, same ids");
        }
        assert_eq!(effect.inner().runs.load(Ordering::Relaxed), 1, "the effect ran once");
        // Another wrapper over the same store (another process) answers the same.
        let elsewhere = Answered::new(Effect::default(), Arc::clone(&store));
        assert_eq!(elsewhere.execute(&ask).await.expect("elsewhere"), first);
        assert_eq!(elsewhere.inner().runs.load(Ordering::Relaxed), 0);
        // Another request (same id, other source) is another request.
        effect.execute(&request("com.demo.other", "r-1")).await.expect("other");
        assert_eq!(effect.inner().runs.load(Ordering::Relaxed), 2);
    }

    #[tokio::test]
    async fn a_violation_is_not_recorded() {
        let store = Arc::new(InMemory::<String>::default());
        let effect = Answered::new(Effect::default(), Arc::clone(&store));
        let ask = request("com.demo.client", "r-1");
        effect.inner().refuse.store(true, Ordering::Relaxed);
        effect.execute(&ask).await.expect_err("refused");
        effect.inner().refuse.store(false, Ordering::Relaxed);
        effect.execute(&ask).await.expect("answered once allowed");
        assert_eq!(effect.inner().runs.load(Ordering::Relaxed), 1);
    }

    #[tokio::test]
    async fn a_lost_record_is_retried_with_the_same_products() {
        let answers = Arc::new(LosingAnswers::default());
        let effect = Answered::new(Effect::default(), Arc::clone(&answers));
        let ask = request("com.demo.client", "r-1");
        answers.lose_next.store(true, Ordering::Relaxed);
        let failed = effect.execute(&ask).await.expect_err("the record's answer was lost");
        assert_eq!(failed.transaction_cause(), Some(TransactionCause::WriteFailure));
        let replies = effect.execute(&ask).await.expect("the retry");
        assert_eq!(effect.inner().runs.load(Ordering::Relaxed), 1, "the effect ran once");
        assert_eq!(
            answers.inner.answer(AnswerKey::of("com.demo.effect", &ask)).await.expect("read"),
            Some(replies)
        );
    }
}
