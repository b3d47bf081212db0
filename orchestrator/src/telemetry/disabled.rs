//! The instrumentation with the `opentelemetry` feature off: emitted events copy the consumed
//! event's trace headers, and nothing else happens.

use std::fmt;
use std::future::Future;

use super::{ExecutionKind, MemoryOp, TraceHeaders};
use crate::event::Event;
use crate::subject::Subject;
use crate::violation::Violation;

/// The OpenTelemetry settings of a handler (empty without the `opentelemetry` feature).
#[derive(Debug, Clone, Default)]
pub struct Telemetry {}

impl Telemetry {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    pub(crate) fn start(&self, _kind: ExecutionKind, _uri: &str, _source: &str, event: &Event) -> Execution {
        Execution { headers: TraceHeaders::of(event) }
    }
}

pub(crate) struct Execution {
    headers: TraceHeaders,
}

#[allow(clippy::unused_self)]
impl Execution {
    pub(crate) fn headers(&self) -> &TraceHeaders {
        &self.headers
    }
    pub(crate) fn parsed_subject(&self, _kind: ExecutionKind, _subject: &Subject) {}
    pub(crate) fn orchestration_status(&self, _status: &'static str) {}
    pub(crate) fn emittables(&self, _events: &[Event]) {}
    pub(crate) fn failure(&self, _error_type: &str, _message: &str) {}
    pub(crate) fn violation(&self, _violation: &Violation) {}
    pub(crate) fn memory(&self, _op: MemoryOp, _id: &str) -> MemorySpan {
        MemorySpan
    }
    pub(crate) async fn instrument<F: Future>(&self, future: F) -> F::Output {
        future.await
    }
}

pub(crate) fn internal_span(_name: &'static str) -> MemorySpan {
    MemorySpan
}

pub(crate) struct MemorySpan;

#[allow(clippy::unused_self)]
impl MemorySpan {
    pub(crate) fn record_bytes<T: serde::Serialize>(&mut self, _record: Option<&T>) {}
    pub(crate) fn attributes(&mut self, _attributes: &[(&'static str, &str)]) {}
    pub(crate) fn error(&mut self, _error: &dyn fmt::Display) {}
    pub(crate) fn result<T, E: fmt::Display>(self, _result: &Result<T, E>) {}
}
