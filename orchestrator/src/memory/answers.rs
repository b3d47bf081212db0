//! Recorded answers: what a service answered to each request, so that a redelivered request gets
//! the same answer without the service's effect running again (the *idempotent actions* of
//! `distributed.md` §2, with a deterministic key looked up before the action runs and a unique
//! key that makes a racing second record lose).
//!
//! An answer is keyed by the service's topic (its [`source`](crate::handler::EventHandler::source))
//! and the request's `(source, id)`, which CloudEvents defines as an event's identity. Its value
//! is the list of events the service produced the first time, exactly as emitted (same ids,
//! times and payloads), so that every consumer downstream sees the same events again and its own
//! deduplication recognises them.
//!
//! A [`Node`](crate::runtime::Node) uses a store's answers for the services registered with
//! [`NodeBuilder::idempotent_service`](crate::runtime::NodeBuilder::idempotent_service). Stores
//! keep them until they are deleted by hand (there is no retention of answers yet).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Mutex, PoisonError};

use super::MemoryError;
use super::dynamic::BoxFuture;
use crate::event::Event;

/// The key of a recorded answer: which service answered which request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AnswerKey<'a> {
    /// The service's topic (its handler's `source`).
    pub service: &'a str,
    /// The request's `source`.
    pub source: &'a str,
    /// The request's `id`.
    pub id: &'a str,
}

impl<'a> AnswerKey<'a> {
    /// The key of `service`'s answer to `request`.
    pub fn of(service: &'a str, request: &'a Event) -> Self {
        Self { service, source: request.source(), id: request.id() }
    }
}

/// A store of recorded answers: what a service answered to each request, so that a redelivered
/// request gets the same answer without the service's effect running again (the *idempotent
/// actions* of `distributed.md` §2: a deterministic key, looked up before the action runs, and
/// unique, so that a racing second record loses).
///
/// An answer is keyed by the service's topic and the request's `(source, id)` ([`AnswerKey`]),
/// and holds the events the service produced the first time, exactly as emitted (same ids,
/// times and payloads): every consumer downstream sees the same events again and its own
/// deduplication recognises them. A [`Node`](crate::runtime::Node) uses the store's answers
/// ([`Memory::answers`](super::Memory::answers)) for the services registered with
/// [`NodeBuilder::idempotent_service`](crate::runtime::NodeBuilder::idempotent_service). Stores
/// keep answers until they are deleted by hand (there is no retention of answers yet).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use orchestrator::memory::{AnswerKey, Answers, InMemory};
/// use orchestrator::prelude::*;
///
/// let store = InMemory::<String>::default();
/// let request = Event::builder().source("com.shop.client").r#type("com.shop.pay").subject("s-1")
///     .data_json(serde_json::json!({}))
///     .build()?;
/// let key = AnswerKey::of("com.shop.pay", &request);
/// assert_eq!(store.answer(key).await?, None);
/// let reply = Event::builder().source("com.shop.pay").r#type("evt.shop.pay.success").subject("s-1")
///     .to("com.shop.client").data_json(serde_json::json!({"paid": true}))
///     .build()?;
/// let recorded = store.record_answer(key, std::slice::from_ref(&reply)).await?;
/// assert_eq!(recorded, vec![reply.clone()]);
/// // The first answer stays: a second record returns it.
/// assert_eq!(store.record_answer(key, &[]).await?, vec![reply]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub trait Answers: Send + Sync {
    /// The answer recorded under `key`, if any (`Some(vec![])` for an answer of no events).
    fn answer<'a>(
        &'a self,
        key: AnswerKey<'a>,
    ) -> impl Future<Output = Result<Option<Vec<Event>>, MemoryError>> + Send + 'a;

    /// Records `produced` as the answer under `key` unless one is recorded already, and returns
    /// the answer that is recorded once this returns: `produced` when it was the first, the
    /// earlier answer otherwise (the first record wins, also between concurrent callers).
    /// Returns once the record is durable.
    fn record_answer<'a>(
        &'a self,
        key: AnswerKey<'a>,
        produced: &'a [Event],
    ) -> impl Future<Output = Result<Vec<Event>, MemoryError>> + Send + 'a;
}

/// Object-safe [`Answers`] (what [`Memory::answers`](super::Memory::answers) returns).
pub trait DynAnswers: Send + Sync {
    /// See [`Answers::answer`].
    fn answer_dyn<'a>(&'a self, key: AnswerKey<'a>)
    -> BoxFuture<'a, Result<Option<Vec<Event>>, MemoryError>>;
    /// See [`Answers::record_answer`].
    fn record_answer_dyn<'a>(
        &'a self,
        key: AnswerKey<'a>,
        produced: &'a [Event],
    ) -> BoxFuture<'a, Result<Vec<Event>, MemoryError>>;
}

impl<A: Answers> DynAnswers for A {
    fn answer_dyn<'a>(
        &'a self,
        key: AnswerKey<'a>,
    ) -> BoxFuture<'a, Result<Option<Vec<Event>>, MemoryError>> {
        Box::pin(self.answer(key))
    }

    fn record_answer_dyn<'a>(
        &'a self,
        key: AnswerKey<'a>,
        produced: &'a [Event],
    ) -> BoxFuture<'a, Result<Vec<Event>, MemoryError>> {
        Box::pin(self.record_answer(key, produced))
    }
}

impl<A: Answers + ?Sized> Answers for std::sync::Arc<A> {
    async fn answer(&self, key: AnswerKey<'_>) -> Result<Option<Vec<Event>>, MemoryError> {
        (**self).answer(key).await
    }

    async fn record_answer(&self, key: AnswerKey<'_>, produced: &[Event]) -> Result<Vec<Event>, MemoryError> {
        (**self).record_answer(key, produced).await
    }
}

/// The answers of an in-process store, by `(service, source, id)`.
#[derive(Debug, Default)]
pub(crate) struct AnswerMap(Mutex<HashMap<(String, String, String), Vec<Event>>>);

impl AnswerMap {
    /// The answer under `key`.
    pub(crate) fn get(&self, key: AnswerKey<'_>) -> Option<Vec<Event>> {
        let map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        map.get(&owned(key)).cloned()
    }

    /// Records `produced` under `key` unless an answer is there; the answer recorded.
    pub(crate) fn record(&self, key: AnswerKey<'_>, produced: &[Event]) -> Vec<Event> {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        map.entry(owned(key)).or_insert_with(|| produced.to_vec()).clone()
    }
}

fn owned(key: AnswerKey<'_>) -> (String, String, String) {
    (key.service.to_owned(), key.source.to_owned(), key.id.to_owned())
}
