//! The `CATALOG_RECORD` statement.

/// Records definitions (see `orchestrator::memory::Catalog`): kinds `$1`, names `$2`, versions
/// `$3` and documents `$4` (JSON text), each replacing the row of the same kind, name and version.
pub(crate) const CATALOG_RECORD: &str = "INSERT INTO {s}.catalog (kind, name, version, document, recorded_at) \
     SELECT t.kind, t.name, t.version, t.document, now() \
     FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS t(kind, name, version, document) \
     ON CONFLICT (kind, name, version) DO UPDATE \
     SET document = excluded.document, recorded_at = excluded.recorded_at";
