//! The `CHILDREN` statement.

/// The children of `$1`, in the order they started.
pub(crate) const CHILDREN: &str = "SELECT id FROM {s}.workflows WHERE parent = $1 ORDER BY seq";
