//! Procedural macros of the `orchestrator` crate; use them through `orchestrator::contract!`,
//! `orchestrator::simple_contract!`, `orchestrator::orchestrator_contract!` and
//! `orchestrator::machine!`.
//!
//! Each macro goes parse (`contract::ast`, `machine::ast`) → check (`contract::valid`;
//! `machine::valid`, then `machine::chart`, which builds the statechart with
//! `orchestrator_chart::ChartBuilder`, the same code the runtime uses) → generate
//! (`contract::expand`, `machine::expand`). Every mistake is reported, each spanned on the offending token, in one
//! compile; when there are mistakes a fallback expansion still declares the types so that one
//! mistake gives one error.

mod contract;
mod ctxt;
mod machine;
mod shared;

use proc_macro::TokenStream;

/// Declares a versioned contract: the event type it accepts and, per version, the accepted payload
/// and the emitted event types with their payloads.
///
/// ```ignore
/// orchestrator::contract! {
///     /// Adds two numbers.
///     pub contract Add {
///         uri: "#/calc/add",
///         type: "com.calc.add",
///         domain: "calc",                 // optional
///         description: "Adds numbers",    // optional (defaults to the doc comment)
///         metadata: { "owner": "calc-team" }, // optional
///         versions: {
///             AddV1 = "1.0.0" {
///                 accepts: AddInput,
///                 emits: { "evt.calc.add.success" => AddSuccess },
///             },
///         },
///     }
/// }
/// ```
///
/// Generates `struct Add` (implementing `Contract`) and one `struct` per version (implementing
/// `ContractVersion` and `Emits<P>` for each emitted payload).
#[proc_macro]
pub fn contract(input: TokenStream) -> TokenStream {
    contract::run(input.into(), contract::Flavor::Plain).into()
}

/// Declares a contract with Arvo's simple-contract sugar: `type: "x.y"` accepts `com.x.y` and
/// emits `evt.x.y.success`; each version is `V = "1.0.0" { accepts: In, emits: Out }`.
#[proc_macro]
pub fn simple_contract(input: TokenStream) -> TokenStream {
    contract::run(input.into(), contract::Flavor::Simple).into()
}

/// Declares an orchestrator contract: `name: "x.y"` accepts `arvo.orc.x.y` (init, with the
/// nullable `parentSubject$$`) and completes with `arvo.orc.x.y.done`; each version is
/// `V = "1.0.0" { init: Init, complete: Output }`.
#[proc_macro]
pub fn orchestrator_contract(input: TokenStream) -> TokenStream {
    contract::run(input.into(), contract::Flavor::Orchestrator).into()
}

/// Declares a statechart workflow, checked at compile time against typed event contracts.
///
/// See the `orchestrator::machine` module for the full syntax and examples.
///
/// ```ignore
/// orchestrator::machine! {
///     /// Averages numbers with the add and divide services.
///     pub machine Average {
///         version: "1.0.0",                     // optional: must be the self contract's version
///         contract: AverageV1,                  // the self contract (an orchestrator contract)
///         services: { add: AddV1, divide: DivideV1 },
///         context: AverageContext,              // optional, default `()`
///         init: init_context,                   // fn(&Init) -> Context, or |input, meta| … with
///                                               // meta: &InitMeta (optional if Context: Default)
///         output: make_output,                  // fn(&Context) -> Complete
///         initial: adding,                      // optional: default = first child
///         states: {
///             adding: {
///                 entry: [request_add],
///                 on: {
///                     add::Sum => { target: dividing, guard: sum_ok, actions: [store_sum] },
///                     add::error => failed,
///                     "retry" => adding,
///                 },
///             },
///             dividing: { on: { divide::Quotient => done }, after: { 5000 => failed } },
///             // or computed on entry: after: { timeout = |ctx| Duration::from_millis(ctx.ms) => failed }
///             done: { type: final },
///             failed: { type: final },
///         },
///     }
/// }
/// ```
///
/// Generates `struct Average` (implementing `orchestrator::machine::Machine`), the typed events
/// `AverageEvent`, the typed configuration `AverageState` (with one type per compound or parallel
/// state) and the outbox `AverageOutbox<'_>` actions emit service requests through.
///
/// Every mistake is reported in one compile, spanned on the offending token: unknown targets,
/// initial states, services and keys; duplicate states and services; unreachable states; final
/// states with children; history states outside a compound state; event payloads no service
/// emits; guards, actions, `init` and `output` of the wrong type; a `version` that is not the
/// self contract's.
#[proc_macro]
pub fn machine(input: TokenStream) -> TokenStream {
    machine::run(input.into()).into()
}
