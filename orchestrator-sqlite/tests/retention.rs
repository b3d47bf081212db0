//! Every retention policy, including the archive.

mod common;

use std::time::{Duration, SystemTime};

use common::{event, key, store};
use orchestrator::memory::{Journal, JournalEntry, Memory, MemoryExt, WriteMeta};
use orchestrator_sqlite::Retention;

const LONG: Duration = Duration::from_secs(60);

async fn finished_workflow(m: &orchestrator_sqlite::SqliteMemory<String>, id: &str) {
    let consumed = event(&format!("{id}-in"), id);
    let produced = [event(&format!("{id}-out"), id)];
    let meta = WriteMeta {
        entry: Some(JournalEntry { at: SystemTime::now(), consumed: Some(&consumed), produced: &produced }),
        ..WriteMeta::new(id, "src")
    };
    let v1 = m.write(id, &"running".into(), None, None, &meta).await.expect("write");
    m.write(id, &"done".into(), Some(v1), None, &WriteMeta::new(id, "src")).await.expect("write");
}

#[tokio::test]
async fn keep_keeps_record_and_journal() {
    let dir = tempfile::tempdir().unwrap();
    let m = store(&dir.path().join("k.db"), LONG, Retention::Keep);
    finished_workflow(&m, "wf").await;
    m.cleanup("wf").await.unwrap();
    assert_eq!(m.read("wf").await.unwrap().map(|s| s.version), Some(2));
    assert_eq!(m.history("wf", 0, 10).await.unwrap().len(), 1);
    assert!(m.produced("wf", key("wf-in")).await.unwrap().is_some());
}

#[tokio::test]
async fn remove_deletes_record_and_journal_but_fencing_continues() {
    let dir = tempfile::tempdir().unwrap();
    let m = store(&dir.path().join("r.db"), LONG, Retention::Remove);
    let first = m.lock("wf").await.unwrap().unwrap();
    finished_workflow(&m, "wf").await;
    m.unlock(&first).await.unwrap();
    m.cleanup("wf").await.unwrap();
    assert!(m.read("wf").await.unwrap().is_none());
    assert!(m.history("wf", 0, 10).await.unwrap().is_empty());
    assert!(m.produced("wf", key("wf-in")).await.unwrap().is_none());
    let second = m.lock("wf").await.unwrap().unwrap();
    assert!(second.token > first.token, "tokens grow after the workflow's rows are gone");
    // The id can start again from version 1.
    assert_eq!(
        m.write("wf", &"again".into(), None, Some(&second), &WriteMeta::new("wf", "s")).await.unwrap(),
        1
    );
}

#[tokio::test]
async fn remove_after_keeps_until_the_delay_has_passed() {
    let dir = tempfile::tempdir().unwrap();
    let m = store(&dir.path().join("ra.db"), LONG, Retention::RemoveAfter(Duration::from_millis(50)));
    finished_workflow(&m, "wf").await;
    finished_workflow(&m, "live").await;
    m.cleanup("wf").await.unwrap();
    assert!(m.read("wf").await.unwrap().is_some(), "kept until the delay has passed");
    tokio::time::sleep(Duration::from_millis(80)).await;
    assert_eq!(m.sweep().await.unwrap(), 1, "an explicit sweep removes what is due");
    assert!(m.read("wf").await.unwrap().is_none(), "removed after the delay");
    assert!(m.history("wf", 0, 10).await.unwrap().is_empty(), "with its journal");
    assert!(m.read("live").await.unwrap().is_some(), "other workflows stay");

    // Any later cleanup sweeps too.
    finished_workflow(&m, "wf2").await;
    m.cleanup("wf2").await.unwrap();
    tokio::time::sleep(Duration::from_millis(80)).await;
    m.cleanup("unrelated").await.unwrap();
    assert!(m.read("wf2").await.unwrap().is_none());
}

#[tokio::test]
async fn archive_moves_record_and_journal() {
    let dir = tempfile::tempdir().unwrap();
    let m = store(&dir.path().join("a.db"), LONG, Retention::Archive);
    finished_workflow(&m, "wf").await;
    m.cleanup("wf").await.unwrap();
    assert!(m.read("wf").await.unwrap().is_none(), "no longer live");
    assert!(m.history("wf", 0, 10).await.unwrap().is_empty());
    let archived = m.archived("wf").await.unwrap().unwrap();
    assert_eq!((archived.record.as_str(), archived.version), ("done", 2));
    let journal = m.archived_history("wf", 0, 10).await.unwrap();
    assert_eq!(journal.len(), 1);
    assert_eq!(journal[0].consumed.as_ref().map(|e| e.id()), Some("wf-in"));
    assert_eq!(journal[0].produced[0].id(), "wf-out");

    // Archiving an unknown workflow is a no-op; a second run of the same id replaces the archive.
    m.cleanup("unknown").await.unwrap();
    assert!(m.archived("unknown").await.unwrap().is_none());
    m.write("wf", &"second run".into(), None, None, &WriteMeta::new("wf", "s")).await.unwrap();
    m.cleanup("wf").await.unwrap();
    let archived = m.archived("wf").await.unwrap().unwrap();
    assert_eq!((archived.record.as_str(), archived.version), ("second run", 1));
    assert!(m.archived_history("wf", 0, 10).await.unwrap().is_empty());
}
