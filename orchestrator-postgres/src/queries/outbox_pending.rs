//! The `OUTBOX_PENDING` statement.

/// Up to `$2` outbox events after position `$1`.
pub(crate) const OUTBOX_PENDING: &str =
    "SELECT seq, event FROM {s}.outbox WHERE seq > $1 ORDER BY seq LIMIT $2";
