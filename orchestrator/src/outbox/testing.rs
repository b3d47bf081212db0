//! The conformance suite every [`Outbox`] must pass (feature `testing`).
//!
//! ```ignore
//! #[tokio::test]
//! async fn my_outbox_conforms() {
//!     orchestrator::outbox::testing::conformance(|| MyOutbox::new()).await;
//! }
//! ```

use std::sync::Arc;

use super::Outbox;
use crate::event::Event;

/// Runs every check against fresh, empty outboxes made by `make`; panics on the first failure
/// with a message naming the broken rule.
pub async fn conformance<O, F>(make: F)
where
    O: Outbox + 'static,
    F: Fn() -> O,
{
    starts_empty(&make()).await;
    advance_adds_in_order_and_removes_the_consumed(&make()).await;
    an_id_is_in_flight_once(&make()).await;
    positions_grow_and_are_never_reused(&make()).await;
    pending_pages(&make()).await;
    release_removes_those_named(&make()).await;
    concurrent_moves_lose_nothing(Arc::new(make())).await;
}

/// An event with a given subject and a fresh id.
pub fn event(subject: &str) -> Event {
    Event::builder()
        .source("com.conformance.suite")
        .r#type("com.conformance.step")
        .to("com.conformance.target")
        .subject(subject)
        .data_json(serde_json::json!({ "subject": subject }))
        .build()
        .expect("a valid event")
}

async fn ids<O: Outbox>(outbox: &O) -> Vec<String> {
    let pending = outbox.pending(0, 1_000).await.expect("pending");
    pending.into_iter().map(|p| p.event.id().to_owned()).collect()
}

async fn starts_empty<O: Outbox>(outbox: &O) {
    assert!(ids(outbox).await.is_empty(), "a new outbox holds nothing");
    outbox.advance(Some("unknown-id"), &[]).await.expect("removing an absent event is not an error");
}

async fn release_removes_those_named<O: Outbox>(outbox: &O) {
    let events: Vec<Event> = (0..4).map(|_| event("s-release")).collect();
    outbox.advance(None, &events).await.expect("publish");
    outbox.release(&[]).await.expect("releasing nothing");
    outbox.release(&[events[2].id(), "absent-id", events[0].id()]).await.expect("release");
    assert_eq!(
        ids(outbox).await,
        [events[1].id(), events[3].id()],
        "released events leave (absent ids are skipped), the others stay in order"
    );
    outbox.release(&[events[1].id(), events[3].id()]).await.expect("release the rest");
    assert!(ids(outbox).await.is_empty(), "everything released");
}

async fn advance_adds_in_order_and_removes_the_consumed<O: Outbox>(outbox: &O) {
    let init = event("s-1");
    outbox.advance(None, std::slice::from_ref(&init)).await.expect("publish");
    let (a, b) = (event("s-1"), event("s-1"));
    outbox.advance(Some(init.id()), &[a.clone(), b.clone()]).await.expect("advance");
    assert_eq!(
        ids(outbox).await,
        [a.id(), b.id()],
        "the consumed event leaves, the produced ones come in order"
    );
    let pending = outbox.pending(0, 10).await.expect("pending");
    assert_eq!(pending[0].event, a, "the stored event is the event given, field for field");
    outbox.advance(Some(b.id()), &[]).await.expect("settle");
    assert_eq!(ids(outbox).await, [a.id()]);
}

async fn an_id_is_in_flight_once<O: Outbox>(outbox: &O) {
    let a = event("s-2");
    outbox.advance(None, std::slice::from_ref(&a)).await.expect("publish");
    let first = outbox.pending(0, 10).await.expect("pending")[0].seq;
    outbox.advance(None, std::slice::from_ref(&a)).await.expect("publish again");
    let pending = outbox.pending(0, 10).await.expect("pending");
    assert_eq!(pending.len(), 1, "the same id added twice is in flight once");
    assert_eq!(pending[0].seq, first, "and keeps its first position");
}

async fn positions_grow_and_are_never_reused<O: Outbox>(outbox: &O) {
    let (a, b) = (event("s-3"), event("s-3"));
    outbox.advance(None, &[a.clone(), b.clone()]).await.expect("publish");
    let before = outbox.pending(0, 10).await.expect("pending");
    assert!(before[0].seq < before[1].seq, "later events have larger positions");
    // Remove the newest, add another: its position is above every position ever given.
    let c = event("s-3");
    outbox.advance(Some(b.id()), std::slice::from_ref(&c)).await.expect("advance");
    let after = outbox.pending(0, 10).await.expect("pending");
    assert_eq!(after.len(), 2);
    assert!(
        after[1].seq > before[1].seq,
        "a removed position is not given again: {after:?} after {before:?}"
    );
}

async fn pending_pages<O: Outbox>(outbox: &O) {
    let events: Vec<Event> = (0..7).map(|i| event(&format!("s-4-{i}"))).collect();
    outbox.advance(None, &events).await.expect("publish");
    let mut seen = Vec::new();
    let mut after = 0;
    loop {
        let page = outbox.pending(after, 3).await.expect("page");
        assert!(page.len() <= 3, "a page holds at most `limit` events");
        let Some(last) = page.last() else { break };
        after = last.seq;
        seen.extend(page.into_iter().map(|p| p.event.id().to_owned()));
    }
    let expected: Vec<&str> = events.iter().map(Event::id).collect();
    assert_eq!(seen, expected, "pages cover everything once, in order");
    assert!(outbox.pending(0, 0).await.expect("empty page").is_empty());
}

async fn concurrent_moves_lose_nothing<O: Outbox + 'static>(outbox: Arc<O>) {
    // 32 chains of 5 hops each, moved concurrently: every chain ends with exactly its last event.
    let mut tasks = Vec::new();
    for chain in 0..32 {
        let outbox = Arc::clone(&outbox);
        tasks.push(tokio::spawn(async move {
            let mut current = event(&format!("chain-{chain}"));
            outbox.advance(None, std::slice::from_ref(&current)).await.expect("publish");
            for _ in 0..5 {
                let next = event(&format!("chain-{chain}"));
                outbox.advance(Some(current.id()), std::slice::from_ref(&next)).await.expect("advance");
                current = next;
            }
            current.id().to_owned()
        }));
    }
    let mut last = Vec::new();
    for task in tasks {
        last.push(task.await.expect("task"));
    }
    let mut left = ids(&*outbox).await;
    left.sort();
    last.sort();
    assert_eq!(left, last, "each chain leaves exactly its last event in flight");
}
