//! The `UNLOCK` statement.

/// Releases lease `($1, $2)`; returns whether it was still current.
pub(crate) const UNLOCK: &str =
    "DELETE FROM {s}.leases WHERE id = $1 AND token = $2 RETURNING expires_at > now()";
