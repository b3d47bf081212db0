//! A machine's computed `after` delay on `SqliteMemory`: evaluated when the state is entered,
//! stored as the record's wake-up, and delivered after the store is closed and reopened.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use orchestrator::handler::EventHandler;
use orchestrator::memory::Memory;
use orchestrator::orchestration::Orchestrator;
use orchestrator::orchestration::timers::Timers;
use orchestrator::prelude::*;
use orchestrator_examples::calculator::{AverageInput, AverageOutput, AverageV1};

orchestrator::machine! {
    /// Waits `values[0]` ms, then completes with that wait as its "average".
    pub machine Patient {
        contract: AverageV1,
        context: Vec<f64>,
        init: |input| input.values.clone(),
        output: |ctx| AverageOutput { average: ctx[0] },
        states: {
            waiting: { after: { patience = |ctx| Duration::from_millis(ctx[0] as u64) => done } },
            done: { type: final },
        },
    }
}

use common::{WorkflowStore as Store, now_ms, workflow_store as open};

fn orchestrator(store: &Store) -> Orchestrator<Store> {
    common::orchestrator_of::<Patient>(store)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_computed_timer_survives_reopening_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("timers.db");
    let init = EventFactory::<AverageV1>::new()
        .init(AverageInput { values: vec![300.0] }, Event::builder().source("com.test.client"))
        .unwrap();
    let before = now_ms();
    {
        let store = open(&path);
        assert!(orchestrator(&store).execute(&init).await.unwrap().is_empty());
        let after = now_ms();
        let record = store.read(init.subject()).await.unwrap().unwrap().record;
        let wake = record.wake_at_ms.expect("the computed timer is the record's wake-up");
        assert!((before + 300..=after + 300).contains(&wake), "{before} {wake} {after}");
    }

    // Reopened: the wake-up was stored, and comes due 300 ms after the start.
    tokio::time::sleep(Duration::from_millis(350)).await;
    let store = open(&path);
    let mut wakes = Vec::new();
    Timers::new(Arc::clone(&store))
        .fire_due(|e| {
            wakes.push(e);
            Ok::<(), ()>(())
        })
        .await
        .unwrap();
    assert_eq!(wakes.len(), 1, "{wakes:?}");
    let out = orchestrator(&store).execute(&wakes[0]).await.unwrap();
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].data()["average"], 300.0);
}
