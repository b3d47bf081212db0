//! The `REQUEUE` statement.

/// Puts dead letter `$1` back in the queue (a fresh delivery, attempt count reset); no row when
/// there is no such dead letter.
pub(crate) const REQUEUE: &str = "WITH d AS (DELETE FROM {s}.dead_letters WHERE seq = $1 \
       RETURNING topic, subject, event_id, event) \
     INSERT INTO {s}.queue (topic, subject, event_id, event) SELECT topic, subject, event_id, event FROM d \
     ON CONFLICT (event_id) DO NOTHING RETURNING seq";
