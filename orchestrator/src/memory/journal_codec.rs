//! The compact encoding of journal rows, for store implementers (the SQLite and PostgreSQL
//! stores use it; nothing else needs to).
//!
//! A journal keeps, for each version of a workflow, the record written, the event consumed and
//! the events produced. Stored naively, every row repeats the whole record, so a workflow whose
//! record grows with each step (a resumable collecting responses) writes a journal quadratic in
//! its steps. This module stores instead:
//!
//! * **Records as snapshots and deltas.** A row's record is either a full snapshot or a JSON
//!   Patch (RFC 6902) against the record of the previous version (appending to an array or
//!   adding a key gives a patch of one operation). [`RecordEncoder`] takes a snapshot at the
//!   first row and whenever the (uncompressed) delta bytes accumulated since the last snapshot
//!   reach the size of the current full record: snapshots come geometrically as the record
//!   grows, the journal stays linear in what changed, and reading any version applies at most
//!   about one record's worth of deltas after the latest snapshot at or before it
//!   ([`RecordDecoder`]).
//! * **Compressed bytes.** Records, deltas and the events of a row ([`encode_events`]) are
//!   deflated (raw deflate, with a preset dictionary: an event's keys and constants, then the
//!   workflow's id, so that the subject, which events and records repeat, costs a few bytes)
//!   when that makes them smaller.
//!
//! Every encoded value starts with one tag byte: bit 0 says delta (1) or snapshot (0), bit 1
//! says deflated, bit 2 (only with bit 1) says which preset dictionary (bit 2 set: the second,
//! which adds the keys of a workflow record; what this version writes); the other bits are
//! zero. Decoding never panics: corrupt bytes give a
//! [`CodecError`]. The store keeps per workflow the version of its last journal row and the
//! delta bytes written since its last snapshot (the [`RecordEncoder`] state) and, by the rows'
//! tags, finds the snapshot to start from when reading.

use std::cell::RefCell;

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};
use serde_json::Value;

use crate::event::Event;

/// Tag bit: the bytes are a delta (JSON Patch) rather than a snapshot.
const DELTA: u8 = 0b01;
/// Tag bit: the payload is deflated.
const DEFLATED: u8 = 0b10;
/// Tag bit: the payload was deflated with the second preset dictionary ([`RECORD_DICTIONARY`]
/// before [`DICTIONARY`] and the workflow's id). Values without it (written before it existed)
/// were deflated with the first (no [`RECORD_DICTIONARY`]).
const DICTIONARY_2: u8 = 0b100;
/// Payloads shorter than this are stored as they are (deflate would not pay).
const MIN_DEFLATE: usize = 64;
/// What the preset dictionary starts with, before the workflow's id: the keys and constants of
/// a serialized event (part of the format: changing it makes stored values unreadable).
const DICTIONARY: &str = concat!(
    r#"{"id":"","source":"","specversion":"1.0","type":"","subject":"","#,
    r#""datacontenttype":"application/cloudevents+json;charset=UTF-8;profile=arvo","dataschema":"","#,
    r#""data":{},"time":"","to":"","accesscontrol":null,"redirectto":null,"executionunits":null,"#,
    r#""traceparent":null,"tracestate":null,"parentid":"","domain":null}"#,
);

/// What the second preset dictionary adds before [`DICTIONARY`]: the keys and constants of a
/// workflow record (the orchestrators' and resumables' records, a machine's snapshot) and of the
/// JSON Patch operations between two of them, then values events often hold (part of the
/// format, as [`DICTIONARY`]). A store holding other records still decodes them; they only
/// compress less.
const RECORD_DICTIONARY: &str = concat!(
    r#"{"executionStatus":"normal","subject":"","parentSubject":null,"initEventId":"","done":false,"#,
    r#""state":{"status":"active","state$$":null,"events":{"expected":{}},"subject":"","context":{},"#,
    r#""state":{"version":1,"fingerprint":,"states":,"now_ms":,"next_seq":0,"started":true,"#,
    r#""done":false,"active":[],"history_slots":0,"history":[],"timers":[]},"epochMs":,"value":[]},"#,
    r#""lastEventId":"","lastEventSource":"","wakeAtMs":}"#,
    r#"[{"op":"add","path":"/state/context/","value":},{"op":"remove","path":"/state/"},"#,
    r#"{"op":"replace","path":"/state/state/active/1","value":},"#,
    r#"{"op":"replace","path":"/state/state/now_ms","value":},"#,
    r#"{"op":"replace","path":"/state/value/0","value":""},"#,
    r#"{"op":"replace","path":"/lastEventId","value":""},"#,
    r#"{"op":"replace","path":"/lastEventSource","value":""}]"#,
    // Then what events repeat beyond their keys: an empty row, common prefixes and suffixes of
    // types, sources and schemas, the shape of a time.
    r#"[null,[]]{"id":"","source":"com.","specversion":"1.0","type":"evt.","subject":"","#,
    r##""datacontenttype":"application/cloudevents+json;charset=UTF-8;profile=arvo","dataschema":"#/","##,
    r#""data":{"parentSubject$$":null},"time":"2026-01-01T00:00:00.000+00:00","to":"arvo.orc.","#,
    r#""accesscontrol":null,"redirectto":"arvo.orc.","executionunits":null,"traceparent":"00-","#,
    r#""tracestate":null,"parentid":"","domain":null}.success.error/1.0.0sys."#,
);

/// The largest payload inflated (a corrupt stream must not exhaust memory).
pub const MAX_DECODED_BYTES: usize = 1 << 30;

/// Why journal bytes could not be encoded or decoded.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    /// No bytes at all.
    #[error("empty journal value")]
    Empty,
    /// The tag byte is not one this module writes.
    #[error("unknown journal value tag {0:#04x}")]
    Tag(u8),
    /// The deflated payload is corrupt or truncated.
    #[error("corrupt deflated journal value: {0}")]
    Inflate(String),
    /// The payload inflates to more than [`MAX_DECODED_BYTES`].
    #[error("journal value larger than {MAX_DECODED_BYTES} bytes")]
    TooLarge,
    /// The payload is not the JSON expected (a record, a patch, events).
    #[error("journal value is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// A delta came first: there is no record to apply it to.
    #[error("a journal delta without a snapshot before it")]
    NoBase,
    /// The delta does not apply to the record before it.
    #[error("journal delta does not apply: {0}")]
    Patch(#[from] json_patch::PatchError),
}

/// Whether encoded record bytes are a snapshot (true) or a delta (false).
pub fn is_snapshot(bytes: &[u8]) -> Result<bool, CodecError> {
    Ok(tag(bytes)? & DELTA == 0)
}

fn tag(bytes: &[u8]) -> Result<u8, CodecError> {
    let &tag = bytes.first().ok_or(CodecError::Empty)?;
    if tag & !(DELTA | DEFLATED | DICTIONARY_2) != 0 || tag & (DEFLATED | DICTIONARY_2) == DICTIONARY_2 {
        return Err(CodecError::Tag(tag));
    }
    Ok(tag)
}

/// How a store encodes the records of one workflow's journal rows: what it keeps of the
/// workflow between writes (the delta bytes since the last snapshot).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecordEncoder {
    /// The uncompressed delta bytes written since the last snapshot.
    pub since_snapshot: u64,
}

/// A record encoded for a journal row, with the encoder's state after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedRecord {
    /// The bytes to store.
    pub bytes: Vec<u8>,
    /// Whether they are a snapshot.
    pub snapshot: bool,
    /// The state to keep for the workflow's next row.
    pub next: RecordEncoder,
}

impl RecordEncoder {
    /// Encodes `record` (whose JSON text is `json`) for the row following the one that stored
    /// `previous` (`None`: the first row, or the previous version has no row; a snapshot then).
    /// `dictionary` is the workflow's id (the same must be given to decode).
    pub fn encode(
        self,
        previous: Option<&Value>,
        record: &Value,
        json: &str,
        dictionary: &str,
    ) -> EncodedRecord {
        self.encode_with_snapshot(previous, record, json, dictionary, None)
    }

    /// [`encode`](Self::encode), given the snapshot of `json` when the caller has made it already
    /// ([`encode_snapshot`] with the same dictionary: a store keeping the latest record encoded),
    /// so that a row that is a snapshot does not deflate the record a second time.
    pub fn encode_with_snapshot(
        self,
        previous: Option<&Value>,
        record: &Value,
        json: &str,
        dictionary: &str,
        snapshot: Option<&[u8]>,
    ) -> EncodedRecord {
        let snapshot = |_| EncodedRecord {
            bytes: snapshot.map_or_else(|| encode_snapshot(json, dictionary), <[u8]>::to_vec),
            snapshot: true,
            next: RecordEncoder { since_snapshot: 0 },
        };
        let Some(previous) = previous else { return snapshot(()) };
        let patch = json_patch::diff(previous, record);
        let Ok(delta) = serde_json::to_vec(&patch) else { return snapshot(()) };
        let since = self.since_snapshot.saturating_add(delta.len() as u64);
        if snapshot_due(since, json.len()) {
            return snapshot(());
        }
        EncodedRecord {
            bytes: pack(DELTA, &delta, dictionary),
            snapshot: false,
            next: RecordEncoder { since_snapshot: since },
        }
    }
}

/// The snapshot rule: a snapshot is due once the delta bytes since the last one reach the size
/// of the full record.
pub fn snapshot_due(delta_bytes_since_snapshot: u64, record_bytes: usize) -> bool {
    delta_bytes_since_snapshot >= record_bytes as u64
}

/// Rebuilds records from encoded rows read oldest first, starting at a snapshot.
#[derive(Debug, Default, Clone)]
pub struct RecordDecoder {
    current: Option<Value>,
}

impl RecordDecoder {
    /// A decoder with no record yet: the first row given must be a snapshot.
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies the next row's bytes (a snapshot replaces the record, a delta patches it) and
    /// returns the record at that row.
    pub fn apply(&mut self, bytes: &[u8], dictionary: &str) -> Result<&Value, CodecError> {
        let tag = tag(bytes)?;
        let payload = unpack(tag, &bytes[1..], dictionary)?;
        if tag & DELTA == 0 {
            return Ok(self.current.insert(serde_json::from_slice(&payload)?));
        }
        let patch: json_patch::Patch = serde_json::from_slice(&payload)?;
        let current = self.current.as_mut().ok_or(CodecError::NoBase)?;
        json_patch::patch(current, &patch)?;
        Ok(current)
    }

    /// The record at the last row applied.
    pub fn current(&self) -> Option<&Value> {
        self.current.as_ref()
    }
}

/// Encodes a row's consumed and produced events as one value (a JSON pair, deflated with the
/// workflow's id as dictionary when that is smaller).
pub fn encode_events(
    consumed: Option<&Event>,
    produced: &[Event],
    dictionary: &str,
) -> Result<Vec<u8>, serde_json::Error> {
    let json = serde_json::to_vec(&(consumed, produced))?;
    Ok(pack(0, &json, dictionary))
}

/// [`encode_events`] from the JSON text of the pair `[consumed or null, [produced…]]` (a store
/// migrating rows it kept as JSON text; the text is not checked).
pub fn encode_events_json(pair: &str, dictionary: &str) -> Vec<u8> {
    pack(0, pair.as_bytes(), dictionary)
}

/// [`encode_events`] from each event's JSON text (not checked): what a store that serialized the
/// events already (for its outbox) encodes, without serializing them a second time. The bytes are
/// those [`encode_events`] gives for the same events.
pub fn encode_events_texts(consumed: Option<&str>, produced: &[String], dictionary: &str) -> Vec<u8> {
    let len = consumed.map_or(4, str::len) + produced.iter().map(|json| json.len() + 1).sum::<usize>();
    let mut pair = String::with_capacity(len + 4);
    pair.push('[');
    pair.push_str(consumed.unwrap_or("null"));
    pair.push_str(",[");
    for (i, json) in produced.iter().enumerate() {
        if i > 0 {
            pair.push(',');
        }
        pair.push_str(json);
    }
    pair.push_str("]]");
    encode_events_json(&pair, dictionary)
}

/// A snapshot of a record given as JSON text (not checked), without an encoder: what a store
/// migrating old rows stores for a record it cannot diff.
pub fn encode_snapshot(json: &str, dictionary: &str) -> Vec<u8> {
    pack(0, json.as_bytes(), dictionary)
}

/// The JSON text of a snapshot made by [`encode_snapshot`] (or by [`RecordEncoder::encode`]),
/// without parsing it: what a store keeping a workflow's latest record encoded reads back.
pub fn decode_snapshot<'a>(
    bytes: &'a [u8],
    dictionary: &str,
) -> Result<std::borrow::Cow<'a, [u8]>, CodecError> {
    let tag = tag(bytes)?;
    if tag & DELTA != 0 {
        return Err(CodecError::Tag(tag));
    }
    unpack(tag, &bytes[1..], dictionary)
}

/// Decodes what [`encode_events`] encoded: the consumed event and the produced ones.
pub fn decode_events(bytes: &[u8], dictionary: &str) -> Result<(Option<Event>, Vec<Event>), CodecError> {
    let tag = tag(bytes)?;
    if tag & DELTA != 0 {
        return Err(CodecError::Tag(tag));
    }
    let payload = unpack(tag, &bytes[1..], dictionary)?;
    Ok(serde_json::from_slice(&payload)?)
}

/// The tag, then the payload, deflated when that pays.
fn pack(kind: u8, payload: &[u8], dictionary: &str) -> Vec<u8> {
    if payload.len() >= MIN_DEFLATE
        && let Some(deflated) = deflate(payload, &preset(DICTIONARY_2, dictionary))
        && deflated.len() < payload.len()
    {
        let mut out = Vec::with_capacity(deflated.len() + 1);
        out.push(kind | DEFLATED | DICTIONARY_2);
        out.extend_from_slice(&deflated);
        return out;
    }
    let mut out = Vec::with_capacity(payload.len() + 1);
    out.push(kind);
    out.extend_from_slice(payload);
    out
}

fn unpack<'a>(
    tag: u8,
    payload: &'a [u8],
    dictionary: &str,
) -> Result<std::borrow::Cow<'a, [u8]>, CodecError> {
    if tag & DEFLATED == 0 {
        return Ok(std::borrow::Cow::Borrowed(payload));
    }
    inflate(payload, &preset(tag & DICTIONARY_2, dictionary)).map(std::borrow::Cow::Owned)
}

/// The preset dictionary of a workflow: [`RECORD_DICTIONARY`] (for values tagged
/// [`DICTIONARY_2`]), [`DICTIONARY`], then its id.
fn preset(version: u8, id: &str) -> Vec<u8> {
    let records = if version & DICTIONARY_2 != 0 { RECORD_DICTIONARY } else { "" };
    [records.as_bytes(), DICTIONARY.as_bytes(), id.as_bytes()].concat()
}

thread_local! {
    // zlib's deflate state is ~256 KiB: each thread keeps one and resets it.
    static DEFLATE: RefCell<Compress> = RefCell::new(Compress::new(Compression::default(), false));
    static INFLATE: RefCell<Decompress> = RefCell::new(Decompress::new(false));
}

/// Raw deflate of `input` with the preset `dictionary`; `None` if zlib refuses.
fn deflate(input: &[u8], dictionary: &[u8]) -> Option<Vec<u8>> {
    DEFLATE.with(|cell| {
        let mut deflate = cell.borrow_mut();
        deflate.reset();
        if !dictionary.is_empty() {
            deflate.set_dictionary(dictionary).ok()?;
        }
        let mut out = Vec::with_capacity(input.len() / 2 + 64);
        loop {
            let consumed = usize::try_from(deflate.total_in()).unwrap_or(usize::MAX).min(input.len());
            match deflate.compress_vec(&input[consumed..], &mut out, FlushCompress::Finish).ok()? {
                Status::StreamEnd => return Some(out),
                _ => out.reserve(out.capacity().max(64)),
            }
        }
    })
}

/// Inflates a raw deflate stream made by [`deflate`] with the same `dictionary`.
fn inflate(input: &[u8], dictionary: &[u8]) -> Result<Vec<u8>, CodecError> {
    INFLATE.with(|cell| {
        let mut inflate = cell.borrow_mut();
        inflate.reset(false);
        if !dictionary.is_empty() {
            inflate.set_dictionary(dictionary).map_err(|e| CodecError::Inflate(e.to_string()))?;
        }
        let mut out = Vec::with_capacity(input.len().saturating_mul(4).min(MAX_DECODED_BYTES));
        loop {
            let consumed = usize::try_from(inflate.total_in()).unwrap_or(usize::MAX).min(input.len());
            let before = (inflate.total_in(), inflate.total_out());
            let status = inflate
                .decompress_vec(&input[consumed..], &mut out, FlushDecompress::Finish)
                .map_err(|e| CodecError::Inflate(e.to_string()))?;
            if out.len() > MAX_DECODED_BYTES {
                return Err(CodecError::TooLarge);
            }
            match status {
                Status::StreamEnd => return Ok(out),
                _ if out.len() == out.capacity() => {
                    out.reserve(out.capacity().min(MAX_DECODED_BYTES + 1 - out.len()).max(64));
                }
                _ if before == (inflate.total_in(), inflate.total_out()) => {
                    return Err(CodecError::Inflate("truncated deflate stream".to_owned()));
                }
                _ => {}
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const ID: &str = "arvo.orc.test;1.0.0;some-subject";

    /// Encodes `records` as consecutive rows, returning the rows.
    fn encode_all(records: &[Value]) -> Vec<EncodedRecord> {
        let mut encoder = RecordEncoder::default();
        let mut previous: Option<&Value> = None;
        let mut rows = Vec::new();
        for record in records {
            let json = serde_json::to_string(record).unwrap();
            let row = encoder.encode(previous, record, &json, ID);
            encoder = row.next;
            previous = Some(record);
            rows.push(row);
        }
        rows
    }

    /// A deterministic pseudo-random sequence of records: keys added, changed and removed,
    /// arrays grown and shrunk, nested values replaced.
    fn records(n: usize, seed: u64) -> Vec<Value> {
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut current = json!({ "status": "start", "items": [], "ctx": {} });
        let mut out = Vec::new();
        for step in 0..n {
            match rng.u8(0..6) {
                0 => current["items"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({ "n": step, "s": "x".repeat(rng.usize(0..40)) })),
                1 => {
                    let items = current["items"].as_array_mut().unwrap();
                    if !items.is_empty() {
                        items.remove(rng.usize(0..items.len()));
                    }
                }
                2 => {
                    current["ctx"][format!("k{}", rng.u8(0..20))] = json!(rng.u32(..));
                }
                3 => {
                    let key = format!("k{}", rng.u8(0..20));
                    current["ctx"].as_object_mut().unwrap().remove(&key);
                }
                4 => current["status"] = json!(["start", "wait", "done"][rng.usize(0..3)]),
                _ => current["nested"] = json!({ "a": [step, { "b": null }], "~/odd key": true }),
            }
            out.push(current.clone());
        }
        out
    }

    #[test]
    fn random_sequences_round_trip_from_every_snapshot() {
        for seed in 0..20 {
            let records = records(200, seed);
            let rows = encode_all(&records);
            assert!(rows[0].snapshot, "the first row is a snapshot");
            // Read everything from the start.
            let mut decoder = RecordDecoder::new();
            for (row, record) in rows.iter().zip(&records) {
                assert_eq!(decoder.apply(&row.bytes, ID).unwrap(), record);
            }
            // Read from each snapshot onwards, as a store reading one version does.
            for start in (0..rows.len()).filter(|&i| rows[i].snapshot) {
                let mut decoder = RecordDecoder::new();
                for (row, record) in rows[start..].iter().zip(&records[start..]) {
                    assert_eq!(decoder.apply(&row.bytes, ID).unwrap(), record);
                }
            }
        }
    }

    #[test]
    fn appending_or_adding_a_key_gives_a_patch_of_constant_size() {
        let mut record = json!({ "collected": [], "keys": {} });
        let mut previous = record.clone();
        let mut sizes = Vec::new();
        for i in 0..500 {
            record["collected"].as_array_mut().unwrap().push(json!({ "i": i, "v": "response" }));
            record["keys"][format!("k{i:04}")] = json!(i);
            let patch = serde_json::to_vec(&json_patch::diff(&previous, &record)).unwrap();
            sizes.push(patch.len());
            previous = record.clone();
        }
        let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
        // Three numbers (index, value, key's value) grow from one digit to three.
        assert!(max - min <= 6, "patch sizes stay constant (digits aside): {min}..{max}");
    }

    #[test]
    fn snapshots_come_when_deltas_reach_the_record_size_so_the_total_is_linear() {
        let mut record = json!({ "collected": [] });
        let mut records = Vec::new();
        for i in 0..2000 {
            record["collected"].as_array_mut().unwrap().push(json!({ "i": i, "v": "response" }));
            records.push(record.clone());
        }
        let rows = encode_all(&records);
        let snapshots: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].snapshot).collect();
        // Geometric: a handful of snapshots, each about twice as far as the one before.
        assert!(snapshots.len() < 20, "{} snapshots: {snapshots:?}", snapshots.len());
        let stored: usize = rows.iter().map(|r| r.bytes.len()).sum();
        let last = serde_json::to_string(records.last().unwrap()).unwrap().len();
        assert!(stored < 8 * last, "stored {stored} bytes for a final record of {last}");
        // And the rule itself.
        assert!(snapshot_due(100, 100) && !snapshot_due(99, 100));
        // Reading a version applies less than one record's worth of deltas after its snapshot.
        for (row, record) in rows.iter().zip(&records) {
            let size = serde_json::to_string(record).unwrap().len() as u64;
            assert!(
                row.next.since_snapshot < size,
                "{} delta bytes for a record of {size}",
                row.next.since_snapshot
            );
        }
    }

    #[test]
    fn a_record_without_a_previous_one_is_a_snapshot_and_small_values_are_kept_plain() {
        let row = RecordEncoder { since_snapshot: 5 }.encode(None, &json!("x"), "\"x\"", ID);
        assert!(row.snapshot && is_snapshot(&row.bytes).unwrap());
        assert_eq!(row.next, RecordEncoder { since_snapshot: 0 });
        assert_eq!(row.bytes, b"\x00\"x\"");
    }

    /// An event of workflow [`ID`] with id `id`, with text to escape and enough to deflate.
    fn event(id: &str) -> Event {
        Event::builder()
            .id(id)
            .source("com.test.client")
            .r#type("com.test.event")
            .subject(ID)
            .data_json(json!({ "n": id, "text": "quote \" and \u{e9}", "pad": "y".repeat(100) }))
            .build()
            .unwrap()
    }

    #[test]
    fn events_round_trip() {
        let consumed = event("in");
        let produced = [event("out-1"), event("out-2")];
        let bytes = encode_events(Some(&consumed), &produced, ID).unwrap();
        assert_eq!(bytes[0], DEFLATED | DICTIONARY_2, "deflated: it pays");
        let (c, p) = decode_events(&bytes, ID).unwrap();
        assert_eq!((c.as_ref(), p.as_slice()), (Some(&consumed), &produced[..]));
        let bytes = encode_events(None, &[], ID).unwrap();
        assert_eq!(decode_events(&bytes, ID).unwrap(), (None, vec![]));
    }

    #[test]
    fn events_from_their_texts_encode_as_the_events_do() {
        let text = |e: &Event| serde_json::to_string(e).unwrap();
        let consumed = event("in");
        for (consumed, produced) in [
            (Some(&consumed), vec![]),
            (None, vec![event("out-1")]),
            (Some(&consumed), vec![event("out-1"), event("out-2"), event("out-3")]),
        ] {
            let texts: Vec<String> = produced.iter().map(text).collect();
            let bytes = encode_events_texts(consumed.map(text).as_deref(), &texts, ID);
            assert_eq!(bytes, encode_events(consumed, &produced, ID).unwrap());
        }
    }

    #[test]
    fn bad_bytes_are_typed_errors() {
        let mut decoder = RecordDecoder::new();
        assert!(matches!(decoder.apply(&[], ID), Err(CodecError::Empty)));
        assert!(matches!(decoder.apply(&[0x80, b'1'], ID), Err(CodecError::Tag(0x80))));
        assert!(matches!(decoder.apply(b"\x00{not json", ID), Err(CodecError::Json(_))));
        let delta = b"\x01[{\"op\":\"add\",\"path\":\"/a\",\"value\":1}]";
        assert!(matches!(decoder.apply(delta, ID), Err(CodecError::NoBase)), "a delta first");
        decoder.apply(b"\x00[1]", ID).unwrap();
        assert!(matches!(decoder.apply(delta, ID), Err(CodecError::Patch(_))), "a path not there");
        let mut decoder = RecordDecoder::new();
        assert!(matches!(decoder.apply(b"\x02\xff\xff\xff", ID), Err(CodecError::Inflate(_))));
        let events = encode_events(None, &[], ID).unwrap();
        let mut truncated = pack(0, "z".repeat(500).as_bytes(), ID);
        truncated.truncate(truncated.len() / 2);
        assert!(matches!(decode_events(&truncated, ID), Err(CodecError::Inflate(_))));
        assert!(matches!(decode_events(&[DELTA, b'['], ID), Err(CodecError::Tag(_))));
        assert!(decode_events(&events, "another dictionary").is_ok(), "plain: no dictionary involved");
    }

    /// The encoding is an on-disk format: a value written by this version (a deflated snapshot,
    /// made with the preset dictionary) still decodes. Changing [`DICTIONARY`] or the tags breaks
    /// this test, and every journal already stored.
    #[test]
    fn a_stored_value_still_decodes() {
        let record = json!({"subject": ID, "context": {"values": [1, 2, 3]}, "status": "active"});
        // `encode_snapshot(&record.to_string(), ID)` as this version wrote it.
        let frozen = "02ab460a23426a816683c3af02a8b85aa92c31a73415e8ce68431d231de358a0d7416e2a2d0619945c925996aa540b00";
        let bytes: Vec<u8> = (0..frozen.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&frozen[i..i + 2], 16).unwrap())
            .collect();
        assert_eq!(bytes[0], DEFLATED, "a deflated snapshot");
        let mut decoder = RecordDecoder::new();
        assert_eq!(decoder.apply(&bytes, ID).unwrap(), &record);
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn unhex(hex: &str) -> Vec<u8> {
        (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect()
    }

    /// What this version writes (the second dictionary) is frozen the same way: changing
    /// [`RECORD_DICTIONARY`] breaks this test.
    #[test]
    fn a_value_with_the_second_dictionary_still_decodes() {
        let json = r#"{"executionStatus":"normal","subject":"S","parentSubject":null,"initEventId":"e","done":false,"state":{"subject":"S","context":{},"state":{"version":1,"fingerprint":7,"states":5,"now_ms":2,"next_seq":0,"started":true,"done":false,"active":[0,2],"history_slots":0,"history":[],"timers":[]},"epochMs":1,"value":["adding"]},"lastEventId":"e","lastEventSource":"s"}"#;
        let bytes = encode_snapshot(json, ID);
        assert_eq!(bytes[0], DEFLATED | DICTIONARY_2, "deflated with the second dictionary");
        let frozen = "06ab26aec80f26aecc4fc55de8a3184562d96d8e28bc4d11a5b71139c5b7818e11b925b821a2080715c340072a6116e5a958cbf262a55a00";
        assert_eq!(hex(&bytes), frozen, "the encoding changed: stored values would not decode");
        let mut decoder = RecordDecoder::new();
        let expected: Value = serde_json::from_str(json).unwrap();
        assert_eq!(decoder.apply(&unhex(frozen), ID).unwrap(), &expected);
        // The same record with the first dictionary only is larger.
        let first = deflate(json.as_bytes(), &preset(0, ID)).unwrap();
        assert!(bytes.len() < first.len(), "{} < {}", bytes.len(), first.len());
    }

    #[test]
    fn a_snapshot_decodes_to_its_text_and_a_delta_is_refused() {
        let json = r#"{"subject":"x","state":{"context":{"values":[1,2,3]}},"pad":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}"#;
        let bytes = encode_snapshot(json, ID);
        assert_ne!(bytes[0] & DEFLATED, 0, "deflated");
        assert_eq!(decode_snapshot(&bytes, ID).unwrap().as_ref(), json.as_bytes());
        assert_eq!(decode_snapshot(b"\x00{}", ID).unwrap().as_ref(), b"{}", "plain");
        assert!(matches!(decode_snapshot(b"\x01[]", ID), Err(CodecError::Tag(0x01))));
        assert!(matches!(decode_snapshot(&[], ID), Err(CodecError::Empty)));
    }

    #[test]
    fn a_snapshot_given_is_used_as_it_is_and_a_delta_ignores_it() {
        let records = records(3, 7);
        let json = |v: &Value| serde_json::to_string(v).unwrap();
        let made = encode_snapshot(&json(&records[0]), ID);
        let given = RecordEncoder::default().encode_with_snapshot(
            None,
            &records[0],
            &json(&records[0]),
            ID,
            Some(&made),
        );
        assert_eq!(given, RecordEncoder::default().encode(None, &records[0], &json(&records[0]), ID));
        let marker = [0u8, b'1'];
        let first = RecordEncoder::default().encode_with_snapshot(
            None,
            &records[0],
            &json(&records[0]),
            ID,
            Some(&marker),
        );
        assert_eq!(first.bytes, marker, "the caller's snapshot is stored as given");
        let delta = first.next.encode_with_snapshot(
            Some(&records[0]),
            &records[1],
            &json(&records[1]),
            ID,
            Some(&marker),
        );
        assert!(!delta.snapshot && delta.bytes != marker, "a delta is made as before");
    }

    #[test]
    fn the_dictionary_bit_without_deflate_is_refused() {
        let mut decoder = RecordDecoder::new();
        assert!(matches!(decoder.apply(b"\x04{}", ID), Err(CodecError::Tag(0x04))));
        assert!(matches!(decode_events(b"\x04[null,[]]", ID), Err(CodecError::Tag(0x04))));
    }
}
