//! The `ACQUIRE` statement.

/// `acquire` in one statement: the lease (when `$4`), the record of `$1` and the journal's answer
/// for the event `($5, $6)` (the encoded events of its row), then the workflow's journal state
/// (last journal row, delta bytes since the last snapshot).
///
/// Its transaction commits without waiting for the WAL to reach the disk: a lease lost in a
/// server crash is only taken again by someone else, and every write it guards is also a
/// compare-and-swap on the record's version, made by a synchronous commit.
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
     SELECT (SELECT token FROM l), (SELECT expires_ms FROM l), w.record, w.version, \
       (SELECT j.events FROM {s}.journal j WHERE j.wf = $1 AND j.consumed_source = $5 \
        AND j.consumed_id = $6 ORDER BY j.version LIMIT 1), w.journal_tail, w.journal_since \
     FROM (SELECT set_config('synchronous_commit', 'off', true)) AS relaxed \
       LEFT JOIN {s}.workflows w ON w.id = $1"
);
