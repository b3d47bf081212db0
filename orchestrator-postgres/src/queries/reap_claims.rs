//! The `REAP_CLAIMS` statement.

/// Makes every claim whose visibility deadline has passed unclaimed again (its consumer died or
/// stalls): the row is delivered again, to anyone; a settlement by the late consumer then finds
/// its token gone. Rows being reaped by someone else are skipped. Returns how many were reaped.
pub(crate) const REAP_CLAIMS: &str = "WITH lapsed AS (\
       SELECT q.seq FROM {s}.queue q WHERE q.claimed_by IS NOT NULL AND q.claimed_until <= now() \
       FOR UPDATE SKIP LOCKED) \
     UPDATE {s}.queue q SET claimed_by = NULL, token = NULL, claimed_until = NULL \
     FROM lapsed WHERE q.seq = lapsed.seq RETURNING q.seq";
