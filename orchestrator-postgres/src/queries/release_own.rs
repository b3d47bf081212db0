//! The `RELEASE_OWN` statement.

/// Frees the lease on `$1` if node `$2` holds it: after an `acquire` whose answer was lost, the
/// lease it may have taken (whose token nobody knows) would otherwise block the workflow until
/// it lapses. A step of the same node that held it legitimately loses it and is fenced.
pub(crate) const RELEASE_OWN: &str = "DELETE FROM {s}.leases WHERE id = $1 AND owner = $2";
