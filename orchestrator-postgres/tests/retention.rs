//! What each retention leaves in the tables, journal included.

mod common;

use std::time::{Duration, SystemTime};

use orchestrator::event::Event;
use orchestrator::memory::{Commit, Journal, JournalEntry, Memory, Retention, WriteMeta};
use orchestrator_postgres::PgStore;

use common::{config, database_url, drop_schema, fresh_schema};

/// Row counts of `table` for workflow `id` (column `column`).
async fn count(url: &str, schema: &str, table: &str, column: &str, id: &str) -> i64 {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.expect("connect");
    let task = tokio::spawn(connection);
    let sql = format!("SELECT count(*) FROM \"{schema}\".{table} WHERE {column} = $1");
    let n: i64 = client.query_one(&sql, &[&id]).await.expect("count").get(0);
    drop(client);
    let _ = task.await;
    n
}

/// Creates workflow `id` with one journaled step and finishes it with a second one.
async fn finish(store: &PgStore<String>, id: &str) {
    let consumed = Event::builder()
        .source("com.retention.client")
        .r#type("com.retention.step")
        .subject("retention")
        .data_json(serde_json::json!({}))
        .build()
        .expect("event");
    let entry = JournalEntry { at: SystemTime::now(), consumed: Some(&consumed), produced: &[] };
    let meta = WriteMeta { entry: Some(entry), ..WriteMeta::new(id, "test") };
    store.commit(Commit::new(id, "v1".to_owned(), None, meta.clone())).await.expect("first step");
    let lease = store.lock(id).await.expect("lock").expect("free");
    let last = Commit {
        release: true,
        finished: true,
        ..Commit::new(id, "v2".to_owned(), Some(1), meta).lease(Some(&lease))
    };
    store.commit(last).await.expect("finishing step");
}

#[tokio::test]
async fn each_retention_leaves_what_it_says() {
    let Some(url) = database_url() else { return };
    for retention in [
        Retention::Keep,
        Retention::Remove,
        Retention::Archive,
        Retention::RemoveAfter(Duration::from_millis(300)),
    ] {
        let schema = fresh_schema();
        let store: PgStore<String> =
            PgStore::open(config(&url, &schema, Duration::from_secs(30), retention)).await.expect("open");
        finish(&store, "wf").await;
        let live = count(&url, &schema, "workflows", "id", "wf").await;
        let journal = count(&url, &schema, "journal", "wf", "wf").await;
        let archived = count(&url, &schema, "archive_workflows", "id", "wf").await;
        let archived_journal = count(&url, &schema, "archive_journal", "wf", "wf").await;
        match retention {
            Retention::Keep => {
                assert_eq!((live, journal, archived), (1, 2, 0), "Keep keeps the record and its journal");
                assert_eq!(store.history("wf", 0, 10).await.expect("history").len(), 2);
            }
            Retention::Remove => assert_eq!((live, journal, archived), (0, 0, 0), "Remove deletes both"),
            Retention::Archive => {
                assert_eq!((live, journal), (0, 0), "Archive moves the record and the journal out");
                assert_eq!((archived, archived_journal), (1, 2), "into the archive tables");
            }
            Retention::RemoveAfter(after) => {
                assert_eq!((live, journal), (1, 2), "RemoveAfter keeps both until the delay passed");
                tokio::time::sleep(after + Duration::from_millis(200)).await;
                store.cleanup("another").await.expect("cleanup sweeps");
                let live = count(&url, &schema, "workflows", "id", "wf").await;
                let journal = count(&url, &schema, "journal", "wf", "wf").await;
                assert_eq!((live, journal), (0, 0), "then the sweep deletes both");
            }
        }
        drop_schema(&url, &schema).await;
    }
}
