//! The [`Answers`] implementation of [`SqliteMemory`]: table `answers` (schema version 8),
//! written by the writer thread (one writer: a record and the read of the answer kept are one
//! operation), read on the read pool.

use orchestrator::event::Event;
use orchestrator::memory::{AnswerKey, Answers, MemoryError};
use rusqlite::{Connection, OptionalExtension, params};

use crate::SqliteMemory;
use crate::error::{SqliteError, backend};
use crate::reads::{decode, read};
use crate::store::encode;

/// The key of answer operations in errors.
const KEY: &str = "(answers)";

impl<R: Send + Sync> Answers for SqliteMemory<R> {
    async fn answer(&self, key: AnswerKey<'_>) -> Result<Option<Vec<Event>>, MemoryError> {
        let owned = Owned::of(key);
        read(&self.readers, KEY, move |conn, _| recorded(conn, &owned)).await
    }

    async fn record_answer(&self, key: AnswerKey<'_>, produced: &[Event]) -> Result<Vec<Event>, MemoryError> {
        let owned = Owned::of(key);
        let json = encode(KEY, "recorded answer", produced)?;
        let produced = produced.to_vec();
        self.writer
            .submit(KEY, move |conn, now| {
                // The writer thread is the only writer: nothing records between the two.
                if let Some(first) = recorded(conn, &owned)? {
                    return Ok(first);
                }
                conn.prepare_cached(
                    "INSERT INTO answers (service, source, id, produced, recorded_at_ms) VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .and_then(|mut insert| insert.execute(params![owned.service, owned.source, owned.id, json, now]))
                .map_err(sql)?;
                Ok(produced)
            })
            .await
    }
}

/// An [`AnswerKey`] the writer thread and the read pool can own.
struct Owned {
    service: String,
    source: String,
    id: String,
}

impl Owned {
    fn of(key: AnswerKey<'_>) -> Self {
        Self { service: key.service.to_owned(), source: key.source.to_owned(), id: key.id.to_owned() }
    }
}

fn sql(e: rusqlite::Error) -> MemoryError {
    backend(KEY, SqliteError::Sqlite(e))
}

/// The answer recorded under `key`.
fn recorded(conn: &Connection, key: &Owned) -> Result<Option<Vec<Event>>, MemoryError> {
    let json: Option<String> = conn
        .prepare_cached("SELECT produced FROM answers WHERE service = ?1 AND source = ?2 AND id = ?3")
        .and_then(|mut select| {
            select.query_row(params![key.service, key.source, key.id], |r| r.get(0)).optional()
        })
        .map_err(sql)?;
    json.map(|json| decode(KEY, "recorded answer", 0, &json)).transpose()
}
