//! What a resumable function receives ([`ResumableInput`], [`Collected`]) and returns
//! ([`ResumableOutput`], [`Request`]).

use std::fmt;

use indexmap::IndexMap;
use serde_json::Value;

use crate::json::NotRepresentable;

use crate::contract::{
    ContractVersion, Emits, NoReply, OrchestratorInit, OrchestratorVersion, Payload, SystemErrorPayload,
    VersionedContract,
};
use crate::event::Event;
use crate::machine::{Completion, IntoCompletion, RequestOptions};
use crate::subject::Subject;
use crate::violation::Violation;

/// The events collected so far for the requests of the last step that emitted any (the fan-in),
/// grouped by event type in arrival order.
#[derive(Debug, Clone, Default)]
pub struct Collected {
    by_type: IndexMap<String, Vec<Event>>,
}

impl Collected {
    pub(super) fn group<'a>(events: impl IntoIterator<Item = &'a Event>) -> Self {
        let mut by_type: IndexMap<String, Vec<Event>> = IndexMap::new();
        for event in events {
            by_type.entry(event.r#type().to_owned()).or_default().push(event.clone());
        }
        Self { by_type }
    }

    /// The collected events of type `event_type`.
    pub fn events(&self, event_type: &str) -> &[Event] {
        self.by_type.get(event_type).map_or(&[], Vec::as_slice)
    }

    /// The collected events grouped by type (Arvo's `collectedEvents`).
    pub fn by_type(&self) -> &IndexMap<String, Vec<Event>> {
        &self.by_type
    }

    /// Every collected event.
    pub fn all(&self) -> impl Iterator<Item = &Event> {
        self.by_type.values().flatten()
    }

    /// How many events were collected.
    pub fn len(&self) -> usize {
        self.by_type.values().map(Vec::len).sum()
    }

    /// Whether nothing was collected.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The decoded payloads of the collected `P` events of service `S` (e.g.
    /// `collected.of::<AddV1, Sum>()`), in arrival order.
    pub fn of<S: Emits<P>, P: Payload>(&self) -> Result<Vec<P>, Violation> {
        self.events(S::EVENT_TYPE).iter().map(S::parse_emitted).collect()
    }

    /// The collected system errors of service `S` (`sys.<type>.error`), in arrival order.
    pub fn errors<S: ContractVersion>(&self) -> Result<Vec<SystemErrorPayload>, Violation> {
        let vc = S::versioned();
        self.events(vc.system_error().event_type())
            .iter()
            .map(|event| {
                vc.validate_emitted(event)?;
                <SystemErrorPayload as serde::Deserialize>::deserialize(event.data_value()).map_err(|e| {
                    Violation::contract(format!(
                        "Event (id={}, type={}) is not a system error payload: {e}",
                        event.id(),
                        event.r#type()
                    ))
                })
            })
            .collect()
    }
}

/// The input of the resumable function handling version `V` of the self contract, with context
/// type `C`.
#[non_exhaustive]
pub struct ResumableInput<V: OrchestratorVersion, C> {
    /// The init payload, when the event is the init event (`arvo.orc.<name>`).
    pub init: Option<V::Init>,
    /// The service response or system error, when the event is not the init event.
    pub service: Option<Event>,
    /// The context returned by the previous steps (`None` on init, or when none was set).
    pub context: Option<C>,
    /// The responses collected so far for the requests of the last step that emitted any.
    pub collected: Collected,
    /// The incoming event.
    pub event: Event,
    /// The workflow's subject.
    pub subject: Subject,
    /// The parent workflow's subject, for a child workflow.
    pub parent_subject: Option<String>,
    /// The version of the self contract being run (chosen by the subject's version).
    pub contract: &'static VersionedContract,
}

impl<V: OrchestratorVersion, C> ResumableInput<V, C> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        init: Option<V::Init>,
        service: Option<Event>,
        context: Option<C>,
        collected: Collected,
        event: Event,
        subject: Subject,
        parent_subject: Option<String>,
        contract: &'static VersionedContract,
    ) -> Self {
        Self { init, service, context, collected, event, subject, parent_subject, contract }
    }

    /// The service response or system error, when the event is not the init event.
    pub fn service(&self) -> Option<&Event> {
        self.service.as_ref()
    }

    /// The payload of signal `S` (declared with
    /// [`ResumableBuilder::signal`](super::ResumableBuilder::signal)) when the event is one:
    /// `Ok(None)` for any other event. The event was validated against `S` already.
    pub fn signal<S: ContractVersion>(&self) -> Result<Option<S::Accepts>, Violation> {
        if self.init.is_some() || self.event.r#type() != S::TYPE {
            return Ok(None);
        }
        <S::Accepts as serde::Deserialize>::deserialize(self.event.data_value()).map(Some).map_err(|e| {
            Violation::contract(format!(
                "Event (id={}, type={}) data passed its schema but does not decode as {}: {e}",
                self.event.id(),
                self.event.r#type(),
                std::any::type_name::<S::Accepts>()
            ))
        })
    }

    /// Shorthand for [`Collected::of`].
    pub fn collected<S: Emits<P>, P: Payload>(&self) -> Result<Vec<P>, Violation> {
        self.collected.of::<S, P>()
    }
}

impl<V: OrchestratorVersion, C: fmt::Debug> fmt::Debug for ResumableInput<V, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResumableInput")
            .field("init", &self.init.as_ref().map(|_| std::any::type_name::<V::Init>()))
            .field("service", &self.service)
            .field("context", &self.context)
            .field("collected", &self.collected)
            .field("subject", &self.subject.as_str())
            .finish_non_exhaustive()
    }
}

/// A request to a service declared with
/// [`ResumableBuilder::service`](super::ResumableBuilder::service), typed by the service contract
/// version.
#[derive(Debug, Clone)]
pub struct Request {
    pub(super) contract: &'static VersionedContract,
    /// The payload, or why it is none: `Ok` a payload JSON cannot represent (the function's
    /// failure), `Err` its `Serialize` implementation failed (a contract violation).
    pub(super) data: Result<Value, Result<NotRepresentable, String>>,
    /// A child orchestration: `parentSubject$$` = the workflow's subject is added.
    pub(super) child: bool,
    pub(super) options: RequestOptions,
}

impl Request {
    /// A request to service `S` with its accepted payload.
    pub fn new<S: ContractVersion>(payload: S::Accepts) -> Self {
        Self {
            contract: S::versioned(),
            data: crate::json::payload_value(S::versioned().accepts().event_type(), &payload),
            child: false,
            options: RequestOptions::default(),
        }
    }

    /// Starts a child orchestration of orchestrator contract `S` with its `Init` payload; its
    /// `parentSubject$$` is the running workflow's subject, so its completion comes back here.
    pub fn child<S: OrchestratorVersion>(init: S::Init) -> Self {
        Self {
            contract: S::versioned(),
            data: crate::json::payload_value(S::versioned().accepts().event_type(), &init),
            child: true,
            options: RequestOptions::default(),
        }
    }

    /// Sets what the request's event carries instead of the defaults (id, `to`, `redirectto`,
    /// access control, execution units, domains).
    #[must_use]
    pub fn with_options(mut self, options: RequestOptions) -> Self {
        self.options = options;
        self
    }

    /// The service contract version.
    pub fn contract(&self) -> &'static VersionedContract {
        self.contract
    }

    /// The accepted payload, `parentSubject$$` added for a child orchestration of `subject`.
    pub(super) fn payload(&self, subject: &str) -> Result<Value, Result<NotRepresentable, String>> {
        let data = self.data.clone()?;
        if self.child {
            serde_json::to_value(OrchestratorInit { parent_subject: Some(subject.to_owned()), data })
                .map_err(|e| Err(e.to_string()))
        } else {
            Ok(data)
        }
    }
}

/// What a resumable function returns: requests to send, the new context, and the output once the
/// workflow is done. Returning neither requests nor output waits for more events.
pub struct ResumableOutput<V: OrchestratorVersion, C> {
    pub(super) context: Option<C>,
    pub(super) requests: Vec<Request>,
    /// Notifications: sent, but no reply is expected (not part of the fan-in).
    pub(super) notifications: Vec<Request>,
    pub(super) output: Option<Completion<V::Complete>>,
}

impl<V: OrchestratorVersion, C> ResumableOutput<V, C> {
    /// Nothing to do yet: keep waiting (the context and the expected responses are kept).
    pub fn wait() -> Self {
        Self { context: None, requests: Vec::new(), notifications: Vec::new(), output: None }
    }

    /// The workflow is done: its completion event carries `output`, the completion payload or a
    /// [`Completion`] of it (which sets the event's id, execution units or domains).
    pub fn complete(output: impl IntoCompletion<V::Complete>) -> Self {
        Self {
            context: None,
            requests: Vec::new(),
            notifications: Vec::new(),
            output: Some(output.into_completion()),
        }
    }

    /// Replaces the context (kept as is when not set).
    #[must_use]
    pub fn context(mut self, context: C) -> Self {
        self.context = Some(context);
        self
    }

    /// Adds a service request.
    #[must_use]
    pub fn request(mut self, request: Request) -> Self {
        self.requests.push(request);
        self
    }

    /// Adds a notification of contract `N` (declared with
    /// [`ResumableBuilder::notification`](super::ResumableBuilder::notification); it emits
    /// nothing, so no reply is expected): sent like a request, without changing the responses
    /// the workflow waits for.
    #[must_use]
    pub fn notify<N: NoReply>(mut self, payload: N::Accepts) -> Self {
        self.notifications.push(Request::new::<N>(payload));
        self
    }

    /// Adds service requests.
    #[must_use]
    pub fn requests(mut self, requests: impl IntoIterator<Item = Request>) -> Self {
        self.requests.extend(requests);
        self
    }
}

impl<V: OrchestratorVersion, C> Default for ResumableOutput<V, C> {
    fn default() -> Self {
        Self::wait()
    }
}

impl<V: OrchestratorVersion, C: fmt::Debug> fmt::Debug for ResumableOutput<V, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResumableOutput")
            .field("context", &self.context)
            .field("requests", &self.requests)
            .field("notifications", &self.notifications)
            .field("done", &self.output.is_some())
            .finish()
    }
}
