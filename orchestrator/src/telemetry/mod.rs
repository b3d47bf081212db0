//! OpenTelemetry instrumentation with Arvo's conventions (feature `opentelemetry`).
//!
//! Every execution of a handler opens one span:
//!
//! | Handler | Span name | Kind | `arvo.span.kind` |
//! |---|---|---|---|
//! | [`ServiceHandler`](crate::handler::ServiceHandler) | `Handler<uri>` | CONSUMER | `handler.simple` |
//! | [`Orchestrator`](crate::orchestration::Orchestrator) | `Orchestrator<uri>@<type>` | PRODUCER | `handler.orchestrator.statemachine` |
//! | [`Resumable`](crate::orchestration::Resumable) | `Resumable<uri>@<type>` | PRODUCER | `handler.orchestrator.imperative` |
//!
//! with `openinference.span.kind=CHAIN`, `arvo.handler.source`, `arvo.contract.uri`,
//! `arvo.handler.execution.type` (`handler` / `orchestrator` / `resumable`),
//! `arvo.handler.execution.status` (`normal` / `failure`), `consumable.0.<event attribute>` for
//! the event consumed and `emittables.<i>.<event attribute>` for each event emitted (the event
//! attributes are arvo-core's `otelAttributes`: `cloudevents.event_id`, …, `"N/A"` for a missing
//! value). Orchestrators add `arvo.parsed.subject.{orchestrator|resumable}.{name,version}`,
//! `arvo.orchestration.status` (`active` / `done` / `failure`), child spans for each memory
//! operation (`Acquire Simple Memory`: lease, record and journal lookup; `Commit Simple Memory`:
//! write, journal, retention and release; `Unlock Simple Memory` when no commit released the
//! lease; with `arvo.memory.id` and
//! `arvo.memory.record.bytes`), and the statechart orchestrator `Resolve Machine` and
//! `Execute Machine` child spans (with `arvo.machine.type` and `arvo.machine.version`).
//!
//! An ordinary failure (one that becomes system-error events) and a violation set the span
//! status to ERROR, `arvo.handler.execution.status=failure`, the `exception.type` and
//! `exception.message` attributes, and record an `exception` span event.
//!
//! # Propagation
//!
//! The span's parent is, by default, the span context in the consumed event's W3C `traceparent`
//! / `tracestate` ([`TraceInheritance::Event`]); an event without a valid `traceparent` starts a
//! new trace. Every event the execution emits (service requests, completions, responses,
//! system errors) carries the execution span's `traceparent` / `tracestate`, so the next
//! handler continues the trace. [`EventExtractor`] and [`HeadersInjector`] adapt an event's two
//! headers to any [`TextMapPropagator`](opentelemetry::propagation::TextMapPropagator);
//! [`TraceContext`] is the W3C one.
//!
//! # Tracer
//!
//! Spans come from the global tracer provider ([`opentelemetry::global`]) at each execution, so
//! a provider installed after the handlers were built is used. A builder option (`tracer(...)`)
//! overrides it per handler. With no provider installed, the no-op provider records nothing,
//! prints nothing, and the trace context of the consumed event still flows to the emitted ones.
//! The handler function (and a resumable's function) runs with the execution span's context as
//! the current [`Context`](opentelemetry::Context), so user code can open child spans.
//!
//! Without the feature, this module only has [`TraceHeaders`] and an empty [`Telemetry`]:
//! emitted events then copy the consumed event's headers.

#[cfg(feature = "opentelemetry")]
pub mod attributes;
#[cfg(not(feature = "opentelemetry"))]
mod disabled;
#[cfg(feature = "opentelemetry")]
mod enabled;
#[cfg(feature = "opentelemetry")]
mod propagation;

#[cfg(not(feature = "opentelemetry"))]
pub(crate) use disabled::{Execution, internal_span};
#[cfg(feature = "opentelemetry")]
pub(crate) use enabled::{Execution, internal_span};
#[cfg(feature = "opentelemetry")]
pub use enabled::{Telemetry, TraceInheritance};
#[cfg(feature = "opentelemetry")]
pub use propagation::{EventExtractor, HeadersInjector, TraceContext};

#[cfg(not(feature = "opentelemetry"))]
pub use disabled::Telemetry;

use crate::event::Event;

/// The W3C trace-context headers stamped on emitted events.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceHeaders {
    /// `traceparent` (`00-<trace id>-<span id>-<flags>`), if any.
    pub traceparent: Option<String>,
    /// `tracestate`, if any (never empty).
    pub tracestate: Option<String>,
}

impl TraceHeaders {
    /// The headers an event carries.
    pub fn of(event: &Event) -> Self {
        Self {
            traceparent: event.traceparent().map(str::to_owned),
            tracestate: event.tracestate().map(str::to_owned),
        }
    }

    /// `traceparent` as a string slice.
    pub fn traceparent(&self) -> Option<&str> {
        self.traceparent.as_deref()
    }

    /// `tracestate` as a string slice.
    pub fn tracestate(&self) -> Option<&str> {
        self.tracestate.as_deref()
    }
}

/// What kind of handler an execution span belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExecutionKind {
    /// A service handler: `Handler<uri>`, CONSUMER.
    Handler,
    /// A statechart orchestrator: `Orchestrator<uri>@<type>`, PRODUCER.
    Orchestrator,
    /// A resumable: `Resumable<uri>@<type>`, PRODUCER.
    Resumable,
}

/// A memory operation, for its child span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MemoryOp {
    /// Lease, record and journal lookup in one call ([`Memory::acquire`](crate::memory::Memory::acquire)).
    Acquire,
    /// Write, journal, retention and release in one call ([`Memory::commit`](crate::memory::Memory::commit)).
    Commit,
    /// Releasing a lease that no commit released.
    Unlock,
}

#[cfg_attr(not(feature = "opentelemetry"), allow(dead_code))]
impl MemoryOp {
    /// The span name (Arvo's `TelemetredSimpleMachineMemory`).
    pub(crate) fn span_name(self) -> &'static str {
        match self {
            Self::Acquire => "Acquire Simple Memory",
            Self::Commit => "Commit Simple Memory",
            Self::Unlock => "Unlock Simple Memory",
        }
    }
}
