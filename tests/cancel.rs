//! Cancellation (`orchestrator::orchestration::cancel`) through a `Node`, on the in-memory and
//! the SQLite stores: a machine waiting on a service and a timer is cancelled (status
//! cancelled, the initiator gets a cancellation it can tell from a failure, a late answer is
//! ignored, its timer never fires, also after the store is reopened); a parent cancelled with
//! its children takes its running child along; a finished workflow is left alone; a resumable
//! is cancelled too.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use orchestrator::contract::SystemErrorPayload;
use orchestrator::handler::EventHandler;
use orchestrator::memory::{InMemory, Memory, WorkflowFilter, WorkflowIndex, WorkflowState};
use orchestrator::orchestration::cancel::{CANCELLED_ERROR_NAME, CancelRequest, cancel_event};
use orchestrator::orchestration::resumable::{Request, Resumable, ResumableInput, ResumableOutput};
use orchestrator::orchestration::{Orchestrator, WorkflowRecord};
use orchestrator::prelude::*;
use orchestrator::runtime::{Node, NodeBuilder, TimerSettings, WorkflowStatus};
use orchestrator::transport::{InProcessTransport, Transport};
use orchestrator::violation::Violation;
use orchestrator_examples::calculator::{
    AddV1, AverageInput, AverageOutput, AverageV1, Operands, Sum, services,
};
use orchestrator_sqlite::{SqliteConfig, SqliteMemory};

const CLIENT: &str = "com.test.client";
/// Long enough never to fire while a test runs.
const NEVER_MS: u64 = 600_000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
/// Two operands and how long to wait for their sum.
pub struct SlowInput {
    /// Left.
    pub a: f64,
    /// Right.
    pub b: f64,
    /// The timeout on the answer, in ms.
    pub timeout_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
/// The sum, or a timeout.
pub struct SlowOutput {
    /// `a + b`, unless the call timed out.
    pub sum: Option<f64>,
    /// Whether it timed out.
    pub timed_out: bool,
}

orchestrator::orchestrator_contract! {
    /// Adds, with a timeout on the answer.
    pub contract Slow {
        uri: "#/orc/test/cancel/slow",
        name: "test.cancel.slow",
        versions: { SlowV1 = "1.0.0" { init: SlowInput, complete: SlowOutput } },
    }
}

orchestrator::orchestrator_contract! {
    /// Runs a slow addition as a child workflow.
    pub contract Holder {
        uri: "#/orc/test/cancel/holder",
        name: "test.cancel.holder",
        versions: { HolderV1 = "1.0.0" { init: SlowInput, complete: SlowOutput } },
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
/// Context.
pub struct Ctx {
    /// The input.
    pub a: f64,
    /// The input.
    pub b: f64,
    /// The timeout.
    pub timeout_ms: u64,
    /// The sum, once known.
    pub sum: Option<f64>,
    /// Whether it timed out.
    pub timed_out: bool,
}

fn ctx(input: &SlowInput) -> Ctx {
    Ctx { a: input.a, b: input.b, timeout_ms: input.timeout_ms, ..Ctx::default() }
}

orchestrator::machine! {
    /// asking (the sum, or the timeout) → done / timed_out.
    pub machine SlowFlow {
        contract: SlowV1,
        services: { add: AddV1 },
        context: Ctx,
        init: |input| ctx(input),
        output: |ctx| SlowOutput { sum: ctx.sum, timed_out: ctx.timed_out },
        states: {
            asking: {
                entry: [|ctx, _, out| out.add(Operands { a: ctx.a, b: ctx.b })],
                on: {
                    add::Sum => {
                        target: done,
                        actions: [|ctx, event, _| if let SlowFlowEvent::AddSum(s) = event { ctx.sum = Some(s.sum) }],
                    },
                },
                after: {
                    timeout = |ctx| Duration::from_millis(ctx.timeout_ms) => {
                        target: timed_out,
                        actions: [|ctx, _, _| ctx.timed_out = true],
                    },
                },
            },
            done: { type: final },
            timed_out: { type: final },
        },
    }
}

orchestrator::machine! {
    /// Runs a `SlowFlow` as its child and completes with its outcome.
    pub machine HolderFlow {
        contract: HolderV1,
        services: { slow: SlowV1 },
        context: Ctx,
        init: |input| ctx(input),
        output: |ctx| SlowOutput { sum: ctx.sum, timed_out: ctx.timed_out },
        states: {
            holding: {
                entry: [|ctx, _, out| out.slow(SlowInput { a: ctx.a, b: ctx.b, timeout_ms: ctx.timeout_ms })],
                on: {
                    slow::SlowOutput => {
                        target: done,
                        actions: [|ctx, event, _| if let HolderFlowEvent::SlowOutput(o) = event { ctx.sum = o.sum }],
                    },
                    slow::error => done,
                },
            },
            done: { type: final },
        },
    }
}

/// The add service, parked: it keeps the requests and answers none (the test answers them).
#[derive(Clone, Default)]
struct Parked(Arc<Mutex<Vec<Event>>>);

impl EventHandler for Parked {
    fn source(&self) -> &str {
        "com.calc.add"
    }

    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(event.clone());
        Ok(Vec::new())
    }
}

impl Parked {
    /// The add service's answer to the request of workflow `subject` (once it arrived: the
    /// service runs after the step that asked).
    async fn answer(&self, subject: &str) -> Event {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        let request = loop {
            let found = self
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .iter()
                .find(|r| r.subject() == subject)
                .cloned();
            match found {
                Some(request) => break request,
                None => assert!(tokio::time::Instant::now() < deadline, "{subject} asked nothing"),
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        services::add().expect("add").execute(&request).await.expect("an answer").remove(0)
    }
}

/// A node over `store` running the slow flow, its holder, a resumable and the parked add.
fn declare<M: Memory<WorkflowRecord> + 'static>(
    store: &Arc<M>,
    parked: &Parked,
) -> NodeBuilder<M, InProcessTransport> {
    let resumable = Resumable::builder(Arc::clone(store)).service::<AddV1>().version(
        |input: ResumableInput<AverageV1, ()>| async move {
            if let Some(init) = input.init {
                let (a, b) = (init.values[0], init.values[1]);
                return Ok(ResumableOutput::wait().request(Request::new::<AddV1>(Operands { a, b })));
            }
            let sums = input.collected::<AddV1, Sum>()?;
            let sum: f64 = sums.iter().map(|s| s.sum).sum();
            Ok(ResumableOutput::complete(AverageOutput { average: sum / 2.0 }))
        },
    );
    Node::builder(Arc::clone(store))
        .orchestrator(Orchestrator::builder(Arc::clone(store)).machine::<SlowFlow>())
        .orchestrator(Orchestrator::builder(Arc::clone(store)).machine::<HolderFlow>())
        .resumable(resumable)
        .service(parked.clone())
        .client(CLIENT)
        .timers(TimerSettings { tick: Duration::from_millis(10), ..TimerSettings::default() })
}

fn slow(timeout_ms: u64) -> Event {
    EventFactory::<SlowV1>::new()
        .init(SlowInput { a: 2.0, b: 3.0, timeout_ms }, Event::builder().source(CLIENT))
        .expect("init")
}

fn holder(timeout_ms: u64) -> Event {
    EventFactory::<HolderV1>::new()
        .init(SlowInput { a: 2.0, b: 3.0, timeout_ms }, Event::builder().source(CLIENT))
        .expect("init")
}

/// Waits until `check` holds for the status of `subject` (10 s at most).
async fn until<M: Memory<WorkflowRecord> + 'static>(
    node: &Node<M, InProcessTransport>,
    subject: &str,
    check: impl Fn(Option<&WorkflowStatus>) -> bool,
) -> Option<WorkflowStatus> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let status = node.status(subject).await.expect("status");
        if check(status.as_ref()) {
            return status;
        }
        assert!(tokio::time::Instant::now() < deadline, "{subject}: still {status:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn is_waiting(status: Option<&WorkflowStatus>) -> bool {
    matches!(status, Some(WorkflowStatus::Waiting { .. }))
}

/// The cancellation payload of `event`, checked to be one.
fn cancellation(event: &Event, subject: &str) -> SystemErrorPayload {
    assert_eq!(event.subject(), subject, "{event:?}");
    assert!(event.r#type().starts_with("sys.") && event.r#type().ends_with(".error"), "{event:?}");
    let payload: SystemErrorPayload = serde_json::from_value(event.data_value().clone()).expect("payload");
    assert!(payload.is_cancellation(), "{payload:?}");
    assert_eq!(payload.error_name, CANCELLED_ERROR_NAME);
    payload
}

/// Nothing more reaches the client for `subject` within a while.
async fn nothing_more<M: Memory<WorkflowRecord> + 'static>(
    node: &Node<M, InProcessTransport>,
    subject: &str,
) {
    let more = tokio::time::timeout(Duration::from_millis(300), node.wait(subject)).await;
    assert!(more.is_err(), "the client got another event: {more:?}");
}

/// A machine waiting on a service and a timer is cancelled; a late answer changes nothing.
async fn a_waiting_machine_is_cancelled<M: Memory<WorkflowRecord> + 'static>(store: Arc<M>) {
    let parked = Parked::default();
    let node = declare(&store, &parked).build().await.expect("node");
    let subject = node.start(slow(NEVER_MS)).await.expect("started");
    until(&node, &subject, is_waiting).await;
    let version = store.read(&subject).await.unwrap().expect("stored").version;

    node.cancel(&subject, CancelRequest::new().reason("no longer needed")).await.expect("cancel");
    let ended = node.wait(&subject).await;
    assert_eq!(ended.r#type(), "sys.arvo.orc.test.cancel.slow.error");
    assert_eq!(ended.to(), Some(CLIENT), "to the initiator");
    assert_eq!(cancellation(&ended, &subject).error_message, "no longer needed");
    let status = node.status(&subject).await.unwrap();
    assert_eq!(status, Some(WorkflowStatus::Cancelled { reason: Some("no longer needed".into()) }));
    let stored = store.read(&subject).await.unwrap().expect("stored");
    assert_eq!(stored.version, version + 1, "one journaled write");
    assert_eq!(stored.record.wake_at_ms, None, "its timer is dropped");
    assert_eq!(stored.record.workflow_state(), WorkflowState::Cancelled);

    // The service answers late: ignored. A second cancel: ignored.
    let answer = parked.answer(&subject).await;
    node.transport().publish(vec![answer]).await.expect("publish");
    node.cancel(&subject, CancelRequest::new()).await.expect("cancel again");
    node.transport().wait_idle().await;
    nothing_more(&node, &subject).await;
    assert_eq!(store.read(&subject).await.unwrap().expect("stored").version, version + 1, "nothing written");
    assert_eq!(node.status(&subject).await.unwrap(), status);
    node.shutdown().await;
}

/// A parent cancelled with its children takes its running child along.
async fn children_are_cancelled_with_their_parent<M>(store: Arc<M>)
where
    M: Memory<WorkflowRecord> + WorkflowIndex + 'static,
{
    let parked = Parked::default();
    let node = declare(&store, &parked).build().await.expect("node");
    let parent = node.start(holder(NEVER_MS)).await.expect("started");
    let filter = WorkflowFilter { parent: Some(parent.clone()), ..WorkflowFilter::new() };
    let child = loop {
        if let Some(child) = store.list(&filter).await.expect("list").items.pop() {
            break child.id;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    until(&node, &child, is_waiting).await;

    node.cancel(&parent, CancelRequest::new().reason("shutting down").with_children()).await.expect("cancel");
    assert_eq!(cancellation(&node.wait(&parent).await, &parent).error_message, "shutting down");
    let cancelled = |s: Option<&WorkflowStatus>| matches!(s, Some(WorkflowStatus::Cancelled { .. }));
    until(&node, &child, cancelled).await;
    node.transport().wait_idle().await;
    assert_eq!(
        node.status(&parent).await.unwrap(),
        Some(WorkflowStatus::Cancelled { reason: Some("shutting down".into()) }),
        "the child's cancellation reached a cancelled parent: ignored"
    );
    let listed = WorkflowFilter { status: Some(WorkflowState::Cancelled), ..WorkflowFilter::new() };
    assert_eq!(store.count(&listed).await.unwrap(), 2, "both listed as cancelled");
    nothing_more(&node, &parent).await;
    node.shutdown().await;
}

/// A finished workflow, or an unknown one, is left as it is.
async fn a_finished_workflow_is_left_alone<M: Memory<WorkflowRecord> + 'static>(store: Arc<M>) {
    let parked = Parked::default();
    let node = declare(&store, &parked).build().await.expect("node");
    let subject = node.start(slow(NEVER_MS)).await.expect("started");
    until(&node, &subject, is_waiting).await;
    node.transport().publish(vec![parked.answer(&subject).await]).await.expect("publish");
    let done = node.wait(&subject).await;
    assert_eq!(done.data()["sum"], 5.0);
    let version = store.read(&subject).await.unwrap().expect("stored").version;

    node.cancel(&subject, CancelRequest::new().with_children()).await.expect("cancel");
    let unknown = slow(NEVER_MS);
    node.cancel(unknown.subject(), CancelRequest::new()).await.expect("cancel");
    node.transport().wait_idle().await;
    nothing_more(&node, &subject).await;
    assert_eq!(node.status(&subject).await.unwrap(), Some(WorkflowStatus::Done));
    assert_eq!(store.read(&subject).await.unwrap().expect("stored").version, version, "nothing written");
    assert_eq!(node.status(unknown.subject()).await.unwrap(), None, "a cancel creates no workflow");
    node.shutdown().await;
}

/// A resumable waiting on a service is cancelled like a machine.
async fn a_resumable_is_cancelled<M: Memory<WorkflowRecord> + 'static>(store: Arc<M>) {
    let parked = Parked::default();
    let node = declare(&store, &parked).build().await.expect("node");
    let init = EventFactory::<AverageV1>::new()
        .init(AverageInput { values: vec![1.0, 3.0] }, Event::builder().source(CLIENT))
        .expect("init");
    let subject = node.start(init).await.expect("started");
    until(&node, &subject, |s| matches!(s, Some(WorkflowStatus::Active))).await;
    node.cancel(&subject, CancelRequest::new()).await.expect("cancel");
    let payload = cancellation(&node.wait(&subject).await, &subject);
    assert_eq!(payload.error_message, orchestrator::orchestration::cancel::DEFAULT_CANCEL_MESSAGE);
    assert_eq!(node.status(&subject).await.unwrap(), Some(WorkflowStatus::Cancelled { reason: None }));
    node.transport().publish(vec![parked.answer(&subject).await]).await.expect("publish");
    node.transport().wait_idle().await;
    nothing_more(&node, &subject).await;
    node.shutdown().await;
}

fn in_memory() -> Arc<InMemory<WorkflowRecord>> {
    Arc::new(InMemory::default())
}

fn sqlite(dir: &tempfile::TempDir) -> Arc<SqliteMemory<WorkflowRecord>> {
    Arc::new(SqliteConfig::new(dir.path().join("cancel.db")).open::<WorkflowRecord>().expect("open"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_memory_a_waiting_machine_is_cancelled() {
    a_waiting_machine_is_cancelled(in_memory()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_memory_children_are_cancelled_with_their_parent() {
    children_are_cancelled_with_their_parent(in_memory()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_memory_a_finished_workflow_is_left_alone() {
    a_finished_workflow_is_left_alone(in_memory()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_memory_a_resumable_is_cancelled() {
    a_resumable_is_cancelled(in_memory()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_waiting_machine_is_cancelled() {
    let dir = tempfile::tempdir().expect("dir");
    a_waiting_machine_is_cancelled(sqlite(&dir)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_children_are_cancelled_with_their_parent() {
    let dir = tempfile::tempdir().expect("dir");
    children_are_cancelled_with_their_parent(sqlite(&dir)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_finished_workflow_is_left_alone() {
    let dir = tempfile::tempdir().expect("dir");
    a_finished_workflow_is_left_alone(sqlite(&dir)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_resumable_is_cancelled() {
    let dir = tempfile::tempdir().expect("dir");
    a_resumable_is_cancelled(sqlite(&dir)).await;
}

/// On a durable SQLite node: a cancelled workflow whose timer falls due while the store is
/// closed does not fire once it is reopened, while an uncancelled one beside it does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_cancelled_timer_does_not_fire_after_a_restart() {
    let dir = tempfile::tempdir().expect("dir");
    let (cancelled, kept) = {
        let store = sqlite(&dir);
        let node = declare(&store, &Parked::default()).durable().build().await.expect("node");
        let cancelled = node.start(slow(800)).await.expect("started");
        let kept = node.start(slow(800)).await.expect("started");
        until(&node, &cancelled, is_waiting).await;
        until(&node, &kept, is_waiting).await;
        node.cancel(&cancelled, CancelRequest::new().reason("too slow")).await.expect("cancel");
        cancellation(&node.wait(&cancelled).await, &cancelled);
        node.shutdown().await;
        (cancelled, kept)
    };
    // Both timers fall due while the store is closed.
    tokio::time::sleep(Duration::from_millis(1_000)).await;

    let store = sqlite(&dir);
    let node = declare(&store, &Parked::default()).durable().build().await.expect("node");
    let timed_out = node.wait(&kept).await;
    assert_eq!(timed_out.data()["timed_out"], true, "the other workflow's timer fired: {timed_out:?}");
    node.transport().wait_idle().await;
    nothing_more(&node, &cancelled).await;
    assert_eq!(
        node.status(&cancelled).await.unwrap(),
        Some(WorkflowStatus::Cancelled { reason: Some("too slow".into()) })
    );
    assert!(store.claim_due(10, Duration::from_secs(1)).await.unwrap().is_empty(), "no wake-up is due");
    // A cancel request built by hand is the same event Node::cancel publishes.
    let by_hand = cancel_event(&cancelled, &CancelRequest::new()).expect("event");
    assert_eq!(by_hand.r#type(), "arvo.orc.test.cancel.slow.cancel");
    node.shutdown().await;
}
