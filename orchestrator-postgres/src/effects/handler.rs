//! [`Transactional`]: a handler whose database writes, recorded answer and settlement commit in
//! one transaction; [`TxFn`]: a handler from an async function given that transaction.

use std::future::Future;
use std::sync::Arc;

use deadpool_postgres::Pool;
use orchestrator::event::Event;
use orchestrator::handler::EventHandler;
use orchestrator::memory::AnswerKey;
use orchestrator::violation::{TransactionCause, Violation};

use super::tx::{EffectError, EffectTx, End};
use crate::answers::{AnswerAck, AnswerAcked, KEY, settled};
use crate::error::PgError;
use crate::queries as q;
use crate::queue::signals::{Claim, Signals};
use crate::store::decode;

/// Wraps handler `H` so that each request runs in a transaction of the store
/// ([`PgStore::transactional`](crate::PgStore::transactional); see the
/// [module documentation](super) for what is guaranteed):
///
/// 1. the answer recorded for the request (the handler's topic, the request's source and id)
///    is looked up: if there is one, it is returned and `H` does not run;
/// 2. a transaction begins; `H` runs with it as [`EffectTx::current`], and writes its effects
///    there;
/// 3. a [`Violation`] from `H` rolls everything back and is returned (the request is retried or
///    dead-lettered); an error answer (the `sys.<topic>.error` events a
///    [`ServiceHandler`](orchestrator::handler::ServiceHandler) emits when its function fails)
///    undoes `H`'s writes but is recorded like any answer;
/// 4. the answer is recorded in the same transaction and, when the request is a delivery of this
///    store's queue claimed by this process, that delivery is settled there too: its row leaves
///    the queue and the produced events enter it (fenced by the claim: a claim that lapsed and
///    went to another consumer rolls everything back); then the transaction commits.
///
/// A request answered meanwhile by another run (a second delivery of it that committed first)
/// rolls this run back and returns that run's answer.
pub struct Transactional<H> {
    inner: H,
    pool: Pool,
    /// `ANSWER` and `ANSWER_ACK` for the store's schema.
    answer_sql: String,
    answer_ack_sql: String,
    /// The claims of the store's queues' deliveries in this process.
    wake: Arc<Signals>,
}

impl<H> std::fmt::Debug for Transactional<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transactional").finish_non_exhaustive()
    }
}

impl<H> Transactional<H> {
    pub(super) fn new(inner: H, pool: Pool, schema: &str, wake: Arc<Signals>) -> Self {
        Self {
            inner,
            pool,
            answer_sql: q::ANSWER.replace("{s}", schema),
            answer_ack_sql: q::ANSWER_ACK.replace("{s}", schema),
            wake,
        }
    }

    /// The wrapped handler.
    pub fn inner(&self) -> &H {
        &self.inner
    }
}

/// A violation from a failed statement of the step: transient when PostgreSQL's error is (the
/// request is retried), else an execution violation (a dead letter).
fn failed(cause: TransactionCause, doing: &str, event: &Event, e: impl Into<PgError>) -> Violation {
    let e = e.into();
    let message = format!("Error {doing} (event source={}, id={}): {e}", event.source(), event.id());
    if e.is_transient() { Violation::transaction(cause, message) } else { Violation::execution(message) }
}

fn effect_failed(cause: TransactionCause, doing: &str, event: &Event, e: EffectError) -> Violation {
    match e {
        EffectError::Postgres(e) => failed(cause, doing, event, e),
        other => Violation::execution(format!("Error {doing} (event id={}): {other}", event.id())),
    }
}

impl<H: EventHandler> EventHandler for Transactional<H> {
    fn source(&self) -> &str {
        self.inner.source()
    }

    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        let key = AnswerKey::of(self.inner.source(), event);
        let client = self
            .pool
            .get()
            .await
            .map_err(|e| failed(TransactionCause::ReadFailure, "connecting", event, e))?;
        if let Some(recorded) = self.lookup(&client, key, event).await? {
            return Ok(recorded);
        }
        let tx = EffectTx::begin(client).await.map_err(|e| {
            failed(TransactionCause::WriteFailure, "beginning the effect transaction", event, e)
        })?;
        let produced = match tx.scope(self.inner.execute(event)).await {
            Ok(produced) => produced,
            Err(violation) => {
                let _ = tx.end(End::Rollback).await;
                return Err(violation);
            }
        };
        let error_type = format!("sys.{}.error", self.inner.source());
        if produced.iter().any(|e| e.r#type() == error_type)
            && let Err(e) = tx.undo_effects().await
        {
            let _ = tx.end(End::Rollback).await;
            return Err(effect_failed(
                TransactionCause::WriteFailure,
                "undoing the failed handler's writes",
                event,
                e,
            ));
        }
        let claim = self.wake.claim_of(self.inner.source(), event.source(), event.id());
        let recorded = match self.record(&tx, event, claim.as_ref(), &produced).await {
            Ok(recorded) => recorded,
            Err(violation) => {
                let _ = tx.end(End::Rollback).await;
                return Err(violation);
            }
        };
        match recorded {
            AnswerAcked::Recorded => {}
            AnswerAcked::ClaimLost => {
                let _ = tx.end(End::Rollback).await;
                return Err(Violation::transaction(
                    TransactionCause::WriteFailure,
                    format!(
                        "the claim on event {} was lost before its step committed: nothing was applied",
                        event.id()
                    ),
                ));
            }
            AnswerAcked::Answered => {
                let _ = tx.end(End::Rollback).await;
                return self.recorded(key, event).await;
            }
        }
        if let Err(e) = tx.end(End::Commit).await {
            // Whether it committed is unknown: the retry finds the answer if it did.
            return Err(effect_failed(
                TransactionCause::WriteFailure,
                "committing the effect transaction",
                event,
                e,
            ));
        }
        if claim.is_some() {
            settled(&self.wake, event.id());
        }
        Ok(produced)
    }
}

impl<H: EventHandler> Transactional<H> {
    /// Records `produced` as the answer to `event` in `tx`, settling `claim` with it.
    async fn record(
        &self,
        tx: &EffectTx,
        event: &Event,
        claim: Option<&Claim>,
        produced: &[Event],
    ) -> Result<AnswerAcked, Violation> {
        let key = AnswerKey::of(self.inner.source(), event);
        let ack = AnswerAck::new(key, produced, claim).map_err(|e| {
            Violation::execution(format!("Error encoding the answer to event {}: {e}", event.id()))
        })?;
        let rows = tx
            .step(&self.answer_ack_sql, &ack.params())
            .await
            .map_err(|e| effect_failed(TransactionCause::WriteFailure, "recording the answer", event, e))?;
        Ok(AnswerAck::outcome(&rows))
    }

    /// The answer another run recorded first.
    async fn recorded(&self, key: AnswerKey<'_>, event: &Event) -> Result<Vec<Event>, Violation> {
        let client = self
            .pool
            .get()
            .await
            .map_err(|e| failed(TransactionCause::ReadFailure, "connecting", event, e))?;
        self.lookup(&client, key, event).await?.ok_or_else(|| {
            Violation::transaction(
                TransactionCause::ReadFailure,
                format!("the answer recorded for event {} is gone", event.id()),
            )
        })
    }

    /// The answer recorded under `key`, read on `client`.
    async fn lookup(
        &self,
        client: &deadpool_postgres::Object,
        key: AnswerKey<'_>,
        event: &Event,
    ) -> Result<Option<Vec<Event>>, Violation> {
        let read = |e: tokio_postgres::Error| {
            failed(TransactionCause::ReadFailure, "reading the recorded answer", event, e)
        };
        let statement = client.prepare_cached(&self.answer_sql).await.map_err(read)?;
        let rows = client.query(&statement, &[&key.service, &key.source, &key.id]).await.map_err(read)?;
        rows.first().map(|row| decode(KEY, "recorded answer", row.get::<_, &str>(0))).transpose().map_err(
            |e| Violation::execution(format!("Error reading the recorded answer to {}: {e}", event.id())),
        )
    }
}

/// A handler from an async function that gets the request and the step's [`EffectTx`]
/// ([`PgStore::transactional_fn`](crate::PgStore::transactional_fn)).
pub struct TxFn<F> {
    source: String,
    f: F,
}

impl<F> std::fmt::Debug for TxFn<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TxFn").field("source", &self.source).finish_non_exhaustive()
    }
}

impl<F> TxFn<F> {
    pub(super) fn new(source: String, f: F) -> Self {
        Self { source, f }
    }
}

impl<F, Fut> EventHandler for TxFn<F>
where
    F: Fn(Event, EffectTx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Vec<Event>, Violation>> + Send,
{
    fn source(&self) -> &str {
        &self.source
    }

    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        let tx = EffectTx::current().map_err(|e| Violation::config(e.to_string()))?;
        (self.f)(event.clone(), tx).await
    }
}
