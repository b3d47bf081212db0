//! Arvo events: CloudEvents 1.0 with Arvo's extensions, validated on every way in.
//!
//! An [`Event`] is immutable and always valid: the only ways to get one are
//! [`EventBuilder::build`] and the parsers ([`Event::from_slice`], [`ParseOptions::parse`], serde),
//! and both check every rule of Arvo's event schema, reporting all broken rules at once.
//!
//! ```
//! use orchestrator::event::Event;
//! let event = Event::builder()
//!     .source("com.bench.client")
//!     .r#type("com.calc.add")
//!     .subject("my-subject")
//!     .data_json(serde_json::json!({"a": 1, "b": 2}))
//!     .build()?;
//! let json = event.to_json_string();
//! assert!(json.starts_with(r#"{"id":"#));
//! let back = Event::from_slice(json.as_bytes())?;
//! assert_eq!(back, event);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod builder;
mod size;
pub mod time;
mod validate;
mod wire;

use std::sync::Arc;

use indexmap::IndexMap;
use serde_json::{Map, Number, Value};

pub use builder::EventBuilder;
pub use validate::{EventError, ParseOptions};

/// An event larger, once serialized, than the limit where it enters (a node's
/// [`NodeBuilder::max_event_bytes`](crate::runtime::NodeBuilder::max_event_bytes), a handler's
/// products): the same limit the parsers apply to bytes ([`DEFAULT_MAX_EVENT_BYTES`] by
/// default), applied to events built in code.
///
/// ```
/// use orchestrator::event::{Event, EventTooLarge};
/// let event = Event::builder()
///     .source("com.example.client")
///     .r#type("com.example.big")
///     .subject("s")
///     .data_json(serde_json::json!({"blob": "x".repeat(100)}))
///     .build()?;
/// let err = event.check_size(64).unwrap_err();
/// assert_eq!((err.id.as_str(), err.size, err.max), (event.id(), event.encoded_len(), 64));
/// assert!(event.check_size(event.encoded_len()).is_ok());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "event `{id}` (type `{event_type}`) is {size} bytes once serialized, larger than the limit of {max} bytes"
)]
pub struct EventTooLarge {
    /// The event's id.
    pub id: String,
    /// The event's type.
    pub event_type: String,
    /// The length of its compact JSON ([`Event::encoded_len`]).
    pub size: usize,
    /// The limit.
    pub max: usize,
}

use crate::subject::{Subject, SubjectError};

/// The CloudEvents spec version Arvo events use.
pub const SPEC_VERSION: &str = "1.0";
/// Arvo's default content type.
pub const ARVO_CONTENT_TYPE: &str = "application/cloudevents+json;charset=UTF-8;profile=arvo";
/// Default largest serialized event accepted by the parsers: 1 MiB.
pub const DEFAULT_MAX_EVENT_BYTES: usize = 1024 * 1024;

/// The value of a custom CloudEvents extension: a string, boolean, number or null.
#[derive(Debug, Clone, PartialEq)]
pub enum ExtensionValue {
    /// JSON null.
    Null,
    /// A boolean.
    Bool(bool),
    /// A number (kept exactly as written).
    Number(Number),
    /// A string.
    String(String),
}

impl ExtensionValue {
    /// The value as JSON.
    pub fn to_json(&self) -> Value {
        match self {
            Self::Null => Value::Null,
            Self::Bool(b) => Value::Bool(*b),
            Self::Number(n) => Value::Number(n.clone()),
            Self::String(s) => Value::String(s.clone()),
        }
    }

    /// Converts JSON into an extension value; objects and arrays are not allowed.
    pub fn from_json(value: Value) -> Option<Self> {
        match value {
            Value::Null => Some(Self::Null),
            Value::Bool(b) => Some(Self::Bool(b)),
            Value::Number(n) => Some(Self::Number(n)),
            Value::String(s) => Some(Self::String(s)),
            Value::Array(_) | Value::Object(_) => None,
        }
    }
}

impl From<&str> for ExtensionValue {
    fn from(v: &str) -> Self {
        Self::String(v.to_owned())
    }
}
impl From<String> for ExtensionValue {
    fn from(v: String) -> Self {
        Self::String(v)
    }
}
impl From<bool> for ExtensionValue {
    fn from(v: bool) -> Self {
        Self::Bool(v)
    }
}
impl From<i64> for ExtensionValue {
    fn from(v: i64) -> Self {
        Self::Number(v.into())
    }
}

/// An Arvo event (CloudEvents 1.0 structured JSON with Arvo's extensions). Always valid.
///
/// An event is immutable, so its fields are shared: cloning one is cheap (a reference count),
/// which is what journals, handler inputs and redeliveries do with it.
#[derive(Clone)]
pub struct Event(pub(crate) Arc<fields::Event>);

/// The fields of an [`Event`] (a module of its own so that `Debug` still names it `Event`).
pub(crate) mod fields {
    use std::sync::OnceLock;

    use indexmap::IndexMap;
    use serde_json::{Number, Value};

    use super::ExtensionValue;
    use crate::subject::Subject;

    #[derive(Debug)]
    pub(crate) struct Event {
        pub(crate) id: String,
        pub(crate) source: String,
        pub(crate) r#type: String,
        pub(crate) subject: String,
        pub(crate) datacontenttype: String,
        pub(crate) dataschema: Option<String>,
        /// Always a JSON object (checked on every way in); kept as a `Value` so validation and
        /// decoding borrow it instead of copying it.
        pub(crate) data: Value,
        pub(crate) time: String,
        pub(crate) to: Option<String>,
        pub(crate) accesscontrol: Option<String>,
        pub(crate) redirectto: Option<String>,
        pub(crate) executionunits: Option<Number>,
        pub(crate) traceparent: Option<String>,
        pub(crate) tracestate: Option<String>,
        pub(crate) parentid: Option<String>,
        pub(crate) domain: Option<String>,
        pub(crate) extensions: IndexMap<String, ExtensionValue>,
        /// The parsed orchestration subject, decoded at most once per event.
        pub(crate) parsed_subject: OnceLock<Subject>,
        /// The length of the event's compact JSON, measured at most once per event.
        pub(crate) encoded_len: OnceLock<usize>,
    }
}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&*self.0, f)
    }
}

impl PartialEq for Event {
    fn eq(&self, o: &Self) -> bool {
        if Arc::ptr_eq(&self.0, &o.0) {
            return true;
        }
        let (e, o) = (&*self.0, &*o.0);
        e.id == o.id
            && e.source == o.source
            && e.r#type == o.r#type
            && e.subject == o.subject
            && e.datacontenttype == o.datacontenttype
            && e.dataschema == o.dataschema
            && e.data == o.data
            && e.time == o.time
            && e.to == o.to
            && e.accesscontrol == o.accesscontrol
            && e.redirectto == o.redirectto
            && e.executionunits == o.executionunits
            && e.traceparent == o.traceparent
            && e.tracestate == o.tracestate
            && e.parentid == o.parentid
            && e.domain == o.domain
            && e.extensions == o.extensions
    }
}

impl Event {
    /// Starts building an event. `id`, `time`, `specversion`, `datacontenttype` and `to` (= type)
    /// get defaults; `source`, `type`, `subject` and `data` are required.
    pub fn builder() -> EventBuilder {
        EventBuilder::default()
    }

    /// A builder pre-filled with every field of this event, to derive a modified copy:
    /// `to_builder().build()` is an equal event (a null `to` stays null; no default is applied).
    pub fn to_builder(&self) -> EventBuilder {
        EventBuilder::from_event(self)
    }

    /// Parses a CloudEvents structured-JSON event with the default size limit
    /// ([`DEFAULT_MAX_EVENT_BYTES`]).
    pub fn from_slice(bytes: &[u8]) -> Result<Self, EventError> {
        ParseOptions::default().parse(bytes)
    }

    /// Parses an event from an already-parsed JSON value.
    pub fn from_json_value(value: Value) -> Result<Self, EventError> {
        validate::from_value(value)
    }

    /// Unique id of the event.
    pub fn id(&self) -> &str {
        &self.0.id
    }
    /// Who produced the event (a handler's source topic).
    pub fn source(&self) -> &str {
        &self.0.source
    }
    /// The CloudEvents spec version (always `1.0`).
    pub fn specversion(&self) -> &str {
        SPEC_VERSION
    }
    /// The event type (reverse-DNS).
    pub fn r#type(&self) -> &str {
        &self.0.r#type
    }
    /// The subject: for orchestration events, the encoded workflow subject.
    pub fn subject(&self) -> &str {
        &self.0.subject
    }
    /// The content type of `data`.
    pub fn datacontenttype(&self) -> &str {
        &self.0.datacontenttype
    }
    /// `<contract uri>/<version>` of the payload's schema, if any.
    pub fn dataschema(&self) -> Option<&str> {
        self.0.dataschema.as_deref()
    }
    /// The payload (always a JSON object).
    pub fn data(&self) -> &Map<String, Value> {
        static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);
        self.0.data.as_object().unwrap_or(&EMPTY)
    }

    /// The payload as a JSON value (always an object).
    pub fn data_value(&self) -> &Value {
        &self.0.data
    }
    /// When the event happened (RFC 3339 with offset).
    pub fn time(&self) -> &str {
        &self.0.time
    }
    /// The topic the event is routed to.
    pub fn to(&self) -> Option<&str> {
        self.0.to.as_deref()
    }
    /// Access-control information.
    pub fn accesscontrol(&self) -> Option<&str> {
        self.0.accesscontrol.as_deref()
    }
    /// Where the response to this event should go.
    pub fn redirectto(&self) -> Option<&str> {
        self.0.redirectto.as_deref()
    }
    /// The cost of producing the event, exactly as written.
    pub fn executionunits_number(&self) -> Option<&Number> {
        self.0.executionunits.as_ref()
    }
    /// The cost of producing the event.
    pub fn executionunits(&self) -> Option<f64> {
        self.0.executionunits.as_ref().and_then(Number::as_f64)
    }
    /// W3C trace context `traceparent`.
    pub fn traceparent(&self) -> Option<&str> {
        self.0.traceparent.as_deref()
    }
    /// W3C trace context `tracestate`.
    pub fn tracestate(&self) -> Option<&str> {
        self.0.tracestate.as_deref()
    }
    /// Id of the event that caused this one.
    pub fn parentid(&self) -> Option<&str> {
        self.0.parentid.as_deref()
    }
    /// The domain the event is addressed to (`None` = the local broker).
    pub fn domain(&self) -> Option<&str> {
        self.0.domain.as_deref()
    }
    /// Custom extensions (not the Arvo or tracing ones), in their original order.
    pub fn extensions(&self) -> &IndexMap<String, ExtensionValue> {
        &self.0.extensions
    }

    /// The orchestration subject, decoded and validated once per event and then shared.
    pub fn orchestration_subject(&self) -> Result<&Subject, SubjectError> {
        if let Some(subject) = self.0.parsed_subject.get() {
            return Ok(subject);
        }
        let parsed = Subject::parse(&self.0.subject)?;
        Ok(self.0.parsed_subject.get_or_init(|| parsed))
    }

    /// The event as a flat JSON object in Arvo's key order.
    pub fn to_json_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The event as compact JSON in Arvo's key order.
    pub fn to_json_string(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The event as compact JSON bytes in Arvo's key order.
    pub fn to_json_vec(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// The length in bytes of the event's compact JSON ([`Event::to_json_vec`]), measured
    /// without writing it out, at most once per event.
    pub fn encoded_len(&self) -> usize {
        *self.0.encoded_len.get_or_init(|| {
            let mut counter = ByteCounter(0);
            // Serializing an event cannot fail (its fields are valid JSON); a writer that only
            // counts cannot fail either.
            let _ = serde_json::to_writer(&mut counter, self);
            counter.0
        })
    }

    /// Whether the event's compact JSON fits in `max` bytes: the size limit the parsers apply
    /// to bytes ([`ParseOptions::max_bytes`]), applied to an event built in code.
    pub fn check_size(&self, max: usize) -> Result<(), EventTooLarge> {
        // Most events are far below the limit: an upper bound proves it without serializing.
        if size::encoded_len_bound(self) <= max {
            return Ok(());
        }
        let size = self.encoded_len();
        if size <= max {
            return Ok(());
        }
        Err(EventTooLarge { id: self.id().to_owned(), event_type: self.r#type().to_owned(), size, max })
    }

    /// Shares an already-parsed subject with this event (it must be this event's subject).
    pub(crate) fn with_parsed_subject(self, subject: Subject) -> Self {
        if subject.as_str() == self.0.subject {
            let _ = self.0.parsed_subject.set(subject);
        }
        self
    }
}

tokio::task_local! {
    /// The event size limit of the runtime (a node's, a broker's) running the current handler.
    static RUNTIME_MAX_EVENT_BYTES: usize;
}

/// Runs `future` (a handler's execution) under the runtime's event size limit `max`, so that
/// handlers with a limit of their own apply the smaller of the two ([`effective_limit`]).
pub(crate) fn under_limit<F: std::future::Future>(
    max: usize,
    future: F,
) -> impl std::future::Future<Output = F::Output> {
    RUNTIME_MAX_EVENT_BYTES.scope(max, future)
}

/// The limit a handler applies to what it emits: its own, or the limit of the runtime running it
/// when that is smaller, so that nothing it emits is refused later by the runtime.
pub(crate) fn effective_limit(own: usize) -> usize {
    RUNTIME_MAX_EVENT_BYTES.try_with(|max| (*max).min(own)).unwrap_or(own)
}

/// A writer that only counts the bytes written to it.
struct ByteCounter(usize);

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A shared, immutable event.
pub type SharedEvent = Arc<Event>;
