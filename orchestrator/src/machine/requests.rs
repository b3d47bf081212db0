//! Service requests emitted by actions.

use serde_json::{Number, Value};

use super::MachineError;
use crate::contract::{ContractVersion, OrchestratorInit, OrchestratorVersion, VersionedContract};
use crate::domain::Domain;
use crate::event::{Event, EventBuilder};
use crate::factory::FactoryError;
use crate::violation::Violation;

/// What a request may set on its event instead of the defaults (Arvo's emit fields `id`, `to`,
/// `redirectto`, `accesscontrol`, `executionunits`, `domain`; reference 2.6).
///
/// ```
/// use orchestrator::domain::Domain;
/// use orchestrator::machine::RequestOptions;
/// let options = RequestOptions::new().id("req-42").domains([Domain::named("human.interaction")?]);
/// assert_eq!(options.id.as_deref(), Some("req-42"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestOptions {
    /// The event id (a deduplication key): every domain copy gets it. Default: a new UUID per copy.
    pub id: Option<String>,
    /// Where the event goes. Default: the service's type.
    pub to: Option<String>,
    /// Where the answer goes. Default: the orchestrator (for a child orchestration, also its
    /// subject's `meta.redirectto`).
    pub redirectto: Option<String>,
    /// Access control. Default: the triggering event's.
    pub accesscontrol: Option<String>,
    /// Execution units. Default: the orchestrator's.
    pub executionunits: Option<Number>,
    /// The domains to emit in (one copy per unique resolved domain). Default: the orchestrator's
    /// service domains.
    pub domains: Option<Vec<Domain>>,
}

impl RequestOptions {
    /// No overrides.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the event id.
    #[must_use]
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Sets `to`.
    #[must_use]
    pub fn to(mut self, to: impl Into<String>) -> Self {
        self.to = Some(to.into());
        self
    }

    /// Sets `redirectto`.
    #[must_use]
    pub fn redirectto(mut self, redirectto: impl Into<String>) -> Self {
        self.redirectto = Some(redirectto.into());
        self
    }

    /// Sets `accesscontrol`.
    #[must_use]
    pub fn accesscontrol(mut self, accesscontrol: impl Into<String>) -> Self {
        self.accesscontrol = Some(accesscontrol.into());
        self
    }

    /// Sets the execution units (a non-finite number is ignored).
    #[must_use]
    pub fn executionunits(mut self, units: f64) -> Self {
        self.executionunits = Number::from_f64(units);
        self
    }

    /// Sets the domains.
    #[must_use]
    pub fn domains(mut self, domains: impl IntoIterator<Item = Domain>) -> Self {
        self.domains = Some(domains.into_iter().collect());
        self
    }
}

/// A request to a service, emitted by an action through the machine's typed outbox. The runtime
/// turns it into an event with [`ServiceRequest::to_event`].
#[derive(Debug, Clone)]
pub struct ServiceRequest {
    /// The service's key in `services: { … }`.
    pub service: &'static str,
    /// The service contract version.
    pub contract: &'static VersionedContract,
    /// The event type: the service's accepted type.
    pub event_type: &'static str,
    /// `<service uri>/<version>`.
    pub dataschema: &'static str,
    /// The payload, already checked against the service's accepted schema. For a child
    /// orchestration it includes `parentSubject$$`.
    pub data: Value,
    /// What the request sets instead of the defaults.
    pub options: RequestOptions,
}

impl ServiceRequest {
    /// For a child orchestration (a service that is an orchestrator contract): the parent subject
    /// in the payload (`parentSubject$$`).
    pub fn parent_subject(&self) -> Option<&str> {
        self.data.get(crate::contract::orchestrator::PARENT_SUBJECT_KEY).and_then(Value::as_str)
    }

    /// The request as an event; `base` supplies the other fields (at least `source`).
    pub fn to_event(&self, base: EventBuilder) -> Result<Event, FactoryError> {
        self.contract.event_from_json(self.event_type, self.data.clone(), base)
    }
}

/// What a service request may carry: the service's accepted payload, or, for a service that is
/// an orchestrator contract, its `Init` payload (the parent subject is added).
///
/// `K` is [`AsIs`] or [`ChildInit`] and is inferred.
#[diagnostic::on_unimplemented(
    message = "service `{Self}` does not accept a request of type `{P}`",
    label = "not the payload `{Self}` accepts",
    note = "a request takes the service's accepted payload (its `Init` payload for an orchestrator contract)"
)]
pub trait ServiceRequestInput<P, K>: ContractVersion {
    /// The accepted payload for `payload`, in the workflow whose subject is `parent_subject`.
    fn into_accepts(payload: P, parent_subject: Option<&str>) -> Self::Accepts;
}

/// [`ServiceRequestInput`] marker: the accepted payload itself.
#[derive(Debug)]
pub enum AsIs {}

/// [`ServiceRequestInput`] marker: an orchestrator's `Init` payload, sent as a child orchestration.
#[derive(Debug)]
pub enum ChildInit {}

impl<V: ContractVersion> ServiceRequestInput<V::Accepts, AsIs> for V {
    fn into_accepts(payload: V::Accepts, _: Option<&str>) -> V::Accepts {
        payload
    }
}

impl<V: OrchestratorVersion> ServiceRequestInput<V::Init, ChildInit> for V {
    fn into_accepts(payload: V::Init, parent_subject: Option<&str>) -> V::Accepts {
        OrchestratorInit { parent_subject: parent_subject.map(str::to_owned), data: payload }
    }
}

/// Collects the service requests of one step. Actions reach it through the machine's typed
/// outbox (`<Name>Outbox`), whose methods only accept declared services and their payloads.
#[derive(Debug, Default)]
pub struct Requests {
    pub(crate) subject: Option<String>,
    pub(crate) requests: Vec<ServiceRequest>,
    /// Why requests could not be emitted: a contract violation, or a payload JSON cannot
    /// represent (the step's failure).
    pub(crate) errors: Vec<MachineError>,
}

impl Requests {
    /// The subject of the running workflow, if known (parent subject of child orchestrations).
    pub fn subject(&self) -> Option<&str> {
        self.subject.as_deref()
    }

    /// The requests emitted so far in this step.
    pub fn requests(&self) -> &[ServiceRequest] {
        &self.requests
    }

    /// Emits a request to service `V` (named `service`). A payload that does not satisfy the
    /// service's accepted schema makes the step fail with a contract [`Violation`]; one holding a
    /// value JSON cannot represent (NaN, ±inf) fails the step as an ordinary failure
    /// ([`MachineError::NotRepresentable`]: the workflow gets a system error naming the field).
    pub fn push<V, P, K>(&mut self, service: &'static str, payload: P)
    where
        V: ServiceRequestInput<P, K>,
    {
        self.push_with::<V, P, K>(service, payload, RequestOptions::default());
    }

    /// [`push`](Self::push) with [`RequestOptions`].
    pub fn push_with<V, P, K>(&mut self, service: &'static str, payload: P, options: RequestOptions)
    where
        V: ServiceRequestInput<P, K>,
    {
        let accepts = V::into_accepts(payload, self.subject.as_deref());
        let contract = V::versioned();
        let event_type = contract.accepts().event_type();
        let data = match crate::json::payload_value(event_type, &accepts) {
            Ok(data) => data,
            // A value JSON cannot represent is the action's failure, not the contract's.
            Err(Ok(not_representable)) => {
                self.errors.push(MachineError::NotRepresentable(not_representable));
                return;
            }
            Err(Err(e)) => {
                self.errors.push(MachineError::Violation(Violation::contract(format!(
                    "[Emittable Event Creation] Invalid event data: the request to service '{service}' \
                     ({event_type}) cannot be serialized: {e}"
                ))));
                return;
            }
        };
        if let Err(errors) = contract.accepts().validate(&data) {
            self.errors.push(MachineError::Violation(Violation::contract(format!(
                "[Emittable Event Creation] Invalid event data: the request to service '{service}' \
                 does not match {}: {errors}",
                contract.dataschema()
            ))));
            return;
        }
        self.requests.push(ServiceRequest {
            service,
            contract,
            event_type,
            dataschema: contract.dataschema(),
            data,
            options,
        });
    }
}
