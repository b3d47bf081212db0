//! The step of an event delivered by the store's queue reads its workflow from the claim: the
//! claim returned the record (or said that the workflow does not exist yet), and the step's
//! `acquire` makes no read of its own. A read gone stale meanwhile (another process wrote the
//! workflow after the claim) is refused by the commit's compare-and-swap, and the retry reads
//! afresh: nothing is written over.

mod common;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use orchestrator::event::Event;
use orchestrator::memory::{
    Commit, EventKey, JournalEntry, Memory, MemoryError, MemoryExt, NodeId, OutboxStep,
};
use orchestrator::memory::{Retention, WriteMeta};
use orchestrator::transport::{Delivery, Subscription, Topics, Transport};
use orchestrator_postgres::{PgDelivery, PgQueue, PgStore, QueueConfig};

use common::{config, database_url, drop_schema, fresh_schema};

const ORCHESTRATOR: &str = "com.claim.reads";

fn event(wf: &str, id: &str) -> Event {
    Event::builder()
        .id(id)
        .source("com.claim.client")
        .r#type("com.claim.step")
        .to(ORCHESTRATOR)
        .subject(wf)
        .data_json(serde_json::json!({ "id": id }))
        .build()
        .expect("event")
}

/// A step's commit of `record` over `prev`, taking `consumed` out of the queue.
async fn commit(
    store: &PgStore<String>,
    wf: &str,
    consumed: &Event,
    record: &str,
    prev: Option<u64>,
) -> Result<u64, MemoryError> {
    let entry = JournalEntry { at: SystemTime::now(), consumed: Some(consumed), produced: &[] };
    let meta = WriteMeta { entry: Some(entry), ..WriteMeta::new(wf, ORCHESTRATOR) };
    let outbox = Some(OutboxStep { consumed: Some(consumed.id()), produced: &[] });
    store.commit(Commit { outbox, ..Commit::new(wf, record.to_owned(), prev, meta) }).await
}

/// Publishes `consumed` and waits for its delivery.
async fn deliver(
    queue: &PgQueue,
    subscription: &mut impl Subscription<Delivery = PgDelivery>,
    consumed: &Event,
) -> PgDelivery {
    queue.publish(vec![consumed.clone()]).await.expect("publish");
    let delivery = tokio::time::timeout(Duration::from_secs(10), subscription.next())
        .await
        .expect("a delivery within 10 s")
        .expect("a delivery");
    assert_eq!(delivery.event(), consumed);
    delivery
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claimed_step_uses_the_claims_read_and_a_stale_one_is_refused() {
    let Some(url) = database_url() else { return };
    let schema = fresh_schema();
    let open = |node: &str| {
        let mut cfg = config(&url, &schema, Duration::from_secs(30), Retention::Keep);
        cfg.node = NodeId::new(node);
        PgStore::<String>::open(cfg)
    };
    let store = open("stepper").await.expect("open");
    // Another process writing the same workflow.
    let other = open("other").await.expect("open");
    let queue = store.queue(QueueConfig { poll: Duration::from_millis(20), ..QueueConfig::default() });
    let mut subscription = queue.subscribe(Topics::All).await.expect("subscribe");
    let wf = "wf-claim-reads";

    // The first event: the claim found no workflow, and the step takes that without a read.
    let first = event(wf, "e-1");
    let delivery = deliver(&queue, &mut subscription, &first).await;
    let meta = WriteMeta::new(wf, ORCHESTRATOR);
    assert_eq!(other.write(wf, &"theirs".to_owned(), None, None, &meta).await.expect("their write"), 1);
    let acquired = store.acquire(wf, EventKey::of(&first), false).await.expect("acquire").expect("acquired");
    assert!(acquired.stored.is_none(), "the claim's read (no workflow yet), not a read of its own");
    match commit(&store, wf, &first, "mine", None).await {
        Err(MemoryError::Conflict { expected: None, found: Some(1), .. }) => {}
        other => panic!("a commit over a stale read must conflict, got {other:?}"),
    }
    // The retry reads afresh.
    let acquired = store.acquire(wf, EventKey::of(&first), false).await.expect("acquire").expect("acquired");
    let stored = acquired.stored.expect("their workflow");
    assert_eq!((stored.version, stored.record), (1, Arc::new("theirs".to_owned())));
    assert_eq!(commit(&store, wf, &first, "mine-1", Some(1)).await.expect("commit"), 2);
    delivery.ack(vec![]).await.expect("ack");

    // A later event: the claim read version 2.
    let second = event(wf, "e-2");
    let delivery = deliver(&queue, &mut subscription, &second).await;
    assert_eq!(other.write(wf, &"theirs-3".to_owned(), Some(2), None, &meta).await.expect("their write"), 3);
    let acquired = store.acquire(wf, EventKey::of(&second), false).await.expect("acquire").expect("acquired");
    let stored = acquired.stored.expect("the claim's read");
    assert_eq!((stored.version, stored.record), (2, Arc::new("mine-1".to_owned())), "the claim's read");
    match commit(&store, wf, &second, "mine-x", Some(2)).await {
        Err(MemoryError::Conflict { expected: Some(2), found: Some(3), .. }) => {}
        other => panic!("a commit over a stale read must conflict, got {other:?}"),
    }
    let acquired = store.acquire(wf, EventKey::of(&second), false).await.expect("acquire").expect("acquired");
    assert_eq!(acquired.stored.map(|s| s.version), Some(3), "the retry reads afresh");
    assert_eq!(commit(&store, wf, &second, "mine-4", Some(3)).await.expect("commit"), 4);
    delivery.ack(vec![]).await.expect("ack");

    let last = store.read(wf).await.expect("read").expect("workflow");
    assert_eq!((last.version, last.record), (4, "mine-4".to_owned()));
    assert_eq!(queue.depth(10).await.expect("depth"), 0, "both events left the queue");
    drop(subscription);
    drop((store, other));
    drop_schema(&url, &schema).await;
}
