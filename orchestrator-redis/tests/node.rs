//! Durable nodes over SQLite on the Redis transport: many averaging workflows (orchestrator →
//! add → divide → client) complete exactly once, with nothing left in flight; two nodes over
//! the same database file and streams share the work; init events published several times
//! (Redis keeps every copy) still start one workflow each, which completes once.

mod common;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use orchestrator::prelude::*;
use orchestrator::transport::Transport;
use orchestrator_redis::RedisTransport;

use common::workload::{Client, Seen, check, check_faults, init, node, open, wait_for};
use common::{config, delete, redis_url};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_node_on_redis_completes_every_workflow_exactly_once() {
    let Some(url) = redis_url() else { return };
    let n = 200;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = open(&dir.path().join("node.db"), "node-a");
    let transport = RedisTransport::connect(config(&url)).await.expect("connect");
    let seen = Seen::default();
    let node = Arc::new(node(&store, transport.clone(), Some(Client::new(&seen))).await);
    let started = Instant::now();
    let inits: Vec<Event> = (0..n).map(|i| init("one", i)).collect();
    let starts: Vec<_> = inits
        .iter()
        .cloned()
        .map(|init| {
            let node = Arc::clone(&node);
            tokio::spawn(async move { node.start(init).await.expect("started") })
        })
        .collect();
    for start in starts {
        start.await.expect("a start");
    }
    wait_for(&seen, n, Duration::from_secs(120)).await;
    println!("{n} workflows on one node over Redis: {:?}", started.elapsed());
    tokio::time::timeout(Duration::from_secs(30), node.shutdown()).await.expect("the node shuts down");
    assert!(node.take_dead_letters().is_empty(), "nothing dead-lettered by the node");
    check(&store, &transport, &seen, &inits).await;
    delete(&transport).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_over_one_prefix_share_the_work() {
    let Some(url) = redis_url() else { return };
    let n = 200;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("shared.db");
    let deployment = config(&url);
    let (store_a, store_b) = (open(&path, "node-a"), open(&path, "node-b"));
    let transport_a = RedisTransport::connect(deployment.clone()).await.expect("connect");
    let transport_b = RedisTransport::connect(deployment).await.expect("connect");
    let seen = Seen::default();
    let (client_a, client_b) = (Client::new(&seen), Client::new(&seen));
    let node_a = Arc::new(node(&store_a, transport_a.clone(), Some(client_a.clone())).await);
    let node_b = Arc::new(node(&store_b, transport_b.clone(), Some(client_b.clone())).await);
    let inits: Vec<Event> = (0..n).map(|i| init("two", i)).collect();
    let starts: Vec<_> = inits
        .iter()
        .cloned()
        .enumerate()
        .map(|(i, init)| {
            let node = Arc::clone(if i % 2 == 0 { &node_a } else { &node_b });
            tokio::spawn(async move { node.start(init).await.expect("started") })
        })
        .collect();
    for start in starts {
        start.await.expect("a start");
    }
    wait_for(&seen, n, Duration::from_secs(120)).await;
    let (delivered_a, delivered_b) =
        (node_a.dispatcher().stats().delivered, node_b.dispatcher().stats().delivered);
    println!(
        "deliveries: node a {delivered_a}, node b {delivered_b}; completions handled: a {}, b {}",
        client_a.handled.load(Ordering::SeqCst),
        client_b.handled.load(Ordering::SeqCst)
    );
    assert!(delivered_a > 0 && delivered_b > 0, "both nodes handled events");
    for node in [&node_a, &node_b] {
        tokio::time::timeout(Duration::from_secs(30), node.shutdown()).await.expect("the node shuts down");
        assert!(node.take_dead_letters().is_empty(), "nothing dead-lettered by a node");
    }
    check(&store_a, &transport_a, &seen, &inits).await;
    delete(&transport_a).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_init_published_several_times_starts_one_workflow() {
    let Some(url) = redis_url() else { return };
    let n = 20;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let transport = RedisTransport::connect(config(&url)).await.expect("connect");
    let inits: Vec<Event> = (0..2 * n).map(|i| init("dup", i)).collect();
    // Before any node: three copies in one call, and one more in another call, of each of the
    // first `n` inits. Redis keeps every copy.
    for init in &inits[..n] {
        transport.publish(vec![init.clone(); 3]).await.expect("published");
    }
    for init in &inits[..n] {
        transport.publish(vec![init.clone()]).await.expect("published again");
    }
    assert_eq!(transport.waiting().await.expect("waiting"), 4 * n as u64, "every copy is stored");

    let store = open(&dir.path().join("node.db"), "node");
    let seen = Seen::default();
    let node = node(&store, transport.clone(), Some(Client::new(&seen))).await;
    // With a node running: the other inits started through it, then published again twice
    // while their workflows run, and once more: handled idempotently (the journal answers
    // with the same products, so a service may answer twice, and the workflow journals the
    // stale answer without stepping).
    for init in &inits[n..] {
        node.start(init.clone()).await.expect("started");
        transport.publish(vec![init.clone(), init.clone()]).await.expect("published again");
        transport.publish(vec![init.clone()]).await.expect("published again");
    }
    wait_for(&seen, 2 * n, Duration::from_secs(60)).await;
    // Time for a duplicate that slipped through to complete a second time.
    tokio::time::sleep(Duration::from_secs(1)).await;
    tokio::time::timeout(Duration::from_secs(30), node.shutdown()).await.expect("the node shuts down");
    assert!(node.take_dead_letters().is_empty(), "nothing dead-lettered by the node");
    check_faults(&store, &transport, &seen, &inits).await;
    let handled = common::workload::lock(&seen).values().map(|(_, _, deliveries)| deliveries).sum::<usize>();
    assert_eq!(handled, 2 * n, "each completion was handled once");
    delete(&transport).await;
}
