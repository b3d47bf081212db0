//! Hostile input: messages that are not events of their topic become dead letters with their
//! reason and never reach a subscription; events with unusual ids, subjects and topics round-trip;
//! an event larger than the server takes is refused with a typed, permanent error.

mod common;

use std::time::Duration;

use async_nats::HeaderMap;
use orchestrator::event::Event;
use orchestrator::transport::{Delivery, Subscription, Topics, Transport, TransportError};
use orchestrator_nats::subject::event_subject;
use orchestrator_nats::{NatsConfig, NatsError, NatsTransport};
use serde_json::json;

use common::{config, delete, nats_url};

const TOPIC: &str = "com.hostile.a";

fn event(topic: &str, id: &str, subject: &str) -> Event {
    Event::builder()
        .id(id)
        .source("com.hostile.client")
        .r#type("com.hostile.event")
        .to(topic)
        .subject(subject)
        .data_json(json!({ "n": 1 }))
        .build()
        .expect("a valid event")
}

/// Publishes `body` straight to `subject` with JetStream, as another program could.
async fn publish_raw(transport: &NatsTransport, subject: String, body: &'static [u8]) {
    let js = async_nats::jetstream::new(transport.client().clone());
    let mut headers = HeaderMap::new();
    headers.insert("Content-Type", "application/cloudevents+json");
    js.publish_with_headers(subject, headers, body.into())
        .await
        .expect("publish")
        .await
        .expect("stored by the stream");
}

/// Waits until the transport holds `n` dead letters (at most 10 s) and returns them.
async fn dead_letters(transport: &NatsTransport, n: usize) -> Vec<orchestrator_nats::NatsDeadLetter> {
    for _ in 0..500 {
        let letters = transport.dead_letters(0, 100).await.expect("dead letters");
        if letters.len() >= n {
            return letters;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("fewer than {n} dead letters after 10 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_that_are_not_events_of_their_topic_become_dead_letters() {
    let Some(url) = nats_url() else { return };
    let transport = NatsTransport::connect(config(&url)).await.expect("connect");
    let prefix = transport.config().subject_prefix.clone();
    let subject = event_subject(&prefix, TOPIC);
    publish_raw(&transport, subject.clone(), b"{ not json").await;
    publish_raw(&transport, subject.clone(), br#"{"hello": "world"}"#).await;
    publish_raw(&transport, subject.clone(), b"\xff\xfe\x00binary").await;
    // A valid event, but addressed to another topic than the subject it came on.
    let elsewhere = event("com.hostile.other", "elsewhere", "s");
    let json: &'static [u8] = Box::leak(elsewhere.to_json_vec().into_boxed_slice());
    publish_raw(&transport, subject.clone(), json).await;
    // A subject of the stream that is no topic's encoding.
    publish_raw(&transport, format!("{prefix}.t.bad~zz"), b"{}").await;
    let good = event(TOPIC, "good", "s");
    transport.publish(vec![good.clone()]).await.expect("publish");

    let mut only = transport.subscribe(Topics::Only(vec![TOPIC.to_owned()])).await.expect("subscribe");
    let delivery = tokio::time::timeout(Duration::from_secs(10), only.next())
        .await
        .expect("a delivery within 10 s")
        .expect("a delivery");
    assert_eq!(delivery.event(), &good, "only the valid event is delivered");
    delivery.ack(vec![]).await.expect("ack");
    let letters = dead_letters(&transport, 4).await;
    assert_eq!(letters.len(), 4, "{letters:?}");
    for letter in &letters {
        assert_eq!(letter.topic.as_deref(), Some(TOPIC), "{letter:?}");
        assert_eq!(letter.subject, subject);
        assert_eq!(letter.attempt, 1);
    }
    let reason_of = |body: &[u8]| {
        let letter = letters.iter().find(|l| l.body == body).expect("a dead letter for each message");
        letter.reason.clone()
    };
    for body in [&b"{ not json"[..], br#"{"hello": "world"}"#, b"\xff\xfe\x00binary"] {
        let reason = reason_of(body);
        assert!(reason.contains("not a valid event"), "{reason}");
    }
    let reason = reason_of(json);
    assert!(reason.contains("addressed to"), "{reason}");
    let letter = letters.iter().find(|l| l.body == json).expect("its dead letter");
    assert_eq!(letter.decode().expect("an event"), elsewhere);

    // A subscription to every topic meets the subject that is no topic's (on its own stream:
    // a work-queue stream refuses a consumer of every topic next to per-topic ones).
    drop(only);
    delete(&transport).await;
    let all = NatsTransport::connect(config(&url)).await.expect("connect");
    let prefix = all.config().subject_prefix.clone();
    publish_raw(&all, format!("{prefix}.t.bad~zz"), b"{}").await;
    let mut every = all.subscribe(Topics::All).await.expect("subscribe");
    // Messages are pulled for subscriptions that wait.
    let waiting = tokio::spawn(async move { every.next().await.map(|d| d.event().id().to_owned()) });
    let letters = dead_letters(&all, 1).await;
    assert!(letters[0].reason.contains("not the subject of a topic"), "{}", letters[0].reason);
    assert_eq!(letters[0].topic, None);
    all.close();
    let end = tokio::time::timeout(Duration::from_secs(10), waiting).await.expect("the end within 10 s");
    assert_eq!(end.expect("the waiting task"), None, "nothing is delivered");
    delete(&all).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unusual_ids_subjects_and_topics_round_trip() {
    let Some(url) = nats_url() else { return };
    let transport = NatsTransport::connect(config(&url)).await.expect("connect");
    // Arvo's rules: `to` and `subject` are encoded URIs (no spaces, no `>`), the id is free.
    let topics = [
        "com.hostile.a%20b",
        "com.hostile.*",
        "com.hostile.%3E",
        "com..hostile.",
        "com.hostile.~!'()$",
        "$JS.API.x",
        "urn:a/b?c=d&e#f",
        "com.hostile.%C3%A9",
    ];
    let ids = ["id with spaces", "id.*.>", "ïd\u{1f}\u{7f}", &"long".repeat(500), "a\r\nb: c"];
    let mut sent = Vec::new();
    for (i, topic) in topics.iter().enumerate() {
        let id = ids[i % ids.len()];
        sent.push(event(topic, &format!("{id}-{i}"), &format!("subject-{i}/with*and.dots$~%20;:@&=+")));
    }
    transport.publish(sent.clone()).await.expect("publish");
    let mut subscription = transport
        .subscribe(Topics::Only(topics.iter().map(|t| (*t).to_owned()).collect()))
        .await
        .expect("subscribe");
    let mut received = Vec::new();
    while received.len() < sent.len() {
        let delivery = tokio::time::timeout(Duration::from_secs(10), subscription.next())
            .await
            .expect("a delivery within 10 s")
            .expect("a delivery");
        received.push(delivery.event().clone());
        delivery.ack(vec![]).await.expect("ack");
    }
    for event in &sent {
        assert!(received.contains(event), "{event:?} round-trips");
    }
    assert!(transport.dead_letters(0, 10).await.expect("dead letters").is_empty());
    transport.close();
    assert!(subscription.next().await.is_none());
    delete(&transport).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_larger_than_the_server_takes_is_refused_with_a_typed_error() {
    let Some(url) = nats_url() else { return };
    let transport = NatsTransport::connect(config(&url)).await.expect("connect");
    let max = transport.client().server_info().max_payload;
    let big = Event::builder()
        .source("com.hostile.client")
        .r#type(TOPIC)
        .to(TOPIC)
        .subject("big")
        .data_json(json!({ "blob": "x".repeat(max + 1) }))
        .build()
        .expect("a valid (big) event");
    let small = event(TOPIC, "small", "s");
    match transport.publish(vec![small, big.clone()]).await {
        Err(error @ TransportError::Backend { transient: false, .. }) => {
            let TransportError::Backend { source, .. } = &error else { unreachable!() };
            match source.downcast_ref::<NatsError>() {
                Some(NatsError::EventTooLarge { id, size, max: limit }) => {
                    assert_eq!(id, big.id());
                    assert!(size > limit && *limit == max, "{error}");
                }
                other => panic!("expected EventTooLarge, got {other:?}"),
            }
            assert!(!error.is_transient());
        }
        other => panic!("expected a permanent backend error, got {other:?}"),
    }
    assert_eq!(transport.waiting().await.expect("waiting"), 0, "nothing of the batch was published");
    delete(&transport).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_message_as_large_as_the_server_takes_is_kept_cut() {
    let Some(url) = nats_url() else { return };
    let transport = NatsTransport::connect(config(&url)).await.expect("connect");
    let size = transport.client().server_info().max_payload - 200;
    let body: &'static [u8] = Box::leak(vec![b'x'; size].into_boxed_slice());
    publish_raw(&transport, event_subject(&transport.config().subject_prefix, TOPIC), body).await;
    let mut subscription =
        transport.subscribe(Topics::Only(vec![TOPIC.to_owned()])).await.expect("subscribe");
    let waiting = tokio::spawn(async move { subscription.next().await.map(|d| d.event().id().to_owned()) });
    let letters = dead_letters(&transport, 1).await;
    assert!(letters[0].reason.contains("not a valid event"), "{}", letters[0].reason);
    assert_eq!(letters[0].truncated_from, Some(size));
    assert!(letters[0].body.len() < size && letters[0].body.iter().all(|b| *b == b'x'));
    transport.close();
    let end = tokio::time::timeout(Duration::from_secs(10), waiting).await.expect("the end within 10 s");
    assert_eq!(end.expect("the waiting task"), None, "nothing is delivered");
    delete(&transport).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_larger_than_max_event_bytes_becomes_a_dead_letter() {
    let Some(url) = nats_url() else { return };
    let transport =
        NatsTransport::connect(NatsConfig { max_event_bytes: 1_000, ..config(&url) }).await.expect("connect");
    let big = Event::builder()
        .id("big")
        .source("com.hostile.client")
        .r#type(TOPIC)
        .to(TOPIC)
        .subject("big")
        .data_json(json!({ "blob": "x".repeat(2_000) }))
        .build()
        .expect("a valid (big) event");
    let json: &'static [u8] = Box::leak(big.to_json_vec().into_boxed_slice());
    publish_raw(&transport, event_subject(&transport.config().subject_prefix, TOPIC), json).await;
    let small = event(TOPIC, "small", "s");
    transport.publish(vec![small.clone()]).await.expect("publish");
    let mut subscription =
        transport.subscribe(Topics::Only(vec![TOPIC.to_owned()])).await.expect("subscribe");
    let delivery = tokio::time::timeout(Duration::from_secs(10), subscription.next())
        .await
        .expect("a delivery within 10 s")
        .expect("a delivery");
    assert_eq!(delivery.event(), &small, "only the event within the limit is delivered");
    delivery.ack(vec![]).await.expect("ack");
    let letters = dead_letters(&transport, 1).await;
    assert_eq!(letters.len(), 1, "{letters:?}");
    let reason = &letters[0].reason;
    assert!(
        reason.contains("not a valid event") && reason.contains("larger than the maximum of 1000 bytes"),
        "{reason}"
    );
    assert_eq!(letters[0].decode().expect("the event, kept whole"), big);
    transport.close();
    assert!(subscription.next().await.is_none());
    delete(&transport).await;
}
