//! Stateful orchestration: the lifecycle every orchestrator runs (Arvo's
//! `orchestrationExecutionWrapper`) and the orchestrators built on it, each a [`Workflow`] over
//! its [`CoreStep`]:
//!
//! * [`Orchestrator`]: the statechart orchestrator over [`machine!`](crate::machine!) machines
//!   (Arvo's `ArvoOrchestrator`), core [`MachineCore`];
//! * [`Resumable`]: the imperative, resumable orchestrator (Arvo's `ArvoResumable`), core
//!   [`ResumableCore`](resumable::ResumableCore).
//!
//! Beside them: durable timers ([`timers`]), retries of service calls ([`retry`]), cancellation
//! ([`cancel`]), a workflow's history ([`history`]) and replay ([`replay`]). The events the orchestrators emit are built in [`crate::emit`]; incoming events
//! are resolved against their contracts in [`contract`](mod@crate::contract).
//!
//! # The lifecycle ([`Lifecycle::execute`])
//!
//! For each event delivered to an orchestrator (source `arvo.orc.<name>`):
//!
//! | Step | Action | On problem |
//! |---|---|---|
//! | 1 | parse the subject as an orchestration subject | [`Violation::Execution`] "Invalid event (id=…) subject format…" |
//! | 2 | the subject's orchestrator name ≠ the handler source | `Ok([])` (another orchestrator's event) |
//! | 3 | [`Memory::acquire`](crate::memory::Memory::acquire): one attempt at the lease ([`Locking::Always`], the default), the [`WorkflowRecord`] and the journal's answer to the event, in one call | denied → [`Violation::Transaction`] `LOCK_UNACQUIRED` (the dispatcher retries it later); error → `LOCK_FAILURE` |
//! | 4 | the workflow already consumed this event (same source and id) | the events it produced then, without running |
//! | 5 | failure latch set, workflow done or cancelled, the event is the last one consumed, or a second init of a running workflow | `Ok([])`, nothing written |
//! | 6 | no record and not an init event | `Ok([])` |
//! | 6b | a cancel request (`<source>.cancel`, [`cancel`]) | instead of step 7: the cancelled record, the initiator's cancellation event, the children's cancel requests |
//! | 7 | the [`CoreStep`] | a violation is returned, nothing is persisted |
//! | 8 | [`Memory::commit`](crate::memory::Memory::commit): compare-and-swap against the version read (`None` for a new workflow), fenced by the lease, with the journal entry, the next wake-up, the retention of a finished workflow, the outbox step ([`Lifecycle::with_outbox`]) and the release of the lease, in one call | error → `WRITE_FAILURE` |
//! | 9 | when nothing was committed: release the lease (errors are ignored: leases expire) | — |
//!
//! A store error that a retry may cure ([`MemoryError::is_transient`](crate::memory::MemoryError::is_transient))
//! is a transaction violation, which the runtime's dispatcher retries with backoff; any other is
//! an execution violation (a dead letter). A step therefore costs two store round trips.
//!
//! An ordinary failure of the core step ([`StepError::Failure`]) writes the **failure latch**
//! against the version read (so an optimistic backend cannot lose it; Arvo writes it as if nothing existed) and
//! returns `sys.arvo.orc.<name>.error` events ([`crate::emit::system_error_events`]): subject =
//! the parent subject ?? the event's subject, `to` = the subject's initiator, `parentid` = the
//! workflow's init event id. Later events of a latched workflow are ignored.
//!
//! # Differences from Arvo, on purpose
//!
//! The user-facing list is in the [guide](crate::guide#coming-from-arvo); the lifecycle's are:
//!
//! * Locking is on by default whatever the machine's shape: two concurrent deliveries of one
//!   workflow must never lose an update (Arvo's shape-based "smart locking" skips the lock
//!   for some shapes).
//!   [`Locking::Never`] is for deliverers that already serialize a subject (the in-process
//!   [`Broker`](crate::broker::Broker) does).
//! * A machine's completion event is emitted exactly once, when it reaches a final state, even
//!   when its output is empty (Arvo emits nothing when the output's JSON is unchanged).
//! * A failed write of the failure latch is a `WRITE_FAILURE` violation (the deliverer retries)
//!   instead of a log line.
//! * Idempotency: an event the workflow already consumed (the same `source` and `id`, as
//!   CloudEvents defines uniqueness) gets the events it produced the first time, from the
//!   journal, without running again; an event that reuses an id from another source is another
//!   event. A finished workflow ignores everything. A store whose retention removes finished
//!   workflows ([`Retention::Remove`](crate::memory::Retention::Remove)) forgets them: a
//!   redelivered init event then starts a new workflow, so every store keeps finished workflows
//!   by default ([`Retention::Keep`](crate::memory::Retention::Keep)).

pub mod cancel;
mod definitions;
pub mod history;
mod lifecycle;
mod options;
pub mod replay;
pub mod resumable;
pub mod retry;
mod statechart;
pub mod timers;
mod workflow;

use std::future::Future;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};

pub use crate::clock::{Clock, ManualClock, SystemClock};
pub use lifecycle::{Lifecycle, wake_type};
pub use resumable::{Resumable, ResumableBuilder};
pub use retry::{RetryPolicy, RetryPolicyError};
pub use statechart::{MachineCore, Orchestrator, OrchestratorBuilder};
pub use workflow::Workflow;

use crate::contract::{SystemErrorPayload, VersionedContract};
use crate::emit::BoxError;
use crate::event::Event;
use crate::memory::WorkflowState;
use crate::subject::Subject;
use crate::telemetry::TraceHeaders;
use crate::violation::Violation;

/// Whether a workflow can still run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "executionStatus", rename_all = "camelCase")]
pub enum ExecutionStatus {
    /// Running (or done).
    Normal,
    /// Poisoned by an ordinary failure: later events are ignored.
    Failure {
        /// What failed.
        error: SystemErrorPayload,
    },
    /// Ended by a cancel request ([`cancel`]): later events are ignored.
    Cancelled {
        /// Why, as the request said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

/// The persisted state of one workflow, keyed by its subject: the same record for every kind of
/// orchestrator; the kind-specific part is [`WorkflowRecord::state`] (for a machine, its
/// [`Snapshot`](crate::machine::Snapshot): chart state and context, never the definition).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowRecord {
    /// Normal, or the failure latch.
    #[serde(flatten)]
    pub execution_status: ExecutionStatus,
    /// The workflow's subject.
    pub subject: String,
    /// The parent workflow's subject (`parentSubject$$` of the init event), for a child workflow.
    pub parent_subject: Option<String>,
    /// The id of the init event that started the workflow.
    pub init_event_id: String,
    /// Whether the workflow reached its end (its completion was emitted).
    pub done: bool,
    /// The kind-specific state (`null` when a workflow failed before it had one).
    pub state: Value,
    /// The id of the last event consumed (idempotency: a redelivery of it is ignored).
    pub last_event_id: Option<String>,
    /// The source of the last event consumed: with its id, the event's identity (CloudEvents),
    /// so an event of another source that reuses the id is not taken for a redelivery. Absent in
    /// records written before it was kept (the id alone is compared then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_event_source: Option<String>,
    /// When the workflow's earliest durable timer is due (Unix ms), if it has one: a wake-up
    /// event before then is ignored without a write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wake_at_ms: Option<u64>,
}

impl WorkflowRecord {
    /// Whether the failure latch is set.
    pub fn is_failed(&self) -> bool {
        matches!(self.execution_status, ExecutionStatus::Failure { .. })
    }

    /// Whether a cancel request ended the workflow ([`cancel`]).
    pub fn is_cancelled(&self) -> bool {
        matches!(self.execution_status, ExecutionStatus::Cancelled { .. })
    }

    /// Where the workflow stands: [`Failed`](WorkflowState::Failed) when the failure latch is
    /// set, [`Cancelled`](WorkflowState::Cancelled) when a cancel request ended it, else [`Done`](WorkflowState::Done) when it reached its end, else
    /// [`Waiting`](WorkflowState::Waiting) when it has a durable timer, else
    /// [`Active`](WorkflowState::Active). The one rule: the lifecycle writes it
    /// ([`WriteMeta::status`](crate::memory::WriteMeta::status)) and
    /// [`WorkflowStatus::of`](crate::runtime::WorkflowStatus::of) reads it.
    pub fn workflow_state(&self) -> WorkflowState {
        if self.is_failed() {
            WorkflowState::Failed
        } else if self.is_cancelled() {
            WorkflowState::Cancelled
        } else if self.done {
            WorkflowState::Done
        } else if self.wake_at_ms.is_some() {
            WorkflowState::Waiting
        } else {
            WorkflowState::Active
        }
    }

    /// Whether `event` is the last event the workflow consumed (same id and, when known, same
    /// source).
    pub fn last_consumed(&self, event: &Event) -> bool {
        self.last_event_id.as_deref() == Some(event.id())
            && self.last_event_source.as_deref().is_none_or(|source| source == event.source())
    }
}

/// When the lifecycle takes the workflow's lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Locking {
    /// Lock every execution (the default): concurrent deliveries of one workflow are serialized
    /// and never lose an update.
    #[default]
    Always,
    /// Never lock: only for deliverers that never run two events of one subject at once (the
    /// compare-and-swap write still refuses a lost update, as a `WRITE_FAILURE`).
    Never,
}

/// What a [`CoreStep`] gets: the event, its parsed subject and the workflow so far.
#[derive(Debug, Clone, Copy)]
pub struct StepInput<'a> {
    /// The event being executed.
    pub event: &'a Event,
    /// Its parsed subject (the workflow's).
    pub subject: &'a Subject,
    /// The kind-specific state of the record, `None` for a new workflow.
    pub state: Option<&'a Value>,
    /// The parent workflow's subject, for a child workflow.
    pub parent_subject: Option<&'a str>,
    /// The id of the workflow's init event.
    pub init_event_id: &'a str,
    /// The orchestrator's execution units.
    pub executionunits: Option<&'a Number>,
    /// The time of this execution (from the orchestrator's [`Clock`]; journaled, so a replay
    /// sees the same time). Durable timers due by then fire before the event is handled.
    pub now: SystemTime,
    /// Whether the event is a timer wake-up ([`wake_type`]) rather than a contract event: the
    /// core step only delivers the timers due by [`StepInput::now`].
    pub is_wake: bool,
    /// The trace headers of the execution span, stamped on every emitted event
    /// ([`crate::telemetry`]).
    pub trace: &'a TraceHeaders,
}

/// What a [`CoreStep`] produced.
#[derive(Debug, Clone)]
pub struct StepOutput {
    /// The events to emit.
    pub events: Vec<Event>,
    /// The new kind-specific state.
    pub state: Value,
    /// Whether the workflow is finished (its completion event is among `events`).
    pub done: bool,
    /// When the workflow must be woken up next (its earliest durable timer), if ever.
    pub wake_at: Option<SystemTime>,
}

/// Why a [`CoreStep`] failed.
#[derive(Debug)]
pub enum StepError {
    /// A violation: returned to the deliverer, nothing is persisted.
    Violation(Violation),
    /// An ordinary failure: the failure latch is written and system-error events are returned.
    Failure(BoxError),
}

impl From<Violation> for StepError {
    fn from(violation: Violation) -> Self {
        Self::Violation(violation)
    }
}

/// The kind-specific part of an orchestrator (a statechart, a resumable function…), run by
/// [`Lifecycle`] between the read and the write of the workflow record.
pub trait CoreStep: Send + Sync + 'static {
    /// The orchestrator's source: its init event type `arvo.orc.<name>`.
    fn source(&self) -> &str;

    /// The contract version whose `sys.<type>.error` events report failures.
    fn system_error_contract(&self) -> &VersionedContract;

    /// Runs one event against the workflow's state.
    fn step(&self, input: StepInput<'_>) -> impl Future<Output = Result<StepOutput, StepError>> + Send;
}
