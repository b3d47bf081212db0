//! The `record` column of a workflow's row (live or archived): its latest record, stored as a
//! snapshot of the compact journal encoding (see [`orchestrator::memory::journal_codec`]:
//! deflated with the workflow's id as part of the preset dictionary), about a fifth of its JSON
//! text. Rows written before schema 12 held the JSON text; migration 12 re-encodes them, and a
//! text value still reads.

use std::borrow::Cow;

use orchestrator::memory::MemoryError;
use orchestrator::memory::journal_codec;
use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ValueRef};
use serde::de::DeserializeOwned;

use crate::error::{SqliteError, backend};
use crate::reads::journal_error;

/// A `record` column as read.
#[derive(Debug, Clone)]
pub(crate) enum RecordColumn {
    /// The JSON text (rows of schema 11 and before).
    Text(String),
    /// A snapshot in the journal's encoding (schema 12).
    Encoded(Vec<u8>),
}

impl FromSql for RecordColumn {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        match value {
            ValueRef::Text(text) => std::str::from_utf8(text)
                .map(|t| Self::Text(t.to_owned()))
                .map_err(|e| FromSqlError::Other(e.into())),
            ValueRef::Blob(bytes) => Ok(Self::Encoded(bytes.to_vec())),
            _ => Err(FromSqlError::InvalidType),
        }
    }
}

impl RecordColumn {
    /// The record's JSON text (as bytes) of workflow `id`, whose row is at `version`.
    pub(crate) fn json(&self, id: &str, version: i64) -> Result<Cow<'_, [u8]>, MemoryError> {
        match self {
            Self::Text(text) => Ok(Cow::Borrowed(text.as_bytes())),
            Self::Encoded(bytes) => {
                journal_codec::decode_snapshot(bytes, id).map_err(|e| journal_error(id, "record", version, e))
            }
        }
    }

    /// The record of workflow `id`, whose row is at `version`, decoded.
    pub(crate) fn decode<T: DeserializeOwned>(&self, id: &str, version: i64) -> Result<T, MemoryError> {
        serde_json::from_slice(&self.json(id, version)?)
            .map_err(|source| backend(id, SqliteError::Decode { what: "record", version, source }))
    }
}

/// What a write stores in the `record` column for the record whose JSON text is `json`.
pub(crate) fn encode(json: &str, id: &str) -> Vec<u8> {
    journal_codec::encode_snapshot(json, id)
}
