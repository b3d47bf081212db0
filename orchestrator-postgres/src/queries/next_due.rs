//! The `NEXT_DUE` statement.

/// In how many ms the next delayed row of topics `$1` (all when null) becomes visible; null when
/// none waits. It reads the partial index of delayed rows (`queue_delayed`), not the queue. A
/// lapsing claim is not awaited here: the poller reaps lapsed claims at every poll interval.
pub(crate) const NEXT_DUE: &str = "SELECT (extract(epoch from min(q.visible_at) - now()) * 1000)::bigint \
     FROM {s}.queue q WHERE q.visible_at > q.enqueued_at AND q.visible_at > now() \
       AND ($1::text[] IS NULL OR q.topic = ANY($1))";
