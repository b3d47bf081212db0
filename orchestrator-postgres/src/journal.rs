//! The compact journal on PostgreSQL ([`orchestrator::memory::journal_codec`], the encoding the
//! SQLite store uses): what a commit writes, how rows read back, and the migration of the rows
//! written before it (schema version 10).
//!
//! A journal row keeps its consumed and produced events as one encoded value (`events`) and its
//! record as a snapshot or a JSON Patch against the row before it (`record_bytes`). A commit may
//! write a delta only against the record it read: the store keeps, per workflow, the record its
//! last read returned ([`Bases`]), with the workflow's journal state (the version of its last
//! journal row and the delta bytes since its last snapshot). The commit's compare-and-swap on
//! the version makes sure that record is still the stored one; without one (a write that did
//! not read first, a row whose previous version has no journal row) the row is a snapshot.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use orchestrator::event::Event;
use orchestrator::memory::journal_codec::{self, CodecError, RecordDecoder, RecordEncoder};
use orchestrator::memory::{JournalRecord, MemoryError, from_unix_ms};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_postgres::Transaction;

use crate::error::{OpenError, PgError, backend};

/// What the store last read of a workflow: the base of its next journal row.
#[derive(Debug)]
pub(crate) struct Base {
    /// The version read.
    pub(crate) version: i64,
    /// The record's text at that version.
    pub(crate) record: String,
    /// The version of the workflow's last journal row.
    pub(crate) tail: Option<i64>,
    /// The delta bytes written since the last snapshot.
    pub(crate) since: Option<i64>,
}

/// The bases read and not yet committed against, by workflow. A step reads its workflow, then
/// commits: each entry lives from one to the other. Steps that read and never commit (failed,
/// handed back) leave theirs until the workflow's next read; past [`Bases::MOST`] entries the
/// map is cleared (the next commits write snapshots).
#[derive(Debug, Default)]
pub(crate) struct Bases(Mutex<HashMap<String, Base>>);

impl Bases {
    /// The most bases kept.
    const MOST: usize = 16_384;

    /// Keeps what a read of workflow `id` returned.
    pub(crate) fn keep(&self, id: &str, base: Base) {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if map.len() >= Self::MOST && !map.contains_key(id) {
            map.clear();
        }
        map.insert(id.to_owned(), base);
    }

    /// Takes the base of workflow `id`, if one was read.
    pub(crate) fn take(&self, id: &str) -> Option<Base> {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if map.is_empty() { None } else { map.remove(id) }
    }
}

/// A journal row encoded for a commit.
#[derive(Debug)]
pub(crate) struct EncodedEntry {
    /// The record's JSON text (what the workflow's row stores).
    pub(crate) record_json: String,
    /// The consumed and produced events.
    pub(crate) events: Vec<u8>,
    /// The record: a snapshot, or a delta against the row before.
    pub(crate) record_bytes: Vec<u8>,
    /// The delta bytes since the last snapshot, after this row.
    pub(crate) since: i64,
}

/// Encodes the journal row of a commit of `record` over version `prev` of workflow `id`, a
/// delta when `base` is that version's record and that version has a journal row.
pub(crate) fn encode_entry<R: Serialize>(
    id: &str,
    record: &R,
    prev: Option<i64>,
    base: Option<Base>,
    consumed: Option<&Event>,
    produced: &[Event],
) -> Result<EncodedEntry, MemoryError> {
    let codec = |source| backend(id, PgError::Codec { what: "journal entry", source });
    let value = serde_json::to_value(record).map_err(codec)?;
    let record_json = serde_json::to_string(&value).map_err(codec)?;
    let previous = base.filter(|b| prev == Some(b.version) && b.tail == prev).and_then(|b| {
        let since = u64::try_from(b.since.unwrap_or(0)).unwrap_or(0);
        // A stored record that does not parse gets a snapshot after it.
        serde_json::from_str::<Value>(&b.record).ok().map(|v| (v, RecordEncoder { since_snapshot: since }))
    });
    let encoded = match &previous {
        Some((previous, encoder)) => encoder.encode(Some(previous), &value, &record_json, id),
        None => RecordEncoder::default().encode(None, &value, &record_json, id),
    };
    Ok(EncodedEntry {
        events: journal_codec::encode_events(consumed, produced, id).map_err(codec)?,
        record_bytes: encoded.bytes,
        since: i64::try_from(encoded.next.since_snapshot).unwrap_or(i64::MAX),
        record_json,
    })
}

/// A corrupt journal value of workflow `id` at `version`: a permanent error.
fn corrupt(id: &str, what: &'static str, version: impl Into<Option<i64>>, source: CodecError) -> MemoryError {
    backend(id, PgError::Journal { what, version: version.into(), source })
}

/// The events a workflow produced for an event, from a journal row's `events`.
pub(crate) fn produced(id: &str, version: Option<i64>, events: &[u8]) -> Result<Vec<Event>, MemoryError> {
    journal_codec::decode_events(events, id)
        .map(|(_, produced)| produced)
        .map_err(|e| corrupt(id, "journaled events", version, e))
}

/// Whether a row's record bytes are a delta (its decoding starts at a snapshot before it).
pub(crate) fn is_delta(id: &str, version: i64, record: &[u8]) -> Result<bool, MemoryError> {
    journal_codec::is_snapshot(record).map(|s| !s).map_err(|e| corrupt(id, "journaled record", version, e))
}

/// Decodes journal rows `(version, at_ms, events, record_bytes)` of workflow `id`, read oldest
/// first; `lead` are the `(version, record_bytes)` of the rows from the latest snapshot before
/// the first of them (empty when the first is a snapshot).
pub(crate) fn decode_rows<R: DeserializeOwned>(
    id: &str,
    lead: &[tokio_postgres::Row],
    rows: &[tokio_postgres::Row],
) -> Result<Vec<JournalRecord<R>>, MemoryError> {
    let mut decoder = RecordDecoder::new();
    let mut last: Option<i64> = None;
    for row in lead {
        advance(&mut decoder, &mut last, id, row.get(0), row.get::<_, &[u8]>(1))?;
    }
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let version: i64 = row.get(0);
        let at_ms: i64 = row.get(1);
        let value = advance(&mut decoder, &mut last, id, version, row.get::<_, &[u8]>(3))?;
        let record =
            R::deserialize(value).map_err(|source| backend(id, PgError::Codec { what: "record", source }))?;
        let (consumed, produced) = journal_codec::decode_events(row.get::<_, &[u8]>(2), id)
            .map_err(|e| corrupt(id, "journaled events", version, e))?;
        out.push(JournalRecord {
            version: u64::try_from(version)
                .map_err(|_| backend(id, PgError::Invalid { what: "version", value: version }))?,
            at: from_unix_ms(
                u64::try_from(at_ms)
                    .map_err(|_| backend(id, PgError::Invalid { what: "time", value: at_ms }))?,
            ),
            consumed,
            produced,
            record,
        });
    }
    Ok(out)
}

/// Applies the record bytes of row `version` to `decoder` (`last`: the version applied before)
/// and returns the record at that row. A delta applies only to the row just before it (a commit
/// writes one only then): one after a gap is corrupt.
fn advance<'d>(
    decoder: &'d mut RecordDecoder,
    last: &mut Option<i64>,
    id: &str,
    version: i64,
    bytes: &[u8],
) -> Result<&'d Value, MemoryError> {
    if is_delta(id, version, bytes)? && last.is_some_and(|l| l + 1 != version) {
        return Err(corrupt(id, "journaled record", version, CodecError::NoBase));
    }
    *last = Some(version);
    decoder.apply(bytes, id).map_err(|e| corrupt(id, "journaled record", version, e))
}

/// Rows re-encoded per statement by [`migrate`].
const MIGRATE_BATCH: i64 = 500;

/// Schema version 10: re-encodes the journal rows written before it (each record a snapshot:
/// they were stored whole), then drops the old columns. Runs in the migration's transaction.
pub(crate) async fn migrate(tx: &Transaction<'_>, s: &str) -> Result<(), OpenError> {
    // The archive has no key: a temporary index walks it in order.
    tx.batch_execute(&format!("CREATE INDEX archive_journal_migrating ON {s}.archive_journal (wf, version)"))
        .await
        .map_err(OpenError::Migration)?;
    for table in ["journal", "archive_journal"] {
        let read = format!(
            "SELECT wf, version, record::text, \
                    '[' || COALESCE(consumed, 'null') || ',' || produced || ']' \
             FROM {s}.{table} WHERE (wf, version) > ($1, $2) ORDER BY wf, version LIMIT {MIGRATE_BATCH}"
        );
        let write = format!(
            "UPDATE {s}.{table} t SET events = u.e, record_bytes = u.r \
             FROM unnest($1::text[], $2::bigint[], $3::bytea[], $4::bytea[]) AS u(wf, v, e, r) \
             WHERE t.wf = u.wf AND t.version = u.v"
        );
        let (mut after_wf, mut after_version) = (String::new(), i64::MIN);
        loop {
            let rows = tx.query(&read, &[&after_wf, &after_version]).await.map_err(OpenError::Migration)?;
            let Some(last) = rows.last() else { break };
            (after_wf, after_version) = (last.get(0), last.get(1));
            let mut columns = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            for row in &rows {
                let wf: String = row.get(0);
                let record: String = row.get(2);
                let pair: String = row.get(3);
                columns.2.push(journal_codec::encode_events_json(&pair, &wf));
                columns.3.push(journal_codec::encode_snapshot(&record, &wf));
                columns.1.push(row.get::<_, i64>(1));
                columns.0.push(wf);
            }
            tx.execute(&write, &[&columns.0, &columns.1, &columns.2, &columns.3])
                .await
                .map_err(OpenError::Migration)?;
        }
        tx.batch_execute(&format!(
            "ALTER TABLE {s}.{table} DROP COLUMN consumed, DROP COLUMN produced, DROP COLUMN record,
                 ALTER COLUMN events SET NOT NULL, ALTER COLUMN record_bytes SET NOT NULL"
        ))
        .await
        .map_err(OpenError::Migration)?;
    }
    tx.batch_execute(&format!("DROP INDEX {s}.archive_journal_migrating")).await.map_err(OpenError::Migration)
}
