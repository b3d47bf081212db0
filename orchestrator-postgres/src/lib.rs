//! The orchestrator on PostgreSQL: durable workflow memory and the event queue in one database,
//! shared by every node that opens it.
//!
//! * [`PgStore`] implements [`Memory`](orchestrator::memory::Memory) (compare-and-swap records,
//!   single-shot leases with fencing tokens, renewal, the wake-up index with claims, idempotent
//!   redelivery keyed by the event's `(source, id)`, retention),
//!   [`Journal`](orchestrator::memory::Journal) and [`Outbox`](orchestrator::outbox::Outbox).
//! * [`PgQueue`] ([`PgStore::queue`]) is a [`Transport`](orchestrator::transport::Transport)
//!   whose queue is the store's outbox: on a durable [`Node`](orchestrator::runtime::Node) over
//!   both, each orchestrator step commits the settlement of the event it consumed, the new
//!   record, the journal entry and the events it produced in **one transaction**, and each
//!   service's ack settles its event and queues its products in one transaction. Several
//!   processes running nodes on one schema share the work (see [`queue`]).
//! * [`PgStore`] keeps recorded [`Answers`](orchestrator::memory::Answers) (table `answers`) for
//!   idempotent services, and runs **transactional handlers** ([`PgStore::transactional`]) whose
//!   database writes commit with their answer and their delivery's settlement, exactly once per
//!   request (see [`effects`]).
//!
//! ```no_run
//! use std::sync::Arc;
//! use orchestrator::orchestration::WorkflowRecord;
//! use orchestrator::runtime::Node;
//! use orchestrator_postgres::{PgConfig, PgStore, QueueConfig};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let store = Arc::new(
//!     PgStore::<WorkflowRecord>::open(PgConfig::new("postgres://postgres@127.0.0.1:5432/test")).await?,
//! );
//! let queue = store.queue(QueueConfig::default());
//! let node = Node::builder(Arc::clone(&store))
//!     .durable()
//!     .transport(queue)
//!     // .service(…) .orchestrator(Orchestrator::builder(Arc::clone(&store)).machine::<…>())
//!     .build()
//!     .await?;
//! # drop(node);
//! # Ok(())
//! # }
//! ```
//!
//! # Design
//!
//! * **One row per workflow** in `workflows`: the record as JSON text, its version (compare-and-swap:
//!   `UPDATE … WHERE id = $1 AND version = $2`; a creation is an `INSERT … ON CONFLICT DO
//!   NOTHING`), the next wake-up (`wake_at`, indexed) and its claim, the parent, the initiator,
//!   the writing source, `finished_at` and timestamps.
//! * **The workflow index** (schema migrations 5 and 6): each row also keeps its `status` (`active`,
//!   `waiting`, `done`, `failed`: [`WriteMeta::status`](orchestrator::memory::WriteMeta::status),
//!   written by every commit) and its `root` (its own id for a root workflow; a child's is its
//!   parent's root, or the parent's id when the parent's row is not there). Indexes list
//!   workflows newest first: `workflows_source_created (source, created_at DESC)` (by
//!   orchestrator), `workflows_status_touched (status, touched_minute DESC)` (by status and
//!   update time, to the minute: migration 9; a step's update changes no indexed column within
//!   a minute, so PostgreSQL updates the row in place),
//!   `workflows_initiator_created (initiator, created_at DESC)`, `workflows_root_created (root,
//!   created_at)` (a workflow tree) and `workflows_created (created_at DESC)`; children by parent
//!   use `workflows_parent (parent, seq)`. The archive keeps both columns (not indexed).
//!   Schema migration 6 adds what the workflow's subject says, parsed once when its row is
//!   created: `orchestrator_version`, `execution_id` (indexed with `text_pattern_ops` for short-id
//!   prefixes) and `meta` (JSONB, GIN-indexed with `jsonb_path_ops` for containment), plus
//!   `workflows_status_created (status, created_at DESC)`. Rows written before it keep NULLs
//!   there (SQL cannot inflate a subject). [`PgStore`] is a
//!   [`WorkflowIndex`](orchestrator::memory::WorkflowIndex): a listing or a count is one
//!   statement, prepared afresh at each call so that PostgreSQL plans it with the values given
//!   (the filters not set fold away and the index of those set is searched).
//! * **Leases are rows** (`leases(id, owner, token, expires_at)`) judged by the database's clock
//!   (`now()`), so that nodes whose clocks differ agree; tokens come from a sequence and only
//!   grow; a renewal extends from `now()`; releasing a lapsed or superseded lease is not an
//!   error.
//! * **`acquire` is one statement** (one round trip): a CTE takes the lease when asked, and the
//!   same statement reads the record and the journal's answer for the event. Without a lease
//!   (a [`Node`](orchestrator::runtime::Node) on the queue takes none, see below) it is a plain
//!   read.
//! * **No lease per step on the queue.** [`PgQueue`]'s lanes are exclusive across processes
//!   ([`Transport::exclusive_lanes`](orchestrator::transport::Transport::exclusive_lanes)): a
//!   workflow's events are claimed one at a time, whoever claims them, so a node on it runs
//!   steps without a lease; the compare-and-swap on the record's version still refuses the
//!   write of a step whose claim lapsed and was taken over (it gets
//!   [`MemoryError::Conflict`](orchestrator::memory::MemoryError::Conflict)), and the journal
//!   answers its retry.
//! * **`commit` is one call** (one round trip): the `commit_step` function (schema migration 5,
//!   PL/pgSQL) checks the fencing token (`SELECT … FOR SHARE`, which also
//!   keeps the lease from being superseded until the commit ends), compare-and-swaps the record,
//!   appends the journal row (the journal's positions are the record versions, unique per
//!   workflow), sets the wake-up (a write ends any claim), takes the outbox step, applies the
//!   retention of a finished workflow and releases the lease. An error anywhere rolls it all
//!   back. Statements are prepared once per pooled connection (the first use of a statement on
//!   a connection costs one more round trip), and the statements inside `commit_step` and
//!   `claim` are planned once per connection too (generic plans).
//! * **Group commit.** The settlements of steps (orchestrator commits, service acks) go to
//!   [`PgConfig::committers`] connections (1 by default): those that arrive while a committer
//!   is busy are sent together, pipelined, in one transaction (one commit, one WAL flush). A
//!   settlement that arrives alone runs alone. Each write reports a lost claim, a stale lease
//!   or a conflict as its result, not as an error, so writes of one group do not depend on each
//!   other; a write that does raise an error rolls its group back, and the group's writes run
//!   again one by one, so that only that write fails.
//! * **Outbox = queue**: the `queue` table (a `BIGSERIAL` position, the `(topic, subject)` lane,
//!   the claim) holds every event in flight; an outbox step (inside a commit, or alone through
//!   [`Outbox::advance`](orchestrator::outbox::Outbox::advance), one call of the `outbox_step`
//!   function) removes the consumed event and queues the produced ones in order, skipping ids
//!   already present. [`PgQueue`] claims from it (see [`queue`]); terminated events go to the
//!   `dead_letters` table.
//! * **Retention**: [`Retention::Keep`](orchestrator::memory::Retention::Keep) marks the
//!   workflow finished; `Remove` deletes it and its journal; `RemoveAfter(d)` marks it and
//!   sweeps the workflows finished more than `d` ago (on each finishing commit and each cleanup,
//!   through the `retain` function);
//!   `Archive` moves the record and the journal to `archive_workflows` and `archive_journal`.
//! * **Housekeeping**: [`PgStore::sweep`] deletes lapsed leases (tokens come from a sequence, so
//!   fencing holds) and the workflows past their `RemoveAfter` delay; run it now and then. The
//!   queue reaps its own lapsed claims.
//! * **Lost answers**: when the connection dies before an `acquire` or a `commit` answers, the
//!   store frees the lease that call may have taken or left (best effort, on a fresh connection),
//!   so the retry need not wait for it to lapse.
//! * **Versioned schema**: every table lives in [`PgConfig::schema`] (created if missing); the
//!   migrations are applied on open under an advisory lock, and a database from a newer version
//!   is refused with [`OpenError::NewerSchema`].
//! * **Errors**: connection failures, serialization failures (`40001`), deadlocks (`40P01`),
//!   shutdowns (`57P01`…) and pool failures are transient
//!   ([`MemoryError::is_transient`](orchestrator::memory::MemoryError::is_transient)); a record
//!   that cannot be decoded or a violated constraint is permanent.
//!
//! # Limits
//!
//! * Queue positions come from a sequence, taken when a transaction inserts: two commits running
//!   at once may become visible in the other order, so a reader paging with
//!   [`Outbox::pending`](orchestrator::outbox::Outbox::pending) while others write can pass over
//!   an event that shows up later below its position. Read the whole outbox at start-up (as
//!   [`orchestrator::outbox::redeliver`] does, with no other writer) rather than tail it. Order
//!   within a lane holds for events queued by one transaction or one after the other.
//! * The queue of a schema is consumed by every [`PgQueue`] over it: do not run a node on the
//!   in-process transport with [`NodeBuilder::durable`](orchestrator::runtime::NodeBuilder::durable)
//!   over a schema whose queue other processes consume (its events in flight would be taken by
//!   them).
//! * Workflow ids, event ids, sources and subjects are b-tree keys: an incompressible one longer
//!   than about 2.7 kB is refused by PostgreSQL (`54000`, a permanent error; nothing is written).
//! * A `lock` or `acquire` that meets a commit of the same workflow in flight waits for that
//!   transaction (the commit holds the lease row); it never waits for a lease.
//!
//! * **The journal is compact** (schema migration 10, the encoding of the SQLite store:
//!   [`orchestrator::memory::journal_codec`]): a row keeps its consumed and produced events as one
//!   deflated value, and its record as a snapshot or as a JSON Patch against the row before, a
//!   snapshot whenever the delta bytes since the last one reach the record's size; a resumable's
//!   journal grows with what each step changed, not with its whole record at every step. A step
//!   writes a delta against the record it read (the compare-and-swap on the version makes sure it
//!   is still the stored one); reading a version starts at the latest snapshot at or before it.
//!   The migration re-encodes the rows written before it.
//!
//! Records are kept as the JSON text serialized (in the workflow's row; compactly in the
//! journal), queued events as JSON text, exactly as serialized. Every value travels as a bound
//! parameter.
//!
//! # The store alone
//!
//! ```no_run
//! use orchestrator::memory::{Memory, MemoryExt, WriteMeta};
//! use orchestrator_postgres::{PgConfig, PgStore};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let store: PgStore<String> =
//!     PgStore::open(PgConfig::new("postgres://postgres@127.0.0.1:5432/test")).await?;
//! let version = store.write("wf-1", &"state".to_owned(), None, None, &WriteMeta::new("wf-1", "me")).await?;
//! assert_eq!(store.read("wf-1").await?.map(|s| s.version), Some(version));
//! # Ok(())
//! # }
//! ```

mod answers;
pub mod effects;
mod error;
mod group;
mod journal;
mod queries;
pub mod queue;
mod schema;
mod store;
#[cfg(test)]
mod test_support;

pub use error::{OpenError, PgError};
pub use queue::{PgDelivery, PgQueue, PgSubscription, QueueConfig, QueueDeadLetter};
pub use schema::SCHEMA_VERSION;
pub use store::{POOL_TIMEOUT, PgConfig, PgStore};
