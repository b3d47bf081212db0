//! What a service handler function receives.

use std::fmt;

use crate::contract::{ContractVersion, VersionedContract};
use crate::event::Event;
use crate::telemetry::TraceHeaders;

/// The input of a service handler function for contract version `V`.
///
/// The event has been checked against `V` (type, dataschema, payload schema) before the function
/// runs, and its payload decoded into [`ServiceInput::payload`].
#[non_exhaustive]
pub struct ServiceInput<V: ContractVersion> {
    /// The decoded payload.
    pub payload: V::Accepts,
    /// The incoming event.
    pub event: Event,
    /// The contract version handling the event (selected by the event's dataschema).
    pub contract: &'static VersionedContract,
    /// The handler's source (the contract's accepted type), the `source` of what it emits.
    pub source: &'static str,
    /// The `traceparent` / `tracestate` of the handler's execution span (Arvo's `spanHeaders`),
    /// for events the function sends by other means. The span itself is the current
    /// OpenTelemetry context while the function runs (feature `opentelemetry`).
    pub span_headers: TraceHeaders,
}

impl<V: ContractVersion> ServiceInput<V> {
    pub(super) fn new(
        payload: V::Accepts,
        event: Event,
        contract: &'static VersionedContract,
        source: &'static str,
        span_headers: TraceHeaders,
    ) -> Self {
        Self { payload, event, contract, source, span_headers }
    }

    /// The handler contract's domain (Arvo's `domain.self`).
    pub fn self_domain(&self) -> Option<&'static str> {
        self.contract.domain()
    }

    /// The incoming event's domain (Arvo's `domain.event`).
    pub fn event_domain(&self) -> Option<&str> {
        self.event.domain()
    }

    /// The version handling the event, `X.Y.Z`.
    pub fn version(&self) -> &'static str {
        self.contract.version_str()
    }
}

impl<V: ContractVersion> fmt::Debug for ServiceInput<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceInput")
            .field("payload", &std::any::type_name::<V::Accepts>())
            .field("event", &self.event)
            .field("contract", &self.contract.dataschema())
            .field("source", &self.source)
            .finish()
    }
}
