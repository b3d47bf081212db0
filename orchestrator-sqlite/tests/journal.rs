//! The journal: written with the state in one transaction, `produced` idempotency, history,
//! children and parents, and corrupt rows.

mod common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{event, key, store};
use orchestrator::memory::{
    EventKey, Journal, JournalEntry, Materialized, Memory, MemoryError, MemoryExt, WriteMeta,
};
use orchestrator_sqlite::{Retention, SqliteError};

const LONG: Duration = Duration::from_secs(60);

fn at(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(1_700_000_000_000 + ms)
}

#[tokio::test]
async fn the_journal_is_written_with_the_state_and_a_failed_cas_appends_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let m = store(&dir.path().join("j.db"), LONG, Retention::Keep);
    let consumed = event("e-1", "wf");
    let produced = [event("p-1", "wf"), event("p-2", "wf")];
    let meta = WriteMeta {
        entry: Some(JournalEntry { at: at(1), consumed: Some(&consumed), produced: &produced }),
        ..WriteMeta::new("wf", "com.test.orc")
    };
    assert_eq!(m.write("wf", &"one".into(), None, None, &meta).await.unwrap(), 1);

    // A failed compare-and-swap appends no journal row (and changes nothing).
    let second = event("e-2", "wf");
    let failing = WriteMeta {
        entry: Some(JournalEntry { at: at(2), consumed: Some(&second), produced: &produced }),
        ..WriteMeta::new("wf", "com.test.orc")
    };
    assert!(matches!(
        m.write("wf", &"bad".into(), Some(5), None, &failing).await,
        Err(MemoryError::Conflict { expected: Some(5), found: Some(1), .. })
    ));
    // So does a write under a lease that is not current.
    let lease = m.lock("wf").await.unwrap().unwrap();
    let stale = orchestrator::memory::Lease { token: lease.token + 100, ..lease.clone() };
    assert!(matches!(
        m.write("wf", &"bad".into(), Some(1), Some(&stale), &failing).await,
        Err(MemoryError::StaleLease { .. })
    ));
    let history = m.history("wf", 0, 10).await.unwrap();
    assert_eq!(history.len(), 1, "failed writes must not be journaled");
    assert!(m.produced("wf", key("e-2")).await.unwrap().is_none());

    // The journal row carries the record, the consumed and the produced events.
    let first = &history[0];
    assert_eq!((first.version, first.at, first.record.as_str()), (1, at(1), "one"));
    assert_eq!(first.consumed.as_ref(), Some(&consumed));
    assert_eq!(first.produced, produced);

    // A timer wake-up (nothing consumed) is journaled too.
    let wake = WriteMeta {
        entry: Some(JournalEntry { at: at(3), consumed: None, produced: &[] }),
        ..WriteMeta::new("wf", "com.test.orc")
    };
    assert_eq!(m.write("wf", &"two".into(), Some(1), Some(&lease), &wake).await.unwrap(), 2);
    let entry = m.entry("wf", 2).await.unwrap().unwrap();
    assert_eq!((entry.consumed, entry.produced.len(), entry.record.as_str()), (None, 0, "two"));
    assert!(m.entry("wf", 3).await.unwrap().is_none());
    m.unlock(&lease).await.unwrap();
}

#[tokio::test]
async fn produced_answers_a_redelivered_event() {
    let dir = tempfile::tempdir().unwrap();
    let m = store(&dir.path().join("p.db"), LONG, Retention::Keep);
    let consumed = event("in-1", "wf");
    let produced = vec![event("out-1", "wf")];
    let meta = WriteMeta {
        entry: Some(JournalEntry { at: at(1), consumed: Some(&consumed), produced: &produced }),
        ..WriteMeta::new("wf", "com.test.orc")
    };
    m.write("wf", &"s".into(), None, None, &meta).await.unwrap();
    assert_eq!(m.produced("wf", key("in-1")).await.unwrap(), Some(produced));
    assert_eq!(m.produced("wf", key("unknown")).await.unwrap(), None);
    assert_eq!(m.produced("other", key("in-1")).await.unwrap(), None, "per workflow");
    let elsewhere = EventKey { source: "com.test.elsewhere", id: "in-1" };
    assert_eq!(
        m.produced("wf", elsewhere).await.unwrap(),
        None,
        "the same id from another source is another event"
    );
    // A write without a journal entry journals nothing.
    m.write("plain", &"s".into(), None, None, &WriteMeta::new("plain", "src")).await.unwrap();
    assert!(m.history("plain", 0, 10).await.unwrap().is_empty());
}

#[tokio::test]
async fn history_is_paginated_oldest_first() {
    let dir = tempfile::tempdir().unwrap();
    let m = store(&dir.path().join("h.db"), LONG, Retention::Keep);
    let mut prev = None;
    for i in 0..10u64 {
        let consumed = event(&format!("e-{i}"), "wf");
        let meta = WriteMeta {
            entry: Some(JournalEntry { at: at(i), consumed: Some(&consumed), produced: &[] }),
            ..WriteMeta::new("wf", "com.test.orc")
        };
        prev = Some(m.write("wf", &format!("r{i}"), prev, None, &meta).await.unwrap());
    }
    let mut seen = Vec::new();
    let mut after = 0;
    loop {
        let page = m.history("wf", after, 3).await.unwrap();
        if page.is_empty() {
            break;
        }
        assert!(page.len() <= 3);
        after = page.last().unwrap().version;
        seen.extend(page.into_iter().map(|e| (e.version, e.record)));
    }
    let expected: Vec<_> = (0..10u64).map(|i| (i + 1, format!("r{i}"))).collect();
    assert_eq!(seen, expected);
    assert!(m.history("wf", 0, 0).await.unwrap().is_empty());
    assert!(matches!(m.history("", 0, 1).await, Err(MemoryError::InvalidId { .. })));
}

#[tokio::test]
async fn children_in_start_order_and_parent() {
    let dir = tempfile::tempdir().unwrap();
    let m = store(&dir.path().join("c.db"), LONG, Retention::Keep);
    let root = WriteMeta { parent_subject: Materialized::Resolved(None), ..WriteMeta::new("root", "src") };
    m.write("root", &"r".into(), None, None, &root).await.unwrap();
    for child in ["c-zeta", "c-alpha", "c-mid"] {
        let meta = WriteMeta {
            parent_subject: Materialized::Resolved(Some("root")),
            initiator: Materialized::Resolved("root-initiator"),
            ..WriteMeta::new(child, "src")
        };
        m.write(child, &"c".into(), None, None, &meta).await.unwrap();
    }
    // A later write that does not know the parent yet (Pending) keeps it.
    m.write("c-zeta", &"c2".into(), Some(1), None, &WriteMeta::new("c-zeta", "src")).await.unwrap();
    assert_eq!(m.children("root").await.unwrap(), vec!["c-zeta", "c-alpha", "c-mid"]);
    assert_eq!(m.parent("c-zeta").await.unwrap().as_deref(), Some("root"));
    assert_eq!(m.parent("root").await.unwrap(), None);
    assert_eq!(m.parent("unknown").await.unwrap(), None);
    assert!(m.children("c-mid").await.unwrap().is_empty());
}

#[tokio::test]
async fn claims_follow_the_store_clock_and_sub_millisecond_wake_ups_are_never_early() {
    let dir = tempfile::tempdir().unwrap();
    let m = store(&dir.path().join("d.db"), LONG, Retention::Keep);
    let claim = Duration::from_secs(60);
    let wake = SystemTime::now() + Duration::from_millis(200) + Duration::from_micros(500);
    let meta = WriteMeta { wake_at: Some(wake), ..WriteMeta::new("w", "src") };
    m.write("w", &"x".into(), None, None, &meta).await.unwrap();
    assert!(m.claim_due(10, claim).await.unwrap().is_empty(), "not due before its time");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(m.claim_due(0, claim).await.unwrap().is_empty(), "a limit of 0 claims nothing");
    let due = m.claim_due(10, claim).await.unwrap();
    assert_eq!(due.len(), 1);
    assert!(due[0].at >= wake, "stored rounded up: {:?} < {wake:?}", due[0].at);
    assert!(m.claim_due(10, claim).await.unwrap().is_empty(), "claimed for a minute");
    // The claim is stored: another store on the file does not get it either.
    let other = store(&dir.path().join("d.db"), LONG, Retention::Keep);
    assert!(other.claim_due(10, claim).await.unwrap().is_empty(), "claims hold across stores");
}

#[tokio::test]
async fn a_corrupt_record_is_a_backend_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.db");
    let m = store(&path, LONG, Retention::Keep);
    let consumed = event("e-1", "wf");
    let meta = WriteMeta {
        entry: Some(JournalEntry { at: at(1), consumed: Some(&consumed), produced: &[] }),
        ..WriteMeta::new("wf", "src")
    };
    m.write("wf", &"ok".into(), None, None, &meta).await.unwrap();
    {
        let raw = rusqlite::Connection::open(&path).unwrap();
        raw.busy_timeout(Duration::from_secs(5)).unwrap();
        raw.execute("UPDATE workflows SET record = '{not json' WHERE id = 'wf'", []).unwrap();
        // The row's events (stored plainly: tag 0, then the JSON pair), with a produced event
        // that is not one.
        let events = [&b"\x00[null,"[..], br#"[{"id": 1}]]"#].concat();
        raw.execute(
            "UPDATE journal SET events = ?1 WHERE wf = (SELECT seq FROM workflows WHERE id = 'wf')",
            [events],
        )
        .unwrap();
    }
    for err in [
        m.read("wf").await.map(|_| ()).unwrap_err(),
        m.produced("wf", key("e-1")).await.map(|_| ()).unwrap_err(),
        m.history("wf", 0, 10).await.map(|_| ()).unwrap_err(),
    ] {
        let MemoryError::Backend { id, source, transient } = &err else {
            panic!("expected Backend, got {err:?}")
        };
        assert_eq!(id, "wf");
        assert!(!transient && !err.is_transient(), "a corrupt row stays corrupt: {err}");
        assert!(matches!(source.downcast_ref::<SqliteError>(), Some(SqliteError::Decode { .. })), "{source}");
        let message = err.to_string();
        assert!(message.contains("corrupt or not of the expected type"), "{message}");
    }
    // A journaled record that is not an encoded value at all: a permanent, typed error too.
    {
        let raw = rusqlite::Connection::open(&path).unwrap();
        raw.busy_timeout(Duration::from_secs(5)).unwrap();
        raw.execute(
            "UPDATE journal SET record = X'80' WHERE wf = (SELECT seq FROM workflows WHERE id = 'wf')",
            [],
        )
        .unwrap();
    }
    let err = m.entry("wf", 1).await.map(|_| ()).unwrap_err();
    let MemoryError::Backend { source, .. } = &err else { panic!("expected Backend, got {err:?}") };
    assert!(!err.is_transient(), "{err}");
    assert!(matches!(source.downcast_ref::<SqliteError>(), Some(SqliteError::Journal { .. })), "{source}");
    // A record of another type is reported the same way.
    let typed: orchestrator_sqlite::SqliteMemory<u64> =
        orchestrator_sqlite::SqliteConfig::new(&path).open().unwrap();
    let other = orchestrator_sqlite::SqliteConfig::new(&path).open::<String>().unwrap();
    other.write("s", &"text".into(), None, None, &WriteMeta::new("s", "src")).await.unwrap();
    assert!(matches!(typed.read("s").await, Err(MemoryError::Backend { .. })));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_database_is_a_transient_error_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("busy.db");
    let m = orchestrator_sqlite::SqliteConfig::new(&path)
        .busy_timeout(Duration::from_millis(50))
        .open::<String>()
        .unwrap();
    m.write("wf", &"one".into(), None, None, &WriteMeta::new("wf", "src")).await.unwrap();
    let raw = rusqlite::Connection::open(&path).unwrap();
    // Another process holds the write lock.
    raw.execute_batch("BEGIN IMMEDIATE").unwrap();
    let err = m.write("wf", &"two".into(), Some(1), None, &WriteMeta::new("wf", "src")).await.unwrap_err();
    assert!(matches!(err, MemoryError::Backend { transient: true, .. }), "{err:?}");
    assert!(err.is_transient());
    raw.execute_batch("ROLLBACK").unwrap();
    assert_eq!(m.read("wf").await.unwrap().map(|s| s.version), Some(1), "nothing was written");
    assert_eq!(m.write("wf", &"two".into(), Some(1), None, &WriteMeta::new("wf", "src")).await.unwrap(), 2);
}

/// The raw journal rows of `id`: (version, whether its record is stored as a snapshot).
fn stored_rows(path: &std::path::Path, id: &str) -> Vec<(u64, bool)> {
    let raw = rusqlite::Connection::open(path).expect("the raw journal");
    raw.busy_timeout(Duration::from_secs(5)).expect("the raw journal");
    raw.prepare(
        "SELECT j.version, hex(substr(j.record, 1, 1)) IN ('00', '02', '06') FROM journal j \
         JOIN workflows w ON w.seq = j.wf WHERE w.id = ?1 ORDER BY j.version",
    )
    .expect("the raw journal")
    .query_map([id], |r| Ok((r.get::<_, i64>(0)?.unsigned_abs(), r.get(1)?)))
    .expect("the raw journal")
    .collect::<Result<_, _>>()
    .expect("the raw journal")
}

#[tokio::test]
async fn a_growing_record_is_journaled_as_deltas_and_every_version_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.db");
    let m: orchestrator_sqlite::SqliteMemory<Vec<String>> =
        orchestrator_sqlite::SqliteConfig::new(&path).retention(Retention::Archive).open().unwrap();
    let mut record = Vec::new();
    let mut written = Vec::new();
    let mut prev = None;
    for i in 0..60u64 {
        record.push(format!("response number {i} with some padding"));
        // Version 30 is written without a journal entry: the next entry cannot be a delta.
        let entry = (i != 29).then(|| JournalEntry { at: at(i), consumed: None, produced: &[] });
        let meta = WriteMeta { entry, ..WriteMeta::new("wf", "src") };
        prev = Some(m.write("wf", &record, prev, None, &meta).await.unwrap());
        if i != 29 {
            written.push((i + 1, record.clone()));
        }
    }
    let rows = stored_rows(&path, "wf");
    assert_eq!(rows.len(), 59);
    let snapshots: Vec<u64> = rows.iter().filter(|(_, s)| *s).map(|(v, _)| *v).collect();
    assert!(
        snapshots.contains(&1) && snapshots.contains(&31),
        "the first row and the one after a gap: {snapshots:?}"
    );
    assert!(snapshots.len() < 15, "mostly deltas: {snapshots:?}");
    // Every version by entry, and every page size (pages start at deltas too).
    for (version, record) in &written {
        let entry = m.entry("wf", *version).await.unwrap().expect("journaled");
        assert_eq!((entry.version, &entry.record), (*version, record));
    }
    assert!(m.entry("wf", 30).await.unwrap().is_none(), "not journaled");
    for page in [1, 4, 7, 100] {
        let mut seen = Vec::new();
        let mut after = 0;
        loop {
            let entries = m.history("wf", after, page).await.unwrap();
            let Some(last) = entries.last() else { break };
            after = last.version;
            seen.extend(entries.into_iter().map(|e| (e.version, e.record)));
        }
        assert_eq!(seen, written, "pages of {page}");
    }
    // Archived as stored: the archive reads back the same history.
    let finish = orchestrator::memory::Commit {
        finished: true,
        ..orchestrator::memory::Commit::new(
            "wf",
            record.clone(),
            prev,
            WriteMeta {
                entry: Some(JournalEntry { at: at(99), consumed: None, produced: &[] }),
                ..WriteMeta::new("wf", "src")
            },
        )
    };
    m.commit(finish).await.unwrap();
    written.push((61, record));
    let archived = m.archived_history("wf", 40, 100).await.unwrap();
    let archived: Vec<_> = archived.into_iter().map(|e| (e.version, e.record)).collect();
    assert_eq!(archived, written[39..], "from a delta in the archive");
}
