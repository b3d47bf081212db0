//! The `DRAINED` statement.

/// Whether nothing of topics `$1` (all when null) is left for owner `$2`: no row unclaimed (or
/// with a lapsed claim, or delayed) and none claimed by `$2`. Rows other owners hold are theirs.
pub(crate) const DRAINED: &str = "SELECT NOT EXISTS (SELECT 1 FROM {s}.queue q \
     WHERE ($1::text[] IS NULL OR q.topic = ANY($1)) \
       AND (q.claimed_until IS NULL OR q.claimed_until <= now() OR q.claimed_by = $2))";
