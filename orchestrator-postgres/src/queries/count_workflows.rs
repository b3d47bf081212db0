//! The `COUNT_WORKFLOWS` statement.

/// How many workflows match the filter `$1`–`$12` (see `workflow_filter!`). Run it as a fresh
/// statement, as `LIST_WORKFLOWS`.
pub(crate) const COUNT_WORKFLOWS: &str =
    concat!("SELECT count(*) FROM {s}.workflows w WHERE ", workflow_filter!());
