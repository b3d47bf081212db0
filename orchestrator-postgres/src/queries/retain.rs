//! The `RETAIN` statement.

/// The retention of `$1` (mode `$2`, delay `$3` ms) in one call.
pub(crate) const RETAIN: &str = "SELECT {s}.retain($1, $2, $3)";
