//! The [`DeadLetterStore`] implementation of [`SqliteMemory`]: table `dead_letters` (schema
//! version 9). A bury is one operation of the writer thread: the dead letter's insert and the
//! removal of its event from the outbox commit together.

use orchestrator::event::Event;
use orchestrator::memory::{Buried, DeadLetterStore, MemoryError, from_unix_ms};
use rusqlite::{Connection, params};

use crate::SqliteMemory;
use crate::error::{SqliteError, backend};
use crate::reads::{decode, read};
use crate::store::encode;

/// The key of dead-letter operations in errors.
const KEY: &str = "(dead letters)";

impl<R: Send + Sync> DeadLetterStore for SqliteMemory<R> {
    async fn bury(&self, event: &Event, reason: &str, attempt: u32) -> Result<(), MemoryError> {
        let json = encode(KEY, "dead letter", event)?;
        let (id, subject, reason) = (event.id().to_owned(), event.subject().to_owned(), reason.to_owned());
        self.writer
            .submit(KEY, move |conn, now| {
                conn.prepare_cached(
                    "INSERT OR IGNORE INTO dead_letters (event_id, subject, at_ms, attempt, reason, event) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )
                .and_then(|mut insert| insert.execute(params![id, subject, now, attempt, reason, json]))
                .map_err(sql)?;
                conn.prepare_cached("DELETE FROM outbox WHERE event_id = ?1")
                    .and_then(|mut delete| delete.execute(params![id]))
                    .map_err(sql)?;
                Ok(())
            })
            .await
    }

    async fn buried(
        &self,
        subject: Option<&str>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Buried>, MemoryError> {
        let subject = subject.map(str::to_owned);
        read(&self.readers, KEY, move |conn, _| listed(conn, subject.as_deref(), after, limit)).await
    }
}

fn sql(e: rusqlite::Error) -> MemoryError {
    backend(KEY, SqliteError::Sqlite(e))
}

/// The dead letters after `after`, oldest first (of `subject` only, when given).
fn listed(
    conn: &Connection,
    subject: Option<&str>,
    after: u64,
    limit: usize,
) -> Result<Vec<Buried>, MemoryError> {
    let after = i64::try_from(after).unwrap_or(i64::MAX);
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    // Two statements, so that a workflow's dead letters are read on `dead_letters_subject`.
    let mut select = conn
        .prepare_cached(match subject {
            Some(_) => {
                "SELECT seq, at_ms, attempt, reason, event FROM dead_letters \
                 WHERE subject = ?2 AND seq > ?1 ORDER BY seq LIMIT ?3"
            }
            None => {
                "SELECT seq, at_ms, attempt, reason, event FROM dead_letters \
                 WHERE seq > ?1 AND ?2 IS NULL ORDER BY seq LIMIT ?3"
            }
        })
        .map_err(sql)?;
    let rows = select
        .query_map(params![after, subject, limit], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
                r.get(3)?,
                r.get::<_, String>(4)?,
            ))
        })
        .map_err(sql)?;
    let mut buried = Vec::new();
    for row in rows {
        let (seq, at_ms, attempt, reason, json) = row.map_err(sql)?;
        buried.push(Buried {
            seq: u64::try_from(seq).unwrap_or_default(),
            at: from_unix_ms(u64::try_from(at_ms).unwrap_or_default()),
            event: decode(KEY, "dead letter", seq, &json)?,
            reason,
            attempt: u32::try_from(attempt).unwrap_or(u32::MAX),
        });
    }
    Ok(buried)
}
