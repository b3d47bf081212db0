//! The `CLAIM_DUE` statement.

/// Claims up to `$1` due wake-ups for `$2` ms, earliest first.
pub(crate) const CLAIM_DUE: &str = concat!(
    "WITH due AS (SELECT id FROM {s}.workflows \
       WHERE wake_at <= now() AND (claimed_until IS NULL OR claimed_until <= now()) \
       ORDER BY wake_at, id LIMIT $1 FOR UPDATE SKIP LOCKED) \
     UPDATE {s}.workflows w SET claimed_until = now() + $2::bigint * interval '1 millisecond' \
     FROM due WHERE w.id = due.id RETURNING w.id, ",
    ms!("w.wake_at")
);
