//! Backpressure per topic: a publisher that finds its topic full waits, then fails with
//! `TransportError::Full` after the publish timeout, adding nothing; a slot freed by a delivery
//! takes an event again; other topics are not held back; the products of an ack are admitted
//! over the capacity; closing the transport ends a wait with `Closed`.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use orchestrator::event::Event;
use orchestrator::transport::{Delivery, Subscription, Topics, Transport, TransportError};
use orchestrator_redis::{RedisConfig, RedisTransport};
use serde_json::json;

use common::{config, delete, redis_url};

const A: &str = "com.capacity.a";
const B: &str = "com.capacity.b";
const TIMEOUT: Duration = Duration::from_millis(300);

fn event(topic: &str, n: usize) -> Event {
    Event::builder()
        .source("com.capacity.client")
        .r#type("com.capacity.call")
        .to(topic)
        .subject(format!("s{n}"))
        .data_json(json!({ "n": n }))
        .build()
        .expect("a valid event")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_topic_holds_its_publishers_back_then_refuses_with_full() {
    let Some(url) = redis_url() else { return };
    let transport = Arc::new(
        RedisTransport::connect(RedisConfig { capacity: 2, publish_timeout: Some(TIMEOUT), ..config(&url) })
            .await
            .expect("connect"),
    );
    transport.publish(vec![event(A, 0), event(A, 1)]).await.expect("publish up to the capacity");
    let started = Instant::now();
    match transport.publish(vec![event(A, 2)]).await {
        Err(TransportError::Full { capacity: 2, waited }) => {
            assert!(waited >= TIMEOUT && started.elapsed() >= TIMEOUT, "waited {waited:?}");
        }
        other => panic!("expected Full, got {other:?}"),
    }
    assert_eq!(transport.waiting().await.expect("waiting"), 2, "nothing of the refused batch was added");
    // Another topic has room of its own.
    transport.publish(vec![event(B, 3)]).await.expect("another topic is not held back");

    // A delivery frees a slot: a waiting publisher gets in.
    let waiter = {
        let transport = Arc::clone(&transport);
        tokio::spawn(async move { transport.publish(vec![event(A, 4)]).await })
    };
    let mut subscription = transport.subscribe(Topics::Only(vec![A.to_owned()])).await.expect("subscribe");
    let first = tokio::time::timeout(Duration::from_secs(10), subscription.next())
        .await
        .expect("a delivery within 10 s")
        .expect("a delivery");
    waiter.await.expect("the waiting publisher").expect("admitted once a slot was freed");
    // Full again: the products of an ack are admitted over the capacity all the same.
    first.ack((5..9).map(|n| event(A, n)).collect()).await.expect("products over the capacity");
    let mut left = 1 + 1 + 4;
    while left > 0 {
        let delivery = tokio::time::timeout(Duration::from_secs(10), subscription.next())
            .await
            .expect("a delivery within 10 s")
            .expect("a delivery");
        delivery.ack(vec![]).await.expect("ack");
        left -= 1;
    }
    assert_eq!(transport.waiting().await.expect("waiting"), 1, "only B's event waits");

    // Closing ends a publisher's wait.
    transport.publish(vec![event(A, 10), event(A, 11)]).await.expect("publish up to the capacity");
    let unbounded = Arc::new(
        RedisTransport::connect(RedisConfig {
            capacity: 2,
            publish_timeout: None,
            ..transport.config().clone()
        })
        .await
        .expect("connect"),
    );
    let waiter = {
        let unbounded = Arc::clone(&unbounded);
        tokio::spawn(async move { unbounded.publish(vec![event(A, 12)]).await })
    };
    tokio::time::sleep(TIMEOUT).await;
    assert!(!waiter.is_finished(), "the publisher waits for room");
    unbounded.close();
    match tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .expect("the wait ends")
        .expect("the task")
    {
        Err(TransportError::Closed) => {}
        other => panic!("expected Closed, got {other:?}"),
    }
    transport.close();
    let mut drained = 0;
    while let Some(delivery) =
        tokio::time::timeout(Duration::from_secs(10), subscription.next()).await.expect("drained")
    {
        delivery.ack(vec![]).await.expect("ack");
        drained += 1;
    }
    assert_eq!(drained, 2, "the two queued events of A, then the end");
    delete(&transport).await;
}
