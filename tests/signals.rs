//! Signals and notifications of `machine!` workflows on the in-memory store: a workflow waiting
//! for a signal completes when `Node::signal` sends it; a signal the contract refuses is refused
//! by `Node::signal` and, sent raw, is a contract violation that changes nothing; a signal to an
//! unknown or finished workflow changes nothing; `Node::workflow` shows the status, the typed
//! context and the active states; notifications reach their handler and nobody waits for a
//! reply. A resumable receives a signal and sends notifications the same way.

use std::sync::Arc;
use std::time::Duration;

use orchestrator::machine::{Machine, MachineError, MachineInstance};
use orchestrator::memory::InMemory;
use orchestrator::orchestration::resumable::{ResumableInput, ResumableOutput};
use orchestrator::orchestration::{Orchestrator, Resumable, WorkflowRecord};
use orchestrator::prelude::*;
use orchestrator::runtime::{DeadLetterReason, Node, NodeError, WorkflowStatus, WorkflowView};
use orchestrator::subject::Subject;
use orchestrator::transport::{InProcessTransport, Transport};
use orchestrator_examples::review::{
    AuditEntry, AuditLogV1, AuditTrail, Decision, DecisionV1, ReviewContext, ReviewFlow, ReviewFlowEvent,
    ReviewFlowState, ReviewOutcome, ReviewRequest, ReviewV1,
};
use serde_json::json;

const CLIENT: &str = "com.test.client";

type Store = InMemory<WorkflowRecord>;

async fn node(audit: &AuditTrail) -> Node<Store, InProcessTransport> {
    let store = Arc::new(Store::default());
    Node::builder(Arc::clone(&store))
        .service(audit.handler().expect("the audit handler"))
        .orchestrator(Orchestrator::builder(Arc::clone(&store)).machine::<ReviewFlow>())
        .client(CLIENT)
        .build()
        .await
        .expect("a node")
}

fn init(document: &str) -> Event {
    EventFactory::<ReviewV1>::new()
        .init(ReviewRequest { document: document.to_owned() }, Event::builder().source(CLIENT))
        .expect("init")
}

/// The workflow once the store knows it.
async fn started(node: &Node<Store, InProcessTransport>, subject: &str) -> WorkflowView {
    for _ in 0..500 {
        if let Some(view) = node.workflow(subject).await.expect("read") {
            return view;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("workflow {subject} never started");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workflow_waiting_for_a_signal_completes_when_it_is_sent() {
    let audit = AuditTrail::new();
    let node = node(&audit).await;
    let subject = node.start(init("spec.pdf")).await.expect("started");

    let view = started(&node, &subject).await;
    assert_eq!(view.status(), &WorkflowStatus::Active);
    assert_eq!(view.active_paths(), ["waiting"]);
    assert_eq!(view.state::<ReviewFlow>().expect("typed state"), ReviewFlowState::Waiting);
    let context: <ReviewFlow as Machine>::Context = view.context().expect("typed context");
    assert_eq!(context, ReviewContext { document: "spec.pdf".to_owned(), decision: None });

    let decision = Decision { approved: true, by: "ana".to_owned() };
    let id = node.signal::<DecisionV1>(&subject, decision.clone()).await.expect("signalled");
    assert!(!id.is_empty());
    let done = node.wait(&subject).await;
    assert_eq!(done.r#type(), "arvo.orc.review.done");
    assert_eq!(done.data_value(), &json!({ "document": "spec.pdf", "approved": true, "by": "ana" }));

    let view = node.workflow(&subject).await.expect("read").expect("kept");
    assert_eq!(view.status(), &WorkflowStatus::Done);
    assert_eq!(view.state::<ReviewFlow>().expect("typed state"), ReviewFlowState::Done);
    assert_eq!(view.context::<ReviewContext>().expect("context").decision, Some(decision));
    node.transport().wait_idle().await;
    // Both notifications reached the audit handler, and the workflow never waited for them.
    assert_eq!(audit.notes(&subject), ["review of spec.pdf requested", "spec.pdf approved by ana"]);
    assert!(node.take_dead_letters().is_empty());
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_the_contract_refuses_changes_nothing() {
    let audit = AuditTrail::new();
    let node = node(&audit).await;
    let subject = node.start(init("draft.md")).await.expect("started");
    let before = started(&node, &subject).await;

    // Typed: the payload breaks the schema (`by` may not be empty); nothing is published.
    let refused = node.signal::<DecisionV1>(&subject, Decision { approved: true, by: String::new() }).await;
    assert!(matches!(refused, Err(NodeError::Signal { .. })), "{refused:?}");
    // Not an orchestration subject.
    let refused = node.signal::<DecisionV1>("nope", Decision { approved: true, by: "ana".to_owned() }).await;
    assert!(matches!(refused, Err(NodeError::Signal { .. })), "{refused:?}");

    // Raw: the right type for the workflow, but data the contract refuses.
    let raw = Event::builder()
        .source(CLIENT)
        .subject(subject.as_str())
        .to("arvo.orc.review")
        .r#type("com.review.decision")
        .dataschema("#/review/decision/1.0.0")
        .data_json(json!({ "approved": "yes" }))
        .build()
        .expect("a raw event");
    node.transport().publish(vec![raw]).await.expect("published");
    node.transport().wait_idle().await;
    let dead = node.take_dead_letters();
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert!(
        matches!(&dead[0].reason, DeadLetterReason::Violation(Violation::Contract { .. })),
        "{:?}",
        dead[0].reason
    );
    let after = node.workflow(&subject).await.expect("read").expect("kept");
    assert_eq!(after, before, "no state change");
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_to_an_unknown_or_finished_workflow_changes_nothing() {
    let audit = AuditTrail::new();
    let node = node(&audit).await;
    let unknown = Subject::builder("arvo.orc.review", "1.0.0", CLIENT).build().expect("subject");
    node.signal::<DecisionV1>(unknown.as_str(), Decision { approved: true, by: "ana".to_owned() })
        .await
        .expect("published");

    let subject = node.start(init("a.txt")).await.expect("started");
    started(&node, &subject).await;
    node.signal::<DecisionV1>(&subject, Decision { approved: false, by: "bo".to_owned() })
        .await
        .expect("sent");
    node.wait(&subject).await;
    let finished = node.workflow(&subject).await.expect("read").expect("kept");
    node.signal::<DecisionV1>(&subject, Decision { approved: true, by: "cy".to_owned() })
        .await
        .expect("sent");
    node.transport().wait_idle().await;

    assert_eq!(node.workflow(unknown.as_str()).await.expect("read"), None);
    assert_eq!(node.workflow(&subject).await.expect("read").expect("kept"), finished);
    assert_eq!(
        finished.context::<ReviewContext>().expect("context").decision.map(|d| d.by),
        Some("bo".to_owned())
    );
    assert_eq!(audit.notes(&subject), ["review of a.txt requested", "a.txt rejected by bo"]);
    assert!(node.take_dead_letters().is_empty());
    node.shutdown().await;
}

#[test]
fn a_signal_is_a_typed_event_of_the_machine() {
    let (mut machine, requests) =
        MachineInstance::<ReviewFlow>::start_with_subject(ReviewRequest { document: "x".to_owned() }, "s")
            .expect("started");
    // The notification is an ordinary request to its contract's accepted type.
    assert_eq!(requests.len(), 1);
    assert_eq!((requests[0].service, requests[0].event_type), ("audit", "com.audit.log"));
    assert_eq!(requests[0].data, json!(AuditEntry { note: "review of x requested".to_owned() }));

    let subject = Subject::builder("arvo.orc.review", "1.0.0", CLIENT).build().expect("subject");
    let signal = EventFactory::<DecisionV1>::new()
        .signal(
            Decision { approved: true, by: "ana".to_owned() },
            subject.as_str(),
            Event::builder().source(CLIENT),
        )
        .expect("a signal");
    assert_eq!(signal.to(), Some("arvo.orc.review"));
    let typed = <ReviewFlow as Machine>::decode(&signal).expect("decoded");
    assert!(matches!(&typed, ReviewFlowEvent::Decision(d) if d.by == "ana"), "{typed:?}");

    let wrong = Event::builder()
        .source(CLIENT)
        .subject(subject.as_str())
        .r#type("com.review.decision")
        .dataschema("#/review/decision/1.0.0")
        .data_json(json!({ "approved": true }))
        .build()
        .expect("a raw event");
    let refused = machine.send_wire(&wrong);
    assert!(matches!(refused, Err(MachineError::Violation(Violation::Contract { .. }))), "{refused:?}");
    assert_eq!(machine.active_paths(), ["waiting"]);
    let requests = machine.send_wire(&signal).expect("sent");
    assert!(machine.is_done());
    assert_eq!(requests[0].service, "audit");
    assert_eq!(machine.output().map(|o| o.by), Some("ana".to_owned()));
}

#[test]
fn the_contracts_list_signals_and_notifications() {
    let json = ReviewFlow::contracts_json();
    assert_eq!(json["signals"]["decision"]["accepts"]["type"], "com.review.decision");
    assert_eq!(json["notifications"]["audit"]["accepts"]["type"], "com.audit.log");
    assert_eq!(ReviewFlow::signals()[0].name, "decision");
    assert_eq!(ReviewFlow::notifications()[0].name, "audit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumable_receives_a_signal_and_sends_notifications() {
    let audit = AuditTrail::new();
    let store = Arc::new(Store::default());
    let review = Resumable::builder(Arc::clone(&store))
        .version(|input: ResumableInput<ReviewV1, String>| async move {
            if let Some(init) = input.init {
                let note = AuditEntry { note: format!("review of {} requested", init.document) };
                return Ok(ResumableOutput::wait().context(init.document).notify::<AuditLogV1>(note));
            }
            let document = input.context.clone().ok_or("no context")?;
            let Some(decision) = input.signal::<DecisionV1>()? else { return Ok(ResumableOutput::wait()) };
            let note = AuditEntry { note: format!("{document} decided by {}", decision.by) };
            Ok(ResumableOutput::complete(ReviewOutcome {
                document,
                approved: decision.approved,
                by: decision.by,
            })
            .notify::<AuditLogV1>(note))
        })
        .signal::<DecisionV1>()
        .notification::<AuditLogV1>();
    let node = Node::builder(Arc::clone(&store))
        .service(audit.handler().expect("the audit handler"))
        .resumable(review)
        .client(CLIENT)
        .build()
        .await
        .expect("a node");
    let subject = node.start(init("memo")).await.expect("started");
    let view = started(&node, &subject).await;
    assert_eq!(view.context::<String>().expect("the resumable's context"), "memo");
    assert!(view.active_paths().is_empty());

    // Refused data, sent raw: a contract violation, nothing changes.
    let raw = Event::builder()
        .source(CLIENT)
        .subject(subject.as_str())
        .to("arvo.orc.review")
        .r#type("com.review.decision")
        .dataschema("#/review/decision/1.0.0")
        .data_json(json!({ "approved": true, "by": "" }))
        .build()
        .expect("a raw event");
    node.transport().publish(vec![raw]).await.expect("published");
    node.transport().wait_idle().await;
    let dead = node.take_dead_letters();
    assert!(
        matches!(&dead[..], [d] if matches!(d.reason, DeadLetterReason::Violation(Violation::Contract { .. }))),
        "{dead:?}"
    );
    assert_eq!(node.workflow(&subject).await.expect("read").expect("kept"), view);

    node.signal::<DecisionV1>(&subject, Decision { approved: true, by: "ana".to_owned() })
        .await
        .expect("sent");
    let done = node.wait(&subject).await;
    assert_eq!(done.data_value(), &json!({ "document": "memo", "approved": true, "by": "ana" }));
    node.transport().wait_idle().await;
    assert_eq!(audit.notes(&subject), ["review of memo requested", "memo decided by ana"]);
    assert_eq!(node.workflow(&subject).await.expect("read").expect("kept").status(), &WorkflowStatus::Done);
    assert!(node.take_dead_letters().is_empty());
    node.shutdown().await;
}
