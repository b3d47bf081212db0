//! The `ENQUEUE` statement.

/// Enqueues events (topics `$1`, subjects `$2`, ids `$3`, JSON `$4`) in order, skipping ids
/// already queued, and wakes the listeners.
pub(crate) const ENQUEUE: &str = "SELECT {s}.enqueue($1, $2, $3, $4)";
