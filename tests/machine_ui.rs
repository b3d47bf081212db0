//! Compile-time checks of the `machine!` macro, with trybuild.
//!
//! Each `ui/machine/<rule>.rs` breaks one rule (or, for `multiple_mistakes.rs`, several at once)
//! and its `.stderr` holds the exact diagnostics rustc prints: one error per mistake, spanned on
//! the offending token, and nothing else. `ui/machine_pass/*.rs` are valid machines whose
//! generated API is exercised in `main`.
//!
//! The expected output depends on the rustc version. Regenerate it with
//! `TRYBUILD=overwrite cargo test -p orchestrator-tests --test machine_ui`, then read every
//! changed `.stderr`.

#[test]
fn machine_macro_ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("ui/machine/*.rs");
    cases.pass("ui/machine_pass/*.rs");
}
