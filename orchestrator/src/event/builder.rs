//! [`EventBuilder`]: the validated way to make an [`Event`] in code.

use serde_json::{Map, Number, Value};

use super::validate::{Draft, EventError, json_kind};
use super::{ARVO_CONTENT_TYPE, Event, ExtensionValue, SPEC_VERSION, time};
use crate::field_error::FieldError;
use crate::subject::Subject;
use crate::uri;

/// Builds an [`Event`], applying arvo-core's defaults and checking every rule.
///
/// Defaults: `id` = a uuid v4, `time` = now in UTC, `specversion` = `1.0`,
/// `datacontenttype` = Arvo's content type, `to` = the event type (except in a copy,
/// [`Event::to_builder`], of an event whose `to` is null: the copy keeps it null).
///
/// URI-valued fields (`source`, `subject`, `to`, `redirectto`, `dataschema`) must be properly
/// encoded; [`EventBuilder::encode_uris`] makes the builder encode them, at most once, and
/// `parentid` with them (as arvo-core's `createArvoEvent` does; a `parentid` is not required to
/// be a URI).
///
/// ```
/// use orchestrator::event::Event;
/// let err = Event::builder()
///     .source("com.bench.client")
///     .r#type("com.app")
///     .subject("s")
///     .data_json(serde_json::json!({}))
///     .build()
///     .unwrap_err();
/// assert!(err.to_string().contains("`type` must be a reverse-DNS name"));
/// ```
#[derive(Debug, Default, Clone)]
#[must_use]
pub struct EventBuilder {
    id: Option<String>,
    source: Option<String>,
    r#type: Option<String>,
    subject: Option<String>,
    parsed_subject: Option<Subject>,
    datacontenttype: Option<String>,
    dataschema: Option<String>,
    data: Option<Result<Map<String, Value>, &'static str>>,
    time: Option<String>,
    to: Option<String>,
    accesscontrol: Option<String>,
    redirectto: Option<String>,
    executionunits: Option<Number>,
    traceparent: Option<String>,
    tracestate: Option<String>,
    parentid: Option<String>,
    domain: Option<String>,
    extensions: Vec<(String, ExtensionValue)>,
    encode_uris: bool,
    /// A copy of an event whose `to` is null ([`Event::to_builder`]): `to` gets no default.
    keep_null_to: bool,
}

macro_rules! string_setters {
    ($($(#[$doc:meta])* $name:ident, $opt:ident;)*) => {$(
        $(#[$doc])*
        #[inline]
        pub fn $name(mut self, value: impl Into<String>) -> Self {
            self.$name = Some(value.into());
            self
        }
        /// Sets or clears the field from an option.
        #[inline]
        pub fn $opt(mut self, value: Option<impl Into<String>>) -> Self {
            self.$name = value.map(Into::into);
            self
        }
    )*};
}

impl EventBuilder {
    string_setters! {
        /// Sets the event id (default: a uuid v4).
        id, id_opt;
        /// Sets the producer (required).
        source, source_opt;
        /// Sets the event type (required).
        r#type, type_opt;
        /// Sets the content type (default: Arvo's).
        datacontenttype, datacontenttype_opt;
        /// Sets the dataschema, `<uri>/<version>`.
        dataschema, dataschema_opt;
        /// Sets the time (default: now, UTC).
        time, time_opt;
        /// Sets the routing target (default: the event type).
        to, to_opt;
        /// Sets access-control information.
        accesscontrol, accesscontrol_opt;
        /// Sets where responses should go.
        redirectto, redirectto_opt;
        /// Sets the W3C `traceparent`.
        traceparent, traceparent_opt;
        /// Sets the W3C `tracestate`.
        tracestate, tracestate_opt;
        /// Sets the causing event's id.
        parentid, parentid_opt;
        /// Sets the domain.
        domain, domain_opt;
    }

    /// Sets the subject (required).
    #[inline]
    pub fn subject(mut self, value: impl Into<String>) -> Self {
        self.subject = Some(value.into());
        self.parsed_subject = None;
        self
    }

    /// Sets the subject from a parsed orchestration subject, which the event then shares.
    #[inline]
    pub fn orchestration_subject(mut self, subject: &Subject) -> Self {
        self.subject = Some(subject.as_str().to_owned());
        self.parsed_subject = Some(subject.clone());
        self
    }

    /// Sets the subject to `event`'s, sharing its parsed orchestration subject when it has one
    /// (so the new event's consumer does not decode it again).
    #[inline]
    pub(crate) fn subject_of(mut self, event: &Event) -> Self {
        self.subject = Some(event.0.subject.clone());
        self.parsed_subject = event.0.parsed_subject.get().cloned();
        self
    }

    /// Sets the payload object (required).
    #[inline]
    pub fn data(mut self, data: Map<String, Value>) -> Self {
        self.data = Some(Ok(data));
        self
    }

    /// Sets the payload from any JSON value; anything but an object is reported by `build`.
    #[inline]
    pub fn data_json(mut self, data: Value) -> Self {
        self.data = Some(match data {
            Value::Object(map) => Ok(map),
            other => Err(json_kind(&other)),
        });
        self
    }

    /// Sets the execution cost.
    #[inline]
    pub fn executionunits(mut self, units: impl Into<Number>) -> Self {
        self.executionunits = Some(units.into());
        self
    }

    /// Sets the execution cost from a float (non-finite values clear it).
    #[inline]
    pub fn executionunits_f64(mut self, units: f64) -> Self {
        self.executionunits = Number::from_f64(units);
        self
    }

    /// Sets or clears the execution cost.
    #[inline]
    pub fn executionunits_opt(mut self, units: Option<Number>) -> Self {
        self.executionunits = units;
        self
    }

    /// Adds a custom extension (key `^[a-z0-9]+$`).
    #[inline]
    pub fn extension(mut self, key: impl Into<String>, value: impl Into<ExtensionValue>) -> Self {
        self.extensions.push((key.into(), value.into()));
        self
    }

    /// Percent-encodes `source`, `subject`, `to`, `redirectto`, `dataschema` and `parentid` where
    /// they are not already valid encoded URIs (arvo-core's `createArvoEvent` behaviour, without
    /// its double encoding).
    #[inline]
    pub fn encode_uris(mut self, yes: bool) -> Self {
        self.encode_uris = yes;
        self
    }

    /// True when a subject has been set.
    pub fn has_subject(&self) -> bool {
        self.subject.is_some()
    }

    /// The type set so far.
    pub fn type_ref(&self) -> Option<&str> {
        self.r#type.as_deref()
    }
    /// The source set so far.
    pub fn source_ref(&self) -> Option<&str> {
        self.source.as_deref()
    }
    /// The domain set so far.
    pub fn domain_ref(&self) -> Option<&str> {
        self.domain.as_deref()
    }
    /// The redirectto set so far.
    pub fn redirectto_ref(&self) -> Option<&str> {
        self.redirectto.as_deref()
    }

    pub(crate) fn from_event(e: &Event) -> Self {
        let e = &*e.0;
        Self {
            id: Some(e.id.clone()),
            source: Some(e.source.clone()),
            r#type: Some(e.r#type.clone()),
            subject: Some(e.subject.clone()),
            parsed_subject: e.parsed_subject.get().cloned(),
            datacontenttype: Some(e.datacontenttype.clone()),
            dataschema: e.dataschema.clone(),
            data: Some(Ok(e.data.as_object().cloned().unwrap_or_default())),
            time: Some(e.time.clone()),
            to: e.to.clone(),
            accesscontrol: e.accesscontrol.clone(),
            redirectto: e.redirectto.clone(),
            executionunits: e.executionunits.clone(),
            traceparent: e.traceparent.clone(),
            tracestate: e.tracestate.clone(),
            parentid: e.parentid.clone(),
            domain: e.domain.clone(),
            extensions: e.extensions.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            encode_uris: false,
            keep_null_to: e.to.is_none(),
        }
    }

    /// Applies the defaults, checks every rule and returns the event, or every broken rule.
    pub fn build(self) -> Result<Event, EventError> {
        let encode_uris = self.encode_uris;
        // A parsed orchestration subject's base64 string is an encoded URI as it is.
        let subject_is_uri = matches!(
            (&self.parsed_subject, &self.subject),
            (Some(parsed), Some(subject)) if parsed.is_uri_safe() && parsed.as_str() == subject
        );
        let encode = |v: Option<String>| -> Option<String> {
            match v {
                // Encoding only changes a value that is not a valid encoded URI already.
                Some(v) if encode_uris => match uri::encode_uri_once(&v) {
                    std::borrow::Cow::Borrowed(_) => Some(v),
                    std::borrow::Cow::Owned(encoded) => Some(encoded),
                },
                other => other,
            }
        };
        let mut draft = Draft {
            id: Some(self.id.unwrap_or_else(new_id)),
            source: encode(self.source),
            specversion: Some(SPEC_VERSION.to_owned()),
            to: encode(match self.to {
                None if self.keep_null_to => None,
                to => to.or_else(|| self.r#type.clone()),
            }),
            r#type: self.r#type,
            subject: if subject_is_uri { self.subject } else { encode(self.subject) },
            datacontenttype: Some(self.datacontenttype.unwrap_or_else(|| ARVO_CONTENT_TYPE.to_owned())),
            dataschema: encode(self.dataschema),
            data: None,
            time: Some(self.time.unwrap_or_else(time::now_utc)),
            accesscontrol: self.accesscontrol,
            redirectto: encode(self.redirectto),
            executionunits: self.executionunits,
            traceparent: self.traceparent,
            tracestate: self.tracestate,
            parentid: encode(self.parentid),
            domain: self.domain,
            uris_encoded: encode_uris,
            subject_is_uri,
            ..Draft::default()
        };
        match self.data {
            Some(Ok(map)) => draft.data = Some(map),
            Some(Err(kind)) => {
                draft.errors.push(FieldError::new("data", format!("must be a JSON object, got {kind}"), None))
            }
            None => {}
        }
        for (key, value) in self.extensions {
            if super::validate::is_attribute_name(&key) {
                draft.errors.push(FieldError::new(
                    format!("extensions.{key}"),
                    "is the name of a CloudEvents/Arvo attribute; set the attribute with its own method",
                    Some(&key),
                ));
            } else {
                draft.set(&key, value.to_json());
            }
        }
        let event = draft.finish()?;
        Ok(match self.parsed_subject {
            Some(subject) => event.with_parsed_subject(subject),
            None => event,
        })
    }
}

/// A new event id: a uuid v4, hyphenated, lower case (as `Uuid::to_string`, without the
/// formatting machinery).
pub(crate) fn new_id() -> String {
    uuid::Uuid::new_v4().hyphenated().encode_lower(&mut uuid::Uuid::encode_buffer()).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn base() -> EventBuilder {
        Event::builder()
            .source("com.test.client")
            .r#type("com.test.event")
            .subject("s")
            .data_json(json!({"a": 1}))
    }

    #[test]
    fn defaults_match_arvo() {
        let e = base().build().unwrap();
        assert_eq!(e.to(), Some("com.test.event"), "to defaults to type");
        assert_eq!(e.datacontenttype(), ARVO_CONTENT_TYPE);
        assert_eq!(e.specversion(), "1.0");
        assert!(uuid::Uuid::parse_str(e.id()).is_ok());
        assert!(time::is_valid_timestamp(e.time()));
    }

    #[test]
    fn reports_all_missing_fields() {
        let err = Event::builder().build().unwrap_err();
        let fields: Vec<_> = err.field_errors().iter().map(|e| e.field.to_string()).collect();
        for f in ["source", "type", "subject", "data"] {
            assert!(fields.contains(&f.to_owned()), "{f} missing from {fields:?}");
        }
    }

    #[test]
    fn encodes_uris_once_when_asked() {
        let e = base().subject("a b").source("x%20y").encode_uris(true).build().unwrap();
        assert_eq!(e.subject(), "a%20b");
        assert_eq!(e.source(), "x%20y");
        let err = base().subject("a b").build().unwrap_err();
        assert_eq!(err.field_errors()[0].field, "subject");
    }

    #[test]
    fn encoded_uri_fields_are_still_checked_for_emptiness() {
        let err = base().source("").encode_uris(true).build().unwrap_err();
        assert_eq!(err.field_errors()[0].field, "source");
        assert_eq!(err.field_errors()[0].rule, "must be a non-empty string");
    }

    #[test]
    fn a_parsed_subject_is_checked_unless_it_is_plain_base64() {
        use crate::subject::Subject;
        let made = Subject::builder("arvo.orc.test", "1.0.0", "com.test.client").build().unwrap();
        let e = base().orchestration_subject(&made).build().unwrap();
        assert_eq!(e.subject(), made.as_str());
        // Parsing trims the string but keeps it as received: with its spaces, it is no URI.
        let spaced = Subject::parse(&format!(" {} ", made.as_str())).unwrap();
        let err = base().orchestration_subject(&spaced).build().unwrap_err();
        assert_eq!(err.field_errors()[0].field, "subject");
        let e = base().orchestration_subject(&spaced).encode_uris(true).build().unwrap();
        assert_eq!(e.subject(), format!("%20{}%20", made.as_str()));
    }

    #[test]
    fn encode_uris_encodes_parentid_like_the_other_uri_fields() {
        // arvo-core's createArvoEvent runs encodeURI on parentid as on source, subject, to,
        // redirectto and dataschema.
        let e = base().parentid("req 1").redirectto("x y").encode_uris(true).build().unwrap();
        assert_eq!(e.redirectto(), Some("x%20y"));
        assert_eq!(e.parentid(), Some("req%201"));
        let e = base().parentid("req%201").encode_uris(true).build().unwrap();
        assert_eq!(e.parentid(), Some("req%201"), "encoded at most once");
        let e = base().parentid("req 1").build().unwrap();
        assert_eq!(e.parentid(), Some("req 1"), "not encoded unless asked");
    }

    #[test]
    fn to_builder_build_is_a_copy_even_with_a_null_to() {
        // `to` may be null when the content type is not Arvo's; the copy keeps it null instead
        // of defaulting it to the type.
        let mut json = base().datacontenttype("application/json").build().unwrap().to_json_value();
        json["to"] = Value::Null;
        let e = Event::from_json_value(json).unwrap();
        assert_eq!(e.to(), None);
        let copy = e.to_builder().build().unwrap();
        assert_eq!(copy, e);
        assert_eq!(copy.to(), None);
        // An explicit `to` on the copy is still honoured.
        assert_eq!(e.to_builder().to("com.test.target").build().unwrap().to(), Some("com.test.target"));
    }

    #[test]
    fn rejects_non_object_data() {
        let err = base().data_json(json!([1, 2])).build().unwrap_err();
        assert!(err.to_string().contains("`data` must be a JSON object, got an array"), "{err}");
    }
}
