//! The `LOOK` statement.

/// `acquire` without a lease, in one read-only statement: the record of `$1` and the journal's
/// answer for the event `($2, $3)`, in the columns of [`ACQUIRE`](super::ACQUIRE) (the lease's
/// two are null).
pub(crate) const LOOK: &str = "SELECT NULL::bigint, NULL::bigint, w.record, w.version, \
       (SELECT j.events FROM {s}.journal j WHERE j.wf = $1 AND j.consumed_source = $2 \
        AND j.consumed_id = $3 ORDER BY j.version LIMIT 1), w.journal_tail, w.journal_since \
     FROM (SELECT 1) AS one LEFT JOIN {s}.workflows w ON w.id = $1";
