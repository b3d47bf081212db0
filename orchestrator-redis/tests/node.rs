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

/// The orchestrator and the services in separate durable nodes, each over its own database: an
/// event leaves a node's outbox once Redis acknowledged it, so neither outbox keeps what the
/// other node consumed. With `keep_until_consumed` the orchestrating node's outbox keeps its
/// requests (consumed by the other node, over the other store), as the setting says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_over_separate_stores_leave_nothing_in_their_outboxes() {
    use orchestrator::handler::EventHandler;
    use orchestrator::orchestration::Orchestrator;
    use orchestrator::outbox::Outbox;
    use orchestrator::runtime::Node;
    use orchestrator_examples::calculator::flows::AverageFlow;
    use orchestrator_examples::calculator::services;

    let Some(url) = redis_url() else { return };
    for keep_until_consumed in [false, true] {
        let n = 50;
        let dir = tempfile::tempdir().expect("a temporary directory");
        let deployment = orchestrator_redis::RedisConfig { keep_until_consumed, ..config(&url) };
        let flows = open(&dir.path().join("flows.db"), "flows");
        let workers = open(&dir.path().join("services.db"), "services");
        let transport_a = RedisTransport::connect(deployment.clone()).await.expect("connect");
        let transport_b = RedisTransport::connect(deployment).await.expect("connect");
        assert_eq!(transport_a.stores_published(), !keep_until_consumed);
        let (add, divide) = (services::add().expect("add"), services::divide().expect("divide"));
        let seen = Seen::default();
        let orchestrating = Node::builder(Arc::clone(&flows))
            .transport(transport_a.clone())
            .durable()
            .orchestrator(Orchestrator::builder(Arc::clone(&flows)).machine::<AverageFlow>())
            .service(Client::new(&seen))
            .remote(add.source())
            .remote(divide.source())
            .without_timers()
            .build()
            .await
            .expect("the orchestrating node");
        let serving = Node::builder(Arc::clone(&workers))
            .transport(transport_b.clone())
            .durable()
            .service(add)
            .service(divide)
            .without_timers()
            .build()
            .await
            .expect("the serving node");
        let inits: Vec<Event> =
            (0..n).map(|i| init(if keep_until_consumed { "kept" } else { "apart" }, i)).collect();
        for init in &inits {
            orchestrating.start(init.clone()).await.expect("started");
        }
        wait_for(&seen, n, Duration::from_secs(120)).await;
        tokio::time::timeout(Duration::from_secs(30), orchestrating.shutdown()).await.expect("shut down");
        tokio::time::timeout(Duration::from_secs(30), serving.shutdown()).await.expect("shut down");
        let left = (
            flows.pending(0, 1_000).await.expect("an outbox").len(),
            workers.pending(0, 1_000).await.expect("an outbox").len(),
        );
        if keep_until_consumed {
            // Each workflow's two requests, consumed over the other store; the answers likewise.
            assert_eq!(left, (2 * n, 2 * n), "kept until a node of the same store consumes them");
        } else {
            check(&flows, &transport_a, &seen, &inits).await;
            assert_eq!(left, (0, 0), "nothing left in either outbox");
        }
        delete(&transport_a).await;
    }
}
