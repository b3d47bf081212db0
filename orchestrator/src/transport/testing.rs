//! The conformance suite every [`Transport`] must pass (feature `testing`).
//!
//! ```ignore
//! #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
//! async fn my_transport_conforms() {
//!     let profile = Profile { ordered: false, capacity: 8 };
//!     orchestrator::transport::testing::conformance(|| MyTransport::with_capacity(8), profile).await;
//! }
//! ```
//!
//! The factory must return a fresh, empty transport whose capacity is `profile.capacity` and
//! whose publishers wait for room for at least a few seconds (the backpressure check publishes
//! twenty times the capacity against slow consumers). [`Subscription::next`] must be cancel-safe:
//! the suite drops a pending `next` to prove that nothing is delivered.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tokio::time::Instant;

use super::{Delivery, Subscription, Topics, Transport, TransportError};
use crate::event::Event;
use crate::util::lock;

/// What the transport under test claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    /// Whether the transport delivers the events of one `(topic, subject)` one at a time, in
    /// order (the in-process transport does). When false, the exclusivity check is skipped.
    pub ordered: bool,
    /// The capacity of the transports the factory makes (at least 1).
    pub capacity: usize,
}

const A: &str = "com.conformance.a";
const B: &str = "com.conformance.b";

/// Runs every check against fresh transports made by `make`; panics on the first failure with a
/// message naming the broken rule.
pub async fn conformance<T: Transport, F: Fn() -> T>(make: F, profile: Profile) {
    within("at-least-once", every_published_event_is_delivered_and_a_dropped_one_again(make())).await;
    within("ack", ack_removes(make())).await;
    within("nack", nack_redelivers_after_the_delay(make())).await;
    within("terminate", terminate_never_redelivers(make())).await;
    within("batch order", a_batch_keeps_its_order_per_lane(make())).await;
    if profile.ordered {
        within("exclusivity", a_lane_hands_out_one_delivery_at_a_time(make())).await;
    }
    within("backpressure", backpressure_loses_nothing(Arc::new(make()), profile.capacity)).await;
    within("products over capacity", products_are_admitted_over_capacity(make(), profile.capacity)).await;
    within("missing to", an_event_without_to_refuses_the_batch(make())).await;
    within("too large", an_event_too_large_refuses_the_batch(make())).await;
    within("close", close_refuses_outsiders_and_drains(make())).await;
}

/// Fails the check instead of hanging.
async fn within(rule: &str, check: impl Future<Output = ()>) {
    if tokio::time::timeout(Duration::from_secs(60), check).await.is_err() {
        panic!("{rule}: the check did not finish within 60 s (a delivery that never came?)");
    }
}

fn event(topic: &str, subject: &str, n: usize) -> Event {
    Event::builder()
        .source("com.conformance.client")
        .r#type(topic)
        .to(topic)
        .subject(subject)
        .data_json(json!({ "n": n }))
        .build()
        .expect("a valid conformance event")
}

fn n_of(event: &Event) -> u64 {
    event.data()["n"].as_u64().expect("a conformance event has `n`")
}

fn both() -> Topics {
    Topics::Only(vec![A.to_owned(), B.to_owned()])
}

async fn subscribe<T: Transport>(transport: &T, topics: Topics) -> T::Subscription {
    transport.subscribe(topics).await.expect("subscribe must succeed")
}

async fn next<S: Subscription>(subscription: &mut S, rule: &str) -> S::Delivery {
    subscription
        .next()
        .await
        .unwrap_or_else(|| panic!("{rule}: a delivery was expected, the subscription ended"))
}

/// The next delivery if one comes within `wait`.
async fn next_within<S: Subscription>(subscription: &mut S, wait: Duration) -> Option<S::Delivery> {
    tokio::time::timeout(wait, subscription.next()).await.ok().flatten()
}

async fn ack<D: Delivery>(delivery: D, produced: Vec<Event>, rule: &str) {
    if let Err(e) = delivery.ack(produced).await {
        panic!("{rule}: ack must succeed, got {e}");
    }
}

/// Closes the transport and checks that nothing more is delivered.
async fn close_and_expect_nothing<T: Transport>(
    transport: &T,
    subscription: &mut T::Subscription,
    rule: &str,
) {
    transport.close();
    if let Some(delivery) = subscription.next().await {
        panic!(
            "{rule}: nothing more was expected, got event {} (attempt {})",
            delivery.event().id(),
            delivery.attempt()
        );
    }
}

async fn every_published_event_is_delivered_and_a_dropped_one_again<T: Transport>(transport: T) {
    let rule = "at-least-once: every published event is delivered";
    let total = 40;
    let mut subscription = subscribe(&transport, Topics::All).await;
    // Consumed while published: the batches may exceed the capacity together.
    let consumer = tokio::spawn(async move {
        let mut seen = Vec::new();
        while seen.len() < total {
            let delivery = next(&mut subscription, rule).await;
            assert_eq!(delivery.attempt(), 1, "{rule}: a first delivery has attempt 1");
            seen.push(delivery.event().id().to_owned());
            ack(delivery, vec![], rule).await;
        }
        (subscription, seen)
    });
    let mut published = Vec::new();
    for batch in 0..4 {
        let events: Vec<_> = (0..10)
            .map(|i| event(if i % 2 == 0 { A } else { B }, &format!("s{}", i % 3), batch * 10 + i))
            .collect();
        published.extend(events.iter().map(|e| e.id().to_owned()));
        transport.publish(events).await.expect("publish must succeed");
    }
    let (mut subscription, mut seen) = consumer.await.expect("the consumer task");
    seen.sort();
    published.sort();
    assert_eq!(seen, published, "{rule}: each published event once");

    let rule = "at-least-once: a delivery dropped unsettled is delivered again";
    transport.publish(vec![event(A, "dropped", 0)]).await.expect("publish must succeed");
    let first = next(&mut subscription, rule).await;
    let (id, attempt) = (first.event().id().to_owned(), first.attempt());
    drop(first);
    let again = next(&mut subscription, rule).await;
    assert_eq!(again.event().id(), id, "{rule}: the same event");
    assert_eq!(again.attempt(), attempt + 1, "{rule}: attempt + 1");
    ack(again, vec![], rule).await;
    close_and_expect_nothing(&transport, &mut subscription, "ack removes the event").await;
}

async fn ack_removes<T: Transport>(transport: T) {
    let rule = "ack removes the event";
    transport.publish(vec![event(A, "s", 0), event(B, "s", 1)]).await.expect("publish must succeed");
    let mut subscription = subscribe(&transport, both()).await;
    for _ in 0..2 {
        let delivery = next(&mut subscription, rule).await;
        delivery.extend(Duration::from_secs(5)).await.expect("extend must succeed");
        ack(delivery, vec![], rule).await;
    }
    close_and_expect_nothing(&transport, &mut subscription, rule).await;
}

async fn nack_redelivers_after_the_delay<T: Transport>(transport: T) {
    let rule = "nack(delay) delivers the event again after the delay, with attempt + 1";
    transport.publish(vec![event(A, "s", 0)]).await.expect("publish must succeed");
    let mut subscription = subscribe(&transport, both()).await;
    let first = next(&mut subscription, rule).await;
    let (id, attempt) = (first.event().id().to_owned(), first.attempt());
    let delay = Duration::from_millis(200);
    let nacked = Instant::now();
    first.nack(delay).await.expect("nack must succeed");
    let again = next(&mut subscription, rule).await;
    assert!(nacked.elapsed() >= delay, "{rule}: delivered again after {:?} < {delay:?}", nacked.elapsed());
    assert_eq!((again.event().id(), again.attempt()), (id.as_str(), attempt + 1), "{rule}");
    ack(again, vec![], rule).await;
    close_and_expect_nothing(&transport, &mut subscription, rule).await;
}

async fn terminate_never_redelivers<T: Transport>(transport: T) {
    let rule = "terminate never delivers the event again";
    transport.publish(vec![event(A, "s", 0)]).await.expect("publish must succeed");
    let mut subscription = subscribe(&transport, both()).await;
    let delivery = next(&mut subscription, rule).await;
    delivery.terminate("conformance: poison".to_owned()).await.expect("terminate must succeed");
    close_and_expect_nothing(&transport, &mut subscription, rule).await;
}

async fn a_batch_keeps_its_order_per_lane<T: Transport>(transport: T) {
    let rule = "a batch is delivered in order for one (topic, subject)";
    transport.publish((0..10).map(|n| event(A, "ordered", n)).collect()).await.expect("publish must succeed");
    let mut subscription = subscribe(&transport, both()).await;
    for expected in 0..10 {
        let delivery = next(&mut subscription, rule).await;
        assert_eq!(n_of(delivery.event()), expected, "{rule}");
        ack(delivery, vec![], rule).await;
    }
    close_and_expect_nothing(&transport, &mut subscription, rule).await;
}

async fn a_lane_hands_out_one_delivery_at_a_time<T: Transport>(transport: T) {
    let rule = "exclusivity: while a delivery of a lane is unsettled, no other of that lane is handed out";
    transport
        .publish(vec![event(A, "lane", 0), event(A, "lane", 1), event(A, "other", 2)])
        .await
        .expect("publish must succeed");
    let mut first = subscribe(&transport, both()).await;
    let mut second = subscribe(&transport, both()).await;
    let a0 = next(&mut first, rule).await;
    assert_eq!(n_of(a0.event()), 0, "{rule}: FIFO");
    let other = next_within(&mut second, Duration::from_secs(5))
        .await
        .unwrap_or_else(|| panic!("{rule}: another lane must still be delivered"));
    assert_eq!(n_of(other.event()), 2, "{rule}: the other lane, not the busy one");
    if let Some(d) = next_within(&mut second, Duration::from_millis(200)).await {
        panic!("{rule}: got event {} while its lane is busy", n_of(d.event()));
    }
    ack(a0, vec![], rule).await;
    let a1 = next(&mut second, rule).await;
    assert_eq!(n_of(a1.event()), 1, "{rule}: the lane's next event once the first is settled");
    ack(a1, vec![], rule).await;
    ack(other, vec![], rule).await;
    close_and_expect_nothing(&transport, &mut first, rule).await;
}

async fn backpressure_loses_nothing<T: Transport>(transport: Arc<T>, capacity: usize) {
    let rule = "backpressure: publishers wait, every event is delivered once";
    let total = 20 * capacity.max(1);
    let publishers = 4;
    let seen = Arc::new(Mutex::new(HashMap::<String, usize>::new()));
    let mut consumers = Vec::new();
    for _ in 0..2 {
        let mut subscription = subscribe(&*transport, both()).await;
        let seen = Arc::clone(&seen);
        consumers.push(tokio::spawn(async move {
            let mut handled = 0_usize;
            while let Some(delivery) = subscription.next().await {
                *lock(&seen).entry(delivery.event().id().to_owned()).or_default() += 1;
                handled += 1;
                if handled.is_multiple_of(8) {
                    // Slower than the publishers.
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                ack(delivery, vec![], "backpressure").await;
            }
        }));
    }
    let mut tasks = Vec::new();
    let mut ids = Vec::new();
    for p in 0..publishers {
        let events: Vec<_> = (p..total)
            .step_by(publishers)
            .map(|n| event(if n % 2 == 0 { A } else { B }, &format!("p{}", n % 7), n))
            .collect();
        ids.extend(events.iter().map(|e| e.id().to_owned()));
        let transport = Arc::clone(&transport);
        tasks.push(tokio::spawn(async move {
            for event in events {
                transport.publish(vec![event]).await.expect("backpressure: publish must wait, not fail");
            }
        }));
    }
    for task in tasks {
        task.await.expect("a publisher task");
    }
    transport.close();
    for consumer in consumers {
        consumer.await.expect("a consumer task");
    }
    let seen = lock(&seen);
    assert_eq!(seen.len(), total, "{rule}: every event delivered");
    for id in &ids {
        assert_eq!(seen.get(id), Some(&1), "{rule}: event {id} delivered exactly once");
    }
}

async fn products_are_admitted_over_capacity<T: Transport>(transport: T, capacity: usize) {
    let rule = "products of ack are admitted over capacity";
    let quick = Duration::from_secs(5);
    transport.publish((0..capacity).map(|n| event(A, &format!("s{n}"), n)).collect()).await.expect("publish");
    let mut subscription = subscribe(&transport, both()).await;
    let first = next(&mut subscription, rule).await;
    // The slot it freed is taken again: the transport is full.
    tokio::time::timeout(quick, transport.publish(vec![event(B, "refill", capacity)]))
        .await
        .unwrap_or_else(|_| panic!("{rule}: a free slot must take an event"))
        .expect("publish into a free slot");
    let products = (0..3).map(|n| event(B, "product", 1000 + n)).collect();
    tokio::time::timeout(quick, first.ack(products))
        .await
        .unwrap_or_else(|_| panic!("{rule}: ack waited for room"))
        .unwrap_or_else(|e| panic!("{rule}: ack refused the products: {e}"));
    let mut left = capacity + 3;
    while left > 0 {
        let delivery = next(&mut subscription, rule).await;
        ack(delivery, vec![], rule).await;
        left -= 1;
    }
    close_and_expect_nothing(&transport, &mut subscription, rule).await;
}

async fn an_event_without_to_refuses_the_batch<T: Transport>(transport: T) {
    let rule = "an event without `to` refuses its whole batch";
    let no_to = Event::from_json_value(json!({
        "id": "conformance-no-to", "source": "com.conformance.client", "specversion": "1.0",
        "type": A, "subject": "s", "datacontenttype": "application/json", "data": {},
        "time": "2024-01-01T00:00:00Z",
    }))
    .expect("a valid event without `to`");
    match transport.publish(vec![event(A, "s", 0), no_to]).await {
        Err(TransportError::MissingTo { id }) => {
            assert_eq!(id, "conformance-no-to", "{rule}: names the event")
        }
        other => panic!("{rule}: expected MissingTo, got {other:?}"),
    }
    let mut subscription = subscribe(&transport, both()).await;
    close_and_expect_nothing(&transport, &mut subscription, rule).await;
}

async fn an_event_too_large_refuses_the_batch<T: Transport>(transport: T) {
    let rule =
        "an event larger than the transport takes (2 MiB, over the 1 MiB default) refuses its whole batch";
    let big = Event::builder()
        .id("conformance-too-large")
        .source("com.conformance.client")
        .r#type(A)
        .to(A)
        .subject("s")
        .data_json(json!({"blob": "x".repeat(2 * 1024 * 1024)}))
        .build()
        .expect("a valid event");
    match transport.publish(vec![event(A, "s", 0), big]).await {
        Err(e) => {
            assert!(!e.is_transient(), "{rule}: publishing it again cannot succeed: {e}");
            assert!(e.to_string().contains("conformance-too-large"), "{rule}: names the event: {e}");
        }
        Ok(()) => panic!("{rule}: the batch was accepted"),
    }
    let mut subscription = subscribe(&transport, both()).await;
    close_and_expect_nothing(&transport, &mut subscription, rule).await;
}

async fn close_refuses_outsiders_and_drains<T: Transport>(transport: T) {
    let rule = "close: outside publishes refused, queued work and its products drained, then None";
    transport.publish((0..3).map(|n| event(A, &format!("s{n}"), n)).collect()).await.expect("publish");
    let mut subscription = subscribe(&transport, both()).await;
    transport.close();
    match transport.publish(vec![event(A, "late", 9)]).await {
        Err(TransportError::Closed) => {}
        other => panic!("{rule}: expected Closed, got {other:?}"),
    }
    let first = next(&mut subscription, rule).await;
    ack(first, vec![event(B, "product", 100)], rule).await;
    let mut delivered = 1;
    while let Some(delivery) = subscription.next().await {
        delivered += 1;
        ack(delivery, vec![], rule).await;
    }
    assert_eq!(delivered, 4, "{rule}: the three queued events and the product");
}
