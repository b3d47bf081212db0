//! The `EXTEND` statement.

/// Keeps delivery `($1, $2)` claimed for `$3` ms from now; no row when the claim is no longer
/// this one.
pub(crate) const EXTEND: &str = "UPDATE {s}.queue SET claimed_until = now() + $3::bigint * interval '1 millisecond' \
     WHERE seq = $1 AND token = $2 RETURNING seq";
