//! The `OUTBOX_STEP` statement.

/// An outbox step in one call: removes event `$1` (if not null), adds events (ids `$2`, JSON
/// `$3`) in order, skipping ids present.
pub(crate) const OUTBOX_STEP: &str = "SELECT {s}.outbox_step($1, $2, $3)";
