//! The `LEAD` statement.

/// The records of workflow `$1`'s journal rows before version `$2`, from the latest snapshot
/// among them (a record's first byte is its tag: bit 0 clear for a snapshot), oldest first: what
/// decoding the delta at `$2` starts from.
pub(crate) const LEAD: &str = "SELECT version, record_bytes FROM {s}.journal \
     WHERE wf = $1 AND version < $2 AND version >= (SELECT max(version) FROM {s}.journal \
         WHERE wf = $1 AND version < $2 AND get_byte(record_bytes, 0) & 1 = 0) \
     ORDER BY version";
