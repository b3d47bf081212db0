//! [`Lifecycle`]: validate subject → lock → read → gate → core step → persist → unlock.

use std::pin::pin;
use std::sync::Arc;
use std::time::SystemTime;

use serde_json::{Number, Value};

use super::{Clock, CoreStep, ExecutionStatus, Locking, StepError, StepInput, SystemClock, WorkflowRecord};
use crate::broker::catch_panic::CatchPanic;
use crate::contract::orchestrator::PARENT_SUBJECT_KEY;
use crate::domain::Domain;
use crate::emit::{
    DEFAULT_SYSTEM_ERROR_DOMAINS, NamedError, SystemErrorSpec, system_error_events_within,
    system_error_payload,
};
use crate::event::Event;
use crate::handler::EventHandler;
use crate::memory::{
    Acquired, Commit, EventKey, JournalEntry, Lease, Materialized, Memory, MemoryError, OutboxStep, Stored,
    WorkflowState, WriteMeta, unix_ms,
};
use crate::outbox::DynOutbox;
use crate::subject::Subject;
use crate::telemetry::{Execution, ExecutionKind, MemoryOp, Telemetry};
use crate::violation::{TransactionCause, Violation};

/// The orchestration lifecycle around a [`CoreStep`] `S`, storing [`WorkflowRecord`]s in memory
/// `M`. See the [module documentation](super) for the steps.
///
/// It is an [`EventHandler`] listening on the core step's source.
pub struct Lifecycle<S, M> {
    core: S,
    memory: M,
    locking: Locking,
    executionunits: Option<Number>,
    system_error_domains: Vec<Domain>,
    clock: Arc<dyn Clock>,
    wake_type: String,
    /// The type of this orchestrator's cancel requests ([`super::cancel::cancel_type`]).
    cancel_type: String,
    telemetry: Telemetry,
    kind: ExecutionKind,
    /// The store's own outbox, when events travel through it: each commit takes the outbox step.
    outbox: Option<Arc<dyn DynOutbox>>,
    /// The largest event a step may emit, once serialized.
    max_event_bytes: usize,
}

/// The type of the timer wake-up events of orchestrator `source`: `<source>.wake`. They are
/// addressed to the orchestrator itself (never to a service) and carry no payload of interest;
/// see [`crate::orchestration::timers`].
pub fn wake_type(source: &str) -> String {
    format!("{source}.wake")
}

impl<S, M> Lifecycle<S, M> {
    /// The core step.
    pub fn core(&self) -> &S {
        &self.core
    }

    /// The memory.
    pub fn memory(&self) -> &M {
        &self.memory
    }

    /// The locking policy.
    pub fn locking(&self) -> Locking {
        self.locking
    }

    /// The execution units.
    pub fn executionunits(&self) -> Option<&Number> {
        self.executionunits.as_ref()
    }

    /// The clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The type of this orchestrator's timer wake-up events ([`wake_type`]).
    pub fn wake_type(&self) -> &str {
        &self.wake_type
    }
}

impl<S: CoreStep, M: Memory<WorkflowRecord>> Lifecycle<S, M> {
    /// The lifecycle of `core` over `memory`, locking every execution, no execution units,
    /// system errors in the default domains (`[OrchestrationContext]`).
    pub fn new(core: S, memory: M) -> Self {
        let wake_type = wake_type(core.source());
        let cancel_type = super::cancel::cancel_type(core.source());
        Self {
            core,
            memory,
            locking: Locking::default(),
            executionunits: None,
            system_error_domains: DEFAULT_SYSTEM_ERROR_DOMAINS.to_vec(),
            clock: Arc::new(SystemClock),
            wake_type,
            cancel_type,
            telemetry: Telemetry::default(),
            kind: ExecutionKind::Orchestrator,
            outbox: None,
            max_event_bytes: crate::event::DEFAULT_MAX_EVENT_BYTES,
        }
    }

    /// Sets the largest event a step may emit, once serialized (default
    /// [`DEFAULT_MAX_EVENT_BYTES`](crate::event::DEFAULT_MAX_EVENT_BYTES), the parsers' limit).
    /// A step that emits a larger event (a request, a completion) fails as an ordinary failure:
    /// the state stays as it was, the failure latch is written and the workflow's initiator gets
    /// a `sys.<orchestrator>.error` event named `EventTooLarge` saying which event, its size and
    /// the limit ([`EventTooLarge`](crate::event::EventTooLarge)). Run by a
    /// [`Node`](crate::runtime::Node) or a [`Broker`](crate::broker::Broker) whose limit is
    /// smaller, the step applies theirs.
    #[must_use]
    pub fn with_max_event_bytes(mut self, max: usize) -> Self {
        self.max_event_bytes = max;
        self
    }

    /// Sets the OpenTelemetry settings (default: the global tracer provider, spans parented on
    /// the event's trace context).
    #[must_use]
    pub fn with_telemetry(mut self, telemetry: Telemetry) -> Self {
        self.telemetry = telemetry;
        self
    }

    /// Names the execution spans `Resumable<uri>@<type>` instead of `Orchestrator<uri>@<type>`.
    #[must_use]
    pub(crate) fn resumable_spans(mut self) -> Self {
        self.kind = ExecutionKind::Resumable;
        self
    }

    /// Sets the clock (default [`SystemClock`]).
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Moves events through `outbox`, which must be the lifecycle's own store (a store that is
    /// also an [`Outbox`](crate::outbox::Outbox), such as `orchestrator_sqlite::SqliteMemory`):
    /// each commit then removes the consumed event from the outbox and adds the produced ones in
    /// the same transaction as the state, so an orchestrator step costs two store round trips
    /// (acquire, commit) and a crash at any point loses nothing. Events handled without a commit
    /// (ignored, or answered from the journal) take a separate outbox step.
    #[must_use]
    pub fn with_outbox(mut self, outbox: Arc<dyn DynOutbox>) -> Self {
        self.outbox = Some(outbox);
        self
    }

    /// Sets the locking policy.
    #[must_use]
    pub fn with_locking(mut self, locking: Locking) -> Self {
        self.locking = locking;
        self
    }

    /// Sets the execution units stamped on emitted events.
    #[must_use]
    pub fn with_executionunits(mut self, units: Option<Number>) -> Self {
        self.executionunits = units;
        self
    }

    /// Sets the domains of system-error events (empty means the default).
    #[must_use]
    pub fn with_system_error_domains(mut self, domains: Vec<Domain>) -> Self {
        self.system_error_domains = domains;
        self
    }

    /// Executes one event: the produced events, or a violation (nothing persisted).
    ///
    /// The execution is an `Orchestrator<uri>@<type>` (or `Resumable<uri>@<type>`) span of kind
    /// PRODUCER, with a child span per memory operation; see [`crate::telemetry`].
    pub async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        let uri = self.core.system_error_contract().uri();
        let exec = self.telemetry.start(self.kind, uri, self.core.source(), event);
        let result = self.run(event, &exec).await;
        match &result {
            Ok(events) => exec.emittables(events),
            Err(violation) => exec.violation(violation),
        }
        result
    }

    /// Steps 1 to 9, then the event's outbox step when no commit carried it: an event handled
    /// without a commit (ignored, answered from the journal) and one that failed for good
    /// leave the outbox here; one that failed transiently stays for the retry.
    async fn run(&self, event: &Event, exec: &Execution) -> Result<Vec<Event>, Violation> {
        match self.handle(event, exec).await {
            Ok(Step { events, committed: true }) => Ok(events),
            Ok(Step { events, committed: false }) => {
                self.outbox_step(event, &events).await?;
                Ok(events)
            }
            // No retry can cure it (an invalid subject, a contract or configuration violation).
            Err(violation) if violation.transaction_cause().is_none() => {
                self.outbox_step(event, &[]).await?;
                Err(violation)
            }
            Err(violation) => Err(violation),
        }
    }

    async fn handle(&self, event: &Event, exec: &Execution) -> Result<Step, Violation> {
        let subject = event.orchestration_subject().cloned().map_err(|e| {
            Violation::execution(format!(
                "Invalid event (id={}) subject format. Expected an ArvoOrchestrationSubject but received '{}': {e}",
                event.id(),
                event.subject()
            ))
        })?;
        exec.parsed_subject(self.kind, &subject);
        if subject.orchestrator_name() != self.core.source() {
            // Another orchestrator's event (Arvo logs a warning).
            return Ok(Step::ignored(Vec::new()));
        }
        let lock = self.locking == Locking::Always;
        let acquired = match self.acquire(subject.as_str(), event, lock, exec).await {
            Ok(Some(acquired)) => acquired,
            Ok(None) => {
                return Err(Violation::transaction(
                    TransactionCause::LockUnacquired,
                    format!(
                        "Lock acquisition denied - Unable to obtain exclusive access to event processing (subject={}, event id={})",
                        subject.as_str(),
                        event.id()
                    ),
                ));
            }
            Err(e) => {
                let message = format!("Error acquiring lock for event (subject={}): {e}", subject.as_str());
                return Err(store_violation(&e, TransactionCause::LockFailure, message));
            }
        };
        let Acquired { lease, stored, produced } = acquired;
        let result = self.locked(event, &subject, lease.as_ref(), stored, produced, exec).await;
        let released = matches!(result, Ok(Step { committed: true, .. }));
        if let Some(lease) = &lease
            && !released
        {
            // Tolerant release: a lease that cannot be released expires by itself.
            let span = exec.memory(MemoryOp::Unlock, &lease.id);
            span.result(&self.memory.unlock(lease).await);
        }
        result
    }

    /// The outbox step of an event handled without a commit (the commit carries it otherwise).
    async fn outbox_step(&self, event: &Event, produced: &[Event]) -> Result<(), Violation> {
        let Some(outbox) = &self.outbox else { return Ok(()) };
        let in_flight = crate::outbox::travelling(produced);
        outbox.advance_dyn(Some(event.id()), &in_flight).await.map_err(|e| {
            let message = format!("Error moving event (id={}) forward in the outbox: {e}", event.id());
            store_violation(&e, TransactionCause::WriteFailure, message)
        })
    }

    /// Steps 4 to 8, under the lease: the events, and whether a commit wrote them (and released
    /// the lease).
    async fn locked(
        &self,
        event: &Event,
        subject: &Subject,
        lease: Option<&Lease>,
        stored: Option<Stored<Arc<WorkflowRecord>>>,
        produced: Option<Vec<Event>>,
        exec: &Execution,
    ) -> Result<Step, Violation> {
        if let Some(events) = produced {
            // A redelivered event gets what it produced the first time.
            return Ok(Step::ignored(events));
        }
        let is_init = event.r#type() == self.core.source();
        let is_wake = event.r#type() == self.wake_type;
        let (record, version) = match &stored {
            Some(Stored { record, version }) => (Some(&**record), Some(*version)),
            None => (None, None),
        };
        match record {
            Some(r) if r.is_failed() || r.is_cancelled() || r.done => return Ok(Step::ignored(Vec::new())),
            Some(r) if r.last_consumed(event) => return Ok(Step::ignored(Vec::new())),
            // A second init of a running workflow (another event with the init's type) starts
            // nothing and writes nothing.
            Some(_) if is_init => return Ok(Step::ignored(Vec::new())),
            None if !is_init || is_wake => return Ok(Step::ignored(Vec::new())),
            _ => {}
        }
        let now = self.clock.now();
        if let Some(r) = record.filter(|_| event.r#type() == self.cancel_type) {
            let cancel = Cancel { event, subject, record: r, version, lease, now };
            return self.cancel(cancel, exec).await;
        }
        if is_wake && record.and_then(|r| r.wake_at_ms).is_none_or(|due| due > unix_ms(now)) {
            // A wake-up that is early or repeated: nothing is due.
            return Ok(Step::ignored(Vec::new()));
        }
        let parent_subject: Option<String> = match record {
            Some(r) => r.parent_subject.clone(),
            None => event.data().get(PARENT_SUBJECT_KEY).and_then(Value::as_str).map(str::to_owned),
        };
        let init_event_id = record.map_or_else(|| event.id().to_owned(), |r| r.init_event_id.clone());
        let input = StepInput {
            event,
            subject,
            state: record.map(|r| &r.state),
            parent_subject: parent_subject.as_deref(),
            init_event_id: &init_event_id,
            executionunits: self.executionunits.as_ref(),
            now,
            is_wake,
            trace: exec.headers(),
        };
        let meta = |wake_at: Option<SystemTime>, status: WorkflowState| Meta {
            subject,
            parent_subject: parent_subject.as_deref(),
            source: self.core.source(),
            event,
            now,
            wake_at,
            status,
        };
        // A panic in the core step (a machine's action, a resumable's function) is an ordinary
        // failure: the latch is written and the lease released, instead of a lost worker.
        let step = CatchPanic(pin!(exec.instrument(self.core.step(input)))).await.unwrap_or_else(|panic| {
            Err(StepError::Failure(Box::new(NamedError::new(
                "Panic",
                format!("the orchestrator panicked: {panic}"),
            ))))
        });
        // An event larger than the limit fails the step that emitted it, like any failure.
        let step = step.and_then(|output| {
            match output
                .events
                .iter()
                .find_map(|e| e.check_size(crate::event::effective_limit(self.max_event_bytes)).err())
            {
                Some(too_large) => {
                    Err(StepError::Failure(Box::new(NamedError::new("EventTooLarge", too_large.to_string()))))
                }
                None => Ok(output),
            }
        });
        match step {
            Ok(output) => {
                exec.orchestration_status(if output.done { "done" } else { "active" });
                let wake_at = if output.done { None } else { output.wake_at };
                let new = WorkflowRecord {
                    execution_status: ExecutionStatus::Normal,
                    subject: subject.as_str().to_owned(),
                    parent_subject: parent_subject.clone(),
                    init_event_id,
                    done: output.done,
                    state: output.state,
                    last_event_id: Some(event.id().to_owned()),
                    last_event_source: Some(event.source().to_owned()),
                    wake_at_ms: wake_at.map(unix_ms),
                };
                let meta = meta(wake_at, new.workflow_state());
                let write = Write { record: new, prev: version, lease, finished: output.done };
                self.commit(subject, write, &meta.with(&output.events), exec).await?;
                Ok(Step { events: output.events, committed: true })
            }
            Err(StepError::Violation(violation)) => Err(violation),
            Err(StepError::Failure(error)) => {
                let payload = system_error_payload(&*error);
                exec.failure(&payload.error_name, &payload.error_message);
                exec.orchestration_status("failure");
                let ends = Ending {
                    event,
                    subject,
                    parent_subject: parent_subject.as_deref(),
                    init_event_id: &init_event_id,
                };
                let events = self.system_errors(&ends, &payload, exec)?;
                let latch = WorkflowRecord {
                    execution_status: ExecutionStatus::Failure { error: payload },
                    subject: subject.as_str().to_owned(),
                    parent_subject: parent_subject.clone(),
                    init_event_id: init_event_id.clone(),
                    done: false,
                    state: record.map_or(Value::Null, |r| r.state.clone()),
                    last_event_id: Some(event.id().to_owned()),
                    last_event_source: Some(event.source().to_owned()),
                    wake_at_ms: None,
                };
                // Against the version read (Arvo writes it as if nothing existed).
                let meta = meta(None, latch.workflow_state());
                let write = Write { record: latch, prev: version, lease, finished: false };
                self.commit(subject, write, &meta.with(&events), exec).await?;
                Ok(Step { events, committed: true })
            }
        }
    }

    async fn commit(
        &self,
        subject: &Subject,
        write: Write<'_>,
        meta: &WriteMeta<'_>,
        exec: &Execution,
    ) -> Result<u64, Violation> {
        let mut span = exec.memory(MemoryOp::Commit, subject.as_str());
        span.record_bytes(Some(&write.record));
        let in_flight: Vec<Event>;
        let outbox = match &self.outbox {
            Some(_) => {
                let produced = meta.entry.map_or(&[][..], |entry| entry.produced);
                in_flight = crate::outbox::travelling(produced);
                Some(OutboxStep {
                    consumed: meta.entry.and_then(|e| e.consumed).map(Event::id),
                    produced: &in_flight,
                })
            }
            None => None,
        };
        let commit = Commit {
            id: subject.as_str(),
            record: write.record,
            prev: write.prev,
            lease: write.lease,
            release: true,
            finished: write.finished,
            meta: meta.clone(),
            outbox,
        };
        let written = self.memory.commit(commit).await;
        span.result(&written);
        written.map_err(|e| {
            let message = format!("Error writing state for event (subject={}): {e}", subject.as_str());
            store_violation(&e, TransactionCause::WriteFailure, message)
        })
    }
}

/// The workflow an event ended (failed or cancelled), for its system error events.
struct Ending<'a> {
    event: &'a Event,
    subject: &'a Subject,
    parent_subject: Option<&'a str>,
    init_event_id: &'a str,
}

impl<S: CoreStep, M: Memory<WorkflowRecord>> Lifecycle<S, M> {
    /// The `sys.<orchestrator>.error` events telling the workflow's initiator (its parent, for a
    /// child workflow) that it ended with `payload`, each fitting the event size limit.
    fn system_errors(
        &self,
        ends: &Ending<'_>,
        payload: &crate::contract::SystemErrorPayload,
        exec: &Execution,
    ) -> Result<Vec<Event>, Violation> {
        let spec = SystemErrorSpec {
            contract: self.core.system_error_contract(),
            source: self.core.source(),
            triggering_event: ends.event,
            parent_subject: ends.parent_subject,
            init_event_id: Some(ends.init_event_id),
            initiator: Some(ends.subject.initiator()),
            executionunits: self.executionunits.as_ref(),
            domains: &self.system_error_domains,
            traceparent: exec.headers().traceparent(),
            tracestate: exec.headers().tracestate(),
        };
        system_error_events_within(&spec, payload, crate::event::effective_limit(self.max_event_bytes))
    }
}

/// A cancel request for an active workflow, under its lease.
struct Cancel<'a> {
    event: &'a Event,
    subject: &'a Subject,
    record: &'a WorkflowRecord,
    version: Option<u64>,
    lease: Option<&'a Lease>,
    now: SystemTime,
}

impl<S: CoreStep, M: Memory<WorkflowRecord>> Lifecycle<S, M> {
    /// Ends an active workflow on a cancel request ([`super::cancel`]), without running the
    /// core step: the cancelled record (no wake-up), journaled, and the events of the step (the
    /// initiator's cancellation event, the children's cancel requests).
    async fn cancel(&self, cancel: Cancel<'_>, exec: &Execution) -> Result<Step, Violation> {
        let Cancel { event, subject, record, version, lease, now } = cancel;
        let request = super::cancel::CancelRequest::from_data(event.data_value());
        let payload =
            crate::contract::SystemErrorPayload::new(super::cancel::CANCELLED_ERROR_NAME, request.message());
        exec.orchestration_status(WorkflowState::Cancelled.as_str());
        let parent_subject = record.parent_subject.as_deref();
        let ends = Ending { event, subject, parent_subject, init_event_id: &record.init_event_id };
        let mut events = self.system_errors(&ends, &payload, exec)?;
        if request.children
            && let Some(index) = self.memory.workflow_index()
        {
            let children = super::cancel::child_cancels(index, subject.as_str(), &request).await;
            events.extend(children.map_err(|e| {
                let message =
                    format!("Error listing the children of workflow (subject={}): {e}", subject.as_str());
                store_violation(&e, TransactionCause::ReadFailure, message)
            })?);
        }
        let cancelled = WorkflowRecord {
            execution_status: ExecutionStatus::Cancelled { reason: request.reason },
            last_event_id: Some(event.id().to_owned()),
            last_event_source: Some(event.source().to_owned()),
            wake_at_ms: None,
            ..record.clone()
        };
        let meta = Meta {
            subject,
            parent_subject,
            source: self.core.source(),
            event,
            now,
            wake_at: None,
            status: cancelled.workflow_state(),
        };
        let write = Write { record: cancelled, prev: version, lease, finished: false };
        self.commit(subject, write, &meta.with(&events), exec).await?;
        Ok(Step { events, committed: true })
    }
}

/// What one execution under the lease gave.
struct Step {
    events: Vec<Event>,
    /// A commit wrote the state (and released the lease, and took the outbox step).
    committed: bool,
}

impl Step {
    /// Nothing to write: the event is ignored, or answered from the journal.
    fn ignored(events: Vec<Event>) -> Self {
        Self { events, committed: false }
    }
}

/// A record to commit and what it is checked against.
struct Write<'a> {
    record: WorkflowRecord,
    prev: Option<u64>,
    lease: Option<&'a Lease>,
    finished: bool,
}

/// The violation for a failed store call: a transaction violation (the dispatcher retries it)
/// when the error is transient, an execution violation (a dead letter) when it is not.
fn store_violation(error: &MemoryError, cause: TransactionCause, message: String) -> Violation {
    if error.is_transient() { Violation::transaction(cause, message) } else { Violation::execution(message) }
}

impl<S: CoreStep, M: Memory<WorkflowRecord>> Lifecycle<S, M> {
    /// [`Memory::acquire`] (the lease, the record and the journaled answer to the event) in a
    /// `Acquire Simple Memory` span.
    async fn acquire(
        &self,
        id: &str,
        event: &Event,
        lock: bool,
        exec: &Execution,
    ) -> Result<Option<Acquired<WorkflowRecord>>, MemoryError> {
        let mut span = exec.memory(MemoryOp::Acquire, id);
        let found = self.memory.acquire(id, EventKey::of(event), lock).await;
        match &found {
            Ok(Some(found)) => span.record_bytes(found.stored.as_ref().map(|s| &*s.record)),
            Ok(None) => span.attributes(&[("arvo.memory.lock", "denied")]),
            Err(_) => {}
        }
        span.result(&found);
        found
    }
}

/// What the write metadata of one execution is made of.
struct Meta<'a> {
    subject: &'a Subject,
    parent_subject: Option<&'a str>,
    source: &'a str,
    event: &'a Event,
    now: SystemTime,
    wake_at: Option<SystemTime>,
    /// Where the workflow stands after the write ([`WorkflowRecord::workflow_state`] of the
    /// record written).
    status: WorkflowState,
}

impl<'a> Meta<'a> {
    /// The metadata journaling `produced`.
    fn with(&self, produced: &'a [Event]) -> WriteMeta<'a> {
        WriteMeta {
            subject: self.subject.as_str(),
            parsed_subject: Some(self.subject),
            parent_subject: Materialized::Resolved(self.parent_subject),
            initiator: Materialized::Resolved(self.subject.initiator()),
            source: self.source,
            wake_at: self.wake_at,
            entry: Some(JournalEntry { at: self.now, consumed: Some(self.event), produced }),
            status: self.status,
        }
    }
}

impl<S: CoreStep, M: Memory<WorkflowRecord> + 'static> EventHandler for Lifecycle<S, M> {
    fn source(&self) -> &str {
        self.core.source()
    }

    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        Lifecycle::execute(self, event).await
    }
}
