//! The `REAP_LEASES` statement.

/// Deletes the lapsed leases; returns how many (tokens come from a sequence, so none is ever given again).
pub(crate) const REAP_LEASES: &str =
    "WITH gone AS (DELETE FROM {s}.leases WHERE expires_at <= now() RETURNING 1) SELECT count(*) FROM gone";
