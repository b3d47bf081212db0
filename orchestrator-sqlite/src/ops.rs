//! The statements run on the writer connection, one function per queued operation.

use std::time::Duration;

use orchestrator::memory::{Lease, MemoryError};
use rusqlite::{Connection, OptionalExtension, params};

use crate::Retention;
use crate::error::{SqliteError, backend};
use crate::time::{duration_ms, from_ms};

/// A write, encoded by the caller before it is queued.
pub(crate) struct WriteOp {
    pub(crate) id: String,
    pub(crate) record: String,
    pub(crate) prev: Option<u64>,
    /// The lease's workflow id and token.
    pub(crate) lease: Option<(String, u64)>,
    /// `None` = not known yet (keep the stored value); `Some(parent)` = known.
    pub(crate) parent_subject: Option<Option<String>>,
    /// `None` = not known yet (keep the stored value).
    pub(crate) initiator: Option<String>,
    pub(crate) source: String,
    pub(crate) wake_at_ms: Option<i64>,
    pub(crate) entry: Option<EntryRow>,
}

/// A journal row, encoded.
pub(crate) struct EntryRow {
    pub(crate) at_ms: i64,
    pub(crate) consumed_event_id: Option<String>,
    pub(crate) consumed: Option<String>,
    pub(crate) produced: String,
}

fn sql(id: &str) -> impl Fn(rusqlite::Error) -> MemoryError + '_ {
    move |e| backend(id, SqliteError::Sqlite(e))
}

fn version_of(id: &str, raw: i64) -> Result<u64, MemoryError> {
    u64::try_from(raw).map_err(|_| backend(id, SqliteError::Invalid { what: "version", value: raw }))
}

fn as_i64(id: &str, what: &'static str, value: u64) -> Result<i64, MemoryError> {
    i64::try_from(value).map_err(|_| backend(id, SqliteError::Invalid { what, value: i64::MAX }))
}

/// The compare-and-swap write with its lease check and journal row.
pub(crate) fn write(conn: &Connection, op: &WriteOp, now: i64) -> Result<u64, MemoryError> {
    let id = op.id.as_str();
    let sql = sql(id);
    if let Some((lease_id, token)) = &op.lease {
        let current: Option<(i64, i64)> = conn
            .prepare_cached("SELECT token, expires_at_ms FROM leases WHERE id = ?1")
            .and_then(|mut s| s.query_row([id], |r| Ok((r.get(0)?, r.get(1)?))).optional())
            .map_err(&sql)?;
        let is_current = lease_id == id
            && matches!(current, Some((t, expires)) if u64::try_from(t).ok() == Some(*token) && expires > now);
        if !is_current {
            return Err(MemoryError::StaleLease { id: id.to_owned(), token: *token });
        }
    }
    let row: Option<(i64, i64)> = conn
        .prepare_cached("SELECT seq, version FROM workflows WHERE id = ?1")
        .and_then(|mut s| s.query_row([id], |r| Ok((r.get(0)?, r.get(1)?))).optional())
        .map_err(&sql)?;
    let found = row.map(|(_, v)| version_of(id, v)).transpose()?;
    if found != op.prev {
        return Err(MemoryError::Conflict { id: id.to_owned(), expected: op.prev, found });
    }
    let version = as_i64(id, "version", found.unwrap_or(0) + 1)?;
    let wf = if let Some((seq, _)) = row {
        conn.prepare_cached(
            "UPDATE workflows SET version = ?2, record = ?3, \
             parent_subject = CASE WHEN ?4 THEN ?5 ELSE parent_subject END, \
             initiator = CASE WHEN ?6 THEN ?7 ELSE initiator END, \
             source = ?8, wake_at_ms = ?9, updated_at_ms = ?10 WHERE seq = ?1",
        )
        .and_then(|mut s| {
            s.execute(params![
                seq,
                version,
                op.record,
                op.parent_subject.is_some(),
                op.parent_subject.as_ref().and_then(Option::as_deref),
                op.initiator.is_some(),
                op.initiator.as_deref(),
                op.source,
                op.wake_at_ms,
                now
            ])
        })
        .map_err(&sql)?;
        seq
    } else {
        conn.prepare_cached(
            "INSERT INTO workflows (id, version, record, parent_subject, initiator, source, wake_at_ms, \
             created_at_ms, updated_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)",
        )
        .and_then(|mut s| {
            s.execute(params![
                id,
                version,
                op.record,
                op.parent_subject.as_ref().and_then(Option::as_deref),
                op.initiator.as_deref(),
                op.source,
                op.wake_at_ms,
                now
            ])
        })
        .map_err(&sql)?;
        conn.last_insert_rowid()
    };
    if let Some(entry) = &op.entry {
        conn.prepare_cached(
            "INSERT INTO journal (wf, version, at_ms, consumed_event_id, consumed, produced, record) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )
        .and_then(|mut s| {
            s.execute(params![
                wf,
                version,
                entry.at_ms,
                entry.consumed_event_id,
                entry.consumed,
                entry.produced,
                op.record
            ])
        })
        .map_err(&sql)?;
    }
    version_of(id, version)
}

/// One attempt at taking the lease of `id`.
pub(crate) fn lock(
    conn: &Connection,
    id: &str,
    owner: Option<&str>,
    ttl: Duration,
    now: i64,
) -> Result<Option<Lease>, MemoryError> {
    let sql = sql(id);
    let held: Option<i64> = conn
        .prepare_cached("SELECT expires_at_ms FROM leases WHERE id = ?1")
        .and_then(|mut s| s.query_row([id], |r| r.get(0)).optional())
        .map_err(&sql)?;
    if held.is_some_and(|expires| expires > now) {
        return Ok(None);
    }
    // Every check before the first change (see `crate::writer`).
    let expires = now.saturating_add(duration_ms(ttl));
    let expires_at = from_ms("lease expiry", expires).map_err(|e| backend(id, e))?;
    // One counter for every workflow: tokens keep growing even when a workflow's rows are gone.
    let token: i64 = conn
        .prepare_cached("UPDATE counters SET value = value + 1 WHERE name = 'fencing_token' RETURNING value")
        .and_then(|mut s| s.query_row([], |r| r.get(0)))
        .map_err(&sql)?;
    conn.prepare_cached(
        "INSERT INTO leases (id, token, expires_at_ms, owner) VALUES (?1, ?2, ?3, ?4) \
         ON CONFLICT (id) DO UPDATE SET token = excluded.token, expires_at_ms = excluded.expires_at_ms, \
         owner = excluded.owner",
    )
    .and_then(|mut s| s.execute(params![id, token, expires, owner]))
    .map_err(&sql)?;
    let token = u64::try_from(token)
        .map_err(|_| backend(id, SqliteError::Invalid { what: "fencing token", value: token }))?;
    Ok(Some(Lease { id: id.to_owned(), token, expires_at }))
}

/// Releases every lease held under `owner` (a previous run of this owner, now gone); returns how
/// many.
pub(crate) fn release_owner(conn: &Connection, owner: &str) -> rusqlite::Result<usize> {
    conn.prepare_cached("DELETE FROM leases WHERE owner = ?1")?.execute([owner])
}

/// Releases the lease `token` of `id`; true when it was current and unexpired.
pub(crate) fn unlock(conn: &Connection, id: &str, token: u64, now: i64) -> Result<bool, MemoryError> {
    let token = as_i64(id, "fencing token", token)?;
    let expires: Option<i64> = conn
        .prepare_cached("DELETE FROM leases WHERE id = ?1 AND token = ?2 RETURNING expires_at_ms")
        .and_then(|mut s| s.query_row(params![id, token], |r| r.get(0)).optional())
        .map_err(sql(id))?;
    Ok(expires.is_some_and(|expires| expires > now))
}

/// Applies `retention` to the finished workflow `id`, then, when `sweep`, sweeps what is due;
/// returns how many workflows the sweep deleted.
pub(crate) fn cleanup(
    conn: &Connection,
    id: &str,
    retention: Retention,
    now: i64,
    sweep: bool,
) -> Result<usize, MemoryError> {
    let sql = sql(id);
    match retention {
        Retention::Keep => {}
        Retention::Remove => remove(conn, id).map_err(&sql)?,
        Retention::RemoveAfter(after) => {
            conn.prepare_cached("UPDATE workflows SET remove_at_ms = ?2 WHERE id = ?1")
                .and_then(|mut s| s.execute(params![id, now.saturating_add(duration_ms(after))]))
                .map_err(&sql)?;
        }
        Retention::Archive => archive(conn, id, now).map_err(&sql)?,
    }
    if sweep { self::sweep(conn, now).map_err(&sql) } else { Ok(0) }
}

fn remove(conn: &Connection, id: &str) -> rusqlite::Result<()> {
    conn.prepare_cached("DELETE FROM journal WHERE wf = (SELECT seq FROM workflows WHERE id = ?1)")?
        .execute([id])?;
    conn.prepare_cached("DELETE FROM workflows WHERE id = ?1")?.execute([id])?;
    Ok(())
}

fn archive(conn: &Connection, id: &str, now: i64) -> rusqlite::Result<()> {
    let exists = conn
        .prepare_cached("SELECT 1 FROM workflows WHERE id = ?1")?
        .query_row([id], |_| Ok(()))
        .optional()?
        .is_some();
    if !exists {
        return Ok(());
    }
    // The archive keeps the last finished run of an id.
    conn.prepare_cached("DELETE FROM journal_archive WHERE id = ?1")?.execute([id])?;
    conn.prepare_cached("DELETE FROM workflows_archive WHERE id = ?1")?.execute([id])?;
    conn.prepare_cached(
        "INSERT INTO workflows_archive (id, version, record, parent_subject, initiator, source, \
         created_at_ms, updated_at_ms, archived_at_ms) \
         SELECT id, version, record, parent_subject, initiator, source, created_at_ms, updated_at_ms, ?2 \
         FROM workflows WHERE id = ?1",
    )?
    .execute(params![id, now])?;
    conn.prepare_cached(
        "INSERT INTO journal_archive (id, version, at_ms, consumed_event_id, consumed, produced, record) \
         SELECT ?1, version, at_ms, consumed_event_id, consumed, produced, record FROM journal \
         WHERE wf = (SELECT seq FROM workflows WHERE id = ?1) ORDER BY version",
    )?
    .execute([id])?;
    remove(conn, id)
}

/// Deletes workflows whose delayed removal is due, and lapsed leases (fencing does not need
/// them: tokens come from one counter, and a write under a lapsed lease is stale either way).
pub(crate) fn sweep(conn: &Connection, now: i64) -> rusqlite::Result<usize> {
    conn.prepare_cached(
        "DELETE FROM journal WHERE wf IN \
         (SELECT seq FROM workflows WHERE remove_at_ms IS NOT NULL AND remove_at_ms <= ?1)",
    )?
    .execute([now])?;
    let removed = conn
        .prepare_cached("DELETE FROM workflows WHERE remove_at_ms IS NOT NULL AND remove_at_ms <= ?1")?
        .execute([now])?;
    conn.prepare_cached("DELETE FROM leases WHERE expires_at_ms <= ?1")?.execute([now])?;
    Ok(removed)
}

/// An outbox step, encoded: the event to remove and the events to add (id, JSON).
pub(crate) struct AdvanceOp {
    pub(crate) consumed: Option<String>,
    pub(crate) produced: Vec<(String, String)>,
}

/// Removes the consumed event from the outbox and adds the produced ones (ids already there are
/// skipped).
pub(crate) fn advance(conn: &Connection, op: &AdvanceOp, now: i64) -> Result<(), MemoryError> {
    let key = op.consumed.as_deref().unwrap_or("(outbox)");
    let sql = sql(key);
    if let Some(consumed) = &op.consumed {
        conn.prepare_cached("DELETE FROM outbox WHERE event_id = ?1")
            .and_then(|mut s| s.execute([consumed]))
            .map_err(&sql)?;
    }
    if !op.produced.is_empty() {
        let mut insert = conn
            .prepare_cached("INSERT OR IGNORE INTO outbox (event_id, event, added_at_ms) VALUES (?1, ?2, ?3)")
            .map_err(&sql)?;
        for (id, event) in &op.produced {
            insert.execute(params![id, event, now]).map_err(&sql)?;
        }
    }
    Ok(())
}
