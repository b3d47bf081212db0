//! The `HISTORY` statement.

/// Journal entries of `$1` after version `$2`, at most `$3`.
pub(crate) const HISTORY: &str = "SELECT version, at_ms, consumed, produced, record::text \
     FROM {s}.journal WHERE wf = $1 AND version > $2 ORDER BY version LIMIT $3";
