//! The `CATALOG_LIST` statement.

/// Every definition of the catalog, by kind, name and version.
pub(crate) const CATALOG_LIST: &str = concat!(
    "SELECT kind, name, version, document, ",
    ms!("recorded_at"),
    " FROM {s}.catalog ORDER BY kind COLLATE \"C\", name COLLATE \"C\", version COLLATE \"C\""
);
