//! The `CLAIM` statement.

/// Claims up to `$2` deliveries of topics `$1` (all when null) for owner `$3` for `$4` ms, oldest
/// first: a row is claimable once visible, unclaimed (or its claim lapsed), first of its
/// `(topic, subject)` lane, and while no other row of its lane is claimed. Rows another claim is
/// taking are skipped (`SKIP LOCKED`). Each claim counts an attempt and gets a fresh token.
pub(crate) const CLAIM: &str = "WITH picked AS (\
       SELECT q.seq FROM {s}.queue q \
       WHERE ($1::text[] IS NULL OR q.topic = ANY($1)) AND q.visible_at <= now() \
         AND (q.claimed_until IS NULL OR q.claimed_until <= now()) \
         AND NOT EXISTS (SELECT 1 FROM {s}.queue p WHERE p.topic = q.topic AND p.subject = q.subject \
                         AND (p.seq < q.seq OR p.claimed_until > now())) \
       ORDER BY q.seq LIMIT $2 FOR UPDATE SKIP LOCKED) \
     UPDATE {s}.queue q SET attempt = q.attempt + 1, token = nextval('{s}.claim_tokens'), \
       claimed_by = $3, claimed_until = now() + $4::bigint * interval '1 millisecond' \
     FROM picked WHERE q.seq = picked.seq \
     RETURNING q.seq, q.token, q.attempt, q.topic, q.subject, q.event_id, q.event";
