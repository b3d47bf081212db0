//! The `LIST_WORKFLOWS` statement.

/// A page of the workflows matching the filter `$1`–`$12` (see `workflow_filter!`) after the
/// cursor `($13, $14)` (creation time and id; none when `$13` is NULL), newest first, at most
/// `$15` rows. Run it as a fresh statement (not a cached one): PostgreSQL then plans it with the
/// values given, so the filters not set fold away and the index of those set is used.
pub(crate) const LIST_WORKFLOWS: &str = concat!(
    "SELECT w.id, w.execution_id, w.source, w.orchestrator_version, w.status, w.initiator, \
     w.parent, w.root, w.meta::text, w.created_at, w.updated_at, w.version \
     FROM {s}.workflows w WHERE ",
    workflow_filter!(),
    " AND ($13::timestamptz IS NULL \
          OR (w.created_at <= $13 AND (w.created_at < $13 OR w.id < $14::text))) \
     ORDER BY w.created_at DESC, w.id DESC LIMIT $15"
);
