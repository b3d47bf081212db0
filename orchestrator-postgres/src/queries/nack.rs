//! The `NACK` statement.

/// Gives delivery `($1, $2)` back, visible again in `$3` ms (a release is a nack without delay);
/// no row when the claim is no longer this one.
pub(crate) const NACK: &str = "UPDATE {s}.queue SET claimed_by = NULL, token = NULL, claimed_until = NULL, \
       visible_at = now() + $3::bigint * interval '1 millisecond' \
     WHERE seq = $1 AND token = $2 RETURNING seq";
