//! Opening migrates once, again is harmless, and a newer schema is refused.

mod common;

use std::time::Duration;

use orchestrator::memory::{Memory, MemoryExt, Retention, WriteMeta};
use orchestrator_postgres::{OpenError, PgStore, SCHEMA_VERSION};

use common::{config, database_url, drop_schema, fresh_schema, run_sql};

#[tokio::test]
async fn opening_twice_keeps_the_data() {
    let Some(url) = database_url() else { return };
    let schema = fresh_schema();
    let cfg = config(&url, &schema, Duration::from_secs(5), Retention::Keep);
    let first: PgStore<String> = PgStore::open(cfg.clone()).await.expect("open");
    first.write("wf", &"kept".to_owned(), None, None, &WriteMeta::new("wf", "test")).await.expect("write");
    let second: PgStore<String> = PgStore::open(cfg).await.expect("open again");
    assert_eq!(second.read("wf").await.expect("read").map(|s| s.record), Some("kept".to_owned()));
    drop_schema(&url, &schema).await;
}

#[tokio::test]
async fn concurrent_opens_migrate_once() {
    let Some(url) = database_url() else { return };
    let schema = fresh_schema();
    let cfg = config(&url, &schema, Duration::from_secs(5), Retention::Keep);
    let (a, b) = tokio::join!(PgStore::<String>::open(cfg.clone()), PgStore::<String>::open(cfg));
    a.expect("first open");
    b.expect("second open");
    drop_schema(&url, &schema).await;
}

#[tokio::test]
async fn a_newer_schema_is_refused() {
    let Some(url) = database_url() else { return };
    let schema = fresh_schema();
    let cfg = config(&url, &schema, Duration::from_secs(5), Retention::Keep);
    PgStore::<String>::open(cfg.clone()).await.expect("open");
    run_sql(&url, &format!("UPDATE \"{schema}\".schema_version SET version = {}", SCHEMA_VERSION + 1))
        .await
        .expect("bump the version");
    match PgStore::<String>::open(cfg).await {
        Err(OpenError::NewerSchema { found, supported }) => {
            assert_eq!((found, supported), (SCHEMA_VERSION + 1, SCHEMA_VERSION));
        }
        other => panic!("a newer schema must be refused, got {other:?}"),
    }
    drop_schema(&url, &schema).await;
}
