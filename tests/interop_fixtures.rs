//! Wire compatibility with the real arvo-core 2.2.13, checked against the fixtures it generated
//! (`interop/arvo/fixtures/*.json`, written by `interop/arvo/generate.mjs`):
//!
//! - orchestration subjects parse to the same content, and the ones we create from that content
//!   hold arvo-core's JSON byte for byte (3.x shape; the compressed bytes are ours);
//! - every event parses field by field, round-trips losslessly, and the events made by arvo-core's
//!   factories validate against equivalent Rust contracts (and our factories reproduce them);
//! - every event arvo-core rejects is rejected by us, naming the same field; the edge cases it
//!   accepts are decided one by one, with each divergence explained;
//! - `encodeURI` / `decodeURI` / `validateURI`, contract documents (`toJsonSchema()`), contract
//!   error texts, semantic versions and dataschemas agree.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use indexmap::IndexMap;
use orchestrator::contract::{ArvoContract, Emits, VersionBuilder, VersionSelector};
use orchestrator::event::{ARVO_CONTENT_TYPE, EventError};
use orchestrator::factory::FactoryError;
use orchestrator::prelude::*;
use orchestrator::semver::SemVer;
use orchestrator::subject::{SubjectContent, SubjectError, SubjectExecution, SubjectOrchestrator};
use orchestrator::{dataschema, uri};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Fixture loading
// ---------------------------------------------------------------------------------------------

macro_rules! fixture {
    ($file:literal) => {
        load(concat!(env!("CARGO_MANIFEST_DIR"), "/../interop/arvo/fixtures/", $file))
    };
}

/// Reads a fixture. `JSON.stringify` writes a lone UTF-16 surrogate as the escape `\ud800`, which
/// no Rust string can hold (serde_json refuses it), so that one escape is replaced by U+FFFD; the
/// only fixture containing it (`createArvoEvent-lone-surrogate-subject`) is checked separately.
fn load(path: &str) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    serde_json::from_str(&text.replace("\\ud800", "\\ufffd"))
        .unwrap_or_else(|e| panic!("{path} is not JSON: {e}"))
}

fn entries(doc: &Value) -> &Vec<Value> {
    doc.as_array().expect("fixture must be an array")
}

fn name_of(entry: &Value) -> &str {
    entry["name"].as_str().expect("fixture entries have a name")
}

fn find<'a>(doc: &'a Value, name: &str) -> &'a Value {
    entries(doc).iter().find(|e| name_of(e) == name).unwrap_or_else(|| panic!("no fixture named {name}"))
}

/// The attributes of an event that are not custom extensions (3.x names; 2.2.13 lacks the last two).
const EVENT_KEYS: [&str; 17] = [
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

/// JSON equality where numbers compare by value: JavaScript writes the double `3` as `3`, Rust's
/// `f64` serializes as `3.0`; both are the same JSON number.
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

fn str_or_none(v: &Value) -> Option<&str> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s),
        other => panic!("expected a string or null, got {other}"),
    }
}

fn meta_pairs(meta: &Value) -> Vec<(String, String)> {
    meta.as_object()
        .expect("meta is an object")
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().expect("meta values are strings").to_owned()))
        .collect()
}

fn our_meta_pairs(content: &SubjectContent) -> Vec<(String, String)> {
    content.meta.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

// ---------------------------------------------------------------------------------------------
// Contracts equivalent to the ones generate.mjs declares
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
struct AddIn {
    a: f64,
    b: f64,
}

fn default_precision() -> u8 {
    2
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
struct AddInV2 {
    /// First operand
    a: f64,
    /// Second operand
    b: f64,
    #[serde(default = "default_precision")]
    #[schemars(range(min = 0, max = 10))]
    precision: u8,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
struct AddOut {
    sum: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
struct AddOutV2 {
    sum: f64,
    precision: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Overflow {
    limit: f64,
    /// zod's `z.string().nullable()`: required, may be null. (`required` alone would make
    /// schemars drop the `null`, hence the explicit type.)
    #[schemars(required, extend("type" = ["string", "null"]))]
    message: Option<String>,
}

orchestrator::contract! {
    /// Adds two numbers
    contract CalcAdd {
        uri: "#/test/calc/add",
        type: "com.calc.add",
        description: "Adds two numbers",
        metadata: { "owner": "calc-team" },
        versions: {
            CalcAddV1 = "1.0.0" {
                accepts: AddIn,
                emits: { "evt.calc.add.success" => AddOut },
            },
            CalcAddV2 = "2.0.0" {
                accepts: AddInV2,
                emits: { "evt.calc.add.success" => AddOutV2, "evt.calc.add.overflow" => Overflow },
            },
        },
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Lang {
    En,
    Fr,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
struct GreetIn {
    #[schemars(length(min = 1))]
    name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lang: Option<Lang>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
struct GreetOut {
    greeting: String,
}

orchestrator::simple_contract! {
    /// Greets a user
    contract Greet {
        uri: "#/test/simple/greet",
        type: "greet.user",
        description: "Greets a user",
        metadata: { "team": "frontdesk" },
        versions: {
            GreetV1 = "1.0.0" { accepts: GreetIn, emits: GreetOut },
        },
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
struct AvgIn {
    #[schemars(length(min = 1))]
    values: Vec<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
struct AvgOut {
    average: f64,
}

orchestrator::orchestrator_contract! {
    /// Averages a list of numbers
    contract ArvoAverage {
        uri: "#/orc/calc/average",
        name: "calc.average",
        description: "Averages a list of numbers",
        metadata: { "owner": "calc-team" },
        versions: {
            ArvoAverageV1 = "1.0.0" { init: AvgIn, complete: AvgOut },
        },
    }
}

// ---------------------------------------------------------------------------------------------
// subjects.json
// ---------------------------------------------------------------------------------------------

/// The JSON text inside an encoded subject, read with zlib itself rather than our parser.
fn inflated_json(encoded: &str) -> String {
    use base64::Engine as _;
    use std::io::Read as _;
    let compressed = base64::engine::general_purpose::STANDARD.decode(encoded).unwrap();
    let mut json = String::new();
    flate2::read::ZlibDecoder::new(compressed.as_slice()).read_to_string(&mut json).unwrap();
    json
}

#[test]
fn every_arvo_subject_parses_to_the_same_content() {
    let doc = fixture!("subjects.json");
    let mut shapes_3x = 0;
    let mut shapes_2x = 0;
    for entry in entries(&doc) {
        let name = name_of(entry);
        let encoded = entry["subject"].as_str().unwrap();
        let json = entry["json"].as_str().unwrap();
        let expected = &entry["content"];

        let subject = Subject::parse(encoded).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(subject.as_str(), encoded, "{name}: the encoded string is kept as received");
        let content = subject.content();
        assert_eq!(content.orchestrator.name, expected["orchestrator"]["name"].as_str().unwrap(), "{name}");
        assert_eq!(
            content.orchestrator.version,
            expected["orchestrator"]["version"].as_str().unwrap(),
            "{name}"
        );
        assert_eq!(content.execution.id, expected["execution"]["id"].as_str().unwrap(), "{name}");
        assert_eq!(
            content.execution.initiator,
            expected["execution"]["initiator"].as_str().unwrap(),
            "{name}"
        );
        // 2.x-shaped subjects have no execution.domain at all: it parses as None.
        let expected_domain = expected["execution"].get("domain").and_then(str_or_none);
        assert_eq!(content.execution.domain.as_deref(), expected_domain, "{name}");
        assert_eq!(our_meta_pairs(content), meta_pairs(&expected["meta"]), "{name}: meta, in order");

        // The accessors agree with the content.
        assert_eq!(subject.orchestrator_name(), content.orchestrator.name);
        assert_eq!(subject.initiator(), content.execution.initiator);
        assert_eq!(subject.domain(), expected_domain);

        if json.contains("\"domain\"") {
            // 3.x shape: byte compatibility both ways.
            shapes_3x += 1;
            assert_eq!(content.to_arvo_json(), json, "{name}: inflated JSON");
            let created = Subject::create(content.clone()).unwrap();
            assert_eq!(
                inflated_json(created.as_str()),
                json,
                "{name}: Subject::create must hold arvo-core's JSON"
            );
            assert_eq!(Subject::parse(created.as_str()).unwrap().content(), content, "{name}");
        } else {
            // 2.x shape: we always write the 3.x shape, i.e. the same JSON plus `"domain":null`.
            shapes_2x += 1;
            let with_domain = json.replacen("},\"meta\":", ",\"domain\":null},\"meta\":", 1);
            assert_eq!(content.to_arvo_json(), with_domain, "{name}");
            let created = Subject::create(content.clone()).unwrap();
            assert_eq!(Subject::parse(created.as_str()).unwrap().content(), content, "{name}");
        }
    }
    assert!(
        shapes_3x >= 2 && shapes_2x >= 5,
        "fixtures cover both shapes ({shapes_3x} 3.x, {shapes_2x} 2.x)"
    );
}

#[test]
fn arvo_subject_error_cases() {
    let doc = fixture!("errors.json");
    let subjects = entries(&doc["subjects"]);
    let content = |name: &str, id: &str, domain: Option<&str>| SubjectContent {
        orchestrator: SubjectOrchestrator { name: name.into(), version: "1.0.0".into() },
        execution: SubjectExecution {
            id: id.into(),
            initiator: "com.test.service".into(),
            domain: domain.map(Into::into),
        },
        meta: IndexMap::new(),
    };
    let invalid_field = |err: SubjectError| match err {
        SubjectError::Invalid(errors) => {
            errors.errors.iter().map(|e| e.field.to_string()).collect::<Vec<_>>()
        }
        other => panic!("expected a rule violation, got {other}"),
    };
    for entry in subjects {
        let name = name_of(entry);
        match name {
            "create-bad-orchestrator-name" => {
                assert!(entry["error"].as_str().unwrap().contains("Orchestrator name should be prefixed"));
                let err = Subject::create(content("bad", "x", None)).unwrap_err();
                assert!(err.to_string().contains("\"bad\""), "{err}");
                assert_eq!(invalid_field(err), ["orchestrator.name"]);
            }
            "create-semicolon-in-id" => {
                let err = Subject::create(content("arvo.orc.calc.average", "a;b", None)).unwrap_err();
                assert_eq!(invalid_field(err), ["execution.id"]);
            }
            "create-invalid-domain-accepted" => {
                // Divergence: 2.2.13 has no domain rule and accepts `NOT valid!`; we apply the 3.x
                // rule `^[a-z0-9.]+$` (reference 3.4), so the subject is rejected.
                assert!(entry["error"].is_null());
                let err =
                    Subject::create(content("arvo.orc.calc.average", "x", Some("NOT valid!"))).unwrap_err();
                assert_eq!(invalid_field(err), ["execution.domain"]);
            }
            "parse-not-base64" => {
                assert!(matches!(Subject::parse("not a subject"), Err(SubjectError::Base64 { .. })));
            }
            "parse-valid-zlib-but-bad-schema" => {
                let encoded = entry["subject"].as_str().unwrap();
                let err = Subject::parse(encoded).unwrap_err();
                assert!(matches!(err, SubjectError::Json { .. }), "{err}");
            }
            other => panic!("unhandled subject error fixture {other}"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// events.json
// ---------------------------------------------------------------------------------------------

fn parse_fixture_event(arvo: &Value) -> Event {
    Event::from_slice(&serde_json::to_vec(arvo).unwrap()).unwrap_or_else(|e| panic!("{arvo}: {e}"))
}

fn assert_fields_equal(name: &str, e: &Event, arvo: &Value) {
    let s = |k: &str| arvo[k].as_str().unwrap_or_else(|| panic!("{name}: {k} is a string"));
    assert_eq!(e.id(), s("id"), "{name}");
    assert_eq!(e.source(), s("source"), "{name}");
    assert_eq!(e.specversion(), s("specversion"), "{name}");
    assert_eq!(e.r#type(), s("type"), "{name}");
    assert_eq!(e.subject(), s("subject"), "{name}");
    assert_eq!(e.datacontenttype(), s("datacontenttype"), "{name}");
    assert_eq!(e.dataschema(), str_or_none(&arvo["dataschema"]), "{name}");
    assert_eq!(&Value::Object(e.data().clone()), &arvo["data"], "{name}: data");
    assert_eq!(e.time(), s("time"), "{name}");
    assert_eq!(e.to(), str_or_none(&arvo["to"]), "{name}");
    assert_eq!(e.accesscontrol(), str_or_none(&arvo["accesscontrol"]), "{name}");
    assert_eq!(e.redirectto(), str_or_none(&arvo["redirectto"]), "{name}");
    let units = e.executionunits_number().map_or(Value::Null, |n| Value::Number(n.clone()));
    assert_eq!(units, arvo["executionunits"], "{name}: executionunits");
    assert_eq!(e.traceparent(), str_or_none(&arvo["traceparent"]), "{name}");
    assert_eq!(e.tracestate(), str_or_none(&arvo["tracestate"]), "{name}");
    // 2.2.13 has no parentid/domain attributes: when present they are custom extensions in its
    // output. We read them as the 3.x attributes they became.
    assert_eq!(e.parentid(), arvo.get("parentid").and_then(str_or_none), "{name}");
    assert_eq!(e.domain(), arvo.get("domain").and_then(str_or_none), "{name}");
    let expected_ext: Vec<(String, Value)> = arvo
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| !EVENT_KEYS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let ours_ext: Vec<(String, Value)> =
        e.extensions().iter().map(|(k, v)| (k.clone(), v.to_json())).collect();
    assert_eq!(ours_ext, expected_ext, "{name}: custom extensions, in order");
}

#[test]
fn every_arvo_event_parses_field_by_field_and_round_trips() {
    let doc = fixture!("events.json");
    assert!(entries(&doc).len() >= 25);
    let mut with_extensions = 0;
    for entry in entries(&doc) {
        let name = name_of(entry);
        let arvo = &entry["event"];
        let e = parse_fixture_event(arvo);
        assert_fields_equal(name, &e, arvo);
        if !e.extensions().is_empty() {
            with_extensions += 1;
        }

        // Both parsers agree.
        assert_eq!(Event::from_json_value(arvo.clone()).unwrap(), e, "{name}");
        // Lossless: serialize → parse gives the same event, and serialization is a fixed point.
        let bytes = e.to_json_vec();
        let again = Event::from_slice(&bytes).unwrap();
        assert_eq!(again, e, "{name}");
        assert_eq!(again.to_json_vec(), bytes, "{name}");
        // Every attribute arvo-core wrote comes back unchanged; the 3.x ones it lacks are null.
        let ours = e.to_json_value();
        for (key, value) in arvo.as_object().unwrap() {
            assert_eq!(&ours[key], value, "{name}: {key}");
        }
        for key in ["parentid", "domain"] {
            if arvo.get(key).is_none() {
                assert_eq!(ours[key], Value::Null, "{name}: {key}");
            }
        }
        // The orchestration subject, when there is one, is the one arvo-core wrote.
        if let Some(json) = entry.get("subjectJson").and_then(Value::as_str) {
            let subject = e.orchestration_subject().unwrap();
            let parsed: Value = serde_json::from_str(json).unwrap();
            assert_eq!(subject.orchestrator_name(), parsed["orchestrator"]["name"], "{name}");
            assert_eq!(subject.execution_id(), parsed["execution"]["id"], "{name}");
            assert_eq!(our_meta_pairs(subject.content()), meta_pairs(&parsed["meta"]), "{name}");
        }
    }
    assert!(with_extensions >= 1);
}

/// Our serialization is arvo-core's `toString()` byte for byte, plus the two 3.x attributes
/// (`"parentid":null,"domain":null`) at the end.
#[test]
fn serialized_bytes_equal_arvo_to_string() {
    let doc = fixture!("events.json");
    let mut compared = 0;
    for entry in entries(&doc) {
        let name = name_of(entry);
        let arvo = &entry["event"];
        let arvo_string = entry["string"].as_str().unwrap();
        let e = parse_fixture_event(arvo);
        let has_extensions =
            arvo.as_object().unwrap().keys().any(|k| !EVENT_KEYS[..15].contains(&k.as_str()));
        if has_extensions {
            // 2.2.13 writes custom extensions (including parentid/domain) right after `time`;
            // we write them after `domain`, where 3.x puts them. Only the order differs, which
            // the equality of every attribute above already covers.
            continue;
        }
        let mut expected = arvo_string.strip_suffix('}').unwrap().to_owned();
        expected.push_str(",\"parentid\":null,\"domain\":null}");
        if name == "number-formatting" {
            // JavaScript writes doubles below 1e21 in full (`100000000000000000000`); serde_json
            // writes `1e+20`. The same JSON number.
            expected = expected.replace("100000000000000000000", "1e+20");
        }
        assert_eq!(e.to_json_string(), expected, "{name}");
        compared += 1;
    }
    assert!(compared >= 20, "only {compared} events compared byte for byte");
}

/// Checks an event made by one of arvo-core's factories against the equivalent Rust contract.
fn check_factory_event(name: &str, e: &Event) {
    match name {
        "factory-accepts-v1-explicit-subject" | "factory-accepts-v1-strips-unknown-data-keys" => {
            CalcAddV1::versioned().validate_accepts(e).unwrap();
            assert_eq!(CalcAddV1::parse_accepts(e).unwrap(), AddIn { a: 1.0, b: 2.0 });
            // The dataschema pins version 1.0.0: version 2.0.0 refuses it as a config fault.
            let err = CalcAddV2::parse_accepts(e).unwrap_err();
            assert!(matches!(err, Violation::Config { .. }), "{err}");
        }
        "factory-accepts-v2-default-subject-redirectto" => {
            let input = CalcAddV2::parse_accepts(e).unwrap();
            assert_eq!(input, AddInV2 { a: 1.5, b: 2.25, precision: 2 });
        }
        "factory-emits-v1-success" => {
            assert_eq!(<CalcAddV1 as Emits<AddOut>>::parse_emitted(e).unwrap(), AddOut { sum: 3.0 });
        }
        "factory-emits-v2-overflow-default-subject" => {
            let overflow = <CalcAddV2 as Emits<Overflow>>::parse_emitted(e).unwrap();
            assert_eq!(overflow, Overflow { limit: 1000.0, message: None });
        }
        "factory-systemError-v1" | "factory-systemError-v2-typeerror-default-subject" => {
            let v = if name.contains("v1") { CalcAddV1::versioned() } else { CalcAddV2::versioned() };
            v.validate_emitted(e).unwrap();
            assert_eq!(e.r#type(), v.system_error().event_type());
            assert_eq!(e.dataschema(), Some(v.system_error_dataschema()));
            let payload: SystemErrorPayload =
                serde_json::from_value(Value::Object(e.data().clone())).unwrap();
            assert!(payload.error_stack.unwrap().starts_with(&payload.error_name));
        }
        "simple-contract-accepts" => {
            assert_eq!(GreetV1::parse_accepts(e).unwrap(), GreetIn { name: "Ada".into(), lang: None });
        }
        "simple-contract-emits" => {
            let out = <GreetV1 as Emits<GreetOut>>::parse_emitted(e).unwrap();
            assert_eq!(out.greeting, "Hello Ada");
        }
        "orchestrator-init-root"
        | "orchestrator-init-root-redirectto"
        | "orchestrator-init-with-parent-subject"
        | "orchestrator-init-with-parent-subject-and-redirectto"
        | "orchestrator-init-with-3x-parent-subject" => {
            let init = ArvoAverageV1::parse_accepts(e).unwrap();
            assert!(!init.data.values.is_empty());
            match &init.parent_subject {
                None => assert!(name.contains("root"), "{name}"),
                Some(parent) => {
                    assert!(name.contains("parent"), "{name}");
                    let parent = Subject::parse(parent).unwrap();
                    let child = e.orchestration_subject().unwrap();
                    assert_eq!(child.initiator(), parent.orchestrator_name(), "{name}");
                }
            }
            // The example contract of this crate declares the same workflow: it accepts it too.
            let example = orchestrator_examples::calculator::AverageV1::parse_accepts(e).unwrap();
            assert_eq!(example.parent_subject, init.parent_subject);
            assert_eq!(example.data.values, init.data.values);
        }
        "orchestrator-complete" => {
            let out = <ArvoAverageV1 as Emits<AvgOut>>::parse_emitted(e).unwrap();
            assert_eq!(out.average, 2.0);
        }
        "orchestrator-systemError" => {
            ArvoAverageV1::versioned().validate_emitted(e).unwrap();
            assert_eq!(e.r#type(), "sys.arvo.orc.calc.average.error");
            assert_eq!(e.dataschema(), Some("#/orc/calc/average/0.0.0"));
        }
        other => panic!("no contract check for the factory fixture {other}"),
    }
}

fn is_factory_fixture(name: &str) -> bool {
    name.starts_with("factory-") || name.starts_with("simple-contract-") || name.starts_with("orchestrator-")
}

#[test]
fn arvo_factory_events_validate_against_equivalent_contracts() {
    let doc = fixture!("events.json");
    let mut checked = 0;
    for entry in entries(&doc).iter().filter(|e| is_factory_fixture(name_of(e))) {
        let e = parse_fixture_event(&entry["event"]);
        check_factory_event(name_of(entry), &e);
        checked += 1;
    }
    assert_eq!(checked, 16, "every factory fixture is checked");
}

const T: &str = "2024-06-01T12:30:45.123+05:30";

enum SubjectCheck {
    /// The subject was given explicitly: it must be identical.
    Same,
    /// The factory generated the subject: same content except the random execution id.
    Generated,
    /// Generated, and we keep the parent's domain where 2.2.13's `from()` drops it.
    GeneratedWithParentDomain(&'static str),
}

fn assert_reproduces(name: &str, ours: &Event, arvo: &Value, check: SubjectCheck) {
    let ours_json = ours.to_json_value();
    for (key, value) in arvo.as_object().unwrap() {
        if key == "subject" {
            continue;
        }
        assert!(json_eq(&ours_json[key], value), "{name}: {key}: ours {} vs arvo {value}", ours_json[key]);
    }
    assert_eq!(ours_json["parentid"], Value::Null, "{name}");
    assert_eq!(ours_json["domain"], Value::Null, "{name}");
    let arvo_subject = arvo["subject"].as_str().unwrap();
    match check {
        SubjectCheck::Same => assert_eq!(ours.subject(), arvo_subject, "{name}"),
        SubjectCheck::Generated | SubjectCheck::GeneratedWithParentDomain(_) => {
            let theirs = Subject::parse(arvo_subject).unwrap();
            let mine = ours.orchestration_subject().unwrap();
            let (t, m) = (theirs.content(), mine.content());
            assert_eq!(m.orchestrator, t.orchestrator, "{name}");
            assert_eq!(m.execution.initiator, t.execution.initiator, "{name}");
            assert_eq!(our_meta_pairs(m), our_meta_pairs(t), "{name}: meta, in order");
            assert_ne!(m.execution.id, t.execution.id, "{name}: a fresh execution id");
            assert!(uuid::Uuid::parse_str(&m.execution.id).is_ok(), "{name}: uuid execution id");
            match check {
                SubjectCheck::GeneratedWithParentDomain(domain) => {
                    assert_eq!(t.execution.domain, None, "{name}: 2.2.13 drops the domain");
                    assert_eq!(m.execution.domain.as_deref(), Some(domain), "{name}: 3.x inherits it");
                }
                _ => assert_eq!(m.execution.domain, t.execution.domain, "{name}"),
            }
        }
    }
}

/// Our typed factories, given what the callers of arvo-core's factories passed, produce the same
/// events (`generate.mjs` section "factories").
#[test]
fn rust_factories_reproduce_arvo_factory_events() {
    let doc = fixture!("events.json");
    let arvo = |name: &str| find(&doc, name)["event"].clone();
    let b = |id: &str, source: &str| Event::builder().id(id).time(T).source(source);
    let error = |name: &str, message: &str| SystemErrorPayload {
        error_name: name.into(),
        error_message: message.into(),
        error_stack: Some(format!("{name}: {message}\n    at fixture (generate.mjs:1:1)")),
    };
    let add1 = EventFactory::<CalcAddV1>::new();
    let add2 = EventFactory::<CalcAddV2>::new();
    let greet = EventFactory::<GreetV1>::new();
    let avg = EventFactory::<ArvoAverageV1>::new();

    let name = "factory-accepts-v1-explicit-subject";
    let a = arvo(name);
    let fixed = a["subject"].as_str().unwrap().to_owned();
    let e = add1
        .accepts(AddIn { a: 1.0, b: 2.0 }, b("evt-acc-0001", "com.test.service").subject(&fixed))
        .unwrap();
    assert_reproduces(name, &e, &a, SubjectCheck::Same);

    let name = "factory-accepts-v2-default-subject-redirectto";
    let e = add2
        .accepts(
            AddInV2 { a: 1.5, b: 2.25, precision: 2 },
            b("evt-acc-0002", "com.test.service").redirectto("com.redirect.service"),
        )
        .unwrap();
    assert_reproduces(name, &e, &arvo(name), SubjectCheck::Generated);

    let name = "factory-accepts-v1-strips-unknown-data-keys";
    let e = add1
        .accepts(
            AddIn { a: 1.0, b: 2.0 },
            b("evt-acc-0003", "com.test.service")
                .subject(&fixed)
                .to("com.calc.handler")
                .accesscontrol("user-1")
                .executionunits(3),
        )
        .unwrap();
    assert_reproduces(name, &e, &arvo(name), SubjectCheck::Same);

    let name = "factory-emits-v1-success";
    let e = add1
        .emits(
            AddOut { sum: 3.0 },
            b("evt-emit-0001", "com.calc.add").subject(&fixed).to("com.test.service").executionunits(1),
        )
        .unwrap();
    assert_reproduces(name, &e, &arvo(name), SubjectCheck::Same);

    let name = "factory-emits-v2-overflow-default-subject";
    let e =
        add2.emits(Overflow { limit: 1000.0, message: None }, b("evt-emit-0002", "com.calc.add")).unwrap();
    assert_reproduces(name, &e, &arvo(name), SubjectCheck::Generated);

    let name = "factory-systemError-v1";
    let e = add1
        .system_error(
            error("Error", "Division by zero"),
            b("evt-err-0001", "com.calc.add").subject(&fixed).to("com.test.service"),
        )
        .unwrap();
    assert_reproduces(name, &e, &arvo(name), SubjectCheck::Same);

    let name = "factory-systemError-v2-typeerror-default-subject";
    let e = add2.system_error(error("TypeError", "bad input"), b("evt-err-0002", "com.calc.add")).unwrap();
    assert_reproduces(name, &e, &arvo(name), SubjectCheck::Generated);

    let name = "simple-contract-accepts";
    let e = greet
        .accepts(
            GreetIn { name: "Ada".into(), lang: None },
            b("evt-simple-0001", "com.test.service").subject("subject-simple"),
        )
        .unwrap();
    assert_reproduces(name, &e, &arvo(name), SubjectCheck::Same);

    let name = "simple-contract-emits";
    let e = greet
        .emits(
            GreetOut { greeting: "Hello Ada".into() },
            b("evt-simple-0002", "com.greet.user").subject("subject-simple"),
        )
        .unwrap();
    assert_reproduces(name, &e, &arvo(name), SubjectCheck::Same);

    let name = "orchestrator-init-root";
    let e = avg.init(AvgIn { values: vec![1.0, 2.0, 3.0] }, b("evt-init-0001", "com.test.service")).unwrap();
    assert_reproduces(name, &e, &arvo(name), SubjectCheck::Generated);

    let name = "orchestrator-init-root-redirectto";
    let e = avg
        .init(
            AvgIn { values: vec![4.0] },
            b("evt-init-0002", "com.test.service").redirectto("com.final.sink"),
        )
        .unwrap();
    assert_reproduces(name, &e, &arvo(name), SubjectCheck::Generated);

    let parent_of = |a: &Value| Subject::parse(a["data"]["parentSubject$$"].as_str().unwrap()).unwrap();

    let name = "orchestrator-init-with-parent-subject";
    let a = arvo(name);
    let e = avg
        .init_child(
            AvgIn { values: vec![10.0, 20.0] },
            &parent_of(&a),
            b("evt-init-0003", "arvo.orc.parent.flow"),
        )
        .unwrap();
    assert_reproduces(name, &e, &a, SubjectCheck::Generated);

    let name = "orchestrator-init-with-parent-subject-and-redirectto";
    let a = arvo(name);
    let e = avg
        .init_child(
            AvgIn { values: vec![10.0, 20.0] },
            &parent_of(&a),
            b("evt-init-0004", "arvo.orc.parent.flow").redirectto("com.custom.redirect"),
        )
        .unwrap();
    assert_reproduces(name, &e, &a, SubjectCheck::Generated);

    // Divergence: arvo-core 2.2.13's `from()` drops the parent's execution.domain; 3.x (and we)
    // use `event.domain ?? parent's domain` (reference 3.3).
    let name = "orchestrator-init-with-3x-parent-subject";
    let a = arvo(name);
    let e = avg
        .init_child(AvgIn { values: vec![7.0] }, &parent_of(&a), b("evt-init-0005", "arvo.orc.approval.flow"))
        .unwrap();
    assert_reproduces(name, &e, &a, SubjectCheck::GeneratedWithParentDomain("external.review"));

    let name = "orchestrator-complete";
    let a = arvo(name);
    let subject = a["subject"].as_str().unwrap();
    let e = avg
        .complete(
            AvgOut { average: 2.0 },
            b("evt-done-0001", "arvo.orc.calc.average")
                .subject(subject)
                .to("com.test.service")
                .executionunits_f64(0.5),
        )
        .unwrap();
    assert_reproduces(name, &e, &a, SubjectCheck::Same);

    let name = "orchestrator-systemError";
    let e = avg
        .system_error(
            error("Error", "values must not be empty"),
            b("evt-orcerr-0001", "arvo.orc.calc.average").subject(subject).to("com.test.service"),
        )
        .unwrap();
    assert_reproduces(name, &e, &arvo(name), SubjectCheck::Same);
}

// ---------------------------------------------------------------------------------------------
// invalid-events.json and accepted-edge-events.json
// ---------------------------------------------------------------------------------------------

/// The flat CloudEvents JSON of a `new ArvoEvent(context, data, extensions)` input: what would
/// travel on the wire. A custom extension named like an attribute replaces it (one JSON key).
fn flatten(input: &Value) -> Value {
    let mut flat = input["context"].as_object().unwrap().clone();
    flat.insert("data".into(), input["data"].clone());
    if let Some(ext) = input.get("extensions").and_then(Value::as_object) {
        for (k, v) in ext {
            flat.insert(k.clone(), v.clone());
        }
    }
    Value::Object(flat)
}

/// arvo-core's `createArvoEvent(params)`, done with our builder (which encodes URIs once).
fn create_arvo_event(params: &Value) -> Result<Event, EventError> {
    let mut b = Event::builder().encode_uris(true);
    for (key, value) in params.as_object().unwrap() {
        let s = || value.as_str().unwrap().to_owned();
        b = match key.as_str() {
            "id" => b.id(s()),
            "time" => b.time(s()),
            "source" => b.source(s()),
            "type" => b.r#type(s()),
            "subject" => b.subject(s()),
            "to" => b.to(s()),
            "redirectto" => b.redirectto(s()),
            "accesscontrol" => b.accesscontrol(s()),
            "dataschema" => b.dataschema(s()),
            "data" => b.data_json(value.clone()),
            "executionunits" => b.executionunits_opt(value.as_number().cloned()),
            other => panic!("createArvoEvent parameter {other} not mapped"),
        };
    }
    b.build()
}

fn fields_of(err: &EventError) -> BTreeSet<String> {
    err.field_errors().iter().map(|e| e.field.to_string()).collect()
}

/// The fields the zod issues of an arvo-core error concern, in our naming.
fn arvo_error_fields(name: &str, error: &str) -> BTreeSet<String> {
    let Ok(Value::Array(issues)) = serde_json::from_str::<Value>(error) else {
        return match name {
            "to-null-with-arvo-content-type" => {
                assert_eq!(error, "The ArvoEvent must have a non-empty 'to' field");
                BTreeSet::from(["to".to_owned()])
            }
            other => panic!("{other}: unmapped plain-text error {error:?}"),
        };
    };
    issues
        .iter()
        .map(|issue| match issue["path"].as_array().unwrap().first() {
            None => "data".to_owned(),
            Some(key) => {
                let key = key.as_str().unwrap();
                if EVENT_KEYS.contains(&key) { key.to_owned() } else { format!("extensions.{key}") }
            }
        })
        .collect()
}

#[test]
fn every_event_arvo_rejects_is_rejected_naming_the_same_field() {
    let doc = fixture!("invalid-events.json");
    let mut checked = 0;
    for entry in entries(&doc) {
        let name = name_of(entry);
        let input = &entry["input"];
        let arvo_error = entry["error"].as_str().unwrap();
        if let Some(params) = input.get("createArvoEvent") {
            match name {
                "createArvoEvent-lone-surrogate-subject" => {
                    // A Rust string cannot hold a lone surrogate, so only the wire form exists:
                    // JSON with the escape `\ud800` is refused by the parser as invalid JSON.
                    let raw = br#"{"id":"x","source":"com.test.service","specversion":"1.0","type":"com.test.event","subject":"a\ud800b","data":{},"time":"2024-06-01T12:30:45.123+05:30","to":"com.test.event"}"#;
                    assert!(matches!(Event::from_slice(raw), Err(EventError::Json(_))), "{name}");
                }
                _ => {
                    let err = create_arvo_event(params).unwrap_err();
                    assert_eq!(fields_of(&err), arvo_error_fields(name, arvo_error), "{name}: {err}");
                }
            }
            checked += 1;
            continue;
        }
        let flat = flatten(input);
        if name == "data-undefined-value" {
            // Divergence by construction: `{a: undefined}` has no JSON form; on the wire it is `{}`,
            // a valid payload. (arvo-core rejects the JavaScript object before serializing it.)
            assert_eq!(flat["data"], json!({}));
            assert!(Event::from_json_value(flat).is_ok(), "{name}");
            checked += 1;
            continue;
        }
        let err = Event::from_json_value(flat.clone()).unwrap_err();
        let expected = arvo_error_fields(name, arvo_error);
        assert_eq!(fields_of(&err), expected, "{name}: {err}");
        let from_bytes = Event::from_slice(&serde_json::to_vec(&flat).unwrap()).unwrap_err();
        assert_eq!(fields_of(&from_bytes), expected, "{name}");
        // The message names the field and shows the offending value.
        let message = err.to_string();
        for field in &expected {
            assert!(message.contains(&format!("`{field}`")), "{name}: {message}");
            let offending = match field.strip_prefix("extensions.") {
                Some(key) if name.starts_with("extension-key") => Some(Value::String(key.to_owned())),
                Some(_) => None,
                None => input["context"].get(field).filter(|v| v.is_string()).cloned(),
            };
            if let Some(value) = offending {
                assert!(message.contains(&value.to_string()), "{name}: {message} lacks {value}");
            }
        }
        checked += 1;
    }
    assert_eq!(checked, entries(&doc).len());
    assert!(checked >= 45);
}

/// What we do with an input arvo-core 2.2.13 accepts.
enum Decision {
    /// Accepted, with the same attributes as arvo-core's output.
    SameAsArvo,
    /// Accepted, with the listed attributes differing from arvo-core's output.
    AcceptedDiffering(&'static [(&'static str, Value)]),
    /// Rejected, naming this field.
    Rejected(&'static str),
}

fn accepted_edge_decision(name: &str) -> Decision {
    match name {
        // 2.2.13 has no `domain`/`parentid` attributes, so any extension value passes there. We
        // follow the 3.x rules (domain `^[a-z0-9.]+$` non-empty or null, parentid non-empty or
        // null), under which these are invalid.
        "extension-domain-empty-string" | "extension-domain-invalid-chars" => Decision::Rejected("domain"),
        "extension-parentid-empty-string" => Decision::Rejected("parentid"),
        // `createArvoEvent` turns '' into "use the default"; our builder treats an explicitly
        // empty value as a mistake (the builder's `*_opt(None)` setters express "unset").
        "createArvoEvent-to-empty-defaults-to-type" => Decision::Rejected("to"),
        "createArvoEvent-redirectto-empty-to-null" => Decision::Rejected("redirectto"),
        _ => Decision::SameAsArvo,
    }
}

#[test]
fn edge_events_arvo_accepts_are_decided_one_by_one() {
    let doc = fixture!("accepted-edge-events.json");
    // Inputs whose flat wire form differs from arvo-core's constructor arguments.
    let divergent_inputs = |name: &str| -> Option<Decision> {
        match name {
            // A flat CloudEvent has one `to`: the extension named `to` *is* the attribute. 2.2.13
            // keeps the context's `to` because extensions are passed separately.
            "extension-key-to-overrides-nothing" => Some(Decision::AcceptedDiffering(&[("to", Value::Null)])),
            // 2.2.13's zod schema strips the unknown context keys; 3.x (and we) keep them.
            "context-parentid-domain-silently-dropped" => {
                Some(Decision::AcceptedDiffering(&[("parentid", Value::Null), ("domain", Value::Null)]))
            }
            _ => None,
        }
    };
    let mut checked = 0;
    for entry in entries(&doc) {
        let name = name_of(entry);
        let arvo = &entry["event"];
        assert!(entry.get("surprise").is_none(), "{name}: the fixture flags a surprise");
        let ours = match entry["input"].get("createArvoEvent") {
            Some(params) => create_arvo_event(params),
            None => Event::from_json_value(flatten(&entry["input"])),
        };
        let decision = divergent_inputs(name).unwrap_or_else(|| accepted_edge_decision(name));
        match decision {
            Decision::SameAsArvo => {
                let e = ours.unwrap_or_else(|err| panic!("{name}: {err}"));
                assert_fields_equal(name, &e, arvo);
            }
            Decision::AcceptedDiffering(keys) => {
                let e = ours.unwrap_or_else(|err| panic!("{name}: {err}"));
                let json = e.to_json_value();
                let input = flatten(&entry["input"]);
                for (key, _) in keys {
                    assert_eq!(json[*key], input[*key], "{name}: {key} is the wire value");
                    assert_ne!(arvo.get(*key), Some(&json[*key]), "{name}: {key} differs from 2.2.13");
                }
                let differing: Vec<&str> = keys.iter().map(|(k, _)| *k).collect();
                for (key, value) in arvo.as_object().unwrap() {
                    if !differing.contains(&key.as_str()) {
                        assert_eq!(&json[key], value, "{name}: {key}");
                    }
                }
            }
            Decision::Rejected(field) => {
                let err =
                    ours.err().unwrap_or_else(|| panic!("{name}: accepted, expected rejection of {field}"));
                assert_eq!(fields_of(&err), BTreeSet::from([field.to_owned()]), "{name}: {err}");
            }
        }
        // What arvo-core wrote on the wire (its toJSON) is, in turn, accepted by us unless it
        // breaks a 3.x rule of domain/parentid.
        let wire = Event::from_json_value(arvo.clone());
        match accepted_edge_decision(name) {
            Decision::Rejected(field) if field == "domain" || field == "parentid" => {
                assert_eq!(fields_of(&wire.unwrap_err()), BTreeSet::from([field.to_owned()]), "{name}");
            }
            _ => assert_fields_equal(name, &wire.unwrap_or_else(|e| panic!("{name}: {e}")), arvo),
        }
        checked += 1;
    }
    assert_eq!(checked, entries(&doc).len());
    assert!(checked >= 18);
}

#[test]
fn datacontenttype_defaults_like_zod_when_absent() {
    let doc = fixture!("events.json");
    let arvo = &find(&doc, "new-ArvoEvent-datacontenttype-omitted-defaults")["event"];
    let mut without = arvo.as_object().unwrap().clone();
    without.remove("datacontenttype");
    let e = Event::from_json_value(Value::Object(without)).unwrap();
    assert_eq!(e.datacontenttype(), ARVO_CONTENT_TYPE);
    assert_eq!(e.datacontenttype(), arvo["datacontenttype"].as_str().unwrap());
    let meta = fixture!("meta.json");
    assert_eq!(meta["ArvoDataContentType"], ARVO_CONTENT_TYPE);
    assert_eq!(meta["arvoCore"], "2.2.13");
}

// ---------------------------------------------------------------------------------------------
// uri.json
// ---------------------------------------------------------------------------------------------

#[test]
fn uri_functions_agree_with_javascript_and_validate_uri() {
    let doc = fixture!("uri.json");
    let cases = doc["cases"].as_array().unwrap();
    assert!(cases.len() >= 35);
    for case in cases {
        let input = case["input"].as_str().unwrap();
        assert!(case.get("encodeURIError").is_none(), "{input:?}: encodeURI threw in JS");
        assert_eq!(uri::encode_uri(input), case["encodeURI"].as_str().unwrap(), "encodeURI({input:?})");
        let decoded = uri::decode_uri(input);
        assert_eq!(
            decoded.is_err(),
            case["decodeURIThrows"].as_bool().unwrap(),
            "decodeURI({input:?}) throws"
        );
        if let Ok(decoded) = decoded {
            assert_eq!(decoded, case["decodeURI"].as_str().unwrap(), "decodeURI({input:?})");
        }
        let valid = case["validateURI"].as_bool().unwrap();
        assert_eq!(uri::is_valid_uri(input), valid, "validateURI({input:?})");
        // Encoding once: valid URIs are kept, others are encoded exactly as encodeURI does.
        let once = uri::encode_uri_once(input);
        if valid {
            assert_eq!(once, input);
        } else {
            assert_eq!(once, case["encodeURI"].as_str().unwrap());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// contracts.json
// ---------------------------------------------------------------------------------------------

const ARVO_METADATA_KEYS: [&str; 4] = ["contractType", "rootType", "initEventType", "completeEventType"];

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

fn assert_same_metadata(what: &str, ours: &Value, arvo: &Value) {
    for key in ARVO_METADATA_KEYS {
        assert_eq!(ours.get(key), arvo.get(key), "{what}: metadata.{key}");
    }
    // The user's metadata; the contract macros take literal values only, so arrays (`tags`) are
    // not declared in the Rust equivalents.
    for (key, value) in arvo.as_object().unwrap() {
        if value.is_string() {
            assert_eq!(ours.get(key), Some(value), "{what}: metadata.{key}");
        }
    }
}

/// Resolves `anyOf: [X, {type: null}]` (an `Option`) and `$ref` to the schema of the value.
fn resolve<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    let mut schema = schema;
    if let Some([inner, null]) = schema.get("anyOf").and_then(Value::as_array).map(Vec::as_slice)
        && null == &json!({"type": "null"})
        && inner.get("type") != Some(&json!("string"))
    {
        schema = inner;
    }
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let name = reference.rsplit('/').next().unwrap();
        return &root["definitions"][name];
    }
    schema
}

/// Compares the structure of a generated schema with zod-to-json-schema's: same properties in the
/// same order, same required set, same property types and constraints.
fn assert_same_schema_shape(what: &str, ours: &Value, arvo: &Value) {
    assert_eq!(ours["type"], "object", "{what}");
    assert_eq!(ours["$schema"], arvo["$schema"], "{what}: draft-07");
    let props = |v: &Value| v["properties"].as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(props(ours), props(arvo), "{what}: properties");
    let required = |v: &Value| {
        v["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap().to_owned())
            .collect::<BTreeSet<_>>()
    };
    assert_eq!(required(ours), required(arvo), "{what}: required");
    for (name, theirs) in arvo["properties"].as_object().unwrap() {
        let mine = resolve(ours, &ours["properties"][name]);
        for key in
            ["type", "enum", "minLength", "minItems", "maxItems", "minimum", "maximum", "default", "anyOf"]
        {
            if let Some(expected) = theirs.get(key) {
                let got = mine.get(key).unwrap_or(&Value::Null);
                assert!(json_eq(got, expected), "{what}: {name}.{key}: ours {got}, arvo {expected}");
            }
        }
        if let (Some(items), Some(our_items)) = (theirs.get("items"), mine.get("items")) {
            assert_eq!(our_items["type"], items["type"], "{what}: {name}.items");
        }
    }
}

fn assert_same_event_document(what: &str, ours: &Value, arvo: &Value) {
    assert_eq!(ours["type"], arvo["type"], "{what}: type");
    assert_same_schema_shape(&format!("{what} {}", arvo["type"]), &ours["schema"], &arvo["schema"]);
}

fn assert_same_system_error(what: &str, ours: &Value, arvo: &Value) {
    assert_eq!(ours["type"], arvo["type"], "{what}: systemError.type");
    let (mine, theirs) = (&ours["schema"], &arvo["schema"]);
    assert_eq!(mine["required"], json!(["errorName", "errorMessage", "errorStack"]), "{what}");
    assert_eq!(mine["required"], theirs["required"], "{what}");
    assert_eq!(
        mine["properties"], theirs["properties"],
        "{what}: systemError properties, descriptions included"
    );
}

fn assert_same_version_document(what: &str, ours: &Value, arvo: &Value, orchestrator: bool) {
    assert_eq!(ours["version"], arvo["version"], "{what}");
    assert_same_metadata(what, &ours["metadata"], &arvo["metadata"]);
    assert_same_event_document(&format!("{what} accepts"), &ours["accepts"], &arvo["accepts"]);
    assert_same_system_error(what, &ours["systemError"], &arvo["systemError"]);
    let emits = |v: &Value| v["emits"].as_array().unwrap().clone();
    let (mine, theirs) = (emits(ours), emits(arvo));
    let types = |list: &[Value]| list.iter().map(|e| e["type"].clone()).collect::<Vec<_>>();
    assert_eq!(types(&mine), types(&theirs), "{what}: emitted types, in order");
    for (m, t) in mine.iter().zip(&theirs) {
        assert_same_event_document(&format!("{what} emits"), m, t);
    }
    if orchestrator {
        let accepts = &ours["accepts"]["schema"];
        assert_eq!(accepts["properties"].as_object().unwrap().keys().next().unwrap(), "parentSubject$$");
        assert!(accepts["required"].as_array().unwrap().contains(&json!("parentSubject$$")), "{what}");
    }
}

fn assert_same_contract_document(what: &str, ours: &Value, arvo: &Value, orchestrator: bool) {
    let mut expected_keys = keys(arvo);
    expected_keys.insert("domain".into()); // ours has the 3.x `domain`
    assert_eq!(keys(ours), expected_keys, "{what}: top-level keys");
    assert_eq!(ours["uri"], arvo["uri"], "{what}");
    assert_eq!(ours["description"], arvo["description"], "{what}");
    assert_same_metadata(what, &ours["metadata"], &arvo["metadata"]);
    let (mine, theirs) = (ours["versions"].as_array().unwrap(), arvo["versions"].as_array().unwrap());
    assert_eq!(mine.len(), theirs.len(), "{what}: versions");
    for (m, t) in mine.iter().zip(theirs) {
        assert_eq!(keys(m), keys(t), "{what}: version keys");
        assert_eq!(
            keys(m),
            BTreeSet::from(["version", "accepts", "systemError", "emits", "metadata"].map(String::from))
        );
        assert_same_version_document(&format!("{what}@{}", t["version"]), m, t, orchestrator);
    }
}

#[test]
fn contract_documents_have_arvo_to_json_schema_shape() {
    let doc = fixture!("contracts.json");
    assert_same_contract_document(
        "simple:greet.user",
        &Greet::contract().to_json_schema(),
        &doc["simple:greet.user"],
        false,
    );
    assert_same_contract_document(
        "calc.add",
        &CalcAdd::contract().to_json_schema(),
        &doc["calc.add (2 versions)"],
        false,
    );
    assert_same_contract_document(
        "orchestrator:calc.average",
        &ArvoAverage::contract().to_json_schema(),
        &doc["orchestrator:calc.average"],
        true,
    );
    // The parentSubject$$ property is exactly arvo-core's (nullable, non-empty string).
    let ours = ArvoAverageV1::versioned().accepts().schema();
    let arvo = &doc["orchestrator:calc.average"]["versions"][0]["accepts"]["schema"];
    assert_eq!(
        ours["properties"]["parentSubject$$"]["anyOf"],
        arvo["properties"]["parentSubject$$"]["anyOf"]
    );

    // The example workflow contract of this workspace has the same wire shape (its description
    // and metadata are its own).
    let example = orchestrator_examples::calculator::Average::contract().to_json_schema();
    let arvo_version = &doc["orchestrator:calc.average"]["versions"][0];
    assert_eq!(example["uri"], doc["orchestrator:calc.average"]["uri"]);
    for key in ARVO_METADATA_KEYS {
        assert_eq!(example["metadata"][key], doc["orchestrator:calc.average"]["metadata"][key]);
    }
    assert_same_event_document(
        "example accepts",
        &example["versions"][0]["accepts"],
        &arvo_version["accepts"],
    );
    assert_same_event_document(
        "example emits",
        &example["versions"][0]["emits"][0],
        &arvo_version["emits"][0],
    );
    assert_same_system_error("example", &example["versions"][0]["systemError"], &arvo_version["systemError"]);
}

#[test]
fn versioned_contract_documents_have_arvo_shape() {
    let doc = fixture!("contracts.json");
    let cases = [
        ("calc.add@1.0.0", CalcAddV1::versioned(), false),
        ("calc.add@2.0.0", CalcAddV2::versioned(), false),
        ("calc.average@1.0.0", ArvoAverageV1::versioned(), true),
    ];
    for (key, versioned, orchestrator) in cases {
        let arvo = &doc["versioned"][key];
        let ours = versioned.to_json_schema();
        let mut expected_keys = keys(arvo);
        expected_keys.insert("domain".into());
        assert_eq!(keys(&ours), expected_keys, "{key}");
        assert_eq!(ours["uri"], arvo["uri"], "{key}");
        assert_eq!(ours["description"], arvo["description"], "{key}");
        assert_same_version_document(key, &ours, arvo, orchestrator);
    }
}

#[test]
fn contract_info_agrees() {
    let doc = fixture!("contracts.json");
    let info = &doc["info"];
    let add = CalcAdd::contract();
    let i = &info["calc.add"];
    assert_eq!(add.uri(), i["uri"]);
    assert_eq!(add.r#type(), i["type"]);
    assert_eq!(add.description(), i["description"].as_str());
    assert_eq!(add.system_error_type(), i["systemError"]["type"]);
    let asc: Vec<String> = add.version_numbers().iter().map(ToString::to_string).collect();
    assert_eq!(json!(asc), i["sortedVersionsASC"]);
    let desc: Vec<String> = asc.iter().rev().cloned().collect();
    assert_eq!(json!(desc), i["sortedVersionsDESC"]);
    for selector in ["latest", "oldest", "any"] {
        assert_eq!(
            add.version_str(selector).unwrap().version_str(),
            i[format!("version({selector})")],
            "{selector}"
        );
    }
    for version in ["1.0.0", "2.0.0"] {
        let theirs = &i[format!("version({version})")];
        let ours = add.version_str(version).unwrap();
        assert_eq!(ours.uri(), theirs["uri"]);
        assert_eq!(ours.dataschema(), theirs["dataschema"]);
        assert_eq!(ours.description(), theirs["description"].as_str());
        assert_eq!(ours.accepts().event_type(), theirs["accepts"]["type"]);
        let emit_types: Vec<&str> = ours.emits().keys().map(String::as_str).collect();
        assert_eq!(json!(emit_types), theirs["emitTypes"]);
        assert_eq!(ours.system_error().event_type(), theirs["systemError"]["type"]);
        assert_eq!(ours.system_error_dataschema(), theirs["systemError"]["dataschema"]);
    }
    // arvo-core: "The contract (uri=#/test/calc/add) does not have version=9.9.9".
    assert!(i["version(9.9.9) error"].as_str().unwrap().contains("9.9.9"));
    let err = add.version_str("9.9.9").unwrap_err();
    assert!(matches!(err, Violation::Config { .. }), "{err}");
    assert!(err.to_string().contains("9.9.9") && err.to_string().contains("#/test/calc/add"), "{err}");

    let greet = Greet::contract();
    let g = &info["simple:greet.user"];
    assert_eq!(greet.r#type(), g["type"]);
    let v = greet.version_str("1.0.0").unwrap();
    assert_eq!(v.dataschema(), g["version(1.0.0)"]["dataschema"]);
    assert_eq!(json!(v.emits().keys().collect::<Vec<_>>()), g["version(1.0.0)"]["emitTypes"]);
    assert_eq!(v.system_error_dataschema(), g["version(1.0.0)"]["systemError"]["dataschema"]);

    let avg = ArvoAverage::contract();
    let o = &info["orchestrator:calc.average"];
    assert_eq!(avg.r#type(), o["type"]);
    assert_eq!(avg.r#type(), o["typegen"]["init"]);
    assert_eq!(avg.system_error_type(), o["systemError"]["type"]);
    assert_eq!(avg.system_error_type(), o["typegen"]["systemError"]);
    let v = avg.version_str("1.0.0").unwrap();
    assert_eq!(json!(v.emits().keys().collect::<Vec<_>>()), json!([o["typegen"]["complete"]]));
    assert_eq!(v.dataschema(), o["version(1.0.0)"]["dataschema"]);
    assert_eq!(v.system_error_dataschema(), o["version(1.0.0)"]["systemError"]["dataschema"]);
    assert!(avg.r#type().starts_with(o["typegen"]["prefix"].as_str().unwrap()));

    // The system-error schema is arvo-core's ArvoErrorSchema.
    let arvo_error = &info["arvoErrorSchema"];
    let ours = v.system_error().schema();
    assert_eq!(ours["properties"], arvo_error["properties"]);
    assert_eq!(ours["required"], arvo_error["required"]);
}

#[test]
fn contract_errors_agree() {
    let doc = fixture!("contracts.json");
    let errors = &doc["errors"];
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Empty {}
    let v = |version: &str| VersionBuilder::new(version).accepts::<Empty>();
    let fields = |r: Result<ArvoContract, orchestrator::contract::ContractError>| -> (Vec<String>, String) {
        let err = r.expect_err("the contract must be rejected");
        (err.errors.iter().map(|e| e.field.to_string()).collect(), err.to_string())
    };

    let arvo = errors["no versions"].as_str().unwrap();
    let (f, message) = fields(ArvoContract::builder("#/x", "com.x.y").build());
    assert_eq!(f, ["versions"]);
    assert!(message.contains(arvo), "{message} should contain arvo-core's {arvo:?}");

    // arvo-core: "For contract (uri=#/x), the version cannot be '0.0.0'. It is a reserved version type."
    let arvo = errors["version '0.0.0'"].as_str().unwrap();
    let tail = arvo.split_once(", ").unwrap().1;
    let (f, message) = fields(ArvoContract::builder("#/x", "com.x.y").version(v("0.0.0")).build());
    assert_eq!(f, ["versions.0.0.0"]);
    assert!(message.contains(tail) && message.contains("uri=#/x"), "{message}");

    let (f, _) = fields(ArvoContract::builder("#/x", "com.x.y").version(v("1.0")).build());
    assert_eq!(f, ["versions.1.0"]);
    assert!(errors["bad semver 1.0"].as_str().unwrap().contains("Invalid version format"));

    let (f, message) = fields(ArvoContract::builder("#/x", "com.x").version(v("1.0.0")).build());
    assert_eq!(f, ["type"]);
    assert!(message.contains("reverse-DNS") && message.contains("\"com.x\""), "{message}");

    let (f, message) = fields(
        ArvoContract::builder("#/x", "com.x.y").version(v("1.0.0").emits::<Empty>("evt_bad.x.y")).build(),
    );
    assert_eq!(f, ["versions.1.0.0.emits"]);
    assert!(message.contains("evt_bad.x.y"), "{message}");

    for uri in ["", "#/a b"] {
        let (f, _) = fields(ArvoContract::builder(uri, "com.x.y").version(v("1.0.0")).build());
        assert_eq!(f, ["uri"], "{uri:?}");
    }

    assert!(errors["reserved arvo.orc accepts type"].as_str().unwrap().contains("must not start"));
    let (f, message) = fields(ArvoContract::builder("#/x", "arvo.orc.x").version(v("1.0.0")).build());
    assert_eq!(f, ["type"]);
    assert!(message.contains("arvo.orc"), "{message}");
    let (f, _) = fields(
        ArvoContract::builder("#/x", "com.x.y").version(v("1.0.0").emits::<Empty>("arvo.orc.x.done")).build(),
    );
    assert_eq!(f, ["versions.1.0.0.emits"]);

    // arvo-core: "Invalid 'name' = 'Bad-Name'. The 'name' must only contain alphanumeric characters. ..."
    assert!(errors["orchestrator bad name"].as_str().unwrap().contains("'Bad-Name'"));
    let orc = |name: &str| {
        ArvoContract::orchestrator("#/x", name).version(v("1.0.0").emits::<Empty>("ignored")).build()
    };
    let (f, message) = fields(orc("Bad-Name"));
    assert_eq!(f, ["name"]);
    assert!(message.contains("Bad-Name") && message.contains("e.g. test.orchestrator"), "{message}");
    assert!(errors["orchestrator single-segment name wf (type arvo.orc.wf)"].is_null());
    assert_eq!(orc("wf").unwrap().r#type(), "arvo.orc.wf");

    assert!(errors["empty emits map accepted"].is_null());
    let c = ArvoContract::builder("#/x", "com.x.y").version(v("1.0.0")).build().unwrap();
    assert!(c.version(VersionSelector::Latest).unwrap().emits().is_empty());
    // "orchestrator factory on plain contract" is a compile error here: `EventFactory::init`
    // requires an `OrchestratorVersion` (see the compile-fail tests).
    assert!(
        errors["orchestrator factory on plain contract"]
            .as_str()
            .unwrap()
            .contains("ArvoOrchestratorContract")
    );
}

#[test]
fn factory_errors_agree() {
    let doc = fixture!("errors.json");
    let f = &doc["factories"];
    let base = || Event::builder().source("com.test.service").subject("s");
    let data_error = |r: Result<Event, FactoryError>| match r {
        Err(FactoryError::Data { kind, errors, .. }) => {
            (kind, errors.errors.iter().map(|e| e.path.clone()).collect::<Vec<_>>(), errors.to_string())
        }
        Err(other) => panic!("expected a data error, got {other}"),
        Ok(e) => panic!("expected a data error, got {}", e.to_json_string()),
    };
    let v1 = CalcAddV1::versioned();

    assert!(f["accepts invalid data"].as_str().unwrap().starts_with("Accept Event data validation failed"));
    let (kind, paths, _) = data_error(v1.event_from_json("com.calc.add", json!({"a": "x", "b": 2}), base()));
    assert_eq!((kind, paths), ("Accept", vec!["/a".to_owned()]));

    assert!(
        f["emits unknown type"].as_str().unwrap().contains("No contract available for evt.calc.add.overflow")
    );
    let err = v1.event_from_json("evt.calc.add.overflow", json!({"limit": 1}), base()).unwrap_err();
    assert!(matches!(err, FactoryError::UnknownEmit { .. }), "{err}");
    assert!(err.to_string().contains("no contract available for 'evt.calc.add.overflow'"), "{err}");

    let (kind, paths, _) =
        data_error(v1.event_from_json("evt.calc.add.success", json!({"sum": "x"}), base()));
    assert_eq!((kind, paths), ("Emit", vec!["/sum".to_owned()]));

    let avg = EventFactory::<ArvoAverageV1>::new();
    let (kind, paths, _) =
        data_error(avg.init(AvgIn { values: vec![] }, Event::builder().source("com.test.service")));
    assert_eq!((kind, paths), ("Init", vec!["/values".to_owned()]));

    assert!(f["init missing parentSubject$$"].as_str().unwrap().contains("parentSubject$$"));
    let (_, _, message) = data_error(ArvoAverageV1::versioned().event_from_json(
        "arvo.orc.calc.average",
        json!({"values": [1]}),
        base(),
    ));
    assert!(message.contains("parentSubject$$"), "{message}");

    let (kind, paths, _) = data_error(ArvoAverageV1::versioned().event_from_json(
        "arvo.orc.calc.average.done",
        json!({"average": "x"}),
        base(),
    ));
    assert_eq!((kind, paths), ("Emit", vec!["/average".to_owned()]));

    assert!(
        f["accepts with 2-segment source 'com.app' and no subject"].as_str().unwrap().contains("initiator")
    );
    let err = EventFactory::<CalcAddV1>::new()
        .accepts(AddIn { a: 1.0, b: 2.0 }, Event::builder().source("com.app"))
        .unwrap_err();
    let FactoryError::Subject { source: SubjectError::Invalid(errors), .. } = &err else {
        panic!("expected a subject error, got {err}")
    };
    assert!(errors.has_field("execution.initiator"), "{err}");
    assert!(errors.to_string().contains("com.app"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// semver.json
// ---------------------------------------------------------------------------------------------

#[test]
fn semantic_versions_and_dataschemas_agree() {
    let doc = fixture!("semver.json");
    for case in doc["compareSemanticVersions"].as_array().unwrap() {
        let a: SemVer = case["a"].as_str().unwrap().parse().unwrap();
        let b: SemVer = case["b"].as_str().unwrap().parse().unwrap();
        let sign = case["result"].as_i64().unwrap().signum();
        assert_eq!(a.cmp(&b) as i64, sign, "{case}");
    }
    for case in doc["isValidArvoSemanticVersion"].as_array().unwrap() {
        let input = case["input"].as_str().unwrap();
        assert_eq!(orchestrator::semver::is_valid(input), case["valid"].as_bool().unwrap(), "{input:?}");
    }
    for case in doc["parseSemanticVersion"].as_array().unwrap() {
        let input = case["input"].as_str().unwrap();
        let ours = input.parse::<SemVer>();
        match case.get("result") {
            // arvo-core's parseSemanticVersion is lenient (it reads the first three numbers of
            // `1.2.3.4`, `1.2.3-beta`, ` 1.2.3`). We parse with the rule contracts and subjects are
            // validated with (isValidArvoSemanticVersion, `^\d+\.\d+\.\d+$`), so those are errors.
            Some(r) if orchestrator::semver::is_valid(input) => {
                let v = ours.unwrap();
                assert_eq!(json!({"major": v.major, "minor": v.minor, "patch": v.patch}), *r, "{input:?}");
            }
            Some(_) => assert!(ours.is_err(), "{input:?}: stricter than parseSemanticVersion"),
            None => assert!(ours.is_err(), "{input:?}"),
        }
    }
    let sorted = &doc["getSortedVersionNumbers"];
    let input: Vec<&str> = sorted["input"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    let mut versions: Vec<SemVer> = input.iter().map(|v| v.parse().unwrap()).collect();
    versions.sort();
    let asc: Vec<String> = versions.iter().map(ToString::to_string).collect();
    assert_eq!(json!(asc), sorted["ASC"]);
    versions.reverse();
    let desc: Vec<String> = versions.iter().map(ToString::to_string).collect();
    assert_eq!(json!(desc), sorted["DESC"]);
    // The same through a contract with those versions (declared out of order).
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Empty {}
    let contract = input
        .iter()
        .fold(ArvoContract::builder("#/test/sort", "com.test.sort"), |b, v| {
            b.version(VersionBuilder::new(*v).accepts::<Empty>())
        })
        .build()
        .unwrap();
    let numbers: Vec<String> = contract.version_numbers().iter().map(ToString::to_string).collect();
    assert_eq!(json!(numbers), sorted["ASC"]);
    assert_eq!(contract.version_str("latest").unwrap().version_str(), sorted["latest"]);
    assert_eq!(contract.version_str("oldest").unwrap().version_str(), sorted["oldest"]);

    for case in doc["EventDataschemaUtil.parse"].as_array().unwrap() {
        let input = case["input"].as_str().unwrap();
        let ours = dataschema::parse(input);
        match &case["result"] {
            // Including arvo-core's empty URI (`1.0.0`, `/1.0.0`): no contract has it, so it is a
            // URI mismatch wherever it is checked.
            Value::Object(r) => {
                let ours = ours.unwrap_or_else(|| panic!("{input:?}"));
                assert_eq!(ours.uri, r["uri"], "{input:?}");
                assert_eq!(ours.version.to_string(), r["version"], "{input:?}");
                assert_eq!(dataschema::is_valid(input), case["isValid"].as_bool().unwrap());
                assert_eq!(ours.is_wildcard(), r["version"] == "0.0.0");
            }
            _ => {
                assert!(ours.is_none(), "{input:?}");
                assert_eq!(dataschema::is_valid(input), case["isValid"].as_bool().unwrap());
            }
        }
    }
    for case in doc["EventDataschemaUtil.build"].as_array().unwrap() {
        let built = dataschema::build(case["uri"].as_str().unwrap(), case["version"].as_str().unwrap());
        assert_eq!(built, case["result"]);
    }
}

#[test]
fn fixture_set_is_complete() {
    // Guards against a fixture silently disappearing (each file is used above).
    for file in [
        "subjects.json",
        "events.json",
        "invalid-events.json",
        "accepted-edge-events.json",
        "contracts.json",
        "semver.json",
        "uri.json",
        "errors.json",
        "meta.json",
    ] {
        let path = format!("{}/../interop/arvo/fixtures/{file}", env!("CARGO_MANIFEST_DIR"));
        assert!(std::path::Path::new(&path).is_file(), "{path} is missing");
    }
    let meta = fixture!("meta.json");
    assert_eq!(meta["deterministic"], true, "fixtures were generated with the pinned clock and uuids");
}
