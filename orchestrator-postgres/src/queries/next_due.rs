//! The `NEXT_DUE` statement.

/// In how many ms the next row of topics `$1` (all when null) becomes visible or sees its claim
/// lapse; null when none will.
pub(crate) const NEXT_DUE: &str = "SELECT (extract(epoch from min(COALESCE(q.claimed_until, q.visible_at)) - now()) * 1000)::bigint \
     FROM {s}.queue q WHERE ($1::text[] IS NULL OR q.topic = ANY($1)) \
       AND COALESCE(q.claimed_until, q.visible_at) > now()";
