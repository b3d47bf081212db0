//! The `RELEASE_NODE` statement.

/// Frees every lease of node `$1` (its previous run).
pub(crate) const RELEASE_NODE: &str = "DELETE FROM {s}.leases WHERE owner = $1";
