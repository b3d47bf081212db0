//! The `ENTRY` statement.

/// The journal entry of `$1` at version `$2`.
pub(crate) const ENTRY: &str = "SELECT version, at_ms, consumed, produced, record::text \
     FROM {s}.journal WHERE wf = $1 AND version = $2";
