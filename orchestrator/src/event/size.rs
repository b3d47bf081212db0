//! A cheap upper bound on an event's encoded size, so that the size limit costs a serialization
//! only for events that may be near it.

use serde_json::{Number, Value};

use super::{Event, ExtensionValue, SPEC_VERSION};

/// The most bytes one byte of a string takes in JSON: a control character as `\u00XX`.
const ESCAPED: usize = 6;

/// The most bytes a number takes: an `f64` in its shortest form (`-2.2250738585072014e-308`)
/// or a 64-bit integer (`-9223372036854775808`).
const NUMBER: usize = 24;

fn str_bound(s: &str) -> usize {
    2 + ESCAPED * s.len()
}

fn opt_bound(s: Option<&str>) -> usize {
    s.map_or(4, str_bound)
}

fn number_bound(_: &Number) -> usize {
    NUMBER
}

fn value_bound(value: &Value) -> usize {
    match value {
        Value::Null => 4,
        Value::Bool(_) => 5,
        Value::Number(n) => number_bound(n),
        Value::String(s) => str_bound(s),
        Value::Array(items) => 2 + items.iter().map(|v| value_bound(v) + 1).sum::<usize>(),
        Value::Object(map) => {
            2 + map.iter().map(|(k, v)| str_bound(k) + 1 + value_bound(v) + 1).sum::<usize>()
        }
    }
}

/// An upper bound on [`Event::encoded_len`], in one pass over the fields without formatting
/// anything: every string byte counted as its longest escape, every number as the longest.
pub(super) fn encoded_len_bound(event: &Event) -> usize {
    let e = &*event.0;
    // The 17 keys, their quotes, colons and commas, and the braces.
    let keys = "idsourcespecversiontypesubjectdatacontenttypedataschemadatatimetoaccesscontrolredirecttoexecutionunitstraceparenttracestateparentiddomain";
    let mut n = 2 + keys.len() + 17 * 4;
    n += str_bound(&e.id) + str_bound(&e.source) + str_bound(SPEC_VERSION) + str_bound(&e.r#type);
    n += str_bound(&e.subject) + str_bound(&e.datacontenttype) + opt_bound(e.dataschema.as_deref());
    n += value_bound(&e.data) + str_bound(&e.time) + opt_bound(e.to.as_deref());
    n += opt_bound(e.accesscontrol.as_deref()) + opt_bound(e.redirectto.as_deref());
    n += e.executionunits.as_ref().map_or(4, number_bound);
    n += opt_bound(e.traceparent.as_deref()) + opt_bound(e.tracestate.as_deref());
    n += opt_bound(e.parentid.as_deref()) + opt_bound(e.domain.as_deref());
    for (key, value) in &e.extensions {
        n += str_bound(key) + 2;
        n += match value {
            ExtensionValue::Null => 4,
            ExtensionValue::Bool(_) => 5,
            ExtensionValue::Number(v) => number_bound(v),
            ExtensionValue::String(s) => str_bound(s),
        };
    }
    n
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn event(data: Value) -> Event {
        Event::builder()
            .source("com.test.source")
            .r#type("com.test.type")
            .subject("wf-1")
            .data(data.as_object().cloned().unwrap_or_default())
            .traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
            .extension("custom", "x\u{7}y")
            .executionunits_f64(1.5e300)
            .build()
            .unwrap()
    }

    #[test]
    fn the_bound_is_never_below_the_encoded_size() {
        // Numbers at their longest: a long literal parses to an f64 (serde_json without
        // `arbitrary_precision`, which would keep every digit and break the bound).
        let long: Value = serde_json::from_str("-123456789012345678901234567890.5e-300").unwrap();
        let cases = [
            json!({}),
            json!({"a": 1, "b": [true, false, null, -9223372036854775808_i64, u64::MAX]}),
            json!({"f": [f64::MAX, f64::MIN_POSITIVE, -2.2250738585072014e-308, 0.1], "long": long}),
            json!({"ctl": "\u{0}\u{1f}\"\\\n\t", "uni": "é😀", "nested": {"deep": [[[{"x": "\u{8}"}]]]}}),
        ];
        for data in cases {
            let event = event(data);
            let bound = encoded_len_bound(&event);
            assert!(bound >= event.encoded_len(), "bound {bound} < size {}", event.encoded_len());
            assert_eq!(event.encoded_len(), event.to_json_vec().len());
        }
    }

    #[test]
    fn a_large_event_is_still_measured_exactly() {
        let event = event(json!({"text": "a".repeat(10_000)}));
        let size = event.encoded_len();
        assert!(event.check_size(size).is_ok());
        let err = event.check_size(size - 1).unwrap_err();
        assert_eq!((err.size, err.max), (size, size - 1));
    }
}
