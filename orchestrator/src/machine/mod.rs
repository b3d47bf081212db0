//! Statecharts declared in Rust with [`machine!`](crate::machine!), checked at compile time
//! against typed event contracts.
//!
//! A machine is an Arvo orchestrator: it starts from the init event of its *self contract* (an
//! [`orchestrator_contract!`](crate::orchestrator_contract!)), calls *services* (contracts it
//! sends requests to and whose events it reacts to), and completes with the self contract's
//! completion payload. The statechart is compiled into typed Rust:
//!
//! * `struct <Name>` implementing [`Machine`]: the chart (built once per machine type, with the
//!   same [`ChartBuilder`](chart::ChartBuilder) the macro used to check it), the contracts, the
//!   user's guards and actions;
//! * `enum <Name>Event`: `Init(<init payload>)`, one variant per `service::Payload` the machine
//!   reacts to, named by the service's key and the payload type's name in PascalCase (`add::Sum`
//!   is `AddSum(Sum)`), the key left out when the payload's name already starts with it
//!   (`credit::CreditScore` is `CreditScore(CreditScore)`, not `CreditCreditScore`), one
//!   system-error variant per service (`AddError(SystemErrorPayload)`),
//!   and `Internal(Arc<str>)` for events known by name (raised, sent, `done.state.*`, `after`);
//! * `<Name>State`: the active configuration, an enum of the active child with one nested type per
//!   compound state and a struct of regions per parallel state
//!   (`AverageState::Busy(AverageBusy { left: AverageBusyLeft::A, right: AverageBusyRight::C })`);
//! * `<Name>Outbox<'_>`: what actions emit service requests through, one method per service.
//!
//! A mistake is a compile error on the offending token, and every mistake of a declaration is
//! reported in the same compile (see [below](#what-is-checked-at-compile-time)).
//!
//! [`MachineInstance`] runs a machine: start it from the init payload, send typed or wire events,
//! move its clock, read its typed state, and persist a [`Snapshot`] (chart state and context,
//! never the machine definition).
//!
//! # Syntax
//!
//! ```text
//! #[attrs] VIS machine Name {
//!     version: "1.0.0",              // optional: must equal the self contract's version
//!     contract: SelfV1,              // the self contract version (an orchestrator contract)
//!     services: { add: AddV1, … },   // optional: service name → contract version
//!     //   a service may retry: pay: PayV1 { retry: { attempts: 5, backoff: 200 .. 10_000, jitter: true, on: ["Timeout"] } }
//!     signals: { approve: DecisionV1, … },       // optional: events accepted from outside
//!     notifications: { audit: AuditV1, … },     // optional: events sent, no reply expected
//!     context: Ctx,                  // optional (default `()`): Serialize + DeserializeOwned + Clone + Send
//!     init: init_fn,                 // fn(&Init) -> Ctx, or |input, meta| … (meta: &InitMeta); optional when Ctx: Default
//!     output: output_fn,             // fn(&Ctx) -> Complete, or -> Completion<Complete> (with options)
//!     type: parallel,                // optional: the machine itself is a parallel state
//!     initial: child,                // optional: default = the first child
//!     entry: [...], exit: [...], on: {...}, always: [...], after: {...},   // as on any state
//!     states: { key: { STATE }, … },
//! }
//!
//! STATE keys (all optional):
//!     type: compound | atomic | parallel | final | history
//!     states: { key: { STATE }, … }  // child states: the state is compound (or parallel)
//!     initial: child | a.b.c | [a.b.c, x.y]   // a child key, or absolute paths (deep / multi-region)
//!     entry: ACTIONS, exit: ACTIONS
//!     on: { TRIGGER => TRANSITIONS, … }        // a trigger may repeat: candidates in document order
//!     on_done: TRANSITIONS                     // done.state.<this state> (compound / parallel)
//!     always: TRANSITIONS                      // eventless
//!     after: { ms => TRANSITIONS, … }          // timers started on entry, cancelled on exit
//!     after: { DELAY => TRANSITIONS, … }       // DELAY: ms | name = |ctx| Duration | fn_path | CONST (Duration or u64 ms)
//!     history: shallow | deep, target: PATHS, actions: ACTIONS   // history states only (default)
//!
//! TRIGGER:      service::Payload | service::<path::Payload> | service::error | signal::Payload
//!               | "name" | "prefix.*" | "*"
//! TRANSITIONS:  TRANSITION | [TRANSITION, …]
//! TRANSITION:   a.b.c | { target: PATHS, guard: GUARD, actions: ACTIONS, reenter: true }
//! PATHS:        a.b.c | [a.b.c, x.y]   // absolute paths from the machine root
//! GUARD:        fn_path | |ctx, event| … | name = |ctx, event| … | in(a.b.c) | not_in(a.b.c)
//! ACTIONS:      ACTION | [ACTION, …]
//! ACTION:       fn_path | |ctx, event, out| … | name = |ctx, event, out| … | raise("name")
//!               | send("name") | send("name", delay = 1000, id = "t1") | cancel("t1")
//! ```
//!
//! Guards are `fn(&Ctx, &<Name>Event) -> bool` and actions
//! `fn(&mut Ctx, &<Name>Event, &mut <Name>Outbox<'_>)`: functions, or closures that capture
//! nothing. Either may also return a `Result` ([see below](#fallible-actions-and-guards)). `raise`, `send`, `cancel`, `in` and `not_in` are built in (a function of one of those
//! names cannot be used as an action or guard directly; wrap it in a closure). The outbox methods
//! `request` and `subject` cannot be service names. A key names one service, signal or
//! notification.
//!
//! Chart exports (Mermaid, Graphviz DOT, XState: [`Machine::names`]) show a guard or action given
//! by a function path as that path (`reserve_stock`, `Self::check`) and never show a closure's
//! source. Write `name = closure` to name a closure (the name is an identifier):
//! `guard: in_stock = |ctx, _| ctx.stock > 0`, `entry: [count = |ctx, _, _| ctx.n += 1]`. An
//! unnamed closure is shown as `guard<N>` / `action<N>` (its `GuardId` / `ActionId`).
//!
//! The macro declares the types `<Name>`, `<Name>Event`, `<Name>State`, `<Name>Outbox` and one
//! `<Name><Path>` per compound or parallel state and parallel region (`AverageBusyLeft` for
//! `busy.left`), with the machine's visibility: give the machine a name no other type in scope
//! has (the contract of `Average` is best called `AverageContract`, or the machine `AverageFlow`).
//!
//! The semantics are those of [`orchestrator_chart`] (SCXML, with the XState choices its
//! documentation lists): transitions of a state are tried in document order (`on_done` first,
//! then `on`, `always`, `after`), a transition of an ancestor applies when no descendant's does,
//! `reenter: false` (the default) does not exit a compound source whose descendants are targeted.
//!
//! # States and transitions
//!
//! ```
//! # use orchestrator::prelude::*;
//! # use orchestrator::machine::MachineInstance;
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Start {}
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Done {}
//! # orchestrator::orchestrator_contract! {
//! #     pub contract Flow { uri: "#/orc/flow", name: "flow",
//! #         versions: { FlowV1 = "1.0.0" { init: Start, complete: Done } } }
//! # }
//! orchestrator::machine! {
//!     /// A door.
//!     pub machine Door {
//!         contract: FlowV1,
//!         output: |_| Done {},
//!         states: {
//!             closed: { on: { "open" => opened, "lock" => locked } },
//!             opened: { on: { "close" => closed } },
//!             locked: { on: { "unlock" => closed } },
//!         },
//!     }
//! }
//!
//! let (mut door, _) = MachineInstance::<Door>::start(Start {})?;
//! assert_eq!(door.state(), DoorState::Closed);
//! door.send_named("open")?;
//! assert_eq!(door.state(), DoorState::Opened);
//! door.send_named("lock")?; // no transition for it in `opened`: ignored
//! assert_eq!(door.state(), DoorState::Opened);
//! assert_eq!(door.active_paths(), ["opened"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Guards
//!
//! Candidates for one trigger are tried in document order; the first whose guard holds is taken.
//!
//! ```
//! # use orchestrator::prelude::*;
//! # use orchestrator::machine::MachineInstance;
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Start {}
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Done {}
//! # orchestrator::orchestrator_contract! {
//! #     pub contract Flow { uri: "#/orc/flow", name: "flow",
//! #         versions: { FlowV1 = "1.0.0" { init: Start, complete: Done } } }
//! # }
//! #[derive(Debug, Clone, Serialize, Deserialize)]
//! pub struct Tries { pub left: u32 }
//!
//! fn has_tries(tries: &Tries, _: &LoginEvent) -> bool {
//!     tries.left > 0
//! }
//!
//! orchestrator::machine! {
//!     pub machine Login {
//!         contract: FlowV1,
//!         context: Tries,
//!         init: |_| Tries { left: 2 },
//!         output: |_| Done {},
//!         states: {
//!             asking: {
//!                 on: {
//!                     "wrong" => [
//!                         { guard: has_tries, actions: [|t, _, _| t.left -= 1] },
//!                         blocked,
//!                     ],
//!                     "right" => { target: welcome, guard: |t, _| t.left > 0 },
//!                 },
//!             },
//!             blocked: { type: final },
//!             welcome: { type: final },
//!         },
//!     }
//! }
//!
//! let (mut login, _) = MachineInstance::<Login>::start(Start {})?;
//! login.send_named("wrong")?;
//! login.send_named("wrong")?;
//! assert_eq!(login.state(), LoginState::Asking);
//! login.send_named("wrong")?;
//! assert_eq!(login.state(), LoginState::Blocked);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Actions and context
//!
//! The context is created by `init` from the init payload; actions update it. Entry and exit
//! actions run when a state is entered or exited, transition actions between the two. Actions see
//! the typed event being processed (during start, `Init`).
//!
//! ```
//! # use orchestrator::prelude::*;
//! # use orchestrator::machine::MachineInstance;
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Start {}
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Done {}
//! # orchestrator::orchestrator_contract! {
//! #     pub contract Flow { uri: "#/orc/flow", name: "flow",
//! #         versions: { FlowV1 = "1.0.0" { init: Start, complete: Done } } }
//! # }
//! #[derive(Debug, Clone, Default, Serialize, Deserialize)]
//! pub struct Log { pub lines: Vec<String> }
//!
//! fn note(log: &mut Log, event: &CounterEvent, _: &mut CounterOutbox<'_>) {
//!     let line = match event {
//!         CounterEvent::Init(_) => "started".to_owned(),
//!         CounterEvent::Internal(name) => format!("got {name}"),
//!     };
//!     log.lines.push(line);
//! }
//!
//! orchestrator::machine! {
//!     pub machine Counter {
//!         contract: FlowV1,
//!         context: Log, // `init` may be left out: `Log::default()`
//!         output: |_| Done {},
//!         states: {
//!             idle: { entry: [note], on: { "go" => { target: busy, actions: [note] } } },
//!             busy: { exit: [|log, _, _| log.lines.push("left busy".into())], on: { "stop" => idle } },
//!         },
//!     }
//! }
//!
//! let (mut m, _) = MachineInstance::<Counter>::start(Start {})?;
//! m.send_named("go")?;
//! m.send_named("stop")?;
//! assert_eq!(m.context().lines, ["started", "got go", "left busy", "got stop"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## What `init` sees
//!
//! `init` is `fn(&Init) -> Context`: a function path, or a closure of one parameter
//! (`init: |input| …`). A closure of two parameters, `init: |input, meta| …`, also gets an
//! [`&InitMeta`](InitMeta): the init event's subject and source, the orchestration subject's meta
//! map and initiator, and the parent workflow's subject (`parentSubject$$`) for a child workflow.
//! The macro tells the two forms apart by the closure's parameters; to use a two-argument
//! function, wrap it: `init: |input, meta| make_context(input, meta)`. A workflow run by an
//! orchestrator starts from its init event ([`MachineInstance::start_wire`]);
//! [`MachineInstance::start`] gives an empty `InitMeta`, and
//! [`start_with_meta`](MachineInstance::start_with_meta) any other.
//!
//! ```
//! # use orchestrator::prelude::*;
//! # use orchestrator::machine::{InitMeta, MachineInstance};
//! # use orchestrator::subject::Subject;
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Start { pub amount: u32 }
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Done {}
//! # orchestrator::orchestrator_contract! {
//! #     pub contract Flow { uri: "#/orc/flow", name: "flow",
//! #         versions: { FlowV1 = "1.0.0" { init: Start, complete: Done } } }
//! # }
//! #[derive(Debug, Clone, Serialize, Deserialize)]
//! pub struct Claim { pub amount: u32, pub tenant: Option<String>, pub by: Option<String> }
//!
//! orchestrator::machine! {
//!     pub machine Claims {
//!         contract: FlowV1,
//!         context: Claim,
//!         init: |input, meta| Claim {
//!             amount: input.amount,
//!             tenant: meta.meta("tenant").map(str::to_owned),
//!             by: meta.initiator.clone(),
//!         },
//!         output: |_| Done {},
//!         states: { open: {} },
//!     }
//! }
//!
//! let subject = Subject::builder("arvo.orc.flow", "1.0.0", "com.acme.app").meta("tenant", "acme").build()?;
//! let (m, _) = MachineInstance::<Claims>::start_with_meta(Start { amount: 5 }, InitMeta::from_subject(subject.as_str()))?;
//! assert_eq!(m.context().tenant.as_deref(), Some("acme"));
//! assert_eq!(m.context().by.as_deref(), Some("com.acme.app"));
//! // Without an event nor a subject, the meta is empty.
//! let (m, _) = MachineInstance::<Claims>::start(Start { amount: 5 })?;
//! assert_eq!(m.context().tenant, None);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Calling services
//!
//! `services` names the contracts the machine calls. A trigger `add::Sum` reacts to the event
//! type `AddV1` emits with payload `Sum` (a payload it does not emit does not compile);
//! `add::error` to its `sys.<type>.error`. Actions emit requests through the typed outbox:
//! `out.add(payload)` takes exactly what `AddV1` accepts (for a service that is an orchestrator
//! contract: its init payload, sent as a child workflow whose `parentSubject$$` is this workflow's
//! subject). Each step returns the [`ServiceRequest`]s it emitted, already checked against the
//! service's schema; [`ServiceRequest::to_event`] makes the event. Wire events are decoded and
//! validated against the contract that declares them ([`MachineInstance::send_wire`]).
//!
//! ```
//! # use orchestrator::prelude::*;
//! # use orchestrator::machine::MachineInstance;
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Start {}
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Done {}
//! # orchestrator::orchestrator_contract! {
//! #     pub contract Flow { uri: "#/orc/flow", name: "flow",
//! #         versions: { FlowV1 = "1.0.0" { init: Start, complete: Done } } }
//! # }
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Operands { pub a: f64, pub b: f64 }
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Sum { pub sum: f64 }
//! # orchestrator::simple_contract! {
//! #     pub contract Add { uri: "#/calc/add", type: "calc.add",
//! #         versions: { AddV1 = "1.0.0" { accepts: Operands, emits: Sum } } }
//! # }
//! fn ask(_: &mut f64, _: &AdderEvent, out: &mut AdderOutbox<'_>) {
//!     out.add(Operands { a: 1.0, b: 2.0 });
//! }
//!
//! fn store(total: &mut f64, event: &AdderEvent, _: &mut AdderOutbox<'_>) {
//!     if let AdderEvent::AddSum(sum) = event {
//!         *total = sum.sum;
//!     }
//! }
//!
//! orchestrator::machine! {
//!     pub machine Adder {
//!         contract: FlowV1,
//!         services: { add: AddV1 },
//!         context: f64,
//!         output: |_| Done {},
//!         states: {
//!             asking: {
//!                 entry: [ask],
//!                 on: { add::Sum => { target: done, actions: [store] }, add::error => failed },
//!             },
//!             done: { type: final },
//!             failed: { type: final },
//!         },
//!     }
//! }
//!
//! let (mut m, requests) = MachineInstance::<Adder>::start(Start {})?;
//! assert_eq!(requests[0].event_type, "com.calc.add");
//! assert_eq!(requests[0].data, serde_json::json!({"a": 1.0, "b": 2.0}));
//!
//! let reply = EventFactory::<AddV1>::new()
//!     .emits(Sum { sum: 3.0 }, Event::builder().source("com.calc.add").subject("s"))?;
//! m.send_wire(&reply)?;
//! assert_eq!(*m.context(), 3.0);
//! assert_eq!(m.state(), AdderState::Done);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Signals
//!
//! `signals` names the events the workflow accepts from outside while it runs (a human's
//! decision, a cancel request): each a contract whose accepted payload is the event's data
//! (typically a `contract!` with `emits: {}`). A trigger `approve::Decision` names the signal's
//! key and the payload its contract accepts (another payload does not compile) and is typed in
//! the event enum like a service's event (`ApproveDecision(Decision)`, or `Decision(Decision)`
//! for a key `decision`). A signal is an ordinary event: type = the contract's accepted type,
//! `to` = the orchestrator, subject = the workflow's, dataschema = the contract version's.
//! [`Node::signal`](crate::runtime::Node::signal) sends one to a running workflow;
//! [`EventFactory::signal`](crate::factory::EventFactory::signal) builds one. The orchestrator
//! validates it against the signal's contract (invalid data is a contract violation and changes
//! nothing); a workflow that is unknown or finished ignores it. A declared signal that no
//! transition names is accepted (validated) and known by its name.
//!
//! ```
//! # use orchestrator::prelude::*;
//! # use orchestrator::machine::MachineInstance;
//! # use orchestrator::subject::Subject;
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Start {}
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Done { pub approved: bool }
//! # orchestrator::orchestrator_contract! {
//! #     pub contract Flow { uri: "#/orc/flow", name: "flow",
//! #         versions: { FlowV1 = "1.0.0" { init: Start, complete: Done } } }
//! # }
//! #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
//! pub struct Decision { pub approved: bool }
//!
//! orchestrator::contract! {
//!     pub contract Approve { uri: "#/approve", type: "com.acme.approve",
//!         versions: { ApproveV1 = "1.0.0" { accepts: Decision, emits: {} } } }
//! }
//!
//! orchestrator::machine! {
//!     pub machine Gate {
//!         contract: FlowV1,
//!         signals: { approve: ApproveV1 },
//!         context: bool,
//!         output: |approved: &bool| Done { approved: *approved },
//!         states: {
//!             waiting: {
//!                 on: { approve::Decision => { target: decided, actions: [|ctx, event, _| {
//!                     if let GateEvent::ApproveDecision(d) = event { *ctx = d.approved }
//!                 }] } },
//!             },
//!             decided: { type: final },
//!         },
//!     }
//! }
//!
//! let (mut m, _) = MachineInstance::<Gate>::start(Start {})?;
//! let subject = Subject::builder("arvo.orc.flow", "1.0.0", "com.example.client").build()?;
//! let signal = EventFactory::<ApproveV1>::new()
//!     .signal(Decision { approved: true }, subject.as_str(), Event::builder().source("com.example.client"))?;
//! m.send_wire(&signal)?;
//! assert_eq!(m.output(), Some(Done { approved: true }));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Notifications
//!
//! `notifications` names contracts the workflow sends one-off events to, expecting no reply
//! (Arvo's `enqueueArvoEvent`): an audit log entry, an e-mail. Each must declare no emitted
//! event (`emits: {}`: [`NoReply`](crate::contract::NoReply); another contract does not
//! compile). Actions send one with `out.<key>(payload)`, typed by the contract's accepted
//! payload; it leaves like a service request (source = the orchestrator, subject = the
//! workflow's, `to` = the contract's type, the orchestrator's service domains), and the
//! workflow goes on without waiting. A node needs a handler for it, like for a service (or
//! declares it [`remote`](crate::runtime::NodeBuilder::remote)). A notification cannot be a
//! trigger.
//!
//! ```
//! # use orchestrator::prelude::*;
//! # use orchestrator::machine::MachineInstance;
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Start {}
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Done {}
//! # orchestrator::orchestrator_contract! {
//! #     pub contract Flow { uri: "#/orc/flow", name: "flow",
//! #         versions: { FlowV1 = "1.0.0" { init: Start, complete: Done } } }
//! # }
//! #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
//! pub struct Audit { pub note: String }
//!
//! orchestrator::contract! {
//!     pub contract AuditLog { uri: "#/audit", type: "com.acme.audit",
//!         versions: { AuditLogV1 = "1.0.0" { accepts: Audit, emits: {} } } }
//! }
//!
//! orchestrator::machine! {
//!     pub machine Noted {
//!         contract: FlowV1,
//!         notifications: { audit: AuditLogV1 },
//!         output: |_| Done {},
//!         states: {
//!             working: {
//!                 entry: [|_, _, out| out.audit(Audit { note: "started".into() })],
//!                 always: done,
//!             },
//!             done: { type: final },
//!         },
//!     }
//! }
//!
//! // The notification is sent and the machine does not wait: it is done already.
//! let (m, requests) = MachineInstance::<Noted>::start(Start {})?;
//! assert_eq!((requests[0].service, requests[0].event_type), ("audit", "com.acme.audit"));
//! assert!(m.is_done());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Nested states
//!
//! A state with `states` is compound: it is in exactly one child, `initial` (default: the first).
//! Targets are absolute paths from the machine root. Transitions of a parent apply in all of its
//! children (unless a child's own transition for the event is taken).
//!
//! ```
//! # use orchestrator::prelude::*;
//! # use orchestrator::machine::MachineInstance;
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Start {}
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Done {}
//! # orchestrator::orchestrator_contract! {
//! #     pub contract Flow { uri: "#/orc/flow", name: "flow",
//! #         versions: { FlowV1 = "1.0.0" { init: Start, complete: Done } } }
//! # }
//! orchestrator::machine! {
//!     pub machine Player {
//!         contract: FlowV1,
//!         output: |_| Done {},
//!         states: {
//!             on: {
//!                 initial: paused,
//!                 states: {
//!                     playing: { on: { "pause" => on.paused } },
//!                     paused: { on: { "play" => on.playing } },
//!                 },
//!                 on: { "power" => off },
//!             },
//!             off: { on: { "power" => on } },
//!         },
//!     }
//! }
//!
//! let (mut m, _) = MachineInstance::<Player>::start(Start {})?;
//! assert_eq!(m.state(), PlayerState::On(PlayerOn::Paused));
//! m.send_named("play")?;
//! assert_eq!(m.state(), PlayerState::On(PlayerOn::Playing));
//! m.send_named("power")?; // the parent's transition
//! assert_eq!(m.state(), PlayerState::Off);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Parallel states
//!
//! All regions of a parallel state are active together; its typed state is a struct with one
//! field per region. When every region has reached a final state, `done.state.<path>` is raised:
//! `on_done` reacts to it.
//!
//! ```
//! # use orchestrator::prelude::*;
//! # use orchestrator::machine::MachineInstance;
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Start {}
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Done {}
//! # orchestrator::orchestrator_contract! {
//! #     pub contract Flow { uri: "#/orc/flow", name: "flow",
//! #         versions: { FlowV1 = "1.0.0" { init: Start, complete: Done } } }
//! # }
//! orchestrator::machine! {
//!     pub machine Upload {
//!         contract: FlowV1,
//!         output: |_| Done {},
//!         states: {
//!             busy: {
//!                 type: parallel,
//!                 states: {
//!                     file: { states: { sending: { on: { "sent" => busy.file.ok } }, ok: { type: final } } },
//!                     meta: { states: { sending: { on: { "saved" => busy.meta.ok } }, ok: { type: final } } },
//!                 },
//!                 on_done: finished,
//!             },
//!             finished: { type: final },
//!         },
//!     }
//! }
//!
//! let (mut m, _) = MachineInstance::<Upload>::start(Start {})?;
//! m.send_named("sent")?;
//! assert_eq!(
//!     m.state(),
//!     UploadState::Busy(UploadBusy { file: UploadBusyFile::Ok, meta: UploadBusyMeta::Sending })
//! );
//! m.send_named("saved")?;
//! assert_eq!(m.state(), UploadState::Finished);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # History
//!
//! A history state (`type: history`, inside a compound or parallel state) remembers, when its
//! parent is exited, the active children (`history: shallow`, the default) or the active atomic
//! descendants (`history: deep`). Targeting it re-enters them, or its default `target` (else the
//! parent's initial state) when nothing is stored yet.
//!
//! ```
//! # use orchestrator::prelude::*;
//! # use orchestrator::machine::MachineInstance;
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Start {}
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Done {}
//! # orchestrator::orchestrator_contract! {
//! #     pub contract Flow { uri: "#/orc/flow", name: "flow",
//! #         versions: { FlowV1 = "1.0.0" { init: Start, complete: Done } } }
//! # }
//! orchestrator::machine! {
//!     pub machine Editor {
//!         contract: FlowV1,
//!         output: |_| Done {},
//!         states: {
//!             editing: {
//!                 states: {
//!                     text: { on: { "tab" => editing.table.cell } },
//!                     table: { states: { row: {}, cell: {} } },
//!                     last: { type: history, history: deep, target: editing.text },
//!                 },
//!                 on: { "help" => help },
//!             },
//!             help: { on: { "back" => editing.last } },
//!         },
//!     }
//! }
//!
//! let (mut m, _) = MachineInstance::<Editor>::start(Start {})?;
//! m.send_named("tab")?;
//! m.send_named("help")?;
//! assert_eq!(m.state(), EditorState::Help);
//! m.send_named("back")?;
//! assert_eq!(m.state(), EditorState::Editing(EditorEditing::Table(EditorEditingTable::Cell)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Eventless transitions
//!
//! `always` transitions are taken as soon as their guard holds, before any other event.
//!
//! ```
//! # use orchestrator::prelude::*;
//! # use orchestrator::machine::MachineInstance;
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Start {}
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Done {}
//! # orchestrator::orchestrator_contract! {
//! #     pub contract Flow { uri: "#/orc/flow", name: "flow",
//! #         versions: { FlowV1 = "1.0.0" { init: Start, complete: Done } } }
//! # }
//! orchestrator::machine! {
//!     pub machine Tank {
//!         contract: FlowV1,
//!         context: u32,
//!         output: |_| Done {},
//!         states: {
//!             filling: {
//!                 on: { "drop" => { actions: [|level, _, _| *level += 1] } },
//!                 always: { target: full, guard: |level, _| *level >= 2 },
//!             },
//!             full: { type: final },
//!         },
//!     }
//! }
//!
//! let (mut m, _) = MachineInstance::<Tank>::start(Start {})?;
//! m.send_named("drop")?;
//! m.send_named("drop")?;
//! assert_eq!(m.state(), TankState::Full);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Timers
//!
//! The caller owns the clock: [`MachineInstance::advance`] delivers due timers. `after: { ms => … }`
//! timers start when their state is entered and are cancelled when it is exited; `send("e",
//! delay = ms, id = "t")` schedules an event that only `cancel("t")` stops. Pending timers are part
//! of the persisted state.
//!
//! A delay may be computed when its state is entered (after the state's entry actions), from the
//! context: `after: { payment_timeout = |ctx| Duration::from_millis(ctx.timeout_ms) => rejected }`
//! (a closure `fn(&Context) -> Duration`), a function path `fn(&Context) -> Duration`, or a
//! constant `Duration` or `u64` of ms (`after: { GRACE => … }`). Its due time is then stored like
//! a fixed delay's: a restored or restarted workflow does not compute it again. Exported charts
//! show it by name: `after payment_timeout` (the name given with `name = …`, a path's last
//! segment, or `delay<N>` for an unnamed closure); XState exports key it by that name, as XState's
//! named delays.
//!
//! ```
//! # use orchestrator::prelude::*;
//! # use orchestrator::machine::MachineInstance;
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Start {}
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Done {}
//! # orchestrator::orchestrator_contract! {
//! #     pub contract Flow { uri: "#/orc/flow", name: "flow",
//! #         versions: { FlowV1 = "1.0.0" { init: Start, complete: Done } } }
//! # }
//! # use orchestrator::machine::Snapshot;
//! orchestrator::machine! {
//!     pub machine Session {
//!         contract: FlowV1,
//!         output: |_| Done {},
//!         states: {
//!             active: {
//!                 entry: [send("warn", delay = 800, id = "w")],
//!                 exit: [cancel("w")],
//!                 after: { 1000 => expired },
//!                 on: { "warn" => { actions: [raise("warned")] }, "touch" => { target: active, reenter: true } },
//!             },
//!             expired: { type: final },
//!         },
//!     }
//! }
//!
//! let (mut m, _) = MachineInstance::<Session>::start(Start {})?;
//! m.advance(900)?;
//! m.send_named("touch")?; // re-entered: the timers start over
//! assert_eq!(m.next_due(), Some(1700));
//!
//! let saved = m.snapshot().to_bytes()?; // what a store keeps: chart state and context
//! let mut m = MachineInstance::<Session>::restore(Snapshot::from_bytes(&saved)?)?;
//! m.advance(1000)?;
//! assert_eq!(m.state(), SessionState::Expired);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A computed delay, evaluated on entry and stored with the state:
//!
//! ```
//! # use orchestrator::prelude::*;
//! # use orchestrator::machine::{Machine, MachineInstance, Snapshot};
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Start { pub timeout_ms: u64 }
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Done {}
//! # orchestrator::orchestrator_contract! {
//! #     pub contract Flow { uri: "#/orc/flow", name: "flow",
//! #         versions: { FlowV1 = "1.0.0" { init: Start, complete: Done } } }
//! # }
//! use std::time::Duration;
//!
//! #[derive(Debug, Clone, Serialize, Deserialize)]
//! pub struct Payment { pub timeout_ms: u64 }
//!
//! const GRACE: Duration = Duration::from_secs(1);
//!
//! orchestrator::machine! {
//!     pub machine Checkout {
//!         contract: FlowV1,
//!         context: Payment,
//!         init: |input| Payment { timeout_ms: input.timeout_ms },
//!         output: |_| Done {},
//!         states: {
//!             paying: {
//!                 after: { payment_timeout = |ctx| Duration::from_millis(ctx.timeout_ms) => grace },
//!             },
//!             grace: { after: { GRACE => rejected } },
//!             rejected: { type: final },
//!         },
//!     }
//! }
//!
//! let (m, _) = MachineInstance::<Checkout>::start(Start { timeout_ms: 3000 })?;
//! assert_eq!(m.next_due(), Some(3000));
//! let saved = m.snapshot().to_bytes()?;
//! let mut m = MachineInstance::<Checkout>::restore(Snapshot::from_bytes(&saved)?)?;
//! m.advance(3000)?;
//! assert_eq!(m.state(), CheckoutState::Grace);
//! m.advance(1000)?;
//! assert!(m.is_done());
//!
//! let mermaid = orchestrator::machine::chart::export::to_mermaid(Checkout::chart(), &Checkout::names());
//! assert!(mermaid.contains("paying --> grace : after payment_timeout"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Retries
//!
//! A service may declare a retry policy: `pay: PayV1 { retry: { attempts: 5, backoff: 200 .. 10_000,
//! jitter: true, on: ["Timeout", "Unavailable"] } }`.
//!
//! | Key | Meaning | Default |
//! |---|---|---|
//! | `attempts` | tries in all, the first included (at least 1) | required |
//! | `backoff` | `first .. cap` in ms: the delay after the first failure, doubling after each later one, at most `cap` | `1_000 .. 60_000` |
//! | `jitter` | full jitter: each delay drawn between 0 and its backoff | `false` |
//! | `on` | the `errorName`s of the service's system error that retry | every error |
//!
//! When the orchestrator running the machine gets the service's system error
//! (`sys.<type>.error`) for a request, the policy retries that `errorName` and attempts are
//! left, the machine does **not** see the error: the request is sent again after the delay (same
//! data, `to`, domain and child-subject rules, a new id), on the workflow's durable timer (the
//! one of `after`), so a pending retry survives a restart. Only when the attempts are used up, or
//! for an error the policy does not name, does the machine get the error (`svc::error`). Each
//! retry shows in the journal: the error is consumed by a step that emits nothing, the wake-up
//! that sends the new request is another. The bookkeeping (requests in flight to services with a
//! policy, retries waiting) is kept in the workflow's state under `"retries"`; jitter is drawn
//! from a hash of the subject, the request id and the attempt, so a replay computes the same
//! delays. See [`RetryPolicy`] and [`orchestration::retry`](crate::orchestration::retry). A
//! [`MachineInstance`] driven by hand does not retry: it is the [`Orchestrator`](crate::orchestration::Orchestrator)'s job.
//!
//! ```
//! # use orchestrator::prelude::*;
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Start {}
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Done { pub paid: bool }
//! # #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Charge { pub cents: u64 }
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Receipt {}
//! # orchestrator::orchestrator_contract! {
//! #     pub contract Flow { uri: "#/orc/flow", name: "flow",
//! #         versions: { FlowV1 = "1.0.0" { init: Start, complete: Done } } }
//! # }
//! # orchestrator::simple_contract! {
//! #     pub contract Pay { uri: "#/pay", type: "shop.pay",
//! #         versions: { PayV1 = "1.0.0" { accepts: Charge, emits: Receipt } } }
//! # }
//! use std::sync::Arc;
//! use std::time::{Duration, SystemTime};
//! use orchestrator::contract::SystemErrorPayload;
//! use orchestrator::handler::EventHandler;
//! use orchestrator::memory::{InMemory, Memory};
//! use orchestrator::orchestration::{Clock, ManualClock, Orchestrator, WorkflowRecord};
//!
//! orchestrator::machine! {
//!     pub machine Checkout {
//!         contract: FlowV1,
//!         services: { pay: PayV1 { retry: { attempts: 3, backoff: 500 .. 5_000, on: ["Timeout"] } } },
//!         context: bool,
//!         init: |_| false,
//!         output: |paid| Done { paid: *paid },
//!         states: {
//!             paying: {
//!                 entry: [|_, _, out| out.pay(Charge { cents: 100 })],
//!                 on: { pay::Receipt => { target: done, actions: [|paid, _, _| *paid = true] }, pay::error => done },
//!             },
//!             done: { type: final },
//!         },
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let clock = Arc::new(ManualClock::new(SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)));
//! let memory = Arc::new(InMemory::<WorkflowRecord>::default());
//! let checkout = Orchestrator::builder(Arc::clone(&memory))
//!     .machine::<Checkout>()
//!     .clock(clock.clone() as Arc<dyn Clock>)
//!     .build()?;
//! let init = EventFactory::<FlowV1>::new().init(Start {}, Event::builder().source("com.acme.shop"))?;
//! let request = checkout.execute(&init).await?.remove(0);
//!
//! // The payment service times out: the machine does not see it, a retry is due in 500 ms.
//! let answer = Event::builder()
//!     .source("pay")
//!     .subject(request.subject())
//!     .parentid(request.id())
//!     .to(request.redirectto().unwrap_or_default());
//! let timeout = EventFactory::<PayV1>::new().system_error(SystemErrorPayload::new("Timeout", "slow"), answer)?;
//! assert!(checkout.execute(&timeout).await?.is_empty());
//! let record = memory.read(init.subject()).await?.expect("stored").record;
//! assert_eq!(record.wake_at_ms, Some(1_800_000_000_500));
//! assert_eq!(record.state["retries"]["pending"][0]["attempt"], 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! # Final states and output
//!
//! Reaching a final child of the machine completes it: [`MachineInstance::is_done`], and
//! [`MachineInstance::output`] gives the self contract's completion payload, made by `output`
//! from the context. Later events are ignored.
//!
//! ```
//! # use orchestrator::prelude::*;
//! # use orchestrator::machine::MachineInstance;
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Start {}
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Done { pub total: u32 }
//! # orchestrator::orchestrator_contract! {
//! #     pub contract Flow { uri: "#/orc/flow", name: "flow",
//! #         versions: { FlowV1 = "1.0.0" { init: Start, complete: Done } } }
//! # }
//! orchestrator::machine! {
//!     pub machine Sum {
//!         version: "1.0.0",
//!         contract: FlowV1,
//!         context: u32,
//!         output: |total| Done { total: *total },
//!         states: {
//!             adding: { on: { "one" => { actions: [|t, _, _| *t += 1] }, "end" => done } },
//!             done: { type: final },
//!         },
//!     }
//! }
//!
//! let (mut m, _) = MachineInstance::<Sum>::start(Start {})?;
//! m.send_named("one")?;
//! assert_eq!(m.output(), None);
//! m.send_named("end")?;
//! assert!(m.is_done());
//! assert_eq!(m.output(), Some(Done { total: 1 }));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Fallible actions and guards
//!
//! An action may return `Result<(), E>` and a guard `Result<bool, E>`, for any error `E` that
//! converts into a [`BoxError`](crate::emit::BoxError) (an error type, a `String`, a
//! [`Violation`](crate::violation::Violation), an [`ActionError`]); no other syntax is needed
//! ([`IntoActionResult`], [`IntoGuardResult`]). The first action or guard that fails stops the
//! step: no further action runs, and the machine's state and context stay as they were before
//! the step. [`MachineInstance`] returns [`MachineError::Action`] (naming the action or guard);
//! a workflow run by an orchestrator fails with the user's error: its `sys.<orchestrator>.error`
//! event has the `errorName`, `errorMessage` and `errorStack` a service handler failing with the
//! same error would emit (a [`NamedError`](crate::emit::NamedError) keeps its name, any other
//! error is `"Error"`), and later events are ignored.
//!
//! An error that is a [`Violation`](crate::violation::Violation) (or
//! [`ActionError::violation`]) is one: nothing is persisted, the event is returned to its
//! deliverer ([`MachineError::Violation`]; a node dead-letters it).
//!
//! A closure's error type must be known from its body (`Err(MyError)`, or `Ok::<_, MyError>(…)`):
//! write a function to use `?`.
//!
//! ```
//! # use orchestrator::prelude::*;
//! # use orchestrator::machine::{MachineError, MachineInstance};
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Start {}
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Done {}
//! # orchestrator::orchestrator_contract! {
//! #     pub contract Flow { uri: "#/orc/flow", name: "flow",
//! #         versions: { FlowV1 = "1.0.0" { init: Start, complete: Done } } }
//! # }
//! use orchestrator::emit::NamedError;
//!
//! #[derive(Debug, Clone, Default, Serialize, Deserialize)]
//! pub struct Stock { pub left: u32 }
//!
//! fn take_one(stock: &mut Stock, _: &ShopEvent, _: &mut ShopOutbox<'_>) -> Result<(), NamedError> {
//!     stock.left = stock.left.checked_sub(1).ok_or_else(|| NamedError::new("OutOfStock", "nothing left"))?;
//!     Ok(())
//! }
//!
//! orchestrator::machine! {
//!     pub machine Shop {
//!         contract: FlowV1,
//!         context: Stock,
//!         init: |_| Stock { left: 1 },
//!         output: |_| Done {},
//!         states: {
//!             open: {
//!                 on: {
//!                     "buy" => { actions: [take_one] },
//!                     "close" => { target: closed, guard: |s, _| if s.left > 9 { Err("too much stock") } else { Ok(true) } },
//!                 },
//!             },
//!             closed: { type: final },
//!         },
//!     }
//! }
//!
//! let (mut shop, _) = MachineInstance::<Shop>::start(Start {})?;
//! shop.send_named("buy")?;
//! match shop.send_named("buy") {
//!     Err(MachineError::Action { name: "take_one", error, .. }) => {
//!         assert_eq!(error.payload().error_name, "OutOfStock");
//!         assert_eq!(error.to_string(), "nothing left");
//!     }
//!     other => panic!("{other:?}"),
//! }
//! assert_eq!(shop.context().left, 0); // the failed step changed nothing
//! shop.send_named("close")?;
//! assert!(shop.is_done());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A panic in an action or guard is not an error it returns: an orchestrator reports it as an
//! error named `Panic`.
//!
//! # Completion options
//!
//! `output` may return a [`Completion`] of the completion payload instead of the payload: it
//! sets the completion event's id (every domain copy gets it), execution units and domains (one
//! event per unique resolved domain), instead of the orchestrator's defaults. An empty id or an
//! empty list of domains fails the workflow ([`InvalidCompletion`]). A resumable's
//! [`ResumableOutput::complete`](crate::orchestration::resumable::ResumableOutput::complete)
//! takes a `Completion` too.
//!
//! ```
//! # use orchestrator::prelude::*;
//! # use orchestrator::machine::MachineInstance;
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Start { pub order: u32 }
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Done { pub order: u32 }
//! # orchestrator::orchestrator_contract! {
//! #     pub contract Flow { uri: "#/orc/flow", name: "flow",
//! #         versions: { FlowV1 = "1.0.0" { init: Start, complete: Done } } }
//! # }
//! use orchestrator::domain::Domain;
//! use orchestrator::machine::Completion;
//!
//! orchestrator::machine! {
//!     pub machine Order {
//!         contract: FlowV1,
//!         context: u32,
//!         init: |start| start.order,
//!         output: |order| Completion::new(Done { order: *order })
//!             .id(format!("order-{order}-done"))
//!             .execution_units(3.0)
//!             .domains([Domain::OrchestrationContext, Domain::Named("audit".into())]),
//!         states: { placed: { on: { "ship" => shipped } }, shipped: { type: final } },
//!     }
//! }
//!
//! let (mut m, _) = MachineInstance::<Order>::start(Start { order: 7 })?;
//! m.send_named("ship")?;
//! let completion = m.completion().ok_or("not done")?;
//! assert_eq!(completion.options().id.as_deref(), Some("order-7-done"));
//! assert_eq!(m.output(), Some(Done { order: 7 }));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What is checked at compile time
//!
//! Each mistake is one error, on the offending token, and all are reported in one compile:
//!
//! * by the macro: unknown and duplicate keys, unknown services and duplicate services, unknown
//!   initial states, duplicate sibling states, final states with children, history states outside
//!   a compound state, empty `states`, unreachable states, malformed event names and delays, a
//!   key naming two of a service, a signal and a notification, `signal::error`, a notification
//!   used as a trigger;
//! * by the statechart builder the macro runs (the same one the runtime uses): unknown targets and
//!   guard states, targets that cannot be active together, initial states outside their state,
//!   compound states with nothing to start in, history defaults outside their parent;
//! * by the compiler, on the user's token: a payload the service does not emit (`Emits`), guards,
//!   actions, `init` and `output` of the wrong type, a request to an undeclared service or with the
//!   wrong payload, a signal trigger's payload that is not the one its contract accepts, a
//!   notification whose contract emits events or with the wrong payload, a `version` that is not
//!   the self contract's, a self contract that is not an orchestrator contract, two contracts
//!   with the same URI, an action, guard or `output` returning what it may not (`Result<u8, E>`
//!   from an action, `Option<bool>` from a guard).
//!
//! ```compile_fail
//! # use orchestrator::prelude::*;
//! # use orchestrator::machine::MachineInstance;
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Start {}
//! # #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)] pub struct Done {}
//! # orchestrator::orchestrator_contract! {
//! #     pub contract Flow { uri: "#/orc/flow", name: "flow",
//! #         versions: { FlowV1 = "1.0.0" { init: Start, complete: Done } } }
//! # }
//! orchestrator::machine! {
//!     pub machine Door {
//!         contract: FlowV1,
//!         output: |_| Done {},
//!         states: {
//!             closed: { on: { "open" => opend } }, // error: unknown target `opend`; did you mean `opened`?
//!             opened: {},
//!         },
//!     }
//! }
//! ```

mod completion;
mod fallible;
mod init_meta;
mod instance;
mod requests;
mod signals;
mod traits;

#[doc(hidden)]
pub mod __private;

pub use completion::{Completion, CompletionOptions, IntoCompletion, InvalidCompletion};
pub use fallible::{ActionError, IntoActionResult, IntoGuardResult};
pub use init_meta::InitMeta;
pub use instance::{MachineError, MachineInstance, Snapshot};
pub use orchestrator_chart as chart;
pub use orchestrator_chart::{Chart, MachineState};
pub use requests::{AsIs, ChildInit, RequestOptions, Requests, ServiceRequest, ServiceRequestInput};

/// The old name of [`Requests`].
#[deprecated(note = "renamed to `orchestrator::machine::Requests`")]
pub type Outbox = Requests;
pub use crate::orchestration::retry::{RetryPolicy, RetryPolicyError};
pub use signals::SignalPayload;
pub use traits::{Machine, MachineEvent, ServiceInfo, ServiceOf};
