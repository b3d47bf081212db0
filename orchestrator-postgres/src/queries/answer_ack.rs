//! The `ANSWER_ACK` statement.

/// In the caller's transaction: settles claim `($5, $6)` (position, token; both NULL for a
/// request that is not a claimed delivery of this store's queue), records `$4` as service `$1`'s
/// answer to request `($2, $3)` and enqueues the products (topics `$7`, subjects `$8`, ids `$9`,
/// JSON `$10`) with the settlement. Returns 0 when done, 1 when the claim is lost, 2 when an
/// answer is recorded already; the caller rolls back on anything but 0 (see schema migration 8).
pub(crate) const ANSWER_ACK: &str = "SELECT {s}.answer_ack($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";
