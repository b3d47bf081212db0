//! A retry of a service call on `SqliteMemory`: scheduled when the service fails, stored as the
//! record's wake-up, and sent after the store is closed and reopened.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use orchestrator::contract::SystemErrorPayload;
use orchestrator::handler::EventHandler;
use orchestrator::memory::Memory;
use orchestrator::orchestration::Orchestrator;
use orchestrator::orchestration::timers::Timers;
use orchestrator::prelude::*;
use orchestrator_examples::calculator::{AddV1, AverageInput, AverageOutput, AverageV1, Operands, Sum};

#[allow(clippy::ptr_arg)] // an action takes the context as declared
fn ask(ctx: &mut Vec<f64>, _: &AskingEvent, out: &mut AskingOutbox<'_>) {
    out.add(Operands { a: ctx[0], b: ctx[1] });
}

fn store(ctx: &mut Vec<f64>, event: &AskingEvent, _: &mut AskingOutbox<'_>) {
    if let AskingEvent::AddSum(s) = event {
        *ctx = vec![s.sum];
    }
}

orchestrator::machine! {
    /// Adds the first two values, retrying the call once 300 ms after a failure.
    pub machine Asking {
        contract: AverageV1,
        services: { add: AddV1 { retry: { attempts: 2, backoff: 300 .. 300 } } },
        context: Vec<f64>,
        init: |input| input.values.clone(),
        output: |ctx| AverageOutput { average: ctx[0] },
        states: {
            asking: { entry: [ask], on: { add::Sum => { target: done, actions: [store] }, add::error => failed } },
            done: { type: final },
            failed: { type: final },
        },
    }
}

use common::{WorkflowStore as Store, now_ms, workflow_store as open};

fn orchestrator(store: &Store) -> Orchestrator<Store> {
    common::orchestrator_of::<Asking>(store)
}

fn answer_base(request: &Event) -> EventBuilder {
    Event::builder()
        .source(request.r#type())
        .subject(request.subject())
        .parentid(request.id())
        .to(request.redirectto().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_retry_survives_reopening_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("retries.db");
    let init = EventFactory::<AverageV1>::new()
        .init(AverageInput { values: vec![2.0, 3.0] }, Event::builder().source("com.test.client"))
        .unwrap();
    let first = {
        let store = open(&path);
        let orc = orchestrator(&store);
        let out = orc.execute(&init).await.unwrap();
        assert_eq!(out.len(), 1, "{out:?}");
        let first = out[0].clone();
        let failure = EventFactory::<AddV1>::new()
            .system_error(SystemErrorPayload::new("Timeout", "busy"), answer_base(&first))
            .unwrap();
        let before = now_ms();
        assert!(orc.execute(&failure).await.unwrap().is_empty(), "the machine does not see the error");
        let after = now_ms();
        let record = store.read(init.subject()).await.unwrap().unwrap().record;
        let wake = record.wake_at_ms.expect("the retry is the record's wake-up");
        assert!((before + 300..=after + 300).contains(&wake), "{before} {wake} {after}");
        first
    };

    // Reopened: the retry was stored and comes due 300 ms after the failure.
    tokio::time::sleep(Duration::from_millis(350)).await;
    let store = open(&path);
    let orc = orchestrator(&store);
    let mut wakes = Vec::new();
    Timers::new(Arc::clone(&store))
        .fire_due(|e| {
            wakes.push(e);
            Ok::<(), ()>(())
        })
        .await
        .unwrap();
    assert_eq!(wakes.len(), 1, "{wakes:?}");
    let out = orc.execute(&wakes[0]).await.unwrap();
    assert_eq!(out.len(), 1, "the request is sent again: {out:?}");
    let second = &out[0];
    assert_eq!((second.r#type(), second.data()), (first.r#type(), first.data()));
    assert_ne!(second.id(), first.id());

    let answer = EventFactory::<AddV1>::new().emits(Sum { sum: 5.0 }, answer_base(second)).unwrap();
    let done = orc.execute(&answer).await.unwrap();
    assert_eq!(done.len(), 1, "{done:?}");
    assert_eq!(done[0].data()["average"], 5.0);
}
