//! Effects once: handlers whose database writes commit in one transaction with their recorded
//! answer and the settlement of their request.
//!
//! A service registered with
//! [`NodeBuilder::idempotent_service`](orchestrator::runtime::NodeBuilder::idempotent_service)
//! records its answer per request, so that a redelivered request gets it again without the
//! service running twice (on this store's queue, the record also settles the request's delivery
//! with the answer's events, in the same statement); but a process that dies between the
//! service's effect and the record runs it again. When the effect is a write to this database, a **transactional handler** closes
//! that gap: its writes, its recorded answer and (for a delivery of this store's [`PgQueue`](crate::PgQueue)
//! claimed by this process) the settlement of the delivery with the events it produced commit in
//! **one transaction**, or not at all.
//!
//! * [`PgStore::transactional`] wraps any handler (a typed
//!   [`ServiceHandler`](orchestrator::handler::ServiceHandler) too): while it runs,
//!   [`EffectTx::current`] is the step's transaction.
//! * [`PgStore::transactional_fn`] makes a handler of an async function given the request and
//!   the transaction.
//!
//! Register either with [`NodeBuilder::service`](orchestrator::runtime::NodeBuilder::service)
//! (they record their answers themselves).
//!
//! # What is guaranteed
//!
//! * **Exactly once for the writes made through [`EffectTx`]**, whatever crashes, lapsed claims,
//!   redeliveries and duplicate publications: they commit with the answer, whose key (the
//!   handler's topic, the request's source and id) is the primary key of the `answers` table. A
//!   second run of the same request either finds the answer before it starts (and returns it
//!   without running the handler) or, racing with the first, fails to insert it and rolls back
//!   with its writes. A process killed before the commit leaves nothing (PostgreSQL rolls back
//!   the transaction of a closed connection; a future dropped mid-step closes its connection
//!   rather than giving it back to the pool).
//! * **The answer, the writes and the settlement commit together** for a delivery of this
//!   store's queue claimed by this process (the node's transport is [`PgStore::queue`]): the
//!   step deletes the delivery's row, fenced by its claim token, and enqueues the products. A
//!   claim that lapsed and went elsewhere makes the step roll back (a transient violation: the
//!   delivery is given back, and whoever holds the claim answers). Otherwise (another transport,
//!   a direct call) the answer and the writes commit together and the transport settles the
//!   delivery afterwards; a crash in between redelivers the request, which gets the answer.
//! * An effect *outside* the database (an HTTP call) is not covered: it may run again if the
//!   process dies before the commit. Give it an idempotency key (the request's id).
//! * A [`Violation`] rolls everything back (the request is
//!   retried or dead-lettered). An error answer (`sys.<topic>.error`, what a `ServiceHandler`
//!   emits when its function fails) undoes the handler's writes (a savepoint taken before them)
//!   and is recorded as the answer.
//!
//! Each running transactional step holds a pooled connection from its lookup to its commit:
//! size [`PgConfig::pool_size`](crate::PgConfig::pool_size) for the steps that run at once (a
//! step that cannot get a connection in time is retried).
//!
//! The `answers` table (`service`, `source`, `id`, `produced` as JSON text, `recorded_at`) is
//! plain SQL: read it to audit what was answered (`SELECT service, source, id FROM answers`).
//! Nothing deletes its rows yet.
//!
//! ```no_run
//! use std::sync::Arc;
//! use orchestrator::handler::service::{Emit, ServiceHandler, ServiceInput};
//! use orchestrator::orchestration::WorkflowRecord;
//! use orchestrator::prelude::*;
//! use orchestrator::runtime::Node;
//! use orchestrator_postgres::effects::EffectTx;
//! use orchestrator_postgres::{PgConfig, PgStore, QueueConfig};
//! # #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
//! # pub struct Deposit { pub account: String, pub cents: i64 }
//! # #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
//! # pub struct Balance { pub cents: i64 }
//! # orchestrator::simple_contract! {
//! #     pub contract Bank { uri: "#/bank/deposit", type: "bank.deposit",
//! #         versions: { BankV1 = "1.0.0" { accepts: Deposit, emits: Balance } } }
//! # }
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let store = Arc::new(
//!     PgStore::<WorkflowRecord>::open(PgConfig::new("postgres://postgres@127.0.0.1:5432/test")).await?,
//! );
//! let deposit = ServiceHandler::<Bank>::builder()
//!     .version(|input: ServiceInput<BankV1>| async move {
//!         // Applied once per request: it commits with the answer and the ack, or not at all.
//!         let tx = EffectTx::current()?;
//!         let row = tx
//!             .query_opt(
//!                 "UPDATE accounts SET cents = cents + $2 WHERE id = $1 RETURNING cents",
//!                 &[&input.payload.account, &input.payload.cents],
//!             )
//!             .await?;
//!         let cents: i64 = row.map_or(0, |row| row.get(0));
//!         Ok(Emit::new(Balance { cents }))
//!     })
//!     .build()?;
//! let node = Node::builder(Arc::clone(&store))
//!     .durable()
//!     .transport(store.queue(QueueConfig::default()))
//!     .service(store.transactional(deposit))
//!     .build()
//!     .await?;
//! # drop(node);
//! # Ok(())
//! # }
//! ```

mod handler;
mod tx;

use std::future::Future;

use orchestrator::event::Event;
use orchestrator::handler::EventHandler;
use orchestrator::violation::Violation;

pub use handler::{Transactional, TxFn};
pub use tx::{EffectError, EffectTx};

use crate::PgStore;

impl<R> PgStore<R> {
    /// Runs `handler` in transactions of this store, recording its answers (see the
    /// [`effects`](self) module): what it writes through [`EffectTx::current`] commits with its
    /// answer and its delivery's settlement, exactly once per request.
    pub fn transactional<H: EventHandler>(&self, handler: H) -> Transactional<H> {
        let (pool, schema, wake) = self.parts();
        Transactional::new(handler, pool, &schema, wake)
    }

    /// A transactional handler on topic `source` from `f`, which gets each request and the
    /// step's transaction ([`PgStore::transactional`] of a [`TxFn`]).
    ///
    /// ```no_run
    /// use orchestrator::prelude::*;
    /// use orchestrator_postgres::PgStore;
    ///
    /// # fn build(store: &PgStore<String>) {
    /// let audit = store.transactional_fn("com.shop.audit", |request: Event, tx| async move {
    ///     tx.execute("INSERT INTO audit (id) VALUES ($1)", &[&request.id()])
    ///         .await
    ///         .map_err(|e| Violation::transaction(TransactionCause::WriteFailure, e.to_string()))?;
    ///     Ok(Vec::new())
    /// });
    /// # drop(audit);
    /// # }
    /// ```
    pub fn transactional_fn<F, Fut>(&self, source: impl Into<String>, f: F) -> Transactional<TxFn<F>>
    where
        F: Fn(Event, EffectTx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<Event>, Violation>> + Send,
    {
        self.transactional(TxFn::new(source.into(), f))
    }
}
