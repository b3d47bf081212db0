//! Durable nodes over SQLite on the NATS transport: many averaging workflows (orchestrator →
//! add → divide → client) complete exactly once, with nothing left in flight; two nodes over
//! the same database file and stream share the work.

mod common;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use orchestrator::prelude::*;
use orchestrator_nats::{NatsConfig, NatsTransport};

use common::workload::{Client, Seen, check, init, node, open, wait_for};
use common::{config, delete, nats_url};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_node_on_nats_completes_every_workflow_exactly_once() {
    let Some(url) = nats_url() else { return };
    let n = 200;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = open(&dir.path().join("node.db"), "node-a");
    let transport = NatsTransport::connect(config(&url)).await.expect("connect");
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
    println!("{n} workflows on one node over NATS: {:?}", started.elapsed());
    tokio::time::timeout(Duration::from_secs(30), node.shutdown()).await.expect("the node shuts down");
    assert!(node.take_dead_letters().is_empty(), "nothing dead-lettered by the node");
    check(&store, &transport, &seen, &inits).await;
    delete(&transport).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_over_one_stream_share_the_work() {
    let Some(url) = nats_url() else { return };
    let n = 200;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("shared.db");
    let deployment: NatsConfig = config(&url);
    let (store_a, store_b) = (open(&path, "node-a"), open(&path, "node-b"));
    let transport_a = NatsTransport::connect(deployment.clone()).await.expect("connect");
    let transport_b = NatsTransport::connect(deployment).await.expect("connect");
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

/// The orchestrator and the services in separate durable nodes, each over its own database:
/// an event leaves a node's outbox once the stream stored it, so the requests the orchestrator
/// sends to the other node, and the answers that come back, stay in neither outbox (before
/// the transport said it stores what it accepts, both outboxes kept them for good).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_over_separate_stores_leave_nothing_in_their_outboxes() {
    use orchestrator::handler::EventHandler;
    use orchestrator::orchestration::Orchestrator;
    use orchestrator::outbox::Outbox;
    use orchestrator::runtime::Node;
    use orchestrator_examples::calculator::flows::AverageFlow;
    use orchestrator_examples::calculator::services;

    let Some(url) = nats_url() else { return };
    let n = 100;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let deployment: NatsConfig = config(&url);
    let flows = open(&dir.path().join("flows.db"), "flows");
    let workers = open(&dir.path().join("services.db"), "services");
    let transport_a = NatsTransport::connect(deployment.clone()).await.expect("connect");
    let transport_b = NatsTransport::connect(deployment).await.expect("connect");
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
    let inits: Vec<Event> = (0..n).map(|i| init("apart", i)).collect();
    for init in &inits {
        orchestrating.start(init.clone()).await.expect("started");
    }
    wait_for(&seen, n, Duration::from_secs(120)).await;
    for node_stats in [orchestrating.dispatcher().stats(), serving.dispatcher().stats()] {
        assert!(node_stats.delivered > 0, "both nodes handled events");
    }
    tokio::time::timeout(Duration::from_secs(30), orchestrating.shutdown()).await.expect("shut down");
    tokio::time::timeout(Duration::from_secs(30), serving.shutdown()).await.expect("shut down");
    // Every workflow once, nothing in the orchestrating node's outbox or the stream.
    check(&flows, &transport_a, &seen, &inits).await;
    let left = workers.pending(0, 10).await.expect("the serving node's outbox");
    assert!(left.is_empty(), "nothing left in the serving node's outbox: {left:?}");
    delete(&transport_a).await;
}
