//! Arvo orchestration subjects: `base64(zlib(JSON))` of
//! `{"orchestrator":{"name","version"},"execution":{"id","initiator","domain"},"meta":{…}}`.
//!
//! Compatible with arvo-core both ways: the JSON is written byte for byte as arvo-core writes it
//! (its key order, including JavaScript's ordering of integer-like `meta` keys), compressed into
//! a zlib stream and encoded as padded standard base64; arvo-core parses these subjects, and any
//! subject arvo-core writes parses here. The compressed bytes are not pako's: a compressor made
//! for inputs this short (see `zlib.rs`) gives streams as small as zlib's at a fraction of the
//! cost, and any inflater reads them. Subjects written by arvo-core 2.x, which lack
//! `execution.domain`, parse with a `None` domain.
//!
//! A [`Subject`] keeps the encoded string next to its parsed content and clones in O(1), so a
//! subject is parsed once per execution and then shared.
//!
//! ```
//! use orchestrator::subject::Subject;
//! let root = Subject::builder("arvo.orc.calc.average", "1.0.0", "com.bench.client")
//!     .meta("tenant", "acme")
//!     .build()?;
//! let parsed = Subject::parse(root.as_str())?;
//! assert_eq!(parsed.content().execution.initiator, "com.bench.client");
//!
//! let child = root.child("arvo.orc.calc.add", "1.0.0").build()?;
//! assert_eq!(child.content().execution.initiator, "arvo.orc.calc.average");
//! assert_eq!(child.content().meta["tenant"], "acme");
//! # Ok::<(), orchestrator::subject::SubjectError>(())
//! ```

use std::fmt;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::field_error::{FieldError, FieldErrors};
use crate::{rules, semver};

mod zlib;

/// Largest inflated subject JSON accepted by [`Subject::parse`] (guards against deflate bombs).
pub const MAX_SUBJECT_JSON_BYTES: u64 = 64 * 1024;

const BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// The orchestrator part of a subject.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubjectOrchestrator {
    /// Orchestrator name: the init event type, such as `arvo.orc.calc.average`.
    pub name: String,
    /// Orchestrator version (semver; `0.0.0` means any).
    pub version: String,
}

/// The execution part of a subject.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubjectExecution {
    /// Unique id of this workflow execution.
    pub id: String,
    /// Who started the execution (a reverse-DNS name; a child's initiator is its parent's name).
    pub initiator: String,
    /// Domain of the execution's init event (absent in subjects made by arvo-core 2.x).
    #[serde(default)]
    pub domain: Option<String>,
}

/// The decoded content of an orchestration subject.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubjectContent {
    /// Which orchestrator (and version) owns the workflow.
    pub orchestrator: SubjectOrchestrator,
    /// Which execution this is.
    pub execution: SubjectExecution,
    /// Free-form string metadata (for example `redirectto`).
    pub meta: IndexMap<String, String>,
}

/// Why a subject could not be parsed or created.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubjectError {
    /// The subject is not standard base64.
    #[error("invalid orchestration subject: not base64 ({reason})")]
    Base64 {
        /// What the decoder reported.
        reason: String,
    },
    /// The decoded bytes are not a zlib stream.
    #[error("invalid orchestration subject: not zlib-deflated data ({reason})")]
    Inflate {
        /// What the inflater reported.
        reason: String,
    },
    /// The inflated content exceeds [`MAX_SUBJECT_JSON_BYTES`].
    #[error("invalid orchestration subject: inflated content exceeds {max} bytes")]
    TooLarge {
        /// The limit.
        max: u64,
    },
    /// The inflated content is not JSON of the subject's shape.
    #[error("invalid orchestration subject: content is not subject JSON ({reason})")]
    Json {
        /// What the JSON parser reported.
        reason: String,
    },
    /// The content has the right shape but breaks Arvo's rules.
    #[error("invalid orchestration subject: {0}")]
    Invalid(#[from] FieldErrors),
}

impl SubjectContent {
    /// Every rule of arvo-core's subject schema this content breaks (empty when valid).
    pub fn violations(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if !rules::is_reverse_dns(&self.orchestrator.name) {
            errors.push(FieldError::new(
                "orchestrator.name",
                rules::REVERSE_DNS_RULE,
                Some(&self.orchestrator.name),
            ));
        }
        if !semver::is_valid(&self.orchestrator.version) {
            errors.push(FieldError::new(
                "orchestrator.version",
                "must be a semantic version MAJOR.MINOR.PATCH",
                Some(&self.orchestrator.version),
            ));
        }
        if self.execution.id.is_empty() {
            errors.push(FieldError::new("execution.id", "must be a non-empty string", None));
        } else if self.execution.id.contains(';') {
            errors.push(FieldError::new("execution.id", "must not contain ';'", Some(&self.execution.id)));
        }
        if !rules::is_reverse_dns(&self.execution.initiator) {
            errors.push(FieldError::new(
                "execution.initiator",
                rules::REVERSE_DNS_RULE,
                Some(&self.execution.initiator),
            ));
        }
        if let Some(domain) = &self.execution.domain
            && !rules::is_domain(domain)
        {
            errors.push(FieldError::new("execution.domain", rules::DOMAIN_RULE, Some(domain)));
        }
        errors
    }

    /// The JSON text arvo-core writes for this content (`JSON.stringify` of its object).
    pub fn to_arvo_json(&self) -> String {
        let mut out = String::with_capacity(160);
        out.push_str("{\"orchestrator\":{\"name\":");
        push_json_str(&mut out, &self.orchestrator.name);
        out.push_str(",\"version\":");
        push_json_str(&mut out, &self.orchestrator.version);
        out.push_str("},\"execution\":{\"id\":");
        push_json_str(&mut out, &self.execution.id);
        out.push_str(",\"initiator\":");
        push_json_str(&mut out, &self.execution.initiator);
        out.push_str(",\"domain\":");
        match &self.execution.domain {
            Some(domain) => push_json_str(&mut out, domain),
            None => out.push_str("null"),
        }
        out.push_str("},\"meta\":{");
        for (i, (key, value)) in js_key_order(&self.meta).into_iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            push_json_str(&mut out, key);
            out.push(':');
            push_json_str(&mut out, value);
        }
        out.push_str("}}");
        out
    }
}

fn push_json_str(out: &mut String, value: &str) {
    // JSON.stringify (and serde_json, for valid UTF-8) escapes only quotes, backslashes and
    // control characters: a string without them is written as it is.
    if !value.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
        out.push('"');
        out.push_str(value);
        out.push('"');
        return;
    }
    // serde_json escapes exactly the characters JSON.stringify escapes for valid UTF-8 strings.
    let quoted = serde_json::Value::String(value.to_owned()).to_string();
    out.push_str(&quoted);
}

/// JavaScript objects list integer-like keys (canonical numbers below 2^32 - 1) first, in
/// ascending order, then the other keys in insertion order.
fn js_key_order(map: &IndexMap<String, String>) -> Vec<(&String, &String)> {
    fn array_index(key: &str) -> Option<u32> {
        let n: u32 = key.parse().ok()?;
        (n != u32::MAX && n.to_string() == key).then_some(n)
    }
    let mut indexed: Vec<(u32, (&String, &String))> =
        map.iter().filter_map(|(k, v)| array_index(k).map(|n| (n, (k, v)))).collect();
    if indexed.is_empty() {
        return map.iter().collect();
    }
    indexed.sort_by_key(|(n, _)| *n);
    let mut ordered: Vec<_> = indexed.into_iter().map(|(_, kv)| kv).collect();
    ordered.extend(map.iter().filter(|(k, _)| array_index(k).is_none()));
    ordered
}

/// A validated orchestration subject: the encoded string and its decoded content, shared.
#[derive(Clone, PartialEq, Eq)]
pub struct Subject(Arc<Inner>);

#[derive(PartialEq, Eq)]
struct Inner {
    encoded: String,
    content: SubjectContent,
    /// Whether `encoded` is made of base64 characters only, so that it is an encoded URI as it is
    /// (an event's subject must be): true for every subject [`Subject::create`] makes.
    uri_safe: bool,
}

impl Subject {
    /// Decodes and validates a subject string.
    pub fn parse(encoded: &str) -> Result<Self, SubjectError> {
        let content = decode(encoded)?;
        FieldErrors::check("orchestration subject", content.violations())?;
        let uri_safe = encoded.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='));
        Ok(Self(Arc::new(Inner { encoded: encoded.to_owned(), content, uri_safe })))
    }

    /// True when [`Subject::parse`] would accept `encoded`.
    pub fn is_valid(encoded: &str) -> bool {
        Self::parse(encoded).is_ok()
    }

    /// Validates `content` and encodes it: the JSON is what arvo-core's
    /// `ArvoOrchestrationSubject.create` writes, byte for byte, compressed by this module's own zlib
    /// writer (less work than zlib's, the same size).
    pub fn create(content: SubjectContent) -> Result<Self, SubjectError> {
        FieldErrors::check("orchestration subject", content.violations())?;
        let encoded = encode(&content.to_arvo_json());
        Ok(Self(Arc::new(Inner { encoded, content, uri_safe: true })))
    }

    /// Starts a new root subject (arvo-core's `new`): a fresh uuid v4 execution id, no meta.
    pub fn builder(
        orchestrator: impl Into<String>,
        version: impl Into<String>,
        initiator: impl Into<String>,
    ) -> SubjectBuilder {
        SubjectBuilder {
            orchestrator: orchestrator.into(),
            version: version.into(),
            initiator: initiator.into(),
            execution_id: None,
            domain: None,
            meta: IndexMap::new(),
        }
    }

    /// Starts a child subject of this one (arvo-core's `from`): its initiator is this subject's
    /// orchestrator name, its domain is inherited unless set, and its meta is this subject's meta
    /// overlaid with the child's.
    pub fn child(&self, orchestrator: impl Into<String>, version: impl Into<String>) -> SubjectBuilder {
        let parent = self.content();
        SubjectBuilder {
            orchestrator: orchestrator.into(),
            version: version.into(),
            initiator: parent.orchestrator.name.clone(),
            execution_id: None,
            domain: parent.execution.domain.clone(),
            meta: parent.meta.clone(),
        }
    }

    /// The encoded subject string (what travels in `event.subject`).
    pub fn as_str(&self) -> &str {
        &self.0.encoded
    }

    /// Whether [`as_str`](Self::as_str) is made of base64 characters only, so that an event can
    /// carry it without checking it against the URI rule again (a subject parsed from a string
    /// with, say, surrounding spaces is still checked).
    pub(crate) fn is_uri_safe(&self) -> bool {
        self.0.uri_safe
    }

    /// The decoded content.
    pub fn content(&self) -> &SubjectContent {
        &self.0.content
    }

    /// The orchestrator name.
    pub fn orchestrator_name(&self) -> &str {
        &self.0.content.orchestrator.name
    }

    /// The orchestrator version.
    pub fn orchestrator_version(&self) -> &str {
        &self.0.content.orchestrator.version
    }

    /// The execution id.
    pub fn execution_id(&self) -> &str {
        &self.0.content.execution.id
    }

    /// The initiator.
    pub fn initiator(&self) -> &str {
        &self.0.content.execution.initiator
    }

    /// The execution domain.
    pub fn domain(&self) -> Option<&str> {
        self.0.content.execution.domain.as_deref()
    }

    /// A meta value.
    pub fn meta(&self, key: &str) -> Option<&str> {
        self.0.content.meta.get(key).map(String::as_str)
    }
}

impl fmt::Debug for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subject").field("encoded", &self.0.encoded).field("content", &self.0.content).finish()
    }
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.encoded)
    }
}

impl std::str::FromStr for Subject {
    type Err = SubjectError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl AsRef<str> for Subject {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

/// Builds a root ([`Subject::builder`]) or child ([`Subject::child`]) subject.
#[derive(Debug, Clone)]
#[must_use]
pub struct SubjectBuilder {
    orchestrator: String,
    version: String,
    initiator: String,
    execution_id: Option<String>,
    /// The execution domain (a child starts with its parent's).
    domain: Option<String>,
    meta: IndexMap<String, String>,
}

impl SubjectBuilder {
    /// Sets the execution domain.
    pub fn domain(mut self, domain: impl Into<String>) -> Self {
        self.domain = Some(domain.into());
        self
    }

    /// Sets or clears the domain from an option (`None` clears an inherited domain).
    pub fn domain_opt(mut self, domain: Option<impl Into<String>>) -> Self {
        self.domain = domain.map(Into::into);
        self
    }

    /// Adds (or overrides) a meta entry.
    pub fn meta(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.meta.insert(key.into(), value.into());
        self
    }

    /// Uses a given execution id instead of a fresh uuid v4 (for tests and fixtures).
    pub fn execution_id(mut self, id: impl Into<String>) -> Self {
        self.execution_id = Some(id.into());
        self
    }

    /// Validates and encodes the subject.
    pub fn build(self) -> Result<Subject, SubjectError> {
        Subject::create(SubjectContent {
            orchestrator: SubjectOrchestrator { name: self.orchestrator, version: self.version },
            execution: SubjectExecution {
                id: self.execution_id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
                initiator: self.initiator,
                domain: self.domain,
            },
            meta: self.meta,
        })
    }
}

/// Compresses a subject JSON text into a zlib stream and base64-encodes it.
fn encode(json: &str) -> String {
    BASE64.encode(zlib::compress(json.as_bytes()))
}

fn decode(encoded: &str) -> Result<SubjectContent, SubjectError> {
    let compressed =
        BASE64.decode(encoded.trim()).map_err(|e| SubjectError::Base64 { reason: e.to_string() })?;
    let json = inflate(&compressed)?;
    serde_json::from_slice(&json).map_err(|e| SubjectError::Json { reason: e.to_string() })
}

/// Inflates a zlib stream of at most [`MAX_SUBJECT_JSON_BYTES`], reusing one inflater per thread.
fn inflate(compressed: &[u8]) -> Result<Vec<u8>, SubjectError> {
    thread_local! {
        static INFLATE: std::cell::RefCell<flate2::Decompress> =
            std::cell::RefCell::new(flate2::Decompress::new(true));
    }
    let max = usize::try_from(MAX_SUBJECT_JSON_BYTES).unwrap_or(usize::MAX);
    INFLATE.with(|cell| {
        let mut inflate = cell.borrow_mut();
        inflate.reset(true);
        let mut out = Vec::with_capacity((compressed.len() * 4).min(max));
        loop {
            let consumed = usize::try_from(inflate.total_in()).unwrap_or(usize::MAX).min(compressed.len());
            let before = (inflate.total_in(), inflate.total_out());
            let status = inflate
                .decompress_vec(&compressed[consumed..], &mut out, flate2::FlushDecompress::Finish)
                .map_err(|e| SubjectError::Inflate { reason: e.to_string() })?;
            if out.len() > max {
                return Err(SubjectError::TooLarge { max: MAX_SUBJECT_JSON_BYTES });
            }
            match status {
                flate2::Status::StreamEnd => return Ok(out),
                _ if out.len() == out.capacity() => {
                    out.reserve(out.capacity().min(max + 1 - out.len()).max(1))
                }
                _ if before == (inflate.total_in(), inflate.total_out()) => {
                    return Err(SubjectError::Inflate { reason: "truncated zlib stream".to_owned() });
                }
                _ => {}
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn content() -> SubjectContent {
        SubjectContent {
            orchestrator: SubjectOrchestrator { name: "arvo.orc.test".into(), version: "1.0.0".into() },
            execution: SubjectExecution {
                id: "abc".into(),
                initiator: "com.test.client".into(),
                domain: None,
            },
            meta: IndexMap::new(),
        }
    }

    #[test]
    fn round_trips() {
        let s = Subject::create(content()).unwrap();
        let p = Subject::parse(s.as_str()).unwrap();
        assert_eq!(p.content(), &content());
        assert_eq!(
            content().to_arvo_json(),
            r#"{"orchestrator":{"name":"arvo.orc.test","version":"1.0.0"},"execution":{"id":"abc","initiator":"com.test.client","domain":null},"meta":{}}"#
        );
    }

    #[test]
    fn rejects_bad_initiator_naming_the_rule() {
        let err = Subject::builder("arvo.orc.test", "1.0.0", "com.app").build().unwrap_err();
        let SubjectError::Invalid(errors) = &err else { panic!("{err}") };
        assert!(errors.has_field("execution.initiator"));
        assert!(err.to_string().contains("reverse-DNS"), "{err}");
        assert!(err.to_string().contains("com.app"), "{err}");
    }

    #[test]
    fn reports_every_broken_rule() {
        let mut c = content();
        c.orchestrator.name = "bad".into();
        c.orchestrator.version = "1.0".into();
        c.execution.id = "a;b".into();
        c.execution.domain = Some("Bad Domain".into());
        let SubjectError::Invalid(errors) = Subject::create(c).unwrap_err() else { panic!() };
        let fields: Vec<_> = errors.errors.iter().map(|e| e.field.as_ref()).collect();
        assert_eq!(fields, ["orchestrator.name", "orchestrator.version", "execution.id", "execution.domain"]);
    }

    #[test]
    fn rejects_garbage() {
        assert!(matches!(Subject::parse("not base64!"), Err(SubjectError::Base64 { .. })));
        assert!(matches!(Subject::parse("aGVsbG8="), Err(SubjectError::Inflate { .. })));
        assert!(matches!(Subject::parse(&encode("[1,2]")), Err(SubjectError::Json { .. })));
        assert!(matches!(Subject::parse(""), Err(SubjectError::Inflate { .. })));
    }

    proptest::proptest! {
        /// The fast path writes what serde_json (JSON.stringify's escaping) writes.
        #[test]
        fn json_strings_are_written_as_serde_json_writes_them(value in "(\\PC|[\"\\\\\u{0}-\u{1f}]){0,40}") {
            let mut out = String::new();
            push_json_str(&mut out, &value);
            proptest::prop_assert_eq!(out, serde_json::to_string(&value).unwrap());
        }
    }

    #[test]
    fn rejects_deflate_bombs() {
        let big = format!(
            r#"{{"orchestrator":{{"name":"a.b.c","version":"1.0.0"}},"execution":{{"id":"x","initiator":"a.b.c"}},"meta":{{"k":"{}"}}}}"#,
            "a".repeat(200_000)
        );
        assert!(matches!(Subject::parse(&encode(&big)), Err(SubjectError::TooLarge { .. })));
    }

    #[test]
    fn child_inherits_and_overlays() {
        let parent = Subject::builder("arvo.orc.parent", "1.0.0", "com.test.client")
            .domain("ext.review")
            .meta("a", "1")
            .meta("b", "2")
            .build()
            .unwrap();
        let child = parent.child("arvo.orc.child", "2.0.0").meta("b", "3").meta("c", "4").build().unwrap();
        let c = child.content();
        assert_eq!(c.execution.initiator, "arvo.orc.parent");
        assert_eq!(c.execution.domain.as_deref(), Some("ext.review"));
        assert_eq!(c.meta.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>(), ["a=1", "b=3", "c=4"]);
        let cleared = parent.child("arvo.orc.child", "2.0.0").domain_opt(None::<String>).build().unwrap();
        assert_eq!(cleared.domain(), None);
    }

    #[test]
    fn integer_like_meta_keys_come_first_as_in_javascript() {
        let mut c = content();
        c.meta.insert("b".into(), "x".into());
        c.meta.insert("10".into(), "y".into());
        c.meta.insert("2".into(), "z".into());
        c.meta.insert("01".into(), "w".into());
        assert!(c.to_arvo_json().ends_with(r#""meta":{"2":"z","10":"y","b":"x","01":"w"}}"#));
    }
}
