//! Workflow stores: each workflow's record with compare-and-swap, leases with fencing, its
//! journal, its next wake-up, and the policy every backend shares.
//!
//! A [`Memory`] (Arvo's `IMachineMemory`, reshaped for networked backends) stores one record per
//! workflow, keyed by its subject. The lifecycle needs two calls per step:
//!
//! * [`Memory::acquire`]: the lease (one attempt: `Ok(None)` when another holder has it), the
//!   record and, if the workflow already consumed the event, the events it produced then
//!   (idempotent redelivery, keyed by the event's `(source, id)` as CloudEvents defines
//!   uniqueness);
//! * [`Memory::commit`]: the compare-and-swap write against the version read (`None` = must not
//!   exist yet), fenced by the lease, with the journal entry, the next wake-up, the retention of
//!   a finished workflow, an optional outbox step (for stores that are also an
//!   [`Outbox`](crate::outbox::Outbox)) and the release of the lease, in one transaction.
//!
//! Around them: [`Memory::read`], [`Memory::lock`], [`Memory::renew`] (long steps, heartbeats),
//! [`Memory::unlock`] (tolerant: releasing a lapsed lease is not an error), [`Memory::produced`]
//! (the journal's answer to a redelivery), [`Memory::claim_due`] (wake-ups due by the store's
//! own clock, claimed so that several nodes do not fire the same one) and [`Memory::cleanup`].
//!
//! No method retries: a denied lock is answered at once, and the caller (the runtime's
//! dispatcher) decides when to try again. [`MemoryError::is_transient`] says which errors a
//! retry may cure.
//!
//! Every method is required (a backend cannot forget idempotency by inheriting a default), and
//! they are declared once: the object-safe [`DynMemory`] (a backend chosen at run time,
//! `Arc<dyn DynMemory<R>>`) and the forwarding through `Arc<M>` are generated from the same list.
//!
//! Stores also list and count their workflows ([`WorkflowIndex`]: by orchestrator, version,
//! status, initiator, parent, root, time and the subject's meta, newest first, a page at a time).
//!
//! [`InMemory`] is a concurrency-safe backend for one process. The `testing` feature adds
//! `testing::conformance`, the suite every backend must pass (and `testing::index`, the
//! workflow index's).

mod answers;
mod catalog;
mod dead_letters;
mod dyn_index;
mod dynamic;
mod in_memory;
mod index;
mod journal;
pub mod journal_codec;
mod policy;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::event::Event;

pub use answers::{AnswerKey, Answers, DynAnswers};
pub use catalog::{Catalog, Definition, DefinitionKind, DynCatalog, Recorded};
pub(crate) use dead_letters::GraveyardOf;
pub use dead_letters::{Buried, DeadLetterStore, DynDeadLetterStore};
pub use dyn_index::DynWorkflowIndex;
pub use in_memory::{InMemory, InMemoryConfig};
pub use index::{
    DEFAULT_PAGE, Page, SubjectColumns, TimeRange, WorkflowCursor, WorkflowFilter, WorkflowIndex,
    WorkflowSummary,
};
pub use journal::{Journal, JournalRecord};
pub use policy::{NodeId, Retention, check_id, from_unix_ms, unix_ms};

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

/// An event's identity as CloudEvents defines it: its `source` and its `id`. Two events with the
/// same id from different sources are different events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EventKey<'a> {
    /// The event's source.
    pub source: &'a str,
    /// The event's id.
    pub id: &'a str,
}

impl<'a> EventKey<'a> {
    /// The key of `event`.
    pub fn of(event: &'a Event) -> Self {
        Self { source: event.source(), id: event.id() }
    }

    /// Whether `event` has this key.
    pub fn matches(&self, event: &Event) -> bool {
        event.id() == self.id && event.source() == self.source
    }
}

/// What a write is about, for backends that index workflows (Arvo 3.0.28's write metadata), plus
/// what this runtime adds: the workflow's next wake-up and the journal entry of the execution.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteMeta<'a> {
    /// The workflow's subject (the record's key).
    pub subject: &'a str,
    /// The subject already parsed, when the writer has it (the lifecycle does): a store takes
    /// its index columns from it ([`WriteMeta::subject_columns`]) instead of decoding `subject`
    /// again. Ignored unless it is `subject`.
    pub parsed_subject: Option<&'a crate::subject::Subject>,
    /// The parent workflow's subject, for a child workflow (`Resolved(None)` for a root).
    pub parent_subject: Materialized<Option<&'a str>>,
    /// Who started the workflow.
    pub initiator: Materialized<&'a str>,
    /// The handler that writes (its source topic).
    pub source: &'a str,
    /// When the workflow must next be woken up (its earliest durable timer), if ever. A backend
    /// indexes it for [`Memory::claim_due`]; each write replaces the previous value (and any
    /// claim on it).
    pub wake_at: Option<SystemTime>,
    /// What the execution consumed and produced. A journaling backend appends it, with the
    /// record written, to the workflow's journal in the same transaction as the write.
    pub entry: Option<JournalEntry<'a>>,
    /// Where the workflow stands after this write (the lifecycle sets it from the record with
    /// [`WorkflowRecord::workflow_state`](crate::orchestration::WorkflowRecord::workflow_state)).
    /// Every store keeps it for its [`WorkflowIndex`] (a workflow is listed by it).
    pub status: WorkflowState,
}

impl<'a> WriteMeta<'a> {
    /// Metadata with only the subject and source known.
    pub fn new(subject: &'a str, source: &'a str) -> Self {
        Self {
            subject,
            parsed_subject: None,
            parent_subject: Materialized::Pending,
            initiator: Materialized::Pending,
            source,
            wake_at: None,
            entry: None,
            status: WorkflowState::Active,
        }
    }

    /// What workflow `id`'s subject says, for the workflow index: taken from
    /// [`WriteMeta::parsed_subject`] when that is `id`, else parsed from `id` (`None` when it is
    /// not an orchestration subject).
    pub fn subject_columns(&self, id: &str) -> Option<SubjectColumns> {
        match self.parsed_subject {
            Some(parsed) if parsed.as_str() == id => Some(SubjectColumns::of(parsed)),
            _ => SubjectColumns::parse(id),
        }
    }
}

/// Where a workflow stands, as a store indexes it (see [`WriteMeta::status`]): the kind of
/// [`WorkflowStatus`](crate::runtime::WorkflowStatus) without its details, so that a backend can
/// keep it in a column and list workflows by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum WorkflowState {
    /// Running, waiting for an event (a service's answer, a signal).
    #[default]
    Active,
    /// Running, waiting for a durable timer ([`WriteMeta::wake_at`] is set).
    Waiting,
    /// Finished: it reached a final state and emitted its completion.
    Done,
    /// Failed: its failure latch is set, it ignores later events.
    Failed,
    /// Cancelled: a cancel request ended it ([`crate::orchestration::cancel`]), its timers are
    /// dropped and it ignores later events.
    Cancelled,
}

impl WorkflowState {
    /// Its name as stores write it: `active`, `waiting`, `done`, `failed` or `cancelled`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Waiting => "waiting",
            Self::Done => "done",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// The state named `name` (see [`WorkflowState::as_str`]), if it is one.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "active" => Some(Self::Active),
            "waiting" => Some(Self::Waiting),
            "done" => Some(Self::Done),
            "failed" => Some(Self::Failed),
            "cancelled" => Some(Self::Cancelled),
            _ => None,
        }
    }

    /// Whether the workflow ended (done, failed or cancelled).
    pub fn is_finished(self) -> bool {
        matches!(self, Self::Done | Self::Failed | Self::Cancelled)
    }
}

impl std::fmt::Display for WorkflowState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One execution of a workflow, as the lifecycle hands it to [`Memory::commit`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JournalEntry<'a> {
    /// The time the execution ran at (the "now" its timers were computed from).
    pub at: SystemTime,
    /// The event consumed; `None` for a timer wake-up.
    pub consumed: Option<&'a Event>,
    /// The events produced, in emission order.
    pub produced: &'a [Event],
}

/// An outbox step committed with the state, by stores that are also an
/// [`Outbox`](crate::outbox::Outbox): the consumed event leaves the outbox and the produced ones
/// enter it, in the same transaction as the write.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OutboxStep<'a> {
    /// The id of the event consumed (absent from the outbox: nothing to remove).
    pub consumed: Option<&'a str>,
    /// The events produced that travel through the outbox (not those with a domain).
    pub produced: &'a [Event],
}

/// One atomic write of a workflow (see [`Memory::commit`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Commit<'a, R> {
    /// The workflow id.
    pub id: &'a str,
    /// The new record.
    pub record: R,
    /// The version the writer read (`None` = the record must not exist yet).
    pub prev: Option<u64>,
    /// The writer's lease: the write is refused with [`MemoryError::StaleLease`] unless it is
    /// still the current one (fencing).
    pub lease: Option<&'a Lease>,
    /// Release the lease once written, in the same transaction.
    pub release: bool,
    /// The workflow finished with this write: apply the store's [`Retention`].
    pub finished: bool,
    /// What the write is about (journal entry, wake-up, parent…).
    pub meta: WriteMeta<'a>,
    /// An outbox step to commit with the write. A store that is not an outbox refuses it with
    /// [`MemoryError::Unsupported`].
    pub outbox: Option<OutboxStep<'a>>,
}

impl<'a, R> Commit<'a, R> {
    /// A plain compare-and-swap write of `record` against `prev`, with `meta`: no lease, nothing
    /// released, not finished, no outbox step.
    pub fn new(id: &'a str, record: R, prev: Option<u64>, meta: WriteMeta<'a>) -> Self {
        Self { id, record, prev, lease: None, release: false, finished: false, meta, outbox: None }
    }

    /// Fenced by `lease` (kept after the write).
    #[must_use]
    pub fn lease(mut self, lease: Option<&'a Lease>) -> Self {
        self.lease = lease;
        self
    }
}

/// What [`Memory::acquire`] finds: the lease taken (when asked for), the workflow's record and,
/// if the workflow already consumed the event, the events it produced then.
#[derive(Debug, Clone, PartialEq)]
pub struct Acquired<R> {
    /// The lease, when [`Memory::acquire`] was asked to lock.
    pub lease: Option<Lease>,
    /// The record (shared) and its version, or `None`.
    pub stored: Option<Stored<Arc<R>>>,
    /// The events produced when the event was first consumed (`None` when it was not consumed
    /// yet or there is no record).
    pub produced: Option<Vec<Event>>,
}

/// A workflow due for a wake-up (see [`Memory::claim_due`]).
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
    /// When the lease lapses unless released or renewed earlier.
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
    /// The store does not offer what was asked (an outbox step from a store that is no outbox).
    #[error("the store does not support {what}")]
    Unsupported {
        /// What was asked.
        what: &'static str,
    },
    /// The backend failed (I/O, connection, encoding…).
    #[error("memory backend failed on workflow {id}: {source}")]
    Backend {
        /// The workflow id.
        id: String,
        /// Whether trying again later may succeed (a busy or unreachable store, a full disk) or
        /// not (a record that cannot be decoded).
        transient: bool,
        /// The underlying error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl MemoryError {
    /// Whether trying again later may succeed: conflicts, stale leases and transient backend
    /// failures; not invalid ids, unsupported requests or permanent backend failures.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Conflict { .. } | Self::StaleLease { .. } => true,
            Self::Backend { transient, .. } => *transient,
            Self::InvalidId { .. } | Self::Unsupported { .. } => false,
        }
    }
}

macro_rules! memory_trait {
    ($(
        $(#[$doc:meta])*
        fn $name:ident, $dyn_name:ident <$a:lifetime> (&$s:lifetime self $(, $arg:ident : $ty:ty)*) -> $out:ty;
    )*) => {
        /// Workflow state storage with leases, compare-and-swap writes and a journal (see the
        /// [module documentation](self)). `R` is the persisted record type.
        ///
        /// Methods return `Send` futures.
        pub trait Memory<R: Send + Sync + 'static>: Send + Sync {
            $(
                $(#[$doc])*
                fn $name<$a>(&$s self $(, $arg: $ty)*)
                    -> impl std::future::Future<Output = Result<$out, MemoryError>> + Send + $a;
            )*

            /// The store's [`Catalog`] of definitions, when it keeps one: a
            /// [`Node`](crate::runtime::Node) records there the orchestrators it runs and their
            /// contracts when it starts. `None` (the default): the store keeps none.
            fn catalog(&self) -> Option<&dyn DynCatalog> {
                None
            }

            /// The store's recorded [`Answers`], when it keeps them: a
            /// [`Node`](crate::runtime::Node) looks up and records there the answers of its
            /// [idempotent services](crate::runtime::NodeBuilder::idempotent_service). `None`
            /// (the default): the store keeps none.
            fn answers(&self) -> Option<&dyn DynAnswers> {
                None
            }

            /// The store's [`DeadLetterStore`], when it keeps dead letters: a
            /// [`Node`](crate::runtime::Node) whose transport keeps none buries its dead letters
            /// there. `None` (the default): the store keeps none.
            fn dead_letter_store(&self) -> Option<&dyn DynDeadLetterStore> {
                None
            }

            /// The store's [`WorkflowIndex`], when it keeps one: a workflow cancelled with its
            /// children finds them there ([`crate::orchestration::cancel`]). `None` (the
            /// default): the store lists no workflows.
            fn workflow_index(&self) -> Option<&dyn DynWorkflowIndex> {
                None
            }
        }

        /// Object-safe [`Memory`]: every [`Memory`] is a `DynMemory`, and
        /// `Arc<dyn DynMemory<R>>` is a [`Memory`] again.
        ///
        /// ```
        /// use std::sync::Arc;
        /// use orchestrator::memory::{DynMemory, InMemory};
        /// let memory: Arc<dyn DynMemory<String>> = Arc::new(InMemory::<String>::default());
        /// # let _ = memory;
        /// ```
        pub trait DynMemory<R: Send + Sync + 'static>: Send + Sync {
            $(
                #[doc = concat!("See [`Memory::", stringify!($name), "`].")]
                fn $dyn_name<$a>(&$s self $(, $arg: $ty)*)
                    -> dynamic::BoxFuture<$a, Result<$out, MemoryError>>;
            )*
            /// See [`Memory::catalog`].
            fn catalog_dyn(&self) -> Option<&dyn DynCatalog>;
            /// See [`Memory::answers`].
            fn answers_dyn(&self) -> Option<&dyn DynAnswers>;
            /// See [`Memory::dead_letter_store`].
            fn dead_letter_store_dyn(&self) -> Option<&dyn DynDeadLetterStore>;
            /// See [`Memory::workflow_index`].
            fn workflow_index_dyn(&self) -> Option<&dyn DynWorkflowIndex>;
        }

        impl<R: Send + Sync + 'static, M: Memory<R>> DynMemory<R> for M {
            $(
                fn $dyn_name<$a>(&$s self $(, $arg: $ty)*) -> dynamic::BoxFuture<$a, Result<$out, MemoryError>> {
                    Box::pin(self.$name($($arg),*))
                }
            )*
            fn catalog_dyn(&self) -> Option<&dyn DynCatalog> {
                self.catalog()
            }
            fn answers_dyn(&self) -> Option<&dyn DynAnswers> {
                self.answers()
            }
            fn dead_letter_store_dyn(&self) -> Option<&dyn DynDeadLetterStore> {
                self.dead_letter_store()
            }
            fn workflow_index_dyn(&self) -> Option<&dyn DynWorkflowIndex> {
                self.workflow_index()
            }
        }

        // `(**self)`: the `Arc` is itself a `DynMemory` (through the blanket impl), so calling
        // the method on `self` would recurse into this impl.
        impl<R: Send + Sync + 'static> Memory<R> for Arc<dyn DynMemory<R>> {
            $(
                fn $name<$a>(&$s self $(, $arg: $ty)*)
                    -> impl std::future::Future<Output = Result<$out, MemoryError>> + Send + $a {
                    (**self).$dyn_name($($arg),*)
                }
            )*
            fn catalog(&self) -> Option<&dyn DynCatalog> {
                (**self).catalog_dyn()
            }
            fn answers(&self) -> Option<&dyn DynAnswers> {
                (**self).answers_dyn()
            }
            fn dead_letter_store(&self) -> Option<&dyn DynDeadLetterStore> {
                (**self).dead_letter_store_dyn()
            }
            fn workflow_index(&self) -> Option<&dyn DynWorkflowIndex> {
                (**self).workflow_index_dyn()
            }
        }

        impl<R: Send + Sync + 'static, M: Memory<R>> Memory<R> for Arc<M> {
            $(
                fn $name<$a>(&$s self $(, $arg: $ty)*)
                    -> impl std::future::Future<Output = Result<$out, MemoryError>> + Send + $a {
                    (**self).$name($($arg),*)
                }
            )*
            fn catalog(&self) -> Option<&dyn DynCatalog> {
                (**self).catalog()
            }
            fn answers(&self) -> Option<&dyn DynAnswers> {
                (**self).answers()
            }
            fn dead_letter_store(&self) -> Option<&dyn DynDeadLetterStore> {
                (**self).dead_letter_store()
            }
            fn workflow_index(&self) -> Option<&dyn DynWorkflowIndex> {
                (**self).workflow_index()
            }
        }
    };
}

memory_trait! {
    /// The record of workflow `id` and its version, or `None`.
    fn read, read_dyn<'a>(&'a self, id: &'a str) -> Option<Stored<R>>;

    /// One attempt at the lease on workflow `id`: `Ok(None)` when another holder has it. Never
    /// waits for it.
    fn lock, lock_dyn<'a>(&'a self, id: &'a str) -> Option<Lease>;

    /// Extends a lease for another full TTL from now (the store's clock): the renewed lease, or
    /// [`MemoryError::StaleLease`] when it lapsed or was superseded meanwhile.
    fn renew, renew_dyn<'a>(&'a self, lease: &'a Lease) -> Lease;

    /// Releases a lease; `Ok(false)` when it had already lapsed or been superseded.
    fn unlock, unlock_dyn<'a>(&'a self, lease: &'a Lease) -> bool;

    /// What the lifecycle needs before running `event` on workflow `id`, in one round trip: the
    /// lease when `lock` is true (`Ok(None)` when another holder has it: nothing else is read),
    /// the record, and the events produced when the workflow consumed `event` before (its
    /// journal's answer, as [`Memory::produced`]).
    fn acquire, acquire_dyn<'a>(&'a self, id: &'a str, event: EventKey<'a>, lock: bool) -> Option<Acquired<R>>;

    /// Writes `commit.record` if the current version is `commit.prev` and, with a lease, the
    /// lease is still current; appends the journal entry, indexes the wake-up, applies the
    /// retention when the workflow finished, takes the outbox step and releases the lease when
    /// asked, all in one transaction. Returns the new version. On an error nothing was changed
    /// (the lease is still held: release it with [`Memory::unlock`]).
    fn commit, commit_dyn<'a>(&'a self, commit: Commit<'a, R>) -> u64;

    /// The events produced when workflow `id` consumed `event`, from its journal: a redelivered
    /// event then gets the same answer without running the handler again. `None` when the
    /// workflow did not consume it (an event with the same id from another source is another
    /// event).
    fn produced, produced_dyn<'a>(&'a self, id: &'a str, event: EventKey<'a>) -> Option<Vec<Event>>;

    /// Up to `limit` workflows whose wake-up ([`WriteMeta::wake_at`] of their last write) is at
    /// or before now, by the store's own clock, earliest first, that nobody claimed in the last
    /// `claim`: each is claimed for `claim` (until then no other caller gets it; a write of the
    /// workflow ends the claim).
    fn claim_due, claim_due_dyn<'a>(&'a self, limit: usize, claim: Duration) -> Vec<Wake>;

    /// Applies the store's retention to workflow `id` now, as a commit with `finished` does.
    fn cleanup, cleanup_dyn<'a>(&'a self, id: &'a str) -> ();
}

/// Conveniences over [`Memory`], for every store.
pub trait MemoryExt<R: Send + Sync + 'static>: Memory<R> {
    /// A compare-and-swap write of a copy of `record` against `prev`, fenced by `lease` (which
    /// stays held): [`Memory::commit`] of [`Commit::new`].
    fn write<'a>(
        &'a self,
        id: &'a str,
        record: &R,
        prev: Option<u64>,
        lease: Option<&'a Lease>,
        meta: &WriteMeta<'a>,
    ) -> impl std::future::Future<Output = Result<u64, MemoryError>> + Send + 'a
    where
        R: Clone,
    {
        self.commit(Commit::new(id, record.clone(), prev, meta.clone()).lease(lease))
    }
}

impl<R: Send + Sync + 'static, M: Memory<R> + ?Sized> MemoryExt<R> for M {}
