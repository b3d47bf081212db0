//! The `ENTRY` statement.

/// The journal entry of `$1` at version `$2` (encoded: see `crate::journal`).
pub(crate) const ENTRY: &str = "SELECT version, at_ms, events, record_bytes \
     FROM {s}.journal WHERE wf = $1 AND version = $2";
