//! The `DEPTH` statement.

/// How many queued events wait unclaimed, counting no further than `$1`.
pub(crate) const DEPTH: &str = "SELECT count(*) FROM (SELECT 1 FROM {s}.queue q \
     WHERE q.claimed_by IS NULL LIMIT $1) AS t";
