//! The `OUTBOX_STEP` statement.

/// An outbox step in one call: removes event `$1` (if not null), queues events (topics `$2`,
/// subjects `$3`, ids `$4`, JSON `$5`) in order, skipping ids present.
pub(crate) const OUTBOX_STEP: &str = "SELECT {s}.outbox_step($1, $2, $3, $4, $5)";
