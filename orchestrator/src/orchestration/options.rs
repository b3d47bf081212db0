//! The options every orchestrator kind's builder offers, declared once.

use std::sync::Arc;

use serde_json::Number;

use super::{Clock, CoreStep, Lifecycle, Locking, SystemClock, WorkflowRecord};
use crate::domain::Domain;
use crate::emit::DEFAULT_SYSTEM_ERROR_DOMAINS;
use crate::memory::Memory;
use crate::outbox::DynOutbox;
use crate::telemetry::Telemetry;

/// Locking, execution units and the default domains of what an orchestrator emits.
#[derive(Debug, Clone)]
pub(super) struct Options {
    pub(super) locking: Locking,
    pub(super) executionunits: Option<f64>,
    pub(super) service_domains: Vec<Domain>,
    pub(super) complete_domains: Vec<Domain>,
    pub(super) system_error_domains: Vec<Domain>,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) telemetry: Telemetry,
    pub(super) outbox: Option<Arc<dyn DynOutbox>>,
    pub(super) max_event_bytes: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            locking: Locking::default(),
            executionunits: None,
            service_domains: vec![Domain::Local],
            complete_domains: vec![Domain::OrchestrationContext],
            system_error_domains: DEFAULT_SYSTEM_ERROR_DOMAINS.to_vec(),
            clock: Arc::new(SystemClock),
            telemetry: Telemetry::default(),
            outbox: None,
            max_event_bytes: crate::event::DEFAULT_MAX_EVENT_BYTES,
        }
    }
}

impl Options {
    /// The execution units as a JSON number, or why they cannot be one.
    pub(super) fn executionunits(&self) -> Result<Option<Number>, String> {
        match self.executionunits {
            None => Ok(None),
            Some(units) => Number::from_f64(units)
                .map(Some)
                .ok_or_else(|| format!("execution units must be a finite number, got {units}")),
        }
    }

    /// Wraps `core` in the shared lifecycle with the locking, execution units and system-error
    /// domains of these options.
    pub(super) fn lifecycle<S: CoreStep, M: Memory<WorkflowRecord>>(
        &self,
        core: S,
        memory: M,
        executionunits: Option<Number>,
    ) -> Lifecycle<S, M> {
        let lifecycle = Lifecycle::new(core, memory)
            .with_locking(self.locking)
            .with_executionunits(executionunits)
            .with_system_error_domains(self.system_error_domains.clone())
            .with_clock(Arc::clone(&self.clock))
            .with_telemetry(self.telemetry.clone())
            .with_max_event_bytes(self.max_event_bytes);
        match &self.outbox {
            Some(outbox) => lifecycle.with_outbox(Arc::clone(outbox)),
            None => lifecycle,
        }
    }
}

/// The option setters of a builder with an `options: Options` field.
macro_rules! option_setters {
    () => {
        /// Sets the locking policy (default [`Locking::Always`]).
        #[must_use]
        pub fn locking(mut self, locking: Locking) -> Self {
            self.options.locking = locking;
            self
        }

        /// Sets the execution units stamped on every emitted event.
        #[must_use]
        pub fn execution_units(mut self, units: f64) -> Self {
            self.options.executionunits = Some(units);
            self
        }

        /// Sets the domains of service requests (default `[Local]`).
        #[must_use]
        pub fn service_domains(mut self, domains: impl IntoIterator<Item = Domain>) -> Self {
            self.options.service_domains = domains.into_iter().collect();
            self
        }

        /// Sets the domains of the completion event (default `[OrchestrationContext]`).
        #[must_use]
        pub fn complete_domains(mut self, domains: impl IntoIterator<Item = Domain>) -> Self {
            self.options.complete_domains = domains.into_iter().collect();
            self
        }

        /// Sets the clock executions read their time from (default the wall clock); durable
        /// timers are computed from it.
        #[must_use]
        pub fn clock(mut self, clock: std::sync::Arc<dyn crate::orchestration::Clock>) -> Self {
            self.options.clock = clock;
            self
        }

        /// Moves events through `outbox`, the orchestrator's own store (see
        /// [`Lifecycle::with_outbox`](crate::orchestration::Lifecycle::with_outbox)): each
        /// commit takes the outbox step in the same transaction as the state.
        #[must_use]
        pub fn outbox(mut self, outbox: std::sync::Arc<dyn crate::outbox::DynOutbox>) -> Self {
            self.options.outbox = Some(outbox);
            self
        }

        /// Sets the OpenTelemetry settings (default: the global tracer provider, spans parented
        /// on the event's trace context).
        #[must_use]
        pub fn telemetry(mut self, telemetry: crate::telemetry::Telemetry) -> Self {
            self.options.telemetry = telemetry;
            self
        }

        /// Uses `tracer` for this orchestrator's spans instead of the global provider's.
        #[cfg(feature = "opentelemetry")]
        #[must_use]
        pub fn tracer<T>(mut self, tracer: T) -> Self
        where
            T: opentelemetry::trace::Tracer + Send + Sync + 'static,
            T::Span: Send + Sync + 'static,
        {
            self.options.telemetry = self.options.telemetry.with_tracer(tracer);
            self
        }

        /// Sets where this orchestrator's spans' parents come from (default: the event's trace
        /// context).
        #[cfg(feature = "opentelemetry")]
        #[must_use]
        pub fn trace_inheritance(mut self, inheritance: crate::telemetry::TraceInheritance) -> Self {
            self.options.telemetry = self.options.telemetry.with_inheritance(inheritance);
            self
        }

        /// Sets the largest event a step may emit, once serialized (default
        /// [`DEFAULT_MAX_EVENT_BYTES`](crate::event::DEFAULT_MAX_EVENT_BYTES), the parsers'
        /// limit; a [`Node`](crate::runtime::Node) sets its own,
        /// [`NodeBuilder::max_event_bytes`](crate::runtime::NodeBuilder::max_event_bytes)). A
        /// step emitting a larger event fails (see
        /// [`Lifecycle::with_max_event_bytes`](crate::orchestration::Lifecycle::with_max_event_bytes)).
        #[must_use]
        pub fn max_event_bytes(mut self, max: usize) -> Self {
            self.options.max_event_bytes = max;
            self
        }

        /// Sets the domains of system-error events (default `[OrchestrationContext]`).
        #[must_use]
        pub fn system_error_domains(mut self, domains: impl IntoIterator<Item = Domain>) -> Self {
            self.options.system_error_domains = domains.into_iter().collect();
            self
        }
    };
}

pub(super) use option_setters;
