//! The write-through record cache: lookups answered without reading the file, the journal still
//! consulted for redeliveries, and another store's commits on the same file seen.

mod common;

use std::time::{Duration, SystemTime};

use common::{event, store};
use orchestrator::memory::{JournalEntry, Lookup, Memory, MemoryError, Stored, WriteMeta};
use orchestrator_sqlite::Retention;

const LONG: Duration = Duration::from_secs(60);

/// Writes `record` as the answer to event `consumed` producing `produced`.
async fn step(
    m: &impl Memory<String>,
    record: &str,
    prev: Option<u64>,
    consumed: &str,
    produced: &str,
) -> Result<u64, MemoryError> {
    let consumed = event(consumed, "wf");
    let produced = [event(produced, "wf")];
    let meta = WriteMeta {
        entry: Some(JournalEntry { at: SystemTime::now(), consumed: Some(&consumed), produced: &produced }),
        ..WriteMeta::new("wf", "com.test.orc")
    };
    m.write_owned("wf", record.to_owned(), prev, None, &meta).await
}

fn version_and_record(lookup: &Lookup<String>) -> Option<(u64, &str)> {
    lookup.stored.as_ref().map(|Stored { record, version }| (*version, record.as_str()))
}

#[tokio::test]
async fn a_redelivered_event_is_answered_from_the_journal_when_the_record_is_cached() {
    let dir = tempfile::tempdir().unwrap();
    let m = store(&dir.path().join("c.db"), LONG, Retention::Keep);
    step(&m, "one", None, "e-1", "p-1").await.unwrap();
    step(&m, "two", Some(1), "e-2", "p-2").await.unwrap();

    let fresh = m.lookup("wf", "e-3").await.unwrap();
    assert_eq!(version_and_record(&fresh), Some((2, "two")));
    assert_eq!(fresh.produced, None);
    for (consumed, produced) in [("e-1", "p-1"), ("e-2", "p-2")] {
        let again = m.lookup("wf", consumed).await.unwrap();
        let ids: Vec<_> = again.produced.expect("journaled").iter().map(|e| e.id().to_owned()).collect();
        assert_eq!(ids, [produced], "{consumed} gets what it produced the first time");
    }
}

#[tokio::test]
async fn a_commit_by_another_store_on_the_file_is_seen_at_the_next_group() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let (a, b) = (store(&path, LONG, Retention::Keep), store(&path, LONG, Retention::Keep));
    step(&a, "by a", None, "e-1", "p-1").await.unwrap();
    assert_eq!(version_and_record(&a.lookup("wf", "e-9").await.unwrap()), Some((1, "by a")));

    // b moves the workflow on; a's cache still holds version 1 until a's writer runs again.
    step(&b, "by b", Some(1), "e-2", "p-2").await.unwrap();
    // Without a lease, a's compare-and-swap against its stale copy is refused: nothing is lost.
    let stale = step(&a, "lost?", Some(1), "e-3", "p-3").await;
    assert!(
        matches!(stale, Err(MemoryError::Conflict { expected: Some(1), found: Some(2), .. })),
        "{stale:?}"
    );
    // That group saw b's commit: a now reads b's record, and b's journal answers e-2.
    let seen = a.lookup("wf", "e-2").await.unwrap();
    assert_eq!(version_and_record(&seen), Some((2, "by b")));
    assert_eq!(seen.produced.map(|p| p[0].id().to_owned()).as_deref(), Some("p-2"));
}

#[tokio::test]
async fn under_a_lease_the_cached_record_is_never_stale() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("leased.db");
    let (a, b) = (store(&path, LONG, Retention::Keep), store(&path, LONG, Retention::Keep));
    step(&a, "by a", None, "e-1", "p-1").await.unwrap();
    let _ = a.lookup("wf", "e-9").await.unwrap();

    let lease = b.lock("wf").await.unwrap().expect("free");
    step(&b, "by b", Some(1), "e-2", "p-2").await.unwrap();
    assert!(b.unlock(&lease).await.unwrap());

    // Taking the lease runs a group on a's writer, which notices b's commit first.
    let lease = a.lock("wf").await.unwrap().expect("free again");
    let read = a.lookup("wf", "e-3").await.unwrap();
    assert_eq!(version_and_record(&read), Some((2, "by b")));
    a.unlock(&lease).await.unwrap();
}

#[tokio::test]
async fn a_removed_workflow_is_not_answered_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let m = store(&dir.path().join("removed.db"), LONG, Retention::Remove);
    step(&m, "done", None, "e-1", "p-1").await.unwrap();
    assert!(m.lookup("wf", "e-2").await.unwrap().stored.is_some());
    m.cleanup("wf").await.unwrap();
    let gone = m.lookup("wf", "e-2").await.unwrap();
    assert!(gone.stored.is_none() && gone.produced.is_none());

    // A write through a reference cannot be cached, and leaves no stale copy behind.
    step(&m, "again", None, "e-1", "p-1").await.unwrap();
    let meta = WriteMeta::new("wf", "com.test.orc");
    m.write("wf", &"by ref".to_owned(), Some(1), None, &meta).await.unwrap();
    assert_eq!(version_and_record(&m.lookup("wf", "e-3").await.unwrap()), Some((2, "by ref")));
}
