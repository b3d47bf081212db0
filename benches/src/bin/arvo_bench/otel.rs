//! `orchestrator_chain` with OpenTelemetry spans recorded (Arvo's `orchestrator_chain [otel=sdk]`): a real
//! SDK tracer provider, installed as the global provider before the handlers are built, so the
//! orchestrator and both services record their spans (execution spans and the orchestrator's
//! memory / machine child spans). There is no exporter: the only span processor counts the finished
//! spans and drops them, as Arvo's run with an SDK provider and no exporter does.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use opentelemetry::Context;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, Span, SpanData, SpanProcessor};
use serde_json::json;
use tokio::runtime::Runtime;

use super::rig::Measured;
use super::{BoxError, chain, chain_orchestrator};

/// Counts finished spans and drops them (no exporter).
#[derive(Debug, Clone, Default)]
struct CountingProcessor(Arc<AtomicU64>);

impl SpanProcessor for CountingProcessor {
    fn on_start(&self, _: &mut Span, _: &Context) {}

    fn on_end(&self, _: SpanData) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _: Duration) -> OTelSdkResult {
        Ok(())
    }
}

/// The workload: the chain, one workflow at a time, with a recording SDK provider installed.
pub(crate) fn chain_with_spans(rt: &Runtime, n: usize) -> Result<Measured, BoxError> {
    let spans = CountingProcessor::default();
    let provider = SdkTracerProvider::builder().with_span_processor(spans.clone()).build();
    opentelemetry::global::set_tracer_provider(provider.clone());
    let mut m = chain(rt, chain_orchestrator()?, n, 1)?;
    // Spans of the warm-up and the measured phase; the measured phase alone is not separated.
    let total = spans.0.load(Ordering::Relaxed);
    provider.shutdown()?;
    let warmup = m.params["warmup"].as_u64().unwrap_or(0);
    m.params["tracer"] = json!("opentelemetry_sdk SdkTracerProvider (global), no exporter");
    m.params["spans"] = json!(total);
    m.params["spans_per_workflow"] = json!(total as f64 / (m.workflows as u64 + warmup) as f64);
    Ok(m)
}
