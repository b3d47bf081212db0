//! # Getting started
//!
//! A first durable workflow in a few minutes: what to put in `Cargo.toml`, a complete program,
//! what [`machine!`](crate::machine!) generates and how its names are formed, a human-approval
//! recipe, how to test a workflow, and what differs from Arvo if you come from TypeScript.
//!
//! ## Dependencies
//!
//! ```toml
//! [dependencies]
//! orchestrator = "0.1"
//! orchestrator-sqlite = "0.1"   # the embedded durable store (or orchestrator-postgres)
//! serde = { version = "1", features = ["derive"] }
//! schemars = "1"
//! serde_json = "1"
//! tokio = { version = "1", features = ["macros", "rt-multi-thread"] }
//! ```
//!
//! The derives `Serialize`, `Deserialize` and `JsonSchema` come with
//! [`prelude`](crate::prelude), but the code they generate names the `serde` and `schemars`
//! crates, so your crate depends on both (schemars 1.x: its JSON Schemas are the contracts').
//!
//! ## A durable workflow end to end
//!
//! `examples/getting_started.rs` (run it with `cargo run --example getting_started`): a service
//! contract, a workflow contract and its `machine!`, the service's handler, and a durable
//! [`Node`](crate::runtime::Node) over SQLite that starts one workflow and waits for its
//! completion, in about 60 lines of code. Kill it at any moment and run it again: the events in
//! flight are in the SQLite file with the workflow, and the next run delivers them first. (The
//! file is built by `cargo test` and run by the repository's `scripts/test`; the `prelude` has
//! every name it uses.)
//!
#![doc = concat!("```rust,ignore\n", include_str!("../../examples/getting_started.rs"), "```")]
//!
//! Then look at what it stored, from the store alone (SQLite file or `postgres://` URL):
//!
//! ```sh
//! orchestrator workflows list orchestrator-data/getting-started.sqlite
//! orchestrator history orchestrator-data/getting-started.sqlite <ID>     # ID: a short id from the list
//! orchestrator chart export --format mermaid orchestrator-data/getting-started.sqlite --workflow arvo.orc.welcome
//! orchestrator serve orchestrator-data/getting-started.sqlite          # the web console
//! ```
//!
//! ## What `machine!` generates, and how names are formed
//!
//! For `pub machine WelcomeFlow { contract: WelcomeV1, services: { greet: GreetV1 }, … }`:
//!
//! | Item | Name | What it is |
//! |---|---|---|
//! | the machine | `WelcomeFlow` | implements [`Machine`](crate::machine::Machine); register it with `Orchestrator::builder(store).machine::<WelcomeFlow>()` |
//! | the events | `WelcomeFlowEvent` | what guards and actions see |
//! | the init | `WelcomeFlowEvent::Init(Greeting)` | the workflow's input |
//! | a service's answer | `WelcomeFlowEvent::<Service><Payload>` | the service key in PascalCase, then the payload type's name: `greet::Greeted` is `GreetGreeted(Greeted)`; the key is left out when the payload's name starts with it as a word (`credit::CreditScore` is `CreditScore`) |
//! | a service's system error | `WelcomeFlowEvent::<Service>Error(SystemErrorPayload)` | `greet::error` is `GreetError` |
//! | a signal | `WelcomeFlowEvent::<Signal><Payload>` | named like a service's answer: with `signals: { decision: DecisionV1 }`, `decision::Decision` is `Decision(Decision)` |
//! | other events | `WelcomeFlowEvent::Internal(name)` | raised, sent, `done.state.*`, `after` timers |
//! | the states | `WelcomeFlowState` | an enum of the active child state; compound states get a type `WelcomeFlow<Path>` |
//! | the outbox | `WelcomeFlowOutbox<'_>` | one method per service (`out.greet(Greeting { … })`) to send requests from actions, and one per notification (`out.audit(Entry { … })`) |
//!
//! Guards are `fn(&Context, &Event) -> bool`, actions `fn(&mut Context, &Event, &mut Outbox)`:
//! functions by path, or closures. A closure is shown in exported charts as `guard<N>` /
//! `action<N>` unless you name it: `actions: [keep = |ctx, event, _| …]`. Either may return a
//! `Result` instead (`Result<(), E>`, `Result<bool, E>`): an `Err` fails the workflow with your
//! error, named and worded as a failing service handler's, and changes nothing (an `Err` that is
//! a `Violation` is a violation); see
//! [Fallible actions and guards](crate::machine#fallible-actions-and-guards).
//!
//! `output` returns the completion payload, or a
//! [`Completion`](crate::machine::Completion) of it to set the completion event's id, execution
//! units and domains (`Completion::new(done).id("order-7-done")`); see
//! [Completion options](crate::machine#completion-options).
//!
//! `init` is `fn(&Input) -> Context` (a function path or `|input| …`), or a two-parameter
//! closure `|input, meta| …` whose `meta` is an [`InitMeta`](crate::machine::InitMeta): the init
//! event's subject and source, the subject's meta and initiator, the parent workflow's subject.
//!
//! An `after` delay is a number of ms, or computed when the state is entered:
//! `after: { payment_timeout = |ctx| Duration::from_millis(ctx.timeout_ms) => rejected }`, a
//! function `fn(&Context) -> Duration`, or a `Duration` / `u64` constant. Exported charts show it
//! as `after payment_timeout`.
//!
//! ## Recipe: a human approval
//!
//! A human decision is a service like any other: the workflow sends a request to a
//! `com.acme.approval` topic and waits, durably, for its answer; a timeout decides when nobody
//! answers (here, a refusal). The request can wait for days: nothing runs meanwhile, the workflow is a row in the
//! store, and its timer survives restarts.
//!
//! ```rust
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! use orchestrator::memory::InMemory;
//! use orchestrator::prelude::*;
//!
//! #[derive(Clone, Serialize, Deserialize, JsonSchema)]
//! pub struct Expense { pub amount: u64 }
//! #[derive(Clone, Serialize, Deserialize, JsonSchema)]
//! pub struct Decision { pub approved: bool }
//!
//! orchestrator::simple_contract! { // what the person's tool answers
//!     pub contract Approval { uri: "#/acme/approval", type: "acme.approval",
//!         versions: { ApprovalV1 = "1.0.0" { accepts: Expense, emits: Decision } } }
//! }
//! orchestrator::orchestrator_contract! {
//!     pub contract Claim { uri: "#/acme/claim", name: "claim",
//!         versions: { ClaimV1 = "1.0.0" { init: Expense, complete: Decision } } }
//! }
//!
//! orchestrator::machine! {
//!     pub machine ClaimFlow {
//!         contract: ClaimV1,
//!         services: { approval: ApprovalV1 },
//!         context: Decision,
//!         init: |_input| Decision { approved: false },
//!         output: |ctx| ctx.clone(),
//!         states: {
//!             waiting: {
//!                 entry: [ask = |_, event, out| if let ClaimFlowEvent::Init(e) = event { out.approval(e.clone()) }],
//!                 on: { approval::Decision => { target: decided, actions: [keep = |ctx, event, _| {
//!                     if let ClaimFlowEvent::ApprovalDecision(d) = event { *ctx = d.clone() }
//!                 }] } },
//!                 after: { 86400000 => { target: decided } },   // a day without an answer: refused
//!             },
//!             decided: { type: final },
//!         },
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let store = Arc::new(InMemory::<WorkflowRecord>::default());
//! let node = Node::builder(Arc::clone(&store))
//!     .orchestrator(Orchestrator::builder(Arc::clone(&store)).machine::<ClaimFlow>())
//!     .remote("com.acme.approval") // answered by a person, through another program
//!     .client("com.acme.app")
//!     .build()
//!     .await?;
//! let init = EventFactory::<ClaimV1>::new()
//!     .init(Expense { amount: 120 }, Event::builder().source("com.acme.app"))?;
//! let subject = node.start(init).await?;
//! // The workflow waits, durably, with its one-day timer set.
//! while !matches!(node.status(&subject).await?, Some(WorkflowStatus::Waiting { .. })) {
//!     tokio::time::sleep(Duration::from_millis(5)).await;
//! }
//! # node.shutdown().await;
//! # Ok(())
//! # }
//! ```
//!
//! The person's tool (a web form, a chat bot) takes the request from the `com.acme.approval`
//! topic, or from a node's domained-events callback when the request carries a domain, and
//! publishes the answer built with `EventFactory::<ApprovalV1>::emits(…)` with the request's
//! subject and `parentid`. `examples/agent_loop.rs` and `examples/approval_parallel.rs` run
//! such workflows.
//!
//! ## Cancelling a workflow
//!
//! When the claim is withdrawn, cancel its workflow rather than wait a day:
//! `node.cancel(&subject, CancelRequest::new().reason("withdrawn")).await?` publishes a cancel
//! request (an `arvo.orc.claim.cancel` event; any program can send one, built with
//! [`cancel_event`](crate::orchestration::cancel::cancel_event)). The workflow ends in the
//! status `cancelled`, its timer is dropped, later answers are ignored, and the client that
//! started it gets the workflow's `sys.arvo.orc.claim.error` event named `WorkflowCancelled`,
//! which [`SystemErrorPayload::is_cancellation`](crate::contract::SystemErrorPayload::is_cancellation)
//! tells apart from a failure. [`CancelRequest::with_children`](crate::orchestration::cancel::CancelRequest::with_children)
//! cancels the child workflows it started too. See [`crate::orchestration::cancel`], and
//! `examples/parent_child.rs`, which cancels a parent with its running child.
//!
//! ## Recipe: signals and notifications
//!
//! When the answer does not come from a service the workflow called (a person presses a button
//! in an app, an operator cancels), declare it a **signal**: `signals: { decision: DecisionV1 }`
//! where `DecisionV1` is a contract whose accepted payload is the answer. The app sends it to
//! the running workflow by its subject with [`Node::signal`](crate::runtime::Node::signal) (or
//! builds the event with [`EventFactory::signal`](crate::factory::EventFactory::signal)), and
//! reads where the workflow stands with [`Node::workflow`](crate::runtime::Node::workflow).
//! A **notification** (`notifications: { audit: AuditV1 }`, a contract with `emits: {}`) is a
//! one-off event the workflow sends without waiting for a reply: `out.audit(entry)`. Resumables
//! declare them with `ResumableBuilder::signal` / `notification`. See the
//! [machine documentation](crate::machine#signals).
//!
//! ```rust
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! use orchestrator::memory::InMemory;
//! use orchestrator::prelude::*;
//!
//! #[derive(Clone, Serialize, Deserialize, JsonSchema)]
//! pub struct Expense { pub amount: u64 }
//! #[derive(Clone, Serialize, Deserialize, JsonSchema)]
//! pub struct Decision { pub approved: bool }
//!
//! orchestrator::contract! { // what the app sends: a signal
//!     pub contract DecisionSignal { uri: "#/acme/decision", type: "com.acme.decision",
//!         versions: { DecisionV1 = "1.0.0" { accepts: Decision, emits: {} } } }
//! }
//! orchestrator::orchestrator_contract! {
//!     pub contract Claim { uri: "#/acme/claim", name: "claim",
//!         versions: { ClaimV1 = "1.0.0" { init: Expense, complete: Decision } } }
//! }
//!
//! orchestrator::machine! {
//!     pub machine ClaimFlow {
//!         contract: ClaimV1,
//!         signals: { decision: DecisionV1 },
//!         context: Decision,
//!         init: |_input| Decision { approved: false },
//!         output: |ctx| ctx.clone(),
//!         states: {
//!             waiting: {
//!                 on: { decision::Decision => { target: decided, actions: [keep = |ctx, event, _| {
//!                     if let ClaimFlowEvent::Decision(d) = event { *ctx = d.clone() }
//!                 }] } },
//!             },
//!             decided: { type: final },
//!         },
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let store = Arc::new(InMemory::<WorkflowRecord>::default());
//! let node = Node::builder(Arc::clone(&store))
//!     .orchestrator(Orchestrator::builder(Arc::clone(&store)).machine::<ClaimFlow>())
//!     .client("com.acme.app")
//!     .build()
//!     .await?;
//! let init = EventFactory::<ClaimV1>::new()
//!     .init(Expense { amount: 120 }, Event::builder().source("com.acme.app"))?;
//! let subject = node.start(init).await?;
//! while node.workflow(&subject).await?.is_none() {
//!     tokio::time::sleep(Duration::from_millis(5)).await;
//! }
//! let view = node.workflow(&subject).await?.ok_or("unknown workflow")?;
//! assert_eq!(view.active_paths(), ["waiting"]);
//!
//! node.signal::<DecisionV1>(&subject, Decision { approved: true }).await?;
//! let done = node.wait(&subject).await;
//! assert_eq!(done.data()["approved"], true);
//! let view = node.workflow(&subject).await?.ok_or("unknown workflow")?;
//! assert_eq!(view.status(), &WorkflowStatus::Done);
//! assert!(view.context::<Decision>()?.approved);
//! # node.shutdown().await;
//! # Ok(())
//! # }
//! ```
//!
//! ## Recipe: retrying a flaky service
//!
//! Give the service a retry policy where the machine declares it:
//!
//! ```text
//! services: { llm: LlmV1 { retry: { attempts: 3, backoff: 50 .. 500, jitter: true, on: ["RateLimited"] } } },
//! ```
//!
//! A `RateLimited` system error of the `llm` service then never reaches the machine while
//! attempts are left: the orchestrator sends the request again after the backoff (50 ms, then
//! 100 ms, doubling up to 500 ms, jittered), on the workflow's durable timer, so a retry survives
//! a restart and shows in the journal. Once the attempts are used up, or for another error, the
//! machine's `llm::error` transition runs. `examples/agent_loop.rs` retries a rate-limited model;
//! the rules are in [`machine`](crate::machine#retries) and [`RetryPolicy`](crate::orchestration::RetryPolicy).
//!
//! ## Testing a workflow
//!
//! [`harness`](crate::harness) runs scenarios against a handler with no infrastructure (Arvo's
//! `runArvoTestSuites`): each [`Step`](crate::harness::Step) sends an event (given, built from
//! the events emitted so far, or the answer to the last request of a service with
//! [`Step::answer`](crate::harness::Step::answer)) or moves a manual clock
//! ([`Step::advance`](crate::harness::Step::advance), which fires the `after` timers that fall
//! due), and expects events matched by type and by predicates on their data, or a violation. The
//! [`Report`](crate::harness::Report) lists every failed expectation by step, and a
//! [`Repeat`](crate::harness::Repeat) runs a nondeterministic scenario (an LLM-driven agent)
//! several times against a success threshold. The test of the approval recipe above:
//!
//! ```rust,ignore
//! use orchestrator::harness::{Expect, Scenario, Step, TestEnv};
//!
//! let claims = |env: &TestEnv| {
//!     Orchestrator::builder(env.memory()).machine::<ClaimFlow>().clock(env.clock()).build()
//! };
//! Scenario::new("nobody answers for a day")
//!     .step(Step::send(init).expect(Expect::event_type("com.acme.approval")))
//!     .step(Step::advance(Duration::from_secs(86_400))
//!         .expect(Expect::event_type("arvo.orc.claim.done").field("approved", json!(false))))
//!     .run(claims)
//!     .await
//!     .assert();
//! ```
//!
//! The [module documentation](crate::harness) compiles and runs it in full, with an example for
//! a service handler and one for a resumable; `tests/harness.rs` has more (the reports of failed
//! expectations, `repeat`), and `examples/tests/orders_harness.rs` tests the order workflow of
//! `examples/src/orders.rs` with it (its payment timeout included).
//!
//! ## Coming from Arvo
//!
//! The wire is Arvo's: events, subjects and contract documents are accepted by arvo-core 2.2.13
//! and Arvo's are accepted here, and Arvo TypeScript services take part in the same NATS
//! deployment (`orchestrator-nats`). What differs, on purpose:
//!
//! * **Time**: `time` is UTC. Arvo writes local wall-clock time labelled `+00:00`.
//! * **URIs**: values are encoded once. Arvo's `createArvoEvent` encodes already-encoded values
//!   again.
//! * **Completion**: a machine that finishes always emits its completion event, even when its
//!   output is `{}` or unchanged (Arvo compares the output's JSON with the previous one and
//!   emits nothing).
//! * **Failures**: a workflow's failure latch is written with the version it read, so an
//!   optimistic store (SQLite, PostgreSQL) keeps it.
//! * **Broker**: the in-process transport is FIFO per workflow (Arvo's `SimpleEventBroker`
//!   drains LIFO); `resolve` can be called again from the same source.
//! * **Domained events** are never dropped: without a callback they are kept, for
//!   [`Dispatcher::take_domained`](crate::runtime::Dispatcher::take_domained).
//! * **Resumables** take the lease whenever they may fan out, and a duplicate init does not
//!   re-run `input`.
//! * **Initiators**: a two-segment `source` such as `com.app` is refused with a clear error
//!   before any subject is built.
//! * **Checked at compile time**: a `machine!` that reacts to a payload its service does not
//!   emit, sends a request to an undeclared service, or targets a state that does not exist,
//!   does not compile; the error points at the token.
//! * **Durability is built in**: the SQLite and PostgreSQL stores keep a journal of every
//!   step, leases with fencing, durable timers and an outbox, so a crash loses nothing and
//!   applies nothing twice; `orchestrator history`, `replay` and `serve` read them.
