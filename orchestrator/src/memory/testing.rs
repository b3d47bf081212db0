//! The conformance suite every [`Memory`] backend must pass (feature `testing`).
//!
//! ```ignore
//! #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
//! async fn my_backend_conforms() {
//!     use orchestrator::memory::testing::{Settings, conformance};
//!     conformance(|s: Settings| MyBackend::new(s.lease_ttl, s.retention)).await;
//! }
//! ```
//!
//! The factory gets the settings to use and must return a fresh, empty backend. The suite checks
//! compare-and-swap, leases (single-shot, exclusive, fenced, renewed), the one-round-trip
//! `acquire` and `commit`, the journal and idempotent redelivery keyed by `(source, id)`,
//! retention, cleanup and timer claims. A backend that skips any of them fails it.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::{
    Commit, EventKey, Journal, JournalEntry, Materialized, Memory, MemoryError, MemoryExt, Retention,
    TimeRange, WorkflowFilter, WorkflowIndex, WorkflowState, WorkflowSummary, WriteMeta,
};
use crate::event::Event;
use crate::subject::Subject;

/// What the suite asks of a backend it makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// How long a lease lasts.
    pub lease_ttl: Duration,
    /// The retention of finished workflows.
    pub retention: Retention,
}

/// A store the suite can test: a [`Memory`] of strings.
pub trait Store: Memory<String> {}
impl<M: Memory<String>> Store for M {}

/// Runs every check against fresh backends made by `make`, once per [`Retention`] the
/// retention check covers; panics on the first failure with a message naming the broken rule.
pub async fn conformance<M, F>(make: F)
where
    M: Store + 'static,
    F: Fn(Settings) -> M,
{
    let long = |retention| Settings { lease_ttl: Duration::from_secs(60), retention };
    let keep = long(Retention::Keep);
    read_of_unknown_workflow_is_none(&make(keep)).await;
    write_creates_then_compare_and_swaps(&make(keep)).await;
    empty_id_is_rejected(&make(keep)).await;
    lock_is_exclusive_and_tokens_grow(&make(keep)).await;
    lock_is_a_single_attempt(&make(keep)).await;
    workflows_are_independent(&make(keep)).await;
    expired_lease_is_fenced(&make(Settings { lease_ttl: Duration::from_millis(300), ..keep })).await;
    renewal_extends_a_current_lease_only(&make(Settings { lease_ttl: Duration::from_millis(1_000), ..keep }))
        .await;
    concurrent_lockers_one_wins(Arc::new(make(keep))).await;
    concurrent_read_modify_write_loses_no_update(Arc::new(make(keep))).await;
    acquire_takes_the_lease_and_reads_in_one_call(&make(keep)).await;
    commit_journals_and_releases_in_one_call(&make(keep)).await;
    a_failed_commit_changes_nothing(&make(keep)).await;
    redelivery_is_answered_by_source_and_id(&make(keep)).await;
    cleanup_leaves_other_workflows(&make(keep)).await;
    due_wake_ups_are_claimed_once(&make(keep)).await;
    for retention in [
        Retention::Keep,
        Retention::Remove,
        Retention::RemoveAfter(Duration::from_millis(1_000)),
        Retention::Archive,
    ] {
        finished_workflows_follow_the_retention(&make(long(retention)), retention).await;
    }
}

/// An event from `source` with id `id`, consumed or produced in the checks.
fn event(source: &str, id: &str) -> Event {
    Event::builder()
        .id(id)
        .source(source)
        .r#type("com.conformance.step")
        .to("com.conformance.target")
        .subject("conformance")
        .data_json(serde_json::json!({ "id": id }))
        .build()
        .expect("a valid event")
}

fn meta(id: &str) -> WriteMeta<'_> {
    WriteMeta::new(id, "com.conformance.suite")
}

async fn read_of_unknown_workflow_is_none<M: Store>(m: &M) {
    assert!(m.read("unknown").await.expect("read").is_none(), "read of an unknown workflow must be None");
}

async fn write_creates_then_compare_and_swaps<M: Store>(m: &M) {
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

async fn empty_id_is_rejected<M: Store>(m: &M) {
    assert!(matches!(m.read("").await, Err(MemoryError::InvalidId { .. })), "read(\"\")");
    assert!(
        matches!(m.write("", &"x".into(), None, None, &meta("")).await, Err(MemoryError::InvalidId { .. })),
        "write(\"\")"
    );
    assert!(matches!(m.lock("").await, Err(MemoryError::InvalidId { .. })), "lock(\"\")");
}

async fn lock_is_exclusive_and_tokens_grow<M: Store>(m: &M) {
    let first = m.lock("wf").await.expect("lock").expect("a free lock is granted");
    assert!(m.lock("wf").await.expect("lock").is_none(), "a held lock must be denied (Ok(None))");
    assert!(m.unlock(&first).await.expect("unlock"), "releasing a current lease reports true");
    assert!(!m.unlock(&first).await.expect("unlock twice"), "releasing twice is tolerated and reports false");
    let second = m.lock("wf").await.expect("lock").expect("a released lock is granted again");
    assert!(second.token > first.token, "fencing tokens must grow: {} then {}", first.token, second.token);
    m.unlock(&second).await.expect("unlock");
}

async fn workflows_are_independent<M: Store>(m: &M) {
    let a = m.lock("a").await.expect("lock").expect("free");
    let b = m.lock("b").await.expect("lock").expect("a lock on another workflow is independent");
    m.write("a", &"1".into(), None, Some(&a), &meta("a")).await.expect("write a");
    assert!(m.read("b").await.expect("read").is_none(), "writing a must not create b");
    m.unlock(&a).await.expect("unlock");
    m.unlock(&b).await.expect("unlock");
}

async fn expired_lease_is_fenced<M: Store>(m: &M) {
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

async fn concurrent_lockers_one_wins<M: Store + 'static>(m: Arc<M>) {
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

async fn concurrent_read_modify_write_loses_no_update<M: Store + 'static>(m: Arc<M>) {
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

async fn cleanup_leaves_other_workflows<M: Store>(m: &M) {
    m.write("done", &"x".into(), None, None, &meta("done")).await.expect("write");
    m.write("live", &"y".into(), None, None, &meta("live")).await.expect("write");
    m.cleanup("done").await.expect("cleanup of a finished workflow");
    assert_eq!(
        m.read("live").await.expect("read").map(|s| s.record),
        Some("y".to_owned()),
        "cleanup must not touch other workflows"
    );
}

async fn lock_is_a_single_attempt<M: Store>(m: &M) {
    let held = m.lock("single").await.expect("lock").expect("free");
    let started = Instant::now();
    assert!(m.lock("single").await.expect("lock").is_none(), "a held lock is denied");
    // A backend that retried would sleep between tries (arvo-tools' 100, 150, 225 ms…); a
    // loaded machine may delay one answer, but not by that much.
    assert!(
        started.elapsed() < Duration::from_millis(400),
        "a denied lock is answered at once (the caller retries), it took {:?}",
        started.elapsed()
    );
    m.unlock(&held).await.expect("unlock");
}

async fn renewal_extends_a_current_lease_only<M: Store>(m: &M) {
    // The lease lasts 1 s: renewed after 0.6 s, it is still held at 1.2 s, and lapsed at 2.3 s.
    let lease = m.lock("renew").await.expect("lock").expect("free");
    tokio::time::sleep(Duration::from_millis(600)).await;
    let renewed = m.renew(&lease).await.expect("a current lease can be renewed");
    assert_eq!(renewed.token, lease.token, "renewal keeps the fencing token");
    assert!(renewed.expires_at > lease.expires_at, "renewal moves the expiry forward");
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(m.lock("renew").await.expect("lock").is_none(), "a renewed lease still excludes others");
    m.write("renew", &"x".into(), None, Some(&renewed), &meta("renew"))
        .await
        .expect("a renewed lease may still write");
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    match m.renew(&renewed).await {
        Err(MemoryError::StaleLease { .. }) => {}
        other => panic!("renewing a lapsed lease must fail with StaleLease, got {other:?}"),
    }
    let next = m.lock("renew").await.expect("lock").expect("a lapsed lease frees the lock");
    match m.renew(&renewed).await {
        Err(MemoryError::StaleLease { .. }) => {}
        other => panic!("renewing a superseded lease must fail with StaleLease, got {other:?}"),
    }
    m.unlock(&next).await.expect("unlock");
}

async fn acquire_takes_the_lease_and_reads_in_one_call<M: Store>(m: &M) {
    let key = EventKey { source: "com.conformance.client", id: "e-1" };
    let first = m.acquire("acq", key, true).await.expect("acquire").expect("a free workflow is acquired");
    let lease = first.lease.clone().expect("acquire with lock = true returns the lease");
    assert!(first.stored.is_none() && first.produced.is_none(), "an unknown workflow has no record");
    assert!(m.acquire("acq", key, true).await.expect("acquire").is_none(), "a held workflow is denied");
    let unlocked = m.acquire("acq", key, false).await.expect("acquire").expect("reading needs no lease");
    assert!(unlocked.lease.is_none(), "acquire with lock = false takes no lease");
    m.write("acq", &"a".into(), None, Some(&lease), &meta("acq")).await.expect("write");
    m.unlock(&lease).await.expect("unlock");
    let again = m.acquire("acq", key, true).await.expect("acquire").expect("released");
    let stored = again.stored.expect("the record is read with the lease");
    assert_eq!((stored.record.as_str(), stored.version), ("a", 1));
    m.unlock(&again.lease.expect("lease")).await.expect("unlock");
}

async fn commit_journals_and_releases_in_one_call<M: Store>(m: &M) {
    let consumed = event("com.conformance.client", "c-1");
    let produced = vec![event("com.conformance.suite", "p-1"), event("com.conformance.suite", "p-2")];
    let key = EventKey::of(&consumed);
    let acquired = m.acquire("cj", key, true).await.expect("acquire").expect("free");
    let lease = acquired.lease.expect("lease");
    let entry = JournalEntry { at: SystemTime::now(), consumed: Some(&consumed), produced: &produced };
    let commit = Commit {
        release: true,
        ..Commit::new("cj", "v1".to_owned(), None, WriteMeta { entry: Some(entry), ..meta("cj") })
            .lease(Some(&lease))
    };
    assert_eq!(m.commit(commit).await.expect("commit"), 1);
    let next = m.lock("cj").await.expect("lock").expect("a commit with release frees the lease");
    assert!(next.token > lease.token);
    m.unlock(&next).await.expect("unlock");
    assert_eq!(
        m.produced("cj", key).await.expect("produced"),
        Some(produced),
        "idempotency: the commit journals the events produced, in order"
    );
}

/// The journal's read side ([`Journal`]), for stores that offer it: run it beside
/// [`conformance`].
pub async fn journal<M, F>(make: F)
where
    M: Memory<String> + Journal<String> + 'static,
    F: Fn(Settings) -> M,
{
    let m = make(Settings { lease_ttl: Duration::from_secs(60), retention: Retention::Keep });
    let consumed = event("com.conformance.client", "h-1");
    let produced = vec![event("com.conformance.suite", "hp-1")];
    let entry = JournalEntry { at: SystemTime::now(), consumed: Some(&consumed), produced: &produced };
    m.write("hist", &"v1".into(), None, None, &WriteMeta { entry: Some(entry), ..meta("hist") })
        .await
        .expect("write");
    let entry = JournalEntry { at: SystemTime::now(), consumed: None, produced: &[] };
    m.write("hist", &"v2".into(), Some(1), None, &WriteMeta { entry: Some(entry), ..meta("hist") })
        .await
        .expect("write");
    let history = m.history("hist", 0, 10).await.expect("history");
    assert_eq!(
        history.iter().map(|e| e.version).collect::<Vec<_>>(),
        [1, 2],
        "one entry per journaled write"
    );
    assert_eq!(history[0].record, "v1", "the journal keeps the record written");
    assert_eq!(history[0].consumed.as_ref().map(Event::id), Some("h-1"), "and the event consumed");
    assert_eq!(history[0].produced, produced, "and the events produced, in order");
    assert!(history[1].consumed.is_none(), "a timer wake-up consumed no event");
    assert_eq!(m.history("hist", 1, 10).await.expect("page").len(), 1, "pages start after the version given");
    assert_eq!(m.entry("hist", 2).await.expect("entry").map(|e| e.record), Some("v2".to_owned()));
    assert!(m.entry("hist", 3).await.expect("entry").is_none());
}

/// The workflow index ([`WorkflowIndex`]): run it beside [`conformance`]. It writes six
/// workflows (four orchestration subjects of three orchestrators and two versions, a child and a
/// grandchild, meta, every status, and one plain id), then checks each filter alone and
/// combined (each check fails if the filter is ignored), counts, the order (newest first) and
/// paging with cursors (no duplicate, no gap).
pub async fn index<M, F>(make: F)
where
    M: Memory<String> + WorkflowIndex + 'static,
    F: Fn(Settings) -> M,
{
    let m = make(Settings { lease_ttl: Duration::from_secs(60), retention: Retention::Keep });
    let w = IndexFixture::write(&m).await;
    let ids = |page: &[WorkflowSummary]| page.iter().map(|s| s.id.clone()).collect::<Vec<_>>();
    let all = m.list(&WorkflowFilter::new()).await.expect("list");
    assert_eq!(
        ids(&all.items),
        w.newest_first(&["f", "e", "d", "c", "b", "a"]),
        "every workflow, newest first"
    );
    assert!(all.next.is_none(), "a page holding everything is the last");

    // The summaries.
    let summary = |id: &str| all.items.iter().find(|s| s.id == id).cloned().expect("listed");
    let a = summary(&w.a);
    assert_eq!(a.execution_id.as_deref(), Some("aaaa0001-index"), "the execution id comes from the subject");
    assert_eq!(
        (a.orchestrator.as_str(), a.orchestrator_version.as_deref()),
        (ALPHA, Some("1.0.0")),
        "the orchestrator and its version"
    );
    assert_eq!(a.status, WorkflowState::Active);
    assert_eq!(a.initiator.as_deref(), Some(CLIENT));
    assert_eq!(
        (a.parent.as_deref(), a.root.as_deref()),
        (None, Some(w.a.as_str())),
        "a root is its own root"
    );
    assert_eq!(a.meta.get("tenant").map(String::as_str), Some("acme"), "the meta comes from the subject");
    assert_eq!(a.version, 1);
    assert_eq!(a.short_id(), "aaaa0001");
    let b = summary(&w.b);
    assert_eq!((b.status, b.version), (WorkflowState::Done, 2), "the status of the last write");
    assert!(b.updated_at > b.created_at, "a workflow written twice was updated after its creation");
    let f = summary(&w.f);
    assert_eq!(
        (f.parent.as_deref(), f.root.as_deref()),
        (Some(w.c.as_str()), Some(w.a.as_str())),
        "a grandchild's root is its tree's root"
    );
    assert_eq!(f.meta.get("region").map(String::as_str), Some("eu"), "a child's meta is inherited");
    let e = summary(&w.e);
    assert_eq!(
        (e.orchestrator.as_str(), e.orchestrator_version.as_deref(), e.execution_id.as_deref()),
        (PLAIN, None, None),
        "a plain id has no subject columns"
    );
    assert!(e.meta.is_empty() && e.initiator.is_none());
    assert_eq!(e.root.as_deref(), Some(w.e.as_str()));

    // Each filter, alone and combined; counts agree with the listings.
    let check = async |what: &str, filter: WorkflowFilter, expected: &[&str]| {
        let expected = w.newest_first(expected);
        let listed = m.list(&filter).await.expect("list");
        assert_eq!(ids(&listed.items), expected, "filter by {what}");
        assert_eq!(m.count(&filter).await.expect("count"), expected.len() as u64, "count by {what}");
    };
    let f0 = WorkflowFilter::new;
    check("orchestrator", WorkflowFilter { orchestrator: Some(ALPHA.into()), ..f0() }, &["b", "a"]).await;
    check("a plain id's source", WorkflowFilter { orchestrator: Some(PLAIN.into()), ..f0() }, &["e"]).await;
    check(
        "orchestrator and version",
        WorkflowFilter {
            orchestrator: Some(ALPHA.into()),
            orchestrator_version: Some("2.0.0".into()),
            ..f0()
        },
        &["b"],
    )
    .await;
    check(
        "version",
        WorkflowFilter { orchestrator_version: Some("1.0.0".into()), ..f0() },
        &["f", "d", "c", "a"],
    )
    .await;
    for (status, expected) in [
        (WorkflowState::Active, &["f", "e", "a"][..]),
        (WorkflowState::Waiting, &["c"][..]),
        (WorkflowState::Done, &["b"][..]),
        (WorkflowState::Failed, &["d"][..]),
    ] {
        check(&format!("status {status}"), WorkflowFilter { status: Some(status), ..f0() }, expected).await;
    }
    check(
        "orchestrator and status",
        WorkflowFilter { orchestrator: Some(BETA.into()), status: Some(WorkflowState::Failed), ..f0() },
        &["d"],
    )
    .await;
    check(
        "orchestrator and another status",
        WorkflowFilter { orchestrator: Some(BETA.into()), status: Some(WorkflowState::Done), ..f0() },
        &[],
    )
    .await;
    check("initiator", WorkflowFilter { initiator: Some(CLIENT.into()), ..f0() }, &["d", "a"]).await;
    check("parent", WorkflowFilter { parent: Some(w.a.clone()), ..f0() }, &["c"]).await;
    check("root", WorkflowFilter { root: Some(w.a.clone()), ..f0() }, &["f", "c", "a"]).await;
    check("a lone root", WorkflowFilter { root: Some(w.d.clone()), ..f0() }, &["d"]).await;
    check("execution id prefix", WorkflowFilter { execution_id_prefix: Some("aaaa".into()), ..f0() }, &["a"])
        .await;
    check("a wildcard prefix", WorkflowFilter { execution_id_prefix: Some("%".into()), ..f0() }, &[]).await;
    check("a wildcard prefix", WorkflowFilter { execution_id_prefix: Some("_".into()), ..f0() }, &[]).await;
    let meta =
        |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    check("meta", WorkflowFilter { meta: meta(&[("tenant", "acme")]), ..f0() }, &["f", "c", "a"]).await;
    check(
        "two meta entries",
        WorkflowFilter { meta: meta(&[("tenant", "acme"), ("region", "eu")]), ..f0() },
        &["f", "c"],
    )
    .await;
    check("another meta value", WorkflowFilter { meta: meta(&[("tenant", "globex")]), ..f0() }, &["b"]).await;
    check("a meta value nobody has", WorkflowFilter { meta: meta(&[("tenant", "nobody")]), ..f0() }, &[])
        .await;
    let c = summary(&w.c);
    check(
        "created since",
        WorkflowFilter { created: TimeRange { since: Some(c.created_at), until: None }, ..f0() },
        &["f", "e", "d", "c"],
    )
    .await;
    check(
        "created until",
        WorkflowFilter { created: TimeRange { since: None, until: Some(c.created_at) }, ..f0() },
        &["b", "a"],
    )
    .await;
    check(
        "updated since",
        WorkflowFilter { updated: TimeRange { since: Some(b.updated_at), until: None }, ..f0() },
        &["b"],
    )
    .await;
    check(
        "updated until",
        WorkflowFilter { updated: TimeRange { since: None, until: Some(b.updated_at) }, ..f0() },
        &["f", "e", "d", "c", "a"],
    )
    .await;

    // Pages: no duplicate, no gap, the last one says so.
    for (what, filter, expected) in [
        ("every workflow", f0(), &["f", "e", "d", "c", "b", "a"][..]),
        ("a tree", WorkflowFilter { root: Some(w.a.clone()), ..f0() }, &["f", "c", "a"][..]),
    ] {
        for limit in [1, 2, 4] {
            let mut seen = Vec::new();
            let mut filter = WorkflowFilter { limit, ..filter.clone() };
            let mut pages = 0;
            loop {
                let page = m.list(&filter).await.expect("page");
                pages += 1;
                assert!(page.items.len() <= limit, "{what}: a page holds at most {limit}");
                seen.extend(ids(&page.items));
                match page.next {
                    Some(next) => filter = filter.after(Some(next)),
                    None => break,
                }
                assert!(pages <= expected.len(), "{what}: the pages never end");
            }
            assert_eq!(seen, w.newest_first(expected), "{what} by pages of {limit}: no duplicate, no gap");
            assert_eq!(
                pages,
                expected.len().div_ceil(limit),
                "{what} by pages of {limit}: no empty last page"
            );
        }
    }
    a_cancelled_workflow_is_listed_without_its_timer(&make(Settings {
        lease_ttl: Duration::from_secs(60),
        retention: Retention::Keep,
    }))
    .await;
}

/// A waiting workflow written as cancelled (as a cancel request's step writes it): listed as
/// `cancelled`, by the index the store hands out too, and its wake-up is gone.
async fn a_cancelled_workflow_is_listed_without_its_timer<M: Memory<String> + WorkflowIndex>(m: &M) {
    let subject = Subject::builder(ALPHA, "1.0.0", CLIENT).execution_id("cancel01-index").build().expect("s");
    let id = subject.as_str();
    let past = Some(SystemTime::now() - Duration::from_secs(1));
    let waiting = WriteMeta { wake_at: past, status: WorkflowState::Waiting, ..WriteMeta::new(id, ALPHA) };
    m.write(id, &"x".into(), None, None, &waiting).await.expect("write");
    let cancelled = WriteMeta { status: WorkflowState::Cancelled, ..WriteMeta::new(id, ALPHA) };
    m.write(id, &"y".into(), Some(1), None, &cancelled).await.expect("write");
    let filter = WorkflowFilter { status: Some(WorkflowState::Cancelled), ..WorkflowFilter::new() };
    let listed = m.list(&filter).await.expect("list");
    assert_eq!(listed.items.len(), 1, "listed as cancelled");
    assert_eq!(listed.items[0].status, WorkflowState::Cancelled);
    if let Some(index) = m.workflow_index() {
        assert_eq!(index.count_dyn(&filter).await.expect("count"), 1, "the index the store hands out");
    }
    assert!(m.claim_due(10, Duration::from_secs(5)).await.expect("claim").is_empty(), "its wake-up is gone");
}

const ALPHA: &str = "arvo.orc.index.alpha";
const BETA: &str = "arvo.orc.index.beta";
const GAMMA: &str = "arvo.orc.index.gamma";
const PLAIN: &str = "com.conformance.plain";
const CLIENT: &str = "com.conformance.client";

/// The workflows of [`index`], by letter, in the order they are created.
struct IndexFixture {
    a: String,
    b: String,
    c: String,
    d: String,
    e: String,
    f: String,
}

impl IndexFixture {
    async fn write<M: Memory<String>>(m: &M) -> Self {
        let subject = |orchestrator: &str, version: &str, initiator: &str, execution: &str| {
            Subject::builder(orchestrator, version, initiator).execution_id(execution)
        };
        let a = subject(ALPHA, "1.0.0", CLIENT, "aaaa0001-index").meta("tenant", "acme").build().expect("a");
        let b = subject(ALPHA, "2.0.0", "com.conformance.other", "bbbb0002-index")
            .meta("tenant", "globex")
            .build()
            .expect("b");
        let c =
            a.child(BETA, "1.0.0").execution_id("cccc0003-index").meta("region", "eu").build().expect("c");
        let d =
            subject(BETA, "1.0.0", CLIENT, "dddd0004-index").meta("tenant", "initech").build().expect("d");
        let f = c.child(GAMMA, "1.0.0").execution_id("ffff0006-index").build().expect("f");
        let fixture = Self {
            a: a.as_str().to_owned(),
            b: b.as_str().to_owned(),
            c: c.as_str().to_owned(),
            d: d.as_str().to_owned(),
            e: "plain-index-workflow".to_owned(),
            f: f.as_str().to_owned(),
        };
        let later = Some(SystemTime::now() + Duration::from_secs(3_600));
        // The columns come from the parsed subject a writer passes (a, c), from the id when it
        // passes none (d), and from the id when the parsed subject is another workflow's (b).
        /// A workflow written: its subject, the parsed subject passed, its parent, status, wake-up.
        type Write<'a> =
            (&'a Subject, Option<&'a Subject>, Option<&'a str>, WorkflowState, Option<SystemTime>);
        let writes: [Write<'_>; 4] = [
            (&a, Some(&a), None, WorkflowState::Active, None),
            (&b, Some(&d), None, WorkflowState::Active, None),
            (&c, Some(&c), Some(&fixture.a), WorkflowState::Waiting, later),
            (&d, None, None, WorkflowState::Failed, None),
        ];
        for (subject, parsed_subject, parent, status, wake_at) in writes {
            let meta = WriteMeta {
                parsed_subject,
                parent_subject: Materialized::Resolved(parent),
                initiator: Materialized::Resolved(subject.initiator()),
                wake_at,
                status,
                ..WriteMeta::new(subject.as_str(), subject.orchestrator_name())
            };
            m.write(subject.as_str(), &"x".into(), None, None, &meta).await.expect("write");
            // Each workflow is created in a later millisecond than the one before.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        m.write(&fixture.e, &"x".into(), None, None, &WriteMeta::new(&fixture.e, PLAIN))
            .await
            .expect("write");
        tokio::time::sleep(Duration::from_millis(5)).await;
        let meta = WriteMeta {
            parent_subject: Materialized::Resolved(Some(&fixture.c)),
            initiator: Materialized::Resolved(f.initiator()),
            ..WriteMeta::new(f.as_str(), GAMMA)
        };
        m.write(&fixture.f, &"x".into(), None, None, &meta).await.expect("write");
        tokio::time::sleep(Duration::from_millis(5)).await;
        // b ends: its last write is the latest of all.
        let meta = WriteMeta {
            parent_subject: Materialized::Resolved(None),
            initiator: Materialized::Resolved(b.initiator()),
            status: WorkflowState::Done,
            ..WriteMeta::new(b.as_str(), ALPHA)
        };
        m.write(&fixture.b, &"y".into(), Some(1), None, &meta).await.expect("write");
        fixture
    }

    /// The ids of the workflows named by letter, in the order given (newest first).
    fn newest_first(&self, letters: &[&str]) -> Vec<String> {
        letters
            .iter()
            .map(|letter| match *letter {
                "a" => self.a.clone(),
                "b" => self.b.clone(),
                "c" => self.c.clone(),
                "d" => self.d.clone(),
                "e" => self.e.clone(),
                "f" => self.f.clone(),
                other => panic!("no workflow {other}"),
            })
            .collect()
    }
}

async fn a_failed_commit_changes_nothing<M: Store>(m: &M) {
    let consumed = event("com.conformance.client", "f-1");
    let produced = [event("com.conformance.suite", "fp-1")];
    let lease = m.lock("fail").await.expect("lock").expect("free");
    m.write("fail", &"v1".into(), None, Some(&lease), &meta("fail")).await.expect("write");
    let entry = JournalEntry { at: SystemTime::now(), consumed: Some(&consumed), produced: &produced };
    let stale = Commit {
        release: true,
        ..Commit::new("fail", "v2".to_owned(), None, WriteMeta { entry: Some(entry), ..meta("fail") })
            .lease(Some(&lease))
    };
    assert!(matches!(m.commit(stale).await, Err(MemoryError::Conflict { .. })), "a stale commit conflicts");
    assert_eq!(m.read("fail").await.expect("read").map(|s| s.record), Some("v1".to_owned()));
    assert!(
        m.produced("fail", EventKey::of(&consumed)).await.expect("produced").is_none(),
        "a failed commit journals nothing"
    );
    assert!(m.lock("fail").await.expect("lock").is_none(), "a failed commit keeps the lease held");
    assert!(m.unlock(&lease).await.expect("unlock"));
}

async fn redelivery_is_answered_by_source_and_id<M: Store>(m: &M) {
    let consumed = event("com.conformance.client", "same-id");
    let produced = vec![event("com.conformance.suite", "answer")];
    let entry = JournalEntry { at: SystemTime::now(), consumed: Some(&consumed), produced: &produced };
    m.write("idem", &"v1".into(), None, None, &WriteMeta { entry: Some(entry), ..meta("idem") })
        .await
        .expect("write");
    let key = EventKey::of(&consumed);
    assert_eq!(
        m.produced("idem", key).await.expect("produced"),
        Some(produced.clone()),
        "idempotency: a redelivered event gets the events it produced the first time"
    );
    let acquired = m.acquire("idem", key, false).await.expect("acquire").expect("no lock");
    assert_eq!(
        acquired.produced,
        Some(produced),
        "idempotency: acquire answers a redelivery from the journal"
    );
    let other_source = EventKey { source: "com.conformance.other", id: "same-id" };
    assert!(
        m.produced("idem", other_source).await.expect("produced").is_none(),
        "an event reusing the id from another source is another event (CloudEvents: source + id)"
    );
    assert!(m.acquire("idem", other_source, false).await.expect("acquire").expect("read").produced.is_none());
    assert!(
        m.produced("idem", EventKey { source: "com.conformance.client", id: "never" })
            .await
            .expect("produced")
            .is_none(),
        "an event never consumed has no answer"
    );
    assert!(m.produced("nobody", key).await.expect("produced").is_none(), "nor has an unknown workflow");
}

async fn due_wake_ups_are_claimed_once<M: Store>(m: &M) {
    let now = SystemTime::now();
    let with_wake = |id: &'static str, wake: Option<SystemTime>| WriteMeta { wake_at: wake, ..meta(id) };
    let claim = Duration::from_millis(1_500);
    assert!(m.claim_due(10, claim).await.expect("claim").is_empty(), "nothing is due in an empty store");
    let (early, late) = (now - Duration::from_secs(20), now - Duration::from_secs(10));
    m.write("w-late", &"x".into(), None, None, &with_wake("w-late", Some(late))).await.expect("write");
    m.write("w-early", &"x".into(), None, None, &with_wake("w-early", Some(early))).await.expect("write");
    m.write(
        "w-future",
        &"x".into(),
        None,
        None,
        &with_wake("w-future", Some(now + Duration::from_secs(3_600))),
    )
    .await
    .expect("write");
    m.write("w-none", &"x".into(), None, None, &with_wake("w-none", None)).await.expect("write");
    let ids = |due: Vec<super::Wake>| due.into_iter().map(|w| w.id).collect::<Vec<_>>();
    assert_eq!(
        ids(m.claim_due(1, claim).await.expect("claim")),
        ["w-early"],
        "earliest first, within the limit"
    );
    assert_eq!(
        ids(m.claim_due(10, claim).await.expect("claim")),
        ["w-late"],
        "a claimed wake-up is not handed out again while its claim lasts; future ones are not due"
    );
    assert!(m.claim_due(10, claim).await.expect("claim").is_empty(), "both are claimed now");
    // A write replaces the wake-up and ends its claim.
    m.write("w-late", &"y".into(), Some(1), None, &with_wake("w-late", Some(late))).await.expect("write");
    assert_eq!(
        ids(m.claim_due(10, claim).await.expect("claim")),
        ["w-late"],
        "a rewritten wake-up is claimable"
    );
    m.write("w-late", &"z".into(), Some(2), None, &with_wake("w-late", None)).await.expect("write");
    tokio::time::sleep(claim + Duration::from_millis(100)).await;
    assert_eq!(
        ids(m.claim_due(10, claim).await.expect("claim")),
        ["w-early"],
        "a lapsed claim is handed out again (its wake-up was lost); a cleared wake-up is not"
    );
}

async fn finished_workflows_follow_the_retention<M: Store>(m: &M, retention: Retention) {
    let consumed = event("com.conformance.client", "fin");
    let entry = JournalEntry { at: SystemTime::now(), consumed: Some(&consumed), produced: &[] };
    let lease = m.lock("fin").await.expect("lock").expect("free");
    let finish = Commit {
        release: true,
        finished: true,
        ..Commit::new("fin", "done".to_owned(), None, WriteMeta { entry: Some(entry), ..meta("fin") })
            .lease(Some(&lease))
    };
    m.commit(finish).await.expect("a finishing commit");
    m.write("other", &"live".into(), None, None, &meta("other")).await.expect("write");
    let present = m.read("fin").await.expect("read").is_some();
    match retention {
        Retention::Keep => assert!(present, "Keep keeps a finished workflow"),
        Retention::Remove => assert!(!present, "Remove removes a finished workflow at once"),
        Retention::Archive => {}
        Retention::RemoveAfter(after) => {
            assert!(present, "RemoveAfter keeps a finished workflow until the delay has passed");
            tokio::time::sleep(after + Duration::from_millis(100)).await;
            // Removals are due now; the next finishing commit or cleanup applies them.
            m.cleanup("other").await.expect("cleanup");
            assert!(m.read("fin").await.expect("read").is_none(), "RemoveAfter removes it after the delay");
        }
    }
    assert_eq!(
        m.read("other").await.expect("read").map(|s| s.record),
        Some("live".to_owned()),
        "retention leaves other workflows alone"
    );
    assert!(m.lock("fin").await.expect("lock").is_some(), "a finished workflow's lease was released");
}

/// The catalog's suite: a fresh store's catalog is empty, is the one
/// [`Memory::catalog`] returns, records definitions (of both kinds, several versions, a document
/// with unicode and nesting), replaces one recorded again (same kind, name and version) with its
/// new document and time, keeps a definition of the other kind under the same name apart, and
/// lists them by kind (contracts first), name and version.
pub async fn catalog<M, F>(make: F)
where
    M: Memory<String> + super::Catalog + 'static,
    F: Fn(Settings) -> M,
{
    use super::{Definition, DefinitionKind};
    let m = make(Settings { lease_ttl: Duration::from_secs(60), retention: Retention::Keep });
    assert!(m.definitions().await.expect("definitions").is_empty(), "a new store's catalog is empty");
    assert!(m.catalog().is_some(), "the store says it keeps a catalog");
    let definition = |kind, name: &str, version: &str, document: serde_json::Value| Definition {
        kind,
        name: name.to_owned(),
        version: version.to_owned(),
        document,
    };
    let first = vec![
        definition(
            DefinitionKind::Orchestrator,
            "arvo.orc.shop.order",
            "1.0.0",
            serde_json::json!({"machine": "order"}),
        ),
        definition(DefinitionKind::Contract, "com.shop.pay", "2.0.0", serde_json::json!({"v": 2})),
        definition(
            DefinitionKind::Contract,
            "com.shop.pay",
            "1.0.0",
            serde_json::json!({"v": 1, "note": "café ✓", "nested": {"a": [1, 2]}}),
        ),
        definition(
            DefinitionKind::Contract,
            "arvo.orc.shop.order",
            "1.0.0",
            serde_json::json!({"self": true}),
        ),
    ];
    m.record(&first).await.expect("record");
    let listed = m.definitions().await.expect("definitions");
    let keys: Vec<(DefinitionKind, &str, &str)> = listed
        .iter()
        .map(|r| (r.definition.kind, r.definition.name.as_str(), r.definition.version.as_str()))
        .collect();
    assert_eq!(
        keys,
        [
            (DefinitionKind::Contract, "arvo.orc.shop.order", "1.0.0"),
            (DefinitionKind::Contract, "com.shop.pay", "1.0.0"),
            (DefinitionKind::Contract, "com.shop.pay", "2.0.0"),
            (DefinitionKind::Orchestrator, "arvo.orc.shop.order", "1.0.0"),
        ],
        "by kind, name and version; one kind's entry does not replace the other's"
    );
    assert_eq!(listed[1].definition, first[2], "the document round-trips");
    let before = listed[3].recorded_at;

    tokio::time::sleep(Duration::from_millis(20)).await;
    let again = definition(
        DefinitionKind::Orchestrator,
        "arvo.orc.shop.order",
        "1.0.0",
        serde_json::json!({"machine": "order", "v": 2}),
    );
    m.catalog().expect("a catalog").record_dyn(std::slice::from_ref(&again)).await.expect("record again");
    let listed = m.definitions().await.expect("definitions");
    assert_eq!(listed.len(), 4, "recorded again: replaced, not added");
    assert_eq!(listed[3].definition, again, "the new document replaced the old");
    assert!(listed[3].recorded_at > before, "and its time");
    assert_eq!(listed[1].definition, first[2], "the others stay");
}

/// The recorded answers' suite: a fresh store has none and says it keeps them
/// ([`Memory::answers`]); a recorded answer reads back exactly (same ids, times, payloads, in
/// order; an empty answer is an answer, not none); the first record wins (a second one returns
/// the first answer, also through [`super::DynAnswers`]); the service, the request's source and
/// its id each tell answers apart; keys with unicode, quotes and backslashes round-trip; of many
/// concurrent records of one key, every caller gets the one answer that is kept.
pub async fn answers<M, F>(make: F)
where
    M: Memory<String> + super::Answers + 'static,
    F: Fn(Settings) -> M,
{
    use super::AnswerKey;
    let m = Arc::new(make(Settings { lease_ttl: Duration::from_secs(60), retention: Retention::Keep }));
    let key = |service, source, id| AnswerKey { service, source, id };
    let pay = key("com.shop.pay", "com.shop.client", "req-1");
    assert!(m.answers().is_some(), "the store says it keeps answers");
    assert_eq!(m.answer(pay).await.expect("answer"), None, "a new store has no answer");

    let reply = |id: &str, n: i64| {
        Event::builder()
            .id(id)
            .source("com.shop.pay")
            .r#type("evt.shop.pay.success")
            .subject("s-1")
            .to("com.shop.client")
            .data_json(serde_json::json!({"n": n, "note": "café ✓ \"quoted\" \\ back"}))
            .build()
            .expect("a valid event")
    };
    let first = vec![reply("r-1", 1), reply("r-2", 2)];
    let recorded = m.record_answer(pay, &first).await.expect("record");
    assert_eq!(recorded, first, "the first record is the answer");
    assert_eq!(m.answer(pay).await.expect("answer"), Some(first.clone()), "it reads back exactly, in order");

    let dynamic = m.answers().expect("answers");
    let again = dynamic.record_answer_dyn(pay, &[reply("r-3", 3)]).await.expect("record again");
    assert_eq!(again, first, "the first record wins: a second returns the first answer");
    assert_eq!(dynamic.answer_dyn(pay).await.expect("answer"), Some(first.clone()), "and keeps it");

    for other in [
        key("com.shop.refund", "com.shop.client", "req-1"),
        key("com.shop.pay", "com.shop.other", "req-1"),
        key("com.shop.pay", "com.shop.client", "req-2"),
    ] {
        assert_eq!(
            m.answer(other).await.expect("answer"),
            None,
            "service, source and id each count: {other:?}"
        );
    }

    let empty = key("com.shop.pay", "com.shop.client", "req-empty");
    assert_eq!(m.record_answer(empty, &[]).await.expect("record"), Vec::<Event>::new());
    assert_eq!(m.answer(empty).await.expect("answer"), Some(Vec::new()), "an empty answer is an answer");

    let odd = key("svc ✓ 'q' \"d\"", "src\\back%_", "id; DROP TABLE answers; --");
    m.record_answer(odd, &first[..1]).await.expect("record");
    assert_eq!(m.answer(odd).await.expect("answer"), Some(first[..1].to_vec()), "odd keys round-trip");

    let mut racing = Vec::new();
    for n in 0..8_i64 {
        let m = Arc::clone(&m);
        racing.push(tokio::spawn(async move {
            let key = AnswerKey { service: "com.shop.pay", source: "com.shop.client", id: "req-race" };
            m.record_answer(key, &[reply(&format!("race-{n}"), n)]).await.expect("record")
        }));
    }
    let mut answers = Vec::new();
    for task in racing {
        answers.push(task.await.expect("a record task"));
    }
    let kept = m.answer(key("com.shop.pay", "com.shop.client", "req-race")).await.expect("answer");
    assert!(kept.is_some(), "one of the racing answers is kept");
    assert!(answers.iter().all(|a| Some(a) == kept.as_ref()), "every racing caller gets the answer kept");
}

/// The [`DeadLetterStore`](super::DeadLetterStore) conformance suite: a new store has none;
/// buried events come back oldest first with their reason, attempt and content (unicode and
/// quotes included), by workflow or all, paged by position; burying an event again keeps the
/// first burial; a buried event leaves the store's outbox.
pub async fn dead_letters<M, F>(make: F)
where
    M: Memory<String> + super::DeadLetterStore + crate::outbox::Outbox + 'static,
    F: Fn(Settings) -> M,
{
    let m = make(Settings { lease_ttl: Duration::from_secs(60), retention: Retention::Keep });
    assert!(m.dead_letter_store().is_some(), "the store says it keeps dead letters");
    assert!(m.buried(None, 0, 10).await.expect("buried").is_empty(), "a new store has none");
    let event = |id: &str, subject: &str| {
        Event::builder()
            .id(id)
            .source("com.shop.client")
            .r#type("com.shop.pay")
            .subject(subject)
            .to("com.shop.pay")
            .data_json(serde_json::json!({"note": "café ✓ \"quoted\" \\ back <script>"}))
            .build()
            .expect("a valid event")
    };
    let (a1, b1, a2) = (event("e-1", "wf-a"), event("e-2", "wf-b"), event("e-3", "wf-a"));
    // In flight, then buried: it leaves the outbox.
    m.advance(None, std::slice::from_ref(&a1)).await.expect("in the outbox");
    let before = std::time::SystemTime::now() - Duration::from_secs(1);
    m.bury(&a1, "no handler registered for `to` = `com.shop.pay`", 1).await.expect("bury");
    assert!(m.pending(0, 10).await.expect("pending").is_empty(), "a buried event leaves the outbox");
    m.bury(&b1, "the handler returned a violation: bad", 3).await.expect("bury");
    m.bury(&a2, "the handler panicked: boom", 2).await.expect("bury");
    m.bury(&a1, "a second burial is ignored", 9).await.expect("bury again");

    let all = m.buried(None, 0, 10).await.expect("buried");
    let ids: Vec<&str> = all.iter().map(|b| b.event.id()).collect();
    assert_eq!(ids, ["e-1", "e-2", "e-3"], "oldest first, one per event");
    assert_eq!(all[0].event, a1, "the event round-trips");
    assert_eq!(all[0].reason, "no handler registered for `to` = `com.shop.pay`", "the first burial stays");
    assert_eq!(all[0].attempt, 1);
    assert_eq!(all[1].attempt, 3);
    assert!(all[0].at >= before, "buried now");
    assert!(all.windows(2).all(|w| w[0].seq < w[1].seq), "positions increase");

    let of_a = m.buried(Some("wf-a"), 0, 10).await.expect("by workflow");
    let ids: Vec<&str> = of_a.iter().map(|b| b.event.id()).collect();
    assert_eq!(ids, ["e-1", "e-3"], "a workflow's own");
    assert!(m.buried(Some("wf-none"), 0, 10).await.expect("none").is_empty());
    let page = m.buried(None, all[0].seq, 1).await.expect("a page");
    assert_eq!(page.len(), 1);
    assert_eq!(page[0].event.id(), "e-2", "the page after the first");
    let dynamic = m.dead_letter_store().expect("dyn").buried_dyn(Some("wf-b"), 0, 10).await.expect("dyn");
    assert_eq!(dynamic.len(), 1, "the same through the trait object");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{Acquired, InMemory, InMemoryConfig, Lease, Stored, Wake};

    /// InMemory with idempotency taken out: it journals, but never answers a redelivery.
    struct Forgetful(InMemory<String>);

    impl Memory<String> for Forgetful {
        async fn read(&self, id: &str) -> Result<Option<Stored<String>>, MemoryError> {
            self.0.read(id).await
        }
        async fn lock(&self, id: &str) -> Result<Option<Lease>, MemoryError> {
            self.0.lock(id).await
        }
        async fn renew(&self, lease: &Lease) -> Result<Lease, MemoryError> {
            self.0.renew(lease).await
        }
        async fn unlock(&self, lease: &Lease) -> Result<bool, MemoryError> {
            self.0.unlock(lease).await
        }
        async fn acquire(
            &self,
            id: &str,
            event: EventKey<'_>,
            lock: bool,
        ) -> Result<Option<Acquired<String>>, MemoryError> {
            let acquired = self.0.acquire(id, event, lock).await?;
            Ok(acquired.map(|a| Acquired { produced: None, ..a }))
        }
        async fn commit(&self, commit: Commit<'_, String>) -> Result<u64, MemoryError> {
            self.0.commit(commit).await
        }
        async fn produced(&self, _: &str, _: EventKey<'_>) -> Result<Option<Vec<Event>>, MemoryError> {
            Ok(None)
        }
        async fn claim_due(&self, limit: usize, claim: Duration) -> Result<Vec<Wake>, MemoryError> {
            self.0.claim_due(limit, claim).await
        }
        async fn cleanup(&self, id: &str) -> Result<(), MemoryError> {
            self.0.cleanup(id).await
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_store_that_skips_idempotency_fails_the_suite() {
        let run = tokio::spawn(conformance(|s| {
            Forgetful(InMemory::new(InMemoryConfig {
                lease_ttl: s.lease_ttl,
                retention: s.retention,
                journal: true,
            }))
        }));
        let failure = run.await.expect_err("the suite must fail a store without idempotent redelivery");
        let message = failure.into_panic();
        let message = message.downcast_ref::<String>().map_or("", String::as_str);
        assert!(message.contains("idempotency"), "it fails on the idempotency rule: {message}");
    }
}
