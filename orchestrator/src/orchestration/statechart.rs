//! The statechart orchestrator: [`Orchestrator`] over [`machine!`](crate::machine!) machines,
//! its [`MachineCore`] step and the type-erased machine that lets several versions live side
//! by side.

use std::fmt;
use std::marker::PhantomData;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use serde_json::Value;

use super::definitions;
use super::options::{Options, option_setters};
use super::retry::{Intercepted, RetryEmitter, RetryLedger, RetryService};
use super::{CoreStep, Locking, StepError, StepInput, StepOutput, Workflow, WorkflowRecord};
use crate::contract::{ContractVersion, Emits, VersionedContract};
use crate::domain::Domain;
use crate::emit::{completion_events, request_events};
use crate::machine::{
    Completion, CompletionOptions, Machine, MachineError, MachineInstance, ServiceInfo, ServiceRequest,
    Snapshot,
};
use crate::memory::unix_ms;
use crate::memory::{Definition, Memory};
use crate::subject::Subject;
use crate::telemetry;
use crate::violation::Violation;

/// One step of a machine, without its types.
struct Stepped {
    requests: Vec<ServiceRequest>,
    state: Value,
    /// The completion payload, once the machine is done.
    output: Option<Value>,
    /// What the completion event sets instead of the defaults.
    completion: CompletionOptions,
    /// When the next timer is due (wall clock).
    wake_at: Option<SystemTime>,
}

/// A machine type behind a trait object, so that several versions live side by side.
trait ErasedMachine: Send + Sync + 'static {
    fn name(&self) -> &'static str;
    fn contract(&self) -> &'static VersionedContract;
    fn complete_type(&self) -> &'static str;
    fn services(&self) -> Vec<&'static VersionedContract>;
    /// The declared services with their retry policies.
    fn service_infos(&self) -> Vec<ServiceInfo>;
    fn run(&self, input: &StepInput<'_>) -> Result<Stepped, StepError>;
    /// The machine's definitions for a store's catalog.
    fn definitions(&self) -> Vec<Definition>;
}

struct Erased<M>(PhantomData<fn() -> M>);

fn machine_error(error: MachineError) -> StepError {
    match error {
        MachineError::Violation(violation) => StepError::Violation(violation),
        // The user's error as is: the workflow's system error names it as a failing service
        // handler's would.
        MachineError::Action { error, .. } => StepError::Failure(error.into_inner()),
        other => StepError::Failure(Box::new(other)),
    }
}

impl<M: Machine> ErasedMachine for Erased<M> {
    fn name(&self) -> &'static str {
        M::NAME
    }

    fn contract(&self) -> &'static VersionedContract {
        <M::Contract as ContractVersion>::versioned()
    }

    fn services(&self) -> Vec<&'static VersionedContract> {
        // Notifications are called like services (a handler must listen on their topic).
        M::services().into_iter().chain(M::notifications()).map(|s| s.contract).collect()
    }

    fn service_infos(&self) -> Vec<ServiceInfo> {
        M::services()
    }

    fn complete_type(&self) -> &'static str {
        <M::Contract as Emits<M::Output>>::EVENT_TYPE
    }

    fn definitions(&self) -> Vec<Definition> {
        let services: Vec<(&str, &VersionedContract)> =
            M::services().into_iter().map(|s| (s.name, s.contract)).collect();
        let chart = definitions::ChartOf { machine: M::NAME, chart: M::chart(), names: M::names() };
        definitions::workflow(self.contract(), &services, Some(chart))
    }

    fn run(&self, input: &StepInput<'_>) -> Result<Stepped, StepError> {
        let event = input.event;
        let now_ms = unix_ms(input.now);
        let (instance, requests) = match input.state {
            None => {
                let (mut instance, requests) =
                    MachineInstance::<M>::start_wire(event).map_err(machine_error)?;
                instance.set_epoch_ms(Some(now_ms));
                (instance, requests)
            }
            Some(state) => {
                let snapshot = Snapshot::<M::Context>::deserialize(state)
                    .map_err(|e| machine_error(MachineError::Snapshot(e.to_string())))?;
                let mut instance = MachineInstance::<M>::restore(snapshot).map_err(machine_error)?;
                // Machine time t is wall time epoch + t; timers due by now fire before the event.
                let epoch = match instance.epoch_ms() {
                    Some(epoch) => epoch,
                    None => {
                        let epoch = now_ms.saturating_sub(instance.now_ms());
                        instance.set_epoch_ms(Some(epoch));
                        epoch
                    }
                };
                let target = now_ms.saturating_sub(epoch);
                let mut requests = Vec::new();
                if target > instance.now_ms() {
                    requests = instance.catch_up(target - instance.now_ms()).map_err(machine_error)?;
                }
                if !input.is_wake && !instance.is_done() {
                    requests.extend(instance.send_wire(event).map_err(machine_error)?);
                }
                (instance, requests)
            }
        };
        let wake_at = match (instance.next_due(), instance.epoch_ms()) {
            (Some(due), Some(epoch)) => Some(UNIX_EPOCH + Duration::from_millis(epoch.saturating_add(due))),
            _ => None,
        };
        let state = instance.snapshot_json().map_err(machine_error)?;
        let (output, completion) = match instance.completion().map(Completion::into_parts) {
            None => (None, CompletionOptions::default()),
            Some((output, options)) => {
                options.validate().map_err(|e| StepError::Failure(Box::new(e)))?;
                (Some(output), options)
            }
        };
        let output = match output {
            None => None,
            Some(output) => Some(crate::json::payload_value(self.complete_type(), &output).map_err(|e| match e {
                // A value JSON cannot represent is the step's failure, not the contract's.
                Ok(not_representable) => machine_error(MachineError::NotRepresentable(not_representable)),
                Err(e) => StepError::Violation(Violation::contract(format!(
                    "[Emittable Event Creation] Invalid event data: the output of machine `{}` cannot be serialized: {e}",
                    M::NAME
                ))),
            })?),
        };
        Ok(Stepped { requests, state, output, completion, wake_at })
    }
}

/// The [`CoreStep`] of an [`Orchestrator`]: resolves the machine by the subject's orchestrator
/// version, starts or resumes it, and turns its requests and completion into events.
pub struct MachineCore {
    source: &'static str,
    machines: Vec<Box<dyn ErasedMachine>>,
    service_domains: Vec<Domain>,
    complete_domains: Vec<Domain>,
}

impl fmt::Debug for MachineCore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MachineCore")
            .field("source", &self.source)
            .field("versions", &self.versions())
            .field("service_domains", &self.service_domains)
            .field("complete_domains", &self.complete_domains)
            .finish()
    }
}

impl MachineCore {
    /// What a node records of these machines in its store's catalog: each version's
    /// orchestrator definition (with its chart) and its contracts.
    pub fn definitions(&self) -> Vec<Definition> {
        self.machines.iter().flat_map(|m| m.definitions()).collect()
    }

    /// The contracts of the services the machines call (each once, in declaration order).
    pub fn services(&self) -> Vec<&'static VersionedContract> {
        let mut services: Vec<&'static VersionedContract> = Vec::new();
        for service in self.machines.iter().flat_map(|m| m.services()) {
            if !services.iter().any(|s| std::ptr::eq(*s, service)) {
                services.push(service);
            }
        }
        services
    }

    /// The versions of the self contract the machines implement, in registration order.
    pub fn versions(&self) -> Vec<&'static str> {
        self.machines.iter().map(|m| m.contract().version_str()).collect()
    }

    fn resolve(&self, subject: &Subject) -> Result<&dyn ErasedMachine, Violation> {
        self.machines
            .iter()
            .find(|m| m.contract().version_str() == subject.orchestrator_version())
            .map(|m| &**m)
            .ok_or_else(|| {
                Violation::config(format!(
                    "Machine resolution failed: No machine found matching orchestrator name='{}' and version='{}'.",
                    subject.orchestrator_name(),
                    subject.orchestrator_version()
                ))
            })
    }
}

impl CoreStep for MachineCore {
    fn source(&self) -> &str {
        self.source
    }

    fn system_error_contract(&self) -> &VersionedContract {
        // Every machine shares the self contract; system errors use `<uri>/0.0.0` anyway.
        self.machines[0].contract()
    }

    async fn step(&self, input: StepInput<'_>) -> Result<StepOutput, StepError> {
        let machine = {
            let span = telemetry::internal_span("Resolve Machine");
            let resolved = self.resolve(input.subject);
            span.result(&resolved);
            resolved?
        };
        // Retries (see `retry`): a retried error is not shown to the machine, which only fires
        // its due timers then.
        let infos = machine.service_infos();
        let services: Vec<RetryService<'_>> = infos
            .iter()
            .map(|s| RetryService { name: s.name, contract: s.contract, policy: s.retry.as_ref() })
            .collect();
        let retrying = services.iter().any(|s| s.policy.is_some());
        let mut ledger = if retrying { RetryLedger::read(input.state)? } else { RetryLedger::default() };
        let mut run_input = input;
        if retrying
            && !input.is_wake
            && input.state.is_some()
            && ledger.on_event(input.event, input.subject.as_str(), unix_ms(input.now), &services)
                == Intercepted::Retried
        {
            run_input.is_wake = true;
        }
        let Stepped { requests, mut state, output, completion, mut wake_at } = {
            let mut span = telemetry::internal_span("Execute Machine");
            span.attributes(&[
                ("arvo.machine.type", machine.name()),
                ("arvo.machine.version", machine.contract().version_str()),
            ]);
            let ran = machine.run(&run_input);
            if let Err(StepError::Failure(error)) = &ran {
                span.error(error);
            }
            ran?
        };
        let done = output.is_some();
        let mut events = if retrying {
            let mut emitter =
                RetryEmitter::new(self.source, &self.service_domains, &input, machine.contract(), &services);
            let mut events: Vec<_> = if done {
                Vec::new()
            } else {
                emitter.due(&mut ledger)?.into_iter().map(|(_, e)| e).collect()
            };
            events.extend(emitter.requests(&mut ledger, &requests)?);
            if done {
                ledger.clear();
            }
            ledger.write(&mut state)?;
            if let Some(due) = ledger.next_due_ms() {
                let due = UNIX_EPOCH + Duration::from_millis(due);
                wake_at = Some(wake_at.map_or(due, |w| w.min(due)));
            }
            events
        } else {
            request_events(self.source, &self.service_domains, &input, machine.contract(), &requests)?
        };
        if let Some(output) = output {
            events.extend(completion_events(
                self.source,
                &self.complete_domains,
                &input,
                machine.contract(),
                machine.complete_type(),
                &format_args!("machine `{}`", machine.name()),
                output,
                &completion,
            )?);
        }
        Ok(StepOutput { events, state, done, wake_at })
    }
}

/// A statechart orchestrator: one or more versions of one self contract, each run by a
/// [`machine!`](crate::machine!) machine, inside the orchestration
/// [`Lifecycle`](super::Lifecycle): a [`Workflow`] over [`MachineCore`]. Cheap to clone.
///
/// * The machine is chosen by the subject's orchestrator version
///   ([`Violation::Config`] "Machine resolution failed…" when none matches).
/// * An init event starts it ([`MachineInstance::start_wire`]); any other event restores the
///   persisted [`Snapshot`] and is sent to it ([`MachineInstance::send_wire`], which validates the
///   event against the machine's contracts: an event of no contract is a [`Violation::Config`],
///   invalid data a [`Violation::Contract`]).
/// * Each service request becomes an event (source = the orchestrator; subject = the workflow's,
///   or a new child subject for a service that is an orchestrator contract; to = the service
///   type; redirectto = the orchestrator; parentid = the triggering event; one event per unique
///   resolved service domain, default `[Local]`).
/// * A system error of a service with a retry policy that retries it is not sent to the
///   machine: the request is sent again after the backoff, on the workflow's durable timer
///   (see [`retry`](super::retry)).
/// * Once the machine is done, the completion `arvo.orc.<name>.done` is appended, exactly once,
///   even with an empty output: subject = the parent subject ?? the workflow's; to =
///   `meta.redirectto` ?? the initiator; parentid = the init event id; data = the output checked
///   against the complete schema; default domains `[OrchestrationContext]`; the id, execution
///   units and domains may be set by the machine's `output` ([`Completion`]).
/// * A fallible action or guard returning an error fails the workflow with that error (its
///   `sys.…error` event names it as a failing service handler's would); a [`Violation`] it
///   returns is returned, nothing persisted.
pub type Orchestrator<Mem> = Workflow<MachineCore, Mem>;

impl<Mem: Memory<WorkflowRecord> + 'static> Workflow<MachineCore, Mem> {
    /// Starts declaring an orchestrator storing its workflows in `memory`.
    pub fn builder(memory: Mem) -> OrchestratorBuilder<Mem> {
        OrchestratorBuilder { memory, machines: Vec::new(), options: Options::default() }
    }

    /// The versions of the self contract served, in registration order.
    pub fn versions(&self) -> Vec<&'static str> {
        self.lifecycle().core().versions()
    }

    /// The contracts of the services its machines call.
    pub fn services(&self) -> Vec<&'static VersionedContract> {
        self.lifecycle().core().services()
    }

    /// What a node records of this orchestrator in its store's catalog (see
    /// [`Catalog`](crate::memory::Catalog)).
    pub fn definitions(&self) -> Vec<Definition> {
        self.lifecycle().core().definitions()
    }
}

/// Declares an [`Orchestrator`]: its machines (versions of one self contract), then options.
pub struct OrchestratorBuilder<Mem> {
    memory: Mem,
    machines: Vec<Box<dyn ErasedMachine>>,
    options: Options,
}

impl<Mem> fmt::Debug for OrchestratorBuilder<Mem> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OrchestratorBuilder")
            .field("machines", &self.machines.iter().map(|m| m.name()).collect::<Vec<_>>())
            .field("locking", &self.options.locking)
            .finish_non_exhaustive()
    }
}

impl<Mem: Memory<WorkflowRecord> + 'static> OrchestratorBuilder<Mem> {
    /// Adds machine `M`, serving the version of the self contract it implements.
    #[must_use]
    pub fn machine<M: Machine>(mut self) -> Self {
        self.machines.push(Box::new(Erased::<M>(PhantomData)));
        self
    }

    option_setters!();

    /// Checks the declaration: at least one machine, all with the same self contract (URI and
    /// type) and distinct versions, finite execution units. Each problem is a
    /// [`Violation::Config`].
    pub fn build(self) -> Result<Orchestrator<Mem>, Violation> {
        let Some(first) = self.machines.first() else {
            return Err(Violation::config("an orchestrator needs at least one machine"));
        };
        let (uri, source) = (first.contract().uri(), first.contract().accepts().event_type());
        for (i, machine) in self.machines.iter().enumerate() {
            let vc = machine.contract();
            if vc.uri() != uri || vc.accepts().event_type() != source {
                return Err(Violation::config(format!(
                    "Machine `{}` implements contract (uri={}, type={}) but machine `{}` implements (uri={uri}, type={source}): the machines of one orchestrator must be versions of one self contract",
                    machine.name(),
                    vc.uri(),
                    vc.accepts().event_type(),
                    first.name()
                )));
            }
            if let Some(other) = self.machines[..i].iter().find(|m| m.contract().version() == vc.version()) {
                return Err(Violation::config(format!(
                    "Machines `{}` and `{}` both implement version {} of contract (uri={uri}): each version needs exactly one machine",
                    other.name(),
                    machine.name(),
                    vc.version_str()
                )));
            }
        }
        let executionunits = self.options.executionunits().map_err(Violation::config)?;
        let source: &'static str = first.contract().accepts().event_type();
        let core = MachineCore {
            source,
            machines: self.machines,
            service_domains: self.options.service_domains.clone(),
            complete_domains: self.options.complete_domains.clone(),
        };
        let lifecycle = self.options.lifecycle(core, self.memory, executionunits);
        Ok(Workflow::from_lifecycle(lifecycle))
    }
}
