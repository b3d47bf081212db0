//! The SQL statements, one constant each. `{s}` is replaced by the quoted schema name when the
//! store opens; every value is a bound parameter.

/// Milliseconds since the Unix epoch of a `timestamptz` expression.
macro_rules! ms {
    ($e:literal) => {
        concat!("(extract(epoch from ", $e, ") * 1000)::bigint")
    };
}

/// Takes the lease on `$1` for owner `$2` and `$3` ms when it is free or lapsed.
/// Returns the token and expiry; no row when held.
pub(crate) const LOCK: &str = concat!(
    "INSERT INTO {s}.leases AS l (id, owner, token, expires_at) \
     VALUES ($1, $2, nextval('{s}.lease_tokens'), now() + $3::bigint * interval '1 millisecond') \
     ON CONFLICT (id) DO UPDATE SET owner = EXCLUDED.owner, token = EXCLUDED.token, \
     expires_at = EXCLUDED.expires_at WHERE l.expires_at <= now() \
     RETURNING token, ",
    ms!("expires_at")
);

/// `acquire` in one statement: the lease (when `$4`), the record of `$1` and the journal's answer
/// for the event `($5, $6)`.
pub(crate) const ACQUIRE: &str = concat!(
    "WITH l AS (\
       INSERT INTO {s}.leases AS l (id, owner, token, expires_at) \
       SELECT $1, $2, nextval('{s}.lease_tokens'), now() + $3::bigint * interval '1 millisecond' \
       WHERE $4::boolean \
       ON CONFLICT (id) DO UPDATE SET owner = EXCLUDED.owner, token = EXCLUDED.token, \
       expires_at = EXCLUDED.expires_at WHERE l.expires_at <= now() \
       RETURNING token, ",
    ms!("expires_at"),
    " AS expires_ms) \
     SELECT (SELECT token FROM l), (SELECT expires_ms FROM l), w.record::text, w.version, \
       (SELECT j.produced FROM {s}.journal j WHERE j.wf = $1 AND j.consumed_source = $5 \
        AND j.consumed_id = $6 ORDER BY j.version LIMIT 1) \
     FROM (SELECT 1) AS one LEFT JOIN {s}.workflows w ON w.id = $1"
);

/// The record of `$1` and its version.
pub(crate) const READ: &str = "SELECT record::text, version FROM {s}.workflows WHERE id = $1";

/// Extends lease `($1, $2)` by `$3` ms from now, if current.
pub(crate) const RENEW: &str = concat!(
    "UPDATE {s}.leases SET expires_at = now() + $3::bigint * interval '1 millisecond' \
     WHERE id = $1 AND token = $2 AND expires_at > now() RETURNING ",
    ms!("expires_at")
);

/// Releases lease `($1, $2)`; returns whether it was still current.
pub(crate) const UNLOCK: &str =
    "DELETE FROM {s}.leases WHERE id = $1 AND token = $2 RETURNING expires_at > now()";

/// The journal's answer to event `($2, $3)` on workflow `$1`.
pub(crate) const PRODUCED: &str = "SELECT produced FROM {s}.journal \
     WHERE wf = $1 AND consumed_source = $2 AND consumed_id = $3 ORDER BY version LIMIT 1";

/// Up to `$2` outbox events after position `$1`.
pub(crate) const OUTBOX_PENDING: &str =
    "SELECT seq, event FROM {s}.outbox WHERE seq > $1 ORDER BY seq LIMIT $2";

/// Claims up to `$1` due wake-ups for `$2` ms, earliest first.
pub(crate) const CLAIM_DUE: &str = concat!(
    "WITH due AS (SELECT id FROM {s}.workflows \
       WHERE wake_at <= now() AND (claimed_until IS NULL OR claimed_until <= now()) \
       ORDER BY wake_at, id LIMIT $1 FOR UPDATE SKIP LOCKED) \
     UPDATE {s}.workflows w SET claimed_until = now() + $2::bigint * interval '1 millisecond' \
     FROM due WHERE w.id = due.id RETURNING w.id, ",
    ms!("w.wake_at")
);

/// Journal entries of `$1` after version `$2`, at most `$3`.
pub(crate) const HISTORY: &str = "SELECT version, at_ms, consumed, produced, record::text \
     FROM {s}.journal WHERE wf = $1 AND version > $2 ORDER BY version LIMIT $3";

/// The journal entry of `$1` at version `$2`.
pub(crate) const ENTRY: &str = "SELECT version, at_ms, consumed, produced, record::text \
     FROM {s}.journal WHERE wf = $1 AND version = $2";

/// The children of `$1`, in the order they started.
pub(crate) const CHILDREN: &str = "SELECT id FROM {s}.workflows WHERE parent = $1 ORDER BY seq";

/// The parent of `$1`.
pub(crate) const PARENT: &str = "SELECT parent FROM {s}.workflows WHERE id = $1";

/// The whole commit in one call (see the `commit_step` function of migration 2): returns a
/// status (0 written, 1 stale lease, 2 conflict) and the new version (or the version found).
pub(crate) const COMMIT: &str = "SELECT o_status, o_version FROM {s}.commit_step(\
     $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, \
     $21, $22, $23, $24)";

/// The retention of `$1` (mode `$2`, delay `$3` ms) in one call.
pub(crate) const RETAIN: &str = "SELECT {s}.retain($1, $2, $3)";

/// Frees every lease of node `$1` (its previous run).
pub(crate) const RELEASE_NODE: &str = "DELETE FROM {s}.leases WHERE owner = $1";

/// An outbox step in one call: removes event `$1` (if not null), adds events (ids `$2`, JSON
/// `$3`) in order, skipping ids present.
pub(crate) const OUTBOX_STEP: &str = "SELECT {s}.outbox_step($1, $2, $3)";

/// Deletes the lapsed leases; returns how many (tokens come from a sequence, so none is ever given again).
pub(crate) const REAP_LEASES: &str =
    "WITH gone AS (DELETE FROM {s}.leases WHERE expires_at <= now() RETURNING 1) SELECT count(*) FROM gone";

/// Deletes the workflows finished more than `$1` ms ago, with their journals; returns how many.
pub(crate) const SWEEP: &str = "WITH gone AS (DELETE FROM {s}.workflows \
       WHERE finished_at <= now() - $1::bigint * interval '1 millisecond' RETURNING id), \
     journal AS (DELETE FROM {s}.journal j USING gone WHERE j.wf = gone.id) \
     SELECT count(*) FROM gone";
