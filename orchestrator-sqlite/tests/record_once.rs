//! A workflow's latest record is stored once: in its journal row when the write has one (the
//! workflow's row then holds an empty blob), in the workflow's row otherwise. Reads without the
//! record cache (another store on the file), acquires, history and archives give the records
//! written.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::SystemTime;

use common::{event, key};
use orchestrator::memory::{Commit, Journal, JournalEntry, Memory, MemoryExt, WriteMeta};
use orchestrator_sqlite::{Retention, SqliteConfig, SqliteMemory};
use serde_json::{Value, json};

fn open(path: &std::path::Path) -> SqliteMemory<Value> {
    SqliteConfig::new(path).retention(Retention::Archive).open().unwrap()
}

/// The type and length of the workflow row's `record` column.
fn record_column(path: &std::path::Path, id: &str) -> (String, i64) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.query_row("SELECT typeof(record), length(record) FROM workflows WHERE id = ?1", [id], |r| {
        Ok((r.get(0)?, r.get(1)?))
    })
    .unwrap()
}

fn record(n: usize) -> Value {
    json!({ "step": n, "items": (0..n).map(|i| format!("item {i} of a record that grows")).collect::<Vec<_>>() })
}

#[tokio::test]
async fn the_record_is_kept_by_the_journal_row_or_else_by_the_workflow_row() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("once.db");
    let m = open(&path);
    let events: Vec<_> = (1..=5).map(|i| event(&format!("e-{i}"), "wf")).collect();
    let journaled = |i: usize| WriteMeta {
        entry: Some(JournalEntry { at: SystemTime::now(), consumed: Some(&events[i - 1]), produced: &[] }),
        ..WriteMeta::new("wf", "com.test.orc")
    };
    // Versions 1 and 2 journaled, 3 not, 4 journaled (its delta's base is in the row), 5 too.
    m.write("wf", &record(1), None, None, &journaled(1)).await.unwrap();
    assert_eq!(record_column(&path, "wf"), ("blob".to_owned(), 0), "the journal row holds it");
    m.write("wf", &record(2), Some(1), None, &journaled(2)).await.unwrap();
    m.write("wf", &record(3), Some(2), None, &WriteMeta::new("wf", "com.test.orc")).await.unwrap();
    let (kind, length) = record_column(&path, "wf");
    assert!(kind == "blob" && length > 0, "no journal row: the workflow's row holds it");
    m.write("wf", &record(4), Some(3), None, &journaled(4)).await.unwrap();
    m.write("wf", &record(5), Some(4), None, &journaled(5)).await.unwrap();
    assert_eq!(record_column(&path, "wf"), ("blob".to_owned(), 0));

    // Another store on the file has no cached record: it rebuilds them from the journal.
    let other = open(&path);
    assert_eq!(other.read("wf").await.unwrap().map(|s| (s.record, s.version)), Some((record(5), 5)));
    let acquired = other.acquire("wf", key("e-9"), true).await.unwrap().unwrap();
    assert_eq!(acquired.stored.map(|s| (s.record.as_ref().clone(), s.version)), Some((record(5), 5)));
    other.unlock(&acquired.lease.unwrap()).await.unwrap();
    let history = other.history("wf", 0, 10).await.unwrap();
    let versions: Vec<(u64, Value)> = history.into_iter().map(|e| (e.version, e.record)).collect();
    assert_eq!(versions, [(1, record(1)), (2, record(2)), (4, record(4)), (5, record(5))]);
    // A redelivery is still answered from the journal.
    let redelivered = other.acquire("wf", key("e-4"), false).await.unwrap().unwrap();
    assert_eq!(redelivered.produced.map(|p| p.len()), Some(0), "e-4 was consumed at version 4");

    // The finishing commit archives the workflow: its record is rebuilt from the archived journal.
    let done = WriteMeta {
        entry: Some(JournalEntry { at: SystemTime::now(), consumed: None, produced: &[] }),
        ..WriteMeta::new("wf", "com.test.orc")
    };
    other.commit(Commit { finished: true, ..Commit::new("wf", record(6), Some(5), done) }).await.unwrap();
    drop(other);
    drop(m);
    let reopened = open(&path);
    assert!(reopened.read("wf").await.unwrap().is_none());
    assert_eq!(reopened.archived("wf").await.unwrap().map(|s| (s.record, s.version)), Some((record(6), 6)));
}

/// The writer keeps the record of each workflow's latest journal row to diff the next one
/// against. When another store on the file removes the workflow and makes it again (the same
/// row number, the same versions, other records), this store's next row is a delta against the
/// journal's record, not against what it wrote before: every version reads back as written.
#[tokio::test]
async fn a_workflow_made_again_by_another_store_is_diffed_against_its_journal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("again.db");
    let config = |retention| SqliteConfig::new(&path).retention(retention);
    let m: SqliteMemory<Value> = config(Retention::Keep).open().unwrap();
    let other: SqliteMemory<Value> = config(Retention::Remove).open().unwrap();
    let events: Vec<_> = (1..=5).map(|i| event(&format!("e-{i}"), "wf")).collect();
    let journaled = |i: usize| WriteMeta {
        entry: Some(JournalEntry { at: SystemTime::now(), consumed: Some(&events[i]), produced: &[] }),
        ..WriteMeta::new("wf", "com.test.orc")
    };
    let wide = |who: &str, step: usize| json!({ "who": who, "step": step, "padding": record(6) });
    m.write("wf", &wide("a", 1), None, None, &journaled(0)).await.unwrap();
    m.write("wf", &wide("a", 2), Some(1), None, &journaled(1)).await.unwrap();
    other.cleanup("wf").await.unwrap();
    other.write("wf", &wide("b", 1), None, None, &journaled(2)).await.unwrap();
    other.write("wf", &wide("b", 2), Some(1), None, &journaled(3)).await.unwrap();
    // A delta against `m`'s own version 2 ("a") would only change the step.
    m.write("wf", &wide("a", 3), Some(2), None, &journaled(4)).await.unwrap();

    let history = SqliteConfig::new(&path).open::<Value>().unwrap().history("wf", 0, 10).await.unwrap();
    let records: Vec<_> = history.into_iter().map(|e| (e.version, e.record)).collect();
    assert_eq!(records, [(1, wide("b", 1)), (2, wide("b", 2)), (3, wide("a", 3))]);
}
