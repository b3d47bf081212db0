//! The `ACK` statement.

/// Settles delivery `($1, $2)` (position, claim token) and enqueues its products (topics `$3`,
/// subjects `$4`, ids `$5`, JSON `$6`) in one transaction; true when the delivery was still
/// there. When it was not (an orchestrator's commit already took it out of the queue with its
/// products, or the claim lapsed and another consumer has it), nothing is enqueued.
pub(crate) const ACK: &str = "SELECT {s}.ack($1, $2, $3, $4, $5, $6)";
