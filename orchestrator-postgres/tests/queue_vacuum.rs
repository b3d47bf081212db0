//! The queue vacuums its table as it turns over (`QueueConfig::vacuum_every`): a busy queue
//! leaves a dead row version per event, and autovacuum comes by at most once a minute.

mod common;

use std::time::Duration;

use orchestrator::event::Event;
use orchestrator::memory::Retention;
use orchestrator::transport::{Delivery, Subscription, Topics, Transport};
use orchestrator_postgres::{PgStore, QueueConfig};

use common::{config, database_url, drop_schema, fresh_schema};

const TOPIC: &str = "com.vacuum.step";

fn event(n: usize) -> Event {
    Event::builder()
        .id(format!("e-{n}"))
        .source("com.vacuum.client")
        .r#type(TOPIC)
        .to(TOPIC)
        .subject(format!("s-{n}"))
        .data_json(serde_json::json!({ "n": n }))
        .build()
        .expect("event")
}

/// How many times the queue's table of `schema` was vacuumed by hand (not by autovacuum).
async fn vacuums(sql: &tokio_postgres::Client, schema: &str) -> i64 {
    sql.query_one(
        "SELECT vacuum_count FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'queue'",
        &[&schema],
    )
    .await
    .expect("the table's statistics")
    .get(0)
}

/// Publishes and consumes `events` events on a queue configured with `vacuum_every`; returns
/// the vacuum count of its table once the last vacuum had time to finish.
async fn run(vacuum_every: Option<u64>, events: usize) -> i64 {
    let url = database_url().expect("checked by the caller");
    let schema = fresh_schema();
    let store: PgStore<String> =
        PgStore::open(config(&url, &schema, Duration::from_secs(30), Retention::Keep)).await.expect("open");
    let queue = store.queue(QueueConfig {
        poll: Duration::from_millis(20),
        batch: 8,
        vacuum_every,
        ..QueueConfig::default()
    });
    queue.publish((0..events).map(event).collect()).await.expect("publish");
    let mut subscription = queue.subscribe(Topics::All).await.expect("subscribe");
    for _ in 0..events {
        let delivery = tokio::time::timeout(Duration::from_secs(10), subscription.next())
            .await
            .expect("a delivery within 10 s")
            .expect("a delivery");
        delivery.ack(Vec::new()).await.expect("ack");
    }
    assert_eq!(queue.depth(100).await.expect("depth"), 0, "every event consumed");
    let (sql, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.expect("connect");
    let connection = tokio::spawn(connection);
    // The vacuum runs in the background: wait for its count (bounded).
    let mut count = vacuums(&sql, &schema).await;
    for _ in 0..100 {
        if vacuum_every.is_none() || count > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        count = vacuums(&sql, &schema).await;
    }
    drop(subscription);
    drop(queue);
    drop(store);
    drop(sql);
    let _ = connection.await;
    drop_schema(&url, &schema).await;
    count
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_queue_vacuums_its_table_and_one_told_not_to_does_not() {
    if database_url().is_none() {
        return;
    }
    let vacuumed = run(Some(20), 100).await;
    assert!(vacuumed >= 1, "100 rows claimed, a vacuum every 20: vacuumed {vacuumed} times");
    assert_eq!(run(None, 100).await, 0, "no vacuum when vacuum_every is None");
}
