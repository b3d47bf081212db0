//! The conformance suite every [`Memory`] backend must pass (feature `testing`).
//!
//! ```ignore
//! #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
//! async fn my_backend_conforms() {
//!     orchestrator::memory::testing::conformance(|ttl| MyBackend::with_lease_ttl(ttl)).await;
//! }
//! ```
//!
//! The factory gets the lease TTL to use and must return a fresh, empty backend whose lock
//! retries are short (tens of milliseconds), so the suite runs in a few seconds.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::{Memory, MemoryError, WriteMeta};

/// Runs every check against fresh backends made by `make(lease_ttl)`; panics on the first
/// failure with a message naming the broken rule.
pub async fn conformance<M, F>(make: F)
where
    M: Memory<String> + 'static,
    F: Fn(Duration) -> M,
{
    let long = Duration::from_secs(60);
    read_of_unknown_workflow_is_none(&make(long)).await;
    write_creates_then_compare_and_swaps(&make(long)).await;
    empty_id_is_rejected(&make(long)).await;
    lock_is_exclusive_and_tokens_grow(&make(long)).await;
    workflows_are_independent(&make(long)).await;
    expired_lease_is_fenced(&make(Duration::from_millis(300))).await;
    concurrent_lockers_one_wins(Arc::new(make(long))).await;
    concurrent_read_modify_write_loses_no_update(Arc::new(make(long))).await;
    cleanup_leaves_other_workflows(&make(long)).await;
    wake_ups_are_indexed_by_the_last_write(&make(long)).await;
}

fn meta(id: &str) -> WriteMeta<'_> {
    WriteMeta::new(id, "com.conformance.suite")
}

async fn read_of_unknown_workflow_is_none<M: Memory<String>>(m: &M) {
    assert!(m.read("unknown").await.expect("read").is_none(), "read of an unknown workflow must be None");
}

async fn write_creates_then_compare_and_swaps<M: Memory<String>>(m: &M) {
    let id = "cas";
    let v1 = m.write(id, &"a".into(), None, None, &meta(id)).await.expect("create with prev=None");
    assert_eq!(v1, 1, "the first version is 1");
    let stored = m.read(id).await.expect("read").expect("record exists after write");
    assert_eq!((stored.record.as_str(), stored.version), ("a", 1));
    match m.write(id, &"b".into(), None, None, &meta(id)).await {
        Err(MemoryError::Conflict { expected: None, found: Some(1), .. }) => {}
        other => panic!("create over an existing record must conflict, got {other:?}"),
    }
    match m.write(id, &"b".into(), Some(7), None, &meta(id)).await {
        Err(MemoryError::Conflict { expected: Some(7), found: Some(1), .. }) => {}
        other => panic!("a write with a stale version must conflict, got {other:?}"),
    }
    let v2 = m.write(id, &"b".into(), Some(1), None, &meta(id)).await.expect("write with current version");
    assert_eq!(v2, 2, "each write increments the version");
    assert_eq!(
        m.read(id).await.expect("read").expect("exists").record,
        "b",
        "a failed write changes nothing"
    );
}

async fn empty_id_is_rejected<M: Memory<String>>(m: &M) {
    assert!(matches!(m.read("").await, Err(MemoryError::InvalidId { .. })), "read(\"\")");
    assert!(
        matches!(m.write("", &"x".into(), None, None, &meta("")).await, Err(MemoryError::InvalidId { .. })),
        "write(\"\")"
    );
    assert!(matches!(m.lock("").await, Err(MemoryError::InvalidId { .. })), "lock(\"\")");
}

async fn lock_is_exclusive_and_tokens_grow<M: Memory<String>>(m: &M) {
    let first = m.lock("wf").await.expect("lock").expect("a free lock is granted");
    assert!(m.lock("wf").await.expect("lock").is_none(), "a held lock must be denied (Ok(None))");
    assert!(m.unlock(&first).await.expect("unlock"), "releasing a current lease reports true");
    assert!(!m.unlock(&first).await.expect("unlock twice"), "releasing twice is tolerated and reports false");
    let second = m.lock("wf").await.expect("lock").expect("a released lock is granted again");
    assert!(second.token > first.token, "fencing tokens must grow: {} then {}", first.token, second.token);
    m.unlock(&second).await.expect("unlock");
}

async fn workflows_are_independent<M: Memory<String>>(m: &M) {
    let a = m.lock("a").await.expect("lock").expect("free");
    let b = m.lock("b").await.expect("lock").expect("a lock on another workflow is independent");
    m.write("a", &"1".into(), None, Some(&a), &meta("a")).await.expect("write a");
    assert!(m.read("b").await.expect("read").is_none(), "writing a must not create b");
    m.unlock(&a).await.expect("unlock");
    m.unlock(&b).await.expect("unlock");
}

async fn expired_lease_is_fenced<M: Memory<String>>(m: &M) {
    let old = m.lock("ttl").await.expect("lock").expect("free");
    tokio::time::sleep(Duration::from_millis(450)).await;
    let new = m.lock("ttl").await.expect("lock").expect("an expired lease must not block a new one");
    assert!(new.token > old.token, "the new lease must have a greater token");
    match m.write("ttl", &"late".into(), None, Some(&old), &meta("ttl")).await {
        Err(MemoryError::StaleLease { .. }) => {}
        other => panic!("a write under a superseded lease must be refused (fencing), got {other:?}"),
    }
    m.write("ttl", &"ok".into(), None, Some(&new), &meta("ttl")).await.expect("the current lease may write");
    assert!(!m.unlock(&old).await.expect("tolerant release"), "releasing a superseded lease reports false");
    assert!(
        m.lock("ttl").await.expect("lock").is_none(),
        "releasing a superseded lease must not free the lock"
    );
    assert!(m.unlock(&new).await.expect("unlock"));
}

async fn concurrent_lockers_one_wins<M: Memory<String> + 'static>(m: Arc<M>) {
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let m = Arc::clone(&m);
            tokio::spawn(async move { m.lock("race").await.expect("lock") })
        })
        .collect();
    let mut granted = Vec::new();
    for task in tasks {
        if let Some(lease) = task.await.expect("task") {
            granted.push(lease);
        }
    }
    assert_eq!(granted.len(), 1, "exactly one of 8 concurrent lockers must win, {} did", granted.len());
    m.unlock(&granted[0]).await.expect("unlock");
}

async fn concurrent_read_modify_write_loses_no_update<M: Memory<String> + 'static>(m: Arc<M>) {
    const WORKERS: usize = 4;
    const INCREMENTS: usize = 25;
    let tasks: Vec<_> = (0..WORKERS)
        .map(|_| {
            let m = Arc::clone(&m);
            tokio::spawn(async move {
                for _ in 0..INCREMENTS {
                    let lease = loop {
                        if let Some(lease) = m.lock("counter").await.expect("lock") {
                            break lease;
                        }
                        tokio::task::yield_now().await;
                    };
                    let current = m.read("counter").await.expect("read");
                    let (value, prev) = match &current {
                        Some(s) => (s.record.parse::<usize>().expect("a number"), Some(s.version)),
                        None => (0, None),
                    };
                    m.write("counter", &(value + 1).to_string(), prev, Some(&lease), &meta("counter"))
                        .await
                        .expect("a writer holding the lease and the current version must succeed");
                    m.unlock(&lease).await.expect("unlock");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("worker");
    }
    let total = m.read("counter").await.expect("read").expect("exists");
    assert_eq!(total.record, (WORKERS * INCREMENTS).to_string(), "no increment may be lost");
    assert_eq!(total.version, (WORKERS * INCREMENTS) as u64, "one version per write");
}

async fn cleanup_leaves_other_workflows<M: Memory<String>>(m: &M) {
    m.write("done", &"x".into(), None, None, &meta("done")).await.expect("write");
    m.write("live", &"y".into(), None, None, &meta("live")).await.expect("write");
    m.cleanup("done").await.expect("cleanup of a finished workflow");
    assert_eq!(
        m.read("live").await.expect("read").map(|s| s.record),
        Some("y".to_owned()),
        "cleanup must not touch other workflows"
    );
}

async fn wake_ups_are_indexed_by_the_last_write<M: Memory<String>>(m: &M) {
    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
    let at = |s: u64| t0 + Duration::from_secs(s);
    let with_wake = |id: &'static str, wake: Option<SystemTime>| WriteMeta { wake_at: wake, ..meta(id) };
    assert!(m.due(at(1_000), 10).await.expect("due").is_empty(), "nothing is due in an empty memory");
    m.write("w-late", &"x".into(), None, None, &with_wake("w-late", Some(at(30)))).await.expect("write");
    m.write("w-early", &"x".into(), None, None, &with_wake("w-early", Some(at(10)))).await.expect("write");
    m.write("w-none", &"x".into(), None, None, &with_wake("w-none", None)).await.expect("write");
    let ids = |due: Vec<super::Wake>| due.into_iter().map(|w| (w.id, w.at)).collect::<Vec<_>>();
    assert_eq!(ids(m.due(at(9), 10).await.expect("due")), vec![], "nothing is due before its time");
    assert_eq!(
        ids(m.due(at(30), 10).await.expect("due")),
        vec![("w-early".to_owned(), at(10)), ("w-late".to_owned(), at(30))],
        "due wake-ups come earliest first, at or before now"
    );
    assert_eq!(ids(m.due(at(30), 1).await.expect("due")).len(), 1, "due honours its limit");
    // A later write replaces the wake-up; a write without one clears it.
    m.write("w-early", &"y".into(), Some(1), None, &with_wake("w-early", None)).await.expect("write");
    m.write("w-late", &"y".into(), Some(1), None, &with_wake("w-late", Some(at(50)))).await.expect("write");
    assert!(m.due(at(49), 10).await.expect("due").is_empty(), "a rewritten wake-up replaces the old one");
    assert_eq!(ids(m.due(at(50), 10).await.expect("due")), vec![("w-late".to_owned(), at(50))]);
}
