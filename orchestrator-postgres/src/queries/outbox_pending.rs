//! The `OUTBOX_PENDING` statement.

/// Up to `$2` queued events (the outbox is the queue) after position `$1`.
pub(crate) const OUTBOX_PENDING: &str =
    "SELECT seq, event FROM {s}.queue WHERE seq > $1 ORDER BY seq LIMIT $2";
