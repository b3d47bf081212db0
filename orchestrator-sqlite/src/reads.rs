//! Read connections: a small pool used from `tokio::task::spawn_blocking`, so reads never block
//! the async runtime nor wait behind the writer (WAL readers see the last commit).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use orchestrator::event::Event;
use std::collections::BTreeMap;

use orchestrator::memory::journal_codec::{self, CodecError, RecordDecoder};
use orchestrator::memory::{
    JournalRecord, MemoryError, Page, Stored, WorkflowFilter, WorkflowState, WorkflowSummary,
};
use orchestrator::outbox::Pending;
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, params};
use serde::de::DeserializeOwned;

use crate::error::{SqliteError, backend};
use crate::record_column::RecordColumn;
use crate::time::{from_ms, to_ms, to_ms_ceil};

/// The pool of idle read connections.
pub(crate) struct Readers {
    path: PathBuf,
    busy_timeout: Duration,
    idle: Mutex<Vec<Connection>>,
    max_idle: usize,
    /// At most `max_idle` reads run at once, so connections are reused instead of opened per
    /// read when many tasks read together (1,000 workflows in flight).
    permits: tokio::sync::Semaphore,
}

impl Readers {
    pub(crate) fn new(path: PathBuf, busy_timeout: Duration, max_idle: usize) -> Self {
        let max_idle = max_idle.max(1);
        Self {
            path,
            busy_timeout,
            idle: Mutex::new(Vec::new()),
            max_idle,
            permits: tokio::sync::Semaphore::new(max_idle),
        }
    }

    /// Opens a read connection.
    pub(crate) fn connect(&self) -> rusqlite::Result<Connection> {
        let conn = Connection::open(&self.path)?;
        conn.busy_timeout(self.busy_timeout)?;
        conn.pragma_update(None, "query_only", true)?;
        crate::store::tune(&conn)?;
        Ok(conn)
    }

    /// Keeps `conn` for later reads.
    pub(crate) fn put(&self, conn: Connection) {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() < self.max_idle {
            idle.push(conn);
        }
    }

    fn with<T>(
        &self,
        id: &str,
        f: impl FnOnce(&Connection) -> Result<T, MemoryError>,
    ) -> Result<T, MemoryError> {
        let pooled = self.idle.lock().unwrap_or_else(PoisonError::into_inner).pop();
        let conn = match pooled {
            Some(conn) => conn,
            None => self.connect().map_err(|e| backend(id, e))?,
        };
        let result = f(&conn);
        self.put(conn);
        result
    }
}

/// Runs `f` on a read connection of `readers`, off the async runtime.
pub(crate) async fn read<T, F>(readers: &Arc<Readers>, id: &str, f: F) -> Result<T, MemoryError>
where
    T: Send + 'static,
    F: FnOnce(&Connection, &str) -> Result<T, MemoryError> + Send + 'static,
{
    let _permit =
        readers.permits.acquire().await.map_err(|e| backend(id, SqliteError::ReadTask(e.to_string())))?;
    let pool = Arc::clone(readers);
    let owned = id.to_owned();
    tokio::task::spawn_blocking(move || pool.with(&owned, |conn| f(conn, &owned)))
        .await
        .map_err(|e| backend(id, SqliteError::ReadTask(e.to_string())))?
}

fn sql(id: &str) -> impl Fn(rusqlite::Error) -> MemoryError + '_ {
    move |e| backend(id, SqliteError::Sqlite(e))
}

pub(crate) fn decode<T: DeserializeOwned>(
    id: &str,
    what: &'static str,
    version: i64,
    json: &str,
) -> Result<T, MemoryError> {
    serde_json::from_str(json).map_err(|source| backend(id, SqliteError::Decode { what, version, source }))
}

pub(crate) fn version(id: &str, raw: i64) -> Result<u64, MemoryError> {
    u64::try_from(raw).map_err(|_| backend(id, SqliteError::Invalid { what: "version", value: raw }))
}

/// Which tables to read: the live ones or the archive.
#[derive(Clone, Copy)]
pub(crate) enum Tables {
    Live,
    Archive,
}

impl Tables {
    fn workflows(self) -> &'static str {
        match self {
            Self::Live => {
                "SELECT version, record FROM workflows WHERE substr(id, -16) = substr(?1, -16) AND id = ?1"
            }
            Self::Archive => "SELECT version, record FROM workflows_archive WHERE id = ?1",
        }
    }

    fn history(self) -> &'static str {
        match self {
            Self::Live => {
                "SELECT j.version, j.at_ms, j.events, j.record \
                 FROM journal j WHERE j.wf = \
                 (SELECT seq FROM workflows WHERE substr(id, -16) = substr(?1, -16) AND id = ?1) \
                 AND j.version > ?2 ORDER BY j.version LIMIT ?3"
            }
            Self::Archive => {
                "SELECT version, at_ms, events, record FROM journal_archive \
                 WHERE id = ?1 AND version > ?2 ORDER BY version LIMIT ?3"
            }
        }
    }

    /// The encoded records at or before a version, newest first.
    fn records_down(self) -> &'static str {
        match self {
            Self::Live => {
                "SELECT j.version, j.record FROM journal j WHERE j.wf = \
                 (SELECT seq FROM workflows WHERE substr(id, -16) = substr(?1, -16) AND id = ?1) \
                 AND j.version <= ?2 ORDER BY j.version DESC"
            }
            Self::Archive => {
                "SELECT version, record FROM journal_archive WHERE id = ?1 AND version <= ?2 \
                 ORDER BY version DESC"
            }
        }
    }
}

/// The record of `id`.
pub(crate) fn record<R: DeserializeOwned>(
    conn: &Connection,
    id: &str,
    tables: Tables,
) -> Result<Option<Stored<R>>, MemoryError> {
    let row: Option<(i64, RecordColumn)> = conn
        .prepare_cached(tables.workflows())
        .and_then(|mut s| s.query_row([id], |r| Ok((r.get(0)?, r.get(1)?))).optional())
        .map_err(sql(id))?;
    let Some((v, record)) = row else { return Ok(None) };
    let record = record.resolve(conn, id, v, tables)?;
    Ok(Some(Stored { record: record.decode(id, v)?, version: version(id, v)? }))
}

/// A journal value of `id` at `version` that could not be decoded, as this store's error.
pub(crate) fn journal_error(id: &str, what: &'static str, version: i64, error: CodecError) -> MemoryError {
    match error {
        CodecError::Json(source) => backend(id, SqliteError::Decode { what, version, source }),
        source => backend(id, SqliteError::Journal { what, version, source }),
    }
}

/// The events produced, from the encoded events of `id`'s journal row at `version`.
pub(crate) fn decode_produced(id: &str, version: i64, events: &[u8]) -> Result<Vec<Event>, MemoryError> {
    journal_codec::decode_events(events, id)
        .map(|(_, produced)| produced)
        .map_err(|e| journal_error(id, "produced events", version, e))
}

/// The events produced when `id` consumed the event `(source, event_id)`.
pub(crate) fn produced(
    conn: &Connection,
    id: &str,
    source: &str,
    event_id: &str,
) -> Result<Option<Vec<Event>>, MemoryError> {
    let row = crate::ops::produced(conn, id, source, event_id)?;
    row.map(|(v, events)| decode_produced(id, v, &events)).transpose()
}

/// The record of `id` at `version`, rebuilt from the latest snapshot at or before it and the
/// deltas after it; `None` when there is no journal row at `version`.
pub(crate) fn record_at(
    conn: &Connection,
    id: &str,
    version: i64,
    tables: Tables,
) -> Result<Option<RecordDecoder>, MemoryError> {
    let mut statement = conn.prepare_cached(tables.records_down()).map_err(sql(id))?;
    let mut rows = statement.query(params![id, version]).map_err(sql(id))?;
    let mut chain: Vec<(i64, Vec<u8>)> = Vec::new();
    while let Some(row) = rows.next().map_err(sql(id))? {
        let (v, bytes): (i64, Vec<u8>) = (row.get(0).map_err(sql(id))?, row.get(1).map_err(sql(id))?);
        if chain.is_empty() && v != version {
            return Ok(None);
        }
        let snapshot =
            journal_codec::is_snapshot(&bytes).map_err(|e| journal_error(id, "journaled record", v, e))?;
        chain.push((v, bytes));
        if snapshot {
            break;
        }
    }
    if chain.is_empty() {
        return Ok(None);
    }
    let mut decoder = RecordDecoder::new();
    for (v, bytes) in chain.iter().rev() {
        decoder.apply(bytes, id).map_err(|e| journal_error(id, "journaled record", *v, e))?;
    }
    Ok(Some(decoder))
}

fn journal_record<R: DeserializeOwned>(
    id: &str,
    v: i64,
    at: i64,
    events: &[u8],
    record: &serde_json::Value,
) -> Result<JournalRecord<R>, MemoryError> {
    let (consumed, produced) =
        journal_codec::decode_events(events, id).map_err(|e| journal_error(id, "journaled events", v, e))?;
    Ok(JournalRecord {
        version: version(id, v)?,
        at: from_ms("journal time", at).map_err(|e| backend(id, e))?,
        consumed,
        produced,
        record: R::deserialize(record).map_err(|source| {
            backend(id, SqliteError::Decode { what: "journaled record", version: v, source })
        })?,
    })
}

type JournalRow = (i64, i64, Vec<u8>, Vec<u8>);

/// Journal entries of `id` after version `after`, oldest first.
pub(crate) fn history<R: DeserializeOwned>(
    conn: &Connection,
    id: &str,
    after: u64,
    limit: usize,
    tables: Tables,
) -> Result<Vec<JournalRecord<R>>, MemoryError> {
    let after = i64::try_from(after).unwrap_or(i64::MAX);
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows: Vec<JournalRow> = conn
        .prepare_cached(tables.history())
        .and_then(|mut s| {
            s.query_map(params![id, after, limit], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
                .collect::<Result<_, _>>()
        })
        .map_err(sql(id))?;
    let Some((first, _, _, bytes)) = rows.first() else { return Ok(Vec::new()) };
    // A page starting at a delta starts from the record before it.
    let mut decoder =
        if journal_codec::is_snapshot(bytes).map_err(|e| journal_error(id, "journaled record", *first, e))? {
            RecordDecoder::new()
        } else {
            record_at(conn, id, first.saturating_sub(1), tables)?.unwrap_or_default()
        };
    let mut out = Vec::with_capacity(rows.len());
    for (v, at, events, bytes) in rows {
        let record = decoder.apply(&bytes, id).map_err(|e| journal_error(id, "journaled record", v, e))?;
        out.push(journal_record(id, v, at, &events, record)?);
    }
    Ok(out)
}

/// The journal entry of `id` at `version`.
pub(crate) fn entry<R: DeserializeOwned>(
    conn: &Connection,
    id: &str,
    version: u64,
) -> Result<Option<JournalRecord<R>>, MemoryError> {
    let Ok(version) = i64::try_from(version) else { return Ok(None) };
    let Some(decoder) = record_at(conn, id, version, Tables::Live)? else { return Ok(None) };
    let row: Option<(i64, Vec<u8>)> = conn
        .prepare_cached(
            "SELECT j.at_ms, j.events FROM journal j WHERE j.wf = \
             (SELECT seq FROM workflows WHERE substr(id, -16) = substr(?1, -16) AND id = ?1) AND j.version = ?2",
        )
        .and_then(|mut s| s.query_row(params![id, version], |r| Ok((r.get(0)?, r.get(1)?))).optional())
        .map_err(sql(id))?;
    let (Some((at, events)), Some(record)) = (row, decoder.current()) else { return Ok(None) };
    journal_record(id, version, at, &events, record).map(Some)
}

/// The workflows whose parent is `id`, in start order.
pub(crate) fn children(conn: &Connection, id: &str) -> Result<Vec<String>, MemoryError> {
    conn.prepare_cached("SELECT id FROM workflows WHERE parent_subject = ?1 ORDER BY seq")
        .and_then(|mut s| s.query_map([id], |r| r.get(0))?.collect::<Result<_, _>>())
        .map_err(sql(id))
}

/// The parent of `id`.
pub(crate) fn parent(conn: &Connection, id: &str) -> Result<Option<String>, MemoryError> {
    let row: Option<Option<String>> = conn
        .prepare_cached(
            "SELECT parent_subject FROM workflows WHERE substr(id, -16) = substr(?1, -16) AND id = ?1",
        )
        .and_then(|mut s| s.query_row([id], |r| r.get(0)).optional())
        .map_err(sql(id))?;
    Ok(row.flatten())
}

/// Up to `limit` outbox events after position `after`, oldest first.
pub(crate) fn pending(conn: &Connection, after: u64, limit: usize) -> Result<Vec<Pending>, MemoryError> {
    let key = "(outbox)";
    let after = i64::try_from(after).unwrap_or(i64::MAX);
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut statement = conn
        .prepare_cached("SELECT seq, event FROM outbox WHERE seq > ?1 ORDER BY seq LIMIT ?2")
        .map_err(sql(key))?;
    let rows = statement
        .query_map(params![after, limit], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
        .map_err(sql(key))?;
    let mut out = Vec::new();
    for row in rows {
        let (seq, json) = row.map_err(sql(key))?;
        let event = decode(key, "outbox event", seq, &json)?;
        let seq = u64::try_from(seq)
            .map_err(|_| backend(key, SqliteError::Invalid { what: "outbox position", value: seq }))?;
        out.push(Pending { seq, event });
    }
    Ok(out)
}

/// Which workflows of a tree a listing by root matches: a root workflow's `root` column is
/// `NULL` (schema 13), so the tree is its descendants (`root = ?`, walked in order on the root
/// index) and the root itself (its id, with no root).
#[derive(Clone, Copy)]
enum TreePart {
    Descendants,
    Root,
}

/// The `WHERE` clause of a workflow listing, and its bound values: one constant fragment per
/// filter set (so that SQLite picks the index of the filters given), every value a parameter.
fn index_where(filter: &WorkflowFilter, cursor: bool, tree: TreePart) -> (String, Vec<Value>) {
    let mut clauses: Vec<&str> = Vec::new();
    let mut values: Vec<Value> = Vec::new();
    let text = |clause, value: &Option<String>, clauses: &mut Vec<&str>, values: &mut Vec<Value>| {
        if let Some(value) = value {
            clauses.push(clause);
            values.push(Value::Text(value.clone()));
        }
    };
    text("w.source = ?", &filter.orchestrator, &mut clauses, &mut values);
    text("w.orchestrator_version = ?", &filter.orchestrator_version, &mut clauses, &mut values);
    text("w.status = ?", &filter.status.map(|s| s.as_str().to_owned()), &mut clauses, &mut values);
    text("w.initiator = ?", &filter.initiator, &mut clauses, &mut values);
    text("w.parent_subject = ?", &filter.parent, &mut clauses, &mut values);
    match tree {
        TreePart::Descendants => text("w.root = ?", &filter.root, &mut clauses, &mut values),
        TreePart::Root => {
            if let Some(root) = &filter.root {
                // By the id index (see `schema::V16`): the id's end, then the id.
                clauses.push("substr(w.id, -16) = substr(?, -16) AND w.id = ? AND w.root IS NULL");
                values.extend([Value::Text(root.clone()), Value::Text(root.clone())]);
            }
        }
    }
    if let Some(prefix) = &filter.execution_id_prefix {
        // The ids that start with `prefix` sort between it and it followed by the last code point.
        clauses.push("w.execution_id >= ? AND w.execution_id < ?");
        values.push(Value::Text(prefix.clone()));
        values.push(Value::Text(format!("{prefix}\u{10FFFF}")));
    }
    let mut time = |clause, at: Option<std::time::SystemTime>| {
        if let Some(at) = at {
            clauses.push(clause);
            values.push(Value::Integer(to_ms_ceil(at)));
        }
    };
    time("w.created_at_ms >= ?", filter.created.since);
    time("w.created_at_ms < ?", filter.created.until);
    time("w.updated_at_ms >= ?", filter.updated.since);
    time("w.updated_at_ms < ?", filter.updated.until);
    for (key, value) in &filter.meta {
        clauses.push("w.seq IN (SELECT m.wf FROM workflow_meta m WHERE m.key = ? AND m.value = ?)");
        values.push(Value::Text(key.clone()));
        values.push(Value::Text(value.clone()));
    }
    if cursor && let Some(after) = &filter.after {
        clauses.push("(w.created_at_ms < ? OR (w.created_at_ms = ? AND w.id < ?))");
        let at = to_ms(after.created_at);
        values.extend([Value::Integer(at), Value::Integer(at), Value::Text(after.id.clone())]);
    }
    let clause = if clauses.is_empty() { "1".to_owned() } else { clauses.join(" AND ") };
    (clause, values)
}

type SummaryRow = (
    String,
    Option<String>,
    String,
    Option<String>,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    i64,
    i64,
    i64,
);

fn summary(row: SummaryRow) -> Result<WorkflowSummary, MemoryError> {
    let (
        id,
        execution_id,
        source,
        orchestrator_version,
        status,
        initiator,
        parent,
        root,
        meta,
        created,
        updated,
        v,
    ) = row;
    let invalid = |what| backend(&id, SqliteError::Invalid { what, value: 0 });
    let status = WorkflowState::parse(&status).ok_or_else(|| invalid("workflow status"))?;
    let meta: BTreeMap<String, String> = match meta {
        Some(json) => decode(&id, "subject meta", v, &json)?,
        None => BTreeMap::new(),
    };
    Ok(WorkflowSummary {
        execution_id,
        orchestrator: source,
        orchestrator_version,
        status,
        initiator,
        parent,
        root,
        meta,
        created_at: from_ms("creation time", created).map_err(|e| backend(&id, e))?,
        updated_at: from_ms("update time", updated).map_err(|e| backend(&id, e))?,
        version: version(&id, v)?,
        id,
    })
}

/// The columns of a [`SummaryRow`].
const SUMMARY_COLUMNS: &str = "w.id, w.execution_id, w.source, w.orchestrator_version, w.status, w.initiator, \
     w.parent_subject, COALESCE(w.root, w.id), w.meta, w.created_at_ms, w.updated_at_ms, w.version";

/// The statement listing a page of the workflows matching `filter`, and its values. By root:
/// the page of its descendants (in index order), merged with the root itself.
fn list_statement(filter: &WorkflowFilter) -> (String, Vec<Value>) {
    let limit = Value::Integer(i64::try_from(filter.page_size()).unwrap_or(i64::MAX).saturating_add(1));
    let (clause, mut values) = index_where(filter, true, TreePart::Descendants);
    values.push(limit.clone());
    let page = format!(
        "SELECT {SUMMARY_COLUMNS} FROM workflows w WHERE {clause} \
         ORDER BY w.created_at_ms DESC, w.id DESC LIMIT ?"
    );
    if filter.root.is_none() {
        return (page, values);
    }
    let (root, root_values) = index_where(filter, true, TreePart::Root);
    values.extend(root_values);
    values.push(limit);
    let statement = format!(
        "SELECT * FROM ({page}) UNION ALL SELECT {SUMMARY_COLUMNS} FROM workflows w WHERE {root} \
         ORDER BY 10 DESC, 1 DESC LIMIT ?"
    );
    (statement, values)
}

/// A page of the workflows matching `filter`, newest first.
pub(crate) fn list_workflows(
    conn: &Connection,
    filter: &WorkflowFilter,
) -> Result<Page<WorkflowSummary>, MemoryError> {
    let key = "(workflows)";
    let limit = filter.page_size();
    let (statement, values) = list_statement(filter);
    let rows: Vec<SummaryRow> = conn
        .prepare_cached(&statement)
        .and_then(|mut s| {
            s.query_map(rusqlite::params_from_iter(values), |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                    r.get(7)?,
                    r.get(8)?,
                    r.get(9)?,
                    r.get(10)?,
                    r.get(11)?,
                ))
            })?
            .collect::<Result<_, _>>()
        })
        .map_err(sql(key))?;
    let rows = rows.into_iter().map(summary).collect::<Result<Vec<_>, _>>()?;
    Ok(Page::from_rows(rows, limit))
}

/// How many workflows match `filter`.
pub(crate) fn count_workflows(conn: &Connection, filter: &WorkflowFilter) -> Result<u64, MemoryError> {
    let key = "(workflows)";
    let (clause, mut values) = index_where(filter, false, TreePart::Descendants);
    let mut statement = format!("SELECT (SELECT count(*) FROM workflows w WHERE {clause})");
    if filter.root.is_some() {
        let (root, root_values) = index_where(filter, false, TreePart::Root);
        values.extend(root_values);
        statement.push_str(&format!(" + (SELECT count(*) FROM workflows w WHERE {root})"));
    }
    let count: i64 = conn
        .prepare_cached(&statement)
        .and_then(|mut s| s.query_row(rusqlite::params_from_iter(values), |r| r.get(0)))
        .map_err(sql(key))?;
    u64::try_from(count).map_err(|_| backend(key, SqliteError::Invalid { what: "count", value: count }))
}

#[cfg(test)]
mod tests {
    use orchestrator::memory::{TimeRange, WorkflowCursor};

    use super::*;

    /// The plan of the listing of `filter` on a fresh database.
    fn plan(filter: &WorkflowFilter) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plan.db");
        let mut conn = Connection::open(&path).unwrap();
        crate::schema::migrate(&mut conn, &path).unwrap();
        let (statement, values) = list_statement(filter);
        let mut explain = conn.prepare(&format!("EXPLAIN QUERY PLAN {statement}")).unwrap();
        let rows = explain.query_map(rusqlite::params_from_iter(values), |r| r.get::<_, String>(3)).unwrap();
        rows.collect::<Result<Vec<_>, _>>().unwrap().join("\n")
    }

    /// The indexes end at the creation time (schema 11): workflows created in the same
    /// millisecond are still listed by id, descending, and a page ending among them continues
    /// with the next id.
    #[test]
    fn workflows_created_in_one_millisecond_are_listed_by_id() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ties.db");
        let mut conn = Connection::open(&path).unwrap();
        crate::schema::migrate(&mut conn, &path).unwrap();
        for (id, created) in [("wf-b", 5), ("wf-d", 5), ("wf-a", 5), ("wf-c", 5), ("wf-z", 4), ("wf-y", 6)] {
            conn.execute(
                "INSERT INTO workflows (id, version, record, source, created_at_ms, updated_at_ms, status)
                 VALUES (?1, 1, '{}', 'arvo.orc.ties', ?2, ?2, 'active')",
                rusqlite::params![id, created],
            )
            .unwrap();
        }
        let ids = |page: &Page<WorkflowSummary>| page.items.iter().map(|w| w.id.clone()).collect::<Vec<_>>();
        let first = list_workflows(&conn, &WorkflowFilter { limit: 3, ..WorkflowFilter::new() }).unwrap();
        assert_eq!(ids(&first), ["wf-y", "wf-d", "wf-c"]);
        let source = Some("arvo.orc.ties".to_owned());
        let rest =
            WorkflowFilter { limit: 10, after: first.next, orchestrator: source, ..WorkflowFilter::new() };
        assert_eq!(ids(&list_workflows(&conn, &rest).unwrap()), ["wf-b", "wf-a", "wf-z"]);
    }

    #[test]
    fn listings_search_an_index() {
        let some = |s: &str| Some(s.to_owned());
        let cases = [
            (
                WorkflowFilter { status: Some(WorkflowState::Failed), ..WorkflowFilter::new() },
                "workflows_status_created",
            ),
            (
                WorkflowFilter { orchestrator: some("arvo.orc.x"), ..WorkflowFilter::new() },
                "workflows_source_created",
            ),
            (
                WorkflowFilter { initiator: some("com.x"), ..WorkflowFilter::new() },
                "workflows_initiator_created",
            ),
            (WorkflowFilter { root: some("wf"), ..WorkflowFilter::new() }, "workflows_root_created"),
            (
                WorkflowFilter { execution_id_prefix: some("ab"), ..WorkflowFilter::new() },
                "workflows_execution",
            ),
            (
                WorkflowFilter { meta: vec![("k".into(), "v".into())], ..WorkflowFilter::new() },
                "SEARCH m USING PRIMARY KEY",
            ),
            (
                WorkflowFilter {
                    created: TimeRange { since: Some(std::time::SystemTime::now()), until: None },
                    after: Some(WorkflowCursor { created_at: std::time::SystemTime::now(), id: "x".into() }),
                    ..WorkflowFilter::new()
                },
                "workflows_created",
            ),
        ];
        for (filter, index) in cases {
            let plan = plan(&filter);
            assert!(plan.contains(index), "{filter:?} uses {index}: {plan:?}");
            if index.ends_with("_created") && filter.root.is_none() && filter.after.is_none() {
                // Walked newest first (backwards); only workflows of the same millisecond are
                // sorted (by id).
                assert!(!plan.contains("TEMP B-TREE FOR ORDER BY"), "no sort of the whole listing: {plan}");
            }
            assert!(!plan.contains("SCAN w\n") && !plan.ends_with("SCAN w"), "no full scan: {plan}");
        }
    }
}
