//! Schema creation, migrations, reopening and refusing newer files.

mod common;

use std::time::Duration;

use common::store;
use orchestrator::memory::{Memory, MemoryExt, WriteMeta};
use orchestrator_sqlite::{OpenError, Retention, SCHEMA_VERSION, SqliteConfig, SqliteMemory};

const LONG: Duration = Duration::from_secs(60);

fn user_version(path: &std::path::Path) -> i64 {
    let raw = rusqlite::Connection::open(path).expect("open");
    raw.query_row("PRAGMA user_version", [], |r| r.get(0)).expect("user_version")
}

#[tokio::test]
async fn a_new_file_gets_the_current_schema_and_can_be_opened_twice() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.db");
    let a = store(&path, LONG, Retention::Keep);
    assert_eq!(user_version(&path), SCHEMA_VERSION);
    let b = store(&path, LONG, Retention::Keep);
    a.write("wf", &"from a".into(), None, None, &WriteMeta::new("wf", "s")).await.unwrap();
    assert_eq!(b.read("wf").await.unwrap().map(|s| s.record), Some("from a".to_owned()));
    let journal_mode: String = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(journal_mode, "wal");
}

#[tokio::test]
async fn data_survives_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("re.db");
    let token = {
        let m = store(&path, LONG, Retention::Keep);
        let lease = m.lock("wf").await.unwrap().unwrap();
        let v = m.write("wf", &"one".into(), None, Some(&lease), &WriteMeta::new("wf", "s")).await.unwrap();
        m.write("wf", &"two".into(), Some(v), Some(&lease), &WriteMeta::new("wf", "s")).await.unwrap();
        m.unlock(&lease).await.unwrap();
        lease.token
    };
    let m = store(&path, LONG, Retention::Keep);
    let stored = m.read("wf").await.unwrap().unwrap();
    assert_eq!((stored.record.as_str(), stored.version), ("two", 2));
    let lease = m.lock("wf").await.unwrap().unwrap();
    assert!(lease.token > token, "the fencing counter is persistent");
}

#[test]
fn a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.db");
    drop(SqliteMemory::<String>::open_path(&path).unwrap());
    rusqlite::Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    match SqliteConfig::new(&path).open::<String>() {
        Err(OpenError::NewerSchema { found, supported, .. }) => {
            assert_eq!((found, supported), (SCHEMA_VERSION + 1, SCHEMA_VERSION));
        }
        other => panic!("expected NewerSchema, got {other:?}"),
    }
}

#[test]
fn an_older_schema_is_migrated() {
    // A file at version 0 (an empty database someone created) is brought to the current version.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    rusqlite::Connection::open(&path).unwrap().execute_batch("CREATE TABLE unrelated (x INTEGER);").unwrap();
    assert_eq!(user_version(&path), 0);
    drop(SqliteMemory::<String>::open_path(&path).unwrap());
    assert_eq!(user_version(&path), SCHEMA_VERSION);
}

#[test]
fn a_file_that_is_not_a_database_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("garbage.db");
    std::fs::write(&path, vec![0x5a_u8; 8192]).unwrap();
    let err = SqliteMemory::<String>::open_path(&path).unwrap_err();
    assert!(matches!(err, OpenError::Open { .. }), "{err:?}");
    assert!(err.to_string().contains("garbage.db"), "{err}");
}
