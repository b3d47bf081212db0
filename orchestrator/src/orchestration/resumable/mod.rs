//! [`Resumable`]: an imperative, resumable orchestrator (Arvo's `ArvoResumable`), run by the same
//! orchestration [`Lifecycle`](super::Lifecycle) as the statechart
//! [`Orchestrator`](super::Orchestrator).
//!
//! A resumable is one async function per version of its self orchestrator contract. Each event of
//! a workflow (the init event, then the responses of the services it calls) runs the function
//! with a [`ResumableInput`]: the typed init payload or the service event, the context the previous
//! steps returned, and the responses [`Collected`] so far. The function returns a
//! [`ResumableOutput`]: service [`Request`]s, a new context, and the completion output once done;
//! returning nothing waits for more events.
//!
//! # Core step
//!
//! 1. The function is chosen by the **subject's** orchestrator version
//!    ([`Violation::Config`] "Handler resolution failed…" when none matches).
//! 2. The event is validated: the init event against the self contract version, any other event
//!    against the declared service contracts (an emitted or system-error type of one of them),
//!    or against a declared signal ([`ResumableBuilder::signal`]; the function reads it with
//!    [`ResumableInput::signal`]).
//!    An event of no declared contract is a [`Violation::Config`], invalid data a
//!    [`Violation::Contract`].
//! 3. A workflow that is done, a **second init event** of an existing workflow, and a response
//!    already collected produce nothing and do **not** run the function (Arvo re-runs it on a
//!    duplicate init).
//! 4. A response whose `parentid` is a request of the last step that emitted requests is
//!    collected; any other event is not collected, but the function still runs with it.
//! 5. After the function: the requests and the notifications
//!    ([`ResumableOutput::notify`], of contracts declared with
//!    [`ResumableBuilder::notification`], which expect no reply and are not waited for) become
//!    events exactly like a machine's (one per resolved
//!    service domain, default `[Local]`; a child subject for an orchestrator-contract service);
//!    if any were emitted, the expected responses become those events' ids (else the previous
//!    map is kept); the output, when set, becomes the completion event `arvo.orc.<name>.done`
//!    (exactly as a machine's, with the id, execution units and domains of a
//!    [`Completion`](crate::machine::Completion) when it is one) and the workflow is done.
//! 6. A function error that is a (boxed) [`Violation`] is returned and nothing is persisted; any
//!    other error sets the lifecycle's failure latch and becomes `sys.arvo.orc.<name>.error`
//!    events; later events of the workflow are ignored.
//!
//! Locking: the lifecycle locks every execution by default ([`Locking::Always`]), whatever the
//! fan-out (Arvo skips the lock for a single service, even when it fans out to it).
//!
//! The persisted state ([`ResumableState`]) is `{"status": "active"|"done", "state$$": context,
//! "events": {"expected": {request id: [responses]}}}`.

mod io;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use indexmap::IndexMap;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::json::NotJson;

pub use io::{Collected, Request, ResumableInput, ResumableOutput};

use super::options::{Options, option_setters};
use super::retry::{Intercepted, RetryEmitter, RetryLedger, RetryPolicy, RetryService};
use super::{CoreStep, Locking, StepError, StepInput, StepOutput, Workflow, WorkflowRecord};
use crate::contract::{
    ArvoContract, Contract, ContractVersion, Emits, OrchestratorVersion, Resolution, VersionedContract,
    resolve,
};
use crate::domain::Domain;
use crate::emit::{BoxError, completion_events, request_events};
use crate::event::Event;
use crate::machine::{Completion, CompletionOptions, ServiceRequest};
use crate::memory::Memory;
use crate::subject::Subject;
use crate::violation::Violation;

/// Whether a resumable workflow still runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ResumableStatus {
    /// Waiting for events.
    #[default]
    Active,
    /// Completed (its completion event was emitted).
    Done,
}

/// The events a resumable workflow waits for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResumableEvents {
    /// Request id (of the last step that emitted requests) → the responses received for it.
    pub expected: IndexMap<String, Vec<Event>>,
}

/// The kind-specific state of a resumable workflow ([`WorkflowRecord::state`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResumableState {
    /// Active or done.
    pub status: ResumableStatus,
    /// The context returned by the function (`null` until one is returned).
    #[serde(rename = "state$$")]
    pub context: Value,
    /// The expected responses.
    pub events: ResumableEvents,
}

impl ResumableState {
    /// The state of a workflow record.
    pub fn from_record(record: &WorkflowRecord) -> Result<Self, serde_json::Error> {
        Self::deserialize(&record.state)
    }
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// One call of a version's function, without its types.
struct Call {
    event: Event,
    subject: Subject,
    is_init: bool,
    context: Value,
    collected: Collected,
    parent_subject: Option<String>,
    contract: &'static VersionedContract,
}

/// What a version's function returned, without its types.
struct Returned {
    context: Option<Value>,
    requests: Vec<Request>,
    notifications: Vec<Request>,
    output: Option<Value>,
    /// What the completion event sets instead of the defaults.
    completion: CompletionOptions,
}

type HandlerFn = Box<dyn Fn(Call) -> BoxFuture<Result<Returned, BoxError>> + Send + Sync>;

struct VersionEntry {
    contract: &'static VersionedContract,
    self_contract: &'static ArvoContract,
    complete_type: &'static str,
    handler: HandlerFn,
}

/// The context a resumable's function returned holds a value JSON cannot represent: the step
/// fails (failure latch, `sys.<orchestrator>.error` event naming the field), as a machine's
/// does ([`MachineError::NotJson`](crate::machine::MachineError::NotJson)).
#[derive(Debug, thiserror::Error)]
#[error("the resumable state cannot be saved: {0}")]
struct StateNotJson(NotJson);

fn boxed(violation: Violation) -> BoxError {
    Box::new(violation)
}

/// The [`CoreStep`] of a [`Resumable`]. See the [module documentation](self).
pub struct ResumableCore {
    source: &'static str,
    versions: Vec<VersionEntry>,
    services: Vec<&'static VersionedContract>,
    signals: Vec<&'static VersionedContract>,
    notifications: Vec<&'static VersionedContract>,
    /// The retry policies of services declared with [`ResumableBuilder::service_with_retry`].
    retries: Vec<(&'static VersionedContract, RetryPolicy)>,
    service_domains: Vec<Domain>,
    complete_domains: Vec<Domain>,
}

impl fmt::Debug for ResumableCore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResumableCore")
            .field("source", &self.source)
            .field("versions", &self.versions())
            .field("services", &self.services.iter().map(|s| s.dataschema()).collect::<Vec<_>>())
            .field("service_domains", &self.service_domains)
            .field("complete_domains", &self.complete_domains)
            .finish()
    }
}

impl ResumableCore {
    /// The versions of the self contract served, in registration order.
    pub fn versions(&self) -> Vec<&'static str> {
        self.versions.iter().map(|v| v.contract.version_str()).collect()
    }

    /// The declared service contracts.
    pub fn services(&self) -> &[&'static VersionedContract] {
        &self.services
    }

    /// The declared signal contracts: events accepted from outside.
    pub fn signals(&self) -> &[&'static VersionedContract] {
        &self.signals
    }

    /// The declared notification contracts: events sent without expecting a reply.
    pub fn notifications(&self) -> &[&'static VersionedContract] {
        &self.notifications
    }

    /// What a node records of this resumable in its store's catalog: each version's
    /// orchestrator definition (no chart) and its contracts.
    pub fn definitions(&self) -> Vec<crate::memory::Definition> {
        let services: Vec<(&str, &VersionedContract)> =
            self.services.iter().map(|s| (s.accepts().event_type(), *s)).collect();
        self.versions.iter().flat_map(|v| super::definitions::workflow(v.contract, &services, None)).collect()
    }

    fn resolve(&self, subject: &Subject) -> Result<&VersionEntry, Violation> {
        self.versions.iter().find(|v| v.contract.version_str() == subject.orchestrator_version()).ok_or_else(
            || {
                Violation::config(format!(
                    "Handler resolution failed: No handler found matching orchestrator name='{}' and version='{}'.",
                    subject.orchestrator_name(),
                    subject.orchestrator_version()
                ))
            },
        )
    }

    /// The services, with their retry policies.
    fn retry_services(&self) -> Vec<RetryService<'_>> {
        self.services
            .iter()
            .map(|&contract| RetryService {
                name: contract.accepts().event_type(),
                contract,
                policy: self.retries.iter().find(|(c, _)| std::ptr::eq(*c, contract)).map(|(_, p)| p),
            })
            .collect()
    }

    /// A wake-up: sends the retries due, each in place of the request it replaces among the
    /// expected responses. The function does not run.
    fn send_due_retries(
        &self,
        input: &StepInput<'_>,
        services: &[RetryService<'_>],
    ) -> Result<StepOutput, StepError> {
        let Some(value) = input.state else { return Ok(unchanged(input.state, false)) };
        let mut state = ResumableState::deserialize(value).map_err(|e| {
            Violation::execution(format!(
                "The state of resumable workflow (subject={}) cannot be read: {e}",
                input.subject.as_str()
            ))
        })?;
        if state.status == ResumableStatus::Done {
            return Ok(unchanged(input.state, true));
        }
        let entry = self.resolve(input.subject)?;
        let mut ledger = RetryLedger::read(input.state)?;
        let sent = RetryEmitter::new(self.source, &self.service_domains, input, entry.contract, services)
            .due(&mut ledger)?;
        let mut events = Vec::with_capacity(sent.len());
        for (replaces, event) in sent {
            if state.events.expected.contains_key(&replaces) {
                state.events.expected = std::mem::take(&mut state.events.expected)
                    .into_iter()
                    .map(|(id, list)| if id == replaces { (event.id().to_owned(), list) } else { (id, list) })
                    .collect();
            }
            events.push(event);
        }
        let mut value = serde_json::to_value(&state).map_err(|e| {
            Violation::execution(format!(
                "The state of resumable workflow (subject={}) cannot be written: {e}",
                input.subject.as_str()
            ))
        })?;
        ledger.write(&mut value)?;
        let wake_at = ledger.next_due_ms().map(crate::memory::from_unix_ms);
        Ok(StepOutput { events, state: value, done: false, wake_at })
    }

    /// Validates a non-init event against the service contract declaring its type.
    fn validate_service(&self, event: &Event) -> Result<(), Violation> {
        let t = event.r#type();
        let signals = self.signals.iter().copied().filter(|vc| vc.accepts().event_type() == t);
        if let Some(signal) = signals.clone().next() {
            let chosen = match resolve(event, signals) {
                Resolution::Exact(vc) | Resolution::SameUri(vc, _) => vc,
                _ => signal,
            };
            return chosen.validate_orchestration_input(event);
        }
        let candidates: Vec<&VersionedContract> = self
            .services
            .iter()
            .copied()
            .filter(|vc| vc.accepts().event_type() != t && vc.schema_for_type(t).is_some())
            .collect();
        let chosen = match resolve(event, candidates.iter().copied()) {
            Resolution::Exact(vc) | Resolution::SameUri(vc, _) => Some(vc),
            Resolution::Absent | Resolution::Invalid(_) | Resolution::OtherUri(_) => {
                candidates.first().copied()
            }
        };
        match chosen {
            Some(vc) => vc.validate_orchestration_input(event),
            None => Err(Violation::config(format!(
                "Contract validation failed - Event (id={}, type={}) does not match any registered contract schemas in the resumable `{}`",
                event.id(),
                t,
                self.source
            ))),
        }
    }

    fn service_requests(
        &self,
        event: &Event,
        requests: &[Request],
        declared: &[&'static VersionedContract],
        what: &str,
    ) -> Result<Vec<ServiceRequest>, StepError> {
        requests
            .iter()
            .map(|request| {
                let contract = request.contract;
                let event_type = contract.accepts().event_type();
                if !declared.iter().any(|s| s.uri() == contract.uri() && s.version() == contract.version()) {
                    return Err(StepError::Violation(Violation::config(format!(
                        "Resumable {} requested {what} {} ({event_type}), which is not among its declared {what}s",
                        self.source,
                        contract.dataschema()
                    ))));
                }
                let data = request.payload(event.subject()).map_err(|e| match e {
                    // A value JSON cannot represent is the function's failure, not the contract's.
                    Ok(not_representable) => StepError::Failure(Box::new(not_representable)),
                    Err(e) => StepError::Violation(Violation::contract(format!(
                        "[Emittable Event Creation] Invalid event data: the request to service '{event_type}' cannot be serialized: {e}"
                    ))),
                })?;
                contract.accepts().validate(&data).map_err(|errors| {
                    StepError::Violation(Violation::contract(format!(
                        "[Emittable Event Creation] Invalid event data: the request to service '{event_type}' does not match {}: {errors}",
                        contract.dataschema()
                    )))
                })?;
                Ok(ServiceRequest {
                    service: event_type,
                    contract,
                    event_type,
                    dataschema: contract.dataschema(),
                    data,
                    options: request.options.clone(),
                })
            })
            .collect()
    }
}

fn unchanged(state: Option<&Value>, done: bool) -> StepOutput {
    StepOutput { events: Vec::new(), state: state.cloned().unwrap_or(Value::Null), done, wake_at: None }
}

impl CoreStep for ResumableCore {
    fn source(&self) -> &str {
        self.source
    }

    fn system_error_contract(&self) -> &VersionedContract {
        // Every version shares the self contract; system errors use `<uri>/0.0.0` anyway.
        self.versions[0].contract
    }

    async fn step(&self, input: StepInput<'_>) -> Result<StepOutput, StepError> {
        let services = self.retry_services();
        let retrying = services.iter().any(|s| s.policy.is_some());
        if input.is_wake {
            // A resumable's only timers are its retries.
            if !retrying {
                return Ok(unchanged(input.state, false));
            }
            return self.send_due_retries(&input, &services);
        }
        let entry = self.resolve(input.subject)?;
        let event = input.event;
        let is_init = event.r#type() == self.source;
        if is_init {
            entry.contract.validate_orchestration_input(event)?;
        } else {
            self.validate_service(event)?;
        }
        let previous = match input.state {
            None | Some(Value::Null) => None,
            Some(state) => Some(ResumableState::deserialize(state).map_err(|e| {
                Violation::execution(format!(
                    "The state of resumable workflow (subject={}) cannot be read: {e}",
                    event.subject()
                ))
            })?),
        };
        let mut state = match previous {
            // Done, or a duplicate init: nothing happens.
            Some(state) if state.status == ResumableStatus::Done || is_init => {
                return Ok(unchanged(input.state, state.status == ResumableStatus::Done));
            }
            Some(state) => state,
            None => ResumableState::default(),
        };
        let mut ledger = if retrying { RetryLedger::read(input.state)? } else { RetryLedger::default() };
        if retrying
            && !is_init
            && ledger.on_event(event, input.subject.as_str(), crate::memory::unix_ms(input.now), &services)
                == Intercepted::Retried
        {
            // A retried error: the function does not see it; the retry is the workflow's timer.
            let mut state = input.state.cloned().unwrap_or(Value::Null);
            ledger.write(&mut state)?;
            let wake_at = ledger.next_due_ms().map(crate::memory::from_unix_ms);
            return Ok(StepOutput { events: Vec::new(), state, done: false, wake_at });
        }
        if let Some(list) = event.parentid().and_then(|id| state.events.expected.get_mut(id)) {
            if list.iter().any(|e| e.id() == event.id()) {
                // A redelivered response: already counted (a pending retry keeps its wake-up).
                let wake_at = ledger.next_due_ms().map(crate::memory::from_unix_ms);
                return Ok(StepOutput { wake_at, ..unchanged(input.state, false) });
            }
            list.push(event.clone());
        }
        let call = Call {
            event: event.clone(),
            subject: input.subject.clone(),
            is_init,
            context: state.context.clone(),
            collected: Collected::group(state.events.expected.values().flatten()),
            parent_subject: input.parent_subject.map(str::to_owned),
            contract: entry.contract,
        };
        let returned = (entry.handler)(call).await.map_err(|error| match error.downcast::<Violation>() {
            Ok(violation) => StepError::Violation(*violation),
            Err(error) => StepError::Failure(error),
        })?;
        let requests = self.service_requests(event, &returned.requests, &self.services, "service")?;
        let notifications =
            self.service_requests(event, &returned.notifications, &self.notifications, "notification")?;
        let mut events = if retrying {
            RetryEmitter::new(self.source, &self.service_domains, &input, entry.contract, &services)
                .requests(&mut ledger, &requests)?
        } else {
            request_events(self.source, &self.service_domains, &input, entry.contract, &requests)?
        };
        if !events.is_empty() {
            state.events.expected = events.iter().map(|e| (e.id().to_owned(), Vec::new())).collect();
        }
        // Notifications expect no reply: they leave with the requests, outside the fan-in.
        events.extend(request_events(
            self.source,
            &self.service_domains,
            &input,
            entry.contract,
            &notifications,
        )?);
        if let Some(context) = returned.context {
            state.context = context;
        }
        if let Some(output) = returned.output {
            returned.completion.validate().map_err(|e| StepError::Failure(Box::new(e)))?;
            events.extend(completion_events(
                self.source,
                &self.complete_domains,
                &input,
                entry.contract,
                entry.complete_type,
                &format_args!("resumable `{}`", self.source),
                output,
                &returned.completion,
            )?);
            state.status = ResumableStatus::Done;
        }
        let done = state.status == ResumableStatus::Done;
        let mut state = serde_json::to_value(&state).map_err(|e| {
            Violation::execution(format!(
                "The state of resumable workflow (subject={}) cannot be written: {e}",
                event.subject()
            ))
        })?;
        if done {
            ledger.clear();
        }
        ledger.write(&mut state)?;
        let wake_at = ledger.next_due_ms().map(crate::memory::from_unix_ms);
        Ok(StepOutput { events, state, done, wake_at })
    }
}

/// An imperative, resumable orchestrator: one async function per version of one self
/// orchestrator contract, inside the orchestration [`Lifecycle`](super::Lifecycle): a
/// [`Workflow`] over [`ResumableCore`]. Cheap to clone. See the [module documentation](self).
pub type Resumable<Mem> = Workflow<ResumableCore, Mem>;

impl<Mem: Memory<WorkflowRecord> + 'static> Workflow<ResumableCore, Mem> {
    /// Starts declaring a resumable storing its workflows in `memory`.
    pub fn builder(memory: Mem) -> ResumableBuilder<Mem> {
        ResumableBuilder {
            memory,
            versions: Vec::new(),
            services: Vec::new(),
            signals: Vec::new(),
            notifications: Vec::new(),
            retries: Vec::new(),
            options: Options::default(),
        }
    }

    /// The versions of the self contract served, in registration order.
    pub fn versions(&self) -> Vec<&'static str> {
        self.lifecycle().core().versions()
    }

    /// The contracts of the services and notifications it declared (a node needs a handler
    /// for each, or declares it remote).
    pub fn services(&self) -> Vec<&'static VersionedContract> {
        let core = self.lifecycle().core();
        core.services().iter().chain(core.notifications()).copied().collect()
    }

    /// What a node records of this resumable in its store's catalog (see
    /// [`Catalog`](crate::memory::Catalog)).
    pub fn definitions(&self) -> Vec<crate::memory::Definition> {
        self.lifecycle().core().definitions()
    }
}

/// Declares a [`Resumable`]: a function for every version of the self contract, its services,
/// then options.
pub struct ResumableBuilder<Mem> {
    memory: Mem,
    versions: Vec<VersionEntry>,
    services: Vec<&'static VersionedContract>,
    signals: Vec<&'static VersionedContract>,
    notifications: Vec<&'static VersionedContract>,
    retries: Vec<(&'static VersionedContract, RetryPolicy)>,
    options: Options,
}

impl<Mem> fmt::Debug for ResumableBuilder<Mem> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResumableBuilder")
            .field("versions", &self.versions.iter().map(|v| v.contract.dataschema()).collect::<Vec<_>>())
            .field("services", &self.services.iter().map(|s| s.dataschema()).collect::<Vec<_>>())
            .field("locking", &self.options.locking)
            .finish_non_exhaustive()
    }
}

impl<Mem: Memory<WorkflowRecord> + 'static> ResumableBuilder<Mem> {
    /// The function handling version `V` of the self contract, with context type `C` (both
    /// usually inferred from the closure's `ResumableInput<V, C>` argument).
    ///
    /// It returns a [`ResumableOutput<V, C>`] or an error: a boxed [`Violation`] is returned by
    /// `execute` as is (nothing persisted); any other error latches the workflow and becomes
    /// system-error events.
    #[must_use]
    pub fn version<V, C, F, Fut>(mut self, handler: F) -> Self
    where
        V: OrchestratorVersion,
        C: Serialize + DeserializeOwned + Send + Sync + Clone + 'static,
        F: Fn(ResumableInput<V, C>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ResumableOutput<V, C>, BoxError>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let erased: HandlerFn = Box::new(move |call: Call| {
            let handler = Arc::clone(&handler);
            Box::pin(async move {
                let input = typed_input::<V, C>(call)?;
                let ResumableOutput { context, requests, notifications, output } = (*handler)(input).await?;
                let context =
                    context.map(|c| crate::json::to_value(&c)).transpose().map_err(|e| match e {
                        // A value JSON cannot represent fails the step that produced it, as a
                        // machine's context does, instead of being saved as null.
                        NotJson::NonFinite { path, value } => {
                            let path = if path.is_empty() {
                                "context".to_owned()
                            } else {
                                format!("context.{path}")
                            };
                            Box::new(StateNotJson(NotJson::NonFinite { path, value })) as BoxError
                        }
                        NotJson::Serialize(e) => boxed(Violation::execution(format!(
                            "the resumable context cannot be serialized: {e}"
                        ))),
                    })?;
                let complete_type = <V as Emits<V::Complete>>::EVENT_TYPE;
                let (output, completion) = match output.map(Completion::into_parts) {
                    Some((output, options)) => (Some(output), options),
                    None => (None, CompletionOptions::default()),
                };
                let output = output.map(|o| crate::json::payload_value(complete_type, &o)).transpose().map_err(|e| match e {
                    // A value JSON cannot represent is the function's failure, not the contract's.
                    Ok(not_representable) => Box::new(not_representable) as BoxError,
                    Err(e) => boxed(Violation::contract(format!(
                        "[Emittable Event Creation] Invalid event data: the resumable output cannot be serialized: {e}"
                    ))),
                })?;
                Ok(Returned { context, requests, notifications, output, completion })
            })
        });
        self.versions.push(VersionEntry {
            contract: V::versioned(),
            self_contract: <V::Contract as Contract>::contract(),
            complete_type: <V as Emits<V::Complete>>::EVENT_TYPE,
            handler: erased,
        });
        self
    }

    /// Declares service `S` (a contract version the functions send requests to and receive
    /// responses from; an orchestrator contract for child workflows).
    #[must_use]
    pub fn service<S: ContractVersion>(mut self) -> Self {
        self.services.push(S::versioned());
        self
    }

    /// Declares signal `S`: an event the workflow accepts from outside while it runs (sent with
    /// [`Node::signal`](crate::runtime::Node::signal)), validated against `S` and read with
    /// [`ResumableInput::signal`].
    #[must_use]
    pub fn signal<S: ContractVersion>(mut self) -> Self {
        self.signals.push(S::versioned());
        self
    }

    /// Declares notification `N`: a contract that emits nothing, which the functions send with
    /// [`ResumableOutput::notify`] without waiting for a reply.
    #[must_use]
    pub fn notification<N: crate::contract::NoReply>(mut self) -> Self {
        self.notifications.push(N::versioned());
        self
    }

    /// Declares service `S` with a retry policy: a system error of `S` that `policy` retries
    /// never reaches the function while attempts are left; the request is sent again after the
    /// backoff, on the workflow's durable timer, in place of the failed one among the expected
    /// responses (see [`retry`](super::retry)). `build` checks the policy.
    ///
    /// ```
    /// use std::time::Duration;
    /// use orchestrator::memory::InMemory;
    /// use orchestrator::orchestration::{Resumable, RetryPolicy, WorkflowRecord};
    /// # use orchestrator::prelude::*;
    /// # #[derive(Serialize, Deserialize, JsonSchema)] pub struct Operands { pub a: f64, pub b: f64 }
    /// # #[derive(Serialize, Deserialize, JsonSchema)] pub struct Sum { pub sum: f64 }
    /// # orchestrator::simple_contract! {
    /// #     pub contract Add { uri: "#/calc/add", type: "calc.add",
    /// #         versions: { AddV1 = "1.0.0" { accepts: Operands, emits: Sum } } }
    /// # }
    /// let builder = Resumable::builder(InMemory::<WorkflowRecord>::default()).service_with_retry::<AddV1>(
    ///     RetryPolicy::new(3).backoff(Duration::from_millis(100), Duration::from_secs(2)).on(["Timeout"]),
    /// );
    /// # let _ = builder;
    /// ```
    #[must_use]
    pub fn service_with_retry<S: ContractVersion>(mut self, policy: RetryPolicy) -> Self {
        self.services.push(S::versioned());
        self.retries.push((S::versioned(), policy));
        self
    }

    option_setters!();

    /// Checks the declaration: functions for versions of one self contract, exactly one for
    /// every version; services with distinct URIs, the self contract not among them; finite
    /// execution units. Every problem is listed in one [`Violation::Config`].
    pub fn build(self) -> Result<Resumable<Mem>, Violation> {
        let Some(first) = self.versions.first() else {
            return Err(Violation::config("a resumable needs a function for every version of its contract"));
        };
        let contract = first.self_contract;
        let mut problems = Vec::new();
        for (i, entry) in self.versions.iter().enumerate() {
            if entry.contract.uri() != contract.uri() {
                problems.push(format!(
                    "version {} of contract (uri={}) is not a version of the self contract (uri={})",
                    entry.contract.version_str(),
                    entry.contract.uri(),
                    contract.uri()
                ));
            } else if self.versions[..i].iter().any(|e| e.contract.version() == entry.contract.version()) {
                problems.push(format!("more than one function for version {}", entry.contract.version_str()));
            }
        }
        let missing: Vec<&str> = contract
            .versions()
            .filter(|vc| !self.versions.iter().any(|e| e.contract.version() == vc.version()))
            .map(VersionedContract::version_str)
            .collect();
        if !missing.is_empty() {
            problems
                .push(format!("a function is required for every version; missing: {}", missing.join(", ")));
        }
        for (i, service) in self.services.iter().enumerate() {
            if service.uri() == contract.uri() {
                problems.push(format!("the self contract (uri={}) cannot be a service", contract.uri()));
            } else if self.services[..i].iter().any(|s| s.uri() == service.uri()) {
                problems.push(format!("two services with the same contract uri {}", service.uri()));
            }
        }
        for (service, policy) in &self.retries {
            if let Err(e) = policy.check() {
                problems.push(format!("the retry policy of service {}: {e}", service.dataschema()));
            }
        }
        let executionunits = self.options.executionunits().unwrap_or_else(|problem| {
            problems.push(problem);
            None
        });
        let source: &'static str = first.contract.accepts().event_type();
        if !problems.is_empty() {
            return Err(Violation::config(format!(
                "Invalid resumable {source} (contract uri={}): {}",
                contract.uri(),
                problems.join("; ")
            ))
            .with_metadata(serde_json::json!({ "missingVersions": missing })));
        }
        let core = ResumableCore {
            source,
            versions: self.versions,
            services: self.services,
            signals: self.signals,
            notifications: self.notifications,
            retries: self.retries,
            service_domains: self.options.service_domains.clone(),
            complete_domains: self.options.complete_domains.clone(),
        };
        let lifecycle = self.options.lifecycle(core, self.memory, executionunits).resumable_spans();
        Ok(Workflow::from_lifecycle(lifecycle))
    }
}

/// Decodes an untyped call into the typed input of version `V` with context `C`.
fn typed_input<V: OrchestratorVersion, C: DeserializeOwned>(
    call: Call,
) -> Result<ResumableInput<V, C>, BoxError> {
    let Call { event, subject, is_init, context, collected, parent_subject, contract } = call;
    let init = if is_init {
        let accepts = V::Accepts::deserialize(event.data_value()).map_err(|e| {
            boxed(Violation::contract(format!(
                "Event (id={}, type={}) data passed its schema but does not decode as {}: {e}",
                event.id(),
                event.r#type(),
                std::any::type_name::<V::Init>()
            )))
        })?;
        Some(accepts.data)
    } else {
        None
    };
    let context = match context {
        Value::Null => None,
        value => Some(C::deserialize(value).map_err(|e| {
            boxed(Violation::execution(format!(
                "The context of resumable workflow (subject={}) does not decode as {}: {e}",
                subject.as_str(),
                std::any::type_name::<C>()
            )))
        })?),
    };
    let service = (!is_init).then(|| event.clone());
    Ok(ResumableInput::new(init, service, context, collected, event, subject, parent_subject, contract))
}
