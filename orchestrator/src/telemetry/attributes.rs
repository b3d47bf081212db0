//! Arvo's span attribute names and the OpenTelemetry attributes of an event.

use std::sync::{Arc, LazyLock};

use opentelemetry::{Key, KeyValue, Value};

use crate::event::Event;

/// `arvo.span.kind`: `handler.simple`, `handler.orchestrator.statemachine`,
/// `handler.orchestrator.imperative` or `internal`.
pub const SPAN_KIND: &str = "arvo.span.kind";
/// `openinference.span.kind` (always `CHAIN` here).
pub const OPENINFERENCE_SPAN_KIND: &str = "openinference.span.kind";
/// `arvo.handler.source`: the handler's source (its topic).
pub const HANDLER_SOURCE: &str = "arvo.handler.source";
/// `arvo.contract.uri`: the URI of the handler's (self) contract.
pub const CONTRACT_URI: &str = "arvo.contract.uri";
/// `arvo.handler.execution.type`: `handler`, `orchestrator` or `resumable`.
pub const EXECUTION_TYPE: &str = "arvo.handler.execution.type";
/// `arvo.handler.execution.status`: `normal` or `failure`.
pub const EXECUTION_STATUS: &str = "arvo.handler.execution.status";
/// `arvo.orchestration.status`: `active`, `done` or `failure`.
pub const ORCHESTRATION_STATUS: &str = "arvo.orchestration.status";
/// `arvo.machine.type`: the machine resolved by a statechart orchestrator.
pub const MACHINE_TYPE: &str = "arvo.machine.type";
/// `arvo.machine.version`: the version of the machine resolved.
pub const MACHINE_VERSION: &str = "arvo.machine.version";
/// `arvo.memory.id`: the workflow id of a memory operation.
pub const MEMORY_ID: &str = "arvo.memory.id";
/// `arvo.memory.record.bytes`: the JSON size of the record read or written.
pub const MEMORY_RECORD_BYTES: &str = "arvo.memory.record.bytes";
/// `exception.type`.
pub const EXCEPTION_TYPE: &str = "exception.type";
/// `exception.message`.
pub const EXCEPTION_MESSAGE: &str = "exception.message";
/// The prefix of the consumed event's attributes: `consumable.0.<event attribute>`.
pub const CONSUMABLE_PREFIX: &str = "consumable.0.";
/// The prefix of the emitted events' attributes: `emittables.<i>.<event attribute>`.
pub const EMITTABLES_PREFIX: &str = "emittables.";
/// The value of a missing event attribute (arvo-core's `OTelNull`).
pub const NULL: &str = "N/A";

/// The `arvo.parsed.subject.<kind>.name` / `.version` keys of an orchestrator (`kind` =
/// `orchestrator`) or a resumable (`kind` = `resumable`).
pub fn parsed_subject_keys(kind: &str) -> (String, String) {
    (format!("arvo.parsed.subject.{kind}.name"), format!("arvo.parsed.subject.{kind}.version"))
}

/// arvo-core's `otelAttributes` of an event: `cloudevents.event_{id,source,spec_version,subject,
/// type,time,datacontenttype,dataschema}` and `cloudevents.arvo.event_{redirectto,to,
/// executionunits,parentid,domain}`, [`NULL`] for a missing value.
pub fn event_attributes(event: &Event) -> [(&'static str, Value); EVENT_ATTRIBUTES] {
    let opt = |v: Option<&str>| v.map_or_else(|| Value::from(NULL), |v| Value::from(v.to_owned()));
    let s = |v: &str| Value::from(v.to_owned());
    let values = [
        s(event.id()),
        s(event.source()),
        s(event.specversion()),
        s(event.subject()),
        s(event.r#type()),
        s(event.time()),
        s(event.datacontenttype()),
        opt(event.dataschema()),
        opt(event.redirectto()),
        opt(event.to()),
        event.executionunits().map_or_else(|| Value::from(NULL), Value::from),
        opt(event.parentid()),
        opt(event.domain()),
    ];
    let mut names = EVENT_ATTRIBUTE_NAMES.into_iter();
    values.map(|value| (names.next().unwrap_or_default(), value))
}

/// The names of [`event_attributes`], in its order.
const EVENT_ATTRIBUTE_NAMES: [&str; EVENT_ATTRIBUTES] = [
    "cloudevents.event_id",
    "cloudevents.event_source",
    "cloudevents.event_spec_version",
    "cloudevents.event_subject",
    "cloudevents.event_type",
    "cloudevents.event_time",
    "cloudevents.event_datacontenttype",
    "cloudevents.event_dataschema",
    "cloudevents.arvo.event_redirectto",
    "cloudevents.arvo.event_to",
    "cloudevents.arvo.event_executionunits",
    "cloudevents.arvo.event_parentid",
    "cloudevents.arvo.event_domain",
];

/// How many attributes [`event_attributes`] gives.
pub const EVENT_ATTRIBUTES: usize = 13;

/// [`event_attributes`] with each key prefixed by `prefix`.
pub fn prefixed_event_attributes(prefix: &str, event: &Event) -> impl Iterator<Item = KeyValue> + use<> {
    let prefix = prefix.to_owned();
    event_attributes(event)
        .into_iter()
        .map(move |(key, value)| KeyValue::new(format!("{prefix}{key}"), value))
}

/// The keys of [`event_attributes`] under one prefix, built once: cloning one is a reference
/// count, where [`prefixed_event_attributes`] formats every key of every recorded event.
type PrefixedKeys = [Key; EVENT_ATTRIBUTES];

fn prefixed_keys(prefix: &str) -> PrefixedKeys {
    EVENT_ATTRIBUTE_NAMES.map(|name| Key::from(Arc::<str>::from(format!("{prefix}{name}"))))
}

/// How many emitted events per execution get cached keys; later ones format theirs.
const CACHED_EMITTABLES: usize = 64;

/// [`prefixed_event_attributes`] with [`CONSUMABLE_PREFIX`], without formatting the keys.
pub(crate) fn consumable_attributes(event: &Event) -> impl Iterator<Item = KeyValue> + use<> {
    static KEYS: LazyLock<PrefixedKeys> = LazyLock::new(|| prefixed_keys(CONSUMABLE_PREFIX));
    KEYS.clone().into_iter().zip(event_attributes(event)).map(|(key, (_, value))| KeyValue::new(key, value))
}

/// [`prefixed_event_attributes`] with `emittables.<index>.`, without formatting the keys (for
/// the first [`CACHED_EMITTABLES`] events).
pub(crate) fn emittable_attributes(index: usize, event: &Event) -> Vec<KeyValue> {
    static KEYS: LazyLock<Vec<PrefixedKeys>> = LazyLock::new(|| {
        (0..CACHED_EMITTABLES).map(|i| prefixed_keys(&format!("{EMITTABLES_PREFIX}{i}."))).collect()
    });
    match KEYS.get(index) {
        Some(keys) => keys
            .clone()
            .into_iter()
            .zip(event_attributes(event))
            .map(|(key, (_, value))| KeyValue::new(key, value))
            .collect(),
        None => prefixed_event_attributes(&format!("{EMITTABLES_PREFIX}{index}."), event).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event() -> Event {
        Event::builder()
            .source("com.test.source")
            .r#type("com.test.type")
            .subject("s")
            .to("com.test.to")
            .data_json(serde_json::json!({"a": 1}))
            .build()
            .expect("an event")
    }

    fn pairs(attributes: impl IntoIterator<Item = KeyValue>) -> Vec<(String, String)> {
        attributes.into_iter().map(|kv| (kv.key.as_str().to_owned(), kv.value.to_string())).collect()
    }

    #[test]
    fn cached_keys_give_the_same_attributes_as_formatted_ones() {
        let e = event();
        assert_eq!(pairs(consumable_attributes(&e)), pairs(prefixed_event_attributes(CONSUMABLE_PREFIX, &e)));
        for i in [0, 1, CACHED_EMITTABLES - 1, CACHED_EMITTABLES, CACHED_EMITTABLES + 5] {
            let formatted = prefixed_event_attributes(&format!("{EMITTABLES_PREFIX}{i}."), &e);
            assert_eq!(pairs(emittable_attributes(i, &e)), pairs(formatted), "emittable {i}");
        }
        let first = pairs(consumable_attributes(&e));
        assert_eq!(first.len(), EVENT_ATTRIBUTES);
        assert_eq!(first[0].0, "consumable.0.cloudevents.event_id");
        assert!(first.iter().any(|(k, v)| k == "consumable.0.cloudevents.arvo.event_domain" && v == NULL));
    }
}
