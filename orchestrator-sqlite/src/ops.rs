//! The statements run on the writer connection, one function per queued operation.
//!
//! Every operation makes its checks (lease, compare-and-swap) before its first change, so that
//! one refused leaves its group untouched (see [`crate::writer`]).

use std::time::Duration;

use orchestrator::memory::journal_codec::{self, EncodedRecord, RecordEncoder};
use orchestrator::memory::{EventKey, Lease, MemoryError, Retention, SubjectColumns};
use rusqlite::{Connection, OptionalExtension, params};

use crate::consumed_key::consumed_key;
use crate::error::{SqliteError, backend};
use crate::reads::Tables;
use crate::record_column::RecordColumn;
use crate::tail_cache;
use crate::time::{duration_ms, from_ms};

/// A commit, encoded by the caller before it is queued: the write, then what goes with it in
/// the same operation.
pub(crate) struct CommitOp {
    pub(crate) write: WriteOp,
    /// Apply the retention (the workflow finished).
    pub(crate) finished: bool,
    pub(crate) retention: Retention,
    /// Release the lease once written.
    pub(crate) release: bool,
    /// The outbox step taken with the write.
    pub(crate) outbox: Option<AdvanceOp>,
}

/// A write, encoded by the caller before it is queued.
pub(crate) struct WriteOp {
    pub(crate) id: String,
    /// The record's JSON text (the journal's encoder needs it).
    pub(crate) record: String,
    /// What the row's `record` column stores (see [`crate::record_column`]).
    pub(crate) stored_record: Vec<u8>,
    /// The record's snapshot, when the caller made it (for a journal row that must be one).
    pub(crate) snapshot: Option<Vec<u8>>,
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
    /// The workflow's status after the write (`WorkflowState::as_str`).
    pub(crate) status: &'static str,
    /// What the workflow's subject says, parsed for a creation (`prev` is `None`) when the id is
    /// an orchestration subject.
    pub(crate) columns: Option<SubjectColumns>,
}

/// A journal row, encoded but for its record (encoded by the writer against the previous one,
/// see [`orchestrator::memory::journal_codec`]).
pub(crate) struct EntryRow {
    pub(crate) at_ms: i64,
    /// The hash of the consumed event's identity (see [`crate::consumed_key`]).
    pub(crate) consumed_key: Option<i64>,
    /// The consumed and produced events ([`orchestrator::memory::journal_codec::encode_events`]).
    pub(crate) events: Vec<u8>,
    /// The record written, as JSON (its text is the write's `record`).
    pub(crate) record: serde_json::Value,
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

/// The commit: checks (lease, compare-and-swap), then the write and its journal row, the outbox
/// step, the retention of a finished workflow and the release of the lease. Returns the new
/// version and how many workflows the retention's sweep deleted.
pub(crate) fn commit(
    conn: &Connection,
    op: &mut CommitOp,
    now: i64,
    sweep: bool,
) -> Result<(u64, usize), MemoryError> {
    let (wf, version) = write(conn, &mut op.write, now)?;
    if op.finished {
        tail_cache::forget(wf);
    }
    let id = op.write.id.as_str();
    if let Some(step) = &op.outbox {
        advance(conn, step, now)?;
    }
    let swept = if op.finished { cleanup(conn, id, op.retention, now, sweep)? } else { 0 };
    if op.release
        && let Some((_, token)) = &op.write.lease
    {
        unlock(conn, id, *token, now)?;
    }
    Ok((version, swept))
}

/// The compare-and-swap write with its lease check and journal row; returns the workflow's row
/// (`workflows.seq`) and its new version. The journal row's record moves to the writer's
/// [`tail_cache`].
pub(crate) fn write(conn: &Connection, op: &mut WriteOp, now: i64) -> Result<(i64, u64), MemoryError> {
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
    // The stored record is read only when the new journal row can be a delta against it (the
    // previous version has a journal row).
    let row: Option<(i64, i64, Option<RecordColumn>, i64)> = conn
        .prepare_cached(
            "SELECT seq, version, CASE WHEN ?2 AND journal_tail IS version THEN record END, journal_since \
             FROM workflows WHERE substr(id, -16) = substr(?1, -16) AND id = ?1",
        )
        .and_then(|mut s| {
            s.query_row(params![id, op.entry.is_some()], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                .optional()
        })
        .map_err(&sql)?;
    let found = row.as_ref().map(|(_, v, _, _)| version_of(id, *v)).transpose()?;
    if found != op.prev {
        return Err(MemoryError::Conflict { id: id.to_owned(), expected: op.prev, found });
    }
    let version = as_i64(id, "version", found.unwrap_or(0) + 1)?;
    let encoded = match &op.entry {
        None => None,
        Some(entry) => {
            // The previous record, when the new row can be a delta against it: kept in the
            // previous journal row (as this writer wrote it, else rebuilt from the journal) or,
            // for rows of older versions, in the row.
            let (previous, since) = match &row {
                Some((seq, v, Some(stored), since)) => {
                    let previous = match stored {
                        RecordColumn::InJournal => {
                            u64::try_from(*v).ok().and_then(|v| tail_cache::take(*seq, v)).or_else(|| {
                                // Unreadable: the new row is a snapshot (as for an unreadable
                                // record).
                                crate::reads::record_at(conn, id, *v, Tables::Live)
                                    .ok()
                                    .flatten()
                                    .and_then(|decoder| decoder.current().cloned())
                            })
                        }
                        stored => stored.decode::<serde_json::Value>(id, *v).ok(),
                    };
                    (previous, *since)
                }
                _ => (None, 0),
            };
            let encoder = RecordEncoder { since_snapshot: u64::try_from(since).unwrap_or(0) };
            Some(encoder.encode_with_snapshot(
                previous.as_ref(),
                &entry.record,
                &op.record,
                id,
                op.snapshot.as_deref(),
            ))
        }
    };
    let since =
        encoded.as_ref().map(|e: &EncodedRecord| i64::try_from(e.next.since_snapshot).unwrap_or(i64::MAX));
    let wf = if let Some((seq, _, _, _)) = row {
        conn.prepare_cached(
            // A parent learnt (or changed) after the first write moves the root with it.
            "UPDATE workflows SET version = ?2, record = ?3, \
             root = CASE WHEN ?4 AND ?5 IS NOT parent_subject \
                 THEN COALESCE((SELECT COALESCE(p.root, p.id) FROM workflows p \
                     WHERE substr(p.id, -16) = substr(?5, -16) AND p.id = ?5), ?5) \
                 ELSE root END, \
             parent_subject = CASE WHEN ?4 THEN ?5 ELSE parent_subject END, \
             initiator = CASE WHEN ?6 THEN ?7 ELSE initiator END, \
             source = ?8, wake_at_ms = ?9, claimed_until_ms = NULL, updated_at_ms = ?10, status = ?11, \
             journal_tail = CASE WHEN ?12 IS NOT NULL THEN ?2 ELSE journal_tail END, \
             journal_since = COALESCE(?12, journal_since) \
             WHERE seq = ?1",
        )
        .and_then(|mut s| {
            s.execute(params![
                seq,
                version,
                op.stored_record,
                op.parent_subject.is_some(),
                op.parent_subject.as_ref().and_then(Option::as_deref),
                op.initiator.is_some(),
                op.initiator.as_deref(),
                op.source,
                op.wake_at_ms,
                now,
                op.status,
                since
            ])
        })
        .map_err(&sql)?;
        seq
    } else {
        let columns = op.columns.as_ref();
        conn.prepare_cached(
            // The root: the parent's, else the parent itself (its row is gone or not written
            // yet), else none (NULL: this workflow is a root).
            "INSERT INTO workflows (id, version, record, parent_subject, initiator, source, wake_at_ms, \
             created_at_ms, updated_at_ms, status, root, orchestrator_version, execution_id, meta, \
             journal_tail, journal_since) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8, ?9, \
                     COALESCE((SELECT COALESCE(p.root, p.id) FROM workflows p \
                         WHERE substr(p.id, -16) = substr(?4, -16) AND p.id = ?4), ?4), ?10, ?11, ?12, \
                     CASE WHEN ?13 IS NOT NULL THEN ?2 END, COALESCE(?13, 0))",
        )
        .and_then(|mut s| {
            s.execute(params![
                id,
                version,
                op.stored_record,
                op.parent_subject.as_ref().and_then(Option::as_deref),
                op.initiator.as_deref(),
                op.source,
                op.wake_at_ms,
                now,
                op.status,
                columns.map(|c| c.orchestrator_version.as_str()),
                columns.map(|c| c.execution_id.as_str()),
                columns.map(SubjectColumns::meta_json),
                since,
            ])
        })
        .map_err(&sql)?;
        let wf = conn.last_insert_rowid();
        if let Some(columns) = columns
            && !columns.meta.is_empty()
        {
            let mut meta = conn
                .prepare_cached("INSERT OR IGNORE INTO workflow_meta (key, value, wf) VALUES (?1, ?2, ?3)")
                .map_err(&sql)?;
            for (key, value) in &columns.meta {
                meta.execute(params![key, value, wf]).map_err(&sql)?;
            }
        }
        wf
    };
    let written = version_of(id, version)?;
    if let (Some(entry), Some(encoded)) = (&mut op.entry, &encoded) {
        conn.prepare_cached(
            "INSERT INTO journal (wf, version, at_ms, consumed_key, events, record) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .and_then(|mut s| {
            s.execute(params![wf, version, entry.at_ms, entry.consumed_key, entry.events, encoded.bytes])
        })
        .map_err(&sql)?;
        tail_cache::put(wf, written, std::mem::take(&mut entry.record), op.record.len());
    }
    Ok((wf, written))
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

/// Extends the lease `token` of `id` for `ttl` from `now`: its new expiry, or `None` when it
/// lapsed or was superseded.
pub(crate) fn renew(
    conn: &Connection,
    id: &str,
    token: u64,
    ttl: Duration,
    now: i64,
) -> Result<Option<i64>, MemoryError> {
    let token = as_i64(id, "fencing token", token)?;
    conn.prepare_cached(
        "UPDATE leases SET expires_at_ms = ?4 WHERE id = ?1 AND token = ?2 AND expires_at_ms > ?3 \
         RETURNING expires_at_ms",
    )
    .and_then(|mut s| {
        s.query_row(params![id, token, now, now.saturating_add(duration_ms(ttl))], |r| r.get(0)).optional()
    })
    .map_err(sql(id))
}

/// What the writer reads for `acquire` once the lease is taken: the record as JSON (unless the
/// caller's cached version is current) and the journal's answer as JSON.
pub(crate) struct AcquireRow {
    /// `None`: no record. `Some((version, None))`: the caller's cached record is current.
    pub(crate) stored: Option<(i64, Option<RecordColumn>)>,
    /// The events of the entry that consumed the event (encoded), with the entry's version.
    pub(crate) produced: Option<(i64, Vec<u8>)>,
}

/// The record of `id` and the journal's answer for the event `(source, event_id)`, read on the
/// writer connection. `cached` is the version the caller has cached, with whether the cache
/// knows the event was never consumed; when it is current, neither the record nor the journal
/// is read.
pub(crate) fn acquire_row(
    conn: &Connection,
    id: &str,
    source: &str,
    event_id: &str,
    cached: Option<(u64, bool)>,
) -> Result<AcquireRow, MemoryError> {
    let cached_version = cached.and_then(|(v, _)| i64::try_from(v).ok());
    let row: Option<(i64, Option<RecordColumn>)> = conn
        .prepare_cached(
            "SELECT version, CASE WHEN version IS ?2 THEN NULL ELSE record END FROM workflows \
             WHERE substr(id, -16) = substr(?1, -16) AND id = ?1",
        )
        .and_then(|mut s| s.query_row(params![id, cached_version], |r| Ok((r.get(0)?, r.get(1)?))).optional())
        .map_err(sql(id))?;
    let Some((version, record)) = row else { return Ok(AcquireRow { stored: None, produced: None }) };
    let record = record.map(|r| r.resolve(conn, id, version, Tables::Live)).transpose()?;
    let known_fresh = record.is_none() && cached.is_some_and(|(_, not_consumed)| not_consumed);
    let produced = if known_fresh { None } else { produced(conn, id, source, event_id)? };
    Ok(AcquireRow { stored: Some((version, record)), produced })
}

/// The events of the entry (encoded, see [`orchestrator::memory::journal_codec::decode_events`], with the entry's
/// version) in which `id` consumed the event `(source, event_id)`: the first of the rows with
/// its [`consumed_key`] whose consumed event is that one.
pub(crate) fn produced(
    conn: &Connection,
    id: &str,
    source: &str,
    event_id: &str,
) -> Result<Option<(i64, Vec<u8>)>, MemoryError> {
    let key = EventKey { source, id: event_id };
    let candidates: Vec<(i64, Vec<u8>)> = conn
        .prepare_cached(
            // Without statistics the planner would rather scan the workflow's journal by version.
            "SELECT j.version, j.events FROM journal j INDEXED BY journal_consumed \
             WHERE j.wf = (SELECT seq FROM workflows WHERE substr(id, -16) = substr(?1, -16) AND id = ?1) \
             AND j.consumed_key = ?2 ORDER BY j.version",
        )
        .and_then(|mut s| {
            s.query_map(params![id, consumed_key(key)], |r| Ok((r.get(0)?, r.get(1)?)))?.collect()
        })
        .map_err(sql(id))?;
    for (version, events) in candidates {
        let (consumed, _) = journal_codec::decode_events(&events, id)
            .map_err(|e| crate::reads::journal_error(id, "consumed event", version, e))?;
        if consumed.as_ref().is_some_and(|event| key.matches(event)) {
            return Ok(Some((version, events)));
        }
    }
    Ok(None)
}

/// Claims up to `limit` workflows due at or before `now` and not claimed past `now`, earliest
/// first, until `now + claim`: their ids and wake-up times (ms).
pub(crate) fn claim_due(
    conn: &Connection,
    limit: usize,
    claim: Duration,
    now: i64,
) -> Result<Vec<(String, i64)>, MemoryError> {
    let sql = sql("(claim_due)");
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let due: Vec<(i64, String, i64)> = conn
        .prepare_cached(
            "SELECT seq, id, wake_at_ms FROM workflows WHERE wake_at_ms IS NOT NULL AND wake_at_ms <= ?1 \
             AND (claimed_until_ms IS NULL OR claimed_until_ms <= ?1) ORDER BY wake_at_ms, id LIMIT ?2",
        )
        .and_then(|mut s| {
            s.query_map(params![now, limit], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?.collect()
        })
        .map_err(&sql)?;
    // Every check before the first change: the wake-up times are valid.
    for (_, id, at) in &due {
        from_ms("wake-up time", *at).map_err(|e| backend(id, e))?;
    }
    let until = now.saturating_add(duration_ms(claim));
    let mut claim =
        conn.prepare_cached("UPDATE workflows SET claimed_until_ms = ?2 WHERE seq = ?1").map_err(&sql)?;
    for (seq, _, _) in &due {
        claim.execute(params![seq, until]).map_err(&sql)?;
    }
    Ok(due.into_iter().map(|(_, id, at)| (id, at)).collect())
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
            conn.prepare_cached(
                "UPDATE workflows SET remove_at_ms = ?2 WHERE substr(id, -16) = substr(?1, -16) AND id = ?1",
            )
            .and_then(|mut s| s.execute(params![id, now.saturating_add(duration_ms(after))]))
            .map_err(&sql)?;
        }
        Retention::Archive => archive(conn, id, now).map_err(&sql)?,
    }
    if sweep { self::sweep(conn, now).map_err(&sql) } else { Ok(0) }
}

fn remove(conn: &Connection, id: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "DELETE FROM journal WHERE wf = \
         (SELECT seq FROM workflows WHERE substr(id, -16) = substr(?1, -16) AND id = ?1)",
    )?
    .execute([id])?;
    conn.prepare_cached("DELETE FROM workflows WHERE substr(id, -16) = substr(?1, -16) AND id = ?1")?
        .execute([id])?;
    Ok(())
}

fn archive(conn: &Connection, id: &str, now: i64) -> rusqlite::Result<()> {
    let exists = conn
        .prepare_cached("SELECT 1 FROM workflows WHERE substr(id, -16) = substr(?1, -16) AND id = ?1")?
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
         FROM workflows WHERE substr(id, -16) = substr(?1, -16) AND id = ?1",
    )?
    .execute(params![id, now])?;
    conn.prepare_cached(
        "INSERT INTO journal_archive (id, version, at_ms, consumed_key, events, record) \
         SELECT ?1, version, at_ms, consumed_key, events, record FROM journal \
         WHERE wf = (SELECT seq FROM workflows WHERE substr(id, -16) = substr(?1, -16) AND id = ?1) \
         ORDER BY version",
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
    /// The events that leave the outbox: the one consumed, or those a durable transport stored.
    pub(crate) consumed: Vec<String>,
    pub(crate) produced: Vec<(String, String)>,
}

/// Removes the consumed events from the outbox and adds the produced ones (ids already there
/// are skipped).
pub(crate) fn advance(conn: &Connection, op: &AdvanceOp, now: i64) -> Result<(), MemoryError> {
    let key = op.consumed.first().map_or("(outbox)", String::as_str);
    let sql = sql(key);
    if !op.consumed.is_empty() {
        let mut delete = conn.prepare_cached("DELETE FROM outbox WHERE event_id = ?1").map_err(&sql)?;
        for consumed in &op.consumed {
            delete.execute([consumed]).map_err(&sql)?;
        }
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
