//! The workflow journal and replay (`orchestrator::memory::Journal`,
//! `orchestrator::orchestration::replay`): history in order, state at any position or time,
//! re-running the machine over the journaled events, divergence when the definition changed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use orchestrator::handler::EventHandler;
use orchestrator::memory::{InMemory, InMemoryConfig, Journal, Retention};
use orchestrator::orchestration::replay::{ReplayError, Until};
use orchestrator::orchestration::{Orchestrator, WorkflowRecord};
use orchestrator::prelude::*;
use orchestrator_examples::calculator::flows::{AverageFlow, AvgCtx};
use orchestrator_examples::calculator::{
    AddV1, AverageInput, AverageOutput, AverageV1, DivideRequest, DivideV1, Operands, Quotient, Sum, services,
};

fn edited_request_divide(ctx: &mut AvgCtx, event: &EditedFlowEvent, out: &mut EditedFlowOutbox<'_>) {
    if let EditedFlowEvent::AddSum(s) = event {
        // The edit: divides by one more than the count.
        out.divide(DivideRequest { numerator: s.sum, denominator: ctx.values.len() as f64 + 1.0 });
    }
}

orchestrator::machine! {
    /// `AverageFlow` (same states, same version of the same contract), edited after workflows ran.
    pub machine EditedFlow {
        contract: AverageV1,
        services: { add: AddV1, divide: DivideV1 },
        context: AvgCtx,
        init: |input| AvgCtx { values: input.values.clone(), average: 0.0 },
        output: |ctx| AverageOutput { average: ctx.average },
        states: {
            adding: {
                entry: [|ctx, _, out| out.add(Operands { a: ctx.values[0], b: ctx.values[1] })],
                on: { add::Sum => { target: dividing, actions: [edited_request_divide] }, add::error => failed },
            },
            dividing: {
                on: {
                    divide::Quotient => {
                        target: done,
                        actions: [|ctx, event, _| if let EditedFlowEvent::DivideQuotient(q) = event { ctx.average = q.quotient }],
                    },
                    divide::error => failed,
                },
            },
            done: { type: final },
            failed: { type: final },
        },
    }
}

type Mem = Arc<InMemory<WorkflowRecord>>;

fn memory() -> Mem {
    Arc::new(InMemory::new(InMemoryConfig { retention: Retention::Keep, ..InMemoryConfig::default() }))
}

/// Runs one average workflow of `values` to completion; returns its subject.
async fn run(orc: &Orchestrator<Mem>, values: Vec<f64>) -> String {
    let init = EventFactory::<AverageV1>::new()
        .init(AverageInput { values }, Event::builder().source("com.test.client"))
        .unwrap();
    let request = orc.execute(&init).await.unwrap().remove(0);
    let sum = services::add().unwrap().execute(&request).await.unwrap().remove(0);
    let divide = orc.execute(&sum).await.unwrap().remove(0);
    let quotient = services::divide().unwrap().execute(&divide).await.unwrap().remove(0);
    let done = orc.execute(&quotient).await.unwrap();
    assert_eq!(done[0].r#type(), "arvo.orc.calc.average.done");
    init.subject().to_owned()
}

#[tokio::test]
async fn the_journal_holds_each_execution_in_order_with_its_events_and_snapshot() {
    let mem = memory();
    let orc = Orchestrator::builder(Arc::clone(&mem)).machine::<AverageFlow>().build().unwrap();
    let subject = run(&orc, vec![2.0, 4.0]).await;
    let history = mem.history(&subject, 0, 100).await.unwrap();
    assert_eq!(history.iter().map(|e| e.version).collect::<Vec<_>>(), [1, 2, 3]);
    let consumed: Vec<&str> = history.iter().map(|e| e.consumed.as_ref().unwrap().r#type()).collect();
    assert_eq!(consumed, ["arvo.orc.calc.average", "evt.calc.add.success", "evt.calc.divide.success"]);
    let produced: Vec<Vec<&str>> =
        history.iter().map(|e| e.produced.iter().map(Event::r#type).collect()).collect();
    assert_eq!(produced, [vec!["com.calc.add"], vec!["com.calc.divide"], vec!["arvo.orc.calc.average.done"]]);
    assert!(history.windows(2).all(|w| w[0].at <= w[1].at));
    assert!(history[2].record.done);
    // Pagination: after version 1, one at a time.
    let page = mem.history(&subject, 1, 1).await.unwrap();
    assert_eq!(page.iter().map(|e| e.version).collect::<Vec<_>>(), [2]);
    assert_eq!(mem.entry(&subject, 2).await.unwrap().unwrap(), history[1]);
    assert!(mem.entry(&subject, 9).await.unwrap().is_none());
}

#[tokio::test]
async fn replay_rebuilds_the_state_at_every_position_and_time() {
    let mem = memory();
    let orc = Orchestrator::builder(Arc::clone(&mem)).machine::<AverageFlow>().build().unwrap();
    let subject = run(&orc, vec![3.0, 5.0]).await;
    let history = mem.history(&subject, 0, 100).await.unwrap();
    let lifecycle = orc.lifecycle();

    let end = lifecycle.replay(&*mem, &subject, Until::End, None).await.unwrap();
    assert_eq!((end.version, end.steps, end.done, end.failed), (3, 3, true, false));
    assert_eq!(end.state, history[2].record.state);
    assert_eq!(end.state["context"]["average"], 4.0);

    for entry in &history {
        let at = lifecycle.replay(&*mem, &subject, Until::Version(entry.version), None).await.unwrap();
        assert_eq!(at.version, entry.version);
        assert_eq!(at.state, entry.record.state, "the state at version {}", entry.version);
        let by_time = lifecycle.replay(&*mem, &subject, Until::Time(entry.at), None).await.unwrap();
        assert!(by_time.version >= entry.version, "time travel reaches at least the entry run then");
    }
    // From a snapshot: only what follows is re-run.
    let from = lifecycle.replay(&*mem, &subject, Until::End, Some(2)).await.unwrap();
    assert_eq!((from.version, from.steps), (3, 1));
    assert_eq!(from.state, end.state);
    assert!(matches!(
        lifecycle.replay(&*mem, &subject, Until::End, Some(7)).await,
        Err(ReplayError::NoSuchVersion { version: 7, .. })
    ));
}

#[tokio::test]
async fn replay_detects_that_the_machine_definition_changed() {
    let mem = memory();
    let orc = Orchestrator::builder(Arc::clone(&mem)).machine::<AverageFlow>().build().unwrap();
    let subject = run(&orc, vec![3.0, 5.0]).await;
    let edited = Orchestrator::builder(Arc::clone(&mem)).machine::<EditedFlow>().build().unwrap();
    // Version 1 still agrees (the edit is in a later transition).
    let v1 = edited.lifecycle().replay(&*mem, &subject, Until::Version(1), None).await.unwrap();
    assert_eq!(v1.version, 1);
    let err = edited.lifecycle().replay(&*mem, &subject, Until::End, None).await.unwrap_err();
    match &err {
        ReplayError::Diverged { version, what, .. } => {
            assert_eq!((*version, *what), (2, "produced events"), "{err}");
        }
        other => panic!("expected a divergence, got {other:?}"),
    }
    let message = err.to_string();
    assert!(message.contains("diverged at version 2"), "{message}");
    assert!(message.contains("definition probably changed"), "{message}");
}

#[tokio::test]
async fn replaying_an_unknown_workflow_or_a_bad_subject() {
    let mem = memory();
    let orc = Orchestrator::builder(Arc::clone(&mem)).machine::<AverageFlow>().build().unwrap();
    run(&orc, vec![1.0, 1.0]).await;
    let nothing = orc.lifecycle().replay(&*mem, "not a subject", Until::End, None).await;
    assert!(matches!(nothing, Err(ReplayError::Subject { .. })), "{nothing:?}");
    let never_ran = EventFactory::<AverageV1>::new()
        .init(AverageInput { values: vec![1.0] }, Event::builder().source("com.test.client"))
        .unwrap();
    let empty = orc.lifecycle().replay(&*mem, never_ran.subject(), Until::End, None).await.unwrap();
    assert_eq!((empty.version, empty.steps, empty.done), (0, 0, false));
}
