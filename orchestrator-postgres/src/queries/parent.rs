//! The `PARENT` statement.

/// The parent of `$1`.
pub(crate) const PARENT: &str = "SELECT parent FROM {s}.workflows WHERE id = $1";
