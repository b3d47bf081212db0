//! The `PRODUCED` statement.

/// The journal's answer to event `($2, $3)` on workflow `$1`: its row's version and encoded
/// events.
pub(crate) const PRODUCED: &str = "SELECT version, events FROM {s}.journal \
     WHERE wf = $1 AND consumed_source = $2 AND consumed_id = $3 ORDER BY version LIMIT 1";
