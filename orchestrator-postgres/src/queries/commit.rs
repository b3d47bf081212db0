//! The `COMMIT` statement.

/// The whole commit in one call (see the `commit_step` function of migration 10): returns a
/// status (0 written, 1 stale lease, 2 conflict) and the new version (or the version found).
pub(crate) const COMMIT: &str = "SELECT o_status, o_version FROM {s}.commit_step(\
     $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, \
     $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31)";
