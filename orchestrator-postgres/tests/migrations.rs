//! Opening migrates once, again is harmless, a newer schema is refused, and a schema written by
//! version 2 (with events in its outbox and a journal) is upgraded: its events are queued on
//! their lanes and delivered, its journal reads back.

mod common;

use std::time::Duration;

use orchestrator::memory::{Journal, Memory, MemoryExt, Retention, WriteMeta};
use orchestrator::transport::{Delivery, Subscription, Topics, Transport};
use orchestrator_postgres::{OpenError, PgStore, QueueConfig, SCHEMA_VERSION};

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

#[tokio::test]
async fn a_version_2_schema_is_upgraded() {
    let Some(url) = database_url() else { return };
    let schema = fresh_schema();
    let quoted = format!("\"{schema}\"");
    let v2 = include_str!("fixtures/schema_v2.sql").replace("{s}", &quoted);
    run_sql(&url, &v2).await.expect("a version 2 schema");
    let event = orchestrator::event::Event::builder()
        .id("left-in-flight")
        .source("com.upgrade.client")
        .r#type("com.upgrade.step")
        .to("com.upgrade.step")
        .subject("upgrade-subject")
        .data_json(serde_json::json!({ "n": 1 }))
        .build()
        .expect("event");
    let json = serde_json::to_string(&event).expect("json").replace('\'', "''");
    run_sql(
        &url,
        &format!(
            "INSERT INTO {quoted}.outbox (event_id, event) VALUES ('left-in-flight', '{json}');
             INSERT INTO {quoted}.journal (wf, version, at_ms, produced, record)
             VALUES ('wf', 1, 0, '[]', '\"state\"'::jsonb);"
        ),
    )
    .await
    .expect("version 2 data");

    let cfg = config(&url, &schema, Duration::from_secs(5), Retention::Keep);
    let store: PgStore<String> = PgStore::open(cfg).await.expect("open upgrades");
    let history = store.history("wf", 0, 10).await.expect("the journal reads back");
    assert_eq!(history.iter().map(|e| e.record.as_str()).collect::<Vec<_>>(), ["state"]);
    let queue = store.queue(QueueConfig::default());
    let mut subscription = queue.subscribe(Topics::All).await.expect("subscribe");
    let delivery = tokio::time::timeout(Duration::from_secs(10), subscription.next())
        .await
        .expect("delivered within 10 s")
        .expect("a delivery");
    assert_eq!(delivery.event(), &event, "the event left in the outbox is queued and delivered");
    delivery.ack(vec![]).await.expect("ack");
    drop(subscription);
    drop_schema(&url, &schema).await;
}
