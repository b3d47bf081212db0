//! A step longer than the queue's visibility deadline: with the node's heartbeat, its delivery is
//! extended while the handler runs and the event is handled once; without it, the claim lapses
//! mid-step and another consumer handles the event again, and again (the control: it shows the
//! first check can fail).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use orchestrator::handler::EventHandler;
use orchestrator::memory::Retention;
use orchestrator::orchestration::WorkflowRecord;
use orchestrator::prelude::*;
use orchestrator::runtime::{Heartbeat, Node};
use orchestrator::transport::Transport;
use orchestrator_postgres::{PgStore, QueueConfig};

const SLOW: &str = "com.test.slow";

/// A service that takes 2.5 s (more than twice the queue's 1 s visibility) and counts its runs.
#[derive(Clone, Default)]
struct Slow {
    started: Arc<AtomicUsize>,
    finished: Arc<AtomicUsize>,
}

impl EventHandler for Slow {
    fn source(&self) -> &str {
        SLOW
    }

    async fn execute(&self, _event: &Event) -> Result<Vec<Event>, Violation> {
        self.started.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(2_500)).await;
        self.finished.fetch_add(1, Ordering::SeqCst);
        Ok(Vec::new())
    }
}

/// Runs one slow event on a node over a fresh schema; returns how many times it was started.
async fn runs(url: &str, heartbeat: Option<Heartbeat>) -> usize {
    let schema = common::fresh_schema();
    let config = common::config(url, &schema, Duration::from_secs(30), Retention::Keep);
    let store: Arc<PgStore<WorkflowRecord>> = Arc::new(PgStore::open(config).await.expect("open"));
    let queue = store.queue(QueueConfig {
        visibility: Duration::from_secs(1),
        poll: Duration::from_millis(50),
        ..QueueConfig::default()
    });
    let slow = Slow::default();
    let builder = Node::builder(Arc::clone(&store)).durable().transport(queue.clone()).service(slow.clone());
    let builder = match heartbeat {
        Some(heartbeat) => builder.heartbeat(heartbeat),
        None => builder.without_heartbeat(),
    };
    let node = builder.build().await.expect("a node");
    let event = Event::builder()
        .source("com.test.client")
        .r#type(SLOW)
        .to(SLOW)
        .subject("slow-1")
        .data_json(serde_json::json!({}))
        .build()
        .expect("event");
    queue.publish(vec![event]).await.expect("publish");
    let deadline = Instant::now() + Duration::from_secs(30);
    if heartbeat.is_some() {
        while slow.finished.load(Ordering::SeqCst) == 0 || queue.depth(10).await.expect("depth") > 0 {
            assert!(Instant::now() < deadline, "the slow event was not handled within 30 s");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // Long enough for a lapsed claim to be taken again.
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        tokio::time::timeout(Duration::from_secs(30), node.shutdown()).await.expect("the node shuts down");
    } else {
        // Each run outlasts the claim, so its ack finds the claim gone and the event comes back
        // for as long as the node runs: watch for the second run, then drop the node.
        while slow.started.load(Ordering::SeqCst) < 2 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        drop(node);
    }
    common::drop_schema(url, &schema).await;
    slow.started.load(Ordering::SeqCst)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_step_keeps_its_delivery_with_the_heartbeat() {
    let Some(url) = common::database_url() else { return };
    let heartbeat = Heartbeat { every: Duration::from_millis(250), extend_by: Duration::from_secs(1) };
    assert_eq!(runs(&url, Some(heartbeat)).await, 1, "handled once: its claim was extended while it ran");
    assert!(
        runs(&url, None).await >= 2,
        "without the heartbeat the claim lapses mid-step and the event is handled again"
    );
}
