//! What a service handler function returns: [`Emit<V>`] items collected in [`Emissions<V>`].

use std::fmt;
use std::marker::PhantomData;

use serde_json::{Map, Value};

use crate::contract::{ContractVersion, Emits, Payload};
use crate::domain::Domain;
use crate::event::ExtensionValue;
use crate::json::NotRepresentable;

/// One event a service handler emits, typed by its contract version `V`: only payloads `V`
/// declares in its `emits` compile, and the payload type selects the event type.
///
/// Every option is optional; the handler derives what is left unset (see
/// [`ServiceHandler`](super::ServiceHandler)).
///
/// ```compile_fail
/// use orchestrator::handler::service::Emit;
/// use orchestrator::prelude::*;
/// #[derive(Serialize, Deserialize, JsonSchema)] pub struct In { a: f64 }
/// #[derive(Serialize, Deserialize, JsonSchema)] pub struct Out { sum: f64 }
/// #[derive(Serialize, Deserialize, JsonSchema)] pub struct Other { x: f64 }
/// orchestrator::simple_contract! {
///     pub contract Add { uri: "#/add", type: "calc.add", versions: { AddV1 = "1.0.0" { accepts: In, emits: Out } } }
/// }
/// // `Other` is not emitted by AddV1: this does not compile.
/// let _ = Emit::<AddV1>::new(Other { x: 1.0 });
/// ```
#[must_use]
pub struct Emit<V> {
    pub(super) raw: RawEmit,
    _version: PhantomData<fn() -> V>,
}

/// Why an emitted payload is not a JSON object.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum PayloadError {
    /// The payload holds a value JSON cannot represent (a non-finite number): a failure of the
    /// handler's function, reported as a system-error event.
    #[error(transparent)]
    NotRepresentable(NotRepresentable),
    /// The payload does not serialize to a JSON object: a contract violation.
    #[error("{0}")]
    Invalid(String),
}

/// The first emit whose payload JSON cannot represent.
pub(crate) fn not_representable(emits: &[RawEmit]) -> Option<&NotRepresentable> {
    emits.iter().find_map(|emit| match &emit.data {
        Err(PayloadError::NotRepresentable(error)) => Some(error),
        _ => None,
    })
}

/// An [`Emit`] without its version type.
#[derive(Debug, Clone)]
pub(crate) struct RawEmit {
    pub(crate) event_type: &'static str,
    /// The serialized payload, or why it could not be serialized to a JSON object.
    pub(crate) data: Result<Map<String, Value>, PayloadError>,
    pub(crate) to: Option<String>,
    pub(crate) redirectto: Option<String>,
    pub(crate) domains: Option<Vec<Domain>>,
    pub(crate) id: Option<String>,
    pub(crate) time: Option<String>,
    pub(crate) accesscontrol: Option<String>,
    pub(crate) executionunits: Option<f64>,
    pub(crate) extensions: Vec<(String, ExtensionValue)>,
}

impl<V: ContractVersion> Emit<V> {
    /// Emits `payload` as the event type `V` declares for `P`.
    pub fn new<P: Payload>(payload: P) -> Self
    where
        V: Emits<P>,
    {
        let event_type = <V as Emits<P>>::EVENT_TYPE;
        // A service's result that JSON cannot represent: the function failed (its caller gets
        // a `sys.<type>.error` event saying so).
        let data = match crate::json::payload_value(event_type, &payload) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(other) => {
                Err(PayloadError::Invalid(format!("it serialized to {other}, not to a JSON object")))
            }
            Err(Err(e)) => Err(PayloadError::Invalid(e)),
            Err(Ok(e)) => Err(PayloadError::NotRepresentable(e)),
        };
        Self {
            raw: RawEmit {
                event_type,
                data,
                to: None,
                redirectto: None,
                domains: None,
                id: None,
                time: None,
                accesscontrol: None,
                executionunits: None,
                extensions: Vec::new(),
            },
            _version: PhantomData,
        }
    }
}

impl<V> Emit<V> {
    /// Where to send the event (default: the input's `redirectto`, else the input's `source`).
    pub fn to(mut self, to: impl Into<String>) -> Self {
        self.raw.to = Some(to.into());
        self
    }

    /// Where the receiver should send its response (default: none).
    pub fn redirectto(mut self, redirectto: impl Into<String>) -> Self {
        self.raw.redirectto = Some(redirectto.into());
        self
    }

    /// The domains to emit in: one event per unique resolved domain (default: the handler's
    /// emit domains, `[OrchestrationContext]` unless configured). An empty list emits nothing,
    /// as in Arvo.
    pub fn domains(mut self, domains: impl IntoIterator<Item = Domain>) -> Self {
        self.raw.domains = Some(domains.into_iter().collect());
        self
    }

    /// The event id (default: a new uuid per event). Every domain copy keeps this id.
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.raw.id = Some(id.into());
        self
    }

    /// The event time, RFC 3339 with offset (default: now).
    pub fn time(mut self, time: impl Into<String>) -> Self {
        self.raw.time = Some(time.into());
        self
    }

    /// Access-control information (default: the input's).
    pub fn accesscontrol(mut self, accesscontrol: impl Into<String>) -> Self {
        self.raw.accesscontrol = Some(accesscontrol.into());
        self
    }

    /// The execution cost (default: the handler's); must be finite.
    pub fn executionunits(mut self, units: f64) -> Self {
        self.raw.executionunits = Some(units);
        self
    }

    /// Adds a custom extension (key `^[a-z0-9]+$`, not an Arvo or CloudEvents attribute name).
    pub fn extension(mut self, key: impl Into<String>, value: impl Into<ExtensionValue>) -> Self {
        self.raw.extensions.push((key.into(), value.into()));
        self
    }

    /// The event type this emit becomes.
    pub fn event_type(&self) -> &'static str {
        self.raw.event_type
    }

    /// The serialized payload: `None` if it does not serialize to a JSON object (emitting it is
    /// then a contract violation) or holds a number JSON cannot represent, NaN or an infinity
    /// (the handler then answers with a `sys.<type>.error` event, the function's failure).
    pub fn data(&self) -> Option<&Map<String, Value>> {
        self.raw.data.as_ref().ok()
    }
}

impl<V> Clone for Emit<V> {
    fn clone(&self) -> Self {
        Self { raw: self.raw.clone(), _version: PhantomData }
    }
}

impl<V> fmt::Debug for Emit<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Emit")
            .field("version", &std::any::type_name::<V>())
            .field("event_type", &self.raw.event_type)
            .field("data", &self.raw.data)
            .field("to", &self.raw.to)
            .field("redirectto", &self.raw.redirectto)
            .field("domains", &self.raw.domains)
            .field("id", &self.raw.id)
            .field("time", &self.raw.time)
            .field("accesscontrol", &self.raw.accesscontrol)
            .field("executionunits", &self.raw.executionunits)
            .field("extensions", &self.raw.extensions)
            .finish()
    }
}

/// Everything one call of a handler function emits: zero, one or many [`Emit<V>`].
///
/// A handler function may return anything that converts into it: an `Emit<V>`, a
/// `Vec<Emit<V>>`, an array, an `Option<Emit<V>>`, or `()` for nothing.
#[must_use]
pub struct Emissions<V>(Vec<Emit<V>>);

impl<V> Emissions<V> {
    /// No events.
    pub fn none() -> Self {
        Self(Vec::new())
    }

    /// Adds an event.
    pub fn push(&mut self, emit: Emit<V>) {
        self.0.push(emit);
    }

    /// How many events (before domain copies).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when nothing is emitted.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(super) fn into_raw(self) -> Vec<RawEmit> {
        self.0.into_iter().map(|e| e.raw).collect()
    }
}

impl<V> Default for Emissions<V> {
    fn default() -> Self {
        Self::none()
    }
}

impl<V> Clone for Emissions<V> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<V> fmt::Debug for Emissions<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.0).finish()
    }
}

impl<V> From<Emit<V>> for Emissions<V> {
    fn from(emit: Emit<V>) -> Self {
        Self(vec![emit])
    }
}

impl<V> From<Vec<Emit<V>>> for Emissions<V> {
    fn from(emits: Vec<Emit<V>>) -> Self {
        Self(emits)
    }
}

impl<V, const N: usize> From<[Emit<V>; N]> for Emissions<V> {
    fn from(emits: [Emit<V>; N]) -> Self {
        Self(emits.into())
    }
}

impl<V> From<Option<Emit<V>>> for Emissions<V> {
    fn from(emit: Option<Emit<V>>) -> Self {
        Self(emit.into_iter().collect())
    }
}

impl<V> From<()> for Emissions<V> {
    fn from((): ()) -> Self {
        Self::none()
    }
}

impl<V> FromIterator<Emit<V>> for Emissions<V> {
    fn from_iter<I: IntoIterator<Item = Emit<V>>>(iter: I) -> Self {
        Self(iter.into_iter().collect())
    }
}

impl<V> Extend<Emit<V>> for Emissions<V> {
    fn extend<I: IntoIterator<Item = Emit<V>>>(&mut self, iter: I) {
        self.0.extend(iter);
    }
}

impl<V> IntoIterator for Emissions<V> {
    type Item = Emit<V>;
    type IntoIter = std::vec::IntoIter<Emit<V>>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}
