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

/// The fencing check of a commit: lease `($1, $2)` is current; locks its row until the end of
/// the transaction so that nobody supersedes it meanwhile.
pub(crate) const FENCE: &str =
    "SELECT 1 FROM {s}.leases WHERE id = $1 AND token = $2 AND expires_at > now() FOR SHARE";

/// The version of `$1`.
pub(crate) const VERSION: &str = "SELECT version FROM {s}.workflows WHERE id = $1";

/// Creates `$1` at version 1, unless it exists.
pub(crate) const INSERT: &str = "INSERT INTO {s}.workflows \
     (id, record, version, parent, initiator, source, wake_at) \
     VALUES ($1, $2::text::jsonb, 1, $3, $4, $5, to_timestamp($6::bigint / 1000.0)) \
     ON CONFLICT (id) DO NOTHING RETURNING version";

/// Compare-and-swap update of `$1` from version `$2`.
pub(crate) const UPDATE: &str = "UPDATE {s}.workflows SET record = $3::text::jsonb, version = $2 + 1, \
     parent = CASE WHEN $4::boolean THEN $5 ELSE parent END, \
     initiator = CASE WHEN $6::boolean THEN $7 ELSE initiator END, \
     source = $8, wake_at = to_timestamp($9::bigint / 1000.0), claimed_until = NULL, updated_at = now() \
     WHERE id = $1 AND version = $2 RETURNING version";

/// A journal row.
pub(crate) const JOURNAL: &str = "INSERT INTO {s}.journal \
     (wf, version, at_ms, consumed_source, consumed_id, consumed, produced, record) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8::text::jsonb)";

/// The journal's answer to event `($2, $3)` on workflow `$1`.
pub(crate) const PRODUCED: &str = "SELECT produced FROM {s}.journal \
     WHERE wf = $1 AND consumed_source = $2 AND consumed_id = $3 ORDER BY version LIMIT 1";

/// Removes event `$1` from the outbox.
pub(crate) const OUTBOX_REMOVE: &str = "DELETE FROM {s}.outbox WHERE event_id = $1";

/// Adds events (ids `$1`, JSON `$2`) to the outbox in order, skipping ids present.
pub(crate) const OUTBOX_ADD: &str = "INSERT INTO {s}.outbox (event_id, event) \
     SELECT id, ev FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS t(id, ev, ord) ORDER BY ord \
     ON CONFLICT (event_id) DO NOTHING";

/// Up to `$2` outbox events after position `$1`.
pub(crate) const OUTBOX_PENDING: &str =
    "SELECT seq, event FROM {s}.outbox WHERE seq > $1 ORDER BY seq LIMIT $2";

/// Marks `$1` finished (kept until a sweep, if any).
pub(crate) const MARK_FINISHED: &str =
    "UPDATE {s}.workflows SET finished_at = COALESCE(finished_at, now()) WHERE id = $1";

/// Deletes the journal of `$1`.
pub(crate) const DELETE_JOURNAL: &str = "DELETE FROM {s}.journal WHERE wf = $1";

/// Deletes the record of `$1`.
pub(crate) const DELETE_WORKFLOW: &str = "DELETE FROM {s}.workflows WHERE id = $1";

/// Deletes the workflows finished more than `$1` ms ago, with their journals.
pub(crate) const SWEEP: &str = "WITH gone AS (DELETE FROM {s}.workflows \
       WHERE finished_at <= now() - $1::bigint * interval '1 millisecond' RETURNING id) \
     DELETE FROM {s}.journal j USING gone WHERE j.wf = gone.id";

/// Copies the record of `$1` to the archive.
pub(crate) const ARCHIVE_WORKFLOW: &str = "INSERT INTO {s}.archive_workflows \
     SELECT * FROM {s}.workflows WHERE id = $1";

/// Copies the journal of `$1` to the archive.
pub(crate) const ARCHIVE_JOURNAL: &str =
    "INSERT INTO {s}.archive_journal SELECT * FROM {s}.journal WHERE wf = $1";

/// Releases lease `($1, $2)` (the end of a commit).
pub(crate) const RELEASE: &str = "DELETE FROM {s}.leases WHERE id = $1 AND token = $2";

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
