//! The `TERMINATE` statement.

/// Moves delivery `($1, $2)` to the dead letters with reason `$8` (topic `$3`, subject `$4`, id
/// `$5`, JSON `$6`, attempt `$7`). Recorded when this claim still held the row, or when the row
/// is gone (a failed step's commit settled it); not when another consumer claimed it since. Once
/// per queue position: a retry after a lost answer finds the dead letter recorded.
pub(crate) const TERMINATE: &str = "WITH gone AS (DELETE FROM {s}.queue WHERE seq = $1 AND token = $2 RETURNING seq) \
     INSERT INTO {s}.dead_letters (topic, subject, event_id, event, attempt, reason, queue_seq) \
     SELECT $3, $4, $5, $6, $7, $8, $1 \
     WHERE EXISTS (SELECT 1 FROM gone) OR NOT EXISTS (SELECT 1 FROM {s}.queue WHERE seq = $1) \
     ON CONFLICT (queue_seq) DO NOTHING";
