//! The instrumentation with the `opentelemetry` feature on.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};

use opentelemetry::context::FutureExt as _;
use opentelemetry::global::{self, BoxedSpan, BoxedTracer};
use opentelemetry::trace::{
    Span as _, SpanBuilder, SpanKind, Status, TraceContextExt, Tracer, TracerProvider as _,
};
use opentelemetry::{Context, InstrumentationScope, KeyValue};

use super::attributes as attr;
use super::propagation::TraceContext;
use super::{ExecutionKind, MemoryOp, TraceHeaders};
use crate::event::Event;
use crate::subject::Subject;
use crate::violation::Violation;

/// The instrumentation scope of the spans: `orchestrator` with the crate's version.
static SCOPE: LazyLock<InstrumentationScope> = LazyLock::new(|| {
    InstrumentationScope::builder("orchestrator").with_version(env!("CARGO_PKG_VERSION")).build()
});

/// The global provider's tracer for [`SCOPE`].
fn global_tracer() -> BoxedTracer {
    global::tracer_provider().tracer_with_scope(SCOPE.clone())
}

/// Where an execution span's parent comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TraceInheritance {
    /// The consumed event's `traceparent` / `tracestate` (Arvo's `inheritFrom: 'EVENT'`, the
    /// default); an event without a valid `traceparent` starts a new trace.
    #[default]
    Event,
    /// The caller's current [`Context`] (Arvo's `inheritFrom: 'CONTEXT'`).
    Context,
    /// Always a new root span (a new trace), whatever the event carries.
    Root,
}

/// A custom tracer, carried in the execution's [`Context`] for its child spans.
#[derive(Clone)]
struct CustomTracer(Arc<BoxedTracer>);

/// The OpenTelemetry settings of a handler: its tracer (default: the global provider's, looked
/// up at every execution) and where its spans' parents come from.
#[derive(Clone, Default)]
pub struct Telemetry {
    tracer: Option<CustomTracer>,
    inheritance: TraceInheritance,
}

impl fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Telemetry")
            .field("tracer", &if self.tracer.is_some() { "custom" } else { "global" })
            .field("inheritance", &self.inheritance)
            .finish()
    }
}

impl Telemetry {
    /// The defaults: the global tracer provider, parents from the consumed event.
    pub fn new() -> Self {
        Self::default()
    }

    /// Uses `tracer` instead of the global provider's.
    #[must_use]
    pub fn with_tracer<T>(mut self, tracer: T) -> Self
    where
        T: Tracer + Send + Sync + 'static,
        T::Span: Send + Sync + 'static,
    {
        self.tracer = Some(CustomTracer(Arc::new(BoxedTracer::new(Box::new(tracer)))));
        self
    }

    /// Sets where the execution spans' parents come from.
    #[must_use]
    pub fn with_inheritance(mut self, inheritance: TraceInheritance) -> Self {
        self.inheritance = inheritance;
        self
    }

    /// Where the execution spans' parents come from.
    pub fn inheritance(&self) -> TraceInheritance {
        self.inheritance
    }

    /// Opens the execution span of a `kind` handler with source `source` and contract `uri` for
    /// `event`.
    pub(crate) fn start(&self, kind: ExecutionKind, uri: &str, source: &str, event: &Event) -> Execution {
        let parent = match self.inheritance {
            TraceInheritance::Event => {
                match TraceContext::span_context(event.traceparent(), event.tracestate()) {
                    Some(sc) => Context::new().with_remote_span_context(sc),
                    None => Context::new(),
                }
            }
            TraceInheritance::Context => Context::current(),
            TraceInheritance::Root => Context::new(),
        };
        // The name is built by hand: `format!` costs more than the rest of a no-op span.
        let (name, span_kind) = match kind {
            ExecutionKind::Handler => (["Handler<", uri, ">"].concat(), SpanKind::Consumer),
            ExecutionKind::Orchestrator => {
                (["Orchestrator<", uri, ">@<", event.r#type(), ">"].concat(), SpanKind::Producer)
            }
            ExecutionKind::Resumable => {
                (["Resumable<", uri, ">@<", event.r#type(), ">"].concat(), SpanKind::Producer)
            }
        };
        let builder = SpanBuilder::from_name(name).with_kind(span_kind);
        let span = match &self.tracer {
            Some(custom) => custom.0.build_with_context(builder, &parent),
            None => global_tracer().build_with_context(builder, &parent),
        };
        let recording = span.is_recording();
        if recording {
            let (arvo_kind, execution_type) = match kind {
                ExecutionKind::Handler => ("handler.simple", "handler"),
                ExecutionKind::Orchestrator => ("handler.orchestrator.statemachine", "orchestrator"),
                ExecutionKind::Resumable => ("handler.orchestrator.imperative", "resumable"),
            };
            let mut span = span;
            span.set_attributes([
                KeyValue::new(attr::SPAN_KIND, arvo_kind),
                KeyValue::new(attr::OPENINFERENCE_SPAN_KIND, "CHAIN"),
                KeyValue::new(attr::HANDLER_SOURCE, source.to_owned()),
                KeyValue::new(attr::CONTRACT_URI, uri.to_owned()),
                KeyValue::new(attr::EXECUTION_TYPE, execution_type),
            ]);
            span.set_attributes(attr::consumable_attributes(event));
            return Execution::new(parent, span, self.tracer.clone(), true);
        }
        Execution::new(parent, span, self.tracer.clone(), false)
    }
}

/// The span of one execution, ended when dropped (with `arvo.handler.execution.status`).
pub(crate) struct Execution {
    /// The context with the span; `None` when there is no trace at all (no provider and no
    /// incoming trace context), which keeps that case cheap.
    cx: Option<Context>,
    headers: TraceHeaders,
    recording: bool,
    failed: AtomicBool,
}

impl Execution {
    fn new(parent: Context, span: BoxedSpan, tracer: Option<CustomTracer>, recording: bool) -> Self {
        let headers = TraceContext::headers(span.span_context());
        let cx = (recording || span.span_context().is_valid()).then(|| {
            let cx = parent.with_span(span);
            match tracer {
                Some(tracer) => cx.with_value(tracer),
                None => cx,
            }
        });
        Self { cx, headers, recording, failed: AtomicBool::new(false) }
    }

    /// The context, when the span records.
    fn recording(&self) -> Option<&Context> {
        self.cx.as_ref().filter(|_| self.recording)
    }

    /// The headers of the execution span, for the events it emits.
    pub(crate) fn headers(&self) -> &TraceHeaders {
        &self.headers
    }

    /// `arvo.parsed.subject.<orchestrator|resumable>.{name,version}`.
    pub(crate) fn parsed_subject(&self, kind: ExecutionKind, subject: &Subject) {
        if let Some(cx) = self.recording() {
            let (name, version) = attr::parsed_subject_keys(match kind {
                ExecutionKind::Resumable => "resumable",
                _ => "orchestrator",
            });
            cx.span().set_attributes([
                KeyValue::new(name, subject.orchestrator_name().to_owned()),
                KeyValue::new(version, subject.orchestrator_version().to_owned()),
            ]);
        }
    }

    /// `arvo.orchestration.status`.
    pub(crate) fn orchestration_status(&self, status: &'static str) {
        if let Some(cx) = self.recording() {
            cx.span().set_attribute(KeyValue::new(attr::ORCHESTRATION_STATUS, status));
        }
    }

    /// `emittables.<i>.*` of the events emitted.
    pub(crate) fn emittables(&self, events: &[Event]) {
        if let Some(cx) = self.recording() {
            let span = cx.span();
            for (i, event) in events.iter().enumerate() {
                span.set_attributes(attr::emittable_attributes(i, event));
            }
        }
    }

    /// An ordinary failure (it becomes system-error events).
    pub(crate) fn failure(&self, error_type: &str, message: &str) {
        if let Some(cx) = self.recording() {
            self.failed.store(true, Ordering::Relaxed);
            record_exception(&cx.span(), error_type, message);
        }
    }

    /// A violation returned to the caller.
    pub(crate) fn violation(&self, violation: &Violation) {
        if let Some(cx) = self.recording() {
            let kind = match violation {
                Violation::Contract { .. } => "ViolationError<Contract>",
                Violation::Config { .. } => "ViolationError<Config>",
                Violation::Execution { .. } => "ViolationError<Execution>",
                Violation::Transaction { .. } => "ViolationError<Transaction>",
            };
            self.failed.store(true, Ordering::Relaxed);
            record_exception(&cx.span(), kind, &violation.to_string());
        }
    }

    /// The child span of a memory operation on workflow `id`.
    pub(crate) fn memory(&self, op: MemoryOp, id: &str) -> MemorySpan {
        let Some(cx) = self.recording() else {
            return MemorySpan(None);
        };
        let span = child(cx, op.span_name()).map(|mut span| {
            span.set_attributes([
                KeyValue::new(attr::SPAN_KIND, "internal"),
                KeyValue::new(attr::MEMORY_ID, id.to_owned()),
            ]);
            span
        });
        MemorySpan(span)
    }

    /// Runs `future` with the execution span's context as the current one.
    pub(crate) async fn instrument<F: Future>(&self, future: F) -> F::Output {
        match &self.cx {
            Some(cx) => future.with_context(cx.clone()).await,
            None => future.await,
        }
    }
}

impl Drop for Execution {
    fn drop(&mut self) {
        let Some(cx) = &self.cx else { return };
        let span = cx.span();
        if self.recording {
            let status = if self.failed.load(Ordering::Relaxed) { "failure" } else { "normal" };
            span.set_attribute(KeyValue::new(attr::EXECUTION_STATUS, status));
        }
        span.end();
    }
}

fn record_exception(span: &opentelemetry::trace::SpanRef<'_>, error_type: &str, message: &str) {
    let exception = [
        KeyValue::new(attr::EXCEPTION_TYPE, error_type.to_owned()),
        KeyValue::new(attr::EXCEPTION_MESSAGE, message.to_owned()),
    ];
    span.set_attributes(exception.iter().cloned());
    span.add_event("exception", exception.to_vec());
    span.set_status(Status::error(message.to_owned()));
}

/// An INTERNAL child span of the span in `parent`, with the execution's tracer; `None` when the
/// parent does not record.
fn child(parent: &Context, name: &'static str) -> Option<BoxedSpan> {
    if !parent.span().is_recording() {
        return None;
    }
    let builder = SpanBuilder::from_name(name).with_kind(SpanKind::Internal);
    Some(match parent.get::<CustomTracer>() {
        Some(custom) => custom.0.build_with_context(builder, parent),
        None => global_tracer().build_with_context(builder, parent),
    })
}

/// An internal child span of the current execution (`Execute Machine`, `Resolve Machine`), with
/// `attributes`; a no-op outside a recording execution.
pub(crate) fn internal_span(name: &'static str) -> MemorySpan {
    MemorySpan(Context::map_current(|cx| child(cx, name)).map(|mut span| {
        span.set_attribute(KeyValue::new(attr::SPAN_KIND, "internal"));
        span
    }))
}

/// Counts the bytes written to it: the JSON size of a record without building the JSON.
struct ByteCount(usize);

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A child span (memory operation or internal step), ended when dropped.
pub(crate) struct MemorySpan(Option<BoxedSpan>);

impl MemorySpan {
    /// Sets `arvo.memory.record.bytes` to the JSON size of `record` (only computed when recording).
    pub(crate) fn record_bytes<T: serde::Serialize>(&mut self, record: Option<&T>) {
        if let (Some(span), Some(record)) = (&mut self.0, record) {
            let mut counted = ByteCount(0);
            if serde_json::to_writer(&mut counted, record).is_ok() {
                span.set_attribute(KeyValue::new(attr::MEMORY_RECORD_BYTES, counted.0 as i64));
            }
        }
    }

    /// Sets string attributes (only when recording).
    pub(crate) fn attributes(&mut self, attributes: &[(&'static str, &str)]) {
        if let Some(span) = &mut self.0 {
            span.set_attributes(attributes.iter().map(|(k, v)| KeyValue::new(*k, (*v).to_owned())));
        }
    }

    /// Records a failure of the operation.
    pub(crate) fn error(&mut self, error: &dyn fmt::Display) {
        if let Some(span) = &mut self.0 {
            let message = error.to_string();
            span.add_event(
                "exception",
                vec![
                    KeyValue::new(attr::EXCEPTION_TYPE, "MemoryError"),
                    KeyValue::new(attr::EXCEPTION_MESSAGE, message.clone()),
                ],
            );
            span.set_status(Status::error(message));
        }
    }

    /// Records the outcome of the operation.
    pub(crate) fn result<T, E: fmt::Display>(mut self, result: &Result<T, E>) {
        if let Err(e) = result {
            self.error(e);
        }
    }
}

impl Drop for MemorySpan {
    fn drop(&mut self) {
        if let Some(span) = &mut self.0 {
            span.end();
        }
    }
}
