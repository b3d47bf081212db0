//! The `ANSWER_ACK` statement.

/// Records `$4` (a JSON array of events, as text) as service `$1`'s answer to request `($2, $3)`
/// (source, id) unless one is recorded and, given claim `($5, $6)` (position, token; both NULL
/// otherwise), settles the request's delivery and enqueues its products (topics `$7`, subjects
/// `$8`, ids `$9`, JSON `$10`) in the same transaction. Returns 0 when recorded (and settled), 1
/// when recorded but the claim is lost (nothing settled), 2 when an answer was recorded already
/// (nothing changed); see schema migration 8.
pub(crate) const ANSWER_ACK: &str = "SELECT {s}.answer_ack($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";
