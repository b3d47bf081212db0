//! A nack with a delay longer than the visibility timeout: the event waits in the topic's
//! delayed set (nobody takes it over meanwhile), comes back after the delay with its attempt
//! counted, and a closed transport's subscription waits for it before it ends.

mod common;

use std::time::{Duration, Instant};

use orchestrator::event::Event;
use orchestrator::transport::{Delivery, Subscription, Topics, Transport};
use orchestrator_redis::{RedisConfig, RedisTransport};
use serde_json::json;

use common::{config, delete, redis_url};

const TOPIC: &str = "com.nack.work";

/// The next delivery (10 s at most), not the end.
async fn next(subscription: &mut orchestrator_redis::RedisSubscription) -> orchestrator_redis::RedisDelivery {
    tokio::time::timeout(Duration::from_secs(10), subscription.next())
        .await
        .expect("a delivery within 10 s")
        .expect("a delivery, not the end")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delayed_event_comes_back_after_its_delay_and_is_drained_on_close() {
    let Some(url) = redis_url() else { return };
    let transport = RedisTransport::connect(RedisConfig {
        visibility_timeout: Duration::from_millis(200),
        ..config(&url)
    })
    .await
    .expect("connect");
    let event = Event::builder()
        .source("com.nack.client")
        .r#type("com.nack.call")
        .to(TOPIC)
        .subject("s")
        .data_json(json!({}))
        .build()
        .expect("a valid event");
    transport.publish(vec![event.clone()]).await.expect("publish");
    let mut subscription =
        transport.subscribe(Topics::Only(vec![TOPIC.to_owned()])).await.expect("subscribe");
    let first = next(&mut subscription).await;
    assert_eq!((first.event(), first.attempt()), (&event, 1));
    let delay = Duration::from_millis(600);
    let nacked = Instant::now();
    first.nack(delay).await.expect("nack");
    assert_eq!(transport.remaining().await.expect("remaining"), 1, "the delayed event is not settled");
    assert_eq!(transport.waiting().await.expect("waiting"), 0, "nor waiting in its stream");
    let second = next(&mut subscription).await;
    assert!(nacked.elapsed() >= delay, "delivered again after {:?} < {delay:?}", nacked.elapsed());
    assert_eq!((second.event(), second.attempt()), (&event, 2), "its attempt counted");

    // Closed while the event is delayed: the subscription waits for it, then ends.
    let delay = Duration::from_millis(800);
    let nacked = Instant::now();
    second.nack(delay).await.expect("nack");
    transport.close();
    let third = next(&mut subscription).await;
    assert!(nacked.elapsed() >= delay, "delivered again after {:?} < {delay:?}", nacked.elapsed());
    assert_eq!((third.event(), third.attempt()), (&event, 3), "its attempt counted");
    third.ack(vec![]).await.expect("ack");
    let end = tokio::time::timeout(Duration::from_secs(10), subscription.next()).await.expect("the end");
    assert!(end.is_none(), "drained, then the end");
    assert!(transport.dead_letters(None, 10).await.expect("dead letters").is_empty());
    delete(&transport).await;
}
