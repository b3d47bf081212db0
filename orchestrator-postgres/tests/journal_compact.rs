//! The compact journal on PostgreSQL: a step that read its workflow writes its record as a delta
//! against what it read, so a workflow whose record grows (a resumable collecting responses)
//! keeps a journal that grows with what each step added; every version reads back exactly, a
//! version whose previous one has no journal row starts from a snapshot, and corrupt bytes give
//! a typed error.

mod common;

use std::time::{Duration, SystemTime};

use orchestrator::event::Event;
use orchestrator::memory::{
    Commit, EventKey, Journal, JournalEntry, Memory, MemoryError, MemoryExt, Retention, WriteMeta,
};
use orchestrator_postgres::PgStore;

use common::{config, database_url, drop_schema, fresh_schema, run_sql};

/// The workflow's record: one entry per response collected, each about 120 bytes.
type Record = Vec<String>;

fn response(n: usize) -> Event {
    Event::builder()
        .id(format!("response-{n}"))
        .source("com.example.service")
        .r#type("evt.service.done")
        .to("com.example.collector")
        .subject("collector")
        .data_json(serde_json::json!({ "n": n }))
        .build()
        .expect("a valid event")
}

fn collected(n: usize) -> Record {
    (1..=n).map(|i| format!("response {i}: {}", "the value the service answered ".repeat(4))).collect()
}

/// One step as the runtime takes it: acquire (a read), then a commit over the version read,
/// journaling the event consumed and `produced`.
async fn step(
    store: &PgStore<Record>,
    id: &str,
    consumed: &Event,
    record: Record,
    produced: &[Event],
) -> u64 {
    let acquired =
        store.acquire(id, EventKey::of(consumed), false).await.expect("acquire").expect("acquired");
    let prev = acquired.stored.map(|s| s.version);
    let entry = JournalEntry { at: SystemTime::now(), consumed: Some(consumed), produced };
    let meta = WriteMeta { entry: Some(entry), ..WriteMeta::new(id, "com.example.collector") };
    store.commit(Commit::new(id, record, prev, meta)).await.expect("commit")
}

/// `(version, is a delta, bytes)` of each journal row of `id`.
async fn rows(url: &str, schema: &str, id: &str) -> Vec<(i64, bool, i32)> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.expect("connect");
    let task = tokio::spawn(connection);
    let rows = client
        .query(
            &format!(
                "SELECT version, get_byte(record_bytes, 0) & 1 = 1, octet_length(record_bytes) \
                 FROM \"{schema}\".journal WHERE wf = $1 ORDER BY version"
            ),
            &[&id],
        )
        .await
        .expect("the journal rows");
    drop(client);
    let _ = task.await;
    rows.iter().map(|r| (r.get(0), r.get(1), r.get(2))).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_growing_record_is_journaled_as_deltas_and_every_version_reads_back() {
    let Some(url) = database_url() else { return };
    let schema = fresh_schema();
    let store: PgStore<Record> =
        PgStore::open(config(&url, &schema, Duration::from_secs(30), Retention::Keep)).await.expect("open");
    let id = "collector";
    let steps = 120;
    for n in 1..=steps {
        let produced = if n % 10 == 0 { vec![response(10_000 + n)] } else { Vec::new() };
        let version = step(&store, id, &response(n), collected(n), &produced).await;
        assert_eq!(version, n as u64);
    }

    let journal = rows(&url, &schema, id).await;
    assert_eq!(journal.len(), steps);
    assert!(!journal[0].1, "the first row is a snapshot");
    let deltas = journal.iter().filter(|r| r.1).count();
    assert!(deltas > steps * 3 / 4, "most rows are deltas: {deltas} of {steps}");
    // Linear in the responses: the whole record stored at every step would take
    // sum(n × ~140 bytes) ≈ 1 MB here; deltas and geometric snapshots take a few per cent.
    let stored: i64 = journal.iter().map(|r| i64::from(r.2)).sum();
    let naive: usize = (1..=steps).map(|n| serde_json::to_string(&collected(n)).expect("json").len()).sum();
    assert!((stored as usize) * 10 < naive, "the journal's records take {stored} bytes, whole ones {naive}");

    // Every version reads back exactly, from the start and from any point (a delta's reading
    // starts at the snapshot before it).
    let history = store.history(id, 0, 1_000).await.expect("history");
    assert_eq!(history.len(), steps);
    for (i, entry) in history.iter().enumerate() {
        let n = i + 1;
        assert_eq!(entry.version, n as u64);
        assert_eq!(entry.record, collected(n), "the record at version {n}");
        assert_eq!(entry.consumed.as_ref().map(Event::id), Some(response(n).id()));
    }
    for after in [1, 37, 64, 99, 118] {
        let page = store.history(id, after, 5).await.expect("a page");
        let versions: Vec<u64> = page.iter().map(|e| e.version).collect();
        let expected: Vec<u64> = (after + 1..=(after + 5).min(steps as u64)).collect();
        assert_eq!(versions, expected);
        for entry in page {
            assert_eq!(entry.record, collected(entry.version as usize), "version {}", entry.version);
        }
    }
    for version in [1, 2, 50, 77, steps as u64] {
        let entry = store.entry(id, version).await.expect("entry").expect("there");
        assert_eq!(entry.record, collected(version as usize), "entry {version}");
    }
    // Idempotent redelivery: the journal answers an event consumed before with its products.
    let ids =
        |events: Option<Vec<Event>>| events.map(|e| e.iter().map(|e| e.id().to_owned()).collect::<Vec<_>>());
    let answered = store.produced(id, EventKey::of(&response(30))).await.expect("produced");
    assert_eq!(ids(answered), Some(vec!["response-10030".to_owned()]));
    let again = store.acquire(id, EventKey::of(&response(40)), false).await.expect("acquire").expect("there");
    assert_eq!(ids(again.produced), Some(vec!["response-10040".to_owned()]), "acquire reads the answer too");
    drop(store);
    drop_schema(&url, &schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_without_a_journal_row_or_a_read_is_followed_by_a_snapshot() {
    let Some(url) = database_url() else { return };
    let schema = fresh_schema();
    let store: PgStore<Record> =
        PgStore::open(config(&url, &schema, Duration::from_secs(30), Retention::Keep)).await.expect("open");
    let id = "gappy";
    step(&store, id, &response(1), collected(1), &[]).await;
    step(&store, id, &response(2), collected(2), &[]).await;
    // A write without a journal entry (version 3 has no row).
    store
        .write(id, &collected(3), Some(2), None, &WriteMeta::new(id, "com.example.collector"))
        .await
        .expect("write");
    step(&store, id, &response(4), collected(4), &[]).await;
    step(&store, id, &response(5), collected(5), &[]).await;
    // A journaled write that did not read first.
    let entry = JournalEntry { at: SystemTime::now(), consumed: Some(&response(6)), produced: &[] };
    let meta = WriteMeta { entry: Some(entry), ..WriteMeta::new(id, "com.example.collector") };
    store.write(id, &collected(6), Some(5), None, &meta).await.expect("write");
    step(&store, id, &response(7), collected(7), &[]).await;

    let journal: Vec<(i64, bool)> = rows(&url, &schema, id).await.iter().map(|r| (r.0, r.1)).collect();
    assert_eq!(
        journal,
        [(1, false), (2, true), (4, false), (5, true), (6, false), (7, true)],
        "snapshots after a version with no row and for a write that did not read"
    );
    let history = store.history(id, 0, 100).await.expect("history");
    let read: Vec<(u64, Record)> = history.into_iter().map(|e| (e.version, e.record)).collect();
    let expected: Vec<(u64, Record)> =
        [1, 2, 4, 5, 6, 7].into_iter().map(|v| (v, collected(v as usize))).collect();
    assert_eq!(read, expected);
    assert_eq!(store.entry(id, 5).await.expect("entry").map(|e| e.record), Some(collected(5)));
    assert!(store.entry(id, 3).await.expect("entry").is_none(), "version 3 has no journal row");

    // Corrupt bytes (written by hand): a typed, permanent error, not a panic.
    run_sql(
        &url,
        &format!(
            "UPDATE \"{schema}\".journal SET record_bytes = '\\x0102' WHERE wf = '{id}' AND version = 4"
        ),
    )
    .await
    .expect("corrupt a row");
    for read in [store.history(id, 0, 100).await.map(|_| ()), store.entry(id, 5).await.map(|_| ())] {
        match read {
            Err(e @ MemoryError::Backend { transient: false, .. }) => {
                assert!(e.to_string().contains("journal") || format!("{e:?}").contains("Journal"), "{e:?}");
            }
            other => panic!("a corrupt row reads as a permanent error, not {other:?}"),
        }
    }
    drop(store);
    drop_schema(&url, &schema).await;
}
