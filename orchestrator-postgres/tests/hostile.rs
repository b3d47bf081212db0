//! Hostile ids, sources and records round-trip: every value is a bound parameter. An id too
//! large for the index is refused with a permanent error.

mod common;

use std::time::{Duration, SystemTime};

use orchestrator::event::Event;
use orchestrator::memory::{
    Commit, EventKey, Journal, JournalEntry, Memory, MemoryError, MemoryExt, Retention, WriteMeta,
};
use orchestrator_postgres::PgStore;

use common::{config, database_url, drop_schema, fresh_schema};

fn hostile() -> Vec<String> {
    vec![
        "'; DROP TABLE workflows; --".to_owned(),
        "back\\slash \\x00 \\' \"quoted\"".to_owned(),
        "unicode: é 漢字 🚀 \u{202e}rtl".to_owned(),
        "$1 $2 {s} %s ?".to_owned(),
        "x".repeat(10_000),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_values_round_trip() {
    let Some(url) = database_url() else { return };
    let schema = fresh_schema();
    let store: PgStore<String> =
        PgStore::open(config(&url, &schema, Duration::from_secs(30), Retention::Keep)).await.expect("open");
    for (i, value) in hostile().into_iter().enumerate() {
        let id = format!("{value}-{i}");
        let source = format!("src:{value}");
        let consumed = Event::builder()
            .id(value.as_str())
            .source("com.hostile.client")
            .r#type("com.hostile.step")
            .subject("hostile")
            .data_json(serde_json::json!({ "value": value }))
            .build()
            .expect("event");
        let produced = vec![
            Event::builder()
                .source("com.hostile.suite")
                .r#type("com.hostile.answer")
                .subject("hostile")
                .data_json(serde_json::json!({ "value": value }))
                .build()
                .expect("event"),
        ];
        let key = EventKey::of(&consumed);
        let acquired = store.acquire(&id, key, true).await.expect("acquire").expect("free");
        let lease = acquired.lease.expect("lease");
        let entry = JournalEntry { at: SystemTime::now(), consumed: Some(&consumed), produced: &produced };
        let commit = Commit {
            release: true,
            ..Commit::new(
                &id,
                value.clone(),
                None,
                WriteMeta { entry: Some(entry), ..WriteMeta::new(&id, &source) },
            )
            .lease(Some(&lease))
        };
        assert_eq!(store.commit(commit).await.expect("commit"), 1);
        let stored = store.read(&id).await.expect("read").expect("stored");
        assert_eq!(stored.record, value, "the record round-trips");
        assert_eq!(store.produced(&id, key).await.expect("produced"), Some(produced.clone()));
        let again = store.acquire(&id, key, false).await.expect("acquire").expect("read");
        assert_eq!(again.produced, Some(produced.clone()), "acquire answers the redelivery");
        let history = store.history(&id, 0, 10).await.expect("history");
        assert_eq!(history.len(), 1);
        assert_eq!(history[0].consumed.as_ref(), Some(&consumed), "the consumed event round-trips");
        store
            .write(&id, &format!("{value}!"), Some(1), None, &WriteMeta::new(&id, &source))
            .await
            .expect("cas");
    }
    // 10 kB of incompressible text: fine as a record, too large for an id (PostgreSQL's b-tree
    // index rows hold at most about 2.7 kB): refused with a permanent error, nothing written.
    let random: String = (0..10_000).map(|_| fastrand::alphanumeric()).collect();
    let meta = WriteMeta::new("big-record", "test");
    store.write("big-record", &random, None, None, &meta).await.expect("a 10 kB record");
    assert_eq!(store.read("big-record").await.expect("read").map(|s| s.record), Some(random.clone()));
    match store.write(&random, &"x".to_owned(), None, None, &WriteMeta::new(&random, "test")).await {
        Err(e @ MemoryError::Backend { .. }) => {
            assert!(!e.is_transient(), "an oversized id is permanent: {e}")
        }
        other => panic!("a 10 kB incompressible id must be refused, got {other:?}"),
    }
    assert!(store.read(&random).await.expect("read").is_none());
    // The tables are still there.
    assert!(store.read("'; DROP TABLE workflows; ---0").await.expect("read").is_some());
    drop_schema(&url, &schema).await;
}
