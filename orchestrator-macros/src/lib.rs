//! Procedural macros of the `orchestrator` crate; use them through `orchestrator::contract!`,
//! `orchestrator::simple_contract!` and `orchestrator::orchestrator_contract!`.
//!
//! Each macro goes parse (`contract::ast`) → check (`contract::valid`) → generate
//! (`contract::expand`). Every mistake is reported, each spanned on the offending token, in one
//! compile; when there are mistakes a fallback expansion still declares the types so that one
//! mistake gives one error.

mod contract;
mod ctxt;

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
