//! Hostile input: entries that are not events of their topic (malformed bytes, JSON that is not
//! an event, an event addressed to another topic, no body, a body larger than `max_body`)
//! become dead letters with their reason and never reach a subscription, and a good event after
//! them is still delivered; events with unusual ids, subjects and topics round-trip; an event
//! larger than `max_body` is refused with a typed, permanent error.

mod common;

use std::time::Duration;

use orchestrator::event::Event;
use orchestrator::transport::{Delivery, Subscription, Topics, Transport, TransportError};
use orchestrator_redis::{RedisConfig, RedisDeadLetter, RedisError, RedisTransport};
use serde_json::json;

use common::{config, delete, redis_url};

const TOPIC: &str = "com.hostile.a";
const MAX_BODY: usize = 4_096;

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

/// Adds an entry with `fields` straight to `topic`'s stream, as another program could.
async fn xadd_raw(transport: &RedisTransport, topic: &str, fields: &[(&str, &[u8])]) {
    let mut cmd = redis::cmd("XADD");
    cmd.arg(transport.config().stream_key(topic)).arg("*");
    for (name, value) in fields {
        cmd.arg(*name).arg(*value);
    }
    let _: String = cmd.query_async(&mut transport.connection()).await.expect("XADD");
}

/// Waits until the transport holds `n` dead letters (at most 10 s) and returns them.
async fn dead_letters(transport: &RedisTransport, n: usize) -> Vec<RedisDeadLetter> {
    for _ in 0..500 {
        let letters = transport.dead_letters(None, 100).await.expect("dead letters");
        if letters.len() >= n {
            return letters;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("fewer than {n} dead letters after 10 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entries_that_are_not_events_of_their_topic_become_dead_letters() {
    let Some(url) = redis_url() else { return };
    let transport =
        RedisTransport::connect(RedisConfig { max_body: MAX_BODY, ..config(&url) }).await.expect("connect");
    let elsewhere = event("com.hostile.other", "elsewhere", "s");
    let elsewhere_json = elsewhere.to_json_vec();
    let oversize = vec![b'x'; MAX_BODY + 100];
    let bodies: Vec<(&[u8], &str)> = vec![
        (b"{ not json", "not a valid event"),
        (br#"{"hello": "world"}"#, "not a valid event"),
        (b"\xff\xfe\x00binary", "not a valid event"),
        (&elsewhere_json, "addressed to"),
        (&oversize, "more than max_body"),
    ];
    for (body, _) in &bodies {
        xadd_raw(&transport, TOPIC, &[("body", body)]).await;
    }
    xadd_raw(&transport, TOPIC, &[("payload", b"no body field")]).await;
    let good = event(TOPIC, "good", "s");
    transport.publish(vec![good.clone()]).await.expect("publish");

    let mut subscription =
        transport.subscribe(Topics::Only(vec![TOPIC.to_owned()])).await.expect("subscribe");
    let delivery = tokio::time::timeout(Duration::from_secs(10), subscription.next())
        .await
        .expect("a delivery within 10 s")
        .expect("a delivery");
    assert_eq!(delivery.event(), &good, "only the valid event is delivered");
    assert_eq!(delivery.attempt(), 1);
    delivery.ack(vec![]).await.expect("ack");

    let letters = dead_letters(&transport, 6).await;
    assert_eq!(letters.len(), 6, "{letters:?}");
    for letter in &letters {
        assert_eq!(letter.topic, TOPIC, "{letter:?}");
        assert_eq!(letter.attempt, 1, "{letter:?}");
        assert!(!letter.entry.is_empty() && !letter.consumer.is_empty(), "{letter:?}");
        assert!(letter.at > std::time::SystemTime::UNIX_EPOCH, "{letter:?}");
    }
    for (body, why) in &bodies {
        let kept = &body[..body.len().min(MAX_BODY)];
        let letter = letters.iter().find(|l| l.body == kept).expect("a dead letter for each entry");
        assert!(letter.reason.contains(why), "{why}: {}", letter.reason);
    }
    let cut = letters.iter().find(|l| l.truncated_from.is_some()).expect("the oversize body, cut");
    assert_eq!(cut.truncated_from, Some(MAX_BODY + 100));
    assert_eq!(cut.body.len(), MAX_BODY);
    let letter = letters.iter().find(|l| l.body == elsewhere_json).expect("its dead letter");
    assert_eq!(letter.decode().expect("an event"), elsewhere);
    let no_body = letters.iter().find(|l| l.fields.is_some()).expect("the entry without a body");
    assert_eq!(no_body.fields.as_deref(), Some("payload"));
    assert!(no_body.reason.contains("no `body` field"), "{}", no_body.reason);
    // Reading on after the third letter gives the last three.
    let rest = transport.dead_letters(Some(&letters[2].id), 100).await.expect("dead letters");
    assert_eq!(rest, letters[3..].to_vec());

    assert_eq!(transport.remaining().await.expect("remaining"), 0, "every entry settled");
    transport.close();
    let end = tokio::time::timeout(Duration::from_secs(10), subscription.next()).await.expect("the end");
    assert!(end.is_none(), "nothing more is delivered");
    delete(&transport).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unusual_ids_subjects_and_topics_round_trip() {
    let Some(url) = redis_url() else { return };
    let transport = RedisTransport::connect(config(&url)).await.expect("connect");
    let topics = [
        "com.hostile.a%20b",
        "com.hostile.*",
        "com.hostile:t:x",
        "com..hostile.",
        "com.hostile.%7Btag%7D~!'()$",
        "urn:a/b?c=d&e#f",
        "com.hostile.%C3%A9",
        "com.hostile.?*x",
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
    assert!(transport.dead_letters(None, 10).await.expect("dead letters").is_empty());
    transport.close();
    let end = tokio::time::timeout(Duration::from_secs(10), subscription.next()).await.expect("the end");
    assert!(end.is_none());
    delete(&transport).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_larger_than_max_body_is_refused_with_a_typed_error() {
    let Some(url) = redis_url() else { return };
    let transport =
        RedisTransport::connect(RedisConfig { max_body: MAX_BODY, ..config(&url) }).await.expect("connect");
    let big = Event::builder()
        .source("com.hostile.client")
        .r#type(TOPIC)
        .to(TOPIC)
        .subject("big")
        .data_json(json!({ "blob": "x".repeat(MAX_BODY) }))
        .build()
        .expect("a valid (big) event");
    let small = event(TOPIC, "small", "s");
    match transport.publish(vec![small, big.clone()]).await {
        Err(error @ TransportError::Backend { transient: false, .. }) => {
            let TransportError::Backend { source, .. } = &error else { unreachable!() };
            match source.downcast_ref::<RedisError>() {
                Some(RedisError::EventTooLarge { id, size, max }) => {
                    assert_eq!(id, big.id());
                    assert!(*size > MAX_BODY && *max == MAX_BODY, "{error}");
                }
                other => panic!("expected EventTooLarge, got {other:?}"),
            }
            assert!(!error.is_transient());
        }
        other => panic!("expected a permanent backend error, got {other:?}"),
    }
    assert_eq!(transport.remaining().await.expect("remaining"), 0, "nothing of the batch was published");
    delete(&transport).await;
}
