//! Typed event factories: build the events a contract version accepts and emits.
//!
//! [`EventFactory<V>`] fills `type`, `dataschema` and `data` from the contract version `V`, checks
//! the payload against its schema, and generates an orchestration subject when none is given.
//! The payload type is checked at compile time: `factory.emits(x, …)` only compiles when `V`
//! declares an emit of `x`'s type.
//!
//! ```compile_fail
//! use orchestrator::prelude::*;
//! #[derive(Serialize, Deserialize, JsonSchema)] pub struct In { a: f64 }
//! #[derive(Serialize, Deserialize, JsonSchema)] pub struct Out { sum: f64 }
//! #[derive(Serialize, Deserialize, JsonSchema)] pub struct Other { x: f64 }
//! orchestrator::contract! {
//!     pub contract Add { uri: "#/add", type: "com.calc.add",
//!         versions: { AddV1 = "1.0.0" { accepts: In, emits: { "evt.calc.add.success" => Out } } } }
//! }
//! // `Other` is not emitted by AddV1: this does not compile.
//! let _ = EventFactory::<AddV1>::new().emits(Other { x: 1.0 }, Event::builder().source("com.a.b"));
//! ```

use std::marker::PhantomData;

use serde::Serialize;
use serde_json::Value;

use crate::contract::{
    ContractVersion, Emits, OrchestratorInit, OrchestratorVersion, SchemaErrors, SystemErrorPayload,
    VersionedContract,
};
use crate::event::{Event, EventBuilder, EventError};
use crate::subject::{Subject, SubjectError};

/// Why a factory could not build an event.
#[derive(Debug, thiserror::Error)]
pub enum FactoryError {
    /// The payload does not satisfy the schema of its event type.
    #[error("{kind} event data validation failed for '{event_type}': {errors}")]
    Data {
        /// `Accept`, `Emit`, `Init`, `Complete` or `System error`.
        kind: &'static str,
        /// The event type.
        event_type: String,
        /// Every schema error.
        errors: SchemaErrors,
    },
    /// The contract version declares no such emitted event type.
    #[error("Emit event data validation failed: no contract available for '{event_type}' in {dataschema}")]
    UnknownEmit {
        /// The requested type.
        event_type: String,
        /// The contract version.
        dataschema: String,
    },
    /// The payload could not be serialized to a JSON object.
    #[error("payload for '{event_type}' must serialize to a JSON object: {reason}")]
    Payload {
        /// The event type.
        event_type: String,
        /// What went wrong.
        reason: String,
    },
    /// No subject was given and the default one could not be generated.
    #[error("cannot generate the orchestration subject of a '{event_type}' event: {source}")]
    Subject {
        /// The event type.
        event_type: String,
        /// Why.
        #[source]
        source: SubjectError,
    },
    /// The resulting event breaks an event rule.
    #[error(transparent)]
    Event(#[from] EventError),
}

/// Builds the events of contract version `V` with compile-time payload types.
pub struct EventFactory<V>(PhantomData<fn() -> V>);

impl<V> Default for EventFactory<V> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<V> Clone for EventFactory<V> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<V> Copy for EventFactory<V> {}

impl<V> std::fmt::Debug for EventFactory<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EventFactory<{}>", std::any::type_name::<V>())
    }
}

impl<V: ContractVersion> EventFactory<V> {
    /// A factory for version `V`.
    pub fn new() -> Self {
        Self(PhantomData)
    }

    /// The event `V` accepts. `base` supplies the other fields (at least `source`).
    pub fn accepts(&self, payload: V::Accepts, base: EventBuilder) -> Result<Event, FactoryError> {
        let vc = V::versioned();
        build(vc, "Accept", vc.accepts().event_type(), vc.dataschema(), &payload, base)
    }

    /// An event `V` emits; the payload type selects the event type at compile time.
    pub fn emits<P>(&self, payload: P, base: EventBuilder) -> Result<Event, FactoryError>
    where
        V: Emits<P>,
        P: crate::contract::Payload,
    {
        let vc = V::versioned();
        build(vc, "Emit", <V as Emits<P>>::EVENT_TYPE, vc.dataschema(), &payload, base)
    }

    /// A signal to the running workflow `subject`: the event `V` accepts, addressed to the
    /// workflow's orchestrator (`to` = the subject's orchestrator name) with the workflow's
    /// subject. `base` supplies the other fields (at least `source`). A subject that is not an
    /// orchestration subject is [`FactoryError::Subject`]; a payload that breaks the schema,
    /// [`FactoryError::Data`]. [`Node::signal`](crate::runtime::Node::signal) builds and
    /// publishes it in one call.
    ///
    /// ```
    /// use orchestrator::prelude::*;
    /// use orchestrator::subject::Subject;
    /// #[derive(Serialize, Deserialize, JsonSchema)]
    /// pub struct Decision { pub approved: bool }
    /// orchestrator::contract! {
    ///     pub contract Approve { uri: "#/approve", type: "com.approval.decision",
    ///         versions: { ApproveV1 = "1.0.0" { accepts: Decision, emits: {} } } }
    /// }
    /// let subject = Subject::builder("arvo.orc.loan", "1.0.0", "com.example.client").build()?;
    /// let event = EventFactory::<ApproveV1>::new().signal(
    ///     Decision { approved: true },
    ///     subject.as_str(),
    ///     Event::builder().source("com.example.client"),
    /// )?;
    /// assert_eq!(event.r#type(), "com.approval.decision");
    /// assert_eq!(event.to(), Some("arvo.orc.loan"));
    /// assert_eq!(event.subject(), subject.as_str());
    /// assert_eq!(event.dataschema(), Some("#/approve/1.0.0"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn signal(
        &self,
        payload: V::Accepts,
        subject: &str,
        base: EventBuilder,
    ) -> Result<Event, FactoryError> {
        let vc = V::versioned();
        let parsed = Subject::parse(subject).map_err(|source| FactoryError::Subject {
            event_type: vc.accepts().event_type().to_owned(),
            source,
        })?;
        let base = base.to(parsed.orchestrator_name()).orchestration_subject(&parsed);
        self.accepts(payload, base)
    }

    /// The `sys.<type>.error` event of `V`, with dataschema `<uri>/0.0.0`.
    pub fn system_error(&self, error: SystemErrorPayload, base: EventBuilder) -> Result<Event, FactoryError> {
        let vc = V::versioned();
        build(vc, "System error", vc.system_error().event_type(), vc.system_error_dataschema(), &error, base)
    }
}

impl<V: OrchestratorVersion> EventFactory<V> {
    /// The init event of a root workflow (`parentSubject$$` = null).
    pub fn init(&self, payload: V::Init, base: EventBuilder) -> Result<Event, FactoryError> {
        let vc = V::versioned();
        let init = OrchestratorInit::<V::Init>::root(payload);
        build(vc, "Init", vc.accepts().event_type(), vc.dataschema(), &init, base)
    }

    /// The init event of a child workflow of `parent`. Unless `base` sets a subject, the event's
    /// subject is a child subject of `parent` (initiator = the parent's orchestrator; domain = the event's, else the parent's;
    /// `meta.redirectto` = the event's `redirectto`, else the parent's initiator).
    pub fn init_child(
        &self,
        payload: V::Init,
        parent: &Subject,
        base: EventBuilder,
    ) -> Result<Event, FactoryError> {
        let vc = V::versioned();
        let event_type = vc.accepts().event_type();
        let init = OrchestratorInit::<V::Init>::child(payload, parent.as_str());
        if base.has_subject() {
            // An explicit subject wins, as in arvo-core.
            return build(vc, "Init", event_type, vc.dataschema(), &init, base);
        }
        let mut child = parent.child(event_type, vc.version_str());
        if let Some(domain) = base.domain_ref() {
            child = child.domain(domain);
        }
        let redirect = base.redirectto_ref().unwrap_or(parent.initiator()).to_owned();
        let subject = child
            .meta("redirectto", redirect)
            .build()
            .map_err(|source| FactoryError::Subject { event_type: event_type.to_owned(), source })?;
        build(vc, "Init", event_type, vc.dataschema(), &init, base.orchestration_subject(&subject))
    }

    /// The completion event (`arvo.orc.<name>.done`).
    pub fn complete(&self, payload: V::Complete, base: EventBuilder) -> Result<Event, FactoryError> {
        self.emits(payload, base)
    }
}

impl VersionedContract {
    /// Builds an event of any type of this version from a JSON payload, checked against its
    /// schema (the dynamic counterpart of [`EventFactory`], for tools and loaded contracts).
    pub fn event_from_json(
        &self,
        event_type: &str,
        data: Value,
        base: EventBuilder,
    ) -> Result<Event, FactoryError> {
        let Some(schema) = self.schema_for_type(event_type) else {
            return Err(FactoryError::UnknownEmit {
                event_type: event_type.to_owned(),
                dataschema: self.dataschema().to_owned(),
            });
        };
        let (kind, dataschema) = if schema.event_type() == self.system_error().event_type() {
            ("System error", self.system_error_dataschema())
        } else if schema.event_type() == self.accepts().event_type() {
            ("Accept", self.dataschema())
        } else {
            ("Emit", self.dataschema())
        };
        // The payload is JSON already: no need to serialize it again.
        build_json(self, kind, event_type, dataschema, data, base)
    }
}

fn build<T: Serialize + ?Sized>(
    vc: &VersionedContract,
    kind: &'static str,
    event_type: &str,
    dataschema: &str,
    payload: &T,
    base: EventBuilder,
) -> Result<Event, FactoryError> {
    match serde_json::to_value(payload) {
        Ok(value) => build_json(vc, kind, event_type, dataschema, value, base),
        Err(e) => Err(FactoryError::Payload { event_type: event_type.to_owned(), reason: e.to_string() }),
    }
}

/// [`build`] with the payload as JSON.
fn build_json(
    vc: &VersionedContract,
    kind: &'static str,
    event_type: &str,
    dataschema: &str,
    value: Value,
    base: EventBuilder,
) -> Result<Event, FactoryError> {
    if !value.is_object() {
        return Err(FactoryError::Payload {
            event_type: event_type.to_owned(),
            reason: format!("it serialized to {value}"),
        });
    }
    if let Some(schema) = vc.schema_for_type(event_type) {
        schema.validate(&value).map_err(|errors| FactoryError::Data {
            kind,
            event_type: event_type.to_owned(),
            errors,
        })?;
    }
    let Value::Object(data) = value else { unreachable!("built from an object above") };
    let mut base = base.r#type(event_type).dataschema(dataschema).data(data);
    if !base.has_subject() {
        let subject = default_subject(vc, event_type, &base)?;
        base = base.orchestration_subject(&subject);
    }
    Ok(base.build()?)
}

/// arvo-core's default subject: orchestrator = the event type, version = the contract version,
/// initiator = the event's source, domain = the event's domain, `meta.redirectto` = its
/// `redirectto` when set.
fn default_subject(
    vc: &VersionedContract,
    event_type: &str,
    base: &EventBuilder,
) -> Result<Subject, FactoryError> {
    let source = base.source_ref().unwrap_or_default();
    let mut builder = Subject::builder(event_type, vc.version_str(), source);
    if let Some(domain) = base.domain_ref() {
        builder = builder.domain(domain);
    }
    if let Some(redirect) = base.redirectto_ref() {
        builder = builder.meta("redirectto", redirect);
    }
    builder.build().map_err(|source| FactoryError::Subject { event_type: event_type.to_owned(), source })
}
