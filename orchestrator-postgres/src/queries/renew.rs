//! The `RENEW` statement.

/// Extends lease `($1, $2)` by `$3` ms from now, if current.
pub(crate) const RENEW: &str = concat!(
    "UPDATE {s}.leases SET expires_at = now() + $3::bigint * interval '1 millisecond' \
     WHERE id = $1 AND token = $2 AND expires_at > now() RETURNING ",
    ms!("expires_at")
);
