//! Deliveries whose consumer died are taken over with `XAUTOCLAIM` after the visibility timeout,
//! and a heartbeat keeps a long handler's delivery from being taken over:
//!
//! * a consumer that takes deliveries and "dies" in this process (never settles them, leaves);
//! * a worker process killed with SIGKILL while it holds deliveries (its connections die with
//!   it): this binary again, running `claim_child` with `ORCHESTRATOR_REDIS_CLAIM_PREFIX` set; it
//!   prints `HELD <n>` once it holds its deliveries and waits to be killed;
//! * a delivery extended every 200 ms for three visibility timeouts stays with its consumer;
//! * consumers do not pile up in the groups: a subscription that ends holding nothing removes
//!   its consumer, and a consumer that died is removed once it holds nothing and was idle for
//!   ten visibility timeouts.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use orchestrator::event::Event;
use orchestrator::transport::{Delivery, Subscription, Topics, Transport};
use orchestrator_redis::{RedisConfig, RedisTransport};
use serde_json::json;

use common::{delete, fresh_prefix, redis_url};

const TOPIC: &str = "com.claim.work";
const VISIBILITY: Duration = Duration::from_secs(1);
const CHILD_PREFIX: &str = "ORCHESTRATOR_REDIS_CLAIM_PREFIX";

fn deployment(url: &str, prefix: &str) -> RedisConfig {
    RedisConfig {
        poll: Duration::from_millis(20),
        block: Duration::from_millis(500),
        visibility_timeout: VISIBILITY,
        ..RedisConfig::new(url).prefix(prefix)
    }
}

fn event(n: usize) -> Event {
    Event::builder()
        .id(format!("work-{n}"))
        .source("com.claim.client")
        .r#type("com.claim.call")
        .to(TOPIC)
        .subject(format!("s{n}"))
        .data_json(json!({ "n": n }))
        .build()
        .expect("a valid event")
}

fn only() -> Topics {
    Topics::Only(vec![TOPIC.to_owned()])
}

/// Takes `n` deliveries from `transport` (10 s each at most), acknowledges them, and returns
/// their event ids and attempts, with when the first came.
async fn take_over(transport: &RedisTransport, n: usize) -> (Vec<(String, u32)>, Instant) {
    let mut subscription = transport.subscribe(only()).await.expect("subscribe");
    let mut got = Vec::new();
    let mut first = None;
    while got.len() < n {
        let delivery = tokio::time::timeout(Duration::from_secs(10), subscription.next())
            .await
            .expect("a delivery within 10 s")
            .expect("a delivery");
        first.get_or_insert_with(Instant::now);
        got.push((delivery.event().id().to_owned(), delivery.attempt()));
        delivery.ack(vec![]).await.expect("ack");
    }
    got.sort();
    (got, first.expect("at least one delivery"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_of_a_consumer_that_died_are_taken_over_after_the_visibility_timeout() {
    let Some(url) = redis_url() else { return };
    let prefix = fresh_prefix();
    let dying = RedisTransport::connect(deployment(&url, &prefix)).await.expect("connect");
    let survivor = RedisTransport::connect(deployment(&url, &prefix)).await.expect("connect");
    dying.publish((0..3).map(event).collect()).await.expect("publish");
    let mut subscription = dying.subscribe(only()).await.expect("subscribe");
    let mut held = Vec::new();
    for _ in 0..3 {
        let delivery = tokio::time::timeout(Duration::from_secs(10), subscription.next())
            .await
            .expect("a delivery within 10 s")
            .expect("a delivery");
        assert_eq!(delivery.attempt(), 1);
        held.push(delivery.event().id().to_owned());
        // The consumer "dies": its deliveries are never settled, nor put back.
        std::mem::forget(delivery);
    }
    let died = Instant::now();
    drop(subscription);
    dying.close();

    let (got, first) = take_over(&survivor, 3).await;
    held.sort();
    assert_eq!(got, held.iter().map(|id| (id.clone(), 2)).collect::<Vec<_>>(), "each taken over once");
    let after = first.duration_since(died);
    assert!(
        after >= VISIBILITY - Duration::from_millis(100),
        "taken over after {after:?}, before the timeout"
    );
    assert_eq!(survivor.remaining().await.expect("remaining"), 0, "nothing left");
    assert!(survivor.dead_letters(None, 10).await.expect("dead letters").is_empty());
    survivor.close();
    delete(&survivor).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heartbeat_keeps_a_long_handlers_delivery() {
    let Some(url) = redis_url() else { return };
    let prefix = fresh_prefix();
    let worker = RedisTransport::connect(deployment(&url, &prefix)).await.expect("connect");
    let other = RedisTransport::connect(deployment(&url, &prefix)).await.expect("connect");
    worker.publish(vec![event(0)]).await.expect("publish");
    let mut subscription = worker.subscribe(only()).await.expect("subscribe");
    let delivery = tokio::time::timeout(Duration::from_secs(10), subscription.next())
        .await
        .expect("a delivery within 10 s")
        .expect("a delivery");
    // Another consumer waits for work all along.
    let mut rival = other.subscribe(only()).await.expect("subscribe");
    let started = Instant::now();
    while started.elapsed() < 3 * VISIBILITY {
        delivery.extend(VISIBILITY).await.expect("extend");
        if let Ok(Some(stolen)) = tokio::time::timeout(Duration::from_millis(200), rival.next()).await {
            panic!(
                "taken over after {:?} despite the heartbeat (attempt {})",
                started.elapsed(),
                stolen.attempt()
            );
        }
    }
    delivery.ack(vec![]).await.expect("ack");
    if let Ok(Some(late)) = tokio::time::timeout(VISIBILITY + VISIBILITY / 2, rival.next()).await {
        panic!("delivered again after its ack (attempt {})", late.attempt());
    }
    assert_eq!(worker.remaining().await.expect("remaining"), 0);
    worker.close();
    other.close();
    assert!(tokio::time::timeout(Duration::from_secs(10), rival.next()).await.expect("the end").is_none());
    delete(&worker).await;
}

/// The child side of the kill test: holds every delivery it gets until killed; a no-op in a
/// normal test run.
#[test]
fn claim_child() {
    let Ok(prefix) = std::env::var(CHILD_PREFIX) else { return };
    let url = std::env::var("REDIS_URL").expect("the parent passes REDIS_URL");
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build();
    runtime.expect("a runtime").block_on(async {
        let transport = RedisTransport::connect(deployment(&url, &prefix)).await.expect("connect");
        let mut subscription = transport.subscribe(only()).await.expect("subscribe");
        let mut held = Vec::new();
        for _ in 0..3 {
            held.push(subscription.next().await.expect("a delivery"));
        }
        println!("HELD {}", held.len());
        tokio::time::sleep(Duration::from_secs(60)).await;
        println!("NOT KILLED");
    });
}

/// A worker process, killed when dropped (also when the test fails).
struct Worker(Child);

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_of_a_killed_worker_process_are_taken_over() {
    let Some(url) = redis_url() else { return };
    let prefix = fresh_prefix();
    let survivor = RedisTransport::connect(deployment(&url, &prefix)).await.expect("connect");
    survivor.publish((0..3).map(event).collect()).await.expect("publish");
    let mut worker = Worker(
        Command::new(std::env::current_exe().expect("this test binary"))
            .args(["claim_child", "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD_PREFIX, &prefix)
            .env("REDIS_URL", &url)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the worker process"),
    );
    let stdout = worker.0.stdout.take().expect("its stdout");
    let held = tokio::task::spawn_blocking(move || {
        BufReader::new(stdout).lines().map_while(Result::ok).find(|line| line.contains("HELD"))
    });
    let held = tokio::time::timeout(Duration::from_secs(30), held)
        .await
        .expect("the worker holds its deliveries within 30 s")
        .expect("the reading task");
    assert!(held.is_some_and(|line| line.contains("HELD 3")), "the worker said HELD 3");
    worker.0.kill().expect("SIGKILL the worker");
    worker.0.wait().expect("the worker ended");
    let killed = Instant::now();

    let (got, first) = take_over(&survivor, 3).await;
    let expected: Vec<(String, u32)> = (0..3).map(|n| (format!("work-{n}"), 2)).collect();
    assert_eq!(got, expected, "each taken over once, on its second delivery");
    // The worker read them before it was killed: they are taken over at most a visibility
    // timeout (and a claim period) after the kill.
    assert!(first.duration_since(killed) <= VISIBILITY * 3, "taken over {:?} after the kill", first - killed);
    assert_eq!(survivor.remaining().await.expect("remaining"), 0, "nothing left");
    survivor.close();
    delete(&survivor).await;
}

/// The consumers of `topic`'s group.
async fn consumers(transport: &RedisTransport) -> Vec<String> {
    let info: redis::Value = redis::cmd("XINFO")
        .arg("CONSUMERS")
        .arg(transport.config().stream_key(TOPIC))
        .arg(&transport.config().group)
        .query_async(&mut transport.connection())
        .await
        .expect("XINFO CONSUMERS");
    let redis::Value::Array(consumers) = info else { panic!("XINFO CONSUMERS: {info:?}") };
    consumers
        .iter()
        .filter_map(|c| match c {
            redis::Value::Array(fields) => match fields.as_slice() {
                [_, redis::Value::BulkString(name), ..] => Some(String::from_utf8_lossy(name).into_owned()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// Waits until `topic`'s group has the consumers `expected` (at most `within`).
async fn wait_for_consumers(transport: &RedisTransport, expected: &[&str], within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let mut now = consumers(transport).await;
        now.sort();
        if now == expected {
            return;
        }
        assert!(Instant::now() < deadline, "consumers {now:?}, expected {expected:?} within {within:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumers_that_hold_nothing_are_removed() {
    let Some(url) = redis_url() else { return };
    let prefix = fresh_prefix();
    let short = |url: &str| RedisConfig {
        visibility_timeout: Duration::from_millis(300),
        ..deployment(url, &prefix)
    };
    let leaving = RedisTransport::connect(short(&url)).await.expect("connect");
    leaving.publish(vec![event(0)]).await.expect("publish");
    let mut subscription = leaving.subscribe(only()).await.expect("subscribe");
    let name = subscription.consumer().to_owned();
    let delivery = tokio::time::timeout(Duration::from_secs(10), subscription.next())
        .await
        .expect("a delivery within 10 s")
        .expect("a delivery");
    delivery.ack(vec![]).await.expect("ack");
    wait_for_consumers(&leaving, &[&name], Duration::from_secs(5)).await;
    drop(subscription);
    wait_for_consumers(&leaving, &[], Duration::from_secs(5)).await;

    // A consumer that dies holding a delivery stays until its delivery is taken over and it
    // has been idle for ten visibility timeouts (3 s here).
    let dying = RedisTransport::connect(short(&url)).await.expect("connect");
    dying.publish(vec![event(1)]).await.expect("publish");
    let mut subscription = dying.subscribe(only()).await.expect("subscribe");
    let dead = subscription.consumer().to_owned();
    let delivery = tokio::time::timeout(Duration::from_secs(10), subscription.next())
        .await
        .expect("a delivery within 10 s")
        .expect("a delivery");
    std::mem::forget(delivery);
    drop(subscription);
    tokio::time::sleep(Duration::from_millis(500)).await;
    wait_for_consumers(&dying, &[&dead], Duration::from_secs(5)).await;
    let survivor = RedisTransport::connect(short(&url)).await.expect("connect");
    let mut subscription = survivor.subscribe(only()).await.expect("subscribe");
    let alive = subscription.consumer().to_owned();
    let taken = tokio::time::timeout(Duration::from_secs(10), subscription.next())
        .await
        .expect("taken over within 10 s")
        .expect("a delivery");
    assert_eq!((taken.event().id(), taken.attempt()), ("work-1", 2));
    taken.ack(vec![]).await.expect("ack");
    wait_for_consumers(&survivor, &[&alive], Duration::from_secs(10)).await;
    survivor.close();
    assert!(
        tokio::time::timeout(Duration::from_secs(10), subscription.next()).await.expect("the end").is_none()
    );
    wait_for_consumers(&survivor, &[], Duration::from_secs(5)).await;
    delete(&survivor).await;
}
