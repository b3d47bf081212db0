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
    DEFAULT_SYSTEM_ERROR_DOMAINS, NamedError, SystemErrorSpec, system_error_events, system_error_payload,
};
use crate::event::Event;
use crate::handler::EventHandler;
use crate::memory::{JournalEntry, Lease, Lookup, Materialized, Memory, MemoryError, Stored, WriteMeta};
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
    telemetry: Telemetry,
    kind: ExecutionKind,
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
        Self {
            core,
            memory,
            locking: Locking::default(),
            executionunits: None,
            system_error_domains: DEFAULT_SYSTEM_ERROR_DOMAINS.to_vec(),
            clock: Arc::new(SystemClock),
            wake_type,
            telemetry: Telemetry::default(),
            kind: ExecutionKind::Orchestrator,
        }
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

    async fn run(&self, event: &Event, exec: &Execution) -> Result<Vec<Event>, Violation> {
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
            return Ok(Vec::new());
        }
        let lease = match self.locking {
            Locking::Never => None,
            Locking::Always => match self.lock(subject.as_str(), exec).await {
                Ok(Some(lease)) => Some(lease),
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
                    return Err(Violation::transaction(
                        TransactionCause::LockFailure,
                        format!("Error acquiring lock for event (subject={}): {e}", subject.as_str()),
                    ));
                }
            },
        };
        let result = self.locked(event, &subject, lease.as_ref(), exec).await;
        if let Some(lease) = &lease {
            // Tolerant release: a lease that cannot be released expires by itself.
            let span = exec.memory(MemoryOp::Unlock, &lease.id);
            span.result(&self.memory.unlock(lease).await);
        }
        let (events, done) = result?;
        if done {
            // Retention is the backend's business; a failed cleanup does not undo the workflow.
            let span = exec.memory(MemoryOp::Cleanup, subject.as_str());
            span.result(&self.memory.cleanup(subject.as_str()).await);
        }
        Ok(events)
    }

    /// Steps 4 to 8, under the lease: the events and whether the workflow just finished.
    async fn locked(
        &self,
        event: &Event,
        subject: &Subject,
        lease: Option<&Lease>,
        exec: &Execution,
    ) -> Result<(Vec<Event>, bool), Violation> {
        let Lookup { stored, produced } =
            self.lookup(subject.as_str(), event.id(), exec).await.map_err(|e| {
                Violation::transaction(
                    TransactionCause::ReadFailure,
                    format!("Error reading state for event (subject={}): {e}", subject.as_str()),
                )
            })?;
        if let Some(events) = produced {
            // A redelivered event gets what it produced the first time (journaling backends).
            return Ok((events, false));
        }
        let is_init = event.r#type() == self.core.source();
        let is_wake = event.r#type() == self.wake_type;
        let (record, version) = match &stored {
            Some(Stored { record, version }) => (Some(&**record), Some(*version)),
            None => (None, None),
        };
        match record {
            Some(r) if r.is_failed() || r.done => return Ok((Vec::new(), false)),
            Some(r) if r.last_event_id.as_deref() == Some(event.id()) => return Ok((Vec::new(), false)),
            None if !is_init || is_wake => return Ok((Vec::new(), false)),
            _ => {}
        }
        let now = self.clock.now();
        if is_wake && record.and_then(|r| r.wake_at_ms).is_none_or(|due| due > unix_ms(now)) {
            // A wake-up that is early or repeated: nothing is due.
            return Ok((Vec::new(), false));
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
        let meta = |wake_at: Option<SystemTime>| Meta {
            subject,
            parent_subject: parent_subject.as_deref(),
            source: self.core.source(),
            event,
            now,
            wake_at,
        };
        // A panic in the core step (a machine's action, a resumable's function) is an ordinary
        // failure: the latch is written and the lease released, instead of a lost worker.
        let step = CatchPanic(pin!(exec.instrument(self.core.step(input)))).await.unwrap_or_else(|panic| {
            Err(StepError::Failure(Box::new(NamedError::new(
                "Panic",
                format!("the orchestrator panicked: {panic}"),
            ))))
        });
        match step {
            Ok(output) => {
                exec.orchestration_status(if output.done { "done" } else { "active" });
                let new = WorkflowRecord {
                    execution_status: ExecutionStatus::Normal,
                    subject: subject.as_str().to_owned(),
                    parent_subject: parent_subject.clone(),
                    init_event_id,
                    done: output.done,
                    state: output.state,
                    last_event_id: Some(event.id().to_owned()),
                    wake_at_ms: None,
                };
                let wake_at = if output.done { None } else { output.wake_at };
                let new = WorkflowRecord { wake_at_ms: wake_at.map(unix_ms), ..new };
                self.write(subject, new, version, lease, &meta(wake_at).with(&output.events), exec).await?;
                Ok((output.events, output.done))
            }
            Err(StepError::Violation(violation)) => Err(violation),
            Err(StepError::Failure(error)) => {
                let payload = system_error_payload(&*error);
                exec.failure(&payload.error_name, &payload.error_message);
                exec.orchestration_status("failure");
                let spec = SystemErrorSpec {
                    contract: self.core.system_error_contract(),
                    source: self.core.source(),
                    triggering_event: event,
                    parent_subject: parent_subject.as_deref(),
                    init_event_id: Some(&init_event_id),
                    initiator: Some(subject.initiator()),
                    executionunits: self.executionunits.as_ref(),
                    domains: &self.system_error_domains,
                    traceparent: exec.headers().traceparent(),
                    tracestate: exec.headers().tracestate(),
                };
                let events = system_error_events(&spec, &payload)?;
                let latch = WorkflowRecord {
                    execution_status: ExecutionStatus::Failure { error: payload },
                    subject: subject.as_str().to_owned(),
                    parent_subject: parent_subject.clone(),
                    init_event_id: init_event_id.clone(),
                    done: false,
                    state: record.map_or(Value::Null, |r| r.state.clone()),
                    last_event_id: Some(event.id().to_owned()),
                    wake_at_ms: None,
                };
                // Against the version read (Arvo's bug 4 writes it as if nothing existed).
                self.write(subject, latch, version, lease, &meta(None).with(&events), exec).await?;
                Ok((events, false))
            }
        }
    }

    async fn write(
        &self,
        subject: &Subject,
        record: WorkflowRecord,
        prev: Option<u64>,
        lease: Option<&Lease>,
        meta: &WriteMeta<'_>,
        exec: &Execution,
    ) -> Result<u64, Violation> {
        let mut span = exec.memory(MemoryOp::Write, subject.as_str());
        span.record_bytes(Some(&record));
        let written = self.memory.write_owned(subject.as_str(), record, prev, lease, meta).await;
        span.result(&written);
        written.map_err(|e| {
            Violation::transaction(
                TransactionCause::WriteFailure,
                format!("Error writing state for event (subject={}): {e}", subject.as_str()),
            )
        })
    }
}

/// Milliseconds since the Unix epoch (0 before it).
pub(crate) fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl<S: CoreStep, M: Memory<WorkflowRecord>> Lifecycle<S, M> {
    /// [`Memory::lock`] in a `Lock Simple Memory` span.
    async fn lock(&self, id: &str, exec: &Execution) -> Result<Option<Lease>, MemoryError> {
        let mut span = exec.memory(MemoryOp::Lock, id);
        let lease = self.memory.lock(id).await;
        if let Ok(None) = lease {
            span.attributes(&[("arvo.memory.lock", "denied")]);
        }
        span.result(&lease);
        lease
    }

    /// [`Memory::lookup`] (the record and the journaled answer to the event) in a
    /// `Read Simple Memory` span.
    async fn lookup(
        &self,
        id: &str,
        event_id: &str,
        exec: &Execution,
    ) -> Result<Lookup<WorkflowRecord>, MemoryError> {
        let mut span = exec.memory(MemoryOp::Read, id);
        let found = self.memory.lookup(id, event_id).await;
        if let Ok(found) = &found {
            span.record_bytes(found.stored.as_ref().map(|s| &*s.record));
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
}

impl<'a> Meta<'a> {
    /// The metadata journaling `produced`.
    fn with(&self, produced: &'a [Event]) -> WriteMeta<'a> {
        WriteMeta {
            subject: self.subject.as_str(),
            parent_subject: Materialized::Resolved(self.parent_subject),
            initiator: Materialized::Resolved(self.subject.initiator()),
            source: self.source,
            wake_at: self.wake_at,
            entry: Some(JournalEntry { at: self.now, consumed: Some(self.event), produced }),
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
