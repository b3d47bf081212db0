//! Arvo's span attribute names and the OpenTelemetry attributes of an event.

use opentelemetry::{KeyValue, Value};

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
pub fn event_attributes(event: &Event) -> [(&'static str, Value); 13] {
    let opt = |v: Option<&str>| Value::from(v.unwrap_or(NULL).to_owned());
    let s = |v: &str| Value::from(v.to_owned());
    [
        ("cloudevents.event_id", s(event.id())),
        ("cloudevents.event_source", s(event.source())),
        ("cloudevents.event_spec_version", s(event.specversion())),
        ("cloudevents.event_subject", s(event.subject())),
        ("cloudevents.event_type", s(event.r#type())),
        ("cloudevents.event_time", s(event.time())),
        ("cloudevents.event_datacontenttype", s(event.datacontenttype())),
        ("cloudevents.event_dataschema", opt(event.dataschema())),
        ("cloudevents.arvo.event_redirectto", opt(event.redirectto())),
        ("cloudevents.arvo.event_to", opt(event.to())),
        (
            "cloudevents.arvo.event_executionunits",
            event.executionunits().map_or_else(|| Value::from(NULL), Value::from),
        ),
        ("cloudevents.arvo.event_parentid", opt(event.parentid())),
        ("cloudevents.arvo.event_domain", opt(event.domain())),
    ]
}

/// [`event_attributes`] with each key prefixed by `prefix`.
pub fn prefixed_event_attributes(prefix: &str, event: &Event) -> impl Iterator<Item = KeyValue> + use<> {
    let prefix = prefix.to_owned();
    event_attributes(event)
        .into_iter()
        .map(move |(key, value)| KeyValue::new(format!("{prefix}{key}"), value))
}
