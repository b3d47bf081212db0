//! Property tests (proptest):
//!
//! - (a) arbitrary valid events (ids, types, plain and real orchestration subjects, nested
//!   unicode data, optional attributes, extensions) round-trip through bytes, and serialization
//!   is a fixed point;
//! - (b) `Event::from_slice` never panics on arbitrary bytes or on mutated / truncated valid
//!   events, and whatever it accepts round-trips;
//! - (c) `Subject::parse` never panics (arbitrary strings, base64 of arbitrary bytes, zlib of
//!   arbitrary text), and valid subject contents (unicode, integer-like meta keys) round-trip;
//! - (d) `uri::decode_uri` / `is_valid_uri` never panic, `encode_uri` output is always valid,
//!   `encode_uri_once` is idempotent;
//! - (e) `SemVer` Display/FromStr round-trip and ordering agrees with tuple ordering.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;

use base64::Engine as _;
use indexmap::IndexMap;
use orchestrator::event::{ARVO_CONTENT_TYPE, ExtensionValue};
use orchestrator::prelude::*;
use orchestrator::semver::SemVer;
use orchestrator::subject::{SubjectContent, SubjectExecution, SubjectOrchestrator};
use orchestrator::uri;
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use serde_json::{Map, Number, Value};

// ---------------------------------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------------------------------

/// A reverse-DNS name: 3 to 5 lowercase alphanumeric segments.
fn reverse_dns() -> impl Strategy<Value = String> {
    vec("[a-z0-9]{1,8}", 3..=5).prop_map(|segments| segments.join("."))
}

fn semver_text() -> impl Strategy<Value = String> {
    (0u64..50, 0u64..50, 0u64..1000).prop_map(|(a, b, c)| format!("{a}.{b}.{c}"))
}

fn domain() -> impl Strategy<Value = String> {
    "[a-z0-9.]{1,16}"
}

/// A string that passes Arvo's URI rule: safe characters, or anything encoded with `encodeURI`.
fn uri_valid() -> impl Strategy<Value = String> {
    prop_oneof!["[A-Za-z0-9._~:/?#@!$&'()*+,;=-]{1,40}", ".{1,30}".prop_map(|s| uri::encode_uri(&s)),]
}

/// A valid time: RFC 3339 with `Z` or a numeric offset, optional seconds and fraction.
fn timestamp() -> impl Strategy<Value = String> {
    (
        1970u32..2100,
        1u32..=12,
        1u32..=28,
        0u32..24,
        0u32..60,
        prop::option::of((0u32..60, prop::option::of("[0-9]{1,9}"))),
        prop_oneof![
            Just("Z".to_owned()),
            (prop::bool::ANY, 0u32..24, 0u32..60, prop::bool::ANY).prop_map(|(plus, h, m, colon)| format!(
                "{}{h:02}{}{m:02}",
                if plus { '+' } else { '-' },
                if colon { ":" } else { "" }
            ))
        ],
    )
        .prop_map(|(y, mo, d, h, mi, seconds, offset)| {
            let seconds = match seconds {
                None => String::new(),
                Some((s, None)) => format!(":{s:02}"),
                Some((s, Some(fraction))) => format!(":{s:02}.{fraction}"),
            };
            format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}{seconds}{offset}")
        })
}

fn json_number() -> impl Strategy<Value = Number> {
    prop_oneof![
        any::<i64>().prop_map(Number::from),
        any::<u64>().prop_map(Number::from),
        any::<f64>().prop_filter_map("finite", Number::from_f64),
    ]
}

/// Arbitrary JSON, nested, with unicode strings and keys.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        json_number().prop_map(Value::Number),
        any::<String>().prop_map(Value::String),
        "[a-zA-Z0-9 {}\\[\\]\":,\\\\]{0,20}".prop_map(Value::String), // JSON-looking text
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..6).prop_map(Value::Array),
            btree_map(any::<String>(), inner, 0..6).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn data_map() -> impl Strategy<Value = Map<String, Value>> {
    btree_map(any::<String>(), json_value(), 0..8).prop_map(|m| m.into_iter().collect())
}

fn extension_value() -> impl Strategy<Value = ExtensionValue> {
    prop_oneof![
        Just(ExtensionValue::Null),
        any::<bool>().prop_map(ExtensionValue::Bool),
        json_number().prop_map(ExtensionValue::Number),
        any::<String>().prop_map(ExtensionValue::String),
    ]
}

const ATTRIBUTES: [&str; 17] = [
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

/// Distinct extension keys (never an attribute name), in a random order.
fn extensions() -> impl Strategy<Value = Vec<(String, ExtensionValue)>> {
    vec(("[a-z0-9]{1,10}", extension_value()), 0..6).prop_map(|list| {
        let mut seen = std::collections::HashSet::new();
        list.into_iter()
            .filter(|(k, _)| !ATTRIBUTES.contains(&k.as_str()) && seen.insert(k.clone()))
            .collect()
    })
}

fn orchestration_subject() -> impl Strategy<Value = String> {
    (
        reverse_dns(),
        semver_text(),
        reverse_dns(),
        prop::option::of(domain()),
        vec((".{0,8}", ".{0,12}"), 0..4),
    )
        .prop_map(|(name, version, initiator, domain, meta)| {
            let mut b = Subject::builder(name, version, initiator);
            if let Some(d) = domain {
                b = b.domain(d);
            }
            for (k, v) in meta {
                b = b.meta(k, v);
            }
            b.build().unwrap().as_str().to_owned()
        })
}

fn non_empty() -> impl Strategy<Value = String> {
    ".{1,30}"
}

prop_compose! {
    fn valid_event()(
        id in "[A-Za-z0-9-]{1,36}",
        source in uri_valid(),
        r#type in reverse_dns(),
        subject in prop_oneof![uri_valid(), orchestration_subject()],
        datacontenttype in prop_oneof![
            Just(ARVO_CONTENT_TYPE.to_owned()),
            Just("application/json".to_owned()),
            Just("application/cloudevents+json".to_owned()),
        ],
        dataschema in prop::option::of(uri_valid()),
        data in data_map(),
        time in timestamp(),
        to in prop::option::of(uri_valid()),
        accesscontrol in prop::option::of(non_empty()),
        redirectto in prop::option::of(uri_valid()),
        executionunits in prop::option::of(json_number()),
        traceparent in prop::option::of(non_empty()),
        tracestate in prop::option::of(non_empty()),
        parentid in prop::option::of(non_empty()),
        domain in prop::option::of(domain()),
        extensions in extensions(),
    ) -> Event {
        let mut b = Event::builder()
            .id(id)
            .source(source)
            .r#type(r#type)
            .subject(subject)
            .datacontenttype(datacontenttype)
            .dataschema_opt(dataschema)
            .data(data)
            .time(time)
            .to_opt(to)
            .accesscontrol_opt(accesscontrol)
            .redirectto_opt(redirectto)
            .executionunits_opt(executionunits)
            .traceparent_opt(traceparent)
            .tracestate_opt(tracestate)
            .parentid_opt(parentid)
            .domain_opt(domain);
        for (k, v) in extensions {
            b = b.extension(k, v);
        }
        b.build().unwrap_or_else(|e| panic!("the strategy must produce valid events: {e}"))
    }
}

/// One edit of a byte string.
#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Set(usize, u8),
    Insert(usize, u8),
    Remove(usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let interesting =
        prop_oneof![any::<u8>(), prop::sample::select(b"{}[]\":,\\0123456789.eE+-ntfu \xff\x00".to_vec()),];
    prop_oneof![
        (any::<usize>(), 1u8..=255).prop_map(|(i, x)| Mutation::Flip(i, x)),
        (any::<usize>(), interesting.clone()).prop_map(|(i, b)| Mutation::Set(i, b)),
        (any::<usize>(), interesting).prop_map(|(i, b)| Mutation::Insert(i, b)),
        any::<usize>().prop_map(Mutation::Remove),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    if bytes.is_empty() {
        return;
    }
    let at = |i: usize| i % bytes.len();
    match *m {
        Mutation::Flip(i, x) => {
            let i = at(i);
            bytes[i] ^= x;
        }
        Mutation::Set(i, b) => {
            let i = at(i);
            bytes[i] = b;
        }
        Mutation::Insert(i, b) => {
            let i = at(i);
            bytes.insert(i, b);
        }
        Mutation::Remove(i) => {
            let i = at(i);
            bytes.remove(i);
        }
        Mutation::Truncate(i) => {
            let i = at(i);
            bytes.truncate(i);
        }
    }
}

/// Whatever the parser accepts is a valid event: it round-trips.
fn assert_round_trips(e: &Event) {
    let bytes = e.to_json_vec();
    let back = Event::from_slice(&bytes).unwrap_or_else(|err| panic!("re-parse failed: {err}"));
    assert_eq!(&back, e);
    assert_eq!(back.to_json_vec(), bytes);
}

fn zlib(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

// ---------------------------------------------------------------------------------------------
// (a) valid events round-trip
// ---------------------------------------------------------------------------------------------

proptest! {
    #[test]
    fn valid_events_round_trip(e in valid_event()) {
        let bytes = e.to_json_vec();
        let back = Event::from_slice(&bytes).unwrap();
        prop_assert_eq!(&back, &e);
        prop_assert_eq!(back.to_json_vec(), bytes.clone(), "serialization is a fixed point");
        prop_assert_eq!(Event::from_json_value(e.to_json_value()).unwrap(), e.clone());
        prop_assert_eq!(serde_json::from_slice::<Event>(&bytes).unwrap(), e.clone());
        // Extensions keep their order.
        let keys: Vec<&String> = back.extensions().keys().collect();
        let original: Vec<&String> = e.extensions().keys().collect();
        prop_assert_eq!(keys, original);
        // A real orchestration subject parses the same from the parsed event.
        if let Ok(subject) = e.orchestration_subject() {
            prop_assert_eq!(back.orchestration_subject().unwrap().content(), subject.content());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// (b) the parser never panics
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn parsing_arbitrary_bytes_never_panics(bytes in vec(any::<u8>(), 0..2048)) {
        if let Ok(e) = Event::from_slice(&bytes) {
            assert_round_trips(&e);
        }
    }
}

proptest! {
    #[test]
    fn parsing_mutated_events_never_panics(e in valid_event(), mutations in vec(mutation(), 1..8)) {
        let mut bytes = e.to_json_vec();
        for m in &mutations {
            apply(&mut bytes, m);
        }
        if let Ok(parsed) = Event::from_slice(&bytes) {
            assert_round_trips(&parsed);
        }
        if let Ok(value) = serde_json::from_slice::<Value>(&bytes)
            && let Ok(parsed) = Event::from_json_value(value)
        {
            assert_round_trips(&parsed);
        }
    }

    #[test]
    fn parsing_truncated_events_never_panics(e in valid_event(), cut in any::<prop::sample::Index>()) {
        let bytes = e.to_json_vec();
        let cut = cut.index(bytes.len());
        // Every proper prefix of a JSON object is incomplete JSON.
        prop_assert!(Event::from_slice(&bytes[..cut]).is_err());
    }

    #[test]
    fn parsing_arbitrary_json_objects_never_panics(fields in btree_map(
        prop_oneof![prop::sample::select(ATTRIBUTES.to_vec()).prop_map(str::to_owned), ".{0,8}"],
        json_value(),
        0..20,
    )) {
        let value = Value::Object(fields.into_iter().collect());
        if let Ok(e) = Event::from_json_value(value.clone()) {
            assert_round_trips(&e);
        }
        if let Ok(e) = Event::from_slice(&serde_json::to_vec(&value).unwrap()) {
            assert_round_trips(&e);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// (c) subjects
// ---------------------------------------------------------------------------------------------

fn subject_content() -> impl Strategy<Value = SubjectContent> {
    (
        reverse_dns(),
        semver_text(),
        "[^;]{1,40}",
        reverse_dns(),
        prop::option::of(domain()),
        vec(
            (
                prop_oneof![".{0,10}", "[0-9]{1,10}", Just("01".to_owned()), Just("4294967295".to_owned())],
                ".{0,20}",
            ),
            0..8,
        ),
    )
        .prop_map(|(name, version, id, initiator, domain, meta)| SubjectContent {
            orchestrator: SubjectOrchestrator { name, version },
            execution: SubjectExecution { id, initiator, domain },
            meta: meta.into_iter().collect::<IndexMap<_, _>>(),
        })
}

proptest! {
    #[test]
    fn subject_parse_never_panics_on_strings(s in any::<String>()) {
        let _ = Subject::parse(&s);
        prop_assert!(!Subject::is_valid(&s) || Subject::parse(&s).is_ok());
    }

    #[test]
    fn subject_parse_never_panics_on_base64(bytes in vec(any::<u8>(), 0..512)) {
        let _ = Subject::parse(&b64(&bytes));
        // zlib-wrapped arbitrary bytes reach the JSON stage.
        let _ = Subject::parse(&b64(&zlib(&bytes)));
    }

    #[test]
    fn subject_parse_never_panics_on_json_like_content(value in json_value(), c in subject_content()) {
        let _ = Subject::parse(&b64(&zlib(value.to_string().as_bytes())));
        // Structurally right, with one value replaced by arbitrary JSON.
        let mut doc: Value = serde_json::from_str(&c.to_arvo_json()).unwrap();
        doc["execution"]["initiator"] = value.clone();
        let _ = Subject::parse(&b64(&zlib(doc.to_string().as_bytes())));
        doc["meta"] = value;
        let _ = Subject::parse(&b64(&zlib(doc.to_string().as_bytes())));
    }

    #[test]
    fn valid_subjects_round_trip(c in subject_content()) {
        let created = Subject::create(c.clone()).unwrap();
        let parsed = Subject::parse(created.as_str()).unwrap();
        prop_assert_eq!(parsed.content(), &c);
        // The encoding is canonical: encoding the parsed content gives the same string.
        let again = Subject::create(parsed.content().clone()).unwrap();
        prop_assert_eq!(again.as_str(), created.as_str());
        // The subject is URI-valid, so it can travel as an event subject.
        prop_assert!(uri::is_valid_uri(created.as_str()));
        // The inflated JSON is what `to_arvo_json` says, and it is valid JSON of the content.
        let json: Value = serde_json::from_str(&c.to_arvo_json()).unwrap();
        prop_assert_eq!(json["execution"]["initiator"].as_str(), Some(c.execution.initiator.as_str()));
    }
}

// ---------------------------------------------------------------------------------------------
// (d) URIs
// ---------------------------------------------------------------------------------------------

/// Strings rich in percent escapes, valid or not.
fn percent_heavy() -> impl Strategy<Value = String> {
    vec(
        prop_oneof![
            Just("%".to_owned()),
            "%[0-9A-Fa-f]{0,2}",
            Just("%C3%A9".to_owned()),
            Just("%E0%A4".to_owned()),
            Just("%F0%9F%8E%89".to_owned()),
            Just("%ED%A0%80".to_owned()),
            "[a-z #/?é]",
        ],
        0..12,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #[test]
    fn uri_functions_never_panic(s in prop_oneof![any::<String>(), percent_heavy()]) {
        let decoded = uri::decode_uri(&s);
        let valid = uri::is_valid_uri(&s);
        // validateURI: value == encodeURI(decodeURI(value)), false when decoding fails.
        match decoded {
            Ok(d) => prop_assert_eq!(valid, uri::encode_uri(&d) == s),
            Err(_) => prop_assert!(!valid),
        }
    }

    #[test]
    fn encoded_uris_are_valid(s in prop_oneof![any::<String>(), percent_heavy()]) {
        let encoded = uri::encode_uri(&s);
        prop_assert!(uri::is_valid_uri(&encoded), "{:?} -> {:?}", s, encoded);
        prop_assert!(encoded.is_ascii());
        prop_assert_eq!(uri::decode_uri(&encoded).unwrap(), s.as_str(), "decodeURI(encodeURI(s)) == s");
    }

    #[test]
    fn encode_uri_once_is_idempotent(s in prop_oneof![any::<String>(), percent_heavy()]) {
        let once = uri::encode_uri_once(&s).into_owned();
        prop_assert!(uri::is_valid_uri(&once));
        prop_assert_eq!(uri::encode_uri_once(&once), once.as_str());
        if uri::is_valid_uri(&s) {
            prop_assert_eq!(&once, &s);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// (e) semantic versions
// ---------------------------------------------------------------------------------------------

proptest! {
    #[test]
    fn semver_round_trips_and_orders_like_tuples(a in any::<(u64, u64, u64)>(), b in (0u64..20, 0u64..20, 0u64..20)) {
        let va = SemVer::new(a.0, a.1, a.2);
        let text = va.to_string();
        prop_assert_eq!(&text, &format!("{}.{}.{}", a.0, a.1, a.2));
        prop_assert_eq!(text.parse::<SemVer>().unwrap(), va);
        prop_assert!(orchestrator::semver::is_valid(&text));
        let vb = SemVer::new(b.0, b.1, b.2);
        prop_assert_eq!(va.cmp(&vb), a.cmp(&b));
        let small = SemVer::new(b.0 % 3, b.1 % 3, b.2 % 3);
        prop_assert_eq!(small.cmp(&vb), (b.0 % 3, b.1 % 3, b.2 % 3).cmp(&b));
        // Serde uses the text form.
        prop_assert_eq!(serde_json::to_value(va).unwrap(), Value::String(text.clone()));
        prop_assert_eq!(serde_json::from_value::<SemVer>(Value::String(text)).unwrap(), va);
    }

    #[test]
    fn semver_parse_never_panics(s in prop_oneof![any::<String>(), "[0-9.]{0,12}", "[0-9]{18,22}\\.[0-9]\\.[0-9]"]) {
        match s.parse::<SemVer>() {
            Ok(v) => {
                // Only MAJOR.MINOR.PATCH of decimal digits parses, and it means those numbers.
                let parts: Vec<u64> = s.split('.').map(|p| p.parse().unwrap()).collect();
                prop_assert_eq!(parts, vec![v.major, v.minor, v.patch]);
            }
            Err(e) => prop_assert!(e.to_string().contains("invalid semantic version")),
        }
    }
}
