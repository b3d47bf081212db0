//! Completion options, on `InMemory` and on `SqliteMemory`, through a `Node`: the id, execution
//! units and domains a machine's `output` (or a resumable's completion) sets appear on its
//! completion events; an empty id fails the workflow.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use orchestrator::domain::Domain;
use orchestrator::machine::Completion;
use orchestrator::memory::{InMemory, InMemoryConfig, Memory};
use orchestrator::orchestration::resumable::{Resumable, ResumableInput, ResumableOutput};
use orchestrator::orchestration::{Orchestrator, WorkflowRecord};
use orchestrator::prelude::*;
use orchestrator::runtime::{DomainedEvent, Node};
use orchestrator_examples::calculator::{AverageInput, AverageOutput, AverageV1};
use orchestrator_sqlite::SqliteConfig;

const CLIENT: &str = "com.test.client";

/// The machine's context: the input, for the output to read.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Values {
    values: Vec<f64>,
}

orchestrator::machine! {
    /// Completes at once; its completion sets an id made from its input, execution units, and
    /// the domains `audit` (given twice: one copy) and the orchestration context.
    pub machine Announced {
        contract: AverageV1,
        context: Values,
        init: |input| Values { values: input.values.clone() },
        output: |ctx| {
            let id = if ctx.values[0] < 0.0 { String::new() } else { format!("average-{}", ctx.values[0]) };
            Completion::new(AverageOutput { average: ctx.values[0] })
                .id(id)
                .execution_units(7.5)
                .domains([
                    Domain::Named("audit".into()),
                    Domain::OrchestrationContext,
                    Domain::Named("audit".into()),
                ])
        },
        states: { done: { type: final } },
    }
}

fn init(values: Vec<f64>) -> Event {
    EventFactory::<AverageV1>::new().init(AverageInput { values }, Event::builder().source(CLIENT)).unwrap()
}

type Seen = Arc<Mutex<Vec<DomainedEvent>>>;

async fn node_on<M: Memory<WorkflowRecord> + 'static>(
    store: &Arc<M>,
    resumable: bool,
    seen: &Seen,
) -> Node<M, orchestrator::transport::InProcessTransport> {
    let builder = Node::builder(Arc::clone(store)).client(CLIENT).on_domained({
        let seen = Arc::clone(seen);
        move |domained, _| {
            seen.lock().unwrap().push(domained);
            async {}
        }
    });
    let builder = if resumable {
        builder.resumable(Resumable::builder(Arc::clone(store)).version(
            |input: ResumableInput<AverageV1, ()>| async move {
                let first = input.init.as_ref().map_or(0.0, |i| i.values[0]);
                Ok(ResumableOutput::complete(
                    Completion::new(AverageOutput { average: first })
                        .id(format!("resumed-{first}"))
                        .execution_units(2.0)
                        .domains([Domain::OrchestrationContext, Domain::Named("audit".into())]),
                ))
            },
        ))
    } else {
        builder.orchestrator(Orchestrator::builder(Arc::clone(store)).machine::<Announced>())
    };
    builder.build().await.unwrap()
}

async fn completion_options_on<M: Memory<WorkflowRecord> + 'static>(store: Arc<M>) {
    // A machine.
    let seen = Seen::default();
    let node = node_on(&store, false, &seen).await;
    let done = node.run(init(vec![4.0])).await.unwrap();
    assert_eq!(done.r#type(), "arvo.orc.calc.average.done");
    assert_eq!(done.id(), "average-4");
    assert_eq!(done.executionunits(), Some(7.5));
    assert_eq!(done.domain(), None, "the orchestration context of a root workflow: local");
    assert_eq!(done.data()["average"], 4.0);

    // An empty id fails the workflow with a system error, not a panic.
    let bad = init(vec![-1.0]);
    let failed = node.run(bad.clone()).await.unwrap();
    assert_eq!(failed.r#type(), "sys.arvo.orc.calc.average.error");
    assert_eq!(failed.data()["errorMessage"], "the completion event id is empty");
    node.shutdown().await;
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1, "one copy in `audit`, given twice: {seen:?}");
        assert_eq!(seen[0].domain, "audit");
        assert_eq!(seen[0].event.id(), "average-4", "every copy has the id");
        assert_eq!(seen[0].event.executionunits(), Some(7.5));
    }
    assert!(node.take_dead_letters().is_empty());

    // A resumable.
    let seen = Seen::default();
    let node = node_on(&store, true, &seen).await;
    let done = node.run(init(vec![9.0])).await.unwrap();
    assert_eq!(done.id(), "resumed-9");
    assert_eq!(done.executionunits(), Some(2.0));
    node.shutdown().await;
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!((seen[0].domain.as_str(), seen[0].event.id()), ("audit", "resumed-9"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completion_options_on_in_memory() {
    completion_options_on(Arc::new(InMemory::<WorkflowRecord>::new(InMemoryConfig::default()))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completion_options_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteConfig::new(dir.path().join("completion.db")).open::<WorkflowRecord>().unwrap();
    completion_options_on(Arc::new(store)).await;
}
