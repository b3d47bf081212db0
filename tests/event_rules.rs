//! Every event rule of Arvo's event schema (reference section 3.1), each with a passing and a
//! failing case, through the builder (`Event::builder()…build()`, where it exposes the field) and
//! the parser (`Event::from_slice`); errors must name the field and show the offending value.
//!
//! Also: all broken rules reported at once, builder defaults (uuid v4 id, real UTC time, `to` =
//! type, Arvo content type), encoding URIs once, custom extensions kept in order, Arvo's key
//! order, data encoded once, the size limit, non-object input, wrong JSON types, and the cached
//! orchestration subject.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{SystemTime, UNIX_EPOCH};

use orchestrator::event::{
    ARVO_CONTENT_TYPE, DEFAULT_MAX_EVENT_BYTES, EventBuilder, EventError, ExtensionValue, ParseOptions,
};
use orchestrator::prelude::*;
use serde_json::{Map, Number, Value, json};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

const TIME: &str = "2024-06-01T12:30:45.123+05:30";

/// A valid event with every attribute present, as a JSON object.
fn base() -> Map<String, Value> {
    let Value::Object(map) = json!({
        "id": "evt-base-0001",
        "source": "com.test.service",
        "specversion": "1.0",
        "type": "com.test.event",
        "subject": "subject-base",
        "datacontenttype": ARVO_CONTENT_TYPE,
        "dataschema": null,
        "data": {"ok": true},
        "time": TIME,
        "to": "com.receiver.service",
        "accesscontrol": null,
        "redirectto": null,
        "executionunits": null,
        "traceparent": null,
        "tracestate": null,
        "parentid": null,
        "domain": null
    }) else {
        unreachable!()
    };
    map
}

fn parse(map: &Map<String, Value>) -> Result<Event, EventError> {
    Event::from_slice(&serde_json::to_vec(map).unwrap())
}

/// The base event with `key` set to `value`, parsed from bytes.
fn parse_with(key: &str, value: Value) -> Result<Event, EventError> {
    let mut map = base();
    map.insert(key.to_owned(), value);
    parse(&map)
}

/// The base event without `key`, parsed from bytes.
fn parse_without(key: &str) -> Result<Event, EventError> {
    let mut map = base();
    map.remove(key);
    parse(&map)
}

/// A builder with every required field set.
fn builder() -> EventBuilder {
    Event::builder()
        .source("com.test.service")
        .r#type("com.test.event")
        .subject("subject-base")
        .data_json(json!({"ok": true}))
}

#[track_caller]
fn accepted(what: &str, result: Result<Event, EventError>) -> Event {
    result.unwrap_or_else(|e| panic!("{what}: expected acceptance, got: {e}"))
}

/// Asserts the only broken rule concerns `field`, and that the message names the field and shows
/// `offending` (rendered as JSON) when given.
#[track_caller]
fn rejected(
    what: &str,
    result: Result<Event, EventError>,
    field: &str,
    offending: Option<&Value>,
) -> EventError {
    let err = match result {
        Ok(e) => panic!("{what}: expected rejection of `{field}`, got {}", e.to_json_string()),
        Err(e) => e,
    };
    let fields: Vec<&str> = err.field_errors().iter().map(|e| e.field.as_ref()).collect();
    assert!(!fields.is_empty(), "{what}: not a rule violation: {err}");
    assert!(fields.iter().all(|f| *f == field), "{what}: expected only `{field}`, got {fields:?}: {err}");
    let message = err.to_string();
    assert!(message.contains(&format!("`{field}`")), "{what}: message does not name `{field}`: {message}");
    if let Some(value) = offending {
        let rendered = value.to_string();
        assert!(
            message.contains(&rendered),
            "{what}: message lacks the offending value {rendered}: {message}"
        );
    }
    err
}

fn s(v: &str) -> Value {
    Value::String(v.to_owned())
}

/// Sets one attribute on a builder.
type Setter<'a> = &'a dyn Fn(EventBuilder, &str) -> EventBuilder;

/// Checks a string rule through both ways in: the parser (`key` = each value) and, when given,
/// the builder setter.
fn check_string_rule(field: &str, valid: &[&str], invalid: &[&str], set: Option<Setter<'_>>) {
    for v in valid {
        let e = accepted(&format!("parse {field}={v:?}"), parse_with(field, s(v)));
        assert_eq!(e.to_json_value()[field], s(v), "{field} kept as given");
        if let Some(set) = set {
            let e = accepted(&format!("build {field}={v:?}"), set(builder(), v).build());
            assert_eq!(e.to_json_value()[field], s(v), "{field} kept as given");
        }
    }
    for v in invalid {
        rejected(&format!("parse {field}={v:?}"), parse_with(field, s(v)), field, Some(&s(v)));
        if let Some(set) = set {
            rejected(&format!("build {field}={v:?}"), set(builder(), v).build(), field, Some(&s(v)));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// One test per rule
// ---------------------------------------------------------------------------------------------

#[test]
fn base_event_is_valid_both_ways() {
    let parsed = accepted("base", parse(&base()));
    let built = accepted(
        "base",
        builder()
            .id("evt-base-0001")
            .time(TIME)
            .to("com.receiver.service")
            .data_json(json!({"ok": true}))
            .build(),
    );
    assert_eq!(parsed, built);
    assert_eq!(Value::Object(base()), parsed.to_json_value());
}

#[test]
fn id_must_be_non_empty() {
    check_string_rule(
        "id",
        &["evt-1", "x", "00000000-0000-4000-8000-000000000001"],
        &[""],
        Some(&|b, v| b.id(v)),
    );
    rejected("missing id", parse_without("id"), "id", None);
    rejected("null id", parse_with("id", Value::Null), "id", None);
}

#[test]
fn time_must_be_rfc3339_with_offset() {
    let valid = [
        "2024-06-01T12:30:45.123+05:30",
        "2024-06-01T07:00:45Z",
        "2024-06-01T12:30:45+0530",  // offset without colon (zod 3.25 accepts it)
        "2024-06-01T12:30+05:30",    // no seconds
        "2024-02-29T23:59:59-08:00", // leap day
        "2000-02-29T00:00:00Z",      // divisible by 400: leap
        "2024-06-01T12:30:45.123456789-08:00",
        "2024-12-31T23:59:59.999Z",
    ];
    let invalid = [
        "2024-06-01T12:30:45",        // no offset
        "2024-02-30T12:30:45Z",       // Feb 30
        "2023-02-29T12:30:45Z",       // not a leap year
        "1900-02-29T12:30:45Z",       // divisible by 100, not 400
        "2024-06-01T24:00:00Z",       // hour 24
        "2024-06-01T12:60:00Z",       // minute 60
        "2024-06-01T12:30:60Z",       // second 60
        "2024-13-01T12:30:45Z",       // month 13
        "2024-06-00T12:30:45Z",       // day 0
        "2024-06-01T12:30:45+05",     // hour-only offset
        "2024-06-01 12:30:45+00:00",  // space separator
        "2024-06-01t12:30:45z",       // lowercase
        "2024-06-01T12:30:45.+00:00", // empty fraction
        "not-a-time",
        "",
    ];
    check_string_rule("time", &valid, &invalid, Some(&|b, v| b.time(v)));
    rejected("missing time", parse_without("time"), "time", None);
}

#[test]
fn source_must_be_a_non_empty_valid_uri() {
    check_string_rule(
        "source",
        &["com.test.service", "com.test%20svc", "https://example.com/a?b=c#d"],
        &["", "com.test svc", "com.test%svc", "café", "%2F"],
        Some(&|b, v| b.source(v)),
    );
    rejected("missing source", parse_without("source"), "source", None);
    rejected(
        "builder without source",
        Event::builder().r#type("a.b.c").subject("s").data_json(json!({})).build(),
        "source",
        None,
    );
}

#[test]
fn specversion_must_be_exactly_1_0() {
    // The builder always writes 1.0: only the parser can receive another value.
    assert_eq!(accepted("default", builder().build()).specversion(), "1.0");
    check_string_rule("specversion", &["1.0"], &["0.3", "", "1.0 ", "1", "1.0.0"], None);
    rejected("missing specversion", parse_without("specversion"), "specversion", None);
}

#[test]
fn type_must_be_reverse_dns_with_three_segments() {
    check_string_rule(
        "type",
        &["com.test.event", "a.b.c", "evt.calc.add.success", "arvo.orc.calc.average", "1.2.3"],
        &[
            "com.test",
            "com",
            "com.test-x.event",
            "com.test_x.event",
            "com.Test.event",
            "com..test.event",
            ".a.b.c",
            "a.b.c.",
            "com.a b.c",
            "",
        ],
        // An explicit `to`: the default (`to` = type) would break the `to` rule as well.
        Some(&|b, v| b.to("com.receiver.service").r#type(v)),
    );
    rejected("missing type", parse_without("type"), "type", None);
}

#[test]
fn subject_must_be_a_non_empty_valid_uri() {
    let orchestration =
        Subject::builder("arvo.orc.calc.average", "1.0.0", "com.test.client").build().unwrap();
    check_string_rule(
        "subject",
        &["subject-base", "a%20b", orchestration.as_str()],
        &["", "100%", "café", "a b"],
        Some(&|b, v| b.subject(v)),
    );
    rejected("missing subject", parse_without("subject"), "subject", None);
}

#[test]
fn datacontenttype_must_be_json_and_defaults_to_arvo() {
    check_string_rule(
        "datacontenttype",
        &[
            "application/json",
            "application/cloudevents+json",
            "application/json; charset=utf-8",
            ARVO_CONTENT_TYPE,
        ],
        &["text/plain", "", "application/xml"],
        Some(&|b, v| b.datacontenttype(v)),
    );
    // Absent (or null): the Arvo content type, on both ways in. Divergence: arvo-core's zod schema
    // applies the default only to an absent key and rejects an explicit null; we read null as
    // absent, as for every optional attribute (CloudEvents omit unset attributes).
    assert_eq!(accepted("absent", parse_without("datacontenttype")).datacontenttype(), ARVO_CONTENT_TYPE);
    assert_eq!(
        accepted("null", parse_with("datacontenttype", Value::Null)).datacontenttype(),
        ARVO_CONTENT_TYPE
    );
    assert_eq!(accepted("default", builder().build()).datacontenttype(), ARVO_CONTENT_TYPE);
}

#[test]
fn dataschema_must_be_a_valid_uri_or_null() {
    check_string_rule(
        "dataschema",
        &["#/test/schema/1.0.0", "#/test%20schema/1.0.0", "https://example.com/schemas/order/2.1.0"],
        &["#/test schema/1.0.0", "", "100%"],
        Some(&|b, v| b.dataschema(v)),
    );
    assert_eq!(accepted("null", parse_with("dataschema", Value::Null)).dataschema(), None);
    assert_eq!(accepted("absent", parse_without("dataschema")).dataschema(), None);
    assert_eq!(accepted("unset", builder().build()).dataschema(), None);
}

#[test]
fn data_must_be_a_json_object() {
    for valid in [json!({}), json!({"a": {"b": [1, null, "x", {"c": false}]}}), json!({"a": null})] {
        let e = accepted("parse data", parse_with("data", valid.clone()));
        assert_eq!(Value::Object(e.data().clone()), valid);
        let e = accepted("build data", builder().data_json(valid.clone()).build());
        assert_eq!(Value::Object(e.data().clone()), valid);
    }
    for (invalid, kind) in [
        (json!([1, 2, 3]), "an array"),
        (Value::Null, "null"),
        (json!("text"), "a string"),
        (json!(1), "a number"),
        (json!(true), "a boolean"),
    ] {
        let err = rejected("parse data", parse_with("data", invalid.clone()), "data", None);
        assert!(err.to_string().contains(&format!("must be a JSON object, got {kind}")), "{err}");
        let err = rejected("build data", builder().data_json(invalid).build(), "data", None);
        assert!(err.to_string().contains(&format!("must be a JSON object, got {kind}")), "{err}");
    }
    rejected("missing data", parse_without("data"), "data", None);
    rejected(
        "builder without data",
        Event::builder().source("com.a.b").r#type("a.b.c").subject("s").build(),
        "data",
        None,
    );
}

#[test]
fn to_must_be_a_valid_uri_and_is_required_with_the_arvo_content_type() {
    check_string_rule(
        "to",
        &["com.receiver.service", "com.receiver%20service"],
        &["com.receiver service", "", "100%"],
        Some(&|b, v| b.to(v)),
    );
    // With the Arvo content type, `to` is required on parse (null or absent).
    let err = rejected("null to", parse_with("to", Value::Null), "to", None);
    assert!(err.to_string().contains("required"), "{err}");
    rejected("missing to", parse_without("to"), "to", None);
    // With another JSON content type it may be null.
    let mut map = base();
    map.insert("datacontenttype".into(), s("application/json"));
    map.insert("to".into(), Value::Null);
    assert_eq!(accepted("application/json without to", parse(&map)).to(), None);
    // The builder defaults `to` to the type.
    assert_eq!(accepted("default", builder().build()).to(), Some("com.test.event"));
}

#[test]
fn accesscontrol_must_be_non_empty_or_null() {
    // Free-form: not a URI, any non-empty text.
    check_string_rule(
        "accesscontrol",
        &["role:admin;team:core", "user-1", "an encrypted blob with spaces"],
        &[""],
        Some(&|b, v| b.accesscontrol(v)),
    );
    assert_eq!(accepted("null", parse_with("accesscontrol", Value::Null)).accesscontrol(), None);
}

#[test]
fn redirectto_must_be_a_valid_uri_or_null() {
    check_string_rule(
        "redirectto",
        &["com.redirect.service", "com.redirect%20service"],
        &["com.redirect%zz", "", "com.redirect service"],
        Some(&|b, v| b.redirectto(v)),
    );
    assert_eq!(accepted("null", parse_with("redirectto", Value::Null)).redirectto(), None);
}

#[test]
fn executionunits_must_be_a_number_or_null() {
    for valid in [
        json!(0),
        json!(-5),
        json!(12.5),
        json!(1e-7),
        json!(1e300),
        json!(u64::MAX),
        json!(-9007199254740991_i64),
    ] {
        let e = accepted("parse executionunits", parse_with("executionunits", valid.clone()));
        assert_eq!(
            e.executionunits_number().map(|n| Value::Number(n.clone())),
            Some(valid.clone()),
            "kept exactly"
        );
        assert_eq!(e.executionunits(), valid.as_f64());
    }
    assert_eq!(accepted("null", parse_with("executionunits", Value::Null)).executionunits(), None);
    for invalid in [json!("10"), json!(true), json!([1]), json!({"n": 1})] {
        rejected(
            "parse executionunits",
            parse_with("executionunits", invalid.clone()),
            "executionunits",
            Some(&invalid),
        );
    }
    // The builder takes numbers only; non-finite floats cannot be JSON and clear the field.
    assert_eq!(accepted("int", builder().executionunits(3).build()).executionunits(), Some(3.0));
    assert_eq!(accepted("float", builder().executionunits_f64(0.5).build()).executionunits(), Some(0.5));
    assert_eq!(accepted("nan", builder().executionunits_f64(f64::NAN).build()).executionunits(), None);
    assert_eq!(accepted("inf", builder().executionunits_f64(f64::INFINITY).build()).executionunits(), None);
}

#[test]
fn parentid_must_be_non_empty_or_null() {
    check_string_rule("parentid", &["evt-parent-0001", "any id"], &[""], Some(&|b, v| b.parentid(v)));
    assert_eq!(accepted("null", parse_with("parentid", Value::Null)).parentid(), None);
    assert_eq!(accepted("absent", parse_without("parentid")).parentid(), None);
}

#[test]
fn domain_must_match_the_domain_rule_or_be_null() {
    check_string_rule(
        "domain",
        &["external.review", "calc", "a.b.c1", "human.interaction"],
        &["", "Ext.Review!", "external review", "a_b", "A", "dom-ain"],
        Some(&|b, v| b.domain(v)),
    );
    assert_eq!(accepted("null", parse_with("domain", Value::Null)).domain(), None);
    assert_eq!(accepted("absent", parse_without("domain")).domain(), None);
}

#[test]
fn trace_context_must_be_non_empty_or_null() {
    check_string_rule(
        "traceparent",
        &["00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"],
        &[""],
        Some(&|b, v| b.traceparent(v)),
    );
    check_string_rule(
        "tracestate",
        &["rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"],
        &[""],
        Some(&|b, v| b.tracestate(v)),
    );
    assert_eq!(accepted("null", parse_with("traceparent", Value::Null)).traceparent(), None);
    assert_eq!(accepted("null", parse_with("tracestate", Value::Null)).tracestate(), None);
}

#[test]
fn extension_keys_must_be_lowercase_alphanumeric() {
    for key in ["myext1", "a", "123", "strext"] {
        let e = accepted(key, parse_with(key, s("v")));
        assert_eq!(e.extensions()[key], ExtensionValue::String("v".into()));
        let e = accepted(key, builder().extension(key, "v").build());
        assert_eq!(e.extensions()[key], ExtensionValue::String("v".into()));
    }
    for key in ["badKey", "bad-key", "bad_key", "bad key", "é", ""] {
        let field = format!("extensions.{key}");
        rejected(key, parse_with(key, s("v")), &field, Some(&s(key)));
        rejected(key, builder().extension(key, "v").build(), &field, Some(&s(key)));
    }
}

#[test]
fn extension_values_must_be_scalars() {
    for (key, value) in [
        ("strext", s("hello")),
        ("emptyext", s("")),
        ("boolext", json!(false)),
        ("intext", json!(7)),
        ("numext", json!(42.5)),
        ("nullext", Value::Null),
    ] {
        let e = accepted(key, parse_with(key, value.clone()));
        assert_eq!(e.extensions()[key].to_json(), value, "{key}");
    }
    for (key, value) in [("objext", json!({"a": 1})), ("arrext", json!([1]))] {
        let field = format!("extensions.{key}");
        let err = rejected(key, parse_with(key, value), &field, None);
        assert!(err.to_string().contains("string, boolean, number or null"), "{err}");
    }
}

#[test]
fn attributes_of_the_wrong_json_type_are_named() {
    for field in [
        "id",
        "source",
        "specversion",
        "type",
        "subject",
        "datacontenttype",
        "dataschema",
        "time",
        "to",
        "accesscontrol",
        "redirectto",
        "traceparent",
        "tracestate",
        "parentid",
        "domain",
    ] {
        for wrong in [json!(42), json!(true), json!(["x"]), json!({"x": 1})] {
            let err = rejected(field, parse_with(field, wrong.clone()), field, Some(&wrong));
            assert!(err.to_string().contains("must be a string or null"), "{err}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Cross-cutting behaviour
// ---------------------------------------------------------------------------------------------

#[test]
fn every_broken_rule_is_reported_at_once() {
    let mut map = base();
    map.insert("id".into(), s(""));
    map.insert("type".into(), s("com.app"));
    map.insert("time".into(), s("yesterday"));
    map.insert("source".into(), s("com app"));
    map.insert("domain".into(), s("Bad Domain"));
    let err = parse(&map).unwrap_err();
    let mut fields: Vec<&str> = err.field_errors().iter().map(|e| e.field.as_ref()).collect();
    fields.sort_unstable();
    assert_eq!(fields, ["domain", "id", "source", "time", "type"], "{err}");
    let message = err.to_string();
    assert!(message.contains("5 rule(s)"), "{message}");
    for value in ["\"com.app\"", "\"yesterday\"", "\"com app\"", "\"Bad Domain\""] {
        assert!(message.contains(value), "{message} lacks {value}");
    }

    // The builder reports them all as well.
    let err = Event::builder()
        .id("")
        .source("com app")
        .r#type("com.app")
        .time("yesterday")
        .domain("Bad Domain")
        .subject("s")
        .data_json(json!({}))
        .build()
        .unwrap_err();
    assert_eq!(err.field_errors().len(), 5, "{err}");

    // And every missing required field.
    let err = Event::builder().build().unwrap_err();
    let fields: Vec<&str> = err.field_errors().iter().map(|e| e.field.as_ref()).collect();
    for f in ["source", "type", "subject", "data"] {
        assert!(fields.contains(&f), "{f} missing from {fields:?}");
    }
    let err = Event::from_slice(b"{}").unwrap_err();
    let fields: Vec<&str> = err.field_errors().iter().map(|e| e.field.as_ref()).collect();
    for f in ["id", "source", "specversion", "type", "subject", "time", "data", "to"] {
        assert!(fields.contains(&f), "{f} missing from {fields:?}");
    }
}

fn millis_since_epoch(rfc3339: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(rfc3339)
        .unwrap_or_else(|e| panic!("{rfc3339}: {e}"))
        .timestamp_millis()
}

fn now_millis() -> i64 {
    i64::try_from(SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis()).unwrap()
}

#[test]
fn builder_defaults_match_arvo_with_a_correct_utc_time() {
    let before = now_millis();
    let a = builder().build().unwrap();
    let b = builder().build().unwrap();
    let after = now_millis();

    let id = uuid::Uuid::parse_str(a.id()).unwrap();
    assert_eq!(id.get_version_num(), 4, "uuid v4");
    assert_eq!(a.id().len(), 36, "hyphenated form");
    assert_ne!(a.id(), b.id(), "fresh ids");

    // Correct UTC (arvo-core labels local time as +00:00; we must not).
    assert!(a.time().ends_with("+00:00"), "{}", a.time());
    let t = millis_since_epoch(a.time());
    assert!(t >= before - 1 && t <= after + 1, "time {} not within [{before}, {after}]", a.time());
    assert!((t - now_millis()).abs() < 5_000);

    assert_eq!(a.to(), Some("com.test.event"), "`to` defaults to the type");
    assert_eq!(a.datacontenttype(), ARVO_CONTENT_TYPE);
    assert_eq!(a.specversion(), "1.0");
    for unset in [
        a.dataschema(),
        a.accesscontrol(),
        a.redirectto(),
        a.traceparent(),
        a.tracestate(),
        a.parentid(),
        a.domain(),
    ] {
        assert_eq!(unset, None);
    }
    assert_eq!(a.executionunits(), None);
    assert!(a.extensions().is_empty());

    // An explicit `to` wins over the default; `to_opt(None)` restores it.
    assert_eq!(builder().to("com.x.y").build().unwrap().to(), Some("com.x.y"));
    assert_eq!(builder().to("com.x.y").to_opt(None::<String>).build().unwrap().to(), Some("com.test.event"));
}

#[test]
fn encode_uris_encodes_once() {
    let e = builder()
        .source("a b")
        .subject("a%20b")
        .to("com.to service")
        .redirectto("100%")
        .dataschema("#/test schema/é/1.0.0")
        .encode_uris(true)
        .build()
        .unwrap();
    assert_eq!(e.source(), "a%20b");
    assert_eq!(e.subject(), "a%20b", "already encoded: not encoded again (arvo-core would give a%2520b)");
    assert_eq!(e.to(), Some("com.to%20service"));
    assert_eq!(e.redirectto(), Some("100%25"));
    assert_eq!(e.dataschema(), Some("#/test%20schema/%C3%A9/1.0.0"));
    // Idempotent: encoding the encoded event again changes nothing.
    let again = e.to_builder().encode_uris(true).build().unwrap();
    assert_eq!(again, e);
    // The URI-valued attributes and parentid are encoded (as arvo-core's createArvoEvent does),
    // nothing else.
    let e = builder().accesscontrol("a b").parentid("p q").encode_uris(true).build().unwrap();
    assert_eq!(e.accesscontrol(), Some("a b"));
    assert_eq!(e.parentid(), Some("p%20q"));
    // Without it, unencoded values are rejected, not silently encoded.
    rejected("no encoding", builder().source("a b").build(), "source", Some(&s("a b")));
}

#[test]
fn custom_extensions_keep_their_order_and_values() {
    let e = builder()
        .extension("zeta", "last-letter")
        .extension("alpha", true)
        .extension("mid", 7)
        .extension("nul", ExtensionValue::Null)
        .extension("flt", ExtensionValue::Number(Number::from_f64(42.5).unwrap()))
        .build()
        .unwrap();
    let order: Vec<&str> = e.extensions().keys().map(String::as_str).collect();
    assert_eq!(order, ["zeta", "alpha", "mid", "nul", "flt"]);
    let back = Event::from_slice(&e.to_json_vec()).unwrap();
    assert_eq!(back, e);
    let back_order: Vec<&str> = back.extensions().keys().map(String::as_str).collect();
    assert_eq!(back_order, order);
    assert_eq!(back.extensions()["flt"].to_json(), json!(42.5));
    assert_eq!(back.extensions()["alpha"], ExtensionValue::Bool(true));

    // Extensions interleaved with attributes (arvo-core 2.2.13 writes them after `time`) keep
    // their relative order and move after `domain`.
    let text = r#"{"id":"x","source":"com.a.b","specversion":"1.0","type":"com.a.b","subject":"s","b2":1,
        "datacontenttype":"application/json","a1":"one","data":{},"time":"2024-01-01T00:00:00Z","c3":null}"#;
    let e = Event::from_slice(text.as_bytes()).unwrap();
    let order: Vec<&str> = e.extensions().keys().map(String::as_str).collect();
    assert_eq!(order, ["b2", "a1", "c3"]);
    let json: Map<String, Value> = serde_json::from_str(&e.to_json_string()).unwrap();
    let keys: Vec<&str> = json.keys().map(String::as_str).collect();
    assert_eq!(&keys[17..], ["b2", "a1", "c3"]);
}

#[test]
fn serialized_keys_follow_arvo_order() {
    let expected = [
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
        "myext",
        "another",
    ];
    let full = builder()
        .extension("myext", "x")
        .extension("another", 1)
        .dataschema("#/a/1.0.0")
        .accesscontrol("user")
        .redirectto("com.r.s")
        .executionunits(2)
        .traceparent("tp")
        .tracestate("ts")
        .parentid("p")
        .domain("d")
        .build()
        .unwrap();
    let text = full.to_json_string();
    let map: Map<String, Value> = serde_json::from_str(&text).unwrap();
    assert_eq!(map.keys().map(String::as_str).collect::<Vec<_>>(), expected);
    assert!(text.starts_with("{\"id\":"), "{text}");

    // Unset attributes are written as null, never left out (arvo-core's constructor requires
    // every nullable key).
    let minimal = builder().build().unwrap();
    let map: Map<String, Value> = serde_json::from_slice(&minimal.to_json_vec()).unwrap();
    assert_eq!(map.keys().map(String::as_str).collect::<Vec<_>>(), expected[..17]);
    for key in [
        "dataschema",
        "accesscontrol",
        "redirectto",
        "executionunits",
        "traceparent",
        "tracestate",
        "parentid",
        "domain",
    ] {
        assert_eq!(map[key], Value::Null, "{key}");
    }
    // The three serializations agree.
    assert_eq!(serde_json::to_string(&full).unwrap(), text);
    assert_eq!(serde_json::to_value(&full).unwrap(), full.to_json_value());
    assert_eq!(full.to_json_vec(), text.as_bytes());
}

#[test]
fn data_values_are_encoded_once() {
    let data = json!({
        "payload": "{\"a\":1}",
        "quoted": "\"quoted\" and \\ backslash",
        "nested": {"text": "[1,2]", "n": 1.5},
        "unicode": "héllo 🎉 \u{2028}"
    });
    let e = builder().data_json(data.clone()).build().unwrap();
    let text = e.to_json_string();
    assert!(text.contains(r#""payload":"{\"a\":1}""#), "escaped exactly once: {text}");
    assert!(!text.contains(r#"\\\""#), "no double escaping: {text}");
    assert!(text.contains(r#""data":{"payload""#), "data is an object, not a string: {text}");
    let back = Event::from_slice(text.as_bytes()).unwrap();
    assert_eq!(Value::Object(back.data().clone()), data);
    assert_eq!(back.data()["payload"], "{\"a\":1}");
    // serialize → parse → serialize is a fixed point.
    assert_eq!(back.to_json_string(), text);
    assert_eq!(Event::from_slice(back.to_json_string().as_bytes()).unwrap().to_json_string(), text);
    assert_eq!(back.to_json_value()["data"], data);
}

#[test]
fn parse_options_limit_the_size() {
    let bytes = builder().build().unwrap().to_json_vec();
    let len = bytes.len();
    let err = ParseOptions::default().max_bytes(len - 1).parse(&bytes).unwrap_err();
    match &err {
        EventError::TooLarge { size, max } => assert_eq!((*size, *max), (len, len - 1)),
        other => panic!("expected TooLarge, got {other}"),
    }
    let message = err.to_string();
    assert!(message.contains(&len.to_string()) && message.contains(&(len - 1).to_string()), "{message}");
    assert!(ParseOptions::default().max_bytes(len).parse(&bytes).is_ok(), "the limit is inclusive");
    assert_eq!(ParseOptions::default().max_bytes(10).max(), 10);

    // The default limit is 1 MiB, applied by `from_slice`.
    assert_eq!(ParseOptions::default().max(), DEFAULT_MAX_EVENT_BYTES);
    assert_eq!(DEFAULT_MAX_EVENT_BYTES, 1024 * 1024);
    let big = builder().data_json(json!({"blob": "x".repeat(DEFAULT_MAX_EVENT_BYTES)})).build().unwrap();
    let big_bytes = big.to_json_vec();
    assert!(matches!(
        Event::from_slice(&big_bytes),
        Err(EventError::TooLarge { max: DEFAULT_MAX_EVENT_BYTES, .. })
    ));
    assert_eq!(ParseOptions::default().max_bytes(usize::MAX).parse(&big_bytes).unwrap(), big);
}

#[test]
fn non_object_input_is_not_an_object() {
    for (text, kind) in [
        ("[]", "an array"),
        ("[1,{}]", "an array"),
        ("\"x\"", "a string"),
        ("1", "a number"),
        ("-1.5", "a number"),
        ("null", "null"),
        ("true", "a boolean"),
    ] {
        match Event::from_slice(text.as_bytes()) {
            Err(EventError::NotAnObject { found }) => assert_eq!(found, kind, "{text}"),
            other => panic!("{text}: expected NotAnObject, got {other:?}"),
        }
        let value: Value = serde_json::from_str(text).unwrap();
        match Event::from_json_value(value) {
            Err(EventError::NotAnObject { found }) => assert_eq!(found, kind, "{text}"),
            other => panic!("{text}: expected NotAnObject, got {other:?}"),
        }
    }
    for garbage in ["", "{", "{\"id\":}", "not json", "{\"a\":1}}"] {
        assert!(matches!(Event::from_slice(garbage.as_bytes()), Err(EventError::Json(_))), "{garbage:?}");
    }
    // Not being a rule violation, these carry no field errors.
    assert!(Event::from_slice(b"[]").unwrap_err().field_errors().is_empty());
}

#[test]
fn serde_deserialize_validates_too() {
    let text = serde_json::to_string(&base()).unwrap();
    let e: Event = serde_json::from_str(&text).unwrap();
    assert_eq!(e, parse(&base()).unwrap());
    let mut bad = base();
    bad.insert("type".into(), s("com.app"));
    let err = serde_json::from_str::<Event>(&serde_json::to_string(&bad).unwrap()).unwrap_err();
    assert!(err.to_string().contains("`type`") && err.to_string().contains("com.app"), "{err}");
    let err = serde_json::from_str::<Event>("[1]").unwrap_err();
    assert!(err.to_string().contains("must be a JSON object"), "{err}");
}

#[test]
fn orchestration_subject_is_parsed_once_and_shared() {
    let subject =
        Subject::builder("arvo.orc.calc.average", "1.0.0", "com.test.client").meta("k", "v").build().unwrap();
    // Given as a string: parsed on first use, then the same value is returned.
    let e = builder().subject(subject.as_str()).build().unwrap();
    let first = e.orchestration_subject().unwrap();
    let second = e.orchestration_subject().unwrap();
    assert!(std::ptr::eq(first, second), "second call returns the cached subject");
    assert_eq!(first.content(), subject.content());
    // A parsed event caches the same way.
    let parsed = Event::from_slice(&e.to_json_vec()).unwrap();
    assert!(std::ptr::eq(parsed.orchestration_subject().unwrap(), parsed.orchestration_subject().unwrap()));
    // Given as a parsed subject: the event shares it (no second decoding).
    let shared = builder().orchestration_subject(&subject).build().unwrap();
    assert!(std::ptr::eq(shared.orchestration_subject().unwrap().content(), subject.content()));
    // A plain subject is not an orchestration subject, on every call.
    let plain = builder().build().unwrap();
    assert!(plain.orchestration_subject().is_err());
    assert!(plain.orchestration_subject().is_err());
    // Replacing the subject string drops the shared parsed one.
    let replaced = builder().orchestration_subject(&subject).subject("plain").build().unwrap();
    assert!(replaced.orchestration_subject().is_err());
}

/// Divergence from arvo-core 2.2.13's constructor, which requires every nullable key to be present
/// ("Required"): on the wire CloudEvents omit unset optional attributes, so we read an absent key
/// as null. The required attributes stay required.
#[test]
fn absent_optional_attributes_read_as_null() {
    let mut map = base();
    for key in [
        "dataschema",
        "accesscontrol",
        "redirectto",
        "executionunits",
        "traceparent",
        "tracestate",
        "parentid",
        "domain",
    ] {
        map.remove(key);
    }
    let e = accepted("sparse", parse(&map));
    assert_eq!(e, parse(&base()).unwrap());
    assert_eq!(e.to_json_value(), Value::Object(base()), "written back with explicit nulls");
    for key in ["id", "source", "specversion", "type", "subject", "time", "data"] {
        rejected(key, parse_without(key), key, None);
    }
}

#[test]
fn long_offending_values_are_shortened_in_messages() {
    let long = "X".repeat(10_000);
    let err = builder().to("com.receiver.service").r#type(long.clone()).build().unwrap_err();
    let message = err.to_string();
    assert!(message.len() < 1_000, "message of {} bytes", message.len());
    assert!(message.contains("XXXXXXXXXX") && message.contains('…'), "{message}");
    assert_eq!(err.field_errors()[0].field, "type");
}

/// arvo-core never lets a custom extension replace an attribute (its fixture
/// `extension-key-to-overrides-nothing`: the context's `to` wins). Our builder rejects an
/// extension named after an attribute instead of letting it replace the attribute.
#[test]
fn builder_extensions_never_override_attributes() {
    let r = builder().to("com.receiver.service").extension("to", "com.ext.to").build();
    assert!(!matches!(&r, Ok(e) if e.to() == Some("com.ext.to")), "extension `to` replaced the attribute");
    let r = builder().id("evt-1").extension("id", "evt-ext").build();
    assert!(!matches!(&r, Ok(e) if e.id() == "evt-ext"), "extension `id` replaced the attribute");
}

/// JSON with a repeated key: JavaScript's `JSON.parse` (what arvo-core sees) and serde_json's
/// `Value` keep the last occurrence; both of our parsers must agree with them.
#[test]
fn repeated_keys_are_resolved_like_json_parse() {
    let text = br#"{"id":"x","source":"com.a.b","specversion":"1.0","type":"com.a.b.c","subject":"s","data":[],"data":{},"time":"2024-01-01T00:00:00Z","to":"com.a.b"}"#;
    let value: Value = serde_json::from_slice(text).unwrap();
    let from_value = Event::from_json_value(value);
    assert!(from_value.is_ok());
    let from_bytes = Event::from_slice(text);
    assert!(from_bytes.is_ok(), "from_slice: {}", from_bytes.unwrap_err());
    assert_eq!(from_bytes.unwrap(), from_value.unwrap());
}

/// A repeated key whose later value is `null` clears the field, as `JSON.parse` does (last wins):
/// the byte parser and the JSON-value parser agree, so a `redirectto` cannot survive in one and
/// not in the other.
#[test]
fn repeated_key_with_a_later_null_clears_the_field_in_both_parsers() {
    let text = br##"{"id":"x","source":"com.a.b","specversion":"1.0","type":"com.a.b.c","subject":"s","data":{},"time":"2024-01-01T00:00:00Z","to":"com.a.b","redirectto":"com.evil.sink","redirectto":null,"executionunits":3,"executionunits":null,"dataschema":"#/a/1.0.0","dataschema":null,"ext":"v","ext":null}"##;
    let from_value = Event::from_json_value(serde_json::from_slice(text).unwrap()).unwrap();
    let from_bytes = Event::from_slice(text).unwrap();
    assert_eq!(from_value.redirectto(), None);
    assert_eq!(from_bytes.redirectto(), None, "from_slice kept the earlier redirectto");
    assert_eq!(from_bytes.executionunits(), None);
    assert_eq!(from_bytes.dataschema(), None);
    assert_eq!(from_bytes.extensions().get("ext"), Some(&orchestrator::event::ExtensionValue::Null));
    assert_eq!(from_bytes, from_value);
    // A later non-object `data` replaces an earlier object: the event is invalid in both.
    let text = br#"{"id":"x","source":"com.a.b","specversion":"1.0","type":"com.a.b.c","subject":"s","data":{},"data":null,"time":"2024-01-01T00:00:00Z","to":"com.a.b"}"#;
    assert!(Event::from_json_value(serde_json::from_slice(text).unwrap()).is_err());
    assert!(Event::from_slice(text).is_err());
}
