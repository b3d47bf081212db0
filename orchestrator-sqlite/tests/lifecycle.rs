//! End to end: an orchestrator on `SqliteMemory` runs a workflow through the broker, journals
//! each step, answers a redelivered event from the journal and archives the finished workflow.

use orchestrator::broker::Broker;
use orchestrator::handler::EventHandler;
use orchestrator::memory::{EventKey, Journal, Memory};
use orchestrator::orchestration::{Orchestrator, WorkflowRecord};
use orchestrator::prelude::*;
use orchestrator_examples::calculator::flows::AverageFlow;
use orchestrator_examples::calculator::{AverageInput, AverageV1, services};
use orchestrator_sqlite::{Retention, SqliteConfig, SqliteMemory};
use serde_json::json;

fn memory(path: &std::path::Path, retention: Retention) -> SqliteMemory<WorkflowRecord> {
    SqliteConfig::new(path).retention(retention).open().expect("open")
}

fn average_init(values: Vec<f64>) -> Event {
    EventFactory::<AverageV1>::new()
        .init(AverageInput { values }, Event::builder().source("com.test.client"))
        .expect("init event")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workflow_runs_is_journaled_and_archived() {
    let dir = tempfile::tempdir().unwrap();
    let orc = Orchestrator::builder(memory(&dir.path().join("wf.db"), Retention::Archive))
        .machine::<AverageFlow>()
        .build()
        .unwrap();
    let broker = Broker::builder()
        .handler(orc.clone())
        .handler(services::add().unwrap())
        .handler(services::divide().unwrap())
        .workers(2)
        .build()
        .unwrap();
    let init = average_init(vec![2.0, 4.0]);
    let done = broker.resolve(init.clone()).await.unwrap().expect("a completion");
    assert_eq!(done.data_value(), &json!({"average": 3.0}));
    assert!(broker.take_dead_letters().is_empty());
    broker.shutdown().await;

    let m = orc.memory();
    assert!(m.read(init.subject()).await.unwrap().is_none(), "archived, no longer live");
    let archived = m.archived(init.subject()).await.unwrap().expect("archived record");
    assert!(archived.record.done);
    let journal = m.archived_history(init.subject(), 0, 10).await.unwrap();
    assert_eq!(journal.len(), 3, "init, sum, quotient: {journal:?}");
    assert_eq!(journal[0].consumed.as_ref().map(Event::id), Some(init.id()));
    assert_eq!(journal[0].produced.len(), 1, "the add request");
    assert_eq!(journal[2].produced.last().map(Event::r#type), Some(done.r#type()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redelivered_event_is_answered_from_the_journal() {
    let dir = tempfile::tempdir().unwrap();
    let orc = Orchestrator::builder(memory(&dir.path().join("re.db"), Retention::Keep))
        .machine::<AverageFlow>()
        .build()
        .unwrap();
    let init = average_init(vec![1.0, 3.0]);
    let first = orc.execute(&init).await.unwrap();
    assert_eq!(first.len(), 1);
    let journal = orc.memory().history(init.subject(), 0, 10).await.unwrap();
    assert_eq!(journal.len(), 1);
    assert_eq!(journal[0].produced, first);
    // The add service answers; the orchestrator steps to dividing.
    let add = services::add().unwrap();
    let sum = add.execute(&first[0]).await.unwrap();
    let divide_request = orc.execute(&sum[0]).await.unwrap();
    assert_eq!(divide_request.len(), 1);
    // The init event is delivered again, after a later step: the lifecycle answers what it
    // produced the first time, from the journal (Memory::produced), without stepping.
    let again = orc.execute(&init).await.unwrap();
    assert_eq!(again, first);
    assert_eq!(orc.memory().produced(init.subject(), EventKey::of(&init)).await.unwrap(), Some(first));
    assert_eq!(orc.memory().history(init.subject(), 0, 10).await.unwrap().len(), 2, "no new step");
}
