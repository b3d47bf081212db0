//! Compile-time checks of the contract macros and of the typed factory API, with trybuild.
//!
//! Each `ui/contract/<rule>.rs` breaks one rule (or, for `multiple_mistakes.rs`, several at once)
//! and its `.stderr` holds the exact diagnostics rustc prints; `ui/pass/*.rs` are valid
//! declarations whose generated API is exercised in `main`.
//!
//! The expected output depends on the rustc version. Regenerate it with
//! `TRYBUILD=overwrite cargo test -p orchestrator-tests --test compile_fail`, then read every
//! changed `.stderr`: each must show exactly the intended error, spanned on the offending token.

#[test]
fn contract_macros_ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("ui/contract/*.rs");
    cases.pass("ui/pass/*.rs");
}
