//! # orchestrator-cli
//!
//! The `orchestrator` command-line tool: inspect what travels on the wire of an Arvo-compatible
//! system.
//!
//! - `orchestrator subject parse|new|child`: decode, create and derive orchestration subjects,
//!   byte-compatible with arvo-core;
//! - `orchestrator event validate`: check an event against every rule of Arvo's event schema
//!   (and optionally its subject and a contract the tool knows), listing every broken rule;
//! - `orchestrator contract list|schema [STORE]`: list the contracts recorded in a store (or the
//!   ones the tool was taught) and print their JSON documents (Arvo's `toJsonSchema()`);
//! - `orchestrator chart check|simulate|export`: run statechart conformance fixtures, simulate a
//!   JSON chart, export a chart as XState JSON, Mermaid or Graphviz DOT (a JSON chart's, or the
//!   chart a node recorded in a store for a workflow);
//! - `orchestrator history STORE ID`: a workflow's journal in a SQLite or PostgreSQL store, as a
//!   timeline;
//! - `orchestrator replay STORE ID --until N`: the workflow's state rebuilt at a position,
//!   re-running the orchestrator when the tool was taught its machines ([`Tool::machine`]);
//! - `orchestrator workflows list STORE`: a store's workflows, newest first, filtered by status,
//!   orchestrator, meta, creation time… (a table, JSON lines, or only their count);
//! - `orchestrator workflows show|tree STORE ID`: one workflow (its summary, last state and
//!   history length), or it and its descendants as a tree;
//! - `orchestrator serve STORE`: a local, read-only web console: the workflows with filters and
//!   counts per status, refreshing live, and each workflow's timeline, statechart (active states
//!   highlighted), children, pending timer and dead letters.
//!
//! Every command that takes a workflow (ID) accepts its full id (the subject) or a short id: a
//! prefix of at least 4 characters of exactly one workflow's execution id (`workflows list`
//! shows the first 8).
//!
//! Results go to stdout; errors go to stderr after `error: `. The exit status is 0 on success,
//! 1 for invalid input and 2 for usage errors.
//!
//! The binary is [`Tool::new().main()`](Tool::main). A program that registers its own machines
//! and contracts with [`Tool`] gets the same commands, knowing its workflows: see [`Tool`].

mod chart_cmd;
mod cli;
mod console;
mod contract_cmd;
mod error;
mod event_cmd;
mod journal_cmd;
mod output;
mod recorded_chart;
mod resolve;
mod store;
mod subject_cmd;
mod tool;
mod workflows_cmd;

pub use tool::Tool;
