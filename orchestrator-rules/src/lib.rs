//! Arvo's string rules, shared by the `orchestrator` runtime and the `orchestrator-macros`
//! compile-time checks, so both apply exactly the same rules.
//!
//! No dependencies: the proc-macro crate links it at compile time.

pub mod names;
pub mod uri;
pub mod version;
