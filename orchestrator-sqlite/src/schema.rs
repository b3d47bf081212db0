//! The schema and its versioned migrations (`PRAGMA user_version`).
//!
//! Each step of [`MIGRATIONS`] moves the schema one version up; a database at version `n` gets
//! the steps `n + 1 ..` in one `BEGIN IMMEDIATE` transaction (so two processes opening a new file
//! at once migrate it once). A database at a version above [`SCHEMA_VERSION`] is refused.

use std::path::Path;

use orchestrator::memory::SubjectColumns;
use orchestrator::memory::journal_codec::{self, RecordEncoder};
use rusqlite::{Connection, TransactionBehavior};

use crate::OpenError;

/// Version 1: workflows with their wake-up index, the journal, leases, the fencing counter and
/// the archive.
const V1: &str = "
CREATE TABLE workflows (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    version INTEGER NOT NULL,
    record TEXT NOT NULL,
    parent_subject TEXT,
    initiator TEXT,
    source TEXT NOT NULL,
    wake_at_ms INTEGER,
    remove_at_ms INTEGER,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL
);
CREATE INDEX workflows_wake ON workflows (wake_at_ms, id) WHERE wake_at_ms IS NOT NULL;
CREATE INDEX workflows_parent ON workflows (parent_subject, seq) WHERE parent_subject IS NOT NULL;
CREATE INDEX workflows_remove ON workflows (remove_at_ms) WHERE remove_at_ms IS NOT NULL;

CREATE TABLE journal (
    id TEXT NOT NULL,
    version INTEGER NOT NULL,
    at_ms INTEGER NOT NULL,
    consumed_event_id TEXT,
    consumed TEXT,
    produced TEXT NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (id, version)
) WITHOUT ROWID;
CREATE INDEX journal_consumed ON journal (id, consumed_event_id) WHERE consumed_event_id IS NOT NULL;

CREATE TABLE leases (
    id TEXT PRIMARY KEY NOT NULL,
    token INTEGER NOT NULL,
    expires_at_ms INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE counters (
    name TEXT PRIMARY KEY NOT NULL,
    value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO counters (name, value) VALUES ('fencing_token', 0);

CREATE TABLE workflows_archive (
    id TEXT PRIMARY KEY NOT NULL,
    version INTEGER NOT NULL,
    record TEXT NOT NULL,
    parent_subject TEXT,
    initiator TEXT,
    source TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    archived_at_ms INTEGER NOT NULL
);
CREATE TABLE journal_archive (
    id TEXT NOT NULL,
    version INTEGER NOT NULL,
    at_ms INTEGER NOT NULL,
    consumed_event_id TEXT,
    consumed TEXT,
    produced TEXT NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (id, version)
) WITHOUT ROWID;
";

/// Version 2: the outbox, the events in flight (see `orchestrator::outbox`). `AUTOINCREMENT`
/// so positions are never reused, even after the newest event is removed.
const V2: &str = "
CREATE TABLE outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id TEXT NOT NULL UNIQUE,
    event TEXT NOT NULL,
    added_at_ms INTEGER NOT NULL
);
";

/// Version 3: the journal becomes a rowid table keyed by the workflow's integer `seq` instead of
/// a `WITHOUT ROWID` table keyed by the subject (about 200 bytes): entries of several kilobytes
/// are appended at the end of the table instead of being inserted into a B-tree of long keys.
/// Entries of workflows that no longer exist (none are left by the library) are dropped.
const V3: &str = "
CREATE TABLE journal_v3 (
    seq INTEGER PRIMARY KEY,
    wf INTEGER NOT NULL,
    version INTEGER NOT NULL,
    at_ms INTEGER NOT NULL,
    consumed_event_id TEXT,
    consumed TEXT,
    produced TEXT NOT NULL,
    record TEXT NOT NULL
);
INSERT INTO journal_v3 (wf, version, at_ms, consumed_event_id, consumed, produced, record)
    SELECT w.seq, j.version, j.at_ms, j.consumed_event_id, j.consumed, j.produced, j.record
    FROM journal j JOIN workflows w ON w.id = j.id ORDER BY w.seq, j.version;
DROP TABLE journal;
ALTER TABLE journal_v3 RENAME TO journal;
CREATE UNIQUE INDEX journal_version ON journal (wf, version);
CREATE INDEX journal_consumed ON journal (wf, consumed_event_id, version) WHERE consumed_event_id IS NOT NULL;
";

/// Version 4: leases record their owner (see `SqliteConfig::owner`), so that a process
/// restarting under the same owner name releases what its previous, crashed run held.
const V4: &str = "
ALTER TABLE leases ADD COLUMN owner TEXT;
CREATE INDEX leases_owner ON leases (owner) WHERE owner IS NOT NULL;
";

/// Version 5: idempotency keyed by the consumed event's `(source, id)` (CloudEvents identity):
/// the journal (and its archive) records the consumed event's source, filled for existing
/// entries from the stored event, and the consumed-event index covers it; workflows record
/// until when their wake-up is claimed (`Memory::claim_due`; any write clears it).
const V5: &str = "
ALTER TABLE workflows ADD COLUMN claimed_until_ms INTEGER;
ALTER TABLE journal ADD COLUMN consumed_source TEXT;
UPDATE journal SET consumed_source = json_extract(consumed, '$.source')
    WHERE consumed IS NOT NULL AND json_valid(consumed);
DROP INDEX journal_consumed;
CREATE INDEX journal_consumed ON journal (wf, consumed_event_id, consumed_source, version)
    WHERE consumed_event_id IS NOT NULL;
ALTER TABLE journal_archive ADD COLUMN consumed_source TEXT;
UPDATE journal_archive SET consumed_source = json_extract(consumed, '$.source')
    WHERE consumed IS NOT NULL AND json_valid(consumed);
";

/// Version 6: the workflow index (`orchestrator::memory::WorkflowIndex`). Each workflow keeps
/// its status (written by every commit), its root workflow and what its subject says (parsed
/// when its row is first written: the orchestrator's version, the execution id and the meta, as
/// a JSON object and, for lookups, as rows of `workflow_meta`, deleted with the workflow).
/// Indexes list workflows newest first (creation time, then id) by orchestrator (`source`),
/// status, initiator and root; the execution id is indexed for short-id lookups. Existing rows:
/// the status is read from the record (a `WorkflowRecord`'s failure latch, end and wake-up) here,
/// the root and the subject's columns by [`backfill_index`] after this step.
const V6: &str = "
ALTER TABLE workflows ADD COLUMN status TEXT NOT NULL DEFAULT 'active';
ALTER TABLE workflows ADD COLUMN root TEXT;
ALTER TABLE workflows ADD COLUMN orchestrator_version TEXT;
ALTER TABLE workflows ADD COLUMN execution_id TEXT;
ALTER TABLE workflows ADD COLUMN meta TEXT;
CREATE TABLE workflow_meta (
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    wf INTEGER NOT NULL,
    PRIMARY KEY (key, value, wf)
) WITHOUT ROWID;
CREATE INDEX workflow_meta_wf ON workflow_meta (wf);
CREATE TRIGGER workflows_meta_gone AFTER DELETE ON workflows BEGIN
    DELETE FROM workflow_meta WHERE wf = old.seq;
END;
UPDATE workflows SET status = CASE
        WHEN json_extract(record, '$.executionStatus') = 'failure' THEN 'failed'
        WHEN json_extract(record, '$.done') = 1 THEN 'done'
        ELSE 'waiting' END
    WHERE json_valid(record) AND json_type(record) = 'object'
      AND (json_extract(record, '$.executionStatus') = 'failure' OR json_extract(record, '$.done') = 1
           OR wake_at_ms IS NOT NULL);
UPDATE workflows SET status = 'waiting' WHERE status = 'active' AND wake_at_ms IS NOT NULL;
CREATE INDEX workflows_created ON workflows (created_at_ms DESC, id DESC);
CREATE INDEX workflows_source_created ON workflows (source, created_at_ms DESC, id DESC);
CREATE INDEX workflows_status_created ON workflows (status, created_at_ms DESC, id DESC);
CREATE INDEX workflows_initiator_created ON workflows (initiator, created_at_ms DESC, id DESC)
    WHERE initiator IS NOT NULL;
CREATE INDEX workflows_root_created ON workflows (root, created_at_ms DESC, id DESC);
CREATE INDEX workflows_execution ON workflows (execution_id) WHERE execution_id IS NOT NULL;
";

/// Version 7: the catalog, what nodes recorded of the workflows they run (see
/// [`orchestrator::memory::Catalog`]).
const V7: &str = "
CREATE TABLE catalog (
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    version TEXT NOT NULL,
    document TEXT NOT NULL,
    recorded_at_ms INTEGER NOT NULL,
    PRIMARY KEY (kind, name, version)
) WITHOUT ROWID;
";

/// Version 8: recorded answers, what idempotent services answered to each request, by the
/// service's topic and the request's source and id (see [`orchestrator::memory::Answers`]).
const V8: &str = "
CREATE TABLE answers (
    service TEXT NOT NULL,
    source TEXT NOT NULL,
    id TEXT NOT NULL,
    produced TEXT NOT NULL,
    recorded_at_ms INTEGER NOT NULL,
    PRIMARY KEY (service, source, id)
) WITHOUT ROWID;
";

/// Version 9: dead letters, the events a node gave up on, with why (see
/// [`orchestrator::memory::DeadLetterStore`]); one per event id, listed by workflow.
const V9: &str = "
CREATE TABLE dead_letters (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id TEXT NOT NULL UNIQUE,
    subject TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    reason TEXT NOT NULL,
    event TEXT NOT NULL
);
CREATE INDEX dead_letters_subject ON dead_letters (subject, seq);
";

/// Version 10: the compact journal (see [`orchestrator::memory::journal_codec`]). A row keeps its
/// record as a snapshot or as a delta against the previous row's record, and its consumed and
/// produced events as one value (both deflated when that pays); the consumed event's identity
/// stays in plain columns for redelivery lookups. Each workflow keeps the version of its last
/// journal row (`journal_tail`, the base of the next delta) and the delta bytes written since its
/// last snapshot (`journal_since`). The existing rows are re-encoded by [`compact_journal`] after
/// this step (the archive too).
const V10: &str = "
ALTER TABLE workflows ADD COLUMN journal_tail INTEGER;
ALTER TABLE workflows ADD COLUMN journal_since INTEGER NOT NULL DEFAULT 0;
ALTER TABLE journal RENAME TO journal_v9;
DROP INDEX journal_version;
DROP INDEX journal_consumed;
CREATE TABLE journal (
    seq INTEGER PRIMARY KEY,
    wf INTEGER NOT NULL,
    version INTEGER NOT NULL,
    at_ms INTEGER NOT NULL,
    consumed_event_id TEXT,
    consumed_source TEXT,
    events BLOB NOT NULL,
    record BLOB NOT NULL
);
CREATE UNIQUE INDEX journal_version ON journal (wf, version);
CREATE INDEX journal_consumed ON journal (wf, consumed_event_id, consumed_source, version)
    WHERE consumed_event_id IS NOT NULL;
ALTER TABLE journal_archive RENAME TO journal_archive_v9;
CREATE TABLE journal_archive (
    id TEXT NOT NULL,
    version INTEGER NOT NULL,
    at_ms INTEGER NOT NULL,
    consumed_event_id TEXT,
    consumed_source TEXT,
    events BLOB NOT NULL,
    record BLOB NOT NULL,
    PRIMARY KEY (id, version)
) WITHOUT ROWID;
";

/// The migration steps, oldest first: step `i` leads to version `i + 1`.
/// Version 11: the listing indexes of the workflow index end at the creation time. Each entry
/// of an SQLite index carries the row's integer key (`seq`) anyway; the workflow id (a subject:
/// ~200 bytes) as the last column made each of the five indexes about as large as the row's
/// other columns together. The listings keep their order (creation time, then id, descending):
/// SQLite walks the index by creation time and sorts only workflows created in the same
/// millisecond by id (`USE TEMP B-TREE FOR RIGHT PART OF ORDER BY`), and stops at the page size.
const V11: &str = "
DROP INDEX workflows_created;
DROP INDEX workflows_source_created;
DROP INDEX workflows_status_created;
DROP INDEX workflows_initiator_created;
DROP INDEX workflows_root_created;
CREATE INDEX workflows_created ON workflows (created_at_ms DESC);
CREATE INDEX workflows_source_created ON workflows (source, created_at_ms DESC);
CREATE INDEX workflows_status_created ON workflows (status, created_at_ms DESC);
CREATE INDEX workflows_initiator_created ON workflows (initiator, created_at_ms DESC)
    WHERE initiator IS NOT NULL;
CREATE INDEX workflows_root_created ON workflows (root, created_at_ms DESC);
";

/// Version 12: a workflow's latest record (the `record` column of `workflows` and
/// `workflows_archive`) is stored in the journal's encoding, as a snapshot (see
/// [`crate::record_column`]): about a fifth of its JSON text. No statement: [`encode_records`]
/// re-encodes the existing rows after this step.
const V12: &str = "";

/// Version 13: a root workflow's `root` is `NULL` instead of a copy of its id (a subject: ~200
/// bytes, in the row and in the root index); the root index holds the descendants only, and a
/// listing by root adds the root itself by its id.
const V13: &str = "
DROP INDEX workflows_root_created;
UPDATE workflows SET root = NULL WHERE root = id;
CREATE INDEX workflows_root_created ON workflows (root, created_at_ms DESC) WHERE root IS NOT NULL;
";

/// Version 14: the journal (and its archive) finds a consumed event by a 32-bit hash of its
/// identity (`consumed_key`, see [`crate::consumed_key`]) instead of its id and source as text,
/// in the row and in the index. [`key_consumed_events`] fills the key of the existing rows and
/// drops the text columns after this step.
const V14: &str = "
ALTER TABLE journal ADD COLUMN consumed_key INTEGER;
ALTER TABLE journal_archive ADD COLUMN consumed_key INTEGER;
DROP INDEX journal_consumed;
";

/// Version 15: the listing indexes ascend by creation time. Listings (newest first) walk them
/// backwards as before; new workflows are appended at the end of an index's range instead of
/// inserted at its start, which split pages in halves and left them about half empty.
const V15: &str = "
DROP INDEX workflows_created;
DROP INDEX workflows_source_created;
DROP INDEX workflows_status_created;
DROP INDEX workflows_initiator_created;
DROP INDEX workflows_root_created;
CREATE INDEX workflows_created ON workflows (created_at_ms);
CREATE INDEX workflows_source_created ON workflows (source, created_at_ms);
CREATE INDEX workflows_status_created ON workflows (status, created_at_ms);
CREATE INDEX workflows_initiator_created ON workflows (initiator, created_at_ms) WHERE initiator IS NOT NULL;
CREATE INDEX workflows_root_created ON workflows (root, created_at_ms) WHERE root IS NOT NULL;
";

/// Version 16: workflows are found by the last 16 characters of their id (`workflows_id`, an
/// index on `substr(id, -16)`), then by the whole id, instead of by a unique index of the whole id
/// (a subject: ~200 bytes, as large as the rest of the row's indexes together). A subject ends
/// with its zlib checksum and its compressed execution id, so ids seldom share an end, and one
/// that does costs one more row compared. The writer keeps ids unique (a creation is a
/// compare-and-swap on no row, in its write transaction). SQLite cannot drop a `UNIQUE`
/// constraint: the table is rebuilt (the same rows and columns, `record` declared as the blob it
/// holds since version 12) with its indexes and trigger.
const V16: &str = "
CREATE TABLE workflows_v16 (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL,
    version INTEGER NOT NULL,
    record BLOB NOT NULL,
    parent_subject TEXT,
    initiator TEXT,
    source TEXT NOT NULL,
    wake_at_ms INTEGER,
    remove_at_ms INTEGER,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    claimed_until_ms INTEGER,
    status TEXT NOT NULL DEFAULT 'active',
    root TEXT,
    orchestrator_version TEXT,
    execution_id TEXT,
    meta TEXT,
    journal_tail INTEGER,
    journal_since INTEGER NOT NULL DEFAULT 0
);
INSERT INTO workflows_v16 (seq, id, version, record, parent_subject, initiator, source, wake_at_ms,
        remove_at_ms, created_at_ms, updated_at_ms, claimed_until_ms, status, root,
        orchestrator_version, execution_id, meta, journal_tail, journal_since)
    SELECT seq, id, version, record, parent_subject, initiator, source, wake_at_ms, remove_at_ms,
        created_at_ms, updated_at_ms, claimed_until_ms, status, root, orchestrator_version,
        execution_id, meta, journal_tail, journal_since
    FROM workflows ORDER BY seq;
DROP TABLE workflows;
ALTER TABLE workflows_v16 RENAME TO workflows;
CREATE INDEX workflows_id ON workflows (substr(id, -16));
CREATE INDEX workflows_wake ON workflows (wake_at_ms, id) WHERE wake_at_ms IS NOT NULL;
CREATE INDEX workflows_parent ON workflows (parent_subject, seq) WHERE parent_subject IS NOT NULL;
CREATE INDEX workflows_remove ON workflows (remove_at_ms) WHERE remove_at_ms IS NOT NULL;
CREATE INDEX workflows_execution ON workflows (execution_id) WHERE execution_id IS NOT NULL;
CREATE INDEX workflows_created ON workflows (created_at_ms);
CREATE INDEX workflows_source_created ON workflows (source, created_at_ms);
CREATE INDEX workflows_status_created ON workflows (status, created_at_ms);
CREATE INDEX workflows_initiator_created ON workflows (initiator, created_at_ms) WHERE initiator IS NOT NULL;
CREATE INDEX workflows_root_created ON workflows (root, created_at_ms) WHERE root IS NOT NULL;
CREATE TRIGGER workflows_meta_gone AFTER DELETE ON workflows BEGIN
    DELETE FROM workflow_meta WHERE wf = old.seq;
END;
";

pub(crate) const MIGRATIONS: &[&str] =
    &[V1, V2, V3, V4, V5, V6, V7, V8, V9, V10, V11, V12, V13, V14, V15, V16];

/// After [`V14`]: each row's `consumed_key` from its consumed event's id and source (a row whose
/// source is unknown, which no lookup could find before, gets none), then the text columns
/// dropped and the index made on the key.
fn key_consumed_events(conn: &Connection) -> rusqlite::Result<()> {
    for (table, key) in [("journal", "seq"), ("journal_archive", "id, version")] {
        let rows: Vec<(rusqlite::types::Value, Option<i64>, String, String)> = conn
            .prepare(&format!(
                "SELECT {}, consumed_source, consumed_event_id FROM {table} \
                 WHERE consumed_event_id IS NOT NULL AND consumed_source IS NOT NULL",
                if table == "journal" { "seq, NULL" } else { "id, version" }
            ))?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
            .collect::<Result<_, _>>()?;
        let filter = if key == "seq" { "seq = ?2" } else { "id = ?2 AND version = ?3" };
        let mut update = conn.prepare(&format!("UPDATE {table} SET consumed_key = ?1 WHERE {filter}"))?;
        for (first, version, source, id) in rows {
            let hash = crate::consumed_key::consumed_key(orchestrator::memory::EventKey {
                source: &source,
                id: &id,
            });
            match version {
                None => update.execute(rusqlite::params![hash, first])?,
                Some(version) => update.execute(rusqlite::params![hash, first, version])?,
            };
        }
    }
    conn.execute_batch(
        "ALTER TABLE journal DROP COLUMN consumed_event_id;
         ALTER TABLE journal DROP COLUMN consumed_source;
         ALTER TABLE journal_archive DROP COLUMN consumed_event_id;
         ALTER TABLE journal_archive DROP COLUMN consumed_source;
         CREATE INDEX journal_consumed ON journal (wf, consumed_key, version) WHERE consumed_key IS NOT NULL;",
    )
}

/// After [`V12`]: every record kept as JSON text re-encoded (a text that is not JSON is encoded
/// all the same: it reads back as the same text, and fails to decode as it did before).
fn encode_records(conn: &Connection) -> rusqlite::Result<()> {
    for table in ["workflows", "workflows_archive"] {
        let rows: Vec<(i64, String, String)> = conn
            .prepare(&format!("SELECT rowid, id, record FROM {table} WHERE typeof(record) = 'text'"))?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<Result<_, _>>()?;
        let mut update = conn.prepare(&format!("UPDATE {table} SET record = ?2 WHERE rowid = ?1"))?;
        for (rowid, id, json) in rows {
            update.execute(rusqlite::params![rowid, crate::record_column::snapshot(&json, &id)])?;
        }
    }
    Ok(())
}

/// After [`V10`]: the journal rows of version 9 (`journal_v9`, `journal_archive_v9`) re-encoded
/// into the compact tables, then the old tables dropped. Rows are read in order, one workflow
/// after the other, each record encoded against the one before it (a delta when the versions
/// follow each other). A record or events that are not valid JSON are kept as they are (as a
/// snapshot), so that reading them fails as it did before.
fn compact_journal(conn: &Connection) -> rusqlite::Result<()> {
    type Old = (String, i64, i64, Option<String>, Option<String>, Option<String>, String, String);
    for (select, insert) in [
        (
            "SELECT w.id, j.version, j.at_ms, j.consumed_event_id, j.consumed_source, j.consumed, j.produced, \
             j.record, j.wf FROM journal_v9 j JOIN workflows w ON w.seq = j.wf ORDER BY j.wf, j.version",
            "INSERT INTO journal (wf, version, at_ms, consumed_event_id, consumed_source, events, record) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        ),
        (
            "SELECT id, version, at_ms, consumed_event_id, consumed_source, consumed, produced, record, NULL \
             FROM journal_archive_v9 ORDER BY id, version",
            "INSERT INTO journal_archive (id, version, at_ms, consumed_event_id, consumed_source, events, record) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        ),
    ] {
        let mut read = conn.prepare(select)?;
        let mut rows = read.query([])?;
        let mut write = conn.prepare(insert)?;
        // The previous row of the same workflow: its id, version and record.
        let mut previous: Option<(String, i64, Option<serde_json::Value>)> = None;
        let mut encoder = RecordEncoder::default();
        while let Some(row) = rows.next()? {
            let old: Old = (
                row.get(0)?,
                row.get(1)?,
                row.get(2)?,
                row.get(3)?,
                row.get(4)?,
                row.get(5)?,
                row.get(6)?,
                row.get(7)?,
            );
            let wf: Option<i64> = row.get(8)?;
            let (id, version, at_ms, event_id, source, consumed, produced, record) = old;
            let events = journal_codec::encode_events_json(
                &format!("[{},{}]", consumed.as_deref().unwrap_or("null"), produced),
                &id,
            );
            let value: Option<serde_json::Value> = serde_json::from_str(&record).ok();
            let base = match (&previous, &value) {
                (Some((pid, pv, Some(base))), Some(_)) if *pid == id && *pv + 1 == version => Some(base),
                _ => None,
            };
            if base.is_none() {
                encoder = RecordEncoder::default();
            }
            let bytes = match &value {
                Some(value) => {
                    let encoded = encoder.encode(base, value, &record, &id);
                    encoder = encoded.next;
                    encoded.bytes
                }
                None => journal_codec::encode_snapshot(&record, &id),
            };
            let key: rusqlite::types::Value = match wf {
                Some(wf) => wf.into(),
                None => id.clone().into(),
            };
            write.execute(rusqlite::params![key, version, at_ms, event_id, source, events, bytes])?;
            previous = Some((id, version, value));
        }
    }
    conn.execute_batch("DROP TABLE journal_v9; DROP TABLE journal_archive_v9;")
}

/// After [`V6`]: each existing workflow's root (up its parents to the last one stored, or the
/// first one missing) and its subject's columns (when its id is an orchestration subject).
fn backfill_index(conn: &Connection) -> rusqlite::Result<()> {
    let rows: Vec<(i64, String, Option<String>)> = conn
        .prepare("SELECT seq, id, parent_subject FROM workflows")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<Result<_, _>>()?;
    let parents: std::collections::HashMap<&str, &str> =
        rows.iter().filter_map(|(_, id, parent)| Some((id.as_str(), parent.as_deref()?))).collect();
    let mut update = conn.prepare(
        "UPDATE workflows SET root = ?2, orchestrator_version = ?3, execution_id = ?4, meta = ?5 WHERE seq = ?1",
    )?;
    let mut meta =
        conn.prepare("INSERT OR IGNORE INTO workflow_meta (key, value, wf) VALUES (?1, ?2, ?3)")?;
    for (seq, id, _) in &rows {
        let mut root = id.as_str();
        for _ in 0..rows.len() {
            match parents.get(root) {
                Some(parent) => root = parent,
                None => break,
            }
        }
        let columns = SubjectColumns::parse(id);
        let columns = columns.as_ref();
        update.execute(rusqlite::params![
            seq,
            root,
            columns.map(|c| c.orchestrator_version.as_str()),
            columns.map(|c| c.execution_id.as_str()),
            columns.map(SubjectColumns::meta_json),
        ])?;
        for (key, value) in columns.map_or(&[][..], |c| &c.meta) {
            meta.execute(rusqlite::params![key, value, seq])?;
        }
    }
    Ok(())
}

/// The schema version this library writes and reads.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Brings the database to [`SCHEMA_VERSION`], or refuses a newer one.
pub(crate) fn migrate(conn: &mut Connection, path: &Path) -> Result<(), OpenError> {
    let open = |source| OpenError::Open { path: path.to_path_buf(), source };
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(open)?;
    let found: i64 = tx.query_row("PRAGMA user_version", [], |row| row.get(0)).map_err(open)?;
    if found > SCHEMA_VERSION {
        return Err(OpenError::NewerSchema { path: path.to_path_buf(), found, supported: SCHEMA_VERSION });
    }
    let Ok(from) = usize::try_from(found) else {
        return Err(OpenError::InvalidSchema { path: path.to_path_buf(), found });
    };
    if from == MIGRATIONS.len() {
        return Ok(());
    }
    for (version, step) in (1i64..).zip(MIGRATIONS).skip(from) {
        let migration = |source| OpenError::Migration { path: path.to_path_buf(), version, source };
        tx.execute_batch(step).map_err(migration)?;
        if version == 6 {
            backfill_index(&tx).map_err(migration)?;
        }
        if version == 10 {
            compact_journal(&tx).map_err(migration)?;
        }
        if version == 12 {
            encode_records(&tx).map_err(migration)?;
        }
        if version == 14 {
            key_consumed_events(&tx).map_err(migration)?;
        }
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION).map_err(|source| OpenError::Migration {
        path: path.to_path_buf(),
        version: SCHEMA_VERSION,
        source,
    })?;
    tx.commit().map_err(|source| OpenError::Migration {
        path: path.to_path_buf(),
        version: SCHEMA_VERSION,
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values of a one-column query.
    fn column<T: rusqlite::types::FromSql>(conn: &Connection, sql: &str) -> Vec<T> {
        conn.prepare(sql).unwrap().query_map([], |r| r.get(0)).unwrap().collect::<Result<_, _>>().unwrap()
    }

    /// A database file at schema `version` (its first migrations run), with its directory.
    fn database_at(version: usize) -> (tempfile::TempDir, std::path::PathBuf, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("v{version}.db"));
        let conn = Connection::open(&path).unwrap();
        for step in &MIGRATIONS[..version] {
            conn.execute_batch(step).unwrap();
        }
        conn.pragma_update(None, "user_version", i64::try_from(version).unwrap()).unwrap();
        (dir, path, conn)
    }

    #[test]
    fn a_version_1_journal_is_carried_over_to_integer_keys() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v1.db");
        let mut conn = Connection::open(&path).unwrap();
        conn.execute_batch(V1).unwrap();
        conn.pragma_update(None, "user_version", 1).unwrap();
        conn.execute_batch(
            "INSERT INTO workflows (id, version, record, source, created_at_ms, updated_at_ms) \
                 VALUES ('other', 1, '\"o\"', 's', 0, 0), ('wf', 2, '\"b\"', 's', 0, 0);
             INSERT INTO journal (id, version, at_ms, consumed_event_id, consumed, produced, record) VALUES
                 ('wf', 2, 20, 'e-2', NULL, '[]', '\"b\"'),
                 ('wf', 1, 10, 'e-1', NULL, '[]', '\"a\"'),
                 ('other', 1, 5, NULL, NULL, '[]', '\"o\"'),
                 ('gone', 1, 5, NULL, NULL, '[]', '\"x\"');",
        )
        .unwrap();
        migrate(&mut conn, &path).unwrap();
        // No stored event tells these entries' consumed source: they have no consumed key
        // (version 14), as no lookup could find them before.
        let rows: Vec<(String, i64, i64, Option<i64>)> = conn
            .prepare(
                "SELECT w.id, j.version, j.at_ms, j.consumed_key FROM journal j \
                 JOIN workflows w ON w.seq = j.wf ORDER BY w.id, j.version",
            )
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            rows,
            [
                ("other".to_owned(), 1, 5, None),
                ("wf".to_owned(), 1, 10, None),
                ("wf".to_owned(), 2, 20, None),
            ],
            "every entry of an existing workflow is kept, keyed by its workflow's seq"
        );
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
        assert_eq!(version, SCHEMA_VERSION);
    }

    #[test]
    fn version_6_fills_the_workflow_index_of_existing_rows() {
        let (_dir, path, mut conn) = database_at(5);
        let subject = orchestrator::subject::Subject::builder("arvo.orc.v6", "1.2.0", "com.v6.client")
            .execution_id("e-6")
            .meta("tenant", "acme")
            .build()
            .unwrap();
        conn.execute(
            "INSERT INTO workflows (id, version, record, parent_subject, source, created_at_ms, updated_at_ms, \
             wake_at_ms) VALUES \
             (?1, 1, '{\"done\":false,\"executionStatus\":\"normal\"}', NULL, 's', 0, 0, NULL), \
             ('child', 1, '{\"done\":true}', ?1, 's', 1, 1, NULL), \
             ('grandchild', 1, '{\"executionStatus\":\"failure\"}', 'child', 's', 2, 2, NULL), \
             ('orphan', 1, '\"text\"', 'gone', 's', 3, 3, 5)",
            [subject.as_str()],
        )
        .unwrap();
        migrate(&mut conn, &path).unwrap();
        type Row = (String, String, Option<String>, Option<String>, Option<String>);
        let rows: Vec<Row> = conn
            .prepare(
                // A root's `root` is NULL since version 13.
                "SELECT status, COALESCE(root, id), orchestrator_version, execution_id, meta FROM workflows \
                 ORDER BY seq",
            )
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let root = subject.as_str().to_owned();
        assert_eq!(
            rows,
            [
                (
                    "active".to_owned(),
                    root.clone(),
                    Some("1.2.0".to_owned()),
                    Some("e-6".to_owned()),
                    Some(r#"{"tenant":"acme"}"#.to_owned())
                ),
                ("done".to_owned(), root.clone(), None, None, None),
                ("failed".to_owned(), root, None, None, None),
                ("waiting".to_owned(), "gone".to_owned(), None, None, None),
            ]
        );
        let own_roots: i64 = conn
            .query_row("SELECT count(*) FROM workflows WHERE root IS NULL OR root = id", [], |r| r.get(0))
            .unwrap();
        let null_root: Option<String> =
            conn.query_row("SELECT root FROM workflows WHERE seq = 1", [], |r| r.get(0)).unwrap();
        assert_eq!((own_roots, null_root), (1, None), "version 13: the root's own row has no copy of its id");
        let meta: Vec<(String, String)> = conn
            .prepare("SELECT key, value FROM workflow_meta")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(meta, [("tenant".to_owned(), "acme".to_owned())]);
    }

    #[test]
    fn version_5_fills_the_consumed_source_from_the_stored_event() {
        let (_dir, path, mut conn) = database_at(4);
        conn.execute_batch(
            "INSERT INTO workflows (seq, id, version, record, source, created_at_ms, updated_at_ms, wake_at_ms) \
                 VALUES (1, 'wf', 3, '\"c\"', 's', 0, 0, 7);
             INSERT INTO journal (wf, version, at_ms, consumed_event_id, consumed, produced, record) VALUES
                 (1, 1, 10, 'e-1', '{\"id\":\"e-1\",\"source\":\"com.client\"}', '[]', '\"a\"'),
                 (1, 2, 20, NULL, NULL, '[]', '\"b\"'),
                 (1, 3, 30, 'e-3', 'not json', '[]', '\"c\"');",
        )
        .unwrap();
        migrate(&mut conn, &path).unwrap();
        // Version 14 keeps the identity as its hash.
        let sources: Vec<Option<i64>> = column(&conn, "SELECT consumed_key FROM journal ORDER BY version");
        assert_eq!(
            sources,
            [
                Some(crate::consumed_key::consumed_key(orchestrator::memory::EventKey {
                    source: "com.client",
                    id: "e-1"
                })),
                None,
                None
            ],
            "a corrupt entry does not stop the migration"
        );
        let claimed: Option<i64> = conn
            .query_row("SELECT claimed_until_ms FROM workflows WHERE id = 'wf'", [], |r| r.get(0))
            .unwrap();
        assert_eq!(claimed, None, "nothing is claimed after the migration");
    }

    fn event(id: &str) -> orchestrator::event::Event {
        orchestrator::event::Event::builder()
            .id(id)
            .source("com.test.client")
            .r#type("com.test.event")
            .subject("wf")
            .data_json(serde_json::json!({ "n": id }))
            .build()
            .unwrap()
    }

    #[test]
    fn version_10_re_encodes_the_journal_and_reads_the_same_history() {
        use orchestrator::memory::JournalRecord;
        use serde_json::{Value, json};

        let (_dir, path, mut conn) = database_at(9);
        conn.execute(
            "INSERT INTO workflows (seq, id, version, record, source, created_at_ms, updated_at_ms) \
             VALUES (1, 'wf', 40, '{}', 's', 0, 0), (2, 'bad', 1, '{}', 's', 0, 0)",
            [],
        )
        .unwrap();
        // A record growing at each version (version 20 was not journaled), each row consuming
        // one event and producing two.
        /// Version, time, consumed event id, produced event ids, record.
        type Expected = (u64, i64, Option<String>, Vec<String>, Value);
        let mut expected: Vec<Expected> = Vec::new();
        let mut items = Vec::new();
        for version in (1..=40u64).filter(|v| *v != 20) {
            items.push(json!({ "n": version, "text": "a response of some length" }));
            let record = json!({ "items": items, "status": if version % 3 == 0 { "a" } else { "b" } });
            let consumed = (version % 5 != 0).then(|| format!("in-{version}"));
            let produced = vec![format!("out-{version}-a"), format!("out-{version}-b")];
            expected.push((version, i64::try_from(version).unwrap() * 10, consumed, produced, record));
        }
        let insert = |table: &str, key: &dyn rusqlite::ToSql| {
            for (version, at, consumed, produced, record) in &expected {
                let consumed_event = consumed.as_deref().map(event);
                let produced: Vec<_> = produced.iter().map(|id| event(id)).collect();
                conn.execute(
                    &format!("INSERT INTO {table} VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"),
                    rusqlite::params![
                        key,
                        i64::try_from(*version).unwrap(),
                        at,
                        consumed,
                        consumed_event.as_ref().map(|e| serde_json::to_string(e).unwrap()),
                        serde_json::to_string(&produced).unwrap(),
                        record.to_string(),
                        consumed.as_ref().map(|_| "com.test.client"),
                    ],
                )
                .unwrap();
            }
        };
        // The version 9 column order: the journal (seq, wf, …) is given its columns by name.
        insert(
            "journal (wf, version, at_ms, consumed_event_id, consumed, produced, record, consumed_source)",
            &1i64,
        );
        insert(
            "journal_archive (id, version, at_ms, consumed_event_id, consumed, produced, record, consumed_source)",
            &"wf",
        );
        conn.execute(
            "INSERT INTO journal (wf, version, at_ms, consumed_event_id, consumed, produced, record) \
             VALUES (2, 1, 5, NULL, NULL, '[]', '{not json')",
            [],
        )
        .unwrap();
        migrate(&mut conn, &path).unwrap();
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
        assert_eq!(version, SCHEMA_VERSION);

        let check = |history: Vec<JournalRecord<Value>>| {
            assert_eq!(history.len(), expected.len());
            for (entry, (version, at, consumed, produced, record)) in history.iter().zip(&expected) {
                assert_eq!(entry.version, *version);
                assert_eq!(crate::time::to_ms(entry.at), *at);
                assert_eq!(entry.consumed.as_ref().map(|e| e.id().to_owned()), *consumed);
                assert_eq!(entry.produced.iter().map(|e| e.id().to_owned()).collect::<Vec<_>>(), *produced);
                assert_eq!(&entry.record, record);
            }
        };
        check(crate::reads::history(&conn, "wf", 0, 100, crate::reads::Tables::Live).unwrap());
        check(crate::reads::history(&conn, "wf", 0, 100, crate::reads::Tables::Archive).unwrap());
        // Every entry on its own (from its snapshot), and a page starting at a delta.
        for (version, _, _, _, record) in &expected {
            let entry = crate::reads::entry::<Value>(&conn, "wf", *version).unwrap().unwrap();
            assert_eq!(&entry.record, record);
        }
        let page = crate::reads::history::<Value>(&conn, "wf", 25, 3, crate::reads::Tables::Live).unwrap();
        assert_eq!(page.iter().map(|e| e.version).collect::<Vec<_>>(), [26, 27, 28]);
        assert_eq!(page[0].record, expected[24].4);
        let deltas: i64 = conn
            .query_row(
                "SELECT count(*) FROM journal WHERE wf = 1 AND hex(substr(record, 1, 1)) IN ('01', '03', '07')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert!(deltas > 30, "re-encoded as deltas: {deltas}");
        // Redelivery lookups still find the consumed events.
        let produced = crate::reads::produced(&conn, "wf", "com.test.client", "in-7").unwrap().unwrap();
        assert_eq!(produced.iter().map(|e| e.id().to_owned()).collect::<Vec<_>>(), ["out-7-a", "out-7-b"]);
        // A record that was not JSON is kept: reading it fails as it did before the migration.
        assert!(crate::reads::history::<Value>(&conn, "bad", 0, 10, crate::reads::Tables::Live).is_err());
        let tables: i64 = conn
            .query_row("SELECT count(*) FROM sqlite_schema WHERE name LIKE '%_v9'", [], |r| r.get(0))
            .unwrap();
        assert_eq!(tables, 0, "the old tables are gone");
    }

    #[test]
    fn version_12_encodes_the_latest_records_and_reads_the_same_ones() {
        use serde_json::{Value, json};

        let (_dir, path, mut conn) = database_at(11);
        let record =
            |n: i64| json!({ "subject": "wf", "state": { "context": { "n": n, "text": "x".repeat(200) } } });
        for n in 1..=3 {
            conn.execute(
                "INSERT INTO workflows (id, version, record, source, created_at_ms, updated_at_ms) \
                 VALUES (?1, 1, ?2, 's', 0, 0)",
                rusqlite::params![format!("wf-{n}"), record(n).to_string()],
            )
            .unwrap();
        }
        conn.execute(
            "INSERT INTO workflows (id, version, record, source, created_at_ms, updated_at_ms) \
             VALUES ('bad', 1, '{not json', 's', 0, 0)",
            [],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO workflows_archive (id, version, record, source, created_at_ms, updated_at_ms, \
             archived_at_ms) VALUES ('old', 4, ?1, 's', 0, 0, 0)",
            [record(4).to_string()],
        )
        .unwrap();
        let text_bytes: i64 =
            conn.query_row("SELECT sum(length(record)) FROM workflows", [], |r| r.get(0)).unwrap();
        migrate(&mut conn, &path).unwrap();
        let texts: i64 = conn
            .query_row(
                "SELECT (SELECT count(*) FROM workflows WHERE typeof(record) <> 'blob') \
                 + (SELECT count(*) FROM workflows_archive WHERE typeof(record) <> 'blob')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(texts, 0, "every record re-encoded");
        let encoded_bytes: i64 =
            conn.query_row("SELECT sum(length(record)) FROM workflows", [], |r| r.get(0)).unwrap();
        assert!(encoded_bytes * 3 < text_bytes, "{encoded_bytes} bytes against {text_bytes} as text");
        for n in 1..=3 {
            let stored = crate::reads::record::<Value>(&conn, &format!("wf-{n}"), crate::reads::Tables::Live);
            assert_eq!(stored.unwrap().unwrap().record, record(n));
        }
        let archived =
            crate::reads::record::<Value>(&conn, "old", crate::reads::Tables::Archive).unwrap().unwrap();
        assert_eq!((archived.record, archived.version), (record(4), 4));
        // A record that was not JSON still fails to decode, as it did before.
        assert!(crate::reads::record::<Value>(&conn, "bad", crate::reads::Tables::Live).is_err());
        // A row a version-11 writer would have left as text still reads.
        conn.execute("UPDATE workflows SET record = ?1 WHERE id = 'wf-1'", [record(9).to_string()]).unwrap();
        let stored =
            crate::reads::record::<Value>(&conn, "wf-1", crate::reads::Tables::Live).unwrap().unwrap();
        assert_eq!(stored.record, record(9));
    }

    #[test]
    fn version_16_rebuilds_the_workflows_without_the_unique_id_index() {
        use serde_json::{Value, json};

        let (_dir, path, mut conn) = database_at(15);
        for (seq, id) in [(1, "wf-a"), (2, "one-0123456789abcdef"), (7, "two-0123456789abcdef")] {
            conn.execute(
                "INSERT INTO workflows (seq, id, version, record, source, created_at_ms, updated_at_ms, status, \
                 execution_id, meta, wake_at_ms) VALUES (?1, ?2, 3, ?3, 's', ?1, ?1, 'waiting', 'x', '{}', 9)",
                rusqlite::params![seq, id, crate::record_column::snapshot(&json!({ "n": seq }).to_string(), id)],
            )
            .unwrap();
            conn.execute(
                "INSERT INTO workflow_meta (key, value, wf) VALUES ('k', ?1, ?2)",
                rusqlite::params![id, seq],
            )
            .unwrap();
        }
        migrate(&mut conn, &path).unwrap();
        let names: Vec<String> =
            column(&conn, "SELECT name FROM sqlite_schema WHERE tbl_name = 'workflows' ORDER BY name");
        assert!(!names.iter().any(|n| n.starts_with("sqlite_autoindex")), "{names:?}");
        for name in ["workflows_id", "workflows_wake", "workflows_root_created", "workflows_meta_gone"] {
            assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
        }
        // Two ids ending alike are still told apart.
        for (seq, id) in [(1, "wf-a"), (2, "one-0123456789abcdef"), (7, "two-0123456789abcdef")] {
            let stored =
                crate::reads::record::<Value>(&conn, id, crate::reads::Tables::Live).unwrap().unwrap();
            assert_eq!((stored.record, stored.version), (json!({ "n": seq }), 3), "{id}");
        }
        let kept: i64 = conn.query_row("SELECT count(*) FROM workflow_meta", [], |r| r.get(0)).unwrap();
        assert_eq!(kept, 3, "rebuilding the table deleted no meta (dropping a table fires no trigger)");
        conn.execute("DELETE FROM workflows WHERE substr(id, -16) = substr('one-0123456789abcdef', -16) AND id = 'one-0123456789abcdef'", [])
            .unwrap();
        let left: Vec<String> = column(&conn, "SELECT value FROM workflow_meta ORDER BY wf");
        assert_eq!(left, ["wf-a", "two-0123456789abcdef"], "the trigger still deletes a workflow's meta");
    }
}
