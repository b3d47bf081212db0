//! Field-by-field validation shared by the builder and the parsers.

use std::sync::OnceLock;

use indexmap::IndexMap;
use serde_json::{Map, Number, Value};

use super::{ARVO_CONTENT_TYPE, DEFAULT_MAX_EVENT_BYTES, Event, ExtensionValue, SPEC_VERSION, time};
use crate::field_error::{FieldError, FieldErrors};
use crate::{rules, uri};

/// Why bytes or JSON could not become an [`Event`].
#[derive(Debug, thiserror::Error)]
pub enum EventError {
    /// The input is larger than the configured maximum.
    #[error("event is {size} bytes, larger than the maximum of {max} bytes")]
    TooLarge {
        /// Size of the input.
        size: usize,
        /// The configured maximum.
        max: usize,
    },
    /// The input is not JSON.
    #[error("event is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The input is JSON but not an object.
    #[error("event must be a JSON object, got {found}")]
    NotAnObject {
        /// The JSON kind found instead.
        found: &'static str,
    },
    /// The input breaks one or more of Arvo's event rules; every broken rule is listed.
    #[error("{0}")]
    Invalid(#[from] FieldErrors),
}

impl EventError {
    /// Every broken rule, when the error is [`EventError::Invalid`].
    pub fn field_errors(&self) -> &[FieldError] {
        match self {
            Self::Invalid(e) => &e.errors,
            _ => &[],
        }
    }
}

/// Options for parsing events from bytes.
///
/// ```
/// use orchestrator::event::{EventError, ParseOptions};
/// let err = ParseOptions::default().max_bytes(10).parse(b"{\"id\":\"0123456789\"}").unwrap_err();
/// assert!(matches!(err, EventError::TooLarge { size: 19, max: 10 }));
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ParseOptions {
    max_bytes: usize,
}

impl Default for ParseOptions {
    fn default() -> Self {
        Self { max_bytes: DEFAULT_MAX_EVENT_BYTES }
    }
}

impl ParseOptions {
    /// Sets the largest input accepted, in bytes.
    #[must_use]
    pub fn max_bytes(mut self, max: usize) -> Self {
        self.max_bytes = max;
        self
    }

    /// The configured maximum size in bytes.
    pub fn max(&self) -> usize {
        self.max_bytes
    }

    /// Parses and validates a CloudEvents structured-JSON event.
    pub fn parse(&self, bytes: &[u8]) -> Result<Event, EventError> {
        if bytes.len() > self.max_bytes {
            return Err(EventError::TooLarge { size: bytes.len(), max: self.max_bytes });
        }
        let raw: wire_raw::RawEvent = serde_json::from_slice(bytes)?;
        match raw {
            wire_raw::RawEvent::Fields(draft) => draft.finish(),
            wire_raw::RawEvent::NotAnObject(found) => Err(EventError::NotAnObject { found }),
        }
    }
}

pub(super) fn from_value(value: Value) -> Result<Event, EventError> {
    match value {
        Value::Object(map) => {
            let mut draft = Draft::default();
            for (key, value) in map {
                draft.set(&key, value);
            }
            draft.finish()
        }
        other => Err(EventError::NotAnObject { found: json_kind(&other) }),
    }
}

pub(super) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Fields as received, before validation. `None` = absent or null.
#[derive(Debug, Default)]
pub(super) struct Draft {
    pub id: Option<String>,
    pub source: Option<String>,
    pub specversion: Option<String>,
    pub r#type: Option<String>,
    pub subject: Option<String>,
    pub datacontenttype: Option<String>,
    pub dataschema: Option<String>,
    pub data: Option<Map<String, Value>>,
    pub time: Option<String>,
    pub to: Option<String>,
    pub accesscontrol: Option<String>,
    pub redirectto: Option<String>,
    pub executionunits: Option<Number>,
    pub traceparent: Option<String>,
    pub tracestate: Option<String>,
    pub parentid: Option<String>,
    pub domain: Option<String>,
    pub extensions: IndexMap<String, ExtensionValue>,
    /// Type errors found while reading the fields.
    pub errors: Vec<FieldError>,
    /// The URI fields (`source`, `subject`, `dataschema`, `to`, `redirectto`) went through
    /// [`uri::encode_uri_once`], so each is an encoded URI already (only emptiness is checked).
    pub uris_encoded: bool,
    /// The subject is a parsed orchestration subject's base64 string, an encoded URI as it is.
    pub subject_is_uri: bool,
}

impl Draft {
    /// Records one received key/value pair, noting wrong JSON types. A repeated key replaces the
    /// earlier value whatever it is (`null` included), as `JSON.parse` and serde_json's `Value`
    /// do: the one rule of both parsers.
    pub(super) fn set(&mut self, key: &str, value: Value) {
        // A repeated key replaces the earlier value, as `JSON.parse` does: forget its errors.
        if !self.errors.is_empty() {
            let field = if is_attribute_name(key) { key.to_owned() } else { format!("extensions.{key}") };
            self.errors.retain(|e| e.field != field.as_str());
        }
        let slot: &mut Option<String> = match key {
            "id" => &mut self.id,
            "source" => &mut self.source,
            "specversion" => &mut self.specversion,
            "type" => &mut self.r#type,
            "subject" => &mut self.subject,
            "datacontenttype" => &mut self.datacontenttype,
            "dataschema" => &mut self.dataschema,
            "time" => &mut self.time,
            "to" => &mut self.to,
            "accesscontrol" => &mut self.accesscontrol,
            "redirectto" => &mut self.redirectto,
            "traceparent" => &mut self.traceparent,
            "tracestate" => &mut self.tracestate,
            "parentid" => &mut self.parentid,
            "domain" => &mut self.domain,
            "data" => {
                match value {
                    Value::Object(map) => self.data = Some(map),
                    other => {
                        self.data = None;
                        self.errors.push(FieldError::new(
                            "data",
                            format!("must be a JSON object, got {}", json_kind(&other)),
                            None,
                        ));
                    }
                }
                return;
            }
            "executionunits" => {
                self.executionunits = None;
                match value {
                    Value::Null => {}
                    Value::Number(n) => self.executionunits = Some(n),
                    other => self.errors.push(FieldError::with_json(
                        "executionunits",
                        "must be a number or null",
                        &other,
                    )),
                }
                return;
            }
            _ => {
                self.set_extension(key, value);
                return;
            }
        };
        // The last occurrence wins, `null` included (a later `null` clears an earlier value).
        *slot = None;
        match value {
            Value::Null => {}
            Value::String(s) => *slot = Some(s),
            other => {
                let field = static_field(key);
                self.errors.push(FieldError::with_json(field, "must be a string or null", &other));
            }
        }
    }

    fn set_extension(&mut self, key: &str, value: Value) {
        let field = format!("extensions.{key}");
        if !rules::is_extension_key(key) {
            self.errors.push(FieldError::new(field.clone(), rules::EXTENSION_KEY_RULE, Some(key)));
        }
        match ExtensionValue::from_json(value) {
            Some(v) => {
                self.extensions.insert(key.to_owned(), v);
            }
            None => self.errors.push(FieldError::new(
                field,
                "extension values must be a string, boolean, number or null",
                None,
            )),
        }
    }

    /// Checks every rule and builds the event, or lists every broken rule.
    pub(super) fn finish(mut self) -> Result<Event, EventError> {
        let mut errors = std::mem::take(&mut self.errors);
        let id = required(&mut errors, "id", self.id);
        let source = required(&mut errors, "source", self.source);
        let specversion = required(&mut errors, "specversion", self.specversion);
        let r#type = required(&mut errors, "type", self.r#type);
        let subject = required(&mut errors, "subject", self.subject);
        let time = required(&mut errors, "time", self.time);
        let datacontenttype = self.datacontenttype.unwrap_or_else(|| ARVO_CONTENT_TYPE.to_owned());
        if self.data.is_none() && !errors.iter().any(|e| e.field == "data") {
            errors.push(FieldError::new("data", "is required (a JSON object)", None));
        }

        if let Some(id) = &id {
            non_empty(&mut errors, "id", id);
        }
        if let Some(t) = &time
            && !time::is_valid_timestamp(t)
        {
            errors.push(FieldError::new(
                "time",
                "must be an RFC 3339 date-time with an offset (e.g. 2024-01-01T00:00:00.000+00:00)",
                Some(t),
            ));
        }
        if let Some(s) = &source {
            uri_field(&mut errors, "source", s, self.uris_encoded);
        }
        if let Some(v) = &specversion
            && v != SPEC_VERSION
        {
            errors.push(FieldError::new("specversion", "must be \"1.0\"", Some(v)));
        }
        if let Some(t) = &r#type
            && !rules::is_reverse_dns(t)
        {
            errors.push(FieldError::new("type", rules::REVERSE_DNS_RULE, Some(t)));
        }
        if let Some(s) = &subject {
            uri_field(&mut errors, "subject", s, self.uris_encoded || self.subject_is_uri);
        }
        if !datacontenttype.contains("application/cloudevents+json")
            && !datacontenttype.contains("application/json")
        {
            errors.push(FieldError::new(
                "datacontenttype",
                "must contain 'application/cloudevents+json' or 'application/json'",
                Some(&datacontenttype),
            ));
        }
        if let Some(v) = &self.dataschema {
            uri_field(&mut errors, "dataschema", v, self.uris_encoded);
        }
        match &self.to {
            Some(v) => uri_field(&mut errors, "to", v, self.uris_encoded),
            None if datacontenttype == ARVO_CONTENT_TYPE => errors.push(FieldError::new(
                "to",
                "is required when datacontenttype is Arvo's content type",
                None,
            )),
            None => {}
        }
        if let Some(v) = &self.accesscontrol {
            non_empty(&mut errors, "accesscontrol", v);
        }
        if let Some(v) = &self.redirectto {
            uri_field(&mut errors, "redirectto", v, self.uris_encoded);
        }
        for (field, value) in [
            ("traceparent", &self.traceparent),
            ("tracestate", &self.tracestate),
            ("parentid", &self.parentid),
        ] {
            if let Some(v) = value {
                non_empty(&mut errors, field, v);
            }
        }
        if let Some(d) = &self.domain
            && !rules::is_domain(d)
        {
            errors.push(FieldError::new("domain", rules::DOMAIN_RULE, Some(d)));
        }

        errors.sort_by_key(|e| field_rank(&e.field));
        FieldErrors::check("event", errors)?;
        // All required fields are present when no rule is broken.
        let (Some(id), Some(source), Some(r#type), Some(subject), Some(time), Some(data)) =
            (id, source, r#type, subject, time, self.data)
        else {
            let missing = vec![FieldError::new("event", "is missing required fields", None)];
            return Err(FieldErrors { what: "event".into(), errors: missing }.into());
        };
        Ok(Event(std::sync::Arc::new(super::fields::Event {
            id,
            source,
            r#type,
            subject,
            datacontenttype,
            dataschema: self.dataschema,
            data: Value::Object(data),
            time,
            to: self.to,
            accesscontrol: self.accesscontrol,
            redirectto: self.redirectto,
            executionunits: self.executionunits,
            traceparent: self.traceparent,
            tracestate: self.tracestate,
            parentid: self.parentid,
            domain: self.domain,
            extensions: self.extensions,
            parsed_subject: OnceLock::new(),
            encoded_len: OnceLock::new(),
        })))
    }
}

/// True for the names of CloudEvents and Arvo attributes (which are never custom extensions).
pub(super) fn is_attribute_name(key: &str) -> bool {
    field_rank(key) < ATTRIBUTE_ORDER.len()
}

/// The CloudEvents and Arvo attributes, in Arvo's key order.
const ATTRIBUTE_ORDER: &[&str] = &[
    "id",
    "source",
    "specversion",
    "type",
    "subject",
    "datacontenttype",
    "dataschema",
    "data",
    "time",
    "to",
    "accesscontrol",
    "redirectto",
    "executionunits",
    "traceparent",
    "tracestate",
    "parentid",
    "domain",
];

/// Position of a field in Arvo's key order, so errors are listed in the order of the event.
fn field_rank(field: &str) -> usize {
    ATTRIBUTE_ORDER.iter().position(|k| *k == field).unwrap_or(ATTRIBUTE_ORDER.len())
}

fn static_field(key: &str) -> &'static str {
    ATTRIBUTE_ORDER.iter().find(|k| **k == key).copied().unwrap_or("event")
}

fn required(errors: &mut Vec<FieldError>, field: &'static str, value: Option<String>) -> Option<String> {
    if value.is_none() && !errors.iter().any(|e| e.field == field) {
        errors.push(FieldError::new(field, "is required", None));
    }
    value
}

fn non_empty(errors: &mut Vec<FieldError>, field: &'static str, value: &str) {
    if value.is_empty() {
        errors.push(FieldError::new(field, "must be a non-empty string", Some(value)));
    }
}

/// Checks a URI field: non-empty, and an encoded URI unless `known_uri` (the value was made one).
fn uri_field(errors: &mut Vec<FieldError>, field: &'static str, value: &str, known_uri: bool) {
    if value.is_empty() {
        errors.push(FieldError::new(field, "must be a non-empty string", Some(value)));
    } else if !known_uri && !uri::is_valid_uri(value) {
        errors.push(FieldError::new(
            field,
            "must be a properly encoded URI (value == encodeURI(decodeURI(value)))",
            Some(value),
        ));
    }
}

/// Streaming deserialization into a [`Draft`] without building an intermediate JSON object.
pub(super) mod wire_raw {
    use std::fmt;

    use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
    use serde_json::Value;

    use super::Draft;

    pub(in crate::event) enum RawEvent {
        Fields(Box<Draft>),
        NotAnObject(&'static str),
    }

    impl<'de> serde::Deserialize<'de> for RawEvent {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            deserializer.deserialize_any(RawVisitor)
        }
    }

    struct RawVisitor;

    impl<'de> Visitor<'de> for RawVisitor {
        type Value = RawEvent;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a CloudEvents JSON object")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawEvent, A::Error> {
            let mut draft = Draft::default();
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                let value: Value = map.next_value()?;
                draft.set(&key, value);
            }
            Ok(RawEvent::Fields(Box::new(draft)))
        }

        fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<RawEvent, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(RawEvent::NotAnObject("an array"))
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<RawEvent, E> {
            Ok(RawEvent::NotAnObject("a string"))
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<RawEvent, E> {
            Ok(RawEvent::NotAnObject("a boolean"))
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<RawEvent, E> {
            Ok(RawEvent::NotAnObject("a number"))
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<RawEvent, E> {
            Ok(RawEvent::NotAnObject("a number"))
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<RawEvent, E> {
            Ok(RawEvent::NotAnObject("a number"))
        }
        fn visit_unit<E: de::Error>(self) -> Result<RawEvent, E> {
            Ok(RawEvent::NotAnObject("null"))
        }
    }
}
