//! The orchestration lifecycle (`orchestrator::orchestration`, Arvo's orchestration wrapper and
//! `ArvoOrchestrator`): every step and error path, event building, child workflows, versions,
//! idempotency and concurrency.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use orchestrator::broker::Broker;
use orchestrator::contract::{ContractVersion, VersionedContract};
use orchestrator::domain::Domain;
use orchestrator::handler::EventHandler;
use orchestrator::machine::RequestOptions;
use orchestrator::memory::{
    Acquired, Commit, EventKey, InMemory, InMemoryConfig, Journal, Lease, Memory, MemoryError, Retention,
    Stored, Wake,
};
use orchestrator::orchestration::{
    CoreStep, ExecutionStatus, Lifecycle, Locking, Orchestrator, StepError, StepInput, StepOutput,
    WorkflowRecord,
};
use orchestrator::prelude::*;
use orchestrator_examples::calculator::flows::{AverageFlow, AvgCtx};
use orchestrator_examples::calculator::{
    AddV1, AverageInput, AverageOutput, AverageV1, MulV1, Operands, Product, Sum, services,
};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Machines and contracts

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
/// Two operands.
pub struct CalcInput {
    /// Left.
    pub a: f64,
    /// Right.
    pub b: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
/// One result.
pub struct CalcOutput {
    /// The result.
    pub result: f64,
}

orchestrator::orchestrator_contract! {
    /// Two versions of one workflow: 1.0.0 adds, 2.0.0 multiplies.
    pub contract CalcContract {
        uri: "#/orc/test/calc",
        name: "test.calc",
        versions: {
            CalcV1 = "1.0.0" { init: CalcInput, complete: CalcOutput },
            CalcV2 = "2.0.0" { init: CalcInput, complete: CalcOutput },
        },
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
/// Context of the calc machines.
pub struct CalcCtx {
    /// Left.
    pub a: f64,
    /// Right.
    pub b: f64,
    /// The result.
    pub result: f64,
}

orchestrator::machine! {
    /// Version 1.0.0: adds.
    pub machine CalcAdd {
        contract: CalcV1,
        services: { add: AddV1 },
        context: CalcCtx,
        init: |input| CalcCtx { a: input.a, b: input.b, result: 0.0 },
        output: |ctx| CalcOutput { result: ctx.result },
        states: {
            working: {
                entry: [|ctx, _, out| out.add(Operands { a: ctx.a, b: ctx.b })],
                on: {
                    add::Sum => {
                        target: done,
                        actions: [|ctx, event, _| if let CalcAddEvent::AddSum(s) = event { ctx.result = s.sum }],
                    },
                },
            },
            done: { type: final },
        },
    }
}

orchestrator::machine! {
    /// Version 2.0.0: multiplies.
    pub machine CalcMul {
        contract: CalcV2,
        services: { mul: MulV1 },
        context: CalcCtx,
        init: |input| CalcCtx { a: input.a, b: input.b, result: 0.0 },
        output: |ctx| CalcOutput { result: ctx.result },
        states: {
            working: {
                entry: [|ctx, _, out| out.mul(Operands { a: ctx.a, b: ctx.b })],
                on: {
                    mul::Product => {
                        target: done,
                        actions: [|ctx, event, _| if let CalcMulEvent::MulProduct(p) = event { ctx.result = p.product }],
                    },
                },
            },
            done: { type: final },
        },
    }
}

orchestrator::machine! {
    /// Another version 1.0.0 of the calc contract (a duplicate).
    pub machine CalcAddAgain {
        contract: CalcV1,
        output: |_| CalcOutput { result: 0.0 },
        states: { done: { type: final } },
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
/// No data.
pub struct Empty {}

orchestrator::orchestrator_contract! {
    /// Completes with an empty payload.
    pub contract PingContract {
        uri: "#/orc/test/ping",
        name: "test.ping",
        versions: { PingV1 = "1.0.0" { init: Empty, complete: Empty } },
    }
}

orchestrator::machine! {
    /// Asks for a sum, then completes with `{}`.
    pub machine Ping {
        contract: PingV1,
        services: { add: AddV1 },
        output: |_| Empty {},
        states: {
            waiting: {
                entry: [|_, _, out| out.add(Operands { a: 1.0, b: 1.0 })],
                on: { add::Sum => done },
            },
            done: { type: final },
        },
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
/// Both results.
pub struct BothOutput {
    /// `a + b`.
    pub sum: f64,
    /// `a * b`.
    pub product: f64,
}

orchestrator::orchestrator_contract! {
    /// Adds and multiplies in parallel.
    pub contract BothContract {
        uri: "#/orc/test/both",
        name: "test.both",
        versions: { BothV1 = "1.0.0" { init: CalcInput, complete: BothOutput } },
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
/// The answers so far.
pub struct BothCtx {
    /// `a + b`, once answered.
    pub sum: Option<f64>,
    /// `a * b`, once answered.
    pub product: Option<f64>,
}

orchestrator::machine! {
    /// Two requests at once; done when both answers are in.
    pub machine Both {
        contract: BothV1,
        services: { add: AddV1, mul: MulV1 },
        context: BothCtx,
        output: |ctx| BothOutput { sum: ctx.sum.unwrap_or(f64::NAN), product: ctx.product.unwrap_or(f64::NAN) },
        states: {
            waiting: {
                entry: [|_, event, out| if let BothEvent::Init(i) = event {
                    out.add(Operands { a: i.a, b: i.b });
                    out.mul(Operands { a: i.a, b: i.b });
                }],
                on: {
                    add::Sum => { actions: [|ctx, event, _| if let BothEvent::AddSum(s) = event { ctx.sum = Some(s.sum) }] },
                    mul::Product => { actions: [|ctx, event, _| if let BothEvent::MulProduct(p) = event { ctx.product = Some(p.product) }] },
                },
                always: { target: done, guard: |ctx, _| ctx.sum.is_some() && ctx.product.is_some() },
            },
            done: { type: final },
        },
    }
}

orchestrator::orchestrator_contract! {
    /// Runs the averaging workflow as a child.
    pub contract ReportContract {
        uri: "#/orc/test/report",
        name: "test.report",
        versions: { ReportV1 = "1.0.0" { init: AverageInput, complete: AverageOutput } },
    }
}

orchestrator::machine! {
    /// Parent workflow: starts `arvo.orc.calc.average` and reports its average.
    pub machine Report {
        contract: ReportV1,
        services: { average: AverageV1 },
        context: AvgCtx,
        init: |input| AvgCtx { values: input.values.clone(), average: 0.0 },
        output: |ctx| AverageOutput { average: ctx.average * 10.0 },
        states: {
            running: {
                entry: [|ctx, _, out| out.average(AverageInput { values: ctx.values.clone() })],
                on: {
                    average::AverageOutput => {
                        target: finished,
                        actions: [|ctx, event, _| if let ReportEvent::AverageOutput(o) = event { ctx.average = o.average }],
                    },
                    average::error => failed,
                },
            },
            finished: { type: final },
            failed: { type: final },
        },
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers

type Mem = InMemory<WorkflowRecord>;

const CLIENT: &str = "com.test.client";
const AVG: &str = "arvo.orc.calc.average";

fn client() -> EventBuilder {
    Event::builder().source(CLIENT)
}

fn fast_memory(retention: Retention) -> Mem {
    InMemory::new(InMemoryConfig { retention, ..InMemoryConfig::default() })
}

fn average_orchestrator(retention: Retention) -> Orchestrator<Mem> {
    Orchestrator::builder(fast_memory(retention)).machine::<AverageFlow>().build().unwrap()
}

fn average_init(values: Vec<f64>) -> Event {
    EventFactory::<AverageV1>::new().init(AverageInput { values }, client()).unwrap()
}

async fn one<H: EventHandler>(handler: &H, event: &Event) -> Event {
    let mut out = handler.execute(event).await.unwrap();
    assert_eq!(out.len(), 1, "expected one event, got {out:?}");
    out.remove(0)
}

async fn stored<M: Memory<WorkflowRecord>>(memory: &M, subject: &str) -> Option<Stored<WorkflowRecord>> {
    memory.read(subject).await.unwrap()
}

// ---------------------------------------------------------------------------------------------
// A full workflow

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn full_workflow_through_the_broker() {
    let orc = average_orchestrator(Retention::Remove);
    assert_eq!(orc.source(), AVG);
    let broker = Broker::builder()
        .handler(orc.clone())
        .handler(services::add().unwrap())
        .handler(services::divide().unwrap())
        .workers(4)
        .build()
        .unwrap();
    let init = average_init(vec![2.0, 4.0]);
    let done = broker.resolve(init.clone()).await.unwrap().expect("a completion");
    assert_eq!(done.r#type(), "arvo.orc.calc.average.done");
    assert_eq!(done.data_value(), &json!({"average": 3.0}));
    assert_eq!(done.source(), AVG);
    assert_eq!(done.subject(), init.subject());
    assert_eq!(done.to(), Some(CLIENT));
    assert_eq!(done.parentid(), Some(init.id()));
    assert_eq!(done.dataschema(), Some("#/orc/calc/average/1.0.0"));
    assert_eq!(done.redirectto(), Some(AVG));
    assert!(broker.take_dead_letters().is_empty());
    // Retention::Remove: the finished workflow is gone.
    assert!(stored(orc.memory(), init.subject()).await.is_none());
    broker.shutdown().await;
}

#[tokio::test]
async fn each_step_builds_the_events_and_persists_the_snapshot() {
    let orc = average_orchestrator(Retention::Keep);
    let init = client()
        .accesscontrol("role=tester")
        .r#type(AVG)
        .dataschema("#/orc/calc/average/1.0.0")
        .orchestration_subject(
            &Subject::builder(AVG, "1.0.0", CLIENT).execution_id("exec-1").build().unwrap(),
        )
        .data_json(json!({"parentSubject$$": null, "values": [1.0, 5.0]}))
        .build()
        .unwrap();
    let request = one(&orc, &init).await;
    assert_eq!(request.r#type(), "com.calc.add");
    assert_eq!(request.source(), AVG);
    assert_eq!(request.subject(), init.subject());
    assert_eq!(request.to(), Some("com.calc.add"));
    assert_eq!(request.redirectto(), Some(AVG));
    assert_eq!(request.parentid(), Some(init.id()));
    assert_eq!(request.dataschema(), Some("#/calc/add/1.0.0"));
    assert_eq!(request.accesscontrol(), Some("role=tester"));
    assert_eq!(request.domain(), None);
    assert_eq!(request.data_value(), &json!({"a": 1.0, "b": 5.0}));

    let Stored { record, version } = stored(orc.memory(), init.subject()).await.unwrap();
    assert_eq!(version, 1);
    assert_eq!(record.execution_status, ExecutionStatus::Normal);
    assert_eq!(record.subject, init.subject());
    assert_eq!(record.parent_subject, None);
    assert_eq!(record.init_event_id, init.id());
    assert!(!record.done);
    assert_eq!(record.last_event_id.as_deref(), Some(init.id()));
    // The snapshot: subject, context, compact chart state; never the machine definition.
    let keys: Vec<&str> = record.state.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["subject", "context", "state", "epochMs", "value"]);
    assert_eq!(record.state["value"], json!(["adding"]), "the active states, readable");
    assert_eq!(record.state["context"], json!({"values": [1.0, 5.0], "average": 0.0}));
    // The record's wire form.
    let wire = serde_json::to_value(&record).unwrap();
    assert_eq!(wire["executionStatus"], "normal");
    assert_eq!(wire["initEventId"], init.id());
    let back: WorkflowRecord = serde_json::from_value(wire).unwrap();
    assert_eq!(back, record);

    let sum = one(&services::add().unwrap(), &request).await;
    let divide = one(&orc, &sum).await;
    assert_eq!(divide.r#type(), "com.calc.divide");
    assert_eq!(divide.parentid(), Some(sum.id()));
    assert_eq!(divide.data_value(), &json!({"numerator": 6.0, "denominator": 2.0}));
    assert_eq!(stored(orc.memory(), init.subject()).await.unwrap().version, 2);

    let quotient = one(&services::divide().unwrap(), &divide).await;
    let done = one(&orc, &quotient).await;
    assert_eq!(done.r#type(), "arvo.orc.calc.average.done");
    assert_eq!(done.data_value(), &json!({"average": 3.0}));
    assert_eq!(done.parentid(), Some(init.id()));
    assert_eq!(done.accesscontrol(), Some("role=tester"));
    let Stored { record, version } = stored(orc.memory(), init.subject()).await.unwrap();
    assert_eq!(version, 3);
    assert!(record.done);
    // Exactly once: the same answer again gets the same completion (same id, from the journal,
    // so an emission lost in a crash is made good), another answer produces nothing.
    assert_eq!(orc.execute(&quotient).await.unwrap(), vec![done.clone()]);
    let again = one(&services::divide().unwrap(), &divide).await;
    assert!(orc.execute(&again).await.unwrap().is_empty());
    assert_eq!(stored(orc.memory(), init.subject()).await.unwrap().version, 3);
}

// ---------------------------------------------------------------------------------------------
// Lifecycle gates and violations

#[tokio::test]
async fn an_invalid_subject_is_an_execution_violation() {
    let orc = average_orchestrator(Retention::Keep);
    let event = client()
        .r#type(AVG)
        .subject("not-an-orchestration-subject")
        .data_json(json!({"parentSubject$$": null, "values": [1.0, 2.0]}))
        .build()
        .unwrap();
    let err = orc.execute(&event).await.unwrap_err();
    assert_eq!(err.kind(), "Execution");
    assert!(err.message().starts_with(&format!("Invalid event (id={}) subject format", event.id())), "{err}");
    assert!(stored(orc.memory(), "not-an-orchestration-subject").await.is_none());
}

#[tokio::test]
async fn another_orchestrators_subject_is_ignored() {
    let orc = average_orchestrator(Retention::Keep);
    let calc = EventFactory::<CalcV1>::new().init(CalcInput { a: 1.0, b: 2.0 }, client()).unwrap();
    let foreign = client()
        .r#type(AVG)
        .subject(calc.subject())
        .data_json(json!({"parentSubject$$": null, "values": [1.0, 2.0]}))
        .build()
        .unwrap();
    assert!(orc.execute(&foreign).await.unwrap().is_empty());
    assert!(stored(orc.memory(), calc.subject()).await.is_none());
}

#[tokio::test]
async fn a_non_init_event_of_an_unknown_workflow_is_ignored() {
    let orc = average_orchestrator(Retention::Keep);
    let subject = Subject::builder(AVG, "1.0.0", CLIENT).build().unwrap();
    let sum = EventFactory::<AddV1>::new()
        .emits(Sum { sum: 3.0 }, Event::builder().source("com.calc.add").orchestration_subject(&subject))
        .unwrap();
    assert!(orc.execute(&sum).await.unwrap().is_empty());
    assert!(stored(orc.memory(), subject.as_str()).await.is_none());
}

#[tokio::test]
async fn a_held_lease_denies_the_lock() {
    let orc = average_orchestrator(Retention::Keep);
    let init = average_init(vec![1.0, 2.0]);
    let lease = orc.memory().lock(init.subject()).await.unwrap().unwrap();
    let err = orc.execute(&init).await.unwrap_err();
    assert_eq!(err.transaction_cause(), Some(TransactionCause::LockUnacquired));
    assert!(err.message().starts_with("Lock acquisition denied"), "{err}");
    assert!(stored(orc.memory(), init.subject()).await.is_none());
    orc.memory().unlock(&lease).await.unwrap();
    assert_eq!(orc.execute(&init).await.unwrap().len(), 1);
    // The lifecycle released its own lease.
    let again = orc.memory().lock(init.subject()).await.unwrap();
    assert!(again.is_some());
}

#[tokio::test]
async fn locking_never_skips_the_lease() {
    let orc = Orchestrator::builder(fast_memory(Retention::Keep))
        .machine::<AverageFlow>()
        .locking(Locking::Never)
        .build()
        .unwrap();
    assert_eq!(orc.lifecycle().locking(), Locking::Never);
    let init = average_init(vec![1.0, 2.0]);
    let _lease = orc.memory().lock(init.subject()).await.unwrap().unwrap();
    // Writes without a lease are not fenced: a held lease does not stop a `Never` orchestrator.
    assert_eq!(orc.execute(&init).await.unwrap().len(), 1);
}

/// A memory whose acquire (lease and read) and commit can be made to fail.
#[derive(Default)]
struct Flaky {
    inner: Mem,
    fail_acquire: AtomicBool,
    fail_commit: AtomicBool,
    corrupt: AtomicBool,
    unlocks: AtomicUsize,
}

fn broken(id: &str, what: &str) -> MemoryError {
    MemoryError::Backend { id: id.to_owned(), transient: true, source: format!("{what} is broken").into() }
}

impl Memory<WorkflowRecord> for Flaky {
    async fn read(&self, id: &str) -> Result<Option<Stored<WorkflowRecord>>, MemoryError> {
        self.inner.read(id).await
    }

    async fn lock(&self, id: &str) -> Result<Option<Lease>, MemoryError> {
        self.inner.lock(id).await
    }

    async fn renew(&self, lease: &Lease) -> Result<Lease, MemoryError> {
        self.inner.renew(lease).await
    }

    async fn unlock(&self, lease: &Lease) -> Result<bool, MemoryError> {
        self.unlocks.fetch_add(1, Ordering::SeqCst);
        // The lease is released, but the backend reports an error: the lifecycle tolerates it.
        self.inner.unlock(lease).await?;
        Err(broken(&lease.id, "unlock"))
    }

    async fn acquire(
        &self,
        id: &str,
        event: EventKey<'_>,
        lock: bool,
    ) -> Result<Option<Acquired<WorkflowRecord>>, MemoryError> {
        if self.fail_acquire.load(Ordering::SeqCst) {
            return Err(broken(id, "lock"));
        }
        self.inner.acquire(id, event, lock).await
    }

    async fn commit(&self, commit: Commit<'_, WorkflowRecord>) -> Result<u64, MemoryError> {
        if self.fail_commit.load(Ordering::SeqCst) {
            return Err(broken(commit.id, "write"));
        }
        if self.corrupt.load(Ordering::SeqCst) {
            let source = "undecodable record".into();
            return Err(MemoryError::Backend { id: commit.id.to_owned(), transient: false, source });
        }
        self.inner.commit(commit).await
    }

    async fn produced(&self, id: &str, event: EventKey<'_>) -> Result<Option<Vec<Event>>, MemoryError> {
        self.inner.produced(id, event).await
    }

    async fn claim_due(&self, limit: usize, claim: Duration) -> Result<Vec<Wake>, MemoryError> {
        self.inner.claim_due(limit, claim).await
    }

    async fn cleanup(&self, id: &str) -> Result<(), MemoryError> {
        self.inner.cleanup(id).await
    }
}

#[tokio::test]
async fn memory_failures_are_transaction_violations_and_always_unlock() {
    let orc = Orchestrator::builder(Flaky::default()).machine::<AverageFlow>().build().unwrap();
    let init = average_init(vec![1.0, 2.0]);
    let mem = orc.memory();

    mem.fail_acquire.store(true, Ordering::SeqCst);
    let err = orc.execute(&init).await.unwrap_err();
    assert_eq!(err.transaction_cause(), Some(TransactionCause::LockFailure));
    assert!(err.message().starts_with("Error acquiring lock for event (subject="), "{err}");
    assert!(err.message().ends_with("lock is broken"), "{err}");
    assert_eq!(mem.unlocks.load(Ordering::SeqCst), 0, "nothing to release");
    mem.fail_acquire.store(false, Ordering::SeqCst);

    mem.fail_commit.store(true, Ordering::SeqCst);
    let err = orc.execute(&init).await.unwrap_err();
    assert_eq!(err.transaction_cause(), Some(TransactionCause::WriteFailure));
    assert!(err.message().starts_with("Error writing state for event (subject="), "{err}");
    assert_eq!(mem.unlocks.load(Ordering::SeqCst), 1, "a failed commit leaves the lease to release");
    mem.fail_commit.store(false, Ordering::SeqCst);

    // Every lease was released: the workflow runs now, and its commit releases the lease.
    assert_eq!(orc.execute(&init).await.unwrap().len(), 1);
    assert_eq!(mem.unlocks.load(Ordering::SeqCst), 1);
    assert!(mem.lock(init.subject()).await.unwrap().is_some(), "the commit released the lease");
}

#[tokio::test]
async fn a_permanent_store_error_is_an_execution_violation() {
    let orc = Orchestrator::builder(Flaky::default()).machine::<AverageFlow>().build().unwrap();
    let init = average_init(vec![1.0, 2.0]);
    orc.memory().corrupt.store(true, Ordering::SeqCst);
    // Retrying cannot cure an undecodable record: a dead letter, not a retry.
    let err = orc.execute(&init).await.unwrap_err();
    assert_eq!(err.kind(), "Execution", "{err}");
    assert!(err.message().starts_with("Error writing state for event (subject="), "{err}");
    assert!(err.message().ends_with("undecodable record"), "{err}");
}

#[tokio::test]
async fn a_second_init_of_a_running_workflow_starts_nothing_and_writes_nothing() {
    let orc = average_orchestrator(Retention::Keep);
    let init = average_init(vec![1.0, 2.0]);
    orc.execute(&init).await.unwrap();
    let before = stored(orc.memory(), init.subject()).await.unwrap();
    // Another init event (a new id) for the same workflow subject.
    let again = client()
        .r#type(AVG)
        .dataschema("#/orc/calc/average/1.0.0")
        .subject(init.subject())
        .data_json(json!({ "values": [5.0, 6.0], "parentSubject$$": null }))
        .build()
        .unwrap();
    assert!(orc.execute(&again).await.unwrap().is_empty(), "a second init starts nothing");
    let after = stored(orc.memory(), init.subject()).await.unwrap();
    assert_eq!(after.version, before.version, "and writes nothing");
    assert_eq!(orc.memory().history(init.subject(), 0, 10).await.unwrap().len(), 1, "nor journals anything");
}

#[tokio::test]
async fn a_missing_machine_version_is_a_config_violation() {
    let orc = Orchestrator::builder(fast_memory(Retention::Keep)).machine::<CalcAdd>().build().unwrap();
    let init = EventFactory::<CalcV2>::new().init(CalcInput { a: 2.0, b: 3.0 }, client()).unwrap();
    let err = orc.execute(&init).await.unwrap_err();
    assert_eq!(err.kind(), "Config");
    assert_eq!(
        err.message(),
        "Machine resolution failed: No machine found matching orchestrator name='arvo.orc.test.calc' and version='2.0.0'."
    );
    assert!(stored(orc.memory(), init.subject()).await.is_none());
}

#[tokio::test]
async fn contract_violations_leave_memory_untouched() {
    let orc = average_orchestrator(Retention::Keep);
    let init = average_init(vec![1.0, 2.0]);
    orc.execute(&init).await.unwrap();
    let before = stored(orc.memory(), init.subject()).await.unwrap();

    // Invalid data of a known event type.
    let bad = Event::builder()
        .source("com.calc.add")
        .r#type("evt.calc.add.success")
        .subject(init.subject())
        .dataschema("#/calc/add/1.0.0")
        .data_json(json!({"sum": "three"}))
        .build()
        .unwrap();
    let err = orc.execute(&bad).await.unwrap_err();
    assert_eq!(err.kind(), "Contract", "{err}");
    // An event no contract of the machine declares.
    let unknown = Event::builder()
        .source("com.other.thing")
        .r#type("com.other.thing.happened")
        .subject(init.subject())
        .data_json(json!({}))
        .build()
        .unwrap();
    let err = orc.execute(&unknown).await.unwrap_err();
    assert_eq!(err.kind(), "Config", "{err}");
    assert!(err.message().starts_with("Contract validation failed"), "{err}");
    // Invalid init data.
    let bad_init = client()
        .r#type(AVG)
        .dataschema("#/orc/calc/average/1.0.0")
        .orchestration_subject(&Subject::builder(AVG, "1.0.0", CLIENT).build().unwrap())
        .data_json(json!({"parentSubject$$": null, "values": []}))
        .build()
        .unwrap();
    assert_eq!(orc.execute(&bad_init).await.unwrap_err().kind(), "Contract");
    assert!(stored(orc.memory(), bad_init.subject()).await.is_none());

    assert_eq!(stored(orc.memory(), init.subject()).await.unwrap(), before);
    // The leases were released.
    assert!(orc.memory().lock(init.subject()).await.unwrap().is_some());
}

// ---------------------------------------------------------------------------------------------
// Failure latch, with a scripted core step

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
/// What the scripted step does.
pub struct ScriptInput {
    /// `ok`, `fail`, `violate` or `done`.
    pub action: String,
}

orchestrator::orchestrator_contract! {
    /// The scripted test orchestrator.
    pub contract ScriptContract {
        uri: "#/orc/test/script",
        name: "test.script",
        versions: { ScriptV1 = "1.0.0" { init: ScriptInput, complete: Empty } },
    }
}

const SCRIPT: &str = "arvo.orc.test.script";

/// A core step driven by `data.action`: `ok` counts, `fail` fails, `violate` is a violation,
/// `done` finishes. It records how many steps run at once.
#[derive(Default)]
struct Scripted {
    running: AtomicUsize,
    max_running: AtomicUsize,
    pause: Option<Duration>,
}

impl CoreStep for Scripted {
    fn source(&self) -> &str {
        SCRIPT
    }

    fn system_error_contract(&self) -> &VersionedContract {
        ScriptV1::versioned()
    }

    async fn step(&self, input: StepInput<'_>) -> Result<StepOutput, StepError> {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_running.fetch_max(now, Ordering::SeqCst);
        if let Some(pause) = self.pause {
            tokio::time::sleep(pause).await;
        }
        let count = input.state.and_then(|s| s["count"].as_u64()).unwrap_or(0);
        let result = match input.event.data()["action"].as_str().unwrap_or_default() {
            "fail" => Err(StepError::Failure("the script failed".into())),
            "panic" => panic!("the script panicked"),
            "violate" => Err(StepError::Violation(Violation::execution("scripted violation"))),
            action => Ok(StepOutput {
                events: Vec::new(),
                state: json!({"count": count + 1}),
                done: action == "done",
                wake_at: None,
            }),
        };
        self.running.fetch_sub(1, Ordering::SeqCst);
        result
    }
}

fn poke(subject: &str, action: &str) -> Event {
    client().r#type("com.test.poke").subject(subject).data_json(json!({ "action": action })).build().unwrap()
}

fn script_init(action: &str) -> Event {
    EventFactory::<ScriptV1>::new().init(ScriptInput { action: action.to_owned() }, client()).unwrap()
}

#[tokio::test]
async fn a_panicking_step_latches_the_workflow_and_releases_the_lease() {
    let lifecycle = Lifecycle::new(Scripted::default(), fast_memory(Retention::Keep));
    let init = script_init("ok");
    lifecycle.execute(&init).await.unwrap();
    let out = lifecycle.execute(&poke(init.subject(), "panic")).await.unwrap();
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].r#type(), format!("sys.{SCRIPT}.error"));
    assert_eq!(out[0].data()["errorName"], "Panic");
    assert!(out[0].data()["errorMessage"].as_str().unwrap().contains("the script panicked"), "{out:?}");
    let Stored { record, .. } = stored(lifecycle.memory(), init.subject()).await.unwrap();
    assert!(record.is_failed(), "the failure latch is set");
    // The lease was released: the next event is not refused for a held lock (it is ignored,
    // the workflow being latched).
    assert!(lifecycle.execute(&poke(init.subject(), "ok")).await.unwrap().is_empty());
}

#[tokio::test]
async fn an_ordinary_failure_latches_the_workflow_and_reports_a_system_error() {
    let lifecycle = Lifecycle::new(Scripted::default(), fast_memory(Retention::Keep));
    assert_eq!(EventHandler::source(&lifecycle), SCRIPT);
    let init = script_init("ok");
    assert!(lifecycle.execute(&init).await.unwrap().is_empty());
    lifecycle.execute(&poke(init.subject(), "ok")).await.unwrap();
    assert_eq!(stored(lifecycle.memory(), init.subject()).await.unwrap().version, 2);

    let failing = poke(init.subject(), "fail");
    let events = lifecycle.execute(&failing).await.unwrap();
    assert_eq!(events.len(), 1);
    let sys = &events[0];
    assert_eq!(sys.r#type(), "sys.arvo.orc.test.script.error");
    assert_eq!(sys.source(), SCRIPT);
    assert_eq!(sys.subject(), init.subject());
    assert_eq!(sys.to(), Some(CLIENT));
    assert_eq!(sys.parentid(), Some(init.id()));
    assert_eq!(sys.dataschema(), Some("#/orc/test/script/0.0.0"));
    assert_eq!(sys.data()["errorMessage"], "the script failed");

    // The latch was written against the version read (a compare-and-swap, version 2 → 3).
    let Stored { record, version } = stored(lifecycle.memory(), init.subject()).await.unwrap();
    assert_eq!(version, 3);
    assert!(record.is_failed());
    assert_eq!(record.state, json!({"count": 2}), "the last good state is kept");
    let ExecutionStatus::Failure { error } = &record.execution_status else { unreachable!() };
    assert_eq!(error.error_message, "the script failed");
    assert_eq!(serde_json::to_value(&record).unwrap()["executionStatus"], "failure");

    // Later events are ignored.
    assert!(lifecycle.execute(&poke(init.subject(), "ok")).await.unwrap().is_empty());
    assert!(lifecycle.execute(&poke(init.subject(), "fail")).await.unwrap().is_empty());
    assert_eq!(stored(lifecycle.memory(), init.subject()).await.unwrap().version, 3);
}

#[tokio::test]
async fn a_child_failing_on_init_reports_to_its_parent() {
    let lifecycle =
        Lifecycle::new(Scripted::default(), fast_memory(Retention::Keep)).with_executionunits(Some(2.into()));
    let parent = Subject::builder("arvo.orc.test.parent", "1.0.0", CLIENT).build().unwrap();
    let init = EventFactory::<ScriptV1>::new()
        .init_child(
            ScriptInput { action: "fail".into() },
            &parent,
            Event::builder().source("arvo.orc.test.parent"),
        )
        .unwrap();
    let events = lifecycle.execute(&init).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].subject(), parent.as_str(), "addressed to the parent workflow");
    assert_eq!(events[0].to(), Some("arvo.orc.test.parent"), "the child's initiator");
    assert_eq!(events[0].parentid(), Some(init.id()));
    assert_eq!(events[0].executionunits(), Some(2.0));
    // Written as a new record (no previous version).
    let Stored { record, version } = stored(lifecycle.memory(), init.subject()).await.unwrap();
    assert_eq!(version, 1);
    assert!(record.is_failed());
    assert_eq!(record.parent_subject.as_deref(), Some(parent.as_str()));
    assert_eq!(record.state, Value::Null);
}

#[tokio::test]
async fn a_violation_from_the_core_step_persists_nothing() {
    let lifecycle = Lifecycle::new(Scripted::default(), fast_memory(Retention::Keep));
    let init = script_init("violate");
    let err = lifecycle.execute(&init).await.unwrap_err();
    assert_eq!(err.message(), "scripted violation");
    assert!(stored(lifecycle.memory(), init.subject()).await.is_none());
}

// ---------------------------------------------------------------------------------------------
// Completion

#[tokio::test]
async fn completion_is_emitted_even_with_an_empty_output() {
    let orc = Orchestrator::builder(fast_memory(Retention::Keep)).machine::<Ping>().build().unwrap();
    let init = EventFactory::<PingV1>::new().init(Empty {}, client()).unwrap();
    let request = one(&orc, &init).await;
    let sum = one(&services::add().unwrap(), &request).await;
    let done = one(&orc, &sum).await;
    assert_eq!(done.r#type(), "arvo.orc.test.ping.done");
    assert_eq!(done.data_value(), &json!({}));
    assert_eq!(done.to(), Some(CLIENT));
    assert_eq!(orc.execute(&sum).await.unwrap(), vec![done], "exactly once: the same completion again");
}

#[tokio::test]
async fn completion_goes_to_meta_redirectto_and_system_errors_to_the_initiator() {
    let orc = average_orchestrator(Retention::Keep);
    let init = EventFactory::<AverageV1>::new()
        .init(AverageInput { values: vec![3.0, 5.0] }, client().redirectto("com.test.elsewhere"))
        .unwrap();
    let subject = Subject::parse(init.subject()).unwrap();
    assert_eq!(subject.meta("redirectto"), Some("com.test.elsewhere"));
    let request = one(&orc, &init).await;
    let sum = one(&services::add().unwrap(), &request).await;
    let divide = one(&orc, &sum).await;
    let quotient = one(&services::divide().unwrap(), &divide).await;
    let done = one(&orc, &quotient).await;
    assert_eq!(done.to(), Some("com.test.elsewhere"));
    assert_eq!(done.data_value(), &json!({"average": 4.0}));

    // System errors ignore meta.redirectto (as in Arvo): they go to the initiator.
    let lifecycle = Lifecycle::new(Scripted::default(), fast_memory(Retention::Keep));
    let init = EventFactory::<ScriptV1>::new()
        .init(ScriptInput { action: "fail".into() }, client().redirectto("com.test.elsewhere"))
        .unwrap();
    let sys = one(&lifecycle, &init).await;
    assert_eq!(sys.r#type(), "sys.arvo.orc.test.script.error");
    assert_eq!(sys.to(), Some(CLIENT));
}

// ---------------------------------------------------------------------------------------------
// Child workflows and versions

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_parent_gets_its_childs_completion_on_its_own_subject() {
    let parent = Orchestrator::builder(fast_memory(Retention::Keep)).machine::<Report>().build().unwrap();
    let child = average_orchestrator(Retention::Keep);
    let broker = Broker::builder()
        .handler(parent.clone())
        .handler(child.clone())
        .handler(services::add().unwrap())
        .handler(services::divide().unwrap())
        .log(true)
        .workers(2)
        .build()
        .unwrap();
    let init =
        EventFactory::<ReportV1>::new().init(AverageInput { values: vec![1.0, 2.0] }, client()).unwrap();
    let done = broker.resolve(init.clone()).await.unwrap().expect("the report");
    assert_eq!(done.r#type(), "arvo.orc.test.report.done");
    assert_eq!(done.data_value(), &json!({"average": 15.0}));
    assert_eq!(done.subject(), init.subject());
    assert!(broker.take_dead_letters().is_empty());

    let log = broker.take_log();
    let child_init = log.iter().find(|e| e.r#type() == AVG).expect("the child's init");
    assert_eq!(child_init.source(), "arvo.orc.test.report");
    assert_eq!(child_init.dataschema(), Some("#/orc/calc/average/1.0.0"));
    assert_eq!(child_init.data()["parentSubject$$"], init.subject());
    let child_subject = Subject::parse(child_init.subject()).unwrap();
    assert_eq!(child_subject.orchestrator_name(), AVG);
    assert_eq!(child_subject.orchestrator_version(), "1.0.0");
    assert_eq!(child_subject.initiator(), "arvo.orc.test.report");
    assert_eq!(child_subject.meta("redirectto"), Some("arvo.orc.test.report"));
    let child_done = log.iter().find(|e| e.r#type() == "arvo.orc.calc.average.done").expect("child done");
    assert_eq!(child_done.subject(), init.subject(), "the child completes on the parent's subject");
    assert_eq!(child_done.to(), Some("arvo.orc.test.report"));
    assert_eq!(child_done.parentid(), Some(child_init.id()));
    let record = stored(child.memory(), child_init.subject()).await.unwrap().record;
    assert_eq!(record.parent_subject.as_deref(), Some(init.subject()));
    assert!(record.done);
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_versions_side_by_side_are_chosen_by_the_subject_version() {
    let orc = Orchestrator::builder(fast_memory(Retention::Keep))
        .machine::<CalcAdd>()
        .machine::<CalcMul>()
        .build()
        .unwrap();
    assert_eq!(orc.versions(), ["1.0.0", "2.0.0"]);
    let broker = Broker::builder()
        .handler(orc)
        .handler(services::add().unwrap())
        .handler(services::mul().unwrap())
        .build()
        .unwrap();
    let v1 = EventFactory::<CalcV1>::new().init(CalcInput { a: 3.0, b: 4.0 }, client()).unwrap();
    let done = broker.resolve(v1).await.unwrap().unwrap();
    assert_eq!(done.data_value(), &json!({"result": 7.0}));
    assert_eq!(done.dataschema(), Some("#/orc/test/calc/1.0.0"));
    let v2 = EventFactory::<CalcV2>::new().init(CalcInput { a: 3.0, b: 4.0 }, client()).unwrap();
    let done = broker.resolve(v2).await.unwrap().unwrap();
    assert_eq!(done.data_value(), &json!({"result": 12.0}));
    assert_eq!(done.dataschema(), Some("#/orc/test/calc/2.0.0"));
    broker.shutdown().await;
}

#[test]
fn the_builder_checks_the_machines() {
    let err = Orchestrator::builder(fast_memory(Retention::Keep)).build().unwrap_err();
    assert_eq!(err.kind(), "Config");
    let err = Orchestrator::builder(fast_memory(Retention::Keep))
        .machine::<CalcAdd>()
        .machine::<AverageFlow>()
        .build()
        .unwrap_err();
    assert_eq!(err.kind(), "Config");
    assert!(err.message().contains("must be versions of one self contract"), "{err}");
    let err = Orchestrator::builder(fast_memory(Retention::Keep))
        .machine::<CalcAdd>()
        .machine::<CalcAddAgain>()
        .build()
        .unwrap_err();
    assert_eq!(err.kind(), "Config");
    assert!(err.message().contains("both implement version 1.0.0"), "{err}");
    let err = Orchestrator::builder(fast_memory(Retention::Keep))
        .machine::<CalcAdd>()
        .execution_units(f64::NAN)
        .build()
        .unwrap_err();
    assert_eq!(err.kind(), "Config");
}

// ---------------------------------------------------------------------------------------------
// Idempotency and concurrency

#[tokio::test]
async fn delivering_any_event_twice_is_harmless() {
    let orc = average_orchestrator(Retention::Keep);
    let init = average_init(vec![4.0, 6.0]);
    let request = one(&orc, &init).await;
    assert_eq!(orc.execute(&init).await.unwrap(), vec![request.clone()], "the init event again");
    assert_eq!(stored(orc.memory(), init.subject()).await.unwrap().version, 1);
    let sum = one(&services::add().unwrap(), &request).await;
    let divide = one(&orc, &sum).await;
    assert_eq!(orc.execute(&sum).await.unwrap(), vec![divide.clone()], "the sum again");
    assert_eq!(orc.execute(&init).await.unwrap(), vec![request.clone()], "an older event again");
    assert_eq!(stored(orc.memory(), init.subject()).await.unwrap().version, 2);
    let quotient = one(&services::divide().unwrap(), &divide).await;
    let done = one(&orc, &quotient).await;
    assert_eq!(done.data_value(), &json!({"average": 5.0}));
    // Every redelivery gets what the event produced the first time (same ids), nothing runs.
    for (event, produced) in [(&init, &request), (&sum, &divide), (&quotient, &done)] {
        assert_eq!(&orc.execute(event).await.unwrap(), &vec![produced.clone()]);
    }
    assert_eq!(stored(orc.memory(), init.subject()).await.unwrap().version, 3);
}

#[tokio::test]
async fn without_a_journal_a_redelivered_last_event_is_ignored() {
    let memory = InMemory::new(InMemoryConfig {
        journal: false,
        retention: Retention::Keep,
        ..InMemoryConfig::default()
    });
    let orc = Orchestrator::builder(memory).machine::<AverageFlow>().build().unwrap();
    let init = average_init(vec![4.0, 6.0]);
    let request = one(&orc, &init).await;
    assert!(orc.execute(&init).await.unwrap().is_empty(), "the last event again: ignored");
    let sum = one(&services::add().unwrap(), &request).await;
    one(&orc, &sum).await;
    assert!(orc.execute(&sum).await.unwrap().is_empty());
    assert_eq!(stored(orc.memory(), init.subject()).await.unwrap().version, 2);
}

/// Executes `event`, retrying while the lock is held by someone else.
async fn execute_retrying<H: EventHandler>(handler: &H, event: &Event) -> Vec<Event> {
    loop {
        match handler.execute(event).await {
            Err(v) if v.transaction_cause() == Some(TransactionCause::LockUnacquired) => {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            other => return other.unwrap(),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_deliveries_never_run_together_and_lose_no_update() {
    let lifecycle = Arc::new(Lifecycle::new(
        Scripted { pause: Some(Duration::from_millis(2)), ..Scripted::default() },
        fast_memory(Retention::Keep),
    ));
    let init = script_init("ok");
    lifecycle.execute(&init).await.unwrap();
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let lifecycle = Arc::clone(&lifecycle);
            let event = poke(init.subject(), "ok");
            tokio::spawn(async move { execute_retrying(&*lifecycle, &event).await })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(lifecycle.core().max_running.load(Ordering::SeqCst), 1);
    let Stored { record, version } = stored(lifecycle.memory(), init.subject()).await.unwrap();
    assert_eq!(record.state, json!({"count": 17}));
    assert_eq!(version, 17);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_answers_delivered_at_once_both_count_and_complete_once() {
    for _ in 0..20 {
        let orc = Orchestrator::builder(fast_memory(Retention::Keep)).machine::<Both>().build().unwrap();
        let init = EventFactory::<BothV1>::new().init(CalcInput { a: 3.0, b: 5.0 }, client()).unwrap();
        let requests = orc.execute(&init).await.unwrap();
        assert_eq!(requests.len(), 2);
        let sum = one(&services::add().unwrap(), &requests[0]).await;
        let product = one(&services::mul().unwrap(), &requests[1]).await;
        let (a, b) = (orc.clone(), orc.clone());
        let left = tokio::spawn(async move { execute_retrying(&a, &sum).await });
        let right = tokio::spawn(async move { execute_retrying(&b, &product).await });
        let mut out = left.await.unwrap();
        out.extend(right.await.unwrap());
        assert_eq!(out.len(), 1, "one completion: {out:?}");
        assert_eq!(out[0].data_value(), &json!({"sum": 8.0, "product": 15.0}));
        assert!(stored(orc.memory(), init.subject()).await.unwrap().record.done);
    }
}

/// Collects every event addressed to the client.
#[derive(Default, Clone)]
struct Sink(Arc<Mutex<Vec<Event>>>);

impl EventHandler for Sink {
    fn source(&self) -> &str {
        CLIENT
    }

    async fn execute(&self, event: &Event) -> Result<Vec<Event>, Violation> {
        self.0.lock().unwrap().push(event.clone());
        Ok(Vec::new())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn a_thousand_interleaved_workflows_complete_with_exact_results() {
    let orc = Orchestrator::builder(InMemory::default()).machine::<AverageFlow>().build().unwrap();
    let sink = Sink::default();
    let broker = Broker::builder()
        .handler(orc.clone())
        .handler(services::add().unwrap())
        .handler(services::divide().unwrap())
        .handler(sink.clone())
        .workers(8)
        .build()
        .unwrap();
    let mut expected = HashMap::new();
    for i in 0..1000u32 {
        let x = f64::from(i);
        let init = average_init(vec![x, x + 2.0]);
        expected.insert(init.subject().to_owned(), x + 1.0);
        broker.publish_wait(init).await.unwrap();
    }
    broker.wait_idle().await;
    let done = sink.0.lock().unwrap().clone();
    assert_eq!(done.len(), 1000);
    for event in &done {
        assert_eq!(event.r#type(), "arvo.orc.calc.average.done");
        let want = expected.remove(event.subject()).expect("one completion per workflow");
        assert_eq!(event.data()["average"].as_f64(), Some(want));
    }
    assert!(expected.is_empty());
    assert!(broker.take_dead_letters().is_empty());
    broker.shutdown().await;
}

// ---------------------------------------------------------------------------------------------
// Per-request overrides (reference 2.6: emit.id, to, redirectto, accesscontrol, executionunits,
// domain)

fn ask_with_overrides(ctx: &mut CalcCtx, _: &OverrideFlowEvent, out: &mut OverrideFlowOutbox<'_>) {
    let options = RequestOptions::new()
        .id("dedup-key-1")
        .to("com.calc.add.eu")
        .redirectto("com.test.collector")
        .accesscontrol("role=auditor")
        .executionunits(2.5)
        .domains([Domain::Local, Domain::named("audit").unwrap()]);
    out.request_with(AddV1, Operands { a: ctx.a, b: ctx.b }, options);
}

orchestrator::machine! {
    /// Asks add with every override set.
    pub machine OverrideFlow {
        contract: CalcV1,
        services: { add: AddV1 },
        context: CalcCtx,
        init: |input| CalcCtx { a: input.a, b: input.b, result: 0.0 },
        output: |ctx| CalcOutput { result: ctx.result },
        states: {
            asking: { entry: [ask_with_overrides], on: { add::Sum => done } },
            done: { type: final },
        },
    }
}

#[tokio::test]
async fn a_request_overrides_id_to_redirectto_accesscontrol_units_and_domains() {
    let orc = Orchestrator::builder(fast_memory(Retention::Keep))
        .machine::<OverrideFlow>()
        .execution_units(1.0)
        .build()
        .unwrap();
    let init = EventFactory::<CalcV1>::new()
        .init(CalcInput { a: 1.0, b: 2.0 }, client().accesscontrol("role=tester"))
        .unwrap();
    let out = orc.execute(&init).await.unwrap();
    assert_eq!(out.len(), 2, "one copy per domain: {out:?}");
    assert_eq!(out.iter().map(Event::domain).collect::<Vec<_>>(), [None, Some("audit")]);
    for event in &out {
        assert_eq!(event.id(), "dedup-key-1", "every domain copy carries the given id");
        assert_eq!(event.r#type(), "com.calc.add");
        assert_eq!(event.to(), Some("com.calc.add.eu"));
        assert_eq!(event.redirectto(), Some("com.test.collector"));
        assert_eq!(event.accesscontrol(), Some("role=auditor"));
        assert_eq!(event.executionunits(), Some(2.5));
        assert_eq!(event.data_value(), &json!({"a": 1.0, "b": 2.0}));
    }
}

#[tokio::test]
async fn an_event_reusing_a_consumed_id_from_another_source_is_another_event() {
    let orc = average_orchestrator(Retention::Keep);
    let init = average_init(vec![1.0, 3.0]);
    let request = one(&orc, &init).await;
    let answer = one(&services::add().unwrap(), &request).await;
    let first = orc.execute(&answer).await.unwrap();
    assert_eq!(first.len(), 1, "the sum moves the workflow on to divide: {first:?}");
    let version = stored(orc.memory(), init.subject()).await.unwrap().version;
    // The same answer again: a redelivery, answered from the journal, nothing written.
    assert_eq!(orc.execute(&answer).await.unwrap(), first);
    assert_eq!(stored(orc.memory(), init.subject()).await.unwrap().version, version);
    // The same id from another source (CloudEvents: source + id) is another event: it runs (the
    // machine, now dividing, has nothing to do with a sum) and is written, not answered with
    // the first event's outputs.
    let mut forged: Value = serde_json::from_slice(&answer.to_json_vec()).unwrap();
    forged["source"] = json!("com.other.adder");
    let forged = Event::from_slice(&serde_json::to_vec(&forged).unwrap()).unwrap();
    assert_eq!(forged.id(), answer.id());
    assert!(orc.execute(&forged).await.unwrap().is_empty(), "not the journaled answer");
    assert_eq!(stored(orc.memory(), init.subject()).await.unwrap().version, version + 1, "it ran");
}

// ---------------------------------------------------------------------------------------------
// A context JSON cannot represent

orchestrator::machine! {
    /// Version 1.0.0 computing a ratio in its context: 0/0 is NaN.
    pub machine CalcRatio {
        contract: CalcV1,
        services: { add: AddV1 },
        context: CalcCtx,
        init: |input| CalcCtx { a: input.a, b: input.b, result: input.a / input.b },
        output: |ctx| CalcOutput { result: ctx.result },
        states: {
            working: {
                entry: [|ctx, _, out| out.add(Operands { a: ctx.a, b: ctx.b })],
                on: { add::Sum => { target: done } },
            },
            done: { type: final },
        },
    }
}

/// A context holding NaN cannot be saved (JSON has no NaN; it would be written as null and the
/// next step would fail to read it): the step that produced it fails, naming the field, and the
/// workflow gets a system error.
#[tokio::test]
async fn a_context_json_cannot_represent_fails_the_step_that_produced_it() {
    let orc = Orchestrator::builder(fast_memory(Retention::Keep)).machine::<CalcRatio>().build().unwrap();
    let init = EventFactory::<CalcV1>::new().init(CalcInput { a: 0.0, b: 0.0 }, client()).unwrap();
    let out = orc.execute(&init).await.unwrap();
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].r#type(), "sys.arvo.orc.test.calc.error", "{out:?}");
    let message = out[0].data()["errorMessage"].as_str().unwrap();
    assert!(message.contains("`context.result` is NaN"), "{message}");
    let record = stored(orc.memory(), init.subject()).await.unwrap().record;
    assert!(matches!(record.execution_status, ExecutionStatus::Failure { .. }), "the failure is latched");
}

orchestrator::machine! {
    /// Version 1.0.0 requesting a sum of a ratio: 0/0 is NaN in the request, not in the context.
    pub machine CalcRatioRequest {
        contract: CalcV1,
        services: { add: AddV1 },
        context: CalcCtx,
        init: |input| CalcCtx { a: input.a, b: input.b, result: 0.0 },
        output: |ctx| CalcOutput { result: ctx.result },
        states: {
            working: {
                entry: [|ctx, _, out| out.add(Operands { a: ctx.a / ctx.b, b: 1.0 })],
                on: { add::Sum => { target: done } },
            },
            done: { type: final },
        },
    }
}

/// A request JSON cannot represent (NaN would be sent as null) fails the step that made it,
/// saying so, as a resumable's does: no request leaves, the workflow gets a system error.
#[tokio::test]
async fn a_request_json_cannot_represent_fails_the_step_that_made_it() {
    let orc =
        Orchestrator::builder(fast_memory(Retention::Keep)).machine::<CalcRatioRequest>().build().unwrap();
    let init = EventFactory::<CalcV1>::new().init(CalcInput { a: 0.0, b: 0.0 }, client()).unwrap();
    let out = orc.execute(&init).await.unwrap();
    assert_eq!(out.len(), 1, "no request, only the error: {out:?}");
    assert_eq!(out[0].r#type(), "sys.arvo.orc.test.calc.error", "{out:?}");
    let message = out[0].data()["errorMessage"].as_str().unwrap();
    assert!(message.contains("NaN"), "{message}");
    let record = stored(orc.memory(), init.subject()).await.unwrap().record;
    assert!(matches!(record.execution_status, ExecutionStatus::Failure { .. }), "the failure is latched");
}

/// A step that emits an event larger than the limit (a node's, 1 MiB by default) fails like
/// any failure: the event is not emitted, the state stays as it was (none, for an init), the
/// failure is latched and the initiator gets a system error naming the event, its size and the
/// limit. Before, the event left and was refused only when parsed again (or not at all).
#[tokio::test]
async fn a_step_emitting_an_event_larger_than_the_limit_fails() {
    let orc = Orchestrator::builder(fast_memory(Retention::Keep))
        .machine::<CalcAdd>()
        .max_event_bytes(200)
        .build()
        .unwrap();
    let init = EventFactory::<CalcV1>::new().init(CalcInput { a: 1.0, b: 2.0 }, client()).unwrap();
    let out = orc.execute(&init).await.unwrap();
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].r#type(), "sys.arvo.orc.test.calc.error", "{out:?}");
    assert_eq!(out[0].data()["errorName"], "EventTooLarge");
    let message = out[0].data()["errorMessage"].as_str().unwrap();
    assert!(message.contains("larger than the limit of 200 bytes"), "{message}");
    assert!(message.contains("(type `com.calc.add`)"), "{message}");
    let record = stored(orc.memory(), init.subject()).await.unwrap().record;
    assert!(matches!(record.execution_status, ExecutionStatus::Failure { .. }), "the failure is latched");
    assert_eq!(record.state, Value::Null, "no state was written");
}
