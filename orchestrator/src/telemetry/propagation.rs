//! W3C trace context carried in an event's `traceparent` / `tracestate`.

use std::str::FromStr;
use std::sync::LazyLock;

use opentelemetry::Context;
use opentelemetry::propagation::text_map_propagator::FieldIter;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};

use super::TraceHeaders;
use crate::event::Event;

const TRACEPARENT: &str = "traceparent";
const TRACESTATE: &str = "tracestate";
static FIELDS: LazyLock<[String; 2]> = LazyLock::new(|| [TRACEPARENT.to_owned(), TRACESTATE.to_owned()]);

/// Reads an event's `traceparent` / `tracestate` for a
/// [`TextMapPropagator`](opentelemetry::propagation::TextMapPropagator).
#[derive(Debug, Clone, Copy)]
pub struct EventExtractor<'a>(pub &'a Event);

impl Extractor for EventExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        if key.eq_ignore_ascii_case(TRACEPARENT) {
            self.0.traceparent()
        } else if key.eq_ignore_ascii_case(TRACESTATE) {
            self.0.tracestate()
        } else {
            None
        }
    }

    fn keys(&self) -> Vec<&str> {
        let mut keys = Vec::with_capacity(2);
        if self.0.traceparent().is_some() {
            keys.push(TRACEPARENT);
        }
        if self.0.tracestate().is_some() {
            keys.push(TRACESTATE);
        }
        keys
    }
}

/// Writes `traceparent` / `tracestate` into [`TraceHeaders`] for a
/// [`TextMapPropagator`](opentelemetry::propagation::TextMapPropagator); other keys are ignored,
/// and so is an empty value (an event's headers are non-empty or absent).
#[derive(Debug)]
pub struct HeadersInjector<'a>(pub &'a mut TraceHeaders);

impl Injector for HeadersInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        let value = (!value.is_empty()).then_some(value);
        if key.eq_ignore_ascii_case(TRACEPARENT) {
            self.0.traceparent = value;
        } else if key.eq_ignore_ascii_case(TRACESTATE) {
            self.0.tracestate = value;
        }
    }
}

/// The W3C Trace Context propagator (the same rules as `opentelemetry_sdk`'s
/// `TraceContextPropagator`), used by the handlers to read and write events' headers.
#[derive(Debug, Clone, Copy, Default)]
pub struct TraceContext;

impl TraceContext {
    /// The remote span context in `traceparent` / `tracestate`, if `traceparent` is valid
    /// (an invalid `tracestate` is dropped).
    pub fn span_context(traceparent: Option<&str>, tracestate: Option<&str>) -> Option<SpanContext> {
        let header = traceparent?.trim();
        let parts: Vec<&str> = header.split_terminator('-').collect();
        if parts.len() < 4 {
            return None;
        }
        let version = u8::from_str_radix(parts[0], 16).ok()?;
        if parts[0].len() != 2 || version == 0xff || (version == 0 && parts.len() != 4) {
            return None;
        }
        let lower_hex =
            |s: &str, len: usize| s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if !lower_hex(parts[1], 32) || !lower_hex(parts[2], 16) || !lower_hex(parts[3], 2) {
            return None;
        }
        let trace_id = TraceId::from_hex(parts[1]).ok()?;
        let span_id = SpanId::from_hex(parts[2]).ok()?;
        let flags = TraceFlags::new(u8::from_str_radix(parts[3], 16).ok()?) & TraceFlags::SAMPLED;
        let state = tracestate.and_then(|s| TraceState::from_str(s).ok()).unwrap_or_default();
        let context = SpanContext::new(trace_id, span_id, flags, true, state);
        context.is_valid().then_some(context)
    }

    /// The headers of span context `sc`: none for an invalid one, no `tracestate` when empty.
    pub fn headers(sc: &SpanContext) -> TraceHeaders {
        if !sc.is_valid() {
            return TraceHeaders::default();
        }
        let state = sc.trace_state().header();
        TraceHeaders {
            traceparent: Some(format!(
                "00-{}-{}-{:02x}",
                sc.trace_id(),
                sc.span_id(),
                sc.trace_flags() & TraceFlags::SAMPLED
            )),
            tracestate: (!state.is_empty()).then_some(state),
        }
    }
}

impl TextMapPropagator for TraceContext {
    fn inject_context(&self, cx: &Context, injector: &mut dyn Injector) {
        let headers = Self::headers(cx.span().span_context());
        if let Some(traceparent) = headers.traceparent {
            injector.set(TRACEPARENT, traceparent);
            injector.set(TRACESTATE, headers.tracestate.unwrap_or_default());
        }
    }

    fn extract_with_context(&self, cx: &Context, extractor: &dyn Extractor) -> Context {
        match Self::span_context(extractor.get(TRACEPARENT), extractor.get(TRACESTATE)) {
            Some(sc) => cx.with_remote_span_context(sc),
            None => cx.clone(),
        }
    }

    fn fields(&self) -> FieldIter<'_> {
        FieldIter::new(&*FIELDS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TP: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    #[test]
    fn round_trips_a_traceparent_and_tracestate() {
        let sc = TraceContext::span_context(Some(TP), Some("a=1,b=2")).unwrap();
        assert!(sc.is_remote() && sc.is_sampled());
        let headers = TraceContext::headers(&sc);
        assert_eq!(headers.traceparent(), Some(TP));
        assert_eq!(headers.tracestate(), Some("a=1,b=2"));
    }

    #[test]
    fn rejects_malformed_traceparents() {
        for bad in [
            "tp",
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333-01",
        ] {
            assert!(TraceContext::span_context(Some(bad), None).is_none(), "{bad}");
        }
        assert!(TraceContext::span_context(None, Some("a=1")).is_none());
    }

    #[test]
    fn an_invalid_tracestate_is_dropped() {
        let sc = TraceContext::span_context(Some(TP), Some("not a tracestate")).unwrap();
        assert_eq!(TraceContext::headers(&sc).tracestate(), None);
    }
}
