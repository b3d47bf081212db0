//! The `ANSWER` statement.

/// The answer recorded for request `($2, $3)` (source, id) of service `$1`: its products (a JSON
/// array of events, as text); no row when none is recorded.
pub(crate) const ANSWER: &str =
    "SELECT a.produced FROM {s}.answers a WHERE a.service = $1 AND a.source = $2 AND a.id = $3";
