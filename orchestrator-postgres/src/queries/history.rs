//! The `HISTORY` statement.

/// Journal entries of `$1` after version `$2`, at most `$3` (encoded: see `crate::journal`).
pub(crate) const HISTORY: &str = "SELECT version, at_ms, events, record_bytes \
     FROM {s}.journal WHERE wf = $1 AND version > $2 ORDER BY version LIMIT $3";
