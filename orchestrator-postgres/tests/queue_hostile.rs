//! Hostile input on the queue: ids, subjects and data of any characters round-trip (every value
//! is a bound parameter); what the database cannot hold (an incompressible 10 kB subject, over
//! the lane index's limit) is refused with a permanent error and nothing is queued; products
//! refused for good make their event a dead letter with the reason, instead of a delivery that
//! fails forever; a row whose event cannot be decoded is never delivered, it is dead-lettered.

mod common;

use std::time::Duration;

use orchestrator::event::Event;
use orchestrator::memory::{MemoryExt, Retention, WriteMeta};
use orchestrator::transport::{Delivery, Subscription, Topics, Transport, TransportError};
use orchestrator_postgres::{PgQueue, PgStore, QueueConfig};

use common::{config, database_url, drop_schema, fresh_schema, run_sql};

const TOPIC: &str = "com.hostile.step";

fn hostile() -> Vec<String> {
    vec![
        "'; DROP TABLE queue; --".to_owned(),
        "back\\slash \\x00 \\' \"quoted\"".to_owned(),
        "unicode: é 漢字 🚀 \u{202e}rtl".to_owned(),
        "$1 $2 {s} %s ?".to_owned(),
        "x".repeat(10_000),
    ]
}

/// `text` as a subject may carry it (a properly encoded URI): quotes and reserved characters stay,
/// everything else outside the unreserved characters is percent-encoded.
fn uri(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.!~*'();,/?:@&=+$#".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn event(id: &str, subject: &str, value: &str) -> Event {
    Event::builder()
        .id(id)
        .source("com.hostile.client")
        .r#type(TOPIC)
        .to(TOPIC)
        .subject(subject)
        .data_json(serde_json::json!({ "value": value }))
        .build()
        .expect("event")
}

async fn next(queue: &PgQueue) -> orchestrator_postgres::PgDelivery {
    let mut subscription = queue.subscribe(Topics::All).await.expect("subscribe");
    tokio::time::timeout(Duration::from_secs(10), subscription.next())
        .await
        .expect("a delivery within 10 s")
        .expect("a delivery")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_events_round_trip_or_are_refused() {
    let Some(url) = database_url() else { return };
    let schema = fresh_schema();
    let store: PgStore<String> =
        PgStore::open(config(&url, &schema, Duration::from_secs(30), Retention::Keep)).await.expect("open");
    let queue = store.queue(QueueConfig { poll: Duration::from_millis(20), ..QueueConfig::default() });

    for (i, value) in hostile().into_iter().enumerate() {
        let published = event(&format!("{value}-{i}"), &uri(&value), &value);
        queue.publish(vec![published.clone()]).await.expect("publish");
        let delivery = next(&queue).await;
        assert_eq!(delivery.event(), &published, "the event round-trips");
        let product = event(&format!("product-{value}-{i}"), &uri(&format!("p:{value}")), &value);
        delivery.ack(vec![product.clone()]).await.expect("ack");
        let delivery = next(&queue).await;
        assert_eq!(delivery.event(), &product, "the product round-trips");
        delivery.ack(vec![]).await.expect("ack");
    }
    assert_eq!(queue.depth(10).await.expect("depth"), 0);

    // 10 kB of incompressible text: too large for the lane index. Refused for good, nothing
    // queued.
    let random: String = (0..10_000).map(|_| fastrand::alphanumeric()).collect();
    match queue.publish(vec![event("big-subject", &random, "v")]).await {
        Err(e @ TransportError::Backend { .. }) => assert!(!e.is_transient(), "permanent: {e}"),
        other => panic!("a 10 kB incompressible subject must be refused, got {other:?}"),
    }
    assert_eq!(queue.depth(10).await.expect("depth"), 0, "nothing queued");

    // The same as a product: the consumed event becomes a dead letter, with the reason.
    queue.publish(vec![event("makes-a-big-product", "s", "v")]).await.expect("publish");
    let delivery = next(&queue).await;
    match delivery.ack(vec![event("big-product", &random, "v")]).await {
        Err(e) => assert!(!e.is_transient(), "permanent: {e}"),
        Ok(()) => panic!("a 10 kB incompressible product subject must be refused"),
    }
    let dead = queue.dead_letters(0, 10).await.expect("dead letters");
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(dead[0].event_id, "makes-a-big-product");
    assert!(dead[0].reason.contains("products were refused"), "{}", dead[0].reason);
    assert_eq!(queue.depth(10).await.expect("depth"), 0, "nothing queued, the event not redelivered");

    // A row written by another program that is not an event: dead-lettered, never delivered.
    // On the lane of a workflow that exists and is written by the topic's handler (an
    // orchestrator's lane): the claim reads that workflow for the step, and must not choke on
    // the junk while doing so.
    store.write("s", &"state".to_owned(), None, None, &WriteMeta::new("s", TOPIC)).await.expect("a workflow");
    // ... whose journal has an entry for the junk's id.
    run_sql(
        &url,
        &format!(
            // (Encoded as the journal keeps them: a tag byte, then the JSON.)
            "INSERT INTO \"{schema}\".journal (wf, version, at_ms, consumed_source, consumed_id, events, record_bytes) \
             VALUES ('s', 1, 0, 'elsewhere', 'junk', '\\x00'::bytea || convert_to('[null,[]]', 'UTF8'), \
                     '\\x00'::bytea || convert_to('\"state\"', 'UTF8'))"
        ),
    )
    .await
    .expect("a journal entry");
    run_sql(
        &url,
        &format!(
            "INSERT INTO \"{schema}\".queue (topic, subject, event_id, event) VALUES ('{TOPIC}', 's', 'junk', '{{not json')"
        ),
    )
    .await
    .expect("insert a junk row");
    queue.publish(vec![event("after-junk", "s2", "v")]).await.expect("publish");
    let delivery = next(&queue).await;
    assert_eq!(delivery.event().id(), "after-junk", "the junk row is not delivered");
    delivery.ack(vec![]).await.expect("ack");
    let dead = queue.dead_letters(dead[0].seq, 10).await.expect("dead letters");
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(dead[0].event_id, "junk");
    assert!(dead[0].reason.contains("cannot be decoded"), "{}", dead[0].reason);
    // An operator can put a dead letter back.
    let first = queue.dead_letters(0, 1).await.expect("dead letters");
    assert!(queue.requeue(first[0].seq).await.expect("requeue"));
    let delivery = next(&queue).await;
    assert_eq!(delivery.event().id(), "makes-a-big-product", "requeued");
    assert_eq!(delivery.attempt(), 1, "a fresh delivery");
    delivery.ack(vec![]).await.expect("ack");
    drop_schema(&url, &schema).await;
}

/// An event whose deliveries all end unsettled (its consumer crashes, or gives it back, every
/// time) is delivered `max_deliveries` times, then becomes a dead letter with the reason instead
/// of being delivered forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_delivered_too_often_becomes_a_dead_letter() {
    let Some(url) = database_url() else { return };
    let schema = fresh_schema();
    let store: PgStore<String> =
        PgStore::open(config(&url, &schema, Duration::from_secs(30), Retention::Keep)).await.expect("open");
    let queue = store.queue(QueueConfig {
        poll: Duration::from_millis(20),
        max_deliveries: Some(3),
        ..QueueConfig::default()
    });
    queue.publish(vec![event("poison", "poison-subject", "v")]).await.expect("publish");
    queue.publish(vec![event("fine", "fine-subject", "v")]).await.expect("publish");
    let mut subscription = queue.subscribe(Topics::All).await.expect("subscribe");
    let mut poison_deliveries = 0;
    let mut fine = None;
    while fine.is_none() || poison_deliveries < 3 {
        let delivery = tokio::time::timeout(Duration::from_secs(10), subscription.next())
            .await
            .expect("a delivery within 10 s")
            .expect("a delivery");
        if delivery.event().id() == "poison" {
            poison_deliveries += 1;
            assert_eq!(delivery.attempt(), poison_deliveries, "each delivery counts");
            drop(delivery); // unsettled: given back, as if its consumer had crashed
        } else {
            fine = Some(delivery);
        }
    }
    fine.expect("the other event").ack(Vec::new()).await.expect("ack");
    // The fourth claim of the poison event makes it a dead letter: nothing more is delivered.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let dead = loop {
        let dead = queue.dead_letters(0, 10).await.expect("dead letters");
        if !dead.is_empty() || tokio::time::Instant::now() > deadline {
            break dead;
        }
        if let Ok(Some(delivery)) =
            tokio::time::timeout(Duration::from_millis(100), subscription.next()).await
        {
            panic!("event {} delivered again (attempt {})", delivery.event().id(), delivery.attempt());
        }
    };
    assert_eq!(dead.len(), 1, "one dead letter: {dead:?}");
    assert_eq!(dead[0].event_id, "poison");
    assert!(
        dead[0].reason.contains("delivered 3 times without being settled"),
        "the reason says why: {}",
        dead[0].reason
    );
    assert_eq!(queue.depth(10).await.expect("depth"), 0, "nothing left in the queue");
    drop(subscription);
    drop(queue);
    drop(store);
    drop_schema(&url, &schema).await;
}
