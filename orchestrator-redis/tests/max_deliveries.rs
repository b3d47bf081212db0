//! After `max_deliveries` deliveries an event becomes a dead letter: nacked on its last
//! delivery (a handler that always fails transiently, on a node), dropped unsettled every time,
//! or taken over once more after its last delivery was never settled (a consumer that died
//! holding it).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use orchestrator::handler::EventHandler;
use orchestrator::memory::InMemory;
use orchestrator::orchestration::WorkflowRecord;
use orchestrator::prelude::*;
use orchestrator::runtime::{Node, RetryPolicy};
use orchestrator::transport::{Delivery, Subscription, Topics, Transport};
use orchestrator::violation::TransactionCause;
use orchestrator_redis::{RedisConfig, RedisDeadLetter, RedisTransport};
use serde_json::json;

use common::{config, delete, redis_url};

const TOPIC: &str = "com.flaky.service";

/// A service that always fails transiently (its store is "busy"), counting its runs.
#[derive(Clone, Default)]
struct Flaky(Arc<AtomicU32>);

impl EventHandler for Flaky {
    fn source(&self) -> &str {
        TOPIC
    }

    async fn execute(&self, _event: &Event) -> Result<Vec<Event>, Violation> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Err(Violation::transaction(TransactionCause::LockUnacquired, "always busy"))
    }
}

fn event(id: &str) -> Event {
    Event::builder()
        .id(id)
        .source("com.flaky.client")
        .r#type("com.flaky.call")
        .to(TOPIC)
        .subject("s")
        .data_json(json!({}))
        .build()
        .expect("a valid event")
}

async fn wait_for_dead_letters(transport: &RedisTransport, n: usize) -> Vec<RedisDeadLetter> {
    for _ in 0..1_000 {
        let letters = transport.dead_letters(None, 10).await.expect("dead letters");
        if letters.len() >= n {
            return letters;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("fewer than {n} dead letters after 20 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_that_always_fails_transiently_ends_in_the_dead_letters_after_max_deliveries() {
    let Some(url) = redis_url() else { return };
    let transport =
        RedisTransport::connect(RedisConfig { max_deliveries: 3, ..config(&url) }).await.expect("connect");
    let flaky = Flaky::default();
    let store = Arc::new(InMemory::<WorkflowRecord>::default());
    let node = Node::builder(store)
        .transport(transport.clone())
        .service(flaky.clone())
        // The node would retry 100 times: the transport's limit comes first.
        .retry(RetryPolicy {
            max_attempts: 100,
            initial: Duration::from_millis(10),
            max_delay: Duration::from_millis(50),
            multiplier: 2.0,
        })
        .without_timers()
        .workers(4)
        .build()
        .await
        .expect("a node");
    let poison = event("poison");
    transport.publish(vec![poison.clone()]).await.expect("publish");
    let letters = wait_for_dead_letters(&transport, 1).await;
    assert_eq!(letters.len(), 1, "{letters:?}");
    assert_eq!(letters[0].attempt, 3);
    assert!(letters[0].reason.contains("max_deliveries"), "{}", letters[0].reason);
    assert_eq!(letters[0].topic, TOPIC);
    assert_eq!(letters[0].decode().expect("the event"), poison);
    tokio::time::timeout(Duration::from_secs(20), node.shutdown()).await.expect("the node shuts down");
    assert_eq!(flaky.0.load(Ordering::SeqCst), 3, "the handler ran once per delivery");
    assert!(node.take_dead_letters().is_empty(), "the node itself dead-lettered nothing");
    assert_eq!(transport.remaining().await.expect("remaining"), 0, "nothing left to deliver");
    delete(&transport).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_dropped_unsettled_every_time_ends_in_the_dead_letters() {
    let Some(url) = redis_url() else { return };
    let transport =
        RedisTransport::connect(RedisConfig { max_deliveries: 4, ..config(&url) }).await.expect("connect");
    transport.publish(vec![event("dropped")]).await.expect("publish");
    let mut subscription =
        transport.subscribe(Topics::Only(vec![TOPIC.to_owned()])).await.expect("subscribe");
    for attempt in 1..=4 {
        let delivery = tokio::time::timeout(Duration::from_secs(10), subscription.next())
            .await
            .expect("a delivery within 10 s")
            .expect("a delivery");
        assert_eq!(delivery.attempt(), attempt);
        drop(delivery);
    }
    // The fifth delivery is not handed out: it becomes a dead letter.
    let waiting = tokio::spawn(async move { subscription.next().await.map(|d| d.attempt()) });
    let letters = wait_for_dead_letters(&transport, 1).await;
    assert_eq!(letters[0].attempt, 5);
    assert!(letters[0].reason.contains("more than max_deliveries (4)"), "{}", letters[0].reason);
    transport.close();
    let end = tokio::time::timeout(Duration::from_secs(10), waiting).await.expect("the end within 10 s");
    assert_eq!(end.expect("the waiting task"), None, "nothing more is delivered");
    delete(&transport).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_whose_consumers_die_holding_it_ends_in_the_dead_letters() {
    let Some(url) = redis_url() else { return };
    let transport = RedisTransport::connect(RedisConfig {
        max_deliveries: 2,
        visibility_timeout: Duration::from_millis(500),
        ..config(&url)
    })
    .await
    .expect("connect");
    transport.publish(vec![event("held")]).await.expect("publish");
    let mut subscription =
        transport.subscribe(Topics::Only(vec![TOPIC.to_owned()])).await.expect("subscribe");
    for attempt in 1..=2 {
        let delivery = tokio::time::timeout(Duration::from_secs(10), subscription.next())
            .await
            .expect("a delivery within 10 s")
            .expect("a delivery");
        assert_eq!(delivery.attempt(), attempt);
        // The consumer "dies": the delivery is never settled, nor put back.
        std::mem::forget(delivery);
    }
    // The third delivery (taken over after the visibility timeout) is not handed out: it
    // becomes a dead letter.
    let waiting = tokio::spawn(async move { subscription.next().await.map(|d| d.attempt()) });
    let letters = wait_for_dead_letters(&transport, 1).await;
    assert_eq!(letters[0].attempt, 3);
    assert!(letters[0].reason.contains("more than max_deliveries (2)"), "{}", letters[0].reason);
    transport.close();
    let end = tokio::time::timeout(Duration::from_secs(10), waiting).await.expect("the end within 10 s");
    assert_eq!(end.expect("the waiting task"), None, "nothing more is delivered");
    delete(&transport).await;
}
