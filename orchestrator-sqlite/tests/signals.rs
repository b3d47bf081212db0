//! Signals on SQLite: a review workflow started on a durable node, the node shut down and the
//! store closed, then the store reopened by a new node, which sends the signal with
//! `Node::signal`: the workflow completes, its `audit` notifications reached their handler, and
//! `Node::workflow` reads its status and typed context.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use orchestrator::orchestration::{Orchestrator, WorkflowRecord};
use orchestrator::prelude::*;
use orchestrator::runtime::{Node, WorkflowStatus};
use orchestrator::transport::InProcessTransport;
use orchestrator_examples::review::{
    AuditTrail, Decision, DecisionV1, ReviewContext, ReviewFlow, ReviewFlowState, ReviewRequest, ReviewV1,
};
use orchestrator_sqlite::{SqliteConfig, SqliteMemory};

const CLIENT: &str = "com.test.client";

async fn node(path: &Path, audit: &AuditTrail) -> Node<SqliteMemory<WorkflowRecord>, InProcessTransport> {
    let memory = Arc::new(SqliteConfig::new(path).open::<WorkflowRecord>().expect("open"));
    Node::builder(Arc::clone(&memory))
        .durable()
        .service(audit.handler().expect("the audit handler"))
        .orchestrator(Orchestrator::builder(Arc::clone(&memory)).machine::<ReviewFlow>())
        .client(CLIENT)
        .build()
        .await
        .expect("a node")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_sent_after_the_store_is_reopened_completes_the_workflow() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("signals.db");
    let audit = AuditTrail::new();

    let first = node(&path, &audit).await;
    let init = EventFactory::<ReviewV1>::new()
        .init(ReviewRequest { document: "plan.odt".to_owned() }, Event::builder().source(CLIENT))
        .expect("init");
    let subject = first.start(init).await.expect("started");
    let mut view = None;
    for _ in 0..500 {
        view = first.workflow(&subject).await.expect("read");
        if view.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let view = view.expect("the workflow started");
    assert_eq!(view.status(), &WorkflowStatus::Active);
    assert_eq!(view.state::<ReviewFlow>().expect("typed state"), ReviewFlowState::Waiting);
    first.shutdown().await;
    drop(first);

    let second = node(&path, &audit).await;
    let view = second.workflow(&subject).await.expect("read").expect("kept across the reopening");
    assert_eq!(view.active_paths(), ["waiting"]);
    let decision = Decision { approved: false, by: "eve".to_owned() };
    second.signal::<DecisionV1>(&subject, decision.clone()).await.expect("signalled");
    let done = second.wait(&subject).await;
    assert_eq!(done.data()["approved"], false);
    assert_eq!(done.data()["by"], "eve");

    let view = second.workflow(&subject).await.expect("read").expect("kept");
    assert_eq!(view.status(), &WorkflowStatus::Done);
    assert_eq!(
        view.context::<ReviewContext>().expect("typed context"),
        ReviewContext { document: "plan.odt".to_owned(), decision: Some(decision) }
    );
    second.transport().wait_idle().await;
    assert_eq!(audit.notes(&subject), ["review of plan.odt requested", "plan.odt rejected by eve"]);
    assert!(second.take_dead_letters().is_empty());
    second.shutdown().await;
}
