//! Embedded, durable workflow memory for the orchestrator, on SQLite.
//!
//! [`SqliteMemory`] implements [`Memory`](orchestrator::memory::Memory) (compare-and-swap
//! records, single-shot leases with TTL, renewal and fencing tokens, the wake-up index with
//! claims, idempotent redelivery keyed by the event's `(source, id)`, retention),
//! [`Journal`](orchestrator::memory::Journal) (each execution's consumed event, produced events
//! and record, written in the same transaction as the state) and
//! [`Outbox`](orchestrator::outbox::Outbox) (the events in flight).
//!
//! # Design
//!
//! * **One file, several processes.** The database runs in WAL mode. Leases live in a table and
//!   are taken inside `BEGIN IMMEDIATE`, so processes sharing the file exclude each other; fencing
//!   tokens come from one counter row and keep growing even after a workflow's rows are deleted.
//!   A lock is one attempt: a held lease is denied at once (`Ok(None)`), and the caller (the
//!   runtime's dispatcher) decides when to try again.
//! * **Two writer operations per step.** A dedicated writer thread owns the write connection,
//!   fed through a channel and answering through oneshot channels; reads run on a small pool of
//!   read connections in `tokio::task::spawn_blocking`. The lifecycle's `acquire` (with a lock)
//!   is one operation of the writer (the lease, then the record's version, the record when the
//!   record cache does not have it, and the journal's answer to the event), and `commit` is one
//!   (lease and compare-and-swap checks, the record, the journal entry, the wake-up, the outbox
//!   step, the retention of a finished workflow, the release of the lease). On a node whose
//!   transport serializes a workflow's events (the in-process transport), steps take no lease:
//!   `acquire` is answered from the record cache or a read connection, and a step is one
//!   writer operation.
//! * **Group commit.** The writer drains every queued operation, runs them in one transaction,
//!   commits once (one fsync with [`Synchronous::Full`]) and only then answers the callers: no
//!   caller is acknowledged before its commit is durable. Every operation checks (compare-and-
//!   swap, lease) before it changes anything, so a refused operation changes nothing and leaves
//!   the others of its group committed; an operation failing after a change (an I/O error
//!   midway) rolls its whole group back. [`SqliteMemory::stats`] counts transactions and
//!   operations.
//! * **Wake-ups on the store's clock.** `claim_due` runs in the writer, on its clock, and marks
//!   each workflow it hands out as claimed (`claimed_until_ms`); any write of the workflow ends
//!   the claim.
//! * **Versioned schema.** The library creates and migrates its tables (`PRAGMA user_version`,
//!   [`SCHEMA_VERSION`]); a file from a newer version is refused with
//!   [`OpenError::NewerSchema`].
//! * **Outbox.** The events in flight are kept in the same file, so that a process killed
//!   mid-workflow loses none of them. A commit carrying an `OutboxStep` removes the consumed
//!   event and adds the produced ones in its own transaction (see
//!   `orchestrator::orchestration::Lifecycle::with_outbox`); [`orchestrator::outbox::redeliver`]
//!   sends what is left at start-up.
//! * **Workflow index.** [`SqliteMemory`] is a
//!   [`WorkflowIndex`](orchestrator::memory::WorkflowIndex) (schema version 6): each workflow's
//!   row keeps its status, its root and what its subject says (orchestrator version, execution
//!   id, meta; parsed when the row is created, with the meta also in `workflow_meta` rows), and
//!   listings search indexes by orchestrator, status, initiator, root, execution id and meta,
//!   newest first.
//! * **Retention.** [`Retention::Keep`] (the default), [`Retention::Remove`],
//!   [`Retention::RemoveAfter`] or [`Retention::Archive`] (moves a finished workflow's record
//!   and journal to archive tables), applied in the transaction of the finishing commit.
//!
//! # Record cache
//!
//! The records this store commits are kept decoded (up to [`SqliteConfig::record_cache`]
//! workflows), with a hash of each event they consumed. `acquire` with a lock checks the cached
//! version against the stored one in the writer, in the operation that takes the lease: a
//! current entry saves reading and decoding the record and, when the event was never consumed,
//! the journal lookup. Another process's commit invalidates the cache (the writer checks
//! `PRAGMA data_version` under the write lock). `acquire` without a lock answers from the cache
//! without checking: the record may then be older than a commit not recorded here yet, which
//! the compare-and-swap of the commit that follows refuses.
//!
//! Records are serialized as JSON (`serde_json`) and stored compressed; times as milliseconds
//! since the Unix epoch. The journal is compact ([`orchestrator::memory::journal_codec`]): each
//! row keeps its record as a snapshot or as a JSON Patch against the previous row's (snapshots
//! come when the deltas since the last one reach the record's size, so a workflow's journal grows
//! with what changed, not with its record times its steps; the writer keeps each workflow's
//! latest journal record to diff against rather than rebuilding it), and its consumed and produced events
//! as one deflated value; a consumed event is found again by a hash of its `(source, id)`, checked
//! against the row's events. The latest record is stored once: in its journal row, from which a
//! read rebuilds it (the record cache spares most reads), or, after a write without a journal
//! entry, in the workflow's row in the journal's snapshot encoding. A two-step workflow with its
//! full journal takes about 2 KB of the file (BENCHMARKS.md). A row that cannot be
//! decoded gives a permanent `MemoryError::Backend` with a [`SqliteError::Decode`] (or, for a
//! corrupt journal value, [`SqliteError::Journal`]) cause; a busy database, a full disk or an I/O
//! error a transient one (see [`SqliteError::is_transient`]).
//!
//! The driver is `rusqlite` with its `bundled` SQLite. sqlx is not used: sqlx 0.9 and
//! rusqlite ≥ 0.40 link conflicting versions of `libsqlite3-sys`, and the PostgreSQL backend is
//! to use `tokio-postgres`, so the workspace keeps a single `libsqlite3-sys`.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # tokio::runtime::Builder::new_current_thread().enable_time().build()?.block_on(async {
//! use std::time::{Duration, SystemTime};
//! use orchestrator::memory::{Commit, EventKey, Journal, JournalEntry, Memory, MemoryExt, WriteMeta};
//! use orchestrator_sqlite::{Retention, SqliteConfig, SqliteMemory};
//!
//! let dir = tempfile::tempdir()?;
//! let memory: SqliteMemory<String> = SqliteConfig::new(dir.path().join("workflows.db"))
//!     .lease_ttl(Duration::from_secs(30))
//!     .retention(Retention::Archive)
//!     .open()?;
//! let key = EventKey { source: "com.example.client", id: "event-1" };
//!
//! // One writer operation: the lease, the record (none yet) and the journal's answer.
//! let acquired = memory.acquire("wf-1", key, true).await?.expect("a free lease");
//! let lease = acquired.lease.expect("asked for");
//! assert!(acquired.stored.is_none() && acquired.produced.is_none());
//! let entry = JournalEntry { at: SystemTime::now(), consumed: None, produced: &[] };
//! let meta = WriteMeta { entry: Some(entry), ..WriteMeta::new("wf-1", "arvo.orc.demo") };
//! let v1 = memory.write("wf-1", &"started".to_owned(), None, Some(&lease), &meta).await?;
//! // A writer with a stale view cannot overwrite.
//! assert!(memory.write("wf-1", &"other".to_owned(), None, Some(&lease), &meta).await.is_err());
//!
//! // One writer operation: the write, its journal entry, the retention of the finished
//! // workflow (archived) and the release of the lease.
//! let finish = Commit { release: true, finished: true, ..Commit::new("wf-1", "done".to_owned(), Some(v1), meta) };
//! memory.commit(finish.lease(Some(&lease))).await?;
//!
//! assert!(memory.read("wf-1").await?.is_none());
//! assert_eq!(memory.archived("wf-1").await?.map(|s| s.record), Some("done".to_owned()));
//! assert_eq!(memory.archived_history("wf-1", 0, 10).await?.len(), 2);
//! assert!(memory.lock("wf-1").await?.is_some(), "the lease was released");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })
//! # }
//! ```

mod answers;
mod cache;
mod catalog;
mod checkpoint;
mod config;
mod consumed_key;
mod dead_letters;
mod error;
mod journal;
mod memory;
mod ops;
mod outbox;
mod reads;
mod record_column;
mod schema;
mod store;
mod tail_cache;
mod time;
mod writer;

pub use config::{SqliteConfig, Synchronous};
pub use error::{OpenError, SqliteError};
/// What happens to a finished workflow: the policy every store shares (see
/// [`SqliteConfig::retention`] for what each does here).
pub use orchestrator::memory::Retention;
pub use schema::SCHEMA_VERSION;
pub use store::SqliteMemory;
pub use writer::Stats;

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use crate::time;

    #[test]
    fn times_round_trip_and_wake_ups_round_up() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        assert_eq!(time::from_ms("t", time::to_ms(t)).ok(), Some(t));
        let later = t + Duration::from_micros(1);
        assert_eq!(time::to_ms_ceil(later), time::to_ms(t) + 1);
        assert_eq!(time::to_ms_ceil(t), time::to_ms(t));
        let before = SystemTime::UNIX_EPOCH - Duration::from_millis(5);
        assert_eq!(time::from_ms("t", time::to_ms(before)).ok(), Some(before));
    }
}
