//! Workflow memory: Arvo's `IMachineMemory` (3.0.28 shape) with leases and compare-and-swap.
//!
//! A [`Memory`] stores one record per workflow (keyed by its subject) and offers:
//!
//! * [`Memory::read`]: the record and its version;
//! * [`Memory::write`]: compare-and-swap against the version the writer read (`None` = "must not
//!   exist yet"), so a stale writer gets [`MemoryError::Conflict`] instead of silently
//!   overwriting; a writer holding a [`Lease`] passes it and a superseded lease (its fencing token
//!   is no longer current) gets [`MemoryError::StaleLease`];
//! * [`Memory::lock`]: a lease with a TTL and a fencing token; `Ok(None)` means *denied* (someone
//!   else holds it), distinct from an error ("fail fast on acquire");
//! * [`Memory::unlock`]: releases a lease; releasing an expired or superseded lease is not an
//!   error ("tolerant on release");
//! * [`Memory::cleanup`]: called once a workflow completes; what it does is the backend's
//!   retention policy.
//!
//! Trait methods return `Send` futures. [`DynMemory`] is the object-safe form, so a backend can be
//! chosen at run time (`Arc<dyn DynMemory<R>>` implements [`Memory`]).
//!
//! [`InMemory`] is a concurrency-safe backend for one process. The `testing` feature adds
//! `testing::conformance`, the suite every backend must pass.

mod dynamic;
mod in_memory;
mod journal;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

use std::future::Future;
use std::sync::Arc;
use std::time::SystemTime;

use crate::event::Event;

pub use dynamic::DynMemory;
pub use in_memory::{InMemory, InMemoryConfig, Retention};
pub use journal::{Journal, JournalRecord};

/// A record with the version it was stored at (versions start at 1 and grow by 1 per write).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored<R> {
    /// The record.
    pub record: R,
    /// Its version.
    pub version: u64,
}

/// A value that may not be known yet when a record is written (Arvo's `Materializable`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Materialized<T> {
    /// Not known yet.
    #[default]
    Pending,
    /// Known.
    Resolved(T),
}

/// What a write is about, for backends that index workflows (Arvo 3.0.28's write metadata), plus
/// what this runtime adds: the workflow's next wake-up and the journal entry of the execution.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteMeta<'a> {
    /// The workflow's subject (the record's key).
    pub subject: &'a str,
    /// The parent workflow's subject, for a child workflow (`Resolved(None)` for a root).
    pub parent_subject: Materialized<Option<&'a str>>,
    /// Who started the workflow.
    pub initiator: Materialized<&'a str>,
    /// The handler that writes (its source topic).
    pub source: &'a str,
    /// When the workflow must next be woken up (its earliest durable timer), if ever. A backend
    /// indexes it for [`Memory::due`]; each write replaces the previous value.
    pub wake_at: Option<SystemTime>,
    /// What the execution consumed and produced. A journaling backend appends it, with the
    /// record written, to the workflow's journal in the same transaction as the write.
    pub entry: Option<JournalEntry<'a>>,
}

impl<'a> WriteMeta<'a> {
    /// Metadata with only the subject and source known.
    pub fn new(subject: &'a str, source: &'a str) -> Self {
        Self {
            subject,
            parent_subject: Materialized::Pending,
            initiator: Materialized::Pending,
            source,
            wake_at: None,
            entry: None,
        }
    }
}

/// One execution of a workflow, as the lifecycle hands it to [`Memory::write`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JournalEntry<'a> {
    /// The time the execution ran at (the "now" its timers were computed from).
    pub at: SystemTime,
    /// The event consumed; `None` for a timer wake-up.
    pub consumed: Option<&'a Event>,
    /// The events produced, in emission order.
    pub produced: &'a [Event],
}

/// What [`Memory::lookup`] finds for one delivery: the workflow's record and, if the workflow
/// already consumed the event, the events it produced then.
#[derive(Debug, Clone, PartialEq)]
pub struct Lookup<R> {
    /// The record (shared, as [`Memory::read_shared`] gives it) and its version, or `None`.
    pub stored: Option<Stored<Arc<R>>>,
    /// The events produced when the event was first consumed (journaling backends; `None` when
    /// it was not consumed yet, when there is no record, or without a journal).
    pub produced: Option<Vec<Event>>,
}

/// A workflow due for a wake-up (see [`Memory::due`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wake {
    /// The workflow id.
    pub id: String,
    /// When it is due.
    pub at: SystemTime,
}

/// A lock lease on one workflow: valid until `expires_at` unless superseded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The workflow id.
    pub id: String,
    /// Fencing token: strictly increasing per workflow; a write with an older token is refused.
    pub token: u64,
    /// When the lease lapses unless released earlier.
    pub expires_at: SystemTime,
}

/// Why a memory operation failed.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// The workflow id is unusable.
    #[error("invalid workflow id {id:?}: {reason}")]
    InvalidId {
        /// The id.
        id: String,
        /// Why.
        reason: &'static str,
    },
    /// Compare-and-swap failed: the record changed since the writer read it.
    #[error("write conflict on workflow {id}: expected version {expected:?}, found {found:?}")]
    Conflict {
        /// The workflow id.
        id: String,
        /// The version the writer expected (`None` = no record).
        expected: Option<u64>,
        /// The version found (`None` = no record).
        found: Option<u64>,
    },
    /// The writer's lease expired or was superseded (fencing).
    #[error("stale lease on workflow {id}: token {token} is no longer current")]
    StaleLease {
        /// The workflow id.
        id: String,
        /// The writer's token.
        token: u64,
    },
    /// The backend failed (I/O, connection, encoding…).
    #[error("memory backend failed on workflow {id}: {source}")]
    Backend {
        /// The workflow id.
        id: String,
        /// The underlying error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// Workflow state storage with leases and compare-and-swap writes.
///
/// `R` is the persisted record type.
pub trait Memory<R>: Send + Sync {
    /// The record of workflow `id` and its version, or `None`.
    fn read(&self, id: &str) -> impl Future<Output = Result<Option<Stored<R>>, MemoryError>> + Send;

    /// Stores `record` if the current version is `prev` (`None` = the record must not exist);
    /// with a `lease`, also checks that the lease is still the current one. Returns the new version.
    fn write(
        &self,
        id: &str,
        record: &R,
        prev: Option<u64>,
        lease: Option<&Lease>,
        meta: &WriteMeta<'_>,
    ) -> impl Future<Output = Result<u64, MemoryError>> + Send;

    /// [`Memory::read`] with the record behind an [`Arc`], so a backend that keeps its records
    /// in memory can share its own instead of cloning it. The default wraps [`Memory::read`].
    fn read_shared(
        &self,
        id: &str,
    ) -> impl Future<Output = Result<Option<Stored<Arc<R>>>, MemoryError>> + Send
    where
        R: Send + Sync,
    {
        async move {
            let stored = self.read(id).await?;
            Ok(stored.map(|Stored { record, version }| Stored { record: Arc::new(record), version }))
        }
    }

    /// [`Memory::write`] taking the record by value, so a backend that keeps its records in
    /// memory can store it instead of cloning it. The default writes a reference to it.
    fn write_owned(
        &self,
        id: &str,
        record: R,
        prev: Option<u64>,
        lease: Option<&Lease>,
        meta: &WriteMeta<'_>,
    ) -> impl Future<Output = Result<u64, MemoryError>> + Send
    where
        R: Send + Sync,
    {
        async move { self.write(id, &record, prev, lease, meta).await }
    }

    /// Acquires the lease on workflow `id`; `Ok(None)` when another holder has it.
    fn lock(&self, id: &str) -> impl Future<Output = Result<Option<Lease>, MemoryError>> + Send;

    /// Releases a lease; `Ok(false)` when it had already lapsed or been superseded.
    fn unlock(&self, lease: &Lease) -> impl Future<Output = Result<bool, MemoryError>> + Send;

    /// Up to `limit` workflows whose wake-up ([`WriteMeta::wake_at`] of their last write) is at or
    /// before `now`, earliest first.
    fn due(
        &self,
        now: SystemTime,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<Wake>, MemoryError>> + Send;

    /// The events produced when workflow `id` consumed the event `event_id`, if the backend keeps
    /// a journal and has it: a redelivered event then gets the same answer without running the
    /// handler again. Backends without a journal answer `Ok(None)` (the default).
    fn produced(
        &self,
        id: &str,
        event_id: &str,
    ) -> impl Future<Output = Result<Option<Vec<Event>>, MemoryError>> + Send {
        let _ = (id, event_id);
        async { Ok(None) }
    }

    /// [`Memory::read_shared`] and, when there is a record, [`Memory::produced`] for `event_id`: what
    /// the lifecycle needs before running an event. A backend can answer both in one round trip
    /// from one snapshot; the default makes the two calls.
    fn lookup(&self, id: &str, event_id: &str) -> impl Future<Output = Result<Lookup<R>, MemoryError>> + Send
    where
        R: Send + Sync,
    {
        async move {
            let stored = self.read_shared(id).await?;
            let produced = match stored {
                Some(_) => self.produced(id, event_id).await?,
                None => None,
            };
            Ok(Lookup { stored, produced })
        }
    }

    /// Called once when workflow `id` completes; applies the backend's retention policy.
    fn cleanup(&self, id: &str) -> impl Future<Output = Result<(), MemoryError>> + Send {
        let _ = id;
        async { Ok(()) }
    }
}

/// Rejects ids no backend can store.
pub(crate) fn check_id(id: &str) -> Result<(), MemoryError> {
    if id.is_empty() {
        return Err(MemoryError::InvalidId { id: id.to_owned(), reason: "it is empty" });
    }
    Ok(())
}
