//! The workflow index: listing and counting a store's workflows by what they are about.
//!
//! Every store keeps, per workflow, what [`WriteMeta`](super::WriteMeta) tells it (the
//! orchestrator that writes it, its [`WorkflowState`], its initiator and parent) plus what the
//! workflow's orchestration subject says, parsed once when the workflow's row is first written
//! (the orchestrator's version, the execution id and the subject's `meta`), its root workflow
//! and when it was created and last written. A [`WorkflowIndex`] lists the workflows that match
//! a [`WorkflowFilter`], newest first (by creation time, then id), a page at a time, and counts
//! them. Workflows whose id is not an orchestration subject are listed too, without a version,
//! an execution id or meta.
//!
//! Only live workflows are listed: those a [`Retention`](super::Retention) removed or archived
//! are not.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::SystemTime;

use super::{MemoryError, WorkflowState};
use crate::subject::Subject;

/// The page size of a [`WorkflowFilter`] that does not set one.
pub const DEFAULT_PAGE: usize = 100;

/// A time range: `since` (inclusive) to `until` (exclusive), either end open. Stores compare at
/// their own precision (milliseconds for SQLite, microseconds for PostgreSQL).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimeRange {
    /// The earliest time included.
    pub since: Option<SystemTime>,
    /// The first time excluded.
    pub until: Option<SystemTime>,
}

impl TimeRange {
    /// Whether `at` lies in the range.
    pub fn contains(&self, at: SystemTime) -> bool {
        self.since.is_none_or(|since| at >= since) && self.until.is_none_or(|until| at < until)
    }

    /// Whether the range is open at both ends.
    pub fn is_open(&self) -> bool {
        self.since.is_none() && self.until.is_none()
    }
}

/// Where a page of a listing ends: the next page lists the workflows after this one, newest
/// first (keyset pagination on `(created_at, id)`: workflows created meanwhile do not shift the
/// pages).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WorkflowCursor {
    /// The creation time of the last workflow of the page, as the store keeps it.
    pub created_at: SystemTime,
    /// Its id.
    pub id: String,
}

impl WorkflowCursor {
    /// Whether a workflow created at `created_at` with id `id` comes after the cursor (it is
    /// older, or as old with a smaller id).
    pub fn precedes(&self, created_at: SystemTime, id: &str) -> bool {
        (created_at, id) < (self.created_at, self.id.as_str())
    }
}

/// Which workflows to list or count: every field set must match (`None` and empty fields match
/// every workflow).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkflowFilter {
    /// The orchestrator, as the lifecycle names it in [`WriteMeta::source`](super::WriteMeta)
    /// (its name: the subject's `orchestrator.name`).
    pub orchestrator: Option<String>,
    /// The orchestrator's version, from the subject (`orchestrator.version`).
    pub orchestrator_version: Option<String>,
    /// Where the workflow stands.
    pub status: Option<WorkflowState>,
    /// Who started it (the subject's `execution.initiator`, as the lifecycle writes it).
    pub initiator: Option<String>,
    /// Its parent workflow's id (the children of that workflow).
    pub parent: Option<String>,
    /// Its root workflow's id (a whole tree, the root included).
    pub root: Option<String>,
    /// The start of its execution id (the subject's `execution.id`), as short ids show it.
    pub execution_id_prefix: Option<String>,
    /// When it was created.
    pub created: TimeRange,
    /// When it was last written.
    pub updated: TimeRange,
    /// Entries its subject's `meta` must hold (each key with that value).
    pub meta: Vec<(String, String)>,
    /// The most workflows a page lists (at least 1; [`DEFAULT_PAGE`] by default). Ignored by
    /// [`WorkflowIndex::count`].
    pub limit: usize,
    /// List the workflows after this cursor (the [`Page::next`] of the previous page). Ignored
    /// by [`WorkflowIndex::count`].
    pub after: Option<WorkflowCursor>,
}

impl Default for WorkflowFilter {
    fn default() -> Self {
        Self {
            orchestrator: None,
            orchestrator_version: None,
            status: None,
            initiator: None,
            parent: None,
            root: None,
            execution_id_prefix: None,
            created: TimeRange::default(),
            updated: TimeRange::default(),
            meta: Vec::new(),
            limit: DEFAULT_PAGE,
            after: None,
        }
    }
}

impl WorkflowFilter {
    /// Every workflow, [`DEFAULT_PAGE`] at a time.
    pub fn new() -> Self {
        Self::default()
    }

    /// The page size a store uses: [`WorkflowFilter::limit`], at least 1.
    pub fn page_size(&self) -> usize {
        self.limit.max(1)
    }

    /// The same filter for the page after `cursor`.
    #[must_use]
    pub fn after(mut self, cursor: Option<WorkflowCursor>) -> Self {
        self.after = cursor;
        self
    }

    /// Whether `summary` matches every field of the filter but the cursor (for stores that
    /// filter in memory).
    pub fn matches(&self, summary: &WorkflowSummary) -> bool {
        let eq = |want: &Option<String>, have: Option<&str>| want.as_deref().is_none_or(|w| have == Some(w));
        eq(&self.orchestrator, Some(&summary.orchestrator))
            && eq(&self.orchestrator_version, summary.orchestrator_version.as_deref())
            && self.status.is_none_or(|s| s == summary.status)
            && eq(&self.initiator, summary.initiator.as_deref())
            && eq(&self.parent, summary.parent.as_deref())
            && eq(&self.root, summary.root.as_deref())
            && self
                .execution_id_prefix
                .as_deref()
                .is_none_or(|prefix| summary.execution_id.as_deref().is_some_and(|id| id.starts_with(prefix)))
            && self.created.contains(summary.created_at)
            && self.updated.contains(summary.updated_at)
            && self.meta.iter().all(|(k, v)| summary.meta.get(k) == Some(v))
    }
}

/// A workflow as the index lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkflowSummary {
    /// The workflow id (its subject).
    pub id: String,
    /// The subject's execution id (`None` when the id is not an orchestration subject).
    pub execution_id: Option<String>,
    /// The orchestrator that writes it ([`WriteMeta::source`](super::WriteMeta)).
    pub orchestrator: String,
    /// The orchestrator's version, from the subject.
    pub orchestrator_version: Option<String>,
    /// Where it stands after its last write.
    pub status: WorkflowState,
    /// Who started it, once known.
    pub initiator: Option<String>,
    /// Its parent workflow, for a child.
    pub parent: Option<String>,
    /// Its root workflow (its own id for a root; for a child, its parent's root, or its parent
    /// when the parent is not in the store).
    pub root: Option<String>,
    /// The subject's `meta` (empty when the id is not an orchestration subject).
    pub meta: BTreeMap<String, String>,
    /// When its first write was stored (the store's clock and precision).
    pub created_at: SystemTime,
    /// When its last write was stored.
    pub updated_at: SystemTime,
    /// Its record's version.
    pub version: u64,
}

impl WorkflowSummary {
    /// A short id to show: the first 8 characters of the execution id, else the first 12 of the
    /// workflow id ([`WorkflowFilter::execution_id_prefix`] finds a workflow by the former).
    pub fn short_id(&self) -> &str {
        match &self.execution_id {
            Some(execution) => prefix(execution, 8),
            None => prefix(&self.id, 12),
        }
    }

    /// The cursor of the page that ends with this workflow.
    pub fn cursor(&self) -> WorkflowCursor {
        WorkflowCursor { created_at: self.created_at, id: self.id.clone() }
    }
}

fn prefix(s: &str, chars: usize) -> &str {
    s.char_indices().nth(chars).map_or(s, |(end, _)| &s[..end])
}

/// One page of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    /// The items, newest first.
    pub items: Vec<T>,
    /// Where the next page starts ([`WorkflowFilter::after`]); `None` on the last page.
    pub next: Option<WorkflowCursor>,
}

impl Page<WorkflowSummary> {
    /// The page of at most `limit` summaries from `rows`, which are sorted newest first and may
    /// hold one more (which tells that there is a next page).
    pub fn from_rows(mut rows: Vec<WorkflowSummary>, limit: usize) -> Self {
        let more = rows.len() > limit;
        rows.truncate(limit);
        let next = if more { rows.last().map(WorkflowSummary::cursor) } else { None };
        Self { items: rows, next }
    }
}

/// What a store parses from a workflow's subject when it first writes the workflow: the
/// orchestrator's version, the execution id and the meta. `None` when the id is not an
/// orchestration subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubjectColumns {
    /// The orchestrator's version.
    pub orchestrator_version: String,
    /// The execution id.
    pub execution_id: String,
    /// The meta entries, in the subject's order.
    pub meta: Vec<(String, String)>,
}

impl SubjectColumns {
    /// The columns of workflow `id`, if it is an orchestration subject.
    pub fn parse(id: &str) -> Option<Self> {
        Some(Self::of(&Subject::parse(id).ok()?))
    }

    /// The columns of an already-parsed subject.
    pub fn of(subject: &Subject) -> Self {
        let content = subject.content();
        Self {
            orchestrator_version: content.orchestrator.version.clone(),
            execution_id: content.execution.id.clone(),
            meta: content.meta.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        }
    }

    /// The meta as a JSON object (string values).
    pub fn meta_json(&self) -> String {
        let map: serde_json::Map<String, serde_json::Value> =
            self.meta.iter().map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone()))).collect();
        serde_json::Value::Object(map).to_string()
    }
}

/// The workflow index of a store: its workflows listed by [`WorkflowFilter`], newest first, a
/// page at a time, and counted. Only live workflows are listed (not those a
/// [`Retention`](super::Retention) removed or archived); workflows whose id is not an
/// orchestration subject are listed without a version, an execution id or meta.
pub trait WorkflowIndex: Send + Sync {
    /// The workflows matching `filter`, newest first (creation time, then id, descending), at
    /// most [`WorkflowFilter::page_size`] of them after [`WorkflowFilter::after`].
    fn list(
        &self,
        filter: &WorkflowFilter,
    ) -> impl Future<Output = Result<Page<WorkflowSummary>, MemoryError>> + Send;

    /// How many workflows match `filter` (its limit and cursor aside).
    fn count(&self, filter: &WorkflowFilter) -> impl Future<Output = Result<u64, MemoryError>> + Send;
}

impl<I: WorkflowIndex + ?Sized> WorkflowIndex for std::sync::Arc<I> {
    fn list(
        &self,
        filter: &WorkflowFilter,
    ) -> impl Future<Output = Result<Page<WorkflowSummary>, MemoryError>> + Send {
        (**self).list(filter)
    }

    fn count(&self, filter: &WorkflowFilter) -> impl Future<Output = Result<u64, MemoryError>> + Send {
        (**self).count(filter)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn short_ids_and_subject_columns() {
        let subject = Subject::builder("arvo.orc.demo", "1.2.3", "com.demo.client")
            .execution_id("0123456789abcdef")
            .meta("tenant", "acme")
            .build()
            .unwrap();
        let columns = SubjectColumns::parse(subject.as_str()).unwrap();
        assert_eq!(columns.orchestrator_version, "1.2.3");
        assert_eq!(columns.execution_id, "0123456789abcdef");
        assert_eq!(columns.meta_json(), r#"{"tenant":"acme"}"#);
        assert!(SubjectColumns::parse("wf-1").is_none());
        let summary = WorkflowSummary {
            id: "a-rather-long-workflow-id".into(),
            execution_id: None,
            orchestrator: "s".into(),
            orchestrator_version: None,
            status: WorkflowState::Active,
            initiator: None,
            parent: None,
            root: None,
            meta: BTreeMap::new(),
            created_at: SystemTime::UNIX_EPOCH,
            updated_at: SystemTime::UNIX_EPOCH,
            version: 1,
        };
        assert_eq!(summary.short_id(), "a-rather-lon");
        let with_execution = WorkflowSummary { execution_id: Some("0123456789".into()), ..summary };
        assert_eq!(with_execution.short_id(), "01234567");
    }

    #[test]
    fn cursors_order_newest_first() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(10);
        let cursor = WorkflowCursor { created_at: t, id: "m".into() };
        assert!(cursor.precedes(t - Duration::from_millis(1), "z"), "older comes after");
        assert!(cursor.precedes(t, "a"), "as old, a smaller id comes after");
        assert!(!cursor.precedes(t, "m"), "not itself");
        assert!(!cursor.precedes(t + Duration::from_millis(1), "a"), "newer came before");
    }
}
