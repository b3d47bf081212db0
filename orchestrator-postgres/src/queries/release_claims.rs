//! The `RELEASE_CLAIMS` statement.

/// Gives back every queue claim of node `$1`'s queues (its previous run's: their owners are
/// `<node>:<random>`), so that they are delivered again at once instead of after their
/// visibility deadline.
pub(crate) const RELEASE_CLAIMS: &str = "UPDATE {s}.queue SET claimed_by = NULL, token = NULL, claimed_until = NULL \
     WHERE claimed_by IS NOT NULL AND left(claimed_by, length($1) + 1) = $1 || ':'";
