//! The `record` column of a workflow's row (live or archived): its latest record, stored once.
//!
//! * When the write that made it has a journal row (the usual case), the journal row holds the
//!   record (as a snapshot or as a delta, see [`orchestrator::memory::journal_codec`]), and the
//!   workflow's row an empty blob: the record is rebuilt from the journal when it is read (and
//!   this store's record cache spares most reads).
//! * Otherwise (a write without a journal entry), the row holds the record as a snapshot in the
//!   journal's encoding: deflated with the workflow's id as part of the preset dictionary, about
//!   a fifth of its JSON text.
//!
//! Rows written before schema 12 held the JSON text; migration 12 re-encodes them, and a text
//! value still reads.

use orchestrator::memory::MemoryError;
use orchestrator::memory::journal_codec;
use rusqlite::Connection;
use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ValueRef};
use serde::de::DeserializeOwned;

use crate::error::{SqliteError, backend};
use crate::reads::{Tables, journal_error, record_at};

/// A `record` column as read.
#[derive(Debug, Clone)]
pub(crate) enum RecordColumn {
    /// The JSON text (rows of schema 11 and before).
    Text(String),
    /// A snapshot in the journal's encoding.
    Encoded(Vec<u8>),
    /// The record is the journal's at the row's version (an empty blob).
    InJournal,
    /// The record rebuilt from the journal ([`RecordColumn::resolve`]).
    Rebuilt(serde_json::Value),
}

impl FromSql for RecordColumn {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        match value {
            ValueRef::Text(text) => std::str::from_utf8(text)
                .map(|t| Self::Text(t.to_owned()))
                .map_err(|e| FromSqlError::Other(e.into())),
            ValueRef::Blob([]) => Ok(Self::InJournal),
            ValueRef::Blob(bytes) => Ok(Self::Encoded(bytes.to_vec())),
            _ => Err(FromSqlError::InvalidType),
        }
    }
}

impl RecordColumn {
    /// The column, with a record kept in the journal rebuilt from `tables`' journal at `version`
    /// (the row's version).
    pub(crate) fn resolve(
        self,
        conn: &Connection,
        id: &str,
        version: i64,
        tables: Tables,
    ) -> Result<Self, MemoryError> {
        let Self::InJournal = self else { return Ok(self) };
        let decoder = record_at(conn, id, version, tables)?;
        match decoder.as_ref().and_then(|d| d.current()) {
            Some(record) => Ok(Self::Rebuilt(record.clone())),
            None => Err(backend(
                id,
                SqliteError::Invalid {
                    what: "record kept in a journal row that is missing at version",
                    value: version,
                },
            )),
        }
    }

    /// The record of workflow `id`, whose row is at `version`, decoded (after
    /// [`resolve`](Self::resolve)).
    pub(crate) fn decode<T: DeserializeOwned>(&self, id: &str, version: i64) -> Result<T, MemoryError> {
        let decode = |source| backend(id, SqliteError::Decode { what: "record", version, source });
        match self {
            Self::Text(text) => serde_json::from_str(text).map_err(decode),
            Self::Encoded(bytes) => {
                let json = journal_codec::decode_snapshot(bytes, id)
                    .map_err(|e| journal_error(id, "record", version, e))?;
                serde_json::from_slice(&json).map_err(decode)
            }
            Self::Rebuilt(value) => T::deserialize(value).map_err(decode),
            Self::InJournal => Err(backend(
                id,
                SqliteError::Invalid { what: "record not rebuilt at version", value: version },
            )),
        }
    }
}

/// What a write stores in the `record` column for the record whose JSON text is `json`: nothing
/// (an empty blob) when the write has a journal row, which holds it; else its snapshot.
pub(crate) fn encode(json: &str, id: &str, journaled: bool) -> Vec<u8> {
    if journaled { Vec::new() } else { snapshot(json, id) }
}

/// The record's snapshot in the journal's encoding.
pub(crate) fn snapshot(json: &str, id: &str) -> Vec<u8> {
    journal_codec::encode_snapshot(json, id)
}
