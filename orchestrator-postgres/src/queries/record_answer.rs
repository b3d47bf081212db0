//! The `RECORD_ANSWER` statement.

/// Records `$4` (a JSON array of events, as text) as service `$1`'s answer to request `($2, $3)`
/// (source, id) unless one is recorded; returns it when it was recorded, no row otherwise (a
/// concurrent record of the same key waits for the other transaction, then returns no row).
pub(crate) const RECORD_ANSWER: &str = "INSERT INTO {s}.answers (service, source, id, produced) VALUES ($1, $2, $3, $4) \
     ON CONFLICT DO NOTHING RETURNING produced";
