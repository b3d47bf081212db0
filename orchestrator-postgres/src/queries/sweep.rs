//! The `SWEEP` statement.

/// Deletes the workflows finished more than `$1` ms ago, with their journals; returns how many.
pub(crate) const SWEEP: &str = "WITH gone AS (DELETE FROM {s}.workflows \
       WHERE finished_at <= now() - $1::bigint * interval '1 millisecond' RETURNING id), \
     journal AS (DELETE FROM {s}.journal j USING gone WHERE j.wf = gone.id) \
     SELECT count(*) FROM gone";
