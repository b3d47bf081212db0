//! The `READ` statement.

/// The record of `$1` and its version.
pub(crate) const READ: &str = "SELECT record, version FROM {s}.workflows WHERE id = $1";
