//! The `DEAD_LETTERS` statement.

/// Up to `$2` dead letters after position `$1`, oldest first.
pub(crate) const DEAD_LETTERS: &str = concat!(
    "SELECT seq, topic, subject, event_id, event, attempt, reason, ",
    ms!("at"),
    " FROM {s}.dead_letters WHERE seq > $1 ORDER BY seq LIMIT $2"
);
