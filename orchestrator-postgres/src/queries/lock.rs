//! The `LOCK` statement.

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
