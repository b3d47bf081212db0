//! The lifecycle's two writer operations: `acquire` (lease, record, journal answer) and `commit`
//! (write, journal, wake-up, outbox step, retention, release), each one submission to the
//! writer thread, the commit all or nothing.

mod common;

use std::time::{Duration, SystemTime};

use common::{event, key, store};
use orchestrator::event::Event;
use orchestrator::memory::{
    Commit, EventKey, JournalEntry, Memory, MemoryError, MemoryExt, OutboxStep, WriteMeta,
};
use orchestrator::outbox::Outbox;
use orchestrator_sqlite::{Retention, SqliteMemory};

const LONG: Duration = Duration::from_secs(60);

async fn in_flight(m: &SqliteMemory<String>) -> Vec<String> {
    m.pending(0, 100).await.expect("pending").into_iter().map(|p| p.event.id().to_owned()).collect()
}

#[tokio::test]
async fn a_commit_takes_its_outbox_step_with_the_write() {
    let dir = tempfile::tempdir().unwrap();
    let m = store(&dir.path().join("o.db"), LONG, Retention::Keep);
    let consumed = event("in-1", "wf");
    m.advance(None, std::slice::from_ref(&consumed)).await.unwrap();
    assert_eq!(in_flight(&m).await, ["in-1"]);

    let produced = [event("out-1", "wf"), event("out-2", "wf")];
    let lease = m.lock("wf").await.unwrap().unwrap();
    let entry = JournalEntry { at: SystemTime::now(), consumed: Some(&consumed), produced: &produced };
    let before = m.stats();
    let commit = Commit {
        outbox: Some(OutboxStep { consumed: Some(consumed.id()), produced: &produced }),
        ..Commit::new(
            "wf",
            "one".to_owned(),
            None,
            WriteMeta { entry: Some(entry), ..WriteMeta::new("wf", "s") },
        )
        .lease(Some(&lease))
    };
    assert_eq!(m.commit(commit).await.unwrap(), 1);
    let after = m.stats();
    assert_eq!(
        (after.operations - before.operations, after.transactions - before.transactions),
        (1, 1),
        "the write and its outbox step are one operation in one transaction"
    );
    assert_eq!(in_flight(&m).await, ["out-1", "out-2"], "the consumed event left, the produced ones entered");
    assert_eq!(m.read("wf").await.unwrap().map(|s| s.record), Some("one".to_owned()));

    // A commit that fails its compare-and-swap changes neither the state nor the outbox.
    let next = [event("out-3", "wf")];
    let conflicting = Commit {
        outbox: Some(OutboxStep { consumed: Some("out-1"), produced: &next }),
        ..Commit::new("wf", "lost".to_owned(), Some(7), WriteMeta::new("wf", "s")).lease(Some(&lease))
    };
    assert!(matches!(
        m.commit(conflicting).await,
        Err(MemoryError::Conflict { expected: Some(7), found: Some(1), .. })
    ));
    assert_eq!(in_flight(&m).await, ["out-1", "out-2"], "the outbox is unchanged");
    assert_eq!(m.read("wf").await.unwrap().map(|s| (s.record, s.version)), Some(("one".to_owned(), 1)));

    // Nor does one under a stale lease.
    let stale = orchestrator::memory::Lease { token: lease.token + 1, ..lease.clone() };
    let fenced = Commit {
        outbox: Some(OutboxStep { consumed: Some("out-1"), produced: &next }),
        ..Commit::new("wf", "lost".to_owned(), Some(1), WriteMeta::new("wf", "s")).lease(Some(&stale))
    };
    assert!(matches!(m.commit(fenced).await, Err(MemoryError::StaleLease { .. })));
    assert_eq!(in_flight(&m).await, ["out-1", "out-2"]);
    assert_eq!(m.read("wf").await.unwrap().map(|s| s.version), Some(1));
    assert!(m.lock("wf").await.unwrap().is_none(), "the failed commits kept the lease");
    assert!(m.unlock(&lease).await.unwrap());
}

#[tokio::test]
async fn a_step_is_two_writer_operations() {
    let dir = tempfile::tempdir().unwrap();
    let m = store(&dir.path().join("s.db"), LONG, Retention::Remove);
    let init = event("init", "wf");
    let produced = [event("request", "wf")];
    m.advance(None, std::slice::from_ref(&init)).await.unwrap();

    let mut version = None;
    for (i, consumed) in [init, event("reply", "wf")].iter().enumerate() {
        let before = m.stats().operations;
        let acquired = m.acquire("wf", EventKey::of(consumed), true).await.unwrap().expect("free");
        assert_eq!(acquired.stored.as_ref().map(|s| s.version), version);
        assert!(acquired.produced.is_none(), "a new event");
        let finished = i == 1;
        let entry = JournalEntry { at: SystemTime::now(), consumed: Some(consumed), produced: &produced };
        let lease = acquired.lease.expect("lease");
        let commit = Commit {
            release: true,
            finished,
            outbox: Some(OutboxStep { consumed: Some(consumed.id()), produced: &produced }),
            ..Commit::new(
                "wf",
                format!("step {i}"),
                version,
                WriteMeta { entry: Some(entry), ..WriteMeta::new("wf", "s") },
            )
            .lease(Some(&lease))
        };
        version = Some(m.commit(commit).await.unwrap());
        assert_eq!(m.stats().operations - before, 2, "step {i}: acquire and commit, nothing else");
    }
    assert!(m.read("wf").await.unwrap().is_none(), "the finishing commit applied the retention");
    assert!(m.lock("wf").await.unwrap().is_some(), "and released the lease");
}

#[tokio::test]
async fn a_redelivery_is_answered_by_the_acquire_without_a_commit() {
    let dir = tempfile::tempdir().unwrap();
    let m = store(&dir.path().join("r.db"), LONG, Retention::Keep);
    let consumed = event("e-1", "wf");
    let produced: Vec<Event> = vec![event("p-1", "wf")];
    let entry = JournalEntry { at: SystemTime::now(), consumed: Some(&consumed), produced: &produced };
    m.write("wf", &"one".into(), None, None, &WriteMeta { entry: Some(entry), ..WriteMeta::new("wf", "s") })
        .await
        .unwrap();
    let before = m.stats().operations;
    let again = m.acquire("wf", key("e-1"), true).await.unwrap().expect("free");
    assert_eq!(m.stats().operations - before, 1, "one writer operation");
    assert_eq!(again.produced, Some(produced));
    m.unlock(&again.lease.expect("lease")).await.unwrap();
}

#[tokio::test]
async fn a_write_clears_the_claim_and_claims_use_the_store_clock() {
    let dir = tempfile::tempdir().unwrap();
    let m = store(&dir.path().join("c.db"), LONG, Retention::Keep);
    let past = SystemTime::now() - Duration::from_secs(5);
    let meta = WriteMeta { wake_at: Some(past), ..WriteMeta::new("wf", "s") };
    m.write("wf", &"one".into(), None, None, &meta).await.unwrap();
    assert_eq!(m.claim_due(10, LONG).await.unwrap().len(), 1);
    assert!(m.claim_due(10, LONG).await.unwrap().is_empty(), "claimed");
    m.write("wf", &"two".into(), Some(1), None, &meta).await.unwrap();
    assert_eq!(m.claim_due(10, LONG).await.unwrap().len(), 1, "the write ended the claim");
}
