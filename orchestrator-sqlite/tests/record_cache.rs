//! The write-through record cache: acquires answered without reading the record, the journal
//! still consulted for redeliveries, and another store's commits on the same file seen.

mod common;

use std::time::{Duration, SystemTime};

use common::{event, key, store};
use orchestrator::memory::{
    Acquired, Commit, JournalEntry, Memory, MemoryError, MemoryExt, Stored, WriteMeta,
};
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
    m.commit(Commit::new("wf", record.to_owned(), prev, meta)).await
}

/// `acquire` without a lease.
async fn lookup(m: &impl Memory<String>, event_id: &str) -> Acquired<String> {
    m.acquire("wf", key(event_id), false).await.expect("acquire").expect("no lock asked: always answered")
}

fn version_and_record(acquired: &Acquired<String>) -> Option<(u64, &str)> {
    acquired.stored.as_ref().map(|Stored { record, version }| (*version, record.as_str()))
}

#[tokio::test]
async fn a_redelivered_event_is_answered_from_the_journal_when_the_record_is_cached() {
    let dir = tempfile::tempdir().unwrap();
    let m = store(&dir.path().join("c.db"), LONG, Retention::Keep);
    step(&m, "one", None, "e-1", "p-1").await.unwrap();
    step(&m, "two", Some(1), "e-2", "p-2").await.unwrap();

    let fresh = lookup(&m, "e-3").await;
    assert_eq!(version_and_record(&fresh), Some((2, "two")));
    assert_eq!(fresh.produced, None);
    for (consumed, produced) in [("e-1", "p-1"), ("e-2", "p-2")] {
        let again = lookup(&m, consumed).await;
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
    assert_eq!(version_and_record(&lookup(&a, "e-9").await), Some((1, "by a")));

    // b moves the workflow on; a's cache still holds version 1 until a's writer runs again.
    step(&b, "by b", Some(1), "e-2", "p-2").await.unwrap();
    // Without a lease, a's compare-and-swap against its stale copy is refused: nothing is lost.
    let stale = step(&a, "lost?", Some(1), "e-3", "p-3").await;
    assert!(
        matches!(stale, Err(MemoryError::Conflict { expected: Some(1), found: Some(2), .. })),
        "{stale:?}"
    );
    // That group saw b's commit: a now reads b's record, and b's journal answers e-2.
    let seen = lookup(&a, "e-2").await;
    assert_eq!(version_and_record(&seen), Some((2, "by b")));
    assert_eq!(seen.produced.map(|p| p[0].id().to_owned()).as_deref(), Some("p-2"));
}

#[tokio::test]
async fn under_a_lease_the_cached_record_is_never_stale() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("leased.db");
    let (a, b) = (store(&path, LONG, Retention::Keep), store(&path, LONG, Retention::Keep));
    step(&a, "by a", None, "e-1", "p-1").await.unwrap();
    assert_eq!(version_and_record(&lookup(&a, "e-9").await), Some((1, "by a")));

    let lease = b.lock("wf").await.unwrap().expect("free");
    step(&b, "by b", Some(1), "e-2", "p-2").await.unwrap();
    assert!(b.unlock(&lease).await.unwrap());

    // Taking the lease runs a group on a's writer, which notices b's commit and checks the
    // cached version against the stored one in the same operation.
    let acquired = a.acquire("wf", key("e-2"), true).await.unwrap().expect("free again");
    assert_eq!(version_and_record(&acquired), Some((2, "by b")));
    let ids: Vec<_> = acquired.produced.expect("b journaled e-2").iter().map(|e| e.id().to_owned()).collect();
    assert_eq!(ids, ["p-2"], "and the journal answers the redelivery");
    a.unlock(&acquired.lease.expect("lease")).await.unwrap();
}

#[tokio::test]
async fn a_locked_acquire_answers_from_the_cache_and_the_journal() {
    let dir = tempfile::tempdir().unwrap();
    let m = store(&dir.path().join("locked.db"), LONG, Retention::Keep);
    step(&m, "one", None, "e-1", "p-1").await.unwrap();
    let fresh = m.acquire("wf", key("e-2"), true).await.unwrap().expect("free");
    assert_eq!(version_and_record(&fresh), Some((1, "one")));
    assert!(fresh.produced.is_none(), "e-2 was never consumed");
    let lease = fresh.lease.expect("lease");
    m.unlock(&lease).await.unwrap();
    let again = m.acquire("wf", key("e-1"), true).await.unwrap().expect("free");
    assert_eq!(again.produced.map(|p| p[0].id().to_owned()).as_deref(), Some("p-1"), "a redelivery");
    let elsewhere = orchestrator::memory::EventKey { source: "com.test.elsewhere", id: "e-1" };
    m.unlock(&again.lease.expect("lease")).await.unwrap();
    let other = m.acquire("wf", elsewhere, true).await.unwrap().expect("free");
    assert!(other.produced.is_none(), "the same id from another source is another event");
    m.unlock(&other.lease.expect("lease")).await.unwrap();
}

#[tokio::test]
async fn a_removed_workflow_is_not_answered_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let m = store(&dir.path().join("removed.db"), LONG, Retention::Remove);
    step(&m, "done", None, "e-1", "p-1").await.unwrap();
    assert!(lookup(&m, "e-2").await.stored.is_some());
    m.cleanup("wf").await.unwrap();
    let gone = lookup(&m, "e-2").await;
    assert!(gone.stored.is_none() && gone.produced.is_none());

    // A write through a reference (`MemoryExt::write`) replaces the cached copy too.
    step(&m, "again", None, "e-1", "p-1").await.unwrap();
    let meta = WriteMeta::new("wf", "com.test.orc");
    m.write("wf", &"by ref".to_owned(), Some(1), None, &meta).await.unwrap();
    assert_eq!(version_and_record(&lookup(&m, "e-3").await), Some((2, "by ref")));
}
